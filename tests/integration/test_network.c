/*
 * The network proxy through the whole product: the real server, the real
 * sandbox (workspace-write, network off) with its network namespace, curl
 * and Python inside it, and test servers on the host's loopback
 * (network/servers.py: a page server and an echo server).  Proves what a
 * network_rule lets through, what it refuses and how, that a prompt rule
 * asks once per session with approved_for_session, and that a program
 * that ignores the proxy variables reaches nothing.  Without rules: the
 * session's own network namespace, its loopback working and nothing
 * outside it reachable, the same for each call of a session and another
 * for another session's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/server_suite.h"
#include "tests/support/test_user.h"
#include "tests/support/tmpdir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *server_path;
/* EXECGATE_TEST_UNPRIVILEGED=1: the server runs as a test user, the test
 * (its client) as root */
static bool unprivileged;
static struct test_user user;

/* The test servers: their ports, and the pipe whose end stops them. */
static pid_t servers_pid;
static int servers_stdin = -1;
static unsigned http_port, echo_port;

static int
servers_start(void **state)
{
    (void)state;
    const char *script = getenv("EXECGATE_TEST_NET_SERVERS");
    int in[2], out[2];
    if (!script || pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        return -1;
    servers_pid = fork();
    if (servers_pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execlp("python3", "python3", script, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    servers_stdin = in[1];
    FILE *f = fdopen(out[0], "r");
    if (!f || fscanf(f, "%u %u", &http_port, &echo_port) != 2) {
        fprintf(stderr, "the test servers did not start\n");
        return -1;
    }
    fclose(f);
    return 0;
}

static int
servers_stop(void **state)
{
    (void)state;
    if (servers_stdin >= 0)
        close(servers_stdin);
    int status;
    if (servers_pid > 0)
        waitpid(servers_pid, &status, 0);
    return 0;
}

/* The rules of the tests that ask about localhost over http. */
static const char prompt_localhost[] =
    "network_rule(host=\"localhost\", protocol=\"http\", decision=\"prompt\")\n";

static void
world_start(struct mcp_world *w, const char *rules, bool elicitation)
{
    const struct mcp_world_options o = {.server = server_path,
                                        .client_name = "network-tests",
                                        .elicitation = elicitation,
                                        .prefix = unprivileged ? user.prefix : NULL,
                                        .chown = unprivileged,
                                        .owner_uid = user.uid,
                                        .owner_gid = user.gid};
    mcp_world_start(w, rules, &o);
}

static json_t *
run(struct mcp_world *w, const char *command, struct mcp_answers *a)
{
    return mcp_world_run(w, command, a, 30000);
}

/* Runs command, asserting that its output holds want. */
static void
expect_output(struct mcp_world *w, const char *command, const char *want)
{
    json_t *a = run(w, command, NULL);
    mcp_world_assert_contains(mcp_world_output(a), want);
    json_decref(a);
}

static void
test_allowed_host_gets_the_page(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, "network_rule(host=\"localhost\", protocol=\"http\", decision=\"allow\")\n",
                false);
    char *cmd = mcp_world_fmt("curl -sS http://localhost:%u/x", http_port);
    expect_output(&w, cmd, "page x\n");
    free(cmd);
    /* Python's urllib takes the same variables. */
    cmd = mcp_world_fmt("python3 -c 'import urllib.request as u; "
                        "print(u.urlopen(\"http://localhost:%u/py\").read().decode())'",
                        http_port);
    expect_output(&w, cmd, "page py\n");
    free(cmd);
    if (w.audit) {
        char *log = tmpdir_read_file(w.audit, NULL);
        mcp_world_assert_contains(log, "\"event\":\"network\"");
        mcp_world_assert_contains(log, "\"host\":\"localhost\"");
        mcp_world_assert_contains(log, "\"decision\":\"allow\"");
        char *want = mcp_world_fmt("\"port\":%u,\"protocol\":\"http\",\"decision\":\"allow\","
                                   "\"rule\":\"allow\",\"call\":\"1001\","
                                   "\"command\":\"curl -sS http://localhost:%u/x\"",
                                   http_port, http_port);
        mcp_world_assert_contains(log, want);
        free(want);
        free(log);
    }
    mcp_world_end(&w);
}

static void
test_no_rule_is_refused_naming_the_host(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, "network_rule(host=\"example.com\", protocol=\"https\", decision=\"allow\")\n",
                false);
    char *cmd = mcp_world_fmt("curl -sS http://localhost:%u/x; echo \"rc=$?\"", http_port);
    json_t *a = run(&w, cmd, NULL);
    const char *out = mcp_world_output(a);
    mcp_world_assert_contains(out, "no network_rule names localhost");
    mcp_world_assert_contains(out, "network_rule(host=\"localhost\", protocol=\"http\"");
    assert_null(strstr(out, "page x"));
    json_decref(a);
    free(cmd);
    if (w.audit) {
        char *log = tmpdir_read_file(w.audit, NULL);
        mcp_world_assert_contains(log, "\"decision\":\"deny\"");
        mcp_world_assert_contains(log, "\"rule\":\"none\"");
        free(log);
    }
    mcp_world_end(&w);
}

/* What ignores the proxy reaches nothing: the namespace has only its own
 * loopback, where nobody listens on the test server's port. */
static void
test_ignoring_the_proxy_reaches_nothing(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, "network_rule(host=\"localhost\", protocol=\"http\", decision=\"allow\")\n",
                false);
    char *cmd =
        mcp_world_fmt("curl -sS --noproxy '*' http://127.0.0.1:%u/x; echo \"rc=$?\"", http_port);
    json_t *a = run(&w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "rc=7\n"); /* could not connect */
    assert_null(strstr(mcp_world_output(a), "page x"));
    json_decref(a);
    free(cmd);
    cmd = mcp_world_fmt(
        "python3 -c 'import socket\n"
        "for port in (%u, %u):\n"
        "    try:\n"
        "        socket.create_connection((\"127.0.0.1\", port), timeout=5); print(\"reached\")\n"
        "    except OSError as e: print(\"refused\", e.errno)\n"
        "try:\n"
        "    socket.create_connection((\"1.1.1.1\", 80), timeout=5); print(\"reached\")\n"
        "except OSError as e: print(\"unreachable\", e.errno)'",
        http_port, echo_port);
    a = run(&w, cmd, NULL);
    const char *out = mcp_world_output(a);
    assert_null(strstr(out, "reached"));
    mcp_world_assert_contains(out, "refused 111\nrefused 111\nunreachable 101\n");
    json_decref(a);
    free(cmd);
    mcp_world_end(&w);
}

/* The network namespace a call of w's session runs in ("net:[INODE]"). */
static char *
call_netns(struct mcp_world *w)
{
    json_t *a = run(w, "readlink /proc/self/ns/net", NULL);
    assert_int_equal(mcp_world_exit(a), 0);
    char *ns = strdup(mcp_world_output(a));
    assert_non_null(ns);
    ns[strcspn(ns, "\n")] = '\0';
    assert_non_null(strstr(ns, "net:["));
    json_decref(a);
    return ns;
}

/* This process's network namespace, the host's ("net:[INODE]"). */
static char *
host_netns(void)
{
    char buf[64];
    ssize_t n = readlink("/proc/self/ns/net", buf, sizeof buf - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    return strdup(buf);
}

/* A server on 127.0.0.1 and a client, in one call: both in the
 * namespace's loopback. */
static const char loopback_pair[] =
    "python3 -c 'import socket, threading\n"
    "s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(1)\n"
    "def serve():\n"
    "    c, _ = s.accept(); c.sendall(b\"hello over loopback\\n\"); c.close()\n"
    "threading.Thread(target=serve).start()\n"
    "c = socket.create_connection(s.getsockname(), timeout=10)\n"
    "print(c.recv(100).decode(), end=\"\")'";

/*
 * With the network off and no network rule (so no proxy), a command may
 * still listen on 127.0.0.1 and reach itself there, in its session's own
 * namespace; nothing outside it is reachable: neither a listener on the
 * host's loopback nor an outside address.
 */
static void
test_localhost_with_the_network_off(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, "", false);
    json_t *a = run(&w, loopback_pair, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "hello over loopback\n");
    assert_int_equal(mcp_world_exit(a), 0);
    json_decref(a);
    char *cmd = mcp_world_fmt(
        "python3 -c 'import socket\n"
        "try:\n"
        "    socket.create_connection((\"127.0.0.1\", %u), timeout=5); print(\"reached\")\n"
        "except OSError as e: print(\"refused\", e.errno)\n"
        "try:\n"
        "    socket.create_connection((\"1.1.1.1\", 80), timeout=5); print(\"reached\")\n"
        "except OSError as e: print(\"unreachable\", e.errno)'",
        http_port);
    a = run(&w, cmd, NULL);
    const char *out = mcp_world_output(a);
    assert_null(strstr(out, "reached"));
    mcp_world_assert_contains(out, "refused 111\nunreachable 101\n");
    json_decref(a);
    free(cmd);
    mcp_world_end(&w);
}

/*
 * A session's calls share one namespace, not the host's; another
 * session's is another.  With network rules the proxy's listener is made
 * in that same namespace, and a command there still reaches its own
 * loopback.
 */
static void
test_one_namespace_per_session(void **state)
{
    (void)state;
    char *host = host_netns();
    struct mcp_world w, other;
    world_start(&w, "", false);
    char *first = call_netns(&w);
    char *second = call_netns(&w);
    assert_string_equal(first, second);
    assert_string_not_equal(first, host);
    world_start(&other, prompt_localhost, false);
    char *theirs = call_netns(&other);
    assert_string_not_equal(theirs, first);
    assert_string_not_equal(theirs, host);
    char *again = call_netns(&other);
    assert_string_equal(theirs, again);
    json_t *a = run(&other, loopback_pair, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "hello over loopback\n");
    json_decref(a);
    free(first);
    free(second);
    free(theirs);
    free(again);
    free(host);
    mcp_world_end(&other);
    mcp_world_end(&w);
}

/*
 * Attacks on the session's namespace from a call: taking its loopback
 * down (which would cut the session's later calls off from each other),
 * and a vsock socket (which no network namespace holds: it would reach
 * the hypervisor's host).  Both refused; the next call still has its
 * loopback.
 */
static void
test_session_network_cannot_be_changed_or_left(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, "", false);
    json_t *a =
        run(&w,
            "python3 -c 'import socket, fcntl, struct\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "try:\n"
            "    fcntl.ioctl(s, 0x8914, struct.pack(\"16sH14x\", b\"lo\", 0)); "
            "print(\"lo taken down\")\n"
            "except OSError as e: print(\"ifdown\", e.errno)\n"
            "try:\n"
            "    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); print(\"vsock made\")\n"
            "except OSError as e: print(\"vsock\", e.errno)'",
            NULL);
    const char *out = mcp_world_output(a);
    assert_null(strstr(out, "lo taken down"));
    assert_null(strstr(out, "vsock made"));
    mcp_world_assert_contains(out, "ifdown 1\nvsock 97\n");
    json_decref(a);
    a = run(&w, loopback_pair, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "hello over loopback\n");
    json_decref(a);
    mcp_world_end(&w);
}

/*
 * The session's calls share one namespace, but each has a proxy listener
 * of its own, by which the proxy tells whose a connection is: a call that
 * connects to another running call's listener is refused (the connection
 * would be decided, asked about and recorded as the other call's), while
 * its own proxy serves it.
 */
static void
test_another_calls_proxy_is_refused(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, "network_rule(host=\"localhost\", protocol=\"http\", decision=\"allow\")\n",
                false);
    const char *hold = "echo \"${HTTP_PROXY##*:}\" > port.tmp && mv port.tmp port; "
                       "while [ ! -e done ]; do sleep 0.02; done; echo held";
    long long id =
        mcp_client_send_request(w.c, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                          "command", hold, "workdir", w.wd, "login", 0));
    bool ready = false;
    for (int i = 0; i < 3000 && !(ready = mcp_world_exists(w.wd, "port")); i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_true(ready);
    char *portfile = tmpdir_path(w.wd, "port");
    char *port = tmpdir_read_file(portfile, NULL);
    assert_non_null(port);
    port[strcspn(port, "\n")] = '\0';
    char *cmd = mcp_world_fmt("curl -sS -x http://127.0.0.1:%s http://localhost:%u/x; "
                              "echo \"rc=$?\"; curl -sS http://localhost:%u/y",
                              port, http_port, http_port);
    json_t *a = run(&w, cmd, NULL);
    const char *out = mcp_world_output(a);
    assert_null(strstr(out, "page x"));
    mcp_world_assert_contains(out, "another call of this session");
    mcp_world_assert_contains(out, "rc=7\n");
    mcp_world_assert_contains(out, "page y");
    json_decref(a);
    char *done = tmpdir_path(w.wd, "done");
    tmpdir_write_file(done, "", 0644);
    json_t *idj = json_integer(id);
    a = mcp_client_response(w.c, idj, 30000);
    json_decref(idj);
    mcp_world_assert_contains(mcp_world_output(a), "held\n");
    json_decref(a);
    free(done);
    free(cmd);
    free(port);
    free(portfile);
    mcp_world_end(&w);
}

/* A CONNECT tunnel (the proxy from HTTPS_PROXY) carries bytes both ways,
 * and the half-close; to a host without a rule it is refused. */
static void
test_connect_tunnel(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w,
                "network_rule(host=\"127.0.0.1\", protocol=\"https\", decision=\"allow\")\n"
                "network_rule(host=\"localhost\", protocol=\"https\", decision=\"deny\", "
                "justification=\"use the address\")\n",
                false);
    char *cmd = mcp_world_fmt(
        "python3 -c 'import os, socket\n"
        "port = int(os.environ[\"HTTPS_PROXY\"].rsplit(\":\", 1)[1])\n"
        "for host in (\"127.0.0.1\", \"localhost\"):\n"
        "    s = socket.create_connection((\"127.0.0.1\", port))\n"
        "    s.sendall(b\"CONNECT %%s:%u HTTP/1.1\\r\\n\\r\\nping\" %% host.encode())\n"
        "    s.shutdown(socket.SHUT_WR)\n"
        "    got = b\"\"\n"
        "    while True:\n"
        "        b = s.recv(65536)\n"
        "        if not b: break\n"
        "        got += b\n"
        "    print(host, repr(got))'",
        echo_port);
    json_t *a = run(&w, cmd, NULL);
    const char *out = mcp_world_output(a);
    mcp_world_assert_contains(out,
                              "127.0.0.1 b'HTTP/1.1 200 Connection established\\r\\n\\r\\nping'");
    mcp_world_assert_contains(out, "localhost b'HTTP/1.1 403 Forbidden");
    mcp_world_assert_contains(out, "use the address");
    json_decref(a);
    free(cmd);
    mcp_world_end(&w);
}

static void
test_socks5(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w,
                "network_rule(host=\"localhost\", protocol=\"socks5_tcp\", decision=\"allow\")\n",
                false);
    char *cmd = mcp_world_fmt("curl -sS --socks5-hostname \"${ALL_PROXY#socks5h://}\" "
                              "http://localhost:%u/s; "
                              "curl -sS --socks5-hostname \"${ALL_PROXY#socks5h://}\" "
                              "http://127.0.0.1:%u/t; echo \"rc=$?\"",
                              http_port, http_port);
    json_t *a = run(&w, cmd, NULL);
    const char *out = mcp_world_output(a);
    mcp_world_assert_contains(out, "page s\n");
    assert_null(strstr(out, "page t"));
    mcp_world_assert_contains(out, "rc=97\n"); /* curl: the SOCKS proxy refused */
    json_decref(a);
    free(cmd);
    mcp_world_end(&w);
}

/* A prompt rule asks; approved_for_session holds for that host for the
 * rest of the session (later connections and later calls). */
static void
test_prompt_once_per_session(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, prompt_localhost, true);
    struct mcp_answers ans = {.action = "accept", .decision = "approved_for_session"};
    char *cmd = mcp_world_fmt("curl -sS http://localhost:%u/a; curl -sS http://localhost:%u/b",
                              http_port, http_port);
    json_t *a = run(&w, cmd, &ans);
    mcp_world_assert_contains(mcp_world_output(a), "page a\npage b\n");
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(ans.last_message, "Allow network access to `localhost:");
    mcp_world_assert_contains(ans.last_message, "(http) for `curl");
    json_decref(a);
    a = run(&w, cmd, &ans);
    mcp_world_assert_contains(mcp_world_output(a), "page a\npage b\n");
    assert_int_equal(ans.asked, 1);
    json_decref(a);
    free(ans.last_message);
    free(cmd);
    mcp_world_end(&w);
}

/* A refusal by the person: the connection gets the refusal, and the
 * client's log a warning record of it. */
static void
test_prompt_denied(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, prompt_localhost, true);
    json_t *r = mcp_client_call(w.c, "logging/setLevel", json_pack("{s:s}", "level", "warning"));
    assert_non_null(json_object_get(r, "result"));
    json_decref(r);
    struct mcp_answers ans = {.action = "accept", .decision = "denied", .logs = json_array()};
    char *cmd = mcp_world_fmt("curl -sS http://localhost:%u/a", http_port);
    json_t *a = run(&w, cmd, &ans);
    mcp_world_assert_contains(mcp_world_output(a), "was declined");
    assert_int_equal(ans.asked, 1);
    /* the refusal's record goes to the log of the client whose call it is */
    const json_t *rec = json_array_get(ans.logs, 0);
    const json_t *data = json_object_get(rec, "data");
    assert_string_equal(json_string_value(json_object_get(rec, "level")), "warning");
    assert_string_equal(json_string_value(json_object_get(data, "event")), "network");
    assert_string_equal(json_string_value(json_object_get(data, "decision")), "deny");
    /* the call's request id: logging/setLevel was request 1001 */
    assert_int_equal(json_integer_value(json_object_get(data, "requestId")), 1002);
    json_decref(ans.logs);
    json_decref(a);
    free(ans.last_message);
    free(cmd);
    mcp_world_end(&w);
}

/* `abort` to a question about a connection stops the whole call, as it
 * does for an exec's question: the connection is refused, nothing after
 * it runs, and the result says who stopped it and why.  `cancel` refuses
 * the connection and the command goes on, as for an exec. */
static void
test_prompt_abort_stops_the_call(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, prompt_localhost, true);
    struct mcp_answers ans = {.action = "accept", .decision = "abort", .reason = "not that host"};
    char *cmd = mcp_world_fmt("curl -sS http://localhost:%u/a; echo after > after.txt; sleep 20",
                              http_port);
    json_t *a = run(&w, cmd, &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(
        json_string_value(json_object_get(mcp_world_structured(a), "aborted")),
        "User aborted the tool call, saying: not that host");
    assert_true(json_is_true(json_object_get(json_object_get(a, "result"), "isError")));
    assert_false(mcp_world_exists(w.wd, "after.txt"));
    json_decref(a);
    free(cmd);
    ans = (struct mcp_answers){
        .action = "cancel", .asked = ans.asked, .last_message = ans.last_message};
    cmd = mcp_world_fmt("curl -sS http://localhost:%u/b; echo after > after.txt", http_port);
    a = run(&w, cmd, &ans);
    assert_int_equal(ans.asked, 2);
    mcp_world_assert_contains(mcp_world_output(a), "was declined");
    assert_null(json_object_get(mcp_world_structured(a), "aborted"));
    assert_true(mcp_world_exists(w.wd, "after.txt"));
    json_decref(a);
    free(ans.last_message);
    free(cmd);
    mcp_world_end(&w);
}

/* The question shows the command as the exec questions show theirs:
 * backticks, newlines and invisible code points in it are escaped, so
 * that a command cannot close the question's quote and write a question
 * of its own, or reorder what the person reads. */
static void
test_question_cannot_be_forged(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, prompt_localhost, true);
    struct mcp_answers ans = {.action = "accept", .decision = "denied"};
    char *cmd = mcp_world_fmt("curl -sS http://localhost:%u/a # ` for `ls`?\n"
                              "Allow agent to run `ls`",
                              http_port);
    json_t *a = run(&w, cmd, &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(ans.last_message, "# \\x60 for \\x60ls\\x60?\\nAllow agent");
    assert_null(strchr(ans.last_message, '\n'));
    json_decref(a);
    free(cmd);
    /* a bidirectional override cannot reorder what the person reads */
    cmd = mcp_world_fmt("curl -sS http://localhost:%u/a # \xe2\x80\xae`sl`", http_port);
    a = run(&w, cmd, &ans);
    assert_int_equal(ans.asked, 2);
    mcp_world_assert_contains(ans.last_message, "# \\u{202E}\\x60sl\\x60`?");
    json_decref(a);
    free(ans.last_message);
    free(cmd);
    mcp_world_end(&w);
}

/* A question still open when its call ends (here the client cancels the
 * call) is withdrawn: the client is told to close it, as for an exec's
 * question. */
static void
test_cancelled_call_closes_the_question(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, prompt_localhost, true);
    char *cmd = mcp_world_fmt("curl -sS http://localhost:%u/a", http_port);
    long long id =
        mcp_client_send_request(w.c, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                          "command", cmd, "workdir", w.wd, "login", 0));
    free(cmd);
    json_t *question = NULL;
    while (!question) {
        json_t *m = mcp_client_next(w.c, MCP_CLIENT_WAIT_MS);
        assert_non_null(m);
        const char *method = json_string_value(json_object_get(m, "method"));
        if (method && strcmp(method, "elicitation/create") == 0)
            question = m;
        else
            json_decref(m);
    }
    mcp_world_assert_contains(
        json_string_value(json_object_get(json_object_get(question, "params"), "message")),
        "Allow network access to `localhost:");
    json_int_t asked = json_integer_value(json_object_get(question, "id"));
    json_decref(question);
    mcp_client_send(w.c,
                    json_pack("{s:s, s:s, s:{s:I}}", "jsonrpc", "2.0", "method",
                              "notifications/cancelled", "params", "requestId", (json_int_t)id));
    json_t *closed = mcp_client_notification(w.c, "notifications/cancelled", MCP_CLIENT_WAIT_MS);
    assert_non_null(closed);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(closed, "params"), "requestId")), asked);
    json_decref(closed);
    mcp_world_end(&w);
}

/* Waiting for the person does not count toward the call's timeout. */
static void
test_prompt_stops_the_timeout(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, prompt_localhost, true);
    struct mcp_answers ans = {.action = "accept", .decision = "approved", .delay_ms = 2500};
    char *cmd = mcp_world_fmt("curl -sS http://localhost:%u/late", http_port);
    json_t *a = mcp_world_run(&w, cmd, &ans, 1500);
    assert_int_equal(ans.asked, 1);
    assert_false(json_is_true(json_object_get(mcp_world_structured(a), "timed_out")));
    mcp_world_assert_contains(mcp_world_output(a), "page late\n");
    json_decref(a);
    free(ans.last_message);
    free(cmd);
    mcp_world_end(&w);
}

/* A client that cannot be asked: a prompt rule refuses, saying why. */
static void
test_prompt_without_elicitation(void **state)
{
    (void)state;
    struct mcp_world w;
    world_start(&w, prompt_localhost, false);
    char *cmd = mcp_world_fmt("curl -sS http://localhost:%u/a", http_port);
    expect_output(&w, cmd, "the MCP client could not be asked");
    free(cmd);
    mcp_world_end(&w);
}

int
main(void)
{
    int rc = server_suite_begin(&server_path, &unprivileged, &user);
    if (rc != 0)
        return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed_host_gets_the_page),
        cmocka_unit_test(test_no_rule_is_refused_naming_the_host),
        cmocka_unit_test(test_ignoring_the_proxy_reaches_nothing),
        cmocka_unit_test(test_localhost_with_the_network_off),
        cmocka_unit_test(test_one_namespace_per_session),
        cmocka_unit_test(test_session_network_cannot_be_changed_or_left),
        cmocka_unit_test(test_another_calls_proxy_is_refused),
        cmocka_unit_test(test_connect_tunnel),
        cmocka_unit_test(test_socks5),
        cmocka_unit_test(test_prompt_once_per_session),
        cmocka_unit_test(test_prompt_denied),
        cmocka_unit_test(test_prompt_abort_stops_the_call),
        cmocka_unit_test(test_question_cannot_be_forged),
        cmocka_unit_test(test_cancelled_call_closes_the_question),
        cmocka_unit_test(test_prompt_without_elicitation),
        cmocka_unit_test(test_prompt_stops_the_timeout),
    };
    int failed = cmocka_run_group_tests(tests, servers_start, servers_stop);
    if (unprivileged)
        test_user_release(&user);
    return failed;
}
