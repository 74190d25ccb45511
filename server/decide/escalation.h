/*
 * escalation: the server side of the escalation protocol
 * (docs/escalation-protocol.md), one front end of the per-exec decision
 * (decide.h; docs/escalation.md).
 *
 * One struct escalation_call per `shell` call owns the call's datagram
 * socket pair (the sandboxed Bash inherits one end) and every exec session
 * that arrives on it; each session has its REQUEST decided by the call's
 * decide_call (Run / Escalate / Deny, or a question to a person), and for
 * Escalate starts the checked file on the loop, outside the sandbox, with
 * the wrapper's fds at their numbers and a reset environment.
 * Everything a session receives is untrusted.
 */
#ifndef EXECGATE_SERVER_ESCALATION_H
#define EXECGATE_SERVER_ESCALATION_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "server/call/shell_call.h"

/* Exec sessions open at once per call; a HELLO beyond this is refused
 * (its fd closed: the wrapper fails closed with 126). */
#define ESCALATION_MAX_SESSIONS 256
/* Exec sessions open at once in the whole server (all calls together). */
#define ESCALATION_MAX_SERVER_SESSIONS 1024
/* Bytes a call's exec sessions may have received and not yet decoded, in
 * all: a frame may declare up to ESC_MAX_BODY, but not every session at
 * once. */
#define ESCALATION_MAX_BUFFERED (16u * 1024 * 1024)
/* Bytes read from a session per recvmsg. */
#define ESCALATION_READ_CHUNK 65536

struct decide_call;
struct escalation_call;

/* Where the exec filter's listener of an escalated program goes (tree
 * enforcement: the call's exec watch adopts it), with the exec and the
 * decision that let it out (borrowed) and whether a person approved it.
 * Takes listener, even on failure; returns 0 or a negative errno. */
struct decide_exec;
struct decide_result;
typedef int (*escalation_adopt_fn)(void *data, int listener, const struct decide_exec *e,
                                   const struct decide_result *r, bool by_person);

/*
 * A call's escalation state, before its shell runs: every exec session
 * is decided by dc (a reference is taken).  adopt, when not NULL, makes
 * escalated programs start under the exec filter and receives each one's
 * listener.  pass_env (n_pass_env names, borrowed for the server's life)
 * are the request's variables that --pass-env lets through to escalated
 * programs.  No fd is opened yet (a call may wait long in the queue): the
 * socket pair is made by escalation_call_start.  Returns NULL when out
 * of memory.
 */
struct escalation_call *escalation_call_new(uv_loop_t *loop, struct decide_call *dc,
                                            escalation_adopt_fn adopt, void *adopt_data,
                                            const char *const *pass_env, size_t n_pass_env);

/*
 * The call starts as sc: makes the call's socket pair, serves the
 * server's end on the loop and hands the other end to sc
 * (shell_call_set_fd, CALL_FD_ESCALATE).  Call right before
 * shell_call_start; after it, escalation_call_spawned drops the server's
 * copy of the child's end.  When the socket cannot be made the call runs
 * without one (every exec then fails closed in the wrapper) and this is
 * logged.
 */
void escalation_call_start(struct escalation_call *ec, struct shell_call *sc);
void escalation_call_spawned(struct escalation_call *ec);

/* The call's group was sent sig (timeout, cancel, shutdown): so are the
 * programs run outside the sandbox on its behalf.  Cannot fail. */
void escalation_call_signal(struct escalation_call *ec, int sig);

/* The call ended (or never started): what escalated programs left ends
 * with it, the socket closes, and ec is freed once its handles have
 * closed.  Once per ec; NULL is a no-op. */
void escalation_call_release(struct escalation_call *ec);

/*
 * For tests and the fuzz target: serves ec without a shell call.  *child_fd
 * gets the shell's end (still owned by ec, -1 on failure).  Returns 0 or a
 * negative errno or libuv error.  End it with escalation_call_end_detached,
 * which does what a shell call's end does (ec is freed once its handles
 * and sessions have closed).
 */
int escalation_call_serve_detached(struct escalation_call *ec, int *child_fd);
void escalation_call_end_detached(struct escalation_call *ec);

/*
 * The environment of a call's sandboxed shell: the server's own, with
 * EXEC_WRAPPER=wrapper, EXECGATE_WRAP_IN_SHELL=1 (the patched Bash asks
 * itself), CODEX_ESCALATE_SOCKET=CALL_FD_ESCALATE (call_fds.h),
 * EXECGATE_BASH=bash and, when wrap_names is not NULL,
 * EXECGATE_WRAP_NAMES=wrap_names in place of any earlier values.  A
 * NULL-terminated array of malloc'd strings (caller frees each and the
 * array), or NULL when out of memory.
 */
char **escalation_shell_env(const char *wrapper, const char *bash, const char *wrap_names);

/* The call's cgroup: escalated programs are in it before they run
 * anything (j is borrowed and must outlive the call's escalations).  NULL
 * ec is a no-op.  Cannot fail. */
void escalation_call_set_join(struct escalation_call *ec, const struct call_cgroup_join *j);

#endif
