/*
 * decision: the rules' whole answer for one exec, in the one function the
 * server (server/decide/decide_exec.c) and `execgate-rules explain` both call, so that
 * what explain shows is what the server does.
 *
 * From the exec's command and the walk of its path (exec_path_walk) it
 * makes: the verdict under every name the program goes by (verdict.h),
 * the dynamic loader run as a program followed into the program it runs;
 * for an allow or prompt answer, an option of the command that writes any
 * file or runs any command (rules_lint_dangerous_use); for no answer, the
 * forced-rm heuristic (heuristic.h); and, on request, the trace of the
 * rules that name the program but did not match, with the word that
 * stopped each.  The verdict's names and matches are the trace of what
 * did match (each with its file and line).
 *
 * Reads the filesystem only to walk the path a loader is given; knows
 * nothing of MCP, libuv or the sandbox, which the server decides from
 * this answer.
 */
#ifndef EXECGATE_RULES_DECISION_H
#define EXECGATE_RULES_DECISION_H

#include <stdbool.h>
#include <stddef.h>

#include "rules/exec_path.h"
#include "rules/policy.h"
#include "rules/verdict.h"

/* Ask for the rules that did not match (decision.misses). */
#define DECISION_TRACE 0x1u

/* The most misses kept; decision.n_missed counts them all. */
#define DECISION_MAX_MISSES 32

/* A rule that names a program the exec goes by but did not match. */
struct decision_miss {
    const char *name;              /* the name it was checked under (a verdict name's) */
    struct rules_prefix_rule rule; /* what it points to is the policy's */
    size_t at;                     /* the pattern's position that failed (1: the first argument) */
    const char *word;              /* the command's word there; NULL: the command ends before */
};

struct decision {
    struct verdict verdict;  /* the answer, and every name with the rules that matched */
    struct exec_path loaded; /* the walk a loader's program took; verdict's names may borrow it */
    const char *program;     /* the file that runs: the kernel's, else the walk's (borrowed) */
    /* allow or prompt: an option that writes any file or runs any command
     * (static text), or NULL */
    const char *caution;
    bool forced_rm; /* no rule, and the forced-rm heuristic asks */
    struct decision_miss misses[DECISION_MAX_MISSES]; /* with DECISION_TRACE */
    size_t n_misses, n_missed;
};

/*
 * Decides e, whose path walk resolved, under vr into *d (release it with
 * decision_release whatever the result).  cwd is the exec's working
 * directory, for the path a loader is given.  flags: DECISION_TRACE or 0
 * (the server's: no trace is made).  Returns 0, or -1 when out of memory.
 */
int decision_make(const struct verdict_rules *vr, const struct verdict_exec *e, const char *cwd,
                  const struct exec_path *walk, unsigned flags, struct decision *d);

/* Frees what decision_make stored; safe on a zeroed struct, not on one
 * decision_make was never given. */
void decision_release(struct decision *d);

#endif
