/*
 * mcp: the MCP server — lifecycle, dispatch, the `shell` tool and
 * `codex/sandbox-state/update` — on top of jsonrpc and shell_call.
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

#include <stddef.h>
#include <uv.h>

#include "server/options.h"

/* Newest protocol version this server speaks. */
#define MCP_LATEST_PROTOCOL "2025-11-25"

struct mcp_server;

/*
 * A server on loop with options o (borrowed; must outlive the server).  The
 * --sandbox policy is validated here.  Returns NULL with *err a malloc'd
 * message (caller frees) on a bad policy or when out of memory.
 */
struct mcp_server *mcp_server_new(uv_loop_t *loop, const struct server_options *o, char **err);

/*
 * Starts serving on in_fd/out_fd and watches SIGTERM and SIGINT.  Returns 0
 * or a negative libuv error (the server then still needs shutdown, a loop
 * run and free).
 */
int mcp_server_start(struct mcp_server *s, int in_fd, int out_fd);

/* Input as if read from stdin (for the fuzz target, which never starts the
 * server: answers are serialised and dropped). Cannot fail. */
void mcp_server_feed(struct mcp_server *s, const char *buf, size_t len);

/* Begins the shutdown described above; idempotent. */
void mcp_server_shutdown(struct mcp_server *s, const char *why);

/* Frees s once the loop has run dry after a shutdown. NULL is a no-op. */
void mcp_server_free(struct mcp_server *s);

#endif
