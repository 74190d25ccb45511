/*
 * lint scripts: the sed scripts and awk programs a command carries, read
 * for what they may do outside the sandbox.  For the lint (lint.c).
 */
#ifndef EXECGATE_RULES_LINT_SCRIPT_H
#define EXECGATE_RULES_LINT_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>

/* What a sed script may do. */
#define LINT_SED_RUNS   0x1u /* the e command, or s///e */
#define LINT_SED_WRITES 0x2u /* the w or W command, or s///w */

/*
 * The effects of the sed command argv[0..argc), its options and script
 * read from argv[start]: LINT_SED_RUNS | LINT_SED_WRITES, all of them for a
 * script sed reads from a file or one that cannot be read here (the
 * cautious answer), none under --sandbox.  Cannot fail.
 */
unsigned lint_sed_effects(const char *const *argv, size_t start, size_t argc);

/*
 * Whether the sed command argv[0..argc) (its options from argv[start])
 * really gives --sandbox: an option word of its own, not an option's
 * value, and before a "--".  Cannot fail.
 */
bool lint_sed_sandboxed(const char *const *argv, size_t start, size_t argc);

/*
 * Whether the awk command argv[0..argc) (its program the first operand
 * from argv[start], or -e/--source texts) may run a command or write a
 * file: system(), a pipe, a redirection, @load or @include, or a program
 * read from a file.  Cannot fail.
 */
bool lint_awk_dangerous(const char *const *argv, size_t start, size_t argc);

#endif
