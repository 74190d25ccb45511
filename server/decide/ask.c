/*
 * ask: one question out per call, the call's clock stopped while it is,
 * and one meaning for every answer (ask.h).
 */
#include "server/decide/ask.h"

#include "server/rpc/jsonrpc.h"
#include "common/log.h"
#include "server/decide/question_text.h"
#include "server/call/shell_call.h"
#include "common/strfmt.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REASON_DECLINED  "User declined execution"
#define REASON_CANCELLED "User cancelled execution"
#define REASON_DENIED    "User denied execution"
#define REASON_ABORTED   "User aborted the tool call"
#define REASON_UNASKED   "The MCP client could not be asked for approval"

/* The most times a question is asked again after an answer whose
 * "always allow" cannot be taken (then it counts as declined). */
#define MAX_ASKS_AGAIN 2

#define ALWAYS_DECISION "approved_execpolicy_amendment"

struct ask_line {
    unsigned refs;               /* its owner's, and one for each question */
    const struct ask_peer *peer; /* borrowed; NULL: nobody to ask */
    struct shell_call *sc;       /* while the call runs */
    unsigned paused;             /* clock stops we made on sc */
    bool aborted;
    void (*on_abort)(void *data, const char *why);
    void *abort_data;
    struct ask_question *asking; /* the one out, or NULL */
    struct ask_question *waiting, **waiting_tail;
    /* ask_line_watch's, while it lasts; watch_out: what it was last told */
    json_t *watch_meta;
    void (*watch_fn)(void *data, bool out);
    void (*watch_release)(void *data);
    void *watch_data;
    bool watch_out;
};

struct ask_question {
    struct ask_line *line;
    const struct ask_how *how;
    void *data;
    long long id;       /* the elicitation's request id, while out */
    unsigned asks_left; /* MAX_ASKS_AGAIN, counting down */
    struct ask_question *next;
};

struct ask_line *
ask_line_new(void (*on_abort)(void *data, const char *why), void *data)
{
    struct ask_line *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->refs = 1;
    l->waiting_tail = &l->waiting;
    l->on_abort = on_abort;
    l->abort_data = data;
    return l;
}

/* Ends l's watch: its release runs, nothing more is told. */
static void
watch_end(struct ask_line *l)
{
    void (*release)(void *data) = l->watch_release;
    void *data = l->watch_data;
    json_decref(l->watch_meta);
    l->watch_meta = NULL;
    l->watch_fn = NULL;
    l->watch_release = NULL;
    l->watch_data = NULL;
    l->watch_out = false;
    if (release)
        release(data);
}

/* Tells the watch when whether a question is out has changed since it
 * was last told: called once a step is over, so that a question answered
 * and the next sent at once are not told as two changes. */
static void
watch_update(struct ask_line *l)
{
    bool out = l->asking != NULL;
    if (!l->watch_fn || out == l->watch_out)
        return;
    l->watch_out = out;
    l->watch_fn(l->watch_data, out);
}

void
ask_line_unref(struct ask_line *l)
{
    if (l && --l->refs == 0) {
        watch_end(l);
        free(l);
    }
}

void
ask_line_set_peer(struct ask_line *l, const struct ask_peer *peer)
{
    l->peer = peer;
    if (!peer)
        watch_end(l);
}

void
ask_line_watch(struct ask_line *l, json_t *meta, void (*out)(void *data, bool out),
               void (*release)(void *data), void *data)
{
    watch_end(l);
    l->watch_meta = json_incref(meta);
    l->watch_fn = out;
    l->watch_release = release;
    l->watch_data = data;
    watch_update(l);
}

bool
ask_line_can_ask(const struct ask_line *l)
{
    return l->peer && l->peer->rpc && l->peer->elicitation;
}

void
ask_line_attach(struct ask_line *l, struct shell_call *sc)
{
    l->sc = sc;
    if (!sc)
        l->paused = 0; /* its clock went with it */
}

static void
clock_pause(struct ask_line *l, bool pause)
{
    if (!l->sc)
        return;
    if (pause) {
        l->paused++;
        shell_call_pause_timeout(l->sc);
    } else if (l->paused > 0) {
        l->paused--;
        shell_call_resume_timeout(l->sc);
    }
}

/* Stops the call: a person answered abort (why: what the call's result
 * says).  Its group dies before the asker is told, so nothing the call
 * does after the question runs. */
static void
line_abort(struct ask_line *l, const char *why)
{
    if (l->aborted)
        return;
    l->aborted = true;
    if (l->on_abort)
        l->on_abort(l->abort_data, why);
    if (l->sc)
        shell_call_signal(l->sc, SIGKILL);
}

static void on_reply(const json_t *result, const json_t *error, void *data);

/* meta's members into params' _meta.  Returns 0, or -1 when out of
 * memory. */
static int
add_meta(json_t *params, json_t *meta)
{
    json_t *m = json_object_get(params, "_meta");
    if (!m) {
        m = json_object();
        if (json_object_set_new(params, "_meta", m) < 0)
            return -1;
    }
    return json_object_update(m, meta);
}

/* Sends q (again, saying why: note, or NULL).  Returns 0, or -1 when it
 * could not be sent. */
static int
send_question(struct ask_question *q, const char *note)
{
    struct ask_line *l = q->line;
    json_t *params = ask_line_can_ask(l) ? q->how->params(q->data, note) : NULL;
    if (params && l->watch_meta && add_meta(params, l->watch_meta) < 0) {
        json_decref(params);
        params = NULL;
    }
    /* jsonrpc_request takes params, also on failure */
    long long id =
        params ? jsonrpc_request(l->peer->rpc, "elicitation/create", params, on_reply, q) : -1;
    if (id < 0)
        return -1;
    q->id = id;
    clock_pause(l, true);
    return 0;
}

static void
question_free(struct ask_question *q)
{
    ask_line_unref(q->line);
    free(q);
}

/* q's answer to its asker; q is freed first (the asker may free what
 * data holds). */
static void
tell(struct ask_question *q, enum ask_kind kind, enum ask_refusal refusal, const char *reason,
     const json_t *content)
{
    const struct ask_how *how = q->how;
    void *data = q->data;
    question_free(q);
    struct ask_answer a = {.kind = kind, .refusal = refusal, .reason = reason, .content = content};
    how->done(data, &a);
}

/*
 * The next waiting question goes out once none is: the client holds one
 * per call at most.  One settled meanwhile (its command approved for the
 * session) is answered without asking.
 */
static void
ask_next(struct ask_line *l)
{
    while (!l->asking && l->waiting) {
        struct ask_question *q = l->waiting;
        l->waiting = q->next;
        if (!l->waiting)
            l->waiting_tail = &l->waiting;
        q->next = NULL;
        bool settled = q->how->settled && q->how->settled(q->data);
        if (!settled && send_question(q, NULL) == 0) {
            l->asking = q;
            continue;
        }
        if (settled)
            tell(q, ASK_APPROVED, ASK_REFUSED_NONE, NULL, NULL);
        else
            tell(q, ASK_UNASKED, ASK_REFUSED_NONE, REASON_UNASKED, NULL);
    }
}

struct ask_question *
ask_put(struct ask_line *l, const struct ask_how *how, void *data)
{
    if (!ask_line_can_ask(l))
        return NULL;
    struct ask_question *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    *q = (struct ask_question){.line = l, .how = how, .data = data, .asks_left = MAX_ASKS_AGAIN};
    l->refs++;
    if (l->asking || l->waiting) {
        /* after the ones before it */
        *l->waiting_tail = q;
        l->waiting_tail = &q->next;
        return q;
    }
    if (send_question(q, NULL) < 0) {
        question_free(q);
        return NULL;
    }
    l->asking = q;
    watch_update(l);
    return q;
}

/* Whether the decision an answer carries is "always allow": the plain
 * string, or Codex's {"approved_execpolicy_amendment": {...}}. */
static bool
is_always(const json_t *decision)
{
    const char *name = json_string_value(decision);
    return (name && strcmp(name, ALWAYS_DECISION) == 0) ||
           json_object_get(decision, ALWAYS_DECISION) != NULL;
}

/* reason, and what the person typed in the answer's reason field when
 * there is something: in *buf (malloc'd), else reason itself. */
static const char *
with_said(const char *reason, const json_t *content, char **buf)
{
    char *shown = question_text_said(content);
    *buf = shown ? strfmt("%s, saying: %s", reason, shown) : NULL;
    free(shown);
    return *buf ? *buf : reason;
}

/*
 * What an answer means (ask.h's table): the kind, and for a refusal how
 * it came (*refusal) and the reason (static, or in *buf).  *again is set
 * instead when an "always" answer cannot be taken: the question is to be
 * asked again, saying why.  An abort stops the call here.
 */
static enum ask_kind
meaning(struct ask_question *q, const json_t *result, const json_t *error,
        enum ask_refusal *refusal, const char **reason, char **buf, const char **again)
{
    *again = NULL;
    *reason = NULL;
    *refusal = ASK_REFUSED_NONE;
    bool explicit = q->how->explicit_approval;
    const char *action = json_string_value(json_object_get(result, "action"));
    const json_t *content = json_object_get(result, "content");
    const json_t *decision_json = json_object_get(content, "decision");
    const char *decision = json_string_value(decision_json);
    if (error) {
        const char *msg = json_string_value(json_object_get(error, "message"));
        *buf = strfmt(REASON_UNASKED ": %s", msg ? msg : "error");
        *reason = *buf ? *buf : REASON_CANCELLED;
        *refusal = ASK_REFUSED_FAILED;
        return ASK_DENIED;
    }
    if (!action || strcmp(action, "accept") != 0) {
        bool declined = action && strcmp(action, "decline") == 0;
        *reason = declined ? REASON_DECLINED : REASON_CANCELLED;
        *refusal = declined ? ASK_REFUSED_DECLINED : ASK_REFUSED_CANCELLED;
        return ASK_DENIED;
    }
    if ((!decision_json && !explicit) || (decision && strcmp(decision, "approved") == 0))
        return ASK_APPROVED;
    if (decision && strcmp(decision, "approved_for_session") == 0 && !explicit)
        return ASK_APPROVED_FOR_SESSION;
    if (decision && strcmp(decision, "abort") == 0) {
        *reason = with_said(REASON_ABORTED, content, buf);
        line_abort(q->line, *reason);
        return ASK_ABORTED;
    }
    if (is_always(decision_json)) {
        *again = q->how->take_always ? q->how->take_always(q->data, decision_json)
                                     : "always allowing is not offered for this question";
        return ASK_ALWAYS;
    }
    /* denied, and any decision not offered: refused */
    *refusal = ASK_REFUSED_IN_FORM;
    *reason =
        with_said(decision && strcmp(decision, "denied") == 0 ? REASON_DENIED : REASON_DECLINED,
                  content, buf);
    return ASK_DENIED;
}

static void
on_reply(const json_t *result, const json_t *error, void *data)
{
    struct ask_question *q = data;
    struct ask_line *l = q->line;
    clock_pause(l, false);
    char *buf = NULL;
    const char *reason = NULL, *again = NULL;
    enum ask_refusal refusal;
    enum ask_kind kind = meaning(q, result, error, &refusal, &reason, &buf, &again);
    if (again) {
        log_info("ask: an answer could not be taken: %s", again);
        if (q->asks_left > 0 && !l->aborted) {
            q->asks_left--;
            if (send_question(q, again) == 0)
                return;
        }
        buf = strfmt("The answer could not be taken: %s", again);
        reason = buf ? buf : REASON_DECLINED;
        kind = ASK_DENIED;
        refusal = ASK_REFUSED_FAILED;
    }
    /* the asker told may let go of the line's last other holder */
    l->refs++;
    l->asking = NULL;
    tell(q, kind, refusal, reason, json_object_get(result, "content"));
    free(buf);
    ask_next(l);
    watch_update(l);
    ask_line_unref(l);
}

void
ask_withdraw(struct ask_question *q)
{
    if (!q)
        return;
    struct ask_line *l = q->line;
    if (q != l->asking) {
        /* not sent yet: out of the line, and nobody is told */
        struct ask_question **p = &l->waiting;
        while (*p && *p != q)
            p = &(*p)->next;
        if (*p)
            *p = q->next;
        if (l->waiting_tail == &q->next)
            l->waiting_tail = p;
        question_free(q);
        return;
    }
    struct jsonrpc *rpc = l->peer ? l->peer->rpc : NULL;
    if (rpc) {
        jsonrpc_forget_request(rpc, q->id);
        /* the client may still show the question: tell it to close it */
        jsonrpc_notify(rpc, "notifications/cancelled",
                       json_pack("{s:I, s:s}", "requestId", (json_int_t)q->id, "reason",
                                 "what it asked about is no longer waiting for an answer"));
    }
    l->refs++;
    l->asking = NULL;
    clock_pause(l, false);
    question_free(q);
    ask_next(l);
    watch_update(l);
    ask_line_unref(l);
}
