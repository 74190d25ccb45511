/*
 * exec_notify_rules: the rules engine behind exec notifications.
 *
 * A rule names programs; the target chooses its path, argv[0] and symlink
 * names, so each of them is tried and the strictest result kept.
 */
#include "exec_notify_rules.h"
#include "rules/policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *
base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

struct best {
    enum rules_decision decision;
    char *justification;
    bool oom;
};

static void
check_name(const struct rules_policy *p, const char *name, const struct exec_notify_request *req,
           const char **cmd, struct best *b)
{
    if (name == NULL || name[0] == '\0')
        return;
    cmd[0] = name;
    struct rules_result r = {0};
    unsigned flags = name[0] == '/' ? RULES_CHECK_RESOLVE_HOST_EXECUTABLES : 0;
    if (rules_policy_check(p, cmd, req->argc > 0 ? req->argc : 1, flags, &r) != 0) {
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

void
exec_notify_rules_decide(void *arg, const struct exec_notify_request *req,
                         struct exec_notify_decision *out)
{
    const struct rules_policy *p = arg;
    size_t argc = req->argc > 0 ? req->argc : 1;
    const char **cmd = calloc(argc + 1, sizeof *cmd);
    if (cmd == NULL) {
        *out = (struct exec_notify_decision){EXEC_NOTIFY_REFUSE, ENOMEM, NULL};
        return;
    }
    for (size_t i = 1; i < req->argc; i++)
        cmd[i] = req->argv[i];
    struct best b = {0};
    check_name(p, base_of(req->path), req, cmd, &b);
    check_name(p, base_of(req->resolved), req, cmd, &b);
    check_name(p, req->resolved, req, cmd, &b);
    if (req->canonical != NULL) {
        check_name(p, base_of(req->canonical), req, cmd, &b);
        check_name(p, req->canonical, req, cmd, &b);
    }
    for (size_t i = 0; i < req->n_interpreters; i++)
        check_name(p, base_of(req->interpreters[i]), req, cmd, &b);
    if (req->argc > 0)
        check_name(p, base_of(req->argv[0]), req, cmd, &b);
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
