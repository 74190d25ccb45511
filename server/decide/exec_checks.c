#include "server/decide/exec_checks.h"

#include "common/macros.h"
#include "proto/esc_env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Variables removed from an escalated program's environment: they change
 * how a program loads, what a shell runs before the command, or which
 * code an interpreter or git runs, behind the rules' back.  A trailing
 * '*' marks a prefix.  The execgate variables go too: an escalated program
 * has no escalation socket. */
static const char *const dropped_env[] = {
    "LD_*",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "MALLOC_*",
    "LOCPATH",
    "NLSPATH",
    "HOSTALIASES",
    "RESOLV_HOST_CONF",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PROMPT_COMMAND",
    "BASH_FUNC_*",
    "PS4",
    "IFS",
    "CDPATH",
    "GLOBIGNORE",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "RUBYOPT",
    "RUBYLIB",
    "NODE_OPTIONS",
    "GIT_EXEC_PATH",
    "GIT_CONFIG_*",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    ESC_ENV_ALL,
};

const char *const *
exec_checks_env_drop_list(size_t *n)
{
    *n = ARRAY_SIZE(dropped_env);
    return dropped_env;
}

bool
exec_checks_env_dropped(const char *entry)
{
    size_t name_len = strcspn(entry, "=");
    for (size_t i = 0; i < ARRAY_SIZE(dropped_env); i++) {
        const char *d = dropped_env[i];
        /* most names differ at once: every escalation reads the whole
         * environment of the server and of the request through this */
        if (d[0] != entry[0])
            continue;
        size_t n = strlen(d);
        if (d[n - 1] == '*') {
            if (name_len >= n - 1 && strncmp(entry, d, n - 1) == 0)
                return true;
        } else if (name_len == n && strncmp(entry, d, n) == 0) {
            return true;
        }
    }
    return false;
}
