/*
 * libFuzzer target for the network proxy's front end (netproxy): the bytes
 * a sandboxed command sends to its proxy listener (SOCKS5 or HTTP: CONNECT
 * or a plain request), through the real listener (netproxy_listen_fd) on a
 * loop of its own.  The first byte of an input chooses how the person
 * answers a question (at once or a turn later; no, nobody asked, yes,
 * yes for the session), whether tunnels splice, and whether the client
 * half-closes; the rest is the client's bytes.  Each input gets a fresh
 * proxy, listener and loop, run until nothing is left, so a leak or a
 * use-after-free on any path is found.
 *
 * Nothing leaves the process.  The rules decide every destination before
 * it is looked up, and only IP literals are ever allowed or approved, so
 * no name reaches DNS.  And allowing them at all needs a network namespace
 * of our own (a user namespace makes one without privileges): there, the
 * only thing listening is our own upstream on 127.0.0.1:UPSTREAM_PORT, and
 * every other address is refused or unreachable.  Where no namespace can
 * be had, no rule allows and no question is approved: every destination is
 * refused, and only the parsing and refusing is fuzzed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "fuzz_peer.h"
#include "rules/policy.h"
#include "server/net/netproxy.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The upstream the seeds name (only inside our own network namespace). */
#define UPSTREAM_PORT 8080
#define MAX_ASKS      8

static bool isolated; /* in a network namespace of our own */
static struct rules_policy *rules;
static uv_loop_t loop;
static uv_tcp_t upstream;
static bool upstream_on;

/* ---- the person ---- */

/* Whether host is an IPv4 or IPv6 literal (nothing to look up). */
static bool
is_ip_literal(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

static uint8_t cfg;
static struct netproxy_ask *pending[MAX_ASKS];
static size_t n_pending;
static const char *asked_host[MAX_ASKS];

static enum netproxy_answer
answer_for(const char *host)
{
    /* only an IP literal, and only in our own namespace, may be approved:
     * an approved name would be looked up */
    bool may_approve = isolated && host && is_ip_literal(host);
    switch ((cfg >> 1) & 3) {
    case 0:
        return NETPROXY_DENIED;
    case 1:
        return NETPROXY_UNASKED;
    case 2:
        return may_approve ? NETPROXY_APPROVED : NETPROXY_DENIED;
    default:
        return may_approve ? NETPROXY_APPROVED_FOR_SESSION : NETPROXY_UNASKED;
    }
}

static const struct rules_policy *
h_policy(void *arg)
{
    (void)arg;
    return rules;
}

static void
h_ask(void *arg, struct netproxy_ask *ask, const struct netproxy_event *what)
{
    (void)arg;
    bool at_once = cfg & 1;
    if (at_once || n_pending == MAX_ASKS) {
        netproxy_ask_answer(ask, answer_for(what->host));
        return;
    }
    /* answered by the driver a few rounds later; the host is checked now
     * (the event's strings are borrowed) */
    asked_host[n_pending] = isolated && is_ip_literal(what->host) ? "127.0.0.1" : NULL;
    pending[n_pending++] = ask;
}

static void
h_event(void *arg, const struct netproxy_event *ev)
{
    (void)arg;
    /* what the audit log reads */
    if (!ev->host || !ev->protocol || !ev->decision || (!ev->allowed && !ev->message))
        abort();
}

static void answer_pending(void);

/* fuzz_peer's on_quiet: the questions asked so far get their answers. */
static bool
answer_when_quiet(void *data)
{
    (void)data;
    if (n_pending == 0)
        return false;
    answer_pending();
    return true;
}

static void
answer_pending(void)
{
    while (n_pending > 0) {
        n_pending--;
        netproxy_ask_answer(pending[n_pending], answer_for(asked_host[n_pending]));
    }
}

/* ---- our own upstream: answers the first bytes with themselves and
 * ends its side; reads to the end ---- */

struct up_conn {
    uv_tcp_t tcp;
    uv_shutdown_t sreq;
    bool answered;
};

static void
up_closed(uv_handle_t *h)
{
    free(h->data);
}

static void
up_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    static char chunk[64 * 1024];
    *buf = uv_buf_init(chunk, sizeof(chunk));
}

static void
up_shut(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status;
}

static void
up_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct up_conn *u = s->data;
    if (n < 0) {
        if (!uv_is_closing((uv_handle_t *)s))
            uv_close((uv_handle_t *)s, up_closed);
        return;
    }
    if (n == 0 || u->answered)
        return;
    u->answered = true;
    static const char head[] = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
    uv_buf_t b[2] = {uv_buf_init((char *)head, sizeof(head) - 1),
                     uv_buf_init(buf->base, (unsigned)(n > 64 ? 64 : n))};
    /* try_write: the chunk is reused; what does not fit is dropped */
    (void)uv_try_write(s, b, 2);
    if (uv_shutdown(&u->sreq, s, up_shut) < 0)
        uv_close((uv_handle_t *)s, up_closed);
}

static void
up_accept(uv_stream_t *server, int status)
{
    if (status < 0)
        return;
    struct up_conn *u = calloc(1, sizeof(*u));
    if (!u || uv_tcp_init(&loop, &u->tcp) < 0)
        abort();
    u->tcp.data = u;
    if (uv_accept(server, (uv_stream_t *)&u->tcp) < 0 ||
        uv_read_start((uv_stream_t *)&u->tcp, up_alloc, up_read) < 0)
        uv_close((uv_handle_t *)&u->tcp, up_closed);
}

/* ---- set-up ---- */

/* A user and network namespace of our own with its loopback up.  Needs a
 * single-threaded process (LLVMFuzzerInitialize runs before libFuzzer's
 * threads and libuv's pool). */
static bool
isolate(void)
{
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
        return false;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = {0};
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    bool up = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 &&
              (ifr.ifr_flags |= IFF_UP, ioctl(fd, SIOCSIFFLAGS, &ifr) == 0);
    if (fd >= 0)
        close(fd);
    return up;
}

static void
add_rule(const char *host, const char *proto, enum rules_decision d, const char *why)
{
    if (rules_policy_add_network_rule(rules, host, proto, d, why) < 0)
        abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    isolated = getenv("EXECGATE_FUZZ_NO_NETNS") == NULL && isolate();
    rules = rules_policy_new();
    if (!rules)
        abort();
    static const char *const protos[] = {"http", "https", "socks5_tcp"};
    for (size_t i = 0; i < 3; i++) {
        if (isolated) {
            add_rule("127.0.0.1", protos[i], RULES_DECISION_ALLOW, "the fuzz upstream");
            add_rule("::1", protos[i], RULES_DECISION_ALLOW, NULL);
        }
        add_rule("127.0.0.2", protos[i], RULES_DECISION_PROMPT, "ask first");
        add_rule("10.0.0.1", protos[i], RULES_DECISION_PROMPT, NULL);
        add_rule("example.com", protos[i], RULES_DECISION_PROMPT, "a name: never approved");
        add_rule("evil.example", protos[i], RULES_DECISION_FORBIDDEN, "no");
        add_rule("192.0.2.1", protos[i], RULES_DECISION_FORBIDDEN, NULL);
    }
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cfg = size > 0 ? data[0] : 0;
    if (size > 0) {
        data++;
        size--;
    }
    bool half_close = !(cfg & 0x10);
    if (setenv("EXECGATE_NETPROXY_NO_SPLICE", (cfg & 0x08) ? "1" : "0", 1) < 0)
        abort();
    if (uv_loop_init(&loop) != 0)
        abort();
    upstream_on = false;
    if (isolated) {
        struct sockaddr_in ua = {.sin_family = AF_INET,
                                 .sin_port = htons(UPSTREAM_PORT),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (uv_tcp_init(&loop, &upstream) != 0 ||
            uv_tcp_bind(&upstream, (const struct sockaddr *)&ua, 0) != 0 ||
            uv_listen((uv_stream_t *)&upstream, 16, up_accept) != 0)
            abort();
        upstream_on = true;
    }
    struct netproxy_hooks hooks = {.policy = h_policy, .ask = h_ask, .event = h_event};
    struct netproxy *p = netproxy_new(&loop, &hooks);
    struct netproxy_session *session = netproxy_session_new();
    if (!p || !session)
        abort();

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 16) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) < 0)
        abort();
    struct netproxy_listener *l = NULL;
    char *why = NULL;
    if (netproxy_listen_fd(p, lfd, "fuzz-call", "curl x", session, NULL, &l, &why) != 0)
        abort();

    int peer = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (peer < 0 || connect(peer, (struct sockaddr *)&a, sizeof(a)) < 0)
        abort();
    fcntl(peer, F_SETFL, O_NONBLOCK);
    /* feed what the proxy takes and read its answers until it closes or
     * nothing moves for a few rounds; questions are answered once things
     * are quiet */
    struct fuzz_peer fp = {.loop = &loop,
                           .fd = peer,
                           .half_close = half_close,
                           .quiet_limit = 4,
                           .on_quiet = answer_when_quiet};
    fuzz_peer_talk(&fp, data, size);
    close(peer);
    /* a question still open is answered (its connection may be gone) */
    answer_pending();
    netproxy_free(p);
    netproxy_session_unref(session);
    /* our upstream's connections close as the proxy's sides do; then the
     * loop must run dry: a lookup or handle left behind hangs here and
     * libFuzzer reports the timeout */
    if (upstream_on)
        uv_close((uv_handle_t *)&upstream, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0)
        abort();
    return 0;
}
