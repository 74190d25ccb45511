/*
 * unix_connect: makes a sandboxed command's connect, sendto, sendmsg and
 * sendmmsg itself, on objects it holds, and decides Unix destinations by
 * who listens there.
 *
 * Order for each notification: a pidfd for the target, then ID_VALID (the
 * pid was the target's); its socket by pidfd_getfd and the address by
 * process_vm_readv, then ID_VALID again (what was read belonged to the
 * target still waiting); then the call on those copies.  Nothing the
 * target does afterwards (rewrite the address, swap the fd, rename the
 * file) changes what was checked, because the kernel never reads them
 * again: the supervisor's answer is the call's result.
 */
#include "supervise/unix_connect.h"

#include "common/macros.h"
#include "supervise/exec_tell.h"
#include "supervise/exec_target.h"
#include "supervise/unix_holder.h"
#include "supervise/unix_msg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <linux/sock_diag.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif
#ifndef PIDFD_GET_PID_NAMESPACE
#define PIDFD_GET_PID_NAMESPACE _IO(0xFF, 5) /* Linux 6.11 */
#endif

/* The largest buffer sendto is made with on the target's behalf: more
 * than a Unix or UDP datagram can carry. */
#define MAX_SEND (1u << 20)

#ifndef UIO_MAXIOV
#define UIO_MAXIOV 1024
#endif

/* How deep a listener's PID namespace may lie below the target's. */
#define MAX_NS_DEPTH 32

bool
unix_connect_handles(int nr)
{
    return nr == SYS_connect || nr == SYS_sendto || nr == SYS_sendmsg || nr == SYS_sendmmsg;
}

/* One notification and what was taken from the target for it. */
struct call {
    int listener;
    const struct seccomp_notif *sn;
    const struct unix_connect_config *cfg;
    pid_t pid;
    int pidfd;
    int fd;   /* the target's fd number */
    int sock; /* the supervisor's copy of that socket */
    int family, type;
    bool sendto;                  /* a send (sendto, sendmsg, sendmmsg), not a connect */
    bool msg_call;                /* sendmsg or sendmmsg */
    const char *verb;             /* the call's name, for the refusal line */
    unsigned flags;               /* a send's flags */
    struct unix_msg *msg;         /* sendmsg's message as read, or NULL (sendto) */
    struct sockaddr_storage addr; /* the address as read, once */
    socklen_t addrlen;
    struct unix_connect_wait *wait; /* where a blocking send may park */
    /* sendmmsg: each message's result is kept here rather than answered */
    bool batch, gone;
    long long val;
    int err;
};

static bool
id_valid(int listener, uint64_t id)
{
    return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

static int answer(int listener, uint64_t id, long long val, int err);

/* The result of the call c is making: answered, or kept for the batch. */
static int
reply(struct call *c, long long val, int err)
{
    if (!c->batch)
        return answer(c->listener, c->sn->id, val, err);
    c->val = err ? 0 : val;
    c->err = err;
    return 0;
}

/* Sends the call's result: val when err is 0, else -err.  A target gone
 * meanwhile is not an error. */
static int
answer(int listener, uint64_t id, long long val, int err)
{
    /* room past the struct this was built with, should the kernel's grow */
    union {
        struct seccomp_notif_resp r;
        char room[128];
    } u;
    memset(&u, 0, sizeof u);
    u.r.id = id;
    u.r.val = err ? 0 : val;
    u.r.error = err ? -err : 0;
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &u.r) == 0 || errno == ENOENT)
        return 0;
    return -errno;
}

/* The address, as the target wrote it, for the refusal line: control
 * characters shown as '?', an abstract name with a leading '@'. */
static void
describe(const struct call *c, char *out, size_t cap)
{
    const struct sockaddr_un *un = (const struct sockaddr_un *)&c->addr;
    size_t n = c->addrlen - offsetof(struct sockaddr_un, sun_path);
    bool abstract = un->sun_path[0] == '\0';
    size_t i = 0, o = 0;
    if (abstract) {
        out[o++] = '@';
        i = 1;
        while (n > 1 && un->sun_path[n - 1] == '\0') /* padding, as many names have */
            n--;
    }
    for (; i < n && o + 1 < cap && (abstract || un->sun_path[i] != '\0'); i++)
        out[o++] = (unsigned char)un->sun_path[i] < 0x20 ? '?' : un->sun_path[i];
    out[o] = '\0';
}

static int
refuse(struct call *c, int err, const char *reason)
{
    char where[sizeof(struct sockaddr_un) + 2], what[sizeof where + 16];
    describe(c, where, sizeof where);
    snprintf(what, sizeof what, "%s %s", c->verb, where);
    exec_notify_tell(c->pid, what, reason);
    if (c->cfg && c->cfg->refused)
        c->cfg->refused(c->cfg->arg, c->pid, what, reason);
    return reply(c, 0, err);
}

/* An IPv4 or IPv6 destination the caller refuses (cfg->netns's
 * ip_refused): ECONNREFUSED and the line, naming ADDRESS:PORT.  Returns
 * 1 when it did not refuse (nothing answered), else refuse's result. */
static int
ip_refused(struct call *c)
{
    const struct unix_connect_netns *ns = c->cfg ? c->cfg->netns : NULL;
    if (ns == NULL || ns->ip_refused == NULL || c->addrlen < sizeof(sa_family_t) ||
        (c->addr.ss_family != AF_INET && c->addr.ss_family != AF_INET6))
        return 1;
    const char *why = ns->ip_refused(ns->ip_arg, (const struct sockaddr *)&c->addr, c->addrlen);
    if (why == NULL)
        return 1;
    char host[INET6_ADDRSTRLEN] = "?", what[INET6_ADDRSTRLEN + 32];
    unsigned port = 0;
    if (c->addr.ss_family == AF_INET && c->addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&c->addr;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
    } else if (c->addr.ss_family == AF_INET6 && c->addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&c->addr;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
    }
    snprintf(what, sizeof what, "%s %s:%u", c->verb, host, port);
    exec_notify_tell(c->pid, what, why);
    if (c->cfg->refused)
        c->cfg->refused(c->cfg->arg, c->pid, what, why);
    return reply(c, 0, ECONNREFUSED);
}

/* The destination named by a pathname address, opened O_PATH as the
 * target would reach it: an absolute path inside the target's root (its
 * mount namespace, ".." and absolute links kept inside), a relative one
 * from its cwd.  /proc magic links (/proc/self/root, /proc/self/fd/N) are
 * not followed: they would name the supervisor's own.  Returns the fd or
 * -errno. */
static int
open_destination(const struct call *c)
{
    const struct sockaddr_un *un = (const struct sockaddr_un *)&c->addr;
    char path[sizeof un->sun_path + 1];
    size_t n = c->addrlen - offsetof(struct sockaddr_un, sun_path);
    memcpy(path, un->sun_path, n);
    path[n] = '\0';
    char base[64];
    snprintf(base, sizeof base, "/proc/%d/%s", (int)c->pid, path[0] == '/' ? "root" : "cwd");
    int dir = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    struct open_how how = {
        .flags = O_PATH | O_CLOEXEC,
        .resolve = RESOLVE_NO_MAGICLINKS | (path[0] == '/' ? RESOLVE_IN_ROOT : 0),
    };
    const char *rel = path[0] == '/' ? path + 1 : path;
    long fd = -1;
    int e = EAGAIN;
    /* EAGAIN: a rename raced the lookup of ".." inside the root; again */
    for (int tries = 0; fd < 0 && e == EAGAIN && tries < 4; tries++) {
        fd = syscall(SYS_openat2, dir, rel[0] ? rel : ".", &how, sizeof how);
        e = fd < 0 ? errno : 0;
    }
    close(dir);
    return fd < 0 ? -e : (int)fd;
}

static bool
same_inode(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static bool
allowed(const struct call *c, const struct stat *st)
{
    for (size_t i = 0; c->cfg && i < c->cfg->n_allowed; i++)
        if (c->cfg->allowed[i].dev == st->st_dev && c->cfg->allowed[i].ino == st->st_ino)
            return true;
    return false;
}

/* The supervisor's own namespace WHAT ("pid", "net"), read once: a
 * process's namespaces of these kinds do not change under it here. */
static int
own_namespace(const char *what, struct stat *out)
{
    static struct stat pid_ns, net_ns;
    static bool pid_read, net_read;
    bool pid = strcmp(what, "pid") == 0;
    struct stat *cached = pid ? &pid_ns : &net_ns;
    bool *read = pid ? &pid_read : &net_read;
    if (!*read) {
        char name[64];
        snprintf(name, sizeof name, "/proc/self/ns/%s", what);
        if (stat(name, cached) != 0)
            return -errno;
        *read = true;
    }
    *out = *cached;
    return 0;
}

/* Whether the namespace link /proc/PID/ns/WHAT is the supervisor's own. */
static int
shares_namespace(pid_t pid, const char *what)
{
    char name[64];
    struct stat mine = {0}, theirs;
    int rc = own_namespace(what, &mine);
    if (rc < 0)
        return rc;
    snprintf(name, sizeof name, "/proc/%d/ns/%s", (int)pid, what);
    if (stat(name, &theirs) != 0)
        return -errno;
    return same_inode(&mine, &theirs);
}

/*
 * A fresh socket(domain, type, protocol) in the target's network
 * namespace: the supervisor's own when it shares that one (-1: the caller
 * makes it), else one made in cfg->netns when that is the target's.
 * Returns the fd, -1, or -errno (-EXDEV: the target is in neither).
 */
static int
target_net_socket(const struct call *c, int domain, int type, int protocol)
{
    int same = shares_namespace(c->pid, "net");
    if (same == 1)
        return -1;
    const struct unix_connect_netns *ns = c->cfg ? c->cfg->netns : NULL;
    if (same < 0 || ns == NULL)
        return same < 0 ? same : -EXDEV;
    char name[64];
    struct stat theirs;
    snprintf(name, sizeof name, "/proc/%d/ns/net", (int)c->pid);
    if (stat(name, &theirs) != 0)
        return -errno;
    if (theirs.st_dev != ns->dev || theirs.st_ino != ns->ino)
        return -EXDEV;
    return ns->socket(ns->arg, domain, type, protocol);
}

/* Why a peer is not inside (peer_inside), for the refusal line. */
static const char *const not_inside[] = {
    NULL,
    "the process listening there runs outside this sandbox",
    "the process that listens there cannot be identified (it has exited, or this kernel "
    "lacks SO_PEERPIDFD and PIDFD_GET_PID_NAMESPACE)",
    "this command runs without a PID namespace of its own, so no listener can be told to "
    "be inside its sandbox",
};

/*
 * Whether the process listening at the other end of sock (connected) runs
 * in target's PID namespace or one below it: pinned by a pidfd of the
 * listener (SO_PEERPIDFD) and namespace fds, never by pid numbers.
 * Returns 0 when inside, else an index into not_inside: 1 outside, 2 the
 * listener unreadable, 3 a target in the supervisor's own PID namespace
 * (no sandbox of its own to tell apart).
 */
static int
peer_inside(int sock, pid_t target)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%d/ns/pid", (int)target);
    struct stat own = {0}, tns, cur;
    if (stat(name, &tns) != 0 || own_namespace("pid", &own) != 0)
        return 2;
    if (same_inode(&own, &tns))
        return 3;
    int pidfd = -1;
    socklen_t len = sizeof pidfd;
    if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) != 0 || pidfd < 0)
        return 2;
    int ns = ioctl(pidfd, PIDFD_GET_PID_NAMESPACE, 0);
    close(pidfd);
    if (ns < 0)
        return 2;
    int inside = 1;
    for (int depth = 0; ns >= 0 && depth < MAX_NS_DEPTH; depth++) {
        if (fstat(ns, &cur) != 0)
            break;
        if (same_inode(&cur, &tns)) {
            inside = 0;
            break;
        }
        if (same_inode(&cur, &own))
            break; /* up at the supervisor's: never below the target's */
        int parent = ioctl(ns, NS_GET_PARENT);
        close(ns);
        ns = parent;
    }
    if (ns >= 0)
        close(ns);
    return inside;
}

/* What /proc/PID/fdinfo/FD says of close-on-exec (true when unreadable:
 * the safer of the two for a socket the target did not make). */
static bool
target_cloexec(const struct call *c)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%d/fdinfo/%d", (int)c->pid, c->fd);
    FILE *f = fopen(name, "re");
    if (f == NULL)
        return true;
    char line[128];
    bool cloexec = true;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "flags:", 6) == 0) {
            cloexec = (strtoul(line + 6, NULL, 8) & O_CLOEXEC) != 0;
            break;
        }
    }
    fclose(f);
    return cloexec;
}

/* The target's socket options a client sets before connecting, carried
 * over to the socket that replaces it; one left at the default (zero) is
 * already the new socket's. */
static void
copy_options(int from, int to)
{
    static const int opts[] = {SO_PASSCRED, SO_SNDBUF, SO_RCVBUF, SO_RCVTIMEO, SO_SNDTIMEO};
    static char zero[32];
    for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
        char v[32];
        socklen_t len = sizeof v;
        bool buffer = opts[i] == SO_SNDBUF || opts[i] == SO_RCVBUF;
        if (getsockopt(from, SOL_SOCKET, opts[i], v, &len) == 0 &&
            (buffer || memcmp(v, zero, len) != 0))
            (void)setsockopt(to, SOL_SOCKET, opts[i], v, len);
    }
    int fl = fcntl(from, F_GETFL);
    if (fl >= 0 && !(fl & O_NONBLOCK))
        (void)fcntl(to, F_SETFL, fcntl(to, F_GETFL) & ~O_NONBLOCK);
}

/* Closes made (when >= 0) and answers err. */
static int
close_reply(struct call *c, int made, int err)
{
    if (made >= 0)
        close(made);
    return reply(c, 0, err);
}

/*
 * A Unix stream or seqpacket connect to dest (an address the supervisor
 * resolves the same way: its own O_PATH fd, or an abstract name): a fresh
 * socket connects there, the peer is checked unless the inode is allowed,
 * and the socket replaces the target's.  The target's own socket is never
 * connected: a copy of it in the target's hands would keep a connection
 * made before the check.
 */
static int
stream_connect(struct call *c, const struct sockaddr_un *dest, socklen_t destlen, bool ok, int made)
{
    struct sockaddr_storage peer;
    socklen_t plen = sizeof peer;
    int listening = 0;
    socklen_t llen = sizeof listening;
    if (getpeername(c->sock, (struct sockaddr *)&peer, &plen) == 0)
        return close_reply(c, made, EISCONN);
    if (getsockopt(c->sock, SOL_SOCKET, SO_ACCEPTCONN, &listening, &llen) == 0 && listening)
        return close_reply(c, made, EINVAL);
    /* made: a socket of the target's network namespace, where an
     * abstract name means what it means to the target */
    int s = made >= 0 ? made : socket(AF_UNIX, c->type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return reply(c, 0, errno);
    if (made >= 0 && fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK) != 0) {
        close(s);
        return reply(c, 0, EIO);
    }
    if (connect(s, (const struct sockaddr *)dest, destlen) != 0) {
        int e = errno;
        close(s);
        return reply(c, 0, e);
    }
    int why = ok ? 0 : peer_inside(s, c->pid);
    if (why != 0) {
        close(s);
        char reason[256];
        snprintf(reason, sizeof reason,
                 "%s (to allow this socket, start execgate with --allow-unix-socket PATH)",
                 not_inside[why]);
        return refuse(c, ECONNREFUSED, reason);
    }
    copy_options(c->sock, s);
    struct seccomp_notif_addfd add = {
        .id = c->sn->id,
        .flags = SECCOMP_ADDFD_FLAG_SETFD,
        .srcfd = (unsigned)s,
        .newfd = (unsigned)c->fd,
        .newfd_flags = target_cloexec(c) ? O_CLOEXEC : 0,
    };
    int rc = ioctl(c->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
    int e = errno;
    close(s);
    if (rc < 0)
        return e == ENOENT ? 0 : reply(c, 0, e);
    return reply(c, 0, 0);
}

/* A sendmsg parked until its socket has room: the message as read, which
 * no longer depends on the target's memory. */
struct unix_connect_send {
    struct unix_msg m;
    unsigned flags;
    int pidfd; /* the target's, for SIGPIPE */
};

/* Whether a send that found no room should wait for it, as the kernel's
 * would: a sendmsg of its own (not one of a sendmmsg), without an address
 * (the address's pinned inode is not kept), on a blocking socket, not
 * asked MSG_DONTWAIT. */
static bool
should_wait(const struct call *c, const struct sockaddr *to)
{
    int fl = fcntl(c->sock, F_GETFL);
    return c->msg != NULL && c->wait != NULL && !c->batch && to == NULL &&
           !(c->flags & MSG_DONTWAIT) && fl >= 0 && !(fl & O_NONBLOCK);
}

/* Moves the message and the socket into c->wait: returns 1 (the
 * notification stays unanswered), or the ENOMEM answer. */
static int
park(struct call *c)
{
    struct unix_connect_send *s = malloc(sizeof *s);
    if (s == NULL)
        return reply(c, 0, ENOMEM);
    s->m = *c->msg;
    s->m.hdr.msg_iov = &s->m.iov;
    s->m.hdr.msg_name = NULL;
    s->m.hdr.msg_namelen = 0;
    memset(c->msg, 0, sizeof *c->msg); /* its buffers are s's now */
    s->flags = c->flags;
    s->pidfd = c->pidfd;
    c->pidfd = -1;
    *c->wait = (struct unix_connect_wait){.id = c->sn->id, .pid = c->pid, .fd = c->sock, .send = s};
    c->sock = -1;
    return 1;
}

/* The bytes sendto names, read now (sendmsg's message is read already). */
static int
read_sendto_data(struct call *c, char **buf, size_t *len)
{
    *len = (size_t)c->sn->data.args[2];
    if (*len > MAX_SEND)
        return EMSGSIZE;
    *buf = malloc(*len ? *len : 1);
    if (*buf == NULL)
        return ENOMEM;
    struct iovec local = {*buf, *len}, remote = {(void *)(uintptr_t)c->sn->data.args[1], *len};
    ssize_t got = *len ? process_vm_readv(c->pid, &local, 1, &remote, 1, 0) : 0;
    return got == (ssize_t)*len ? 0 : EFAULT;
}

/* The send on the target's socket with the target's bytes and the given
 * address (to NULL: none).  Never blocks the supervisor: MSG_DONTWAIT, so
 * a full queue gives EAGAIN even to a blocking socket. */
static int
send_for(struct call *c, const struct sockaddr *to, socklen_t tolen)
{
    int how = (int)(c->flags | MSG_DONTWAIT | MSG_NOSIGNAL);
    ssize_t n;
    int e;
    if (c->msg != NULL) {
        c->msg->hdr.msg_name = (void *)to;
        c->msg->hdr.msg_namelen = to ? tolen : 0;
        n = sendmsg(c->sock, &c->msg->hdr, how);
        e = errno;
        if (n < 0 && e == EAGAIN && should_wait(c, to))
            return park(c);
    } else {
        char *buf = NULL;
        size_t len = 0;
        e = read_sendto_data(c, &buf, &len);
        if (e == 0 && !id_valid(c->listener, c->sn->id)) {
            free(buf);
            c->gone = true;
            return 0;
        }
        n = e == 0 ? sendto(c->sock, buf, len, how, to, tolen) : -1;
        e = e == 0 ? errno : e;
        free(buf);
    }
    /* the kernel would have raised SIGPIPE in the sender, not here */
    if (n < 0 && e == EPIPE && !(c->flags & MSG_NOSIGNAL))
        (void)syscall(SYS_pidfd_send_signal, c->pidfd, SIGPIPE, NULL, 0);
    return reply(c, n, n < 0 ? e : 0);
}

/* A connect that is not to a Unix socket, made on the target's socket
 * with the address as read.  A blocking socket connects non-blocking
 * here; in progress, the caller waits for it. */
static int
other_connect(struct call *c, struct unix_connect_wait *wait)
{
    int fl = fcntl(c->sock, F_GETFL);
    if (fl < 0)
        return reply(c, 0, errno);
    bool blocking = !(fl & O_NONBLOCK);
    if (blocking)
        (void)fcntl(c->sock, F_SETFL, fl | O_NONBLOCK);
    int rc = connect(c->sock, (struct sockaddr *)&c->addr, c->addrlen);
    int e = rc == 0 ? 0 : errno;
    if (blocking)
        (void)fcntl(c->sock, F_SETFL, fl);
    if (blocking && e == EINPROGRESS) {
        *wait = (struct unix_connect_wait){.id = c->sn->id, .pid = c->pid, .fd = c->sock};
        c->sock = -1;
        return 1;
    }
    return reply(c, 0, e);
}

/* A parked send, tried again now that its socket polled writable. */
static int
send_parked(int listener, struct unix_connect_wait *wait)
{
    struct unix_connect_send *s = wait->send;
    if (!id_valid(listener, wait->id)) {
        unix_connect_abandon(wait); /* the target is gone */
        return 0;
    }
    ssize_t n = sendmsg(wait->fd, &s->m.hdr, (int)(s->flags | MSG_DONTWAIT | MSG_NOSIGNAL));
    int e = n < 0 ? errno : 0;
    if (n < 0 && e == EAGAIN)
        return 1;
    if (n < 0 && e == EPIPE && !(s->flags & MSG_NOSIGNAL))
        (void)syscall(SYS_pidfd_send_signal, s->pidfd, SIGPIPE, NULL, 0);
    unix_connect_abandon(wait);
    return answer(listener, wait->id, n, e);
}

int
unix_connect_finish(int listener, struct unix_connect_wait *wait, int err)
{
    if (wait->send != NULL && err == 0)
        return send_parked(listener, wait);
    socklen_t len = sizeof err;
    if (err == 0 && wait->send == NULL &&
        getsockopt(wait->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    unix_connect_abandon(wait);
    return answer(listener, wait->id, 0, err);
}

void
unix_connect_abandon(struct unix_connect_wait *wait)
{
    if (wait->fd >= 0)
        close(wait->fd);
    wait->fd = -1;
    if (wait->send != NULL) {
        unix_msg_free(&wait->send->m);
        if (wait->send->pidfd >= 0)
            close(wait->send->pidfd);
        free(wait->send);
        wait->send = NULL;
    }
}

/* Whether a process of the target's sandbox holds the datagram socket
 * bound to st: sock_diag asked in the target's network namespace. */
static int
dgram_holder_inside(const struct call *c, const struct stat *st)
{
    int diag = target_net_socket(c, AF_NETLINK, SOCK_DGRAM, NETLINK_SOCK_DIAG);
    if (diag < -1)
        return diag;
    return unix_holder_inside(c->pid, st, diag);
}

/* A pathname address: the inode it names decides (module comment). */
static int
pathname_call(struct call *c)
{
    int dest = open_destination(c);
    if (dest == -ESRCH)
        return 0;
    if (dest == -ELOOP)
        return refuse(c, EACCES, "the path goes through a /proc magic link, or loops");
    struct stat st;
    if (dest >= 0 && fstat(dest, &st) != 0) {
        close(dest);
        dest = -EIO;
    }
    if (dest < 0)
        return reply(c, 0, -dest);
    /* the magic link names the inode opened, whatever is renamed now */
    struct sockaddr_un pinned = {.sun_family = AF_UNIX};
    snprintf(pinned.sun_path, sizeof pinned.sun_path, "/proc/self/fd/%d", dest);
    socklen_t plen =
        (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(pinned.sun_path) + 1);
    int rc;
    bool ok = allowed(c, &st);
    if (!S_ISSOCK(st.st_mode))
        rc = reply(c, 0, ECONNREFUSED);
    else if (c->type != SOCK_DGRAM)
        rc = stream_connect(c, &pinned, plen, ok, -1);
    else if (!ok && dgram_holder_inside(c, &st) != 1)
        rc = refuse(c, ECONNREFUSED,
                    "no process of this sandbox holds that datagram socket (to allow this "
                    "socket, start execgate with --allow-unix-socket PATH)");
    else if (c->sendto)
        rc = send_for(c, (struct sockaddr *)&pinned, plen);
    else
        rc = reply(c, 0, connect(c->sock, (struct sockaddr *)&pinned, plen) == 0 ? 0 : errno);
    close(dest);
    return rc;
}

/* A Unix address: pathname, abstract, or neither. */
static int
unix_call(struct call *c)
{
    const struct sockaddr_un *un = (const struct sockaddr_un *)&c->addr;
    size_t head = offsetof(struct sockaddr_un, sun_path);
    if (c->addrlen >= sizeof(sa_family_t) && un->sun_family == AF_UNSPEC && !c->sendto)
        return reply(c, 0,
                     connect(c->sock, (struct sockaddr *)&c->addr, c->addrlen) == 0 ? 0 : errno);
    if (c->addrlen <= head || c->addrlen > sizeof(struct sockaddr_un) || un->sun_family != AF_UNIX)
        return reply(c, 0, EINVAL);
    /* A stream socket's sendmsg never uses the address (EISCONN or
     * EOPNOTSUPP) and a seqpacket one drops it: sent as asked. */
    if (c->sendto && c->type != SOCK_DGRAM)
        return send_for(c, (struct sockaddr *)&c->addr, c->addrlen);
    if (un->sun_path[0] != '\0')
        return pathname_call(c);
    /* abstract: looked up in the caller's network namespace, so the
     * supervisor's must be the target's for the name to mean the same */
    int made = c->type == SOCK_DGRAM ? -EPERM : target_net_socket(c, AF_UNIX, c->type, 0);
    if (made < -1)
        return refuse(c, EPERM,
                      "abstract Unix sockets are reachable only as stream sockets of this "
                      "sandbox");
    return stream_connect(c, un, c->addrlen, false, made);
}

/* Takes the target's socket and address.  Returns 0 with c filled, 1 when
 * the notification is answered already or gone, -errno from the listener. */
static int
take(struct call *c)
{
    const struct seccomp_notif *sn = c->sn;
    /* sn->pid is the calling thread's id (exec_target_pidfd).  A call
     * that cannot be looked at is refused, never left waiting. */
    c->pidfd = exec_target_pidfd(c->pid);
    if (c->pidfd < 0) {
        int rc = answer(c->listener, sn->id, 0, EACCES);
        return rc < 0 ? rc : 1;
    }
    if (!id_valid(c->listener, sn->id))
        return 1;
    c->sock = (int)syscall(SYS_pidfd_getfd, c->pidfd, c->fd, 0);
    if (c->sock < 0) {
        int rc = answer(c->listener, sn->id, 0, errno == EBADF ? EBADF : EACCES);
        return rc < 0 ? rc : 1;
    }
    socklen_t len = sizeof c->family;
    /* ENOTSOCK for any other file */
    if (getsockopt(c->sock, SOL_SOCKET, SO_DOMAIN, &c->family, &len) != 0) {
        int rc = answer(c->listener, sn->id, 0, ENOTSOCK);
        return rc < 0 ? rc : 1;
    }
    len = sizeof c->type;
    if (getsockopt(c->sock, SOL_SOCKET, SO_TYPE, &c->type, &len) != 0)
        c->type = -1;
    if (c->msg_call)
        return 0; /* the address is in the message (sendmsg_one) */
    uint64_t ptr = c->sendto ? sn->data.args[4] : sn->data.args[1];
    uint64_t alen = c->sendto ? sn->data.args[5] : sn->data.args[2];
    if ((uint32_t)alen > sizeof c->addr) {
        int rc = answer(c->listener, sn->id, 0, EINVAL);
        return rc < 0 ? rc : 1;
    }
    c->addrlen = (socklen_t)alen;
    struct iovec local = {&c->addr, c->addrlen}, remote = {(void *)(uintptr_t)ptr, c->addrlen};
    ssize_t got = c->addrlen ? process_vm_readv(c->pid, &local, 1, &remote, 1, 0) : 0;
    if (!id_valid(c->listener, sn->id))
        return 1;
    if (got != (ssize_t)c->addrlen) {
        int rc = answer(c->listener, sn->id, 0, EFAULT);
        return rc < 0 ? rc : 1;
    }
    return 0;
}

/*
 * One sendmsg message, at addr in the target's memory: read once, then
 * decided as sendto is by its address (none: sent as it is, on the
 * target's own socket, whose destination, if any, its connect had to
 * pass).  Never continued: another thread could add an address, or put
 * another socket at the fd, after any look.
 */
static int
sendmsg_one(struct call *c, uint64_t addr)
{
    struct unix_msg m;
    int e = unix_msg_read(c->pid, c->pidfd, addr, &m);
    int rc;
    if (!id_valid(c->listener, c->sn->id)) {
        c->gone = true;
        rc = 0;
    } else if (e != 0) {
        rc = reply(c, 0, e);
    } else {
        c->msg = &m;
        c->addrlen = m.hdr.msg_name ? m.hdr.msg_namelen : 0;
        memcpy(&c->addr, &m.name, c->addrlen);
        if (c->addrlen == 0)
            rc = send_for(c, NULL, 0);
        else if (c->family == AF_UNIX)
            rc = unix_call(c);
        else if ((rc = ip_refused(c)) == 1)
            rc = send_for(c, (struct sockaddr *)&c->addr, c->addrlen);
        c->msg = NULL;
    }
    unix_msg_free(&m);
    return rc;
}

/*
 * sendmmsg: each message as sendmsg's, in order, until one fails; its
 * msg_len written back as the kernel would.  The result: how many were
 * sent, or the first one's error.
 */
static int
sendmmsg_all(struct call *c)
{
    uint64_t vec = c->sn->data.args[1];
    unsigned vlen = (unsigned)c->sn->data.args[2];
    if (vlen > UIO_MAXIOV)
        vlen = UIO_MAXIOV; /* the kernel's cap too */
    c->batch = true;
    unsigned done = 0;
    int err = 0;
    for (; done < vlen; done++) {
        uint64_t at = vec + (uint64_t)done * sizeof(struct mmsghdr);
        c->val = 0;
        c->err = 0;
        int rc = sendmsg_one(c, at);
        if (rc < 0 || c->gone)
            return rc;
        if (c->err != 0) {
            err = c->err;
            break;
        }
        unsigned len = (unsigned)c->val;
        struct iovec local = {&len, sizeof len},
                     remote = {(void *)(uintptr_t)(at + offsetof(struct mmsghdr, msg_len)),
                               sizeof len};
        (void)process_vm_writev(c->pid, &local, 1, &remote, 1, 0);
    }
    c->batch = false;
    return reply(c, done, done > 0 ? 0 : err);
}

int
unix_connect_handle(int listener, const struct seccomp_notif *sn,
                    const struct unix_connect_config *cfg, struct unix_connect_wait *wait)
{
    int nr = sn->data.nr;
    struct call c = {
        .listener = listener,
        .sn = sn,
        .cfg = cfg,
        .pid = (pid_t)sn->pid,
        .pidfd = -1,
        .fd = (int)sn->data.args[0],
        .sock = -1,
        .wait = wait,
        .sendto = nr != SYS_connect,
        .msg_call = nr == SYS_sendmsg || nr == SYS_sendmmsg,
        .verb = nr == SYS_connect   ? "connect"
                : nr == SYS_sendto  ? "sendto"
                : nr == SYS_sendmsg ? "sendmsg"
                                    : "sendmmsg",
        .flags = (unsigned)(nr == SYS_sendto    ? sn->data.args[3]
                            : nr == SYS_sendmsg ? sn->data.args[2]
                                                : sn->data.args[3]),
    };
    wait->fd = -1;
    wait->send = NULL;
    int rc = take(&c);
    if (rc == 1)
        rc = 0; /* answered, or the target is gone */
    else if (rc == 0 && nr == SYS_sendmsg)
        rc = sendmsg_one(&c, sn->data.args[1]);
    else if (rc == 0 && nr == SYS_sendmmsg)
        rc = sendmmsg_all(&c);
    else if (rc == 0 && c.family == AF_UNIX)
        rc = unix_call(&c);
    else if (rc == 0 && (rc = ip_refused(&c)) == 1) /* else refused, answered */
        rc = c.sendto ? send_for(&c, (struct sockaddr *)&c.addr, c.addrlen)
                      : other_connect(&c, wait);
    if (c.sock >= 0)
        close(c.sock);
    if (c.pidfd >= 0)
        close(c.pidfd);
    return rc;
}
