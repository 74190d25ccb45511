/*
 * ns: unshare, identity maps, the read-only world, read-only binds,
 * covers for hidden paths and /proc.
 */
#include "sandbox/ns.h"

#include "common/macros.h"
#include "sandbox/placeholder.h"
#include "sandbox/protect_arg.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A .git file is one line; anything larger is not one git wrote. */
#define GITFILE_MAX (64 * 1024)

/*
 * The mount API of Linux 5.2 (open_tree, move_mount, fsopen, fsconfig,
 * fsmount) and 5.12 (mount_setattr), called directly: glibc's wrappers
 * are recent and musl has none.  The constants are the kernel's
 * (linux/mount.h, which clashes with glibc's sys/mount.h), under names of
 * our own.
 */
#define NS_OPEN_TREE_CLONE      1u
#define NS_AT_RECURSIVE         0x8000u
#define NS_MOVE_F_EMPTY_PATH    0x4u
#define NS_MOVE_T_EMPTY_PATH    0x40u
#define NS_FSOPEN_CLOEXEC       1u
#define NS_FSMOUNT_CLOEXEC      1u
#define NS_FSCONFIG_CREATE      6u
#define NS_FSCONFIG_SET_STR     1u
#define NS_FSCONFIG_SET_FLAG    0u
#define NS_FSCONFIG_RECONFIGURE 7u
#define NS_FSPICK_CLOEXEC       1u
#define NS_FSPICK_EMPTY_PATH    8u
#define NS_ATTR_RDONLY          0x1u
#define NS_ATTR_NOSUID          0x2u
#define NS_ATTR_NODEV           0x4u
#define NS_ATTR_NOEXEC          0x8u

struct ns_mount_attr {
    uint64_t attr_set, attr_clr, propagation, userns_fd;
};

static int
ns_open_tree(int dfd, const char *path, unsigned flags)
{
    return (int)syscall(SYS_open_tree, dfd, path, flags | O_CLOEXEC);
}

static int
ns_move_mount(int from_fd, const char *from, int to_fd, const char *to, unsigned flags)
{
    return (int)syscall(SYS_move_mount, from_fd, from, to_fd, to, flags);
}

/* Sets and clears attributes on the mount at dfd/path (AT_* flags). */
static int
ns_mount_setattr(int dfd, const char *path, unsigned flags, uint64_t set, uint64_t clr)
{
    struct ns_mount_attr a = {.attr_set = set, .attr_clr = clr};
    return (int)syscall(SYS_mount_setattr, dfd, path, flags, &a, sizeof a);
}

static int
write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int rc = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
    close(fd);
    return rc;
}

/* Each id maps to itself, so files keep their owners.  A process can only
 * map its own ids from inside the namespace it just created (wider maps
 * need a writer outside), so even root gets a single id: files of other
 * owners then show as the overflow id and root's DAC override does not
 * reach them (see docs/sandbox.md). */
int
sandbox_ns_write_id_maps(uid_t uid, gid_t gid)
{
    char map[64];
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    int rc = write_file("/proc/self/uid_map", map);
    if (rc == 0)
        rc = write_file("/proc/self/setgroups", "deny\n");
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    if (rc == 0)
        rc = write_file("/proc/self/gid_map", map);
    return rc;
}

int
sandbox_ns_unshare(struct sandbox_ns_state *st)
{
    memset(st, 0, sizeof *st);
    const char *off = getenv("EXECGATE_SANDBOX_NO_NAMESPACES");
    if (off != NULL && strcmp(off, "1") == 0)
        return -EPERM;
    uid_t uid = getuid();
    gid_t gid = getgid();
    /* IPC too: System V queues, semaphores and shared memory, and POSIX
     * message queues, are found by id or name, with no file Landlock or
     * the read-only world could stand in front of */
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC) == 0) {
        st->user = true;
        int rc = sandbox_ns_write_id_maps(uid, gid);
        if (rc < 0)
            return rc;
    } else if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC) != 0) {
        return -errno;
    }
    st->mount = st->pid = st->ipc = true;
    /* Nothing mounted here may show up outside, and nothing mounted
     * outside later may show up here: it would miss the read-only world. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return -errno;
    return 0;
}

/* Mount flags that a remount inside a user namespace must keep (the
 * kernel locks them), read from the mount itself. */
static unsigned long
kept_flags(const char *path)
{
    struct statvfs sv;
    if (statvfs(path, &sv) != 0)
        return 0;
    unsigned long keep =
        ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_NOATIME | ST_NODIRATIME | ST_RELATIME;
    /* The ST_ values are the MS_ values on Linux. */
    return sv.f_flag & keep;
}

int
sandbox_ns_bind_ro(const char *path, json_t *ro)
{
    if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) != 0)
        return -errno;
    unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | kept_flags(path);
    if (mount(NULL, path, NULL, flags, NULL) != 0)
        return -errno;
    return json_array_append_new(ro, json_string(path)) == 0 ? 0 : -ENOMEM;
}

int
sandbox_ns_pin(const char *dir)
{
    /* MS_REC: the binds already below dir (read-only ones included, with
     * their flags) stay visible through the new mount. */
    if (mount(dir, dir, NULL, MS_BIND | MS_REC, NULL) != 0)
        return -errno;
    return 0;
}

/* Sets *err to "WHAT PATH" (malloc'd; NULL when out of memory) and
 * returns rc. */
static int
failf(char **err, int rc, const char *what, const char *path)
{
    if (asprintf(err, "%s %s", what, path) < 0)
        *err = NULL;
    return rc;
}

/* The gitdir a .git file names, absolute; NULL with *rc set when the file
 * cannot be read or is not a gitdir pointer (*rc 0: not one, leave it). */
static char *
read_gitdir(const char *root, const char *gitfile, int *rc)
{
    *rc = 0;
    /* The command may have swapped the file for a FIFO since lstat:
     * never block on it, and read only a regular file. */
    int fd = open(gitfile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        *rc = -errno;
        return NULL;
    }
    struct stat st;
    char *buf = NULL;
    errno = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > GITFILE_MAX) {
        *rc = errno != 0 ? -errno : S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
        close(fd);
        return NULL;
    }
    buf = calloc(1, (size_t)st.st_size + 1);
    ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (n < 0) {
        *rc = buf ? -errno : -ENOMEM;
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    char *path = NULL;
    if (strncmp(buf, "gitdir: ", 8) == 0) {
        char *d = buf + 8;
        d[strcspn(d, "\r\n")] = '\0';
        int ok = d[0] == '/' ? asprintf(&path, "%s", d) : asprintf(&path, "%s/%s", root, d);
        if (ok < 0) {
            path = NULL;
            *rc = -ENOMEM;
        }
    }
    free(buf);
    return path;
}

static int
protect_git(const char *root, json_t *ro, char **err)
{
    char *git;
    if (asprintf(&git, "%s/.git", root) < 0)
        return -ENOMEM;
    struct stat st;
    int rc = 0;
    if (lstat(git, &st) != 0) {
        rc = errno == ENOENT ? 0 : failf(err, -errno, "examining", git);
    } else if (S_ISREG(st.st_mode)) {
        char *gitdir = read_gitdir(root, git, &rc);
        if (rc < 0)
            failf(err, rc, "reading", git);
        if (rc == 0)
            rc = sandbox_ns_bind_ro(git, ro);
        if (rc == 0 && gitdir != NULL && access(gitdir, F_OK) == 0 &&
            (rc = sandbox_ns_bind_ro(gitdir, ro)) < 0)
            failf(err, rc, "binding read-only", gitdir);
        free(gitdir);
    } else if ((rc = sandbox_ns_bind_ro(git, ro)) < 0) {
        failf(err, rc, "binding read-only", git);
    }
    if (rc < 0 && *err == NULL)
        failf(err, rc, "binding read-only", git);
    free(git);
    return rc;
}

/* Whether the read-only bind at path sits on the directory fd holds (the
 * placeholder, not something put in its place between its check and the
 * bind). */
static int
check_bound(const char *path, int fd, char **err)
{
    struct stat bound, held;
    if (stat(path, &bound) != 0 || fstat(fd, &held) != 0)
        return failf(err, -errno, "examining", path);
    if (bound.st_dev != held.st_dev || bound.st_ino != held.st_ino)
        return failf(err, -EAGAIN, "changed while being bound:", path);
    return 0;
}

static int
protect_codex(const char *root, struct sandbox_placeholder *ph, json_t *ro, char **err)
{
    char *codex;
    if (asprintf(&codex, "%s/.codex", root) < 0)
        return -ENOMEM;
    int rc = ph != NULL ? sandbox_placeholder_hold(AT_FDCWD, codex, ph) : 0;
    struct stat st;
    if (rc == -EACCES || rc == -EPERM || rc == -EROFS) {
        /* Refused for lack of rights or a read-only tree: the command,
         * with the same ids and less access, cannot create it either. */
        rc = 0;
    } else if (rc == -EBUSY) {
        failf(err, rc,
              "another user's call holds a placeholder there, which this call could neither "
              "hold nor keep (it goes when their last call ends):",
              codex);
    } else if (rc < 0) {
        /* Any other failure might pass, so it stops the helper. */
        failf(err, rc, "making a placeholder at", codex);
    } else if (rc == 1 || lstat(codex, &st) == 0) {
        rc = sandbox_ns_bind_ro(codex, ro);
        if (rc < 0)
            failf(err, rc, "binding read-only", codex);
        else if (ph != NULL && ph->fd >= 0)
            rc = check_bound(codex, ph->fd, err);
    } else if (errno != ENOENT) {
        rc = failf(err, -errno, "examining", codex);
    }
    if (rc < 0 && ph != NULL && ph->fd >= 0) {
        /* Nothing held on failure, and nothing left behind. */
        (void)sandbox_ns_unbind(codex);
        (void)sandbox_placeholder_release(AT_FDCWD, codex, ph);
    }
    free(codex);
    return rc;
}

int
sandbox_ns_protect(const char *root, struct sandbox_placeholder *codex, json_t *ro, char **err)
{
    *err = NULL;
    if (codex != NULL)
        codex->fd = -1;
    int rc = protect_git(root, ro, err);
    if (rc == 0)
        rc = protect_codex(root, codex, ro, err);
    return rc;
}

int
sandbox_ns_unbind(const char *path)
{
    int n = 0;
    while (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
        n++;
    return errno == EINVAL ? n : -errno;
}

/* Unmounts what comes off the directory dir, topmost first, at most
 * SANDBOX_NS_UNBIND_MAX; returns how many came off. */
static int
unbind_here(const char *dir)
{
    int n = 0;
    while (n < SANDBOX_NS_UNBIND_MAX && umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
        n++;
    return n;
}

int
sandbox_ns_unbind_above(const char *path)
{
    char *p = strdup(path);
    if (p == NULL)
        return -ENOMEM;
    int n = unbind_here("/");
    for (size_t i = 1; p[i - 1] != '\0'; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char saved = p[i];
        p[i] = '\0';
        n += unbind_here(p);
        p[i] = saved;
    }
    free(p);
    return n;
}

/* A writable root while the world is made read-only: its copy, and the
 * device and inode its fd held at the start, which its path must still
 * lead to at each later step. */
struct root_copy {
    int tree;
    dev_t dev;
    ino_t ino;
};

/* Whether fd holds the directory rc was. */
static bool
same_root(int fd, const struct root_copy *rc)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == rc->dev && st.st_ino == rc->ino;
}

/* Root i's copy (c[i].tree), moved onto where its path leads now. */
static int
put_back(const struct root_copy *c, size_t i, sandbox_ns_reopen_fn reopen, void *arg)
{
    int at = reopen(arg, i);
    if (at < 0)
        return at;
    int rc = same_root(at, &c[i]) ? 0 : -EAGAIN;
    if (rc == 0 &&
        ns_move_mount(c[i].tree, "", at, "", NS_MOVE_F_EMPTY_PATH | NS_MOVE_T_EMPTY_PATH) != 0)
        rc = -errno;
    close(at);
    return rc;
}

/* fds[i] replaced by root i as its path leads now (the same directory). */
static int
reopen_root(int *fds, const struct root_copy *c, size_t i, sandbox_ns_reopen_fn reopen, void *arg)
{
    int at = reopen(arg, i);
    if (at < 0)
        return at;
    if (!same_root(at, &c[i])) {
        close(at);
        return -EAGAIN;
    }
    close(fds[i]);
    fds[i] = at;
    return 0;
}

/* Each root's device and inode into c (tree -1); 1 when one of them is
 * the namespace's root directory, 0, or -errno. */
static int
roots_examine(const int *fds, size_t n, struct root_copy *c)
{
    struct stat root, st;
    if (stat("/", &root) != 0)
        return -errno;
    for (size_t i = 0; i < n; i++) {
        c[i] = (struct root_copy){.tree = -1};
        if (fds[i] < 0)
            continue;
        if (fstat(fds[i], &st) != 0)
            return -errno;
        c[i].dev = st.st_dev;
        c[i].ino = st.st_ino;
        if (st.st_dev == root.st_dev && st.st_ino == root.st_ino)
            return 1;
    }
    return 0;
}

int
sandbox_ns_read_only_world(int *fds, char *const *names, size_t n, sandbox_ns_reopen_fn reopen,
                           void *arg, char **err)
{
    *err = NULL;
    struct root_copy *c = malloc((n ? n : 1) * sizeof *c);
    if (c == NULL)
        return -ENOMEM;
    int rc = roots_examine(fds, n, c);
    if (rc != 0) {
        free(c);
        /* 1: "/" is writable, nothing lies outside the roots */
        return rc > 0 ? 0 : failf(err, rc, "examining", "the writable roots");
    }
    for (size_t i = 0; i < n; i++) {
        if (rc < 0 || fds[i] < 0)
            continue;
        /* Copied before the world is read-only: writable as it is now. */
        c[i].tree = ns_open_tree(fds[i], "", NS_OPEN_TREE_CLONE | NS_AT_RECURSIVE | AT_EMPTY_PATH);
        if (c[i].tree < 0)
            rc = failf(err, -errno, "copying the mounts of the writable root", names[i]);
        else if (ns_mount_setattr(c[i].tree, "", AT_EMPTY_PATH | NS_AT_RECURSIVE,
                                  NS_ATTR_NOSUID | NS_ATTR_NODEV, 0) != 0)
            rc = failf(err, -errno, "making nosuid,nodev the writable root", names[i]);
    }
    if (rc == 0 && ns_mount_setattr(AT_FDCWD, "/", NS_AT_RECURSIVE, NS_ATTR_RDONLY, 0) != 0)
        rc = failf(err, -errno, "making every mount read-only:", "/");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (c[i].tree >= 0 && (rc = put_back(c, i, reopen, arg)) < 0)
            failf(err, rc, "putting back the writable root", names[i]);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (fds[i] >= 0 && (rc = reopen_root(fds, c, i, reopen, arg)) < 0)
            failf(err, rc, "reopening the writable root", names[i]);
    }
    for (size_t i = 0; i < n; i++) {
        if (c[i].tree >= 0)
            close(c[i].tree);
    }
    free(c);
    return rc;
}

const char *
sandbox_ns_hide_arg_error(const char *path)
{
    const char *why = sandbox_protect_arg_error(path);
    if (why == NULL && path[strspn(path, "/")] == '\0')
        why = "is the root directory";
    return why;
}

/* A detached tmpfs (no path reaches it) holding "d", an empty directory,
 * and "f", an empty file, both mode 0, made read-only once they exist:
 * what sandbox_ns_hide puts over what it hides.  Returns the mount's fd
 * or -errno. */
static int
blank_new(void)
{
    int fs = (int)syscall(SYS_fsopen, "tmpfs", NS_FSOPEN_CLOEXEC);
    if (fs < 0)
        return -errno;
    int mnt = -1;
    if (syscall(SYS_fsconfig, fs, NS_FSCONFIG_CREATE, NULL, NULL, 0) == 0)
        mnt = (int)syscall(SYS_fsmount, fs, NS_FSMOUNT_CLOEXEC,
                           NS_ATTR_NOSUID | NS_ATTR_NODEV | NS_ATTR_NOEXEC);
    int rc = mnt < 0 ? -errno : 0;
    close(fs);
    if (rc == 0 && mkdirat(mnt, "d", 0) != 0)
        rc = -errno;
    int f = rc == 0 ? openat(mnt, "f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0) : -1;
    if (rc == 0 && f < 0)
        rc = -errno;
    if (f >= 0)
        close(f);
    if (rc == 0 && ns_mount_setattr(mnt, "", AT_EMPTY_PATH, NS_ATTR_RDONLY, 0) != 0)
        rc = -errno;
    if (rc < 0 && mnt >= 0)
        close(mnt);
    return rc < 0 ? rc : mnt;
}

/* Puts a copy of blank's "d" or "f" (as what fd holds is a directory or
 * not) on the object fd holds, where it is in this mount namespace. */
static int
cover(int blank, int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    int tree = ns_open_tree(blank, S_ISDIR(st.st_mode) ? "d" : "f", NS_OPEN_TREE_CLONE);
    if (tree < 0)
        return -errno;
    int rc = ns_move_mount(tree, "", fd, "", NS_MOVE_F_EMPTY_PATH | NS_MOVE_T_EMPTY_PATH);
    rc = rc == 0 ? 0 : -errno;
    close(tree);
    return rc;
}

int
sandbox_ns_hide(const char *const *paths, size_t n, json_t *hidden, char **err)
{
    *err = NULL;
    int blank = -1, rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        /* Opened once: the cover goes on this object, wherever a link
         * swapped after the lookup would point. */
        int fd = open(paths[i], O_PATH | O_CLOEXEC);
        if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
            continue; /* nothing by that name to hide */
        if (fd < 0) {
            rc = failf(err, -errno, "looking at", paths[i]);
            break;
        }
        if (blank < 0 && (blank = blank_new()) < 0) {
            rc = failf(err, blank, "making an empty tmpfs to hide", paths[i]);
            blank = -1;
        }
        if (rc == 0 && (rc = cover(blank, fd)) < 0)
            failf(err, rc, "covering", paths[i]);
        close(fd);
        if (rc == 0 && json_array_append_new(hidden, json_string(paths[i])) != 0)
            rc = -ENOMEM;
    }
    if (blank >= 0)
        close(blank);
    return rc;
}

/* The device nodes kept in the sandbox's /dev: those programs open as a
 * matter of course (sandbox_writable_new's writable ones; /dev/ptmx is a
 * link to the sandbox's own pts/ptmx, since the host's would look for its
 * instance beside the host's node, where there is none). */
static const char *const kept_devices[] = {
    "null", "zero", "full", "random", "urandom", "tty",
};

/* The links every /dev has, to the process's own fds. */
static const struct {
    const char *name, *target;
} dev_links[] = {
    {"fd", "/proc/self/fd"},       {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
    {"stderr", "/proc/self/fd/2"}, {"ptmx", "pts/ptmx"},
};

/* A detached tmpfs (mode 0755, nosuid, noexec) holding an empty file for
 * each kept device, the directories pts and shm and the fd links: the
 * sandbox's /dev before the devices are bound onto it.  The files are made
 * by mknodat (one call each, no fd to close).  Returns its fd or -errno. */
static int
dev_tmpfs(void)
{
    int fs = (int)syscall(SYS_fsopen, "tmpfs", NS_FSOPEN_CLOEXEC);
    if (fs < 0)
        return -errno;
    int mnt = -1;
    if (syscall(SYS_fsconfig, fs, NS_FSCONFIG_SET_STR, "mode", "0755", 0) == 0 &&
        syscall(SYS_fsconfig, fs, NS_FSCONFIG_CREATE, NULL, NULL, 0) == 0)
        mnt = (int)syscall(SYS_fsmount, fs, NS_FSMOUNT_CLOEXEC, NS_ATTR_NOSUID | NS_ATTR_NOEXEC);
    int rc = mnt < 0 ? -errno : 0;
    close(fs);
    for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(kept_devices); i++) {
        if (mknodat(mnt, kept_devices[i], S_IFREG, 0) != 0)
            rc = -errno;
    }
    if (rc == 0 && (mkdirat(mnt, "pts", 0755) != 0 || mkdirat(mnt, "shm", 01777) != 0))
        rc = -errno;
    for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(dev_links); i++) {
        if (symlinkat(dev_links[i].target, mnt, dev_links[i].name) != 0)
            rc = -errno;
    }
    if (rc < 0 && mnt >= 0)
        close(mnt);
    return rc < 0 ? rc : mnt;
}

/* Copies of the host's kept devices into clones[] (-1 where the host
 * has none: left missing).  Returns 0 or -errno (each clone opened is
 * then closed by close_clones all the same). */
static int
clone_devices(int clones[ARRAY_SIZE(kept_devices)])
{
    int rc = 0;
    for (size_t i = 0; i < ARRAY_SIZE(kept_devices); i++) {
        char path[32];
        snprintf(path, sizeof path, "/dev/%s", kept_devices[i]);
        clones[i] =
            rc < 0 ? -1 : ns_open_tree(AT_FDCWD, path, NS_OPEN_TREE_CLONE | AT_SYMLINK_NOFOLLOW);
        if (clones[i] < 0 && rc == 0 && errno != ENOENT)
            rc = -errno;
    }
    return rc;
}

static void
close_clones(const int clones[ARRAY_SIZE(kept_devices)])
{
    for (size_t i = 0; i < ARRAY_SIZE(kept_devices); i++) {
        if (clones[i] >= 0)
            close(clones[i]);
    }
}

/* The devices bound onto their files in the tmpfs mnt, each by its name
 * there (the tmpfs is this process's, made a moment ago, and holds no link
 * by those names, so no lookup can be led elsewhere: move_mount follows no
 * final link without MOVE_MOUNT_T_SYMLINKS), then the tmpfs made
 * read-only: nothing more can be made there. */
static int
bind_devices(int mnt, const int clones[ARRAY_SIZE(kept_devices)])
{
    for (size_t i = 0; i < ARRAY_SIZE(kept_devices); i++) {
        if (clones[i] >= 0 &&
            ns_move_mount(clones[i], "", mnt, kept_devices[i], NS_MOVE_F_EMPTY_PATH) != 0)
            return -errno;
    }
    if (ns_mount_setattr(mnt, "", AT_EMPTY_PATH, NS_ATTR_RDONLY, 0) != 0)
        return -errno;
    return 0;
}

/* Moves the detached tree tree onto /dev itself (not through a link
 * there: /dev is the host's, read-only by now). */
static int
onto_dev(int tree)
{
    int dev = open("/dev", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dev < 0)
        return -errno;
    int rc = ns_move_mount(tree, "", dev, "", NS_MOVE_F_EMPTY_PATH | NS_MOVE_T_EMPTY_PATH) == 0
                 ? 0
                 : -errno;
    close(dev);
    return rc;
}

/* The superblock of the mount mnt read-only: a flag of the file system
 * itself, which only a holder of CAP_SYS_ADMIN in the user namespace that
 * made it can clear, where the read-only flag of a mount could be cleared
 * by whoever holds that capability over the mount's namespace. */
static int
superblock_read_only(int mnt)
{
    int fs = (int)syscall(SYS_fspick, mnt, "", NS_FSPICK_CLOEXEC | NS_FSPICK_EMPTY_PATH);
    if (fs < 0)
        return -errno;
    int rc = syscall(SYS_fsconfig, fs, NS_FSCONFIG_SET_FLAG, "ro", NULL, 0) == 0 &&
                     syscall(SYS_fsconfig, fs, NS_FSCONFIG_RECONFIGURE, NULL, NULL, 0) == 0
                 ? 0
                 : -errno;
    close(fs);
    return rc;
}

int
sandbox_ns_own_mounts(void)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    int rc = 0;
    /* a mount namespace alone where no user namespace may be made but
     * the caller may mount (root in a container that refuses them), as
     * sandbox_ns_unshare does */
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0)
        rc = sandbox_ns_write_id_maps(uid, gid);
    else if (unshare(CLONE_NEWNS) != 0)
        return -errno;
    if (rc == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        rc = -errno;
    return rc;
}

/* The sandbox's /dev as a detached tree: the tmpfs with the devices bound
 * onto their files, read-only as a mount and, with sealed, as a file
 * system too (sandbox_ns_dev_template).  Returns its fd or -errno. */
static int
dev_tree(bool sealed)
{
    int clones[ARRAY_SIZE(kept_devices)];
    int rc = clone_devices(clones);
    int mnt = rc == 0 ? dev_tmpfs() : -1;
    if (rc == 0 && mnt < 0)
        rc = mnt;
    if (rc == 0)
        rc = bind_devices(mnt, clones);
    if (rc == 0 && sealed)
        rc = superblock_read_only(mnt);
    close_clones(clones);
    if (rc < 0 && mnt >= 0)
        close(mnt);
    return rc < 0 ? rc : mnt;
}

int
sandbox_ns_minimal_dev(void)
{
    int mnt = dev_tree(false);
    if (mnt < 0)
        return mnt;
    int rc = onto_dev(mnt);
    close(mnt);
    return rc;
}

int
sandbox_ns_dev_template(void)
{
    return dev_tree(true);
}

int
sandbox_ns_dev_from_template(int tmpl)
{
    int tree = ns_open_tree(tmpl, "", NS_OPEN_TREE_CLONE | NS_AT_RECURSIVE | AT_EMPTY_PATH);
    if (tree < 0)
        return -errno;
    int rc = onto_dev(tree);
    close(tree);
    return rc;
}

int
sandbox_ns_own_terminals(void)
{
    int fs = (int)syscall(SYS_fsopen, "devpts", NS_FSOPEN_CLOEXEC);
    if (fs < 0)
        return -errno;
    int mnt = -1;
    if (syscall(SYS_fsconfig, fs, NS_FSCONFIG_SET_STR, "mode", "0620", 0) == 0 &&
        syscall(SYS_fsconfig, fs, NS_FSCONFIG_SET_STR, "ptmxmode", "0666", 0) == 0 &&
        syscall(SYS_fsconfig, fs, NS_FSCONFIG_CREATE, NULL, NULL, 0) == 0)
        mnt = (int)syscall(SYS_fsmount, fs, NS_FSMOUNT_CLOEXEC, NS_ATTR_NOSUID | NS_ATTR_NOEXEC);
    int rc = mnt < 0 ? -errno : 0;
    close(fs);
    /* onto the directory itself: a link there would be the host's to
     * follow, and /dev is the host's devtmpfs, read-only by now */
    int at = rc == 0 ? open("/dev/pts", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (rc == 0 && at < 0)
        rc = -errno;
    if (rc == 0 && ns_move_mount(mnt, "", at, "", NS_MOVE_F_EMPTY_PATH | NS_MOVE_T_EMPTY_PATH) != 0)
        rc = -errno;
    if (at >= 0)
        close(at);
    if (mnt >= 0)
        close(mnt);
    return rc;
}

int
sandbox_ns_mount_proc(void)
{
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
        return -errno;
    return 0;
}
