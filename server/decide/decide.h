/*
 * decide: the one decision for every exec of a call's process tree.
 *
 * Two front ends ask.  The wrapper protocol (escalation.c) brings the
 * execs the patched Bash hands over; those may run outside the sandbox.
 * The exec watch (exec_watch.c) brings every other exec of the tree in
 * tree mode; those run where they are or not at all.  Both describe the
 * exec as a struct decide_exec and get their answer from decide_exec(),
 * so they agree by construction on: the names the program goes by (every
 * link on the way, exec_path), the rules' verdict over all of them, the
 * forced-rm heuristic, whether the file may run outside (nothing the
 * sandbox of this call, or of any call this server accepted, could have
 * written or repointed, and no repository it could have planted code in),
 * the approvals for the session and the call's memos,
 * the question a person is asked, and the audit record.
 * docs/escalation.md says what is decided and why.  The decision is
 * decide_exec.c's, the repository checks decide_repo.c's, the question
 * decide_ask.c's (put to the person by ask.h, which gives every answer
 * its meaning), the rest decide.c's.
 *
 * One struct decide_server per MCP server (rules, approvals, audit log,
 * the client to ask); one struct decide_call per `shell` call, shared by
 * its two front ends (reference counted: each holder releases its own).
 */
#ifndef EXECGATE_SERVER_DECIDE_H
#define EXECGATE_SERVER_DECIDE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

struct jsonrpc;
struct shell_call;
struct rules_policy;

/* Commands remembered per call as approved for one exec by the process
 * the wrapper path let run (its exec is then not asked about again), or
 * declined (a PATH search's retries are not asked again); oldest dropped. */
#define DECIDE_MAX_REMEMBERED 256

struct decide_config {
    const char *const *rules_paths; /* files or directories of *.rules */
    size_t n_rules_paths;
    const char *default_rules_dir; /* may be NULL; missing is no rules */
    bool preserve_program_paths;
    const char *audit_path; /* NULL: no audit log */
};

struct decide_server;
struct decide_call;

/*
 * Loads the rules (any error in any file refuses the whole set), logs
 * what the lint finds in them, and opens the audit log.  Returns NULL
 * with *err a malloc'd one-line message (caller frees).  cfg is borrowed
 * for this call only.
 */
struct decide_server *decide_server_new(const struct decide_config *cfg, char **err);

/*
 * Loads the rules again from the same files and directories and, when
 * every file loads, puts them in force for every exec decided from now on
 * (the wrapper hint too, for calls that start from now on); what was
 * decided before keeps its decision, and session approvals stay (a command
 * the new rules forbid is denied before any approval is looked at).  On
 * any error the old rules stay in force: returns -1 with *err a malloc'd
 * "FILE:LINE:COL: message" line (caller frees).  Returns 0 on success.
 */
int decide_server_reload(struct decide_server *ds, char **err);

/* The rules files and directories the rules come from (borrowed, as long
 * as ds lives); *n gets the count. */
const char *const *decide_server_rules_paths(const struct decide_server *ds, size_t *n);

/* Frees ds once no decide_call is left.  NULL is a no-op. */
void decide_server_free(struct decide_server *ds);

/*
 * A client of its own for some calls (one per MCP session of a server
 * serving many): where their questions go, what it approved for its
 * session (approvals.h), and its log.  Calls without one have nobody to
 * ask and no log.  Reference counted:
 * the creator holds one, each decide_call given it another.  NULL when
 * out of memory.
 */
struct decide_client;
struct decide_client *decide_client_new(void);

struct client_log;
/* Sets cl's transport (borrowed; NULL once it is closed: nobody is asked
 * then), whether it offered elicitation, and its log (borrowed; NULL:
 * none).  Cannot fail. */
void decide_client_set(struct decide_client *cl, struct jsonrpc *rpc, bool elicitation,
                       struct client_log *log);

/* Releases a reference; NULL is a no-op. */
void decide_client_unref(struct decide_client *cl);

/* Number of prefix rules loaded (for the startup log). */
size_t decide_server_rule_count(const struct decide_server *ds);

/* Whether the sandbox of any call so far could have written path (true
 * when the server keeps no such record: unknown is writable). */
bool decide_server_sandbox_wrote(const struct decide_server *ds, const char *path);

/*
 * The programs the patched Bash is to hand to the wrapper when tree
 * enforcement judges the shell's other execs ("name:name:..."): every
 * program the rules name (and the last component of each named path) and
 * those of the forced-rm heuristic; any other program's escalation would
 * be a Run.  NULL (every exec goes to the wrapper) with an audit log,
 * whose records come from the wrapper's requests, or when the list cannot
 * be given.  Owned by ds.
 */
const char *decide_server_wrap_names(const struct decide_server *ds);

/* How many times the rules were reloaded: a call made under one
 * generation was made under the same rules as another of it. */
uint64_t decide_server_generation(const struct decide_server *ds);

/* The rules in force now (borrowed: valid until the next successful
 * reload), for the network proxy's network_rule decisions. */
const struct rules_policy *decide_server_rules(const struct decide_server *ds);

/* The audit log (borrowed, as long as ds lives), or NULL without one:
 * the network proxy's records go there too. */
struct audit;
struct audit *decide_server_audit(const struct decide_server *ds);

/*
 * A call's decision state.  policy (parsed; borrowed for the call) gives
 * what its sandbox can write, which from now on counts against every call
 * of ds (writable_history.h); label names the call in logs and the audit
 * log (copied), and id (a JSON value, referenced; or NULL) is the request
 * id the client's records carry.  on_abort(data, why) runs at most once,
 * when a person answers `abort` to any question of the call (an exec's or
 * a connection's): the caller's result should say why (why is borrowed for
 * the callback); the call's process group is killed here.  One reference,
 * the caller's.  Returns NULL with *err malloc'd.
 */
struct sandbox_policy;
struct decide_call *decide_call_new(struct decide_server *ds, const struct sandbox_policy *policy,
                                    const json_t *id, const char *label,
                                    void (*on_abort)(void *data, const char *why), void *data,
                                    char **err);

/* What a person typed as the reason of an approval in this call, as one
 * line for the call's result ("approved `PROGRAM ARGS`: REASON", escaped
 * as the question's text is; borrowed for the callback). */
typedef void (*decide_said_fn)(void *data, const char *line);

/* said(data, line) runs for each approval in dc that came with a reason
 * (a refusal's reason goes with the refusal).  Cannot fail. */
void decide_call_on_said(struct decide_call *dc, decide_said_fn said, void *data);

struct decide_call *decide_call_ref(struct decide_call *dc);
/* Drops a reference; the last frees.  NULL is a no-op. */
void decide_call_unref(struct decide_call *dc);

/*
 * The call is about to start as sc: its timeout clock stops while a
 * person is asked, an abort kills its group, and the repositories its
 * sandbox keeps read-only are noted now (the helper binds them as it
 * starts).  decide_call_end: sc has ended, nothing more reaches it
 * (NULL is a no-op).  Cannot fail.
 */
void decide_call_start(struct decide_call *dc, struct shell_call *sc);
void decide_call_end(struct decide_call *dc);

const char *decide_call_label(const struct decide_call *dc);

/* dc is from now on the call with this id (referenced; or NULL) and label
 * (copied), in the audit log and the client's records: a prepared call
 * taken by the request it was prepared for (server/mcp/call.h).  Parts
 * that borrowed the old label keep it valid.  Returns 0, or -1 when out
 * of memory (nothing changed). */
int decide_call_rename(struct decide_call *dc, const json_t *id, const char *label);
/* The request's id (borrowed; NULL: none), for records that carry it. */
const json_t *decide_call_id(const struct decide_call *dc);

/* The log of the client dc answers to (borrowed; NULL: none): the
 * network proxy's records of the call go there too. */
struct client_log *decide_call_log(const struct decide_call *dc);

/* The call's questions (borrowed, as long as dc lives): the network
 * proxy's go there too, so that a person sees one question of a call at a
 * time and every answer means the same (ask.h). */
struct ask_line;
struct ask_line *decide_call_asking(struct decide_call *dc);

/* dc's questions, approvals and records go to cl from now on (a
 * reference is taken).  Called before the call runs.  Cannot fail. */
void decide_call_set_client(struct decide_call *dc, struct decide_client *cl);

/* Where the call's sandbox can write, as the server resolved it when the
 * call arrived (borrowed, as long as dc lives): what its helper is to
 * grant (writable_view_pin). */
struct writable_view;
const struct writable_view *decide_call_view(const struct decide_call *dc);

enum decide_source {
    DECIDE_FROM_WRAPPER, /* the patched Bash's hand-over: may run outside */
    DECIDE_FROM_TREE,    /* the exec watch: runs in place or not at all */
};

/* The program an outside tree started from, as its children's questions
 * and refusals name it.  Borrowed. */
struct decide_outside {
    const char *command; /* "git status": its name and arguments, shell-quoted */
    const char *why;     /* "allowed by default.rules:3" */
};

/* One exec to decide.  All borrowed. */
struct decide_exec {
    enum decide_source source;
    const char *path; /* the path the exec names, as given */
    const char *cwd;  /* where a relative path starts; the program's workdir */
    const char *const *argv;
    size_t argc;
    /* tree: the file the kernel will run, as the watch opened it in the
     * target's view, or NULL; and its #! interpreters */
    const char *canonical;
    const char *const *interpreters;
    size_t n_interpreters;
    pid_t pid; /* the process that execs (0: unknown) */
    /* tree: the exec comes from the tree of a program that runs outside
     * the sandbox because a rule allows it (NULL: inside the sandbox, or
     * under a person's approval, docs/enforcement.md): only a rule that
     * names it, or a person, lets it run */
    const struct decide_outside *outside;
    /* tree: it runs outside the sandbox (the tree of an escalated program,
     * under a person's approval or not): what a session approval of it
     * is remembered by */
    bool outside_tree;
    /* tree: the exec's environment sets a variable that names code for the
     * dynamic loader, a shell or an interpreter to run (LD_PRELOAD,
     * BASH_ENV, PYTHONPATH; exec_watch's list) */
    bool code_env;
};

enum decide_verdict {
    DECIDE_RUN,      /* runs in place: inside the sandbox (the watch: continues) */
    DECIDE_DENY,     /* refused: reason says why */
    DECIDE_ESCALATE, /* the wrapper's: runs outside the sandbox, from fd */
    DECIDE_ASK,      /* a person decides: decide_ask */
};

struct decide_result {
    enum decide_verdict verdict;
    /* ASK: an approval escalates (else the exec runs in place) */
    bool escalate_if_approved;
    char *reason;            /* DENY: the reason shown; RUN, ASK: why, for the log (or NULL) */
    const char *answered_by; /* static: rules, session-approval, earlier-answer, escalation */
    char *file;              /* the path as given, made absolute */
    char *program;           /* what runs: the canonical file, else file */
    /* ESCALATE, and ASK with escalate_if_approved: the file that was
     * checked, opened O_PATH (close-on-exec), to start with execveat;
     * script: it starts with "#!" (its interpreter reopens it by fd) */
    int fd;
    bool script;
    /* ASK for an allowed command that uses an option writing any file or
     * running any command (rules_lint_dangerous_use): static, or NULL */
    const char *caution;
    /* ASK because a rule prompts, when an allow rule for this prefix in
     * the standing answers' file would settle the question: "always
     * allow" is offered for it (NULL-terminated, n_amendment words) */
    char **amendment;
    size_t n_amendment;
    /* ASK because a rule prompts: that rule's justification as shown to a
     * person (rules_text_shown), for the question; else NULL */
    char *justification;
    json_t *matched; /* the matching rules, with an audit log; else NULL */
    /* what the rules said, for the children of an escalated program:
     * "allowed by FILE:LINE", "asked by the prompt rule at FILE:LINE";
     * NULL when no rule matched */
    char *parent_rule;
    /* ASK of a child of an outside tree: the refusal when nobody can be
     * asked (what, why, and the rule line that would allow it) */
    char *refusal;
    char *key; /* the call's memos: program, its (dev, ino), argv[1..] */
    size_t keylen;
    /* ASK: what an approval for the session is remembered by: key's parts,
     * run_as, the real workdir, and where the program runs (outside the
     * sandbox, inside it, or in place for the tree) */
    char *approval;
    size_t approvallen;
    /* wrapper: the name the program runs as (its argv[0] outside the
     * sandbox): the last component of the own name whose rule decided,
     * else of the path as given, whatever argv[0] the request gave; NULL
     * for the tree */
    char *run_as;
    /* ESCALATE, and ASK with escalate_if_approved: GIT_CEILING_DIRECTORIES
     * for the program, so that git looks for a repository no higher than
     * the one the decision checked (the directory above the first .git
     * from the workdir up, else above the workdir) */
    char *git_ceiling;
    /* ESCALATE, and ASK with escalate_if_approved: the workdir is in a
     * repository the sandbox could have written, and the program reads
     * none; git started by it is to find no repository (GIT_DIR=/dev/null) */
    bool git_fenced;
    /* wrapper: "FILE:LINE" of the rule that decided (the first at the
     * verdict's decision), or NULL */
    char *rule;
    /* a rule let the program out (allow, or prompt from the wrapper), but
     * it runs in the sandbox: reason says why (decide_inside_note) */
    bool kept_inside;
};

/* Decides e into *out (release with decide_result_release).  Cannot
 * fail: out of memory is a DENY. */
void decide_exec(struct decide_call *dc, const struct decide_exec *e, struct decide_result *out);

/*
 * The line the program's stderr gets when r is a RUN (or an approved ASK
 * run in place) of a program a rule let out, kept in the sandbox
 * (r->kept_inside): "NAME is allowed by FILE:LINE, but runs inside the
 * sandbox: WHY" ("asked about" for a prompt rule).  NULL when there is
 * nothing to say or out of memory; malloc'd.
 */
char *decide_inside_note(const struct decide_result *r);

/* Frees what *r holds (its fd closed unless taken: set r->fd = -1). */
void decide_result_release(struct decide_result *r);

/*
 * The wrapper path let pid run r's program in place after a person's
 * approval: the watch's decision on that exec continues it once without a
 * second question.  Cannot fail (out of memory means one more question).
 */
void decide_call_expect(struct decide_call *dc, pid_t pid, const struct decide_result *r);

/* Told the person's answer: approved, or not with reason (borrowed for
 * the callback). */
typedef void (*decide_answer_fn)(void *data, bool approved, const char *reason);

struct decide_question;

enum decide_ask {
    DECIDE_ASK_APPROVED, /* answered now: an approval for the session */
    DECIDE_ASK_DENIED,   /* refused now: *reason (static) says why */
    DECIDE_ASK_PENDING,  /* asked: done runs once later, unless cancelled */
};

/*
 * Asks a person about r (an ASK for e): the question shows r's program,
 * e's arguments shell-quoted and e's workdir, with control characters
 * and backticks escaped.  An approval for the session is remembered by
 * r->key; a decline from the tree is remembered for the call; `abort`
 * kills the call (every answer means what ask.h says).  The call's timeout clock stops while the
 * question is out.  *answered_by gets "session-approval", "no-elicitation" or "user" (static).  On
 * PENDING *q is the question, for decide_question_cancel; e and r may go once this returns.
 */
enum decide_ask decide_ask(struct decide_call *dc, const struct decide_exec *e,
                           const struct decide_result *r, decide_answer_fn done, void *data,
                           struct decide_question **q, const char **reason,
                           const char **answered_by);

/* Withdraws a pending question (done never runs; the clock restarts).
 * NULL is a no-op. */
void decide_question_cancel(struct decide_question *q);

/*
 * One record for e as r decided it, to the audit log when there is one
 * and to the client's log when it wants the record's level (a refusal is
 * a warning, an escalation or a person's answer information, the rest
 * debug):
 * decision is "run", "deny" or "escalate" (wrapper), "continue" or
 * "refuse" (tree); reason and answered_by may be NULL; exit_kind < 0
 * means no exit yet, else an ESC_EXIT_* kind with its value.  Cannot fail.
 */
void decide_audit(struct decide_call *dc, const struct decide_exec *e,
                  const struct decide_result *r, const char *decision, const char *reason,
                  const char *answered_by, int exit_kind, int exit_value);

/* As decide_audit, for the client's log only, at debug: an exec the tree
 * continued with no question (the audit log leaves those out). */
void decide_trace(struct decide_call *dc, const struct decide_exec *e,
                  const struct decide_result *r, const char *decision);

#endif
