/*
 * exec_notify_rules: an exec_notify decision from the .rules policy.
 */
#ifndef EXECGATE_SUPERVISE_EXEC_NOTIFY_RULES_H
#define EXECGATE_SUPERVISE_EXEC_NOTIFY_RULES_H

#include "supervise/exec_notify.h"

struct rules_policy;

/*
 * An exec_notify_decide_fn; arg is a const struct rules_policy *.  The
 * command is checked under every name the exec can go by — the basenames of
 * the path as given, of the file it resolves to (symlinks followed), of
 * each #! interpreter and of argv[0], and the absolute resolved and
 * canonical paths — with argv[1..] after it; the strictest decision wins:
 * forbidden -> REFUSE EACCES with the rule's justification, prompt -> ASK,
 * allow or no rule -> CONTINUE.  Out of memory -> REFUSE ENOMEM.
 */
void exec_notify_rules_decide(void *arg, const struct exec_notify_request *req,
                              struct exec_notify_decision *out);

/*
 * The same decision for `name args[0..nargs)` under each of names (NULL or
 * empty ones skipped), the strictest kept; flags as rules_policy_check's,
 * passed for absolute names only.  For callers that choose the names
 * themselves (the server with --preserve-program-paths).
 */
void exec_notify_rules_decide_names(const struct rules_policy *p, const char *const *names,
                                    size_t n_names, const char *const *args, size_t nargs,
                                    unsigned flags, struct exec_notify_decision *out);

/* The last component of path ("/" and "" stay as they are).  Cannot fail. */
const char *exec_notify_rules_basename(const char *path);

#endif
