/*
 * launcher: execgate-sandbox --launcher, the helper started once per server
 * that starts every call's helper without an execve.
 *
 * The server holds the other end of a SOCK_SEQPACKET control socket (fd
 * SANDBOX_LAUNCHER_FD in the launcher).  For each call it sends one request:
 * the helper's command line and environment, the fds the helper is to find
 * at given numbers and the call's cgroup directory, as SCM_RIGHTS.  The
 * launcher creates one child per request with clone3 (CLONE_PARENT, so the
 * child is the server's own child and the server waits for it exactly as
 * for an exec'd helper; CLONE_INTO_CGROUP, so it is born in the call's
 * cgroup; CLONE_PIDFD), answers with the child's pid and pidfd, and goes on
 * to the next request.  The child puts its fds in place and runs what
 * execgate-sandbox's main runs after parsing nothing (sandbox_helper_main).
 * Before any request the launcher says it is one: a reply with id 0, err
 * 0 and its pid, no fd (a program that is no launcher says nothing of the
 * kind, and the server starts its helpers the other way).  A malformed
 * request is answered with an errno and the launcher serves on; the
 * launcher ends at EOF on the control socket.  This header is the
 * wire format too: the server's side is server/call/launcher_client.
 */
#ifndef EXECGATE_SANDBOX_LAUNCHER_H
#define EXECGATE_SANDBOX_LAUNCHER_H

#include <stdint.h>
#include <stdnoreturn.h>

/* The option that makes execgate-sandbox the launcher, and the fd where it
 * finds its control socket. */
#define SANDBOX_LAUNCHER_OPT "--launcher"
#define SANDBOX_LAUNCHER_FD  3

#define SANDBOX_LAUNCHER_MAGIC   0x4c474745u /* "EGGL", little-endian */
#define SANDBOX_LAUNCHER_VERSION 1u

/* The most fds one request carries (the call's table and its cgroup),
 * the highest number one may be put at, and the longest request. */
#define SANDBOX_LAUNCHER_MAX_FDS 16
#define SANDBOX_LAUNCHER_MAX_AT  63
#define SANDBOX_LAUNCHER_REQ_MAX (192 * 1024)

/* at[] of the fd that is the call's cgroup directory (CLONE_INTO_CGROUP),
 * not an fd of the child's */
#define SANDBOX_LAUNCHER_AT_CGROUP (-1)

/* at[] of an open cgroup file (cgroup.procs, or a v1 hierarchy's tasks)
 * the child writes "0" to before anything else; repeatable */
#define SANDBOX_LAUNCHER_AT_JOIN (-2)

/* flags: the child starts its own session (setsid) */
#define SANDBOX_LAUNCHER_NEW_SESSION 1u

/*
 * A request: this head, then n_argv and n_env NUL-terminated strings back
 * to back (nothing after the last), with n_fds fds attached in the order
 * of at[].
 */
struct sandbox_launcher_req {
    uint32_t magic;
    uint32_t version;
    uint64_t id; /* echoed in the reply */
    uint32_t flags;
    uint32_t n_fds;
    uint32_t n_argv; /* at least 1: argv[0] */
    uint32_t n_env;
    int32_t at[SANDBOX_LAUNCHER_MAX_FDS];
};

/* The reply: err 0 with the child's pid and its pidfd attached, or a
 * positive errno (the request was refused, nothing started). */
struct sandbox_launcher_reply {
    uint32_t magic;
    int32_t err;
    uint64_t id;
    int32_t pid;
    uint32_t pad;
};

/* What a launcher's child shows in place of SANDBOX_LAUNCHER_OPT in its
 * command line (/proc/PID/cmdline, ps): one call's helper, not the
 * launcher. */
#define SANDBOX_LAUNCHER_CHILD_ARG "--call"

/* Serves requests on ctl until EOF; exits 0 then, 125 on an error of the
 * socket itself.  opt is main's argv[1] (SANDBOX_LAUNCHER_OPT), which each
 * child overwrites with SANDBOX_LAUNCHER_CHILD_ARG. */
noreturn void sandbox_launcher_run(int ctl, char *opt);

#endif
