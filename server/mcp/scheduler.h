/*
 * scheduler: when calls run — each session's queue, the turns sessions
 * take, --max-calls, room for answers under --max-pending-output, and the
 * login snapshot a login call waits for.
 *
 * A session (mcp.c) owns one call_queue and hands its calls to it; the
 * scheduler starts them in the order they came, answers them through the
 * queue's ops when they end (or holds an answer until its client has
 * room for it) and frees them.  Nothing here parses or writes the
 * protocol.
 */
#ifndef EXECGATE_SERVER_SCHEDULER_H
#define EXECGATE_SERVER_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/mcp/call.h"

struct scheduler;
struct call_queue;
struct decide_client;
struct call_net_client;
struct session_codex;

struct call_queue_ops {
    /* answers c with its result */
    void (*answer)(struct call_queue *q, struct call *c, const struct call_result *cr);
    /* answers c, which could not start: why (a tool result) */
    void (*refuse)(struct call_queue *q, struct call *c, const char *why);
    /* answers c, dropped before it started: why (an error) */
    void (*drop)(struct call_queue *q, struct call *c, const char *why);
    /* bytes of q's answers and notifications its client has not taken */
    size_t (*pending)(const struct call_queue *q);
    /* a running call of q has ended (answered, held or dropped) */
    void (*ended)(struct call_queue *q);
    /* may be NULL: whether q's owner keeps c's result (cr, borrowed)
     * instead of sending it: an MCP task's (tasks.h), never held */
    bool (*keep)(struct call_queue *q, struct call *c, const struct call_result *cr);
};

/* One session's calls (embedded in the session; scheduler_add_queue). */
struct call_queue {
    struct scheduler *sched;
    const struct call_queue_ops *ops;
    struct decide_client *client; /* the session's (borrowed): its questions */
    struct call_net_client *net;  /* the session's (borrowed): its network questions */
    bool streams;                 /* answers go out each on its own (HTTP) */
    bool ending;                  /* the session ended: nothing is answered */
    /* asking: calls whose question to leave the sandbox is out (the
     * session's); held: ended calls whose answers wait for room */
    struct call_list asking, waiting, running, held;
    uint64_t next_seq;
    /* the oldest call (seq) answered since nothing waited for the client;
     * UINT64_MAX: none (answer_fits) */
    uint64_t sent_oldest;
    struct call_queue *prev, *next; /* the turns */
    /* the placeholders its calls' sandboxes join, held from the first
     * call that needs one until scheduler_remove_queue (session_codex.h) */
    struct session_codex *codex;
    /* the call prepared to be its next (call_prepare_next), waiting for
     * its command; or NULL.  Over HTTP: when it was made (uv_now, for
     * --prepared-idle-ms) */
    struct call *prepared;
    uint64_t prepared_at;
    /* its prepared calls not yet ended (the one above, and those
     * discarded whose helpers are still being killed): the session
     * closes after them */
    unsigned prepared_live;
};

/* A scheduler for the calls of cx (borrowed; outlives it).  NULL when
 * out of memory. */
struct scheduler *scheduler_new(const struct call_context *cx);
void scheduler_free(struct scheduler *sch);

/*
 * Login snapshots from now on (login_snapshot.h), in a private directory
 * that is appended to *protect (n_protect entries, NULL-terminated; every
 * sandbox binds it read-only).  Without them login calls run real login
 * shells, and that is logged.  Cannot fail.
 */
void scheduler_start_login_snapshots(struct scheduler *sch, char ***protect, size_t *n_protect);
/* Whether login calls may source a snapshot (call_new's snapshots). */
bool scheduler_snapshots(const struct scheduler *sch);

/* q takes its turns from now on (ops, client and net are set). */
void scheduler_add_queue(struct scheduler *sch, struct call_queue *q);
/* q takes no more turns and frees the answers it holds; its other lists
 * are empty. */
void scheduler_remove_queue(struct call_queue *q);

/* c (of q, made by call_new) waits for its turn; it is started as soon
 * as there is room. */
void scheduler_submit(struct call_queue *q, struct call *c);

/* Starts what may start (answers held, calls waiting).  Cannot fail. */
void scheduler_run(struct scheduler *sch);

/* Calls running in all sessions. */
unsigned scheduler_running(const struct scheduler *sch);

/* Those, and the prepared calls not yet ended: what the shutdown waits
 * for. */
unsigned scheduler_live(const struct scheduler *sch);

/* The client cancelled request id of q: a waiting call is dropped, a
 * running one killed (it ends unanswered), a held answer dropped.
 * Returns whether id named one of them. */
bool scheduler_cancel(struct call_queue *q, const json_t *id);

/* Whether q has a call with this id waiting, running or asking. */
bool scheduler_busy_id(const struct call_queue *q, const json_t *id);

/* Drops q's waiting calls, answering each with why (ops->drop) unless
 * why is NULL. */
void scheduler_drop_waiting(struct call_queue *q, const char *why);

/* Sends sig to every running call of every session. */
void scheduler_signal(struct scheduler *sch, int sig);

/* The server shuts down: nothing new starts, every prepared call is
 * discarded and every held answer goes (scheduler_run). */
void scheduler_stop(struct scheduler *sch);

/* Discards q's prepared call, if any (its sandbox killed; it is freed
 * when its helper has ended, and q's ops->ended hears of it).  Cannot
 * fail. */
void scheduler_discard_prepared(struct call_queue *q);

/* Answers (or drops, q ending) q's held calls while they fit. */
void scheduler_send_held(struct call_queue *q);

#endif
