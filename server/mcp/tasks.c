/*
 * tasks: a session's MCP tasks, their states and kept answers (tasks.h).
 */
#include "server/mcp/tasks.h"

#include "common/list.h"
#include "common/log.h"
#include "common/macros.h"
#include "common/strfmt.h"
#include "server/decide/ask.h"
#include "server/rpc/jsonrpc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

enum task_status {
    TASK_WORKING,
    TASK_INPUT_REQUIRED,
    TASK_COMPLETED,
    TASK_FAILED,
    TASK_CANCELLED,
};

static const char *const status_names[] = {
    [TASK_WORKING] = "working",     [TASK_INPUT_REQUIRED] = "input_required",
    [TASK_COMPLETED] = "completed", [TASK_FAILED] = "failed",
    [TASK_CANCELLED] = "cancelled",
};

/* What tasks/result answers once the task has ended. */
enum task_answer {
    ANSWER_NONE,  /* not ended, or cancelled: no answer of the call */
    ANSWER_CALL,  /* the call's result (cr over a copy of its output) */
    ANSWER_JSON,  /* a tool result (a refusal) */
    ANSWER_ERROR, /* a JSON-RPC error */
};

/* ISO 8601, UTC, with milliseconds: 2025-11-25T10:30:00.123Z */
#define STAMP_MAX 32

struct task {
    unsigned refs;    /* its list's, while listed; its watch's */
    struct tasks *ts; /* NULL once it left the list */
    char id[2 * 16 + 1];
    json_t *call_id;
    uint64_t seq; /* its place in the list: the list's cursor */
    enum task_status status;
    char *message; /* statusMessage, or NULL */
    char created[STAMP_MAX], updated[STAMP_MAX];
    uint64_t ttl_ms;
    uint64_t ended_ms; /* monotonic, when it ended; 0: not yet */
    bool fetched;      /* tasks/result was answered with its result */

    enum task_answer answer;
    struct call_result cr; /* ANSWER_CALL: output, aborted and said point below */
    struct output_ring_text text;
    char *output, *aborted, *said;
    json_t *json; /* ANSWER_JSON */
    int code;     /* ANSWER_ERROR */
    char *error;

    json_t *waiters; /* ids of tasks/result requests waiting for its end */
    struct list node;
};

#define TASK(n) list_entry(n, struct task, node)

struct tasks {
    const struct tasks_ops *ops;
    void *data;
    uint64_t ttl_ms;
    unsigned max, count;
    bool notify; /* notifications/tasks/status */
    uint64_t next_seq;
    struct list list; /* of struct task, the oldest first */
};

/* ---- time ---- */

static uint64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
stamp(char buf[STAMP_MAX])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, STAMP_MAX, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, STAMP_MAX - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* ---- one task ---- */

static bool
terminal(const struct task *t)
{
    return t->status >= TASK_COMPLETED;
}

static void
task_unref(struct task *t)
{
    if (!t || --t->refs > 0)
        return;
    json_decref(t->call_id);
    free(t->message);
    free(t->output);
    free(t->aborted);
    free(t->said);
    json_decref(t->json);
    free(t->error);
    json_decref(t->waiters);
    free(t);
}

/* The Task object clients read. */
static json_t *
task_json(const struct task *t)
{
    json_t *j =
        json_pack("{s:s, s:s, s:s, s:s, s:I, s:i}", "taskId", t->id, "status",
                  status_names[t->status], "createdAt", t->created, "lastUpdatedAt", t->updated,
                  "ttl", (json_int_t)t->ttl_ms, "pollInterval", TASKS_POLL_INTERVAL_MS);
    if (j && t->message && json_object_set_new(j, "statusMessage", json_string(t->message)) < 0) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* t is now status, saying message (copied; NULL: none): the client is
 * told (notifications/tasks/status). */
static void
set_status(struct task *t, enum task_status status, const char *message)
{
    t->status = status;
    free(t->message);
    t->message = message ? strdup(message) : NULL;
    stamp(t->updated);
    if (terminal(t))
        t->ended_ms = now_ms();
    struct jsonrpc *rpc = t->ts && t->ts->notify ? t->ts->ops->rpc(t->ts->data) : NULL;
    if (rpc)
        jsonrpc_notify(rpc, "notifications/tasks/status", task_json(t));
    log_info("task %.8s...: %s%s%s", t->id, status_names[status], message ? ": " : "",
             message ? message : "");
}

static json_t *
related_meta(const char *id)
{
    return json_pack("{s:{s:s}}", TASKS_RELATED_META, "taskId", id);
}

/* The call's result as tasks/result answers it: call_result_json's text
 * with the related-task _meta as its first member.  NULL when out of
 * memory. */
static char *
call_answer(const struct task *t, size_t *len)
{
    size_t n = 0;
    char *text = call_result_json(&t->cr, &n);
    char *meta =
        text ? strfmt("{\"_meta\":{\"%s\":{\"taskId\":\"%s\"}},", TASKS_RELATED_META, t->id) : NULL;
    /* the result is an object with members: "{" then the rest */
    char *all = meta ? malloc(strlen(meta) + n) : NULL;
    if (all) {
        size_t m = strlen(meta);
        memcpy(all, meta, m);
        memcpy(all + m, text + 1, n - 1);
        all[m + n - 1] = '\0';
        *len = m + n - 1;
    }
    free(text);
    free(meta);
    return all;
}

/* Answers request id with t's answer (t has ended). */
static void
send_answer(struct task *t, struct jsonrpc *rpc, const json_t *id)
{
    switch (t->answer) {
    case ANSWER_CALL: {
        size_t len = 0;
        char *text = call_answer(t, &len);
        if (text)
            jsonrpc_reply_text(rpc, id, text, len);
        else
            jsonrpc_reply_error(rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
        break;
    }
    case ANSWER_JSON: {
        json_t *r = json_deep_copy(t->json);
        json_t *meta = related_meta(t->id);
        if (r && meta && json_object_set_new(r, "_meta", meta) == 0)
            meta = NULL;
        json_decref(meta);
        jsonrpc_reply(rpc, id, r); /* NULL: an internal error */
        break;
    }
    case ANSWER_ERROR:
        jsonrpc_reply_error(rpc, id, t->code, t->error ? t->error : "out of memory");
        break;
    case ANSWER_NONE: {
        char *why = strfmt("task %s was cancelled (tasks/cancel): its command was stopped and "
                           "has no result",
                           t->id);
        jsonrpc_reply_error(rpc, id, JSONRPC_INVALID_PARAMS, why ? why : "task cancelled");
        free(why);
        return;
    }
    }
    t->fetched = true;
}

/* t has ended: the requests waiting for it are answered. */
static void
answer_waiters(struct task *t)
{
    struct jsonrpc *rpc = t->ts ? t->ts->ops->rpc(t->ts->data) : NULL;
    for (size_t i = 0; rpc && i < json_array_size(t->waiters); i++)
        send_answer(t, rpc, json_array_get(t->waiters, i));
    json_array_clear(t->waiters);
}

/* Takes t out of its list (its waiters get no answer). */
static void
task_drop(struct task *t)
{
    if (!t->ts)
        return;
    t->ts->count--;
    t->ts = NULL;
    list_unlink(&t->node);
    json_array_clear(t->waiters);
    task_unref(t);
}

/* ---- the list ---- */

struct tasks *
tasks_new(uint64_t ttl_ms, unsigned max, const struct tasks_ops *ops, void *data)
{
    struct tasks *ts = calloc(1, sizeof(*ts));
    if (!ts)
        return NULL;
    ts->ops = ops;
    ts->data = data;
    ts->ttl_ms = ttl_ms;
    ts->max = max;
    ts->notify = true;
    list_init(&ts->list);
    return ts;
}

void
tasks_set_notify(struct tasks *ts, bool notify)
{
    ts->notify = notify;
}

void
tasks_free(struct tasks *ts)
{
    if (!ts)
        return;
    while (!list_empty(&ts->list))
        task_drop(TASK(ts->list.next));
    free(ts);
}

/* Drops the ended tasks whose time to live has passed since they ended. */
static void
expire(struct tasks *ts)
{
    uint64_t now = now_ms();
    struct list *n, *next;
    list_foreach_safe(n, next, &ts->list)
    {
        struct task *t = TASK(n);
        if (terminal(t) && now - t->ended_ms >= t->ttl_ms) {
            log_debug("task %.8s...: expired", t->id);
            task_drop(t);
        }
    }
}

/* Room for one more task: the expired go, then the oldest ended whose
 * result was fetched or that were cancelled.  Returns whether there is. */
static bool
make_room(struct tasks *ts)
{
    expire(ts);
    struct list *n, *next;
    list_foreach_safe(n, next, &ts->list)
    {
        if (ts->count < ts->max)
            break;
        struct task *t = TASK(n);
        if (terminal(t) && (t->fetched || t->status == TASK_CANCELLED))
            task_drop(t);
    }
    return ts->count < ts->max;
}

static struct task *
find(struct tasks *ts, const char *id)
{
    struct list *n;
    list_foreach(n, &ts->list)
    {
        if (strcmp(TASK(n)->id, id) == 0)
            return TASK(n);
    }
    return NULL;
}

struct task *
tasks_create(struct tasks *ts, const json_t *task_params, const char **err)
{
    *err = "out of memory";
    if (!make_room(ts)) {
        *err = "too many tasks: this session keeps --max-tasks of them at once, and none has "
               "ended and been fetched or cancelled; fetch their results (tasks/result) or "
               "cancel some (tasks/cancel)";
        return NULL;
    }
    struct task *t = calloc(1, sizeof(*t));
    unsigned char raw[16];
    if (!t || getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        if (t)
            *err = "no random bytes for a task id";
        free(t);
        return NULL;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(t->id + 2 * i, 3, "%02x", raw[i]);
    t->call_id = json_pack("{s:s}", "task", t->id);
    t->waiters = json_array();
    if (!t->call_id || !t->waiters) {
        json_decref(t->call_id);
        json_decref(t->waiters);
        free(t);
        return NULL;
    }
    /* a client asks for at most --task-ttl-ms */
    json_t *ttl = json_object_get(task_params, "ttl");
    double asked = json_number_value(ttl);
    t->ttl_ms = json_is_number(ttl) && asked >= 1 && asked < (double)ts->ttl_ms ? (uint64_t)asked
                                                                                : ts->ttl_ms;
    t->refs = 1;
    t->ts = ts;
    t->seq = ++ts->next_seq;
    t->status = TASK_WORKING;
    stamp(t->created);
    memcpy(t->updated, t->created, STAMP_MAX);
    list_insert_tail(&ts->list, &t->node);
    ts->count++;
    log_info("task %.8s...: created (kept %" PRIu64 " ms after it ends)", t->id, t->ttl_ms);
    return t;
}

const json_t *
task_call_id(const struct task *t)
{
    return t->call_id;
}

json_t *
task_created_json(const struct task *t)
{
    /* what a host may hand its model meanwhile (the spec's provisional
     * model-immediate-response) */
    char *now = strfmt("The command runs in the background as task %s; its result comes with "
                       "tasks/result.",
                       t->id);
    json_t *task = now ? task_json(t) : NULL;
    json_t *r =
        task ? json_pack("{s:o, s:{s:s}}", "task", task, "_meta", TASKS_IMMEDIATE_META, now) : NULL;
    free(now);
    return r;
}

void
tasks_discard(struct task *t)
{
    task_drop(t);
}

struct task *
tasks_of_call(struct tasks *ts, const json_t *call_id)
{
    const char *id = json_string_value(json_object_get(call_id, "task"));
    return id && ts ? find(ts, id) : NULL;
}

json_t *
tasks_related_meta(const json_t *call_id)
{
    const char *id = json_string_value(json_object_get(call_id, "task"));
    return id ? related_meta(id) : NULL;
}

/* ---- questions ---- */

static void
on_question(void *data, bool out)
{
    struct task *t = data;
    if (!t->ts || terminal(t))
        return;
    if (out)
        set_status(t, TASK_INPUT_REQUIRED, "a person is asked about the command (elicitation)");
    else
        set_status(t, TASK_WORKING, NULL);
}

static void
on_watch_end(void *data)
{
    task_unref(data);
}

void
task_watch(struct task *t, struct ask_line *l)
{
    json_t *meta = related_meta(t->id);
    if (!meta)
        log_warn("task %.8s...: out of memory: its questions do not name it", t->id);
    t->refs++;
    ask_line_watch(l, meta, on_question, on_watch_end, t);
    json_decref(meta);
}

/* ---- ends ---- */

/* Whether t may end now (a cancelled task stays cancelled). */
static bool
may_end(const struct task *t)
{
    return t->ts && !terminal(t);
}

static void
ended(struct task *t, bool failed, const char *message)
{
    set_status(t, failed ? TASK_FAILED : TASK_COMPLETED, message);
    answer_waiters(t);
    expire(t->ts);
}

/* A copy of cr's output, aborted and said into t.  Returns -1 when out
 * of memory. */
static int
keep_result(struct task *t, const struct call_result *cr)
{
    const struct output_ring_text *o = cr->output;
    size_t tail = o->cut ? o->tail_len : 0;
    t->output = malloc(o->head_len + tail + 1);
    t->aborted = cr->aborted ? strdup(cr->aborted) : NULL;
    t->said = cr->said ? strdup(cr->said) : NULL;
    if (!t->output || (cr->aborted && !t->aborted) || (cr->said && !t->said))
        return -1;
    memcpy(t->output, o->head, o->head_len);
    memcpy(t->output + o->head_len, o->tail, tail);
    t->text = *o;
    t->text.head = t->output;
    t->text.tail = o->cut ? t->output + o->head_len : "";
    t->cr = *cr;
    t->cr.output = &t->text;
    t->cr.aborted = t->aborted;
    t->cr.said = t->said;
    return 0;
}

void
task_end_result(struct task *t, const struct call_result *cr)
{
    if (!may_end(t))
        return;
    if (keep_result(t, cr) < 0) {
        task_end_error(t, JSONRPC_INTERNAL_ERROR, "out of memory keeping the task's result");
        return;
    }
    t->answer = ANSWER_CALL;
    bool failed = cr->setup_failed || cr->not_started || cr->aborted;
    char *message = NULL;
    if (cr->aborted)
        message = strfmt("%s", cr->aborted);
    else if (cr->setup_failed)
        message = strfmt("%s", CALL_RESULT_SETUP_FAILED);
    else if (cr->not_started)
        message = strfmt("%s", CALL_RESULT_NOT_STARTED);
    else
        message = strfmt("the command exited with code %d%s", cr->exit_code,
                         cr->timed_out ? " (it timed out)" : "");
    ended(t, failed, message);
    free(message);
}

void
task_end_tool_result(struct task *t, json_t *result, const char *why)
{
    if (!may_end(t)) {
        json_decref(result);
        return;
    }
    if (!result) {
        task_end_error(t, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    t->answer = ANSWER_JSON;
    t->json = result;
    ended(t, true, why);
}

void
task_end_error(struct task *t, int code, const char *message)
{
    if (!may_end(t))
        return;
    t->answer = ANSWER_ERROR;
    t->code = code;
    t->error = strdup(message);
    ended(t, true, message);
}

/* ---- requests ---- */

bool
tasks_method(const char *method)
{
    return strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/result") == 0 ||
           strcmp(method, "tasks/list") == 0 || strcmp(method, "tasks/cancel") == 0;
}

/* tasks/list: a page of the session's tasks after cursor (the last
 * listed task's seq, as text). */
static void
list_tasks(struct tasks *ts, struct jsonrpc *rpc, const json_t *id, const json_t *params)
{
    const json_t *cursor = json_object_get(params, "cursor");
    uint64_t after = 0;
    if (cursor && !json_is_null(cursor)) {
        const char *c = json_string_value(cursor);
        char *end = NULL;
        after = c && *c >= '0' && *c <= '9' ? strtoull(c, &end, 10) : 0;
        if (!end || *end || after > ts->next_seq) {
            jsonrpc_reply_error(rpc, id, JSONRPC_INVALID_PARAMS,
                                "cursor: not one this server gave (nextCursor of tasks/list)");
            return;
        }
    }
    json_t *list = json_array();
    json_t *result = json_pack("{s:o}", "tasks", list);
    struct list *n;
    unsigned listed = 0;
    uint64_t last = 0;
    bool more = false;
    list_foreach(n, &ts->list)
    {
        struct task *t = TASK(n);
        if (t->seq <= after)
            continue;
        if (listed == TASKS_LIST_PAGE) {
            more = true;
            break;
        }
        if (json_array_append_new(list, task_json(t)) < 0) {
            json_decref(result);
            result = NULL;
            break;
        }
        listed++;
        last = t->seq;
    }
    if (result && more) {
        char next[24];
        snprintf(next, sizeof(next), "%" PRIu64, last);
        if (json_object_set_new(result, "nextCursor", json_string(next)) < 0) {
            json_decref(result);
            result = NULL;
        }
    }
    jsonrpc_reply(rpc, id, result);
}

/* tasks/cancel of t: cancelled before the answer, its call stopped. */
static void
cancel_task(struct tasks *ts, struct task *t, struct jsonrpc *rpc, const json_t *id)
{
    if (terminal(t)) {
        char *why =
            strfmt("Cannot cancel task: already in terminal status '%s'", status_names[t->status]);
        jsonrpc_reply_error(rpc, id, JSONRPC_INVALID_PARAMS, why ? why : "already ended");
        free(why);
        return;
    }
    t->refs++; /* the call's end may let go of its watch */
    set_status(t, TASK_CANCELLED, "cancelled by tasks/cancel: its command was stopped");
    answer_waiters(t);
    ts->ops->cancel(ts->data, t->call_id);
    jsonrpc_reply(rpc, id, task_json(t));
    task_unref(t);
}

/* Request id waits for t's end.  The oldest of TASKS_MAX_WAITERS waiting
 * makes room: a client that dropped a request without cancelling it
 * (gone with its HTTP connection) is likely the one asking again. */
static void
wait_for(struct task *t, struct jsonrpc *rpc, const json_t *id)
{
    if (json_array_size(t->waiters) >= TASKS_MAX_WAITERS) {
        jsonrpc_reply_error(rpc, json_array_get(t->waiters, 0), JSONRPC_INTERNAL_ERROR,
                            "a later tasks/result request for this task took this one's place");
        json_array_remove(t->waiters, 0);
    }
    if (json_array_append(t->waiters, (json_t *)id) < 0) /* referenced */
        jsonrpc_reply_error(rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
}

void
tasks_request(struct tasks *ts, const json_t *id, const char *method, const json_t *params)
{
    struct jsonrpc *rpc = ts->ops->rpc(ts->data);
    if (!rpc)
        return;
    expire(ts);
    if (strcmp(method, "tasks/list") == 0) {
        list_tasks(ts, rpc, id, params);
        return;
    }
    const char *task_id = json_string_value(json_object_get(params, "taskId"));
    if (!task_id) {
        jsonrpc_reply_error(rpc, id, JSONRPC_INVALID_PARAMS, "taskId: a string is required");
        return;
    }
    struct task *t = find(ts, task_id);
    if (!t) {
        char *why = strfmt("Task not found: %s (this session has no task with this id: it "
                           "expired, or never was)",
                           task_id);
        jsonrpc_reply_error(rpc, id, JSONRPC_INVALID_PARAMS, why ? why : "task not found");
        free(why);
        return;
    }
    if (strcmp(method, "tasks/get") == 0) {
        jsonrpc_reply(rpc, id, task_json(t));
    } else if (strcmp(method, "tasks/cancel") == 0) {
        cancel_task(ts, t, rpc, id);
    } else if (terminal(t)) {
        send_answer(t, rpc, id);
    } else {
        wait_for(t, rpc, id);
    }
}

bool
tasks_cancelled(struct tasks *ts, const json_t *id)
{
    struct list *n;
    list_foreach(n, &ts->list)
    {
        json_t *w = TASK(n)->waiters;
        for (size_t i = 0; i < json_array_size(w); i++) {
            if (json_equal(json_array_get(w, i), id)) {
                json_array_remove(w, i);
                return true;
            }
        }
    }
    return false;
}
