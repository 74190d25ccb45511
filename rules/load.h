/*
 * rules load: .rules files (Starlark) into a struct rules_policy.
 */
#ifndef EXECGATE_RULES_LOAD_H
#define EXECGATE_RULES_LOAD_H

#include <stddef.h>

#include "policy.h"

/*
 * The user's rules directory: $CODEX_HOME/rules, else $HOME/.codex/rules.
 * Caller frees; NULL when neither variable is set (or on OOM).
 */
char *rules_default_dir(void);

/*
 * Loads every `*.rules` file of `dir` (sorted by name; a missing directory
 * is no files; NULL skips it), then each of `extra[0..n_extra)` in order,
 * into one new policy.  Any error in any file rejects the whole policy:
 * returns NULL with *err set to a malloc'd "FILE:LINE:COL: message" line
 * (caller frees).
 */
struct rules_policy *rules_load(const char *dir, const char *const *extra, size_t n_extra,
                                char **err);

#endif
