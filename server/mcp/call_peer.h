/*
 * call_peer: whether the process at the other end of a Unix socket runs
 * in one of this server's calls.
 *
 * A command the server runs must never be a client of that same server:
 * it would answer its own questions and could ask for a sandbox policy of
 * its choosing.  The peer is the process that connected (SO_PEERCRED),
 * pinned by a pidfd (SO_PEERPIDFD where the kernel has it): when that
 * process has exited by the time the answer is known, its pid may name
 * another process, and the answer is "unknown" (refused).  It is a call's
 * process when it descends from the server (the server is the child
 * subreaper of everything its calls start, so a call's orphans stay its
 * descendants, whatever sessions or parents they give themselves), or
 * when it is in one of the server's call cgroups (execgate-SERVER-N,
 * call_cgroup.h), which no sandboxed process can leave.
 */
#ifndef EXECGATE_SERVER_CALL_PEER_H
#define EXECGATE_SERVER_CALL_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Steps up the parent chain before a peer counts as unknown. */
#define CALL_PEER_MAX_DEPTH 4096

enum call_peer_origin {
    CALL_PEER_OUTSIDE, /* not a process of the server's calls */
    CALL_PEER_CALL,    /* a process of one of the server's calls */
    CALL_PEER_UNKNOWN, /* cannot be told (gone, unreadable): refuse it */
};

/*
 * Where the peer of fd (a connected Unix stream socket) runs, for the
 * server whose pid is server.  Reads /proc; does not block on anything
 * but that.
 */
enum call_peer_origin call_peer_origin(int fd, pid_t server);

/* The same for the process pid (pinned by pidfd, or -1: unpinned). */
enum call_peer_origin call_peer_origin_of(pid_t pid, int pidfd, pid_t server);

/*
 * The user that owns the other end of fd, a TCP connection on this
 * machine (a loopback listener's): one exact query to the kernel
 * (NETLINK_SOCK_DIAG, the socket whose local end is fd's remote one), so
 * that it costs the same however many sockets the machine has.
 * (uid_t)-1 when it cannot be told (a peer on another machine, or gone).
 */
uid_t call_peer_tcp_uid(int fd);

/*
 * Whether the text of /proc/PID/cgroup (len bytes) puts the process in a
 * call cgroup of server: a path component execgate-SERVER-N, N a number.
 * Cannot fail.
 */
bool call_peer_cgroup_is_call(const char *text, size_t len, pid_t server);

#endif
