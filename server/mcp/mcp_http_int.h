/*
 * mcp_http_int: what the HTTP transport's two files share (mcp_http.c:
 * listeners, connections and requests; mcp_http_session.c: sessions and
 * the messages that go to their clients).  Not an interface: nothing
 * else includes it.
 */
#ifndef EXECGATE_SERVER_MCP_HTTP_INT_H
#define EXECGATE_SERVER_MCP_HTTP_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/list.h"
#include "server/mcp/call_peer.h"
#include "server/mcp/http_conn.h"
#include "server/mcp/mcp_http.h"

struct listener {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } u;
    struct mcp_http *h;
    bool tcp;
    bool open;
    char *path; /* a Unix socket's, removed when it closes */
};

struct hsess;
struct hconn;

/* One connection, and what it owes a session. */
struct hconn {
    struct mcp_http *h;
    struct listener *l;
    struct http_conn *c;
    struct hsess *sess; /* while it answers a request of sess, or is its GET stream */
    json_t *ids;        /* the requests it carried, not answered yet */
    json_t *tokens;     /* their progress tokens */
    bool get;
    /* the session whose messages its queue holds, until written (the
     * session's --max-pending-output counts them), and its list of them */
    struct hsess *charged;
    /* a Unix socket's peer: where it runs (call_peer.h); anything but
     * OUTSIDE is refused */
    enum call_peer_origin origin;
    /* until it authenticates (a request passes every check): its peer's
     * user (who may hold MCP_HTTP_MAX_UNAUTHENTICATED_PER_PEER such
     * connections), and its place among them, oldest first */
    bool authed;
    uid_t peer_uid;
    uint64_t accepted_ms;
    struct list unode; /* in unauth, while not authenticated */
    struct list node;  /* in conns: all connections */
    struct list snode; /* in its session's conns */
    struct list cnode; /* in its charged session's charged */
};

struct backlog {
    char *text;
    size_t len;
    struct backlog *next;
};

struct hsess {
    struct mcp_http *h;
    char id[2 * 16 + 1];
    struct mcp_session *ms;
    struct list conns; /* of struct hconn (snode) */
    struct hconn *get;
    uint64_t last_used;
    struct backlog *backlog, **backlog_tail;
    unsigned n_backlog;
    size_t backlog_bytes;
    /* messages dropped from the backlog since the last line that said so:
     * the first drop is logged at once, the rest as one count (on the next
     * sweep, when the stream opens or when the session goes) */
    unsigned long long dropped;
    struct list charged; /* of struct hconn (cnode): connections holding its messages */
    struct list node;    /* in the transport's sessions */
};

#define SESSION_CONN(n) list_entry(n, struct hconn, snode)
#define CHARGED_CONN(n) list_entry(n, struct hconn, cnode)

struct mcp_http {
    uv_loop_t *loop;
    struct mcp_server *s;
    const struct server_options *o;
    struct listener *listeners;
    size_t n_listeners;
    char *token;       /* --token-file's; NULL: none (no TCP listener then) */
    struct list conns; /* of struct hconn (node) */
    unsigned n_conns;
    struct list unauth; /* of struct hconn (unode): not authenticated, oldest first */
    unsigned n_unauth;
    struct list sessions; /* of struct hsess, the newest first */
    unsigned n_sessions;
    uv_timer_t sweep;
    bool sweep_open;
    /* runs make_room again once the connections too young to go are
     * not any more */
    uv_timer_t trim;
    bool trim_open;
    bool shutting_down;
};

/* ---- sessions (mcp_http_session.c) ---- */

/* A new session of h (its MCP session begun), or NULL when out of memory
 * or shutting down. */
struct hsess *hsess_create(struct mcp_http *h);
/* The session with this id, or NULL. */
struct hsess *hsess_find(struct mcp_http *h, const char *id);
/* Ends se's MCP session (its calls killed) and frees se: its GET stream
 * ends, requests still owed an answer get none. */
void hsess_end(struct hsess *se, const char *why);
/* "Mcp-Session-Id: ID\r\n" for se (malloc'd), or NULL. */
char *hsess_header(const struct hsess *se);
/* A notifications/cancelled for a request a connection of se carries:
 * its exchange ends without an answer (an empty event stream). */
void hsess_cancelled(struct hsess *se, const json_t *msg);
/* hc is se's GET stream now: what waited for it goes out. */
void hsess_flush_backlog(struct hsess *se, struct hconn *hc);
/* Logs the messages dropped from se's backlog since it was last said. */
void hsess_report_drops(struct hsess *se);
/* Drops every message waiting for se's GET stream. */
void hsess_backlog_clear(struct hsess *se);
/* hc carries requests of se (or is its GET stream) / no longer owes it
 * anything. */
void hconn_bind(struct hconn *hc, struct hsess *se);
void hconn_unbind(struct hconn *hc);
/* hc's queue no longer holds messages of the session it held them for. */
void hconn_uncharge(struct hconn *hc);

#endif
