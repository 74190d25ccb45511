/*
 * The rules a subcommand of execgate-rules reads (cmd.h).
 */
#include "rules/cli/cmd.h"

#include <stdio.h>
#include <stdlib.h>

#include "rules/load.h"
#include "rules/policy.h"

struct rules_policy *
rules_cmd_load(const char *cmd, const char *const *files, size_t n, bool as_codex,
               const char *name_them)
{
    char *err = NULL;
    char *dir = n > 0 ? NULL : rules_default_dir();
    if (n == 0 && !dir) {
        fprintf(stderr, "execgate-rules %s: no rules directory: set CODEX_HOME or HOME, or %s\n",
                cmd, name_them);
        return NULL;
    }
    struct rules_policy *p =
        as_codex ? rules_load_as_codex(dir, files, n, &err) : rules_load(dir, files, n, &err);
    if (!p)
        fprintf(stderr, "execgate-rules %s: %s\n", cmd, err ? err : "cannot load the rules");
    free(dir);
    free(err);
    return p;
}
