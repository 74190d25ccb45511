/*
 * verdict: the rules' decision for one exec, under every name the program
 * goes by.
 *
 * A program is known by more than one name: the path it was asked by,
 * each symbolic link on the way, the file those resolve to, the kernel's
 * view of it, a script's #! interpreters, argv[0], and the last component
 * of each.  The rules are checked under all of them and the strictest
 * answer wins, but only a program's own paths may grant: argv[0], an
 * interpreter or a bare last component may make the answer stricter and
 * never allow, so that neither exec -a, nor a #! line, nor a basename
 * outside a host_executable's list can vouch for a program.
 *
 * decision_make (decision.h), which the server and `execgate-rules
 * explain` both call, decides with it, so both see the same names and
 * the same answer.
 * Knows nothing of MCP or libuv.
 */
#ifndef EXECGATE_RULES_VERDICT_H
#define EXECGATE_RULES_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "rules/exec_path.h"
#include "rules/policy.h"

/* One exec, as the verdict reads it.  All borrowed. */
struct verdict_exec {
    const char *const *argv; /* argv[0] is a name too; argv[1..] are the command's words */
    size_t argc;
    const char *canonical; /* the file the kernel runs, when known (else NULL) */
    const char *const *interpreters;
    size_t n_interpreters; /* EXEC_PATH_MAX_INTERPRETERS at most are read */
};

struct verdict_rules {
    const struct rules_policy *rules;
    /* more rules, as if written in answers_file too (to learn what an
     * "always allow" would do), or NULL */
    const struct rules_policy *candidate;
    const char *answers_file; /* standing answers (rules_result_settle), or NULL */
    bool program_paths_only;  /* --preserve-program-paths: paths only, no last components */
};

/* One name checked. */
struct verdict_name {
    const char *name; /* borrowed from the exec or the walk */
    bool restricting; /* may make the answer stricter, never allow */
    /* what the name counts for: its rules' decision after standing
     * answers, NONE for an allow under a restricting name */
    enum rules_decision decision;
    const struct rules_match *settled_by; /* the standing answer, in result */
    struct rules_result result;           /* the rules that matched under it */
};

#define VERDICT_MAX_NAMES (8 + 2 * EXEC_PATH_MAX_LINKS + 2 * EXEC_PATH_MAX_INTERPRETERS)

struct verdict {
    enum rules_decision decision; /* the strictest over every name */
    const char *justification;    /* the first at that decision (in a result), or NULL */
    struct verdict_name names[VERDICT_MAX_NAMES];
    size_t n_names;
};

/*
 * Checks e, whose path walk resolved, under every name into *v (release
 * it with verdict_release whatever the result): the program's paths first
 * (the path as given made absolute, the file it resolves to, the kernel's
 * file, each link that stood for the program), which may grant, then the
 * restricting names.  An absolute name is checked with host-executable
 * resolution unless program_paths_only.  Returns 0, or -1 when out of
 * memory.
 */
int verdict_decide(const struct verdict_rules *vr, const struct verdict_exec *e,
                   const struct exec_path *walk, struct verdict *v);

/* Frees what verdict_decide stored; safe on a zeroed struct. */
void verdict_release(struct verdict *v);

/*
 * The prefix "always allow" proposes for e: the last component of the
 * path walk resolved, then the arguments up to the first that looks like
 * a path, a URL or data (rules_amend_plain_words); offered only when an
 * allow rule for it, written in vr->answers_file, would settle e's
 * question for good: the prefix does not allow any code
 * (rules_lint_too_broad), and with that rule added every name e goes by
 * comes out allowed.  A NULL-terminated array (*n words; free with
 * verdict_words_free), or NULL: none (no answers file, or out of memory).
 */
char **verdict_always_prefix(const struct verdict_rules *vr, const struct verdict_exec *e,
                             const struct exec_path *walk, size_t *n);

/* Frees a NULL-terminated array of words; NULL is a no-op. */
void verdict_words_free(char **words);

#endif
