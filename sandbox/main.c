/*
 * execgate-sandbox: applies a sandbox policy to itself, then runs PROGRAM.
 *
 *   execgate-sandbox --policy JSON --cwd DIR [--report-fd N] [--exec-notify-fd N]
 *                    [--allow-degraded] [--argv0 NAME] [--protect PATH]... [--hide PATH]...
 *                    -- PROGRAM ARGS...
 *
 * One-shot and fail-closed: any setup error ends the helper with status 125
 * (SANDBOX_EXIT_SETUP_FAILED) and one line on stderr, and nothing runs.
 * PROGRAM not found is 127, found but not runnable 126, otherwise PROGRAM's
 * own status (128+signal when it was killed and the helper had to wait).
 */
#include "sandbox/policy/cmdline.h"
#include "execgate-config.h"
#include "sandbox/helper.h"
#include "sandbox/policy/policy.h"
#include "sandbox/ns.h"
#include "sandbox/protect.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: execgate-sandbox --policy JSON --cwd DIR [--report-fd N] [--exec-notify-fd N]\n"
            "                        [--notify-sockets-only] [--net-proxy-fd N] [--tty-fd N]\n"
            "                        [--allow-degraded] [--argv0 NAME] [--protect PATH]...\n"
            "                        [--hide PATH]...\n"
            "                        -- PROGRAM [ARGS...]\n"
            "Applies the sandbox policy JSON (canonical sandboxPolicy with sandboxCwd) to\n"
            "itself, changes to DIR, then runs PROGRAM.  Exit status 125: the sandbox could\n"
            "not be set up and nothing ran; 126/127: PROGRAM not runnable / not found.\n"
            "With \"canonical_roots\" in JSON the writable roots are exactly those, each\n"
            "reached without following a symbolic link (one on the way: exit 125).\n"
            "--exec-notify-fd N: last, hand every execve/execveat of PROGRAM and its\n"
            "descendants to a supervisor; the seccomp listener is sent over the\n"
            "SOCK_SEQPACKET socket N (see docs/enforcement.md).  Under read-only or\n"
            "workspace-write the same listener also gets every connect(2), sendto(2)\n"
            "with an address, sendmsg(2) and sendmmsg(2), for the supervisor to decide\n"
            "and make.\n"
            "--notify-sockets-only: with --exec-notify-fd, the listener gets the socket\n"
            "calls alone, not the execs (read-only or workspace-write only).\n"
            "--net-proxy-fd N: under read-only or workspace-write, PROGRAM gets a network\n"
            "namespace with only loopback; the socket listening on 127.0.0.1 there is sent\n"
            "over the SOCK_SEQPACKET socket N, and the proxy variables point at it (see\n"
            "docs/network.md).\n"
            "--tty-fd N: PROGRAM runs on a terminal made from the sandbox's own devpts\n"
            "(its stdin, stdout, stderr and controlling terminal); the master is sent\n"
            "over the Unix socket N (see docs/server.md).\n"
            "--argv0 NAME: PROGRAM runs with NAME as its argv[0] (as exec -a).\n"
            "--protect PATH (repeatable, absolute): under workspace-write, when PATH\n"
            "(symlinks resolved) lies in a writable location, it is kept read-only\n"
            "(created as an empty directory first when missing; see docs/sandbox.md).\n"
            "--hide PATH (repeatable, absolute): under read-only and workspace-write,\n"
            "what PATH names when the helper starts (symlinks followed) is covered by an\n"
            "empty read-only directory or file: the command can neither read, list,\n"
            "write nor connect to it (a missing PATH needs nothing; see docs/sandbox.md).\n");
}

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
    o->tty_fd = -1;
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
        } else if (strcmp(a, SANDBOX_OPT_TTY_FD) == 0 && has_value) {
            o->tty_fd = parse_fd(argv[++i]);
            if (o->tty_fd < 0)
                sandbox_helper_die(0, "--tty-fd: \"%s\" is not a file descriptor number", argv[i]);
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

int
main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf("execgate-sandbox %s\n", EXECGATE_VERSION);
        return 0;
    }
    struct sandbox_helper_options o = {0};
    parse_args(argc, argv, &o);

    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_parse(o.policy_text, &err);
    if (p == NULL)
        sandbox_helper_die(0, "%s", err ? err : "sandbox policy: out of memory");
    o.policy = p;
    sandbox_helper_run(&o); /* does not return */
}
