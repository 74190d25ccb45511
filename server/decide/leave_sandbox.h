/*
 * leave_sandbox: the question a person is asked when the agent asks for a
 * command to run outside the sandbox (the shell tool's
 * sandbox_permissions "require_escalated", or the older
 * with_escalated_permissions true), and the reading of the answer.
 *
 * Only the file-system and network sandbox is left: the exec rules still
 * decide each program of an approved command.  The caller (mcp.c) holds
 * the call while the question is out and runs it under full access only
 * when leave_sandbox_answer says it was approved.
 */
#ifndef EXECGATE_SERVER_LEAVE_SANDBOX_H
#define EXECGATE_SERVER_LEAVE_SANDBOX_H

#include <jansson.h>
#include <stdbool.h>

/* The one line a call's result says when no person can be asked. */
#define LEAVE_SANDBOX_NO_ELICITATION                                                               \
    "Not run: running outside the sandbox needs a person's approval, and this MCP client "         \
    "cannot ask one (it declared no elicitation capability); run the command without "             \
    "sandbox_permissions=require_escalated to run it inside the sandbox"

/*
 * elicitation/create's params asking whether command may run in workdir
 * outside the sandbox (in a login shell when login), showing
 * justification (the agent's, or NULL).  Every text is escaped as
 * decide's questions are.  NULL when out of memory.
 */
json_t *leave_sandbox_question(const char *command, const char *workdir, bool login,
                               const char *justification);

/*
 * The answer to that question (result or error, as a jsonrpc response
 * callback gets them): NULL when a person approved, else the one line the
 * call's result says (static, or in *buf, malloc'd, which the caller
 * frees).
 */
const char *leave_sandbox_answer(const json_t *result, const json_t *error, char **buf);

/* For an approving result: what the person typed as the reason, as the
 * line for the call's person_said ("approved running it outside the
 * sandbox: REASON", escaped); NULL when nothing was typed or out of
 * memory.  Caller frees. */
char *leave_sandbox_said(const json_t *result);

#endif
