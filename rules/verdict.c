/*
 * verdict: collect the names, check the rules under each, keep the
 * strictest.
 */
#include "rules/verdict.h"

#include "rules/amend.h"
#include "rules/lint.h"

#include <stdlib.h>
#include <string.h>

static const char *
base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* Adds name once; a name that is both a path and a restricting name
 * counts as a path. */
static void
add_name(struct verdict *v, const char *name, bool restricting)
{
    if (!name || !name[0] || v->n_names == VERDICT_MAX_NAMES)
        return;
    for (size_t i = 0; i < v->n_names; i++) {
        if (strcmp(v->names[i].name, name) == 0) {
            v->names[i].restricting = v->names[i].restricting && restricting;
            return;
        }
    }
    v->names[v->n_names++] = (struct verdict_name){.name = name, .restricting = restricting};
}

static void
collect_names(const struct verdict_rules *vr, const struct verdict_exec *e,
              const struct exec_path *walk, struct verdict *v)
{
    bool paths_only = vr->program_paths_only;
    const char *paths[3 + EXEC_PATH_MAX_LINKS] = {walk->absolute, walk->canonical, e->canonical};
    size_t np = 3;
    for (size_t i = 0; i < walk->n_links; i++) {
        if (walk->links[i].program)
            paths[np++] = walk->links[i].path;
    }
    for (size_t i = 0; i < np; i++)
        add_name(v, paths[i], false);
    for (size_t i = 0; !paths_only && i < np; i++)
        add_name(v, paths[i] ? base_name(paths[i]) : NULL, true);
    for (size_t i = 0; i < e->n_interpreters && i < EXEC_PATH_MAX_INTERPRETERS; i++) {
        add_name(v, e->interpreters[i], true);
        if (!paths_only && e->interpreters[i])
            add_name(v, base_name(e->interpreters[i]), true);
    }
    if (!paths_only && e->argc > 0 && e->argv[0])
        add_name(v, base_name(e->argv[0]), true);
}

/* The rules under one name: words[0] is set to it. */
static int
check_name(const struct verdict_rules *vr, struct verdict_name *n, const char **words, size_t nw)
{
    words[0] = n->name;
    unsigned flags =
        n->name[0] == '/' && !vr->program_paths_only ? RULES_CHECK_RESOLVE_HOST_EXECUTABLES : 0;
    struct rules_result more = {0};
    int rc = rules_policy_check(vr->rules, words, nw, flags, &n->result);
    if (rc == 0 && vr->candidate)
        rc = rules_policy_check(vr->candidate, words, nw, flags, &more) == 0 &&
                     rules_result_append(&n->result, &more) == 0
                 ? 0
                 : -1;
    rules_result_free(&more);
    if (rc != 0)
        return -1;
    /* a question a standing answer settles is none */
    n->settled_by = rules_result_settle(&n->result, vr->answers_file);
    n->decision = n->result.decision;
    if (n->restricting && n->decision == RULES_DECISION_ALLOW)
        n->decision = RULES_DECISION_NONE;
    return 0;
}

/* The first justification among r's matches at r's decision. */
static const char *
justification_of(const struct rules_result *r)
{
    for (size_t i = 0; i < r->n_matches; i++) {
        if (r->matches[i].decision == r->decision && r->matches[i].justification)
            return r->matches[i].justification;
    }
    return NULL;
}

int
verdict_decide(const struct verdict_rules *vr, const struct verdict_exec *e,
               const struct exec_path *walk, struct verdict *v)
{
    memset(v, 0, sizeof(*v));
    collect_names(vr, e, walk, v);
    size_t nw = e->argc > 0 ? e->argc : 1;
    const char **words = calloc(nw + 1, sizeof(*words));
    if (!words)
        return -1;
    for (size_t i = 1; i < e->argc; i++)
        words[i] = e->argv[i];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < v->n_names; i++) {
        struct verdict_name *n = &v->names[i];
        rc = check_name(vr, n, words, nw);
        if (rc == 0 && n->decision > v->decision) {
            v->decision = n->decision;
            v->justification = NULL;
        }
        if (rc == 0 && n->decision != RULES_DECISION_NONE && n->decision == v->decision &&
            !v->justification)
            v->justification = justification_of(&n->result);
    }
    free(words);
    return rc;
}

void
verdict_release(struct verdict *v)
{
    for (size_t i = 0; i < v->n_names; i++)
        rules_result_free(&v->names[i].result);
    memset(v, 0, sizeof(*v));
}

void
verdict_words_free(char **words)
{
    for (size_t i = 0; words && words[i]; i++)
        free(words[i]);
    free(words);
}

/* The proposal: the program's last component, then the plain words (every
 * word, for a program whose arguments name the files it changes). */
static char **
proposed_prefix(const struct verdict_exec *e, const struct exec_path *walk, size_t *n)
{
    size_t nargs = e->argc > 1 ? e->argc - 1 : 0;
    size_t kept = nargs ? rules_amend_proposed_words(walk->absolute, e->argv + 1, nargs) : 0;
    char **words = calloc(kept + 2, sizeof(*words));
    bool ok = words && (words[0] = strdup(base_name(walk->absolute))) != NULL;
    for (size_t i = 0; ok && i < kept; i++)
        ok = (words[i + 1] = strdup(e->argv[i + 1])) != NULL;
    if (!ok) {
        verdict_words_free(words);
        return NULL;
    }
    *n = kept + 1;
    return words;
}

/* A policy of the one rule `allow words`, as if written in the answers
 * file, with the host executables of the rules in force; NULL when out of
 * memory. */
static struct rules_policy *
candidate_policy(const struct verdict_rules *vr, char *const *words, size_t n)
{
    struct rules_token *pattern = calloc(n, sizeof(*pattern));
    struct rules_policy *p = pattern ? rules_policy_new() : NULL;
    for (size_t i = 0; pattern && i < n; i++)
        pattern[i] = (struct rules_token){(const char *const *)&words[i], 1};
    struct rules_origin origin = {vr->answers_file, 0, 0};
    if (p &&
        (rules_policy_copy_host_executables(p, vr->rules) < 0 ||
         rules_policy_add_prefix_rule_at(p, pattern, n, RULES_DECISION_ALLOW, NULL, &origin) < 0)) {
        rules_policy_free(p);
        p = NULL;
    }
    free(pattern);
    return p;
}

char **
verdict_always_prefix(const struct verdict_rules *vr, const struct verdict_exec *e,
                      const struct exec_path *walk, size_t *n)
{
    size_t len = 0;
    char **words = vr->answers_file ? proposed_prefix(e, walk, &len) : NULL;
    if (!words || rules_lint_too_broad((const char *const *)words, len)) {
        verdict_words_free(words);
        return NULL;
    }
    struct rules_policy *candidate = candidate_policy(vr, words, len);
    struct verdict_rules with = *vr;
    with.candidate = candidate;
    struct verdict v;
    bool settles =
        candidate && verdict_decide(&with, e, walk, &v) == 0 && v.decision == RULES_DECISION_ALLOW;
    if (candidate)
        verdict_release(&v);
    rules_policy_free(candidate);
    if (!settles) {
        verdict_words_free(words);
        return NULL;
    }
    *n = len;
    return words;
}
