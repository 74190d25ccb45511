/*
 * rule builtins: prefix_rule, host_executable and network_rule, the
 * built-ins a .rules file calls to add to a policy, with every check Codex
 * makes (decisions, patterns, justifications, host paths, examples).
 */
#ifndef EXECGATE_RULES_RULE_BUILTINS_H
#define EXECGATE_RULES_RULE_BUILTINS_H

#include "starlark/eval.h"
#include <stdbool.h>

#include "rules/policy.h"

struct rules_builder;

/* A builder adding to p (borrowed; must outlive it), or NULL on OOM.
 * as_codex: refuse a `~/` host_executable path as Codex does, instead of
 * expanding it with $HOME. */
struct rules_builder *rules_builder_new(struct rules_policy *p, bool as_codex);

/* Frees b; NULL is a no-op. */
void rules_builder_free(struct rules_builder *b);

/* Predeclares the three built-ins in vm, adding to b's policy.
 * Returns 0, or -1 on OOM. */
int rules_builtins_install(struct star_vm *vm, struct rules_builder *b);

/*
 * After vm has run a file: checks the match / not_match examples its
 * prefix_rule calls gave, as Codex does once the file has been evaluated
 * (so host_executable declarations anywhere in the file count).  Returns
 * 0, or -1 with *err set to a malloc'd "FILE:LINE:COL: message" line.
 * Forgets the examples either way.
 */
int rules_builder_check_examples(struct rules_builder *b, struct star_vm *vm, char **err);

#endif
