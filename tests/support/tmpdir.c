#define _XOPEN_SOURCE 700
#include "tests/support/tmpdir.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *
tmpdir_new_in(const char *base, const char *tag)
{
    char *path;
    if (asprintf(&path, "%s/execgate-%s-XXXXXX", base, tag) < 0)
        abort();
    if (mkdtemp(path) == NULL) {
        perror("mkdtemp");
        abort();
    }
    /* canonical: tests compare it with what realpath(3) gives */
    char *real = realpath(path, NULL);
    if (real == NULL) {
        perror("realpath");
        abort();
    }
    free(path);
    return real;
}

char *
tmpdir_new(const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || *base == '\0')
        base = "/tmp";
    return tmpdir_new_in(base, tag);
}

static int
remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    remove(path);
    return 0;
}

void
tmpdir_remove(const char *path)
{
    if (path != NULL)
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *
tmpdir_path(const char *dir, const char *name)
{
    char *path;
    if (asprintf(&path, "%s/%s", dir, name) < 0)
        abort();
    return path;
}

char *
tmpdir_read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        abort();
    for (;;) {
        if (n + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (buf == NULL)
                abort();
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int saved = errno;
            free(buf);
            close(fd);
            errno = saved;
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

void
tmpdir_write_file(const char *path, const char *data, int mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    size_t len = strlen(data), off = 0;

    if (fd < 0) {
        perror(path);
        abort();
    }
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            abort();
        off += (size_t)w;
    }
    if (fchmod(fd, (mode_t)mode) < 0 || close(fd) < 0)
        abort();
}

int
tmpdir_teardown(void **state)
{
    tmpdir_remove(*state);
    free(*state);
    *state = NULL;
    return 0;
}

void
tmpdir_make_dir(const char *dir, const char *rel)
{
    char *path = tmpdir_path(dir, rel);
    if (mkdir(path, 0755) < 0) {
        perror(path);
        abort();
    }
    free(path);
}

void
tmpdir_make_link(const char *target, const char *dir, const char *rel)
{
    char *path = tmpdir_path(dir, rel);
    if (symlink(target, path) < 0) {
        perror(path);
        abort();
    }
    free(path);
}
