/*
 * The subcommands of execgate-rules.  Each takes the arguments after its
 * own name (argv[0] is the subcommand) and returns the process exit status.
 */
#ifndef EXECGATE_RULES_CLI_CMD_H
#define EXECGATE_RULES_CLI_CMD_H

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
