#include "server/mcp.h"

#include "server/call_cgroup.h"
#include "server/call_fds.h"
#include "server/call_net.h"
#include "server/call_result.h"
#include "sandbox/cmdline.h"
#include "sandbox/placeholder.h"
#include "server/escalation.h"
#include "server/spawn_child.h"
#include "server/client_log.h"
#include "server/decide.h"
#include "server/exec_watch.h"
#include "server/rules_watch.h"
#include "server/sandbox_state.h"
#include "server/state_paths.h"
#include "execgate-config.h"
#include "server/jsonrpc.h"
#include "server/leave_sandbox.h"
#include "server/login_snapshot.h"
#include "server/log.h"
#include "rules/policy.h"
#include "sandbox/policy.h"
#include "sandbox/profile.h"
#include "server/reaper.h"
#include "server/shell_call.h"
#include "server/strfmt.h"
#include "server/utf8.h"
#include "server/writable_view.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INSTRUCTIONS                                                                               \
    "This server provides a tool to execute shell commands and return their output."
#define INSTRUCTIONS_TREE " Exec rules apply to every program a command starts, at any depth."
#define INSTRUCTIONS_SHELL                                                                         \
    " Exec rules apply to the programs the shell itself starts, not to programs those start."

static const char *const protocol_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
                                                MCP_LATEST_PROTOCOL};

/* One tools/call request, waiting or running. */
/* Emptied call cgroups kept for reuse (each holds a few fds). */
#define CGROUP_POOL 16

struct mcp_call {
    struct mcp_server *s;
    struct mcp_session *ss; /* the client's session it came from */
    json_t *id;
    json_t *progress_token; /* NULL: no progress was asked */
    struct shell_call *sc;
    struct escalation_call *ec; /* escalation hook; NULL once attached to sc */
    struct exec_watch *watch;   /* tree enforcement; NULL once attached to sc */
    bool helper_notifies;       /* the helper hands the watch its listener */
    struct decide_call *dc;     /* the call's decisions; NULL once attached to sc */
    char *aborted;              /* escalation hook: why a person aborted the call */
    char *said;                 /* approvals' reasons, a line each (on_call_said); or NULL */
    struct call_cgroup *cg;     /* every process of the call, once it runs; or NULL */
    struct call_net *net;       /* the network through the proxy; or NULL */
    bool running;
    /* login snapshot hook: a login call that may source a snapshot, until
     * it starts (its key and workdir); or the capture itself */
    char *snap_key, *snap_workdir;
    /* and the sandbox it runs under, which its capture runs under too */
    json_t *snap_policy;
    char *snap_sandbox_cwd;
    bool snap_capture;
    /* require_escalated: the question to leave the sandbox, while out
     * (the call is on its session's asking list then) */
    long long ask_id;
    /* the roots where its sandbox may hold a placeholder .codex
     * (canonical; NULL-terminated, or NULL: none) */
    char **codex_roots;
    /* an ended call whose answer waits for room under
     * --max-pending-output (the session's held list): its result, the
     * kept output copied (head, marker and tail in one run) */
    struct call_result held;
    struct output_ring_text held_text;
    char *held_output;
    uint64_t seq; /* its place among its session's calls, in the order they came */
    struct mcp_call *prev, *next;
};

struct call_list {
    struct mcp_call *head, *tail;
    unsigned count;
};

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

    /* The policy for calls that arrive now: a sandboxPolicy object and its
     * sandboxCwd (NULL: the call's workdir). */
    json_t *policy;
    char *policy_cwd;
    /* Or, when the last update carried a permissionProfile, that update's
     * state (sandbox_state.h), resolved for each call against its
     * workdir (globs expanded then); NULL: policy and policy_cwd. */
    json_t *state;

    /* asking: calls whose question to leave the sandbox is out; held:
     * ended calls whose answers wait for room (hold_answer) */
    struct call_list asking, waiting, running, held;
    uint64_t next_seq;
    /* the oldest call (seq) answered since nothing waited for the client;
     * UINT64_MAX: none (answer_fits) */
    uint64_t sent_oldest;
    struct client_log *client_log;      /* notifications/message for the client */
    struct decide_client *client;       /* its questions and approvals */
    struct call_net_client *net_client; /* its network questions and approvals */

    /* HTTP: messages go to sink(sink_data, m) until the session ends */
    mcp_session_sink_fn sink;
    mcp_session_pending_fn pending;
    void *sink_data;
    bool ending, rpc_closing;
    struct mcp_session *prev, *next;
};

struct mcp_server {
    uv_loop_t *loop;
    const struct server_options *o;
    struct mcp_session *stdio; /* the stdio client, or NULL when serving HTTP */
    struct mcp_session *sessions;
    unsigned n_sessions;
    unsigned n_running; /* calls running in all sessions */
    void (*on_shutdown)(void *data);
    void *on_shutdown_data;

    struct decide_server *decide; /* rules, approvals, audit: every exec's decision */
    bool tree;                    /* tree enforcement in force */
    bool user_notif;              /* the kernel can: sandboxed sockets are supervised */
    /* shell mode: escalated programs still start under the exec filter,
     * so what they start is decided (docs/enforcement.md) */
    bool watch_escalated;
    char *instructions; /* initialize's, saying which enforcement */
    char **protect;     /* the server's own files: read-only in every sandbox */
    size_t n_protect;
    char **hide; /* the server's state: invisible in every sandbox (state_paths_hidden) */
    size_t n_hide;
    struct rules_watch *rules_watch;   /* reloads the rules when they change */
    struct call_net_server *net;       /* the network proxy (--network-proxy); or NULL */
    struct call_cgroup_probe *cgroups; /* what the machine offers for per-call cgroups */
    struct spawn_child *guard;         /* kills what calls left if the server dies; or NULL */
    /* emptied cgroups of ended calls, kept for the next calls */
    struct call_cgroup *cgroup_pool[CGROUP_POOL];
    size_t n_cgroup_pool;
    struct reaper *reaper;
    /* login calls' snapshots of the login environment; NULL: off */
    struct login_snapshot *snap;
    const struct login_snapshot_kind *snap_kind;

    bool started, shutting_down, finishing, killed;
    uv_signal_t sigterm, sigint;
    uv_timer_t grace;
    int handles_open;
};

/* ---- lists ---- */

static void
list_push(struct call_list *l, struct mcp_call *c)
{
    c->prev = l->tail;
    c->next = NULL;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->count++;
}

static void
list_remove(struct call_list *l, struct mcp_call *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        l->tail = c->prev;
    c->prev = c->next = NULL;
    l->count--;
}

static struct mcp_call *
list_find(const struct call_list *l, const json_t *id)
{
    for (struct mcp_call *c = l->head; c; c = c->next) {
        if (json_equal(c->id, id))
            return c;
    }
    return NULL;
}

/*
 * Kills whatever the call left in its cgroup: at its end, cancel, timeout
 * and shutdown alike.  A cgroup the call left empty is kept for a later
 * call (making and removing the directories and setting the limits cost
 * the loop more than the rest of an `echo hi` call); one that had to be
 * killed is removed, because a kill leaves marks a later call must not
 * meet: killed by cgroup.freeze the cgroup stays frozen, and so would the
 * next call's processes.
 */
static void
end_cgroup(struct mcp_call *c)
{
    if (!c->cg)
        return;
    struct mcp_server *s = c->s;
    if (call_cgroup_empty(c->cg) == 1 && s->n_cgroup_pool < CGROUP_POOL && !s->shutting_down) {
        call_cgroup_park(c->cg);
        s->cgroup_pool[s->n_cgroup_pool++] = c->cg;
        c->cg = NULL;
        return;
    }
    int rc = call_cgroup_kill(c->cg);
    if (rc < 0)
        log_warn("call: cannot kill what is left in its cgroup: %s", strerror(-rc));
    call_cgroup_free(c->cg);
    c->cg = NULL;
}

static void
call_free(struct mcp_call *c)
{
    end_cgroup(c);
    call_net_free(c->net);
    json_decref(c->id);
    json_decref(c->progress_token);
    escalation_call_discard(c->ec);
    exec_watch_release(c->watch);
    decide_call_unref(c->dc);
    free(c->aborted);
    free(c->said);
    free(c->snap_key);
    free(c->snap_workdir);
    json_decref(c->snap_policy);
    free(c->snap_sandbox_cwd);
    for (size_t i = 0; c->codex_roots && c->codex_roots[i]; i++)
        free(c->codex_roots[i]);
    free(c->codex_roots);
    free(c->held_output);
    free(c);
}

/*
 * The server killed c (a timeout, a cancel, an abort, the shutdown): its
 * helper, killed with SIGKILL, cannot remove the placeholder .codex it
 * held, so the server does what that helper's end would have done: in
 * each of the call's roots, a placeholder no sandbox holds any more goes
 * (sandbox/placeholder.h).
 */
static void
sweep_placeholders(const struct mcp_call *c)
{
    for (size_t i = 0; c->codex_roots && c->codex_roots[i]; i++) {
        const char *root = c->codex_roots[i];
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int rc = fd < 0 ? -errno : sandbox_placeholder_sweep(fd, ".codex");
        if (fd >= 0)
            close(fd);
        if (rc == 1)
            log_info("call: removed the placeholder %s/.codex its killed sandbox left", root);
        else if (rc < 0 && rc != -ENOENT)
            log_warn("call: cannot remove a placeholder %s/.codex: %s", root, strerror(-rc));
    }
}

/* c's placeholder roots, from its decisions' view (the helper's repo
 * roots).  Returns 0, or -1 when out of memory. */
static int
keep_codex_roots(struct mcp_call *c, const struct writable_view *v)
{
    if (v->kind != WRITABLE_VIEW_SOME || v->n_repo_roots == 0)
        return 0;
    c->codex_roots = calloc(v->n_repo_roots + 1, sizeof(*c->codex_roots));
    for (size_t i = 0; c->codex_roots && i < v->n_repo_roots; i++) {
        if (!(c->codex_roots[i] = strdup(v->repo_roots[i])))
            return -1;
    }
    return c->codex_roots ? 0 : -1;
}

/* ---- policy ---- */

static int
set_policy(struct mcp_session *ss, const json_t *policy, const char *cwd, char **err)
{
    struct sandbox_policy *p = sandbox_policy_from_json(policy, cwd, err);
    if (!p)
        return -1;
    char *desc = sandbox_policy_describe(p);
    sandbox_policy_free(p);
    json_t *copy = json_deep_copy(policy);
    char *cwd_copy = cwd ? strdup(cwd) : NULL;
    if (!copy || (cwd && !cwd_copy)) {
        json_decref(copy);
        free(cwd_copy);
        free(desc);
        *err = strdup("out of memory");
        return -1;
    }
    json_decref(ss->policy);
    free(ss->policy_cwd);
    json_decref(ss->state);
    ss->state = NULL;
    ss->policy = copy;
    ss->policy_cwd = cwd_copy;
    log_info("sandbox policy: %s%s%s", desc ? desc : "(?)",
             cwd ? "" : ", sandbox cwd = ", cwd ? "" : "each call's workdir");
    free(desc);
    return 0;
}

/* ---- answers ---- */

/*
 * The shell tool as tools/list shows it.  The input schema is the
 * reference's, property by property (timeout_ms and login "nullable", as it
 * sends them: null is the default), and Codex's own shell's arguments for
 * leaving the sandbox (sandbox_permissions, the older
 * with_escalated_permissions, justification); like the reference,
 * arguments it does not name are ignored, so it does not say
 * additionalProperties false.  The
 * title and annotations (MCP 2025-03-26 and later) tell a client that a
 * command may change anything the sandbox lets it reach and talk to the
 * world outside.
 */
static const char tool_json[] =
    "{\"name\":\"shell\",\"title\":\"Shell command\","
    "\"description\":\"Runs a shell command and returns its output. You MUST provide the "
    "workdir as an absolute path.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"command\":{\"description\":\"The bash string to execute.\",\"type\":\"string\"},"
    "\"workdir\":{\"description\":\"The working directory to execute the command in. Must be an "
    "absolute path.\",\"type\":\"string\"},"
    "\"timeout_ms\":{\"description\":\"The timeout for the command in milliseconds.\","
    "\"type\":\"integer\",\"format\":\"uint64\",\"minimum\":0,\"nullable\":true},"
    "\"login\":{\"description\":\"Launch Bash with -lc instead of -c: defaults to true.\","
    "\"type\":\"boolean\",\"nullable\":true},"
    "\"sandbox_permissions\":{\"description\":\"require_escalated asks the user to let the "
    "command run outside the sandbox, with the user's access to files and the network (the exec "
    "rules still apply); only when the sandbox stops a command that must run. Defaults to "
    "use_default.\",\"type\":\"string\",\"enum\":[\"use_default\",\"require_escalated\"],"
    "\"nullable\":true},"
    "\"with_escalated_permissions\":{\"description\":\"true is the older form of "
    "sandbox_permissions require_escalated.\",\"type\":\"boolean\",\"nullable\":true},"
    "\"justification\":{\"description\":\"With require_escalated: one sentence telling the user "
    "why the command must run outside the sandbox, shown when they are asked.\","
    "\"type\":\"string\",\"nullable\":true}},"
    "\"required\":[\"command\",\"workdir\"]},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"exit_code\":{\"type\":\"integer\"},\"output\":{\"type\":\"string\"},"
    "\"duration\":{\"type\":\"object\",\"properties\":{\"secs\":{\"type\":\"integer\"},"
    "\"nanos\":{\"type\":\"integer\"}},\"required\":[\"secs\",\"nanos\"]},"
    "\"timed_out\":{\"type\":\"boolean\"},\"sandbox_error\":{\"type\":\"string\"},"
    "\"shell_error\":{\"type\":\"string\"},\"aborted\":{\"type\":\"string\"},"
    "\"person_said\":{\"type\":\"string\"}},"
    "\"required\":[\"exit_code\",\"output\",\"duration\",\"timed_out\"]},"
    "\"annotations\":{\"title\":\"Shell command\",\"readOnlyHint\":false,"
    "\"destructiveHint\":true,\"idempotentHint\":false,\"openWorldHint\":true}}";

/* The tool for the server's shell: with zsh, the texts that name the
 * shell name zsh (with Bash they are the reference's, word for word). */
static json_t *
tool_definition(const struct server_options *o)
{
    json_t *tool = json_loads(tool_json, 0, NULL);
    if (!tool || o->shell != OPTIONS_SHELL_ZSH)
        return tool;
    json_t *props = json_object_get(json_object_get(tool, "inputSchema"), "properties");
    int rc = json_object_set_new(tool, "description",
                                 json_string("Runs a shell command with zsh and returns its "
                                             "output. You MUST provide the workdir as an "
                                             "absolute path."));
    rc |= json_object_set_new(json_object_get(props, "command"), "description",
                              json_string("The zsh string to execute."));
    rc |= json_object_set_new(json_object_get(props, "login"), "description",
                              json_string("Launch zsh with -lc instead of -c: defaults to true."));
    if (rc != 0) {
        json_decref(tool);
        return NULL;
    }
    return tool;
}

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
    for (size_t i = 0; asked && i < sizeof(protocol_versions) / sizeof(protocol_versions[0]); i++) {
        if (strcmp(asked, protocol_versions[i]) == 0)
            version = protocol_versions[i];
    }
    const json_t *caps = json_object_get(params, "capabilities");
    ss->client_elicitation = json_object_get(caps, "elicitation") != NULL;
    decide_client_set(ss->client, ss->rpc, ss->client_elicitation, ss->client_log);
    call_net_client_set(ss->net_client, ss->rpc, ss->client_elicitation, ss->client_log);
    /* records go out from now on: a client hears nothing before initialize */
    client_log_set_rpc(ss->client_log, ss->rpc);
    json_t *result =
        json_pack("{s:s, s:{s:o, s:{}, s:{}}, s:{s:s, s:s}, s:s}", "protocolVersion", version,
                  "capabilities", "experimental", experimental_capabilities(), "tools", "logging",
                  "serverInfo", "name", EXECGATE_NAME, "version", EXECGATE_VERSION, "instructions",
                  s->instructions ? s->instructions : INSTRUCTIONS);
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

/*
 * An update carrying a permissionProfile and no sandboxPolicy (clients
 * newer than the sandboxPolicy form): checked now against the sandbox cwd
 * it names (or "/" when none: each call's workdir stands in for it then),
 * kept as it came, and resolved again for each call.
 */
static void
update_profile(struct mcp_session *ss, const json_t *id, const json_t *params)
{
    json_t *policy = NULL;
    char *cwd = NULL, *err = NULL;
    if (sandbox_state_resolve(params, "/", &policy, &cwd, &err) < 0) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS, err ? err : "out of memory");
        free(err);
        return;
    }
    char *desc = NULL;
    struct sandbox_policy *p = sandbox_policy_from_json(policy, cwd, &err);
    if (p)
        desc = sandbox_policy_describe(p);
    sandbox_policy_free(p);
    free(err);
    json_decref(policy);
    free(cwd);
    json_t *copy = json_deep_copy(params);
    if (!copy) {
        free(desc);
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    json_decref(ss->state);
    ss->state = copy;
    const json_t *named = json_object_get(params, "sandboxCwd");
    log_info("sandbox state: permission profile, now %s%s", desc ? desc : "(?)",
             named && !json_is_null(named) ? "" : " (with \"/\" standing for each call's workdir)");
    free(desc);
    jsonrpc_reply(ss->rpc, id, json_object());
}

static void
handle_update(struct mcp_session *ss, const json_t *id, const json_t *params)
{
    const json_t *policy = json_object_get(params, "sandboxPolicy");
    const json_t *profile = json_object_get(params, "permissionProfile");
    if ((!policy || json_is_null(policy)) && profile && !json_is_null(profile)) {
        update_profile(ss, id, params);
        return;
    }
    const json_t *cwd = json_object_get(params, "sandboxCwd");
    if (!json_is_object(policy)) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS,
                            policy ? "sandboxPolicy: must be an object"
                                   : "sandboxPolicy: required");
        return;
    }
    if (cwd && json_is_null(cwd))
        cwd = NULL;
    char *err = NULL, *path = NULL;
    if (cwd &&
        (!json_is_string(cwd) || !(path = sandbox_profile_cwd(json_string_value(cwd), &err)))) {
        reply_error_fmt(ss, id, JSONRPC_INVALID_PARAMS, "%s",
                        err ? err : "sandboxCwd: must be an absolute path or a file:// URL");
        free(err);
        return;
    }
    int rc = set_policy(ss, policy, path, &err);
    free(path);
    if (rc < 0) {
        reply_error_fmt(ss, id, JSONRPC_INVALID_PARAMS, "sandboxPolicy: %s",
                        err ? err : "out of memory");
        free(err);
        return;
    }
    jsonrpc_reply(ss->rpc, id, json_object());
}

/* ---- tools/call ---- */

static void start_waiting(struct mcp_server *s);
static void maybe_finish(struct mcp_server *s);
static void session_maybe_close(struct mcp_session *ss);
static void login_capture_done(struct mcp_server *s, const struct shell_call_result *r);

static json_t *
failure_json(const char *why)
{
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", why, "isError", 1);
}

static void
on_call_abort(void *data, const char *why)
{
    struct mcp_call *c = data;
    if (!c->aborted)
        c->aborted = strdup(why);
    log_info("call: %s", why);
}

/* A reason typed with an approval, for the call's result (person_said). */
static void
on_call_said(void *data, const char *line)
{
    struct mcp_call *c = data;
    char *more = c->said ? strfmt("%s\n%s", c->said, line) : strdup(line);
    if (!more) {
        log_warn("call: out of memory keeping what a person said with an approval");
        return;
    }
    free(c->said);
    c->said = more;
}

static void
on_call_progress(struct shell_call *sc, const char *line, size_t len, uint64_t total, void *data)
{
    struct mcp_call *c = data;
    size_t text_len = 0;
    char *text = utf8_lossy(line, len, &text_len);
    if (!text)
        return;
    json_t *params = json_pack("{s:O, s:I, s:s%}", "progressToken", c->progress_token, "progress",
                               (json_int_t)total, "message", text, text_len);
    free(text);
    if (params)
        jsonrpc_notify(c->ss->rpc, "notifications/progress", params);
}

static bool answer_room(const struct mcp_server *s, const struct mcp_session *ss, size_t size);
static size_t pending_output(const struct mcp_session *ss);

/*
 * Whether c's answer (size bytes) may go now: there is room for it
 * (answer_room), or, over HTTP, it answers an older call than every
 * answer its client has not finished taking.  An HTTP client that reads
 * its answers in the order it asked (one connection after the other)
 * waits for this one and takes nothing else meanwhile: held behind a
 * later answer, it would wait forever.  On stdio the answers share one
 * stream, which the client reads in the order they come.
 */
static bool
answer_fits(struct mcp_session *ss, const struct mcp_call *c, size_t size)
{
    if (pending_output(ss) == 0)
        ss->sent_oldest = UINT64_MAX;
    return (ss->sink && c->seq < ss->sent_oldest) || answer_room(ss->s, ss, size);
}

/* Sends c's result (cr) as its answer. */
static void
answer_call(struct mcp_session *ss, struct mcp_call *c, const struct call_result *cr)
{
    if (pending_output(ss) == 0)
        ss->sent_oldest = UINT64_MAX;
    if (c->seq < ss->sent_oldest)
        ss->sent_oldest = c->seq;
    size_t len = 0;
    char *result = call_result_json(cr, &len);
    if (result)
        jsonrpc_reply_text(ss->rpc, c->id, result, len);
    else
        jsonrpc_reply_error(ss->rpc, c->id, JSONRPC_INTERNAL_ERROR,
                            "out of memory building the result");
}

/*
 * Keeps c's result, with a copy of its kept output, on ss's held list:
 * an answer is up to about 13 times the output it carries (call_result.h),
 * so while the client has not taken what it was sent, the output waits
 * as it is, not as its answer.  Returns -1 when out of memory (c is then
 * answered at once).
 */
static int
hold_answer(struct mcp_session *ss, struct mcp_call *c, const struct call_result *cr)
{
    const struct output_ring_text *o = cr->output;
    char marker[OUTPUT_RING_MARKER_MAX];
    size_t mlen = o->cut ? output_ring_marker(o->omitted, marker) : 0;
    size_t len = o->head_len + mlen + (o->cut ? o->tail_len : 0);
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, o->head, o->head_len);
    if (o->cut) {
        memcpy(copy + o->head_len, marker, mlen);
        memcpy(copy + o->head_len + mlen, o->tail, o->tail_len);
    }
    /* the marker begins and ends with a newline: the three pieces check
     * as UTF-8 alike apart or together (output_ring.h), so one run gives
     * the same answer */
    c->held_output = copy;
    c->held_text = (struct output_ring_text){.head = copy, .head_len = len, .tail = ""};
    c->held = *cr;
    c->held.output = &c->held_text;
    list_push(&ss->held, c);
    return 0;
}

/* Answers ss's held calls, the oldest call first, while they fit (or the
 * server shuts down: every call is answered then); drops them when the
 * session ended (nobody is there to take them). */
static void
send_held(struct mcp_session *ss)
{
    struct mcp_server *s = ss->s;
    while (ss->held.head) {
        struct mcp_call *c = ss->held.head;
        for (struct mcp_call *o = c->next; o; o = o->next)
            c = o->seq < c->seq ? o : c;
        if (!ss->ending && !s->shutting_down && !answer_fits(ss, c, call_result_size(&c->held)))
            break;
        list_remove(&ss->held, c);
        if (!ss->ending)
            answer_call(ss, c, &c->held);
        call_free(c);
    }
}

static void
on_call_done(struct shell_call *sc, const struct shell_call_result *r, void *data)
{
    struct mcp_call *c = data;
    struct mcp_server *s = c->s;
    struct mcp_session *ss = c->ss;
    list_remove(&ss->running, c);
    s->n_running--;
    /* nothing the call started outlives its answer */
    end_cgroup(c);
    if (r->timed_out || r->cancelled || c->aborted || s->shutting_down)
        sweep_placeholders(c);
    if (c->snap_capture) {
        login_capture_done(s, r);
    } else if (r->cancelled) {
        log_info("call: cancelled after %llu ms; no answer is sent",
                 (unsigned long long)(r->duration_ns / 1000000));
    } else if (!r->spawned) {
        log_error("call: %s", r->error ? r->error : "cannot start");
        jsonrpc_reply(ss->rpc, c->id, failure_json(r->error ? r->error : "cannot start"));
    } else {
        log_debug("call: exit %d after %llu ms, %zu bytes of output%s", r->exit_code,
                  (unsigned long long)(r->duration_ns / 1000000),
                  r->output.head_len + r->output.tail_len, r->timed_out ? ", timed out" : "");
        if (r->setup_failed)
            log_warn("call: the sandbox could not be set up; its reason is in the output");
        if (r->not_started)
            log_warn("call: the shell %s could not be started; the reason is in the output",
                     s->o->shell_path);
        /* escalation hook: a person answered `abort` to an approval in this
         * call; the result says so and is an error of the tool call */
        struct call_result cr = {
            .exit_code = r->exit_code,
            .output = &r->output,
            .duration_ns = r->duration_ns,
            .timed_out = r->timed_out,
            .setup_failed = r->setup_failed,
            .not_started = r->not_started,
            .aborted = c->aborted,
            .said = c->said,
        };
        if (!ss->ending && !s->shutting_down && !answer_fits(ss, c, call_result_size(&cr)) &&
            hold_answer(ss, c, &cr) == 0)
            c = NULL; /* answered by send_held */
        else
            answer_call(ss, c, &cr);
    }
    if (c)
        call_free(c);
    start_waiting(s);
    session_maybe_close(ss);
    maybe_finish(s);
}

static const struct shell_call_events call_events = {
    .on_progress = on_call_progress,
    .on_done = on_call_done,
};

/* A tools/call's arguments, checked; borrowed from the request. */
struct call_request {
    const char *command;
    const char *workdir; /* absolute, a directory when checked */
    uint64_t timeout_ms;
    bool login;
    const json_t *progress_token; /* NULL: no progress was asked */
    size_t max_output;            /* 0: --max-output-bytes */
    /* the agent asks to run it outside the sandbox (sandbox_permissions
     * "require_escalated", or with_escalated_permissions true), saying
     * why (justification, or NULL) */
    bool leave_sandbox;
    const char *justification;
    /* The sandbox the call runs under (call_sandbox): a sandboxPolicy
     * object and where it is rooted; owned, released by handle_call. */
    json_t *policy;
    char *sandbox_cwd;
};

/* Codex's arguments for leaving the sandbox, into *r: sandbox_permissions
 * ("use_default" or "require_escalated"), the older
 * with_escalated_permissions (a boolean) and justification (a string);
 * null is as absent.  On error answers -32602 and returns -1. */
static int
check_permissions(struct mcp_session *ss, const json_t *id, const json_t *args,
                  struct call_request *r)
{
    const json_t *perm = json_object_get(args, "sandbox_permissions");
    const json_t *old = json_object_get(args, "with_escalated_permissions");
    const json_t *just = json_object_get(args, "justification");
    const char *p = json_string_value(perm);
    if (perm && !json_is_null(perm) &&
        (!p || (strcmp(p, "use_default") != 0 && strcmp(p, "require_escalated") != 0))) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS,
                            "sandbox_permissions: must be \"use_default\" or "
                            "\"require_escalated\"");
        return -1;
    }
    if (old && !json_is_null(old) && !json_is_boolean(old)) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS,
                            "with_escalated_permissions: must be a boolean");
        return -1;
    }
    if (just && !json_is_null(just) && !json_is_string(just)) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS, "justification: must be a string");
        return -1;
    }
    r->leave_sandbox = (p && strcmp(p, "require_escalated") == 0) || json_is_true(old);
    r->justification = json_string_value(just);
    return 0;
}

/* Validates the arguments into *r; on error answers -32602 and returns -1. */
static int
check_arguments(struct mcp_session *ss, const json_t *id, const json_t *args,
                struct call_request *r)
{
    struct mcp_server *s = ss->s;
    const json_t *command = json_object_get(args, "command");
    const json_t *workdir = json_object_get(args, "workdir");
    const json_t *t = json_object_get(args, "timeout_ms");
    const json_t *l = json_object_get(args, "login");
    if (!json_is_string(command)) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS,
                            command ? "command: must be a string" : "command: required");
        return -1;
    }
    if (!json_is_string(workdir)) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS,
                            workdir ? "workdir: must be a string (an absolute path)"
                                    : "workdir: required (an absolute path)");
        return -1;
    }
    const char *wd = json_string_value(workdir);
    if (wd[0] != '/') {
        reply_error_fmt(ss, id, JSONRPC_INVALID_PARAMS,
                        "workdir: must be an absolute path, got '%s'", wd);
        return -1;
    }
    struct stat st;
    if (stat(wd, &st) < 0) {
        reply_error_fmt(ss, id, JSONRPC_INVALID_PARAMS, "workdir: %s: %s", wd, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        reply_error_fmt(ss, id, JSONRPC_INVALID_PARAMS, "workdir: %s: not a directory", wd);
        return -1;
    }
    r->command = json_string_value(command);
    r->workdir = wd;
    r->timeout_ms = s->o->default_timeout_ms;
    if (t && !json_is_null(t)) {
        double v = json_number_value(t);
        /* compared before the cast: a double beyond uint64_t is UB to cast */
        if (!json_is_number(t) || v < 0 || v > OPTIONS_MAX_TIMEOUT_MS || v != (double)(uint64_t)v) {
            reply_error_fmt(ss, id, JSONRPC_INVALID_PARAMS,
                            "timeout_ms: must be an integer from 0 to %u (a day)",
                            OPTIONS_MAX_TIMEOUT_MS);
            return -1;
        }
        /* 0 means no timeout of the caller's choosing: the default applies */
        if (v > 0)
            r->timeout_ms = (uint64_t)v;
    }
    r->login = true;
    if (l && !json_is_null(l)) {
        if (!json_is_boolean(l)) {
            jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS, "login: must be a boolean");
            return -1;
        }
        r->login = json_is_true(l);
    }
    return check_permissions(ss, id, args, r);
}

/* The tool, its arguments and the id: into *r, or on error answers and
 * returns -1. */
static int
parse_call(struct mcp_session *ss, const json_t *id, const json_t *params, struct call_request *r)
{
    const json_t *name = json_object_get(params, "name");
    const json_t *args = json_object_get(params, "arguments");
    if (!json_is_string(name)) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS, "name: required (the tool)");
        return -1;
    }
    if (strcmp(json_string_value(name), "shell") != 0) {
        reply_error_fmt(ss, id, JSONRPC_INVALID_PARAMS, "unknown tool '%s' (this server has shell)",
                        json_string_value(name));
        return -1;
    }
    if (!json_is_object(args)) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_PARAMS,
                            args ? "arguments: must be an object" : "arguments: required");
        return -1;
    }
    if (list_find(&ss->running, id) || list_find(&ss->waiting, id) || list_find(&ss->asking, id)) {
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INVALID_REQUEST,
                            "a call with this id is still running");
        return -1;
    }
    if (check_arguments(ss, id, args, r) < 0)
        return -1;
    const json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    r->progress_token = json_is_string(token) || json_is_integer(token) ? token : NULL;
    return 0;
}

/* tree enforcement: an escalated program's exec filter listener goes to
 * the call's watch. */
static int
adopt_listener(void *watch, int listener, const struct decide_exec *e,
               const struct decide_result *r, bool by_person)
{
    return exec_watch_adopt(watch, listener, e, r, by_person);
}

/* Where the call's sandbox is rooted: its state's sandboxCwd, else the
 * call's workdir. */
static const char *
sandbox_cwd(const struct mcp_session *ss, const struct call_request *r)
{
    (void)ss;
    return r->sandbox_cwd;
}

/* Whether a call under p reaches the network through the proxy: the
 * policy keeps the network off and confines the command (read-only or
 * workspace-write: the helper makes namespaces there), and the proxy is
 * on, or on by default and the rules hold a network_rule. */
static bool
uses_proxy(const struct mcp_server *s, const struct sandbox_policy *p)
{
    enum sandbox_kind kind = sandbox_policy_kind(p);
    if (!s->net || sandbox_policy_network_allowed(p) ||
        (kind != SANDBOX_READ_ONLY && kind != SANDBOX_WORKSPACE_WRITE))
        return false;
    return s->o->network_proxy == OPTIONS_NETWORK_PROXY_ON ||
           rules_policy_network_rule_count(decide_server_rules(s->decide)) > 0;
}

/* Whether a call under p has its sockets supervised without tree
 * enforcement: the policy confines (read-only, workspace-write) and the
 * kernel has user notification. */
static bool
supervise_sockets(const struct mcp_server *s, const struct sandbox_policy *p)
{
    enum sandbox_kind kind = sandbox_policy_kind(p);
    return s->user_notif && (kind == SANDBOX_READ_ONLY || kind == SANDBOX_WORKSPACE_WRITE);
}

/* The helper's command line under the session's policy in force now: the
 * patched Bash runs the command in the workdir, the helper reports on
 * CALL_FD_REPORT and, with tree enforcement, hands over its listener on
 * CALL_FD_EXEC_NOTIFY (and, *net set, the network proxy's on
 * CALL_FD_NET_PROXY).  Its writable roots are those of view (the call's,
 * resolved as it arrived), however long the call then waits for a slot.
 * NULL with *err (malloc'd) on failure. */
static char **
call_argv(struct mcp_session *ss, const struct writable_view *view, const struct call_request *r,
          bool *net, bool *notify, char **err)
{
    struct mcp_server *s = ss->s;
    struct sandbox_policy *p = sandbox_policy_from_json(r->policy, sandbox_cwd(ss, r), err);
    if (p && writable_view_pin(view, p, err) < 0) {
        sandbox_policy_free(p);
        p = NULL;
    }
    if (!p)
        return NULL;
    const char *const program[] = {s->o->shell_path, r->login ? "-lc" : "-c", r->command, NULL};
    const struct sandbox_cmdline cmd = {
        .helper = s->o->sandbox_helper,
        .policy = p,
        .cwd = r->workdir,
        .report_fd = CALL_FD_REPORT,
        /* with shell enforcement a confining sandbox still hands over a
         * listener: for its sockets (exec_watch.h) */
        .exec_notify_fd = (*notify = s->tree || supervise_sockets(s, p)) ? CALL_FD_EXEC_NOTIFY : -1,
        .notify_sockets_only = !s->tree,
        .net_proxy_fd = (*net = uses_proxy(s, p)) ? CALL_FD_NET_PROXY : 0,
        .protect = (const char *const *)s->protect,
        .n_protect = s->n_protect,
        .hide = (const char *const *)s->hide,
        .n_hide = s->n_hide,
        .program = program,
    };
    char **argv = sandbox_cmdline_argv(&cmd);
    sandbox_policy_free(p);
    if (!argv)
        *err = strdup("out of memory");
    return argv;
}

/* The call's decisions, on c: made before its command line, whose
 * writable roots are the decisions' view.  Returns 0, or -1 with *err
 * (malloc'd; NULL: out of memory). */
static int
call_decisions(struct mcp_session *ss, struct mcp_call *c, const struct call_request *r, char **err)
{
    char *label = json_dumps(c->id, JSON_ENCODE_ANY | JSON_COMPACT);
    c->dc = label ? decide_call_new(ss->s->decide, r->policy, sandbox_cwd(ss, r), label,
                                    on_call_abort, c, err)
                  : NULL;
    free(label);
    if (c->dc) {
        decide_call_set_client(c->dc, ss->client);
        decide_call_on_said(c->dc, on_call_said, c);
    }
    return c->dc ? 0 : -1;
}

/* The call's other front ends, on c: with notify its watch (in tree mode
 * every exec of the shell's tree and the listeners of escalated programs;
 * in either mode the sandbox's sockets) and its escalation state (its
 * socket is made when it starts).  Returns 0, or -1 when out of memory. */
static int
call_front_ends(struct mcp_server *s, struct mcp_call *c, bool notify)
{
    c->helper_notifies = notify;
    if (notify || s->watch_escalated) {
        c->watch =
            exec_watch_new(s->loop, c->dc, s->o->execve_wrapper, s->o->bash_path, s->o->shell_path);
        if (!c->watch)
            return -1;
        exec_watch_set_strict(c->watch, s->o->exec_strict);
        exec_watch_set_take_listener(c->watch, s->tree);
        exec_watch_allow_unix(c->watch, s->o->allow_unix, s->o->allow_unix_count);
        exec_watch_set_inherit(c->watch, s->o->escalated_children_inherit);
    }
    c->ec = escalation_call_new(s->loop, c->dc, c->watch ? adopt_listener : NULL, c->watch,
                                (const char *const *)s->o->pass_env, s->o->pass_env_count);
    return c->ec ? 0 : -1;
}

/* The shell's environment, naming the wrapper and the escalation socket.
 * With tree enforcement the shell hands the wrapper only what the rules
 * may escalate: the tree watch judges its other execs. */
static char **
call_env(struct mcp_server *s)
{
    const char *wrap_names = s->tree ? decide_server_wrap_names(s->decide) : NULL;
    return escalation_shell_env(s->o->execve_wrapper, s->o->bash_path, wrap_names);
}

static void
free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* A call for r, not started: its command line, front ends and
 * shell_call.  On failure returns NULL with *code and *err (malloc'd;
 * NULL: out of memory) for the answer. */
static struct mcp_call *
new_call(struct mcp_session *ss, const json_t *id, const struct call_request *r, int *code,
         char **errp)
{
    struct mcp_server *s = ss->s;
    char *err = NULL;
    *code = JSONRPC_INTERNAL_ERROR;
    struct mcp_call *c = calloc(1, sizeof(*c));
    if (c) {
        c->s = s;
        c->ss = ss;
        c->id = json_deep_copy(id);
        c->ask_id = -1;
        c->seq = ++ss->next_seq;
    }
    char **argv = NULL;
    bool net = false, notify = false;
    if (!c || !c->id || call_decisions(ss, c, r, &err) < 0 ||
        keep_codex_roots(c, decide_call_view(c->dc)) < 0 ||
        !(argv = call_argv(ss, decide_call_view(c->dc), r, &net, &notify, &err))) {
        if (c)
            call_free(c);
        *errp = strfmt("sandbox policy: %s", err ? err : "out of memory");
        free(err);
        return NULL;
    }
    char **env = NULL;
    char *label = net ? json_dumps(c->id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    if (net && !(label && (c->net = call_net_new(s->net, ss->net_client, label, r->command)))) {
        free(label);
        free_strv(argv);
        call_free(c);
        *errp = strdup("network proxy: out of memory");
        return NULL;
    }
    free(label);
    if (call_front_ends(s, c, notify) < 0 || !(env = call_env(s))) {
        free_strv(argv);
        call_free(c);
        *errp = strdup("escalation: out of memory");
        return NULL;
    }
    struct shell_call_spec spec = {
        .argv = argv,
        .env = env,
        .timeout_ms = r->timeout_ms,
        .max_pause_ms = s->o->max_ask_ms,
        .max_output = r->max_output ? r->max_output : s->o->max_output_bytes,
        .progress = r->progress_token != NULL,
        .report = true,
    };
    c->sc = shell_call_new(s->loop, &spec, &call_events, c); /* takes argv and env */
    if (!c->sc) {
        call_free(c);
        *errp = NULL;
        return NULL;
    }
    c->progress_token = r->progress_token ? json_deep_copy(r->progress_token) : NULL;
    return c;
}

/* login snapshot hook: what a snapshot is valid for — the shell, the
 * policy, where the sandbox is rooted and the workdir.  NULL when out of
 * memory. */
static char *
login_key(struct mcp_session *ss, const struct call_request *r)
{
    char *policy = json_dumps(r->policy, JSON_COMPACT | JSON_SORT_KEYS);
    char *key = policy ? strfmt("%s\n%s\n%s\n%s", ss->s->o->shell_path, policy, sandbox_cwd(ss, r),
                                r->workdir)
                       : NULL;
    free(policy);
    return key;
}

/* new_call for the client of ss, answering the request on failure. */
static struct mcp_call *
build_call(struct mcp_session *ss, const json_t *id, const struct call_request *r)
{
    int code = 0;
    char *err = NULL;
    struct mcp_call *c = new_call(ss, id, r, &code, &err);
    if (!c) {
        jsonrpc_reply_error(ss->rpc, id, code, err ? err : "out of memory");
        free(err);
        return NULL;
    }
    /* login snapshot hook: settled when the call starts */
    if (r->login && ss->s->snap) {
        c->snap_key = login_key(ss, r);
        c->snap_workdir = strdup(r->workdir);
        c->snap_policy = json_incref(r->policy);
        c->snap_sandbox_cwd = strdup(r->sandbox_cwd);
        if (!c->snap_key || !c->snap_workdir || !c->snap_sandbox_cwd) {
            free(c->snap_key);
            free(c->snap_workdir);
            free(c->snap_sandbox_cwd);
            c->snap_key = c->snap_workdir = c->snap_sandbox_cwd = NULL;
        }
    }
    return c;
}

/* Whether policy (a sandboxPolicy) confines nothing: danger-full-access. */
static bool
full_access(const json_t *policy)
{
    const char *type = json_string_value(json_object_get(policy, "type"));
    return type && strcmp(type, sandbox_kind_name(SANDBOX_DANGER_FULL_ACCESS)) == 0;
}

static void on_leave_answer(const json_t *result, const json_t *error, void *data);

/* The first startup file a login shell of s's would run (with the
 * server's HOME) that a sandbox could have written: outside, it would run
 * code the person never saw.  NULL when none (malloc'd); "" when out of
 * memory (refused all the same). */
static char *
planted_startup_file(const struct mcp_server *s)
{
    const struct login_snapshot_kind *k =
        login_snapshot_kind_find(s->o->shell == OPTIONS_SHELL_ZSH ? "zsh" : "bash");
    char **files = k ? login_snapshot_startup_files(k, getenv("HOME")) : NULL;
    if (!files)
        return strdup("");
    char *found = NULL;
    for (size_t i = 0; files[i] && !found; i++) {
        if (decide_server_sandbox_wrote(s->decide, files[i]))
            found = strdup(files[i]);
    }
    login_snapshot_strv_free(files);
    return found;
}

/* require_escalated: asks the person whether c (built for r, under full
 * access) may run outside the sandbox; c waits on the asking list for the
 * answer.  Where nobody can be asked, c is answered and freed. */
static void
ask_leave_sandbox(struct mcp_session *ss, struct mcp_call *c, const struct call_request *r)
{
    const char *why = LEAVE_SANDBOX_NO_ELICITATION;
    char *planted = r->login ? planted_startup_file(ss->s) : NULL;
    if (planted) {
        /* nobody is asked: the question could not show that code */
        char *said = strfmt("Not run: a login shell outside the sandbox would first run the "
                            "startup file `%s`, which a sandbox could have written; ask again "
                            "with login false to leave the sandbox without it",
                            planted[0] ? planted : "(unknown: out of memory)");
        const char *text = said ? said
                                : "Not run: a login shell outside the sandbox would first run a "
                                  "startup file a sandbox could have written";
        log_info("call: %s", text);
        jsonrpc_reply(ss->rpc, c->id, failure_json(text));
        free(said);
        free(planted);
        shell_call_discard(c->sc);
        call_free(c);
        return;
    }
    if (ss->client_elicitation) {
        json_t *params = leave_sandbox_question(r->command, r->workdir, r->login, r->justification);
        /* jsonrpc_request takes params, also on failure */
        c->ask_id = params
                        ? jsonrpc_request(ss->rpc, "elicitation/create", params, on_leave_answer, c)
                        : -1;
        if (c->ask_id >= 0) {
            log_info("call: asking whether it may run outside the sandbox");
            list_push(&ss->asking, c);
            return;
        }
        why = "Not run: the person could not be asked to approve running it outside the "
              "sandbox (out of memory)";
    }
    log_info("call: not run outside the sandbox: %s", why);
    jsonrpc_reply(ss->rpc, c->id, failure_json(why));
    shell_call_discard(c->sc);
    call_free(c);
}

/* The answer to ask_leave_sandbox's question: approved, the call waits
 * for its turn like any other; else its result says why it did not run. */
static void
on_leave_answer(const json_t *result, const json_t *error, void *data)
{
    struct mcp_call *c = data;
    struct mcp_session *ss = c->ss;
    char *buf = NULL;
    const char *refused = leave_sandbox_answer(result, error, &buf);
    if (!refused && (ss->ending || ss->s->shutting_down))
        refused = "Not run: execgate is shutting down";
    list_remove(&ss->asking, c);
    c->ask_id = -1;
    if (refused) {
        log_info("call: %s", refused);
        if (ss->rpc && !ss->ending)
            jsonrpc_reply(ss->rpc, c->id, failure_json(refused));
        shell_call_discard(c->sc);
        call_free(c);
    } else {
        log_info("call: approved to run outside the sandbox");
        c->said = leave_sandbox_said(result); /* the first line of person_said */
        list_push(&ss->waiting, c);
        start_waiting(ss->s);
    }
    free(buf);
}

/*
 * The sandbox r runs under, into r->policy and r->sandbox_cwd: the state
 * in the call's _meta (Codex 0.169 sends it with every call), else the
 * session's from its last update (a permissionProfile resolved now, for
 * this workdir), else the session's sandboxPolicy.  On error answers
 * -32602 (the state in _meta is invalid) and returns -1.
 */
static int
call_sandbox(struct mcp_session *ss, const json_t *id, const json_t *params, struct call_request *r)
{
    char *err = NULL;
    int rc = sandbox_state_from_meta(json_object_get(params, "_meta"), r->workdir, &r->policy,
                                     &r->sandbox_cwd, &err);
    if (rc == 0 && ss->state) {
        char *why = NULL;
        rc = sandbox_state_resolve(ss->state, r->workdir, &r->policy, &r->sandbox_cwd, &why) < 0
                 ? -1
                 : 1;
        err =
            rc < 0 ? strfmt("the session's sandbox state: %s", why ? why : "out of memory") : NULL;
        free(why);
    }
    if (rc == 0) {
        r->policy = json_incref(ss->policy);
        r->sandbox_cwd = strdup(ss->policy_cwd ? ss->policy_cwd : r->workdir);
        if (!r->sandbox_cwd) {
            json_decref(r->policy);
            r->policy = NULL;
            jsonrpc_reply_error(ss->rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
            return -1;
        }
    }
    if (rc < 0) {
        jsonrpc_reply_error(ss->rpc, id, err ? JSONRPC_INVALID_PARAMS : JSONRPC_INTERNAL_ERROR,
                            err ? err : "out of memory");
        free(err);
        return -1;
    }
    return 0;
}

/* tools/call: parse, build the call, queue it (it starts when there is
 * room; one that asks to leave the sandbox, once a person approved). */
static void
handle_call(struct mcp_session *ss, const json_t *id, const json_t *params)
{
    struct call_request r = {0};
    if (parse_call(ss, id, params, &r) < 0 || call_sandbox(ss, id, params, &r) < 0)
        return;
    if (r.leave_sandbox && full_access(r.policy)) {
        log_debug("call: asks to leave the sandbox, and its policy is full access already");
        r.leave_sandbox = false;
    }
    if (r.leave_sandbox) {
        json_decref(r.policy);
        r.policy = json_pack("{s:s}", "type", sandbox_kind_name(SANDBOX_DANGER_FULL_ACCESS));
    }
    struct mcp_call *c = r.policy ? build_call(ss, id, &r) : NULL;
    if (!r.policy)
        jsonrpc_reply_error(ss->rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
    if (c && r.leave_sandbox) {
        ask_leave_sandbox(ss, c, &r);
    } else if (c) {
        list_push(&ss->waiting, c);
        start_waiting(ss->s);
    }
    json_decref(r.policy);
    free(r.sandbox_cwd);
}

/*
 * Starts waiting calls while there is room: fewer than --max-calls run,
 * and the answers waiting for the client to read them stay under
 * --max-pending-output (a client that stops reading stops the calls, not
 * the server's memory: each running call's answer is at most its own).
 */
/* The call's own cgroup, which the helper and every escalated program
 * join before they run anything: a call that cannot have one runs
 * without, and says so. */
static void
start_cgroup(struct mcp_server *s, struct mcp_call *c, struct escalation_call *ec)
{
    if (!s->cgroups || call_cgroup_mode(s->cgroups) == CALL_CGROUP_NONE)
        return;
    char *label = json_dumps(c->id, JSON_ENCODE_ANY | JSON_COMPACT);
    char *err = NULL;
    if (s->n_cgroup_pool > 0) {
        c->cg = s->cgroup_pool[--s->n_cgroup_pool];
        if (call_cgroup_unpark(c->cg, &err) < 0) {
            call_cgroup_free(c->cg);
            c->cg = NULL;
        }
    } else {
        c->cg = call_cgroup_new(s->cgroups, label ? label : "call", s->o->max_processes,
                                s->o->max_memory, &err);
    }
    if (!c->cg) {
        log_warn("call %s: runs without a cgroup of its own: %s", label ? label : "?",
                 err ? err : "out of memory");
    } else {
        const struct call_cgroup_join *j = call_cgroup_join(c->cg);
        shell_call_set_join(c->sc, j);
        escalation_call_set_join(ec, j);
    }
    free(err);
    free(label);
}

/* Starts c, its session's next call (running, on its running list). */
static void
start_call(struct mcp_call *c)
{
    struct mcp_server *s = c->s;
    list_push(&c->ss->running, c);
    s->n_running++;
    c->running = true;
    /* escalation hook: the socket is served from here on, and the
     * server's copy of the shell's end goes once the shell has it */
    struct escalation_call *ec = c->ec;
    c->ec = NULL;
    decide_call_attach(c->dc, c->sc);
    decide_call_unref(c->dc); /* the attachment and the front ends hold it */
    c->dc = NULL;
    if (c->watch)
        exec_watch_attach(c->watch, c->sc);
    escalation_call_attach(ec, c->sc);
    /* tree enforcement: without the socket the helper refuses to run
     * the command (it fails closed on --exec-notify-fd) */
    int notify_fd = c->watch && c->helper_notifies ? exec_watch_open(c->watch) : -1;
    if (c->watch && c->helper_notifies && notify_fd < 0)
        log_error("cannot make the exec watch's socket: %s: the call will fail",
                  strerror(-notify_fd));
    shell_call_set_fd(c->sc, CALL_FD_EXEC_NOTIFY, notify_fd);
    /* the network proxy: without the socket the helper refuses to run
     * the command (--net-proxy-fd names no socket) */
    int net_fd = c->net ? call_net_open(c->net) : -1;
    if (c->net && net_fd < 0)
        log_error("cannot make the network proxy's socket: %s: the call will fail",
                  strerror(-net_fd));
    if (c->net)
        shell_call_set_fd(c->sc, CALL_FD_NET_PROXY, net_fd);
    start_cgroup(s, c, ec);
    shell_call_start(c->sc);
    if (c->net)
        call_net_spawned(c->net, c->sc);
    escalation_call_spawned(ec);
    if (c->watch)
        exec_watch_spawned(c->watch, notify_fd);
    c->watch = NULL;
}

/*
 * login snapshot hook: the capture of the login environment for the
 * waiting login call w, as a call of w's session (the same sandbox
 * policy, rules, questions and cgroup as w's would have: the profile is
 * code like any other; it counts against --max-calls and ends with the
 * session) running `SHELL -lc CAPTURE` in w's workdir, under w's sandbox
 * (each call may carry its own).  The snapshot is the server's: the login
 * calls of every session with the same key use it.  Returns 0 when it
 * started (w waits for it), -1 when w runs a real login shell instead (out
 * of memory).
 */
static int
start_capture(struct mcp_call *w)
{
    struct mcp_session *ss = w->ss;
    struct mcp_server *s = ss->s;
    struct call_request r = {
        .workdir = w->snap_workdir,
        .timeout_ms = s->o->login_snapshot_timeout_ms,
        .login = true,
        .max_output = LOGIN_SNAPSHOT_MAX_BYTES,
        .policy = w->snap_policy,
        .sandbox_cwd = w->snap_sandbox_cwd,
    };
    char *key = login_key(ss, &r);
    if (!key || strcmp(key, w->snap_key) != 0) {
        free(key);
        return -1;
    }
    char *command =
        login_snapshot_begin(s->snap, s->snap_kind, key, getenv("HOME"), uv_now(s->loop));
    free(key);
    if (!command)
        return -1;
    r.command = command;
    json_t *id = json_pack("{s:s}", "login-snapshot", login_snapshot_kind_name(s->snap_kind));
    int code = 0;
    char *err = NULL;
    struct mcp_call *cap = id ? new_call(ss, id, &r, &code, &err) : NULL;
    json_decref(id);
    free(command);
    if (!cap) {
        char *noise = NULL, *why = NULL;
        login_snapshot_done(s->snap, false, "", 0, &noise, &why);
        log_warn("login snapshot: cannot start its capture: %s; login calls run real login "
                 "shells",
                 err ? err : "out of memory");
        free(noise);
        free(why);
        free(err);
        return -1;
    }
    cap->snap_capture = true;
    log_info("login snapshot: capturing what a login shell of %s sets up, in %s", s->o->shell_path,
             w->snap_workdir);
    start_call(cap);
    return 0;
}

/* login snapshot hook: the capture's end; the calls that waited for it,
 * in any session, start next (start_waiting). */
static void
login_capture_done(struct mcp_server *s, const struct shell_call_result *r)
{
    if (r->cancelled) {
        /* its session ended: no fault of the profile's; the next login
         * call, of any session, captures again */
        login_snapshot_abandon(s->snap);
        log_info("login snapshot: its capture was called off (its session ended)");
        return;
    }
    bool ran = r->spawned && !r->timed_out && !r->cancelled && !r->term_signal &&
               r->exit_code == 0 && !r->setup_failed && !r->not_started && !r->output.cut;
    char *noise = NULL, *why = NULL;
    int rc = login_snapshot_done(s->snap, ran, r->output.head, r->output.head_len, &noise, &why);
    if (noise)
        log_info("login snapshot: the login shell printed (not shown in calls): %s", noise);
    if (rc < 0)
        log_warn("login snapshot: not taken after %llu ms: %s (exit %d%s); login calls run real "
                 "login shells until a startup file changes",
                 (unsigned long long)(r->duration_ns / 1000000), why ? why : "out of memory",
                 r->exit_code, r->timed_out ? ", timed out" : "");
    else
        log_info("login snapshot: taken in %llu ms",
                 (unsigned long long)(r->duration_ns / 1000000));
    free(noise);
    free(why);
}

/*
 * login snapshot hook: whether the waiting call c, the first of its
 * session, may start now.  A login call sources a good snapshot
 * (login_snapshot_use), waits while one is captured (and so do the calls
 * of its session behind it: a session's calls start in order), or runs a
 * real login shell when there can be none.
 */
static bool
login_ready(struct mcp_call *c)
{
    struct mcp_server *s = c->s;
    if (!c->snap_key)
        return true;
    int fd = -1;
    enum login_snapshot_state st = login_snapshot_get(s->snap, s->snap_kind, c->snap_key,
                                                      getenv("HOME"), uv_now(s->loop), &fd);
    if (st == LOGIN_SNAPSHOT_CAPTURE && start_capture(c) == 0)
        return false;
    if (st == LOGIN_SNAPSHOT_WAIT)
        return false;
    if (st == LOGIN_SNAPSHOT_READY) {
        struct shell_call_spec *spec = shell_call_spec(c->sc);
        /* the memfd stays the store's: the call starts (and inherits it)
         * before anything else runs on the loop */
        if (login_snapshot_use(s->snap, s->snap_kind, &spec->argv, &spec->env) < 0)
            log_warn("login snapshot: out of memory: this call runs a real login shell");
        else
            shell_call_set_fd(c->sc, CALL_FD_LOGIN_SNAPSHOT, fd);
    }
    free(c->snap_key);
    c->snap_key = NULL;
    return true;
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

/* What the clients of all sessions have not taken yet. */
static size_t
pending_total(const struct mcp_server *s)
{
    size_t n = 0;
    for (const struct mcp_session *ss = s->sessions; ss; ss = ss->next)
        n += pending_output(ss);
    return n;
}

/* Whether ss may be sent an answer of size bytes (0: whether it may start
 * another call): what waits for its client stays within a quarter of
 * --max-pending-output (so that a client that stops reading leaves room
 * for the others), and what waits for all clients within all of it.  An
 * answer larger than that goes when nothing waits. */
static bool
answer_room(const struct mcp_server *s, const struct mcp_session *ss, size_t size)
{
    size_t max = s->o->max_pending_output;
    size_t mine = pending_output(ss), all = pending_total(s);
    if (size == 0)
        return mine < max / 4 && all < max;
    return (mine == 0 || mine + size <= max / 4) && (all == 0 || all + size <= max);
}

/* Whether a call of ss may start now. */
static bool
may_start(const struct mcp_server *s, const struct mcp_session *ss)
{
    return !s->shutting_down && !ss->ending && ss->waiting.head && s->n_running < s->o->max_calls &&
           !ss->held.head && answer_room(s, ss, 0);
}

/* The next call to start: sessions take turns (the one that started the
 * last goes to the back of the line), so one busy client does not hold
 * the others' calls back.  A session whose first call waits for a login
 * snapshot's capture (login_ready, which may start the capture) waits
 * with it; the others go on. */
static struct mcp_call *
next_waiting(struct mcp_server *s)
{
    for (struct mcp_session *ss = s->sessions; ss; ss = ss->next) {
        if (!may_start(s, ss) || !login_ready(ss->waiting.head))
            continue;
        if (ss->next) {
            if (ss->prev)
                ss->prev->next = ss->next;
            else
                s->sessions = ss->next;
            ss->next->prev = ss->prev;
            struct mcp_session *last = ss->next;
            while (last->next)
                last = last->next;
            last->next = ss;
            ss->prev = last;
            ss->next = NULL;
        }
        return ss->waiting.head;
    }
    return NULL;
}

static void
start_waiting(struct mcp_server *s)
{
    for (struct mcp_session *ss = s->sessions; ss; ss = ss->next)
        send_held(ss);
    struct mcp_call *c;
    while ((c = next_waiting(s)) != NULL) {
        list_remove(&c->ss->waiting, c);
        start_call(c);
    }
}

/* Forgets c's question to leave the sandbox and tells the client to close
 * it. */
static void
leave_question_close(struct mcp_session *ss, struct mcp_call *c)
{
    if (c->ask_id < 0 || !ss->rpc)
        return;
    jsonrpc_forget_request(ss->rpc, c->ask_id);
    jsonrpc_notify(ss->rpc, "notifications/cancelled",
                   json_pack("{s:I, s:s}", "requestId", (json_int_t)c->ask_id, "reason",
                             "the call it asked about no longer waits for an answer"));
    c->ask_id = -1;
}

static void
handle_cancelled(struct mcp_session *ss, const json_t *params)
{
    const json_t *id = json_object_get(params, "requestId");
    if (!id)
        return;
    struct mcp_call *c = list_find(&ss->asking, id);
    if (c) {
        list_remove(&ss->asking, c);
        leave_question_close(ss, c);
        shell_call_discard(c->sc);
        call_free(c);
        log_info("a call was cancelled while a person was asked to let it leave the sandbox");
        return;
    }
    c = list_find(&ss->waiting, id);
    if (c) {
        list_remove(&ss->waiting, c);
        shell_call_discard(c->sc);
        call_free(c);
        log_info("a waiting call was cancelled before it started");
        return;
    }
    c = list_find(&ss->running, id);
    if (c) {
        log_info("cancelling a running call (pid %d)", shell_call_pgid(c->sc));
        shell_call_cancel(c->sc);
        return;
    }
    /* an ended call whose answer waits for room: the client wants none */
    c = list_find(&ss->held, id);
    if (c) {
        list_remove(&ss->held, c);
        call_free(c);
        log_info("a call was cancelled while its answer waited for the client to read");
        start_waiting(ss->s);
    }
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
                 strcmp(method, "logging/setLevel") == 0;
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
        json_t *tool = tool_definition(ss->s->o);
        jsonrpc_reply(rpc, id, tool ? json_pack("{s:[o]}", "tools", tool) : NULL);
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
    start_waiting(ss->s);
}

static const struct jsonrpc_handler rpc_handler = {
    .on_request = on_request,
    .on_notification = on_notification,
    .on_eof = on_eof,
    .on_written = on_output_written,
};

/* ---- life ---- */

/* Tree enforcement when asked for and the kernel can; else shell, said
 * in the log and in initialize's instructions.  Returns -1 when out of
 * memory. */
static int
choose_enforcement(struct mcp_server *s)
{
    char *why = NULL;
    const char *mode = INSTRUCTIONS_SHELL;
    char *fallback = NULL;
    if (s->o->exec_enforcement == OPTIONS_EXEC_ENFORCEMENT_TREE) {
        s->tree = exec_watch_probe(&why) == 0;
        if (s->tree) {
            mode = INSTRUCTIONS_TREE;
            log_info("exec enforcement: tree (every exec of each command's process tree)");
        } else {
            log_warn("exec enforcement: tree is not available (%s); using shell: rules apply "
                     "only to the programs the shell starts",
                     why ? why : "out of memory");
            if (asprintf(&fallback,
                         " Exec interception for the whole process tree is not available on "
                         "this system (%s), so exec rules apply only to the programs the shell "
                         "itself starts, not to programs those start.",
                         why ? why : "unknown reason") < 0)
                fallback = NULL;
            free(why);
            if (!fallback)
                return -1;
            mode = fallback;
        }
    } else {
        log_info("exec enforcement: shell (--exec-enforcement=shell: only the shell's own execs)");
        /* but what an escalated program starts is still decided, when the
         * kernel can tell: it runs outside the sandbox */
        s->watch_escalated = !s->o->escalated_children_inherit && exec_watch_probe(&why) == 0;
        if (s->watch_escalated)
            log_info("exec enforcement: programs run outside the sandbox start under the exec "
                     "filter: what they start is decided by the rules");
        else if (!s->o->escalated_children_inherit)
            log_warn("exec enforcement: %s: what a program run outside the sandbox starts is "
                     "not decided",
                     why ? why : "out of memory");
        free(why);
        why = NULL;
    }
    /* sandboxed sockets are supervised in either mode (exec_watch.h) */
    s->user_notif = s->tree || exec_watch_probe(&why) == 0;
    if (!s->user_notif) {
        log_warn("no seccomp user notification (%s): sandboxed commands can connect to any "
                 "Unix socket",
                 why ? why : "out of memory");
        free(why);
    }
    if (asprintf(&s->instructions, "%s%s", INSTRUCTIONS, mode) < 0)
        s->instructions = NULL;
    free(fallback);
    return s->instructions ? 0 : -1;
}

/* ---- sessions ---- */

bool
mcp_protocol_supported(const char *version)
{
    for (size_t i = 0; i < sizeof(protocol_versions) / sizeof(protocol_versions[0]); i++) {
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

static void
session_free(struct mcp_session *ss)
{
    if (!ss)
        return;
    while (ss->held.head) {
        struct mcp_call *c = ss->held.head;
        list_remove(&ss->held, c);
        call_free(c);
    }
    json_decref(ss->policy);
    free(ss->policy_cwd);
    json_decref(ss->state);
    client_log_free(ss->client_log);
    decide_client_unref(ss->client);
    call_net_client_unref(ss->net_client);
    free(ss);
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
    ss->sent_oldest = UINT64_MAX;
    int rc = 0;
    if (s->o->sandbox) {
        char *why = NULL;
        rc = set_policy(ss, s->o->sandbox, s->o->sandbox_cwd, &why);
        if (rc < 0 && asprintf(err, "--sandbox: %s", why ? why : "out of memory") < 0)
            *err = NULL;
        free(why);
    } else {
        ss->policy = json_pack("{s:s}", "type", "read-only");
        rc = ss->policy ? 0 : -1;
    }
    if (rc == 0 && (!(ss->client_log = client_log_new()) || !(ss->client = decide_client_new()) ||
                    !(ss->net_client = call_net_client_new()) ||
                    !(ss->rpc = jsonrpc_new(s->loop, &rpc_handler, ss, s->o->max_message_bytes))))
        rc = -1;
    if (rc < 0) {
        session_free(ss);
        return NULL;
    }
    ss->next = s->sessions;
    if (s->sessions)
        s->sessions->prev = ss;
    s->sessions = ss;
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
    call_net_client_set(ss->net_client, NULL, false, NULL);
    client_log_set_rpc(ss->client_log, NULL);
    if (ss->prev)
        ss->prev->next = ss->next;
    else
        s->sessions = ss->next;
    if (ss->next)
        ss->next->prev = ss->prev;
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
    send_held(ss); /* answered at a shutdown, dropped when the session ended */
    if (ss->running.count > 0)
        return;
    ss->rpc_closing = true;
    jsonrpc_close(ss->rpc, ss->sink != NULL || ss->ending, on_session_rpc_closed, ss);
}

/* Drops what waits, answering it with why when answer is set. */
static void
session_drop_waiting(struct mcp_session *ss, const char *answer)
{
    while (ss->asking.head) {
        struct mcp_call *c = ss->asking.head;
        list_remove(&ss->asking, c);
        leave_question_close(ss, c);
        if (answer)
            jsonrpc_reply_error(ss->rpc, c->id, JSONRPC_INTERNAL_ERROR, answer);
        shell_call_discard(c->sc);
        call_free(c);
    }
    while (ss->waiting.head) {
        struct mcp_call *c = ss->waiting.head;
        list_remove(&ss->waiting, c);
        if (answer)
            jsonrpc_reply_error(ss->rpc, c->id, JSONRPC_INTERNAL_ERROR, answer);
        shell_call_discard(c->sc);
        call_free(c);
    }
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
    jsonrpc_start_sink(ss->rpc, session_sink, ss);
    return ss;
}

void
mcp_session_output_taken(struct mcp_session *ss)
{
    if (!ss->ending)
        start_waiting(ss->s);
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
    ss->sink = NULL;
    log_info("session ends (%s): %u call(s) running are killed, %u waiting dropped", why,
             ss->running.count, ss->waiting.count);
    jsonrpc_stop_reading(ss->rpc);
    session_drop_waiting(ss, NULL);
    for (struct mcp_call *c = ss->running.head; c; c = c->next)
        shell_call_cancel(c->sc);
    session_maybe_close(ss);
}

unsigned
mcp_server_session_count(const struct mcp_server *s)
{
    return s->n_sessions - (s->stdio ? 1 : 0);
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
    /* the stdio client's session; serving HTTP, mcp_server_start drops it */
    s->stdio = session_new(s, err);
    int rc = s->stdio ? 0 : -1;
    if (rc == 0) {
        /* escalation hook: the rules are loaded once, here; a bad rules file
         * refuses the start */
        struct decide_config dcfg = {
            .rules_paths = (const char *const *)o->rules,
            .n_rules_paths = o->rules_count,
            .default_rules_dir = o->rules_default ? o->rules[0] : NULL,
            .preserve_program_paths = o->preserve_program_paths,
            .audit_path = o->audit_log,
        };
        s->decide = decide_server_new(&dcfg, err);
        s->protect = s->decide ? state_paths_new(o, &s->n_protect) : NULL;
        s->hide = s->protect ? state_paths_hidden(o, &s->n_hide) : NULL;
        if (s->decide && !s->hide) {
            decide_server_free(s->decide);
            s->decide = NULL;
        }
        rc = s->decide ? 0 : -1;
        if (s->decide)
            log_info("rules: %zu prefix rule(s) loaded", decide_server_rule_count(s->decide));
    }
    if (rc == 0)
        rc = choose_enforcement(s);
    if (rc == 0 && o->network_proxy != OPTIONS_NETWORK_PROXY_OFF) {
        s->net = call_net_server_new(loop, s->decide);
        rc = s->net ? 0 : -1;
    }
    if (rc < 0) {
        if (!*err)
            *err = strdup("out of memory");
        call_net_server_free(s->net);
        if (s->stdio) {
            jsonrpc_close(s->stdio->rpc, 1, NULL, NULL);
            session_free(s->stdio);
        }
        decide_server_free(s->decide);
        free(s->instructions);
        state_paths_free(s->protect);
        state_paths_free(s->hide);
        free(s);
        return NULL;
    }
    return s;
}

/* Sends signo to every running call of every session. */
static void
signal_all(struct mcp_server *s, int signo)
{
    for (struct mcp_session *ss = s->sessions; ss; ss = ss->next) {
        for (struct mcp_call *c = ss->running.head; c; c = c->next)
            shell_call_signal(c->sc, signo);
    }
}

/* A record for every session's client (each at its own level). */
static void
log_all(struct mcp_server *s, enum client_log_level level, json_t *data)
{
    for (struct mcp_session *ss = s->sessions; ss && data; ss = ss->next)
        client_log_send(ss->client_log, level, json_deep_copy(data));
    json_decref(data);
}

static void
on_signal(uv_signal_t *h, int signum)
{
    struct mcp_server *s = h->data;
    if (s->shutting_down && !s->killed) {
        /* a second signal: no more grace */
        s->killed = true;
        signal_all(s, SIGKILL);
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
    if (decide_server_reload(s->decide, &err) == 0) {
        size_t n = decide_server_rule_count(s->decide);
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

static void
on_guard_exit(struct spawn_child *c, int64_t exit_status, int term_signal)
{
    struct mcp_server *s = spawn_data(c);
    log_warn("the cgroup guard ended (status %lld, signal %d): what calls leave if the server "
             "is killed is no longer cleaned up",
             (long long)exit_status, term_signal);
    spawn_close(c, NULL);
    s->guard = NULL;
}

/*
 * The guard: this program again (`execgate --cgroup-guard PID BASE...`),
 * in a session of its own, with nothing of the server's but stderr.  It
 * waits for the server to end, however it ends (kill -9 included), then
 * kills and removes every call cgroup the server left: what escaped both
 * PR_SET_PDEATHSIG and the PID namespace (a setsid child of an escalated
 * program or of a danger-full-access command) goes with it.
 */
static void
start_guard(struct mcp_server *s)
{
    size_t n = 0;
    const char *const *bases = call_cgroup_probe_bases(s->cgroups, &n);
    if (n == 0)
        return;
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char pid[24];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    char *argv[4 + 8] = {self, (char *)"--cgroup-guard", pid};
    for (size_t i = 0; i < n && i < 8; i++)
        argv[3 + i] = (char *)bases[i];
    const struct spawn_fd fds[] = {{STDERR_FILENO, STDERR_FILENO}};
    struct spawn_options o = {
        .file = self, .argv = argv, .fds = fds, .n_fds = 1, .new_session = true};
    int rc = len > 0 ? 0 : -errno;
    if (rc == 0) {
        self[len] = '\0';
        rc = spawn_start(s->loop, &o, on_guard_exit, s, &s->guard);
    }
    if (rc < 0)
        log_warn("cannot start the cgroup guard (%s): if the server is killed, what its calls "
                 "left in their cgroups stays",
                 strerror(-rc));
}

/* login snapshot hook: the store, in a private directory of the server's
 * ($XDG_RUNTIME_DIR, else the state directory: login_snapshot_parent),
 * which every call's sandbox binds read-only (--protect).  Without it
 * login calls run real login shells, as with --no-login-snapshot. */
static void
start_login_snapshots(struct mcp_server *s)
{
    char *err = NULL;
    char *parent = login_snapshot_parent(&err);
    struct login_snapshot *ls =
        parent ? login_snapshot_new(parent, CALL_FD_LOGIN_SNAPSHOT, &err) : NULL;
    free(parent);
    char *dir = ls ? state_paths_canonical(login_snapshot_dir(ls)) : NULL;
    char **protect = dir ? realloc(s->protect, (s->n_protect + 2) * sizeof(char *)) : NULL;
    if (!protect) {
        log_warn("%s: login calls run real login shells",
                 err ? err : "login snapshots: out of memory");
        free(err);
        free(dir);
        login_snapshot_free(ls);
        return;
    }
    s->protect = protect;
    s->protect[s->n_protect++] = dir;
    s->protect[s->n_protect] = NULL;
    s->snap = ls;
    /* the shell that runs the calls (--shell), whatever its file is
     * called */
    s->snap_kind = login_snapshot_kind_find(s->o->shell == OPTIONS_SHELL_ZSH ? "zsh" : "bash");
    log_debug("login snapshots: in %s", login_snapshot_dir(ls));
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
    start_guard(s);
    if (s->o->login_snapshot)
        start_login_snapshots(s);
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
        const char *const *paths = decide_server_rules_paths(s->decide, &n);
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
        for (struct mcp_session *ss = s->sessions, *next; ss; ss = next) {
            next = ss->next;
            if (ss->rpc)
                jsonrpc_close(ss->rpc, 1, NULL, NULL);
        }
        return;
    }
    log_info("grace period over: killing %u call(s)", s->n_running);
    s->killed = true;
    signal_all(s, SIGKILL);
}

void
mcp_server_shutdown(struct mcp_server *s, const char *why)
{
    if (s->shutting_down)
        return;
    s->shutting_down = true;
    unsigned waiting = 0;
    for (struct mcp_session *ss = s->sessions; ss; ss = ss->next)
        waiting += ss->waiting.count;
    log_info("shutting down (%s): %u call(s) running, %u waiting", why, s->n_running, waiting);
    /* no new clients (the HTTP transport closes its listeners) */
    if (s->on_shutdown)
        s->on_shutdown(s->on_shutdown_data);
    for (struct mcp_session *ss = s->sessions; ss; ss = ss->next) {
        jsonrpc_stop_reading(ss->rpc);
        session_drop_waiting(ss, "execgate is shutting down: the call did not start");
    }
    signal_all(s, SIGTERM);
    if (s->n_running > 0 && s->started)
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

static void
maybe_finish(struct mcp_server *s)
{
    if (!s->shutting_down || s->n_running > 0 || s->finishing)
        return;
    s->finishing = true;
    if (s->started) {
        uv_close((uv_handle_t *)&s->sigterm, on_server_handle_closed);
        uv_close((uv_handle_t *)&s->sigint, on_server_handle_closed);
        reaper_close(s->reaper);
        s->reaper = NULL;
        /* it outlives the server, and ends by itself when the server has */
        if (s->guard)
            spawn_close(s->guard, NULL);
        s->guard = NULL;
        rules_watch_close(s->rules_watch);
        s->rules_watch = NULL;
        call_net_server_free(s->net); /* no call is left to use it */
        s->net = NULL;
        uv_timer_stop(&s->grace);
        uv_timer_start(&s->grace, on_grace_expired, s->o->kill_grace_ms, 0);
    }
    if (s->n_sessions == 0 && s->started) {
        uv_close((uv_handle_t *)&s->grace, on_grace_closed);
        return;
    }
    for (struct mcp_session *ss = s->sessions, *next; ss; ss = next) {
        next = ss->next;
        session_maybe_close(ss);
    }
}

void
mcp_server_free(struct mcp_server *s)
{
    if (!s)
        return;
    while (s->sessions) {
        /* none is left after a loop that ran dry; freed all the same */
        struct mcp_session *ss = s->sessions;
        s->sessions = ss->next;
        session_free(ss);
    }
    free(s->instructions);
    state_paths_free(s->protect);
    state_paths_free(s->hide);
    call_net_server_free(s->net);
    decide_server_free(s->decide);
    login_snapshot_free(s->snap);
    while (s->n_cgroup_pool > 0)
        call_cgroup_free(s->cgroup_pool[--s->n_cgroup_pool]);
    call_cgroup_probe_free(s->cgroups);
    free(s);
}
