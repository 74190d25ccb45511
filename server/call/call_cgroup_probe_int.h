/*
 * call_cgroup_probe_int: what call_cgroup's probe found, shared by the probe
 * (call_cgroup_probe.c: reading /proc, trying each hierarchy, choosing how
 * to kill) and each call's cgroup (call_cgroup.c), which makes its
 * directories in these hierarchies and kills the way chosen here.  Only
 * those two files include it; everyone else sees call_cgroup.h (and
 * through it call_cgroup_probe.h).
 */
#ifndef EXECGATE_SERVER_CALL_CGROUP_PROBE_INT_H
#define EXECGATE_SERVER_CALL_CGROUP_PROBE_INT_H

#include "server/call/call_cgroup_probe.h"

#include <stdbool.h>
#include <stddef.h>

/* The most hierarchies a call uses: v2, v1 pids, v1 memory, v1 freezer. */
#define MAX_HIERS 4

/* The v1 controllers this module uses, by index. */
enum ctl { CTL_PIDS, CTL_MEMORY, CTL_FREEZER, N_CTL };

enum kill_how { KILL_CGROUP_KILL, KILL_V2_FREEZE, KILL_V1_FREEZER, KILL_SIGNAL };

/* One hierarchy the calls use: each call gets a directory under base. */
struct hier {
    bool v2;
    bool pids, memory, freezer; /* what its call directories carry */
    char *base;                 /* absolute, e.g. /sys/fs/cgroup/pids */
    char *rel;                  /* base as /proc/PID/cgroup names it, e.g. "/" */
    enum ctl ctl;               /* v1: the controller /proc/PID/cgroup lists it by */
};

struct call_cgroup_probe {
    enum call_cgroup_mode mode;
    enum kill_how kill;
    char *description;
    char *moved_to;           /* the leaf the server moved itself into, or NULL */
    char *into_refused;       /* why no process is created in a v2 cgroup, or NULL */
    bool favordynmods;        /* some cgroup hierarchy is mounted with it */
    struct hier h[MAX_HIERS]; /* the v2 one first, when there is one */
    size_t n;
};

/* The name /proc/PID/cgroup lists the v1 controller c by ("pids"...). */
const char *call_cgroup_ctl_name(enum ctl c);

#endif
