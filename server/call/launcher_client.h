/*
 * launcher_client: the server's end of the sandbox launcher
 * (execgate-sandbox --launcher, sandbox/launcher.h), which starts each
 * call's helper without an execve of its own.
 *
 * One launcher per server, started at the first call that asks for it and
 * again after it died (each with a log line), for the helper file it was
 * started with.  The child it starts for a call is the server's own child
 * (CLONE_PARENT), born in the call's cgroup, with the fds and environment
 * spawn_options give it: what the server does with it next (its pidfd, its
 * exit, the kill of its process group) is what it does with a helper it
 * started itself.  Blocks, as spawn_filtered does, until the launcher has
 * answered (at most a few seconds: then the launcher is killed).
 */
#ifndef EXECGATE_SERVER_LAUNCHER_CLIENT_H
#define EXECGATE_SERVER_LAUNCHER_CLIENT_H

#include <sys/types.h>

#include "server/call/spawn_options.h"

/*
 * Starts o (o->file the helper, via_launcher set) through the launcher.
 * Returns 0 with *pid and *pidfd (close-on-exec, the caller's); 1 when the
 * launcher cannot start it and nothing was started (the caller starts it
 * the other way; the reason was logged); or a negative errno when the call
 * must fail: a launcher that died while starting it may have left a child
 * that could not be killed, and the command must not run twice.
 */
int launcher_client_spawn(const struct spawn_options *o, pid_t *pid, int *pidfd);

/* The running launcher's pid, or 0 (for tests and logs). */
pid_t launcher_client_pid(void);

/* Closes the control socket (the launcher ends at its EOF) and forgets the
 * launcher; the next launcher_client_spawn starts a new one. */
void launcher_client_stop(void);

#endif
