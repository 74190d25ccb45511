/*
 * writable_history: every place a sandbox of this server could write, for
 * the server's whole life.
 *
 * A call's writable view says what its own sandbox can write; but the
 * calls of one server run one after another and at once, each under the
 * policy and sandbox cwd in force when it arrived, and what one sandbox
 * wrote stays there for the next call to run.  So the server remembers
 * the view of every call it accepted (running, waiting or done), each
 * distinct view once, and decide.c treats a path as the sandbox's when
 * any of them, or the call's own view, contains it.
 *
 * A view of everything (danger-full-access, external-sandbox) is not
 * remembered: such a command ran with the rights an escalated program has,
 * so nothing it left behind can get more than it already had
 * (docs/escalation.md, "What any sandbox wrote").
 */
#ifndef EXECGATE_SERVER_WRITABLE_HISTORY_H
#define EXECGATE_SERVER_WRITABLE_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#include "server/call/writable_view.h"

/* The most writable roots remembered, over all distinct views (a policy
 * or sandbox cwd that changes on every call cannot grow the server
 * without bound).  Past it the history is "everything": nothing escalates
 * for the rest of the server's life. */
#define WRITABLE_HISTORY_MAX_ROOTS 1024

struct writable_history;

/* An empty history, or NULL when out of memory. */
struct writable_history *writable_history_new(void);

/* Frees h; NULL is a no-op. */
void writable_history_free(struct writable_history *h);

/*
 * Remembers a copy of v (a SOME view; an ALL view is left out, see
 * above) unless an equal view is remembered already.  When it would pass
 * WRITABLE_HISTORY_MAX_ROOTS roots, or memory runs out, the history
 * becomes everything instead.  Returns true exactly when this call made it
 * everything (for the caller to say so, once).  Cannot fail otherwise.
 */
bool writable_history_add(struct writable_history *h, const struct writable_view *v);

/* Whether the history is everything: every path counts as written. */
bool writable_history_everything(const struct writable_history *h);

/* The remembered views (borrowed, as long as h lives); *n gets the count. */
const struct writable_view *writable_history_views(const struct writable_history *h, size_t *n);

/* The number of roots remembered, over all views. */
size_t writable_history_roots(const struct writable_history *h);

/* Whether any sandbox could have written, replaced or repointed path
 * (absolute, compared as given: pass canonical paths): it lies in a
 * remembered view (writable_view_contains), or the history is everything.
 * Cannot fail. */
bool writable_history_contains(const struct writable_history *h, const char *path);

#endif
