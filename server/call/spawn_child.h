/*
 * spawn_child (names spawn_*): the server's child processes (the sandbox helper of each call, each
 * escalated program), started with posix_spawn and watched on the loop
 * through a pidfd.
 *
 * glibc's posix_spawn starts the child with clone(CLONE_VM|CLONE_VFORK):
 * the server's page tables are not copied, unlike libuv 1.44's uv_spawn,
 * which forks the whole server for every child.  The child's exit is seen
 * when its pidfd becomes readable and it is reaped by waitid(P_PIDFD), so
 * no other child's exit is ever taken (the subreaper, reaper.c, relies on
 * spawn_reap for the same reason).
 *
 * One struct spawn_child per child, in the libuv handle style: it lives
 * from spawn_start until the callback given to spawn_close, after which it
 * is freed.  (Not spawn.h: the server's include path would hide the
 * system's <spawn.h> behind it.)
 */
#ifndef EXECGATE_SERVER_SPAWN_CHILD_H
#define EXECGATE_SERVER_SPAWN_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "server/call/call_cgroup.h"
#include "server/call/spawn_options.h" /* what to start, and how */

struct spawn_child;

/* The child ended: exit_status when it exited, else term_signal the signal
 * that killed it.  Called once, from the loop (or from spawn_reap). */
typedef void (*spawn_exit_cb)(struct spawn_child *c, int64_t exit_status, int term_signal);
/* The child's struct is about to be freed (after this returns). */
typedef void (*spawn_close_cb)(struct spawn_child *c);

/*
 * Starts o->file (with via_launcher, from the sandbox launcher where it
 * can: launcher_client.h; else with exec_fd, exec_listener,
 * die_with_server or join, from a clone(CLONE_VM) child of the server's
 * own: spawn_filtered.h; otherwise with posix_spawn).  The child gets
 * each of o->fds at its number, /dev/null
 * as whichever of 0, 1 and 2 is not among them, no other fd, an empty
 * signal mask and every signal's default disposition (with exec_listener:
 * every signal's, 1-31 otherwise).  data is returned by
 * spawn_data.  Returns 0 with *out the child, or a negative errno (the
 * exec's own error too, e.g. -ENOENT) with *out NULL and nothing left
 * running.  Never blocks beyond the child's exec.
 */
int spawn_start(uv_loop_t *loop, const struct spawn_options *o, spawn_exit_cb on_exit, void *data,
                struct spawn_child **out);

/* The child's pid (its process group's id with new_session); stays valid
 * (not reused by another process) until its exit was reported. */
pid_t spawn_pid(const struct spawn_child *c);

void *spawn_data(const struct spawn_child *c);

/*
 * Stops watching c and frees it after on_close (may be NULL) ran, from a
 * later loop turn.  A child still running is not killed and no longer
 * watched: its exit is left to the subreaper.  Call once.
 */
void spawn_close(struct spawn_child *c, spawn_close_cb on_close);

/*
 * For the subreaper: when pid is the child of an open spawn_child whose
 * exit was not reported yet, reaps it if it has exited (its exit callback
 * runs before this returns) and returns true: nobody else may wait for
 * that pid.  Returns false, doing nothing, for any other pid.
 */
bool spawn_reap(pid_t pid);

#endif
