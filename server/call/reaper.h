/*
 * reaper: the server as a child subreaper.  Descendants whose parents die
 * (a daemonising `cmd &`, what an escalated `sh -c` leaves behind) are
 * re-parented to the server instead of init, so they stay within reach of
 * the call that started them and are reaped when they end.
 *
 * The server's own children (spawn_child.c) are reaped through their pidfds;
 * the reaper reaps the others and hands those exits to spawn_reap, so no
 * exit is taken from spawn_child.c.  Children started any other way on the loop
 * (uv_spawn) would lose their exits to it: the server has none.
 */
#ifndef EXECGATE_SERVER_REAPER_H
#define EXECGATE_SERVER_REAPER_H

#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

struct reaper;

/*
 * Makes this process a child subreaper (prctl) and reaps, on each SIGCHLD,
 * every exited child (spawn_child.c's through spawn_reap).  Returns NULL with
 * *err (malloc'd) when the prctl or the signal watch fails.
 */
struct reaper *reaper_new(uv_loop_t *loop, char **err);

/* Stops watching SIGCHLD; r is freed by its close callback. NULL is a no-op. */
void reaper_close(struct reaper *r);

/*
 * Sends sig to process group pgid only while one of the server's own
 * children belongs to it: a group whose leader was reaped is signalled
 * only while what it left is re-parented here, never a group that reused
 * the number.  Returns 1 when sent, 0 when not.
 */
int reaper_signal_group(pid_t pgid, int sig);

/* The same for n groups (one waitid each, no /proc).  Returns the
 * number of groups signalled. */
int reaper_signal_groups(const pid_t *pgids, size_t n, int sig);

#endif
