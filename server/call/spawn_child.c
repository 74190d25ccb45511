/*
 * spawn_child: posix_spawn starts, and every child's exit through its
 * pidfd.  Starts that need more than posix_spawn offers are
 * spawn_filtered.c's.
 */
#include "server/call/spawn_child.h"

#include "common/list.h"
#include "common/log.h"
#include "server/call/launcher_client.h"
#include "server/call/spawn_filtered.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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
    struct list node;
};

static struct list unreaped = {&unreaped, &unreaped};

pid_t
spawn_pid(const struct spawn_child *c)
{
    return c->pid;
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
    list_unlink(&c->node);
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
    struct list *pos;
    list_foreach(pos, &unreaped)
    {
        struct spawn_child *c = list_entry(pos, struct spawn_child, node);
        if (c->pid == pid) {
            try_reap(c);
            return true;
        }
    }
    return false;
}

/* ---- the start ---- */

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
        if (spawn_options_fd_given(o, t))
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
    /* before the fd actions, which may close or overwrite it */
    if (o->cwd_fd)
        rc = -posix_spawn_file_actions_addfchdir_np(&fa, *o->cwd_fd);
    if (rc == 0)
        rc = o->n_fds && !dups ? -ENOMEM : add_fds(&fa, o, dups, &max_at);
    if (rc == 0 && o->cwd && !o->cwd_fd)
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

int
spawn_start(uv_loop_t *loop, const struct spawn_options *o, spawn_exit_cb on_exit, void *data,
            struct spawn_child **out)
{
    *out = NULL;
    struct spawn_child *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    list_init(&c->node);
    pid_t pid = -1;
    int listener = -1;
    int pidfd = -1;
    int rc = o->via_launcher ? launcher_client_spawn(o, &pid, &pidfd) : 1;
    if (rc <= 0) {
        /* started by the launcher (its pidfd came with it), or failed */
    } else if (o->exec_listener || o->exec_fd || o->die_with_server || o->join) {
        if (o->exec_listener)
            *o->exec_listener = -1;
        rc = spawn_filtered_start(o, &pid, &listener);
    } else {
        rc = start_process(o, &pid);
    }
    if (rc < 0) {
        free(c);
        return rc;
    }
    /* The child cannot have been reaped yet (nothing waits for unknown
     * pids but the subreaper, on the loop), so the pid is still it. */
    if (pidfd < 0)
        pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* close-on-exec */
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
    list_insert_head(&unreaped, &c->node);
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
    list_unlink(&c->node);
    uv_close((uv_handle_t *)&c->poll, on_poll_closed);
}
