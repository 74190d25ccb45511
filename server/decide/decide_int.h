/*
 * decide_int: what the parts of decide share, and nothing else includes:
 * decide.c (the server, its clients and calls, their memos and records),
 * decide_repo.c (the repositories a sandbox could have planted code in),
 * decide_exec.c (the decision on one exec) and decide_ask.c (the
 * question a person is asked about one).
 */
#ifndef EXECGATE_SERVER_DECIDE_INT_H
#define EXECGATE_SERVER_DECIDE_INT_H

#include "server/decide/ask.h"
#include "server/decide/decide.h"
#include "server/call/writable_view.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#define REASON_FORBIDDEN "Execution forbidden by policy"
#define REASON_NO_ELICITATION                                                                      \
    "Approval was required by a prompt rule, but the MCP client did not declare the "              \
    "elicitation capability, so it cannot be asked"

/* A repository at the top of a root whose .git the helper keeps
 * read-only, as first seen by this server (decide_call_start). */
struct seen_repo {
    char *root;
    bool present;
    dev_t dev;
    ino_t ino;
};

struct decide_server {
    /* the rules' sources, kept for decide_server_reload */
    char **rules_paths;
    size_t n_rules_paths;
    char *default_rules_dir;
    struct rules_policy *rules;
    char *answers_file; /* where "always allow" writes, or NULL */
    bool preserve_program_paths;
    struct decide_client *client; /* calls' client unless one is set (decide_call_set_client):
                                   * nobody to ask, no log */
    struct audit *audit;
    unsigned calls;      /* decide_calls alive */
    char *wrap_names;    /* EXECGATE_WRAP_NAMES's value, or NULL */
    uint64_t generation; /* successful reloads so far */
    struct seen_repo *repos;
    size_t n_repos;
    /* what every sandbox of this server could write (writable_history.h) */
    struct writable_history *written;
};

/* A command remembered for the call (see DECIDE_MAX_REMEMBERED). */
struct memo {
    pid_t pid; /* 0: any process */
    char *key;
    size_t keylen;
    char *reason; /* declined: the reason to repeat */
};

struct memo_list {
    struct memo items[DECIDE_MAX_REMEMBERED];
    size_t n;
};

/* A repository the call's sandbox keeps read-only: its .git entry and
 * the directory git uses. */
struct kept_repo {
    char *dotgit;
    char *gitdir;
    dev_t dev;
    ino_t ino;
};

/* One MCP client: where questions go, what it approved for its session,
 * its log.  Reference counted: the session that owns it and each of its
 * calls' decide_calls hold one, since a call's front ends may release
 * theirs after the session is gone. */
struct decide_client {
    unsigned refs;
    struct ask_peer peer; /* where its questions go */
    struct approvals *approvals;
    struct client_log *log; /* borrowed; NULL: none */
};

struct decide_call {
    struct decide_server *ds;
    struct decide_client *cl; /* a reference */
    unsigned refs;
    char *label;
    /* the label it was made with, once decide_call_rename gave it
     * another: the call's watch and escalation logs still name it so */
    char *first_label;
    json_t *id; /* the request's id, for the client's records; or NULL */
    struct writable_view view;
    struct kept_repo *kept;
    size_t n_kept;
    struct ask_line *line;  /* its questions, exec and network (ask.h) */
    decide_said_fn on_said; /* or NULL */
    void *said_data;
    struct memo_list expected, declined;
};

/* decide.c: the call's memos (DECIDE_MAX_REMEMBERED, oldest dropped). */
void memo_add(struct memo_list *l, pid_t pid, const char *key, size_t keylen, const char *reason);
long memo_find(const struct memo_list *l, pid_t pid, const char *key, size_t keylen);
void memo_remove(struct memo_list *l, size_t i);

/* decide.c: t as a JSON string (bytes that are not UTF-8 as U+FFFD), or
 * JSON null when out of memory. */
json_t *text_json(const char *t);

/* decide_repo.c: the repositories the call's sandbox keeps read-only,
 * noted as the call starts; whether cwd is in a repository a sandbox could
 * have written (*which: its .git, *ceiling: where git is to stop looking,
 * both malloc'd); whether a sandbox could have written path. */
void note_kept_repos(struct decide_call *dc);
bool in_writable_repo(const struct decide_call *dc, const char *cwd, char **which, char **ceiling);
bool sandbox_could_write(const struct decide_call *dc, const char *path);

/* decide_exec.c: whether the request's argv[0] names another program
 * than run_as. */
bool argv0_differs(const struct decide_exec *e, const char *run_as);

/* An exec whose environment names code to run in it (code_env):
 * the caution shown, and a note for a question no allow rule raised. */
#define CODE_ENV                                                                                   \
    "its environment names code for the dynamic loader, a shell or an interpreter to run "         \
    "(LD_*, GCONV_PATH, BASH_ENV, BASH_FUNC_*, PYTHONPATH and the like)"

#endif
