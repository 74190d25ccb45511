/*
 * MCP tasks (protocol 2025-11-25) through the server's real stdio: a
 * task-augmented shell call answered at once and polled to the result a
 * plain call gives, tasks/result waiting for the end, tasks/cancel killing
 * the command, input_required while a person is asked (the question
 * naming the task), the spec's errors, --max-tasks, tasks/list's pages,
 * the time to live, and a client of an older protocol seeing nothing of
 * it.  Another session's view is the HTTP test's (sdk/tasks.mjs).  The
 * server runs under ASan/LSan: exit 0 means no leak.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/proc.h"
#include "tests/support/server_suite.h"
#include "tests/support/tmpdir.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TASKS_PROTOCOL "2025-11-25"
#define RELATED        "io.modelcontextprotocol/related-task"

static const char *server_path;

struct world {
    char *dir;   /* the workdir, writable in the sandbox */
    char *rules; /* the rules directory */
    struct mcp_client *c;
    json_t *init; /* the initialize answer */
};

/* Starts the server (workspace-write in w->dir, the rules given, extra
 * arguments) and initializes it with protocol and, when elicitation, that
 * capability. */
static void
start(struct world *w, const char *protocol, bool elicitation, const char *rules,
      const char *const *extra)
{
    w->dir = tmpdir_new("tasks");
    w->rules = tmpdir_path(w->dir, ".rules");
    tmpdir_make_dir(w->dir, ".rules");
    char *file = tmpdir_path(w->rules, "t.rules");
    tmpdir_write_file(file, rules ? rules : "", 0644);
    free(file);
    char *policy = NULL;
    assert_true(asprintf(&policy,
                         "{\"sandboxPolicy\":{\"type\":\"workspace-write\",\"network_access\":"
                         "false},\"sandboxCwd\":\"%s\"}",
                         w->dir) > 0);
    const char *argv[24] = {server_path, "--rules", w->rules, "--sandbox", policy};
    size_t n = 5;
    const char *shell = getenv("EXECGATE_TEST_SHELL");
    if (shell && *shell) {
        argv[n++] = "--shell";
        argv[n++] = shell;
    }
    for (size_t i = 0; extra && extra[i] && n < 22; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    w->c = mcp_client_start(argv, NULL);
    free(policy);
    json_t *caps = elicitation ? json_pack("{s:{}}", "elicitation") : json_object();
    json_t *init = mcp_client_call(w->c, "initialize",
                                   json_pack("{s:s, s:o, s:{s:s, s:s}}", "protocolVersion",
                                             protocol, "capabilities", caps, "clientInfo", "name",
                                             "execgate-tasks-test", "version", "1"));
    assert_non_null(json_object_get(init, "result"));
    w->init = init;
    mcp_client_send(
        w->c, json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized"));
}

/* Closes stdin and asserts a clean exit (no leak, no crash). */
static void
finish(struct world *w)
{
    mcp_world_assert_clean_exit(w->c);
    mcp_client_free(w->c);
    json_decref(w->init);
    tmpdir_remove(w->dir);
    free(w->dir);
    free(w->rules);
}

static json_t *
shell_params(struct world *w, const char *command, json_t *task)
{
    json_t *p = json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments", "command",
                          command, "workdir", w->dir, "login", 0);
    if (task)
        json_object_set_new(p, "task", task);
    return p;
}

static const char *
task_id(const json_t *t)
{
    return json_string_value(json_object_get(t, "taskId"));
}

/* A task-augmented shell call of command: its task (checked), owned. */
static json_t *
start_task(struct world *w, const char *command, json_t *task)
{
    json_t *a =
        mcp_client_call(w->c, "tools/call", shell_params(w, command, task ? task : json_object()));
    json_t *t = json_incref(json_object_get(json_object_get(a, "result"), "task"));
    if (!t)
        fprintf(stderr, "not a task: %s\n", json_dumps(a, 0));
    assert_non_null(t);
    assert_string_equal(json_string_value(json_object_get(t, "status")), "working");
    assert_int_equal(strlen(json_string_value(json_object_get(t, "taskId"))), 32);
    assert_non_null(json_string_value(json_object_get(t, "createdAt")));
    assert_non_null(json_string_value(json_object_get(t, "lastUpdatedAt")));
    assert_true(json_integer_value(json_object_get(t, "ttl")) > 0);
    assert_true(json_integer_value(json_object_get(t, "pollInterval")) > 0);
    const char *now =
        json_string_value(json_object_get(json_object_get(json_object_get(a, "result"), "_meta"),
                                          "io.modelcontextprotocol/model-immediate-response"));
    assert_non_null(now);
    assert_non_null(strstr(now, task_id(t)));
    json_decref(a);
    return t;
}

/* A request of the tasks methods about task id: the whole answer. */
static json_t *
task_call(struct world *w, const char *method, const char *id)
{
    return mcp_client_call(w->c, method, json_pack("{s:s}", "taskId", id));
}

/* Sends tasks/result for task t without waiting: the request's id
 * (owned), for mcp_client_response. */
static json_t *
send_result(struct world *w, const json_t *t)
{
    return json_integer(
        mcp_client_send_request(w->c, "tasks/result", json_pack("{s:s}", "taskId", task_id(t))));
}

static const char *
status_of(const json_t *answer)
{
    return json_string_value(json_object_get(json_object_get(answer, "result"), "status"));
}

/* Sends tasks/result for task t, then asserts that a tasks/get sent after
 * it finds t still working: the result request's id (owned). */
static json_t *
result_while_working(struct world *w, const json_t *t)
{
    json_t *rid = send_result(w, t);
    json_t *g = task_call(w, "tasks/get", task_id(t));
    assert_string_equal(status_of(g), "working");
    json_decref(g);
    return rid;
}

static int
error_code(const json_t *answer)
{
    const json_t *e = json_object_get(answer, "error");
    if (!e)
        fprintf(stderr, "not an error: %s\n", json_dumps(answer, 0));
    assert_non_null(e);
    return (int)json_integer_value(json_object_get(e, "code"));
}

/* The answer's result without what differs from run to run (the
 * duration, in the object and in its text, and the task's _meta). */
static json_t *
comparable(const json_t *answer)
{
    json_t *r = json_deep_copy(json_object_get(answer, "result"));
    assert_non_null(r);
    json_object_del(r, "_meta");
    json_object_del(json_object_get(r, "structuredContent"), "duration");
    json_t *item = json_array_get(json_object_get(r, "content"), 0);
    json_t *obj = json_loads(json_string_value(json_object_get(item, "text")), 0, NULL);
    assert_non_null(obj);
    json_object_del(obj, "duration");
    json_object_set_new(item, "text", obj);
    return r;
}

/* Polls tasks/get until the task leaves working; returns its status
 * answer.  Each poll is an answer the server gives: no timer decides. */
static json_t *
poll_until_ended(struct world *w, const char *id)
{
    for (int waited = 0;; waited += 20) {
        assert_true(waited < MCP_CLIENT_WAIT_MS); /* a safety limit, not a timing */
        json_t *g = task_call(w, "tasks/get", id);
        const char *st = status_of(g);
        assert_non_null(st);
        if (strcmp(st, "working") != 0)
            return g;
        json_decref(g);
        usleep(20000);
    }
}

/* A task polled to its end returns what the plain call returns. */
static void
test_polled_to_result(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, false, NULL, NULL);
    const char *cmd = "printf 'out\\n'; printf 'err\\n' >&2; exit 3";
    json_t *t = start_task(&w, cmd, json_pack("{s:i}", "ttl", 60000));
    assert_int_equal(json_integer_value(json_object_get(t, "ttl")), 60000);
    json_t *g = poll_until_ended(&w, task_id(t));
    assert_string_equal(status_of(g), "completed"); /* a non-zero exit is no tool error */
    json_decref(g);
    json_t *r = task_call(&w, "tasks/result", task_id(t));
    const json_t *meta = json_object_get(json_object_get(r, "result"), "_meta");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(meta, RELATED), "taskId")), task_id(t));
    json_t *plain = mcp_client_call(w.c, "tools/call", shell_params(&w, cmd, NULL));
    json_t *a = comparable(r), *b = comparable(plain);
    if (!json_equal(a, b))
        fprintf(stderr, "task: %s\nplain: %s\n", json_dumps(a, 0), json_dumps(b, 0));
    assert_true(json_equal(a, b));
    assert_int_equal(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(r, "result"), "structuredContent"), "exit_code")),
        3);
    /* fetched again: the same */
    json_t *again = task_call(&w, "tasks/result", task_id(t));
    json_t *c = comparable(again);
    assert_true(json_equal(a, c));
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(again);
    json_decref(plain);
    json_decref(r);
    json_decref(t);
    finish(&w);
}

/* tasks/result waits for the end: a tasks/get sent after it is answered
 * first (the server answers in order what it can), with working. */
static void
test_result_blocks(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, false, NULL, NULL);
    json_t *t = start_task(&w, "while [ ! -e go ]; do sleep 0.02; done; echo released", NULL);
    json_t *rid = result_while_working(&w, t);
    /* had tasks/result been answered, its answer would have come first */
    json_t *early = mcp_client_response(w.c, rid, 0);
    assert_null(early);
    char *go = tmpdir_path(w.dir, "go");
    tmpdir_write_file(go, "", 0644);
    json_t *r = mcp_client_response(w.c, rid, MCP_CLIENT_WAIT_MS);
    assert_non_null(r);
    const json_t *sc = json_object_get(json_object_get(r, "result"), "structuredContent");
    assert_string_equal(json_string_value(json_object_get(sc, "output")), "released\n");
    json_t *after = task_call(&w, "tasks/get", task_id(t));
    assert_string_equal(status_of(after), "completed");
    free(go);
    json_decref(after);
    json_decref(r);
    json_decref(rid);
    json_decref(t);
    finish(&w);
}

/* tasks/cancel kills the command; the task stays cancelled, a second
 * cancel is refused, tasks/result says there is no result. */
static void
test_cancel(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, false, NULL, NULL);
    const char *marker = "execgate-task-cancel-7411";
    char *cmd = NULL;
    assert_true(asprintf(&cmd, "exec -a %s sleep 300", marker) > 0);
    json_t *t = start_task(&w, cmd, NULL);
    /* a waiter from before the cancel is answered by it */
    json_t *rid = send_result(&w, t);
    for (int waited = 0; !proc_with_marker(marker); waited += 20) {
        assert_true(waited < MCP_CLIENT_WAIT_MS); /* a safety limit, not a timing */
        usleep(20000);
    }
    json_t *c = task_call(&w, "tasks/cancel", task_id(t));
    assert_string_equal(status_of(c), "cancelled");
    json_t *waited = mcp_client_response(w.c, rid, MCP_CLIENT_WAIT_MS);
    assert_int_equal(error_code(waited), -32602);
    assert_true(proc_gone(marker, MCP_CLIENT_WAIT_MS));
    json_t *g = task_call(&w, "tasks/get", task_id(t));
    assert_string_equal(status_of(g), "cancelled");
    json_t *again = task_call(&w, "tasks/cancel", task_id(t));
    assert_int_equal(error_code(again), -32602);
    json_t *r = task_call(&w, "tasks/result", task_id(t));
    assert_int_equal(error_code(r), -32602);
    /* an ended task cannot be cancelled either */
    json_t *done = start_task(&w, "true", NULL);
    json_decref(task_call(&w, "tasks/result", task_id(done)));
    json_t *late = task_call(&w, "tasks/cancel", task_id(done));
    assert_int_equal(error_code(late), -32602);
    free(cmd);
    json_decref(late);
    json_decref(done);
    json_decref(r);
    json_decref(again);
    json_decref(g);
    json_decref(waited);
    json_decref(c);
    json_decref(rid);
    json_decref(t);
    finish(&w);
}

/* The next elicitation/create (other messages are dropped). */
static json_t *
next_question(struct world *w)
{
    json_t *m = mcp_client_next_named(w->c, "elicitation/create", MCP_CLIENT_WAIT_MS);
    assert_non_null(m);
    return m;
}

/* A prompt rule asks: the task is input_required while the question is
 * out, the question names the task, and the answer lets it run on. */
static void
test_input_required(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, true, "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"prompt\")\n",
          NULL);
    json_t *t = start_task(&w, "sh -c 'echo approved-ran'", NULL);
    json_t *ask = next_question(&w);
    const json_t *meta = json_object_get(json_object_get(ask, "params"), "_meta");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(meta, RELATED), "taskId")), task_id(t));
    json_t *g = task_call(&w, "tasks/get", task_id(t));
    assert_string_equal(status_of(g), "input_required");
    mcp_client_send(w.c, json_pack("{s:s, s:O, s:{s:s, s:{s:s}}}", "jsonrpc", "2.0", "id",
                                   json_object_get(ask, "id"), "result", "action", "accept",
                                   "content", "decision", "approved"));
    json_t *r = task_call(&w, "tasks/result", task_id(t));
    const json_t *sc = json_object_get(json_object_get(r, "result"), "structuredContent");
    assert_string_equal(json_string_value(json_object_get(sc, "output")), "approved-ran\n");
    json_t *after = task_call(&w, "tasks/get", task_id(t));
    assert_string_equal(status_of(after), "completed");
    /* the status went input_required, then back (notifications/tasks/status) */
    const char *expect[] = {"input_required", "working", "completed"};
    for (size_t i = 0; i < 3; i++) {
        json_t *n = mcp_client_notification(w.c, "notifications/tasks/status", MCP_CLIENT_WAIT_MS);
        assert_non_null(n);
        const json_t *np = json_object_get(n, "params");
        assert_string_equal(json_string_value(json_object_get(np, "taskId")), task_id(t));
        assert_string_equal(json_string_value(json_object_get(np, "status")), expect[i]);
        json_decref(n);
    }
    json_decref(after);
    json_decref(r);
    json_decref(g);
    json_decref(ask);
    json_decref(t);
    finish(&w);
}

static const char *
created_id(const json_t *answer)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(answer, "result"), "task"), "taskId"));
}

/* A call that asks to leave the sandbox: input_required while asked; a
 * refusal fails the task, and tasks/result returns the plain call's
 * refusal (isError).  Cancelled while asked, the question is withdrawn. */
static void
test_leave_sandbox(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, true, NULL, NULL);
    json_t *args =
        json_pack("{s:s, s:s, s:b, s:s, s:s}", "command", "echo outside", "workdir", w.dir, "login",
                  0, "sandbox_permissions", "require_escalated", "justification", "the test asks");
    json_t *a =
        mcp_client_call(w.c, "tools/call",
                        json_pack("{s:s, s:O, s:{}}", "name", "shell", "arguments", args, "task"));
    const char *id = created_id(a);
    assert_non_null(id);
    json_t *ask = next_question(&w);
    const json_t *meta = json_object_get(json_object_get(ask, "params"), "_meta");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(meta, RELATED), "taskId")), id);
    json_t *g = task_call(&w, "tasks/get", id);
    assert_string_equal(status_of(g), "input_required");
    mcp_client_send(w.c, json_pack("{s:s, s:O, s:{s:s}}", "jsonrpc", "2.0", "id",
                                   json_object_get(ask, "id"), "result", "action", "decline"));
    json_t *r = task_call(&w, "tasks/result", id);
    assert_true(json_is_true(json_object_get(json_object_get(r, "result"), "isError")));
    json_t *f = task_call(&w, "tasks/get", id);
    assert_string_equal(status_of(f), "failed");
    assert_non_null(json_object_get(json_object_get(f, "result"), "statusMessage"));

    /* cancelled while asked: the client is told to close the question */
    json_t *b =
        mcp_client_call(w.c, "tools/call",
                        json_pack("{s:s, s:O, s:{}}", "name", "shell", "arguments", args, "task"));
    const char *id2 = created_id(b);
    assert_non_null(id2);
    json_t *ask2 = next_question(&w);
    json_t *c = task_call(&w, "tasks/cancel", id2);
    assert_string_equal(status_of(c), "cancelled");
    json_t *closed = mcp_client_notification(w.c, "notifications/cancelled", MCP_CLIENT_WAIT_MS);
    assert_non_null(closed);
    assert_true(json_equal(json_object_get(json_object_get(closed, "params"), "requestId"),
                           json_object_get(ask2, "id")));
    json_decref(closed);
    json_decref(c);
    json_decref(ask2);
    json_decref(b);
    json_decref(f);
    json_decref(r);
    json_decref(g);
    json_decref(ask);
    json_decref(a);
    json_decref(args);
    finish(&w);
}

/* A task's progress notifications carry the progress token and name the
 * task. */
static void
test_progress(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, false, NULL, NULL);
    json_t *p =
        shell_params(&w, "echo begin; while [ ! -e go ]; do sleep 0.02; done", json_object());
    json_object_set_new(p, "_meta", json_pack("{s:s}", "progressToken", "tok-task"));
    json_t *a = mcp_client_call(w.c, "tools/call", p);
    const char *id = created_id(a);
    assert_non_null(id);
    json_t *n = mcp_client_notification(w.c, "notifications/progress", MCP_CLIENT_WAIT_MS);
    assert_non_null(n);
    const json_t *np = json_object_get(n, "params");
    assert_string_equal(json_string_value(json_object_get(np, "progressToken")), "tok-task");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(np, "_meta"), RELATED), "taskId")),
                        id);
    char *go = tmpdir_path(w.dir, "go");
    tmpdir_write_file(go, "", 0644);
    json_decref(task_call(&w, "tasks/result", id));
    free(go);
    json_decref(n);
    json_decref(a);
    finish(&w);
}

/* tasks/result requests waiting for one task are bounded: one more ends
 * the oldest's wait with an error; the others get the result. */
static void
test_waiters_bounded(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, false, NULL, NULL);
    json_t *t = start_task(&w, "while [ ! -e go ]; do sleep 0.02; done; echo end", NULL);
    enum { N = 9 }; /* TASKS_MAX_WAITERS + 1 */
    json_t *ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = send_result(&w, t);
    json_t *first = mcp_client_response(w.c, ids[0], MCP_CLIENT_WAIT_MS);
    assert_int_equal(error_code(first), -32603);
    char *go = tmpdir_path(w.dir, "go");
    tmpdir_write_file(go, "", 0644);
    for (int i = 1; i < N; i++) {
        json_t *r = mcp_client_response(w.c, ids[i], MCP_CLIENT_WAIT_MS);
        assert_non_null(json_object_get(r, "result"));
        json_decref(r);
    }
    for (int i = 0; i < N; i++)
        json_decref(ids[i]);
    free(go);
    json_decref(first);
    json_decref(t);
    finish(&w);
}

/* At the end of input the server stops its running task's command and
 * answers the tasks/result waiting for it before it exits. */
static void
test_eof_answers_waiters(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, false, NULL, NULL);
    json_t *t = start_task(&w, "exec sleep 300", NULL);
    json_t *rid = result_while_working(&w, t);
    mcp_client_close_stdin(w.c);
    json_t *r = mcp_client_response(w.c, rid, MCP_CLIENT_WAIT_MS);
    assert_non_null(r);
    const json_t *sc = json_object_get(json_object_get(r, "result"), "structuredContent");
    assert_non_null(sc);
    assert_int_not_equal(json_integer_value(json_object_get(sc, "exit_code")), 0);
    json_decref(r);
    json_decref(rid);
    json_decref(t);
    finish(&w);
}

/* The spec's errors: an unknown task, no taskId, a bad cursor. */
static void
test_errors(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, false, NULL, NULL);
    const char *methods[] = {"tasks/get", "tasks/result", "tasks/cancel"};
    for (size_t i = 0; i < 3; i++) {
        json_t *a = task_call(&w, methods[i], "00000000000000000000000000000000");
        assert_int_equal(error_code(a), -32602);
        json_decref(a);
        a = mcp_client_call(w.c, methods[i], json_object());
        assert_int_equal(error_code(a), -32602);
        json_decref(a);
    }
    json_t *a = mcp_client_call(w.c, "tasks/list", json_pack("{s:s}", "cursor", "not-ours"));
    assert_int_equal(error_code(a), -32602);
    json_decref(a);
    a = mcp_client_call(w.c, "tools/call", shell_params(&w, "true", json_string("x")));
    assert_int_equal(error_code(a), -32602);
    json_decref(a);
    /* a tool without taskSupport asked to run as a task */
    json_t *p = json_pack("{s:s, s:{s:s}, s:{}}", "name", "exec_command", "arguments", "cmd",
                          "true", "task");
    a = mcp_client_call(w.c, "tools/call", p);
    assert_int_equal(error_code(a), -32601);
    json_decref(a);
    finish(&w);
}

/* tasks/list in pages, every task once, in the order they came. */
static void
test_list_pages(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, false, NULL, NULL);
    enum { N = 11 };
    json_t *ids = json_array();
    for (int i = 0; i < N; i++) {
        json_t *t = start_task(&w, "true", NULL);
        json_array_append_new(ids, json_string(task_id(t)));
        json_decref(t);
    }
    size_t seen = 0;
    int pages = 0;
    json_t *cursor = NULL;
    do {
        json_t *p = cursor ? json_pack("{s:O}", "cursor", cursor) : json_object();
        json_t *a = mcp_client_call(w.c, "tasks/list", p);
        const json_t *r = json_object_get(a, "result");
        assert_non_null(r);
        const json_t *list = json_object_get(r, "tasks");
        for (size_t i = 0; i < json_array_size(list); i++, seen++)
            assert_string_equal(task_id(json_array_get(list, i)),
                                json_string_value(json_array_get(ids, seen)));
        json_decref(cursor);
        cursor = json_incref(json_object_get(r, "nextCursor"));
        pages++;
        json_decref(a);
    } while (cursor);
    assert_int_equal(seen, N);
    assert_true(pages >= 2);
    json_decref(ids);
    finish(&w);
}

/* --max-tasks: a session keeps that many; an ended task whose result was
 * fetched makes room, a running one does not. */
static void
test_max_tasks(void **state)
{
    struct world w;
    const char *extra[] = {"--max-tasks", "2", NULL};
    start(&w, TASKS_PROTOCOL, false, NULL, extra);
    json_t *a = start_task(&w, "sleep 300", NULL);
    json_t *b = start_task(&w, "echo b", NULL);
    json_t *refused = mcp_client_call(w.c, "tools/call", shell_params(&w, "true", json_object()));
    assert_int_equal(error_code(refused), -32603);
    json_t *rb = task_call(&w, "tasks/result", task_id(b));
    assert_non_null(json_object_get(rb, "result"));
    json_t *c = start_task(&w, "true", NULL); /* b made room */
    json_t *gone = task_call(&w, "tasks/get", task_id(b));
    assert_int_equal(error_code(gone), -32602);
    json_t *ca = task_call(&w, "tasks/cancel", task_id(a));
    assert_string_equal(status_of(ca), "cancelled");
    json_decref(ca);
    json_decref(gone);
    json_decref(c);
    json_decref(rb);
    json_decref(refused);
    json_decref(b);
    json_decref(a);
    finish(&w);
}

/* An ended task is dropped once its time to live has passed since its
 * end: a later call that sleeps longer than it lets it pass. */
static void
test_ttl(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, false, NULL, NULL);
    json_t *t = start_task(&w, "echo x", json_pack("{s:i}", "ttl", 5));
    assert_int_equal(json_integer_value(json_object_get(t, "ttl")), 5);
    json_t *r = task_call(&w, "tasks/result", task_id(t));
    assert_non_null(json_object_get(r, "result"));
    json_decref(mcp_client_call(w.c, "tools/call", shell_params(&w, "sleep 0.1", NULL)));
    json_t *g = task_call(&w, "tasks/get", task_id(t));
    assert_int_equal(error_code(g), -32602);
    /* a ttl above --task-ttl-ms is lowered to it */
    json_t *big = start_task(&w, "true", json_pack("{s:I}", "ttl", (json_int_t)1 << 50));
    assert_int_equal(json_integer_value(json_object_get(big, "ttl")), 3600000);
    json_decref(big);
    json_decref(g);
    json_decref(r);
    json_decref(t);
    finish(&w);
}

/* A client of 2025-06-18 sees no tasks: no capability, no taskSupport, a
 * call's task ignored (the plain answer), tasks/get unknown. */
static void
test_older_protocol(void **state)
{
    struct world w;
    start(&w, "2025-06-18", false, NULL, NULL);
    json_t *tools = mcp_client_call(w.c, "tools/list", json_object());
    const json_t *tool =
        json_array_get(json_object_get(json_object_get(tools, "result"), "tools"), 0);
    assert_non_null(tool);
    assert_null(json_object_get(tool, "execution"));
    assert_null(json_object_get(json_object_get(json_object_get(w.init, "result"), "capabilities"),
                                "tasks"));
    json_t *a = mcp_client_call(w.c, "tools/call",
                                shell_params(&w, "echo plain", json_pack("{s:i}", "ttl", 1000)));
    const json_t *sc = json_object_get(json_object_get(a, "result"), "structuredContent");
    assert_string_equal(json_string_value(json_object_get(sc, "output")), "plain\n");
    json_t *g = task_call(&w, "tasks/get", "00000000000000000000000000000000");
    assert_int_equal(error_code(g), -32601);
    json_decref(g);
    json_decref(a);
    json_decref(tools);
    finish(&w);
}

/* The agreed protocol's capability and tool say tasks. */
static void
test_capability(void **state)
{
    struct world w;
    start(&w, TASKS_PROTOCOL, false, NULL, NULL);
    const json_t *caps = json_object_get(
        json_object_get(json_object_get(w.init, "result"), "capabilities"), "tasks");
    assert_non_null(json_object_get(caps, "list"));
    assert_non_null(json_object_get(caps, "cancel"));
    assert_non_null(
        json_object_get(json_object_get(json_object_get(caps, "requests"), "tools"), "call"));
    json_t *tools = mcp_client_call(w.c, "tools/list", json_object());
    const json_t *tool =
        json_array_get(json_object_get(json_object_get(tools, "result"), "tools"), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(tool, "execution"), "taskSupport")),
        "optional");
    json_decref(tools);
    finish(&w);
}

int
main(void)
{
    if (server_suite_server(&server_path) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capability),
        cmocka_unit_test(test_polled_to_result),
        cmocka_unit_test(test_result_blocks),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_input_required),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_list_pages),
        cmocka_unit_test(test_max_tasks),
        cmocka_unit_test(test_ttl),
        cmocka_unit_test(test_older_protocol),
        cmocka_unit_test(test_leave_sandbox),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_waiters_bounded),
        cmocka_unit_test(test_eof_answers_waiters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
