#include "tests/support/http_session.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/mcp_world.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

const char http_session_initialize_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"http-session-tests\","
    "\"version\":\"1\"}}}";

int
http_session_connect_unix(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof(sa.sun_path));
    strcpy(sa.sun_path, path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

int
http_session_connect_tcp(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

void
http_session_send_all(int fd, const char *text)
{
    size_t len = strlen(text);
    for (size_t done = 0; done < len;) {
        ssize_t n = send(fd, text + done, len - done, MSG_NOSIGNAL);
        if (n <= 0)
            fail_msg("send on fd %d: %s; sending %.200s", fd, strerror(errno), text);
        done += (size_t)n;
    }
}

int
http_session_read_some(int fd, char **buf, size_t *len, size_t *cap)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int rc = poll(&p, 1, HTTP_SESSION_WAIT_MS);
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

/* Whether buf (len bytes) holds a whole response: its head and then
 * Content-Length bytes or, without one, chunks up to the last. */
static bool
whole_response(const char *buf, size_t len)
{
    const char *end = strstr(buf, "\r\n\r\n");
    if (!end)
        return false;
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (cl && cl < end) {
        size_t body = strtoul(cl + strlen("\r\nContent-Length:"), NULL, 10);
        return len >= (size_t)(end + 4 - buf) + body;
    }
    return len >= 5 && strcmp(buf + len - 5, "0\r\n\r\n") == 0;
}

char *
http_session_read_response(int fd)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (!http_session_read_some(fd, &buf, &len, &cap))
            return buf ? buf : strdup("");
        if (whole_response(buf, len))
            return buf;
    }
}

int
http_session_status(const char *resp)
{
    int status = 0;
    if (sscanf(resp, "HTTP/1.1 %d", &status) != 1)
        return 0;
    return status;
}

/* Sends a request of method to /mcp on fd with the token and session id
 * (each NULL: none) and body (NULL: an empty one, and no content type). */
static void
send_request(int fd, const char *method, const char *token, const char *sid, const char *body)
{
    char *auth = token ? mcp_world_fmt("Authorization: Bearer %s\r\n", token) : strdup("");
    char *sess = sid ? mcp_world_fmt("Mcp-Session-Id: %s\r\n", sid) : strdup("");
    const char *types =
        body ? "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
             : "";
    char *req = mcp_world_fmt("%s /mcp HTTP/1.1\r\nHost: localhost\r\n%s%s%s"
                              "Content-Length: %zu\r\n\r\n%s",
                              method, auth, sess, types, body ? strlen(body) : 0, body ? body : "");
    http_session_send_all(fd, req);
    free(req);
    free(auth);
    free(sess);
}

void
http_session_post_send(int fd, const char *token, const char *sid, const char *body)
{
    send_request(fd, "POST", token, sid, body);
}

char *
http_session_post(int fd, const char *token, const char *sid, const char *body)
{
    http_session_post_send(fd, token, sid, body);
    return http_session_read_response(fd);
}

json_t *
http_session_answer(const char *resp, long long id)
{
    for (const char *p = resp; (p = strstr(p, "data: ")) != NULL; p += 6) {
        json_t *j = json_loadb(p + 6, strcspn(p + 6, "\n"), 0, NULL);
        if (j && json_integer_value(json_object_get(j, "id")) == id)
            return j;
        json_decref(j);
    }
    const char *body = strstr(resp, "\r\n\r\n");
    json_t *j = body ? json_loads(body + 4, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    if (!j)
        fail_msg("no answer to %lld in: %s", id, resp);
    return j;
}

char *
http_session_call_body(long long id, const struct http_session_call *call)
{
    json_t *args = json_pack("{s:s, s:s, s:b}", "command", call->command, "workdir", call->workdir,
                             "login", call->login);
    assert_non_null(args);
    if (call->timeout_ms)
        json_object_set_new(args, "timeout_ms", json_integer(call->timeout_ms));
    json_t *req = json_pack("{s:s, s:I, s:s, s:{s:s, s:o}}", "jsonrpc", "2.0", "id", (json_int_t)id,
                            "method", "tools/call", "params", "name", "shell", "arguments", args);
    assert_non_null(req);
    if (call->progress)
        json_object_set_new(json_object_get(req, "params"), "_meta",
                            json_pack("{s:s}", "progressToken", "tick"));
    char *body = json_dumps(req, JSON_COMPACT);
    assert_non_null(body);
    json_decref(req);
    return body;
}

void
http_session_open(struct http_session *se, int fd, const char *token, const char *policy,
                  const char *cwd)
{
    se->fd = fd;
    se->token = token;
    se->sid = NULL;
    se->next_id = 10;
    char *r = http_session_post(fd, token, NULL, http_session_initialize_body);
    const char *h = strcasestr(r, "\r\nMcp-Session-Id: ");
    if (http_session_status(r) != 200 || !h)
        fail_msg("initialize: %s", r);
    h += strlen("\r\nMcp-Session-Id: ");
    se->sid = strndup(h, strcspn(h, "\r"));
    assert_non_null(se->sid);
    free(r);
    r = http_session_post(fd, token, se->sid,
                          "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    assert_int_equal(http_session_status(r), 202);
    free(r);
    char *body = mcp_world_fmt("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
                               "\"codex/sandbox-state/update\",\"params\":{\"sandboxPolicy\":%s,"
                               "\"sandboxCwd\":\"%s\"}}",
                               policy, cwd);
    r = http_session_post(fd, token, se->sid, body);
    json_t *a = http_session_answer(r, 2);
    assert_non_null(json_object_get(a, "result"));
    json_decref(a);
    free(r);
    free(body);
}

bool
http_session_ping(struct http_session *se)
{
    long long id = se->next_id++;
    char *body = mcp_world_fmt("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"ping\"}", id);
    char *r = http_session_post(se->fd, se->token, se->sid, body);
    bool ok = http_session_status(r) == 200;
    free(r);
    free(body);
    return ok;
}

long long
http_session_call_send(struct http_session *se, const struct http_session_call *call)
{
    long long id = se->next_id++;
    char *body = http_session_call_body(id, call);
    http_session_post_send(se->fd, se->token, se->sid, body);
    free(body);
    return id;
}

char *
http_session_call_output(struct http_session *se, long long id)
{
    char *r = http_session_read_response(se->fd);
    json_t *a = http_session_answer(r, id);
    const char *out = json_string_value(json_object_get(
        json_object_get(json_object_get(a, "result"), "structuredContent"), "output"));
    if (!out)
        fail_msg("not a call's result: %s", r);
    char *copy = strdup(out);
    assert_non_null(copy);
    json_decref(a);
    free(r);
    return copy;
}

char *
http_session_call(struct http_session *se, const struct http_session_call *call)
{
    return http_session_call_output(se, http_session_call_send(se, call));
}

int
http_session_delete(struct http_session *se)
{
    send_request(se->fd, "DELETE", se->token, se->sid, NULL);
    char *r = http_session_read_response(se->fd);
    int status = http_session_status(r);
    free(r);
    return status;
}

void
http_session_close(struct http_session *se)
{
    close(se->fd);
    free(se->sid);
    se->sid = NULL;
}
