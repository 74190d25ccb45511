#include "server/call_cgroup_pool.h"

#include "server/call_cgroup.h"
#include "server/log.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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
