/*
 * session_net: the session's network namespace, held by its fd and its
 * keeper's socket.
 */
#include "server/net/session_net.h"

#include "common/fd_pass.h"
#include "common/log.h"
#include "sandbox/netns.h"
#include "sandbox/policy/cmdline.h"
#include "server/call/spawn_child.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The longest the loop waits for the keeper's answer: it makes a
 * namespace or a socket and answers at once; one that does not is
 * treated as gone (its session's commands get no network). */
#define KEEPER_WAIT_MS 10000

/* The keeper's fd number. */
#define KEEPER_FD 3

struct session_net {
    uv_loop_t *loop;
    const char *helper;
    bool asked;                 /* made, or failed: never tried twice */
    int fd;                     /* the namespace, or -errno */
    int sock;                   /* to the keeper, or -1 */
    struct spawn_child *keeper; /* until it is closed */
    char why[128];
};

static void
keeper_exited(struct spawn_child *c, int64_t status, int sig)
{
    (void)c;
    if (status != 0 || sig != 0)
        log_warn("network: a session's network keeper ended (status %lld, signal %d)",
                 (long long)status, sig);
}

/* One message from the keeper into buf (len bytes) with at most one fd:
 * waits up to KEEPER_WAIT_MS.  Returns 0, or -errno. */
static int
keeper_recv(struct session_net *sn, void *buf, size_t len, int *fd)
{
    *fd = -1;
    struct pollfd p = {.fd = sn->sock, .events = POLLIN};
    int rc;
    while ((rc = poll(&p, 1, KEEPER_WAIT_MS)) < 0 && errno == EINTR)
        ;
    if (rc == 0)
        return -ETIMEDOUT;
    if (rc < 0)
        return -errno;
    size_t nfds = 0;
    ssize_t n = fd_pass_recv(sn->sock, buf, len, fd, 1, &nfds, NULL);
    if (n < 0)
        return (int)n;
    if (n != (ssize_t)len) {
        if (nfds == 1)
            close(*fd);
        *fd = -1;
        return -EPIPE; /* the keeper is gone */
    }
    if (nfds == 0)
        *fd = -1;
    return 0;
}

/* Starts the keeper; returns its socket, or -errno. */
static int
start_keeper(struct session_net *sn)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return -errno;
    char fdnum[16];
    snprintf(fdnum, sizeof fdnum, "%d", KEEPER_FD);
    char *const argv[] = {(char *)sn->helper, (char *)SANDBOX_OPT_NET_NS_KEEPER, fdnum, NULL};
    const struct spawn_fd fds[] = {{.fd = sv[1], .at = KEEPER_FD}};
    const struct spawn_options o = {
        .file = sn->helper,
        .argv = argv,
        .fds = fds,
        .n_fds = 1,
        .die_with_server = true,
    };
    int rc = spawn_start(sn->loop, &o, keeper_exited, sn, &sn->keeper);
    close(sv[1]);
    if (rc < 0) {
        close(sv[0]);
        return rc;
    }
    return sv[0];
}

/* The namespace from a new keeper, or -errno with sn->why. */
static int
make(struct session_net *sn)
{
    int sock = start_keeper(sn);
    if (sock < 0) {
        snprintf(sn->why, sizeof sn->why, "starting %s", sn->helper);
        return sock;
    }
    sn->sock = sock;
    struct sandbox_netns_hello hello = {EIO, ""};
    int fd = -1;
    int rc = keeper_recv(sn, &hello, sizeof hello, &fd);
    if (rc == 0 && hello.err == 0 && fd >= 0)
        return fd;
    if (fd >= 0)
        close(fd);
    if (rc < 0) {
        snprintf(sn->why, sizeof sn->why, "waiting for the keeper");
    } else {
        hello.what[sizeof hello.what - 1] = '\0';
        snprintf(sn->why, sizeof sn->why, "%s", hello.what);
        rc = hello.err ? -hello.err : -EIO;
    }
    close(sn->sock);
    sn->sock = -1;
    return rc;
}

struct session_net *
session_net_new(uv_loop_t *loop, const char *helper)
{
    struct session_net *sn = calloc(1, sizeof *sn);
    if (!sn)
        return NULL;
    sn->loop = loop;
    sn->helper = helper;
    sn->fd = sn->sock = -1;
    return sn;
}

int
session_net_fd(struct session_net *sn, const char **why)
{
    if (!sn->asked) {
        sn->asked = true;
        sn->fd = make(sn);
    }
    *why = sn->fd < 0 ? sn->why : NULL;
    return sn->fd;
}

bool
session_net_made(const struct session_net *sn)
{
    return sn->asked;
}

int
session_net_socket(struct session_net *sn, int domain, int type, int protocol)
{
    if (sn->sock < 0)
        return -ESRCH;
    struct sandbox_netns_request req = {domain, type, protocol};
    if (send(sn->sock, &req, sizeof req, MSG_NOSIGNAL) != (ssize_t)sizeof req)
        return errno ? -errno : -EIO;
    struct sandbox_netns_reply reply = {EIO};
    int fd = -1;
    int rc = keeper_recv(sn, &reply, sizeof reply, &fd);
    if (rc == 0 && reply.err == 0 && fd >= 0)
        return fd;
    if (fd >= 0)
        close(fd);
    if (rc < 0) {
        /* a late answer would be taken for the next one's: no more asks */
        log_warn("network: a session's network keeper: %s: its sockets are refused from now on",
                 strerror(-rc));
        close(sn->sock);
        sn->sock = -1;
        return rc;
    }
    return reply.err ? -reply.err : -EIO;
}

void
session_net_free(struct session_net *sn)
{
    if (!sn)
        return;
    /* its end of the socket closed, the keeper exits; its exit is the
     * subreaper's to reap once it is no longer watched */
    if (sn->sock >= 0)
        close(sn->sock);
    if (sn->keeper)
        spawn_close(sn->keeper, NULL);
    if (sn->fd >= 0)
        close(sn->fd);
    free(sn);
}
