/*
 * netproxy: plain HTTP forwarding, CONNECT and SOCKS5 tunnels decided by
 * network_rule, refusals with their messages, prompts answered for the
 * session, malformed requests, half-closed and many concurrent tunnels.
 * Everything runs on one loop (test servers, clients and the proxy);
 * tests wait on events, never on a clock.  Also nethost's keys and
 * address classes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rules/policy.h"
#include "server/net/nethost.h"
#include "server/net/netproxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

/* ---- a world: loop, proxy, rules, recorded events ---- */

struct world {
    uv_loop_t loop;
    struct rules_policy *rules;
    struct netproxy *proxy;
    struct netproxy_session *session; /* the listener's */
    struct netproxy_listener *listener;
    unsigned proxy_port;
    int n_events, n_allowed;
    char last_message[1024];
    char last_decision[32];
    int n_asks;
    struct netproxy_ask *pending_ask;
    enum netproxy_answer auto_answer;
    bool answer_at_once;
    bool no_ask; /* a question now fails the test */
    int clients_left;
};

static const struct rules_policy *
w_policy(void *arg)
{
    return ((struct world *)arg)->rules;
}

static void
w_event(void *arg, const struct netproxy_event *ev)
{
    struct world *w = arg;
    w->n_events++;
    w->n_allowed += ev->allowed;
    snprintf(w->last_message, sizeof w->last_message, "%s", ev->message ? ev->message : "");
    snprintf(w->last_decision, sizeof w->last_decision, "%s", ev->decision);
    assert_ptr_equal(ev->owner, w);
    assert_string_equal(ev->call_id, "call-7");
    assert_string_equal(ev->command, "curl x");
}

static void
w_ask(void *arg, struct netproxy_ask *ask, const struct netproxy_event *what)
{
    struct world *w = arg;
    w->n_asks++;
    assert_false(w->no_ask);
    assert_ptr_equal(what->owner, w);
    assert_string_equal(what->decision, "prompt");
    if (w->answer_at_once)
        netproxy_ask_answer(ask, w->auto_answer);
    else
        w->pending_ask = ask;
}

static unsigned
port_of(uv_tcp_t *t)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    assert_int_equal(uv_tcp_getsockname(t, (struct sockaddr *)&ss, &len), 0);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* A listener of a call of session (on a new port: w->proxy_port). */
static void
world_listen(struct world *w, struct netproxy_session *session)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 512), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    w->proxy_port = ntohs(a.sin_port);
    char *why = NULL;
    assert_int_equal(
        netproxy_listen_fd(w->proxy, fd, "call-7", "curl x", session, w, &w->listener, &why), 0);
    assert_null(why);
}

static struct world *
world_new(void)
{
    struct world *w = calloc(1, sizeof *w);
    assert_non_null(w);
    assert_int_equal(uv_loop_init(&w->loop), 0);
    w->rules = rules_policy_new();
    struct netproxy_hooks hooks = {.policy = w_policy, .event = w_event, .ask = w_ask, .arg = w};
    w->proxy = netproxy_new(&w->loop, &hooks);
    assert_non_null(w->proxy);
    w->session = netproxy_session_new();
    assert_non_null(w->session);
    world_listen(w, w->session);
    return w;
}

static void
world_free(struct world *w)
{
    assert_int_equal(netproxy_conn_count(w->proxy), 0);
    netproxy_free(w->proxy);
    netproxy_session_unref(w->session);
    rules_policy_free(w->rules);
    assert_int_equal(uv_run(&w->loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&w->loop), 0);
    free(w);
}

/* ---- test servers: echo, and HTTP that answers "hello" ---- */

struct server {
    uv_tcp_t tcp;
    struct world *w;
    bool http;
    char head[4096]; /* the last request head the HTTP server got */
    size_t n_head;
    unsigned port;
};

struct sconn {
    uv_tcp_t tcp;
    struct server *s;
    char buf[8192];
    size_t n;
    bool answered;
};

struct wbuf {
    uv_write_t req;
    char *data;
};

static void
free_handle(uv_handle_t *h)
{
    free(h->data);
}

static void
wrote(uv_write_t *req, int status)
{
    (void)status;
    struct wbuf *b = (struct wbuf *)req;
    free(b->data);
    free(b);
}

static void
send_bytes(uv_stream_t *s, const void *data, size_t n)
{
    struct wbuf *b = malloc(sizeof *b);
    assert_non_null(b);
    b->data = malloc(n ? n : 1);
    memcpy(b->data, data, n);
    uv_buf_t buf = uv_buf_init(b->data, (unsigned)n);
    assert_int_equal(uv_write(&b->req, s, &buf, 1, wrote), 0);
}

static void
alloc64k(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    *buf = uv_buf_init(malloc(65536), 65536);
}

static void
shut_then_nothing(uv_shutdown_t *req, int status)
{
    (void)status;
    free(req);
}

/* A test server's connection ends once its half-close is sent. */
static void
sconn_shut(uv_shutdown_t *req, int status)
{
    (void)status;
    if (!uv_is_closing((uv_handle_t *)req->handle))
        uv_close((uv_handle_t *)req->handle, free_handle);
    free(req);
}

static void
sconn_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct sconn *c = st->data;
    if (n < 0) {
        free(buf->base);
        if (n == UV_EOF && !c->s->http) {
            /* Echo the half-close back once everything was echoed. */
            uv_shutdown_t *req = malloc(sizeof *req);
            uv_read_stop(st);
            if (uv_shutdown(req, st, sconn_shut) < 0) {
                free(req);
                uv_close((uv_handle_t *)st, free_handle);
            }
            return;
        }
        if (!uv_is_closing((uv_handle_t *)st))
            uv_close((uv_handle_t *)st, free_handle);
        return;
    }
    if (!c->s->http) {
        if (n > 0)
            send_bytes(st, buf->base, (size_t)n);
        free(buf->base);
        return;
    }
    size_t take = (size_t)n < sizeof c->buf - c->n ? (size_t)n : sizeof c->buf - c->n;
    memcpy(c->buf + c->n, buf->base, take);
    c->n += take;
    free(buf->base);
    char *end = memmem(c->buf, c->n, "\r\n\r\n", 4);
    if (end && !c->answered) {
        c->answered = true;
        size_t h = (size_t)(end - c->buf) + 4;
        memcpy(c->s->head, c->buf, h < sizeof c->s->head ? h : sizeof c->s->head - 1);
        c->s->n_head = h;
        static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        send_bytes(st, resp, sizeof resp - 1);
        uv_shutdown_t *req = malloc(sizeof *req);
        assert_int_equal(uv_shutdown(req, st, shut_then_nothing), 0);
    }
}

static void
server_accept(uv_stream_t *st, int status)
{
    assert_int_equal(status, 0);
    struct server *s = st->data;
    struct sconn *c = calloc(1, sizeof *c);
    c->s = s;
    assert_int_equal(uv_tcp_init(st->loop, &c->tcp), 0);
    c->tcp.data = c;
    assert_int_equal(uv_accept(st, (uv_stream_t *)&c->tcp), 0);
    assert_int_equal(uv_read_start((uv_stream_t *)&c->tcp, alloc64k, sconn_read), 0);
}

static struct server *
server_new(struct world *w, bool http)
{
    struct server *s = calloc(1, sizeof *s);
    s->w = w;
    s->http = http;
    assert_int_equal(uv_tcp_init(&w->loop, &s->tcp), 0);
    s->tcp.data = s;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&s->tcp, (struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&s->tcp, 512, server_accept), 0);
    s->port = port_of(&s->tcp);
    return s;
}

static void
server_free(struct server *s)
{
    uv_close((uv_handle_t *)&s->tcp, free_handle);
}

/* ---- clients: send bytes (then half-close), read everything ---- */

struct client {
    uv_tcp_t tcp;
    uv_connect_t creq;
    struct world *w;
    char *send;
    size_t n_send;
    char *got;
    size_t n_got;
    bool done;
};

static void
client_closed(uv_handle_t *h)
{
    struct client *c = h->data;
    c->done = true;
    if (--c->w->clients_left == 0)
        uv_stop(h->loop);
}

static void
client_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct client *c = st->data;
    if (n > 0) {
        c->got = realloc(c->got, c->n_got + (size_t)n + 1);
        memcpy(c->got + c->n_got, buf->base, (size_t)n);
        c->n_got += (size_t)n;
        c->got[c->n_got] = '\0';
    }
    free(buf->base);
    if (n < 0)
        uv_close((uv_handle_t *)st, client_closed);
}

static void
client_connected(uv_connect_t *req, int status)
{
    struct client *c = req->data;
    assert_int_equal(status, 0);
    send_bytes((uv_stream_t *)&c->tcp, c->send, c->n_send);
    uv_shutdown_t *sreq = malloc(sizeof *sreq);
    assert_int_equal(uv_shutdown(sreq, (uv_stream_t *)&c->tcp, shut_then_nothing), 0);
    assert_int_equal(uv_read_start((uv_stream_t *)&c->tcp, alloc64k, client_read), 0);
}

static struct client *
client_start(struct world *w, const void *data, size_t n)
{
    struct client *c = calloc(1, sizeof *c);
    c->w = w;
    c->send = malloc(n);
    memcpy(c->send, data, n);
    c->n_send = n;
    assert_int_equal(uv_tcp_init(&w->loop, &c->tcp), 0);
    c->tcp.data = c;
    c->creq.data = c;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", (int)w->proxy_port, &a);
    assert_int_equal(uv_tcp_connect(&c->creq, &c->tcp, (struct sockaddr *)&a, client_connected), 0);
    w->clients_left++;
    return c;
}

static void
client_free(struct client *c)
{
    free(c->send);
    free(c->got);
    free(c);
}

/* Runs one client to its end; returns what it got (caller frees). */
static char *
exchange(struct world *w, const void *data, size_t n, size_t *n_got)
{
    struct client *c = client_start(w, data, n);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    assert_true(c->done);
    char *got = c->got ? c->got : strdup("");
    if (n_got)
        *n_got = c->n_got;
    c->got = NULL;
    client_free(c);
    return got;
}

static char *
exchange_str(struct world *w, const char *s)
{
    return exchange(w, s, strlen(s), NULL);
}

/* Lets the proxy finish closing its side of every connection. */
static void
settle(struct world *w)
{
    while (netproxy_conn_count(w->proxy) > 0)
        uv_run(&w->loop, UV_RUN_ONCE);
}

/* Ends a test's world and its server: the proxy's connections closed
 * first, then the server, then the rest (world_free checks nothing is left
 * behind). */
static void
world_end(struct world *w, struct server *s)
{
    settle(w);
    server_free(s);
    world_free(w);
}

/* A network rule that allows http to host. */
static void
allow_http(struct world *w, const char *host)
{
    assert_int_equal(
        rules_policy_add_network_rule(w->rules, host, "http", RULES_DECISION_ALLOW, NULL), 0);
}

/* ---- tests ---- */

static void
test_plain_get_allowed(void **state)
{
    (void)state;
    struct world *w = world_new();
    struct server *s = server_new(w, true);
    allow_http(w, "127.0.0.1");
    char req[256];
    snprintf(req, sizeof req,
             "GET http://127.0.0.1:%u/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
             "Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
             s->port, s->port);
    char *got = exchange_str(w, req);
    assert_non_null(strstr(got, "200 OK"));
    assert_non_null(strstr(got, "hello"));
    assert_non_null(strstr(s->head, "GET /x?y=1 HTTP/1.1\r\n"));
    assert_non_null(strstr(s->head, "Connection: close\r\n"));
    assert_non_null(strstr(s->head, "Accept: */*\r\n"));
    assert_null(strstr(s->head, "Proxy-Connection"));
    assert_int_equal(w->n_allowed, 1);
    assert_string_equal(w->last_decision, "allow");
    free(got);
    world_end(w, s);
}

/* A port of the server's own (nethost_own_add) is refused even when a
 * rule allows its host, by every loopback name, and only that port. */
static void
test_own_listener_refused(void **state)
{
    (void)state;
    struct world *w = world_new();
    struct server *s = server_new(w, true);
    allow_http(w, "127.0.0.1");
    allow_http(w, "127.0.0.9");
    struct sockaddr_in own = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    own.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(nethost_own_add((struct sockaddr *)&own), 0);
    const char *hosts[] = {"127.0.0.1", "127.0.0.9"};
    for (size_t i = 0; i < 2; i++) {
        char req[256];
        snprintf(req, sizeof req, "GET http://%s:%u/x HTTP/1.1\r\nHost: %s:%u\r\n\r\n", hosts[i],
                 s->port, hosts[i], s->port);
        char *got = exchange_str(w, req);
        assert_non_null(strstr(got, "403"));
        assert_non_null(strstr(got, "execgate listens there"));
        free(got);
    }
    /* what nethost_is_own says of other addresses */
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)s->port)};
    v6.sin6_addr = in6addr_loopback;
    assert_true(nethost_is_own((struct sockaddr *)&v6));
    inet_pton(AF_INET6, "::ffff:127.0.0.5", &v6.sin6_addr);
    assert_true(nethost_is_own((struct sockaddr *)&v6));
    v6.sin6_addr = in6addr_any;
    assert_true(nethost_is_own((struct sockaddr *)&v6));
    struct sockaddr_in other = own;
    inet_pton(AF_INET, "10.1.2.3", &other.sin_addr);
    assert_false(nethost_is_own((struct sockaddr *)&other));
    other = own;
    other.sin_port = htons((uint16_t)(s->port + 1));
    assert_false(nethost_is_own((struct sockaddr *)&other));
    /* a listener on every address: any address, that port */
    struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = htons(4242)};
    assert_int_equal(nethost_own_add((struct sockaddr *)&any), 0);
    inet_pton(AF_INET, "10.1.2.3", &other.sin_addr);
    other.sin_port = htons(4242);
    assert_true(nethost_is_own((struct sockaddr *)&other));
    nethost_own_clear();
    assert_false(nethost_is_own((struct sockaddr *)&own));
    world_end(w, s);
}

static void
test_no_rule_refused(void **state)
{
    (void)state;
    struct world *w = world_new();
    struct server *s = server_new(w, true);
    char req[256];
    snprintf(req, sizeof req, "GET http://127.0.0.1:%u/x HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n",
             s->port, s->port);
    char *got = exchange_str(w, req);
    assert_non_null(strstr(got, "HTTP/1.1 403 Forbidden"));
    assert_non_null(strstr(got, "no network_rule names 127.0.0.1"));
    assert_non_null(strstr(got, "network_rule(host=\"127.0.0.1\", protocol=\"http\", "
                                "decision=\"allow\")"));
    assert_int_equal(s->n_head, 0); /* nothing reached the server */
    assert_int_equal(w->n_events, 1);
    assert_int_equal(w->n_allowed, 0);
    assert_string_equal(w->last_decision, "none");
    /* An https rule does not open plain http. */
    rules_policy_add_network_rule(w->rules, "127.0.0.1", "https", RULES_DECISION_ALLOW, NULL);
    free(got);
    got = exchange_str(w, req);
    assert_non_null(strstr(got, "403"));
    free(got);
    world_end(w, s);
}

static void
test_forbidden_names_justification(void **state)
{
    (void)state;
    struct world *w = world_new();
    struct server *s = server_new(w, false);
    rules_policy_add_network_rule(w->rules, "127.0.0.1", "https", RULES_DECISION_ALLOW, NULL);
    rules_policy_add_network_rule(w->rules, "127.0.0.1", "https", RULES_DECISION_FORBIDDEN,
                                  "no tunnels to the host");
    char req[128];
    snprintf(req, sizeof req, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\nping", s->port);
    char *got = exchange_str(w, req);
    assert_non_null(strstr(got, "403 Forbidden"));
    assert_non_null(strstr(got, "no tunnels to the host"));
    assert_null(strstr(got, "ping"));
    assert_string_equal(w->last_decision, "forbidden");
    free(got);
    world_end(w, s);
}

static void
test_connect_tunnel_both_ways(void **state)
{
    (void)state;
    struct world *w = world_new();
    struct server *s = server_new(w, false);
    rules_policy_add_network_rule(w->rules, "127.0.0.1", "https", RULES_DECISION_ALLOW, NULL);
    char req[128];
    /* Bytes right after the head go through too; the client's half-close
     * reaches the echo server, whose half-close comes back. */
    snprintf(req, sizeof req, "CONNECT 127.0.0.1:%u HTTP/1.1\r\nHost: x\r\n\r\nping-pong", s->port);
    char *got = exchange_str(w, req);
    assert_string_equal(got, "HTTP/1.1 200 Connection established\r\n\r\nping-pong");
    free(got);
    world_end(w, s);
}

static void
test_socks5(void **state)
{
    (void)state;
    struct world *w = world_new();
    struct server *s = server_new(w, false);
    rules_policy_add_network_rule(w->rules, "localhost", "socks5_tcp", RULES_DECISION_ALLOW, NULL);
    /* By name (socks5h): localhost may resolve to ::1 first, where nobody
     * listens; the next address is tried. */
    unsigned char req[64] = {5, 1, 0, 5, 1, 0, 3, 9};
    memcpy(req + 8, "localhost", 9);
    req[17] = (unsigned char)(s->port >> 8);
    req[18] = (unsigned char)s->port;
    memcpy(req + 19, "data", 4);
    size_t n = 0;
    char *got = exchange(w, req, 23, &n);
    assert_int_equal(n, 2 + 10 + 4);
    assert_int_equal(got[0], 5);
    assert_int_equal(got[1], 0);
    assert_int_equal(got[2], 5);
    assert_int_equal(got[3], 0); /* succeeded */
    assert_memory_equal(got + 12, "data", 4);
    free(got);
    /* By address, not allowed: reply 2, nothing sent on. */
    unsigned char deny[] = {5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 0, 'x'};
    deny[11] = (unsigned char)(s->port >> 8);
    deny[12] = (unsigned char)s->port;
    got = exchange(w, deny, sizeof deny, &n);
    assert_int_equal(n, 2 + 10);
    assert_int_equal(got[3], 2);
    assert_string_equal(w->last_decision, "none");
    free(got);
    /* UDP associate is not offered. */
    unsigned char udp[] = {5, 1, 0, 5, 3, 0, 1, 127, 0, 0, 1, 0, 53};
    got = exchange(w, udp, sizeof udp, &n);
    assert_int_equal(n, 2 + 10);
    assert_int_equal(got[3], 7);
    free(got);
    world_end(w, s);
}

static void
test_prompt_for_session(void **state)
{
    (void)state;
    struct world *w = world_new();
    struct server *s = server_new(w, false);
    rules_policy_add_network_rule(w->rules, "127.0.0.1", "https", RULES_DECISION_PROMPT, "ask me");
    char req[128];
    snprintf(req, sizeof req, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\nhi", s->port);
    /* Declined: refused with a message. */
    w->answer_at_once = true;
    w->auto_answer = NETPROXY_DENIED;
    char *got = exchange_str(w, req);
    assert_non_null(strstr(got, "403"));
    assert_non_null(strstr(got, "declined"));
    assert_int_equal(w->n_asks, 1);
    free(got);
    /* Asked later (the answer comes after the question returns). */
    w->answer_at_once = false;
    struct client *c = client_start(w, req, strlen(req));
    while (!w->pending_ask)
        uv_run(&w->loop, UV_RUN_ONCE);
    assert_int_equal(w->n_asks, 2);
    netproxy_ask_answer(w->pending_ask, NETPROXY_APPROVED_FOR_SESSION);
    w->pending_ask = NULL;
    uv_run(&w->loop, UV_RUN_DEFAULT);
    assert_true(c->done);
    assert_non_null(strstr(c->got, "200 Connection established\r\n\r\nhi"));
    client_free(c);
    /* The session remembers: no question this time. */
    w->no_ask = true;
    got = exchange_str(w, req);
    assert_non_null(strstr(got, "200 Connection established"));
    assert_int_equal(w->n_asks, 2);
    free(got);
    /* Another call of the same session: still no question. */
    settle(w);
    netproxy_listener_close(w->listener);
    world_listen(w, w->session);
    got = exchange_str(w, req);
    assert_non_null(strstr(got, "200 Connection established"));
    assert_int_equal(w->n_asks, 2);
    free(got);
    /* A call of another session (another client) is asked again. */
    settle(w);
    netproxy_listener_close(w->listener);
    struct netproxy_session *other = netproxy_session_new();
    assert_non_null(other);
    world_listen(w, other);
    netproxy_session_unref(other); /* the listener holds it */
    w->no_ask = false;
    w->answer_at_once = true;
    w->auto_answer = NETPROXY_DENIED;
    got = exchange_str(w, req);
    assert_non_null(strstr(got, "declined"));
    assert_int_equal(w->n_asks, 3);
    free(got);
    world_end(w, s);
}

/* A question whose connection went away is still answered safely. */
static void
test_prompt_client_gone(void **state)
{
    (void)state;
    struct world *w = world_new();
    rules_policy_add_network_rule(w->rules, "example.invalid", "https", RULES_DECISION_PROMPT,
                                  NULL);
    struct client *c = client_start(w, "CONNECT example.invalid:443 HTTP/1.1\r\n\r\n", 41);
    while (!w->pending_ask)
        uv_run(&w->loop, UV_RUN_ONCE);
    netproxy_listener_close(w->listener); /* the call ended */
    uv_run(&w->loop, UV_RUN_DEFAULT);
    assert_true(c->done);
    client_free(c);
    netproxy_ask_answer(w->pending_ask, NETPROXY_APPROVED);
    world_free(w);
}

static void
test_malformed(void **state)
{
    (void)state;
    struct world *w = world_new();
    struct server *s = server_new(w, true);
    rules_policy_add_network_rule(w->rules, "127.0.0.1", "http", RULES_DECISION_ALLOW, NULL);
    const char *bad[] = {
        "GARBAGE\r\n\r\n",
        "GET /relative HTTP/1.1\r\n\r\n",
        "GET https://127.0.0.1/ HTTP/1.1\r\n\r\n",
        "CONNECT nohost HTTP/1.1\r\n\r\n",
        "CONNECT a b:1 HTTP/1.1\r\n\r\n",
        "GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: other.example\r\n\r\n",
        "GET http://exa mple/ HTTP/1.1\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *got = exchange_str(w, bad[i]);
        assert_non_null(strstr(got, "HTTP/1.1 400"));
        free(got);
    }
    /* A head that never ends is cut at NETPROXY_HEAD_MAX. */
    size_t n = NETPROXY_HEAD_MAX + 10;
    char *big = malloc(n);
    memset(big, 'a', n);
    memcpy(big, "GET http://127.0.0.1/ HTTP/1.1\r\nX: ", 35);
    char *got = exchange(w, big, n, NULL);
    assert_non_null(strstr(got, "HTTP/1.1 431"));
    free(got);
    free(big);
    /* Truncated SOCKS messages and an early close: just closed. */
    got = exchange(w, "\x05\x01", 2, NULL);
    assert_int_equal(strlen(got), 0);
    free(got);
    got = exchange(w, "\x05\x01\x00\x05\x01\x00\x09\x00", 8, NULL);
    assert_memory_equal(got, "\x05\x00\x05\x08", 4);
    free(got);
    /* And the proxy still serves. */
    char req[200];
    snprintf(req, sizeof req, "GET http://127.0.0.1:%u/ok HTTP/1.1\r\n\r\n", s->port);
    got = exchange_str(w, req);
    assert_non_null(strstr(got, "hello"));
    assert_non_null(strstr(s->head, "Host: 127.0.0.1:"));
    free(got);
    world_end(w, s);
}

static void
test_many_tunnels(void **state)
{
    (void)state;
    struct world *w = world_new();
    struct server *s = server_new(w, false);
    rules_policy_add_network_rule(w->rules, "127.0.0.1", "https", RULES_DECISION_ALLOW, NULL);
    enum { N = 200 };
    struct client *cs[N];
    char expect[N][128];
    for (int i = 0; i < N; i++) {
        char req[128];
        int n =
            snprintf(req, sizeof req, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\ntunnel %d", s->port, i);
        snprintf(expect[i], sizeof expect[i],
                 "HTTP/1.1 200 Connection established\r\n\r\ntunnel %d", i);
        cs[i] = client_start(w, req, (size_t)n);
    }
    uv_run(&w->loop, UV_RUN_DEFAULT);
    for (int i = 0; i < N; i++) {
        assert_true(cs[i]->done);
        assert_string_equal(cs[i]->got, expect[i]);
        client_free(cs[i]);
    }
    world_end(w, s);
}

/* The same tunnels through the streams, as where no pipe can be had. */
static void
test_tunnels_without_splice(void **state)
{
    setenv("EXECGATE_NETPROXY_NO_SPLICE", "1", 1);
    test_connect_tunnel_both_ways(state);
    test_socks5(state);
    test_many_tunnels(state);
    unsetenv("EXECGATE_NETPROXY_NO_SPLICE");
}

static void
test_nethost(void **state)
{
    (void)state;
    char *h = nethost_normalize("[::1]", 5);
    assert_string_equal(h, "::1");
    free(h);
    h = nethost_normalize("Example.COM.", 12);
    assert_string_equal(h, "example.com");
    free(h);
    assert_null(nethost_normalize("", 0));
    assert_null(nethost_normalize("a b", 3));
    assert_null(nethost_normalize("a@b", 3));
    assert_null(nethost_normalize("a/b", 3));
    const char *local[] = {"localhost",  "a.localhost",      "127.0.0.1",   "10.1.2.3",
                           "172.16.0.1", "172.31.255.255",   "192.168.1.1", "169.254.1.1",
                           "100.64.0.1", "0.0.0.0",          "::1",         "fe80::1",
                           "fd00::1",    "::ffff:127.0.0.1", "::"};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        assert_true(nethost_is_local_name(local[i]));
    const char *pub[] = {"8.8.8.8",     "172.32.0.1",  "100.128.0.1",
                         "2001:db8::1", "example.com", "::ffff:8.8.8.8"};
    for (size_t i = 0; i < sizeof pub / sizeof pub[0]; i++)
        assert_false(nethost_is_local_name(pub[i]));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nethost),
        cmocka_unit_test(test_plain_get_allowed),
        cmocka_unit_test(test_no_rule_refused),
        cmocka_unit_test(test_own_listener_refused),
        cmocka_unit_test(test_forbidden_names_justification),
        cmocka_unit_test(test_connect_tunnel_both_ways),
        cmocka_unit_test(test_socks5),
        cmocka_unit_test(test_prompt_for_session),
        cmocka_unit_test(test_prompt_client_gone),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_many_tunnels),
        cmocka_unit_test(test_tunnels_without_splice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
