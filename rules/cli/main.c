/*
 * execgate-rules: checks commands against .rules files, and runs Starlark.
 */
#include "execgate-config.h"

#include <stdio.h>
#include <string.h>

#include "rules/cli/cmd.h"

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: execgate-rules check [--rules FILE]... [--resolve-host-executables] [--pretty] "
            "-- CMD...\n"
            "       execgate-rules lint [--] [FILE]...\n"
            "       execgate-rules explain [--rules PATH]... [--preserve-program-paths] -- CMD...\n"
            "       execgate-rules amend --allow [--rules-dir DIR] -- PREFIX...\n"
            "       execgate-rules eval FILE\n"
            "       execgate-rules --help | --version\n");
}

int
main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "check") == 0)
        return rules_cmd_check(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "lint") == 0)
        return rules_cmd_lint(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "explain") == 0)
        return rules_cmd_explain(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "amend") == 0)
        return rules_cmd_amend(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "eval") == 0)
        return rules_cmd_eval(argc - 1, argv + 1);
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf("execgate-rules %s\n", EXECGATE_VERSION);
        return 0;
    }
    usage(stderr);
    return 2;
}
