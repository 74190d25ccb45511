/*
 * write_all: every byte of a buffer to an fd.
 *
 * write(2) may write less than asked (a pipe, a signal, a full disk) and
 * fail with EINTR; a caller that wants all of it written loops, and that
 * loop is written here once.  Header only: the musl-built helper uses it
 * and compiles no common/ source for it.
 */
#ifndef EXECGATE_COMMON_WRITE_ALL_H
#define EXECGATE_COMMON_WRITE_ALL_H

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

/* Writes the len bytes at buf to fd, again after EINTR and after a short
 * write.  Returns 0, or -errno of the write that failed (what came before
 * it is written). */
static inline int
write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

#endif
