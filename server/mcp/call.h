/*
 * call: one tools/call of the shell tool, from its request to its end —
 * the one owner of everything the call uses.
 *
 * A call is made whole by call_new: its decisions (decide_call), the
 * helper's command line, its exec watch, its escalation state, its
 * network proxy session and its shell_call all belong to it from then
 * on; call_start gives it a cgroup and runs it.  When the command has
 * ended, the call releases each part once, in one place (before its
 * owner hears of the end through on_end); call_free frees the rest.  A
 * call that never started is freed by call_free alone, which releases
 * the same parts.
 */
#ifndef EXECGATE_SERVER_CALL_H
#define EXECGATE_SERVER_CALL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "server/call/call_result.h"
#include "server/options.h"
#include "server/call/output_ring.h"
#include "server/call/shell_call.h"

struct call_cgroup;
struct call_cgroup_pool;
struct call_net;
struct call_net_client;
struct call_net_server;
struct call_pin;
struct decide_call;
struct decide_client;
struct decide_server;
struct escalation_call;
struct exec_watch;
struct leave_sandbox;
struct sandbox_policy;

/* What every call of the server shares (borrowed; outlives the calls). */
struct call_context {
    uv_loop_t *loop;
    const struct server_options *o;
    struct decide_server *decide;  /* rules, approvals, audit */
    struct call_net_server *net;   /* the network proxy; or NULL */
    struct call_cgroup_pool *pool; /* per-call cgroups; or NULL: none */
    bool tree;                     /* tree enforcement in force */
    bool user_notif;               /* sandboxed sockets are supervised */
    bool watch_escalated;          /* shell mode: escalated programs under the exec filter */
    char **protect;                /* read-only in every sandbox (n_protect) */
    size_t n_protect;
    char **hide; /* invisible in every sandbox (n_hide) */
    size_t n_hide;
};

/* A tools/call's arguments, checked (tool_shell.h). */
struct call_request {
    const char *command;
    const char *workdir; /* absolute, a directory when checked */
    uint64_t timeout_ms;
    bool login;
    const json_t *progress_token; /* NULL: no progress was asked */
    size_t max_output;            /* 0: --max-output-bytes */
    /* the agent asks to run it outside the sandbox, saying why
     * (justification, or NULL) */
    bool leave_sandbox;
    const char *justification;
    /* a background process (process.h): its output goes to on_output as
     * it comes, none is kept for on_end; with tty, the command runs on a
     * terminal of its sandbox's own (the helper's --tty-fd) */
    bool background, tty;
    /* the sandbox the call runs under: a sandboxPolicy object, where it
     * is rooted (absolute) and, when the filler has it, the policy parsed
     * (call_new builds the call's view and command line from it, and
     * changes it; NULL: call_new parses policy); the filler's */
    json_t *policy;
    char *sandbox_cwd;
    struct sandbox_policy *parsed;
    /* a prepared call (call_prepare_next): its helper sets everything
     * up and waits for the command (command is not read) */
    bool prepare;
};

/*
 * One call.  Its owner (the scheduler's queue it is on, the session it
 * came from) reads these fields; only call.c changes the parts.
 */
struct call {
    const struct call_context *cx;
    json_t *id;             /* the request's id (a reference) */
    char *label;            /* id as text, for logs */
    json_t *progress_token; /* NULL: no progress was asked */
    void *session;          /* its owner's, opaque here */
    struct call_queue *q;   /* the scheduler's queue it is on (scheduler.h) */
    uint64_t seq;           /* its place among its session's calls, in the order they came */
    struct call *prev, *next;

    /* its parts, from call_new to their release */
    struct shell_call *sc;
    struct decide_call *dc;
    struct escalation_call *ec;
    struct exec_watch *watch; /* or NULL: neither tree mode nor supervised sockets */
    struct call_net *net;     /* or NULL: no proxy */
    /* its session's (a reference) while its sandbox joins the session's
     * network namespace; or NULL */
    struct call_net_client *netns;
    struct call_cgroup *cg; /* once it runs; or NULL */
    bool helper_notifies;   /* the helper hands the watch its listener */
    bool started, released;
    bool signalled; /* call_signal: the server's shutdown killed it */

    char *aborted; /* why a person aborted the call; or NULL */
    char *said;    /* approvals' reasons, a line each; or NULL */

    /* login snapshot: a login call that may source a snapshot, until it
     * starts: its key, and what its capture would run under */
    char *snap_key, *snap_workdir;
    json_t *snap_policy;
    char *snap_sandbox_cwd;
    bool snap_capture; /* it is the capture itself */
    bool login;        /* it runs a login shell */
    /* the sealed snapshot it sources (its own dup, so that the object
     * stays the one compared), or -1: none (call_use_snapshot) */
    int snap_fd;

    /* prepared calls: the rules' generation it was made under; whether
     * the next call of its session may be prepared like it (a foreground
     * call under a read-only or workspace-write sandbox, without a
     * terminal or the network proxy, not leaving the sandbox; a login
     * call's next is prepared as a login call), and then what that one is
     * made from */
    uint64_t rules_gen;
    bool confines; /* its policy is read-only or workspace-write */
    bool preparable;
    /* its owner holds a part of it (a task follows its questions): no
     * prepared call may take its place */
    bool held_by_owner;
    char *prep_workdir, *prep_sandbox_cwd;
    json_t *prep_policy;
    /* a prepared call: what its sandbox was set up with, pinned before its
     * helper started (call.c) */
    struct call_pin *pins;
    size_t n_pins;

    /* require_escalated: the question to leave the sandbox, while out */
    struct leave_sandbox *leave;
    /* the roots where its sandbox may hold a placeholder .codex
     * (canonical; NULL-terminated, or NULL: none) */
    char **codex_roots;

    /* an ended call whose answer waits for room: its result and a copy of
     * the kept output (scheduler.c) */
    struct call_result held;
    struct output_ring_text held_text;
    char *held_output;

    /* the owner's: progress(c, params) sends a notifications/progress;
     * on_end(c, r) is the call's end, after its parts were released (r
     * valid for the callback only) */
    void (*progress)(struct call *c, json_t *params);
    void (*on_end)(struct call *c, const struct shell_call_result *r);
    /* a background call's (call_request.background): each piece of its
     * output as it is read (borrowed for the callback) */
    void (*on_output)(struct call *c, const char *buf, size_t n);
};

/* Calls in order (a session's waiting, running, ... calls). */
struct call_list {
    struct call *head, *tail;
    unsigned count;
};

void call_list_push(struct call_list *l, struct call *c);
void call_list_remove(struct call_list *l, struct call *c);
/* The call with this request id, or NULL. */
struct call *call_list_find(const struct call_list *l, const json_t *id);

/*
 * A call for r, not started: its decisions (questions to cl, network
 * questions to ncl), command line, front ends and shell_call; id is
 * referenced.  A login call that may source a snapshot (snapshots on)
 * keeps what its capture needs.  Returns NULL with *err (malloc'd; NULL:
 * out of memory) for the answer.
 */
struct call *call_new(const struct call_context *cx, json_t *id, const struct call_request *r,
                      struct decide_client *cl, struct call_net_client *ncl, bool snapshots,
                      char **err);

/* What a login snapshot is valid for: the shell, the policy, where the
 * sandbox is rooted and the workdir.  NULL when out of memory. */
char *call_login_key(const struct call_context *cx, const struct call_request *r);

/* The login key of the call c prepared (call_prepare_next) from: what
 * its login snapshot must be valid for.  NULL when out of memory. */
char *call_prepared_login_key(const struct call *c);

struct login_snapshot;
struct login_snapshot_kind;

/*
 * c, a login call not started, sources the snapshot fd (READY from ls,
 * of kind k: login_snapshot_use): its command line and environment say
 * so, its spawn gives it fd, and c keeps a dup of fd, the object a
 * prepared call is compared by.  Returns 0, or -1 when out of memory or
 * fds (c is then unchanged: a real login shell).
 */
int call_use_snapshot(struct call *c, const struct login_snapshot *ls,
                      const struct login_snapshot_kind *k, int fd);

/*
 * The call prepared to follow done, a preparable call of the same session
 * (questions to cl, network questions to ncl): made as done was (policy,
 * sandbox cwd, workdir, environment, rules, a login shell or not; the
 * caller gives a login one its snapshot: call_use_snapshot), started at once by
 * call_start, its helper waiting with everything set up for the command
 * call_take_prepared sends it.  NULL with *err (malloc'd; NULL: out of
 * memory) when it cannot be made; nothing is then prepared.
 */
struct call *call_prepare_next(const struct call *done, struct decide_client *cl,
                               struct call_net_client *ncl, char **err);

/*
 * Whether the prepared call p (running, waiting for its command) is
 * exactly what c (made by call_new, not started) would run: the same
 * rules generation, login or not, the same login snapshot (the same
 * sealed object, or none), helper command line but for the command,
 * environment, sandbox view and network, and every path its sandbox was
 * set up from still the file it was (by identity, not name).  If so, p becomes c (its
 * id, label, progress token, owner and timeout) and runs c's command:
 * returns 0, and the caller frees c, which never ran.  Otherwise returns
 * -1 with *why (static text): the caller discards p (call_cancel) and
 * starts c as any call.
 */
int call_take_prepared(struct call *p, struct call *c, const char **why);

/* Runs c (in the cgroup the pool gives it, when there are cgroups).
 * Its end comes through c->on_end.  Cannot fail synchronously. */
void call_start(struct call *c);

/* Kills c's process group; it ends, unanswered (r->cancelled). */
void call_cancel(struct call *c);

/* Sends sig to c's group and what runs on its behalf (the shutdown: a
 * placeholder its killed sandbox leaves is removed at its end). */
void call_signal(struct call *c, int sig);

/* Frees c: releases the parts not yet released (a call that never
 * started).  NULL is a no-op. */
void call_free(struct call *c);

#endif
