#include "tests/support/mcp_world.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/tmpdir.h"

char *
mcp_world_fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s = NULL;
    assert_true(vasprintf(&s, f, ap) >= 0);
    va_end(ap);
    return s;
}

bool
mcp_world_zsh(void)
{
    const char *shell = getenv("EXECGATE_TEST_SHELL");
    return shell && strcmp(shell, "zsh") == 0;
}

void
mcp_world_rules(struct mcp_world *w, const char *rules)
{
    char *path = tmpdir_path(w->rules, "test.rules");
    tmpdir_write_file(path, rules, 0644);
    free(path);
}

static void
initialize(struct mcp_world *w, const struct mcp_world_options *o)
{
    json_t *caps = o->elicitation ? json_pack("{s:{}}", "elicitation") : json_object();
    json_t *init = mcp_client_call(w->c, "initialize",
                                   json_pack("{s:s, s:o, s:{s:s, s:s}}", "protocolVersion",
                                             "2025-06-18", "capabilities", caps, "clientInfo",
                                             "name", o->client_name, "version", "1"));
    const char *ins =
        json_string_value(json_object_get(json_object_get(init, "result"), "instructions"));
    assert_non_null(ins);
    w->instructions = strdup(ins);
    assert_non_null(w->instructions);
    json_decref(init);
    mcp_client_send(
        w->c, json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized"));
}

void
mcp_world_start(struct mcp_world *w, const char *rules, const struct mcp_world_options *o)
{
    memset(w, 0, sizeof(*w));
    w->wd = tmpdir_new("world-wd");
    w->rules = tmpdir_new("world-rules");
    /* not under /tmp, which the sandbox may write */
    char tmpl[] = "/var/tmp/execgate-outside-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    w->outside = strdup(tmpl);
    const char *no_audit = getenv("EXECGATE_TEST_NO_AUDIT");
    if (!o->no_audit && !(no_audit && strcmp(no_audit, "1") == 0))
        w->audit = tmpdir_path(w->rules, "audit.jsonl");
    mcp_world_rules(w, rules);
    if (o->default_rules) {
        char *answers = tmpdir_path(w->rules, "default.rules");
        tmpdir_write_file(answers, o->default_rules, 0644);
        free(answers);
    }
    if (o->chown) {
        char *test_rules = tmpdir_path(w->rules, "test.rules");
        const char *mine[] = {w->wd, w->rules, test_rules, w->outside};
        for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
            assert_int_equal(lchown(mine[i], o->owner_uid, o->owner_gid), 0);
        free(test_rules);
    }
    const char *policy = o->policy ? o->policy : "workspace-write";
    char *sandbox = mcp_world_fmt(
        "{\"sandboxPolicy\":{\"type\":\"%s\"%s},\"sandboxCwd\":\"%s\"}", policy,
        strcmp(policy, "workspace-write") == 0 ? ",\"network_access\":false" : "", w->wd);
    size_t n_prefix = 0;
    while (o->prefix && o->prefix[n_prefix])
        n_prefix++;
    size_t n_more = 0;
    while (o->more && o->more[n_more])
        n_more++;
    const char **argv = calloc(n_prefix + n_more + 12, sizeof(char *));
    assert_non_null(argv);
    size_t n = 0;
    for (size_t i = 0; i < n_prefix; i++)
        argv[n++] = o->prefix[i];
    argv[n++] = o->server;
    if (!o->no_rules) {
        argv[n++] = "--rules";
        argv[n++] = w->rules;
    }
    argv[n++] = "--sandbox";
    argv[n++] = sandbox;
    if (w->audit) {
        argv[n++] = "--audit-log";
        argv[n++] = w->audit;
    }
    if (o->extra)
        argv[n++] = o->extra;
    for (size_t i = 0; i < n_more; i++)
        argv[n++] = o->more[i];
    /* The suites that run once per shell (tests/integration/meson.build) */
    const char *shell = getenv("EXECGATE_TEST_SHELL");
    if (shell && *shell) {
        argv[n++] = "--shell";
        argv[n++] = shell;
    }
    argv[n] = NULL;
    const char *envv[] = {o->env, NULL};
    w->c = mcp_client_start(argv, o->env ? envv : NULL);
    free(argv);
    free(sandbox);
    initialize(w, o);
}

static void
world_free(struct mcp_world *w)
{
    mcp_client_free(w->c);
    tmpdir_remove(w->wd);
    tmpdir_remove(w->rules);
    tmpdir_remove(w->outside);
    free(w->wd);
    free(w->rules);
    free(w->outside);
    free(w->audit);
    free(w->instructions);
    memset(w, 0, sizeof(*w));
}

void
mcp_world_assert_clean_exit(struct mcp_client *c)
{
    mcp_client_close_stdin(c);
    int status = mcp_client_wait_exit(c, MCP_CLIENT_WAIT_MS);
    assert_int_not_equal(status, -1);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* ASan/LSan: no leak, no crash */
}

void
mcp_world_end(struct mcp_world *w)
{
    mcp_world_assert_clean_exit(w->c);
    world_free(w);
}

void
mcp_world_abandon(struct mcp_world *w)
{
    world_free(w);
}

/* Whether o's keys are all in known (NULL-terminated). */
static bool
only_keys(const json_t *o, const char *const *known)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        bool found = false;
        for (size_t i = 0; known[i] && !found; i++)
            found = strcmp(key, known[i]) == 0;
        if (!found) {
            fprintf(stderr, "a field Codex does not know: %s\n", key);
            return false;
        }
    }
    return true;
}

/*
 * Whether a question's schema is one Codex 0.169 can show: it reads the
 * schema into types that refuse unknown fields (the form, a titled enum
 * with enumNames, a string), so any other field makes the question
 * unshowable.
 */
static bool
codex_can_show(const json_t *schema)
{
    static const char *const form[] = {"$schema", "type", "properties", "required", NULL};
    static const char *const titled_enum[] = {"type",      "title",   "description", "enum",
                                              "enumNames", "default", NULL};
    static const char *const string[] = {"type",      "title",  "description", "minLength",
                                         "maxLength", "format", "default",     NULL};
    const json_t *props = json_object_get(schema, "properties");
    return only_keys(schema, form) && only_keys(json_object_get(props, "decision"), titled_enum) &&
           only_keys(json_object_get(props, "reason"), string) && json_object_size(props) == 2;
}

/* Checks an exec's question (params, its schema's properties props)
 * into a: the review decisions, "always" exactly when a prefix is
 * proposed, each with a title a person reads (enumNames), and a text
 * field for a reason. */
static void
check_exec_question(struct mcp_answers *a, const json_t *params, const json_t *props)
{
    const json_t *proposed = json_object_get(params, "proposed_execpolicy_amendment");
    const json_t *decision = json_object_get(props, "decision");
    const json_t *choices = json_object_get(decision, "enum");
    const json_t *names = json_object_get(decision, "enumNames");
    assert_int_equal(json_array_size(choices), proposed ? 5 : 4);
    assert_int_equal(json_array_size(names), json_array_size(choices));
    for (size_t i = 0; i < json_array_size(choices); i++)
        assert_null(strchr(json_string_value(json_array_get(names, i)), '_'));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(props, "reason"), "type")), "string");
    static const char *const always = " \"Yes, and always allow ";
    char *sentence = NULL;
    for (char *p = strstr(a->last_message, always); p; p = strstr(p + 1, always))
        sentence = p;
    assert_int_equal(sentence != NULL, proposed != NULL);
    a->proposed[0] = a->last_always[0] = a->always_title[0] = '\0';
    if (proposed) {
        a->offered_always++;
        assert_string_equal(json_string_value(json_array_get(choices, 2)),
                            "approved_execpolicy_amendment");
        char *text = json_dumps(proposed, JSON_COMPACT);
        assert_non_null(text);
        snprintf(a->proposed, sizeof(a->proposed), "%s", text);
        free(text);
        snprintf(a->always_title, sizeof(a->always_title), "%s",
                 json_string_value(json_array_get(names, 2)));
        snprintf(a->last_always, sizeof(a->last_always), "%s", sentence + 1);
        *sentence = '\0';
    }
}

/* Answers one elicitation/create m (its id mid) from a. */
static void
answer_question(struct mcp_world *w, const json_t *m, const json_t *mid, struct mcp_answers *a)
{
    const char *action = a ? a->action : NULL;
    for (int i = 0; a && a->actions && a->actions[i]; i++)
        if (i == a->asked) {
            action = a->actions[i];
            break;
        }
    if (!action) {
        char *text = json_dumps(m, 0);
        fprintf(stderr, "unexpected question: %s\n", text ? text : "?");
        free(text);
    }
    assert_non_null(a);
    assert_non_null(action);
    a->asked++;
    const json_t *params = json_object_get(m, "params");
    free(a->last_message);
    a->last_message = strdup(json_string_value(json_object_get(params, "message")));
    assert_non_null(a->last_message);
    const json_t *props = json_object_get(json_object_get(params, "requestedSchema"), "properties");
    assert_true(codex_can_show(json_object_get(params, "requestedSchema")));
    if (strncmp(a->last_message, "The agent asks to run `", 23) == 0) {
        /* to leave the sandbox: yes or no, titled, and a reason */
        a->asked_leave++;
        const json_t *d = json_object_get(props, "decision");
        assert_int_equal(json_array_size(json_object_get(d, "enum")), 2);
        assert_int_equal(json_array_size(json_object_get(d, "enumNames")), 2);
        assert_non_null(json_object_get(props, "reason"));
    } else {
        check_exec_question(a, params, props);
    }
    if (a->delay_ms > 0) {
        struct timespec ts = {a->delay_ms / 1000, (a->delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    json_t *result = json_pack("{s:s}", "action", action);
    if (a->first_decision_json && a->asked == 1) {
        json_t *d = json_loads(a->first_decision_json, JSON_DECODE_ANY, NULL);
        assert_non_null(d);
        json_object_set_new(result, "content", json_pack("{s:o}", "decision", d));
    } else if (a->decision) {
        json_object_set_new(result, "content", json_pack("{s:s}", "decision", a->decision));
    }
    if (a->reason)
        json_object_set_new(json_object_get(result, "content"), "reason", json_string(a->reason));
    mcp_client_send(w->c,
                    json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", mid, "result", result));
}

void
mcp_world_answer(struct mcp_world *w, const json_t *question, struct mcp_answers *a)
{
    answer_question(w, question, json_object_get(question, "id"), a);
}

json_t *
mcp_world_run(struct mcp_world *w, const char *command, struct mcp_answers *a, int timeout_ms)
{
    return mcp_world_run_args(w,
                              json_pack("{s:s, s:s, s:b, s:i}", "command", command, "workdir",
                                        w->wd, "login", 0, "timeout_ms", timeout_ms),
                              a);
}

json_t *
mcp_world_run_args(struct mcp_world *w, json_t *args, struct mcp_answers *a)
{
    return mcp_world_tool(w, "shell", args, a);
}

json_t *
mcp_world_tool(struct mcp_world *w, const char *tool, json_t *args, struct mcp_answers *a)
{
    assert_non_null(args);
    long long id = mcp_client_send_request(
        w->c, "tools/call", json_pack("{s:s, s:o}", "name", tool, "arguments", args));
    for (;;) {
        json_t *m = mcp_client_next(w->c, MCP_CLIENT_WAIT_MS);
        assert_non_null(m);
        const char *method = json_string_value(json_object_get(m, "method"));
        const json_t *mid = json_object_get(m, "id");
        if (method && strcmp(method, "elicitation/create") == 0) {
            answer_question(w, m, mid, a);
            json_decref(m);
            continue;
        }
        if (!method && json_is_integer(mid) && json_integer_value(mid) == id)
            return m;
        if (method && strcmp(method, "notifications/message") == 0 && a && a->logs)
            json_array_append(a->logs, json_object_get(m, "params"));
        json_decref(m); /* progress, logs */
    }
}

const json_t *
mcp_world_structured(const json_t *answer)
{
    const json_t *sc = json_object_get(json_object_get(answer, "result"), "structuredContent");
    if (!sc) {
        char *text = json_dumps(answer, 0);
        fprintf(stderr, "unexpected answer: %s\n", text ? text : "?");
        free(text);
    }
    assert_non_null(sc);
    return sc;
}

const char *
mcp_world_output(const json_t *answer)
{
    return json_string_value(json_object_get(mcp_world_structured(answer), "output"));
}

int
mcp_world_exit(const json_t *answer)
{
    return (int)json_integer_value(json_object_get(mcp_world_structured(answer), "exit_code"));
}

bool
mcp_world_exists(const char *dir, const char *name)
{
    char *p = tmpdir_path(dir, name);
    struct stat st;
    bool yes = stat(p, &st) == 0;
    free(p);
    return yes;
}

void
mcp_world_assert_contains(const char *hay, const char *needle)
{
    if (!hay || !strstr(hay, needle))
        fprintf(stderr, "expected [%s] in [%s]\n", needle, hay ? hay : "(null)");
    assert_non_null(hay);
    assert_non_null(strstr(hay, needle));
}
