/*
 * cmdline: execgate-sandbox's command line as data.
 *
 * A caller fills a struct sandbox_cmdline (every option a field) and
 * sandbox_cmdline_argv turns it into argv, the one place that does; the
 * helper's own parser (main.c) reads the same option names.  An option
 * added to the helper becomes a field here and a few lines in the
 * builder, never a splice into an argv built elsewhere.  Knows nothing of
 * MCP or libuv.
 */
#ifndef EXECGATE_SANDBOX_CMDLINE_H
#define EXECGATE_SANDBOX_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>

struct sandbox_policy;

/* The helper's options, as the builder writes them and main.c reads them. */
#define SANDBOX_OPT_POLICY         "--policy"
#define SANDBOX_OPT_CWD            "--cwd"
#define SANDBOX_OPT_REPORT_FD      "--report-fd"
#define SANDBOX_OPT_EXEC_NOTIFY_FD "--exec-notify-fd"
#define SANDBOX_OPT_ARGV0          "--argv0"
#define SANDBOX_OPT_ALLOW_DEGRADED "--allow-degraded"
#define SANDBOX_OPT_PROTECT        "--protect"
#define SANDBOX_OPT_HIDE           "--hide"
#define SANDBOX_OPT_NET_PROXY_FD   "--net-proxy-fd"
#define SANDBOX_OPT_NET_NS_FD      "--net-ns-fd"
#define SANDBOX_OPT_SOCKETS_ONLY   "--notify-sockets-only"
#define SANDBOX_OPT_TTY_FD         "--tty-fd"
#define SANDBOX_OPT_COMMAND_FD     "--command-fd"
/* alone with its fd: the keeper of a session's network namespace
 * (sandbox/netns.h), not a sandbox */
#define SANDBOX_OPT_NET_NS_KEEPER "--net-ns-keeper"

/* How a line on --report-fd begins when PROGRAM could not be started (the
 * rest of the line is the errno and "}"): the helper's 126 or 127 then
 * means the program never ran, not that it exited so (docs/sandbox.md). */
#define SANDBOX_REPORT_EXEC_ERROR "{\"exec_error\":"

/* The longest command --command-fd carries: one argument's most under
 * Linux (MAX_ARG_STRLEN, 32 pages, with its NUL); a longer one could not
 * be exec'd anyway, so a caller runs it the ordinary way and gets the
 * ordinary error. */
#define SANDBOX_COMMAND_MAX (32u * 4096 - 1)

/* One run of the helper.  Everything is borrowed. */
struct sandbox_cmdline {
    const char *helper; /* argv[0]: the helper's path */
    /* --policy: written as its canonical JSON, which carries the sandbox
     * cwd and whether the network is reachable (sandbox_policy_to_json) */
    const struct sandbox_policy *policy;
    const char *cwd;    /* --cwd: where the program starts */
    int report_fd;      /* --report-fd N ("sandbox in place"), or -1 */
    int exec_notify_fd; /* --exec-notify-fd N (tree enforcement's hand-over), or -1 */
    /* --notify-sockets-only: the listener of exec_notify_fd carries the
     * sandbox's socket calls alone, no execs (shell enforcement) */
    bool notify_sockets_only;
    /* --net-proxy-fd N (the network namespace's listener goes there), or
     * 0 for none: 0 is stdin, never such a socket, and so callers that
     * do not name the field ask for nothing */
    int net_proxy_fd;
    /* --net-ns-fd N (the session's network namespace, to join), or 0 for
     * none, as for net_proxy_fd */
    int net_ns_fd;
    /* --tty-fd N: the command gets a terminal of the sandbox's own, whose
     * master goes to this socket; 0 for none (as net_proxy_fd) */
    int tty_fd;
    /* --command-fd N: the helper sets everything up, then waits on N for
     * the program's last argument (a 32-bit length in the host's order,
     * then that many bytes) before its exec; 0 for none (as net_proxy_fd) */
    int command_fd;
    const char *argv0;   /* --argv0 NAME for the program, or NULL */
    bool allow_degraded; /* --allow-degraded */
    /* --protect PATH for each, in order (docs/sandbox.md); may be NULL
     * when n_protect is 0 */
    const char *const *protect;
    size_t n_protect;
    /* --hide PATH for each, in order, after the --protect paths
     * (docs/sandbox.md); may be NULL when n_hide is 0 */
    const char *const *hide;
    size_t n_hide;
    const char *const *program; /* after --: NULL-terminated, at least one */
};

/*
 * The argv for c:
 *   HELPER [--exec-notify-fd N [--notify-sockets-only]] [--net-proxy-fd N] [--net-ns-fd N]
 *          [--tty-fd N] [--argv0 NAME] [--allow-degraded] [--protect PATH]... [--hide PATH]...
 *          --policy JSON --cwd CWD [--report-fd N]
 *          -- PROGRAM ARGS...
 * Returns a NULL-terminated array of malloc'd strings that the caller
 * frees with strv_free (common/strv.h), or NULL when out of memory
 * (n_protect + n_hide too large for any array included).
 */
char **sandbox_cmdline_argv(const struct sandbox_cmdline *c);

#endif
