/*
 * decision: the verdict, the loader's program, what the answer means
 * beyond the rules, and the trace of the rules that did not match.
 */
#include "rules/decision.h"

#include <stdlib.h>
#include <string.h>

#include "rules/heuristic.h"
#include "rules/lint.h"

/*
 * The dynamic loader run as a program starts the program it is given
 * without an exec of it, as a #! interpreter does: that program's names,
 * with its own arguments, count too (exec_path_is_loader).  Like a
 * restricting name they may make d's verdict stricter (forbidden, prompt)
 * and never allow; when they do, the verdict takes their names marked
 * restricting, so the exec still runs as the loader and its rule is shown
 * as the one that restricted it.  Those names are borrowed from the walk
 * of the program the loader runs, kept in d->loaded.  A loader running a
 * loader is followed as deep as #! lines are.  Returns 0, or -1 when out
 * of memory.
 */
static int
follow_loader(const struct verdict_rules *vr, const struct verdict_exec *e, const char *cwd,
              const struct exec_path *walk, struct decision *d)
{
    const char *const *argv = e->argv;
    size_t argc = e->argc;
    char *file = strdup(e->canonical ? e->canonical : walk->canonical ? walk->canonical : "");
    int rc = file ? 0 : -1;
    for (int depth = 0; rc == 0 && depth < EXEC_PATH_MAX_INTERPRETERS && exec_path_is_loader(file);
         depth++) {
        size_t k = exec_path_loader_program(argv, argc);
        if (k == 0)
            break;
        argv += k;
        argc -= k;
        struct exec_path inner;
        struct verdict iv = {.decision = RULES_DECISION_NONE};
        const struct verdict_exec ie = {.argv = argv, .argc = argc};
        rc = exec_path_walk(argv[0], cwd, &inner);
        if (rc == 0)
            rc = verdict_decide(vr, &ie, &inner, &iv);
        enum rules_decision got =
            iv.decision == RULES_DECISION_ALLOW ? RULES_DECISION_NONE : iv.decision;
        free(file);
        file = rc == 0 && inner.canonical ? strdup(inner.canonical) : NULL;
        if (rc == 0 && got > d->verdict.decision) {
            for (size_t i = 0; i < iv.n_names; i++)
                iv.names[i].restricting = true;
            struct verdict stricter = iv;
            iv = d->verdict;
            d->verdict = stricter;
            /* the verdict's names now point into inner: keep it as long */
            exec_path_release(&d->loaded);
            d->loaded = inner;
            memset(&inner, 0, sizeof(inner));
        }
        verdict_release(&iv);
        exec_path_release(&inner);
        if (!file)
            break;
    }
    free(file);
    return rc < 0 ? -1 : 0;
}

/* The command as the checks read it: words[0] set to the name each
 * tries, argv[1..] after it; words[argc] NULL.  NULL when out of memory. */
static const char **
command_words(const struct verdict_exec *e, size_t *n)
{
    *n = e->argc > 0 ? e->argc : 1;
    const char **words = calloc(*n + 1, sizeof(*words));
    for (size_t i = 1; words && i < e->argc; i++)
        words[i] = e->argv[i];
    return words;
}

/* What the answer means beyond the rules: an option an allow (or a prompt
 * rule's approval) cannot have meant to let out of the sandbox unseen,
 * read under the program's own file; the forced rm, under the program's
 * own paths, when no rule answered. */
static int
beyond_rules(const struct verdict_exec *e, const struct exec_path *walk, struct decision *d)
{
    enum rules_decision v = d->verdict.decision;
    if (v == RULES_DECISION_FORBIDDEN)
        return 0;
    size_t n;
    const char **words = command_words(e, &n);
    if (!words)
        return -1;
    if (v == RULES_DECISION_ALLOW || v == RULES_DECISION_PROMPT) {
        words[0] = d->program;
        d->caution = rules_lint_dangerous_use(words, n);
    } else {
        const char *names[] = {walk->absolute, walk->canonical};
        for (size_t i = 0; i < 2 && !d->forced_rm; i++) {
            words[0] = names[i];
            d->forced_rm = names[i] && heuristic_forces_rm(words, n);
        }
    }
    free(words);
    return 0;
}

/* ---- the trace ---- */

struct miss_walk {
    const struct verdict_exec *e;
    const struct verdict_name *name;
    struct decision *d;
};

static bool
token_has(const struct rules_token *t, const char *word)
{
    for (size_t i = 0; i < t->n_alts; i++) {
        if (strcmp(t->alts[i], word) == 0)
            return true;
    }
    return false;
}

/* A rule for the name being traced: where its pattern leaves the
 * command, if it does (a rule that names it and matched is in the
 * verdict already). */
static int
note_miss(void *arg, const struct rules_prefix_rule *rule)
{
    struct miss_walk *w = arg;
    if (strcmp(rule->program, w->name->name) != 0)
        return 0;
    for (size_t k = 0; k < rule->n_rest; k++) {
        const char *word = k + 1 < w->e->argc ? w->e->argv[k + 1] : NULL;
        if (word && token_has(&rule->rest[k], word))
            continue;
        if (w->d->n_misses < DECISION_MAX_MISSES)
            w->d->misses[w->d->n_misses++] =
                (struct decision_miss){w->name->name, *rule, k + 1, word};
        w->d->n_missed++;
        return 0;
    }
    return 0;
}

/* The rules written for one of the exec's names whose later words the
 * command does not have, in the policy's order, name by name. */
static void
trace_misses(const struct verdict_rules *vr, const struct verdict_exec *e, struct decision *d)
{
    for (size_t i = 0; i < d->verdict.n_names; i++) {
        struct miss_walk w = {e, &d->verdict.names[i], d};
        rules_policy_each_rule(vr->rules, note_miss, &w);
    }
}

int
decision_make(const struct verdict_rules *vr, const struct verdict_exec *e, const char *cwd,
              const struct exec_path *walk, unsigned flags, struct decision *d)
{
    /* field by field: the misses are written only when traced, and the
     * verdict by verdict_decide (a whole memset here costs the server a
     * tenth of a decision) */
    memset(&d->loaded, 0, sizeof(d->loaded));
    d->program = e->canonical ? e->canonical : walk->canonical ? walk->canonical : walk->absolute;
    d->caution = NULL;
    d->forced_rm = false;
    d->n_misses = d->n_missed = 0;
    if (verdict_decide(vr, e, walk, &d->verdict) < 0 || follow_loader(vr, e, cwd, walk, d) < 0 ||
        beyond_rules(e, walk, d) < 0)
        return -1;
    /* (a loader's program's names were checked against its own words) */
    if ((flags & DECISION_TRACE) && !d->loaded.absolute)
        trace_misses(vr, e, d);
    return 0;
}

void
decision_release(struct decision *d)
{
    verdict_release(&d->verdict);
    exec_path_release(&d->loaded);
    d->n_misses = d->n_missed = 0;
}
