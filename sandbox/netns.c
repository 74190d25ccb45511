/*
 * netns: a network namespace with only loopback, joining one, and a
 * listener in it.
 */
#include "sandbox/netns.h"
#include "sandbox/ns.h"
#include "common/fd_pass.h"
#include "common/macros.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <linux/sock_diag.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* A new namespace's loopback exists but is down. */
static int
loopback_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    int rc = 0;
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
        rc = -errno;
    } else {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
            rc = -errno;
    }
    close(s);
    return rc;
}

/* The test knob of sandbox_ns_unshare: a kernel without namespaces. */
static bool
namespaces_off(void)
{
    const char *off = getenv("EXECGATE_SANDBOX_NO_NAMESPACES");
    return off != NULL && strcmp(off, "1") == 0;
}

int
sandbox_netns_make(const char **what)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (namespaces_off()) {
        *what = "unshare(CLONE_NEWNET)";
        return -EPERM;
    }
    /* A user namespace of its own owns the network namespace: the
     * commands, each in a user namespace nested in it, hold no capability
     * over the network they share (they cannot take its loopback down or
     * add an interface).  Root may go without, where the kernel refuses
     * user namespaces. */
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
        int rc = sandbox_ns_write_id_maps(uid, gid);
        if (rc < 0) {
            *what = "mapping the ids of its user namespace";
            return rc;
        }
    } else if (unshare(CLONE_NEWNET) != 0) {
        *what = "unshare(CLONE_NEWUSER | CLONE_NEWNET)";
        return -errno;
    }
    int rc = loopback_up();
    if (rc < 0)
        *what = "bringing the loopback interface up";
    return rc;
}

/* Whether the keeper makes this kind of socket. */
static bool
keeper_makes(const struct sandbox_netns_request *r)
{
    if (r->domain == AF_UNIX)
        return r->protocol == 0 &&
               (r->type == SOCK_STREAM || r->type == SOCK_SEQPACKET || r->type == SOCK_DGRAM);
    return r->domain == AF_NETLINK && r->type == SOCK_DGRAM && r->protocol == NETLINK_SOCK_DIAG;
}

noreturn void
sandbox_netns_keep(int sock)
{
    struct sandbox_netns_hello hello = {0, ""};
    const char *what = "";
    int rc = sandbox_netns_make(&what);
    int fd = rc < 0 ? rc : open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (rc == 0 && fd < 0) {
        fd = -errno;
        what = "opening /proc/self/ns/net";
    }
    if (fd < 0) {
        hello.err = -fd;
        snprintf(hello.what, sizeof hello.what, "%s", what);
    }
    struct iovec iov = {.iov_base = &hello, .iov_len = sizeof hello};
    if (fd_pass_send(sock, &iov, 1, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0) < 0)
        _exit(1);
    if (fd < 0)
        _exit(0);
    close(fd);
    for (;;) {
        struct sandbox_netns_request req;
        ssize_t n = recv(sock, &req, sizeof req, 0);
        if (n == 0)
            _exit(0); /* the server is gone, or done with the namespace */
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof req)
            _exit(1);
        struct sandbox_netns_reply reply = {0};
        int made = -1;
        if (!keeper_makes(&req))
            reply.err = EPERM;
        else if ((made = socket(req.domain, req.type | SOCK_CLOEXEC, req.protocol)) < 0)
            reply.err = errno;
        iov = (struct iovec){.iov_base = &reply, .iov_len = sizeof reply};
        ssize_t sent = fd_pass_send(sock, &iov, 1, made >= 0 ? &made : NULL, made >= 0 ? 1 : 0);
        if (made >= 0)
            close(made);
        if (sent < 0)
            _exit(1);
    }
}

int
sandbox_netns_join(int fd, bool *entered, const char **what)
{
    *entered = false;
    if (namespaces_off()) {
        *what = "setns";
        return -EPERM;
    }
    *what = "the fd is not a network namespace";
    int type = ioctl(fd, NS_GET_NSTYPE);
    if (type < 0)
        return -errno;
    if (type != CLONE_NEWNET)
        return -EINVAL;
    *what = "finding the namespace's user namespace";
    int user = ioctl(fd, NS_GET_USERNS);
    if (user < 0)
        return -errno;
    /* Joining a network namespace takes CAP_SYS_ADMIN in the user
     * namespace that owns it: the caller enters that one first (it is
     * its owner's, the server's user), and nests its own in it after.
     * The one it is in already is refused with EINVAL (as an ancestor
     * would be, which then leaves the caller without the capability:
     * the setns below fails), which saves looking at /proc/self/ns. */
    int rc = 0;
    if (setns(user, CLONE_NEWUSER) == 0)
        *entered = true;
    else if (errno != EINVAL)
        rc = -errno;
    close(user);
    if (rc < 0) {
        *what = "entering the namespace's user namespace";
        return rc;
    }
    if (setns(fd, CLONE_NEWNET) != 0) {
        *what = "setns(CLONE_NEWNET)";
        return -errno;
    }
    return 0;
}

int
sandbox_netns_enter(unsigned *port, const char **what)
{
    if (unshare(CLONE_NEWNET) != 0) {
        *what = "unshare(CLONE_NEWNET)";
        return -errno;
    }
    int rc = loopback_up();
    if (rc < 0) {
        *what = "bringing the loopback interface up";
        return rc;
    }
    return sandbox_netns_listen(port, what);
}

int
sandbox_netns_listen(unsigned *port, const char **what)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *what = "socket";
        return -errno;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        int rc = -errno;
        close(fd);
        *what = "listening on 127.0.0.1";
        return rc;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

int
sandbox_netns_set_env(unsigned port)
{
    char http[64], socks[64];
    snprintf(http, sizeof http, "http://127.0.0.1:%u", port);
    snprintf(socks, sizeof socks, "socks5h://127.0.0.1:%u", port);
    static const char *const names[][2] = {{"HTTP_PROXY", "http_proxy"},
                                           {"HTTPS_PROXY", "https_proxy"},
                                           {"ALL_PROXY", "all_proxy"},
                                           {"NO_PROXY", "no_proxy"}};
    const char *values[] = {http, http, socks, ""};
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        for (size_t j = 0; j < 2; j++)
            if (setenv(names[i][j], values[i], 1) != 0)
                return -errno;
    return 0;
}
