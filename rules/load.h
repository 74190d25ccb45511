/*
 * rules load: .rules files (Starlark) into a struct rules_policy.
 */
#ifndef EXECGATE_RULES_LOAD_H
#define EXECGATE_RULES_LOAD_H

#include <stddef.h>

#include "rules/policy.h"

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

/*
 * Same, loading each file exactly as Codex 0.169 does, for `execgate-rules
 * check`: a `host_executable` path starting with `~/` is refused as not
 * absolute, where rules_load expands it with $HOME.
 */
struct rules_policy *rules_load_as_codex(const char *dir, const char *const *extra, size_t n_extra,
                                         char **err);

/*
 * Loads each of paths[0..n) in order into one new policy: a file as it
 * is, a directory as its `*.rules` files (sorted by name; names starting
 * with "." and subdirectories left out), each named "DIR/NAME" (so a
 * rule's origin names it so).  A missing path is an error, except the one
 * equal to missing_ok (the default directory, which may not exist yet:
 * no rules).  Any error in any file rejects the whole policy: NULL with
 * *err a malloc'd "FILE:LINE:COL: message" line (caller frees).
 */
struct rules_policy *rules_load_paths(const char *const *paths, size_t n, const char *missing_ok,
                                      char **err);

/*
 * Calls fn(arg, file) for each file rules_load_paths(paths, n, missing_ok)
 * loads, in the order it loads them: a path that is not a directory as it
 * is (a missing one too, except missing_ok, which is skipped), a directory
 * as its `*.rules` files named "DIR/NAME" (sorted by name; hidden names
 * and subdirectories left out).  Stops at the first non-zero return of fn
 * and returns it; returns 0 when all were called, or -1 with *err a
 * malloc'd "DIR:1:1: message" line when a directory cannot be read (*err
 * is NULL unless set here or by fn).
 */
int rules_each_file(const char *const *paths, size_t n, const char *missing_ok,
                    int (*fn)(void *arg, const char *file), void *arg, char **err);

#endif
