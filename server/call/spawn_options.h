/*
 * spawn_options: what a child of the server is started with, shared by
 * the two ways to start one: spawn_child (posix_spawn, and every child's
 * exit) and spawn_filtered (the starts posix_spawn cannot do), which
 * spawn_child calls.  Kept apart so that the dependency runs one way.
 */
#ifndef EXECGATE_SERVER_SPAWN_OPTIONS_H
#define EXECGATE_SERVER_SPAWN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

struct call_cgroup_join;

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
    /* file is execgate-sandbox with a helper command line: the sandbox
     * launcher may start it without an exec (launcher_client.h), else it
     * starts as above */
    bool via_launcher;
};

/* Whether o gives the child an fd at number at (one of o->fds). */
bool spawn_options_fd_given(const struct spawn_options *o, int at);

#endif
