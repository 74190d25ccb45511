/*
 * rules lint: which `allow` rules are dangerous once a command they allow
 * runs outside the sandbox, and which commands use an option that writes
 * any file or runs any command.
 *
 * One table (lint_table.c) holds the knowledge: programs that run code or read
 * configuration from the working tree (git, make, npm, cargo, python, ...)
 * or run any program they are given (sh, env, xargs, sudo, timeout, ...),
 * and, per program and subcommand, the options that write files or run
 * commands (git log --output, find -exec, sort -o, tar --to-command,
 * curl -o, cp, tee, ...).  It is a list of known cases, not a proof that
 * anything else is safe.  Knows nothing of MCP or libuv.
 */
#ifndef EXECGATE_RULES_LINT_H
#define EXECGATE_RULES_LINT_H

#include <stdbool.h>
#include <stddef.h>

#include "rules/policy.h"

/*
 * Calls warn once per warning about p's allow rules, in rule order, with
 * one line (no newline; valid during the call only):
 *
 *   FILE:LINE:COL: warning: allow rule for "make" runs code from the
 *   working tree when escalated (the Makefile's recipes and $(shell ...));
 *   use decision="prompt"
 *
 * FILE:LINE:COL is where the rule's prefix_rule call starts; a rule added
 * without an origin gives a line that starts at "warning: ".  A rule whose
 * first token had alternatives warns once per alternative it concerns; the
 * same line twice (a rule written in a loop) is given once.  prompt and
 * forbidden rules never warn.  Two kinds of warning:
 *  - the rule's program (a path counts by its last component) runs code or
 *    reads configuration from the working tree, or runs any program it is
 *    given, whatever the rest of the command;
 *  - the rule's prefix leaves open an option that writes any file or runs
 *    any command (a prefix rule matches every command that starts with
 *    it): `allow rule "git log" also allows "git log --output=FILE"
 *    (writes any file), ...; use decision="prompt"`.  A prefix that fixes
 *    another subcommand, or that ends the options with "--", closes the
 *    options it no longer covers.
 * Returns the number of warnings given, or -1 when out of memory (warn
 * may have been called for some).  p NULL is no rules.
 */
int rules_lint_policy(const struct rules_policy *p, void (*warn)(void *arg, const char *line),
                      void *arg);

/*
 * Whether the command argv[0..argc) uses one of the table's dangerous
 * options, for a command about to run outside the sandbox: a static,
 * one-line description of the first such use, for the person asked
 * ("git --output=FILE (writes any file)"), or NULL when none is used.
 *
 * argv[0] is the program by name or path (its last component counts).
 * An option counts in every form the program accepts: "--output FILE",
 * "--output=FILE", an unambiguous abbreviation ("--out=FILE" for sort),
 * "-o FILE", "-oFILE", and inside a cluster of short options ("-uo FILE");
 * tar's first word counts as a cluster without its "-" ("tar xf").  A
 * program-wide option counts anywhere after the program, a subcommand's
 * after the subcommand (git's options before the subcommand, -c, -C,
 * --git-dir, ..., only there).  Options stop at a "--" that cannot be the
 * value of the option before it (after an operand, the subcommand, or a
 * "--name=value"); find's expression does not stop at "--".  A
 * subcommand whose every use writes or runs what it is told (git
 * filter-branch) counts on any use; a whole program that does (cp, mv,
 * tee, dd, ...) does not: an allow rule that names it allowed that use,
 * and the lint warns about the rule instead.
 * In doubt it errs towards a description (a person is asked), never
 * towards NULL.  argc 0 or argv NULL is NULL; a NULL word ends the
 * command, as for exec.  Cannot fail (out of memory while reading a sed
 * script counts as a dangerous use); thread-safe.
 */
const char *rules_lint_dangerous_use(const char *const *argv, size_t argc);

/*
 * Whether an allow rule for the prefix prefix[0..n) would let one answer
 * allow any code at all outside the sandbox, so that "always allow" is
 * not offered for it: the program (by its last component) runs any code
 * or program it is given, whatever follows (a shell, an interpreter, env,
 * xargs, sudo, ...), or the prefix is a program alone that the table says
 * runs code from the working tree (a bare "git" or "make").  n 0 or a
 * NULL first word is too broad.  Cannot fail.
 */
bool rules_lint_too_broad(const char *const *prefix, size_t n);

/*
 * Whether the program (a name or a path: its last component counts) reads
 * repository or working-tree configuration, or runs code or programs it
 * could find there: git and every git-* program, the git front ends the
 * table knows (tig, gh, pre-commit, ...), and every program the table
 * says runs code from the working tree or runs what it is given (make,
 * npm, python, sh, env, ...).  Such a program is not escalated in a
 * repository a sandbox could have written.  Cannot fail.
 */
bool rules_lint_reads_repository(const char *program);

#endif
