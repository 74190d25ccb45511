/*
 * always_allow: an "always allow" answer (approved_execpolicy_amendment)
 * taken: the prefix it approves checked against the one proposed and the
 * command asked about, then written to the standing answers' file as an
 * allow rule and put in force at once (docs/escalation.md, "Always
 * allow").
 */
#ifndef EXECGATE_SERVER_ALWAYS_ALLOW_H
#define EXECGATE_SERVER_ALWAYS_ALLOW_H

#include <jansson.h>
#include <stddef.h>

struct client_log;
struct decide_server;

/* The prefix proposed (proposed[0..n_proposed), proposed[0] the program)
 * for a command with arguments args[0..nargs). */
struct always_offer {
    const char *const *proposed;
    size_t n_proposed;
    const char *const *args;
    size_t nargs;
};

/*
 * The prefix an "always" answer with decision approves: the one proposed,
 * or the one the answer names (Codex's {"approved_execpolicy_amendment":
 * {"proposed_execpolicy_amendment": [...]}}), which must start as the
 * proposal does, follow the command's arguments, and be no shorter than
 * the proposal (no broader than what the person was shown).  NULL with
 * *problem (static) when it cannot be taken; else a NULL-terminated array
 * (caller frees the array, not the words it borrows from offer and
 * decision) and *n.
 */
const char **always_allow_prefix(const struct always_offer *offer, const json_t *decision,
                                 size_t *n, const char **problem);

/*
 * Appends `allow words` to file (ds's standing answers) and reloads ds's
 * rules.  What happened goes to the server's log and to the client's log
 * (borrowed; NULL: none), the call named label (its request id, id, a
 * JSON value or NULL, goes in the client's record); a failure leaves the
 * answer standing for this exec alone.  Cannot fail.
 */
void always_allow_write(struct decide_server *ds, const char *file, const char *const *words,
                        size_t n, const char *label, const json_t *id, struct client_log *log);

#endif
