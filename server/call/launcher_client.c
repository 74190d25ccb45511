/*
 * launcher_client: requests to the sandbox launcher (launcher_client.h).
 *
 * The launcher is started like a helper (spawn_filtered: it dies with the
 * server, every signal at its default) with its control socket at
 * SANDBOX_LAUNCHER_FD and the server's stderr for its own messages, and
 * stays in the server's cgroup.  Its death is noticed at the next request
 * (the send or the reply fails: the subreaper has reaped it meanwhile, or
 * its pidfd is waited for here) and it is started again once for that
 * request; a request it refuses goes the other way.
 */
#include "server/call/launcher_client.h"
#include "server/call/call_cgroup.h"
#include "server/call/spawn_filtered.h"
#include "sandbox/launcher.h"
#include "common/fd_pass.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

extern char **environ;

/* How long a reply may take: the launcher answers right after its clone3,
 * so only a stopped or wedged launcher comes near this. */
#define REPLY_TIMEOUT_MS 5000

static struct {
    int sock; /* -1: no launcher */
    pid_t pid;
    int pidfd;
    char *file;       /* the helper it runs */
    bool unsupported; /* the kernel cannot: calls go the other way for good */
    uint64_t next_id;
} L = {.sock = -1, .pidfd = -1};

pid_t
launcher_client_pid(void)
{
    return L.sock >= 0 ? L.pid : 0;
}

/* Forgets the launcher.  With kill, kills it and reaps it (unless the
 * subreaper did), so that whatever it was doing is over; without, it ends
 * at the EOF just sent and is the subreaper's (or the caller's) to reap. */
static void
forget(bool kill)
{
    if (L.sock >= 0)
        close(L.sock);
    if (L.pidfd >= 0) {
        siginfo_t info;
        if (kill && syscall(SYS_pidfd_send_signal, L.pidfd, SIGKILL, NULL, 0) == 0)
            (void)waitid((idtype_t)P_PIDFD, (id_t)L.pidfd, &info, WEXITED | __WALL);
        close(L.pidfd);
    }
    L.sock = -1;
    L.pidfd = -1;
    L.pid = 0;
    free(L.file);
    L.file = NULL;
}

/* How the launcher ended, for the log, if it has (it is not reaped
 * here): "killed by signal N", "exited N", or "still running" (wedged). */
static const char *
how_it_ended(char *buf, size_t len)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (L.pidfd < 0 ||
        waitid((idtype_t)P_PIDFD, (id_t)L.pidfd, &info, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0)
        return "reaped already";
    if (info.si_pid == 0)
        return "still running";
    if (info.si_code == CLD_EXITED)
        snprintf(buf, len, "exited %d", info.si_status);
    else
        snprintf(buf, len, "killed by signal %d", info.si_status);
    return buf;
}

void
launcher_client_stop(void)
{
    forget(false);
}

static int await_reply(uint64_t id, pid_t *pid, int *pidfd);

/* Starts the launcher of file and waits for its word that it is one.
 * Returns 0, or -errno (-EPROTO: file said no such thing). */
static int
start_launcher(const char *file)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    char *argv[] = {(char *)file, (char *)SANDBOX_LAUNCHER_OPT, NULL};
    /* No environment: each child gets its call's, and what the server's
     * own holds must not sit in the memory (and /proc/PID/environ) that
     * every child, a sandbox's init among them, starts as a copy of. */
    char *no_env[] = {NULL};
    struct spawn_fd fds[] = {{STDERR_FILENO, STDERR_FILENO}, {sv[1], SANDBOX_LAUNCHER_FD}};
    struct spawn_options o = {
        .file = file,
        .argv = argv,
        .fds = fds,
        .n_fds = 2,
        .env = no_env,
        .die_with_server = true,
    };
    pid_t pid = -1;
    int listener = -1;
    int rc = spawn_filtered_start(&o, &pid, &listener);
    close(sv[1]);
    int pidfd = rc < 0 ? -1 : (int)syscall(SYS_pidfd_open, pid, 0);
    if (rc == 0 && pidfd < 0) {
        rc = -errno;
        kill(pid, SIGKILL);
        (void)waitpid(pid, NULL, __WALL);
    }
    if (rc == 0 && !(L.file = strdup(file))) {
        rc = -ENOMEM;
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        (void)waitpid(pid, NULL, __WALL);
        close(pidfd);
    }
    if (rc < 0) {
        close(sv[0]);
        return rc;
    }
    L.sock = sv[0];
    L.pid = pid;
    L.pidfd = pidfd;
    pid_t said = 0;
    int none = -1;
    rc = await_reply(0, &said, &none);
    if (rc != 0 || said != pid) {
        if (none >= 0)
            close(none);
        forget(true);
        return rc < 0 ? rc : -EPROTO;
    }
    log_info("sandbox launcher started (pid %d): calls start their helper from it", (int)pid);
    return 0;
}

/* Whether o is a start the launcher does as spawn_filtered would: no
 * exec filter, no file or directory by fd, the server's cwd, and few
 * enough fds. */
static bool
launchable(const struct spawn_options *o)
{
    if (!o->via_launcher || o->exec_listener || o->exec_fd || o->cwd_fd || o->cwd ||
        !o->die_with_server || !strchr(o->file, '/'))
        return false;
    size_t n_join = o->join ? 1 + o->join->n_tasks : 0;
    if (o->n_fds + n_join > SANDBOX_LAUNCHER_MAX_FDS)
        return false;
    return true;
}

static size_t
strings_len(char *const *v, size_t *count)
{
    size_t len = 0, n = 0;
    for (; v && v[n]; n++)
        len += strlen(v[n]) + 1;
    *count = n;
    return len;
}

/* The request for o in a new buffer (*len bytes), its fds in fds[]
 * (borrowed).  Returns the buffer, or NULL (ENOMEM, or E2BIG: too long). */
static char *
build_request(const struct spawn_options *o, uint64_t id, size_t *len, int *fds, size_t *nfds)
{
    char *const *env = o->env ? o->env : environ;
    size_t n_argv, n_env;
    size_t total = sizeof(struct sandbox_launcher_req) + strings_len(o->argv, &n_argv) +
                   strings_len(env, &n_env);
    if (total > SANDBOX_LAUNCHER_REQ_MAX) {
        errno = E2BIG;
        return NULL;
    }
    char *buf = malloc(total);
    if (buf == NULL)
        return NULL;
    struct sandbox_launcher_req h = {
        .magic = SANDBOX_LAUNCHER_MAGIC,
        .version = SANDBOX_LAUNCHER_VERSION,
        .id = id,
        .flags = o->new_session ? SANDBOX_LAUNCHER_NEW_SESSION : 0,
        .n_argv = (uint32_t)n_argv,
        .n_env = (uint32_t)n_env,
    };
    size_t n = 0;
    for (size_t i = 0; i < o->n_fds; i++) {
        h.at[n] = o->fds[i].at;
        fds[n++] = o->fds[i].fd;
    }
    if (o->join) {
        /* created in the v2 directory, else moved by "0" to its procs */
        h.at[n] = o->join->into >= 0 ? SANDBOX_LAUNCHER_AT_CGROUP : SANDBOX_LAUNCHER_AT_JOIN;
        fds[n++] = o->join->into >= 0 ? o->join->into : o->join->procs;
        for (size_t i = 0; i < o->join->n_tasks; i++) {
            h.at[n] = SANDBOX_LAUNCHER_AT_JOIN;
            fds[n++] = o->join->tasks[i];
        }
    }
    h.n_fds = (uint32_t)n;
    *nfds = n;
    memcpy(buf, &h, sizeof h);
    char *p = buf + sizeof h;
    for (size_t i = 0; i < n_argv; i++)
        p = stpcpy(p, o->argv[i]) + 1;
    for (size_t i = 0; i < n_env; i++)
        p = stpcpy(p, env[i]) + 1;
    *len = total;
    return buf;
}

/* The reply to id: 0 with *pid and *pidfd, a positive errno the launcher
 * refused with, or -errno when there is none (the launcher is gone or
 * wedged). */
static int
await_reply(uint64_t id, pid_t *pid, int *pidfd)
{
    struct pollfd p = {L.sock, POLLIN, 0};
    int n;
    while ((n = poll(&p, 1, REPLY_TIMEOUT_MS)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        return -errno;
    if (n == 0)
        return -ETIMEDOUT;
    struct sandbox_launcher_reply r;
    int fd = -1;
    size_t nfds = 0;
    int flags = 0;
    ssize_t got = fd_pass_recv(L.sock, &r, sizeof r, &fd, 1, &nfds, &flags);
    if (got < 0)
        return (int)got;
    int rc = 0;
    if (got == 0)
        rc = -ECONNRESET;
    else if ((size_t)got != sizeof r || (flags & MSG_TRUNC) || r.magic != SANDBOX_LAUNCHER_MAGIC ||
             r.id != id)
        rc = -EPROTO;
    else if (r.err != 0)
        rc = r.err > 0 && nfds == 0 ? r.err : -EPROTO;
    else if (nfds != (id != 0 ? 1 : 0) || r.pid <= 0)
        rc = -EPROTO; /* id 0 is the word that it is ready: no fd */
    if (rc != 0) {
        if (nfds == 1)
            close(fd);
        return rc;
    }
    *pid = r.pid;
    *pidfd = fd;
    return 0;
}

/* The pids listed in the call's cgroup.procs into pids (up to max);
 * returns how many, or -errno. */
static int
listed(int into, pid_t *pids, int max)
{
    int fd = openat(into, "cgroup.procs", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[4096];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) != 0) {
        if (n < 0 && errno != EINTR) {
            int e = errno;
            close(fd);
            return -e;
        }
        len += n > 0 ? (size_t)n : 0;
    }
    close(fd);
    buf[len] = '\0';
    int count = 0;
    for (char *p = buf; *p && count < max;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        pids[count++] = (pid_t)pid;
        p = end + strspn(end, "\n");
    }
    return count;
}

/*
 * The launcher died (and was reaped) after a request was sent: whether it
 * started the call's child first.  The call's cgroup held nothing before,
 * so what it holds now is that child: each process there is killed by a
 * pidfd taken while it was still listed (not by cgroup.kill: the kernel
 * kills every later child created in a cgroup that was, and the call
 * may still start in it).  Returns 0 (nothing there), 1 (killed) or
 * -errno (cannot tell: no v2 cgroup to look in).
 */
static int
kill_unannounced(const struct spawn_options *o)
{
    if (!o->join || o->join->into < 0)
        return -ESRCH;
    pid_t pids[64];
    int n = listed(o->join->into, pids, 64);
    for (int i = 0; i < n; i++) {
        int pidfd = (int)syscall(SYS_pidfd_open, pids[i], 0);
        pid_t again[64];
        int m = pidfd < 0 ? 0 : listed(o->join->into, again, 64);
        bool still = false;
        for (int j = 0; j < m && !still; j++)
            still = again[j] == pids[i];
        if (still)
            syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        if (pidfd >= 0)
            close(pidfd);
    }
    return n < 0 ? n : n > 0;
}

/* One request to the running launcher.  Returns 0 (started), a positive
 * errno (refused: nothing started), -EPIPE (the launcher was gone before
 * the request: nothing started) or another -errno (gone or wedged after
 * it: a child may exist). */
static int
request(const struct spawn_options *o, pid_t *pid, int *pidfd)
{
    int fds[SANDBOX_LAUNCHER_MAX_FDS];
    size_t nfds = 0, len = 0;
    uint64_t id = ++L.next_id;
    char *buf = build_request(o, id, &len, fds, &nfds);
    /* a call too long for one request is this call's matter: not E2BIG,
     * which from the launcher means the kernel's clone3 is too old */
    if (buf == NULL)
        return errno == E2BIG ? EMSGSIZE : errno;
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    ssize_t sent = fd_pass_send(L.sock, &iov, 1, fds, nfds);
    free(buf);
    if (sent == -ECONNRESET || sent == -ENOTCONN)
        sent = -EPIPE;
    if (sent < 0)
        return sent == -EPIPE ? -EPIPE : (int)-sent;
    return await_reply(id, pid, pidfd);
}

/* The kernel cannot do what the launcher asks of it (clone3, its flags):
 * no launcher again for this server. */
static bool
kernel_cannot(int err)
{
    return err == ENOSYS || err == EINVAL || err == E2BIG || err == EOPNOTSUPP;
}

int
launcher_client_spawn(const struct spawn_options *o, pid_t *pid, int *pidfd)
{
    if (L.unsupported || !launchable(o))
        return 1;
    if (L.sock >= 0 && strcmp(L.file, o->file) != 0)
        return 1; /* another helper than the launcher's (tests): the other way */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (L.sock < 0) {
            int rc = start_launcher(o->file);
            if (rc < 0) {
                /* not once per call: a helper that is no launcher stays one */
                L.unsupported = true;
                log_warn("sandbox launcher: cannot start %s (%s); every call starts its helper "
                         "directly",
                         o->file, strerror(-rc));
                return 1;
            }
        }
        int rc = request(o, pid, pidfd);
        if (rc == 0)
            return 0;
        if (rc > 0) {
            log_warn("sandbox launcher: refused a call (%s); it starts its helper directly%s",
                     strerror(rc), kernel_cannot(rc) ? ", and so will every later call" : "");
            L.unsupported = kernel_cannot(rc);
            return 1;
        }
        pid_t gone = L.pid;
        char how_buf[48];
        const char *how = how_it_ended(how_buf, sizeof how_buf);
        forget(true); /* dead and reaped: any clone3 of it is complete */
        if (rc != -EPIPE) {
            /* it may have started the child before it went: that child
             * must not run beside the one started next */
            int k = kill_unannounced(o);
            log_warn("sandbox launcher (pid %d, %s) failed during a call (%s)%s", (int)gone, how,
                     strerror(-rc),
                     k == 0   ? "; it started nothing: starting a new one"
                     : k == 1 ? "; the child it started was killed and the call fails, so that "
                                "its command cannot run twice"
                              : "; the call fails: a child of it may have started");
            if (k != 0)
                return k == 1 ? -ECANCELED : rc;
            continue;
        }
        log_warn("sandbox launcher (pid %d) has gone (%s); starting a new one", (int)gone, how);
    }
    return 1;
}
