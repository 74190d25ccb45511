/*
 * exec_notify: reads, decides and answers exec notifications.
 *
 * Order for each notification (seccomp_unotify(2)): open /proc/PID/mem,
 * check the id is still valid (so PID was not reused), read path and argv,
 * open the file they name through the target's own cwd, fd or root, then
 * check validity again before answering: what was read belonged to the
 * process that is still stopped in that execve.
 */
#include "supervise/exec_notify.h"
#include "supervise/exec_target.h"
#include "sandbox/exec_filter.h"
#include "supervise/unix_connect.h"
#include "rules/exec_path.h"
#include "common/fd_pass.h"
#include "common/strv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct pending {
    uint64_t id;
    pid_t pid;
    char *display;
};

struct exec_notify {
    int fd;
    char *first_path;
    bool first_seen;
    bool refuse_shared_memory;
    bool read_env;
    bool hung_up;        /* the last poll of exec_notify_process saw POLLHUP alone */
    pid_t last_told_pid; /* the last refusal line written, to write it once */
    char *last_told;
    exec_notify_decide_fn decide;
    exec_notify_ask_fn ask;
    exec_notify_quick_fn quick;
    void *arg;
    struct seccomp_notif_sizes sizes;
    struct seccomp_notif_resp *resp; /* sizes.seccomp_notif_resp bytes */
    struct pending *pending;
    size_t n_pending, cap_pending;
    struct exec_notify_stats stats;
    const struct unix_connect_config *connect_cfg;
    exec_notify_wait_fn connect_wait;
    void *connect_arg;
};

/* ---- receiving the listener ---- */

/* The listener's number in an 'N' message, after the kind byte. */
#define NUMBER_LEN sizeof(int)

/* Where the path starts in a hand-over of kind k. */
static size_t
path_at(char k)
{
    return k == SANDBOX_EXEC_NOTIFY_BY_NUMBER ? 5 + NUMBER_LEN : 5;
}

/* Whether msg is a hand-over: the magic, a kind that says whether an fd
 * came along (none with 'N': it stays with the sender), and a path
 * without NUL. */
static bool
handover_ok(const char *msg, size_t len, int fd)
{
    if (len < 5 || len > EXEC_NOTIFY_HANDOVER_MAX || memcmp(msg, SANDBOX_EXEC_NOTIFY_MAGIC, 4) != 0)
        return false;
    bool kind_ok = (msg[4] == SANDBOX_EXEC_NOTIFY_LISTENER && fd >= 0) ||
                   (msg[4] == SANDBOX_EXEC_NOTIFY_DEGRADED && fd < 0) ||
                   (msg[4] == SANDBOX_EXEC_NOTIFY_BY_NUMBER && fd < 0 && len >= path_at(msg[4]));
    size_t at = path_at(msg[4]);
    return kind_ok && len - at <= EXEC_NOTIFY_MAX_PATH && memchr(msg + at, '\0', len - at) == NULL;
}

/* The message's path, or NULL (-EPROTO or -ENOMEM in *rc); fd closed
 * when it is refused. */
static char *
handover_path(const char *m, size_t len, int fd, int *rc)
{
    bool ok = handover_ok(m, len, fd);
    char *path = ok ? strndup(m + path_at(m[4]), len - path_at(m[4])) : NULL;
    if (path == NULL && fd >= 0)
        close(fd);
    *rc = path ? 0 : ok ? -ENOMEM : -EPROTO;
    return path;
}

int
exec_notify_parse_listener(const void *msg, size_t len, int fd, int *listener, char **exec_path)
{
    *listener = -1;
    *exec_path = NULL;
    const char *m = msg;
    int rc;
    char *path = handover_path(m, len, fd, &rc);
    if (path == NULL)
        return rc;
    if (m[4] == SANDBOX_EXEC_NOTIFY_BY_NUMBER) {
        free(path); /* no sender to take it from here */
        return -EPROTO;
    }
    *listener = fd;
    *exec_path = path;
    return m[4] == SANDBOX_EXEC_NOTIFY_LISTENER ? 0 : -EOPNOTSUPP;
}

ssize_t
exec_notify_recv_handover(int sock, char *buf, int *fd, int *flags)
{
    size_t nfds = 0;
    *fd = -1;
    *flags = 0;
    /* one fd at most: more, or control data of another kind, and every
     * fd that came is closed and the message refused */
    ssize_t n = fd_pass_recv(sock, buf, EXEC_NOTIFY_HANDOVER_MAX + 1, fd, 1, &nfds, flags);
    if (n < 0)
        return n == -EBADMSG || n == -EMSGSIZE ? -EPROTO : n;
    if (nfds == 0)
        *fd = -1;
    return n;
}

/* Whether fd is a seccomp listener (an anonymous inode of that name). */
static bool
is_listener(int fd)
{
    char link[64], target[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0)
        return false;
    target[n] = '\0';
    return strcmp(target, "anon_inode:seccomp notify") == 0;
}

/*
 * An 'N' hand-over: the listener is fd number in the table of the process
 * pidfd names, the one that sent the message (SCM_PIDFD: not a pid that
 * could be reused).  That process waits in its execve for this
 * supervisor; if the listener cannot be taken nothing will answer it, so
 * it is killed.  Returns 0 with *listener, or -errno.
 */
static int
take_by_number(const char *m, int pidfd, int *listener)
{
    int number;
    memcpy(&number, m + 5, sizeof number);
    int rc = -EPROTO; /* no pidfd: the server's end lacks SO_PASSPIDFD */
    if (pidfd >= 0) {
        long fd = syscall(SYS_pidfd_getfd, pidfd, number, 0);
        rc = fd < 0 ? -errno : 0;
        if (rc == 0 && !is_listener((int)fd)) {
            close((int)fd);
            rc = -EPROTO;
        }
        if (rc == 0)
            *listener = (int)fd;
        else
            (void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    }
    return rc;
}

/* SO_PASSPIDFD, Linux 6.5 (older libc headers lack it). */
#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD 76
#endif

/*
 * Whether this process may take an fd from a descendant (pidfd_getfd: the
 * ptrace access check, which Yama's ptrace_scope 2 or 3 refuses to a
 * process without CAP_SYS_PTRACE): tried once on a child that waits on a
 * pipe, taking the child's copy of that pipe.  The answer holds for the
 * helpers, whose user namespaces this process owns.
 */
static bool
can_take_fds(void)
{
    static int known; /* 0: not tried, 1: yes, -1: no */
    if (known != 0)
        return known > 0;
    known = -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return false;
    pid_t pid = fork();
    if (pid == 0) {
        char b;
        close(p[1]);
        _exit(read(p[0], &b, 1) < 0);
    }
    if (pid > 0) {
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        long fd = pidfd >= 0 ? syscall(SYS_pidfd_getfd, pidfd, p[0], 0) : -1;
        if (fd >= 0) {
            known = 1;
            close((int)fd);
        }
        if (pidfd >= 0)
            close(pidfd);
    }
    close(p[0]);
    close(p[1]); /* the child reads EOF and exits */
    while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return known > 0;
}

int
exec_notify_offer_take(int sock)
{
    int on = 1;
    if (!can_take_fds())
        return -EPERM;
    if (setsockopt(sock, SOL_SOCKET, SO_PASSPIDFD, &on, sizeof on) != 0)
        return -errno;
    const char offer[] = SANDBOX_EXEC_NOTIFY_OFFER;
    ssize_t n = send(sock, offer, sizeof offer - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0)
        return -errno;
    return n == (ssize_t)sizeof offer - 1 ? 0 : -EMSGSIZE;
}

int
exec_notify_receive_listener(int sock, int *listener, char **exec_path)
{
    *listener = -1;
    *exec_path = NULL;
    /* The path comes from the helper's caller: one byte more than the
     * longest message, so a longer one shows as MSG_TRUNC. */
    char *buf = malloc(EXEC_NOTIFY_HANDOVER_MAX + 1);
    if (buf == NULL)
        return -ENOMEM;
    int taken = -1, pidfd = -1;
    int flags = 0;
    size_t nfds = 0;
    /* one fd at most: more, or control data of another kind, and every
     * fd that came is closed and the message refused */
    ssize_t n = fd_pass_recv_pidfd(sock, buf, EXEC_NOTIFY_HANDOVER_MAX + 1, &taken, 1, &nfds,
                                   &flags, &pidfd);
    if (n < 0) {
        free(buf);
        /* ECONNRESET: the helper closed its end with the offer
         * (exec_notify_offer_take) unread: it failed before the hand-over */
        if (n == -ECONNRESET)
            return -EPIPE;
        return n == -EBADMSG || n == -EMSGSIZE ? -EPROTO : (int)n;
    }
    if (nfds == 0)
        taken = -1;
    int rc;
    if (n == 0 || (flags & MSG_TRUNC)) {
        if (taken >= 0)
            close(taken);
        /* nothing sent: the helper closed the socket (it failed) */
        rc = n == 0 ? -EPIPE : -EPROTO;
    } else if (n >= 5 && buf[4] == SANDBOX_EXEC_NOTIFY_BY_NUMBER) {
        char *path = handover_path(buf, (size_t)n, taken, &rc);
        if (path != NULL)
            rc = take_by_number(buf, pidfd, listener);
        if (rc == 0)
            *exec_path = path;
        else
            free(path);
    } else {
        rc = exec_notify_parse_listener(buf, (size_t)n, taken, listener, exec_path);
    }
    if (pidfd >= 0)
        close(pidfd);
    free(buf);
    return rc;
}

/* ---- lifetime ---- */

struct exec_notify *
exec_notify_new(int listener, const char *exec_path, exec_notify_decide_fn decide,
                exec_notify_ask_fn ask, void *arg)
{
    struct exec_notify *n = calloc(1, sizeof *n);
    if (n == NULL || (exec_path && (n->first_path = strdup(exec_path)) == NULL) ||
        syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &n->sizes) != 0 ||
        (n->resp = calloc(1, n->sizes.seccomp_notif_resp)) == NULL) {
        if (n != NULL)
            free(n->first_path);
        free(n);
        close(listener);
        return NULL;
    }
    int fl = fcntl(listener, F_GETFL);
    if (fl >= 0)
        (void)fcntl(listener, F_SETFL, fl | O_NONBLOCK);
    (void)fcntl(listener, F_SETFD, FD_CLOEXEC);
    n->fd = listener;
    /* no path: the first exec was continued by whoever set the filter up */
    n->first_seen = exec_path == NULL;
    n->decide = decide;
    n->ask = ask;
    n->arg = arg;
    return n;
}

void
exec_notify_free(struct exec_notify *n)
{
    if (n == NULL)
        return;
    close(n->fd);
    for (size_t i = 0; i < n->n_pending; i++)
        free(n->pending[i].display);
    free(n->pending);
    free(n->first_path);
    free(n->last_told);
    free(n->resp);
    free(n);
}

int
exec_notify_fd(const struct exec_notify *n)
{
    return n->fd;
}

bool
exec_notify_hung_up(const struct exec_notify *n)
{
    return n->hung_up;
}

void
exec_notify_set_quick(struct exec_notify *n, exec_notify_quick_fn quick)
{
    n->quick = quick;
}

void
exec_notify_set_read_env(struct exec_notify *n, bool on)
{
    n->read_env = on;
}

void
exec_notify_set_refuse_shared_memory(struct exec_notify *n, bool on)
{
    n->refuse_shared_memory = on;
}

void
exec_notify_get_stats(const struct exec_notify *n, struct exec_notify_stats *out)
{
    *out = n->stats;
}

/* ---- reading the target ---- */

static bool
id_valid(const struct exec_notify *n, uint64_t id)
{
    return ioctl(n->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

/* ---- answering ---- */

/* Sends the answer and counts it in *counter (dropped when the target has
 * gone meanwhile).  The response buffer was allocated with n, so an answer
 * never fails for want of memory. */
static int
respond_counted(struct exec_notify *n, uint64_t id, int err, uint64_t *counter)
{
    struct seccomp_notif_resp *r = n->resp;
    memset(r, 0, n->sizes.seccomp_notif_resp);
    r->id = id;
    if (err == 0)
        r->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    else
        r->error = -err;
    int rc = ioctl(n->fd, SECCOMP_IOCTL_NOTIF_SEND, r) == 0 ? 0 : -errno;
    if (rc == -ENOENT) /* the target died or was interrupted meanwhile */
        n->stats.dropped++;
    else if (rc == 0)
        (*counter)++;
    return rc == -ENOENT ? 0 : rc;
}

static int
respond(struct exec_notify *n, uint64_t id, int err)
{
    return respond_counted(n, id, err, err == 0 ? &n->stats.continued : &n->stats.refused);
}

/* "rm -f a" for the stderr line: the program's name and the arguments,
 * shortened past a screen line. */
static char *
display_of(const struct exec_notify_request *req)
{
    const char *slash = strrchr(req->resolved, '/');
    const char *prog = slash ? slash + 1 : req->resolved;
    size_t cap = 200;
    char *s = malloc(cap + 4);
    if (s == NULL)
        return NULL;
    size_t len = (size_t)snprintf(s, cap, "%s", prog);
    for (size_t i = 1; i < req->argc && len < cap; i++)
        len += (size_t)snprintf(s + len, cap - len, " %s", req->argv[i]);
    if (len >= cap)
        strcpy(s + cap - 1, "...");
    return s;
}

static int
refuse(struct exec_notify *n, uint64_t id, pid_t pid, int err, const char *display,
       const char *reason)
{
    if (!id_valid(n, id)) {
        n->stats.dropped++;
        return 0;
    }
    /* A PATH search (execvp, a shell) retries the same command in each
     * directory that has it: one line for the lot, not one per try. */
    char *line = NULL;
    if (asprintf(&line, "%s\n%s", display, reason ? reason : "") < 0)
        line = NULL;
    bool repeat = line != NULL && n->last_told != NULL && pid == n->last_told_pid &&
                  strcmp(line, n->last_told) == 0;
    if (!repeat)
        exec_notify_tell(pid, display, reason);
    if (line != NULL) {
        free(n->last_told);
        n->last_told = line;
        n->last_told_pid = pid;
    }
    return respond(n, id, err > 0 ? err : EACCES);
}

static int
keep_pending(struct exec_notify *n, const struct exec_notify_request *req)
{
    if (n->n_pending == n->cap_pending) {
        size_t cap = n->cap_pending ? n->cap_pending * 2 : 8;
        struct pending *p = realloc(n->pending, cap * sizeof *p);
        if (p == NULL)
            return -ENOMEM;
        n->pending = p;
        n->cap_pending = cap;
    }
    char *display = display_of(req);
    if (display == NULL)
        return -ENOMEM;
    n->pending[n->n_pending++] = (struct pending){req->id, req->pid, display};
    n->stats.asked++;
    if (n->ask != NULL)
        n->ask(n->arg, req);
    return 0;
}

static int
decide_and_answer(struct exec_notify *n, struct exec_target *t)
{
    const struct exec_notify_request *req = &t->req;
    char *display = display_of(req);
    if (display == NULL)
        return respond(n, req->id, ENOMEM);
    int rc;
    if (!n->first_seen) {
        /* The helper's own execve: nothing else runs under a new listener
         * before it, and the helper told us its path in advance. */
        n->first_seen = true;
        rc = strcmp(req->path, n->first_path) == 0
                 ? respond(n, req->id, 0)
                 : refuse(n, req->id, req->pid, EACCES, display,
                          "the first exec is not the sandboxed command");
        free(display);
        return rc;
    }
    if (n->refuse_shared_memory && exec_target_shares_memory(req->pid)) {
        rc = refuse(n, req->id, req->pid, EACCES, display,
                    "the process shares its memory with running threads (strict mode)");
        free(display);
        return rc;
    }
    if (t->quick) {
        rc = respond(n, req->id, 0);
        free(display);
        return rc;
    }
    struct exec_notify_decision d = {0};
    n->decide(n->arg, req, &d);
    if (d.verdict == EXEC_NOTIFY_ASK) {
        rc = id_valid(n, req->id) ? keep_pending(n, req) : 0;
        if (rc < 0)
            rc = refuse(n, req->id, req->pid, ENOMEM, display, "out of memory");
    } else if (d.verdict == EXEC_NOTIFY_REFUSE) {
        rc = refuse(n, req->id, req->pid, d.err, display, d.reason ? d.reason : "refused");
    } else {
        rc = respond(n, req->id, 0);
    }
    free(d.reason);
    free(display);
    return rc;
}

void
exec_notify_set_connect(struct exec_notify *n, const struct unix_connect_config *cfg,
                        exec_notify_wait_fn wait, void *arg)
{
    n->connect_cfg = cfg;
    n->connect_wait = wait;
    n->connect_arg = arg;
}

/* A socket call (unix_connect.h) rather than an exec. */
static int
handle_socket(struct exec_notify *n, const struct seccomp_notif *sn)
{
    struct unix_connect_wait wait;
    int rc = unix_connect_handle(n->fd, sn, n->connect_cfg, &wait);
    if (rc != 1)
        return rc;
    if (n->connect_wait != NULL) {
        n->connect_wait(n->connect_arg, &wait);
        return 0;
    }
    do {
        struct pollfd p = {.fd = wait.fd, .events = POLLOUT};
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
            ;
        rc = unix_connect_finish(n->fd, &wait, 0);
    } while (rc == 1); /* a send that still finds no room */
    return rc;
}

static int
handle(struct exec_notify *n, const struct seccomp_notif *sn)
{
    if (unix_connect_handles(sn->data.nr))
        return handle_socket(n, sn);
    struct exec_target t = {.file = -1};
    const struct exec_target_how how = {
        .listener = n->fd,
        .first = !n->first_seen,
        .read_env = n->read_env,
        .quick = n->quick,
        .arg = n->arg,
    };
    int rc = exec_target_read(&how, sn, &t);
    if (rc == -ESRCH) {
        n->stats.dropped++;
        rc = 0;
    } else if (rc < 0) {
        /* Fail closed: what cannot be read cannot be allowed. */
        char *why = NULL;
        if (asprintf(&why, "cannot read the exec's arguments: %s", strerror(-rc)) < 0)
            why = NULL;
        rc = refuse(n, sn->id, (pid_t)sn->pid, -rc == ENOMEM ? ENOMEM : -rc, "(unreadable exec)",
                    why);
        free(why);
    } else if (!id_valid(n, sn->id)) {
        n->stats.dropped++;
    } else if (t.file < 0 && (t.open_err == ENOENT || t.open_err == ENOTDIR)) {
        /* Nothing there: the kernel would fail the same way, and a PATH
         * search (execvp) goes on to the next directory without a refusal
         * line or a question for each miss.  A file created after this
         * check does not run: the exec fails here. */
        rc = respond_counted(n, sn->id, t.open_err, &n->stats.missing);
    } else {
        rc = decide_and_answer(n, &t);
    }
    exec_target_free(&t);
    return rc;
}

int
exec_notify_process(struct exec_notify *n)
{
    struct seccomp_notif *sn = malloc(n->sizes.seccomp_notif);
    if (sn == NULL)
        return -ENOMEM;
    int handled = 0, rc = 0;
    for (;;) {
        /* The receive ioctl blocks even on a non-blocking fd: only call it
         * when poll says a notification waits. */
        struct pollfd p = {.fd = n->fd, .events = POLLIN};
        int ready = poll(&p, 1, 0);
        n->hung_up = ready == 1 && (p.revents & POLLHUP) && !(p.revents & POLLIN);
        if (ready <= 0 || !(p.revents & POLLIN))
            break;
        memset(sn, 0, n->sizes.seccomp_notif);
        if (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_RECV, sn) != 0) {
            if (errno == EINTR || errno == ENOENT)
                continue; /* the target went away between poll and receive */
            rc = -errno;
            break;
        }
        rc = handle(n, sn);
        if (rc < 0)
            break;
        handled++;
    }
    free(sn);
    return rc < 0 ? rc : handled;
}

int
exec_notify_answer(struct exec_notify *n, uint64_t id, bool allow, const char *reason)
{
    size_t i = 0;
    while (i < n->n_pending && n->pending[i].id != id)
        i++;
    if (i == n->n_pending)
        return -ENOENT;
    struct pending p = n->pending[i];
    n->pending[i] = n->pending[--n->n_pending];
    int rc = allow ? respond(n, id, 0)
                   : refuse(n, id, p.pid, EACCES, p.display, reason ? reason : "declined");
    free(p.display);
    return rc;
}
