/*
 * client_log: log records for the MCP client (the `logging` capability):
 * `notifications/message` with logger "execgate" and a structured `data`
 * object, at or above the level the client asked for with
 * `logging/setLevel` (RFC 5424 names; "warning" until it asks).  So a
 * client or an IDE can show why an exec was refused, what ran outside the
 * sandbox, and when the rules changed.  stderr's log (log.h) is separate.
 */
#ifndef EXECGATE_SERVER_CLIENT_LOG_H
#define EXECGATE_SERVER_CLIENT_LOG_H

#include <jansson.h>
#include <stdbool.h>

struct jsonrpc;

enum client_log_level {
    CLIENT_LOG_DEBUG,
    CLIENT_LOG_INFO,
    CLIENT_LOG_NOTICE,
    CLIENT_LOG_WARNING,
    CLIENT_LOG_ERROR,
    CLIENT_LOG_CRITICAL,
    CLIENT_LOG_ALERT,
    CLIENT_LOG_EMERGENCY,
};

struct client_log;

/* A log sending nothing until it has a transport.  NULL when out of memory. */
struct client_log *client_log_new(void);

/* Frees l; NULL is a no-op. */
void client_log_free(struct client_log *l);

/* The transport records go out on (borrowed; NULL once it is closed). */
void client_log_set_rpc(struct client_log *l, struct jsonrpc *rpc);

/* logging/setLevel: sets the threshold from an RFC 5424 level name.
 * Returns 0, or -1 for an unknown name (nothing changed). */
int client_log_set_level(struct client_log *l, const char *name);

/* Whether a record at level would be sent now.  Cannot fail; l NULL: no. */
bool client_log_wants(const struct client_log *l, enum client_log_level level);

/* Sends data (taken; an object) at level when wanted.  Cannot fail: a
 * record that cannot be sent is dropped. */
void client_log_send(struct client_log *l, enum client_log_level level, json_t *data);

#endif
