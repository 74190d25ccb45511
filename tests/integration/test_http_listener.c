/*
 * The HTTP listeners (--listen) against hostile local clients, through the
 * real server: a command the server runs cannot be a client of its Unix
 * socket; with --token-file the Unix socket asks for the token too; the
 * network proxy never reaches the server's own port, whatever the rules; a
 * request's headers must come within --header-timeout-ms, and connections
 * that have not authenticated cannot crowd out those that have; a client
 * that stops reading (over HTTP and stdio) pins no memory, one that takes
 * nothing for --write-timeout-ms is disconnected, and a dead client's call
 * ends within --session-idle-ms.  The server runs under ASan/LSan and
 * must exit 0 on SIGTERM.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/http_session.h"
#include "tests/support/mcp_world.h"
#include "tests/support/server_suite.h"
#include "tests/support/test_user.h"
#include "tests/support/tmpdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Safety limit for one wait (a broken server must not hang the suite);
 * never what a test asserts. */
#define WAIT_MS 60000

static const char *server_path;
/* EXECGATE_TEST_UNPRIVILEGED=1 (started as root): the server runs as the
 * test user, the test (its clients) as root */
static bool unprivileged;
static struct test_user user;

/* path becomes the test user's when the server runs as it. */
static void
own(const char *path)
{
    if (unprivileged)
        assert_int_equal(lchown(path, user.uid, user.gid), 0);
}

/* A directory for the commands' workdir. */
static char *
new_workdir(void)
{
    char *wd = tmpdir_new("http-listener-wd");
    own(wd);
    return wd;
}

struct srv {
    pid_t pid;
    char *dir, *log, *sock, *token;
    unsigned port; /* 0: no TCP listener */
};

static char *
read_all(const char *path)
{
    size_t len = 0;
    return tmpdir_read_file(path, &len);
}

/* Starts the server with a Unix listener, a TCP one when tcp, a token
 * file when token (TCP needs one), rules text, and extra arguments
 * (NULL-terminated, may be NULL); waits until it listens. */
static void
srv_start(struct srv *s, bool tcp, bool token, const char *rules, const char *const *extra)
{
    memset(s, 0, sizeof(*s));
    s->dir = tmpdir_new("http-listener");
    tmpdir_make_dir(s->dir, "rules");
    char *rules_dir = tmpdir_path(s->dir, "rules");
    char *rules_file = tmpdir_path(rules_dir, "test.rules");
    tmpdir_write_file(rules_file, rules ? rules : "", 0644);
    own(s->dir);
    own(rules_dir);
    own(rules_file);
    free(rules_file);
    s->log = tmpdir_path(s->dir, "server.log");
    s->sock = tmpdir_path(s->dir, "mcp.sock");
    char *tokfile = tmpdir_path(s->dir, "token");
    char *unix_arg = mcp_world_fmt("unix:%s", s->sock);
    const char *argv[40];
    size_t n = 0;
    for (size_t i = 0; unprivileged && user.prefix[i]; i++)
        argv[n++] = user.prefix[i];
    argv[n++] = server_path;
    argv[n++] = "--rules";
    argv[n++] = rules_dir;
    argv[n++] = "--listen";
    argv[n++] = unix_arg;
    if (tcp) {
        argv[n++] = "--listen";
        argv[n++] = "127.0.0.1:0";
    }
    if (token) {
        argv[n++] = "--token-file";
        argv[n++] = tokfile;
    }
    for (size_t i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        int log = open(s->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (null < 0 || log < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(log, 2) < 0)
            _exit(127);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    /* its log says where it listens */
    for (int waited = 0;; waited += 10) {
        char *text = read_all(s->log);
        const char *tcp_line = text ? strstr(text, "listening on http://127.0.0.1:") : NULL;
        bool unix_ready = text && strstr(text, "listening on unix:");
        if (unix_ready && (!tcp || tcp_line)) {
            if (tcp)
                s->port = (unsigned)strtoul(tcp_line + strlen("listening on http://127.0.0.1:"),
                                            NULL, 10);
            free(text);
            break;
        }
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid)
            fail_msg("the server exited before it listened: %s", text ? text : "");
        free(text);
        if (waited > WAIT_MS)
            fail_msg("the server did not listen");
        usleep(10000);
    }
    if (token) {
        s->token = read_all(tokfile);
        assert_non_null(s->token);
        s->token[strcspn(s->token, "\n")] = '\0';
    }
    free(tokfile);
    free(unix_arg);
    free(rules_dir);
}

/* SIGTERM; the server must exit 0 (no leak). */
static void
srv_stop(struct srv *s)
{
    kill(s->pid, SIGTERM);
    int status = 0;
    assert_int_equal(waitpid(s->pid, &status, 0), s->pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char *log = read_all(s->log);
        fail_msg("the server's end: status %d; its log:\n%s", status, log ? log : "");
    }
    tmpdir_remove(s->dir);
    free(s->dir);
    free(s->log);
    free(s->sock);
    free(s->token);
}

/* The status of an initialize posted on fd with token (NULL: none);
 * fd is closed. */
static int
initialize_status(int fd, const char *token)
{
    char *r = http_session_post(fd, token, NULL, http_session_initialize_body);
    int status = http_session_status(r);
    free(r);
    close(fd);
    return status;
}

/* A shell call (login false) in cwd; its output. */
static char *
sess_shell(struct http_session *se, const char *command, const char *cwd)
{
    const struct http_session_call call = {.command = command, .workdir = cwd};
    return http_session_call(se, &call);
}

/* A client in the call: Python posting an initialize on the Unix socket
 * at path, printing the status and the body. */
static char *
client_in_call(const char *path)
{
    return mcp_world_fmt(
        "python3 -c 'import socket,sys\n"
        "s=socket.socket(socket.AF_UNIX)\n"
        "try:\n s.connect(sys.argv[1])\n"
        "except OSError as e:\n print(\"connect failed\", e.errno); sys.exit(0)\n"
        "b=sys.argv[2].encode()\n"
        "s.sendall(b\"POST /mcp HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\n"
        "Accept: application/json, text/event-stream\\r\\nContent-Length: %%d\\r\\n\\r\\n\" %% "
        "len(b) + b)\n"
        "r=b\"\"\n"
        "while True:\n c=s.recv(65536)\n if not c: break\n r+=c\n"
        " if b\"\\r\\n\\r\\n\" in r and len(r.split(b\"\\r\\n\\r\\n\",1)[1])>=int("
        "[l.split(b\":\")[1] for l in r.split(b\"\\r\\n\") if l.lower().startswith("
        "b\"content-length:\")][0]): break\n"
        "print(r.decode(errors=\"replace\"))' %s '%s'",
        path, http_session_initialize_body);
}

static char *
policy_json(const char *type)
{
    if (strcmp(type, "workspace-write") == 0)
        return strdup("{\"type\":\"workspace-write\",\"network_access\":false}");
    return mcp_world_fmt("{\"type\":\"%s\"}", type);
}

/* A session to s over TCP with its token, under a policy of type, in a
 * workdir of its own (*wd, for tcp_session_end). */
static void
tcp_session(struct http_session *se, const struct srv *s, const char *type, char **wd)
{
    *wd = new_workdir();
    char *policy = policy_json(type);
    http_session_open(se, http_session_connect_tcp(s->port), s->token, policy, *wd);
    free(policy);
}

/* Ends the session, its workdir and the server (which must exit 0). */
static void
tcp_session_end(struct http_session *se, char *wd, struct srv *s)
{
    http_session_close(se);
    tmpdir_remove(wd);
    free(wd);
    srv_stop(s);
}

/*
 * A command of the server's own, with no sandbox at all
 * (danger-full-access) and in a workspace-write sandbox, connects to the
 * server's Unix socket and asks for a session: refused, and told why.
 */
static void
test_unix_refuses_own_call(void **state)
{
    struct srv s;
    srv_start(&s, false, false, NULL, NULL);
    char *wd = new_workdir();
    const char *types[] = {"danger-full-access", "workspace-write"};
    for (size_t i = 0; i < 2; i++) {
        struct http_session se;
        char *policy = policy_json(types[i]);
        http_session_open(&se, http_session_connect_unix(s.sock), NULL, policy, wd);
        char *cmd = client_in_call(s.sock);
        char *out = sess_shell(&se, cmd, wd);
        if (strstr(out, "HTTP/1.1 200"))
            fail_msg("%s: a command of the server's own got a session: %s", types[i], out);
        /* without a sandbox nothing stops the connect: the listener does */
        if (i == 0) {
            mcp_world_assert_contains(out, "HTTP/1.1 403");
            mcp_world_assert_contains(out, "runs in one of this server's calls");
        }
        /* the session that ran it goes on */
        assert_true(http_session_ping(&se));
        free(out);
        free(cmd);
        free(policy);
        http_session_close(&se);
    }
    /* a client outside the calls is served */
    assert_int_equal(initialize_status(http_session_connect_unix(s.sock), NULL), 200);
    tmpdir_remove(wd);
    free(wd);
    srv_stop(&s);
}

/* With --token-file the Unix socket asks for the token as TCP does. */
static void
test_unix_token(void **state)
{
    struct srv s;
    srv_start(&s, true, true, NULL, NULL);
    assert_int_equal(initialize_status(http_session_connect_tcp(s.port), NULL), 401);
    int fd = http_session_connect_unix(s.sock);
    char *r = http_session_post(fd, NULL, NULL, http_session_initialize_body);
    assert_int_equal(http_session_status(r), 401);
    mcp_world_assert_contains(r, "bearer token");
    free(r);
    close(fd);
    assert_int_equal(
        initialize_status(http_session_connect_unix(s.sock), "0123456789abcdef0123456789abcdef"),
        401);
    assert_int_equal(initialize_status(http_session_connect_unix(s.sock), s.token), 200);
    srv_stop(&s);
}

/*
 * Rules that allow every loopback name do not open the server's own
 * port to the proxy: localhost, 127.0.0.1, another 127.x and ::1 are all
 * refused with a reason, and never reach the listener (its 401).
 */
/* Whether out (curl -i's) holds the listener's answer: its 401 status
 * line or its bearer-token challenge.  A bare "401" would also match the
 * refusal that names a port such as 40127. */
static bool
reached_listener(const char *out)
{
    return strstr(out, "HTTP/1.1 401") || strstr(out, "bearer token");
}

static void
test_proxy_refuses_own_port(void **state)
{
    struct srv s;
    srv_start(&s, true, true,
              "network_rule(host=\"localhost\", protocol=\"http\", decision=\"allow\")\n"
              "network_rule(host=\"127.0.0.1\", protocol=\"http\", decision=\"allow\")\n"
              "network_rule(host=\"127.0.0.2\", protocol=\"http\", decision=\"allow\")\n"
              "network_rule(host=\"::1\", protocol=\"http\", decision=\"allow\")\n"
              "network_rule(host=\"localhost\", protocol=\"https\", decision=\"allow\")\n",
              NULL);
    char *wd;
    struct http_session se;
    tcp_session(&se, &s, "workspace-write", &wd);
    const char *hosts[] = {"localhost", "127.0.0.1", "127.0.0.2", "[::1]"};
    for (size_t i = 0; i < 4; i++) {
        char *cmd = mcp_world_fmt("curl -sS -i http://%s:%u/mcp 2>&1; true", hosts[i], s.port);
        char *out = sess_shell(&se, cmd, wd);
        if (reached_listener(out))
            fail_msg("the proxy reached the server's own listener at %s: %s", hosts[i], out);
        mcp_world_assert_contains(out, "execgate listens there");
        free(out);
        free(cmd);
    }
    /* a CONNECT tunnel to it too */
    char *cmd = mcp_world_fmt("curl -sS -p -i http://localhost:%u/mcp 2>&1; true", s.port);
    char *out = sess_shell(&se, cmd, wd);
    if (reached_listener(out))
        fail_msg("a tunnel reached the server's own listener: %s", out);
    free(out);
    free(cmd);
    tcp_session_end(&se, wd, &s);
}

/*
 * A connection that sends half a request is closed once
 * --header-timeout-ms has passed, and an authenticated client's idle
 * connection, older than that, still works.
 */
static void
test_header_deadline(void **state)
{
    struct srv s;
    /* short, but long enough for the session's own first request on a
     * busy machine (it is not authenticated until then) */
    const char *extra[] = {"--header-timeout-ms", "2000", NULL};
    srv_start(&s, true, true, NULL, extra);
    char *wd;
    struct http_session se;
    tcp_session(&se, &s, "read-only", &wd);
    int slow[2];
    slow[0] = http_session_connect_tcp(s.port);
    slow[1] = http_session_connect_unix(s.sock);
    for (int i = 0; i < 2; i++)
        http_session_send_all(slow[i], "POST /mcp HTTP/1.1\r\nHost: localhost\r\n");
    for (int i = 0; i < 2; i++) {
        /* the server's end comes (the read is bounded by the safety limit
         * only: a server that keeps it open fails the test) */
        char *r = http_session_read_response(slow[i]);
        assert_int_equal(http_session_status(r), 408);
        mcp_world_assert_contains(r, "--header-timeout-ms");
        free(r);
        close(slow[i]);
    }
    assert_true(http_session_ping(&se));
    tcp_session_end(&se, wd, &s);
}

/*
 * Many connections from one user that never authenticate (more than the
 * server takes at once) lock nobody out: a client with the token still
 * gets a session, on the TCP port and the Unix socket, and an
 * authenticated connection made before them still works.
 */
static void
test_unauthenticated_flood(void **state)
{
    struct srv s;
    srv_start(&s, true, true, NULL, NULL);
    char *wd;
    struct http_session se;
    tcp_session(&se, &s, "read-only", &wd);
    enum { FLOOD = 600 };
    static int flood[FLOOD];
    for (int i = 0; i < FLOOD; i++)
        flood[i] = i % 2 ? http_session_connect_tcp(s.port) : http_session_connect_unix(s.sock);
    int fd = http_session_connect_tcp(s.port);
    char *r = http_session_post(fd, s.token, NULL, http_session_initialize_body);
    if (http_session_status(r) != 200)
        fail_msg("a client with the token was locked out: [%s]", r);
    free(r);
    close(fd);
    assert_int_equal(initialize_status(http_session_connect_unix(s.sock), s.token), 200);
    assert_true(http_session_ping(&se));
    for (int i = 0; i < FLOOD; i++)
        close(flood[i]);
    tcp_session_end(&se, wd, &s);
}

/* The server's resident memory in KiB (VmRSS). */
static long
rss_kib(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    char *text = read_all(path);
    const char *p = text ? strstr(text, "\nVmRSS:") : NULL;
    long kib = p ? strtol(p + strlen("\nVmRSS:"), NULL, 10) : -1;
    free(text);
    return kib;
}

/* How many times needle occurs in the file at path. */
static unsigned
count_in_file(const char *path, const char *needle)
{
    char *text = read_all(path);
    unsigned n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    free(text);
    return n;
}

/* A tools/call request (login false) as JSON text, with a progress token
 * when progress. */
static char *
call_body(long long id, const char *command, const char *cwd, long long timeout_ms, bool progress)
{
    const struct http_session_call call = {
        .command = command, .workdir = cwd, .timeout_ms = timeout_ms, .progress = progress};
    return http_session_call_body(id, &call);
}

/* What prints a MiB of control bytes: each escapes to six bytes or more
 * in the answer. */
#define MIB_OF_CONTROL_BYTES "head -c 1048576 /dev/zero | tr '\\000' '\\001'"
#define STUCK_CALLS          16
/* the bound asked of the server against a client that reads nothing */
#define STUCK_RSS_HTTP_KIB  (150L * 1024)
#define STUCK_RSS_STDIO_KIB (100L * 1024)

/*
 * A client that stops reading pins no memory: 16 calls of one session,
 * each printing a MiB of control bytes, posted and never read, keep the
 * server under 150 MB resident while they run and after, and another
 * session's calls go on meanwhile.
 */
static void
test_stuck_reader(void **state)
{
    struct srv s;
    const char *extra[] = {"--log-level", "debug", NULL};
    srv_start(&s, true, true, NULL, extra);
    char *wd = new_workdir();
    char *policy = policy_json("read-only");
    struct http_session stuck, other;
    http_session_open(&stuck, http_session_connect_tcp(s.port), s.token, policy, wd);
    http_session_open(&other, http_session_connect_tcp(s.port), s.token, policy, wd);
    int fds[STUCK_CALLS];
    for (int i = 0; i < STUCK_CALLS; i++) {
        fds[i] = http_session_connect_tcp(s.port);
        /* a small receive buffer: the kernel takes little of it either */
        int small = 4096;
        setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
        char *body = call_body(100 + i, MIB_OF_CONTROL_BYTES, wd, 120000, false);
        http_session_post_send(fds[i], s.token, stuck.sid, body);
        free(body);
    }
    long peak = 0;
    for (int waited = 0; count_in_file(s.log, "call: exit ") < STUCK_CALLS; waited += 50) {
        long kib = rss_kib(s.pid);
        peak = kib > peak ? kib : peak;
        if (waited > 4 * WAIT_MS)
            fail_msg("the %d calls did not end within the safety limit", STUCK_CALLS);
        usleep(50000);
    }
    /* the other session is served while the stuck one holds its answers */
    char *out = sess_shell(&other, "echo still here", wd);
    assert_string_equal(out, "still here\n");
    free(out);
    for (int i = 0; i < 20; i++) {
        long kib = rss_kib(s.pid);
        peak = kib > peak ? kib : peak;
        usleep(50000);
    }
    print_message("peak resident memory with a stuck reader: %ld KiB\n", peak);
    if (peak >= STUCK_RSS_HTTP_KIB)
        fail_msg("the server grew to %ld KiB with a client that reads nothing", peak);
    assert_true(http_session_ping(&other));
    for (int i = 0; i < STUCK_CALLS; i++)
        close(fds[i]);
    free(policy);
    http_session_close(&stuck);
    http_session_close(&other);
    tmpdir_remove(wd);
    free(wd);
    srv_stop(&s);
}

/*
 * The same over stdio: a client that writes 16 such calls and never reads
 * its answers keeps the server under 100 MB.
 */
static void
test_stuck_reader_stdio(void **state)
{
    char *dir = tmpdir_new("http-listener-stdio");
    tmpdir_make_dir(dir, "rules");
    char *rules_dir = tmpdir_path(dir, "rules");
    char *log = tmpdir_path(dir, "server.log");
    own(dir);
    own(rules_dir);
    char *wd = new_workdir();
    int in[2], out[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    const char *argv[16];
    size_t n = 0;
    for (size_t i = 0; unprivileged && user.prefix[i]; i++)
        argv[n++] = user.prefix[i];
    argv[n++] = server_path;
    argv[n++] = "--rules";
    argv[n++] = rules_dir;
    argv[n++] = "--log-level";
    argv[n++] = "debug";
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(fd, 2) < 0)
            _exit(127);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                        "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
                        "\"name\":\"stuck\",\"version\":\"1\"}}}\n"
                        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    assert_int_equal(write(in[1], init, strlen(init)), (ssize_t)strlen(init));
    for (int i = 0; i < STUCK_CALLS; i++) {
        char *body = call_body(100 + i, MIB_OF_CONTROL_BYTES, wd, 120000, false);
        char *line = mcp_world_fmt("%s\n", body);
        assert_int_equal(write(in[1], line, strlen(line)), (ssize_t)strlen(line));
        free(line);
        free(body);
    }
    long peak = 0;
    for (int waited = 0; count_in_file(log, "call: exit ") < STUCK_CALLS; waited += 50) {
        long kib = rss_kib(pid);
        peak = kib > peak ? kib : peak;
        if (waited > 4 * WAIT_MS)
            fail_msg("the %d calls did not end within the safety limit", STUCK_CALLS);
        usleep(50000);
    }
    for (int i = 0; i < 20; i++) {
        long kib = rss_kib(pid);
        peak = kib > peak ? kib : peak;
        usleep(50000);
    }
    print_message("peak resident memory with a stuck stdio reader: %ld KiB\n", peak);
    if (peak >= STUCK_RSS_STDIO_KIB)
        fail_msg("the server grew to %ld KiB with a client that reads nothing", peak);
    /* the client goes: end of input, then nobody reads what waits */
    close(in[1]);
    close(out[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status)) {
        char *text = read_all(log);
        fail_msg("the server's end: status %d; its log:\n%s", status, text ? text : "");
    }
    tmpdir_remove(wd);
    free(wd);
    tmpdir_remove(dir);
    free(dir);
    free(rules_dir);
    free(log);
}

/*
 * A client killed while its call streams progress: what the server
 * sends does not keep the session alive, so the session ends within
 * --session-idle-ms (and the safety margin of one sweep and a busy
 * machine) and its call is killed, although the command would print
 * forever.
 */
static void
test_dead_client(void **state)
{
    struct srv s;
    enum { IDLE_MS = 2000, MARGIN_MS = 15000 };
    const char *extra[] = {"--session-idle-ms", "2000", NULL};
    srv_start(&s, true, true, NULL, extra);
    char *wd = new_workdir();
    char *policy = policy_json("read-only");
    struct http_session se;
    http_session_open(&se, http_session_connect_tcp(s.port), s.token, policy, wd);
    int fd = http_session_connect_tcp(s.port);
    char *body = call_body(50, "while :; do echo tick; sleep 0.1; done", wd, 600000, true);
    http_session_post_send(fd, s.token, se.sid, body);
    free(body);
    /* the call runs: its progress streams */
    char *buf = NULL;
    size_t len = 0, cap = 0;
    while (!buf || !strstr(buf, "notifications/progress")) {
        if (!http_session_read_some(fd, &buf, &len, &cap))
            fail_msg("the stream ended before any progress: %s", buf ? buf : "");
    }
    free(buf);
    /* the client dies: both its connections go */
    close(fd);
    http_session_close(&se);
    int waited = 0;
    while (count_in_file(s.log, "session ends (idle") == 0) {
        if (waited > IDLE_MS + MARGIN_MS)
            fail_msg("the dead client's session still runs %d ms later", waited);
        usleep(100000);
        waited += 100;
    }
    char *text = read_all(s.log);
    mcp_world_assert_contains(text, "1 call(s) running are killed");
    free(text);
    free(policy);
    tmpdir_remove(wd);
    free(wd);
    srv_stop(&s);
}

/*
 * A connection whose client takes nothing of its answer for
 * --write-timeout-ms is closed and what waited for it freed: read after
 * that, the answer stops short of its Content-Length, and the log says
 * why.  Another connection of the same session goes on.
 */
static void
test_write_timeout(void **state)
{
    struct srv s;
    const char *extra[] = {"--write-timeout-ms", "1000", NULL};
    srv_start(&s, true, true, NULL, extra);
    char *wd = new_workdir();
    char *policy = policy_json("read-only");
    struct http_session se;
    http_session_open(&se, http_session_connect_tcp(s.port), s.token, policy, wd);
    int fd = http_session_connect_tcp(s.port);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    char *body = call_body(60, MIB_OF_CONTROL_BYTES, wd, 120000, false);
    http_session_post_send(fd, s.token, se.sid, body);
    free(body);
    /* nothing is read until the server has given up on this connection */
    for (int waited = 0; count_in_file(s.log, "--write-timeout-ms") == 0; waited += 100) {
        if (waited > WAIT_MS)
            fail_msg("the server kept a connection that took nothing");
        usleep(100000);
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    while (http_session_read_some(fd, &buf, &len, &cap))
        ;
    const char *cl = buf ? strcasestr(buf, "\r\nContent-Length:") : NULL;
    const char *end = buf ? strstr(buf, "\r\n\r\n") : NULL;
    assert_non_null(cl);
    assert_non_null(end);
    size_t want = strtoul(cl + strlen("\r\nContent-Length:"), NULL, 10);
    size_t got = len - (size_t)(end + 4 - buf);
    if (got >= want)
        fail_msg("the whole answer (%zu bytes) came although nothing was read", got);
    free(buf);
    close(fd);
    assert_true(http_session_ping(&se));
    free(policy);
    http_session_close(&se);
    tmpdir_remove(wd);
    free(wd);
    srv_stop(&s);
}

/* How many of pid's fds name the namespace ns ("net:[INODE]"). */
static int
fds_naming(pid_t pid, const char *ns)
{
    char *dir = mcp_world_fmt("/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char *path = mcp_world_fmt("%s/%s", dir, e->d_name);
        char link[128];
        ssize_t len = readlink(path, link, sizeof link - 1);
        if (len > 0) {
            link[len] = '\0';
            n += strcmp(link, ns) == 0;
        }
        free(path);
    }
    closedir(d);
    free(dir);
    return n;
}

/* How many processes are in the network namespace ns ("net:[INODE]")
 * and children of parent. */
static int
children_in(pid_t parent, const char *ns)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        int pid = atoi(e->d_name);
        if (pid <= 0)
            continue;
        char *stat_path = mcp_world_fmt("/proc/%d/stat", pid);
        char *ns_path = mcp_world_fmt("/proc/%d/ns/net", pid);
        char *text = read_all(stat_path);
        const char *end = text ? strrchr(text, ')') : NULL;
        char state;
        int ppid = 0;
        char link[128];
        ssize_t len = readlink(ns_path, link, sizeof link - 1);
        if (end && sscanf(end + 1, " %c %d", &state, &ppid) == 2 && ppid == (int)parent &&
            state != 'Z' && len > 0) {
            link[len] = '\0';
            n += strcmp(link, ns) == 0;
        }
        free(text);
        free(stat_path);
        free(ns_path);
    }
    closedir(d);
    return n;
}

/* The network namespace a call of se runs in ("net:[INODE]"). */
static char *
sess_netns(struct http_session *se, const char *wd)
{
    char *ns = sess_shell(se, "readlink /proc/self/ns/net", wd);
    ns[strcspn(ns, "\n")] = '\0';
    assert_non_null(strstr(ns, "net:["));
    return ns;
}

/* A listener on 127.0.0.1 in the call's namespace, its port written to
 * the file port in its workdir, serving until a file done appears. */
static const char listen_until_done[] =
    "python3 -c 'import socket, os\n"
    "s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(8); s.settimeout(0.05)\n"
    "open(\"port.tmp\", \"w\").write(str(s.getsockname()[1])); os.rename(\"port.tmp\", "
    "\"port\")\n"
    "served = 0\n"
    "while not os.path.exists(\"done\"):\n"
    "    try:\n"
    "        c, _ = s.accept(); c.sendall(b\"hello from the first session\\n\"); c.close(); "
    "served += 1\n"
    "    except socket.timeout: pass\n"
    "print(\"served\", served)'";

/*
 * Each HTTP session has a network namespace of its own, shared by its
 * calls: a listener one call of session A keeps open is reached by
 * another call of A and not by a call of session B, on the same port of
 * 127.0.0.1.  The server holds each namespace by one fd and its keeper
 * process: once A is ended (DELETE), neither is left for A's namespace,
 * while B's stay.  With --max-prepared 0, so that no sandbox set up ahead
 * of a session's next call is in the namespace between calls
 * (test_prepared.c checks those).
 */
static void
test_session_networks(void **state)
{
    (void)state;
    struct srv s;
    static const char *const no_prepared[] = {"--max-prepared", "0", NULL};
    srv_start(&s, true, true, NULL, no_prepared);
    struct http_session a, b;
    char *wda, *wdb;
    tcp_session(&a, &s, "workspace-write", &wda);
    tcp_session(&b, &s, "workspace-write", &wdb);
    char *na = sess_netns(&a, wda), *na2 = sess_netns(&a, wda);
    char *nb = sess_netns(&b, wdb);
    assert_string_equal(na, na2);
    assert_string_not_equal(na, nb);
    assert_int_equal(fds_naming(s.pid, na), 1);
    assert_int_equal(fds_naming(s.pid, nb), 1);
    /* and one keeper each (session_net.h), the namespace's only process
     * between calls */
    assert_int_equal(children_in(s.pid, na), 1);
    assert_int_equal(children_in(s.pid, nb), 1);

    /* a's listener, on a connection of its own, while a's other call
     * and b's try it */
    struct http_session held = a;
    held.fd = http_session_connect_tcp(s.port);
    held.next_id = 1000;
    const struct http_session_call serve = {.command = listen_until_done, .workdir = wda};
    long long id = http_session_call_send(&held, &serve);
    bool ready = false;
    for (int waited = 0; waited < WAIT_MS && !(ready = mcp_world_exists(wda, "port")); waited += 10)
        usleep(10000);
    assert_true(ready);
    char *portfile = tmpdir_path(wda, "port");
    char *client =
        mcp_world_fmt("python3 -c 'import socket\n"
                      "port = int(open(\"%s\").read())\n"
                      "try:\n"
                      "    c = socket.create_connection((\"127.0.0.1\", port), timeout=5)\n"
                      "    print(c.recv(100).decode(), end=\"\")\n"
                      "except OSError as e: print(\"refused\", e.errno)'",
                      portfile);
    char *from_b = sess_shell(&b, client, wdb);
    char *from_a = sess_shell(&a, client, wda);
    mcp_world_assert_contains(from_b, "refused 111\n");
    mcp_world_assert_contains(from_a, "hello from the first session\n");
    char *done = tmpdir_path(wda, "done");
    tmpdir_write_file(done, "", 0644);
    char *served = http_session_call_output(&held, id);
    mcp_world_assert_contains(served, "served 1\n");
    close(held.fd);

    /* the end of a's session closes its namespace's fd, not b's */
    int status = http_session_delete(&a);
    assert_true(status == 200 || status == 204);
    int left = 1;
    for (int waited = 0; waited < WAIT_MS && (left = fds_naming(s.pid, na)) > 0; waited += 10)
        usleep(10000);
    assert_int_equal(left, 0);
    for (int waited = 0; waited < WAIT_MS && (left = children_in(s.pid, na)) > 0; waited += 10)
        usleep(10000);
    assert_int_equal(left, 0);
    assert_int_equal(fds_naming(s.pid, nb), 1);
    assert_int_equal(children_in(s.pid, nb), 1);

    free(done);
    free(served);
    free(from_a);
    free(from_b);
    free(client);
    free(portfile);
    free(na);
    free(na2);
    free(nb);
    http_session_close(&a);
    tmpdir_remove(wda);
    free(wda);
    tcp_session_end(&b, wdb, &s);
}

int
main(void)
{
    int rc = server_suite_begin(&server_path, &unprivileged, &user);
    if (rc != 0)
        return rc;
    signal(SIGPIPE, SIG_IGN);
    /* the servers give freed memory back at once (no ASan quarantine), so
     * that their resident memory is what they hold */
    const char *asan = getenv("ASAN_OPTIONS");
    char *opts = mcp_world_fmt("%s%squarantine_size_mb=0", asan ? asan : "", asan ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    free(opts);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unix_refuses_own_call),  cmocka_unit_test(test_unix_token),
        cmocka_unit_test(test_proxy_refuses_own_port), cmocka_unit_test(test_header_deadline),
        cmocka_unit_test(test_unauthenticated_flood),  cmocka_unit_test(test_stuck_reader),
        cmocka_unit_test(test_stuck_reader_stdio),     cmocka_unit_test(test_dead_client),
        cmocka_unit_test(test_write_timeout),          cmocka_unit_test(test_session_networks),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (unprivileged)
        test_user_release(&user);
    return failed;
}
