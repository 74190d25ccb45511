/*
 * execgate-rules check: loads the rules, checks one command, prints the
 * JSON `codex execpolicy check` prints.  Exit 0 when the check ran (match
 * or not), 1 when the policy cannot be loaded or output fails, 2 on a
 * usage error.
 */
#include "rules/cli/cmd.h"

#include "common/utf8.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/load.h"
#include "rules/policy.h"

struct check_args {
    const char **rules; /* --rules FILE, in order */
    size_t n_rules;
    bool resolve_host;
    bool pretty;
    char **command;
    size_t n_command;
};

static int
usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "execgate-rules check: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
    fprintf(stderr, "usage: execgate-rules check [--rules FILE]... [--resolve-host-executables] "
                    "[--pretty] -- CMD...\n");
    return 2;
}

/* Options until `--` or the first other word (even one starting with "-");
 * the rest is the command, as Codex reads it (so `check --rules f git
 * --pretty` checks "git --pretty"). */
static int
parse_args(int argc, char **argv, struct check_args *a)
{
    a->rules = calloc((size_t)argc, sizeof *a->rules);
    if (!a->rules) {
        fprintf(stderr, "execgate-rules check: out of memory\n");
        return 1;
    }
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        } else if (strcmp(arg, "--rules") == 0 || strcmp(arg, "-r") == 0) {
            if (i + 1 >= argc)
                return usage_error("missing file after", arg);
            a->rules[a->n_rules++] = argv[++i];
        } else if (strncmp(arg, "--rules=", 8) == 0) {
            a->rules[a->n_rules++] = arg + 8;
        } else if (strcmp(arg, "--resolve-host-executables") == 0) {
            a->resolve_host = true;
        } else if (strcmp(arg, "--pretty") == 0) {
            a->pretty = true;
        } else {
            /* Like Codex, an unknown "-x" word starts the command. */
            break;
        }
    }
    if (i >= argc)
        return usage_error("no command to check", NULL);
    for (int j = i; j < argc; j++)
        if (!utf8_valid(argv[j], strlen(argv[j])))
            return usage_error("command word is not valid UTF-8", NULL);
    a->command = argv + i;
    a->n_command = (size_t)(argc - i);
    return 0;
}

static int
print_result(const struct rules_policy *p, const struct check_args *a)
{
    struct rules_result r;
    unsigned flags = a->resolve_host ? RULES_CHECK_RESOLVE_HOST_EXECUTABLES : 0;
    if (rules_policy_check(p, (const char *const *)a->command, a->n_command, flags, &r) < 0) {
        fprintf(stderr, "execgate-rules check: out of memory\n");
        return 1;
    }
    char *json = rules_result_to_json(&r, a->pretty);
    rules_result_free(&r);
    if (!json) {
        fprintf(stderr, "execgate-rules check: out of memory\n");
        return 1;
    }
    int rc = 0;
    if (puts(json) == EOF || fflush(stdout) == EOF) {
        fprintf(stderr, "execgate-rules check: cannot write the result: %s\n", strerror(errno));
        rc = 1;
    }
    free(json);
    return rc;
}

int
rules_cmd_check(int argc, char **argv)
{
    struct check_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc == 0) {
        struct rules_policy *p =
            rules_cmd_load("check", a.rules, a.n_rules, true, "pass --rules FILE");
        rc = p ? print_result(p, &a) : 1;
        rules_policy_free(p);
    }
    free(a.rules);
    return rc;
}
