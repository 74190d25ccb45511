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

#include "tests/support/mcp_world.h"
#include "tests/support/server_suite.h"
#include "tests/support/test_user.h"
#include "tests/support/tmpdir.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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

static int
connect_unix(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof(sa.sun_path));
    strcpy(sa.sun_path, path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static int
connect_tcp(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static void
send_all(int fd, const char *text)
{
    size_t len = strlen(text);
    for (size_t done = 0; done < len;) {
        ssize_t n = send(fd, text + done, len - done, MSG_NOSIGNAL);
        if (n <= 0)
            fail_msg("send on fd %d: %s; sending %.200s", fd, strerror(errno), text);
        done += (size_t)n;
    }
}

/* Reads into *buf (grown) what comes within the safety limit; 0 at the
 * peer's end, 1 when bytes came. */
static int
read_some(int fd, char **buf, size_t *len, size_t *cap)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int rc = poll(&p, 1, WAIT_MS);
    if (rc == 0)
        fail_msg("nothing came from the server within the safety limit");
    if (*len + 4096 + 1 > *cap) {
        *cap = (*len + 4096 + 1) * 2;
        *buf = realloc(*buf, *cap);
        assert_non_null(*buf);
    }
    ssize_t n = read(fd, *buf + *len, *cap - *len - 1);
    if (n < 0 && errno == ECONNRESET)
        n = 0;
    assert_true(n >= 0);
    *len += (size_t)n;
    (*buf)[*len] = '\0';
    return n > 0;
}

/* One whole response (head and body, chunks as they came), or what came
 * before the server closed ("" when nothing). */
static char *
read_response(int fd)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (!read_some(fd, &buf, &len, &cap))
            return buf ? buf : strdup("");
        const char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        const char *cl = strcasestr(buf, "\r\nContent-Length:");
        if (cl && cl < end) {
            size_t body = strtoul(cl + strlen("\r\nContent-Length:"), NULL, 10);
            if (len >= (size_t)(end + 4 - buf) + body)
                return buf;
        } else if (len >= 5 && strcmp(buf + len - 5, "0\r\n\r\n") == 0) {
            return buf;
        }
    }
}

static int
status_of(const char *resp)
{
    int status = 0;
    if (sscanf(resp, "HTTP/1.1 %d", &status) != 1)
        return 0;
    return status;
}

/* Sends a POST of body on fd with the token (NULL: none) and session id
 * (NULL: none), its response left to read. */
static void
post_send(int fd, const char *token, const char *sid, const char *body)
{
    char *auth = token ? mcp_world_fmt("Authorization: Bearer %s\r\n", token) : strdup("");
    char *sess = sid ? mcp_world_fmt("Mcp-Session-Id: %s\r\n", sid) : strdup("");
    char *req = mcp_world_fmt("POST /mcp HTTP/1.1\r\nHost: localhost\r\n%s%s"
                              "Content-Type: application/json\r\n"
                              "Accept: application/json, text/event-stream\r\n"
                              "Content-Length: %zu\r\n\r\n%s",
                              auth, sess, strlen(body), body);
    send_all(fd, req);
    free(req);
    free(auth);
    free(sess);
}

/* A POST of body on fd with the token (NULL: none) and session id (NULL:
 * none); the response. */
static char *
post(int fd, const char *token, const char *sid, const char *body)
{
    post_send(fd, token, sid, body);
    return read_response(fd);
}

/* The JSON-RPC answer to id in resp: the body, or the event that holds it. */
static json_t *
answer_of(const char *resp, long long id)
{
    const char *body = strstr(resp, "\r\n\r\n");
    assert_non_null(body);
    body += 4;
    for (const char *p = resp; (p = strstr(p, "data: ")) != NULL; p += 6) {
        const char *eol = strchr(p, '\n');
        json_t *j = json_loadb(p + 6, eol ? (size_t)(eol - p - 6) : strlen(p + 6), 0, NULL);
        if (j && json_integer_value(json_object_get(j, "id")) == id)
            return j;
        json_decref(j);
    }
    json_t *j = json_loads(body, JSON_DISABLE_EOF_CHECK, NULL);
    if (!j)
        fail_msg("no answer to %lld in: %s", id, resp);
    return j;
}

static const char init_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"listener-tests\","
    "\"version\":\"1\"}}}";

/* The status of an initialize posted on fd with token (NULL: none);
 * fd is closed. */
static int
initialize_status(int fd, const char *token)
{
    char *r = post(fd, token, NULL, init_body);
    int status = status_of(r);
    free(r);
    close(fd);
    return status;
}

/* A session on fd: initialized, with the sandbox policy (JSON) in cwd. */
struct sess {
    int fd;
    const char *token;
    char *sid;
    long long next_id;
};

static void
sess_open(struct sess *se, int fd, const char *token, const char *policy, const char *cwd)
{
    se->fd = fd;
    se->token = token;
    se->next_id = 10;
    char *r = post(fd, token, NULL, init_body);
    if (status_of(r) != 200)
        fail_msg("initialize: %s", r);
    const char *h = strcasestr(r, "\r\nMcp-Session-Id: ");
    assert_non_null(h);
    h += strlen("\r\nMcp-Session-Id: ");
    se->sid = strndup(h, strcspn(h, "\r"));
    free(r);
    r = post(fd, token, se->sid, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    assert_int_equal(status_of(r), 202);
    free(r);
    char *body = mcp_world_fmt("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
                               "\"codex/sandbox-state/update\",\"params\":{\"sandboxPolicy\":%s,"
                               "\"sandboxCwd\":\"%s\"}}",
                               policy, cwd);
    r = post(fd, token, se->sid, body);
    json_t *a = answer_of(r, 2);
    assert_non_null(json_object_get(a, "result"));
    json_decref(a);
    free(r);
    free(body);
}

/* A ping on the session's connection: whether it was answered. */
static bool
sess_ping(struct sess *se)
{
    long long id = se->next_id++;
    char *body = mcp_world_fmt("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"ping\"}", id);
    char *r = post(se->fd, se->token, se->sid, body);
    bool ok = status_of(r) == 200;
    free(r);
    free(body);
    return ok;
}

/* Sends a shell call (login false) in cwd; returns its id. */
static long long
sess_shell_send(struct sess *se, const char *command, const char *cwd)
{
    long long id = se->next_id++;
    json_t *req = json_pack("{s:s, s:I, s:s, s:{s:s, s:{s:s, s:s, s:b}}}", "jsonrpc", "2.0", "id",
                            id, "method", "tools/call", "params", "name", "shell", "arguments",
                            "command", command, "workdir", cwd, "login", 0);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    post_send(se->fd, se->token, se->sid, body);
    free(body);
    return id;
}

/* The output of the shell call id sent on se's connection. */
static char *
sess_shell_output(struct sess *se, long long id)
{
    char *r = read_response(se->fd);
    json_t *a = answer_of(r, id);
    const char *out = json_string_value(json_object_get(
        json_object_get(json_object_get(a, "result"), "structuredContent"), "output"));
    if (!out)
        fail_msg("not a call's result: %s", r);
    char *copy = strdup(out);
    json_decref(a);
    free(r);
    return copy;
}

/* A shell call (login false) in cwd; its output. */
static char *
sess_shell(struct sess *se, const char *command, const char *cwd)
{
    return sess_shell_output(se, sess_shell_send(se, command, cwd));
}

/* Ends the session (HTTP DELETE on its connection); the status. */
static int
sess_delete(struct sess *se)
{
    char *auth = se->token ? mcp_world_fmt("Authorization: Bearer %s\r\n", se->token) : strdup("");
    char *req = mcp_world_fmt("DELETE /mcp HTTP/1.1\r\nHost: localhost\r\n%s"
                              "Mcp-Session-Id: %s\r\nContent-Length: 0\r\n\r\n",
                              auth, se->sid);
    send_all(se->fd, req);
    char *r = read_response(se->fd);
    int status = status_of(r);
    free(r);
    free(req);
    free(auth);
    return status;
}

static void
sess_close(struct sess *se)
{
    close(se->fd);
    free(se->sid);
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
        path, init_body);
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
tcp_session(struct sess *se, const struct srv *s, const char *type, char **wd)
{
    *wd = new_workdir();
    char *policy = policy_json(type);
    sess_open(se, connect_tcp(s->port), s->token, policy, *wd);
    free(policy);
}

/* Ends the session, its workdir and the server (which must exit 0). */
static void
tcp_session_end(struct sess *se, char *wd, struct srv *s)
{
    sess_close(se);
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
        struct sess se;
        char *policy = policy_json(types[i]);
        sess_open(&se, connect_unix(s.sock), NULL, policy, wd);
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
        assert_true(sess_ping(&se));
        free(out);
        free(cmd);
        free(policy);
        sess_close(&se);
    }
    /* a client outside the calls is served */
    assert_int_equal(initialize_status(connect_unix(s.sock), NULL), 200);
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
    assert_int_equal(initialize_status(connect_tcp(s.port), NULL), 401);
    int fd = connect_unix(s.sock);
    char *r = post(fd, NULL, NULL, init_body);
    assert_int_equal(status_of(r), 401);
    mcp_world_assert_contains(r, "bearer token");
    free(r);
    close(fd);
    assert_int_equal(initialize_status(connect_unix(s.sock), "0123456789abcdef0123456789abcdef"),
                     401);
    assert_int_equal(initialize_status(connect_unix(s.sock), s.token), 200);
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
    struct sess se;
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
    struct sess se;
    tcp_session(&se, &s, "read-only", &wd);
    int slow[2];
    slow[0] = connect_tcp(s.port);
    slow[1] = connect_unix(s.sock);
    for (int i = 0; i < 2; i++)
        send_all(slow[i], "POST /mcp HTTP/1.1\r\nHost: localhost\r\n");
    for (int i = 0; i < 2; i++) {
        /* the server's end comes (the read is bounded by the safety limit
         * only: a server that keeps it open fails the test) */
        char *r = read_response(slow[i]);
        assert_int_equal(status_of(r), 408);
        mcp_world_assert_contains(r, "--header-timeout-ms");
        free(r);
        close(slow[i]);
    }
    assert_true(sess_ping(&se));
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
    struct sess se;
    tcp_session(&se, &s, "read-only", &wd);
    enum { FLOOD = 600 };
    static int flood[FLOOD];
    for (int i = 0; i < FLOOD; i++)
        flood[i] = i % 2 ? connect_tcp(s.port) : connect_unix(s.sock);
    int fd = connect_tcp(s.port);
    char *r = post(fd, s.token, NULL, init_body);
    if (status_of(r) != 200)
        fail_msg("a client with the token was locked out: [%s]", r);
    free(r);
    close(fd);
    assert_int_equal(initialize_status(connect_unix(s.sock), s.token), 200);
    assert_true(sess_ping(&se));
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
    json_t *req =
        json_pack("{s:s, s:I, s:s, s:{s:s, s:{s:s, s:s, s:b, s:I}}}", "jsonrpc", "2.0", "id", id,
                  "method", "tools/call", "params", "name", "shell", "arguments", "command",
                  command, "workdir", cwd, "login", 0, "timeout_ms", (json_int_t)timeout_ms);
    if (progress)
        json_object_set_new(json_object_get(req, "params"), "_meta",
                            json_pack("{s:s}", "progressToken", "tick"));
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    return body;
}

/* Sends a POST of body and reads nothing. */
static void
post_only(int fd, const char *token, const char *sid, const char *body)
{
    char *req = mcp_world_fmt("POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                              "Authorization: Bearer %s\r\nMcp-Session-Id: %s\r\n"
                              "Content-Type: application/json\r\n"
                              "Accept: application/json, text/event-stream\r\n"
                              "Content-Length: %zu\r\n\r\n%s",
                              token, sid, strlen(body), body);
    send_all(fd, req);
    free(req);
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
    struct sess stuck, other;
    sess_open(&stuck, connect_tcp(s.port), s.token, policy, wd);
    sess_open(&other, connect_tcp(s.port), s.token, policy, wd);
    int fds[STUCK_CALLS];
    for (int i = 0; i < STUCK_CALLS; i++) {
        fds[i] = connect_tcp(s.port);
        /* a small receive buffer: the kernel takes little of it either */
        int small = 4096;
        setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
        char *body = call_body(100 + i, MIB_OF_CONTROL_BYTES, wd, 120000, false);
        post_only(fds[i], s.token, stuck.sid, body);
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
    assert_true(sess_ping(&other));
    for (int i = 0; i < STUCK_CALLS; i++)
        close(fds[i]);
    free(policy);
    sess_close(&stuck);
    sess_close(&other);
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
    struct sess se;
    sess_open(&se, connect_tcp(s.port), s.token, policy, wd);
    int fd = connect_tcp(s.port);
    char *body = call_body(50, "while :; do echo tick; sleep 0.1; done", wd, 600000, true);
    post_only(fd, s.token, se.sid, body);
    free(body);
    /* the call runs: its progress streams */
    char *buf = NULL;
    size_t len = 0, cap = 0;
    while (!buf || !strstr(buf, "notifications/progress")) {
        if (!read_some(fd, &buf, &len, &cap))
            fail_msg("the stream ended before any progress: %s", buf ? buf : "");
    }
    free(buf);
    /* the client dies: both its connections go */
    close(fd);
    sess_close(&se);
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
    struct sess se;
    sess_open(&se, connect_tcp(s.port), s.token, policy, wd);
    int fd = connect_tcp(s.port);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    char *body = call_body(60, MIB_OF_CONTROL_BYTES, wd, 120000, false);
    post_only(fd, s.token, se.sid, body);
    free(body);
    /* nothing is read until the server has given up on this connection */
    for (int waited = 0; count_in_file(s.log, "--write-timeout-ms") == 0; waited += 100) {
        if (waited > WAIT_MS)
            fail_msg("the server kept a connection that took nothing");
        usleep(100000);
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    while (read_some(fd, &buf, &len, &cap))
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
    assert_true(sess_ping(&se));
    free(policy);
    sess_close(&se);
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
sess_netns(struct sess *se, const char *wd)
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
    struct sess a, b;
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
    struct sess held = a;
    held.fd = connect_tcp(s.port);
    held.next_id = 1000;
    long long id = sess_shell_send(&held, listen_until_done, wda);
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
    char *served = sess_shell_output(&held, id);
    mcp_world_assert_contains(served, "served 1\n");
    close(held.fd);

    /* the end of a's session closes its namespace's fd, not b's */
    int status = sess_delete(&a);
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
    sess_close(&a);
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
