/*
 * doctor: `execgate --doctor`.  The timed start goes through the same
 * spawn_filtered_start as every call's sandbox helper.
 */
#include "doctor.h"

#include "call_cgroup.h"
#include "spawn_child.h"
#include "spawn_filtered.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

/* How long nothing happens before the timed start: the kernel's cgroup
 * lock waits for an RCU grace period when no other writer came shortly
 * before, a few to tens of milliseconds (struct call_cgroup_join). */
#define DOCTOR_QUIET_MS 200

static double
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* Starts /proc/self/exe --version in cg after the quiet pause and reaps
 * it; *ms is how long the start took (to its exec).  0 or -errno. */
static int
timed_start(const struct call_cgroup *cg, double *ms)
{
    static char name[] = "execgate", version[] = "--version";
    char *argv[] = {name, version, NULL};
    struct spawn_options o = {.file = "/proc/self/exe",
                              .argv = argv,
                              .die_with_server = true,
                              .join = call_cgroup_join(cg)};
    struct timespec quiet = {0, DOCTOR_QUIET_MS * 1000000L};
    while (nanosleep(&quiet, &quiet) < 0 && errno == EINTR)
        ;
    pid_t pid = -1;
    int listener = -1;
    double start = now_ms();
    int rc = spawn_filtered_start(&o, &pid, &listener);
    *ms = now_ms() - start;
    while (rc == 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return rc;
}

/* How a call's first process gets into its cgroup, and the timed start. */
static int
print_join(FILE *out, const struct call_cgroup_probe *p)
{
    char *err = NULL;
    struct call_cgroup *cg = call_cgroup_new(p, "doctor", 0, 0, &err);
    if (!cg) {
        fprintf(out, "cgroups: %s\n", err ? err : "out of memory");
        free(err);
        return 1;
    }
    const struct call_cgroup_join *j = call_cgroup_join(cg);
    bool v2 = j->procs >= 0, v1 = j->n_tasks > 0;
    bool in_place = j->into >= 0 && spawn_filtered_creates_in_cgroup();
    double ms = 0;
    int rc = timed_start(cg, &ms);
    call_cgroup_free(cg);
    if (rc < 0) {
        fprintf(out, "cgroups: a call's first process could not start in its cgroup: %s\n",
                strerror(-rc));
        return 1;
    }
    if (!v2 || in_place) {
        fprintf(out,
                "cgroups: a call's first process %s: it started in %.1f ms after %d ms of "
                "quiet\n",
                !v2  ? "moves its one thread into each cgroup of its call (tasks)"
                : v1 ? "is created in its v2 cgroup (clone3 with CLONE_INTO_CGROUP) and "
                       "moves its one thread into the v1 ones (tasks)"
                     : "is created in its cgroup (clone3 with CLONE_INTO_CGROUP)",
                ms, DOCTOR_QUIET_MS);
        return 0;
    }
    const char *refused = call_cgroup_probe_into_refused(p);
    fprintf(out,
            "cgroups: a call's first process joins its v2 cgroup by writing cgroup.procs (%s): "
            "it started in %.1f ms after %d ms of quiet, %s\n",
            refused ? refused : "clone3 is used on x86_64 only", ms, DOCTOR_QUIET_MS,
            call_cgroup_probe_favordynmods(p)
                ? "and a cgroup hierarchy is mounted with favordynmods, so that write does not "
                  "wait for the kernel"
                : "which can include a wait for the kernel's cgroup lock; the kernel's "
                  "favordynmods cgroup mount option (not set here) is meant to remove that "
                  "wait, at a cost to every fork and exit on the machine (docs/server.md)");
    return 0;
}

int
doctor_print(FILE *out)
{
    struct call_cgroup_probe *p = call_cgroup_probe();
    if (!p) {
        fprintf(out, "cgroups: out of memory\n");
        return 1;
    }
    fprintf(out, "%s\n", call_cgroup_describe(p));
    int rc = call_cgroup_mode(p) == CALL_CGROUP_NONE ? 0 : print_join(out, p);
    call_cgroup_probe_free(p);
    return rc;
}
