/*
 * execgate-rules lint [FILE]...: loads the rules as one policy, as check
 * and the server do, and prints a warning line on stdout for each allow
 * rule that is dangerous outside the sandbox (rules/lint.h).  Without
 * FILE, the default rules directory.  Exit 0 when there is nothing to
 * warn about, 1 when warnings were printed, 2 when a file does not load
 * (its positioned error on stderr, nothing on stdout) or on a usage error.
 */
#include "rules/cli/cmd.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/lint.h"
#include "rules/load.h"
#include "rules/policy.h"

#define LINT_USAGE "usage: execgate-rules lint [--] [FILE]...\n"

struct printer {
    bool failed; /* a write to stdout failed */
};

static void
print_warning(void *arg, const char *line)
{
    struct printer *pr = arg;
    if (!pr->failed && (fputs(line, stdout) == EOF || putchar('\n') == EOF))
        pr->failed = true;
}

int
rules_cmd_lint(int argc, char **argv)
{
    int first = 1;
    if (first < argc && strcmp(argv[first], "--") == 0) {
        first++;
    } else {
        for (int i = 1; i < argc; i++) {
            if (argv[i][0] == '-' && argv[i][1] != '\0') {
                fprintf(stderr, "execgate-rules lint: unknown option: %s\n" LINT_USAGE, argv[i]);
                return 2;
            }
        }
    }
    for (int i = first; i < argc; i++) {
        if (argv[i][0] == '\0') {
            fprintf(stderr, "execgate-rules lint: empty file name\n" LINT_USAGE);
            return 2;
        }
    }
    struct rules_policy *p = rules_cmd_load("lint", (const char *const *)argv + first,
                                            (size_t)(argc - first), false, "name the files");
    if (!p)
        return 2;
    struct printer pr = {0};
    int n = rules_lint_policy(p, print_warning, &pr);
    rules_policy_free(p);
    if (n < 0) {
        fprintf(stderr, "execgate-rules lint: out of memory\n");
        return 2;
    }
    if (pr.failed || fflush(stdout) == EOF) {
        fprintf(stderr, "execgate-rules lint: cannot write the warnings: %s\n", strerror(errno));
        return 2;
    }
    return n > 0 ? 1 : 0;
}
