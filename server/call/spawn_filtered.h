/*
 * spawn_filtered: spawn_child's start for what posix_spawn cannot do.
 *
 * Used by spawn_start (spawn_child.h) when the options ask for the exec
 * filter (exec_listener), a checked file run by its fd (exec_fd), death
 * with the server (die_with_server) or a call cgroup to be in (join): every
 * call's sandbox helper and every escalated program.  The child is a
 * clone(CLONE_VM) of the server that runs the server's own code between
 * the clone and the exec: the one exception to the house rule that the
 * server's children run no code of the server's before their exec
 * (spawn_filtered.c says why, and what keeps it safe).
 */
#ifndef EXECGATE_SERVER_SPAWN_FILTERED_H
#define EXECGATE_SERVER_SPAWN_FILTERED_H

#include <stdbool.h>
#include <sys/types.h>

#include "server/call/spawn_options.h"

/*
 * Starts o->file as spawn_start describes (the same fds, signals and
 * cwd).  Blocks until the child has exec'd or failed.  Returns 0 with
 * *pid and *listener (the exec filter's listener, close-on-exec and the
 * caller's; -1 without o->exec_listener), or a negative errno (the
 * child's own: its exec's error, -ENOENT for a file not found in PATH,
 * -EINVAL for a filter or fd start of a file without '/') with nothing
 * left running: a child that failed was killed and reaped.
 */
int spawn_filtered_start(const struct spawn_options *o, pid_t *pid, int *listener);

/*
 * Whether a child with a join whose into is a directory is created in it
 * (clone3 with CLONE_INTO_CGROUP, on x86_64), rather than moved there by
 * its own write to procs (elsewhere).
 */
bool spawn_filtered_creates_in_cgroup(void);

#endif
