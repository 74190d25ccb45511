/*
 * mcp: the MCP server — lifecycle, dispatch and sessions — on top of
 * jsonrpc: it parses each request and answers it.  A tools/call becomes a
 * call (call.h) that the scheduler (scheduler.h) runs; what a session's
 * calls run under is its session_sandbox (session_sandbox.h).
 *
 * Requests are handled in arrival order: a call captures the sandbox policy
 * in force when its request arrives, so an update acknowledged before a call
 * applies to it, and calls already running keep theirs.  At most max_calls
 * commands run at once; the rest wait in order.  EOF on stdin, SIGTERM or
 * SIGINT stop the intake, end the running calls (SIGTERM, then SIGKILL after
 * the grace period), answer them, and let the loop run dry.
 */
#ifndef EXECGATE_SERVER_MCP_H
#define EXECGATE_SERVER_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "server/rpc/jsonrpc.h"
#include "server/options.h"

/* Newest protocol version this server speaks. */
#define MCP_LATEST_PROTOCOL "2025-11-25"

struct mcp_server;

/* Whether this server speaks protocol version (MCP-Protocol-Version). */
bool mcp_protocol_supported(const char *version);

/*
 * A server on loop with options o (borrowed; must outlive the server).  The
 * --sandbox policy is validated here.  Returns NULL with *err a malloc'd
 * message (caller frees) on a bad policy or when out of memory.
 */
struct mcp_server *mcp_server_new(uv_loop_t *loop, const struct server_options *o, char **err);

/*
 * Starts serving on in_fd/out_fd and watches SIGTERM and SIGINT; in_fd -1:
 * no stdio client (the server serves HTTP sessions, mcp_http.h).  Returns
 * 0 or a negative libuv error (the server then still needs shutdown, a
 * loop run and free).
 */
int mcp_server_start(struct mcp_server *s, int in_fd, int out_fd);

/* Input as if read from stdin (for the fuzz target, which never starts the
 * server: answers are serialised and dropped). Cannot fail. */
void mcp_server_feed(struct mcp_server *s, const char *buf, size_t len);

/* Begins the shutdown described above; idempotent. */
void mcp_server_shutdown(struct mcp_server *s, const char *why);

/* cb(data) runs once when the shutdown begins (the HTTP transport then
 * stops taking clients).  Cannot fail. */
void mcp_server_set_on_shutdown(struct mcp_server *s, void (*cb)(void *data), void *data);

/*
 * Sessions: one per client of a server that serves many (mcp_http.c).
 * Each has its own transport state, sandbox policy (its own
 * codex/sandbox-state/update), calls, questions, approvals for the
 * session and log level; the rules and the limits (--max-calls) are the
 * server's.  Its messages go to sink(data, m) (jsonrpc_sink_fn's rules)
 * until it ends.
 */
struct mcp_session;
typedef jsonrpc_sink_fn mcp_session_sink_fn;
/* Bytes of the session's messages its transport still holds (not yet
 * taken by the client): while they reach --max-pending-output, no call of
 * the session starts. */
typedef size_t (*mcp_session_pending_fn)(void *data);

/* A new session, or NULL when out of memory or shutting down.  When the
 * server's shutdown closes the session, sink(data, NULL) runs once: no
 * message follows. */
struct mcp_session *mcp_session_new(struct mcp_server *s, mcp_session_sink_fn sink,
                                    mcp_session_pending_fn pending, void *data);

/* The client took some of what pending counted: calls held back may
 * start. */
void mcp_session_output_taken(struct mcp_session *ss);

/* Client messages, newline-delimited (jsonrpc_feed).  Cannot fail. */
void mcp_session_feed(struct mcp_session *ss, const char *buf, size_t len);

/* Ends ss: nothing more goes to its sink, its waiting calls are dropped
 * and its running calls killed, without answers; it is freed once they are
 * gone.  The caller must not use ss afterwards. */
void mcp_session_end(struct mcp_session *ss, const char *why);

/* Frees s once the loop has run dry after a shutdown. NULL is a no-op. */
void mcp_server_free(struct mcp_server *s);

#endif
