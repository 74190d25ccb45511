/*
 * call_cgroup_pool: the calls' cgroups, made on demand and kept for reuse,
 * and the guard that removes them if the server dies.
 *
 * Making and removing the directories and setting the limits cost the
 * loop more than the rest of an `echo hi` call, so a cgroup its call left
 * empty is parked for the next call.  One that had to be killed is
 * removed: a kill leaves marks a later call must not meet (killed by
 * cgroup.freeze the cgroup stays frozen, and so would the next call's
 * processes).
 */
#ifndef EXECGATE_SERVER_CALL_CGROUP_POOL_H
#define EXECGATE_SERVER_CALL_CGROUP_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct call_cgroup;
struct call_cgroup_probe;
struct call_cgroup_pool;

/* Emptied call cgroups kept for reuse (each holds a few fds). */
#define CALL_CGROUP_POOL_MAX 16

/*
 * A pool for cgroups under probe (borrowed; outlives the pool), each
 * limited to max_processes and max_memory (0: no limit).  NULL when the
 * machine offers no per-call cgroups (probe NULL or its mode none) or
 * out of memory.
 */
struct call_cgroup_pool *call_cgroup_pool_new(const struct call_cgroup_probe *probe,
                                              uint64_t max_processes, uint64_t max_memory);

/* A cgroup for a call named name (a kept one, or a new one).  NULL with
 * *err (malloc'd; NULL: out of memory) when none can be had. */
struct call_cgroup *call_cgroup_pool_get(struct call_cgroup_pool *pool, const char *name,
                                         char **err);

/* The call of cg has ended: whatever it left in cg is killed, or cg, left
 * empty, is kept.  Takes cg; NULL pool or cg: cg is only freed. */
void call_cgroup_pool_put(struct call_cgroup_pool *pool, struct call_cgroup *cg);

/* From now on nothing is kept (the server shuts down).  Cannot fail. */
void call_cgroup_pool_stop(struct call_cgroup_pool *pool);

/* Frees the pool and the cgroups it keeps.  NULL is a no-op. */
void call_cgroup_pool_free(struct call_cgroup_pool *pool);

/*
 * The guard: this program again (`execgate --cgroup-guard PID BASE...`),
 * in a session of its own, with nothing of the server's but stderr.  It
 * waits for the server to end, however it ends (kill -9 included), then
 * kills and removes every call cgroup under probe's bases the server
 * left.  *guard is the guard's child, NULL when there is none (no bases,
 * or it could not start: logged) or once it has ended.
 * call_cgroup_guard_release lets it go when the server ends.
 */
struct spawn_child;
void call_cgroup_guard_start(uv_loop_t *loop, const struct call_cgroup_probe *probe,
                             struct spawn_child **guard);
void call_cgroup_guard_release(struct spawn_child **guard);

#endif
