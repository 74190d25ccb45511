/*
 * result: the decisions a rule can give, and what one check of a command
 * found: the rules that matched, where each was written, and the
 * strictest decision; combined over several policies, settled by the
 * person's standing answers, written as `codex execpolicy check` writes
 * it.  The policy (policy.h) fills it.
 */
#ifndef EXECGATE_RULES_RESULT_H
#define EXECGATE_RULES_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Ordered by strictness: the effective decision is the largest. */
enum rules_decision {
    RULES_DECISION_NONE = 0, /* no rule matched */
    RULES_DECISION_ALLOW = 1,
    RULES_DECISION_PROMPT = 2,
    RULES_DECISION_FORBIDDEN = 3,
};

/* "allow", "prompt", "forbidden"; NULL for RULES_DECISION_NONE. */
const char *rules_decision_name(enum rules_decision d);

/* Parses "allow" | "prompt" | "forbidden"; returns -1 for anything else. */
int rules_decision_parse(const char *name, enum rules_decision *out);

/* Where a rule was written: the file as it was named to the loader, and
 * the line and column (from 1) where its prefix_rule call starts. */
struct rules_origin {
    const char *file;
    uint32_t line, col;
};

struct rules_match {
    char **matched_prefix; /* the command tokens the rule's pattern covered */
    size_t n_prefix;
    enum rules_decision decision;
    char *justification;        /* as shown (rules_text_shown); NULL when the rule has none */
    char *justification_text;   /* exactly as written, NUL bytes and all (check's JSON) */
    size_t justification_len;   /* of justification_text */
    char *resolved_program;     /* set only when matched through basename fallback */
    struct rules_origin origin; /* the policy's (valid while it lives); .file NULL: not known */
};

struct rules_result {
    enum rules_decision decision; /* strictest of matches; NONE when empty */
    struct rules_match *matches;  /* in rule order */
    size_t n_matches;
};

/* Frees what rules_policy_check stored; the struct is the caller's. */
void rules_result_free(struct rules_result *r);

/*
 * Moves src's matches after dst's (src is left empty) and makes dst's
 * decision the stricter of the two: the result of one check over both
 * policies.  Returns 0, or -1 when out of memory (both unchanged).
 */
int rules_result_append(struct rules_result *dst, struct rules_result *src);

/*
 * The person's standing answers: when r's decision is prompt, an allow
 * rule written in answers_file (compared as the rules were named to the
 * loader) whose prefix is at least as long as that of every prompt rule
 * that matched settles the question, and r's decision becomes allow.  A
 * forbidden rule is never settled, and an allow rule shorter than a
 * prompt rule (more general) does not settle it.  Returns the settling
 * match, or NULL (r unchanged).  answers_file NULL: none.  Cannot fail.
 */
const struct rules_match *rules_result_settle(struct rules_result *r, const char *answers_file);

/* The JSON that `codex execpolicy check` prints for r (same keys, order and
 * omissions), without a trailing newline; caller frees. NULL on OOM. */
char *rules_result_to_json(const struct rules_result *r, bool pretty);

#endif
