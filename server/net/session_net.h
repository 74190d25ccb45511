/*
 * session_net: an MCP session's private network (docs/network.md).
 *
 * One network namespace per session, with nothing but its loopback: every
 * sandboxed call of the session whose network is off joins it (the
 * helper's --net-ns-fd), so a server one call or process starts on
 * 127.0.0.1 is reached by another of the same session, while nothing
 * outside the namespace is reachable and no other session's commands see
 * it.  Made at the first call that needs it, in a short-lived child of the
 * server (sandbox_netns_make); the server then holds it by one fd and no
 * process, so it ends with the session: once the fd is closed and the
 * session's last process has left it.
 */
#ifndef EXECGATE_SERVER_SESSION_NET_H
#define EXECGATE_SERVER_SESSION_NET_H

#include <stdbool.h>

struct session_net;

/* A session's network, not made yet.  NULL when out of memory. */
struct session_net *session_net_new(void);

/*
 * The namespace's fd (close-on-exec; sn's, borrowed), made now when this
 * is the first ask; or -errno when it cannot be made, then or at the
 * first ask (it is not tried again: the session's commands have no
 * network, as where the kernel has no namespaces), with *why (static, or
 * NULL) naming the step that failed.  Blocks while the child runs (a few
 * system calls), once per session.
 */
int session_net_fd(struct session_net *sn, const char **why);

/* Whether session_net_fd was asked already (made, or failed). */
bool session_net_made(const struct session_net *sn);

/* Closes the fd: the namespace goes when its last process has left.
 * NULL is a no-op. */
void session_net_free(struct session_net *sn);

#endif
