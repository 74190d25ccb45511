/*
 * leave_sandbox: the question a person is asked when the agent asks for a
 * command to run outside the sandbox (the shell tool's
 * sandbox_permissions "require_escalated", or the older
 * with_escalated_permissions true), asked on the call's line of the one
 * asking module (ask.h), and what its answer means for the call.
 *
 * Only the file-system and network sandbox is left: the exec rules still
 * decide each program of an approved command.  The question offers
 * approved and denied alone, and only an explicit approved approves (a
 * form accepted without a decision is no approval).  The caller (mcp.c)
 * holds the call while the question is out and runs it under full access
 * only when it was approved.
 */
#ifndef EXECGATE_SERVER_LEAVE_SANDBOX_H
#define EXECGATE_SERVER_LEAVE_SANDBOX_H

#include <stdbool.h>

struct ask_line;
struct decide_server;

/* The one line a call's result says when no person can be asked. */
#define LEAVE_SANDBOX_NO_ELICITATION                                                               \
    "Not run: running outside the sandbox needs a person's approval, and this MCP client "         \
    "cannot ask one (it declared no elicitation capability); run the command without "             \
    "sandbox_permissions=require_escalated to run it inside the sandbox"

/* What a login call is told when *said is NULL (out of memory). */
#define LEAVE_SANDBOX_PLANTED                                                                      \
    "Not run: a login shell outside the sandbox would first run a startup file a sandbox could "   \
    "have written"

/*
 * For a login call, before anyone is asked: whether a login shell of
 * shell ("bash", "zsh") with the server's HOME would first run a startup
 * file that the sandbox of any call could have written
 * (decide_server_sandbox_wrote): outside, it would run code the person
 * never saw.  True then (and when the files cannot be listed), with the
 * call's refusal naming the file in *said (malloc'd; NULL when out of
 * memory: LEAVE_SANDBOX_PLANTED).
 */
bool leave_sandbox_planted(const struct decide_server *ds, const char *shell, char **said);

/* What is asked about (borrowed for leave_sandbox_ask). */
struct leave_sandbox_what {
    const char *command;
    const char *workdir;
    bool login;                /* it runs in a login shell */
    const char *justification; /* the agent's, or NULL */
};

/*
 * The answer: refused is NULL when a person approved, else the one line
 * the call's result says (borrowed for the callback); said, for an
 * approval, is what the person typed as the reason, as the first line of
 * the call's person_said ("approved running it outside the sandbox:
 * REASON", escaped; malloc'd, the callee's), or NULL.
 */
typedef void (*leave_sandbox_done_fn)(void *data, const char *refused, char *said);

struct leave_sandbox;

/*
 * Asks on line (the call's) whether what may run outside the sandbox;
 * done(data, ...) runs once, unless the question is withdrawn first.
 * Every text is escaped as the exec questions' are.  Returns the
 * question, or NULL with *why (static) when it cannot be asked: nobody to
 * ask (LEAVE_SANDBOX_NO_ELICITATION), out of memory, the request not sent.
 */
struct leave_sandbox *leave_sandbox_ask(struct ask_line *line,
                                        const struct leave_sandbox_what *what,
                                        leave_sandbox_done_fn done, void *data, const char **why);

/* Withdraws q (done never runs): the client is told to close it.  NULL
 * is a no-op. */
void leave_sandbox_withdraw(struct leave_sandbox *q);

#endif
