/*
 * Escalation through the whole product: the real server over stdio, the
 * real patched Bash in the real sandbox (workspace-write on a scratch
 * workdir), the real wrapper, real sockets.  Each test writes its own rules,
 * and proves where a program ran by what it could write: the "outside"
 * directory (under /var/tmp) is writable only outside the sandbox.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mcp_client.h"
#include "tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *server_path;

/* One test's world: a workdir (the sandbox's writable root), a rules
 * directory and a directory that only an escalated program can write. */
struct world {
    char *wd;
    char *rules;
    char *outside;
    char *audit;
    struct mcp_client *c;
};

/* What the test client answers to elicitation/create. */
struct answers {
    const char *action;   /* accept / decline / cancel; NULL: never expected */
    const char *decision; /* content.decision, or NULL */
    int asked;            /* count of questions received */
    int delay_ms;         /* wait this long before answering */
    char *last_message;
};

static void
world_rules(struct world *w, const char *rules)
{
    char *path = tmpdir_path(w->rules, "test.rules");
    tmpdir_write_file(path, rules, 0644);
    free(path);
}

/* extra: one more server argument, or NULL */
static void
world_start_with(struct world *w, const char *rules, bool elicitation, const char *extra)
{
    memset(w, 0, sizeof(*w));
    w->wd = tmpdir_new("esc-wd");
    w->rules = tmpdir_new("esc-rules");
    char tmpl[] = "/var/tmp/execgate-outside-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    w->outside = strdup(tmpl);
    w->audit = tmpdir_path(w->rules, "audit.jsonl");
    world_rules(w, rules);
    char *sandbox = NULL;
    assert_true(asprintf(&sandbox,
                         "{\"sandboxPolicy\":{\"type\":\"workspace-write\",\"network_access\":"
                         "false},\"sandboxCwd\":\"%s\"}",
                         w->wd) > 0);
    const char *argv[] = {server_path,   "--rules", w->rules, "--sandbox", sandbox,
                          "--audit-log", w->audit,  extra,    NULL};
    w->c = mcp_client_start(argv, NULL);
    free(sandbox);
    json_t *caps = elicitation ? json_pack("{s:{}}", "elicitation") : json_object();
    json_t *init = mcp_client_call(w->c, "initialize",
                                   json_pack("{s:s, s:o, s:{s:s, s:s}}", "protocolVersion",
                                             "2025-06-18", "capabilities", caps, "clientInfo",
                                             "name", "escalation-tests", "version", "1"));
    assert_non_null(json_object_get(init, "result"));
    json_decref(init);
    mcp_client_send(
        w->c, json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized"));
}

static void
world_start(struct world *w, const char *rules, bool elicitation)
{
    world_start_with(w, rules, elicitation, NULL);
}

static void
world_end(struct world *w)
{
    mcp_client_close_stdin(w->c);
    int status = mcp_client_wait_exit(w->c, MCP_CLIENT_WAIT_MS);
    assert_int_not_equal(status, -1);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* ASan/LSan: no leak, no crash */
    mcp_client_free(w->c);
    tmpdir_remove(w->wd);
    tmpdir_remove(w->rules);
    tmpdir_remove(w->outside);
    free(w->wd);
    free(w->rules);
    free(w->outside);
    free(w->audit);
}

/* Runs command with a timeout; answers questions with a; returns the
 * whole tools/call answer. */
static json_t *
run_timeout(struct world *w, const char *command, struct answers *a, int timeout_ms)
{
    long long id = mcp_client_send_request(
        w->c, "tools/call",
        json_pack("{s:s, s:{s:s, s:s, s:b, s:i}}", "name", "shell", "arguments", "command", command,
                  "workdir", w->wd, "login", 0, "timeout_ms", timeout_ms));
    for (;;) {
        json_t *m = mcp_client_next(w->c, MCP_CLIENT_WAIT_MS);
        assert_non_null(m);
        const char *method = json_string_value(json_object_get(m, "method"));
        const json_t *mid = json_object_get(m, "id");
        if (method && strcmp(method, "elicitation/create") == 0) {
            assert_non_null(a);
            assert_non_null(a->action);
            a->asked++;
            free(a->last_message);
            a->last_message =
                strdup(json_string_value(json_object_get(json_object_get(m, "params"), "message")));
            /* the schema offers the review decisions */
            const json_t *en = json_object_get(
                json_object_get(json_object_get(json_object_get(m, "params"), "requestedSchema"),
                                "properties"),
                "decision");
            assert_int_equal(json_array_size(json_object_get(en, "enum")), 4);
            if (a->delay_ms > 0) {
                struct timespec ts = {a->delay_ms / 1000, (a->delay_ms % 1000) * 1000000L};
                nanosleep(&ts, NULL);
            }
            json_t *result = json_pack("{s:s}", "action", a->action);
            if (a->decision)
                json_object_set_new(result, "content", json_pack("{s:s}", "decision", a->decision));
            mcp_client_send(
                w->c, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", mid, "result", result));
            json_decref(m);
            continue;
        }
        if (!method && json_is_integer(mid) && json_integer_value(mid) == id)
            return m;
        json_decref(m); /* progress, logs */
    }
}

static json_t *
run(struct world *w, const char *command, struct answers *a)
{
    return run_timeout(w, command, a, 30000);
}

static const json_t *
structured(const json_t *answer)
{
    const json_t *sc = json_object_get(json_object_get(answer, "result"), "structuredContent");
    if (!sc)
        fprintf(stderr, "unexpected answer: %s\n", json_dumps(answer, 0));
    assert_non_null(sc);
    return sc;
}

static const char *
output_of(const json_t *answer)
{
    return json_string_value(json_object_get(structured(answer), "output"));
}

static int
exit_of(const json_t *answer)
{
    return (int)json_integer_value(json_object_get(structured(answer), "exit_code"));
}

static bool
exists(const char *dir, const char *name)
{
    char *p = tmpdir_path(dir, name);
    struct stat st;
    bool yes = stat(p, &st) == 0;
    free(p);
    return yes;
}

static void
assert_contains(const char *hay, const char *needle)
{
    if (!hay || !strstr(hay, needle))
        fprintf(stderr, "expected [%s] in [%s]\n", needle, hay ? hay : "(null)");
    assert_non_null(hay);
    assert_non_null(strstr(hay, needle));
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

static char *
fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s = NULL;
    assert_true(vasprintf(&s, f, ap) >= 0);
    va_end(ap);
    return s;
}

/* ---- allow, forbidden, no rule ---- */

static void
test_allow_escalates_with_output_and_status(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n", false);
    char *cmd =
        fmt("sh -c 'echo out; echo err >&2; touch %s/esc; exit 42'; echo \"status=$?\"", w.outside);
    json_t *a = run(&w, cmd, NULL);
    assert_contains(output_of(a), "out\n");
    assert_contains(output_of(a), "err\n");
    assert_contains(output_of(a), "status=42\n");
    /* it ran outside the sandbox: it wrote where the sandbox cannot */
    assert_true(exists(w.outside, "esc"));
    json_decref(a);
    free(cmd);
    /* the same write without a rule runs inside, and is refused */
    cmd = fmt("touch %s/inside; echo \"status=$?\"", w.outside);
    a = run(&w, cmd, NULL);
    assert_contains(output_of(a), "status=1\n");
    assert_false(exists(w.outside, "inside"));
    json_decref(a);
    free(cmd);
    /* the audit log has one record per decision */
    char *log = tmpdir_read_file(w.audit, NULL);
    assert_contains(log, "\"decision\":\"escalate\"");
    assert_contains(log, "\"exit_code\":42");
    assert_contains(log, "\"decision\":\"run\"");
    free(log);
    world_end(&w);
}

static void
test_forbidden_denies(void **state)
{
    struct world w;
    world_start(&w,
                "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n"
                "prefix_rule(pattern=[\"shred\"], decision=\"forbidden\", justification=\"use "
                "the trash\")\n",
                false);
    char *f = tmpdir_path(w.wd, "keep");
    tmpdir_write_file(f, "data", 0644);
    json_t *a = run(&w, "rm -f keep; echo \"status=$?\"; shred keep; echo \"status=$?\"", NULL);
    assert_contains(output_of(a), "Execution denied: Execution forbidden by policy\nstatus=1\n");
    assert_contains(output_of(a),
                    "Execution denied: Execution forbidden by policy: use the trash\nstatus=1\n");
    assert_true(exists(w.wd, "keep"));
    json_decref(a);
    free(f);
    world_end(&w);
}

/* ---- prompt ---- */

static char *
which(const char *name)
{
    const char *path = getenv("PATH");
    char *copy = strdup(path ? path : "/usr/bin:/bin");
    char *found = NULL;
    for (char *dir = strtok(copy, ":"); dir && !found; dir = strtok(NULL, ":")) {
        char *p = fmt("%s/%s", dir, name);
        if (access(p, X_OK) == 0)
            found = p;
        else
            free(p);
    }
    free(copy);
    return found;
}

static void
test_prompt_accept_git_init(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", true);
    struct answers ans = {.action = "accept"};
    json_t *a = run(&w, "git init . >/dev/null && echo made", &ans);
    assert_int_equal(ans.asked, 1);
    char *git = which("git");
    char *expect = fmt("Allow agent to run `%s init .` in `%s`?", git, w.wd);
    assert_string_equal(ans.last_message, expect);
    assert_contains(output_of(a), "made");
    assert_int_equal(exit_of(a), 0);
    /* the sandbox keeps .git read-only: only the escalated git made it */
    assert_true(exists(w.wd, ".git/HEAD"));
    char *log = tmpdir_read_file(w.audit, NULL);
    assert_contains(log, "\"answered_by\":\"user\"");
    assert_contains(log,
                    "\"matched_rules\":[{\"prefix\":[\"git\",\"init\"],\"decision\":\"prompt\"}]");
    free(log);
    json_decref(a);
    free(git);
    free(expect);
    free(ans.last_message);
    world_end(&w);
}

static void
test_prompt_decline_and_cancel(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", true);
    struct answers ans = {.action = "decline"};
    json_t *a = run(&w, "git init .; echo \"status=$?\"", &ans);
    assert_contains(output_of(a), "Execution denied: User declined execution\nstatus=1\n");
    json_decref(a);
    ans.action = "cancel";
    a = run(&w, "git init .; echo \"status=$?\"", &ans);
    assert_contains(output_of(a), "Execution denied: User cancelled execution\nstatus=1\n");
    assert_int_equal(ans.asked, 2);
    assert_false(exists(w.wd, ".git/HEAD"));
    json_decref(a);
    /* bytes that are not UTF-8 reach the person as U+FFFD, quoted */
    ans.action = "decline";
    a = run(&w, "git init $'a\\xff'", &ans);
    assert_contains(ans.last_message, " init 'a\xef\xbf\xbd'` in `");
    assert_contains(output_of(a), "User declined execution");
    json_decref(a);
    free(ans.last_message);
    world_end(&w);
}

static void
test_prompt_without_elicitation_capability(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", false);
    json_t *a = run(&w, "git init .; echo \"status=$?\"", NULL);
    assert_contains(output_of(a), "Execution denied: Approval was required");
    assert_contains(output_of(a), "did not declare the elicitation capability");
    assert_contains(output_of(a), "status=1\n");
    assert_false(exists(w.wd, ".git/HEAD"));
    json_decref(a);
    world_end(&w);
}

static void
test_approved_for_session_asks_once(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"prompt\")\n", true);
    struct answers ans = {.action = "accept", .decision = "approved_for_session"};
    char *cmd = fmt("sh -c 'touch %s/one'", w.outside);
    json_t *a = run(&w, cmd, &ans);
    json_decref(a);
    a = run(&w, cmd, &ans);
    json_decref(a);
    assert_int_equal(ans.asked, 1);
    assert_true(exists(w.outside, "one"));
    free(cmd);
    /* other arguments are asked again */
    cmd = fmt("sh -c 'touch %s/two'", w.outside);
    ans.decision = NULL;
    a = run(&w, cmd, &ans);
    assert_int_equal(ans.asked, 2);
    assert_true(exists(w.outside, "two"));
    json_decref(a);
    free(cmd);
    free(ans.last_message);
    world_end(&w);
}

static void
test_abort_stops_the_call(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", true);
    struct answers ans = {.action = "accept", .decision = "abort"};
    json_t *a = run(&w, "git init .; echo after > after.txt; sleep 20", &ans);
    const json_t *sc = structured(a);
    assert_contains(json_string_value(json_object_get(sc, "aborted")), "aborted");
    assert_true(json_is_true(json_object_get(json_object_get(a, "result"), "isError")));
    assert_false(exists(w.wd, "after.txt"));
    assert_false(exists(w.wd, ".git/HEAD"));
    json_decref(a);
    free(ans.last_message);
    world_end(&w);
}

static void
test_waiting_for_a_person_does_not_count_toward_the_timeout(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", true);
    struct answers ans = {.action = "accept", .delay_ms = 2500};
    json_t *a = run_timeout(&w, "git init . >/dev/null; echo done", &ans, 1500);
    assert_int_equal(ans.asked, 1);
    assert_false(json_is_true(json_object_get(structured(a), "timed_out")));
    assert_contains(output_of(a), "done\n");
    json_decref(a);
    /* and the clock runs again afterwards */
    ans.delay_ms = 0;
    a = run_timeout(&w, "git init . >/dev/null; sleep 5; echo late", &ans, 1500);
    assert_true(json_is_true(json_object_get(structured(a), "timed_out")));
    json_decref(a);
    free(ans.last_message);
    world_end(&w);
}

static void
test_forced_rm_without_rule_prompts_then_runs_inside(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"true\"], decision=\"allow\")\n", true);
    char *in = tmpdir_path(w.wd, "victim");
    tmpdir_write_file(in, "x", 0644);
    char *out = tmpdir_path(w.outside, "victim");
    tmpdir_write_file(out, "x", 0644);
    struct answers ans = {.action = "decline"};
    json_t *a = run(&w, "rm -rf victim; echo \"status=$?\"; rm victim2 2>/dev/null; true", &ans);
    assert_int_equal(ans.asked, 1); /* rm without force is not asked */
    assert_contains(output_of(a), "Execution denied: User declined execution\nstatus=1\n");
    assert_true(exists(w.wd, "victim"));
    json_decref(a);
    ans.action = "accept";
    char *cmd = fmt("bash -c 'rm -f victim'; echo \"in=$?\"; rm --force %s; echo \"out=$?\"", out);
    a = run(&w, cmd, &ans);
    /* bash -c 'rm -f ...' is asked (the system's bash then runs rm itself),
     * then rm --force */
    assert_int_equal(ans.asked, 3);
    assert_contains(output_of(a), "in=0\n");
    assert_false(exists(w.wd, "victim"));
    /* approved, but it ran in the sandbox: outside stays */
    assert_contains(output_of(a), "out=1\n");
    assert_true(exists(w.outside, "victim"));
    json_decref(a);
    free(cmd);
    free(in);
    free(out);
    free(ans.last_message);
    world_end(&w);
}

static void
test_timeout_kills_escalated_program(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n", false);
    char *cmd = fmt("sh -c 'sleep 37.25; touch %s/late'", w.outside);
    json_t *a = run_timeout(&w, cmd, NULL, 1000);
    assert_true(json_is_true(json_object_get(structured(a), "timed_out")));
    bool gone = false;
    for (int i = 0; i < 500 && !gone; i++) {
        gone = !mcp_client_process_exists("sleep 37.25");
        struct timespec ts = {0, 10 * 1000 * 1000};
        if (!gone)
            nanosleep(&ts, NULL);
    }
    assert_true(gone);
    assert_false(exists(w.outside, "late"));
    json_decref(a);
    free(cmd);
    world_end(&w);
}

static void
test_signals_reach_escalated_program(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n", false);
    /* SIGTERM to the wrapper (Bash's child) is forwarded to the escalated
     * program, whose trap answers; readiness is a file, not a delay */
    char *cmd = fmt("sh -c 'trap \"echo got-term; exit 3\" TERM; touch %s/x; : > ready; "
                    "while :; do sleep 0.05; done' & pid=$!; "
                    "until [ -e ready ]; do sleep 0.02; done; kill -TERM $pid; wait $pid; "
                    "echo \"st=$?\"; sh -c 'kill -KILL $$'; echo \"killed=$?\"",
                    w.outside);
    json_t *a = run(&w, cmd, NULL);
    assert_true(exists(w.outside, "x")); /* it was escalated */
    assert_contains(output_of(a), "got-term\nst=3\n");
    /* a program killed by a signal: the shell sees 128+n */
    assert_contains(output_of(a), "killed=137\n");
    json_decref(a);
    free(cmd);
    world_end(&w);
}

static void
test_host_executable_limits_fallback(void **state)
{
    char *sh = which("sh");
    char *rules = fmt("prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n"
                      "host_executable(name=\"sh\", paths=[\"/nonexistent/sh\"])\n");
    struct world w;
    world_start(&w, rules, false);
    char *cmd = fmt("sh -c 'touch %s/x'; echo \"st=$?\"", w.outside);
    json_t *a = run(&w, cmd, NULL);
    /* not a listed path: no rule applies, it runs inside and cannot write */
    assert_contains(output_of(a), "st=1\n");
    assert_false(exists(w.outside, "x"));
    json_decref(a);
    free(rules);
    /* listed: escalated (rules are read at start: a new server) */
    world_end(&w);
    rules = fmt("prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n"
                "host_executable(name=\"sh\", paths=[\"%s\"])\n",
                sh);
    world_start(&w, rules, false);
    free(cmd);
    cmd = fmt("sh -c 'touch %s/x'; echo \"st=$?\"", w.outside);
    a = run(&w, cmd, NULL);
    assert_contains(output_of(a), "st=0\n");
    assert_true(exists(w.outside, "x"));
    json_decref(a);
    free(cmd);
    free(rules);
    free(sh);
    world_end(&w);
}

static void
test_bad_rules_refuse_start(void **state)
{
    char *dir = tmpdir_new("esc-bad");
    char *path = tmpdir_path(dir, "bad.rules");
    tmpdir_write_file(path, "prefix_rule(pattern=[\"rm\"], decision=\"maybe\")\n", 0644);
    const char *argv[] = {server_path, "--rules", dir, NULL};
    struct mcp_client *c = mcp_client_start(argv, NULL);
    int status = mcp_client_wait_exit(c, MCP_CLIENT_WAIT_MS);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
    mcp_client_free(c);
    /* and a missing --rules path */
    const char *argv2[] = {server_path, "--rules", "/nonexistent/x.rules", NULL};
    c = mcp_client_start(argv2, NULL);
    status = mcp_client_wait_exit(c, MCP_CLIENT_WAIT_MS);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
    mcp_client_free(c);
    tmpdir_remove(dir);
    free(dir);
    free(path);
}

static void
test_cancel_kills_escalated_program(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n", false);
    char *cmd = fmt("sh -c 'touch %s/ready; sleep 38.5; touch %s/late'", w.outside, w.outside);
    long long id =
        mcp_client_send_request(w.c, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                          "command", cmd, "workdir", w.wd, "login", 0));
    /* the escalated program has started once it made its file */
    bool ready = false;
    for (int i = 0; i < 3000 && !ready; i++) {
        ready = exists(w.outside, "ready");
        struct timespec ts = {0, 10 * 1000 * 1000};
        if (!ready)
            nanosleep(&ts, NULL);
    }
    assert_true(ready);
    assert_true(mcp_client_process_exists("sleep 38.5"));
    mcp_client_send(w.c,
                    json_pack("{s:s, s:s, s:{s:I}}", "jsonrpc", "2.0", "method",
                              "notifications/cancelled", "params", "requestId", (json_int_t)id));
    bool gone = false;
    for (int i = 0; i < 1000 && !gone; i++) {
        gone = !mcp_client_process_exists("sleep 38.5");
        struct timespec ts = {0, 10 * 1000 * 1000};
        if (!gone)
            nanosleep(&ts, NULL);
    }
    assert_true(gone);
    assert_false(exists(w.outside, "late"));
    free(cmd);
    world_end(&w);
}

static void
test_queued_calls_hold_no_sockets(void **state)
{
    char *wd = tmpdir_new("esc-q");
    const char *argv[] = {server_path, "--max-calls", "1", NULL};
    struct mcp_client *c = mcp_client_start(argv, NULL);
    json_decref(mcp_client_initialize(c));
    json_t *ping = mcp_client_call(c, "ping", NULL);
    json_decref(ping);
    int before = mcp_client_fd_count(c);
    char *marker = tmpdir_path(wd, "go");
    char *first = fmt("until [ -e %s ]; do sleep 0.02; done", marker);
    enum { QUEUED = 40 };
    long long ids[QUEUED + 1];
    ids[0] =
        mcp_client_send_request(c, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                          "command", first, "workdir", wd, "login", 0));
    for (int i = 1; i <= QUEUED; i++)
        ids[i] = mcp_client_send_request(c, "tools/call",
                                         json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell",
                                                   "arguments", "command", "echo q", "workdir", wd,
                                                   "login", 0));
    /* requests are handled in order: once ping is answered all are queued */
    ping = mcp_client_call(c, "ping", NULL);
    json_decref(ping);
    int during = mcp_client_fd_count(c);
    /* the running call holds a few (pipes, its socket); the queue none */
    assert_true(during - before < 10);
    tmpdir_write_file(marker, "", 0644);
    for (int i = 0; i <= QUEUED; i++) {
        json_t *id = json_integer(ids[i]);
        json_t *a = mcp_client_response(c, id, MCP_CLIENT_WAIT_MS);
        json_decref(id);
        assert_int_equal(exit_of(a), 0);
        json_decref(a);
    }
    mcp_client_close_stdin(c);
    int status = mcp_client_wait_exit(c, MCP_CLIENT_WAIT_MS);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    mcp_client_free(c);
    tmpdir_remove(wd);
    free(wd);
    free(marker);
    free(first);
}

static void
test_preserve_program_paths(void **state)
{
    char *sh = which("sh");
    char *rules = fmt("prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n"
                      "prefix_rule(pattern=[\"%s\", \"-ec\"], decision=\"allow\")\n",
                      sh);
    struct world w;
    world_start_with(&w, rules, false, "--preserve-program-paths");
    /* the basename rule no longer matches: runs inside, cannot write */
    char *cmd = fmt("sh -c 'touch %s/base'; echo \"st=$?\"; sh -ec 'touch %s/full'; "
                    "echo \"st=$?\"",
                    w.outside, w.outside);
    json_t *a = run(&w, cmd, NULL);
    assert_contains(output_of(a), "st=1\nst=0\n");
    assert_false(exists(w.outside, "base"));
    assert_true(exists(w.outside, "full"));
    json_decref(a);
    free(cmd);
    free(rules);
    free(sh);
    world_end(&w);
}

/* ---- fds and pipelines ---- */

static void
test_pipeline_mixes_escalated_and_sandboxed(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n", false);
    char *cmd = fmt("sh -c 'echo one; echo two' | tr a-z A-Z | sh -c 'cat > %s/piped; cat %s/piped'"
                    " | cat; echo \"status=${PIPESTATUS[*]}\"",
                    w.outside, w.outside);
    json_t *a = run(&w, cmd, NULL);
    assert_contains(output_of(a), "ONE\nTWO\nstatus=0 0 0 0\n");
    char *piped = tmpdir_path(w.outside, "piped");
    char *data = tmpdir_read_file(piped, NULL);
    assert_string_equal(data, "ONE\nTWO\n");
    free(data);
    free(piped);
    json_decref(a);
    free(cmd);
    world_end(&w);
}

static void
test_extra_fds_reach_escalated_program(void **state)
{
    struct world w;
    world_start(&w,
                "prefix_rule(pattern=[\"diff\"], decision=\"allow\")\n"
                "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n",
                false);
    char *cmd = fmt("diff <(echo a) <(echo a); echo \"same=$?\"; diff <(echo a) <(echo b);"
                    " echo \"differ=$?\"; sh -c 'echo three >&3; touch %s/esc' 3>log; cat log",
                    w.outside);
    json_t *a = run(&w, cmd, NULL);
    assert_contains(output_of(a), "same=0\n");
    assert_contains(output_of(a), "< a\n---\n> b\ndiffer=1\n");
    assert_contains(output_of(a), "three\n");
    assert_true(exists(w.outside, "esc"));
    char *log = tmpdir_read_file(w.audit, NULL);
    assert_contains(log, "\"argv\":[\"diff\",\"/dev/fd/63\",\"/dev/fd/62\"]");
    free(log);
    json_decref(a);
    free(cmd);
    world_end(&w);
}

/* ---- attacks ---- */

static void
test_fake_program_in_workdir_not_escalated(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"git\"], decision=\"allow\")\n", false);
    char *fake = tmpdir_path(w.wd, "git");
    char *script = fmt("#!/bin/sh\necho fake-ran\ntouch %s/pwned\n", w.outside);
    tmpdir_write_file(fake, script, 0755);
    json_t *a = run(&w, "PATH=$PWD:$PATH; git status", NULL);
    assert_contains(output_of(a), "fake-ran");
    assert_false(exists(w.outside, "pwned"));
    json_decref(a);
    free(fake);
    free(script);
    world_end(&w);
}

static void
test_escalated_program_gets_only_forwarded_fds(void **state)
{
    /* an fd the server inherits (not close-on-exec) must not reach it */
    int leak = dup2(STDERR_FILENO, 77);
    assert_int_equal(leak, 77);
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n", false);
    close(leak);
    char *cmd = fmt("sh -c 'touch %s/esc; ls /proc/$$/fd; true'; echo; "
                    "sh -c 'ls /proc/$$/fd; true' 5</dev/null",
                    w.outside);
    json_t *a = run(&w, cmd, NULL);
    assert_true(exists(w.outside, "esc"));
    assert_string_equal(output_of(a), "0\n1\n2\n\n0\n1\n2\n5\n");
    json_decref(a);
    free(cmd);
    world_end(&w);
}

static void
test_loader_env_dropped(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n", false);
    char *cmd = fmt("LD_PRELOAD=/nonexistent.so LD_LIBRARY_PATH=/x BASH_ENV=/x KEEP=yes "
                    "sh -c 'echo \"[$LD_PRELOAD][$LD_LIBRARY_PATH][$BASH_ENV][$KEEP]\"; touch "
                    "%s/esc'",
                    w.outside);
    json_t *a = run(&w, cmd, NULL);
    assert_contains(output_of(a), "[][][][yes]\n");
    assert_true(exists(w.outside, "esc"));
    json_decref(a);
    free(cmd);
    world_end(&w);
}

/* Raw clients on the call's socket (fd 4, inherited by everything in the
 * sandbox): garbage datagrams, a HELLO with a pipe, an oversized frame, fds
 * on a REQUEST, a bad workdir, a client that dies mid-handshake; REQUEST
 * datagrams without their fd, with a pipe, with two fds, above
 * ESC_MAX_DGRAM, followed by a second REQUEST.  The
 * server must go on serving the same call and the next. */
static const char attack_py[] =
    "import os, socket, struct, array\n"
    "s = socket.socket(fileno=int(os.environ['CODEX_ESCALATE_SOCKET']))\n"
    "def frame(t, body=b''): return struct.pack('<IHH', len(body), 2, t) + body\n"
    "def st(b): return struct.pack('<I', len(b)) + b\n"
    "def hello():\n"
    "    a, b = socket.socketpair()\n"
    "    s.sendmsg([frame(1)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', "
    "[b.fileno()]))])\n"
    "    b.close(); return a\n"
    "def req(wd=b'/'):\n"
    "    return frame(2, st(b'/bin/true') + struct.pack('<I', 1) + st(b'true') + st(wd) + "
    "struct.pack('<I', 0))\n"
    "s.send(b'garbage')\n"
    "s.send(frame(1))\n"
    "r, w = os.pipe()\n"
    "s.sendmsg([frame(1)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [r]))])\n"
    "a = hello(); a.sendall(struct.pack('<IHH', 0x7fffffff, 2, 2)); print('big', a.recv(100)); "
    "a.close()\n"
    "a = hello(); a.sendall(b'\\x01\\x02\\x03'); a.close()\n"
    "a = hello(); a.sendall(req(b'/no/such/dir')); m = a.recv(200); print('baddir', m[8:]); "
    "a.close()\n"
    "a = hello(); a.sendall(req()); print('run', a.recv(100)); a.close()\n"
    "a = hello(); a.sendmsg([req()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', "
    "[r]))]); print('fds', a.recv(100)); a.close()\n"
    "def esc_req(cmd):\n"
    "    return frame(2, st(b'/bin/sh') + struct.pack('<I', 3) + st(b'sh') + st(b'-c') + st(cmd) "
    "+ st(os.getcwd().encode()) + struct.pack('<I', 0))\n"
    "a = hello(); a.sendall(esc_req(os.environ['MARK'].encode())); m = a.recv(8); "
    "a.sendall(frame(6, struct.pack('<II', 1, 1))); print('esc', m, 'count', a.recv(100)); "
    "a.close()\n"
    "def open_req(fr, fds=None):\n"
    "    a, b = socket.socketpair()\n"
    "    fds = [b.fileno()] if fds is None else fds\n"
    "    s.sendmsg([fr], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', fds))] "
    "if fds else [])\n"
    "    b.close(); return a\n"
    "a = open_req(req(b'/no/such/dir')); print('dbaddir', a.recv(200)[8:]); a.close()\n"
    "a = open_req(req()); print('drun', a.recv(100)); a.close()\n"
    "open_req(req(), []); open_req(req(), [r])\n"
    "c, d = socket.socketpair(); a = open_req(req(), [d.fileno(), d.fileno()]); d.close(); "
    "print('dtwo', c.recv(100)); c.close()\n"
    "big = frame(2, st(b'/bin/true') + struct.pack('<I', 1) + st(b'true') + st(b'/') + "
    "struct.pack('<I', 1) + st(b'A=' + b'x' * 70000))\n"
    "a = open_req(big); print('dbig', a.recv(100)); a.close()\n"
    "a = open_req(esc_req(os.environ['MARK'].encode())); m = a.recv(8); "
    "a.sendall(frame(6, struct.pack('<II', 1, 1))); print('desc', m, 'count', a.recv(100)); "
    "a.close()\n"
    "a = open_req(esc_req(os.environ['MARK'].encode())); m = a.recv(8); a.sendall(req()); "
    "print('dagain', m, 'then', a.recv(100)); a.close()\n"
    "for i in range(20): hello()\n"
    "print('attacks done')\n";

static void
test_raw_clients_leave_server_serving(void **state)
{
    struct world w;
    world_start(&w, "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n", false);
    char *py = tmpdir_path(w.wd, "attack.py");
    tmpdir_write_file(py, attack_py, 0644);
    char *cmd = fmt("MARK='touch %s/mismatch' /usr/bin/python3 attack.py; sh -c 'touch %s/after';"
                    " echo \"status=$?\"",
                    w.outside, w.outside);
    json_t *a = run(&w, cmd, NULL);
    const char *out = output_of(a);
    assert_contains(out, "big b''");  /* oversized: session closed, no answer */
    assert_contains(out, "baddir b"); /* a missing workdir is denied */
    assert_contains(out, "not an existing directory");
    assert_contains(out, "run b'\\x00\\x00\\x00\\x00\\x02\\x00\\x03\\x00'"); /* RUN */
    assert_contains(out, "fds b''"); /* fds on a REQUEST end the session */
    /* ESCALATE, then an FDS frame announcing 1 fd with none attached */
    assert_contains(out, "esc b'\\x00\\x00\\x00\\x00\\x02\\x00\\x04\\x00' count b''");
    /* the same through REQUEST datagrams (protocol 2) */
    assert_contains(out, "dbaddir b\"2\\x00\\x00\\x00the request's workdir");
    assert_contains(out, "drun b'\\x00\\x00\\x00\\x00\\x02\\x00\\x03\\x00'");
    assert_contains(out, "dtwo b''"); /* two fds: dropped, never answered */
    assert_contains(out, "dbig b''"); /* above ESC_MAX_DGRAM: dropped */
    assert_contains(out, "desc b'\\x00\\x00\\x00\\x00\\x02\\x00\\x04\\x00' count b''");
    /* a second REQUEST on the stream after the datagram one ends the session */
    assert_contains(out, "dagain b'\\x00\\x00\\x00\\x00\\x02\\x00\\x04\\x00' then b''");
    assert_false(exists(w.outside, "mismatch"));
    assert_contains(out, "attacks done");
    assert_contains(out, "status=0\n");
    assert_true(exists(w.outside, "after"));
    json_decref(a);
    free(cmd);
    /* and the next call */
    cmd = fmt("sh -c 'touch %s/next'", w.outside);
    a = run(&w, cmd, NULL);
    assert_int_equal(exit_of(a), 0);
    assert_true(exists(w.outside, "next"));
    json_decref(a);
    free(cmd);
    free(py);
    world_end(&w);
}

int
main(void)
{
    server_path = getenv("EXECGATE_TEST_SERVER");
    if (!server_path) {
        fprintf(stderr, "EXECGATE_TEST_SERVER is not set\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allow_escalates_with_output_and_status),
        cmocka_unit_test(test_forbidden_denies),
        cmocka_unit_test(test_prompt_accept_git_init),
        cmocka_unit_test(test_prompt_decline_and_cancel),
        cmocka_unit_test(test_prompt_without_elicitation_capability),
        cmocka_unit_test(test_approved_for_session_asks_once),
        cmocka_unit_test(test_abort_stops_the_call),
        cmocka_unit_test(test_waiting_for_a_person_does_not_count_toward_the_timeout),
        cmocka_unit_test(test_forced_rm_without_rule_prompts_then_runs_inside),
        cmocka_unit_test(test_timeout_kills_escalated_program),
        cmocka_unit_test(test_signals_reach_escalated_program),
        cmocka_unit_test(test_host_executable_limits_fallback),
        cmocka_unit_test(test_bad_rules_refuse_start),
        cmocka_unit_test(test_cancel_kills_escalated_program),
        cmocka_unit_test(test_queued_calls_hold_no_sockets),
        cmocka_unit_test(test_preserve_program_paths),
        cmocka_unit_test(test_pipeline_mixes_escalated_and_sandboxed),
        cmocka_unit_test(test_extra_fds_reach_escalated_program),
        cmocka_unit_test(test_fake_program_in_workdir_not_escalated),
        cmocka_unit_test(test_escalated_program_gets_only_forwarded_fds),
        cmocka_unit_test(test_loader_env_dropped),
        cmocka_unit_test(test_raw_clients_leave_server_serving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
