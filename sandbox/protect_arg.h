/*
 * protect_arg: whether a path is acceptable as a --protect (or --hide)
 * argument.  A check on the string alone, kept apart from protect (which
 * binds) so that ns can use it without the two modules depending on each
 * other.
 */
#ifndef EXECGATE_SANDBOX_PROTECT_ARG_H
#define EXECGATE_SANDBOX_PROTECT_ARG_H

/*
 * Why path cannot be a --protect argument, or NULL when it can: it must be
 * non-empty, absolute, and have no "." or ".." component.  (A NUL byte
 * cannot occur in a C string, hence in argv.)  Returns a static string.
 */
const char *sandbox_protect_arg_error(const char *path);

#endif
