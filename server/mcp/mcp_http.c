#include "server/mcp/mcp_http_int.h"

#include "server/mcp/call_peer.h"
#include "server/mcp/http_auth.h"
#include "server/mcp/http_conn.h"
#include "common/log.h"
#include "common/peer_cred.h"
#include "server/net/nethost.h"
#include "common/strfmt.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define ENDPOINT "/mcp"
/* How often idle sessions are looked for, at most and at least. */
#define SWEEP_MAX_MS 60000u
#define SWEEP_MIN_MS 10u

/* ---- requests ---- */

static void
reply(struct hconn *hc, int status, const char *reason, const char *headers, const char *text)
{
    char *body = text ? strfmt("%s\n", text) : NULL;
    uv_buf_t b = uv_buf_init(body ? body : (char *)"", body ? (unsigned)strlen(body) : 0);
    http_conn_respond(hc->c, status, reason, body ? "text/plain; charset=utf-8" : NULL, headers, &b,
                      1, body, NULL);
}

/* A JSON-RPC error as the body of an HTTP error (the SDK shows it). */
static void
reply_rpc_error(struct hconn *hc, int status, const char *reason, int code, const char *message)
{
    json_t *j = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code", code,
                          "message", message);
    char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    uv_buf_t b = uv_buf_init(body ? body : (char *)"", body ? (unsigned)strlen(body) : 0);
    http_conn_respond(hc->c, status, reason, "application/json", NULL, &b, 1, body, NULL);
}

static bool
authorized(const struct mcp_http *h, const struct http_request *r)
{
    return http_auth_bearer(http_request_header(r, "authorization"), h->token);
}

/* The body as one input line: a JSON text's line breaks are whitespace
 * (in strings they are escaped), so they become spaces. */
static void
feed(struct hsess *se, const struct http_request *r)
{
    char *line = malloc(r->body_len + 1);
    if (!line) {
        log_warn("http: out of memory: a message is dropped");
        return;
    }
    for (size_t i = 0; i < r->body_len; i++)
        line[i] = r->body[i] == '\n' || r->body[i] == '\r' ? ' ' : r->body[i];
    line[r->body_len] = '\n';
    mcp_session_feed(se->ms, line, r->body_len + 1);
    free(line);
}

static void
handle_post(struct hconn *hc, const struct http_request *r, const char *sid)
{
    struct mcp_http *h = hc->h;
    const char *type = http_request_header(r, "content-type");
    if (!type || strncasecmp(type, "application/json", 16) != 0) {
        reply(hc, 415, "Unsupported Media Type", NULL, "a POST body must be application/json");
        return;
    }
    json_error_t jerr;
    json_t *msg = r->body ? json_loadb(r->body, r->body_len, 0, &jerr) : NULL;
    if (!json_is_object(msg)) {
        char *why = msg ? strfmt("one JSON-RPC message (an object) per POST: batches are not "
                                 "supported")
                        : strfmt("Parse error: %s", r->body ? jerr.text : "no body");
        reply_rpc_error(hc, 400, "Bad Request", msg ? -32600 : -32700, why ? why : "bad body");
        free(why);
        json_decref(msg);
        return;
    }
    const char *method = json_string_value(json_object_get(msg, "method"));
    const json_t *id = json_object_get(msg, "id");
    if (id && !json_is_string(id) && !json_is_integer(id)) {
        /* an answer could not name the request: refused here, where it
         * still can be answered */
        reply_rpc_error(hc, 400, "Bad Request", -32600, "id must be a string or an integer");
        json_decref(msg);
        return;
    }
    bool is_init = method && strcmp(method, "initialize") == 0;
    struct hsess *se = NULL;
    if (sid) {
        se = hsess_find(h, sid);
        if (!se) {
            reply_rpc_error(hc, 404, "Not Found", -32001, "session not found: it ended");
            json_decref(msg);
            return;
        }
    } else if (is_init) {
        if (h->n_sessions >= h->o->max_sessions) {
            reply_rpc_error(hc, 503, "Service Unavailable", -32000,
                            "too many sessions (--max-sessions)");
            json_decref(msg);
            return;
        }
        se = hsess_create(h);
        if (!se) {
            reply_rpc_error(hc, 500, "Internal Server Error", -32603,
                            "cannot make a session: out of memory");
            json_decref(msg);
            return;
        }
    } else {
        reply_rpc_error(hc, 400, "Bad Request", -32600,
                        "Mcp-Session-Id header required (send initialize first)");
        json_decref(msg);
        return;
    }
    se->last_used = uv_now(h->loop);
    bool is_request = method && id;
    if (is_request) {
        hc->ids = json_array();
        hc->tokens = json_array();
        if (!hc->ids || !hc->tokens || json_array_append_new(hc->ids, json_deep_copy(id)) < 0) {
            json_decref(hc->ids);
            json_decref(hc->tokens);
            hc->ids = hc->tokens = NULL;
            reply_rpc_error(hc, 500, "Internal Server Error", -32603, "out of memory");
            json_decref(msg);
            return;
        }
        const json_t *token = json_object_get(
            json_object_get(json_object_get(msg, "params"), "_meta"), "progressToken");
        if (token)
            json_array_append_new(hc->tokens, json_deep_copy(token));
        hconn_bind(hc, se);
        /* messages that came while the client had no stream open (a
         * background process's question) go out on this request's
         * stream, ahead of its answer, when no GET stream takes them */
        if (!se->get && se->backlog)
            hsess_flush_backlog(se, hc);
    }
    feed(se, r); /* an answer may go out before this returns */
    /* a tasks/result that waits: what waited for a stream goes on its
     * own, so that a client without the GET stream still gets the task's
     * questions (MCP tasks: where a task's messages go is the server's
     * choice, and the client expects them on any stream) */
    if (is_request && strcmp(method, "tasks/result") == 0 && !se->get && se->backlog &&
        hc->sess == se && json_array_size(hc->ids) > 0)
        hsess_flush_backlog(se, hc);
    if (!is_request) {
        if (method && strcmp(method, "notifications/cancelled") == 0)
            hsess_cancelled(se, msg);
        char *hdr = hsess_header(se);
        reply(hc, 202, "Accepted", hdr, NULL);
        free(hdr);
    }
    json_decref(msg);
}

static void
handle_get(struct hconn *hc, const struct http_request *r, struct hsess *se)
{
    const char *accept = http_request_header(r, "accept");
    if (!accept || !strstr(accept, "text/event-stream")) {
        reply(hc, 406, "Not Acceptable", NULL,
              "GET opens an event stream: Accept text/event-stream");
        return;
    }
    if (se->get) {
        reply(hc, 409, "Conflict", NULL, "the session's stream is open already");
        return;
    }
    char *hdr = hsess_header(se);
    int rc = hdr ? http_conn_stream_begin(hc->c, "text/event-stream", hdr) : -1;
    free(hdr);
    if (rc < 0)
        return;
    hconn_bind(hc, se);
    hc->get = true;
    se->get = hc;
    se->last_used = uv_now(hc->h->loop);
    hsess_flush_backlog(se, hc);
}

/* ---- connections that have not authenticated ---- */

#define UNAUTH(n) list_entry(n, struct hconn, unode)

static void
unauth_remove(struct hconn *hc)
{
    struct mcp_http *h = hc->h;
    if (hc->authed)
        return;
    hc->authed = true;
    list_unlink(&hc->unode);
    h->n_unauth--;
}

static void
unauth_add(struct hconn *hc)
{
    struct mcp_http *h = hc->h;
    hc->authed = false;
    list_insert_tail(&h->unauth, &hc->unode);
    h->n_unauth++;
}

/* Whether bytes wait unread on hc's socket: a request that came before
 * the server could read it (the connection was accepted in a burst). */
static bool
has_unread(const struct hconn *hc)
{
    int n = 0;
    return ioctl(http_conn_fd(hc->c), FIONREAD, &n) == 0 && n > 0;
}

/* Which connection that has not authenticated goes to make room: the
 * oldest of uid's (of anyone's when !one_user), among those older than
 * MCP_HTTP_UNAUTHENTICATED_GRACE_MS when grace (each has had its chance to
 * send a request), with nothing unread first (a client whose request waits
 * to be read is spared); NULL when there is none.  *count: how many uid
 * has. */
static struct hconn *
pick_victim(struct mcp_http *h, bool one_user, uid_t uid, bool grace, unsigned *count)
{
    uint64_t now = uv_now(h->loop);
    struct hconn *first = NULL, *idle = NULL;
    *count = 0;
    struct list *n;
    list_foreach(n, &h->unauth)
    {
        struct hconn *hc = UNAUTH(n);
        if (one_user && hc->peer_uid != uid)
            continue;
        ++*count;
        if (grace && now - hc->accepted_ms < MCP_HTTP_UNAUTHENTICATED_GRACE_MS)
            continue;
        if (!first)
            first = hc;
        if (!idle && !has_unread(hc))
            idle = hc;
    }
    return idle ? idle : first;
}

static void
evict(struct hconn *victim, const char *why)
{
    log_debug("http: a connection that has not authenticated (uid %ld) is closed: %s",
              victim->peer_uid == (uid_t)-1 ? -1L : (long)victim->peer_uid, why);
    http_conn_close(victim->c); /* on_conn_close runs now and frees it */
}

static void on_trim(uv_timer_t *t);

/* The connections that have not authenticated are over a budget, and
 * none can go yet: look again once the youngest of them may. */
static void
trim_later(struct mcp_http *h)
{
    if (h->trim_open && !uv_is_active((uv_handle_t *)&h->trim))
        uv_timer_start(&h->trim, on_trim, MCP_HTTP_UNAUTHENTICATED_GRACE_MS, 0);
}

/* Every user's share and the budget of all, kept: the oldest beyond them
 * go, once old enough. */
static void
trim_all(struct mcp_http *h)
{
    struct peer_count {
        uid_t uid;
        unsigned n;
    } counts[MCP_HTTP_MAX_CONNECTIONS];
    size_t n_users = 0;
    struct list *n, *next;
    list_foreach(n, &h->unauth)
    {
        struct hconn *hc = UNAUTH(n);
        size_t i = 0;
        while (i < n_users && counts[i].uid != hc->peer_uid)
            i++;
        if (i == n_users && n_users < MCP_HTTP_MAX_CONNECTIONS)
            counts[n_users++] = (struct peer_count){hc->peer_uid, 0};
        if (i < n_users)
            counts[i].n++;
    }
    uint64_t now = uv_now(h->loop);
    bool later = false;
    list_foreach_safe(n, next, &h->unauth)
    {
        struct hconn *hc = UNAUTH(n);
        size_t i = 0;
        while (i < n_users && counts[i].uid != hc->peer_uid)
            i++;
        bool over = (i < n_users && counts[i].n > MCP_HTTP_MAX_UNAUTHENTICATED_PER_PEER) ||
                    h->n_unauth > MCP_HTTP_MAX_UNAUTHENTICATED;
        if (!over)
            continue;
        if (now - hc->accepted_ms < MCP_HTTP_UNAUTHENTICATED_GRACE_MS) {
            later = true;
            continue;
        }
        if (i < n_users)
            counts[i].n--;
        evict(hc, "beyond the budget of connections that have not authenticated");
    }
    if (later)
        trim_later(h);
}

static void
on_trim(uv_timer_t *t)
{
    trim_all(t->data);
}

/*
 * After newest (not authenticated) came.  Beyond MCP_HTTP_MAX_CONNECTIONS,
 * a connection that has not authenticated goes at once, the oldest idle
 * one first (newest itself when all the others have authenticated: an
 * authenticated connection never goes for a new one).  Beyond newest's
 * user's share or the budget of all, the oldest that has had
 * MCP_HTTP_UNAUTHENTICATED_GRACE_MS to authenticate goes; when none has
 * yet, they are looked at again then.
 */
static void
make_room(struct mcp_http *h, struct hconn *newest)
{
    unsigned n;
    if (h->n_conns > MCP_HTTP_MAX_CONNECTIONS) {
        struct hconn *victim = pick_victim(h, false, 0, false, &n);
        bool self = victim == newest;
        evict(victim, "every connection is taken");
        if (self)
            return;
    }
    struct hconn *victim = pick_victim(h, true, newest->peer_uid, true, &n);
    if (n > MCP_HTTP_MAX_UNAUTHENTICATED_PER_PEER) {
        if (victim)
            evict(victim, "its user holds more connections that have not authenticated");
        else
            trim_later(h);
    }
    if (h->n_unauth > MCP_HTTP_MAX_UNAUTHENTICATED) {
        victim = pick_victim(h, false, 0, true, &n);
        if (victim)
            evict(victim, "too many connections have not authenticated");
        else
            trim_later(h);
    }
}

/* The user at the other end of hc's connection, or (uid_t)-1. */
static uid_t
peer_uid(struct hconn *hc)
{
    int fd = http_conn_fd(hc->c);
    if (hc->l->tcp)
        return call_peer_tcp_uid(fd);
    struct ucred cred;
    return peer_cred(fd, &cred) == 0 ? cred.uid : (uid_t)-1;
}

/* A peer that runs in one of this server's calls (or may: it could not
 * be told) is told why, and the connection closes. */
static void
refuse_own_call(struct hconn *hc)
{
    bool call = hc->origin == CALL_PEER_CALL;
    log_warn("http: a connection on the Unix socket is refused: %s",
             call ? "the process runs in one of this server's calls"
                  : "cannot tell whether the process runs in one of this server's calls");
    reply(hc, 403, "Forbidden", NULL,
          call ? "execgate: refused: the process that connected runs in one of this server's "
                 "calls; a command execgate runs may not be a client of the same server (it "
                 "would answer its own questions and choose its own sandbox)"
               : "execgate: refused: cannot tell whether the process that connected runs in "
                 "one of this server's calls (it may have exited); connect from a process "
                 "outside them");
    http_conn_finish(hc->c);
}

static void
on_request(struct http_conn *c, const struct http_request *r, void *data)
{
    struct hconn *hc = data;
    struct mcp_http *h = hc->h;
    if (h->shutting_down) {
        reply(hc, 503, "Service Unavailable", NULL, "execgate is shutting down");
        return;
    }
    size_t path_len = strcspn(r->url, "?#");
    if (path_len != strlen(ENDPOINT) || strncmp(r->url, ENDPOINT, path_len) != 0) {
        reply(hc, 404, "Not Found", NULL, "the MCP endpoint is " ENDPOINT);
        return;
    }
    const char *origin = http_request_header(r, "origin");
    if (origin && !http_auth_origin_loopback(origin)) {
        log_warn("http: a request from origin %s is refused (not a loopback origin)", origin);
        reply(hc, 403, "Forbidden", NULL, "origin not allowed");
        return;
    }
    if (!hc->l->tcp && hc->origin != CALL_PEER_OUTSIDE) {
        refuse_own_call(hc);
        return;
    }
    if (h->token && !authorized(h, r)) {
        reply(hc, 401, "Unauthorized", "WWW-Authenticate: Bearer\r\n",
              "a bearer token is required (the --token-file's)");
        return;
    }
    /* from now on it may stay open between requests as long as it likes,
     * and no new connection takes its place */
    unauth_remove(hc);
    http_conn_trust(c);
    const char *version = http_request_header(r, "mcp-protocol-version");
    if (version && !mcp_protocol_supported(version)) {
        reply_rpc_error(hc, 400, "Bad Request", -32600, "unsupported MCP-Protocol-Version");
        return;
    }
    const char *sid = http_request_header(r, "mcp-session-id");
    if (strcmp(r->method, "POST") == 0) {
        handle_post(hc, r, sid);
        return;
    }
    bool get = strcmp(r->method, "GET") == 0;
    if (!get && strcmp(r->method, "DELETE") != 0) {
        reply(hc, 405, "Method Not Allowed", "Allow: GET, POST, DELETE\r\n", NULL);
        return;
    }
    struct hsess *se = sid ? hsess_find(h, sid) : NULL;
    if (!se) {
        reply(hc, sid ? 404 : 400, sid ? "Not Found" : "Bad Request", NULL,
              sid ? "session not found: it ended" : "Mcp-Session-Id header required");
        return;
    }
    if (get) {
        handle_get(hc, r, se);
        return;
    }
    hsess_end(se, "the client ended it (DELETE)");
    reply(hc, 200, "OK", NULL, NULL);
}

static void
on_conn_close(struct http_conn *c, void *data)
{
    struct hconn *hc = data;
    struct mcp_http *h = hc->h;
    struct hsess *charged = hc->charged;
    unauth_remove(hc);
    hconn_uncharge(hc);
    if (charged)
        mcp_session_output_taken(charged->ms); /* what it held is gone */
    hconn_unbind(hc);
    list_unlink(&hc->node);
    h->n_conns--;
    free(hc);
}

/* Part of what hc held was written: once it is all out, hc holds nothing
 * of its session's; either way, the session's held-back calls may start. */
static void
on_conn_written(struct http_conn *c, void *data)
{
    struct hconn *hc = data;
    struct hsess *se = hc->charged;
    if (!se)
        return;
    /* the client took what it was sent (an answer, an event of its
     * stream): it is there, and its idle time starts now */
    se->last_used = uv_now(hc->h->loop);
    if (http_conn_queued(c) == 0)
        hconn_uncharge(hc);
    mcp_session_output_taken(se->ms);
}

static const struct http_conn_handler conn_handler = {
    .on_request = on_request,
    .on_close = on_conn_close,
    .on_written = on_conn_written,
};

/* ---- listening ---- */

/* A connection beyond the limit: taken and closed at once. */
static void
on_refused_closed(uv_handle_t *handle)
{
    free(handle);
}

static void
refuse_connection(struct listener *l)
{
    union {
        uv_handle_t handle;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } *u = malloc(sizeof(*u));
    if (!u)
        return;
    int rc = l->tcp ? uv_tcp_init(l->h->loop, &u->tcp) : uv_pipe_init(l->h->loop, &u->pipe, 0);
    if (rc < 0) {
        free(u);
        return;
    }
    uv_accept(&l->u.stream, (uv_stream_t *)u);
    uv_close(&u->handle, on_refused_closed);
}

static void
on_connection(uv_stream_t *server, int status)
{
    struct listener *l = server->data;
    struct mcp_http *h = l->h;
    if (status < 0) {
        log_warn("http: accepting a connection: %s", uv_strerror(status));
        return;
    }
    /* no room (all taken by authenticated connections), or shutting down */
    if (h->shutting_down || (h->n_conns >= MCP_HTTP_MAX_CONNECTIONS && h->n_unauth == 0)) {
        if (!h->shutting_down)
            log_warn("http: %u connections are open: one more is refused", h->n_conns);
        refuse_connection(l);
        return;
    }
    struct hconn *hc = calloc(1, sizeof(*hc));
    if (!hc) {
        refuse_connection(l);
        return;
    }
    hc->h = h;
    hc->l = l;
    list_init(&hc->node);
    list_init(&hc->unode);
    list_init(&hc->snode);
    list_init(&hc->cnode);
    int rc = http_conn_accept(server, h->o->max_message_bytes, h->o->header_timeout_ms,
                              h->o->write_timeout_ms, &conn_handler, hc, &hc->c);
    if (rc < 0) {
        log_warn("http: cannot accept a connection: %s", uv_strerror(rc));
        free(hc);
        return;
    }
    /* decided on the connection itself, pinned to the process that
     * connected: a command of this server's may not drive it */
    hc->origin = l->tcp ? CALL_PEER_OUTSIDE : call_peer_origin(http_conn_fd(hc->c), getpid());
    hc->peer_uid = peer_uid(hc);
    hc->accepted_ms = uv_now(h->loop);
    list_insert_head(&h->conns, &hc->node);
    h->n_conns++;
    unauth_add(hc);
    make_room(h, hc); /* may close hc itself */
}

/* PATH may be bound: absent, or a socket nobody listens on that is ours
 * (a server before this one left it).  0, or -1 with *err. */
static int
clear_stale_socket(const char *path, char **err)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        *err = strfmt("--listen unix:%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(st.st_mode) || st.st_uid != getuid()) {
        *err = strfmt("--listen unix:%s: exists and is not a socket of this user's: not replaced",
                      path);
        return -1;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        *err = strfmt("--listen unix:%s: path too long for a socket (at most %zu bytes)", path,
                      sizeof(sa.sun_path) - 1);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err = strfmt("--listen unix:%s: socket: %s", path, strerror(errno));
        return -1;
    }
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    int e = errno;
    close(fd);
    if (rc == 0) {
        *err = strfmt("--listen unix:%s: another server listens there", path);
        return -1;
    }
    if (e != ECONNREFUSED) {
        *err = strfmt("--listen unix:%s: cannot tell whether it is in use: %s", path, strerror(e));
        return -1;
    }
    if (unlink(path) < 0) {
        *err =
            strfmt("--listen unix:%s: cannot remove the stale socket: %s", path, strerror(errno));
        return -1;
    }
    log_info("http: removed the stale socket %s", path);
    return 0;
}

static int
listen_unix(struct mcp_http *h, struct listener *l, const char *path, char **err)
{
    if (clear_stale_socket(path, err) < 0)
        return -1;
    int rc = uv_pipe_init(h->loop, &l->u.pipe, 0);
    if (rc < 0) {
        *err = strfmt("--listen unix:%s: %s", path, uv_strerror(rc));
        return -1;
    }
    l->open = true;
    l->u.handle.data = l;
    /* made 0600 from the start: no moment when another user may connect */
    mode_t old = umask(0177);
    rc = uv_pipe_bind(&l->u.pipe, path);
    umask(old);
    if (rc == 0) {
        l->path = strdup(path);
        if (!l->path)
            rc = UV_ENOMEM;
    }
    if (rc == 0 && chmod(path, 0600) < 0)
        rc = -errno;
    if (rc == 0)
        rc = uv_listen(&l->u.stream, 128, on_connection);
    if (rc < 0) {
        *err = strfmt("--listen unix:%s: %s", path, uv_strerror(rc));
        return -1;
    }
    fprintf(stderr, "execgate: listening on unix:%s (http://localhost" ENDPOINT ")\n", path);
    return 0;
}

static int
listen_tcp(struct mcp_http *h, struct listener *l, const char *addr, char **err)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || !colon[1]) {
        *err = strfmt("--listen %s: expected unix:PATH or HOST:PORT", addr);
        return -1;
    }
    char *host = strndup(addr, (size_t)(colon - addr));
    if (!host)
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long port = strtoul(colon + 1, &end, 10);
    struct sockaddr_storage ss;
    int rc = 0;
    bool v6 = host[0] == '[';
    if (*end || errno || port > 65535 || colon[1] == '-' || colon[1] == '+') {
        rc = UV_EINVAL;
    } else if (v6) {
        size_t n = strlen(host);
        if (n < 3 || host[n - 1] != ']') {
            rc = UV_EINVAL;
        } else {
            host[n - 1] = '\0';
            rc = uv_ip6_addr(host + 1, (int)port, (struct sockaddr_in6 *)&ss);
            if (rc == 0 && !IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr))
                rc = UV_EACCES;
        }
    } else {
        rc = uv_ip4_addr(strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, (int)port,
                         (struct sockaddr_in *)&ss);
        if (rc == 0 && (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) != 127)
            rc = UV_EACCES;
    }
    free(host);
    if (rc == UV_EACCES) {
        *err = strfmt("--listen %s: not a loopback address (127.0.0.0/8, [::1], localhost): "
                      "execgate serves this machine only",
                      addr);
        return -1;
    }
    if (rc < 0) {
        *err = strfmt("--listen %s: expected unix:PATH or HOST:PORT (a loopback address, a port "
                      "from 0 to 65535)",
                      addr);
        return -1;
    }
    l->tcp = true;
    rc = uv_tcp_init(h->loop, &l->u.tcp);
    if (rc == 0) {
        l->open = true;
        l->u.handle.data = l;
        rc = uv_tcp_bind(&l->u.tcp, (struct sockaddr *)&ss, 0);
    }
    if (rc == 0)
        rc = uv_listen(&l->u.stream, 128, on_connection);
    int len = sizeof(ss);
    if (rc == 0)
        rc = uv_tcp_getsockname(&l->u.tcp, (struct sockaddr *)&ss, &len);
    char ip[INET6_ADDRSTRLEN] = "";
    if (rc == 0)
        rc = v6 ? uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof(ip))
                : uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof(ip));
    if (rc < 0) {
        *err = strfmt("--listen %s: %s", addr, uv_strerror(rc));
        return -1;
    }
    /* the network proxy must never reach it (nethost.h) */
    rc = nethost_own_add((struct sockaddr *)&ss);
    if (rc < 0) {
        *err = strfmt("--listen %s: %s", addr, strerror(-rc));
        return -1;
    }
    port =
        ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
    fprintf(stderr, "execgate: listening on http://%s%s%s:%lu" ENDPOINT "\n", v6 ? "[" : "", ip,
            v6 ? "]" : "", port);
    return 0;
}

/* ---- life ---- */

static void
on_sweep(uv_timer_t *t)
{
    struct mcp_http *h = t->data;
    uint64_t now = uv_now(h->loop);
    struct list *n, *next;
    list_foreach_safe(n, next, &h->sessions)
    {
        struct hsess *se = list_entry(n, struct hsess, node);
        hsess_report_drops(se);
        /* a request waits for its answer on an open connection, or bytes
         * wait on one for the client (until it takes them or
         * --write-timeout-ms closes it): the client is there, or will be
         * found gone */
        bool owed = false;
        struct list *l;
        list_foreach(l, &se->conns)
        {
            owed = owed || json_array_size(SESSION_CONN(l)->ids) > 0;
        }
        list_foreach(l, &se->charged)
        {
            owed = owed || http_conn_queued(CHARGED_CONN(l)->c) > 0;
        }
        if (!owed && now - se->last_used >= h->o->session_idle_ms)
            hsess_end(se, "idle (--session-idle-ms)");
    }
}

static void
on_listener_closed(uv_handle_t *handle)
{
    struct listener *l = handle->data;
    if (l->path && unlink(l->path) < 0 && errno != ENOENT)
        log_warn("http: cannot remove the socket %s: %s", l->path, strerror(errno));
    free(l->path);
    l->path = NULL;
}

static void
on_sweep_closed(uv_handle_t *handle)
{
}

static void
close_listeners(struct mcp_http *h)
{
    for (size_t i = 0; i < h->n_listeners; i++) {
        struct listener *l = &h->listeners[i];
        if (l->open && !uv_is_closing(&l->u.handle))
            uv_close(&l->u.handle, on_listener_closed);
        l->open = false;
    }
    if (h->sweep_open && !uv_is_closing((uv_handle_t *)&h->sweep))
        uv_close((uv_handle_t *)&h->sweep, on_sweep_closed);
    h->sweep_open = false;
    if (h->trim_open && !uv_is_closing((uv_handle_t *)&h->trim))
        uv_close((uv_handle_t *)&h->trim, on_sweep_closed);
    h->trim_open = false;
}

/* The server shuts down: no new connections, requests or sessions; the
 * answers it still sends go out, then every connection closes. */
static void
on_shutdown(void *data)
{
    struct mcp_http *h = data;
    h->shutting_down = true;
    close_listeners(h);
    struct list *n, *next;
    list_foreach_safe(n, next, &h->conns)
    {
        struct hconn *hc = list_entry(n, struct hconn, node);
        struct http_conn *c = hc->c; /* hc may be freed below (on_conn_close) */
        bool get = hc->get;
        if (get)
            hconn_unbind(hc);
        http_conn_finish(c);
        if (get)
            http_conn_stream_end(c);
    }
}

struct mcp_http *
mcp_http_new(uv_loop_t *loop, struct mcp_server *s, const struct server_options *o, char **err)
{
    *err = NULL;
    struct mcp_http *h = calloc(1, sizeof(*h));
    if (h)
        h->listeners = calloc(o->listen_count, sizeof(*h->listeners));
    if (!h || !h->listeners) {
        free(h);
        *err = strfmt("out of memory");
        return NULL;
    }
    h->loop = loop;
    h->s = s;
    h->o = o;
    list_init(&h->conns);
    list_init(&h->unauth);
    list_init(&h->sessions);
    bool tcp = false;
    for (size_t i = 0; i < o->listen_count; i++)
        tcp = tcp || strncmp(o->listen[i], "unix:", 5) != 0;
    int rc = 0;
    if (tcp && !o->token_file) {
        *err = strfmt("--listen HOST:PORT needs --token-file PATH (the bearer token clients "
                      "send; made when missing)");
        rc = -1;
    } else if (o->token_file && !(h->token = http_auth_load_token(o->token_file, err))) {
        /* with a token, every listener asks for it, Unix sockets too */
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < o->listen_count; i++) {
        struct listener *l = &h->listeners[i];
        l->h = h;
        h->n_listeners = i + 1;
        const char *a = o->listen[i];
        rc = strncmp(a, "unix:", 5) == 0 ? listen_unix(h, l, a + 5, err) : listen_tcp(h, l, a, err);
    }
    if (rc == 0) {
        uint64_t every = o->session_idle_ms / 4;
        every = every < SWEEP_MIN_MS ? SWEEP_MIN_MS : every > SWEEP_MAX_MS ? SWEEP_MAX_MS : every;
        rc = uv_timer_init(loop, &h->sweep);
        if (rc == 0) {
            h->sweep_open = true;
            h->sweep.data = h;
            uv_timer_start(&h->sweep, on_sweep, every, every);
            uv_timer_init(loop, &h->trim); /* cannot fail */
            h->trim.data = h;
            h->trim_open = true;
        } else {
            *err = strfmt("cannot start the idle session timer: %s", uv_strerror(rc));
        }
    }
    if (rc < 0) {
        if (!*err)
            *err = strfmt("out of memory");
        /* nothing else runs on the loop yet: it runs until the handles
         * opened here are closed */
        h->shutting_down = true;
        close_listeners(h);
        uv_run(loop, UV_RUN_DEFAULT);
        mcp_http_free(h);
        return NULL;
    }
    mcp_server_set_on_shutdown(s, on_shutdown, h);
    return h;
}

void
mcp_http_free(struct mcp_http *h)
{
    if (!h)
        return;
    while (!list_empty(&h->sessions)) {
        struct hsess *se = list_entry(h->sessions.next, struct hsess, node);
        list_unlink(&se->node);
        hsess_backlog_clear(se);
        free(se);
    }
    free(h->listeners);
    free(h->token);
    free(h);
    nethost_own_clear(); /* the listeners are gone */
}
