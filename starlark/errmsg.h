/*
 * errmsg: the error messages the interpreter and the rules loader hand to their callers.
 */
#ifndef EXECGATE_STARLARK_ERRMSG_H
#define EXECGATE_STARLARK_ERRMSG_H

/*
 * Formats a message into a new buffer the caller frees.  Returns NULL only
 * when out of memory; callers treat that as "no message", never as success.
 */
char *star_errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
