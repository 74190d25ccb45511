/*
 * launcher: execgate-sandbox --launcher (launcher.h).
 *
 * What the launcher holds, and why a child can see nothing of another
 * call's: its memory is the helper's own program, the request being served
 * (each earlier request's bytes were zeroed in the one receive buffer, and
 * its string table freed, before this one was read) and nothing else (no
 * secret ever reaches it: it starts with no environment, and a request is
 * a command line, an environment and fds, all of which the child gets
 * anyway); its fds are the control socket, /dev/null (0, 1 and one more),
 * the server's stderr, the /dev template (a read-only tree the same for
 * every call) and the request's fds, closed before the answer, and the
 * child closes every one it was not given but the template before it runs
 * a line of the helper (which closes that once its /dev is up).  It runs
 * as the server started it, as the server starts a helper: same binary,
 * same uid, same capabilities, every signal at its default and none
 * blocked, death with the server (the PR_SET_PDEATHSIG of
 * the server's start, which its execve kept); it sets
 * no_new_privs in no one's place (each child sets it where an exec'd
 * helper does: the launcher itself never execs).  It stays in the
 * server's cgroup, idle: each child is born in its call's (clone3 with
 * CLONE_INTO_CGROUP), so nothing of a call ever runs in the launcher's.
 */
#include "sandbox/launcher.h"
#include "sandbox/helper.h"
#include "sandbox/helper_main.h"
#include "sandbox/ns.h"
#include "common/fd_pass.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

extern char **environ;

/* The most strings (arguments and environment) one request may hold. */
#define MAX_STRINGS 65536

/* One request, checked: pointers into the receive buffer. */
struct request {
    const struct sandbox_launcher_req *head;
    int fds[SANDBOX_LAUNCHER_MAX_FDS]; /* received, close-on-exec */
    size_t n_fds;
    int cgroup;                         /* the fd that is the call's cgroup, or -1 */
    int join[SANDBOX_LAUNCHER_MAX_FDS]; /* cgroup files to write "0" to */
    size_t n_join;
    char **argv;
    char **env;
};

struct launcher {
    int ctl;
    int dev_template; /* above every request's fd number; -1: none */
    char *opt;        /* main's argv[1], in the memory ps reads the command line from */
    int null_fd;      /* /dev/null, for 0-2 a request does not give */
    pid_t server;     /* the launcher's parent, each child's parent too */
};

/* ---- the child ---- */

/* Closes every fd in [from, to] (to < 0: to the end). */
static int
close_from_to(int from, int to)
{
    if (to >= 0 && to < from)
        return 0;
    unsigned last = to < 0 ? ~0u : (unsigned)to;
    return (int)syscall(SYS_close_range, (unsigned)from, last, 0);
}

/* Whether the request gives the child an fd at number at. */
static bool
given(const struct request *rq, int at)
{
    for (size_t i = 0; i < rq->n_fds; i++) {
        if (rq->head->at[i] == at)
            return true;
    }
    return false;
}

/* Closes every fd from from on but keep (-1: none). */
static int
close_all_but(int from, int keep)
{
    if (keep < from)
        return close_from_to(from, -1);
    int rc = close_from_to(from, keep - 1);
    return rc < 0 ? rc : close_from_to(keep + 1, -1);
}

/*
 * The request's fds at their numbers, /dev/null at 0-2 where none is
 * given, nothing else open but the /dev template.  Every fd is first
 * copied above the highest number a request may name, so no dup2
 * overwrites a source still to be moved.
 */
static void
place_fds(const struct launcher *l, const struct request *rq)
{
    int moved[SANDBOX_LAUNCHER_MAX_FDS];
    for (size_t i = 0; i < rq->n_fds; i++) {
        moved[i] = -1;
        if (rq->head->at[i] < 0)
            continue; /* the cgroup's fds */
        moved[i] = fcntl(rq->fds[i], F_DUPFD_CLOEXEC, SANDBOX_LAUNCHER_MAX_AT + 1);
        if (moved[i] < 0)
            sandbox_helper_die(errno, "launcher: moving the call's fds");
    }
    int null_fd = fcntl(l->null_fd, F_DUPFD_CLOEXEC, SANDBOX_LAUNCHER_MAX_AT + 1);
    if (null_fd < 0)
        sandbox_helper_die(errno, "launcher: moving /dev/null");
    for (size_t i = 0; i < rq->n_fds; i++) {
        if (moved[i] >= 0 && dup2(moved[i], rq->head->at[i]) < 0)
            sandbox_helper_die(errno, "launcher: the call's fd %d", rq->head->at[i]);
    }
    for (int t = 0; t <= 2; t++) {
        if (!given(rq, t) && dup2(null_fd, t) < 0)
            sandbox_helper_die(errno, "launcher: /dev/null at fd %d", t);
    }
    /* the gaps between the given numbers, then everything above them
     * but the /dev template (closed by the helper once its /dev is up):
     * the control socket, the copies, the received fds, the cgroup's */
    int gap = 3;
    for (int t = 3; t <= SANDBOX_LAUNCHER_MAX_AT + 1; t++) {
        if (t <= SANDBOX_LAUNCHER_MAX_AT && !given(rq, t))
            continue;
        int rc = t <= SANDBOX_LAUNCHER_MAX_AT ? close_from_to(gap, t - 1)
                                              : close_all_but(gap, l->dev_template);
        if (rc < 0)
            sandbox_helper_die(errno, "launcher: closing the fds not given");
        gap = t + 1;
    }
}

/*
 * The child, a copy of the launcher (no CLONE_VM) whose parent is the
 * server.  Signals need no reset here: the launcher set every one to its
 * default and blocked none at its start (sandbox_helper_prepare_parent)
 * and changes none, so sandbox_helper_run skips its reset too.  The thread id libc cached is the
 * launcher's; nothing on the helper's path asks for it (no threads, no raise).
 */
static noreturn void
child(const struct launcher *l, const struct request *rq)
{
    /* one thread, so "0" in a tasks file moves it all */
    for (size_t i = 0; i < rq->n_join; i++) {
        if (write(rq->join[i], "0", 1) != 1)
            sandbox_helper_die(errno, "launcher: joining the call's cgroup");
    }
    /* the parent's death, as for a helper the server starts itself; the
     * server may have died before this was asked for: then it never comes */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        sandbox_helper_die(errno, "launcher: PR_SET_PDEATHSIG");
    if (getppid() != l->server)
        sandbox_helper_die(ESRCH, "launcher: the server has gone");
    if ((rq->head->flags & SANDBOX_LAUNCHER_NEW_SESSION) && setsid() < 0)
        sandbox_helper_die(errno, "launcher: setsid");
    place_fds(l, rq);
    /* not taken for the launcher by ps, nor by a count of the server's
     * own children (same length or shorter: the rest NULs) */
    size_t len = strlen(l->opt);
    memset(l->opt, 0, len);
    memcpy(l->opt, SANDBOX_LAUNCHER_CHILD_ARG, strlen(SANDBOX_LAUNCHER_CHILD_ARG));
    environ = rq->env;
    int argc = (int)rq->head->n_argv;
    sandbox_helper_main(argc, rq->argv);
}

/* ---- the request ---- */

/* The strings after the head: exactly n NUL-terminated ones filling
 * [p, end), pointed to from a new NULL-terminated array (argv then env,
 * split by the caller).  Returns the array or NULL with errno. */
static char **
split_strings(char *p, const char *end, size_t n)
{
    char **v = calloc(n + 2, sizeof *v); /* two NULLs: one after argv too */
    if (v == NULL)
        return NULL;
    size_t i = 0;
    while (p < end && i < n) {
        char *nul = memchr(p, '\0', (size_t)(end - p));
        if (nul == NULL)
            break;
        v[i++] = p;
        p = nul + 1;
    }
    if (i != n || p != end) {
        free(v);
        errno = EPROTO;
        return NULL;
    }
    return v;
}

/* The fd numbers: each in range, none twice, at most one cgroup. */
static int
check_targets(struct request *rq)
{
    rq->cgroup = -1;
    for (size_t i = 0; i < rq->n_fds; i++) {
        int32_t at = rq->head->at[i];
        if (at == SANDBOX_LAUNCHER_AT_JOIN) {
            rq->join[rq->n_join++] = rq->fds[i];
            continue;
        }
        if (at == SANDBOX_LAUNCHER_AT_CGROUP) {
            if (rq->cgroup >= 0)
                return EPROTO;
            rq->cgroup = rq->fds[i];
            continue;
        }
        if (at < 0 || at > SANDBOX_LAUNCHER_MAX_AT)
            return EBADF;
        for (size_t j = 0; j < i; j++) {
            if (rq->head->at[j] == at)
                return EPROTO;
        }
    }
    return 0;
}

/* Checks the n bytes of buf and fills rq.  Returns 0 or a positive errno. */
static int
parse(char *buf, size_t n, int msg_flags, struct request *rq)
{
    const struct sandbox_launcher_req *h = (const void *)buf;
    if ((msg_flags & MSG_TRUNC) || n < sizeof *h)
        return EMSGSIZE;
    rq->head = h;
    if (h->magic != SANDBOX_LAUNCHER_MAGIC || h->version != SANDBOX_LAUNCHER_VERSION)
        return EPROTO;
    if (h->n_fds != rq->n_fds)
        return EBADF;
    if (h->n_argv < 1 || h->n_argv > MAX_STRINGS || h->n_env > MAX_STRINGS)
        return E2BIG;
    int rc = check_targets(rq);
    if (rc != 0)
        return rc;
    if (buf[n - 1] != '\0')
        return EPROTO;
    size_t n_argv = h->n_argv;
    char **v = split_strings(buf + sizeof *h, buf + n, n_argv + h->n_env);
    if (v == NULL)
        return errno;
    /* argv ends at its count: one NULL after it, env's strings moved up */
    memmove(&v[n_argv + 1], &v[n_argv], (h->n_env + 1) * sizeof *v);
    v[n_argv] = NULL;
    rq->argv = v;
    rq->env = &v[n_argv + 1];
    return 0;
}

/* The reply to request id; pidfd (or -1) attached.  Returns 0 or -errno. */
static int
reply(int ctl, uint64_t id, int err, pid_t pid, int pidfd)
{
    struct sandbox_launcher_reply r = {
        .magic = SANDBOX_LAUNCHER_MAGIC, .err = err, .id = id, .pid = pid};
    struct iovec iov = {.iov_base = &r, .iov_len = sizeof r};
    ssize_t sent = fd_pass_send(ctl, &iov, 1, &pidfd, pidfd >= 0 ? 1 : 0);
    return sent < 0 ? (int)sent : 0;
}

/* Starts the child of a parsed request.  Returns its pid with *pidfd, or
 * -errno. */
static pid_t
start(const struct launcher *l, const struct request *rq, int *pidfd)
{
    int fd = -1;
    struct clone_args args = {
        .flags = CLONE_PARENT | CLONE_PIDFD,
        .pidfd = (uint64_t)(uintptr_t)&fd,
        .exit_signal = 0, /* CLONE_PARENT: the launcher's own, SIGCHLD */
    };
    if (rq->cgroup >= 0) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = (uint64_t)rq->cgroup;
    }
    long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0)
        return -errno;
    if (pid == 0)
        child(l, rq);
    *pidfd = fd;
    return (pid_t)pid;
}

/* Serves one received message and closes its nfds fds.  Returns 0, or
 * -errno when the control socket failed (the launcher ends). */
static int
serve(const struct launcher *l, char *buf, ssize_t n, int msg_flags, int *fds, size_t nfds)
{
    struct request rq = {.n_fds = nfds, .cgroup = -1};
    uint64_t id = 0;
    int err = n < 0 ? (int)-n : 0;
    if (err == 0 && nfds > SANDBOX_LAUNCHER_MAX_FDS)
        err = EMSGSIZE;
    if (err == 0)
        memcpy(rq.fds, fds, nfds * sizeof *fds);
    if (err == 0)
        err = parse(buf, (size_t)n, msg_flags, &rq);
    if (n >= (ssize_t)sizeof(struct sandbox_launcher_req))
        memcpy(&id, buf + offsetof(struct sandbox_launcher_req, id), sizeof id);
    pid_t pid = -1;
    int pidfd = -1;
    if (err == 0) {
        pid = start(l, &rq, &pidfd);
        err = pid < 0 ? (int)-pid : 0;
    }
    /* the child has its copies: none of the request's stays here, and
     * none is left by the time the server hears back */
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    int rc = reply(l->ctl, id, err, err ? 0 : pid, pidfd);
    /* a child nobody will hear of must not run */
    if (rc < 0 && pidfd >= 0)
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    if (pidfd >= 0)
        close(pidfd);
    free(rq.argv);
    return rc;
}

/*
 * The /dev each confined child copies instead of making its own
 * (sandbox_ns_dev_template), built once by a child of the launcher in a
 * user and mount namespace of its own (where it may mount, whoever the
 * server's user is) and handed back over a socket pair: the launcher
 * itself stays where it is.  The template's file system is read-only and
 * belongs to that namespace, in which no sandbox is: no call can change
 * what another sees.  Returns its fd, moved above every number a request
 * may name, or -1 (the children then make their own /dev).
 */
static int
dev_template(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = sandbox_ns_own_mounts() == 0 ? sandbox_ns_dev_template() : -1;
        char tag = fd >= 0 ? 'T' : 'E';
        struct iovec iov = {.iov_base = &tag, .iov_len = 1};
        _exit(fd_pass_send(sv[1], &iov, 1, &fd, fd >= 0 ? 1 : 0) < 0);
    }
    close(sv[1]);
    int fd = -1;
    if (pid > 0) {
        char tag = 0;
        size_t n = 0;
        int flags = 0;
        ssize_t got = fd_pass_recv(sv[0], &tag, 1, &fd, 1, &n, &flags);
        if (n == 1 && (got != 1 || tag != 'T')) {
            close(fd);
            n = 0;
        }
        if (n != 1)
            fd = -1;
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    close(sv[0]);
    if (fd < 0)
        return -1;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, SANDBOX_LAUNCHER_MAX_AT + 1);
    close(fd);
    return high;
}

noreturn void
sandbox_launcher_run(int ctl, char *opt)
{
    struct launcher l = {.ctl = ctl, .opt = opt, .server = getppid()};
    if (strlen(opt) < strlen(SANDBOX_LAUNCHER_CHILD_ARG))
        sandbox_helper_die(0, "launcher: \"%s\" is too short to rename", opt);
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(ctl, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
        sandbox_helper_die(errno, "launcher: the control socket at fd %d", ctl);
    if (type != SOCK_SEQPACKET)
        sandbox_helper_die(0, "launcher: fd %d is not a SOCK_SEQPACKET socket", ctl);
    if (fcntl(ctl, F_SETFD, FD_CLOEXEC) != 0)
        sandbox_helper_die(errno, "launcher: the control socket's close-on-exec");
    sandbox_helper_prepare_parent();
    l.dev_template = dev_template();
    sandbox_helper_set_dev_template(l.dev_template);
    l.null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (l.null_fd < 0)
        sandbox_helper_die(errno, "launcher: /dev/null");
    char *buf = malloc(SANDBOX_LAUNCHER_REQ_MAX);
    if (buf == NULL)
        sandbox_helper_die(ENOMEM, "launcher: the request buffer");
    int rc = reply(ctl, 0, 0, getpid(), -1); /* ready */
    if (rc < 0)
        sandbox_helper_die(-rc, "launcher: saying it is ready");
    for (;;) {
        int fds[FD_PASS_MAX_FDS];
        size_t nfds = 0;
        int msg_flags = 0;
        ssize_t n = fd_pass_recv(ctl, buf, SANDBOX_LAUNCHER_REQ_MAX, fds, FD_PASS_MAX_FDS, &nfds,
                                 &msg_flags);
        if (n == 0)
            _exit(0); /* the server closed its end */
        if (n < 0 && n != -EBADMSG && n != -EMSGSIZE)
            sandbox_helper_die((int)-n, "launcher: reading a request");
        rc = serve(&l, buf, n, msg_flags, fds, nfds); /* closes fds */
        /* the next child must not find this request in its copy */
        if (n > 0)
            memset(buf, 0,
                   (size_t)n < SANDBOX_LAUNCHER_REQ_MAX ? (size_t)n : SANDBOX_LAUNCHER_REQ_MAX);
        if (rc < 0)
            sandbox_helper_die(-rc, "launcher: answering a request");
    }
}
