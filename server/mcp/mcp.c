#include "server/mcp/mcp.h"

#include "common/macros.h"
#include "execgate-config.h"
#include "sandbox/policy/policy.h"
#include "server/mcp/call.h"
#include "server/call/call_cgroup.h"
#include "server/call/call_cgroup_pool.h"
#include "server/net/call_net.h"
#include "server/rpc/client_log.h"
#include "server/decide/decide.h"
#include "server/mcp/enforcement.h"
#include "server/rpc/jsonrpc.h"
#include "server/decide/leave_sandbox.h"
#include "common/list.h"
#include "common/log.h"
#include "server/call/login_snapshot.h"
#include "server/call/reaper.h"
#include "server/decide/rules_watch.h"
#include "server/call/sandbox_state.h"
#include "server/call/session_sandbox.h"
#include "server/mcp/scheduler.h"
#include "server/mcp/tasks.h"
#include "server/state_paths.h"
#include "common/strfmt.h"
#include "common/strv.h"
#include "server/mcp/process.h"
#include "server/mcp/tool_exec.h"
#include "server/mcp/tool_shell.h"

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const protocol_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
                                                MCP_LATEST_PROTOCOL};
/* The first protocol version with tasks. */
#define TASKS_PROTOCOL "2025-11-25"

/*
 * One client: the stdio client, or one HTTP session (mcp_http.c).  What
 * a client sets or is asked stays in its session: its sandbox policy, its
 * calls, the questions about them and what it approved for the session,
 * its log.  The rules, the cgroups and the limits are the server's.
 */
struct mcp_session {
    struct mcp_server *s;
    struct jsonrpc *rpc; /* NULL once closed */
    bool initialized;
    bool client_elicitation;
    /* the protocol agreed on has tasks (2025-11-25): its calls may run as
     * tasks (tasks.h), kept in tasks */
    bool tasks_on;
    struct tasks *tasks;

    /* the sandbox of the calls that arrive now (unless one carries its
     * own) */
    struct session_sandbox sandbox;

    /* its calls (scheduler.h); asking is the session's own: calls whose
     * question to leave the sandbox is out */
    struct call_queue q;
    struct client_log *client_log;      /* notifications/message for the client */
    struct decide_client *client;       /* its questions and approvals */
    struct call_net_client *net_client; /* its network approvals */
    /* its background processes (exec_command), and what their tools
     * need of the session */
    struct process_table procs;
    struct tool_exec_host exec;

    /* HTTP: messages go to sink(sink_data, m) until the session ends */
    mcp_session_sink_fn sink;
    mcp_session_pending_fn pending;
    void *sink_data;
    bool ending, rpc_closing;
    struct list node; /* in its server's sessions */
};

#define SESSION(n) list_entry(n, struct mcp_session, node)

struct mcp_server {
    uv_loop_t *loop;
    const struct server_options *o;
    struct mcp_session *stdio; /* the stdio client, or NULL when serving HTTP */
    struct list sessions;      /* of struct mcp_session, the newest first */
    unsigned n_sessions;
    void (*on_shutdown)(void *data);
    void *on_shutdown_data;

    /* what every call shares: the decisions (rules, approvals, audit),
     * the enforcement in force, the network proxy, the cgroups, the
     * server's own files (read-only) and state (hidden) in every sandbox */
    struct call_context cx;
    struct scheduler *sched;
    char *instructions;                /* initialize's, saying which enforcement */
    struct rules_watch *rules_watch;   /* reloads the rules when they change */
    struct call_cgroup_probe *cgroups; /* what the machine offers for per-call cgroups */
    struct spawn_child *guard;         /* kills what calls left if the server dies; or NULL */
    struct reaper *reaper;

    bool started, shutting_down, finishing, killed;
    uv_signal_t sigterm, sigint;
    uv_timer_t grace;
    int handles_open;
};

static void reply_error_fmt(struct mcp_session *ss, const json_t *id, int code, const char *fmt,
                            ...) __attribute__((format(printf, 4, 5)));

static void
reply_error_fmt(struct mcp_session *ss, const json_t *id, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = vstrfmt(fmt, ap);
    va_end(ap);
    jsonrpc_reply_error(ss->rpc, id, code, text ? text : "out of memory");
    free(text);
}

/* What initialize advertises beside tools and logging: that a client may
 * hand the sandbox over, by update request or in each call's _meta (Codex
 * 0.169 puts it in _meta when either name is advertised). */
static json_t *
experimental_capabilities(void)
{
    return json_pack("{s:{s:s}, s:{s:s}}", SANDBOX_STATE_KEY, "version", "1.0.0",
                     SANDBOX_STATE_META_KEY, "version", "1.0.0");
}

static void
handle_initialize(struct mcp_session *ss, const json_t *id, const json_t *params)
{
    struct mcp_server *s = ss->s;
    if (ss->initialized) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_REQUEST, "already initialized");
        return;
    }
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *version = MCP_LATEST_PROTOCOL;
    for (size_t i = 0; asked && i < ARRAY_SIZE(protocol_versions); i++) {
        if (strcmp(asked, protocol_versions[i]) == 0)
            version = protocol_versions[i];
    }
    const json_t *caps = json_object_get(params, "capabilities");
    ss->client_elicitation = json_object_get(caps, "elicitation") != NULL;
    /* protocol versions are dates: tasks came with 2025-11-25 */
    ss->tasks_on = strcmp(version, TASKS_PROTOCOL) >= 0;
    decide_client_set(ss->client, ss->rpc, ss->client_elicitation, ss->client_log);
    /* records go out from now on: a client hears nothing before initialize */
    client_log_set_rpc(ss->client_log, ss->rpc);
    json_t *result = json_pack("{s:s, s:{s:o, s:{}, s:{}}, s:{s:s, s:s}, s:s}", "protocolVersion",
                               version, "capabilities", "experimental", experimental_capabilities(),
                               "tools", "logging", "serverInfo", "name", EXECGATE_NAME, "version",
                               EXECGATE_VERSION, "instructions", s->instructions);
    json_t *tasks = ss->tasks_on ? json_pack("{s:{}, s:{}, s:{s:{s:{}}}}", "list", "cancel",
                                             "requests", "tools", "call")
                                 : NULL;
    if (result && ss->tasks_on &&
        json_object_set_new(json_object_get(result, "capabilities"), "tasks", tasks) < 0) {
        json_decref(result);
        result = NULL;
    }
    if (!result) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    ss->initialized = true;
    const char *client =
        json_string_value(json_object_get(json_object_get(params, "clientInfo"), "name"));
    log_info("initialize: client %s, protocol %s (asked %s)%s", client ? client : "(unnamed)",
             version, asked ? asked : "(none)",
             ss->client_elicitation ? ", client offers elicitation" : "");
    jsonrpc_reply(ss->rpc, id, result);
}

/* codex/sandbox-state/update: the sandbox of the session's next calls. */
static void
handle_update(struct mcp_session *ss, const json_t *id, const json_t *params)
{
    char *err = NULL;
    if (session_sandbox_update(&ss->sandbox, params, &err) < 0) {
        jsonrpc_reply_error(ss->rpc, id, err ? JSONRPC_INVALID_PARAMS : JSONRPC_INTERNAL_ERROR,
                            err ? err : "out of memory");
        free(err);
        return;
    }
    /* the next call has another sandbox: the one set up ahead goes now */
    scheduler_discard_prepared(&ss->q);
    jsonrpc_reply(ss->rpc, id, json_object());
}

/* ---- tools/call ---- */

static void maybe_finish(struct mcp_server *s);
static void session_maybe_close(struct mcp_session *ss);
static size_t pending_output(const struct mcp_session *ss);

static json_t *
failure_json(const char *why)
{
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", why, "isError", 1);
}

/* ---- the session's calls (scheduler.h) ---- */

static struct mcp_session *
queue_session(const struct call_queue *q)
{
    return container_of(q, struct mcp_session, q);
}

/* ---- a call's answer: to its request, or kept by its task ---- */

static struct task *
call_task(struct mcp_session *ss, const struct call *c)
{
    return tasks_of_call(ss->tasks, c->id);
}

/* Answers c with result (taken), a tool result; failed: why (its text). */
static void
call_reply(struct mcp_session *ss, struct call *c, json_t *result, const char *why)
{
    struct task *t = call_task(ss, c);
    if (t)
        task_end_tool_result(t, result, why);
    else
        jsonrpc_reply(ss->rpc, c->id, result);
}

static void
call_reply_error(struct mcp_session *ss, struct call *c, int code, const char *message)
{
    struct task *t = call_task(ss, c);
    if (t)
        task_end_error(t, code, message);
    else
        jsonrpc_reply_error(ss->rpc, c->id, code, message);
}

/* A task's call's result is the task's (scheduler.h keep). */
static bool
queue_keep(struct call_queue *q, struct call *c, const struct call_result *cr)
{
    struct task *t = call_task(queue_session(q), c);
    if (t)
        task_end_result(t, cr);
    return t != NULL;
}

static void
queue_answer(struct call_queue *q, struct call *c, const struct call_result *cr)
{
    struct mcp_session *ss = queue_session(q);
    size_t len = 0;
    char *result = call_result_json(cr, &len);
    if (result)
        jsonrpc_reply_text(ss->rpc, c->id, result, len);
    else
        jsonrpc_reply_error(ss->rpc, c->id, JSONRPC_INTERNAL_ERROR,
                            "out of memory building the result");
}

static void
queue_refuse(struct call_queue *q, struct call *c, const char *why)
{
    call_reply(queue_session(q), c, failure_json(why), why);
}

static void
queue_drop(struct call_queue *q, struct call *c, const char *why)
{
    call_reply_error(queue_session(q), c, JSONRPC_INTERNAL_ERROR, why);
}

static size_t
queue_pending(const struct call_queue *q)
{
    return pending_output(queue_session(q));
}

static void
queue_ended(struct call_queue *q)
{
    struct mcp_session *ss = queue_session(q);
    struct mcp_server *s = ss->s;
    session_maybe_close(ss);
    maybe_finish(s);
}

static const struct call_queue_ops queue_ops = {
    .answer = queue_answer,
    .refuse = queue_refuse,
    .drop = queue_drop,
    .pending = queue_pending,
    .ended = queue_ended,
    .keep = queue_keep,
};

static void
on_call_progress(struct call *c, json_t *params)
{
    struct mcp_session *ss = c->session;
    /* a task's progress names the task */
    json_t *meta = tasks_related_meta(c->id);
    if (meta && json_object_set_new(params, "_meta", meta) < 0)
        log_debug("task: out of memory: a progress notification does not name its task");
    jsonrpc_notify(ss->rpc, "notifications/progress", params);
}

/* A call of ss for r, under call_id (the request's id, or its task's),
 * answering request id on failure.  It takes its place among the
 * session's calls now. */
static struct call *
build_call(struct mcp_session *ss, const json_t *id, const json_t *call_id,
           const struct call_request *r)
{
    char *err = NULL;
    /* the id is referenced, not copied: jansson counts a const value's
     * references all the same */
    struct call *c = call_new(&ss->s->cx, (json_t *)call_id, r, ss->client, ss->net_client,
                              scheduler_snapshots(ss->s->sched), &err);
    if (!c) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INTERNAL_ERROR, err ? err : "out of memory");
        free(err);
        return NULL;
    }
    c->session = ss;
    c->progress = on_call_progress;
    c->seq = ++ss->q.next_seq;
    return c;
}

/* Whether policy (a sandboxPolicy) confines nothing: danger-full-access. */
static bool
full_access(const json_t *policy)
{
    const char *type = json_string_value(json_object_get(policy, "type"));
    return type && strcmp(type, sandbox_kind_name(SANDBOX_DANGER_FULL_ACCESS)) == 0;
}

static void on_leave_answer(void *data, const char *refused, char *said);

/* require_escalated: asks the person whether c (built for r, under full
 * access) may run outside the sandbox; c waits on the asking list for the
 * answer.  Where nobody can be asked, c is answered and freed. */
static void
ask_leave_sandbox(struct mcp_session *ss, struct call *c, const struct call_request *r)
{
    const char *why = NULL;
    char *planted = NULL;
    if (r->login &&
        leave_sandbox_planted(ss->s->cx.decide,
                              ss->s->o->shell == OPTIONS_SHELL_ZSH ? "zsh" : "bash", &planted)) {
        /* nobody is asked: the question could not show that code */
        why = planted ? planted : LEAVE_SANDBOX_PLANTED;
        log_info("call: %s", why);
        call_reply(ss, c, failure_json(why), why);
        free(planted);
        call_free(c);
        return;
    }
    const struct leave_sandbox_what what = {
        .command = r->command,
        .workdir = r->workdir,
        .login = r->login,
        .justification = r->justification,
    };
    c->leave = leave_sandbox_ask(decide_call_asking(c->dc), &what, on_leave_answer, c, &why);
    if (c->leave) {
        log_info("call: asking whether it may run outside the sandbox");
        call_list_push(&ss->q.asking, c);
        return;
    }
    log_info("call: not run outside the sandbox: %s", why);
    call_reply(ss, c, failure_json(why), why);
    call_free(c);
}

/* The answer to ask_leave_sandbox's question: approved, the call waits
 * for its turn like any other; else its result says why it did not run. */
static void
on_leave_answer(void *data, const char *refused, char *said)
{
    struct call *c = data;
    struct mcp_session *ss = c->session;
    c->leave = NULL;
    if (!refused && (ss->ending || ss->s->shutting_down))
        refused = "Not run: execgate is shutting down";
    call_list_remove(&ss->q.asking, c);
    if (refused) {
        log_info("call: %s", refused);
        if (ss->rpc && !ss->ending)
            call_reply(ss, c, failure_json(refused), refused);
        free(said);
        call_free(c);
    } else {
        log_info("call: approved to run outside the sandbox");
        c->said = said; /* the first line of person_said */
        scheduler_submit(&ss->q, c);
    }
}

/* The sandbox r runs under, into r->policy and r->sandbox_cwd
 * (session_sandbox_for_call).  On error answers and returns -1. */
static int
call_sandbox(struct mcp_session *ss, const json_t *id, const json_t *params, struct call_request *r)
{
    char *err = NULL;
    if (session_sandbox_for_call(&ss->sandbox, json_object_get(params, "_meta"), r->workdir,
                                 &r->policy, &r->sandbox_cwd, &r->parsed, &err) < 0) {
        jsonrpc_reply_error(ss->rpc, id, err ? JSONRPC_INVALID_PARAMS : JSONRPC_INTERNAL_ERROR,
                            err ? err : "out of memory");
        free(err);
        return -1;
    }
    return 0;
}

/* The task a tools/call asks for in params ("task"), into *t (NULL: it
 * asks for none, or the session did not agree on tasks, and the call is
 * a plain one).  On error answers and returns -1. */
static int
task_for_call(struct mcp_session *ss, const json_t *id, const json_t *params, struct task **t)
{
    const json_t *task = ss->tasks_on ? json_object_get(params, "task") : NULL;
    *t = NULL;
    if (!task || json_is_null(task))
        return 0;
    if (!json_is_object(task)) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS, "task: must be an object");
        return -1;
    }
    const char *why = NULL;
    *t = tasks_create(ss->tasks, task, &why);
    if (!*t) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INTERNAL_ERROR, why);
        return -1;
    }
    return 0;
}

/* c runs as task t: request id is answered with the task now, and t
 * follows c's questions.  Returns -1 when out of memory (id answered). */
static int
task_begin(struct mcp_session *ss, const json_t *id, struct task *t, struct call *c)
{
    json_t *created = task_created_json(t);
    if (!created) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    jsonrpc_reply(ss->rpc, id, created);
    task_watch(t, decide_call_asking(c->dc));
    c->held_by_owner = true; /* the task holds its questions' line */
    return 0;
}

/* tools/call: parse, build the call, queue it (it starts when there is
 * room; one that asks to leave the sandbox, once a person approved).  A
 * call the client runs as a task is answered with the task at once. */
static void
handle_call(struct mcp_session *ss, const json_t *id, const json_t *params)
{
    struct call_request r = {0};
    const json_t *args = NULL;
    char *err = NULL;
    const char *name = json_string_value(json_object_get(params, "name"));
    if (name && tool_exec_is(name)) {
        /* only shell offers taskSupport (tools/list): the specification's
         * answer to a task asked of another tool */
        const json_t *task = ss->tasks_on ? json_object_get(params, "task") : NULL;
        if (task && !json_is_null(task)) {
            jsonrpc_reply_error(ss->rpc, id, JSONRPC_METHOD_NOT_FOUND,
                                "this tool does not run as a task (only shell does): call it "
                                "without \"task\"; it answers within its yield time");
            return;
        }
        tool_exec_call(&ss->exec, id, name, params, json_object_get(params, "arguments"));
        return;
    }
    int rc = tool_shell_arguments(params, &args, &err);
    if (rc == 0 && scheduler_busy_id(&ss->q, id)) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_REQUEST,
                            "a call with this id is still running");
        return;
    }
    if (rc == 0)
        rc = tool_shell_request(ss->s->o, params, args, &r, &err);
    if (rc < 0) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS, err ? err : "out of memory");
        free(err);
        return;
    }
    if (call_sandbox(ss, id, params, &r) < 0)
        return;
    if (r.leave_sandbox && full_access(r.policy)) {
        log_debug("call: asks to leave the sandbox, and its policy is full access already");
        r.leave_sandbox = false;
    }
    if (r.leave_sandbox) {
        json_decref(r.policy);
        r.policy = json_pack("{s:s}", "type", sandbox_kind_name(SANDBOX_DANGER_FULL_ACCESS));
        sandbox_policy_free(r.parsed); /* call_new parses the new one */
        r.parsed = NULL;
    }
    struct task *t = NULL;
    if (r.policy && task_for_call(ss, id, params, &t) < 0) {
        json_decref(r.policy);
        free(r.sandbox_cwd);
        sandbox_policy_free(r.parsed);
        return;
    }
    struct call *c = r.policy ? build_call(ss, id, t ? task_call_id(t) : id, &r) : NULL;
    if (!r.policy)
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
    if (t && (!c || task_begin(ss, id, t, c) < 0)) {
        tasks_discard(t);
        call_free(c);
        c = NULL;
    }
    if (c && r.leave_sandbox) {
        ask_leave_sandbox(ss, c, &r);
    } else if (c) {
        scheduler_submit(&ss->q, c);
    }
    json_decref(r.policy);
    free(r.sandbox_cwd);
    sandbox_policy_free(r.parsed);
}

/* Forgets c's question to leave the sandbox and tells the client to close
 * it. */
static void
leave_question_close(struct call *c)
{
    leave_sandbox_withdraw(c->leave);
    c->leave = NULL;
}

/* Stops the call with this id: asking, waiting, running or holding its
 * answer (it ends without one). */
static void
handle_cancelled_id(struct mcp_session *ss, const json_t *id)
{
    struct call *c = call_list_find(&ss->q.asking, id);
    if (c) {
        call_list_remove(&ss->q.asking, c);
        leave_question_close(c);
        call_free(c);
        log_info("a call was cancelled while a person was asked to let it leave the sandbox");
        return;
    }
    if (!tool_exec_cancel(&ss->exec, id))
        scheduler_cancel(&ss->q, id);
}

static void
handle_cancelled(struct mcp_session *ss, const json_t *params)
{
    const json_t *id = json_object_get(params, "requestId");
    if (id && !tasks_cancelled(ss->tasks, id))
        handle_cancelled_id(ss, id);
}

/* logging/setLevel {level}: the least severe record the client is sent. */
static void
handle_set_level(struct mcp_session *ss, const json_t *id, const json_t *params)
{
    const char *level = json_string_value(json_object_get(params, "level"));
    if (client_log_set_level(ss->client_log, level) < 0) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS,
                            "level: must be one of debug, info, notice, warning, error, critical, "
                            "alert, emergency");
        return;
    }
    log_debug("client log level: %s", level);
    jsonrpc_reply(ss->rpc, id, json_object());
}

/* ---- dispatch ---- */

static void
on_request(struct jsonrpc *rpc, const json_t *id, const char *method, const json_t *params,
           void *data)
{
    struct mcp_session *ss = data;
    if (strcmp(method, "ping") == 0) {
        jsonrpc_reply(rpc, id, json_object());
        return;
    }
    if (strcmp(method, "initialize") == 0) {
        handle_initialize(ss, id, params);
        return;
    }
    bool known = strcmp(method, "tools/list") == 0 || strcmp(method, "tools/call") == 0 ||
                 strcmp(method, "codex/sandbox-state/update") == 0 ||
                 strcmp(method, "logging/setLevel") == 0 || (ss->tasks_on && tasks_method(method));
    if (!known) {
        reply_error_fmt(ss, id, JSONRPC_METHOD_NOT_FOUND, "method not found: %s", method);
        return;
    }
    if (!ss->initialized) {
        reply_error_fmt(ss, id, JSONRPC_INVALID_REQUEST,
                        "not initialized: send initialize before %s", method);
        return;
    }
    if (strcmp(method, "tools/list") == 0) {
        json_t *tool = tool_shell_definition(ss->s->o);
        if (tool && ss->tasks_on && tool_shell_offer_tasks(tool) < 0) {
            json_decref(tool);
            tool = NULL;
        }
        json_t *tools = tool ? json_pack("[o]", tool) : NULL;
        if (tools && tool_exec_definitions(ss->s->o, tools) < 0) {
            json_decref(tools);
            tools = NULL;
        }
        jsonrpc_reply(rpc, id, tools ? json_pack("{s:o}", "tools", tools) : NULL);
    } else if (tasks_method(method)) {
        tasks_request(ss->tasks, id, method, params);
    } else if (strcmp(method, "tools/call") == 0) {
        handle_call(ss, id, params);
    } else if (strcmp(method, "logging/setLevel") == 0) {
        handle_set_level(ss, id, params);
    } else {
        handle_update(ss, id, params);
    }
}

static void
on_notification(struct jsonrpc *rpc, const char *method, const json_t *params, void *data)
{
    struct mcp_session *ss = data;
    if (strcmp(method, "notifications/cancelled") == 0)
        handle_cancelled(ss, params);
    else if (strcmp(method, "notifications/initialized") == 0)
        log_debug("client initialized");
    else
        log_debug("ignoring notification %s", method);
}

static void
on_eof(struct jsonrpc *rpc, void *data)
{
    struct mcp_session *ss = data;
    mcp_server_shutdown(ss->s, "end of input");
}

/* Output was written: calls held back by --max-pending-output may start. */
static void
on_output_written(struct jsonrpc *rpc, void *data)
{
    struct mcp_session *ss = data;
    scheduler_run(ss->s->sched);
}

static const struct jsonrpc_handler rpc_handler = {
    .on_request = on_request,
    .on_notification = on_notification,
    .on_eof = on_eof,
    .on_written = on_output_written,
};

/* ---- life ---- */

/* ---- sessions ---- */

bool
mcp_protocol_supported(const char *version)
{
    for (size_t i = 0; i < ARRAY_SIZE(protocol_versions); i++) {
        if (strcmp(version, protocol_versions[i]) == 0)
            return true;
    }
    return false;
}

static int
session_sink(void *data, struct jsonrpc_out *m)
{
    struct mcp_session *ss = data;
    if (!ss->sink) {
        /* the session ended: its client is no longer there to read it */
        free(m->own[0]);
        free(m->own[1]);
        return -1;
    }
    return ss->sink(ss->sink_data, m);
}

/* ---- the session's tasks (tasks.h) ---- */

static struct jsonrpc *
tasks_rpc(void *data)
{
    struct mcp_session *ss = data;
    return ss->ending ? NULL : ss->rpc;
}

/* tasks/cancel: the task's call is stopped as notifications/cancelled
 * stops a request's. */
static void
tasks_cancel(void *data, const json_t *call_id)
{
    struct mcp_session *ss = data;
    handle_cancelled_id(ss, call_id);
}

static const struct tasks_ops tasks_ops = {
    .rpc = tasks_rpc,
    .cancel = tasks_cancel,
};

static void
session_free(struct mcp_session *ss)
{
    if (!ss)
        return;
    scheduler_remove_queue(&ss->q);
    tasks_free(ss->tasks);
    session_sandbox_release(&ss->sandbox);
    client_log_free(ss->client_log);
    decide_client_unref(ss->client);
    call_net_client_unref(ss->net_client);
    free(ss);
}

/* ---- background processes (tool_exec.h) ---- */

static struct call *
exec_build(void *owner, const json_t *id, const json_t *params, struct call_request *r)
{
    struct mcp_session *ss = owner;
    if (call_sandbox(ss, id, params, r) < 0)
        return NULL;
    struct call *c = r->policy ? build_call(ss, id, id, r) : NULL;
    if (!r->policy)
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
    json_decref(r->policy);
    free(r->sandbox_cwd);
    sandbox_policy_free(r->parsed);
    r->policy = NULL;
    r->sandbox_cwd = NULL;
    r->parsed = NULL;
    return c;
}

static void
exec_reply(void *owner, const json_t *id, json_t *result)
{
    struct mcp_session *ss = owner;
    if (!result)
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
    else
        jsonrpc_reply(ss->rpc, id, result);
}

static void
exec_error(void *owner, const json_t *id, int code, const char *message)
{
    struct mcp_session *ss = owner;
    jsonrpc_reply_error(ss->rpc, id, code, message);
}

/* The last process of an ended session is gone. */
static void
on_processes_gone(void *data)
{
    struct mcp_session *ss = data;
    struct mcp_server *s = ss->s;
    session_maybe_close(ss);
    maybe_finish(s);
}

static void
session_init_processes(struct mcp_session *ss)
{
    const struct server_options *o = ss->s->o;
    size_t ring = o->max_background ? o->max_background_output / o->max_background : 1;
    process_table_init(&ss->procs, ss->s->loop, ring ? ring : 1, on_processes_gone, ss);
    ss->exec = (struct tool_exec_host){
        .o = o,
        .procs = &ss->procs,
        .owner = ss,
        .build = exec_build,
        .reply = exec_reply,
        .error = exec_error,
    };
}

/*
 * A session with the server's starting policy (--sandbox, else
 * read-only), its own log and approvals, and a transport not started.
 * Listed in s->sessions.  NULL with *err (malloc'd; NULL: out of memory)
 * on failure.
 */
static struct mcp_session *
session_new(struct mcp_server *s, char **err)
{
    struct mcp_session *ss = calloc(1, sizeof(*ss));
    if (!ss)
        return NULL;
    ss->s = s;
    list_init(&ss->node);
    session_init_processes(ss);
    char *why = NULL;
    int rc = session_sandbox_init(&ss->sandbox, s->o->sandbox, s->o->sandbox_cwd, &why);
    if (rc < 0 && asprintf(err, "--sandbox: %s", why ? why : "out of memory") < 0)
        *err = NULL;
    free(why);
    if (rc == 0 && !(ss->tasks = tasks_new(s->o->task_ttl_ms, s->o->max_tasks, &tasks_ops, ss)))
        rc = -1;
    if (rc == 0 && (!(ss->client_log = client_log_new()) || !(ss->client = decide_client_new()) ||
                    !(ss->net_client = call_net_client_new(s->loop, s->o->sandbox_helper)) ||
                    !(ss->rpc = jsonrpc_new(s->loop, &rpc_handler, ss, s->o->max_message_bytes))))
        rc = -1;
    if (rc < 0) {
        session_free(ss);
        return NULL;
    }
    ss->q.ops = &queue_ops;
    ss->q.client = ss->client;
    ss->q.net = ss->net_client;
    scheduler_add_queue(s->sched, &ss->q);
    list_insert_head(&s->sessions, &ss->node);
    s->n_sessions++;
    return ss;
}

static void on_grace_closed(uv_handle_t *h);

static void
on_session_rpc_closed(void *data)
{
    struct mcp_session *ss = data;
    struct mcp_server *s = ss->s;
    ss->rpc = NULL;
    decide_client_set(ss->client, NULL, false, NULL);
    client_log_set_rpc(ss->client_log, NULL);
    list_unlink(&ss->node);
    if (s->stdio == ss)
        s->stdio = NULL;
    s->n_sessions--;
    /* a session the server's shutdown closed: its transport lets go */
    if (ss->sink)
        ss->sink(ss->sink_data, NULL);
    session_free(ss);
    if (s->finishing && s->n_sessions == 0 && s->started &&
        !uv_is_closing((uv_handle_t *)&s->grace))
        uv_close((uv_handle_t *)&s->grace, on_grace_closed);
}

/* Closes an ended session's transport once its calls are gone (the
 * session is then freed, perhaps before this returns).  The stdio
 * transport first writes what waits for the client, until the grace
 * period ends. */
static void
session_maybe_close(struct mcp_session *ss)
{
    if (!(ss->ending || ss->s->finishing) || ss->rpc_closing)
        return;
    scheduler_send_held(&ss->q); /* answered at a shutdown, dropped when the session ended */
    if (ss->q.running.count > 0 || ss->q.prepared_live > 0 || ss->procs.live > 0)
        return;
    ss->rpc_closing = true;
    jsonrpc_close(ss->rpc, ss->sink != NULL || ss->ending, on_session_rpc_closed, ss);
}

/* Drops what waits, answering it with why when answer is set. */
static void
session_drop_waiting(struct mcp_session *ss, const char *answer)
{
    while (ss->q.asking.head) {
        struct call *c = ss->q.asking.head;
        call_list_remove(&ss->q.asking, c);
        leave_question_close(c);
        if (answer)
            call_reply_error(ss, c, JSONRPC_INTERNAL_ERROR, answer);
        call_free(c);
    }
    scheduler_drop_waiting(&ss->q, answer);
}

/* Bytes of ss's answers and notifications its client has not taken yet:
 * on stdio, the unwritten output; over HTTP, what its connections hold. */
static size_t
pending_output(const struct mcp_session *ss)
{
    size_t n = ss->rpc ? jsonrpc_pending_output(ss->rpc) : 0;
    if (ss->sink && ss->pending)
        n += ss->pending(ss->sink_data);
    return n;
}

struct mcp_session *
mcp_session_new(struct mcp_server *s, mcp_session_sink_fn sink, mcp_session_pending_fn pending,
                void *data)
{
    if (s->shutting_down)
        return NULL;
    char *err = NULL;
    struct mcp_session *ss = session_new(s, &err);
    free(err); /* the policy was checked when the server started */
    if (!ss)
        return NULL;
    ss->sink = sink;
    ss->pending = pending;
    ss->sink_data = data;
    ss->q.streams = true;
    /* over HTTP a notification with no stream open waits in a bounded
     * backlog, where status changes the client polls for anyway could
     * push out a question it has not fetched yet */
    tasks_set_notify(ss->tasks, false);
    jsonrpc_start_sink(ss->rpc, session_sink, ss);
    return ss;
}

void
mcp_session_output_taken(struct mcp_session *ss)
{
    if (!ss->ending)
        scheduler_run(ss->s->sched);
}

void
mcp_session_feed(struct mcp_session *ss, const char *buf, size_t len)
{
    if (!ss->ending)
        jsonrpc_feed(ss->rpc, buf, len);
}

void
mcp_session_end(struct mcp_session *ss, const char *why)
{
    if (ss->ending)
        return;
    ss->ending = true;
    ss->q.ending = true;
    ss->sink = NULL;
    log_info("session ends (%s): %u call(s) running are killed, %u waiting dropped", why,
             ss->q.running.count, ss->q.waiting.count);
    jsonrpc_stop_reading(ss->rpc);
    session_drop_waiting(ss, NULL);
    for (struct call *c = ss->q.running.head; c; c = c->next)
        call_cancel(c);
    scheduler_discard_prepared(&ss->q);
    process_table_end(&ss->procs);
    session_maybe_close(ss);
}

void
mcp_server_set_on_shutdown(struct mcp_server *s, void (*cb)(void *data), void *data)
{
    s->on_shutdown = cb;
    s->on_shutdown_data = data;
}

struct mcp_server *
mcp_server_new(uv_loop_t *loop, const struct server_options *o, char **err)
{
    struct mcp_server *s = calloc(1, sizeof(*s));
    *err = NULL;
    if (!s) {
        *err = strdup("out of memory");
        return NULL;
    }
    s->loop = loop;
    s->o = o;
    list_init(&s->sessions);
    s->cx.loop = loop;
    s->cx.o = o;
    s->sched = scheduler_new(&s->cx);
    /* the stdio client's session; serving HTTP, mcp_server_start drops it */
    s->stdio = s->sched ? session_new(s, err) : NULL;
    int rc = s->stdio ? 0 : -1;
    if (rc == 0) {
        /* the rules are loaded once, here; a bad rules file
         * refuses the start */
        struct decide_config dcfg = {
            .rules_paths = (const char *const *)o->rules,
            .n_rules_paths = o->rules_count,
            .default_rules_dir = o->rules_default ? o->rules[0] : NULL,
            .preserve_program_paths = o->preserve_program_paths,
            .audit_path = o->audit_log,
        };
        s->cx.decide = decide_server_new(&dcfg, err);
        s->cx.protect = s->cx.decide ? state_paths_new(o, &s->cx.n_protect) : NULL;
        s->cx.hide = s->cx.protect ? state_paths_hidden(o, &s->cx.n_hide) : NULL;
        if (s->cx.decide && !s->cx.hide) {
            decide_server_free(s->cx.decide);
            s->cx.decide = NULL;
        }
        rc = s->cx.decide ? 0 : -1;
        if (s->cx.decide)
            log_info("rules: %zu prefix rule(s) loaded", decide_server_rule_count(s->cx.decide));
    }
    if (rc == 0)
        rc = enforcement_choose(&s->cx, &s->instructions);
    if (rc == 0 && o->network_proxy != OPTIONS_NETWORK_PROXY_OFF) {
        s->cx.net = call_net_server_new(loop, s->cx.decide);
        rc = s->cx.net ? 0 : -1;
    }
    if (rc < 0) {
        if (!*err)
            *err = strdup("out of memory");
        call_net_server_free(s->cx.net);
        if (s->stdio) {
            jsonrpc_close(s->stdio->rpc, 1, NULL, NULL);
            session_free(s->stdio);
        }
        scheduler_free(s->sched);
        decide_server_free(s->cx.decide);
        free(s->instructions);
        strv_free(s->cx.protect);
        strv_free(s->cx.hide);
        free(s);
        return NULL;
    }
    return s;
}

/* A record for every session's client (each at its own level). */
static void
log_all(struct mcp_server *s, enum client_log_level level, json_t *data)
{
    struct list *n;
    list_foreach(n, &s->sessions)
    {
        if (data)
            client_log_send(SESSION(n)->client_log, level, json_deep_copy(data));
    }
    json_decref(data);
}

static void
on_signal(uv_signal_t *h, int signum)
{
    struct mcp_server *s = h->data;
    if (s->shutting_down && !s->killed) {
        /* a second signal: no more grace */
        s->killed = true;
        scheduler_signal(s->sched, SIGKILL);
        return;
    }
    mcp_server_shutdown(s, signum == SIGINT ? "SIGINT" : "SIGTERM");
}

/* The rules changed on disk, or SIGHUP: a valid new set is in force for
 * every exec decided from now on; an invalid one leaves the old. */
static void
on_rules_changed(void *data)
{
    struct mcp_server *s = data;
    char *err = NULL;
    if (decide_server_reload(s->cx.decide, &err) == 0) {
        size_t n = decide_server_rule_count(s->cx.decide);
        log_info("rules: reloaded: %zu prefix rule(s) in force", n);
        log_all(s, CLIENT_LOG_INFO,
                json_pack("{s:s, s:I}", "event", "rules-reloaded", "rules", (json_int_t)n));
    } else {
        const char *why = err ? err : "out of memory";
        log_error("rules: not reloaded, the rules loaded before stay in force: %s", why);
        log_all(s, CLIENT_LOG_ERROR,
                json_pack("{s:s, s:s, s:s}", "event", "rules-reload-failed", "error", why,
                          "message",
                          "the rules were not reloaded; the rules loaded before stay in "
                          "force"));
    }
    free(err);
}

int
mcp_server_start(struct mcp_server *s, int in_fd, int out_fd)
{
    s->started = true;
    s->cgroups = call_cgroup_probe();
    if (s->cgroups)
        log_info("%s", call_cgroup_describe(s->cgroups));
    const char *refused = s->cgroups ? call_cgroup_probe_into_refused(s->cgroups) : NULL;
    if (refused)
        log_info("cgroups: a call's first process joins its v2 cgroup by writing cgroup.procs, "
                 "which can wait for the kernel's cgroup lock (%s)",
                 refused);
    s->cx.pool = call_cgroup_pool_new(s->cgroups, s->o->max_processes, s->o->max_memory);
    call_cgroup_guard_start(s->loop, s->cgroups, &s->guard);
    /* login calls' snapshots: the store is in a private directory that
     * every call's sandbox binds read-only */
    if (s->o->login_snapshot)
        scheduler_start_login_snapshots(s->sched, &s->cx.protect, &s->cx.n_protect);
    uv_signal_init(s->loop, &s->sigterm);
    uv_signal_init(s->loop, &s->sigint);
    uv_timer_init(s->loop, &s->grace);
    s->sigterm.data = s->sigint.data = s->grace.data = s;
    s->handles_open = 3;
    int rc = uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    if (rc == 0)
        rc = uv_signal_start(&s->sigint, on_signal, SIGINT);
    if (rc == 0) {
        /* descendants that outlive their parents stay ours to kill and reap */
        char *err = NULL;
        s->reaper = reaper_new(s->loop, &err);
        if (!s->reaper)
            log_warn("not a child subreaper: %s: orphans of commands go to init",
                     err ? err : "out of memory");
        free(err);
    }
    if (rc == 0) {
        size_t n = 0;
        const char *const *paths = decide_server_rules_paths(s->cx.decide, &n);
        s->rules_watch = rules_watch_new(s->loop, paths, n, on_rules_changed, s);
        if (!s->rules_watch)
            log_warn("rules: out of memory: they are not reloaded when they change");
    }
    if (rc == 0 && in_fd >= 0) {
        rc = jsonrpc_start(s->stdio->rpc, in_fd, out_fd);
    } else if (rc == 0 && s->stdio) {
        /* serving HTTP: no stdio client (its transport never started, so
         * it closes at once) */
        s->stdio->ending = true;
        s->stdio->q.ending = true;
        session_maybe_close(s->stdio);
    }
    return rc;
}

void
mcp_server_feed(struct mcp_server *s, const char *buf, size_t len)
{
    if (s->stdio)
        jsonrpc_feed(s->stdio->rpc, buf, len);
}

static void
on_grace_expired(uv_timer_t *t)
{
    struct mcp_server *s = t->data;
    if (s->finishing) {
        /* the client does not read what is left: stop waiting for it */
        log_warn("output not flushed within %llu ms of shutdown; dropping it",
                 (unsigned long long)s->o->kill_grace_ms);
        struct list *n, *next;
        list_foreach_safe(n, next, &s->sessions)
        {
            if (SESSION(n)->rpc)
                jsonrpc_close(SESSION(n)->rpc, 1, NULL, NULL);
        }
        return;
    }
    log_info("grace period over: killing %u call(s)", scheduler_running(s->sched));
    s->killed = true;
    scheduler_signal(s->sched, SIGKILL);
}

void
mcp_server_shutdown(struct mcp_server *s, const char *why)
{
    if (s->shutting_down)
        return;
    s->shutting_down = true;
    scheduler_stop(s->sched);
    unsigned waiting = 0;
    struct list *n;
    list_foreach(n, &s->sessions)
    {
        waiting += SESSION(n)->q.waiting.count;
    }
    log_info("shutting down (%s): %u call(s) running, %u waiting", why, scheduler_running(s->sched),
             waiting);
    /* no new clients (the HTTP transport closes its listeners) */
    if (s->on_shutdown)
        s->on_shutdown(s->on_shutdown_data);
    list_foreach(n, &s->sessions)
    {
        jsonrpc_stop_reading(SESSION(n)->rpc);
        session_drop_waiting(SESSION(n), "execgate is shutting down: the call did not start");
        process_table_end(&SESSION(n)->procs);
    }
    scheduler_signal(s->sched, SIGTERM);
    if (scheduler_live(s->sched) > 0 && s->started)
        uv_timer_start(&s->grace, on_grace_expired, s->o->kill_grace_ms, 0);
    maybe_finish(s);
}

static void
on_server_handle_closed(uv_handle_t *h)
{
    struct mcp_server *s = h->data;
    s->handles_open--;
}

static void
on_grace_closed(uv_handle_t *h)
{
    on_server_handle_closed(h);
}

/* Whether a background process of any session is not gone yet. */
static bool
processes_live(const struct mcp_server *s)
{
    const struct list *n;
    list_foreach(n, &s->sessions)
    {
        if (SESSION(n)->procs.live > 0)
            return true;
    }
    return false;
}

static void
maybe_finish(struct mcp_server *s)
{
    if (!s->shutting_down || scheduler_live(s->sched) > 0 || processes_live(s) || s->finishing)
        return;
    s->finishing = true;
    if (s->started) {
        uv_close((uv_handle_t *)&s->sigterm, on_server_handle_closed);
        uv_close((uv_handle_t *)&s->sigint, on_server_handle_closed);
        reaper_close(s->reaper);
        s->reaper = NULL;
        /* it outlives the server, and ends by itself when the server has */
        call_cgroup_guard_release(&s->guard);
        rules_watch_close(s->rules_watch);
        s->rules_watch = NULL;
        call_net_server_free(s->cx.net); /* no call is left to use it */
        s->cx.net = NULL;
        uv_timer_stop(&s->grace);
        uv_timer_start(&s->grace, on_grace_expired, s->o->kill_grace_ms, 0);
    }
    if (s->n_sessions == 0 && s->started) {
        uv_close((uv_handle_t *)&s->grace, on_grace_closed);
        return;
    }
    struct list *n, *next;
    list_foreach_safe(n, next, &s->sessions)
    {
        session_maybe_close(SESSION(n));
    }
}

void
mcp_server_free(struct mcp_server *s)
{
    if (!s)
        return;
    while (!list_empty(&s->sessions)) {
        /* none is left after a loop that ran dry; freed all the same */
        struct mcp_session *ss = SESSION(s->sessions.next);
        list_unlink(&ss->node);
        session_free(ss);
    }
    scheduler_free(s->sched);
    free(s->instructions);
    strv_free(s->cx.protect);
    strv_free(s->cx.hide);
    call_net_server_free(s->cx.net);
    decide_server_free(s->cx.decide);
    call_cgroup_pool_free(s->cx.pool);
    call_cgroup_probe_free(s->cgroups);
    free(s);
}
