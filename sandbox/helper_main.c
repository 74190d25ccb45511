/*
 * helper_main: a helper command line parsed into its options and policy,
 * then run (helper_main.h).
 */
#include "sandbox/helper_main.h"
#include "sandbox/helper.h"
#include "sandbox/ns.h"
#include "sandbox/policy/cmdline.h"
#include "sandbox/policy/policy.h"
#include "sandbox/protect.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Parses a file descriptor number: digits only, within int. */
static int
parse_fd(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > 1 << 20)
        return -1;
    return (int)v;
}

static int
parse_args(int argc, char **argv, struct sandbox_helper_options *o)
{
    o->report_fd = -1;
    o->exec_notify_fd = -1;
    o->net_proxy_fd = -1;
    o->net_ns_fd = -1;
    o->tty_fd = -1;
    o->command_fd = -1;
    /* at most one per argument */
    o->protect = calloc((size_t)argc, sizeof *o->protect);
    o->hide = calloc((size_t)argc, sizeof *o->hide);
    if (o->protect == NULL || o->hide == NULL)
        sandbox_helper_die(ENOMEM, "reading the options");
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        bool has_value = i + 1 < argc;
        if (strcmp(a, SANDBOX_OPT_POLICY) == 0 && has_value) {
            o->policy_text = argv[++i];
        } else if (strcmp(a, SANDBOX_OPT_CWD) == 0 && has_value) {
            o->cwd = argv[++i];
        } else if (strcmp(a, SANDBOX_OPT_REPORT_FD) == 0 && has_value) {
            o->report_fd = parse_fd(argv[++i]);
            if (o->report_fd < 0)
                sandbox_helper_die(0, "--report-fd: \"%s\" is not a file descriptor number",
                                   argv[i]);
        } else if (strcmp(a, SANDBOX_OPT_EXEC_NOTIFY_FD) == 0 && has_value) {
            o->exec_notify_fd = parse_fd(argv[++i]);
            if (o->exec_notify_fd < 0)
                sandbox_helper_die(0, "--exec-notify-fd: \"%s\" is not a file descriptor number",
                                   argv[i]);
        } else if (strcmp(a, SANDBOX_OPT_NET_PROXY_FD) == 0 && has_value) {
            o->net_proxy_fd = parse_fd(argv[++i]);
            if (o->net_proxy_fd < 0)
                sandbox_helper_die(0, "--net-proxy-fd: \"%s\" is not a file descriptor number",
                                   argv[i]);
        } else if (strcmp(a, SANDBOX_OPT_NET_NS_FD) == 0 && has_value) {
            o->net_ns_fd = parse_fd(argv[++i]);
            if (o->net_ns_fd < 0)
                sandbox_helper_die(0, "--net-ns-fd: \"%s\" is not a file descriptor number",
                                   argv[i]);
        } else if (strcmp(a, SANDBOX_OPT_TTY_FD) == 0 && has_value) {
            o->tty_fd = parse_fd(argv[++i]);
            if (o->tty_fd < 0)
                sandbox_helper_die(0, "--tty-fd: \"%s\" is not a file descriptor number", argv[i]);
        } else if (strcmp(a, SANDBOX_OPT_COMMAND_FD) == 0 && has_value) {
            o->command_fd = parse_fd(argv[++i]);
            if (o->command_fd < 0)
                sandbox_helper_die(0, "--command-fd: \"%s\" is not a file descriptor number",
                                   argv[i]);
        } else if (strcmp(a, SANDBOX_OPT_ARGV0) == 0 && has_value) {
            o->argv0 = argv[++i];
        } else if (strcmp(a, SANDBOX_OPT_PROTECT) == 0 && has_value) {
            const char *path = argv[++i];
            const char *why = sandbox_protect_arg_error(path);
            if (why != NULL)
                sandbox_helper_die(0, "--protect \"%s\": %s", path, why);
            o->protect[o->n_protect++] = path;
        } else if (strcmp(a, SANDBOX_OPT_HIDE) == 0 && has_value) {
            const char *path = argv[++i];
            const char *why = sandbox_ns_hide_arg_error(path);
            if (why != NULL)
                sandbox_helper_die(0, "--hide \"%s\": %s", path, why);
            o->hide[o->n_hide++] = path;
        } else if (strcmp(a, SANDBOX_OPT_SOCKETS_ONLY) == 0) {
            o->sockets_only = true;
        } else if (strcmp(a, SANDBOX_OPT_ALLOW_DEGRADED) == 0) {
            o->allow_degraded = true;
        } else {
            sandbox_helper_die(0, "unknown or incomplete option \"%s\" (see --help)", a);
        }
    }
    if (o->policy_text == NULL)
        sandbox_helper_die(0, "--policy is required (see --help)");
    if (o->cwd == NULL)
        sandbox_helper_die(0, "--cwd is required (see --help)");
    if (i >= argc)
        sandbox_helper_die(0, "no program given after -- (see --help)");
    if (o->sockets_only && o->exec_notify_fd < 0)
        sandbox_helper_die(0, "--notify-sockets-only needs --exec-notify-fd");
    o->program_argv = &argv[i];
    return 0;
}

noreturn void
sandbox_helper_main(int argc, char **argv)
{
    struct sandbox_helper_options o = {0};
    parse_args(argc, argv, &o);

    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_parse(o.policy_text, &err);
    if (p == NULL)
        sandbox_helper_die(0, "%s", err ? err : "sandbox policy: out of memory");
    o.policy = p;
    sandbox_helper_run(&o); /* does not return */
}
