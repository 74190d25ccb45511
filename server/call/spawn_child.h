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

struct spawn_child;

/* One inherited fd: the parent's fd (borrowed; close-on-exec or not) becomes
 * number `at` in the child. */
struct spawn_fd {
    int fd;
    int at;
};

struct spawn_options {
    const char *file; /* searched in the server's PATH when it has no '/' */
    /*
     * Non-NULL: the child runs the file *exec_fd names (opened O_PATH,
     * borrowed) with execveat(AT_EMPTY_PATH), so what runs is the file
     * that was checked whatever file's path names by then; file must then
     * hold a '/' and is only its name.  The fd is close-on-exec in the
     * child unless exec_fd_inherited (a #! script: its interpreter
     * reopens it through /dev/fd).
     */
    const int *exec_fd;
    bool exec_fd_inherited;
    char *const *argv; /* argv[0] included */
    char *const *env;  /* NULL: the server's environment */
    const char *cwd;   /* NULL: the server's */
    /* Non-NULL: the child starts in the directory *cwd_fd names (borrowed;
     * fchdir before anything else moves its fds), and cwd is unused: the
     * directory that was checked, whatever its path names by then */
    const int *cwd_fd;
    const struct spawn_fd *fds; /* the child's only fds besides /dev/null */
    size_t n_fds;
    /* its own session and process group (setsid): its pid is its group's */
    bool new_session;
    /*
     * Non-NULL: the child installs the exec filter of sandbox/exec_filter.c
     * (no_new_privs set) as its last step, so every exec of its tree is
     * notified, and *exec_listener gets the filter's listener (close-on-exec,
     * the caller's to close).  The child's own exec of file, the first
     * notification, is continued by spawn_start itself; file must then hold
     * a '/' (no PATH search: -EINVAL).  Costs no exec besides the program's.
     */
    int *exec_listener;
    /* killed (SIGKILL) when the server dies, however it dies: a host may
     * kill the server hard, and nothing it started may outlive it */
    bool die_with_server;
    /* non-NULL: the call cgroup the child is in before it does anything
     * else, so nothing it starts is ever outside (borrowed; how it gets
     * in: call_cgroup.h) */
    const struct call_cgroup_join *join;
};

/* Whether o gives the child an fd at number at (one of o->fds). */
bool spawn_options_fd_given(const struct spawn_options *o, int at);

/* The child ended: exit_status when it exited, else term_signal the signal
 * that killed it.  Called once, from the loop (or from spawn_reap). */
typedef void (*spawn_exit_cb)(struct spawn_child *c, int64_t exit_status, int term_signal);
/* The child's struct is about to be freed (after this returns). */
typedef void (*spawn_close_cb)(struct spawn_child *c);

/*
 * Starts o->file (with exec_fd, exec_listener, die_with_server or
 * join, from a clone(CLONE_VM) child of the server's own:
 * spawn_filtered.h; otherwise with posix_spawn).  The child gets
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
