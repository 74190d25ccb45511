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
#include "server/net/netproxy.h"

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

enum conn_state {
    ST_SNIFF,       /* no byte yet */
    ST_HTTP_HEAD,   /* gathering a request head */
    ST_SOCKS_GREET, /* gathering the SOCKS5 greeting */
    ST_SOCKS_REQ,   /* gathering the SOCKS5 request */
    ST_ASKING,      /* waiting for the person's answer */
    ST_RESOLVING,   /* name lookup */
    ST_CONNECTING,  /* connecting upstream */
    ST_RELAY,       /* tunnel (CONNECT, SOCKS5) */
    ST_FORWARD,     /* plain HTTP request passed on, response coming back */
    ST_REFUSING,    /* refusal written, shutting the client down */
    ST_CLOSING,
};

enum conn_kind { K_HTTP, K_CONNECT, K_SOCKS };

struct side {
    uv_tcp_t tcp;
    bool open;      /* initialised, not yet closed */
    bool eof;       /* read EOF from this side */
    bool shut;      /* shutdown of our writing to it asked */
    bool shut_done; /* and done */
    bool paused;    /* reading stopped for backpressure */
    size_t queued;  /* bytes waiting to be written to this side */
    uv_shutdown_t sreq;
};

struct span {
    size_t off, len;
};

/* One direction of a spliced tunnel: src -> pipe -> dst. */
struct splice_dir {
    int pipe[2];
    size_t in_pipe; /* bytes in the pipe */
    size_t cap;     /* the pipe's size */
    bool eof;       /* src ended */
    bool shut;      /* dst shut down for writing (after eof, pipe empty) */
};

struct conn {
    struct netproxy *p;
    struct netproxy_listener *l; /* NULL once closing */
    struct conn *prev, *next;    /* in l's list */
    int refs;
    enum conn_state st;
    enum conn_kind kind;
    struct side c, u;
    char *in; /* client bytes not yet handled */
    size_t n_in, cap_in;
    http_parser hp;
    struct span url;
    struct span *hdrs; /* name, value, name, value, ... */
    size_t n_hdrs, cap_hdrs;
    bool in_value;
    bool msg_done; /* the plain request's end has been passed on */
    char *host;    /* the rule key */
    unsigned port;
    const char *proto;
    const char *decision; /* the rules' */
    const char *rule;     /* justification (borrowed from the policy at decision time) */
    char *rule_copy;
    char *out_head;  /* plain HTTP: the head to send upstream */
    size_t rest_off; /* where the unsent client bytes begin in `in` */
    struct netproxy_ask *ask;
    uv_getaddrinfo_t gai;
    bool gai_pending;
    struct addrinfo *ai, *ai_next;
    uv_connect_t creq;
    bool local_ok;
    int last_error;
    /* spliced tunnels: the sockets, taken from c and u, each polled */
    bool spliced;
    int fd_c, fd_u;
    uv_poll_t poll_c, poll_u;
    struct splice_dir up, down; /* client -> upstream, upstream -> client */
};

struct netproxy_listener {
    struct netproxy *p;
    struct netproxy_listener *prev, *next;
    uv_tcp_t tcp;
    char *call_id, *command;
    struct netproxy_session *session; /* a reference; NULL: nothing is remembered */
    void *owner;                      /* the hooks': borrowed */
    struct conn *conns;
};

struct netproxy_ask {
    struct conn *c; /* NULL once the connection went away */
};

struct netproxy {
    uv_loop_t *loop;
    struct netproxy_hooks hooks;
    struct netproxy_listener *listeners;
    size_t n_listeners; /* including those whose close is under way */
    size_t n_conns;
    bool freeing;
    bool no_splice; /* $EXECGATE_NETPROXY_NO_SPLICE=1: tunnels read and write (a test knob) */
};

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

static void conn_close(struct conn *c);
static void conn_unref(struct conn *c);
static void client_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void upstream_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void try_connect(struct conn *c);
static const http_parser_settings body_settings;

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

static int
side_read_start(struct conn *c, struct side *s)
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
        conn_close(c);
        conn_unref(c);
        return;
    }
    struct side *from = w->from;
    free(w);
    if (c->st != ST_CLOSING && from && from->paused && from->open && !from->eof &&
        (from == &c->c ? c->u.queued : c->c.queued) <= NETPROXY_QUEUE_MAX / 2) {
        from->paused = false;
        if (side_read_start(c, from) < 0)
            conn_close(c);
    }
    conn_unref(c);
}

/* Queues data[0..len) (whose malloc'd block is base, taken) to side `to`;
 * `from` is the side whose reading pauses while too much waits.  Returns
 * 0, or -1 with the connection closing. */
static int
send_to(struct conn *c, struct side *to, struct side *from, char *base, const char *data,
        size_t len)
{
    if (len == 0) {
        free(base);
        return 0;
    }
    struct wreq *w = malloc(sizeof *w);
    if (!w) {
        free(base);
        conn_close(c);
        return -1;
    }
    *w = (struct wreq){.c = c, .to = to, .from = from, .base = base, .len = len};
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&to->tcp, &b, 1, write_done) < 0) {
        free(base);
        free(w);
        conn_close(c);
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

static int
send_copy(struct conn *c, struct side *to, const void *data, size_t len)
{
    char *b = malloc(len ? len : 1);
    if (!b) {
        conn_close(c);
        return -1;
    }
    memcpy(b, data, len);
    return send_to(c, to, NULL, b, b, len);
}

/* ---- closing ---- */

static void
side_closed(uv_handle_t *h)
{
    conn_unref(h->data);
}

static void
conn_unref(struct conn *c)
{
    if (--c->refs > 0)
        return;
    struct netproxy *p = c->p;
    free(c->in);
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
static void
poll_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    close((uv_poll_t *)h == &c->poll_c ? c->fd_c : c->fd_u);
    conn_unref(c);
}

static void
conn_close(struct conn *c)
{
    if (c->st == ST_CLOSING)
        return;
    c->st = ST_CLOSING;
    if (c->ask) {
        c->ask->c = NULL;
        c->ask = NULL;
    }
    if (c->l) {
        if (c->prev)
            c->prev->next = c->next;
        else
            c->l->conns = c->next;
        if (c->next)
            c->next->prev = c->prev;
        c->l = NULL;
    }
    if (c->gai_pending)
        uv_cancel((uv_req_t *)&c->gai); /* its callback comes, with UV_ECANCELED */
    if (c->c.open) {
        c->c.open = false;
        uv_close((uv_handle_t *)&c->c.tcp, side_closed);
    }
    if (c->u.open) {
        c->u.open = false;
        uv_close((uv_handle_t *)&c->u.tcp, side_closed);
    }
    if (c->spliced) {
        uv_close((uv_handle_t *)&c->poll_c, poll_closed);
        uv_close((uv_handle_t *)&c->poll_u, poll_closed);
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
        conn_close(c);
}

static void
shut_done(uv_shutdown_t *req, int status)
{
    struct conn *c = req->data;
    struct side *s = req == &c->c.sreq ? &c->c : &c->u;
    s->shut_done = true;
    if (status < 0 || c->st == ST_REFUSING)
        conn_close(c);
    else
        maybe_done(c);
    conn_unref(c);
}

static void
side_shutdown(struct conn *c, struct side *s)
{
    if (s->shut || !s->open)
        return;
    s->shut = true;
    s->sreq.data = c;
    if (uv_shutdown(&s->sreq, (uv_stream_t *)&s->tcp, shut_done) < 0) {
        conn_close(c);
        return;
    }
    c->refs++;
}

/* ---- events and refusals ---- */

static void
report(struct conn *c, bool allowed, const char *message)
{
    if (!c->p->hooks.event || !c->l)
        return;
    struct netproxy_event ev = {
        .owner = c->l->owner,
        .call_id = c->l->call_id,
        .command = c->l->command,
        .host = c->host,
        .port = c->port,
        .protocol = c->proto,
        .decision = c->decision ? c->decision : "none",
        .allowed = allowed,
        .rule = c->rule_copy,
        .message = message,
    };
    c->p->hooks.event(c->p->hooks.arg, &ev);
}

/* SOCKS5 reply codes (RFC 1928). */
enum {
    SOCKS_OK = 0,
    SOCKS_FAILURE = 1,
    SOCKS_NOT_ALLOWED = 2,
    SOCKS_HOST_UNREACHABLE = 4,
    SOCKS_REFUSED = 5,
    SOCKS_CMD_UNSUPPORTED = 7,
    SOCKS_ATYP_UNSUPPORTED = 8,
};

static void
socks_reply(struct conn *c, int code)
{
    const unsigned char r[10] = {5, (unsigned char)code, 0, 1, 0, 0, 0, 0, 0, 0};
    send_copy(c, &c->c, r, sizeof r);
}

/* Tells the client no (HTTP status with message as the body, or a SOCKS
 * reply) and closes once that is written. */
static void
refuse(struct conn *c, int http_status, int socks_code, const char *message)
{
    if (c->st == ST_CLOSING || c->st == ST_REFUSING)
        return;
    /* The client's further bytes are read and dropped: closing with
     * bytes unread would reset the connection, and the refusal with it. */
    if (c->c.open)
        (void)side_read_start(c, &c->c); /* UV_EALREADY when it still reads */
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
            conn_close(c);
            return;
        }
        if (send_to(c, &c->c, NULL, resp, resp, (size_t)n) < 0)
            return;
    }
    if (c->st != ST_CLOSING)
        side_shutdown(c, &c->c);
}

/* refuse() for a decision: reported first.  The format attribute lets
 * the compiler check each caller's format (clang's -Wformat-nonliteral
 * refuses vasprintf with an unchecked one). */
__attribute__((format(printf, 4, 5))) static void
refuse_decided(struct conn *c, int http_status, int socks_code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0) {
        conn_close(c);
        return;
    }
    report(c, false, msg);
    refuse(c, http_status, socks_code, msg);
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
    for (size_t i = 0; i < ps->n_keys; i++)
        free(ps->keys[i]);
    free(ps->keys);
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
        conn_unref(c);
        return;
    }
    if (status < 0) {
        refuse_decided(c, 502, SOCKS_HOST_UNREACHABLE, "execgate: cannot resolve %s: %s", c->host,
                       uv_strerror(status));
        conn_unref(c);
        return;
    }
    char addr[INET6_ADDRSTRLEN];
    /* whatever the rules: the server's own listeners (nethost_is_own) */
    if (any_addr(res, nethost_is_own, addr)) {
        refuse_decided(c, 403, SOCKS_NOT_ALLOWED,
                       "execgate: network access to %s:%u (%s) refused: execgate listens there "
                       "(%s port %u is the MCP server's own), and no command it runs may reach "
                       "it, whatever the network rules",
                       c->host, c->port, c->proto, addr, c->port);
        conn_unref(c);
        return;
    }
    if (!c->local_ok && any_addr(res, nethost_addr_is_local, addr)) {
        refuse_decided(c, 403, SOCKS_NOT_ALLOWED,
                       "execgate: network access to %s:%u (%s) refused: %s resolves to the local "
                       "or private address %s; only a network_rule naming a local host itself "
                       "(an address literal or localhost) reaches those",
                       c->host, c->port, c->proto, c->host, addr);
        conn_unref(c);
        return;
    }
    c->st = ST_CONNECTING;
    try_connect(c);
    conn_unref(c);
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
        refuse_decided(c, 502, SOCKS_FAILURE, "execgate: cannot resolve %s: %s", c->host,
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
        conn_close(c);
        return;
    }
    switch (r.decision) {
    case RULES_DECISION_ALLOW:
        go_ahead(c);
        return;
    case RULES_DECISION_FORBIDDEN:
        refuse_decided(c, 403, SOCKS_NOT_ALLOWED,
                       "execgate: network access to %s:%u (%s) is forbidden by a network_rule: %s",
                       c->host, c->port, c->proto,
                       r.justification ? r.justification : "(no justification given)");
        return;
    case RULES_DECISION_NONE:
        refuse_decided(c, 403, SOCKS_NOT_ALLOWED,
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
        conn_close(c);
        return;
    }
    bool approved = session_has(c->l->session, key);
    free(key);
    if (approved) {
        go_ahead(c);
        return;
    }
    if (!p->hooks.ask) {
        refuse_decided(c, 403, SOCKS_NOT_ALLOWED,
                       "execgate: network access to %s:%u (%s) needs the person's approval, and "
                       "this session cannot ask",
                       c->host, c->port, c->proto);
        return;
    }
    struct netproxy_ask *ask = malloc(sizeof *ask);
    if (!ask) {
        conn_close(c);
        return;
    }
    ask->c = c;
    c->ask = ask;
    c->st = ST_ASKING;
    struct netproxy_event what = {
        .owner = c->l->owner,
        .call_id = c->l->call_id,
        .command = c->l->command,
        .host = c->host,
        .port = c->port,
        .protocol = c->proto,
        .decision = "prompt",
        .rule = c->rule_copy,
    };
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
        refuse_decided(c, 403, SOCKS_NOT_ALLOWED,
                       "execgate: network access to %s:%u (%s) needs the person's approval, and "
                       "the MCP client could not be asked",
                       c->host, c->port, c->proto);
        return;
    }
    if (answer == NETPROXY_DENIED) {
        refuse_decided(c, 403, SOCKS_NOT_ALLOWED,
                       "execgate: network access to %s:%u (%s) was declined by the person", c->host,
                       c->port, c->proto);
        return;
    }
    if (answer == NETPROXY_APPROVED_FOR_SESSION && c->l)
        session_add(c->l->session, c->proto, c->host);
    go_ahead(c);
}

/* Takes the destination host[0..len):port and decides on it. */
static void
destination(struct conn *c, const char *host, size_t len, unsigned port, const char *proto)
{
    c->proto = proto;
    c->port = port;
    c->host = nethost_normalize(host, len);
    if (!c->host) {
        if (errno == ENOMEM)
            conn_close(c);
        else
            refuse(c, 400, SOCKS_HOST_UNREACHABLE,
                   "execgate: the destination is not a host name or address");
        return;
    }
    if (port == 0 || port > 65535) {
        refuse(c, 400, SOCKS_HOST_UNREACHABLE, "execgate: the destination port is not 1-65535");
        return;
    }
    decide(c);
}

/* ---- connecting ---- */

/* Writes what it can of data[0..*n) now; advances data and *n.  Returns
 * false when something is left (or the write failed). */
static bool
write_now(struct side *s, const char **data, size_t *n)
{
    while (*n > 0) {
        uv_buf_t b = uv_buf_init((char *)*data, (unsigned)*n);
        int w = uv_try_write((uv_stream_t *)&s->tcp, &b, 1);
        if (w <= 0)
            return false;
        *data += w;
        *n -= (size_t)w;
    }
    return true;
}

#define SPLICE_PIPE_SIZE (256 * 1024) /* asked for each pipe; the kernel may give less */
#define SPLICE_ROUNDS    16           /* splices per direction per wake-up: others' turn */

static void splice_wake(uv_poll_t *p, int status, int events);

/* Moves what it can in one direction.  Returns 0, or -1 on an error. */
static int
splice_pump(struct splice_dir *d, int src, int dst)
{
    for (int round = 0; round < SPLICE_ROUNDS; round++) {
        bool progress = false;
        if (d->in_pipe > 0) {
            ssize_t n =
                splice(d->pipe[0], NULL, dst, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                d->in_pipe -= (size_t)n;
                progress = true;
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                return -1;
            }
        }
        if (!d->eof && d->in_pipe < d->cap) {
            ssize_t n = splice(src, NULL, d->pipe[1], NULL, d->cap - d->in_pipe,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                d->in_pipe += (size_t)n;
                progress = true;
            } else if (n == 0) {
                d->eof = true;
            } else if (errno != EAGAIN && errno != EINTR) {
                return -1;
            }
        }
        if (d->eof && d->in_pipe == 0 && !d->shut) {
            d->shut = true;
            if (shutdown(dst, SHUT_WR) < 0 && errno != ENOTCONN)
                return -1;
        }
        if (!progress)
            break;
    }
    return 0;
}

/* What each socket waits for: to be read while its direction has room
 * and no end, to be written while the other direction has bytes in its
 * pipe (a pump that stopped after SPLICE_ROUNDS with a full pipe is woken
 * so, as well as one that met EAGAIN). */
static void
splice_arm(struct conn *c)
{
    if (c->up.shut && c->down.shut) {
        conn_close(c);
        return;
    }
    int ev_c = (!c->up.eof && c->up.in_pipe < c->up.cap ? UV_READABLE : 0) |
               (c->down.in_pipe > 0 ? UV_WRITABLE : 0);
    int ev_u = (!c->down.eof && c->down.in_pipe < c->down.cap ? UV_READABLE : 0) |
               (c->up.in_pipe > 0 ? UV_WRITABLE : 0);
    int rc = ev_c ? uv_poll_start(&c->poll_c, ev_c, splice_wake) : uv_poll_stop(&c->poll_c);
    if (rc == 0)
        rc = ev_u ? uv_poll_start(&c->poll_u, ev_u, splice_wake) : uv_poll_stop(&c->poll_u);
    if (rc < 0)
        conn_close(c);
}

static void
splice_wake(uv_poll_t *p, int status, int events)
{
    struct conn *c = p->data;
    (void)events;
    if (c->st == ST_CLOSING)
        return;
    if (status < 0 || splice_pump(&c->up, c->fd_c, c->fd_u) < 0 ||
        splice_pump(&c->down, c->fd_u, c->fd_c) < 0) {
        conn_close(c);
        return;
    }
    splice_arm(c);
}

static int
make_pipe(struct splice_dir *d)
{
    if (pipe2(d->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        d->pipe[0] = d->pipe[1] = -1;
        return -1;
    }
    (void)fcntl(d->pipe[1], F_SETPIPE_SZ, SPLICE_PIPE_SIZE); /* less is fine */
    int size = fcntl(d->pipe[1], F_GETPIPE_SZ);
    d->cap = size > 0 ? (size_t)size : 4096;
    return 0;
}

/* Moves the tunnel to splicing: the sockets leave their stream handles
 * (nothing is queued on them) for polls.  Returns 0, or -1 with nothing
 * changed (the streams carry on). */
static int
splice_start(struct conn *c)
{
    uv_os_fd_t oc, ou;
    if (c->p->no_splice || uv_fileno((uv_handle_t *)&c->c.tcp, &oc) < 0 ||
        uv_fileno((uv_handle_t *)&c->u.tcp, &ou) < 0)
        return -1;
    if (make_pipe(&c->up) < 0 || make_pipe(&c->down) < 0)
        return -1; /* conn_unref closes a pipe made */
    int fc = fcntl(oc, F_DUPFD_CLOEXEC, 3);
    int fu = fc >= 0 ? fcntl(ou, F_DUPFD_CLOEXEC, 3) : -1;
    if (fu < 0) {
        if (fc >= 0)
            close(fc);
        return -1;
    }
    /* The stream handles close their own fds now (their epoll entries
     * with them); the copies are the polls'. */
    c->c.open = c->u.open = false;
    uv_close((uv_handle_t *)&c->c.tcp, side_closed);
    uv_close((uv_handle_t *)&c->u.tcp, side_closed);
    c->fd_c = fc;
    c->fd_u = fu;
    if (uv_poll_init_socket(c->p->loop, &c->poll_c, fc) < 0) {
        close(fc);
        close(fu);
        conn_close(c);
        return 0;
    }
    if (uv_poll_init_socket(c->p->loop, &c->poll_u, fu) < 0) {
        close(fu);
        c->fd_u = -1;
        c->poll_c.data = c;
        c->refs++;
        uv_close((uv_handle_t *)&c->poll_c, poll_closed);
        conn_close(c);
        return 0;
    }
    c->poll_c.data = c->poll_u.data = c;
    c->refs += 2;
    c->spliced = true;
    c->st = ST_RELAY;
    splice_arm(c);
    return 0;
}

/* A tunnel's start: the answer to the client and what it sent early go
 * now, then splicing; anything left over is queued on the streams. */
static int
tunnel_start(struct conn *c, const char *answer, size_t n_answer)
{
    const char *rest = c->in + c->rest_off;
    size_t n_rest = c->n_in - c->rest_off;
    if (write_now(&c->c, &answer, &n_answer) && write_now(&c->u, &rest, &n_rest) &&
        splice_start(c) == 0)
        return 1;
    if (send_copy(c, &c->c, answer, n_answer) < 0 || send_copy(c, &c->u, rest, n_rest) < 0)
        return -1;
    c->st = ST_RELAY;
    return 0;
}

static void
connected(struct conn *c)
{
    if (c->kind == K_CONNECT || c->kind == K_SOCKS) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        static const char socks_ok[10] = {5, SOCKS_OK, 0, 1, 0, 0, 0, 0, 0, 0};
        int rc = c->kind == K_CONNECT ? tunnel_start(c, ok, sizeof ok - 1)
                                      : tunnel_start(c, socks_ok, sizeof socks_ok);
        if (rc != 0)
            return; /* spliced (or closing) */
    } else {
        char *head = c->out_head;
        c->out_head = NULL;
        if (send_to(c, &c->u, NULL, head, head, strlen(head)) < 0)
            return;
        c->st = ST_FORWARD;
        /* The parser stopped on the head's last byte: the body (if any)
         * follows, up to the message's end. */
        http_parser_pause(&c->hp, 0);
        size_t from = c->rest_off - 1;
        size_t n = http_parser_execute(&c->hp, &body_settings, c->in + from, c->n_in - from);
        enum http_errno e = HTTP_PARSER_ERRNO(&c->hp);
        if (e != HPE_OK && e != HPE_PAUSED) {
            conn_close(c);
            return;
        }
        c->msg_done = e == HPE_PAUSED;
        if (n > 1 && send_copy(c, &c->u, c->in + c->rest_off, n - 1) < 0)
            return;
    }
    free(c->in);
    c->in = NULL;
    c->n_in = c->cap_in = c->rest_off = 0;
    if (side_read_start(c, &c->u) < 0 || (!c->msg_done && side_read_start(c, &c->c) < 0))
        conn_close(c);
}

/* The next address is tried once the failed handle has closed: its memory
 * is reused, and a handle is never initialised while its close is pending. */
static void
retry_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    if (c->st != ST_CLOSING)
        try_connect(c);
    conn_unref(c);
}

static void
retry_next(struct conn *c)
{
    c->u.open = false;
    uv_close((uv_handle_t *)&c->u.tcp, retry_closed);
}

static void
connect_done(uv_connect_t *req, int status)
{
    struct conn *c = req->data;
    if (c->st == ST_CLOSING) {
        conn_unref(c);
        return;
    }
    if (status == 0) {
        connected(c);
    } else {
        c->last_error = status;
        retry_next(c);
    }
    conn_unref(c);
}

static void
try_connect(struct conn *c)
{
    while (c->ai_next) {
        struct addrinfo *a = c->ai_next;
        c->ai_next = a->ai_next;
        if ((!c->local_ok && nethost_addr_is_local(a->ai_addr)) || nethost_is_own(a->ai_addr))
            continue;
        int rc = uv_tcp_init(c->p->loop, &c->u.tcp);
        if (rc < 0) {
            c->last_error = rc;
            break;
        }
        c->u.tcp.data = c;
        c->u.open = true;
        c->refs++;
        c->creq.data = c;
        rc = uv_tcp_connect(&c->creq, &c->u.tcp, a->ai_addr, connect_done);
        if (rc == 0) {
            c->refs++;
            uv_tcp_nodelay(&c->u.tcp, 1);
            return;
        }
        c->last_error = rc;
        retry_next(c);
        return;
    }
    int e = c->last_error ? c->last_error : UV_EHOSTUNREACH;
    refuse_decided(c, 502, e == UV_ECONNREFUSED ? SOCKS_REFUSED : SOCKS_HOST_UNREACHABLE,
                   "execgate: cannot connect to %s:%u: %s", c->host, c->port, uv_strerror(e));
}

/* ---- HTTP heads ---- */

static struct conn *
conn_of(http_parser *hp)
{
    return hp->data;
}

static int
on_url(http_parser *hp, const char *at, size_t len)
{
    struct conn *c = conn_of(hp);
    size_t off = (size_t)(at - c->in);
    if (c->url.len && c->url.off + c->url.len == off)
        c->url.len += len;
    else
        c->url = (struct span){off, len};
    return 0;
}

static int
add_span(struct conn *c, const char *at, size_t len, bool value)
{
    size_t off = (size_t)(at - c->in);
    if (value == c->in_value && c->n_hdrs > 0) {
        struct span *s = &c->hdrs[c->n_hdrs - 1];
        if (s->off + s->len == off) {
            s->len += len;
            return 0;
        }
    }
    if (!value && c->n_hdrs % 2 == 1)
        return -1; /* a name without a value cannot happen; refuse it if it does */
    if (c->n_hdrs == c->cap_hdrs) {
        size_t cap = c->cap_hdrs ? 2 * c->cap_hdrs : 32;
        struct span *h = realloc(c->hdrs, cap * sizeof *h);
        if (!h)
            return -1;
        c->hdrs = h;
        c->cap_hdrs = cap;
    }
    c->hdrs[c->n_hdrs++] = (struct span){off, len};
    c->in_value = value;
    return 0;
}

static int
on_field(http_parser *hp, const char *at, size_t len)
{
    return add_span(conn_of(hp), at, len, false);
}

static int
on_value(http_parser *hp, const char *at, size_t len)
{
    struct conn *c = conn_of(hp);
    if (c->n_hdrs % 2 == 1 || (c->in_value && c->n_hdrs > 0))
        return add_span(c, at, len, true);
    return -1;
}

static int
on_headers_complete(http_parser *hp)
{
    http_parser_pause(hp, 1);
    return 0;
}

static int
on_message_complete(http_parser *hp)
{
    http_parser_pause(hp, 1);
    return 0;
}

/* After the head: only the message's end matters (the body's bytes are
 * passed on as they came, chunked or not). */
static const http_parser_settings body_settings = {
    .on_message_complete = on_message_complete,
};

static const http_parser_settings head_settings = {
    .on_url = on_url,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

static bool
span_is(const struct conn *c, struct span s, const char *word)
{
    return s.len == strlen(word) && strncasecmp(c->in + s.off, word, s.len) == 0;
}

/* Hop-by-hop and proxy headers, not passed on. */
static bool
dropped_header(const struct conn *c, struct span name)
{
    static const char *const drop[] = {"connection", "proxy-connection", "proxy-authorization",
                                       "keep-alive", "upgrade",          "te"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
        if (span_is(c, name, drop[i]))
            return true;
    return false;
}

/* Builds the origin-form head for upstream.  Returns 0 or -1 (OOM). */
static int
build_out_head(struct conn *c, const char *path, size_t n_path, bool have_host)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return -1;
    fprintf(f, "%s %.*s HTTP/1.1\r\n", http_method_str((enum http_method)c->hp.method), (int)n_path,
            path);
    for (size_t i = 0; i + 1 < c->n_hdrs; i += 2) {
        struct span n = c->hdrs[i], v = c->hdrs[i + 1];
        if (!dropped_header(c, n))
            fprintf(f, "%.*s: %.*s\r\n", (int)n.len, c->in + n.off, (int)v.len, c->in + v.off);
    }
    if (!have_host)
        fprintf(f, "Host: %s:%u\r\n", c->host, c->port);
    fputs("Connection: close\r\n\r\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return -1;
    }
    c->out_head = buf;
    return 0;
}

static void
parse_head(struct conn *c)
{
    http_parser_init(&c->hp, HTTP_REQUEST);
    c->hp.data = c;
    size_t n = http_parser_execute(&c->hp, &head_settings, c->in, c->n_in);
    if (HTTP_PARSER_ERRNO(&c->hp) != HPE_PAUSED || c->url.len == 0) {
        refuse(c, 400, 0, "execgate: the proxy could not parse this request");
        return;
    }
    c->rest_off = n + 1; /* the parser paused on the head's last byte */
    const char *url = c->in + c->url.off;
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (c->hp.method == HTTP_CONNECT) {
        c->kind = K_CONNECT;
        if (http_parser_parse_url(url, c->url.len, 1, &u) != 0) {
            refuse(c, 400, 0, "execgate: CONNECT needs HOST:PORT");
            return;
        }
        destination(c, url + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len, u.port, "https");
        return;
    }
    c->kind = K_HTTP;
    struct span host_hdr = {0, 0};
    bool have_host = false;
    for (size_t i = 0; i + 1 < c->n_hdrs; i += 2)
        if (span_is(c, c->hdrs[i], "host")) {
            host_hdr = c->hdrs[i + 1];
            have_host = true;
        }
    if (http_parser_parse_url(url, c->url.len, 0, &u) != 0 || !(u.field_set & (1 << UF_SCHEMA)) ||
        !(u.field_set & (1 << UF_HOST))) {
        refuse(c, 400, 0,
               "execgate: a request through the proxy needs an absolute http:// URL (use "
               "CONNECT for https)");
        return;
    }
    if (u.field_data[UF_SCHEMA].len != 4 ||
        strncasecmp(url + u.field_data[UF_SCHEMA].off, "http", 4) != 0) {
        refuse(c, 400, 0, "execgate: only http:// URLs are forwarded (use CONNECT for https)");
        return;
    }
    const char *host = url + u.field_data[UF_HOST].off;
    size_t n_host = u.field_data[UF_HOST].len;
    unsigned port = (u.field_set & (1 << UF_PORT)) ? u.port : 80;
    if (have_host) {
        /* The Host header must name the host connected to: a request
         * cannot be decided for one host and sent as another. */
        struct http_parser_url hu;
        http_parser_url_init(&hu);
        char *h = nethost_normalize(host, n_host);
        const char *hv = c->in + host_hdr.off;
        bool same = false;
        if (h && http_parser_parse_url(hv, host_hdr.len, 1, &hu) == 0) {
            char *hh =
                nethost_normalize(hv + hu.field_data[UF_HOST].off, hu.field_data[UF_HOST].len);
            same = hh && strcmp(hh, h) == 0;
            free(hh);
        } else if (h) {
            char *hh = nethost_normalize(hv, host_hdr.len);
            same = hh && strcmp(hh, h) == 0;
            free(hh);
        }
        free(h);
        if (!same) {
            refuse(c, 400, 0, "execgate: the Host header names another host than the URL");
            return;
        }
    }
    const char *path = "/";
    size_t n_path = 1;
    if (u.field_set & (1 << UF_PATH)) {
        path = url + u.field_data[UF_PATH].off;
        n_path = c->url.len - u.field_data[UF_PATH].off;
        if (u.field_set & (1 << UF_FRAGMENT))
            n_path = u.field_data[UF_FRAGMENT].off - 1 - u.field_data[UF_PATH].off;
    }
    c->host = nethost_normalize(host, n_host);
    if (!c->host) {
        refuse(c, 400, 0, "execgate: the destination is not a host name or address");
        return;
    }
    c->port = port;
    if (build_out_head(c, path, n_path, have_host) < 0) {
        conn_close(c);
        return;
    }
    char *h = c->host;
    c->host = NULL;
    destination(c, h, strlen(h), port, "http");
    free(h);
}

/* ---- SOCKS5 ---- */

static void
socks_input(struct conn *c)
{
    const unsigned char *b = (const unsigned char *)c->in;
    if (c->st == ST_SOCKS_GREET) {
        if (c->n_in < 2 || c->n_in < 2u + b[1])
            return;
        bool no_auth = false;
        for (size_t i = 0; i < b[1]; i++)
            no_auth = no_auth || b[2 + i] == 0;
        if (!no_auth) {
            static const unsigned char none[2] = {5, 0xff};
            uv_read_stop((uv_stream_t *)&c->c.tcp);
            c->st = ST_REFUSING;
            if (send_copy(c, &c->c, none, 2) == 0)
                side_shutdown(c, &c->c);
            return;
        }
        static const unsigned char ok[2] = {5, 0};
        size_t used = 2u + b[1];
        memmove(c->in, c->in + used, c->n_in - used);
        c->n_in -= used;
        c->st = ST_SOCKS_REQ;
        if (send_copy(c, &c->c, ok, 2) < 0)
            return;
        b = (const unsigned char *)c->in;
    }
    if (c->n_in < 5)
        return;
    if (b[0] != 5) {
        conn_close(c);
        return;
    }
    size_t need;
    switch (b[3]) {
    case 1:
        need = 4 + 4 + 2;
        break;
    case 3:
        need = 5u + b[4] + 2;
        break;
    case 4:
        need = 4 + 16 + 2;
        break;
    default:
        refuse(c, 0, SOCKS_ATYP_UNSUPPORTED, "");
        return;
    }
    if (c->n_in < need)
        return;
    if (b[1] != 1) { /* only CONNECT: no rule here reaches UDP or BIND */
        refuse(c, 0, SOCKS_CMD_UNSUPPORTED, "");
        return;
    }
    uv_read_stop((uv_stream_t *)&c->c.tcp);
    c->rest_off = need;
    unsigned port = (unsigned)b[need - 2] << 8 | b[need - 1];
    char addr[INET6_ADDRSTRLEN];
    if (b[3] == 3) {
        destination(c, (const char *)b + 5, b[4], port, "socks5_tcp");
        return;
    }
    if (!inet_ntop(b[3] == 1 ? AF_INET : AF_INET6, b + 4, addr, sizeof addr)) {
        refuse(c, 0, SOCKS_FAILURE, "");
        return;
    }
    destination(c, addr, strlen(addr), port, "socks5_tcp");
}

/* ---- reading ---- */

/* Appends n bytes to `in`.  Returns 0, or -1 (too much or no memory:
 * the connection was refused or closed). */
static int
append_in(struct conn *c, const char *data, size_t n)
{
    if (c->n_in + n > NETPROXY_HEAD_MAX) {
        refuse(c, 431, SOCKS_FAILURE, "execgate: the request head is too long for the proxy");
        return -1;
    }
    if (c->n_in + n > c->cap_in) {
        size_t cap = c->cap_in ? c->cap_in : 1024;
        while (cap < c->n_in + n)
            cap *= 2;
        char *in = realloc(c->in, cap + 1);
        if (!in) {
            conn_close(c);
            return -1;
        }
        c->in = in;
        c->cap_in = cap;
    }
    memcpy(c->in + c->n_in, data, n);
    c->n_in += n;
    c->in[c->n_in] = '\0';
    return 0;
}

static bool
head_complete(const struct conn *c, size_t old)
{
    size_t from = old > 3 ? old - 3 : 0;
    for (size_t i = from; i < c->n_in; i++)
        if (c->in[i] == '\n' && ((i >= 1 && c->in[i - 1] == '\n') ||
                                 (i >= 3 && memcmp(c->in + i - 3, "\r\n\r\n", 4) == 0)))
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
            conn_close(c);
            return;
        }
        c->c.eof = true;
        uv_read_stop(s);
        if (c->st == ST_RELAY)
            side_shutdown(c, &c->u);
        maybe_done(c);
        return;
    }
    if (c->st == ST_RELAY) {
        send_to(c, &c->u, &c->c, buf->base, buf->base, (size_t)n);
        return;
    }
    if (c->st == ST_FORWARD) {
        if (c->msg_done) {
            free(buf->base); /* one request per connection */
            return;
        }
        size_t used = http_parser_execute(&c->hp, &body_settings, buf->base, (size_t)n);
        enum http_errno e = HTTP_PARSER_ERRNO(&c->hp);
        if (e != HPE_OK && e != HPE_PAUSED) {
            free(buf->base);
            conn_close(c);
            return;
        }
        if (e == HPE_PAUSED) {
            c->msg_done = true;
            uv_read_stop(s);
        }
        send_to(c, &c->u, &c->c, buf->base, buf->base, used);
        return;
    }
    size_t old = c->n_in;
    int rc = append_in(c, buf->base, (size_t)n);
    free(buf->base);
    if (rc < 0)
        return;
    if (c->st == ST_SNIFF)
        c->st = c->in[0] == 5 ? ST_SOCKS_GREET : ST_HTTP_HEAD;
    if (c->st == ST_SOCKS_GREET || c->st == ST_SOCKS_REQ) {
        c->kind = K_SOCKS;
        socks_input(c);
    } else if (c->st == ST_HTTP_HEAD && head_complete(c, old)) {
        uv_read_stop(s);
        parse_head(c);
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
            conn_close(c);
            return;
        }
        c->u.eof = true;
        uv_read_stop(s);
        side_shutdown(c, &c->c);
        maybe_done(c);
        return;
    }
    send_to(c, &c->c, &c->u, buf->base, buf->base, (size_t)n);
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
    c->c.open = true;
    c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -1;
    c->fd_c = c->fd_u = -1;
    c->c.tcp.data = c;
    c->st = ST_SNIFF;
    p->n_conns++;
    c->l = l;
    c->next = l->conns;
    if (l->conns)
        l->conns->prev = c;
    l->conns = c;
    if (uv_accept(server, (uv_stream_t *)&c->c.tcp) < 0 || p->n_conns > NETPROXY_CONN_MAX ||
        side_read_start(c, &c->c) < 0) {
        conn_close(c);
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
    while (l->conns)
        conn_close(l->conns);
    if (l->prev)
        l->prev->next = l->next;
    else
        l->p->listeners = l->next;
    if (l->next)
        l->next->prev = l->prev;
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
    l->next = p->listeners;
    if (p->listeners)
        p->listeners->prev = l;
    p->listeners = l;
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
    while (p->listeners)
        netproxy_listener_close(p->listeners);
    proxy_maybe_free(p);
}

size_t
netproxy_conn_count(const struct netproxy *p)
{
    return p ? p->n_conns : 0;
}
