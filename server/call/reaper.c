#include "server/call/reaper.h"

#include "common/log.h"
#include "server/call/spawn_child.h"

#include <stdbool.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct reaper {
    uv_signal_t sigchld;
};

/*
 * Why this never takes the exit of a child someone waits for: the server
 * starts its children only through spawn_child.c (libuv's uv_spawn is not used:
 * it would fork the whole server), and spawn_reap hands each exit of those
 * to spawn_child.c's own callback.  Every other child is an orphan re-parented
 * here, or a fork outside the loop (exec_watch_probe, which waits for its
 * own before the loop runs): reaped here.  waitid(WNOWAIT) names one exited
 * child without reaping it; a zombie's pid cannot be reused, and the loop
 * runs on one thread, so the pid is still that zombie when it is reaped by
 * that pid.  So one SIGCHLD costs a system call per exited child plus one,
 * where listing the children from /proc cost an open and a read per thread
 * of the server.
 */
static void
on_sigchld(uv_signal_t *h, int signum)
{
    pid_t last = 0;
    for (;;) {
        siginfo_t info;
        memset(&info, 0, sizeof(info));
        if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 || info.si_pid == 0)
            return;
        pid_t pid = info.si_pid;
        /* spawn_child.c said it was its own and still did not reap it (an error
         * it logged): leave the rest to the next SIGCHLD rather than spin */
        if (pid == last)
            return;
        last = pid;
        if (spawn_reap(pid))
            continue;
        memset(&info, 0, sizeof(info));
        if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | __WALL) == 0 && info.si_pid > 0)
            log_debug("reaped orphan %d", (int)pid);
    }
}

static void
on_closed(uv_handle_t *h)
{
    free(h->data);
}

struct reaper *
reaper_new(uv_loop_t *loop, char **err)
{
    *err = NULL;
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        if (asprintf(err, "prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno)) < 0)
            *err = NULL;
        return NULL;
    }
    struct reaper *r = calloc(1, sizeof(*r));
    int rc = r ? uv_signal_init(loop, &r->sigchld) : UV_ENOMEM;
    if (rc == 0) {
        r->sigchld.data = r;
        rc = uv_signal_start(&r->sigchld, on_sigchld, SIGCHLD);
        if (rc < 0) {
            uv_close((uv_handle_t *)&r->sigchld, on_closed);
            r = NULL;
        }
    } else {
        free(r);
        r = NULL;
    }
    if (!r && asprintf(err, "watching SIGCHLD: %s", uv_strerror(rc)) < 0)
        *err = NULL;
    return r;
}

void
reaper_close(struct reaper *r)
{
    if (r)
        uv_close((uv_handle_t *)&r->sigchld, on_closed);
}

/* Whether a child of ours, running or a zombie, is in group pgid: waitid
 * finds none (ECHILD) or some (0, si_pid 0 while they all run); WNOWAIT
 * leaves a zombie to its reaper.  While such a child exists, even a
 * zombie, the group's number cannot go to another group.  One system call,
 * where listing the children from /proc took an open per thread and a
 * getpgid per child. */
static bool
has_child_in(pid_t pgid)
{
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    return waitid(P_PGID, (id_t)pgid, &info, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0;
}

int
reaper_signal_groups(const pid_t *pgids, size_t n, int sig)
{
    int signalled = 0;
    for (size_t g = 0; g < n; g++) {
        if (pgids[g] <= 1 || !has_child_in(pgids[g]))
            continue;
        signalled++;
        if (kill(-pgids[g], sig) < 0 && errno != ESRCH)
            log_warn("kill group %d: %s", (int)pgids[g], strerror(errno));
    }
    return signalled;
}

int
reaper_signal_group(pid_t pgid, int sig)
{
    return reaper_signal_groups(&pgid, 1, sig);
}
