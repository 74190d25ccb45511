/*
 * tool_shell: the shell tool as tools/list shows it, and a tools/call of
 * it read into a call_request (call.h).
 */
#ifndef EXECGATE_SERVER_TOOL_SHELL_H
#define EXECGATE_SERVER_TOOL_SHELL_H

#include <jansson.h>

#include "server/mcp/call.h"
#include "server/options.h"

/* The tool for the server's shell (with zsh, the texts that name the
 * shell name zsh).  NULL when out of memory. */
json_t *tool_shell_definition(const struct server_options *o);

/* The tool may run as an MCP task (execution.taskSupport "optional",
 * tasks.h): for a session that agreed on a protocol with tasks.  Returns
 * 0, or -1 when out of memory. */
int tool_shell_offer_tasks(json_t *tool);

/* A tools/call's params name this tool and carry an arguments object
 * (*args, borrowed from params).  Returns 0, or -1 with *err (malloc'd;
 * NULL: out of memory) for an invalid-params answer. */
int tool_shell_arguments(const json_t *params, const json_t **args, char **err);

/* The arguments checked into *r (borrowed from params; the sandbox is
 * not set here): the command, the workdir (an existing directory), the
 * timeout, login, leaving the sandbox and the progress token.  Returns 0,
 * or -1 with *err (malloc'd; NULL: out of memory) for an invalid-params
 * answer. */
int tool_shell_request(const struct server_options *o, const json_t *params, const json_t *args,
                       struct call_request *r, char **err);

/* A workdir argument: an absolute path naming a directory, into *wd
 * (borrowed from workdir).  Returns 0, or -1 with *err (malloc'd; NULL:
 * out of memory).  The background tools check theirs so too. */
int tool_shell_workdir(const json_t *workdir, const char **wd, char **err);

#endif
