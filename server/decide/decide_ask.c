/*
 * decide_ask: the question a person is asked about one exec, and what
 * the answer does (decide.h's decide_ask).
 */
#include "server/decide/decide_int.h"

#include "common/macros.h"
#include "server/decide/always_allow.h"
#include "server/decide/approvals.h"
#include "server/decide/ask.h"
#include "server/rpc/client_log.h"
#include "common/log.h"
#include "server/decide/question_form.h"
#include "server/decide/question_text.h"
#include "common/strfmt.h"
#include "common/utf8.h"
#include "rules/shlex.h"
#include "rules/verdict.h"

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

#define ALWAYS_DECISION "approved_execpolicy_amendment"

/* A question that is out: what its answer is remembered by. */
struct decide_question {
    struct decide_call *dc;
    struct ask_question *aq; /* on the call's line */
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
    char *justification; /* the prompting rule's, shown; or NULL */
    char *command;       /* program and arguments as the question shows them */
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
                  choices, ARRAY_SIZE(choices),
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

/* An approval's reason, when the person typed one, goes to the call's
 * result (decide_call_on_said). */
static void
tell_said(const struct decide_question *q, const json_t *content)
{
    char *shown = q->dc->on_said ? question_text_said(content) : NULL;
    char *line = shown ? strfmt("approved `%s`: %s", q->command, shown) : NULL;
    if (line)
        q->dc->on_said(q->dc->said_data, line);
    else if (shown)
        log_warn("decide %s: out of memory passing on an approval's reason", q->dc->label);
    free(line);
    free(shown);
}

static json_t *
how_params(void *data, const char *note)
{
    return question_params(data, note);
}

/* The question's turn came: its command was approved for the session
 * meanwhile (an earlier question of the call). */
static bool
how_settled(void *data)
{
    const struct decide_question *q = data;
    return approvals_contains(q->dc->cl->approvals, q->approval, q->approvallen);
}

/* An "always" answer: its prefix checked, then written to the standing
 * answers and put in force.  NULL when taken, else why not. */
static const char *
how_take_always(void *data, const json_t *decision)
{
    struct decide_question *q = data;
    if (!q->amendment)
        return "always allowing is not offered for this command (a rule asks about it, and an "
               "allow rule cannot settle that)";
    const struct always_offer offer = {
        .proposed = (const char *const *)q->amendment,
        .n_proposed = q->n_amendment,
        .args = (const char *const *)q->args,
        .nargs = q->nargs,
    };
    size_t n = 0;
    const char *problem = NULL;
    const char **words = always_allow_prefix(&offer, decision, &n, &problem);
    if (!words)
        return problem;
    struct decide_server *ds = q->dc->ds;
    always_allow_write(ds, ds->answers_file, words, n, q->dc->label, q->dc->id, q->dc->cl->log);
    free(words);
    return NULL;
}

/* The answer (ask.h's meaning): an approval for the session is
 * remembered, what the person said with an approval goes to the call's
 * result, a refusal from the tree is remembered for the call (a PATH
 * search's retries are not asked again). */
static void
how_done(void *data, const struct ask_answer *a)
{
    struct decide_question *q = data;
    bool approved =
        a->kind == ASK_APPROVED || a->kind == ASK_APPROVED_FOR_SESSION || a->kind == ASK_ALWAYS;
    if (a->kind == ASK_APPROVED_FOR_SESSION &&
        approvals_add(q->dc->cl->approvals, q->approval, q->approvallen) < 0)
        log_warn("decide: out of memory remembering an approval");
    if (approved && a->content)
        tell_said(q, a->content);
    const char *reason = approved ? NULL : a->reason;
    /* a person's refusal, not the client's failure to ask */
    if (reason && q->remember_decline && a->kind != ASK_UNASKED)
        memo_add(&q->dc->declined, 0, q->key, q->keylen, reason);
    decide_answer_fn done = q->done;
    void *d = q->data;
    question_free(q);
    done(d, approved, reason);
}

static const struct ask_how exec_question = {
    .params = how_params,
    .settled = how_settled,
    .take_always = how_take_always,
    .done = how_done,
};

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
    if (!ask_line_can_ask(dc->line)) {
        *answered_by = "no-elicitation";
        *reason = r->refusal ? r->refusal : REASON_NO_ELICITATION;
        return DECIDE_ASK_DENIED;
    }
    *answered_by = "user";
    struct decide_question *nq = r->key && r->approval ? question_new(dc, e, r) : NULL;
    if (nq) {
        nq->done = done;
        nq->data = data;
        nq->aq = ask_put(dc->line, &exec_question, nq);
    }
    if (!nq || !nq->aq) {
        if (nq)
            question_free(nq);
        *reason = "The MCP client could not be asked for approval";
        return DECIDE_ASK_DENIED;
    }
    *q = nq;
    return DECIDE_ASK_PENDING;
}

void
decide_question_cancel(struct decide_question *q)
{
    if (!q)
        return;
    ask_withdraw(q->aq);
    question_free(q);
}
