/*
 * esc_client: the asking side of the escalation protocol, for one exec.
 *
 * execgate-wrapper runs it after its own exec; the patched Bash links it
 * and runs it in the process about to exec the program (its forked child,
 * or itself for `exec`), which saves one exec per wrapped program. Either
 * way the server sees the same session from the same pid, and nothing the
 * client does is trusted by it. Blocking sockets, no libuv.
 */
#ifndef EXECGATE_PROTO_ESC_CLIENT_H
#define EXECGATE_PROTO_ESC_CLIENT_H

#include <stdnoreturn.h>

/* What every message of the client starts with. */
#define ESC_CLIENT_PROG "execgate-wrapper"

/* Exit statuses of the client's own outcomes. */
#define ESC_CLIENT_EXIT_DENIED    1   /* Deny */
#define ESC_CLIENT_EXIT_FAILED    126 /* no socket, protocol error, lost server */
#define ESC_CLIENT_EXIT_NOT_FOUND 127

/*
 * Asks the server what to do with FILE, run as ARGS (NULL-terminated,
 * ARGS[0] is argv[0]) with environment ENV: the session goes over the
 * datagram socket that CODEX_ESCALATE_SOCKET names in ENV (ENV is what the
 * program would receive, so a prefix assignment counts). Returns only when
 * the answer is Run: the caller then execs FILE itself. Every other
 * outcome ends the process: Deny prints "Execution denied: REASON" and
 * exits 1; Escalate hands every fd that an exec would keep (all but the
 * close-on-exec ones and the protocol's own) to the server, forwards
 * SIGHUP, SIGINT and SIGTERM, and ends the way the escalated program ended;
 * any failure prints why and exits 126: the default is to refuse.
 */
void esc_client_decide(const char *file, char *const *args, char *const *env);

/* Prints "execgate-wrapper: MESSAGE[: strerror(errnum)]" on stderr and
 * exits with status, without running atexit handlers or flushing stdout
 * (inside Bash those are the shell's). */
noreturn void esc_client_die(int status, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
