/*
 * close_keep_errno: closing an fd on an error path without losing the
 * error.
 *
 * close(2) may set errno; a caller cleaning up after a failed call still
 * reports that call's errno, so the close must leave it as it was.  Header
 * only: the musl-built wrapper and the shells' client use it too.
 */
#ifndef EXECGATE_COMMON_CLOSE_KEEP_ERRNO_H
#define EXECGATE_COMMON_CLOSE_KEEP_ERRNO_H

#include <errno.h>
#include <unistd.h>

/* Closes fd; errno is what it was before. */
static inline void
close_keep_errno(int fd)
{
    int saved = errno;
    (void)close(fd);
    errno = saved;
}

#endif
