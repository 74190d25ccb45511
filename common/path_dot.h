/*
 * path_dot: the two path components that name no file of their own.
 *
 * "." and ".." are read by every lexical path check (a policy's paths,
 * --protect arguments, a profile's entries): written once here so that
 * each check agrees on what a dot component is ("..." and ".x" are
 * ordinary names).
 */
#ifndef EXECGATE_COMMON_PATH_DOT_H
#define EXECGATE_COMMON_PATH_DOT_H

#include <stddef.h>

enum path_dot {
    PATH_DOT_NONE,   /* an ordinary name (or an empty component) */
    PATH_DOT_SELF,   /* "." */
    PATH_DOT_PARENT, /* ".." */
};

/* What the n bytes at c, one component of a path (no '/'), are. */
static inline enum path_dot
path_dot(const char *c, size_t n)
{
    if (n == 1 && c[0] == '.')
        return PATH_DOT_SELF;
    if (n == 2 && c[0] == '.' && c[1] == '.')
        return PATH_DOT_PARENT;
    return PATH_DOT_NONE;
}

#endif
