/*
 * The subcommands of execgate-rules.  Each takes the arguments after its
 * own name (argv[0] is the subcommand) and returns the process exit status.
 */
#ifndef EXECGATE_RULES_CLI_CMD_H
#define EXECGATE_RULES_CLI_CMD_H

#include <stdbool.h>
#include <stddef.h>

struct rules_policy;

/*
 * The rules a subcommand reads: the files named, else the default rules
 * directory; as Codex loads them (check) or as the server does.  NULL
 * after saying why on stderr, as "execgate-rules CMD: ...", with
 * name_them telling how to name files when there is no directory.
 */
struct rules_policy *rules_cmd_load(const char *cmd, const char *const *files, size_t n,
                                    bool as_codex, const char *name_them);

/* execgate-rules check [--rules FILE]... [--resolve-host-executables] [--pretty] -- CMD... */
int rules_cmd_check(int argc, char **argv);

/* execgate-rules lint [--] [FILE]...: warns about dangerous allow rules;
 * exit 0 none, 1 warnings printed, 2 a file does not load (or usage). */
int rules_cmd_lint(int argc, char **argv);

/* execgate-rules eval FILE: runs a Starlark file with the language's built-ins. */
int rules_cmd_eval(int argc, char **argv);

/* execgate-rules amend --allow [--rules-dir DIR] -- PREFIX...: appends an
 * allow rule to DIR/default.rules as an "always allow" answer does. */
int rules_cmd_amend(int argc, char **argv);

/* execgate-rules explain [--rules PATH]... [--preserve-program-paths] -- CMD...:
 * what the server would decide for one exec of CMD, step by step. */
int rules_cmd_explain(int argc, char **argv);

#endif
