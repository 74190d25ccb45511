/*
 * session_net: an MCP session's private network (docs/network.md).
 *
 * One network namespace per session, with nothing but its loopback: every
 * sandboxed call of the session whose network is off joins it (the
 * helper's --net-ns-fd), so a server one command starts on 127.0.0.1 is
 * reached by another of the same session, while nothing outside the
 * namespace is reachable and no other session's commands see it.
 *
 * Made at the first call that needs it by a keeper: the sandbox helper
 * run as `--net-ns-keeper` (sandbox/netns.h), which sends the namespace's
 * fd and then makes sockets in the namespace on request, for the
 * supervisor's lookups of the sandbox's Unix sockets (abstract names and
 * sock_diag are the network namespace's).  The server holds the fd and
 * the keeper's socket; closing them (the session's end) ends the keeper,
 * and the namespace goes once the session's last process has left it.
 * The keeper dies with the server too (its socket's end, and
 * die_with_server).
 */
#ifndef EXECGATE_SERVER_SESSION_NET_H
#define EXECGATE_SERVER_SESSION_NET_H

#include <stdbool.h>
#include <uv.h>

struct session_net;

/* A session's network, not made yet: made by helper (borrowed), watched
 * on loop.  NULL when out of memory. */
struct session_net *session_net_new(uv_loop_t *loop, const char *helper);

/*
 * The namespace's fd (close-on-exec; sn's, borrowed), made now when this
 * is the first ask; or -errno when it cannot be made, then or at the
 * first ask (it is not tried again: the session's commands then have no
 * network, as where the kernel has no namespaces), with *why (sn's, or
 * NULL) naming the step that failed.  Blocks until the keeper has sent
 * the namespace (a few system calls), once per session.
 */
int session_net_fd(struct session_net *sn, const char **why);

/* Whether session_net_fd was asked already (made, or failed). */
bool session_net_made(const struct session_net *sn);

/*
 * A socket(domain, type, protocol) made in the namespace by its keeper
 * (close-on-exec): Unix sockets and NETLINK_SOCK_DIAG only.  Blocks for
 * the keeper's answer.  Returns the fd, or -errno (-ESRCH: no keeper).
 */
int session_net_socket(struct session_net *sn, int domain, int type, int protocol);

/* Ends the keeper and closes the fd: the namespace goes when its last
 * process has left.  NULL is a no-op. */
void session_net_free(struct session_net *sn);

#endif
