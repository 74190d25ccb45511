/*
 * no_link: reaching a file without following any symbolic link.
 *
 * A path the server resolved once must lead to the same place when the
 * helper opens it later; a link that appeared on it since (a directory
 * replaced by one) would lead elsewhere.  So each component is opened
 * with O_NOFOLLOW and a link is refused, never opened.  Header only and
 * allocation free: the musl-built helper uses it before it has a heap it
 * trusts, and compiles no common/ source for it.
 */
#ifndef EXECGATE_COMMON_NO_LINK_H
#define EXECGATE_COMMON_NO_LINK_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* openat2's struct open_how and RESOLVE_NO_SYMLINKS (linux/openat2.h,
 * which musl's headers lack), under names of our own. */
struct no_link_how {
    uint64_t flags, mode, resolve;
};
#define NO_LINK_RESOLVE_NO_SYMLINKS 0x04u

/*
 * Opens the n bytes at name (one component, no '/') in dir, as O_PATH |
 * O_NOFOLLOW | O_CLOEXEC | flags.  A link there is -ELOOP: O_PATH alone
 * would open the link itself.  Returns the fd, or -errno.
 */
static inline int
no_link_step(int dir, const char *name, size_t n, int flags)
{
    char one[NAME_MAX + 1];
    if (n == 0 || n > NAME_MAX)
        return n == 0 ? -ENOENT : -ENAMETOOLONG;
    memcpy(one, name, n);
    one[n] = '\0';
    int fd = openat(dir, one, O_PATH | O_NOFOLLOW | O_CLOEXEC | flags);
    if (fd < 0)
        return -errno;
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : S_ISLNK(st.st_mode) ? ELOOP : 0;
    if (e != 0) {
        close(fd);
        return -e;
    }
    return fd;
}

/*
 * Opens the absolute path refusing a link anywhere on it (-ELOOP): in one
 * call where the kernel walks it (openat2 with RESOLVE_NO_SYMLINKS, Linux
 * 5.6), else from "/" one component at a time with no_link_step.
 * Repeated '/' are one; "." and ".." are opened as the names they are
 * (give canonical paths).  Returns an O_PATH fd (close-on-exec), or
 * -errno.
 */
static inline int
no_link_open(const char *path)
{
    struct no_link_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = NO_LINK_RESOLVE_NO_SYMLINKS};
    int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
    if (fd >= 0)
        return fd;
    if (errno != ENOSYS)
        return -errno;
    int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return -errno;
    for (const char *c = path; *c != '\0';) {
        size_t n = strcspn(c, "/");
        if (n == 0) {
            c++;
            continue;
        }
        int next = no_link_step(dir, c, n, 0);
        close(dir);
        if (next < 0)
            return next;
        dir = next;
        c += n;
    }
    return dir;
}

#endif
