/*
 * shell_call: one running command — its process group, the one pipe that
 * carries its stdout and stderr in arrival order, its timeout and its
 * progress ticks.
 *
 * The call owns its libuv handles and frees itself in the last close
 * callback, right after reporting its end through on_done; that report never
 * happens re-entrantly from a shell_call_* function.  The command runs in its
 * own process group (setsid), so a timeout, a cancel or a shutdown signals
 * the whole tree of this call and no other.
 */
#ifndef EXECGATE_SERVER_SHELL_CALL_H
#define EXECGATE_SERVER_SHELL_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "server/call/call_cgroup.h"
#include "server/call/call_fds.h"
#include "server/call/output_ring.h"

/* Exit code reported for a call that hit its timeout (as timeout(1)). */
#define SHELL_CALL_TIMEOUT_EXIT 124
/* How long the pipe may stay open after the command's group was killed
 * (something that left the group may still hold it). */
#define SHELL_CALL_DRAIN_MS 500
/* Progress notifications: at most one per this many milliseconds. */
#define SHELL_CALL_PROGRESS_MS 250
/* The newest-line preview in progress messages is cut to this many bytes. */
#define SHELL_CALL_PREVIEW_MAX 240

struct shell_call;

struct shell_call_result {
    bool spawned;      /* false: the helper could not be started (see error) */
    const char *error; /* why not spawned; NULL otherwise */
    int exit_code;     /* exit status, 128+signal, or SHELL_CALL_TIMEOUT_EXIT */
    int term_signal;   /* the signal that ended it, or 0 */
    bool timed_out;    /* the timeout killed it */
    bool cancelled;    /* shell_call_cancel killed it */
    bool setup_failed; /* the sandbox helper exited 125 before running anything */
    /* the helper set up the sandbox but could not start the program (the
     * shell): it said so on the report fd and exited 126 or 127 */
    bool not_started;
    /* what was kept of the output: head, and when cut the marker and tail
     * (output_ring.h); raw bytes */
    struct output_ring_text output;
    uint64_t duration_ns;
};

struct shell_call_events {
    /* The newest output line (a preview, at most SHELL_CALL_PREVIEW_MAX bytes,
     * raw) and the total output bytes so far; only when progress was asked. */
    void (*on_progress)(struct shell_call *c, const char *line, size_t len, uint64_t total,
                        void *data);
    /* The end, once, from a close callback; r and its buffers are valid only
     * during the call, after which the call is freed. */
    void (*on_done)(struct shell_call *c, const struct shell_call_result *r, void *data);
    /* The call's group was sent sig (timeout, cancel, shutdown): what
     * else runs on the call's behalf (escalated programs) should be too.
     * May be NULL. */
    void (*on_signal)(struct shell_call *c, int sig, void *data);
    /* Each piece of output as it is read (raw, borrowed for the call), for
     * an owner that hands the output out while the command runs (a
     * background process); the call then keeps none of it.  May be
     * NULL: the call keeps its output (max_output) for on_done. */
    void (*on_output)(struct shell_call *c, const char *buf, size_t n, void *data);
};

struct shell_call_spec {
    char **argv;           /* taken: the full command line (argv[0] a path) */
    char **env;            /* taken, may be NULL: inherit the server's */
    uint64_t timeout_ms;   /* 0: none (a background process ends when asked) */
    uint64_t max_pause_ms; /* the timeout stops this long at most, in all (0: no limit) */
    size_t max_output;     /* > 0: bytes kept, half head, half tail */
    bool progress;         /* report on_progress */
    bool report;           /* argv passes --report-fd CALL_FD_REPORT to the helper */
    bool helper;           /* argv is execgate-sandbox's: its launcher may start it */
    /* prepared ahead of its command: argv passes --command-fd
     * CALL_FD_COMMAND to the helper, which waits there; the clock and the
     * progress ticks start with shell_call_send_command */
    bool prepared;
};

/* Longest report the sandbox helper may make on CALL_FD_REPORT (one line,
 * right before it runs the program, saying the sandbox is in place, and
 * one more when the program could not be started); more is a broken
 * helper and is ignored. */
#define SHELL_CALL_REPORT_MAX 4096

/*
 * A call that is not running yet.  Takes spec->argv and spec->env, also on
 * failure.  Returns NULL when out of memory.
 */
struct shell_call *shell_call_new(uv_loop_t *loop, struct shell_call_spec *spec,
                                  const struct shell_call_events *ev, void *data);

/*
 * Spawns it.  From here on the call ends only through on_done (a spawn
 * failure too, with spawned=false).  Call once.  Cannot fail synchronously.
 */
void shell_call_start(struct shell_call *c);

/* The call's spec (borrowed), to change before shell_call_start: a login
 * call's command line and environment are settled only when it starts
 * (login_snapshot.h).  Cannot fail. */
struct shell_call_spec *shell_call_spec(struct shell_call *c);

/*
 * A prepared call's command (spec.prepared): sent to its helper, which
 * waits for it with everything set up; from now on the call runs as any
 * other (its clock starts here, with the spec's timeout_ms and progress,
 * which the caller may set before).  Returns 0; -ESRCH when the helper
 * has ended, -EMSGSIZE for a command past SANDBOX_COMMAND_MAX, or the
 * error of the write (a pipe too full to take it at once: -EAGAIN): the
 * caller then discards the call (shell_call_cancel) and runs the command
 * another way; the helper never runs a part of one.
 */
int shell_call_send_command(struct shell_call *c, const char *command);

/* Frees a call that was never started. NULL is a no-op. */
void shell_call_discard(struct shell_call *c);

/* Kills the call's process group (SIGKILL) and marks it cancelled.
 * Idempotent; no-op once it has ended. */
void shell_call_cancel(struct shell_call *c);

/* Sends sig to the call's process group if it still runs. Cannot fail. */
void shell_call_signal(struct shell_call *c, int sig);

/* The process group id of a running call, or 0. */
int shell_call_pgid(const struct shell_call *c);

/*
 * The hooks' fds: fd (borrowed, close-on-exec; -1: none) is inherited by
 * the child as number at, CALL_FD_ESCALATE (escalation: the call's
 * socket) or CALL_FD_EXEC_NOTIFY (tree enforcement: the sandbox helper's
 * --exec-notify-fd); the lower numbers are the call's own pipes and are
 * not changed here.  Set before shell_call_start.  Cannot fail.
 */
void shell_call_set_fd(struct shell_call *c, enum call_fd at, int fd);

/* The child's stdin (borrowed, close-on-exec; -1: /dev/null, the
 * default): a background process's input pipe.  Set before
 * shell_call_start.  Cannot fail. */
void shell_call_set_stdin(struct shell_call *c, int fd);

/* The call's cgroup: the helper is in it before it does anything else
 * (spawn_options.join; j is borrowed and must outlive the spawn).  Set
 * before shell_call_start.  Cannot fail. */
void shell_call_set_join(struct shell_call *c, const struct call_cgroup_join *j);

/*
 * escalation hook: stops the call's timeout clock while a person is asked
 * (elicitation), and restarts it with the time that was left.  Pauses nest:
 * the clock runs again after as many resumes as pauses.  Stopped for
 * spec.max_pause_ms in all, the clock runs again, pause or not: a question
 * nobody answers cannot hold a call forever.  Cannot fail.
 */
void shell_call_pause_timeout(struct shell_call *c);
void shell_call_resume_timeout(struct shell_call *c);

#endif
