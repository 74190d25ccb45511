/*
 * doctor: what `execgate --doctor` prints about this machine, for a
 * person: the per-call cgroups the server would use (call_cgroup.h) and,
 * where it has them, how a call's first process gets into its cgroup and
 * how long that start took here.
 */
#ifndef EXECGATE_SERVER_DOCTOR_H
#define EXECGATE_SERVER_DOCTOR_H

#include <stdio.h>

/*
 * Probes as a starting server would (call_cgroup_probe), prints its line,
 * then, where calls get cgroups, makes one, starts this program
 * (/proc/self/exe --version, its output discarded) in it after a quiet
 * pause (DOCTOR_QUIET_MS) as a call's first process starts, times that
 * start, and prints one more line: how the process got in, the time,
 * and, where it had to write cgroup.procs, what the favordynmods mount
 * option would change.  Blocks for the pause.  Returns 0, or 1 when out
 * of memory or the start failed (said on out).
 */
int doctor_print(FILE *out);

#endif
