#include "starlark/source.h"
#include "starlark/errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "starlark/vm.h"

char *
star_source_read(const char *path, size_t *len, char **err)
{
    *err = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        *err = star_errf("%s:1:1: cannot open: %s", path, strerror(e));
        errno = e;
        return NULL;
    }
    /* Room for the whole of a regular file at once (a file that grows
     * meanwhile still grows the buffer below). */
    size_t cap = 64 * 1024, n = 0;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= STAR_MAX_FILE_BYTES)
        cap = (size_t)st.st_size + 1;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (buf == NULL) {
            close(fd);
            *err = star_errf("%s:1:1: out of memory reading the file", path);
            return NULL;
        }
        if (n == cap) {
            if (cap > STAR_MAX_FILE_BYTES) {
                free(buf);
                close(fd);
                *err = star_errf("%s:1:1: file is too large (the limit is %u MiB)", path,
                                 STAR_MAX_FILE_BYTES >> 20);
                return NULL;
            }
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (nb == NULL)
                free(buf);
            buf = nb;
            continue;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            *err = star_errf("%s:1:1: cannot read: %s", path, strerror(e));
            errno = e;
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > STAR_MAX_FILE_BYTES) {
        free(buf);
        *err = star_errf("%s:1:1: file is too large (the limit is %u MiB)", path,
                         STAR_MAX_FILE_BYTES >> 20);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}
