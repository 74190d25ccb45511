/*
 * call_cgroup_probe: what this machine's cgroups allow the calls, found
 * once at start-up.  call_cgroup.h includes it: everyone but the probe
 * itself sees both through that header.
 */
#ifndef EXECGATE_SERVER_CALL_CGROUP_PROBE_H
#define EXECGATE_SERVER_CALL_CGROUP_PROBE_H

#include <stdbool.h>

enum call_cgroup_mode {
    CALL_CGROUP_NONE,
    CALL_CGROUP_UNIFIED,
    CALL_CGROUP_HYBRID,
};

struct call_cgroup_probe;

/*
 * Finds what this machine allows, from /proc/self/cgroup and
 * /proc/self/mountinfo, by trying it (a directory is made and removed in
 * each hierarchy).  May move the server into a leaf cgroup (UNIFIED, see
 * above); that is never undone.  Every failure is a probe of mode NONE
 * whose description says why; returns NULL only when out of memory.
 */
struct call_cgroup_probe *call_cgroup_probe(void);

/* The same, reading proc_cgroup and mountinfo in place of /proc/self's
 * (tests describe other machines' layouts with them). */
struct call_cgroup_probe *call_cgroup_probe_at(const char *proc_cgroup, const char *mountinfo);

enum call_cgroup_mode call_cgroup_mode(const struct call_cgroup_probe *p);

/*
 * One line for the start-up log and --doctor (borrowed, lives as long as
 * p), e.g. "cgroups: hybrid (v2 /sys/fs/cgroup/unified for kill, v1 pids
 * and memory)" or "cgroups: unavailable: WHY; calls are bounded by the PID
 * namespace and RLIMIT_NPROC only".
 */
const char *call_cgroup_describe(const struct call_cgroup_probe *p);

/*
 * Why the first process of a call cannot be created in its v2 cgroup
 * (borrowed, lives as long as p), or NULL when it can or p has no v2
 * hierarchy.  The probe finds it by trying: a child created by clone3
 * with CLONE_INTO_CGROUP in a trial directory must exit normally.  It is
 * "EXECGATE_TEST_NO_CLONE3=1" when that variable is in the environment,
 * for tests of the other way.
 */
const char *call_cgroup_probe_into_refused(const struct call_cgroup_probe *p);

/* Whether some cgroup hierarchy is mounted with the favordynmods option
 * (/proc/self/mountinfo): then no write to cgroup.procs waits for an RCU
 * grace period (struct call_cgroup_join says when one would). */
bool call_cgroup_probe_favordynmods(const struct call_cgroup_probe *p);

/* Frees p; every call cgroup made from it must be freed first.  NULL is a
 * no-op. */
void call_cgroup_probe_free(struct call_cgroup_probe *p);

#endif
