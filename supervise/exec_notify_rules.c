/*
 * exec_notify_rules: the rules engine behind exec notifications.
 *
 * A rule names programs; the target chooses its path, argv[0] and symlink
 * names, so each of them is tried and the strictest result kept.
 */
#include "supervise/exec_notify_rules.h"
#include "rules/policy.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *
exec_notify_rules_basename(const char *path)
{
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

struct best {
    enum rules_decision decision;
    char *justification;
    bool oom;
};

/* Checks cmd under one more name (cmd[0]); keeps the strictest result and
 * the first justification given at that level. */
static void
check_name(const struct rules_policy *p, const char *name, const char **cmd, size_t argc,
           unsigned flags, struct best *b)
{
    if (name == NULL || name[0] == '\0')
        return;
    cmd[0] = name;
    struct rules_result r = {0};
    if (rules_policy_check(p, cmd, argc, name[0] == '/' ? flags : 0, &r) != 0) {
        b->oom = true;
        return;
    }
    if (r.decision > b->decision) {
        b->decision = r.decision;
        free(b->justification);
        b->justification = NULL;
        for (size_t i = 0; i < r.n_matches; i++) {
            if (r.matches[i].decision == r.decision && r.matches[i].justification) {
                b->justification = strdup(r.matches[i].justification);
                break;
            }
        }
    }
    rules_result_free(&r);
}

/* Whether names[i] is also an earlier name: the same name gets the same
 * verdict, so it is checked once (a plain `ls` goes by "ls" four times). */
static bool
named_before(const char *const *names, size_t i)
{
    for (size_t k = 0; names[i] != NULL && k < i; k++) {
        if (names[k] != NULL && strcmp(names[k], names[i]) == 0)
            return true;
    }
    return false;
}

void
exec_notify_rules_decide_names(const struct rules_policy *p, const char *const *names,
                               size_t n_names, const char *const *args, size_t nargs,
                               unsigned flags, struct exec_notify_decision *out)
{
    const char **cmd = calloc(nargs + 2, sizeof *cmd);
    if (cmd == NULL) {
        *out = (struct exec_notify_decision){EXEC_NOTIFY_REFUSE, ENOMEM, NULL};
        return;
    }
    for (size_t i = 0; i < nargs; i++)
        cmd[i + 1] = args[i];
    struct best b = {0};
    for (size_t i = 0; i < n_names; i++) {
        if (!named_before(names, i))
            check_name(p, names[i], cmd, nargs + 1, flags, &b);
    }
    free(cmd);
    if (b.oom) {
        free(b.justification);
        *out = (struct exec_notify_decision){EXEC_NOTIFY_REFUSE, ENOMEM, NULL};
        return;
    }
    switch (b.decision) {
    case RULES_DECISION_FORBIDDEN:
        out->verdict = EXEC_NOTIFY_REFUSE;
        out->err = EACCES;
        out->reason = b.justification ? b.justification : strdup("forbidden by a rule");
        return;
    case RULES_DECISION_PROMPT:
        out->verdict = EXEC_NOTIFY_ASK;
        out->reason = b.justification;
        return;
    default:
        free(b.justification);
        out->verdict = EXEC_NOTIFY_CONTINUE;
        return;
    }
}

void
exec_notify_rules_decide(void *arg, const struct exec_notify_request *req,
                         struct exec_notify_decision *out)
{
    const char *names[6 + EXEC_NOTIFY_MAX_INTERP_DEPTH];
    size_t n = 0;
    names[n++] = exec_notify_rules_basename(req->path);
    names[n++] = exec_notify_rules_basename(req->resolved);
    names[n++] = req->resolved;
    if (req->canonical != NULL) {
        names[n++] = exec_notify_rules_basename(req->canonical);
        names[n++] = req->canonical;
    }
    for (size_t i = 0; i < req->n_interpreters && i < EXEC_NOTIFY_MAX_INTERP_DEPTH; i++)
        names[n++] = exec_notify_rules_basename(req->interpreters[i]);
    if (req->argc > 0)
        names[n++] = exec_notify_rules_basename(req->argv[0]);
    exec_notify_rules_decide_names(arg, names, n, req->argc > 1 ? req->argv + 1 : NULL,
                                   req->argc > 1 ? req->argc - 1 : 0,
                                   RULES_CHECK_RESOLVE_HOST_EXECUTABLES, out);
}
