/*
 * mcp_client: a test client that drives the real execgate binary over its
 * stdin/stdout, one JSON message a line.
 *
 * For tests only: it blocks (with generous safety timeouts that only keep a
 * broken server from hanging the suite) and aborts on resource errors.
 * Messages that arrive while the test waits for something else are kept,
 * in order, until asked for.
 */
#ifndef EXECGATE_TESTS_MCP_CLIENT_H
#define EXECGATE_TESTS_MCP_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Safety limit for one wait, in milliseconds. */
#define MCP_CLIENT_WAIT_MS 60000

struct mcp_client;

/* Starts argv[0] (a path) with argv; its stderr is this process's.
 * extra_env (may be NULL) is NULL-terminated "NAME=value" added to ours. */
struct mcp_client *mcp_client_start(const char *const *argv, const char *const *extra_env);

/* The server's pid. */
pid_t mcp_client_pid(const struct mcp_client *c);

/* Writes len raw bytes to the server's stdin (reading its output meanwhile
 * so neither side can block the other).  Returns 0, or -1 when stdin is
 * closed (EPIPE). */
int mcp_client_send_raw(struct mcp_client *c, const char *data, size_t len);

/* Sends msg (taken) as one line. Returns as mcp_client_send_raw. */
int mcp_client_send(struct mcp_client *c, json_t *msg);

/* Sends a request with a fresh integer id (returned) and params (taken). */
long long mcp_client_send_request(struct mcp_client *c, const char *method, json_t *params);

/* The next message not yet taken, waiting for one; NULL on EOF or after
 * timeout_ms.  Caller owns it. */
json_t *mcp_client_next(struct mcp_client *c, int timeout_ms);

/* The answer whose id equals id (borrowed), waiting for it; other messages
 * are kept.  NULL on EOF or timeout.  Caller owns it. */
json_t *mcp_client_response(struct mcp_client *c, const json_t *id, int timeout_ms);

/* The first kept or arriving message that is a notification named method;
 * NULL on EOF or timeout.  Caller owns it. */
json_t *mcp_client_notification(struct mcp_client *c, const char *method, int timeout_ms);

/* The next message named method (a question such as elicitation/create),
 * waiting up to timeout_ms for each message; the messages before it are
 * taken and dropped.  NULL on EOF or timeout.  Caller owns it. */
json_t *mcp_client_next_named(struct mcp_client *c, const char *method, int timeout_ms);

/* Sends a request and waits for its answer. Caller owns the answer. */
json_t *mcp_client_call(struct mcp_client *c, const char *method, json_t *params);

/* initialize + notifications/initialized; returns the initialize answer. */
json_t *mcp_client_initialize(struct mcp_client *c);

/* tools/call shell with these arguments; returns the whole answer. */
json_t *mcp_client_shell(struct mcp_client *c, const char *command, const char *workdir);

/* Closes the server's stdin. */
void mcp_client_close_stdin(struct mcp_client *c);

/* Waits for the server to exit; returns its wait status, or -1 after
 * timeout_ms (the server still runs). */
int mcp_client_wait_exit(struct mcp_client *c, int timeout_ms);

/* Number of open fds of the server (/proc/PID/fd), or -1. */
int mcp_client_fd_count(const struct mcp_client *c);

/* The same once it has held still for 200 ms (5 s at most): a count taken
 * just after an answer may include what the server is still releasing (a
 * call's, or a login snapshot capture's, pipes and pidfds). */
int mcp_client_fd_count_settled(const struct mcp_client *c);

/* Kills the server if it still runs, reaps it, frees c. NULL is a no-op. */
void mcp_client_free(struct mcp_client *c);

#endif
