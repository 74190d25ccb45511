/*
 * decide: the server's rules and the wrapper hint, its clients, its calls
 * and their memos, and the records of what was decided (decide.h).  The
 * decision itself is decide_exec.c's, the repositories' decide_repo.c's,
 * the question decide_ask.c's.
 */
#include "server/decide/decide_int.h"

#include "server/decide/approvals.h"
#include "server/decide/audit.h"
#include "server/rpc/client_log.h"
#include "common/log.h"
#include "server/call/shell_call.h"
#include "common/utf8.h"
#include "server/call/writable_history.h"
#include "proto/esc_proto.h"
#include "rules/heuristic.h"
/* rules/ and sandbox/ both have a policy.h: named by their directories */
#include "rules/amend.h"
#include "rules/lint.h"
#include "rules/load.h"
#include "rules/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rules loading ---- */

static struct rules_policy *
load_rules(const struct decide_config *cfg, char **err)
{
    return rules_load_paths(cfg->rules_paths, cfg->n_rules_paths, cfg->default_rules_dir, err);
}

/* ---- the wrapper hint ---- */

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
 * The programs the wrapper path may decide other than Run: every program
 * a rule names, and those the forced-rm heuristic reads.  A program goes
 * to the wrapper when its path or its last component is listed; a link
 * named otherwise to a listed program is judged by the tree watch, which
 * sees every name (docs/escalation.md, "The wrapper hint").  NULL when a
 * name cannot be listed (a ':' in it) or the list is too long.
 */
static char *
build_wrap_names(const struct rules_policy *rules)
{
    struct wrap_names w = {0};
    int rc = rules_policy_each_program(rules, wrap_names_add_rule, &w);
    const char *const *heuristic = heuristic_programs_list();
    for (size_t i = 0; rc == 0 && heuristic[i]; i++)
        rc = wrap_names_add(&w, heuristic[i], strlen(heuristic[i]));
    if (rc != 0) {
        free(w.buf);
        return NULL;
    }
    return w.buf;
}

/* ---- the server ---- */

static void
log_lint(void *arg, const char *line)
{
    log_warn("rules: %s", line);
}

/* The rules' sources, copied into ds.  Returns -1 when out of memory. */
static int
keep_sources(struct decide_server *ds, const struct decide_config *cfg)
{
    ds->rules_paths = calloc(cfg->n_rules_paths + 1, sizeof(char *));
    if (!ds->rules_paths)
        return -1;
    for (size_t i = 0; i < cfg->n_rules_paths; i++) {
        if (!(ds->rules_paths[i] = strdup(cfg->rules_paths[i])))
            return -1;
        ds->n_rules_paths++;
    }
    if (cfg->default_rules_dir && !(ds->default_rules_dir = strdup(cfg->default_rules_dir)))
        return -1;
    return 0;
}

/* The configuration the rules were loaded from (borrowing ds's copies). */
static struct decide_config
sources(const struct decide_server *ds)
{
    return (struct decide_config){
        .rules_paths = (const char *const *)ds->rules_paths,
        .n_rules_paths = ds->n_rules_paths,
        .default_rules_dir = ds->default_rules_dir,
        .preserve_program_paths = ds->preserve_program_paths,
    };
}

struct decide_server *
decide_server_new(const struct decide_config *cfg, char **err)
{
    *err = NULL;
    struct decide_server *ds = calloc(1, sizeof(*ds));
    if (!ds || keep_sources(ds, cfg) < 0) {
        decide_server_free(ds);
        *err = strdup("out of memory");
        return NULL;
    }
    ds->preserve_program_paths = cfg->preserve_program_paths;
    ds->answers_file = rules_amend_answers_file((const char *const *)ds->rules_paths,
                                                ds->n_rules_paths, ds->default_rules_dir);
    ds->rules = load_rules(cfg, err);
    /* what runs outside the sandbox under an allow rule is the rules
     * author's to weigh: say at start what deserves a second look */
    if (ds->rules && rules_lint_policy(ds->rules, log_lint, NULL) < 0)
        log_warn("rules: out of memory while linting the rules");
    if (ds->rules && (ds->written = writable_history_new()) != NULL)
        ds->client = decide_client_new();
    if (ds->rules && !ds->client)
        *err = strdup("out of memory");
    if (ds->client && cfg->audit_path)
        ds->audit = audit_open(cfg->audit_path, err);
    /* with an audit log every exec of the shell is to get its record */
    if (ds->client && !cfg->audit_path)
        ds->wrap_names = build_wrap_names(ds->rules);
    if (!ds->client || (cfg->audit_path && !ds->audit)) {
        if (!*err)
            *err = strdup("out of memory");
        decide_server_free(ds);
        return NULL;
    }
    return ds;
}

int
decide_server_reload(struct decide_server *ds, char **err)
{
    *err = NULL;
    struct decide_config cfg = sources(ds);
    struct rules_policy *rules = load_rules(&cfg, err);
    if (!rules)
        return -1;
    /* the hint lists what the new rules name: computed before the swap so
     * that a failure leaves the old pair in force */
    char *wrap_names = NULL;
    if (!ds->audit && !(wrap_names = build_wrap_names(rules)))
        log_warn("rules: the reloaded rules cannot be given as a wrapper hint: every exec of "
                 "the shell goes to the wrapper");
    if (rules_lint_policy(rules, log_lint, NULL) < 0)
        log_warn("rules: out of memory while linting the rules");
    /* decisions are made synchronously: none holds the old policy now */
    rules_policy_free(ds->rules);
    free(ds->wrap_names);
    ds->rules = rules;
    ds->wrap_names = wrap_names;
    ds->generation++;
    return 0;
}

uint64_t
decide_server_generation(const struct decide_server *ds)
{
    return ds->generation;
}

const char *const *
decide_server_rules_paths(const struct decide_server *ds, size_t *n)
{
    *n = ds->n_rules_paths;
    return (const char *const *)ds->rules_paths;
}

void
decide_server_free(struct decide_server *ds)
{
    if (!ds)
        return;
    for (size_t i = 0; ds->rules_paths && i < ds->n_rules_paths; i++)
        free(ds->rules_paths[i]);
    free(ds->rules_paths);
    free(ds->default_rules_dir);
    free(ds->answers_file);
    rules_policy_free(ds->rules);
    decide_client_unref(ds->client);
    audit_close(ds->audit);
    free(ds->wrap_names);
    for (size_t i = 0; i < ds->n_repos; i++)
        free(ds->repos[i].root);
    free(ds->repos);
    writable_history_free(ds->written);
    free(ds);
}

struct decide_client *
decide_client_new(void)
{
    struct decide_client *cl = calloc(1, sizeof(*cl));
    if (cl && !(cl->approvals = approvals_new())) {
        free(cl);
        cl = NULL;
    }
    if (cl)
        cl->refs = 1;
    return cl;
}

void
decide_client_set(struct decide_client *cl, struct jsonrpc *rpc, bool elicitation,
                  struct client_log *log)
{
    cl->peer = (struct ask_peer){.rpc = rpc, .elicitation = elicitation};
    cl->log = log;
}

void
decide_client_unref(struct decide_client *cl)
{
    if (!cl || --cl->refs > 0)
        return;
    approvals_free(cl->approvals);
    free(cl);
}

void
decide_call_set_client(struct decide_call *dc, struct decide_client *cl)
{
    cl->refs++;
    decide_client_unref(dc->cl);
    dc->cl = cl;
    ask_line_set_peer(dc->line, &cl->peer);
}

bool
decide_server_sandbox_wrote(const struct decide_server *ds, const char *path)
{
    return !ds || !ds->written || writable_history_contains(ds->written, path);
}

size_t
decide_server_rule_count(const struct decide_server *ds)
{
    return rules_policy_rule_count(ds->rules);
}

const char *
decide_server_wrap_names(const struct decide_server *ds)
{
    return ds->wrap_names;
}

const struct rules_policy *
decide_server_rules(const struct decide_server *ds)
{
    return ds ? ds->rules : NULL;
}

struct audit *
decide_server_audit(const struct decide_server *ds)
{
    return ds ? ds->audit : NULL;
}

/* ---- the call ---- */

/* writable_view_written_fn: whether a sandbox of an earlier call (or one
 * running) could have written dir. */
static bool
written_before(void *arg, const char *dir)
{
    const struct decide_server *ds = arg;
    return ds->written && writable_history_contains(ds->written, dir);
}

struct decide_call *
decide_call_new(struct decide_server *ds, const struct sandbox_policy *policy, const json_t *id,
                const char *label, void (*on_abort)(void *data, const char *why), void *data,
                char **err)
{
    *err = NULL;
    struct decide_call *dc = calloc(1, sizeof(*dc));
    if (!dc || !(dc->label = strdup(label)) || !(dc->line = ask_line_new(on_abort, data))) {
        if (dc)
            free(dc->label);
        free(dc);
        *err = strdup("out of memory");
        return NULL;
    }
    if (writable_view_init_after(&dc->view, policy, written_before, ds, err) < 0) {
        ask_line_unref(dc->line);
        free(dc->label);
        free(dc);
        return NULL;
    }
    /* from now on its sandbox may run: what it can write counts for every
     * call's decisions, for the rest of the server's life */
    if (writable_history_add(ds->written, &dc->view))
        log_warn("decide %s: the sandboxes of this server's calls could write more than %d "
                 "places in all (or memory ran out): from now on nothing runs outside the "
                 "sandbox",
                 label, WRITABLE_HISTORY_MAX_ROOTS);
    dc->id = id ? json_incref((json_t *)id) : NULL;
    dc->ds = ds;
    dc->cl = ds->client;
    ds->client->refs++;
    ask_line_set_peer(dc->line, &dc->cl->peer);
    dc->refs = 1;
    ds->calls++;
    return dc;
}

struct decide_call *
decide_call_ref(struct decide_call *dc)
{
    dc->refs++;
    return dc;
}

static void
memo_clear(struct memo_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].reason);
    }
    l->n = 0;
}

void
decide_call_unref(struct decide_call *dc)
{
    if (!dc || --dc->refs > 0)
        return;
    writable_view_release(&dc->view);
    for (size_t i = 0; i < dc->n_kept; i++) {
        free(dc->kept[i].dotgit);
        free(dc->kept[i].gitdir);
    }
    free(dc->kept);
    memo_clear(&dc->expected);
    memo_clear(&dc->declined);
    dc->ds->calls--;
    /* a question still on the line holds it, not the client: nobody to
     * ask from now on */
    ask_line_set_peer(dc->line, NULL);
    ask_line_unref(dc->line);
    decide_client_unref(dc->cl);
    json_decref(dc->id);
    free(dc->label);
    free(dc->first_label);
    free(dc);
}

int
decide_call_rename(struct decide_call *dc, const json_t *id, const char *label)
{
    char *copy = strdup(label);
    if (!copy)
        return -1;
    if (!dc->first_label)
        dc->first_label = dc->label; /* borrowed by the call's other parts */
    else
        free(dc->label);
    dc->label = copy;
    json_decref(dc->id);
    dc->id = id ? json_incref((json_t *)id) : NULL;
    return 0;
}

struct client_log *
decide_call_log(const struct decide_call *dc)
{
    return dc->cl->log;
}

struct ask_line *
decide_call_asking(struct decide_call *dc)
{
    return dc->line;
}

void
decide_call_start(struct decide_call *dc, struct shell_call *sc)
{
    note_kept_repos(dc);
    ask_line_attach(dc->line, sc);
}

void
decide_call_end(struct decide_call *dc)
{
    if (dc)
        ask_line_attach(dc->line, NULL);
}

const json_t *
decide_call_id(const struct decide_call *dc)
{
    return dc->id;
}

const char *
decide_call_label(const struct decide_call *dc)
{
    return dc->label;
}

const struct writable_view *
decide_call_view(const struct decide_call *dc)
{
    return &dc->view;
}

/* ---- memos ---- */

void
memo_remove(struct memo_list *l, size_t i)
{
    free(l->items[i].key);
    free(l->items[i].reason);
    memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof(l->items[0]));
    l->n--;
}

void
memo_add(struct memo_list *l, pid_t pid, const char *key, size_t keylen, const char *reason)
{
    char *k = malloc(keylen);
    char *r = reason ? strdup(reason) : NULL;
    if (!k || (reason && !r)) {
        free(k);
        free(r);
        return;
    }
    memcpy(k, key, keylen);
    if (l->n == DECIDE_MAX_REMEMBERED)
        memo_remove(l, 0);
    l->items[l->n++] = (struct memo){pid, k, keylen, r};
}

/* The index of the memo for key (and pid, unless the memo's is 0), or -1. */
long
memo_find(const struct memo_list *l, pid_t pid, const char *key, size_t keylen)
{
    for (size_t i = 0; i < l->n; i++) {
        const struct memo *m = &l->items[i];
        if ((m->pid == 0 || m->pid == pid) && m->keylen == keylen &&
            memcmp(m->key, key, keylen) == 0)
            return (long)i;
    }
    return -1;
}

void
decide_call_expect(struct decide_call *dc, pid_t pid, const struct decide_result *r)
{
    if (pid > 0 && r->key)
        memo_add(&dc->expected, pid, r->key, r->keylen, NULL);
}

json_t *
text_json(const char *t)
{
    size_t len = 0;
    char *u = utf8_lossy(t, strlen(t), &len);
    json_t *j = u ? json_stringn(u, len) : NULL;
    free(u);
    return j ? j : json_null();
}

/* ---- the audit record ---- */

/* The client's level for a record: refusals are warnings, what ran
 * outside and what a person answered is information, the rest detail. */
static enum client_log_level
record_level(const char *decision, const char *answered_by, bool kept_inside)
{
    if (strcmp(decision, "deny") == 0 || strcmp(decision, "refuse") == 0)
        return CLIENT_LOG_WARNING;
    /* a rule let it out and it runs inside: the agent sees only what
     * fails there, so the log says why at the level refusals have */
    if (kept_inside && strcmp(decision, "run") == 0)
        return CLIENT_LOG_WARNING;
    if (strcmp(decision, "escalate") == 0 ||
        (answered_by &&
         (strcmp(answered_by, "user") == 0 || strcmp(answered_by, "session-approval") == 0)))
        return CLIENT_LOG_INFO;
    return CLIENT_LOG_DEBUG;
}

static json_t *
exec_record(struct decide_call *dc, const struct decide_exec *e, const struct decide_result *r,
            const char *decision, const char *reason, const char *answered_by, int exit_kind,
            int exit_value)
{
    json_t *argv = json_array();
    for (size_t i = 0; argv && i < e->argc; i++)
        json_array_append_new(argv, text_json(e->argv[i]));
    json_t *rec = json_pack("{s:s, s:o, s:o, s:o, s:o, s:s, s:s*, s:s*}", "call", dc->label, "file",
                            text_json(r->file ? r->file : e->path), "program",
                            text_json(r->program ? r->program : e->path), "argv",
                            argv ? argv : json_array(), "workdir", text_json(e->cwd), "decision",
                            decision, "reason", reason, "answered_by", answered_by);
    if (rec && e->source == DECIDE_FROM_TREE) {
        json_object_set_new(rec, "source", json_string("tree"));
        json_object_set_new(rec, "pid", json_integer(e->pid));
    }
    if (rec && r->matched)
        json_object_set(rec, "matched_rules", r->matched);
    if (rec && exit_kind >= 0)
        json_object_set_new(rec, exit_kind == ESC_EXIT_CODE ? "exit_code" : "exit_signal",
                            json_integer(exit_value));
    return rec;
}

/* The record for the client: the call's request id as the client sent it. */
static void
send_to_client(struct decide_call *dc, enum client_log_level level, json_t *rec)
{
    json_t *id = dc->id ? json_incref(dc->id) : NULL;
    if (rec && id)
        json_object_set_new(rec, "requestId", id);
    else
        json_decref(id);
    if (rec)
        json_object_set_new(rec, "event", json_string("exec"));
    client_log_send(dc->cl->log, level, rec);
}

void
decide_audit(struct decide_call *dc, const struct decide_exec *e, const struct decide_result *r,
             const char *decision, const char *reason, const char *answered_by, int exit_kind,
             int exit_value)
{
    enum client_log_level level = record_level(decision, answered_by, r->kept_inside);
    enum log_level log_level = level >= CLIENT_LOG_WARNING ? LOG_LEVEL_WARN
                               : level == CLIENT_LOG_INFO  ? LOG_LEVEL_INFO
                                                           : LOG_LEVEL_DEBUG;
    bool to_client = client_log_wants(dc->cl->log, level);
    bool to_log = log_record_wanted(log_level);
    if (!dc->ds->audit && !to_client && !to_log)
        return;
    json_t *rec = exec_record(dc, e, r, decision, reason, answered_by, exit_kind, exit_value);
    if (to_log && rec) {
        json_object_set_new(rec, "event", json_string("exec"));
        log_record(log_level, rec);
        json_object_del(rec, "event");
    }
    if (to_client)
        send_to_client(dc, level, rec ? json_deep_copy(rec) : NULL);
    if (rec && e->source == DECIDE_FROM_TREE)
        json_object_del(rec, "matched_rules"); /* as the audit log has always had it */
    audit_write(dc->ds->audit, rec);
}

void
decide_trace(struct decide_call *dc, const struct decide_exec *e, const struct decide_result *r,
             const char *decision)
{
    if (client_log_wants(dc->cl->log, CLIENT_LOG_DEBUG))
        send_to_client(dc, CLIENT_LOG_DEBUG,
                       exec_record(dc, e, r, decision, r->reason, r->answered_by, -1, 0));
}
