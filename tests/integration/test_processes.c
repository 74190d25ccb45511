/*
 * Background processes through the real server: exec_command, write_stdin,
 * list_processes and kill_process.  A process runs as a shell call does
 * (the session's sandbox, every exec decided by the rules, questions to
 * the client even while no call is in flight), takes input on a pipe or a
 * terminal of its sandbox's own, keeps its unread output in a ring that
 * says what it dropped, and nothing of it outlives its session or the
 * server.  Processes are found by a marker no other process has (a sleep
 * for an odd number of seconds), never by timing; waits poll the server
 * with write_stdin, each bounded by the yield time it asks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/server_suite.h"
#include "tests/support/proc.h"
#include "tests/support/test_user.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *server_path;
/* EXECGATE_TEST_UNPRIVILEGED=1 (started as root): the server runs as the
 * test user */
static bool unprivileged;
static struct test_user user;

/* Starts w's server (workspace-write) with rules and more arguments
 * (NULL: none), the client declaring elicitation when asked; the server
 * as the test user when unprivileged. */
static void
start(struct mcp_world *w, const char *rules, const char *const *more, bool elicitation)
{
    struct mcp_world_options o = {.server = server_path,
                                  .client_name = "process-tests",
                                  .more = more,
                                  .elicitation = elicitation};
    server_suite_as_user(&o, unprivileged, &user);
    mcp_world_start(w, rules, &o);
}

/* ---- the tools ---- */

static json_t *
exec_command(struct mcp_world *w, const char *cmd, bool tty, int yield_ms)
{
    return mcp_world_tool(w, "exec_command",
                          json_pack("{s:s, s:s, s:b, s:b, s:i}", "cmd", cmd, "workdir", w->wd,
                                    "login", 0, "tty", tty, "yield_time_ms", yield_ms),
                          NULL);
}

static json_t *
write_stdin(struct mcp_world *w, long long id, const char *chars, int yield_ms)
{
    return mcp_world_tool(w, "write_stdin",
                          json_pack("{s:I, s:s, s:i}", "session_id", (json_int_t)id, "chars", chars,
                                    "yield_time_ms", yield_ms),
                          NULL);
}

static const char *
text_of(const json_t *answer)
{
    return json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(answer, "result"), "content"), 0), "text"));
}

/* The running process's session_id in answer (asserted there). */
static long long
session_id(const json_t *answer)
{
    const json_t *id = json_object_get(mcp_world_structured(answer), "session_id");
    if (!json_is_integer(id))
        fprintf(stderr, "not running: %s\n", text_of(answer));
    assert_true(json_is_integer(id));
    return json_integer_value(id);
}

/* Starts cmd as a process (on a terminal when tty), answered at once: its
 * session_id (asserted running). */
static long long
start_process(struct mcp_world *w, const char *cmd, bool tty)
{
    json_t *a = exec_command(w, cmd, tty, 0);
    long long id = session_id(a);
    json_decref(a);
    return id;
}

/* kill_process of process id: it ends by SIGKILL. */
static void
kill_process(struct mcp_world *w, long long id)
{
    json_t *a =
        mcp_world_tool(w, "kill_process", json_pack("{s:I}", "session_id", (json_int_t)id), NULL);
    assert_int_equal(mcp_world_exit(a), 128 + SIGKILL);
    json_decref(a);
}

/* Polls process id (writing chars first) until its output so far holds
 * want or it has ended; returns all its output (malloc'd) and in *exit
 * its exit code, or -1 while it runs. */
static char *
read_until(struct mcp_world *w, long long id, const char *chars, const char *want, int *exit)
{
    char *all = strdup("");
    *exit = -1;
    for (int i = 0; i < 60 && all && !strstr(all, want) && *exit < 0; i++) {
        json_t *a = write_stdin(w, id, i == 0 ? chars : "", 1000);
        const json_t *sc = mcp_world_structured(a);
        char *more = mcp_world_fmt("%s%s", all, json_string_value(json_object_get(sc, "output")));
        free(all);
        all = more;
        if (json_is_integer(json_object_get(sc, "exit_code")))
            *exit = (int)json_integer_value(json_object_get(sc, "exit_code"));
        json_decref(a);
    }
    assert_non_null(all);
    return all;
}

/* ---- processes by marker ---- */

/* A marker of its own for each test: sleep 3xxx.NNN */
static void
marker(char *buf, size_t size, int n)
{
    snprintf(buf, size, "%d.%03d", 3000 + getpid() % 1000, n);
}

/* Kills what a failed test left, then asserts none was left. */
static void
assert_none_left(const char *mark, int left)
{
    if (left) {
        char *pkill = mcp_world_fmt("pkill -KILL -f '^sleep %s$'", mark);
        int ignored = system(pkill);
        (void)ignored;
        free(pkill);
    }
    assert_int_equal(left, 0);
}

/* ---- tests ---- */

/* shell first, then the four tools, each saying when it is the one; the
 * shell's description says when to start a process instead. */
static void
test_tools_list(void **state)
{
    struct mcp_world w;
    start(&w, "", NULL, false);
    json_t *list = mcp_client_call(w.c, "tools/list", json_object());
    const json_t *tools = json_object_get(json_object_get(list, "result"), "tools");
    const char *names[] = {"shell", "exec_command", "write_stdin", "list_processes",
                           "kill_process"};
    assert_int_equal(json_array_size(tools), 5);
    for (size_t i = 0; i < 5; i++) {
        const json_t *t = json_array_get(tools, i);
        assert_string_equal(json_string_value(json_object_get(t, "name")), names[i]);
        assert_non_null(json_string_value(json_object_get(t, "description")));
        assert_true(json_is_object(json_object_get(t, "inputSchema")));
    }
    const char *shell = json_string_value(json_object_get(json_array_get(tools, 0), "description"));
    mcp_world_assert_contains(shell, "use exec_command instead");
    const char *exec = json_string_value(json_object_get(json_array_get(tools, 1), "description"));
    mcp_world_assert_contains(exec, "For a command that ends by itself, use shell.");
    json_decref(list);
    mcp_world_end(&w);
}

/* A pipe for input: what is written is read, and the result says the
 * process still runs; once it has ended, its exit status, and it is gone. */
static void
test_input_and_exit(void **state)
{
    struct mcp_world w;
    start(&w, "", NULL, false);
    long long id = start_process(&w, "echo ready; read x; echo \"got $x\"; exit 3", false);
    int exit = -1;
    char *out = read_until(&w, id, "hello\n", "got hello", &exit);
    mcp_world_assert_contains(out, "ready\n");
    mcp_world_assert_contains(out, "got hello\n");
    free(out);
    if (exit < 0) {
        out = read_until(&w, id, "", "\001never", &exit);
        free(out);
    }
    assert_int_equal(exit, 3);
    /* told once: the process is gone */
    json_t *a = write_stdin(&w, id, "", 0);
    assert_true(json_is_true(json_object_get(json_object_get(a, "result"), "isError")));
    mcp_world_assert_contains(text_of(a), "No process with session_id");
    json_decref(a);
    mcp_world_end(&w);
}

/* A command that does not read its input cannot make the server hold
 * what it is sent: past 1 MiB waiting, write_stdin is refused and says
 * why; the process runs on. */
static void
test_unread_input_is_bounded(void **state)
{
    struct mcp_world w;
    start(&w, "", NULL, false);
    long long id = start_process(&w, "sleep 1000", false);
    char *chunk = malloc(600 * 1024 + 1);
    assert_non_null(chunk);
    memset(chunk, 'x', 600 * 1024);
    chunk[600 * 1024] = '\0';
    json_t *a = write_stdin(&w, id, chunk, 0); /* 64 KiB in the pipe, the rest waits */
    assert_int_equal(session_id(a), id);
    json_decref(a);
    a = write_stdin(&w, id, chunk, 0);
    assert_true(json_is_true(json_object_get(json_object_get(a, "result"), "isError")));
    mcp_world_assert_contains(text_of(a), "not reading its input");
    json_decref(a);
    kill_process(&w, id);
    free(chunk);
    mcp_world_end(&w);
}

/* python3 -i on a terminal: print(6*7) answers 42. */
static void
test_tty_python(void **state)
{
    struct mcp_world w;
    start(&w, "", NULL, false);
    long long id = start_process(&w, "python3 -i -q", true);
    int exit = -1;
    char *out = read_until(&w, id, "print(6*7)\n", "42\r\n", &exit);
    mcp_world_assert_contains(out, "42\r\n");
    assert_int_equal(exit, -1);
    free(out);
    /* the terminal is the sandbox's own: its devpts holds that one alone,
     * none of the host's (which has one of the test's at least) */
    int host = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    assert_true(host >= 0);
    assert_int_equal(unlockpt(host), 0);
    out = read_until(&w, id,
                     "import os; print('tty=' + os.ttyname(0), 'pts=' + "
                     "','.join(sorted(os.listdir('/dev/pts'))))\n",
                     "pts=", &exit);
    mcp_world_assert_contains(out, "tty=/dev/pts/0 pts=0,ptmx\r\n");
    free(out);
    close(host);
    out = read_until(&w, id, "exit()\n", "\001never", &exit);
    assert_int_equal(exit, 0);
    free(out);
    mcp_world_end(&w);
}

/* Ctrl-C through write_stdin reaches the foreground job as SIGINT. */
static void
test_ctrl_c_stops_sleep(void **state)
{
    char mark[32];
    marker(mark, sizeof(mark), 21);
    struct mcp_world w;
    start(&w, "", NULL, false);
    char *cmd = mcp_world_fmt("sleep %s", mark);
    long long id = start_process(&w, cmd, true);
    assert_int_equal(proc_wait_sleeps(mark, true, 1, 20000), 1);
    int exit = -1;
    char *out = read_until(&w, id, "\003", "\001never", &exit);
    assert_int_equal(exit, 128 + SIGINT);
    free(out);
    assert_none_left(mark, proc_wait_sleeps(mark, false, 0, 2000));
    free(cmd);
    mcp_world_end(&w);
}

/* The rules decide every exec of a background process: a forbidden
 * program is refused there as in a shell call, and says why. */
static void
test_forbidden_in_background(void **state)
{
    struct mcp_world w;
    start(&w,
          "prefix_rule(pattern=[\"touch\"], decision=\"forbidden\", "
          "justification=\"procs-test: no touching\")\n",
          NULL, false);
    long long id = start_process(&w, "read x; touch made; echo \"after $?\"; sleep 1000", false);
    int exit = -1;
    char *out = read_until(&w, id, "go\n", "after ", &exit);
    mcp_world_assert_contains(out, "procs-test: no touching");
    assert_null(strstr(out, "after 0"));
    assert_false(mcp_world_exists(w.wd, "made"));
    free(out);
    kill_process(&w, id);
    mcp_world_end(&w);
}

/* A prompt rule hit by a background process: the question reaches the
 * client while no call is in flight, and its answer lets the program run. */
static void
test_prompt_while_idle(void **state)
{
    struct mcp_world w;
    start(&w, "prefix_rule(pattern=[\"touch\", \"asked\"], decision=\"prompt\")\n", NULL, true);
    long long id = start_process(&w, "read x; sleep 1; touch asked && echo made", false);
    /* answered with no question on the way (a question would fail it) */
    json_t *a = write_stdin(&w, id, "go\n", 0);
    session_id(a);
    json_decref(a);
    /* nothing is in flight now: the next message is the question */
    json_t *q = mcp_client_next(w.c, MCP_CLIENT_WAIT_MS);
    assert_non_null(q);
    assert_string_equal(json_string_value(json_object_get(q, "method")), "elicitation/create");
    struct mcp_answers ans = {.action = "accept", .decision = "approved"};
    mcp_world_answer(&w, q, &ans);
    json_decref(q);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(ans.last_message, "touch asked");
    int exit = -1;
    char *out = read_until(&w, id, "", "made", &exit);
    mcp_world_assert_contains(out, "made\n");
    assert_true(mcp_world_exists(w.wd, "asked"));
    free(out);
    free(ans.last_message);
    mcp_world_end(&w);
}

/* Output past the process's ring: the head and the newest output stay,
 * and the read says how much was dropped between them. */
static void
test_output_past_ring_is_marked(void **state)
{
    const char *more[] = {"--max-background", "2", "--max-background-output", "16384", NULL};
    struct mcp_world w;
    start(&w, "", more, false);
    json_t *a = exec_command(&w, "seq 1 100000", false, 30000);
    const json_t *sc = mcp_world_structured(a);
    assert_int_equal(json_integer_value(json_object_get(sc, "exit_code")), 0);
    const char *out = json_string_value(json_object_get(sc, "output"));
    /* 588895 bytes in all, 8192 kept */
    assert_int_equal(json_integer_value(json_object_get(sc, "output_dropped")), 588895 - 8192);
    mcp_world_assert_contains(out, "[execgate: 580703 bytes of output omitted]");
    assert_int_equal(strncmp(out, "1\n2\n3\n", 6), 0);
    mcp_world_assert_contains(out, "\n99999\n100000\n");
    json_decref(a);
    /* max_output_tokens narrows one result: 25 tokens, 100 bytes of the
     * 3893 that seq 1 1000 prints */
    a = mcp_world_tool(&w, "exec_command",
                       json_pack("{s:s, s:s, s:b, s:i, s:i}", "cmd", "seq 1 1000", "workdir", w.wd,
                                 "login", 0, "yield_time_ms", 30000, "max_output_tokens", 25),
                       NULL);
    sc = mcp_world_structured(a);
    out = json_string_value(json_object_get(sc, "output"));
    assert_int_equal(json_integer_value(json_object_get(sc, "output_dropped")), 3893 - 100);
    mcp_world_assert_contains(out, "[execgate: 3793 bytes of output omitted]");
    assert_int_equal(strncmp(out, "1\n2\n3\n", 6), 0);
    mcp_world_assert_contains(out, "\n999\n1000\n");
    json_decref(a);
    mcp_world_end(&w);
}

/* kill_process ends the process and all it started: it is gone, its
 * sleep too, and the list no longer has it. */
static void
test_kill_process(void **state)
{
    char mark[32];
    marker(mark, sizeof(mark), 23);
    struct mcp_world w;
    start(&w, "", NULL, false);
    char *cmd = mcp_world_fmt("sleep %s & sleep %s", mark, mark);
    long long id = start_process(&w, cmd, false);
    assert_int_equal(proc_wait_sleeps(mark, true, 2, 20000), 2);
    json_t *a = mcp_world_tool(&w, "list_processes", json_object(), NULL);
    const json_t *procs = json_object_get(mcp_world_structured(a), "processes");
    assert_int_equal(json_array_size(procs), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(procs, 0), "session_id")),
                     id);
    assert_true(json_is_true(json_object_get(json_array_get(procs, 0), "running")));
    json_decref(a);
    kill_process(&w, id);
    assert_none_left(mark, proc_wait_sleeps(mark, false, 0, 2000));
    a = mcp_world_tool(&w, "list_processes", json_object(), NULL);
    assert_int_equal(json_array_size(json_object_get(mcp_world_structured(a), "processes")), 0);
    json_decref(a);
    free(cmd);
    mcp_world_end(&w);
}

/* Processes have a cap of their own (--max-background), and do not hold
 * a --max-calls slot: with one slot, a shell call runs beside them. */
static void
test_cap_and_calls_beside(void **state)
{
    const char *more[] = {"--max-background", "1", "--max-calls", "1", NULL};
    struct mcp_world w;
    start(&w, "", more, false);
    long long id = start_process(&w, "sleep 1000", false);
    json_t *a = exec_command(&w, "echo second", false, 0);
    assert_true(json_is_true(json_object_get(json_object_get(a, "result"), "isError")));
    mcp_world_assert_contains(text_of(a), "--max-background");
    json_decref(a);
    a = mcp_world_run(&w, "echo beside", NULL, 30000);
    assert_string_equal(mcp_world_output(a), "beside\n");
    json_decref(a);
    kill_process(&w, id);
    mcp_world_end(&w);
}

/* A cancelled exec_command is not answered; its process runs on, and
 * another request may wait for it. */
static void
test_cancelled_wait(void **state)
{
    struct mcp_world w;
    start(&w, "", NULL, false);
    long long x = mcp_client_send_request(
        w.c, "tools/call",
        json_pack("{s:s, s:{s:s, s:s, s:b, s:i}}", "name", "exec_command", "arguments", "cmd",
                  "sleep 1000", "workdir", w.wd, "login", 0, "yield_time_ms", 30000));
    mcp_client_send(w.c,
                    json_pack("{s:s, s:s, s:{s:I}}", "jsonrpc", "2.0", "method",
                              "notifications/cancelled", "params", "requestId", (json_int_t)x));
    json_t *a = mcp_world_tool(&w, "list_processes", json_object(), NULL);
    const json_t *procs = json_object_get(mcp_world_structured(a), "processes");
    assert_int_equal(json_array_size(procs), 1);
    json_int_t id = json_integer_value(json_object_get(json_array_get(procs, 0), "session_id"));
    json_decref(a);
    a = mcp_world_tool(&w, "kill_process", json_pack("{s:I}", "session_id", id), NULL);
    assert_int_equal(mcp_world_exit(a), 128 + SIGKILL);
    json_decref(a);
    json_decref(mcp_client_call(w.c, "ping", NULL));
    /* had it been answered, the answer would be in before ping's */
    json_t *xid = json_integer(x);
    assert_null(mcp_client_response(w.c, xid, 0));
    json_decref(xid);
    mcp_world_end(&w);
}

/* kill_process while a write_stdin waits on the process: that one is
 * answered with what came so far, kill_process with the end. */
static void
test_kill_while_waiting(void **state)
{
    struct mcp_world w;
    start(&w, "", NULL, false);
    json_int_t id = start_process(&w, "sleep 1000", false);
    json_t *wid = json_integer(
        mcp_client_send_request(w.c, "tools/call",
                                json_pack("{s:s, s:{s:I, s:i}}", "name", "write_stdin", "arguments",
                                          "session_id", id, "yield_time_ms", 30000)));
    json_t *kid = json_integer(mcp_client_send_request(
        w.c, "tools/call",
        json_pack("{s:s, s:{s:I}}", "name", "kill_process", "arguments", "session_id", id)));
    json_t *a = mcp_client_response(w.c, wid, MCP_CLIENT_WAIT_MS);
    assert_int_equal(session_id(a), id);
    json_decref(a);
    a = mcp_client_response(w.c, kid, MCP_CLIENT_WAIT_MS);
    assert_int_equal(mcp_world_exit(a), 128 + SIGKILL);
    json_decref(a);
    json_decref(wid);
    json_decref(kid);
    mcp_world_end(&w);
}

/* The session's end (stdio EOF) ends its processes: the server exits
 * cleanly and none of them is left, on a terminal or not. */
static void
test_session_end_leaves_nothing(void **state)
{
    char mark[32];
    marker(mark, sizeof(mark), 25);
    struct mcp_world w;
    start(&w, "", NULL, false);
    char *cmd = mcp_world_fmt("sleep %s & nohup sleep %s >/dev/null 2>&1 & setsid sleep %s & "
                              "sleep %s",
                              mark, mark, mark, mark);
    json_decref(exec_command(&w, cmd, false, 0));
    json_decref(exec_command(&w, cmd, true, 0));
    assert_int_equal(proc_wait_sleeps(mark, true, 8, 20000), 8);
    mcp_world_end(&w); /* asserts exit 0 */
    assert_none_left(mark, proc_wait_sleeps(mark, false, 0, 2000));
    free(cmd);
}

/* SIGKILL of the server: its processes go too (the cgroup guard, the
 * helper's parent-death signal). */
static void
test_killed_server_leaves_nothing(void **state)
{
    char mark[32];
    marker(mark, sizeof(mark), 27);
    struct mcp_world w;
    start(&w, "", NULL, false);
    char *cmd = mcp_world_fmt("sleep %s & setsid sleep %s & sleep %s", mark, mark, mark);
    json_decref(exec_command(&w, cmd, false, 0));
    json_decref(exec_command(&w, cmd, true, 0));
    assert_int_equal(proc_wait_sleeps(mark, true, 6, 20000), 6);
    assert_int_equal(kill(mcp_client_pid(w.c), SIGKILL), 0);
    assert_none_left(mark, proc_wait_sleeps(mark, false, 0, 2000));
    mcp_world_abandon(&w);
    free(cmd);
}

/* A server a background process started is reached by a later call of
 * the same session over loopback: the session's own network namespace,
 * which its calls and processes share with the network off. */
static void
test_server_reached_by_later_call(void **state)
{
    struct mcp_world w;
    start(&w, "", NULL, false);
    long long id =
        start_process(&w, "echo served > page.txt; exec python3 -m http.server 18641", false);
    bool reached = false;
    for (int i = 0; i < 50 && !reached; i++) {
        json_t *a = mcp_world_run(&w, "curl -s -m 2 http://127.0.0.1:18641/page.txt", NULL, 30000);
        reached = strcmp(mcp_world_output(a), "served\n") == 0;
        json_decref(a);
        if (!reached)
            json_decref(write_stdin(&w, id, "", 200));
    }
    assert_true(reached);
    json_decref(
        mcp_world_tool(&w, "kill_process", json_pack("{s:I}", "session_id", (json_int_t)id), NULL));
    mcp_world_end(&w);
}

int
main(void)
{
    int rc = server_suite_begin(&server_path, &unprivileged, &user);
    if (rc != 0)
        return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tools_list),
        cmocka_unit_test(test_input_and_exit),
        cmocka_unit_test(test_unread_input_is_bounded),
        cmocka_unit_test(test_tty_python),
        cmocka_unit_test(test_ctrl_c_stops_sleep),
        cmocka_unit_test(test_forbidden_in_background),
        cmocka_unit_test(test_prompt_while_idle),
        cmocka_unit_test(test_output_past_ring_is_marked),
        cmocka_unit_test(test_kill_process),
        cmocka_unit_test(test_cap_and_calls_beside),
        cmocka_unit_test(test_cancelled_wait),
        cmocka_unit_test(test_kill_while_waiting),
        cmocka_unit_test(test_session_end_leaves_nothing),
        cmocka_unit_test(test_killed_server_leaves_nothing),
        cmocka_unit_test(test_server_reached_by_later_call),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    test_user_release(&user);
    return failed;
}
