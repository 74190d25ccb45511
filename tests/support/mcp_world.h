/*
 * mcp_world: one end-to-end test's world for the server's escalation and
 * tree-enforcement suites — a workdir (the sandbox's writable root), a
 * rules directory, a directory only an escalated program can write, an
 * audit log, and the real server behind an initialized MCP client — and the
 * calls made in it, with a scripted answer to every question the server
 * asks.  Failures are cmocka assertions.
 */
#ifndef EXECGATE_TESTS_MCP_WORLD_H
#define EXECGATE_TESTS_MCP_WORLD_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "tests/support/mcp_client.h"

struct mcp_world {
    char *wd;           /* the calls' workdir and the sandbox's writable root */
    char *rules;        /* the server's --rules directory (test.rules) */
    char *outside;      /* writable only outside the sandbox */
    char *audit;        /* the server's --audit-log; NULL when it has none */
    char *instructions; /* initialize's instructions */
    struct mcp_client *c;
};

struct mcp_world_options {
    const char *server;        /* the server binary */
    const char *client_name;   /* clientInfo.name */
    const char *policy;        /* sandboxPolicy type; NULL: workspace-write */
    bool elicitation;          /* the client declares the capability */
    const char *extra;         /* one more server argument, or NULL */
    const char *const *more;   /* more server arguments, NULL-terminated, or NULL */
    const char *env;           /* one more NAME=value for the server, or NULL */
    bool no_audit;             /* no --audit-log (also with EXECGATE_TEST_NO_AUDIT=1) */
    bool no_rules;             /* no --rules: the server reads its default rules */
    const char *default_rules; /* the rules directory's default.rules, or NULL: none */
    /* argv put before the server's (e.g. setpriv ... --; prefix[0] a
     * path), NULL-terminated; NULL: the server is started directly */
    const char *const *prefix;
    /* chown wd, rules (and test.rules) and outside to owner_uid:owner_gid
     * before the server starts, for a server run as another user */
    bool chown;
    uid_t owner_uid;
    gid_t owner_gid;
};

/* What the client answers to elicitation/create. */
struct mcp_answers {
    const char *action; /* accept / decline / cancel; NULL: none expected */
    /* per question, in order, while there are any (NULL-terminated):
     * overrides action */
    const char *const *actions;
    const char *decision; /* content.decision, or NULL */
    const char *reason;   /* content.reason (what a person types), or NULL */
    int asked;            /* questions received */
    int delay_ms;         /* wait this long before answering */
    char *last_message;   /* the newest question's text, without the sentence
                           * about always allowing; the caller frees */
    json_t *logs;         /* when an array: each notifications/message's params */
    /* content.decision as JSON text for the first question (Codex's
     * object form, say), or NULL: decision then too */
    const char *first_decision_json;
    int offered_always; /* questions that offered approved_execpolicy_amendment */
    /* the newest question's proposed_execpolicy_amendment as compact JSON
     * and its sentence about it ("" when none was offered) */
    char proposed[512];
    char last_always[1024];
    int asked_leave; /* of asked: questions to leave the sandbox */
    /* the title the newest question gives "always" ("" when not offered) */
    char always_title[512];
};

/* Starts the server with rules in test.rules and initializes it.  Without
 * an audit log the server gives the shell the wrapper hint (tree mode), so
 * EXECGATE_TEST_NO_AUDIT=1 runs a whole suite that way. */
void mcp_world_start(struct mcp_world *w, const char *rules, const struct mcp_world_options *o);

/* Whether the suite runs its commands in zsh (EXECGATE_TEST_SHELL=zsh,
 * which mcp_world_start passes on as --shell zsh): for the few commands
 * and argv that differ between the shells. */
bool mcp_world_zsh(void);

/* Replaces test.rules (the server reads it at start only). */
void mcp_world_rules(struct mcp_world *w, const char *rules);

/* Closes the server's stdin, asserts a clean exit 0 (no sanitizer report),
 * removes the directories and frees w's members. */
void mcp_world_end(struct mcp_world *w);

/* Closes the stdin of c's server and asserts a clean exit 0 within
 * MCP_CLIENT_WAIT_MS (under ASan/LSan: no leak, no crash); c stays the
 * caller's to free.  For a server started without a world too. */
void mcp_world_assert_clean_exit(struct mcp_client *c);

/* For a test that failed midway: kills the server (no exit status is
 * asserted), removes the directories and frees w's members. */
void mcp_world_abandon(struct mcp_world *w);

/* Runs command in w->wd (login false) with timeout_ms, answering questions
 * from a (NULL: a question fails the test); returns the whole answer. */
json_t *mcp_world_run(struct mcp_world *w, const char *command, struct mcp_answers *a,
                      int timeout_ms);

/* The same with the tool's arguments as given (args taken). */
json_t *mcp_world_run_args(struct mcp_world *w, json_t *args, struct mcp_answers *a);

/* Answers question (an elicitation/create request) from a, as the calls
 * above do: for a question that comes while no call is in flight. */
void mcp_world_answer(struct mcp_world *w, const json_t *question, struct mcp_answers *a);

/* The same for the tool named tool (exec_command, write_stdin...). */
json_t *mcp_world_tool(struct mcp_world *w, const char *tool, json_t *args, struct mcp_answers *a);

/* The answer's structuredContent (asserted present), output and exit code. */
const json_t *mcp_world_structured(const json_t *answer);
const char *mcp_world_output(const json_t *answer);
int mcp_world_exit(const json_t *answer);

/* True when dir/name exists. */
bool mcp_world_exists(const char *dir, const char *name);

/* Asserts that needle is in hay, printing both when not. */
void mcp_world_assert_contains(const char *hay, const char *needle);

/* asprintf that asserts; the caller frees. */
char *mcp_world_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

#endif
