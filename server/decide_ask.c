/*
 * decide_ask: the question a person is asked about one exec, and what
 * the answer does (decide.h's decide_ask).
 */
#include "server/decide_int.h"

#include "server/approvals.h"
#include "server/client_log.h"
#include "server/jsonrpc.h"
#include "server/log.h"
#include "server/question_form.h"
#include "server/question_text.h"
#include "server/shell_call.h"
#include "server/strfmt.h"
#include "server/utf8.h"
#include "rules/amend.h"
#include "rules/shlex.h"
#include "rules/verdict.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- asking a person ---- */

void
decide_call_on_said(struct decide_call *dc, decide_said_fn said, void *data)
{
    dc->on_said = said;
    dc->said_data = data;
}

static void
call_pause(struct decide_call *dc, bool pause)
{
    if (!dc->sc)
        return;
    if (pause) {
        dc->paused++;
        shell_call_pause_timeout(dc->sc);
    } else if (dc->paused > 0) {
        dc->paused--;
        shell_call_resume_timeout(dc->sc);
    }
}

/* Stops the call: a person answered abort (why: what the call's result
 * says). */
static void
call_abort(struct decide_call *dc, const char *why)
{
    if (dc->aborted)
        return;
    dc->aborted = true;
    if (dc->on_abort)
        dc->on_abort(dc->abort_data, why);
    if (dc->sc)
        shell_call_signal(dc->sc, SIGKILL);
}

/* The most times a question is asked again after an answer whose
 * "always allow" cannot be taken (then it counts as declined). */
#define MAX_ASKS_AGAIN 2

#define ALWAYS_DECISION "approved_execpolicy_amendment"

/* A question that is out: what its answer is remembered by. */
struct decide_question {
    struct decide_call *dc;
    long long id;
    char *key;
    size_t keylen;
    char *approval; /* what approved_for_session remembers (decide_result) */
    size_t approvallen;
    bool remember_decline; /* from the tree: a PATH search's retries are not asked again */
    decide_answer_fn done;
    void *data;
    char *text;       /* the question as first asked */
    char **amendment; /* "always allow" offers this prefix; NULL: not offered */
    size_t n_amendment;
    char **args; /* the command's arguments, which a named prefix must follow */
    size_t nargs;
    char *justification;          /* the prompting rule's, shown; or NULL */
    char *command;                /* program and arguments as the question shows them */
    unsigned asks_left;           /* MAX_ASKS_AGAIN, counting down */
    struct decide_question *next; /* in the call's waiting line */
};

static void
question_free(struct decide_question *q)
{
    decide_call_unref(q->dc);
    free(q->key);
    free(q->approval);
    free(q->text);
    free(q->justification);
    free(q->command);
    verdict_words_free(q->amendment);
    verdict_words_free(q->args);
    free(q);
}

/* NULL-terminated copies of words[0..n); NULL when out of memory. */
static char **
words_copy(const char *const *words, size_t n)
{
    char **copy = calloc(n + 1, sizeof(*copy));
    for (size_t i = 0; copy && i < n; i++) {
        if (!(copy[i] = strdup(words[i]))) {
            verdict_words_free(copy);
            return NULL;
        }
    }
    return copy;
}

/* The "always" choice in plain words: "Yes, and always allow commands
 * starting with `git push`" (escaped as the question's text is); NULL
 * when out of memory. */
static char *
always_title(const struct decide_question *q)
{
    char *joined = shlex_join((const char *const *)q->amendment, q->n_amendment);
    char *prefix = joined ? question_text_shown(joined) : NULL;
    char *title =
        prefix ? strfmt("Yes, and always allow commands starting with `%s`", prefix) : NULL;
    free(joined);
    free(prefix);
    return title;
}

/* The sentence that says what "always" adds, or NULL when out of memory. */
static char *
always_sentence(const struct decide_question *q)
{
    char *title = always_title(q);
    char *file = question_text_shown(q->dc->ds->answers_file);
    char *sentence = title && file ? strfmt(" \"%s\" adds an allow rule to %s: such commands run "
                                            "from now on without asking.",
                                            title, file)
                                   : NULL;
    free(title);
    free(file);
    return sentence;
}

/* The message: why it is asked again (note, or NULL), the question, the
 * prompting rule's justification, and what "always" adds when it is
 * offered. */
static char *
question_message(const struct decide_question *q, const char *note)
{
    char *always = q->amendment ? always_sentence(q) : NULL;
    char *just = q->justification ? question_text_shown(q->justification) : NULL;
    char *msg = NULL;
    if ((!q->amendment || always) && (!q->justification || just))
        msg = strfmt("%s%s%s%s%s%s%s%s", note ? "Asked again: " : "", note ? note : "",
                     note ? ". " : "", q->text, just ? " The rule that asks says: \"" : "",
                     just ? just : "", just ? "\"." : "", always ? always : "");
    free(always);
    free(just);
    return msg;
}

/*
 * elicitation/create's params: the message, a form of the decision (each
 * choice titled, question_form.h) and a reason (a text field; it reaches
 * the agent with a refusal), and Codex's proposed_execpolicy_amendment
 * when "always" is offered.  NULL when out of memory.
 */
static json_t *
question_params(const struct decide_question *q, const char *note)
{
    char *msg = question_message(q, note);
    char *always = q->amendment ? always_title(q) : NULL;
    const struct question_choice choices[] = {
        {"approved", "Yes, run it this once"},
        {"approved_for_session", "Yes, and do not ask again for this command in this session"},
        {ALWAYS_DECISION, always},
        {"denied", "No, do not run it (the agent is told and goes on)"},
        {"abort", "No, and stop the whole tool call"},
    };
    json_t *schema =
        msg && (!q->amendment || always)
            ? question_form_schema(
                  choices, sizeof(choices) / sizeof(choices[0]),
                  q->amendment
                      ? "approved: this once; approved_for_session: this command for the rest of "
                        "the session; " ALWAYS_DECISION ": every command starting with "
                        "proposed_execpolicy_amendment, from now on; denied; abort: stop the "
                        "whole tool call"
                      : "approved: this once; approved_for_session: this command for the rest of "
                        "the session; denied; abort: stop the whole tool call",
                  "Told to the agent when you refuse")
            : NULL;
    json_t *params =
        schema ? json_pack("{s:s, s:o}", "message", msg, "requestedSchema", schema) : NULL;
    json_t *prefix = params && q->amendment ? json_array() : NULL;
    for (size_t i = 0; prefix && i < q->n_amendment; i++)
        json_array_append_new(prefix, text_json(q->amendment[i]));
    if (prefix)
        json_object_set_new(params, "proposed_execpolicy_amendment", prefix);
    free(always);
    free(msg);
    return params;
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

/*
 * The prefix an "always" answer approves: the one proposed, or the one the
 * answer names (Codex's form), which must start as the proposal does,
 * follow the command's arguments, and be no shorter than the proposal (no
 * broader than what the person was shown).  NULL with *problem set when
 * it cannot be taken; else a NULL-terminated array (caller frees the
 * array, not the words it borrows from q and decision) and *n.
 */
static const char **
always_prefix(const struct decide_question *q, const json_t *decision, size_t *n,
              const char **problem)
{
    *problem = NULL;
    if (!q->amendment) {
        *problem = "always allowing is not offered for this command (a rule asks about it, and "
                   "an allow rule cannot settle that)";
        return NULL;
    }
    const json_t *named = json_object_get(json_object_get(decision, ALWAYS_DECISION),
                                          "proposed_execpolicy_amendment");
    if (json_is_object(decision) && !json_is_array(named)) {
        *problem = "the answer's approved_execpolicy_amendment names no prefix";
        return NULL;
    }
    size_t len = named ? json_array_size(named) : q->n_amendment;
    if (len < q->n_amendment || len > q->nargs + 1) {
        *problem = len < q->n_amendment ? "the prefix the answer names is broader than the one "
                                          "proposed"
                                        : "the prefix the answer names is longer than the command";
        return NULL;
    }
    const char **words = calloc(len + 1, sizeof(*words));
    for (size_t i = 0; words && i < len; i++) {
        const char *want = i == 0 ? q->amendment[0] : q->args[i - 1];
        words[i] = named ? json_string_value(json_array_get(named, i)) : q->amendment[i];
        if (!words[i] || strcmp(words[i], want) != 0) {
            *problem = "the prefix the answer names is not a prefix of the command being approved";
            free(words);
            return NULL;
        }
    }
    if (!words)
        *problem = "out of memory";
    *n = len;
    return words;
}

/* Appends `allow words` to the standing answers and reloads the rules;
 * a failure is logged (the answer then stands for this exec alone). */
static void
write_always(struct decide_question *q, const char *const *words, size_t n)
{
    struct decide_server *ds = q->dc->ds;
    char *err = NULL;
    char *line = rules_amend_rule_line(words, n);
    int rc = rules_amend_allow_prefix(ds->answers_file, words, n, &err);
    if (rc == 0 && decide_server_reload(ds, &err) < 0)
        rc = -1;
    const char *why = err ? err : "out of memory";
    if (rc == 0)
        log_info("decide %s: always allowed: %s added to %s", q->dc->label, line ? line : "a rule",
                 ds->answers_file);
    else
        log_error("decide %s: always allowing failed, the approval is for this exec only: %s",
                  q->dc->label, why);
    json_t *rec = rc == 0 ? json_pack("{s:s, s:s, s:s?}", "event", "rules-amended", "file",
                                      ds->answers_file, "rule", line)
                          : json_pack("{s:s, s:s, s:s}", "event", "rules-amend-failed", "file",
                                      ds->answers_file, "error", why);
    json_t *id = json_loads(q->dc->label, JSON_DECODE_ANY, NULL);
    if (rec && id)
        json_object_set_new(rec, "requestId", id);
    else
        json_decref(id);
    client_log_send(q->dc->cl->log, rc == 0 ? CLIENT_LOG_INFO : CLIENT_LOG_ERROR, rec);
    free(line);
    free(err);
}

/* reason, and what the person typed in the answer's reason field (escaped
 * as the question's text is) when there is something: in *buf (malloc'd),
 * else reason itself. */
static const char *
with_said(const char *reason, const json_t *content, char **buf)
{
    const char *said = json_string_value(json_object_get(content, "reason"));
    size_t n = said ? strspn(said, " \t\r\n") : 0;
    char *shown = said && said[n] ? question_text_shown(said + n) : NULL;
    *buf = shown ? strfmt("%s, saying: %s", reason, shown) : NULL;
    free(shown);
    return *buf ? *buf : reason;
}

/* An approval's reason, when the person typed one, goes to the call's
 * result (decide_call_on_said). */
static void
tell_said(const struct decide_question *q, const json_t *content)
{
    const char *said = json_string_value(json_object_get(content, "reason"));
    size_t n = said ? strspn(said, " \t\r\n") : 0;
    if (!q->dc->on_said || !said || !said[n])
        return;
    char *shown = question_text_shown(said + n);
    char *line = shown ? strfmt("approved `%s`: %s", q->command, shown) : NULL;
    if (line)
        q->dc->on_said(q->dc->said_data, line);
    else
        log_warn("decide %s: out of memory passing on an approval's reason", q->dc->label);
    free(line);
    free(shown);
}

/* The reason for a refusing answer, or NULL for an approval (an
 * approval for the session is remembered, "always" is written, an abort
 * stops the call).  *again is set instead when an "always" answer cannot
 * be taken: the question is to be asked again, saying why. */
static const char *
answer_reason(struct decide_question *q, const json_t *result, const json_t *error, char **buf,
              const char **again)
{
    *again = NULL;
    const char *action = json_string_value(json_object_get(result, "action"));
    const json_t *content = json_object_get(result, "content");
    const json_t *decision_json = json_object_get(content, "decision");
    const char *decision = json_string_value(decision_json);
    if (error) {
        const char *msg = json_string_value(json_object_get(error, "message"));
        if (asprintf(buf, "The MCP client could not be asked for approval: %s",
                     msg ? msg : "error") < 0)
            *buf = NULL;
        return *buf ? *buf : REASON_CANCELLED;
    }
    if (!action || strcmp(action, "cancel") == 0)
        return REASON_CANCELLED;
    if (strcmp(action, "decline") == 0)
        return REASON_DECLINED;
    if (strcmp(action, "accept") != 0)
        return REASON_CANCELLED;
    if (decision && strcmp(decision, "denied") == 0)
        return with_said(REASON_DENIED, content, buf);
    if (decision && strcmp(decision, "abort") == 0) {
        /* the call's group dies first, so nothing after this exec runs */
        const char *why = with_said(REASON_ABORTED, content, buf);
        call_abort(q->dc, why);
        return why;
    }
    if (decision && strcmp(decision, "approved_for_session") == 0 &&
        approvals_add(q->dc->cl->approvals, q->approval, q->approvallen) < 0)
        log_warn("decide: out of memory remembering an approval");
    if (is_always(decision_json)) {
        size_t n = 0;
        const char **words = always_prefix(q, decision_json, &n, again);
        if (!words)
            return REASON_DECLINED;
        write_always(q, words, n);
        free(words);
    }
    tell_said(q, content);
    return NULL;
}

static void on_question_answer(const json_t *result, const json_t *error, void *data);

/* Sends q's question (again, saying why: note, or NULL).  Returns 0, or -1
 * when it could not be sent. */
static int
send_question(struct decide_question *q, const char *note)
{
    struct decide_client *cl = q->dc->cl;
    json_t *params = cl->rpc ? question_params(q, note) : NULL;
    /* jsonrpc_request takes params, also on failure */
    long long id =
        params ? jsonrpc_request(cl->rpc, "elicitation/create", params, on_question_answer, q) : -1;
    if (id < 0)
        return -1;
    q->id = id;
    call_pause(q->dc, true);
    return 0;
}

/*
 * The next waiting question goes out once none is: a person sees one
 * question of a call at a time, in the order they came, and the client
 * holds one per call at most.  One whose command was approved for the
 * session meanwhile is answered without asking.
 */
static void
ask_next(struct decide_call *dc)
{
    while (!dc->asking && dc->waiting) {
        struct decide_question *q = dc->waiting;
        dc->waiting = q->next;
        if (!dc->waiting)
            dc->waiting_tail = &dc->waiting;
        q->next = NULL;
        bool approved = approvals_contains(dc->cl->approvals, q->approval, q->approvallen);
        if (!approved && send_question(q, NULL) == 0) {
            dc->asking = q;
            continue;
        }
        decide_answer_fn done = q->done;
        void *d = q->data;
        question_free(q);
        done(d, approved, approved ? NULL : "The MCP client could not be asked for approval");
    }
}

static void
on_question_answer(const json_t *result, const json_t *error, void *data)
{
    struct decide_question *q = data;
    call_pause(q->dc, false);
    char *buf = NULL;
    const char *again = NULL;
    const char *reason = answer_reason(q, result, error, &buf, &again);
    if (again) {
        log_info("decide %s: an answer could not be taken: %s", q->dc->label, again);
        if (q->asks_left > 0 && !q->dc->aborted) {
            q->asks_left--;
            if (send_question(q, again) == 0) {
                free(buf);
                return;
            }
        }
        free(buf);
        if (asprintf(&buf, "The answer could not be taken: %s", again) < 0)
            buf = NULL;
        reason = buf ? buf : REASON_DECLINED;
    }
    if (reason && q->remember_decline)
        memo_add(&q->dc->declined, 0, q->key, q->keylen, reason);
    struct decide_call *dc = decide_call_ref(q->dc);
    dc->asking = NULL;
    decide_answer_fn done = q->done;
    void *d = q->data;
    question_free(q);
    done(d, reason == NULL, reason);
    free(buf);
    ask_next(dc);
    decide_call_unref(dc);
}

/* When the request's argv[0] names another program than the one that
 * would run, the question says so: the person sees what was asked for,
 * and that the program runs under its own name.  -1 when out of memory. */
static int
add_argv0_note(struct decide_question *q, const struct decide_exec *e,
               const struct decide_result *r)
{
    if (!r->escalate_if_approved || !argv0_differs(e, r->run_as))
        return 0;
    char *asked = question_text_shown(e->argv[0]);
    char *runs = question_text_shown(r->run_as);
    char *noted = NULL;
    if (asked && runs &&
        asprintf(&noted, "%s (The command asked for argv[0] `%s`; it would run as `%s`.)", q->text,
                 asked, runs) < 0)
        noted = NULL;
    free(asked);
    free(runs);
    if (!noted)
        return -1;
    free(q->text);
    q->text = noted;
    return 0;
}

/* The question for r (an ASK for e), not yet sent; NULL when out of memory. */
static struct decide_question *
question_new(struct decide_call *dc, const struct decide_exec *e, const struct decide_result *r)
{
    struct decide_question *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->dc = decide_call_ref(dc);
    q->remember_decline = e->source == DECIDE_FROM_TREE;
    q->asks_left = MAX_ASKS_AGAIN;
    q->keylen = r->keylen;
    q->nargs = e->argc > 1 ? e->argc - 1 : 0;
    q->approvallen = r->approvallen;
    bool ok = (q->key = malloc(r->keylen)) != NULL && (q->approval = malloc(r->approvallen));
    if (ok) {
        memcpy(q->key, r->key, r->keylen);
        memcpy(q->approval, r->approval, r->approvallen);
    }
    const char *const *args = q->nargs ? e->argv + 1 : NULL;
    if (ok && e->outside)
        q->text = question_text_child(e->outside->command, e->outside->why, r->program, args,
                                      q->nargs, e->cwd);
    else if (ok)
        q->text = question_text_exec(r->program, args, q->nargs, e->cwd);
    if (ok && q->text && !e->outside && e->outside_tree) {
        /* under a person's approval, a prompt rule's question: it runs
         * outside all the same */
        char *outside = strfmt("%s (It runs outside the sandbox: a program you let out started "
                               "it.)",
                               q->text);
        free(q->text);
        q->text = outside;
    }
    ok = ok && q->text != NULL;
    ok = ok && add_argv0_note(q, e, r) == 0;
    ok = ok && (q->command = question_text_command(r->program, args, q->nargs));
    char *cautioned = NULL;
    if (ok && !r->caution && e->outside && e->code_env) {
        /* the person approves what the program will load, too */
        ok = asprintf(&cautioned, "%s (Note: %s.)", q->text, CODE_ENV) >= 0;
        if (ok) {
            free(q->text);
            q->text = cautioned;
            cautioned = NULL;
        }
    }
    if (ok && r->caution &&
        asprintf(&cautioned, "%s (An allow rule matched, but %s.)", q->text, r->caution) >= 0) {
        free(q->text);
        q->text = cautioned;
    }
    ok = ok && (!r->justification || (q->justification = strdup(r->justification)));
    if (ok && r->amendment) {
        ok = (q->amendment = words_copy((const char *const *)r->amendment, r->n_amendment)) &&
             (q->args = words_copy(q->nargs ? e->argv + 1 : NULL, q->nargs));
        q->n_amendment = r->n_amendment;
    }
    if (!ok) {
        question_free(q);
        return NULL;
    }
    return q;
}

enum decide_ask
decide_ask(struct decide_call *dc, const struct decide_exec *e, const struct decide_result *r,
           decide_answer_fn done, void *data, struct decide_question **q, const char **reason,
           const char **answered_by)
{
    *q = NULL;
    *reason = NULL;
    if (r->approval && approvals_contains(dc->cl->approvals, r->approval, r->approvallen)) {
        *answered_by = "session-approval";
        return DECIDE_ASK_APPROVED;
    }
    if (!dc->cl->elicitation || !dc->cl->rpc) {
        *answered_by = "no-elicitation";
        *reason = r->refusal ? r->refusal : REASON_NO_ELICITATION;
        return DECIDE_ASK_DENIED;
    }
    *answered_by = "user";
    struct decide_question *nq = r->key && r->approval ? question_new(dc, e, r) : NULL;
    if (nq) {
        nq->done = done;
        nq->data = data;
    }
    if (nq && (dc->asking || dc->waiting)) {
        /* after the ones before it */
        if (!dc->waiting)
            dc->waiting_tail = &dc->waiting;
        *dc->waiting_tail = nq;
        dc->waiting_tail = &nq->next;
        *q = nq;
        return DECIDE_ASK_PENDING;
    }
    if (!nq || send_question(nq, NULL) < 0) {
        if (nq)
            question_free(nq);
        *reason = "The MCP client could not be asked for approval";
        return DECIDE_ASK_DENIED;
    }
    dc->asking = nq;
    *q = nq;
    return DECIDE_ASK_PENDING;
}

void
decide_question_cancel(struct decide_question *q)
{
    if (!q)
        return;
    struct decide_call *dc = decide_call_ref(q->dc);
    if (q != dc->asking) {
        /* not sent yet: out of the line, and nobody is told */
        struct decide_question **p = &dc->waiting;
        while (*p && *p != q)
            p = &(*p)->next;
        if (*p)
            *p = q->next;
        if (dc->waiting_tail == &q->next)
            dc->waiting_tail = p;
        question_free(q);
        decide_call_unref(dc);
        return;
    }
    struct jsonrpc *rpc = dc->cl->rpc;
    if (rpc) {
        jsonrpc_forget_request(rpc, q->id);
        /* the client may still show the question: tell it to close it */
        jsonrpc_notify(rpc, "notifications/cancelled",
                       json_pack("{s:I, s:s}", "requestId", (json_int_t)q->id, "reason",
                                 "the exec it asked about is no longer waiting for an answer"));
    }
    dc->asking = NULL;
    call_pause(dc, false);
    question_free(q);
    ask_next(dc);
    decide_call_unref(dc);
}
