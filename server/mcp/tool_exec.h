/*
 * tool_exec: the tools of background processes (process.h) — exec_command
 * starts one, write_stdin writes to one and reads what it printed,
 * list_processes and kill_process — as tools/list shows them, their
 * arguments checked, and their results.
 *
 * The names and arguments are those of Codex's own unified exec where
 * they fit (cmd, workdir, login, tty, yield_time_ms, max_output_tokens;
 * session_id, chars), so a model that knows those tools knows these.
 * Each result is the output printed since the last read and either the
 * exit status (the process ended and is gone) or its session_id (it runs
 * on).
 */
#ifndef EXECGATE_SERVER_TOOL_EXEC_H
#define EXECGATE_SERVER_TOOL_EXEC_H

#include <jansson.h>
#include <stdbool.h>

#include "server/mcp/call.h"
#include "server/mcp/process.h"
#include "server/options.h"

/* How long a result waits for output at most (Codex's limit), and by
 * default: exec_command, write_stdin. */
#define TOOL_EXEC_MAX_YIELD_MS     30000u
#define TOOL_EXEC_DEFAULT_YIELD_MS 10000u
#define TOOL_EXEC_DEFAULT_WRITE_MS 250u
/* max_output_tokens counts this many bytes a token (Codex's estimate) */
#define TOOL_EXEC_BYTES_PER_TOKEN 4u

/* What the tools need of the session they serve (mcp.c). */
struct tool_exec_host {
    const struct server_options *o;
    struct process_table *procs;
    void *owner;
    /* A background call for r (r->background set) under the session's
     * sandbox for params (its _meta), with its rules and questions; or
     * NULL, having answered id. */
    struct call *(*build)(void *owner, const json_t *id, const json_t *params,
                          struct call_request *r);
    /* answers id with result (taken; NULL: out of memory) */
    void (*reply)(void *owner, const json_t *id, json_t *result);
    /* answers id with a JSON-RPC error */
    void (*error)(void *owner, const json_t *id, int code, const char *message);
};

/* Whether name is one of these tools. */
bool tool_exec_is(const char *name);

/* The four tools, appended to tools (a JSON array).  Returns 0, or -1
 * when out of memory.  None with --max-background 0. */
int tool_exec_definitions(const struct server_options *o, json_t *tools);

/* A tools/call of the tool name (tool_exec_is) with its params and
 * arguments object: answered now or, for a result that waits for output,
 * once the yield time is over or the process has ended. */
void tool_exec_call(const struct tool_exec_host *h, const json_t *id, const char *name,
                    const json_t *params, const json_t *args);

/* The client cancelled request id: a result of these tools waiting for
 * output is not sent (the process runs on).  Returns whether id named
 * one. */
bool tool_exec_cancel(const struct tool_exec_host *h, const json_t *id);

#endif
