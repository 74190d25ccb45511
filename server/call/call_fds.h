/*
 * call_fds: the fds a call's sandbox helper inherits, and their numbers.
 *
 * The one table of those numbers: the helper's command line (--report-fd,
 * --exec-notify-fd, --net-proxy-fd, --net-ns-fd, built in call.c), the shell's environment
 * (CODEX_ESCALATE_SOCKET, escalation.c) and the spawn (shell_call.c) all
 * take them from here.  A struct call_fds says which of the server's fds
 * the child gets at each number; call_fds_spawn_list turns it into
 * spawn_child's list.
 */
#ifndef EXECGATE_SERVER_CALL_FDS_H
#define EXECGATE_SERVER_CALL_FDS_H

#include <stddef.h>

#include "server/call/spawn_child.h"

/* The child's fd numbers.  0 is /dev/null (spawn_child) unless a
 * background process gives the call an input pipe. */
enum call_fd {
    CALL_FD_STDIN = 0,          /* a background process's input pipe */
    CALL_FD_STDOUT = 1,         /* the call's output pipe ... */
    CALL_FD_STDERR = 2,         /* ... both, in arrival order */
    CALL_FD_REPORT = 3,         /* the helper's "sandbox in place" line (--report-fd) */
    CALL_FD_ESCALATE = 4,       /* the call's escalation socket (CODEX_ESCALATE_SOCKET) */
    CALL_FD_EXEC_NOTIFY = 5,    /* tree enforcement's hand-over socket (--exec-notify-fd) */
    CALL_FD_NET_PROXY = 6,      /* the network namespace's hand-over socket (--net-proxy-fd) */
    CALL_FD_LOGIN_SNAPSHOT = 7, /* a login call's sealed snapshot (login_snapshot.h) */
    CALL_FD_NET_NS = 8,         /* the session's network namespace (--net-ns-fd) */
    CALL_FD_TTY = 9,            /* the terminal's master goes back on this socket (--tty-fd) */
    CALL_FD_COMMAND = 10,       /* a prepared call's command comes on this pipe (--command-fd) */
    CALL_FD_COUNT = 11          /* numbers in the table: 0 to 10 */
};

/* For each number, the server's fd the child gets there (borrowed,
 * close-on-exec), or -1 for none. */
struct call_fds {
    int fd[CALL_FD_COUNT];
};

/* A table with no fd at any number.  Cannot fail. */
void call_fds_init(struct call_fds *f);

/* Fills out (room for CALL_FD_COUNT entries) with f's fds at their
 * numbers, lowest first; returns how many.  Cannot fail. */
size_t call_fds_spawn_list(const struct call_fds *f, struct spawn_fd *out);

#endif
