/*
 * ask: a question to a person by MCP elicitation, for an exec (decide.h)
 * or a network connection (call_net.h), and the one meaning each answer
 * has for both (docs/escalation.md, docs/network.md):
 *
 *   accept, decision approved (or none)     ASK_APPROVED
 *   accept, approved_for_session            ASK_APPROVED_FOR_SESSION
 *   (a question that needs an explicit      ASK_DENIED
 *   approval: none, approved_for_session)
 *   accept, approved_execpolicy_amendment   ASK_ALWAYS, when the asker can
 *                                           take it; else asked again
 *                                           (twice at most), then refused
 *   accept, denied                          ASK_DENIED
 *   accept, abort                           ASK_ABORTED: the call is stopped
 *                                           (its process group killed)
 *                                           before the asker is told
 *   decline, cancel, another decision, an   ASK_DENIED
 *   error answer
 *   nobody to ask, or the request not sent  ASK_UNASKED
 *
 * A DENIED answer also says how it came (enum ask_refusal), for an asker
 * that words its own refusals.
 *
 * One struct ask_peer per client (MCP session): where questions go.  One
 * struct ask_line per call: its questions go out one at a time, in the
 * order they came (a person sees one question of a call at a time); while
 * one is out the call's timeout clock stops.
 */
#ifndef EXECGATE_SERVER_ASK_H
#define EXECGATE_SERVER_ASK_H

#include <jansson.h>
#include <stdbool.h>

struct jsonrpc;
struct shell_call;

/* A client's transport (borrowed; NULL once it is closed: nobody is asked
 * then) and whether it declared the elicitation capability. */
struct ask_peer {
    struct jsonrpc *rpc;
    bool elicitation;
};

enum ask_kind {
    ASK_UNASKED,
    ASK_APPROVED,
    ASK_APPROVED_FOR_SESSION,
    ASK_ALWAYS,
    ASK_DENIED,
    ASK_ABORTED,
};

/* How a DENIED answer came. */
enum ask_refusal {
    ASK_REFUSED_NONE,      /* not refused */
    ASK_REFUSED_IN_FORM,   /* accept, with a decision that refuses, that was not offered, or
                              with none where one is needed */
    ASK_REFUSED_DECLINED,  /* decline */
    ASK_REFUSED_CANCELLED, /* cancel, or no action */
    ASK_REFUSED_FAILED,    /* an error answer, or an "always" that could not be taken */
};

/* An answer, borrowed for the callback. */
struct ask_answer {
    enum ask_kind kind;
    enum ask_refusal refusal;
    /* DENIED, ABORTED, UNASKED: what the agent is told ("User denied
     * execution, saying: ..." with what the person typed); else NULL */
    const char *reason;
    /* the answer's content ({"decision": ..., "reason": ...}), or NULL */
    const json_t *content;
};

/* What a question needs from its asker; data is the asker's. */
struct ask_how {
    /* elicitation/create's params, asked again saying why when note is
     * not NULL; NULL when out of memory (then ASK_UNASKED). */
    json_t *(*params)(void *data, const char *note);
    /* May be NULL.  Called when the question's turn comes: true when it
     * is settled without asking (then ASK_APPROVED, content NULL). */
    bool (*settled)(void *data);
    /* May be NULL ("always" is not offered).  An "always" answer whose
     * decision is decision: NULL when taken (what it allows is written),
     * else why not (static). */
    const char *(*take_always)(void *data, const json_t *decision);
    /* The answer: once, unless the question is withdrawn first. */
    void (*done)(void *data, const struct ask_answer *a);
    /* Only "approved" approves: the question offers no approval for the
     * session, and a form accepted without a decision is no approval
     * (leaving the sandbox is asked so). */
    bool explicit_approval;
};

struct ask_line;
struct ask_question;

/* A call's line.  on_abort(data, why) runs at most once, when a person
 * answers `abort`: the call's result says why (borrowed for the
 * callback).  One reference, the caller's; each question holds one too.
 * NULL when out of memory. */
struct ask_line *ask_line_new(void (*on_abort)(void *data, const char *why), void *data);

/* Drops a reference; the last frees.  NULL is a no-op. */
void ask_line_unref(struct ask_line *l);

/* The client l's questions go to (borrowed, as long as l uses it; NULL:
 * nobody, and l's watch ends).  Cannot fail. */
void ask_line_set_peer(struct ask_line *l, const struct ask_peer *peer);

/*
 * Someone who follows l's questions (an MCP task: server/mcp/tasks.h):
 * out(data, true) when one of l's questions goes out while none was,
 * out(data, false) when none is out any more; each question l sends from
 * now on carries meta's members in its params' _meta (meta is referenced;
 * NULL: none).  The watch ends when another replaces it, when l's peer is
 * set to NULL (the call let go of its line: nothing is asked for it any
 * more) or when l is freed: release(data) then runs once (may be NULL),
 * and nothing more is called.  Cannot fail.
 */
void ask_line_watch(struct ask_line *l, json_t *meta, void (*out)(void *data, bool out),
                    void (*release)(void *data), void *data);

/* Whether l has somebody to ask: a transport, with elicitation. */
bool ask_line_can_ask(const struct ask_line *l);

/* The call runs as sc (NULL: it ended): its clock stops while a question
 * is out, and an abort kills its process group.  Cannot fail. */
void ask_line_attach(struct ask_line *l, struct shell_call *sc);

/*
 * Puts a question on l: sent now when none of l's is out, else after
 * the ones before it.  how is borrowed for the question's life (static);
 * data is given to its hooks.  Returns the question, or NULL when it
 * cannot be asked now (nobody to ask, out of memory, the request not
 * sent): nothing is called then.
 */
struct ask_question *ask_put(struct ask_line *l, const struct ask_how *how, void *data);

/* Withdraws q: done never runs; a question out is forgotten and the
 * client told to close it (notifications/cancelled), and the next one
 * goes out.  NULL is a no-op. */
void ask_withdraw(struct ask_question *q);

#endif
