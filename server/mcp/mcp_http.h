/*
 * mcp_http: MCP's Streamable HTTP transport (protocol 2025-06-18 and
 * later) for one server serving many clients (--listen).
 *
 * One endpoint, /mcp, on each listening address: a Unix socket (mode
 * 0600) or a loopback TCP port.  POST carries one client message; an
 * `initialize` without Mcp-Session-Id creates a session (mcp.h) whose id
 * the answer carries in Mcp-Session-Id, which every later request of the
 * client sends.  A request's answer is application/json, or a
 * text/event-stream (SSE) when notifications or requests related to it
 * (progress, log records, elicitation) go out before it.  GET opens the
 * session's stream for the rest (one at a time); DELETE ends the session
 * and kills its calls, as does --session-idle-ms without a request.
 * Resumption (Last-Event-ID) is not offered: events carry no ids, and a
 * message that finds no open stream waits (up to MCP_HTTP_BACKLOG of
 * them) for the session's GET stream.
 *
 * Every request is checked first: on a Unix socket, a peer that runs in
 * one of this server's calls gets 403 (call_peer.h: a command may not
 * drive the server that runs it); an Origin header that is not a loopback
 * origin gets 403 (DNS rebinding); with --token-file (which TCP needs),
 * a request without `Authorization: Bearer TOKEN` gets 401, on every
 * listener.
 */
#ifndef EXECGATE_SERVER_MCP_HTTP_H
#define EXECGATE_SERVER_MCP_HTTP_H

#include <uv.h>

#include "server/mcp/mcp.h"
#include "server/options.h"

/* Connections open at once.  A new one takes the place of the oldest
 * that has not authenticated when all are taken; when every one has,
 * it is closed as it comes. */
#define MCP_HTTP_MAX_CONNECTIONS 512u
/* Connections that have not authenticated yet (no request has passed
 * every check): this many at once, and this many per user at the other end
 * (SO_PEERCRED on Unix sockets, the kernel's socket table on TCP).  Beyond
 * either, the oldest that has had MCP_HTTP_UNAUTHENTICATED_GRACE_MS to
 * send its request is closed (the user's own first; one whose request
 * waits unread is spared).  Each also has --header-timeout-ms for its
 * headers. */
#define MCP_HTTP_MAX_UNAUTHENTICATED          64u
#define MCP_HTTP_MAX_UNAUTHENTICATED_PER_PEER 16u
#define MCP_HTTP_UNAUTHENTICATED_GRACE_MS     1000u
/* Messages kept per session for a GET stream not open yet; the oldest go. */
#define MCP_HTTP_BACKLOG 64u

struct mcp_http;

/*
 * Listens on every --listen address of o (borrowed, as s) for server s,
 * and prints "execgate: listening on URL" for each to stderr.  The
 * server's shutdown closes the listeners and the connections.  Returns
 * NULL with *err (malloc'd; caller frees) naming the address or file and
 * the reason.
 */
struct mcp_http *mcp_http_new(uv_loop_t *loop, struct mcp_server *s, const struct server_options *o,
                              char **err);

/* Frees h once the loop has run dry after the server's shutdown. NULL is
 * a no-op. */
void mcp_http_free(struct mcp_http *h);

#endif
