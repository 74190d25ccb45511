#include "escalation.h"

#include "approvals.h"
#include "audit.h"
#include "esc_io.h"
#include "esc_proto.h"
#include "exec_checks.h"
#include "exec_watch.h"
#include "log.h"
#include "reaper.h"
#include "spawn_child.h"
/* rules/ and sandbox/ both have a policy.h: named by their directories */
#include "../rules/load.h"
#include "../rules/policy.h"
#include "../rules/shlex.h"
#include "../sandbox/policy.h"
#include "utf8.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

#define REASON_FORBIDDEN "Execution forbidden by policy"
#define REASON_DECLINED  "User declined execution"
#define REASON_CANCELLED "User cancelled execution"
#define REASON_DENIED    "User denied execution"
#define REASON_ABORTED   "User aborted the tool call"
#define REASON_NO_ELICITATION                                                                      \
    "Approval was required by a prompt rule, but the MCP client did not declare the "              \
    "elicitation capability, so it cannot be asked"

struct escalation_server {
    uv_loop_t *loop;
    struct rules_policy *rules;
    bool preserve_program_paths;
    struct approvals *approvals;
    struct audit *audit;
    struct jsonrpc *rpc;
    bool client_elicitation;
    unsigned calls;   /* escalation_calls alive */
    char *dgram_buf;  /* ESC_MAX_DGRAM + 1 bytes: one first datagram at a time */
    char *wrap_names; /* EXECGATE_WRAP_NAMES's value, or NULL (escalation_wrap_names) */
};

enum session_state {
    SESSION_REQUEST, /* reading the REQUEST */
    SESSION_ASKING,  /* an elicitation is out */
    SESSION_FDS,     /* ESCALATE sent, reading FDS */
    SESSION_RUNNING, /* the program runs; SIGNALs may come */
    SESSION_CLOSING, /* handles closing */
};

struct session {
    struct escalation_call *ec;
    int fd;
    uv_poll_t poll;
    bool watched; /* poll initialised: only sessions that outlive their first datagram */
    struct spawn_child *proc; /* the escalated program, once started */
    bool proc_open, proc_exited;
    int handles_open;
    enum session_state state;
    struct esc_buf in;
    struct esc_fdlist fds;
    struct esc_request req; /* owned once the REQUEST arrived */
    bool have_req;
    char *program;   /* the absolute file, as Bash resolved it */
    char *real;      /* realpath(program): what is escalated */
    bool then_run;   /* an approved prompt ends as Run (heuristic, writable file) */
    json_t *matched; /* matched rules, for the audit log */
    struct escalation_question *question; /* an elicitation is out, or NULL */
    const char *answered_by;
    struct session *prev, *next;
};

struct escalation_call {
    struct escalation_server *es;
    struct shell_call *sc;
    struct shell_call_attachment att;
    int server_fd, child_fd;
    uv_poll_t poll;
    bool poll_open, released;
    int handles_open;
    struct sandbox_view {
        enum { VIEW_NONE, VIEW_SOME, VIEW_ALL } kind;
        char **roots; /* VIEW_SOME: writable roots (realpath'd) */
        size_t n;
    } writable;
    char *label;
    void (*on_abort)(void *data, const char *why);
    void *abort_data;
    bool aborted;
    unsigned paused;
    struct session *sessions;
    unsigned n_sessions;
    /* tree enforcement hook: the call's exec watch (owned); NULL in shell
     * mode */
    struct exec_watch *watch;
    /* process groups of escalated programs that have exited: what they
     * left running is killed with the call (reaper_signal_group) */
    pid_t *groups;
    size_t n_groups;
};

/* ---- rules loading ---- */

static int
is_rules_name(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return d->d_name[0] != '.' && n > 6 && strcmp(d->d_name + n - 6, ".rules") == 0;
}

/* Appends path's rules files to *files (directories: their *.rules, sorted). */
static int
collect_rules(const char *path, bool missing_ok, char ***files, size_t *n, char **err)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        if (errno == ENOENT && missing_ok)
            return 0;
        if (asprintf(err, "rules: %s: %s", path, strerror(errno)) < 0)
            *err = NULL;
        return -1;
    }
    struct dirent **list = NULL;
    int count = 1;
    if (S_ISDIR(st.st_mode)) {
        count = scandir(path, &list, is_rules_name, alphasort);
        if (count < 0) {
            if (asprintf(err, "rules: %s: %s", path, strerror(errno)) < 0)
                *err = NULL;
            return -1;
        }
    }
    char **grown = realloc(*files, (*n + (size_t)count + 1) * sizeof(char *));
    int rc = grown ? 0 : -1;
    if (grown)
        *files = grown;
    for (int i = 0; i < count; i++) {
        char *f = NULL;
        if (rc == 0 && list && asprintf(&f, "%s/%s", path, list[i]->d_name) < 0)
            f = NULL;
        else if (rc == 0 && !list)
            f = strdup(path);
        if (rc == 0 && !f)
            rc = -1;
        if (f)
            (*files)[(*n)++] = f;
        if (list)
            free(list[i]);
    }
    free(list);
    if (rc < 0)
        *err = strdup("out of memory");
    return rc;
}

static struct rules_policy *
load_rules(const struct escalation_config *cfg, char **err)
{
    char **files = NULL;
    size_t n = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < cfg->n_rules_paths; i++) {
        bool is_default =
            cfg->default_rules_dir && strcmp(cfg->rules_paths[i], cfg->default_rules_dir) == 0;
        rc = collect_rules(cfg->rules_paths[i], is_default, &files, &n, err);
    }
    struct rules_policy *p = NULL;
    if (rc == 0)
        p = rules_load(NULL, (const char *const *)files, n, err);
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return p;
}

/* ---- the server-wide part ---- */

/* Beyond this the hint is not given (an environment string must stay well
 * under the kernel's 128 KiB per string): every exec then asks. */
#define WRAP_NAMES_MAX (32 * 1024)

struct wrap_names {
    char *buf;
    size_t len;
};

static int
wrap_names_add(struct wrap_names *w, const char *name, size_t n)
{
    if (n == 0 || memchr(name, ':', n) || w->len + n + 1 > WRAP_NAMES_MAX)
        return -1;
    char *grown = realloc(w->buf, w->len + n + 2);
    if (!grown)
        return -1;
    w->buf = grown;
    if (w->len)
        w->buf[w->len++] = ':';
    memcpy(w->buf + w->len, name, n);
    w->len += n;
    w->buf[w->len] = '\0';
    return 0;
}

/* A name and, for a path, its last component too: what the escalation
 * path matches exactly, and what it falls back to. */
static int
wrap_names_add_rule(void *arg, const char *name)
{
    const char *slash = strrchr(name, '/');
    int rc = wrap_names_add(arg, name, strlen(name));
    if (rc == 0 && slash)
        rc = wrap_names_add(arg, slash + 1, strlen(slash + 1));
    return rc;
}

/*
 * The programs the escalation path may decide other than Run: every
 * program a rule names, and those the forced-rm heuristic reads.  Tree
 * enforcement judges every exec in the sandbox anyway, so the shell need
 * only hand these to the wrapper (docs/escalation.md, "The wrapper hint").
 * NULL when a name cannot be listed (a ':' in it) or the list is too long:
 * then every exec goes to the wrapper, as without the hint.
 */
static char *
escalation_wrap_names(const struct rules_policy *rules)
{
    struct wrap_names w = {0};
    int rc = rules_policy_each_program(rules, wrap_names_add_rule, &w);
    const char *const *heuristic = exec_checks_heuristic_programs();
    for (size_t i = 0; rc == 0 && heuristic[i]; i++)
        rc = wrap_names_add(&w, heuristic[i], strlen(heuristic[i]));
    if (rc != 0) {
        free(w.buf);
        return NULL;
    }
    return w.buf;
}

struct escalation_server *
escalation_server_new(uv_loop_t *loop, const struct escalation_config *cfg, char **err)
{
    *err = NULL;
    struct escalation_server *es = calloc(1, sizeof(*es));
    if (!es) {
        *err = strdup("out of memory");
        return NULL;
    }
    es->loop = loop;
    es->preserve_program_paths = cfg->preserve_program_paths;
    es->rules = load_rules(cfg, err);
    if (es->rules && (es->dgram_buf = malloc(ESC_MAX_DGRAM + 1)) != NULL)
        es->approvals = approvals_new();
    if (es->rules && !es->approvals)
        *err = strdup("out of memory");
    if (es->approvals && cfg->audit_path)
        es->audit = audit_open(cfg->audit_path, err);
    /* with an audit log every exec of the shell is to get its record */
    if (es->approvals && !cfg->audit_path)
        es->wrap_names = escalation_wrap_names(es->rules);
    if (!es->approvals || (cfg->audit_path && !es->audit)) {
        if (!*err)
            *err = strdup("out of memory");
        rules_policy_free(es->rules);
        approvals_free(es->approvals);
        free(es->dgram_buf);
        free(es);
        return NULL;
    }
    return es;
}

void
escalation_server_set_client(struct escalation_server *es, struct jsonrpc *rpc, bool elicitation)
{
    es->rpc = rpc;
    es->client_elicitation = elicitation;
}

size_t
escalation_server_rule_count(const struct escalation_server *es)
{
    return rules_policy_rule_count(es->rules);
}

void
escalation_server_free(struct escalation_server *es)
{
    if (!es)
        return;
    rules_policy_free(es->rules);
    approvals_free(es->approvals);
    audit_close(es->audit);
    free(es->wrap_names);
    free(es->dgram_buf);
    free(es);
}

/* ---- what the sandbox can write ---- */

static int
view_add(struct sandbox_view *v, const char *path)
{
    char *real = realpath(path, NULL);
    if (!real)
        return errno == ENOMEM ? -1 : 0; /* a root that does not exist grants nothing */
    char **grown = realloc(v->roots, (v->n + 1) * sizeof(char *));
    if (!grown) {
        free(real);
        return -1;
    }
    v->roots = grown;
    v->roots[v->n++] = real;
    return 0;
}

/* What the call's sandbox lets it write, from its policy (as the helper
 * applies it, docs/sandbox.md). */
static int
view_init(struct sandbox_view *v, const json_t *policy, const char *cwd, char **err)
{
    struct sandbox_policy *p = sandbox_policy_from_json(policy, cwd, err);
    if (!p)
        return -1;
    int rc = 0;
    switch (sandbox_policy_kind(p)) {
    case SANDBOX_DANGER_FULL_ACCESS:
    case SANDBOX_EXTERNAL:
        v->kind = VIEW_ALL;
        break;
    case SANDBOX_READ_ONLY:
        v->kind = VIEW_SOME;
        rc = view_add(v, "/dev");
        break;
    case SANDBOX_WORKSPACE_WRITE:
        v->kind = VIEW_SOME;
        rc = view_add(v, "/dev");
        if (rc == 0 && sandbox_policy_cwd(p))
            rc = view_add(v, sandbox_policy_cwd(p));
        for (size_t i = 0; rc == 0 && i < sandbox_policy_writable_root_count(p); i++)
            rc = view_add(v, sandbox_policy_writable_root(p, i));
        if (rc == 0 && sandbox_policy_slash_tmp_writable(p))
            rc = view_add(v, "/tmp");
        if (rc == 0 && sandbox_policy_tmpdir_writable(p) && getenv("TMPDIR"))
            rc = view_add(v, getenv("TMPDIR"));
        break;
    }
    sandbox_policy_free(p);
    if (rc < 0)
        *err = strdup("out of memory");
    return rc;
}

static void
view_free(struct sandbox_view *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->roots[i]);
    free(v->roots);
    v->roots = NULL;
    v->n = 0;
}

static bool
path_under(const char *path, const char *root)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return true;
    return strncmp(path, root, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Whether the sandboxed command could have written or replaced real (a
 * realpath).  Without a confining sandbox, anything its user may write. */
static bool
writable_from_sandbox(const struct sandbox_view *v, const char *real)
{
    if (v->kind == VIEW_ALL) {
        char *dir = strdup(real);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash)
            *(slash == dir ? slash + 1 : slash) = '\0';
        bool w = !dir || access(real, W_OK) == 0 || access(dir, W_OK) == 0;
        free(dir);
        return w;
    }
    for (size_t i = 0; i < v->n; i++) {
        if (path_under(real, v->roots[i]))
            return true;
    }
    return false;
}

/* ---- sessions ---- */

static void session_end(struct session *s);
static void on_session_handle_closed(uv_handle_t *h);
static void maybe_free_call(struct escalation_call *ec);

static void
audit_session(struct session *s, const char *decision, const char *reason, int exit_kind,
              int exit_value)
{
    struct escalation_server *es = s->ec->es;
    if (!es->audit || !s->have_req)
        return;
    json_t *argv = json_array();
    for (size_t i = 0; argv && i < s->req.argc; i++) {
        size_t len = 0;
        char *t = utf8_lossy(s->req.argv[i], strlen(s->req.argv[i]), &len);
        json_array_append_new(argv, t ? json_stringn(t, len) : json_null());
        free(t);
    }
    size_t flen = 0, wlen = 0;
    char *file = utf8_lossy(s->req.file, strlen(s->req.file), &flen);
    char *wd = utf8_lossy(s->req.workdir, strlen(s->req.workdir), &wlen);
    json_t *rec = json_pack("{s:s, s:s%, s:o, s:s%, s:O, s:s, s:s*, s:s*}", "call", s->ec->label,
                            "file", file ? file : "", file ? flen : 0, "argv",
                            argv ? argv : json_array(), "workdir", wd ? wd : "", wd ? wlen : 0,
                            "matched_rules", s->matched ? s->matched : json_null(), "decision",
                            decision, "reason", reason, "answered_by", s->answered_by);
    free(file);
    free(wd);
    if (rec && exit_kind >= 0)
        json_object_set_new(rec, exit_kind == ESC_EXIT_CODE ? "exit_code" : "exit_signal",
                            json_integer(exit_value));
    audit_write(es->audit, rec);
}

/* Sends one frame; on a fresh stream socket a few bytes never block. */
static int
session_send(struct session *s, const struct esc_msg *m)
{
    const char *why = NULL;
    int rc = esc_io_send_msg(s->fd, m, NULL, 0, &why);
    if (rc < 0)
        log_debug("escalation %s: cannot answer: %s", s->ec->label, why ? why : strerror(-rc));
    return rc;
}

static void
session_deny(struct session *s, const char *reason)
{
    log_info("escalation %s: deny %s: %s", s->ec->label, s->req.file, reason);
    audit_session(s, "deny", reason, -1, 0);
    struct esc_msg m = {.type = ESC_MSG_DENY};
    m.u.deny_reason = (char *)reason;
    session_send(s, &m);
    session_end(s);
}

static void
session_run(struct session *s, const char *why)
{
    log_debug("escalation %s: run %s in the sandbox (%s)", s->ec->label, s->req.file, why);
    audit_session(s, "run", why, -1, 0);
    struct esc_msg m = {.type = ESC_MSG_RUN};
    session_send(s, &m);
    session_end(s);
}

static void
session_escalate(struct session *s)
{
    struct esc_msg m = {.type = ESC_MSG_ESCALATE};
    if (session_send(s, &m) < 0) {
        session_end(s);
        return;
    }
    s->state = SESSION_FDS;
}

/* tree enforcement hook: the wrapper (the session's peer) will execv
 * exactly this; the watch lets it through without asking again. */
static void
expect_run(struct session *s)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (!s->ec->watch || getsockopt(s->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return;
    exec_watch_expect(s->ec->watch, cred.pid, s->program, (const char *const *)s->req.argv,
                      s->req.argc);
}

/* Allowed by a rule or a person: escalate, or Run when the rule cannot
 * vouch for this file (see writable_from_sandbox). */
static void
session_allowed(struct session *s)
{
    if (s->then_run || !s->real) {
        expect_run(s);
        session_run(s, s->then_run ? "approved, runs in the sandbox" : "allowed");
        return;
    }
    session_escalate(s);
}

static void
call_pause(struct escalation_call *ec, bool pause)
{
    if (!ec->sc || ec->released)
        return;
    if (pause) {
        ec->paused++;
        shell_call_pause_timeout(ec->sc);
    } else if (ec->paused > 0) {
        ec->paused--;
        shell_call_resume_timeout(ec->sc);
    }
}

static void
call_abort(struct escalation_call *ec)
{
    if (ec->aborted)
        return;
    ec->aborted = true;
    if (ec->on_abort)
        ec->on_abort(ec->abort_data, REASON_ABORTED);
    if (ec->sc && !ec->released)
        shell_call_signal(ec->sc, SIGKILL);
}

/* A person's answer to a question, whoever asked it (an exec session or
 * the exec watch): approvals for the session are remembered and an abort
 * stops the call here, so both askers get the same treatment. */
struct escalation_question {
    struct escalation_call *ec;
    long long id;
    const char *program;
    const char *const *args;
    size_t nargs;
    escalation_answer_fn done;
    void *data;
};

static void
on_question_answer(const json_t *result, const json_t *error, void *data)
{
    struct escalation_question *q = data;
    struct escalation_call *ec = q->ec;
    call_pause(ec, false);
    char *buf = NULL;
    const char *reason = NULL;
    bool approved = false;
    const char *action = json_string_value(json_object_get(result, "action"));
    const json_t *content = json_object_get(result, "content");
    const char *decision = json_string_value(json_object_get(content, "decision"));
    if (error) {
        const char *msg = json_string_value(json_object_get(error, "message"));
        if (asprintf(&buf, "The MCP client could not be asked for approval: %s",
                     msg ? msg : "error") < 0)
            buf = NULL;
        reason = buf ? buf : REASON_CANCELLED;
    } else if (!action || strcmp(action, "cancel") == 0) {
        reason = REASON_CANCELLED;
    } else if (strcmp(action, "decline") == 0) {
        reason = REASON_DECLINED;
    } else if (strcmp(action, "accept") != 0) {
        reason = REASON_CANCELLED;
    } else if (decision && strcmp(decision, "denied") == 0) {
        reason = REASON_DENIED;
    } else if (decision && strcmp(decision, "abort") == 0) {
        /* the call's group dies first, so nothing after this exec runs */
        call_abort(ec);
        reason = REASON_ABORTED;
    } else {
        approved = true;
        if (decision && strcmp(decision, "approved_for_session") == 0 &&
            approvals_add(ec->es->approvals, q->program, q->args, q->nargs) < 0)
            log_warn("escalation: out of memory remembering an approval");
    }
    escalation_answer_fn done = q->done;
    void *d = q->data;
    free(q);
    done(d, approved, reason);
    free(buf);
}

static json_t *elicit_params(const char *program, const char *const *args, size_t nargs,
                             const char *workdir);

enum escalation_ask
escalation_call_ask(struct escalation_call *ec, const char *program, const char *const *args,
                    size_t nargs, const char *workdir, escalation_answer_fn done, void *data,
                    struct escalation_question **q, const char **reason, const char **answered_by)
{
    struct escalation_server *es = ec->es;
    *q = NULL;
    *reason = NULL;
    if (approvals_contains(es->approvals, program, args, nargs)) {
        *answered_by = "session-approval";
        return ESCALATION_ASK_APPROVED;
    }
    if (!es->client_elicitation || !es->rpc) {
        *answered_by = "no-elicitation";
        *reason = REASON_NO_ELICITATION;
        return ESCALATION_ASK_DENIED;
    }
    *answered_by = "user";
    struct escalation_question *nq = calloc(1, sizeof(*nq));
    json_t *params = nq ? elicit_params(program, args, nargs, workdir) : NULL;
    long long id =
        params ? jsonrpc_request(es->rpc, "elicitation/create", params, on_question_answer, nq)
               : -1;
    if (id < 0) {
        free(nq);
        *reason = "The MCP client could not be asked for approval";
        return ESCALATION_ASK_DENIED;
    }
    *nq = (struct escalation_question){ec, id, program, args, nargs, done, data};
    call_pause(ec, true);
    *q = nq;
    return ESCALATION_ASK_PENDING;
}

void
escalation_question_cancel(struct escalation_question *q)
{
    if (!q)
        return;
    if (q->ec->es->rpc)
        jsonrpc_forget_request(q->ec->es->rpc, q->id);
    call_pause(q->ec, false);
    free(q);
}

static void
on_session_answer(void *data, bool approved, const char *reason)
{
    struct session *s = data;
    s->question = NULL;
    s->answered_by = "user";
    if (approved)
        session_allowed(s);
    else
        session_deny(s, reason);
}

static json_t *
elicit_params(const char *program, const char *const *argv, size_t nargs, const char *workdir)
{
    char *args = shlex_join(argv, nargs);
    char *text = NULL;
    if (!args || asprintf(&text, "Allow agent to run `%s%s%s` in `%s`?", program,
                          nargs > 0 ? " " : "", args, workdir) < 0)
        text = NULL;
    free(args);
    if (!text)
        return NULL;
    size_t len = 0;
    char *shown = utf8_lossy(text, strlen(text), &len);
    free(text);
    if (!shown)
        return NULL;
    json_t *p = json_pack(
        "{s:s%, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:[s,s,s,s], s:s}}}}", "message", shown, len,
        "requestedSchema", "type", "object", "properties", "reason", "type", "string",
        "description", "Optional reason for allowing or denying execution", "decision", "type",
        "string", "enum", "approved", "approved_for_session", "denied", "abort", "description",
        "Optional: approved (this once), approved_for_session (this command for the rest of the "
        "session), denied, or abort (stop the whole tool call)");
    free(shown);
    return p;
}

static void
session_ask(struct session *s)
{
    const char *reason = NULL;
    switch (escalation_call_ask(s->ec, s->program, (const char *const *)s->req.argv + 1,
                                s->req.argc - 1, s->req.workdir, on_session_answer, s, &s->question,
                                &reason, &s->answered_by)) {
    case ESCALATION_ASK_APPROVED:
        session_allowed(s);
        break;
    case ESCALATION_ASK_DENIED:
        session_deny(s, reason);
        break;
    case ESCALATION_ASK_PENDING:
        s->state = SESSION_ASKING;
        break;
    }
}

static json_t *
matches_json(const struct rules_result *r)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < r->n_matches; i++) {
        const struct rules_match *m = &r->matches[i];
        json_t *prefix = json_array();
        for (size_t j = 0; prefix && j < m->n_prefix; j++) {
            size_t len = 0;
            char *t = utf8_lossy(m->matched_prefix[j], strlen(m->matched_prefix[j]), &len);
            json_array_append_new(prefix, t ? json_stringn(t, len) : json_null());
            free(t);
        }
        json_array_append_new(
            arr, json_pack("{s:o, s:s, s:s*}", "prefix", prefix ? prefix : json_array(), "decision",
                           rules_decision_name(m->decision), "justification", m->justification));
    }
    return arr;
}

/* The rules' decision for the request, from FILE (made absolute), not
 * argv[0], which the caller chooses freely (exec -a).  Sets s->program,
 * s->matched, *forced_rm, and *forbid (malloc'd, or NULL) for a forbidden
 * rule with a justification.  Returns -1 when out of memory. */
static int
session_evaluate(struct session *s, enum rules_decision *d, bool *forced_rm, char **forbid)
{
    struct esc_request *r = &s->req;
    if (r->file[0] == '/')
        s->program = strdup(r->file);
    else if (asprintf(&s->program, "%s/%s", r->workdir, r->file) < 0)
        s->program = NULL;
    const char **argv = s->program ? malloc(r->argc * sizeof(char *)) : NULL;
    if (!argv)
        return -1;
    argv[0] = s->program;
    for (size_t i = 1; i < r->argc; i++)
        argv[i] = r->argv[i];
    struct rules_result res = {0};
    unsigned flags = s->ec->es->preserve_program_paths ? 0 : RULES_CHECK_RESOLVE_HOST_EXECUTABLES;
    int rc = rules_policy_check(s->ec->es->rules, argv, r->argc, flags, &res);
    *forced_rm = rc == 0 && res.decision == RULES_DECISION_NONE &&
                 exec_checks_forces_rm((const char *const *)argv, r->argc);
    free(argv);
    if (rc < 0)
        return -1;
    s->matched = s->ec->es->audit ? matches_json(&res) : NULL; /* only the audit log reads it */
    const char *justification = NULL;
    for (size_t i = 0; i < res.n_matches && !justification; i++) {
        if (res.matches[i].decision == res.decision)
            justification = res.matches[i].justification;
    }
    *forbid = NULL;
    if (res.decision == RULES_DECISION_FORBIDDEN && justification &&
        asprintf(forbid, "%s: %s", REASON_FORBIDDEN, justification) < 0)
        *forbid = NULL;
    *d = res.decision;
    rules_result_free(&res);
    return 0;
}

/* Sets s->real to what may be escalated: FILE resolved, a regular file the
 * sandbox cannot have written; otherwise NULL and the exec will Run. */
static void
session_resolve_escalatable(struct session *s)
{
    struct stat st;
    s->real = realpath(s->program, NULL);
    if (s->real && (stat(s->real, &st) < 0 || !S_ISREG(st.st_mode) ||
                    writable_from_sandbox(&s->ec->writable, s->real))) {
        log_info("escalation %s: %s is writable from the sandbox or not a regular file: not "
                 "escalated",
                 s->ec->label, s->real);
        free(s->real);
        s->real = NULL;
    }
    if (!s->real)
        s->then_run = true;
}

/* The decision for a complete REQUEST (docs/escalation.md). */
static void
session_decide(struct session *s)
{
    struct stat st;
    if (stat(s->req.workdir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        session_deny(s, "the request's workdir is not an existing directory");
        return;
    }
    enum rules_decision d = RULES_DECISION_NONE;
    bool forced_rm = false;
    char *forbid = NULL;
    if (session_evaluate(s, &d, &forced_rm, &forbid) < 0) {
        session_deny(s, "out of memory");
        return;
    }
    s->answered_by = "rules";
    switch (d) {
    case RULES_DECISION_FORBIDDEN:
        session_deny(s, forbid ? forbid : REASON_FORBIDDEN);
        break;
    case RULES_DECISION_NONE:
        s->then_run = true;
        if (forced_rm)
            session_ask(s);
        else
            session_run(s, "no rule");
        break;
    case RULES_DECISION_PROMPT:
        session_resolve_escalatable(s);
        session_ask(s);
        break;
    case RULES_DECISION_ALLOW:
        session_resolve_escalatable(s);
        session_allowed(s);
        break;
    }
    free(forbid);
}

static void
remember_group(struct escalation_call *ec, pid_t pgid)
{
    pid_t *grown = realloc(ec->groups, (ec->n_groups + 1) * sizeof(pid_t));
    if (!grown) {
        /* cannot wait for the call's end: what it left goes now */
        reaper_signal_group(pgid, SIGKILL);
        return;
    }
    ec->groups = grown;
    ec->groups[ec->n_groups++] = pgid;
}

static void on_session_proc_closed(struct spawn_child *p);

static void
on_program_exit(struct spawn_child *p, int64_t status, int sig)
{
    struct session *s = spawn_data(p);
    s->proc_exited = true;
    remember_group(s->ec, spawn_pid(p));
    if (s->state == SESSION_CLOSING) {
        spawn_close(s->proc, on_session_proc_closed);
        return;
    }
    struct esc_msg m = {.type = ESC_MSG_EXIT};
    if (sig > 0 && sig <= 64) {
        m.u.exit.kind = ESC_EXIT_SIGNAL;
        m.u.exit.value = sig;
    } else {
        m.u.exit.kind = ESC_EXIT_CODE;
        m.u.exit.value = (int)(status & 0xff);
    }
    log_debug("escalation %s: %s ended (%s %d)", s->ec->label, s->real,
              m.u.exit.kind == ESC_EXIT_CODE ? "exit" : "signal", m.u.exit.value);
    audit_session(s, "escalate", NULL, (int)m.u.exit.kind, m.u.exit.value);
    if (s->state == SESSION_RUNNING)
        session_send(s, &m);
    session_end(s);
}

static void
session_free(struct session *s)
{
    struct escalation_call *ec = s->ec;
    if (s->prev)
        s->prev->next = s->next;
    else
        ec->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    ec->n_sessions--;
    if (s->fd >= 0)
        close(s->fd);
    esc_buf_free(&s->in);
    esc_fdlist_close(&s->fds);
    if (s->have_req) {
        struct esc_msg m = {.type = ESC_MSG_REQUEST};
        m.u.request = s->req;
        esc_msg_free(&m);
    }
    free(s->program);
    free(s->real);
    json_decref(s->matched);
    free(s);
    maybe_free_call(ec);
}

static void
on_session_handle_closed(uv_handle_t *h)
{
    struct session *s = h->data;
    if (--s->handles_open == 0)
        session_free(s);
}

static void
on_session_proc_closed(struct spawn_child *p)
{
    struct session *s = spawn_data(p);
    if (--s->handles_open == 0)
        session_free(s);
}

/* Spawns the program with the received fds at their targets. */
static void
session_spawn(struct session *s, const int *targets, size_t count)
{
    /* + 1: never a zero-sized allocation */
    struct spawn_fd *fds = calloc(count + 1, sizeof(*fds));
    char **env = calloc(s->req.envc + 1, sizeof(char *));
    if (!fds || !env) {
        free(fds);
        free(env);
        session_end(s);
        return;
    }
    for (size_t i = 0; i < count; i++)
        fds[i] = (struct spawn_fd){s->fds.fds[i], targets[i]};
    size_t n = 0;
    for (size_t i = 0; i < s->req.envc; i++) {
        if (!exec_checks_env_dropped(s->req.env[i]))
            env[n++] = s->req.env[i];
    }
    struct spawn_options opts = {
        .file = s->real,
        .argv = s->req.argv,
        .env = env,
        .cwd = s->req.workdir,
        .fds = fds,
        .n_fds = count,
        /* its own session and group: a signal for the call reaches its tree */
        .new_session = true,
    };
    /* tree enforcement: the program starts under the exec filter (no other
     * confinement: it is escalated), so every exec of its tree is decided
     * too; the server continues its own first exec */
    int listener = -1;
    if (s->ec->watch)
        opts.exec_listener = &listener;
    int rc = spawn_start(s->ec->es->loop, &opts, on_program_exit, s, &s->proc);
    if (rc == 0 && s->ec->watch) {
        int wrc = exec_watch_adopt(s->ec->watch, listener);
        if (wrc < 0)
            log_error("escalation %s: cannot watch %s's execs: %s", s->ec->label, s->real,
                      uv_strerror(wrc));
    }
    free(fds);
    free(env);
    /* the program has its copies; ours go, so its readers see EOF with it */
    esc_fdlist_close(&s->fds);
    if (rc < 0) {
        s->proc_exited = true;
        log_warn("escalation %s: cannot start %s: %s", s->ec->label, s->real, uv_strerror(rc));
        struct esc_msg m = {.type = ESC_MSG_EXIT};
        m.u.exit.kind = ESC_EXIT_CODE;
        m.u.exit.value = rc == -ENOENT ? 127 : 126;
        audit_session(s, "escalate", uv_strerror(rc), ESC_EXIT_CODE, m.u.exit.value);
        session_send(s, &m);
        session_end(s);
        return;
    }
    s->proc_open = true;
    s->handles_open++;
    log_info("escalation %s: escalated %s (pid %d)", s->ec->label, s->real, spawn_pid(s->proc));
    s->state = SESSION_RUNNING;
}

/* One decoded message; returns -1 when the session ended. */
static int
session_message(struct session *s, struct esc_msg *m)
{
    if (s->state == SESSION_REQUEST && m->type == ESC_MSG_REQUEST && s->fds.count == 0) {
        s->req = m->u.request;
        s->have_req = true;
        memset(m, 0, sizeof(*m));
        session_decide(s);
        return s->state == SESSION_CLOSING ? -1 : 0;
    }
    if (s->state == SESSION_FDS && m->type == ESC_MSG_FDS && m->u.fds.count == s->fds.count) {
        session_spawn(s, m->u.fds.targets, m->u.fds.count);
        esc_msg_free(m);
        return s->state == SESSION_CLOSING ? -1 : 0;
    }
    if (s->state == SESSION_RUNNING && m->type == ESC_MSG_SIGNAL && s->fds.count == 0) {
        if (!s->proc_exited && kill(-spawn_pid(s->proc), m->u.signo) < 0 && errno != ESRCH)
            log_warn("escalation: kill: %s", strerror(errno));
        esc_msg_free(m);
        return 0;
    }
    log_warn("escalation %s: unexpected %s message%s: session ended", s->ec->label,
             esc_msg_type_name((int)m->type), s->fds.count ? " (or fds)" : "");
    esc_msg_free(m);
    session_end(s);
    return -1;
}

static void
on_session_readable(uv_poll_t *h, int status, int events)
{
    struct session *s = h->data;
    if (s->state == SESSION_CLOSING)
        return;
    for (int rounds = 0; rounds < 16; rounds++) {
        if (esc_buf_reserve(&s->in, ESCALATION_READ_CHUNK) < 0) {
            session_end(s);
            return;
        }
        ssize_t n = esc_io_recvmsg(s->fd, s->in.data + s->in.len, ESCALATION_READ_CHUNK, &s->fds);
        if (n == -EAGAIN)
            break;
        if (n <= 0) {
            /* end of the stream (the wrapper is gone) or an error */
            if (n < 0)
                log_debug("escalation %s: session read: %s", s->ec->label, strerror((int)-n));
            session_end(s);
            return;
        }
        s->in.len += (size_t)n;
        if (s->fds.count > 0 && s->state != SESSION_FDS) {
            log_warn("escalation %s: fds outside FDS: session ended", s->ec->label);
            session_end(s);
            return;
        }
        for (;;) {
            struct esc_msg m = {0};
            size_t used = 0;
            const char *why = NULL;
            int rc = esc_msg_decode(s->in.data, s->in.len, &m, &used, &why);
            if (rc == 0)
                break;
            if (rc < 0) {
                log_warn("escalation %s: bad message: %s: session ended", s->ec->label,
                         why ? why : strerror(-rc));
                session_end(s);
                return;
            }
            esc_buf_consume(&s->in, used);
            if (session_message(s, &m) < 0)
                return;
            if (s->state == SESSION_ASKING) {
                /* nothing may come while the person is asked but the end of
                 * the stream, which still must be noticed */
                break;
            }
        }
        if (s->state == SESSION_ASKING && s->in.len > 0) {
            log_warn("escalation %s: data while deciding: session ended", s->ec->label);
            session_end(s);
            return;
        }
    }
}

/* Ends the session: kills its program if it still runs, forgets an open
 * question, closes its handles (freed in the last close callback). */
static void
session_end(struct session *s)
{
    if (s->state == SESSION_CLOSING)
        return;
    escalation_question_cancel(s->question);
    s->question = NULL;
    s->state = SESSION_CLOSING;
    if (s->watched) {
        uv_poll_stop(&s->poll);
        uv_close((uv_handle_t *)&s->poll, on_session_handle_closed);
    }
    /* uv_close has already dropped the fd from the loop's poll set: it
     * goes now, so the wrapper sees the end at once (an unwatched session
     * is freed by session_start, which is still on the stack) */
    close(s->fd);
    s->fd = -1;
    if (s->proc_open && !s->proc_exited) {
        /* the handle closes when the exit is reaped (on_program_exit) */
        kill(-spawn_pid(s->proc), SIGKILL);
    } else if (s->proc_open) {
        spawn_close(s->proc, on_session_proc_closed);
    }
}

/* Puts the session's socket on the loop (the FDS, SIGNALs, or its end
 * while a person is asked). Returns 0, or -1 with the session ended. */
static int
session_watch(struct session *s)
{
    if (uv_poll_init(s->ec->es->loop, &s->poll, s->fd) < 0) {
        log_warn("escalation %s: cannot serve a session", s->ec->label);
        session_end(s);
        return -1;
    }
    s->watched = true;
    s->poll.data = s;
    s->handles_open++;
    uv_poll_start(&s->poll, UV_READABLE | UV_DISCONNECT, on_session_readable);
    return 0;
}

/* A session from its first datagram: with a REQUEST it is decided at once,
 * and put on the loop only when it goes on (Escalate, a question); a Run
 * or a Deny never costs a loop round. With a HELLO the REQUEST is read
 * from the stream. Takes fd and what first owns. */
static void
session_start(struct escalation_call *ec, int fd, struct esc_msg *first)
{
    struct session *s = calloc(1, sizeof(*s));
    int flags = fcntl(fd, F_GETFL);
    if (!s || flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        log_warn("escalation %s: cannot serve a session", ec->label);
        free(s);
        close(fd);
        esc_msg_free(first);
        return;
    }
    s->ec = ec;
    s->fd = fd;
    s->next = ec->sessions;
    if (ec->sessions)
        ec->sessions->prev = s;
    ec->sessions = s;
    ec->n_sessions++;
    if (first->type == ESC_MSG_REQUEST) {
        s->req = first->u.request;
        s->have_req = true;
        memset(first, 0, sizeof(*first));
        session_decide(s);
    }
    esc_msg_free(first);
    if (s->state != SESSION_CLOSING)
        session_watch(s);
    if (s->state == SESSION_CLOSING && s->handles_open == 0)
        session_free(s);
}

/* ---- the call ---- */

static void
on_hello_readable(uv_poll_t *h, int status, int events)
{
    struct escalation_call *ec = h->data;
    if (ec->released)
        return;
    for (int i = 0; i < 64 && !ec->released; i++) {
        int fd = -1;
        const char *why = NULL;
        struct esc_msg first;
        int rc = esc_io_recv_hello(ec->server_fd, ec->es->dgram_buf, ESC_MAX_DGRAM + 1, &fd, &first,
                                   &why);
        if (rc == -EAGAIN || rc == 0)
            return;
        if (rc < 0) {
            log_warn("escalation %s: bad first datagram: %s", ec->label, why ? why : strerror(-rc));
            continue;
        }
        if (ec->n_sessions >= ESCALATION_MAX_SESSIONS) {
            log_warn("escalation %s: more than %d exec sessions at once: refused", ec->label,
                     ESCALATION_MAX_SESSIONS);
            close(fd);
            esc_msg_free(&first);
            continue;
        }
        session_start(ec, fd, &first);
    }
}

struct escalation_call *
escalation_call_new(struct escalation_server *es, const json_t *sandbox_policy,
                    const char *sandbox_cwd, const char *workdir, const char *call_label,
                    void (*on_abort)(void *data, const char *why), void *data, char **err)
{
    *err = NULL;
    struct escalation_call *ec = calloc(1, sizeof(*ec));
    if (!ec || !(ec->label = strdup(call_label))) {
        free(ec);
        *err = strdup("out of memory");
        return NULL;
    }
    ec->es = es;
    ec->on_abort = on_abort;
    ec->abort_data = data;
    ec->server_fd = ec->child_fd = -1;
    if (view_init(&ec->writable, sandbox_policy, sandbox_cwd ? sandbox_cwd : workdir, err) < 0) {
        view_free(&ec->writable);
        free(ec->label);
        free(ec);
        return NULL;
    }
    es->calls++;
    return ec;
}

static void
free_call(struct escalation_call *ec)
{
    if (ec->server_fd >= 0)
        close(ec->server_fd);
    if (ec->child_fd >= 0)
        close(ec->child_fd);
    view_free(&ec->writable);
    ec->es->calls--;
    exec_watch_release(ec->watch);
    free(ec->groups);
    free(ec->label);
    free(ec);
}

void
escalation_call_discard(struct escalation_call *ec)
{
    if (ec)
        free_call(ec);
}

static void
maybe_free_call(struct escalation_call *ec)
{
    if (ec->released && ec->handles_open == 0 && !ec->sessions)
        free_call(ec);
}

static void
on_call_poll_closed(uv_handle_t *h)
{
    struct escalation_call *ec = h->data;
    ec->handles_open--;
    maybe_free_call(ec);
}

static void
att_signal(struct shell_call_attachment *a, int sig)
{
    struct escalation_call *ec =
        (struct escalation_call *)((char *)a - offsetof(struct escalation_call, att));
    for (struct session *s = ec->sessions; s; s = s->next) {
        if (s->proc_open && !s->proc_exited && kill(-spawn_pid(s->proc), sig) < 0 && errno != ESRCH)
            log_warn("escalation: kill: %s", strerror(errno));
    }
    reaper_signal_groups(ec->groups, ec->n_groups, sig);
}

static void
att_release(struct shell_call_attachment *a)
{
    struct escalation_call *ec =
        (struct escalation_call *)((char *)a - offsetof(struct escalation_call, att));
    ec->released = true;
    ec->sc = NULL;
    /* what escalated programs left in their groups ends with the call */
    reaper_signal_groups(ec->groups, ec->n_groups, SIGKILL);
    exec_watch_release(ec->watch);
    ec->watch = NULL;
    for (struct session *s = ec->sessions, *next; s; s = next) {
        next = s->next;
        session_end(s);
    }
    if (ec->poll_open) {
        ec->poll_open = false;
        uv_poll_stop(&ec->poll);
        uv_close((uv_handle_t *)&ec->poll, on_call_poll_closed);
    }
    /* as for sessions: the loop no longer watches it */
    if (ec->server_fd >= 0) {
        close(ec->server_fd);
        ec->server_fd = -1;
    }
    maybe_free_call(ec);
}

/* The call's datagram socket pair (the server's end becomes non-blocking
 * in start_serving's uv_poll_init). */
static int
open_socket(struct escalation_call *ec)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) < 0)
        return -errno;
    ec->server_fd = pair[0];
    ec->child_fd = pair[1];
    return 0;
}

/* Makes the socket pair and watches the server's end.  Returns 0 or a
 * negative errno (logged; the pair is then closed or never made). */
static int
start_serving(struct escalation_call *ec)
{
    int rc = open_socket(ec);
    if (rc == 0) {
        rc = uv_poll_init(ec->es->loop, &ec->poll, ec->server_fd);
        if (rc == 0) {
            ec->poll.data = ec;
            ec->poll_open = true;
            ec->handles_open++;
            rc = uv_poll_start(&ec->poll, UV_READABLE, on_hello_readable);
        } else {
            close(ec->server_fd);
            close(ec->child_fd);
            ec->server_fd = ec->child_fd = -1;
        }
    }
    if (rc < 0)
        log_error("escalation %s: cannot serve an escalation socket: %s: every exec of this call "
                  "will fail closed",
                  ec->label, uv_strerror(rc));
    return rc;
}

void
escalation_call_attach(struct escalation_call *ec, struct shell_call *sc)
{
    ec->sc = sc;
    ec->att.signal = att_signal;
    ec->att.release = att_release;
    shell_call_attach(sc, &ec->att);
    if (start_serving(ec) == 0)
        shell_call_set_escalate_fd(sc, ec->child_fd);
}

int
escalation_call_serve_detached(struct escalation_call *ec, int *child_fd)
{
    int rc = start_serving(ec);
    *child_fd = ec->child_fd;
    return rc;
}

void
escalation_call_end_detached(struct escalation_call *ec)
{
    att_release(&ec->att);
}

void
escalation_call_spawned(struct escalation_call *ec)
{
    if (ec->child_fd >= 0) {
        close(ec->child_fd);
        ec->child_fd = -1;
    }
}

static char *
env_entry(const char *name, const char *value)
{
    char *e = NULL;
    if (asprintf(&e, "%s=%s", name, value) < 0)
        return NULL;
    return e;
}

char **
escalation_shell_env(const char *wrapper, const char *bash, const char *wrap_names)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 6, sizeof(char *));
    if (!env)
        return NULL;
    size_t k = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        if (strncmp(environ[i], "EXEC_WRAPPER=", 13) == 0 ||
            strncmp(environ[i], "EXECGATE_WRAP_NAMES=", 20) == 0 ||
            strncmp(environ[i], "EXECGATE_WRAP_IN_SHELL=", 23) == 0 ||
            strncmp(environ[i], "CODEX_ESCALATE_SOCKET=", 22) == 0 ||
            strncmp(environ[i], "EXECGATE_BASH=", 14) == 0)
            continue;
        ok = (env[k++] = strdup(environ[i])) != NULL;
    }
    char fdnum[16];
    snprintf(fdnum, sizeof(fdnum), "%d", SHELL_CALL_ESCALATE_FD);
    if (ok)
        ok = (env[k++] = env_entry("EXEC_WRAPPER", wrapper)) != NULL;
    /* the patched Bash asks in its own process (esc_client) instead of
     * exec'ing the wrapper: the same session, one exec fewer */
    if (ok)
        ok = (env[k++] = strdup("EXECGATE_WRAP_IN_SHELL=1")) != NULL;
    if (ok && wrap_names)
        ok = (env[k++] = env_entry("EXECGATE_WRAP_NAMES", wrap_names)) != NULL;
    if (ok)
        ok = (env[k++] = env_entry("CODEX_ESCALATE_SOCKET", fdnum)) != NULL;
    if (ok)
        ok = (env[k++] = env_entry("EXECGATE_BASH", bash)) != NULL;
    if (!ok) {
        for (size_t i = 0; i < k; i++)
            free(env[i]);
        free(env);
        return NULL;
    }
    return env;
}

const char *
escalation_server_wrap_names(const struct escalation_server *es)
{
    return es->wrap_names;
}

/* ---- hooks for tree enforcement ---- */

void
escalation_server_audit(struct escalation_server *es, json_t *record)
{
    audit_write(es->audit, record);
}

bool
escalation_server_auditing(const struct escalation_server *es)
{
    return es->audit != NULL;
}

const struct rules_policy *
escalation_server_rules(const struct escalation_server *es)
{
    return es->rules;
}

bool
escalation_server_preserve_program_paths(const struct escalation_server *es)
{
    return es->preserve_program_paths;
}

void
escalation_call_set_exec_watch(struct escalation_call *ec, struct exec_watch *w)
{
    ec->watch = w;
    exec_watch_set_call(w, ec);
}
