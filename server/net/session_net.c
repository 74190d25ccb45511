/*
 * session_net: the session's network namespace, made in a child and held
 * by its fd.
 */
#include "server/net/session_net.h"

#include "common/fd_pass.h"
#include "sandbox/netns.h"

#include <errno.h>
#include <stdbool.h>
#include <stdnoreturn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct session_net {
    bool asked; /* made, or failed: never tried twice */
    int fd;     /* the namespace, or -errno */
    const char *why;
};

/* What the child reports: 0 and the namespace's fd, or an errno and the
 * step that failed.  what points at a string literal: the same in the
 * server, whose image the child is a copy of (fork, no exec). */
struct made {
    int err;
    const char *what;
};

/* The child: a fork of the server, single-threaded, so it may unshare a
 * user namespace; system calls only (the server's other threads may hold
 * its allocator's locks), then _exit. */
static noreturn void
child(int sock)
{
    struct made m = {0, NULL};
    int fd = -1;
    int rc = sandbox_netns_make(&m.what);
    if (rc < 0)
        m.err = -rc;
    else if ((fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
        m = (struct made){errno, "opening /proc/self/ns/net"};
    struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
    if (fd_pass_send(sock, &iov, 1, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0) < 0)
        _exit(1);
    _exit(0);
}

/* The namespace from a child, or -errno with *why. */
static int
make(const char **why)
{
    int sv[2];
    *why = "a socket pair to the child";
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return -errno;
    pid_t pid = fork();
    if (pid == 0)
        child(sv[1]);
    int e = errno;
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        *why = "fork";
        return -e;
    }
    /* the child has sent, or died, by the time it is reaped: its message
     * waits in the socket */
    int status = 0;
    while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR)
        ;
    struct made m = {EIO, NULL};
    int fd = -1;
    size_t nfds = 0;
    ssize_t n = fd_pass_recv(sv[0], &m, sizeof m, &fd, 1, &nfds, NULL);
    close(sv[0]);
    if (n != (ssize_t)sizeof m || (m.err == 0 && nfds != 1)) {
        if (nfds == 1)
            close(fd);
        *why = "receiving it from the child";
        return n < 0 ? (int)n : -EIO;
    }
    if (m.err != 0) {
        if (nfds == 1)
            close(fd);
        *why = m.what;
        return -m.err;
    }
    *why = NULL;
    return fd;
}

struct session_net *
session_net_new(void)
{
    struct session_net *sn = calloc(1, sizeof *sn);
    if (sn)
        sn->fd = -1;
    return sn;
}

int
session_net_fd(struct session_net *sn, const char **why)
{
    if (!sn->asked) {
        sn->asked = true;
        sn->fd = make(&sn->why);
    }
    *why = sn->why;
    return sn->fd;
}

bool
session_net_made(const struct session_net *sn)
{
    return sn->asked;
}

void
session_net_free(struct session_net *sn)
{
    if (!sn)
        return;
    if (sn->fd >= 0)
        close(sn->fd);
    free(sn);
}
