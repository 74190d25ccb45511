/*
 * call_cgroup: a cgroup of its own for each `shell` call, so that all the
 * processes a call starts are counted, bounded (number of processes,
 * memory) and killed as one set, whatever sessions, process groups or
 * parents they give themselves.
 *
 * call_cgroup_probe, once at start, finds what the machine offers:
 *   UNIFIED  cgroup v2 alone: one directory per call under the server's own
 *            v2 cgroup, with pids.max, memory.max and memory.swap.max 0
 *            (when there is a memory limit).  The v2 rule that a
 *            cgroup with processes cannot enable controllers for its
 *            children is met without touching anyone else's processes:
 *            the controllers are enabled in the server's cgroup where the
 *            kernel allows it (the root cgroup, or a cgroup that already
 *            has them); where the server's cgroup holds the server and
 *            nothing else, the server first moves itself into a leaf
 *            child, <own>/execgate-PID-server (the usual answer to that
 *            rule in a delegated cgroup); anything else is NONE.
 *   HYBRID   the v1 pids and memory hierarchies, each with a directory per
 *            call under the server's own v1 cgroup (pids.max,
 *            memory.limit_in_bytes, and memory.memsw.limit_in_bytes where
 *            swap is accounted), plus a directory under the server's v2
 *            cgroup when the v2 hierarchy is mounted and writable, used
 *            only for cgroup.kill (or cgroup.freeze) and cgroup.events.
 *            Without v2 (v1 alone) a v1 freezer directory takes its place
 *            for killing, when there is a freezer hierarchy.
 *   NONE     nothing usable (not root and nothing delegated, read-only
 *            mounts, a controller missing, or EXECGATE_TEST_NO_CGROUP=1).
 *
 * A call's directories are named execgate-PID-N (the server's pid, a
 * counter), the same name in each hierarchy.  Killing uses cgroup.kill
 * where the kernel has it; else the set is frozen (v2 cgroup.freeze, else
 * the v1 freezer) and each listed process is sent SIGKILL, a pass at a
 * time.  For tests, EXECGATE_TEST_CGROUP_KILL=cgroup.kill, cgroup.freeze,
 * freezer or signal forces one of those ways (the probe fails when the
 * machine lacks it).
 *
 * Lifetime: probe, then for each call new, join (its first process, as it
 * is created or before it execs or forks: struct call_cgroup_join), kill,
 * wait for empty, free; probe_free last.  Nothing here blocks for long:
 * kill returns after one pass, and free waits at most a few tens of
 * milliseconds (then leaves the directories and says so).  Messages go to
 * stderr through log.h.
 */
#ifndef EXECGATE_SERVER_CALL_CGROUP_H
#define EXECGATE_SERVER_CALL_CGROUP_H

#include "server/call/call_cgroup_probe.h" /* the probe a call cgroup is made from */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct call_cgroup;

/*
 * Makes the directories of a new call cgroup with at most max_processes
 * processes (threads count: it is pids.max) and max_memory_bytes of
 * memory (swap included where the kernel accounts it); 0 means no limit.
 * name is what messages call it (e.g. the request id); the directories'
 * own names never come from it.  p is borrowed and must outlive the
 * result.  Returns NULL with *err (malloc'd, or NULL when out of memory)
 * when p is of mode NONE or a directory or limit cannot be made; nothing
 * is left behind then.
 */
struct call_cgroup *call_cgroup_new(const struct call_cgroup_probe *p, const char *name,
                                    uint64_t max_processes, uint64_t max_memory_bytes, char **err);

/*
 * How a child gets into every directory of a call cgroup before it can
 * start anything.  Each fd is close-on-exec, or -1 where cg has no such
 * file:
 *
 *   into   the v2 directory (O_RDONLY | O_DIRECTORY): the child is created
 *          in it, by clone3 with CLONE_INTO_CGROUP (Linux 5.7); -1 also
 *          where the probe found that refused
 *          (call_cgroup_probe_into_refused);
 *   procs  that directory's cgroup.procs (O_WRONLY): a child not created
 *          in into writes "0" to it first instead;
 *   tasks  the tasks file (O_WRONLY) of each v1 directory, n_tasks of
 *          them: the child writes "0" to each, first thing.
 *
 * A write is one write(2), async-signal-safe; a failed one must end the
 * child.  "0" in a v1 tasks file moves the writing thread only, so the
 * child must be one thread when it writes (a fork, or a clone without
 * CLONE_THREAD, before it starts threads): then the thread is the process.
 * Why not "0" to every cgroup.procs: that moves a thread group, which the
 * kernel does under its global cgroup_threadgroup_rwsem taken for
 * writing, and the first writer after a quiet moment waits for an RCU
 * grace period (4-28 ms measured on a 2-core machine at HZ 250); a
 * process created in place or one thread moved does not take that lock
 * for writing.
 */
struct call_cgroup_join {
    int into;
    int procs;
    const int *tasks;
    size_t n_tasks;
};

/* cg's join (borrowed, and so are its fds: valid until call_cgroup_park
 * or call_cgroup_free). */
const struct call_cgroup_join *call_cgroup_join(const struct call_cgroup *cg);

/*
 * Kills every process in cg and returns without waiting for them to die.
 * With cgroup.kill one call is enough, processes forked meanwhile
 * included; with the other ways, one call is one pass (freeze, SIGKILL each
 * listed process that is verifiably in cg, thaw for v1), so call it again
 * while call_cgroup_empty says 0.  Returns 0 or a negative errno.
 */
int call_cgroup_kill(struct call_cgroup *cg);

/*
 * 1 when no process is left in cg (exited processes not yet reaped do not
 * count), 0 when some are, a negative errno when that cannot be read.
 */
int call_cgroup_empty(const struct call_cgroup *cg);

/*
 * The v2 directory's cgroup.events, open and close-on-exec (borrowed), or
 * -1 when cg has no v2 directory.  It polls POLLPRI (uv_poll with
 * UV_PRIORITIZED) each time its content changes, e.g. when the last
 * process leaves; call_cgroup_empty reads it again, which re-arms it.
 * Without it, poll call_cgroup_empty on a timer.
 */
int call_cgroup_events_fd(const struct call_cgroup *cg);

/* pids.current and pids.peak (the most processes at once) of cg, or a
 * negative errno (-ENOENT where the kernel has no pids.peak). */
int64_t call_cgroup_pids_current(const struct call_cgroup *cg);
int64_t call_cgroup_pids_peak(const struct call_cgroup *cg);

/* The absolute paths of cg's directories (borrowed: valid until
 * call_cgroup_free), *n of them, for logs and tests. */
const char *const *call_cgroup_dirs(const struct call_cgroup *cg, size_t *n);

/*
 * An empty cgroup kept for a later call holds no fds: park closes its
 * cgroup.procs and cgroup.events fds, unpark opens them again (0, or -1
 * with *err malloc'd: then free it).
 */
void call_cgroup_park(struct call_cgroup *cg);
int call_cgroup_unpark(struct call_cgroup *cg, char **err);

/*
 * Removes cg's directories and frees cg.  A directory that still holds
 * processes is killed and tried again a bounded number of times (at most
 * about 50 ms in all, so call it once call_cgroup_empty says 1), then left
 * in place with one warning in the log.  NULL is a no-op.
 */
void call_cgroup_free(struct call_cgroup *cg);

/* The directories the calls' cgroups are made in, one per hierarchy
 * (borrowed: valid until p is freed; none for mode NONE). */
const char *const *call_cgroup_probe_bases(const struct call_cgroup_probe *p, size_t *n);

/*
 * For a server that died without ending its calls: kills every process in
 * each call cgroup it made (execgate-SERVER-N under each of bases) and
 * removes them, waiting a bounded time (about 0.5 s per cgroup at most).
 * cgroup.kill where the directory has it; else SIGKILL to each listed
 * process, pinned by a pidfd and checked to be still inside.  Returns how
 * many call cgroups were found, or a negative errno when bases[0] cannot
 * be read.  Blocks: for the guard process, not the server's loop.
 */
int call_cgroup_reap_left(const char *const *bases, size_t n, pid_t server);

#endif
