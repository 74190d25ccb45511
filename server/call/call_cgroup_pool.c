#include "server/call/call_cgroup_pool.h"

#include "server/call/call_cgroup.h"
#include "common/log.h"
#include "server/call/spawn_child.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <stdio.h>

struct call_cgroup_pool {
    const struct call_cgroup_probe *probe;
    uint64_t max_processes, max_memory;
    struct call_cgroup *kept[CALL_CGROUP_POOL_MAX];
    size_t n_kept;
    bool stopped;
};

struct call_cgroup_pool *
call_cgroup_pool_new(const struct call_cgroup_probe *probe, uint64_t max_processes,
                     uint64_t max_memory)
{
    if (!probe || call_cgroup_mode(probe) == CALL_CGROUP_NONE)
        return NULL;
    struct call_cgroup_pool *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return NULL;
    pool->probe = probe;
    pool->max_processes = max_processes;
    pool->max_memory = max_memory;
    return pool;
}

struct call_cgroup *
call_cgroup_pool_get(struct call_cgroup_pool *pool, const char *name, char **err)
{
    *err = NULL;
    if (pool->n_kept == 0)
        return call_cgroup_new(pool->probe, name, pool->max_processes, pool->max_memory, err);
    struct call_cgroup *cg = pool->kept[--pool->n_kept];
    if (call_cgroup_unpark(cg, err) < 0) {
        call_cgroup_free(cg);
        return NULL;
    }
    return cg;
}

void
call_cgroup_pool_put(struct call_cgroup_pool *pool, struct call_cgroup *cg)
{
    if (!cg)
        return;
    if (pool && !pool->stopped && pool->n_kept < CALL_CGROUP_POOL_MAX &&
        call_cgroup_empty(cg) == 1) {
        call_cgroup_park(cg);
        pool->kept[pool->n_kept++] = cg;
        return;
    }
    int rc = call_cgroup_kill(cg);
    if (rc < 0)
        log_warn("call: cannot kill what is left in its cgroup: %s", strerror(-rc));
    call_cgroup_free(cg);
}

void
call_cgroup_pool_stop(struct call_cgroup_pool *pool)
{
    if (pool)
        pool->stopped = true;
}

void
call_cgroup_pool_free(struct call_cgroup_pool *pool)
{
    if (!pool)
        return;
    while (pool->n_kept > 0)
        call_cgroup_free(pool->kept[--pool->n_kept]);
    free(pool);
}

/* ---- the guard ---- */

static void
on_guard_exit(struct spawn_child *c, int64_t exit_status, int term_signal)
{
    struct spawn_child **slot = spawn_data(c);
    log_warn("the cgroup guard ended (status %lld, signal %d): what calls leave if the server "
             "is killed is no longer cleaned up",
             (long long)exit_status, term_signal);
    spawn_close(c, NULL);
    *slot = NULL;
}

/*
 * The guard is this program again (`execgate --cgroup-guard PID BASE...`),
 * in a session of its own, with nothing of the server's but stderr.  It
 * waits for the server to end, however it ends (kill -9 included), then
 * kills and removes every call cgroup the server left: what escaped both
 * PR_SET_PDEATHSIG and the PID namespace (a setsid child of an escalated
 * program or of a danger-full-access command) goes with it.
 */
void
call_cgroup_guard_start(uv_loop_t *loop, const struct call_cgroup_probe *probe,
                        struct spawn_child **guard)
{
    size_t n = 0;
    const char *const *bases = call_cgroup_probe_bases(probe, &n);
    if (n == 0)
        return;
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char pid[24];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    char *argv[4 + 8] = {self, (char *)"--cgroup-guard", pid};
    for (size_t i = 0; i < n && i < 8; i++)
        argv[3 + i] = (char *)bases[i];
    const struct spawn_fd fds[] = {{STDERR_FILENO, STDERR_FILENO}};
    struct spawn_options o = {
        .file = self, .argv = argv, .fds = fds, .n_fds = 1, .new_session = true};
    int rc = len > 0 ? 0 : -errno;
    if (rc == 0) {
        self[len] = '\0';
        rc = spawn_start(loop, &o, on_guard_exit, guard, guard);
    }
    if (rc < 0)
        log_warn("cannot start the cgroup guard (%s): if the server is killed, what its calls "
                 "left in their cgroups stays",
                 strerror(-rc));
}

void
call_cgroup_guard_release(struct spawn_child **guard)
{
    /* it outlives the server, and ends by itself when the server has */
    if (*guard)
        spawn_close(*guard, NULL);
    *guard = NULL;
}
