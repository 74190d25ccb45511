#include "spawn_child.h"

#include "exec_filter.h"
#include "exec_notify.h"
#include "fd_pass.h"
#include "log.h"
#include "../rules/exec_path.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

extern char **environ;

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* Exit status reported when the child was reaped by someone else (never by
 * this server: only spawn and the subreaper wait, each for known pids). */
#define SPAWN_STATUS_UNKNOWN 255

struct spawn_child {
    uv_poll_t poll; /* on the pidfd: readable once the child has exited */
    int pidfd;
    pid_t pid;
    bool exited, closing;
    spawn_exit_cb on_exit;
    spawn_close_cb on_close;
    void *data;
    /* the open children not yet reaped, for spawn_reap (the loop runs on
     * one thread, and pids are the process's, so one list serves all) */
    struct spawn_child *prev, *next;
};

static struct spawn_child *unreaped;

static void
unlist(struct spawn_child *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else if (unreaped == c)
        unreaped = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

pid_t
spawn_pid(const struct spawn_child *c)
{
    return c->pid;
}

bool
spawn_exited(const struct spawn_child *c)
{
    return c->exited;
}

void *
spawn_data(const struct spawn_child *c)
{
    return c->data;
}

/* ---- the exit ---- */

static void
report_exit(struct spawn_child *c, const siginfo_t *info)
{
    c->exited = true;
    unlist(c);
    uv_poll_stop(&c->poll);
    int64_t status = 0;
    int sig = 0;
    if (!info) {
        status = SPAWN_STATUS_UNKNOWN;
    } else if (info->si_code == CLD_EXITED) {
        status = info->si_status;
    } else {
        sig = info->si_status;
    }
    c->on_exit(c, status, sig);
}

/* Reaps c if it has exited: 1 when reported, 0 when it still runs. */
static int
try_reap(struct spawn_child *c)
{
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    if (waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &info, WEXITED | WNOHANG | __WALL) < 0) {
        if (errno == EINTR || errno == EAGAIN)
            return 0;
        /* ECHILD: someone else took it; the exit is all that can be said */
        log_warn("child %d: waitid: %s", (int)c->pid, strerror(errno));
        report_exit(c, NULL);
        return 1;
    }
    if (info.si_pid == 0)
        return 0;
    report_exit(c, &info);
    return 1;
}

static void
on_pidfd(uv_poll_t *h, int status, int events)
{
    struct spawn_child *c = h->data;
    if (!c->exited && !c->closing)
        try_reap(c);
}

bool
spawn_reap(pid_t pid)
{
    for (struct spawn_child *c = unreaped; c; c = c->next) {
        if (c->pid == pid) {
            try_reap(c);
            return true;
        }
    }
    return false;
}

/* ---- the start ---- */

/* Whether o gives the child an fd at number at. */
static bool
fd_given(const struct spawn_options *o, int at)
{
    for (size_t i = 0; i < o->n_fds; i++) {
        if (o->fds[i].at == at)
            return true;
    }
    return false;
}

/*
 * The file actions for o->fds.  A dup2 would overwrite a source that is
 * another entry's target (fd 5 to 3 and fd 3 to 5): then every source is
 * first duplicated above all targets (*dups, closed by the caller), so no
 * target is a pending source.  An fd at its own number is a dup2 onto
 * itself, which clears close-on-exec (glibc >= 2.29).
 */
static int
add_fds(posix_spawn_file_actions_t *fa, const struct spawn_options *o, int *dups, int *max_at)
{
    int top = 2;
    for (size_t i = 0; i < o->n_fds; i++) {
        if (o->fds[i].fd < 0 || o->fds[i].at < 0)
            return -EBADF;
        top = o->fds[i].at > top ? o->fds[i].at : top;
    }
    *max_at = top;
    bool clash = false;
    for (size_t i = 0; i < o->n_fds && !clash; i++) {
        for (size_t j = 0; j < o->n_fds && !clash; j++)
            clash = i != j && o->fds[i].fd == o->fds[j].at && o->fds[i].fd != o->fds[i].at;
    }
    for (size_t i = 0; i < o->n_fds; i++) {
        int src = o->fds[i].fd;
        if (clash) {
            dups[i] = fcntl(src, F_DUPFD_CLOEXEC, top + 1);
            if (dups[i] < 0)
                return -errno;
            src = dups[i];
        }
        int rc = posix_spawn_file_actions_adddup2(fa, src, o->fds[i].at);
        if (rc != 0)
            return -rc;
    }
    /* as libuv did: 0, 1 and 2 are never left to chance (the server's own
     * are its client's stdin and stdout) */
    for (int t = 0; t <= 2; t++) {
        if (fd_given(o, t))
            continue;
        int rc =
            posix_spawn_file_actions_addopen(fa, t, "/dev/null", t == 0 ? O_RDONLY : O_RDWR, 0);
        if (rc != 0)
            return -rc;
    }
    /* Everything is close-on-exec already; these make "no other fd" hold
     * even for an fd some library opened without it: the numbers between
     * the targets (after the dup2s, which needed the sources open; a close
     * of an fd that is not open is no error for glibc), then the rest. */
    for (int t = 3; t < top; t++) {
        bool given = false;
        for (size_t i = 0; i < o->n_fds && !given; i++)
            given = o->fds[i].at == t;
        int rc = given ? 0 : posix_spawn_file_actions_addclose(fa, t);
        if (rc != 0)
            return -rc;
    }
    int rc = posix_spawn_file_actions_addclosefrom_np(fa, top + 1);
    return rc != 0 ? -rc : 0;
}

static int
set_attrs(posix_spawnattr_t *a, bool new_session)
{
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    /* 1-31 as libuv did: the server ignores SIGPIPE, and ignored signals
     * survive an exec; glibc leaves the real-time ones it uses itself */
    for (int s = 1; s < 32; s++) {
        if (s != SIGKILL && s != SIGSTOP)
            sigaddset(&defaults, s);
    }
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (new_session)
        flags |= POSIX_SPAWN_SETSID;
    int rc = posix_spawnattr_setflags(a, flags);
    if (rc == 0)
        rc = posix_spawnattr_setsigmask(a, &none);
    if (rc == 0)
        rc = posix_spawnattr_setsigdefault(a, &defaults);
    return -rc;
}

static int
start_process(const struct spawn_options *o, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc != 0)
        return -rc;
    rc = posix_spawnattr_init(&attr);
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -rc;
    }
    int *dups = o->n_fds ? malloc(o->n_fds * sizeof(int)) : NULL;
    for (size_t i = 0; dups && i < o->n_fds; i++)
        dups[i] = -1;
    int max_at = 2;
    rc = o->n_fds && !dups ? -ENOMEM : add_fds(&fa, o, dups, &max_at);
    if (rc == 0 && o->cwd)
        rc = -posix_spawn_file_actions_addchdir_np(&fa, o->cwd);
    if (rc == 0)
        rc = set_attrs(&attr, o->new_session);
    if (rc == 0) {
        rc = -posix_spawnp(pid, o->file, &fa, &attr, o->argv, o->env ? o->env : environ);
    }
    for (size_t i = 0; dups && i < o->n_fds; i++) {
        if (dups[i] >= 0)
            close(dups[i]);
    }
    free(dups);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* ---- the start with the exec filter, or from a checked file ----
 *
 * posix_spawn cannot install a seccomp filter between its file actions and
 * the exec, nor exec a file by its fd (execveat), and the helper
 * (execgate-sandbox --exec-notify-fd) costs a second exec.  So this child
 * is started with clone(CLONE_VM) on a stack of its own: it shares the
 * server's memory (nothing is copied, as with posix_spawn) but not its fd
 * table or signal handlers, sets itself up, loads the filter and sends the
 * listener (when asked), and execs.  It calls nothing that allocates: the
 * server's allocator is shared with it.
 *
 * With the filter, the first exec is notified to the listener the child
 * just sent, so the server cannot wait for it the vfork way (CLONE_VFORK
 * would hold the server until that exec is done, and the exec waits for
 * the server).  It waits on the socket instead: the listener arrives, the
 * server continues the exec it knows (only this child runs under the new
 * filter, and it runs the server's code), then the socket's EOF (the
 * child's end is close-on-exec) says the exec is done and the shared
 * memory is no longer used; an errno on the socket says where the child
 * failed. */

#define FILTERED_STACK (256 * 1024)

/* The child's stack, mapped at the first filtered start and kept: starts
 * are one at a time (each waits until its child has exec'd), and a fresh
 * mapping per start cost an mmap, an munmap with its TLB flush and new
 * page faults on every escalated program.  NULL until then. */
static void *filtered_stack;

static void *
get_filtered_stack(void)
{
    if (filtered_stack == NULL) {
        void *m =
            mmap(NULL, FILTERED_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED)
            filtered_stack = m;
    }
    return filtered_stack;
}

struct filtered {
    const struct spawn_options *o;
    bool filter;  /* load the exec filter (o->exec_listener) */
    int exec_at;  /* where *o->exec_fd is moved in the child (an entry of o->fds), or -1 */
    int sock;     /* the child's end of the socket pair */
    int max_at;   /* the highest target (at least 2) */
    int high;     /* above every target, source and sock */
    pid_t server; /* the server's pid, which o->die_with_server ties the child to */
};

/* Reports the child's errno to the server and ends it. */
static _Noreturn void
filtered_fail(int sock, int err)
{
    ssize_t n;
    do
        n = send(sock, &err, sizeof err, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    _exit(127);
}

/* Every given fd at its number, /dev/null for 0-2 not given, the socket
 * at max_at + 1 (close-on-exec), nothing else open.  Returns the socket's
 * new number or -errno. */
static int
filtered_fds(const struct filtered *f)
{
    const struct spawn_options *o = f->o;
    /* The server's fds from high up (this table's copies only) go first,
     * so the copies below land on consecutive numbers from high: nothing
     * to remember them in without allocating. */
    if (syscall(SYS_close_range, (unsigned)f->high, ~0u, 0) < 0)
        return -errno;
    int sock = fcntl(f->sock, F_DUPFD_CLOEXEC, f->high);
    if (sock < 0)
        return -errno;
    /* every source above all targets first, so no dup2 overwrites one */
    int moved_from = sock + 1;
    for (size_t i = 0; i < o->n_fds; i++) {
        int moved = fcntl(o->fds[i].fd, F_DUPFD_CLOEXEC, moved_from);
        if (moved < 0)
            return -errno;
        if (moved != moved_from + (int)i)
            return -EBADF;
    }
    for (size_t i = 0; i < o->n_fds; i++) {
        if (dup2(moved_from + (int)i, o->fds[i].at) < 0)
            return -errno;
    }
    for (int t = 0; t <= 2; t++) {
        if (fd_given(o, t))
            continue;
        int nul = open("/dev/null", (t == 0 ? O_RDONLY : O_RDWR) | O_CLOEXEC);
        if (nul < 0 || dup2(nul, t) < 0)
            return -errno;
        if (nul != t)
            close(nul);
        else if (fcntl(t, F_SETFD, 0) < 0)
            return -errno;
    }
    if (dup3(sock, f->max_at + 1, O_CLOEXEC) < 0)
        return -errno;
    for (int t = 3; t <= f->max_at; t++) {
        if (!fd_given(o, t))
            close(t);
    }
    if (syscall(SYS_close_range, (unsigned)f->max_at + 2, ~0u, 0) < 0)
        return -errno;
    return f->max_at + 1;
}

/* The child, on its own stack; never returns (execve or _exit).  Not
 * instrumented: under ASan its frame would stay poisoned in the shadow of
 * a stack the server reuses. */
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address))
#endif
static int
filtered_child(void *arg)
{
    const struct filtered *f = arg;
    const struct spawn_options *o = f->o;
    for (size_t i = 0; i < o->n_join_fds; i++) {
        if (write(o->join_fds[i], "0", 1) != 1)
            filtered_fail(f->sock, errno);
    }
    if (o->die_with_server && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        filtered_fail(f->sock, errno);
    /* the server died before the signal was asked for: it never comes */
    if (o->die_with_server && getppid() != f->server)
        filtered_fail(f->sock, ESRCH);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int s = 1; s < NSIG; s++) {
        /* EINVAL for the numbers libc reserves: nothing to reset */
        if (s != SIGKILL && s != SIGSTOP)
            (void)sigaction(s, &dfl, NULL);
    }
    if (o->new_session && setsid() < 0)
        filtered_fail(f->sock, errno);
    int sock = filtered_fds(f);
    if (sock < 0)
        filtered_fail(f->sock, -sock);
    if (o->cwd && chdir(o->cwd) < 0)
        filtered_fail(sock, errno);
    /* the moved file fd lost close-on-exec in its dup2 */
    if (f->exec_at >= 0 && !o->exec_fd_inherited && fcntl(f->exec_at, F_SETFD, FD_CLOEXEC) < 0)
        filtered_fail(sock, errno);
    if (f->filter) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            filtered_fail(sock, errno);
        int listener = sandbox_exec_filter_load();
        if (listener < 0)
            filtered_fail(sock, -listener);
        int rc = sandbox_exec_filter_send(sock, o->file, listener);
        close(listener);
        if (rc < 0)
            filtered_fail(sock, -rc);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    char *const *env = o->env ? o->env : environ;
    if (f->exec_at >= 0)
        syscall(SYS_execveat, f->exec_at, "", o->argv, env, AT_EMPTY_PATH);
    else
        execve(o->file, o->argv, env);
    filtered_fail(sock, errno);
}

/* Continues the child's first exec (the only process under the filter).
 * Returns 0 or -errno (the child is then to be killed). */
static int
continue_first_exec(int listener, pid_t pid)
{
    struct seccomp_notif_sizes sizes;
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0)
        return -errno;
    struct seccomp_notif *req =
        calloc(1, sizes.seccomp_notif > sizeof(*req) ? sizes.seccomp_notif : sizeof(*req));
    struct seccomp_notif_resp *resp = calloc(
        1, sizes.seccomp_notif_resp > sizeof(*resp) ? sizes.seccomp_notif_resp : sizeof(*resp));
    int rc = req && resp ? 0 : -ENOMEM;
    struct pollfd p = {listener, POLLIN, 0};
    while (rc == 0 && poll(&p, 1, -1) < 0) {
        if (errno != EINTR)
            rc = -errno;
    }
    /* POLLHUP alone: the child died before its exec */
    if (rc == 0 && !(p.revents & POLLIN))
        rc = -ECHILD;
    while (rc == 0 && ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
        if (errno != EINTR)
            rc = -errno;
    }
    if (rc == 0 &&
        (req->pid != (__u32)pid || (req->data.nr != SYS_execve && req->data.nr != SYS_execveat)))
        rc = -EPROTO;
    if (rc == 0) {
        resp->id = req->id;
        resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0)
            rc = -errno;
    }
    free(req);
    free(resp);
    return rc;
}

/* The child's errno, 0 at EOF (its exec is done), or -errno of the
 * receive. */
static int
child_errno(int sock)
{
    int err = 0;
    size_t nfds = 0;
    ssize_t n = fd_pass_recv(sock, &err, sizeof err, NULL, 0, &nfds, NULL);
    if (n < 0)
        return (int)n;
    if (n == 0)
        return 0;
    return n == sizeof err && err > 0 ? err : EPROTO;
}

/* The child's errno from the len bytes of msg (an int alone: it failed
 * before its hand-over), or -EPROTO (EOF first, or an errno that is none). */
static int
failure_in(const char *msg, size_t len)
{
    int err = 0;
    if (len != sizeof err)
        return -EPROTO;
    memcpy(&err, msg, sizeof err);
    return err > 0 ? -err : -EPROTO;
}

/* The hand-over in the len bytes of msg, with fd (taken, or -1): 0 with
 * *listener when it hands over a listener for file, else -errno. */
static int
handover_for(const char *msg, size_t len, int flags, int fd, const char *file, int *listener)
{
    if (flags & MSG_TRUNC) {
        if (fd >= 0)
            close(fd);
        return -EPROTO;
    }
    char *path = NULL;
    int rc = exec_notify_parse_listener(msg, len, fd, listener, &path);
    if (rc == 0 && strcmp(path, file) != 0) {
        close(*listener);
        *listener = -1;
        rc = -EPROTO;
    }
    free(path);
    return rc;
}

/* What the child sent first when it was to load the filter: its errno,
 * or the hand-over of its listener for file.  Returns 0 with *listener,
 * or -errno (every fd that came closed). */
static int
receive_listener(int sock, const char *file, int *listener)
{
    *listener = -1;
    char *buf = malloc(EXEC_NOTIFY_HANDOVER_MAX + 1);
    if (buf == NULL)
        return -ENOMEM;
    int fd = -1;
    size_t nfds = 0;
    int flags = 0;
    /* one byte over the longest hand-over, so a longer one is MSG_TRUNC */
    ssize_t n = fd_pass_recv(sock, buf, EXEC_NOTIFY_HANDOVER_MAX + 1, &fd, 1, &nfds, &flags);
    int rc;
    if (n < 0)
        rc = n == -EBADMSG || n == -EMSGSIZE ? -EPROTO : (int)n;
    else if (nfds == 0 && (size_t)n <= sizeof(int))
        rc = failure_in(buf, (size_t)n);
    else
        rc = handover_for(buf, (size_t)n, flags, nfds > 0 ? fd : -1, file, listener);
    free(buf);
    return rc;
}

/* The listener and the first exec, once the child runs.  Returns 0 with
 * *listener (-1 without the filter) or -errno. */
static int
follow_filtered(int sock, pid_t pid, const char *file, bool filter, int *listener_out)
{
    *listener_out = -1;
    if (!filter) {
        int err = child_errno(sock);
        return err > 0 ? -err : err;
    }
    int listener = -1;
    int rc = receive_listener(sock, file, &listener);
    if (rc == 0)
        rc = continue_first_exec(listener, pid);
    if (rc == 0) {
        int err = child_errno(sock);
        rc = err > 0 ? -err : err;
    }
    if (rc < 0 && listener >= 0)
        close(listener);
    if (rc == 0)
        *listener_out = listener;
    return rc;
}

/* The options with *o->exec_fd added as one more inherited fd, above
 * every target: the child execs it from there.  *extended is the caller's
 * to free. */
static int
with_exec_fd(const struct spawn_options *o, struct spawn_options *copy, struct spawn_fd **extended,
             int *exec_at)
{
    *copy = *o;
    *extended = NULL;
    *exec_at = -1;
    if (!o->exec_fd)
        return 0;
    struct spawn_fd *fds = calloc(o->n_fds + 1, sizeof(*fds));
    if (!fds)
        return -ENOMEM;
    int top = 2;
    for (size_t i = 0; i < o->n_fds; i++) {
        fds[i] = o->fds[i];
        top = o->fds[i].at > top ? o->fds[i].at : top;
    }
    fds[o->n_fds] = (struct spawn_fd){*o->exec_fd, top + 1};
    copy->fds = fds;
    copy->n_fds = o->n_fds + 1;
    *extended = fds;
    *exec_at = top + 1;
    return 0;
}

/* Starts the clone(CLONE_VM) child: 0 with *pid and *listener (-1
 * without the filter), or -errno with nothing left running. */
static int
start_filtered(const struct spawn_options *given, pid_t *pid, int *listener)
{
    struct spawn_options o_copy;
    struct spawn_fd *extended = NULL;
    int exec_at = -1;
    /* the PATH search is the server's: the child could not allocate for
     * one (the filter's and a file fd's programs are named by path) */
    char *found = NULL;
    if (!strchr(given->file, '/') && (given->exec_listener || given->exec_fd))
        return -EINVAL;
    if (!strchr(given->file, '/') && !(found = exec_path_search(given->file)))
        return -ENOENT;
    int rc = with_exec_fd(given, &o_copy, &extended, &exec_at);
    if (rc < 0) {
        free(found);
        return rc;
    }
    if (found)
        o_copy.file = found;
    const struct spawn_options *o = &o_copy;
    struct filtered f = {.o = o,
                         .filter = o->exec_listener != NULL,
                         .exec_at = exec_at,
                         .max_at = 2,
                         .server = getpid()};
    for (size_t i = 0; i < o->n_fds; i++) {
        if (o->fds[i].fd < 0 || o->fds[i].at < 0) {
            free(extended);
            free(found);
            return -EBADF;
        }
        f.max_at = o->fds[i].at > f.max_at ? o->fds[i].at : f.max_at;
        f.high = o->fds[i].fd > f.high ? o->fds[i].fd : f.high;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        int e = errno;
        free(extended);
        free(found);
        return -e;
    }
    f.sock = sv[1];
    f.high = (f.high > sv[1] ? f.high : sv[1]);
    f.high = (f.high > f.max_at + 1 ? f.high : f.max_at + 1) + 1;
    void *stack = get_filtered_stack();
    if (stack == NULL) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        free(extended);
        free(found);
        return -e;
    }
    /* No handler of the server's may run in the child before it resets
     * them.  And the server keeps every signal blocked until the child has
     * exec'd: the child shares its errno (same memory, same thread
     * pointer), so an EINTR of the server's could be misread; with signals
     * blocked its calls here fail only once the child is gone. */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    pid_t child = clone(filtered_child, (char *)stack + FILTERED_STACK, CLONE_VM | SIGCHLD, &f);
    int e = errno;
    close(sv[1]);
    rc = child < 0 ? -e : follow_filtered(sv[0], child, o->file, f.filter, listener);
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(sv[0]);
    if (child > 0 && rc < 0) {
        kill(child, SIGKILL);
        while (waitpid(child, NULL, __WALL) < 0 && errno == EINTR)
            ;
    }
    /* the child has exec'd or is gone: its stack is free for the next */
    UNPOISON(stack, FILTERED_STACK);
    free(extended);
    free(found);
    *pid = child;
    return rc;
}

int
spawn_start(uv_loop_t *loop, const struct spawn_options *o, spawn_exit_cb on_exit, void *data,
            struct spawn_child **out)
{
    *out = NULL;
    struct spawn_child *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    pid_t pid = -1;
    int listener = -1;
    int rc;
    if (o->exec_listener || o->exec_fd || o->die_with_server || o->n_join_fds > 0) {
        if (o->exec_listener)
            *o->exec_listener = -1;
        rc = start_filtered(o, &pid, &listener);
    } else {
        rc = start_process(o, &pid);
    }
    if (rc < 0) {
        free(c);
        return rc;
    }
    /* The child cannot have been reaped yet (nothing waits for unknown
     * pids but the subreaper, on the loop), so the pid is still it. */
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* close-on-exec */
    rc = pidfd < 0 ? -errno : uv_poll_init(loop, &c->poll, pidfd);
    if (rc < 0) {
        /* it must not run unwatched; its exit goes to the subreaper (a
         * zombie until the server exits, without one) */
        log_error("child %d: cannot watch it (%s); killed", (int)pid, uv_strerror(rc));
        kill(pid, SIGKILL);
        if (pidfd >= 0)
            close(pidfd);
        if (listener >= 0)
            close(listener);
        free(c);
        return rc;
    }
    /* cannot fail for a handle just initialised */
    uv_poll_start(&c->poll, UV_READABLE, on_pidfd);
    c->pidfd = pidfd;
    c->pid = pid;
    c->on_exit = on_exit;
    c->data = data;
    c->poll.data = c;
    c->next = unreaped;
    if (unreaped)
        unreaped->prev = c;
    unreaped = c;
    if (o->exec_listener)
        *o->exec_listener = listener;
    *out = c;
    return 0;
}

/* ---- the end ---- */

static void
on_poll_closed(uv_handle_t *h)
{
    struct spawn_child *c = h->data;
    close(c->pidfd);
    if (c->on_close)
        c->on_close(c);
    free(c);
}

void
spawn_close(struct spawn_child *c, spawn_close_cb on_close)
{
    if (c->closing)
        return;
    c->closing = true;
    c->on_close = on_close;
    unlist(c);
    uv_close((uv_handle_t *)&c->poll, on_poll_closed);
}
