/*
 * placeholder: made or joined, held with a shared lock, removed by the
 * last holder.
 */
#include "sandbox/placeholder.h"
#include "common/file_id.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether st is a placeholder's, of any owner: a directory with the
 * placeholder's permission bits. */
static bool
marked_any(const struct stat *st)
{
    return S_ISDIR(st->st_mode) && (st->st_mode & 01777) == SANDBOX_PLACEHOLDER_MODE;
}

/* Whether st is a placeholder of the caller's. */
static bool
marked(const struct stat *st)
{
    return marked_any(st) && st->st_uid == geteuid();
}

/* flock(fd, op), again when a signal interrupts it.  Returns 0 or -errno. */
static int
lock(int fd, int op)
{
    while (flock(fd, op) != 0) {
        if (errno != EINTR)
            return -errno;
    }
    return 0;
}

/*
 * One look at dirfd/name.  Returns 1 with *fd open on the placeholder
 * there (made now when nothing was there), 0 when something else is
 * there, -EAGAIN when name changed while looking (look again), or
 * another -errno.
 */
static int
look(int dirfd, const char *name, int *fd)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (marked_any(&st) && !marked(&st))
            return -EBUSY;
        if (!marked(&st))
            return 0;
    } else if (errno != ENOENT) {
        return -errno;
    } else {
        /* The mode exactly, whatever the caller's umask (which the
         * command inherits: restored at once). */
        mode_t old = umask(077);
        int rc = mkdirat(dirfd, name, SANDBOX_PLACEHOLDER_MODE);
        int e = errno;
        umask(old);
        if (rc != 0)
            return e == EEXIST ? -EAGAIN : -e;
    }
    *fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0)
        return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? -EAGAIN : -errno;
    return 1;
}

/* With fd's shared lock held: 1 when fd is still the placeholder at
 * dirfd/name, 0 when it lost its mark there (it is the user's now),
 * -EAGAIN when name is something else now, or -errno. */
static int
still_there(int dirfd, const char *name, int fd)
{
    struct stat mine, now;
    if (fstat(fd, &mine) != 0)
        return -errno;
    if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT || errno == ENOTDIR ? -EAGAIN : -errno;
    if (!file_id_same(&mine, &now))
        return -EAGAIN;
    return marked(&mine) ? 1 : 0;
}

int
sandbox_placeholder_hold(int dirfd, const char *name, struct sandbox_placeholder *ph)
{
    ph->fd = -1;
    for (int i = 0; i < SANDBOX_PLACEHOLDER_TRIES; i++) {
        int fd = -1;
        int rc = look(dirfd, name, &fd);
        if (rc == -EAGAIN)
            continue;
        if (rc <= 0)
            return rc;
        /* A placeholder is removed only under the exclusive lock, so
         * once this shared one is granted, the placeholder found at name
         * stays there until it is released; before, another sandbox's
         * end may have removed it (then look again). */
        rc = lock(fd, LOCK_SH);
        if (rc == 0)
            rc = still_there(dirfd, name, fd);
        if (rc == 1) {
            ph->fd = fd;
            return 1;
        }
        close(fd);
        if (rc != -EAGAIN)
            return rc;
    }
    return -EAGAIN;
}

int
sandbox_placeholder_last(struct sandbox_placeholder *ph)
{
    if (ph->fd < 0)
        return 0;
    int rc = lock(ph->fd, LOCK_EX | LOCK_NB);
    if (rc == -EAGAIN) {
        close(ph->fd);
        ph->fd = -1;
        return 0;
    }
    return rc == 0 ? 1 : rc;
}

int
sandbox_placeholder_release(int dirfd, const char *name, struct sandbox_placeholder *ph)
{
    int fd = ph->fd;
    if (fd < 0)
        return 0;
    ph->fd = -1;
    /* Granted only when no other sandbox holds the placeholder.  Asking
     * drops this shared lock first, so the hold ends either way. */
    int rc = lock(fd, LOCK_EX | LOCK_NB);
    if (rc == 0)
        rc = still_there(dirfd, name, fd);
    if (rc == 1) {
        /* The check above and this rmdir are two steps: an empty directory
         * someone outside put in its place in between (the command cannot)
         * would go instead; the rmdir itself removes nothing that is not
         * empty. */
        if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0)
            rc = 1;
        else if (errno == ENOTEMPTY || errno == EEXIST)
            rc = fchmod(fd, 0700) == 0 ? 0 : -errno; /* someone's content: theirs now */
        else
            rc = -errno;
    } else if (rc == -EAGAIN) {
        /* Held by another sandbox (EWOULDBLOCK is EAGAIN), or gone or
         * replaced. */
        rc = 0;
    }
    close(fd);
    return rc;
}

int
sandbox_placeholder_sweep(int dirfd, const char *name)
{
    struct sandbox_placeholder ph = {
        .fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (ph.fd < 0)
        return errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EACCES ? 0
                                                                                        : -errno;
    struct stat st;
    int rc = fstat(ph.fd, &st) == 0 ? marked(&st) : -errno;
    if (rc <= 0) {
        close(ph.fd);
        return rc;
    }
    /* no shared lock is taken: release's exclusive one is granted only
     * when no sandbox holds it, and a sandbox about to hold it looks
     * again when it went away meanwhile (sandbox_placeholder_hold) */
    return sandbox_placeholder_release(dirfd, name, &ph);
}
