/*
 * tasks: one session's MCP tasks (protocol 2025-11-25, docs/server.md).
 *
 * A tools/call of shell that the client augments with a task is answered
 * at once with the task (CreateTaskResult); the call then runs as any
 * call does, under an id no client request can have (task_call_id), and
 * its end is kept here instead of being sent: tasks/get and tasks/list
 * show the task, tasks/result waits for its end and returns what the
 * plain call would have answered, tasks/cancel stops it.  While a person
 * is asked about the call, the task is input_required, and each question
 * carries the task's related-task _meta.
 *
 * Tasks are the session's: another session finds none of them.  An ended
 * task is kept for its time to live (--task-ttl-ms, and no longer than a
 * client asks) after it ended; a session keeps at most --max-tasks, the
 * oldest ended ones whose result was fetched (or that were cancelled)
 * making room for a new one; memory is that many kept outputs.  Nothing
 * here runs a call: the session does (tasks_ops).
 */
#ifndef EXECGATE_SERVER_TASKS_H
#define EXECGATE_SERVER_TASKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/call/call_result.h"

/* The key of a message's _meta that names the task it is about. */
#define TASKS_RELATED_META "io.modelcontextprotocol/related-task"
/* The key of CreateTaskResult's _meta whose text a host may give its
 * model while the task runs. */
#define TASKS_IMMEDIATE_META "io.modelcontextprotocol/model-immediate-response"
/* The polling interval suggested to clients, in milliseconds. */
#define TASKS_POLL_INTERVAL_MS 1000
/* Tasks in one tasks/list answer; nextCursor leads to the rest. */
#define TASKS_LIST_PAGE 8
/* tasks/result requests that may wait for one task at once; one more
 * ends the oldest's wait (with an error). */
#define TASKS_MAX_WAITERS 8

struct jsonrpc;
struct ask_line;
struct tasks;
struct task;

/* What the session does for its tasks; data is the session's. */
struct tasks_ops {
    /* the session's transport, or NULL once it is closed */
    struct jsonrpc *(*rpc)(void *data);
    /* stops the call that runs under call_id (waiting, asking, running
     * or holding its answer): it ends without an answer */
    void (*cancel)(void *data, const json_t *call_id);
};

/* A session's tasks, kept ttl_ms after they end, max at once.  NULL when
 * out of memory. */
struct tasks *tasks_new(uint64_t ttl_ms, unsigned max, const struct tasks_ops *ops, void *data);

/* Whether each change of a task's status is sent as
 * notifications/tasks/status (the default: yes).  Cannot fail. */
void tasks_set_notify(struct tasks *ts, bool notify);

/* Frees ts and its tasks; requests waiting for them get no answer (the
 * transport is gone).  NULL is a no-op. */
void tasks_free(struct tasks *ts);

/* Whether method is one of tasks/get, tasks/result, tasks/list,
 * tasks/cancel. */
bool tasks_method(const char *method);

/* Answers (or, tasks/result of a task not ended, holds) request id of
 * method (tasks_method) with params.  Cannot fail: errors are answers. */
void tasks_request(struct tasks *ts, const json_t *id, const char *method, const json_t *params);

/* The client cancelled request id: a tasks/result waiting for its task
 * is forgotten.  Returns whether id named one. */
bool tasks_cancelled(struct tasks *ts, const json_t *id);

/*
 * A new task, working, for a tools/call whose params carry task_params
 * (its "task": {"ttl"?}).  Returns NULL with *err (static) when the
 * session keeps --max-tasks tasks none of which may go yet, or when out
 * of memory.
 */
struct task *tasks_create(struct tasks *ts, const json_t *task_params, const char **err);

/* The id t's call runs under (borrowed, as long as t is listed):
 * {"task": TASKID}, which no client request can have. */
const json_t *task_call_id(const struct task *t);

/* The CreateTaskResult answer for t.  NULL when out of memory. */
json_t *task_created_json(const struct task *t);

/* Drops t, whose call could not be made (nothing was answered about it).
 * Cannot fail. */
void tasks_discard(struct task *t);

/* t follows its call's question line l (ask_line_watch): input_required
 * while one is out, each question with t's related-task _meta.  Cannot
 * fail (out of memory: the questions go without it, logged). */
void task_watch(struct task *t, struct ask_line *l);

/* The task of the call that runs under call_id, or NULL: not a task's
 * call, or the task is gone (expired with its session). */
struct task *tasks_of_call(struct tasks *ts, const json_t *call_id);

/* The _meta members of a message about the call that runs under call_id
 * ({TASKS_RELATED_META: {"taskId": ...}}), or NULL: not a task's call, or
 * out of memory. */
json_t *tasks_related_meta(const json_t *call_id);

/*
 * t's call ended, and what the plain call would have answered is: the
 * result cr (its output copied), the tool result result (taken: a refusal,
 * isError set), or the error code/message.  t is completed, or failed when
 * the tool call failed; a cancelled t stays cancelled.  Requests waiting
 * for t get that answer.  Cannot fail (out of memory: the answer is an
 * internal error).
 */
void task_end_result(struct task *t, const struct call_result *cr);
void task_end_tool_result(struct task *t, json_t *result, const char *why);
void task_end_error(struct task *t, int code, const char *message);

#endif
