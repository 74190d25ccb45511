/*
 * escalation: the server side of the escalation protocol
 * (docs/escalation-protocol.md) and the per-exec decisions
 * (docs/escalation.md).
 *
 * One struct escalation_server per MCP server holds the loaded rules, the
 * approvals remembered for the session and the audit log.  One struct
 * escalation_call per `shell` call owns the call's datagram socket pair (the
 * sandboxed Bash inherits one end) and every exec session that arrives on
 * it; each session decides Run / Escalate / Deny from the rules, asks the
 * person through `elicitation/create` when a rule says `prompt`, and for
 * Escalate spawns the program on the loop with the wrapper's fds at their
 * numbers.  Everything a session receives is untrusted.
 */
#ifndef EXECGATE_SERVER_ESCALATION_H
#define EXECGATE_SERVER_ESCALATION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "jsonrpc.h"
#include "shell_call.h"

/* Exec sessions open at once per call; a HELLO beyond this is refused
 * (its fd closed: the wrapper fails closed with 126). */
#define ESCALATION_MAX_SESSIONS 256
/* Bytes read from a session per recvmsg. */
#define ESCALATION_READ_CHUNK 65536

struct escalation_config {
    const char *const *rules_paths; /* files or directories of *.rules */
    size_t n_rules_paths;
    const char *default_rules_dir; /* may be NULL; missing is no rules */
    bool preserve_program_paths;
    const char *audit_path; /* NULL: no audit log */
};

struct escalation_server;
struct escalation_call;

/*
 * Loads the rules (any error in any file refuses the whole set) and opens
 * the audit log.  Returns NULL with *err a malloc'd one-line message
 * (caller frees).  cfg is borrowed for this call only.
 */
struct escalation_server *escalation_server_new(uv_loop_t *loop,
                                                const struct escalation_config *cfg, char **err);

/* The transport for elicitations (borrowed; NULL once it is closed) and
 * whether the client declared the elicitation capability.  Cannot fail. */
void escalation_server_set_client(struct escalation_server *es, struct jsonrpc *rpc,
                                  bool elicitation);

/* Number of prefix rules loaded (for the startup log). */
size_t escalation_server_rule_count(const struct escalation_server *es);

/* Frees es once every escalation_call has been released. NULL is a no-op. */
void escalation_server_free(struct escalation_server *es);

/*
 * A call's escalation state, before its shell runs.  sandbox_policy and
 * sandbox_cwd (may be NULL: workdir) describe the call's sandbox, used to
 * tell what the sandbox can write.  call_label names the call in logs and
 * the audit log (copied).  No fd is opened yet (a call may wait long in
 * the queue): the socket pair is made by escalation_call_attach.
 * on_abort(data, why) runs (at most
 * once) when a person answers `abort`: the exec is denied and the call's
 * process group is killed; the caller's result should say why (why is
 * borrowed for the callback).  Returns NULL with *err malloc'd.
 */
struct escalation_call *escalation_call_new(struct escalation_server *es,
                                            const json_t *sandbox_policy, const char *sandbox_cwd,
                                            const char *workdir, const char *call_label,
                                            void (*on_abort)(void *data, const char *why),
                                            void *data, char **err);

/* Frees a call that was never attached. NULL is a no-op. */
void escalation_call_discard(struct escalation_call *ec);

/*
 * Attaches ec to sc (ec is then released with sc, and freed after that),
 * makes the call's socket pair, serves the server's end on the loop and
 * hands the other end to sc (shell_call_set_escalate_fd).  Call right
 * before shell_call_start; after it, escalation_call_spawned drops the
 * server's copy of the child's end.  When the socket cannot be made the
 * call runs without one (every exec then fails closed in the wrapper) and
 * this is logged.
 */
void escalation_call_attach(struct escalation_call *ec, struct shell_call *sc);
void escalation_call_spawned(struct escalation_call *ec);

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
 * itself), CODEX_ESCALATE_SOCKET=SHELL_CALL_ESCALATE_FD,
 * EXECGATE_BASH=bash and, when wrap_names is not NULL,
 * EXECGATE_WRAP_NAMES=wrap_names in place of any earlier values.  A
 * NULL-terminated array of malloc'd strings (caller frees each and the
 * array), or NULL when out of memory.
 */
char **escalation_shell_env(const char *wrapper, const char *bash, const char *wrap_names);

/*
 * The programs the patched Bash is to hand to the wrapper when tree
 * enforcement judges the shell's other execs ("name:name:..."): every
 * program the rules name (and the last component of each named path) and
 * those of the forced-rm heuristic; any other program's escalation would
 * be a Run.  NULL (every exec goes to the wrapper) with an audit log, whose
 * records come from the wrapper's requests, or when the list cannot be
 * given.  Owned by es.
 */
const char *escalation_server_wrap_names(const struct escalation_server *es);

/* ---- hooks for tree enforcement (server/exec_watch.c) ---- */

struct exec_watch;
struct rules_policy;

/* Writes record (taken) to the audit log, if there is one (adding the
 * time); a NULL record is ignored.  Whether there is one, so that callers
 * build records only then.  Cannot fail. */
void escalation_server_audit(struct escalation_server *es, json_t *record);
bool escalation_server_auditing(const struct escalation_server *es);

/* The rules every decision uses (borrowed, as long as es lives). */
const struct rules_policy *escalation_server_rules(const struct escalation_server *es);
bool escalation_server_preserve_program_paths(const struct escalation_server *es);

/*
 * Gives ec the call's exec watch (taken: released and freed with ec; ec
 * must not be attached yet).  With one, escalated programs start under the
 * exec filter (spawn_child's exec_listener, its listener adopted by the
 * watch, so their descendants' execs are decided too), and each Run is told
 * to the watch (exec_watch_expect) so that the wrapper's execv is not asked
 * about again.  Cannot fail.
 */
void escalation_call_set_exec_watch(struct escalation_call *ec, struct exec_watch *w);

/* Told the person's answer: approved, or not with reason (borrowed for the
 * callback). */
typedef void (*escalation_answer_fn)(void *data, bool approved, const char *reason);

struct escalation_question;

enum escalation_ask {
    ESCALATION_ASK_APPROVED, /* answered now (an approval for the session) */
    ESCALATION_ASK_DENIED,   /* refused now: *reason (static) says why */
    ESCALATION_ASK_PENDING,  /* asked: done runs once later, unless cancelled */
};

/*
 * Asks about running program with args in workdir the way a prompt rule
 * asks (the same message, schema, approvals for the session, abort, and
 * the clear refusal for a client without elicitation); the call's timeout
 * clock stops while the question is out.  program and args are borrowed
 * until done runs or the question is cancelled.  *answered_by gets
 * "session-approval", "no-elicitation" or "user" (static).  On PENDING *q
 * is the question, for escalation_question_cancel.
 */
enum escalation_ask escalation_call_ask(struct escalation_call *ec, const char *program,
                                        const char *const *args, size_t nargs, const char *workdir,
                                        escalation_answer_fn done, void *data,
                                        struct escalation_question **q, const char **reason,
                                        const char **answered_by);

/* Withdraws a pending question (done never runs; the clock restarts).
 * NULL is a no-op. */
void escalation_question_cancel(struct escalation_question *q);

#endif
