#include "server/call/call_cgroup_fs.h"

#include "common/buf.h"
#include "common/strfmt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* dir/name, or dir itself when name is empty; NULL when out of memory. */
char *
cgfs_path_join(const char *dir, const char *name)
{
    if (!*name)
        return strdup(dir);
    size_t n = strlen(dir);
    bool slash = n > 0 && dir[n - 1] == '/';
    return strfmt("%s%s%s", dir, slash || name[0] == '/' ? "" : "/",
                  slash && name[0] == '/' ? name + 1 : name);
}

/* Reads fd from offset 0 to its end into *out (NUL-terminated).  Control
 * files are small but not of fixed size, so the buffer grows.  0 or
 * -errno. */
int
cgfs_read_fd(int fd, char **out)
{
    struct buf b = BUF_INIT;
    for (;;) {
        if (buf_reserve(&b, 256) != 0) {
            buf_free(&b);
            return -ENOMEM;
        }
        b.data[b.len] = '\0'; /* where the text ends if nothing more comes */
        ssize_t r = pread(fd, b.data + b.len, b.cap - 1 - b.len, (off_t)b.len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            buf_free(&b);
            return -e;
        }
        if (r == 0)
            break;
        b.len += (size_t)r;
    }
    *out = buf_steal(&b, NULL);
    return *out ? 0 : -ENOMEM;
}

/* dir/file opened with flags, close-on-exec: the fd, or -errno. */
int
cgfs_open_at(const char *dir, const char *file, int flags)
{
    char *path = cgfs_path_join(dir, file);
    if (!path)
        return -ENOMEM;
    int fd = open(path, flags | O_CLOEXEC);
    int e = errno;
    free(path);
    return fd < 0 ? -e : fd;
}

/* Reads the whole file at fd into *out and closes fd.  0 or -errno. */
static int
read_closing(int fd, char **out)
{
    if (fd < 0)
        return fd;
    int rc = cgfs_read_fd(fd, out);
    close(fd);
    return rc;
}

int
cgfs_read_path(const char *path, char **out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    return read_closing(fd < 0 ? -errno : fd, out);
}

int
cgfs_read_at(const char *dir, const char *file, char **out)
{
    return read_closing(cgfs_open_at(dir, file, O_RDONLY), out);
}

/* One write(2) of text: a cgroup control file takes each write as one
 * request. */
static int
write_text(int fd, const char *text)
{
    size_t n = strlen(text);
    ssize_t w = write(fd, text, n);
    if (w < 0)
        return -errno;
    return (size_t)w == n ? 0 : -EIO;
}

int
cgfs_write_at(const char *dir, const char *file, const char *text)
{
    int fd = cgfs_open_at(dir, file, O_WRONLY);
    if (fd < 0)
        return fd;
    int rc = write_text(fd, text);
    close(fd);
    return rc;
}

bool
cgfs_exists_at(const char *dir, const char *file)
{
    char *path = cgfs_path_join(dir, file);
    bool yes = path && access(path, F_OK) == 0;
    free(path);
    return yes;
}

/* Whether word is one of the items of list, separated by any of seps. */
bool
cgfs_listed(const char *list, const char *word, const char *seps)
{
    size_t n = strlen(word);
    for (const char *s = list; *s;) {
        size_t len = strcspn(s, seps);
        if (len == n && strncmp(s, word, n) == 0)
            return true;
        s += len;
        s += strspn(s, seps);
    }
    return false;
}

/* The next line of *text, NUL-terminated in place; NULL at the end. */
char *
cgfs_next_line(char **text)
{
    char *line = *text;
    if (!*line)
        return NULL;
    char *nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *text = nl + 1;
    } else {
        *text = line + strlen(line);
    }
    return line;
}

bool
cgfs_proc_line(char *line, struct cgfs_proc_line *out)
{
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
        return false;
    *c1 = *c2 = '\0';
    *out = (struct cgfs_proc_line){line, c1 + 1, c2 + 1};
    return true;
}

int64_t
cgfs_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
