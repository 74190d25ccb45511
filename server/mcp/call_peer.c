#include "server/mcp/call_peer.h"

#include "common/peer_cred.h"
#include "common/proc_stat.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Linux 6.5; older headers lack it (the kernel then says ENOPROTOOPT). */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* How often a walk up the parents starts again when a process on the way
 * exits under it (its children then have a new parent). */
#define WALK_TRIES 3

/* The parent of pid, or -1 when pid is gone or its stat cannot be read. */
static pid_t
parent_of(pid_t pid)
{
    struct proc_stat st;
    return proc_stat_read(pid, &st) == 0 && st.ppid >= 0 ? st.ppid : -1;
}

/* CALL_PEER_CALL when pid descends from server, OUTSIDE when its chain
 * of parents ends elsewhere, UNKNOWN when it cannot be followed. */
static enum call_peer_origin
walk_parents(pid_t pid, pid_t server)
{
    for (int attempt = 0; attempt < WALK_TRIES; attempt++) {
        pid_t p = pid;
        bool broken = false;
        for (unsigned depth = 0; depth < CALL_PEER_MAX_DEPTH; depth++) {
            if (p == server)
                return CALL_PEER_CALL;
            if (p <= 1)
                return CALL_PEER_OUTSIDE;
            p = parent_of(p);
            if (p < 0) {
                broken = true;
                break;
            }
        }
        if (!broken)
            return CALL_PEER_UNKNOWN; /* deeper than any real tree */
        if (parent_of(pid) < 0)
            return CALL_PEER_UNKNOWN; /* the peer itself is gone */
    }
    return CALL_PEER_UNKNOWN;
}

static bool
is_call_dir(const char *name, size_t len, const char *prefix, size_t prefix_len)
{
    if (len <= prefix_len || memcmp(name, prefix, prefix_len) != 0)
        return false;
    for (size_t i = prefix_len; i < len; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
    }
    return true;
}

bool
call_peer_cgroup_is_call(const char *text, size_t len, pid_t server)
{
    char prefix[40];
    int prefix_len = snprintf(prefix, sizeof(prefix), "execgate-%d-", (int)server);
    size_t i = 0;
    while (i < len) {
        size_t end = i;
        while (end < len && text[end] != '\n')
            end++;
        /* "ID:CONTROLLERS:PATH": the path follows the second ':' */
        const char *line = text + i;
        size_t line_len = end - i;
        const char *c1 = memchr(line, ':', line_len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', line_len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            const char *p = c2 + 1, *stop = line + line_len;
            while (p < stop) {
                const char *slash = memchr(p, '/', (size_t)(stop - p));
                const char *comp_end = slash ? slash : stop;
                if (is_call_dir(p, (size_t)(comp_end - p), prefix, (size_t)prefix_len))
                    return true;
                p = comp_end + 1;
            }
        }
        i = end + 1;
    }
    return false;
}

/* Whether pid's cgroups (any hierarchy) include a call cgroup of
 * server's; -1 when they cannot be read. */
static int
in_call_cgroup(pid_t pid, pid_t server)
{
    char path[40];
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    int rc = text ? 0 : -1;
    while (rc == 0) {
        if (len == cap) {
            char *grown = cap < (1u << 20) ? realloc(text, cap * 2) : NULL;
            if (!grown) {
                rc = -1;
                break;
            }
            text = grown;
            cap *= 2;
        }
        ssize_t n = read(fd, text + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = -1;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (rc == 0)
        rc = call_peer_cgroup_is_call(text, len, server) ? 1 : 0;
    free(text);
    return rc;
}

enum call_peer_origin
call_peer_origin_of(pid_t pid, int pidfd, pid_t server)
{
    if (pid <= 0)
        return CALL_PEER_UNKNOWN; /* not in the server's PID namespace */
    if (pid == server)
        return CALL_PEER_OUTSIDE;
    int cg = in_call_cgroup(pid, server);
    enum call_peer_origin o = cg == 1 ? CALL_PEER_CALL : walk_parents(pid, server);
    if (cg < 0 && o == CALL_PEER_OUTSIDE)
        o = CALL_PEER_UNKNOWN;
    /* what was read was pid's own only if pid is still the process that
     * connected: a live process's pid is not reused (signal 0 to another
     * user's process is EPERM, and says it lives all the same) */
    if (pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0 && errno != EPERM)
        return CALL_PEER_UNKNOWN;
    return o;
}

enum call_peer_origin
call_peer_origin(int fd, pid_t server)
{
    struct ucred cred;
    if (peer_cred(fd, &cred) < 0)
        return CALL_PEER_UNKNOWN;
    int pidfd = -1;
    socklen_t plen = sizeof(pidfd);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &plen) < 0 || plen != sizeof(pidfd))
        pidfd = -1;
    /* an older kernel: pinned from now on, which misses only a peer that
     * exited and whose pid was taken again before this line */
    if (pidfd < 0)
        pidfd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
    if (pidfd < 0)
        return CALL_PEER_UNKNOWN; /* gone already (or no pidfds: fail closed) */
    enum call_peer_origin o = call_peer_origin_of(cred.pid, pidfd, server);
    close(pidfd);
    return o;
}

/* Fills id with sa's address and port as the source (src) or the
 * destination; false for a family other than IPv4 and IPv6. */
static bool
diag_end(const struct sockaddr_storage *sa, struct inet_diag_sockid *id, bool src)
{
    __be16 *port = src ? &id->idiag_sport : &id->idiag_dport;
    __be32 *addr = src ? id->idiag_src : id->idiag_dst;
    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        *port = in->sin_port;
        memcpy(addr, &in->sin_addr, 4);
        return true;
    }
    if (sa->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        *port = in6->sin6_port;
        memcpy(addr, &in6->sin6_addr, 16);
        return true;
    }
    return false;
}

uid_t
call_peer_tcp_uid(int fd)
{
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof(me), pl = sizeof(peer);
    if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || me.ss_family != peer.ss_family)
        return (uid_t)-1;
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 r;
    } req = {
        .nlh = {.nlmsg_len = sizeof(req),
                .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                .nlmsg_flags = NLM_F_REQUEST},
        .r = {.sdiag_family = (__u8)me.ss_family,
              .sdiag_protocol = IPPROTO_TCP,
              .idiag_states = ~0u,
              .id = {.idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE}}},
    };
    /* the peer's socket: its local end is fd's remote one */
    if (!diag_end(&peer, &req.r.id, true) || !diag_end(&me, &req.r.id, false))
        return (uid_t)-1;
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return (uid_t)-1;
    uid_t uid = (uid_t)-1;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    union {
        struct nlmsghdr nlh;
        char buf[1024];
    } ans;
    if (sendto(nl, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) ==
        (ssize_t)sizeof(req)) {
        ssize_t n = recv(nl, &ans, sizeof(ans), 0);
        if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) &&
            NLMSG_OK(&ans.nlh, (size_t)n) && ans.nlh.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
            const struct inet_diag_msg *m = NLMSG_DATA(&ans.nlh);
            uid = (uid_t)m->idiag_uid;
        }
    }
    close(nl);
    return uid;
}
