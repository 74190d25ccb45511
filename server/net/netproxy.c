/*
 * netproxy: HTTP (plain and CONNECT) and SOCKS5 on the sandbox's
 * listeners, decided by network_rule.
 *
 * Each accepted connection is a struct conn that lives until the close
 * callbacks of its two handles (client, upstream) and its pending name
 * lookup have all come back (refs).  Bytes from the client are gathered
 * in `in` until a whole request head (HTTP) or SOCKS5 message is there;
 * then the destination is decided, looked up, connected, and the bytes
 * flow between the two sides with backpressure: a side's reading stops
 * while more than NETPROXY_QUEUE_MAX bytes wait to be written to the
 * other.  A tunnel moves its bytes with splice(2) through a pipe per
 * direction, so that they never come up to the server (struct splice_dir);
 * where that cannot be set up (no fds left) it reads and writes them.
 * A plain HTTP request is rewritten to origin form with
 * "Connection: close" and its body passed on as the parser delimits it,
 * so that one connection carries exactly one decided request.
 */
#include "server/net/netproxy_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rules/policy.h"
#include "server/net/nethost.h"
#include "common/strv.h"

struct netproxy_session {
    unsigned refs;
    char **keys; /* "protocol host" approved for the session */
    size_t n_keys;
};

struct wreq {
    uv_write_t req;
    struct conn *c;
    struct side *to, *from; /* from: whose reading to resume, or NULL */
    char *base;             /* freed when written */
    size_t len;
};

static void client_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void upstream_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void
proxy_maybe_free(struct netproxy *p)
{
    if (!p->freeing || p->n_listeners || p->n_conns)
        return;
    free(p);
}

/* ---- writing ---- */

static void
alloc_read(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    char *b = malloc(NETPROXY_READ_SIZE);
    *buf = uv_buf_init(b, b ? NETPROXY_READ_SIZE : 0);
}

int
proxy_side_read_start(struct conn *c, struct side *s)
{
    return uv_read_start((uv_stream_t *)&s->tcp, alloc_read,
                         s == &c->c ? client_read : upstream_read);
}

static void
write_done(uv_write_t *req, int status)
{
    struct wreq *w = (struct wreq *)req;
    struct conn *c = w->c;
    w->to->queued -= w->len;
    free(w->base);
    if (status < 0) {
        free(w);
        proxy_conn_close(c);
        proxy_conn_unref(c);
        return;
    }
    struct side *from = w->from;
    free(w);
    if (c->st != ST_CLOSING && from && from->paused && from->open && !from->eof &&
        (from == &c->c ? c->u.queued : c->c.queued) <= NETPROXY_QUEUE_MAX / 2) {
        from->paused = false;
        if (proxy_side_read_start(c, from) < 0)
            proxy_conn_close(c);
    }
    proxy_conn_unref(c);
}

/* Queues data[0..len) (whose malloc'd block is base, taken) to side `to`;
 * `from` is the side whose reading pauses while too much waits.  Returns
 * 0, or -1 with the connection closing. */
int
proxy_send_to(struct conn *c, struct side *to, struct side *from, char *base, const char *data,
              size_t len)
{
    if (len == 0) {
        free(base);
        return 0;
    }
    struct wreq *w = malloc(sizeof *w);
    if (!w) {
        free(base);
        proxy_conn_close(c);
        return -1;
    }
    *w = (struct wreq){.c = c, .to = to, .from = from, .base = base, .len = len};
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&to->tcp, &b, 1, write_done) < 0) {
        free(base);
        free(w);
        proxy_conn_close(c);
        return -1;
    }
    c->refs++;
    to->queued += len;
    if (from && to->queued > NETPROXY_QUEUE_MAX && !from->paused) {
        from->paused = true;
        uv_read_stop((uv_stream_t *)&from->tcp);
    }
    return 0;
}

int
proxy_send_copy(struct conn *c, struct side *to, const void *data, size_t len)
{
    char *b = malloc(len ? len : 1);
    if (!b) {
        proxy_conn_close(c);
        return -1;
    }
    memcpy(b, data, len);
    return proxy_send_to(c, to, NULL, b, b, len);
}

/* ---- closing ---- */

void
proxy_side_closed(uv_handle_t *h)
{
    proxy_conn_unref(h->data);
}

void
proxy_conn_unref(struct conn *c)
{
    if (--c->refs > 0)
        return;
    struct netproxy *p = c->p;
    buf_free(&c->in);
    free(c->hdrs);
    free(c->host);
    free(c->rule_copy);
    free(c->out_head);
    if (c->ai)
        uv_freeaddrinfo(c->ai);
    const int pipes[] = {c->up.pipe[0], c->up.pipe[1], c->down.pipe[0], c->down.pipe[1]};
    for (size_t i = 0; i < 4; i++)
        if (pipes[i] >= 0)
            close(pipes[i]);
    free(c);
    p->n_conns--;
    proxy_maybe_free(p);
}

/* A spliced socket's poll has closed: its fd goes now (libuv has let go). */
void
proxy_poll_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    close((uv_poll_t *)h == &c->poll_c ? c->fd_c : c->fd_u);
    proxy_conn_unref(c);
}

void
proxy_conn_close(struct conn *c)
{
    if (c->st == ST_CLOSING)
        return;
    c->st = ST_CLOSING;
    if (c->ask) {
        c->ask->c = NULL;
        c->ask = NULL;
    }
    if (c->l) {
        list_unlink(&c->node);
        c->l = NULL;
    }
    if (c->gai_pending)
        uv_cancel((uv_req_t *)&c->gai); /* its callback comes, with UV_ECANCELED */
    if (c->c.open) {
        c->c.open = false;
        uv_close((uv_handle_t *)&c->c.tcp, proxy_side_closed);
    }
    if (c->u.open) {
        c->u.open = false;
        uv_close((uv_handle_t *)&c->u.tcp, proxy_side_closed);
    }
    if (c->spliced) {
        uv_close((uv_handle_t *)&c->poll_c, proxy_poll_closed);
        uv_close((uv_handle_t *)&c->poll_u, proxy_poll_closed);
    }
}

/* Both directions of a tunnel ended (or the plain response did): close. */
static void
maybe_done(struct conn *c)
{
    if (c->st == ST_CLOSING)
        return;
    bool down = c->u.eof && c->c.shut_done;
    bool up = c->kind == K_HTTP || (c->c.eof && c->u.shut_done);
    if (down && up)
        proxy_conn_close(c);
}

static void
shut_done(uv_shutdown_t *req, int status)
{
    struct conn *c = req->data;
    struct side *s = req == &c->c.sreq ? &c->c : &c->u;
    s->shut_done = true;
    if (status < 0 || c->st == ST_REFUSING)
        proxy_conn_close(c);
    else
        maybe_done(c);
    proxy_conn_unref(c);
}

void
proxy_side_shutdown(struct conn *c, struct side *s)
{
    if (s->shut || !s->open)
        return;
    s->shut = true;
    s->sreq.data = c;
    if (uv_shutdown(&s->sreq, (uv_stream_t *)&s->tcp, shut_done) < 0) {
        proxy_conn_close(c);
        return;
    }
    c->refs++;
}

/* ---- events and refusals ---- */

/* What the hooks are told of c (the strings borrowed from c), with the
 * decision as given. */
static struct netproxy_event
conn_event(const struct conn *c, const char *decision)
{
    return (struct netproxy_event){
        .owner = c->l->owner,
        .call_id = c->l->call_id,
        .command = c->l->command,
        .host = c->host,
        .port = c->port,
        .protocol = c->proto,
        .decision = decision,
        .rule = c->rule_copy,
    };
}

static void
report(struct conn *c, bool allowed, const char *message)
{
    if (!c->p->hooks.event || !c->l)
        return;
    struct netproxy_event ev = conn_event(c, c->decision ? c->decision : "none");
    ev.allowed = allowed;
    ev.message = message;
    c->p->hooks.event(c->p->hooks.arg, &ev);
}

static void
socks_reply(struct conn *c, int code)
{
    const unsigned char r[10] = {5, (unsigned char)code, 0, 1, 0, 0, 0, 0, 0, 0};
    proxy_send_copy(c, &c->c, r, sizeof r);
}

/* Tells the client no (HTTP status with message as the body, or a SOCKS
 * reply) and closes once that is written. */
void
proxy_refuse(struct conn *c, int http_status, int socks_code, const char *message)
{
    if (c->st == ST_CLOSING || c->st == ST_REFUSING)
        return;
    /* The client's further bytes are read and dropped: closing with
     * bytes unread would reset the connection, and the refusal with it. */
    if (c->c.open)
        (void)proxy_side_read_start(c, &c->c); /* UV_EALREADY when it still reads */
    c->st = ST_REFUSING;
    if (c->kind == K_SOCKS && c->c.open) {
        socks_reply(c, socks_code);
    } else if (c->c.open) {
        const char *reason = http_status == 403   ? "Forbidden"
                             : http_status == 400 ? "Bad Request"
                             : http_status == 431 ? "Request Header Fields Too Large"
                             : http_status == 503 ? "Service Unavailable"
                                                  : "Bad Gateway";
        char *resp = NULL;
        int n = asprintf(&resp,
                         "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
                         http_status, reason, strlen(message) + 1, message);
        if (n < 0) {
            proxy_conn_close(c);
            return;
        }
        if (proxy_send_to(c, &c->c, NULL, resp, resp, (size_t)n) < 0)
            return;
    }
    if (c->st != ST_CLOSING)
        proxy_side_shutdown(c, &c->c);
}

/* proxy_refuse() for a decision: reported first.  The format attribute lets
 * the compiler check each caller's format (clang's -Wformat-nonliteral
 * refuses vasprintf with an unchecked one). */
__attribute__((format(printf, 4, 5))) void
proxy_refuse_decided(struct conn *c, int http_status, int socks_code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0) {
        proxy_conn_close(c);
        return;
    }
    report(c, false, msg);
    proxy_refuse(c, http_status, socks_code, msg);
    free(msg);
}

/* ---- deciding ---- */

struct netproxy_session *
netproxy_session_new(void)
{
    struct netproxy_session *ps = calloc(1, sizeof *ps);
    if (ps)
        ps->refs = 1;
    return ps;
}

static struct netproxy_session *
session_ref(struct netproxy_session *ps)
{
    if (ps)
        ps->refs++;
    return ps;
}

void
netproxy_session_unref(struct netproxy_session *ps)
{
    if (!ps || --ps->refs > 0)
        return;
    strv_free_n(ps->keys, ps->n_keys);
    free(ps);
}

static bool
session_has(const struct netproxy_session *ps, const char *key)
{
    for (size_t i = 0; ps && i < ps->n_keys; i++)
        if (strcmp(ps->keys[i], key) == 0)
            return true;
    return false;
}

static void
session_add(struct netproxy_session *ps, const char *proto, const char *host)
{
    char *key = NULL;
    if (!ps || asprintf(&key, "%s %s", proto, host) < 0)
        return; /* out of memory: the next connection asks again */
    if (session_has(ps, key)) {
        free(key);
        return;
    }
    char **keys = realloc(ps->keys, (ps->n_keys + 1) * sizeof *keys);
    if (!keys) {
        free(key);
        return;
    }
    ps->keys = keys;
    ps->keys[ps->n_keys++] = key;
}

/* Whether any of res's addresses is one is_kind holds for; the first such
 * is written into addr as a numeric host ("?" when it cannot be). */
static bool
any_addr(const struct addrinfo *res, bool (*is_kind)(const struct sockaddr *),
         char addr[INET6_ADDRSTRLEN])
{
    for (const struct addrinfo *a = res; a; a = a->ai_next) {
        if (!is_kind(a->ai_addr))
            continue;
        strcpy(addr, "?");
        getnameinfo(a->ai_addr, a->ai_addrlen, addr, INET6_ADDRSTRLEN, NULL, 0, NI_NUMERICHOST);
        return true;
    }
    return false;
}

static void
gai_done(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct conn *c = req->data;
    c->gai_pending = false;
    c->ai = res;
    c->ai_next = res;
    if (c->st == ST_CLOSING) {
        proxy_conn_unref(c);
        return;
    }
    if (status < 0) {
        proxy_refuse_decided(c, 502, SOCKS_HOST_UNREACHABLE, "execgate: cannot resolve %s: %s",
                             c->host, uv_strerror(status));
        proxy_conn_unref(c);
        return;
    }
    char addr[INET6_ADDRSTRLEN];
    /* whatever the rules: the server's own listeners (nethost_is_own) */
    if (any_addr(res, nethost_is_own, addr)) {
        proxy_refuse_decided(
            c, 403, SOCKS_NOT_ALLOWED,
            "execgate: network access to %s:%u (%s) refused: execgate listens there "
            "(%s port %u is the MCP server's own), and no command it runs may reach "
            "it, whatever the network rules",
            c->host, c->port, c->proto, addr, c->port);
        proxy_conn_unref(c);
        return;
    }
    if (!c->local_ok && any_addr(res, nethost_addr_is_local, addr)) {
        proxy_refuse_decided(
            c, 403, SOCKS_NOT_ALLOWED,
            "execgate: network access to %s:%u (%s) refused: %s resolves to the local "
            "or private address %s; only a network_rule naming a local host itself "
            "(an address literal or localhost) reaches those",
            c->host, c->port, c->proto, c->host, addr);
        proxy_conn_unref(c);
        return;
    }
    c->st = ST_CONNECTING;
    proxy_try_connect(c);
    proxy_conn_unref(c);
}

/* The connection may go ahead: look the host up. */
static void
go_ahead(struct conn *c)
{
    report(c, true, NULL);
    c->local_ok = nethost_is_local_name(c->host);
    c->st = ST_RESOLVING;
    char port[8];
    snprintf(port, sizeof port, "%u", c->port);
    const struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    c->gai.data = c;
    int rc = uv_getaddrinfo(c->p->loop, &c->gai, gai_done, c->host, port, &hints);
    if (rc < 0) {
        proxy_refuse_decided(c, 502, SOCKS_FAILURE, "execgate: cannot resolve %s: %s", c->host,
                             uv_strerror(rc));
        return;
    }
    c->gai_pending = true;
    c->refs++;
}

static void
decide(struct conn *c)
{
    struct netproxy *p = c->p;
    const struct rules_policy *policy = p->hooks.policy ? p->hooks.policy(p->hooks.arg) : NULL;
    struct rules_network_result r = rules_policy_network_check(policy, c->host, c->proto);
    c->decision = r.decision == RULES_DECISION_NONE ? "none" : rules_decision_name(r.decision);
    if (r.justification && !(c->rule_copy = strdup(r.justification))) {
        proxy_conn_close(c);
        return;
    }
    switch (r.decision) {
    case RULES_DECISION_ALLOW:
        go_ahead(c);
        return;
    case RULES_DECISION_FORBIDDEN:
        proxy_refuse_decided(
            c, 403, SOCKS_NOT_ALLOWED,
            "execgate: network access to %s:%u (%s) is forbidden by a network_rule: %s", c->host,
            c->port, c->proto, r.justification ? r.justification : "(no justification given)");
        return;
    case RULES_DECISION_NONE:
        proxy_refuse_decided(
            c, 403, SOCKS_NOT_ALLOWED,
            "execgate: network access to %s:%u (%s) is not allowed: no network_rule "
            "names %s. To allow it, add to a .rules file: network_rule(host=\"%s\", "
            "protocol=\"%s\", decision=\"allow\")",
            c->host, c->port, c->proto, c->host, c->host, c->proto);
        return;
    case RULES_DECISION_PROMPT:
        break;
    }
    char *key = NULL;
    if (asprintf(&key, "%s %s", c->proto, c->host) < 0) {
        proxy_conn_close(c);
        return;
    }
    bool approved = session_has(c->l->session, key);
    free(key);
    if (approved) {
        go_ahead(c);
        return;
    }
    if (!p->hooks.ask) {
        proxy_refuse_decided(
            c, 403, SOCKS_NOT_ALLOWED,
            "execgate: network access to %s:%u (%s) needs the person's approval, and "
            "this session cannot ask",
            c->host, c->port, c->proto);
        return;
    }
    struct netproxy_ask *ask = malloc(sizeof *ask);
    if (!ask) {
        proxy_conn_close(c);
        return;
    }
    ask->c = c;
    c->ask = ask;
    c->st = ST_ASKING;
    struct netproxy_event what = conn_event(c, "prompt");
    p->hooks.ask(p->hooks.arg, ask, &what);
}

void
netproxy_ask_answer(struct netproxy_ask *ask, enum netproxy_answer answer)
{
    if (!ask)
        return;
    struct conn *c = ask->c;
    free(ask);
    if (!c)
        return;
    c->ask = NULL;
    if (answer == NETPROXY_UNASKED) {
        proxy_refuse_decided(
            c, 403, SOCKS_NOT_ALLOWED,
            "execgate: network access to %s:%u (%s) needs the person's approval, and "
            "the MCP client could not be asked",
            c->host, c->port, c->proto);
        return;
    }
    if (answer == NETPROXY_DENIED) {
        proxy_refuse_decided(c, 403, SOCKS_NOT_ALLOWED,
                             "execgate: network access to %s:%u (%s) was declined by the person",
                             c->host, c->port, c->proto);
        return;
    }
    if (answer == NETPROXY_APPROVED_FOR_SESSION && c->l)
        session_add(c->l->session, c->proto, c->host);
    go_ahead(c);
}

/* Takes the destination host[0..len):port and decides on it. */
void
proxy_destination(struct conn *c, const char *host, size_t len, unsigned port, const char *proto)
{
    c->proto = proto;
    c->port = port;
    c->host = nethost_normalize(host, len);
    if (!c->host) {
        if (errno == ENOMEM)
            proxy_conn_close(c);
        else
            proxy_refuse(c, 400, SOCKS_HOST_UNREACHABLE,
                         "execgate: the destination is not a host name or address");
        return;
    }
    if (port == 0 || port > 65535) {
        proxy_refuse(c, 400, SOCKS_HOST_UNREACHABLE,
                     "execgate: the destination port is not 1-65535");
        return;
    }
    decide(c);
}

/* ---- reading ---- */

/* Appends n bytes to `in`.  Returns 0, or -1 (too much or no memory:
 * the connection was refused or closed). */
static int
append_in(struct conn *c, const char *data, size_t n)
{
    if (c->in.len + n > NETPROXY_HEAD_MAX) {
        proxy_refuse(c, 431, SOCKS_FAILURE, "execgate: the request head is too long for the proxy");
        return -1;
    }
    if (buf_append(&c->in, data, n) != 0) {
        proxy_conn_close(c);
        return -1;
    }
    return 0;
}

static bool
head_complete(const struct conn *c, size_t old)
{
    size_t from = old > 3 ? old - 3 : 0;
    for (size_t i = from; i < c->in.len; i++)
        if (c->in.data[i] == '\n' && ((i >= 1 && c->in.data[i - 1] == '\n') ||
                                      (i >= 3 && memcmp(c->in.data + i - 3, "\r\n\r\n", 4) == 0)))
            return true;
    return false;
}

static void
client_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    if (n == 0) {
        free(buf->base);
        return;
    }
    if (c->st == ST_REFUSING) {
        free(buf->base); /* refused: the shutdown's end closes */
        if (n < 0)
            uv_read_stop(s);
        return;
    }
    if (n < 0) {
        free(buf->base);
        if (n != UV_EOF || (c->st != ST_RELAY && c->st != ST_FORWARD)) {
            proxy_conn_close(c);
            return;
        }
        c->c.eof = true;
        uv_read_stop(s);
        if (c->st == ST_RELAY)
            proxy_side_shutdown(c, &c->u);
        maybe_done(c);
        return;
    }
    if (c->st == ST_RELAY) {
        proxy_send_to(c, &c->u, &c->c, buf->base, buf->base, (size_t)n);
        return;
    }
    if (c->st == ST_FORWARD) {
        if (c->msg_done) {
            free(buf->base); /* one request per connection */
            return;
        }
        size_t used = http_parser_execute(&c->hp, &proxy_body_settings, buf->base, (size_t)n);
        enum http_errno e = HTTP_PARSER_ERRNO(&c->hp);
        if (e != HPE_OK && e != HPE_PAUSED) {
            free(buf->base);
            proxy_conn_close(c);
            return;
        }
        if (e == HPE_PAUSED) {
            c->msg_done = true;
            uv_read_stop(s);
        }
        proxy_send_to(c, &c->u, &c->c, buf->base, buf->base, used);
        return;
    }
    size_t old = c->in.len;
    int rc = append_in(c, buf->base, (size_t)n);
    free(buf->base);
    if (rc < 0)
        return;
    if (c->st == ST_SNIFF)
        c->st = c->in.data[0] == 5 ? ST_SOCKS_GREET : ST_HTTP_HEAD;
    if (c->st == ST_SOCKS_GREET || c->st == ST_SOCKS_REQ) {
        c->kind = K_SOCKS;
        proxy_socks_input(c);
    } else if (c->st == ST_HTTP_HEAD && head_complete(c, old)) {
        uv_read_stop(s);
        proxy_parse_head(c);
    }
}

static void
upstream_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    if (n == 0) {
        free(buf->base);
        return;
    }
    if (n < 0) {
        free(buf->base);
        if (n != UV_EOF) {
            proxy_conn_close(c);
            return;
        }
        c->u.eof = true;
        uv_read_stop(s);
        proxy_side_shutdown(c, &c->c);
        maybe_done(c);
        return;
    }
    proxy_send_to(c, &c->c, &c->u, buf->base, buf->base, (size_t)n);
}

/* ---- listening ---- */

static void
on_accept(uv_stream_t *server, int status)
{
    struct netproxy_listener *l = server->data;
    struct netproxy *p = l->p;
    if (status < 0)
        return; /* nothing to take; the next one may work */
    struct conn *c = calloc(1, sizeof *c);
    if (!c || uv_tcp_init(p->loop, &c->c.tcp) < 0) {
        /* Out of memory: the connection stays in the backlog, and libuv
         * offers it again when the next one arrives. */
        free(c);
        return;
    }
    c->p = p;
    c->refs = 1;
    list_init(&c->node);
    c->c.open = true;
    c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -1;
    c->fd_c = c->fd_u = -1;
    c->c.tcp.data = c;
    c->st = ST_SNIFF;
    p->n_conns++;
    c->l = l;
    list_insert_head(&l->conns, &c->node);
    if (uv_accept(server, (uv_stream_t *)&c->c.tcp) < 0 || p->n_conns > NETPROXY_CONN_MAX ||
        proxy_side_read_start(c, &c->c) < 0) {
        proxy_conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->c.tcp, 1);
}

struct netproxy *
netproxy_new(uv_loop_t *loop, const struct netproxy_hooks *hooks)
{
    struct netproxy *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->loop = loop;
    p->hooks = *hooks;
    list_init(&p->listeners);
    const char *knob = getenv("EXECGATE_NETPROXY_NO_SPLICE");
    p->no_splice = knob && strcmp(knob, "1") == 0;
    return p;
}

static void
listener_closed(uv_handle_t *h)
{
    struct netproxy_listener *l = h->data;
    struct netproxy *p = l->p;
    netproxy_session_unref(l->session);
    free(l->call_id);
    free(l->command);
    free(l);
    p->n_listeners--;
    proxy_maybe_free(p);
}

void
netproxy_listener_close(struct netproxy_listener *l)
{
    if (!l)
        return;
    while (!list_empty(&l->conns))
        proxy_conn_close(list_entry(l->conns.next, struct conn, node));
    list_unlink(&l->node);
    uv_close((uv_handle_t *)&l->tcp, listener_closed);
}

int
netproxy_listen_fd(struct netproxy *p, int fd, const char *call_id, const char *command,
                   struct netproxy_session *session, void *owner, struct netproxy_listener **out,
                   char **why)
{
    *out = NULL;
    *why = NULL;
    struct netproxy_listener *l = calloc(1, sizeof *l);
    if (!l || !(l->call_id = strdup(call_id ? call_id : "")) ||
        !(l->command = strdup(command ? command : ""))) {
        if (l) {
            free(l->call_id);
            free(l);
        }
        close(fd);
        *why = strdup("execgate: network proxy: out of memory");
        return -ENOMEM;
    }
    l->p = p;
    l->owner = owner;
    list_init(&l->node);
    list_init(&l->conns);
    int rc = uv_tcp_init(p->loop, &l->tcp);
    if (rc < 0) {
        free(l->call_id);
        free(l->command);
        free(l);
        close(fd);
        if (asprintf(why, "execgate: network proxy: %s", uv_strerror(rc)) < 0)
            *why = NULL;
        return rc;
    }
    l->tcp.data = l;
    l->session = session_ref(session); /* from here on listener_closed lets it go */
    p->n_listeners++;
    list_insert_head(&p->listeners, &l->node);
    rc = uv_tcp_open(&l->tcp, fd);
    if (rc < 0)
        close(fd);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&l->tcp, SOMAXCONN, on_accept);
    if (rc < 0) {
        if (asprintf(why, "execgate: network proxy: cannot listen on the sandbox's socket: %s",
                     uv_strerror(rc)) < 0)
            *why = NULL;
        netproxy_listener_close(l);
        return rc;
    }
    *out = l;
    return 0;
}

void
netproxy_free(struct netproxy *p)
{
    if (!p)
        return;
    p->freeing = true;
    while (!list_empty(&p->listeners))
        netproxy_listener_close(list_entry(p->listeners.next, struct netproxy_listener, node));
    proxy_maybe_free(p);
}

size_t
netproxy_conn_count(const struct netproxy *p)
{
    return p ? p->n_conns : 0;
}
