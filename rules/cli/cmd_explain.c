/*
 * execgate-rules explain [--rules PATH]... [--preserve-program-paths] --
 * CMD...: what the server would decide for one exec of CMD, and why.
 *
 * `check` answers as `codex execpolicy check` does, byte for byte; the
 * server decides more: it finds the program on PATH as the shell would,
 * checks the rules under every name the program goes by, takes the
 * person's standing answers into account, and applies the forced-rm
 * heuristic, all in decision_make (rules/decision.h), which this calls as
 * the server does, asking also for the rules that did not match.  This
 * prints each of those steps.  Exit 0 when it
 * could tell, 1 when the program cannot be found or read, 2 when the
 * rules do not load or on a usage error.
 */
#include "rules/cli/cmd.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rules/amend.h"
#include "rules/decision.h"
#include "rules/exec_path.h"
#include "rules/load.h"
#include "rules/shlex.h"
#include "rules/verdict.h"

#define EXPLAIN_USAGE                                                                              \
    "usage: execgate-rules explain [--rules PATH]... [--preserve-program-paths] -- CMD...\n"

struct explain_args {
    const char **rules; /* the --rules paths, or the default directory */
    size_t n_rules;
    char *default_dir; /* when no --rules was given */
    bool program_paths_only;
    const char *const *cmd;
    size_t n_cmd;
};

static int
usage_error(const char *what)
{
    fprintf(stderr, "execgate-rules explain: %s\n" EXPLAIN_USAGE, what);
    return 2;
}

static int
parse_args(int argc, char **argv, struct explain_args *a)
{
    memset(a, 0, sizeof(*a));
    a->rules = calloc((size_t)argc + 1, sizeof(*a->rules));
    if (!a->rules)
        return usage_error("out of memory");
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--rules") == 0 && i + 1 < argc)
            a->rules[a->n_rules++] = argv[++i];
        else if (strcmp(argv[i], "--preserve-program-paths") == 0)
            a->program_paths_only = true;
        else
            return usage_error("unknown option or missing value");
    }
    if (i >= argc - 1)
        return usage_error("no command after --");
    a->cmd = (const char *const *)argv + i + 1;
    a->n_cmd = (size_t)(argc - i - 1);
    if (a->n_rules == 0) {
        if (!(a->default_dir = rules_default_dir())) {
            fprintf(stderr, "execgate-rules explain: no rules directory: set CODEX_HOME or HOME, "
                            "or give --rules\n");
            return 2;
        }
        a->rules[a->n_rules++] = a->default_dir;
    }
    return 0;
}

static void
print_match(const struct rules_match *m, const struct rules_match *settled_by)
{
    char *prefix = shlex_join((const char *const *)m->matched_prefix, m->n_prefix);
    printf("      %s", rules_decision_name(m->decision));
    if (m->origin.file)
        printf(" %s:%u:%u", m->origin.file, (unsigned)m->origin.line, (unsigned)m->origin.col);
    printf(": %s", prefix ? prefix : "?");
    if (m->resolved_program)
        printf(" (matched %s by its last component)", m->resolved_program);
    if (m == settled_by)
        printf(" (a standing answer: it settles the prompt rules)");
    if (m->justification)
        printf(" (%s)", m->justification);
    printf("\n");
    free(prefix);
}

/* A pattern as the rules wrote it: alternatives as [a|b]. */
static void
print_pattern(const struct rules_prefix_rule *rule)
{
    printf("%s", rule->program);
    for (size_t k = 0; k < rule->n_rest; k++) {
        const struct rules_token *t = &rule->rest[k];
        printf(" %s", t->n_alts > 1 ? "[" : "");
        for (size_t i = 0; i < t->n_alts; i++) {
            char *w = shlex_join(&t->alts[i], 1);
            printf("%s%s", i ? "|" : "", w ? w : "?");
            free(w);
        }
        printf("%s", t->n_alts > 1 ? "]" : "");
    }
}

static void
print_misses(const struct decision *d, const char *name)
{
    for (size_t i = 0; i < d->n_misses; i++) {
        const struct decision_miss *m = &d->misses[i];
        if (m->name != name)
            continue;
        printf("      not matched: %s", rules_decision_name(m->rule.decision));
        if (m->rule.origin.file)
            printf(" %s:%u:%u", m->rule.origin.file, (unsigned)m->rule.origin.line,
                   (unsigned)m->rule.origin.col);
        printf(": ");
        print_pattern(&m->rule);
        char *word = m->word ? shlex_join(&m->word, 1) : NULL;
        if (m->word)
            printf(" (argument %zu is %s)\n", m->at, word ? word : "?");
        else
            printf(" (the command has no argument %zu)\n", m->at);
        free(word);
    }
}

static void
print_names(const struct decision *d)
{
    const struct verdict *v = &d->verdict;
    printf("names:\n");
    for (size_t i = 0; i < v->n_names; i++) {
        const struct verdict_name *n = &v->names[i];
        const char *dn = rules_decision_name(n->decision);
        printf("  %s (%s): %s\n", n->name,
               n->restricting ? "may only make the answer stricter" : "a path of the program",
               dn ? dn : "no rule");
        for (size_t k = 0; k < n->result.n_matches; k++)
            print_match(&n->result.matches[k], n->settled_by);
        print_misses(d, n->name);
    }
    if (d->n_missed > d->n_misses)
        printf("  (and %zu more rules that did not match)\n", d->n_missed - d->n_misses);
}

/* What the server does with the decision. */
static void
print_outcome(const struct decision *d, const struct verdict_rules *vr,
              const struct verdict_exec *e, const struct exec_path *walk)
{
    const struct verdict *v = &d->verdict;
    printf("decision: ");
    switch (v->decision) {
    case RULES_DECISION_FORBIDDEN:
        printf("forbidden: refused (\"Execution forbidden by policy%s%s\")\n",
               v->justification ? ": " : "", v->justification ? v->justification : "");
        return;
    case RULES_DECISION_PROMPT:
        printf("prompt: a person is asked first; approved, it runs outside the sandbox\n");
        break;
    case RULES_DECISION_ALLOW:
        if (d->caution)
            printf("allow, but it uses %s: a person is asked first; approved, it runs outside "
                   "the sandbox\n",
                   d->caution);
        else
            printf("allow: it runs outside the sandbox\n");
        break;
    default:
        if (d->forced_rm)
            printf("no rule, but a forced rm: a person is asked first; approved, it runs in the "
                   "sandbox\n");
        else
            printf("no rule: it runs in the sandbox\n");
        return;
    }
    printf("  (outside only when neither the program, a link on its path nor an interpreter "
           "lies where the call's sandbox can write, and the workdir is not in a repository "
           "the sandbox could have written; an exec the tree watch sees runs in place)\n");
    if (v->decision != RULES_DECISION_PROMPT)
        return;
    size_t n = 0;
    char **always = verdict_always_prefix(vr, e, walk, &n);
    char *line = always ? rules_amend_rule_line((const char *const *)always, n) : NULL;
    if (line)
        printf("always allow: offered; answering it adds %s to %s\n", line, vr->answers_file);
    else
        printf("always allow: not offered (%s)\n",
               vr->answers_file ? "no allow rule could settle this question for good"
                                : "every rules path is a file: there is no rules directory to "
                                  "write to");
    free(line);
    verdict_words_free(always);
}

static int
explain(const struct explain_args *a, const struct rules_policy *rules, const char *answers)
{
    char *file = strchr(a->cmd[0], '/') ? strdup(a->cmd[0]) : exec_path_search(a->cmd[0]);
    if (!file) {
        fprintf(stderr,
                "execgate-rules explain: %s: not found on PATH (the shell would say: "
                "command not found)\n",
                a->cmd[0]);
        return 1;
    }
    char cwd[PATH_MAX];
    struct exec_path walk;
    memset(&walk, 0, sizeof(walk));
    struct exec_interpreters in;
    memset(&in, 0, sizeof(in));
    struct decision d;
    memset(&d, 0, sizeof(d));
    int rc = getcwd(cwd, sizeof(cwd)) && exec_path_walk(file, cwd, &walk) == 0 ? 0 : -1;
    rc = rc == 0 && exec_path_interpreters(&walk, cwd, &in) == 0 ? 0 : -1;
    const struct verdict_rules vr = {rules, NULL, answers, a->program_paths_only};
    const struct verdict_exec e = {a->cmd, a->n_cmd, NULL, in.names, in.n};
    rc = rc == 0 && decision_make(&vr, &e, cwd, &walk, DECISION_TRACE, &d) == 0 ? 0 : -1;
    if (rc == 0) {
        char *shown = shlex_join(a->cmd, a->n_cmd);
        printf("command: %s\n", shown ? shown : a->cmd[0]);
        printf("program: %s", walk.canonical ? walk.canonical : walk.absolute);
        if (!strchr(a->cmd[0], '/'))
            printf(" (%s found on PATH as %s)", a->cmd[0], file);
        printf("\n");
        for (size_t i = 0; i < in.n; i++)
            printf("interpreter: %s\n", in.names[i]);
        print_names(&d);
        print_outcome(&d, &vr, &e, &walk);
        free(shown);
    } else {
        fprintf(stderr, "execgate-rules explain: %s: cannot be looked at\n", file);
    }
    decision_release(&d);
    exec_interpreters_release(&in);
    exec_path_release(&walk);
    free(file);
    return rc == 0 ? 0 : 1;
}

int
rules_cmd_explain(int argc, char **argv)
{
    struct explain_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0) {
        free(a.rules);
        free(a.default_dir);
        return rc;
    }
    char *err = NULL;
    struct rules_policy *rules = rules_load_paths(a.rules, a.n_rules, a.default_dir, &err);
    char *answers = rules ? rules_amend_answers_file(a.rules, a.n_rules, a.default_dir) : NULL;
    if (!rules) {
        fprintf(stderr, "execgate-rules explain: %s\n", err ? err : "out of memory");
        rc = 2;
    } else {
        rc = explain(&a, rules, answers);
    }
    free(err);
    free(answers);
    rules_policy_free(rules);
    free(a.rules);
    free(a.default_dir);
    return rc;
}
