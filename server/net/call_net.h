/*
 * call_net: the calls' network through the proxy (docs/network.md).
 *
 * One struct call_net_server per MCP server owns the proxy (netproxy.h)
 * and answers its hooks: the rules in force (decide_server_rules), the
 * person asked for a `prompt` rule, and each decision written to the
 * audit log and the client's log.  One struct call_net_client per MCP
 * session (client): its "approved_for_session" holds for that host for
 * its calls only, and it holds the session's private network namespace
 * (session_net.h), which its calls' sandboxes join.  One
 * struct call_net per call whose sandbox has a network namespace: the
 * socket its sandbox helper sends the namespace's listener on
 * (--net-proxy-fd), then that listener, served by the proxy until the
 * call ends.  A question about a call's connection goes on the call's
 * line of questions (decide_call_asking, ask.h): one at a time with its
 * exec questions, the call's timeout stopped meanwhile, and each answer
 * meaning what it means for an exec (`abort` stops the call).
 */
#ifndef EXECGATE_SERVER_CALL_NET_H
#define EXECGATE_SERVER_CALL_NET_H

#include <stdbool.h>
#include <uv.h>

struct decide_server;
struct decide_call;

struct call_net_server;
struct call_net_client;
struct call_net;

/* The server's proxy, on loop; ds is borrowed for its life.  NULL when
 * out of memory. */
struct call_net_server *call_net_server_new(uv_loop_t *loop, struct decide_server *ds);

/* A client (one MCP session) with nobody to ask yet and nothing approved;
 * its network namespace, when one is asked for, is made by the sandbox
 * helper at the path helper (borrowed) and watched on loop.  Reference
 * counted: the creator holds one, each call_net or call given it another.
 * NULL when out of memory. */
struct call_net_client *call_net_client_new(uv_loop_t *loop, const char *helper);

/* Takes a reference on cl; returns cl. */
struct call_net_client *call_net_client_ref(struct call_net_client *cl);

/* Releases a reference; NULL is a no-op.  The last one closes the
 * session's network namespace. */
void call_net_client_unref(struct call_net_client *cl);

/*
 * The session's network namespace (session_net.h): its fd (borrowed:
 * valid while a reference on cl is held), made at the first ask; or
 * -errno when it cannot be (then the session's commands have no network;
 * the reason is logged once).
 */
int call_net_client_netns(struct call_net_client *cl);

/*
 * Why a connection of a call whose proxy share is own (NULL: none) to port
 * on an IP address must not be made: the port is the proxy listener of
 * another running call of cl's session, which would decide, ask about and
 * record it as that call's.  A static string, or NULL when it may.
 */
const char *call_net_client_other_port(const struct call_net_client *cl, const struct call_net *own,
                                       unsigned port);

/* A socket made in that namespace (session_net_socket), for the
 * supervisor; -errno when there is none.  Takes (void *)cl. */
int call_net_client_socket(void *cl, int domain, int type, int protocol);

/* Closes the proxy and every connection (the loop finishes the closing).
 * NULL is a no-op. */
void call_net_server_free(struct call_net_server *ns);

/*
 * A call's share, for the client cl and the call's decisions dc (a
 * reference is taken on each): its questions go on dc's line, its records
 * to dc's client's log (decide_call_log); dc's label and command (copied)
 * name it in both.  NULL
 * when out of memory.
 */
struct call_net *call_net_new(struct call_net_server *ns, struct call_net_client *cl,
                              struct decide_call *dc, const char *command);

/*
 * Makes the socket pair: returns the helper's end (close-on-exec, the
 * caller makes it inheritable at the helper's --net-proxy-fd number), or
 * a negative errno.  Once the helper is spawned call call_net_spawned.
 */
int call_net_open(struct call_net *cn);

/* The helper has its end (the server's copy is closed now); the
 * listener it sends is served from then on. */
void call_net_spawned(struct call_net *cn);

/* The call ended: its listener and connections close, and its questions
 * still out are withdrawn.  NULL is a no-op. */
void call_net_free(struct call_net *cn);

#endif
