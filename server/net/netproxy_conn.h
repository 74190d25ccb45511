/*
 * netproxy_conn: one proxied connection (struct conn) and the proxy that
 * holds it, shared by the three files of the network proxy: netproxy.c (a
 * connection's life: accepting, reading, writing, refusing, deciding),
 * netproxy_wire.c (the client's request: an HTTP head or SOCKS5 messages)
 * and netproxy_relay.c (connecting upstream and moving the bytes, spliced
 * where it can).  Only those three include it; everyone else sees
 * netproxy.h.
 */
#ifndef EXECGATE_SERVER_NETPROXY_CONN_H
#define EXECGATE_SERVER_NETPROXY_CONN_H

#include "common/buf.h"
#include "common/list.h"
#include "server/net/netproxy.h"

#include <http_parser.h>
#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

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
    struct list node;            /* in l's conns */
    int refs;
    enum conn_state st;
    enum conn_kind kind;
    struct side c, u;
    struct buf in; /* client bytes not yet handled (NUL after them) */
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
    struct list node; /* in p's listeners */
    uv_tcp_t tcp;
    char *call_id, *command;
    struct netproxy_session *session; /* a reference; NULL: nothing is remembered */
    void *owner;                      /* the hooks': borrowed */
    struct list conns;
};

struct netproxy_ask {
    struct conn *c; /* NULL once the connection went away */
};

struct netproxy {
    uv_loop_t *loop;
    struct netproxy_hooks hooks;
    struct list listeners;
    size_t n_listeners; /* including those whose close is under way */
    size_t n_conns;
    bool freeing;
    bool no_splice; /* $EXECGATE_NETPROXY_NO_SPLICE=1: tunnels read and write (a test knob) */
};

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

/* netproxy.c: a connection's life. */

/* Starts reading side s of c (client or upstream).  0 or a libuv error. */
int proxy_side_read_start(struct conn *c, struct side *s);
/* Queues data[0..len) (inside base, freed when written) for side to;
 * reading from stops while to's queue is over NETPROXY_QUEUE_MAX.  0, or
 * -1 when the write failed (the connection is closing). */
int proxy_send_to(struct conn *c, struct side *to, struct side *from, char *base, const char *data,
                  size_t len);
/* proxy_send_to with a copy of data[0..len). */
int proxy_send_copy(struct conn *c, struct side *to, const void *data, size_t len);
/* Close callbacks of a side's handle and of a spliced socket's poll. */
void proxy_side_closed(uv_handle_t *h);
void proxy_poll_closed(uv_handle_t *h);
/* Drops one of c's references; the last frees it. */
void proxy_conn_unref(struct conn *c);
/* Closes both sides of c (once). */
void proxy_conn_close(struct conn *c);
/* Shuts down our writing to side s of c. */
void proxy_side_shutdown(struct conn *c, struct side *s);
/* Answers the client with a refusal (HTTP status or SOCKS5 code) and
 * reports it; message says why. */
void proxy_refuse(struct conn *c, int http_status, int socks_code, const char *message);
/* proxy_refuse for a destination the rules decided, message formatted. */
void proxy_refuse_decided(struct conn *c, int http_status, int socks_code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The client named host[0..len):port over proto: decide it (the rules,
 * then the session's approvals, then asking a person). */
void proxy_destination(struct conn *c, const char *host, size_t len, unsigned port,
                       const char *proto);

/* netproxy_relay.c: upstream. */

/* Connects to the next address of c's lookup, or refuses when none is left. */
void proxy_try_connect(struct conn *c);
/* Upstream is connected: start the tunnel or send the plain request. */
void proxy_connected(struct conn *c);

/* netproxy_wire.c: the client's request. */

/* The parser settings for a plain request's body, passed on as it comes. */
extern const http_parser_settings proxy_body_settings;
/* A whole HTTP request head is in c->in: parse and act on it. */
void proxy_parse_head(struct conn *c);
/* Handles the SOCKS5 bytes in c->in (greeting, then request). */
void proxy_socks_input(struct conn *c);

#endif
