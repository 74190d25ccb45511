/*
 * doctor: `execgate --doctor`, what a server started with the same options
 * and environment would use, and whether this machine lets it enforce
 * everything it promises.
 *
 * Each check tries the thing rather than reading version numbers: the
 * programs are checked as the start checks them, the rules are loaded as
 * the server loads them, the kernel's sandbox features are found by
 * running the sandbox helper on the patched Bash under workspace-write
 * with the network off (the policy that needs the most) and reading its
 * report, exec interception by exec_watch_probe and cgroups by
 * call_cgroup_probe, as the server does at start.  The helper is run with
 * --allow-degraded so that its report names every missing part at once;
 * the server itself never passes that flag, so each missing part is said
 * with what it costs there.  The test knobs the helper and the probes
 * honour (EXECGATE_SANDBOX_MAX_ABI, EXECGATE_SANDBOX_NO_NAMESPACES,
 * EXECGATE_TEST_NO_USER_NOTIF, EXECGATE_TEST_NO_CGROUP) act here as they
 * act on a server.
 */
#ifndef EXECGATE_SERVER_DOCTOR_H
#define EXECGATE_SERVER_DOCTOR_H

#include <stdio.h>

struct server_options;

/*
 * Runs every check for o (borrowed) and prints one line per finding to
 * out.  Blocks (it spawns and waits for the helper): call instead of
 * serving, never from the loop.  Returns 0 when everything is in place,
 * 1 when anything is missing (each named in what was printed).
 */
int doctor_run(const struct server_options *o, FILE *out);

#endif
