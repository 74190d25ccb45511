/*
 * unix_holder: from a socket file to the processes that hold its socket.
 *
 * sock_diag answers for the sockets of the asker's network namespace: a
 * sandbox in another network namespace (its session's) is asked about
 * through a socket made there, which the caller passes.
 */
#include "supervise/unix_holder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <stdint.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define DUMP_BUF 32768

/* Looks for the file's socket in one batch of the dump: its inode in
 * *ino and its type in *type when found.  Returns 1 at the end of the
 * dump, 0 for more, -errno. */
static int
scan_batch(const char *buf, ssize_t n, const struct stat *st, unsigned *ino, int *type)
{
    /* the dump gives the superblock's device as the kernel keeps it
     * (MKDEV: major above bit 20), not as stat(2) encodes it */
    uint32_t dev = (uint32_t)(major(st->st_dev) << 20 | minor(st->st_dev));
    if (n <= 0)
        return -EPROTO; /* the dump ended without its NLMSG_DONE */
    /* unsigned, as the header's nlmsg_len that NLMSG_OK compares it with */
    size_t left = (size_t)n;
    for (const struct nlmsghdr *h = (const void *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
        if (h->nlmsg_type == NLMSG_DONE)
            return 1;
        if (h->nlmsg_type == NLMSG_ERROR ||
            h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
            return -EPROTO;
        const struct unix_diag_msg *m = NLMSG_DATA(h);
        int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
        for (const struct rtattr *a = (const void *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
            const struct unix_diag_vfs *v = RTA_DATA(a);
            if (a->rta_type == UNIX_DIAG_VFS && RTA_PAYLOAD(a) >= sizeof *v &&
                v->udiag_vfs_ino == st->st_ino && v->udiag_vfs_dev == dev) {
                *ino = m->udiag_ino;
                *type = m->udiag_type;
            }
        }
    }
    return 0;
}

/* The inode of the socket bound to the file st, 0 when none is, and its
 * type in *type; -errno when the dump fails. */
static long
socket_of(const struct stat *st, int *type, int diag)
{
    int nl = diag >= 0 ? diag : socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return -errno;
    struct {
        struct nlmsghdr nlh;
        struct unix_diag_req req;
    } msg = {
        .nlh = {.nlmsg_len = sizeof msg,
                .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
        .req = {.sdiag_family = AF_UNIX, .udiag_states = ~0u, .udiag_show = UDIAG_SHOW_VFS},
    };
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    char *buf = malloc(DUMP_BUF);
    long rc = buf ? 0 : -ENOMEM;
    if (rc == 0 && sendto(nl, &msg, sizeof msg, 0, (struct sockaddr *)&kernel, sizeof kernel) !=
                       (ssize_t)sizeof msg)
        rc = -errno;
    unsigned ino = 0;
    while (rc == 0) {
        ssize_t n = recv(nl, buf, DUMP_BUF, 0);
        rc = n < 0 ? -errno : scan_batch(buf, n, st, &ino, type);
    }
    free(buf);
    close(nl);
    return rc < 0 ? rc : (long)ino;
}

/* Whether one of the fds in the directory fd (a /proc/N/fd) is the
 * socket "socket:[ino]". */
static bool
fds_hold(int fd, const char *want)
{
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return false;
    }
    bool held = false;
    char link[64];
    for (struct dirent *e; !held && (e = readdir(d)) != NULL;) {
        ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof link - 1);
        if (n > 0) {
            link[n] = '\0';
            held = strcmp(link, want) == 0;
        }
    }
    closedir(d);
    return held;
}

/* The procfs at /proc in target's root, checked to be its PID
 * namespace's (its pid 1 is in that namespace); -errno. */
static int
sandbox_proc(pid_t target)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%d/root/proc", (int)target);
    int proc = open(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc < 0)
        return -errno;
    struct statfs fs;
    struct stat init_ns, target_ns;
    snprintf(name, sizeof name, "/proc/%d/ns/pid", (int)target);
    if (fstatfs(proc, &fs) != 0 || fs.f_type != PROC_SUPER_MAGIC ||
        fstatat(proc, "1/ns/pid", &init_ns, 0) != 0 || stat(name, &target_ns) != 0 ||
        init_ns.st_dev != target_ns.st_dev || init_ns.st_ino != target_ns.st_ino) {
        close(proc);
        return -EACCES;
    }
    return proc;
}

int
unix_holder_inside(pid_t target, const struct stat *st, int diag)
{
    int type = -1;
    long ino = socket_of(st, &type, diag);
    if (ino <= 0 || type != SOCK_DGRAM)
        return ino < 0 ? (int)ino : 0;
    int proc = sandbox_proc(target);
    if (proc < 0)
        return proc;
    DIR *d = fdopendir(proc);
    if (d == NULL) {
        close(proc);
        return -ENOMEM;
    }
    char want[32], fds[300];
    snprintf(want, sizeof want, "socket:[%ld]", ino);
    bool held = false;
    for (struct dirent *e; !held && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(fds, sizeof fds, "%s/fd", e->d_name);
        int fd = openat(dirfd(d), fds, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        held = fd >= 0 && fds_hold(fd, want);
    }
    closedir(d);
    return held;
}
