#include "reaper.h"

#include "log.h"

#include <dirent.h>
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
    uv_loop_t *loop;
};

/* The server's children: the pids listed in /proc/self/task/TID/children
 * for each of its threads (orphans are re-parented to one of them).  A
 * malloc'd array (*n entries), or NULL (*n 0) when none or unreadable. */
static pid_t *
list_children(size_t *n)
{
    *n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return NULL;
    pid_t *pids = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char *path = NULL;
        if (asprintf(&path, "/proc/self/task/%s/children", e->d_name) < 0)
            continue;
        FILE *f = fopen(path, "re");
        free(path);
        if (!f)
            continue;
        long pid;
        while (fscanf(f, "%ld", &pid) == 1) {
            if (*n == cap) {
                size_t c = cap ? cap * 2 : 16;
                pid_t *g = realloc(pids, c * sizeof(pid_t));
                if (!g)
                    break;
                pids = g;
                cap = c;
            }
            pids[(*n)++] = (pid_t)pid;
        }
        fclose(f);
    }
    closedir(d);
    return pids;
}

struct owned {
    pid_t *pids;
    size_t n, cap;
    bool oom;
};

static void
collect_process(uv_handle_t *h, void *arg)
{
    struct owned *o = arg;
    if (h->type != UV_PROCESS || uv_is_closing(h))
        return;
    if (o->n == o->cap) {
        size_t c = o->cap ? o->cap * 2 : 16;
        pid_t *g = realloc(o->pids, c * sizeof(pid_t));
        if (!g) {
            o->oom = true;
            return;
        }
        o->pids = g;
        o->cap = c;
    }
    o->pids[o->n++] = uv_process_get_pid((uv_process_t *)h);
}

/*
 * Why this does not steal libuv's children: libuv reaps each uv_process_t
 * by waitpid(its pid, WNOHANG) when SIGCHLD arrives (it never waits for
 * "any child"), and the loop runs on one thread, so the set of
 * uv_process_t handles (uv_walk) is exact while this runs — every child
 * libuv spawned and has not yet reaped has its handle open.  (A handle is
 * open until its exit is reaped and it is closed; a closing handle's child
 * has already been reaped.)  Every other child is an orphan re-parented
 * here, or a child of a fork outside libuv (exec_watch_probe, which waits
 * for its own before the loop runs): those are reaped here by their pids,
 * with WNOHANG, so a child still running is left alone.
 */
static void
on_sigchld(uv_signal_t *h, int signum)
{
    struct reaper *r = h->data;
    size_t n = 0;
    pid_t *kids = list_children(&n);
    if (!kids)
        return;
    struct owned o = {0};
    uv_walk(r->loop, collect_process, &o);
    for (size_t i = 0; i < n; i++) {
        bool libuv = false;
        for (size_t j = 0; j < o.n && !libuv; j++)
            libuv = o.pids[j] == kids[i];
        /* a handle that could not be recorded (out of memory): leave all
         * to the next SIGCHLD rather than risk taking libuv's */
        if (libuv || o.oom)
            continue;
        int st;
        pid_t got = waitpid(kids[i], &st, WNOHANG);
        if (got > 0)
            log_debug("reaped orphan %d", (int)got);
    }
    free(o.pids);
    free(kids);
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
        r->loop = loop;
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

int
reaper_signal_groups(const pid_t *pgids, size_t n, int sig)
{
    if (n == 0)
        return 0;
    size_t nk = 0;
    pid_t *kids = list_children(&nk);
    pid_t *kid_groups = nk ? calloc(nk, sizeof(pid_t)) : NULL;
    for (size_t i = 0; kid_groups && i < nk; i++)
        kid_groups[i] = getpgid(kids[i]);
    int signalled = 0;
    for (size_t g = 0; kid_groups && g < n; g++) {
        bool ours = false;
        for (size_t i = 0; i < nk && !ours; i++)
            ours = pgids[g] > 1 && kid_groups[i] == pgids[g];
        if (!ours)
            continue;
        signalled++;
        if (kill(-pgids[g], sig) < 0 && errno != ESRCH)
            log_warn("kill group %d: %s", (int)pgids[g], strerror(errno));
    }
    free(kid_groups);
    free(kids);
    return signalled;
}

int
reaper_signal_group(pid_t pgid, int sig)
{
    return reaper_signal_groups(&pgid, 1, sig);
}
