/*
 * execgate-rules amend --allow [--rules-dir DIR] -- PREFIX...: appends
 * `prefix_rule(pattern=[PREFIX...], decision="allow")` to DIR/default.rules
 * (DIR: the default rules directory), as the server and Codex do for an
 * "always allow" answer: atomically, once, in the form Codex writes.  A
 * running server reloads it by itself.  Prints the line; exit 0, 1 when it
 * could not be written, 2 on a usage error.
 */
#include "rules/cli/cmd.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/amend.h"
#include "rules/load.h"

#define AMEND_USAGE "usage: execgate-rules amend --allow [--rules-dir DIR] -- PREFIX...\n"

static int
usage_error(const char *what)
{
    fprintf(stderr, "execgate-rules amend: %s\n" AMEND_USAGE, what);
    return 2;
}

int
rules_cmd_amend(int argc, char **argv)
{
    bool allow = false;
    const char *dir = NULL;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--allow") == 0)
            allow = true;
        else if (strcmp(argv[i], "--rules-dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else
            return usage_error("unknown option or missing value");
    }
    if (!allow)
        return usage_error("--allow is the only amendment there is");
    if (i >= argc - 1)
        return usage_error("no prefix after --");
    const char *const *prefix = (const char *const *)argv + i + 1;
    size_t n = (size_t)(argc - i - 1);
    char *default_dir = dir ? NULL : rules_default_dir();
    if (!dir && !default_dir) {
        fprintf(stderr, "execgate-rules amend: no rules directory: set CODEX_HOME or HOME, or "
                        "give --rules-dir\n");
        return 1;
    }
    char *path = NULL;
    char *line = rules_amend_rule_line(prefix, n);
    if (!line || asprintf(&path, "%s/default.rules", dir ? dir : default_dir) < 0) {
        fprintf(stderr, "execgate-rules amend: out of memory\n");
        free(line);
        free(default_dir);
        return 1;
    }
    char *err = NULL;
    int rc = rules_amend_allow_prefix(path, prefix, n, &err);
    if (rc < 0)
        fprintf(stderr, "execgate-rules amend: %s\n", err ? err : "cannot write the rule");
    else
        printf("%s: %s\n", path, line);
    free(err);
    free(line);
    free(path);
    free(default_dir);
    return rc < 0 ? 1 : 0;
}
