/*
 * canon_path: realpath(3) without its readlink of every component in the
 * common case.  glibc's and musl's realpath read the link of each
 * component of the path, a lookup each; a path already written in
 * canonical form that one openat2 with RESOLVE_NO_SYMLINKS reaches is its
 * own canonical form.  Header only, for the musl helper too.
 */
#ifndef EXECGATE_COMMON_CANON_PATH_H
#define EXECGATE_COMMON_CANON_PATH_H

#include "common/no_link.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether path is written as its canonical form would be: absolute, no
 * empty, "." or ".." component, no '/' at the end (but "/" itself). */
static inline bool
canon_path_form(const char *path)
{
    if (path[0] != '/')
        return false;
    if (path[1] == '\0')
        return true;
    for (const char *c = path + 1;; c++) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        c += n;
        if (*c == '\0')
            return true;
    }
}

/*
 * realpath(path, NULL), the same answer, but where path is written in
 * canonical form and no link lies on it (one openat2 with
 * RESOLVE_NO_SYMLINKS says so) without realpath's readlink of each
 * component: path is its own canonical form then.  Anything else, a
 * failure included, goes to realpath, which sets errno as before.
 */
static inline char *
canon_path(const char *path)
{
    if (canon_path_form(path)) {
        int fd = no_link_open(path);
        if (fd >= 0) {
            close(fd);
            return strdup(path);
        }
    }
    return realpath(path, NULL);
}

#endif
