/*
 * execgate-sandbox: applies a sandbox policy to itself, then runs PROGRAM.
 *
 *   execgate-sandbox --policy JSON --cwd DIR [--report-fd N] [--exec-notify-fd N]
 *                    [--allow-degraded] [--argv0 NAME] [--protect PATH]... [--hide PATH]...
 *                    -- PROGRAM ARGS...
 *   execgate-sandbox --launcher   (the server's, sandbox/launcher.h)
 *
 * One-shot and fail-closed: any setup error ends the helper with status 125
 * (SANDBOX_EXIT_SETUP_FAILED) and one line on stderr, and nothing runs.
 * PROGRAM not found is 127, found but not runnable 126, otherwise PROGRAM's
 * own status (128+signal when it was killed and the helper had to wait).
 */
#include "execgate-config.h"
#include "sandbox/helper.h"
#include "sandbox/helper_main.h"
#include "sandbox/launcher.h"
#include "sandbox/netns.h"
#include "sandbox/policy/cmdline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: execgate-sandbox --policy JSON --cwd DIR [--report-fd N] [--exec-notify-fd N]\n"
            "                        [--notify-sockets-only] [--net-proxy-fd N] [--net-ns-fd N]\n"
            "                        [--tty-fd N] [--command-fd N]\n"
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
            "--net-ns-fd N: under read-only or workspace-write with the network off,\n"
            "PROGRAM joins the network namespace N names (and its user namespace) and may\n"
            "use IP sockets there; the --net-proxy-fd listener is made in it.  When N\n"
            "cannot be joined, PROGRAM has no network at all.\n"
            "execgate-sandbox --net-ns-keeper N: makes a network namespace with only\n"
            "loopback and keeps it for the server on the SOCK_SEQPACKET socket N.\n"
            "--tty-fd N: PROGRAM runs on a terminal made from the sandbox's own devpts\n"
            "(its stdin, stdout, stderr and controlling terminal); the master is sent\n"
            "over the Unix socket N (see docs/server.md).\n"
            "--command-fd N: everything is set up first (the seccomp filter too), then\n"
            "the helper reads from N a 32-bit length in the host's byte order and that\n"
            "many bytes, which replace PROGRAM's last argument, and runs PROGRAM; N\n"
            "closed before all of it came: exit 125, nothing ran.\n"
            "--argv0 NAME: PROGRAM runs with NAME as its argv[0] (as exec -a).\n"
            "--protect PATH (repeatable, absolute): under workspace-write, when PATH\n"
            "(symlinks resolved) lies in a writable location, it is kept read-only\n"
            "(created as an empty directory first when missing; see docs/sandbox.md).\n"
            "--hide PATH (repeatable, absolute): under read-only and workspace-write,\n"
            "what PATH names when the helper starts (symlinks followed) is covered by an\n"
            "empty read-only directory or file: the command can neither read, list,\n"
            "write nor connect to it (a missing PATH needs nothing; see docs/sandbox.md).\n"
            "\n"
            "execgate-sandbox --launcher: started by the server once, serves requests to\n"
            "start a helper on the SOCK_SEQPACKET socket at fd 3 (see docs/sandbox.md).\n");
}

/* The keeper's socket: a fd number above stderr, digits only. */
static int
keeper_fd(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 3 || v > 1 << 20)
        sandbox_helper_die(0, "--net-ns-keeper: \"%s\" is not a socket's fd number", s);
    return (int)v;
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
    /* the keeper of a session's network namespace (netns.h): no policy,
     * no program */
    if (argc == 3 && strcmp(argv[1], SANDBOX_OPT_NET_NS_KEEPER) == 0)
        sandbox_netns_keep(keeper_fd(argv[2])); /* does not return */
    if (argc == 2 && strcmp(argv[1], SANDBOX_LAUNCHER_OPT) == 0)
        sandbox_launcher_run(SANDBOX_LAUNCHER_FD, argv[1]); /* does not return */
    sandbox_helper_main(argc, argv);                        /* does not return */
}
