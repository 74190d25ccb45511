/*
 * call_net: the calls' network through the proxy (docs/network.md).
 *
 * One struct call_net_server per MCP server owns the proxy (netproxy.h)
 * and answers its hooks: the rules in force (decide_server_rules), the
 * person asked by elicitation for a `prompt` rule ("approved_for_session"
 * holds for that host for the session), and each decision written to the
 * audit log and the client's log.  One struct call_net per call whose
 * sandbox has a network namespace: the socket its sandbox helper sends
 * the namespace's listener on (--net-proxy-fd), then that listener,
 * served by the proxy until the call ends.  While a person is asked
 * about a call's connection, the call's timeout stops.
 */
#ifndef EXECGATE_SERVER_CALL_NET_H
#define EXECGATE_SERVER_CALL_NET_H

#include <stdbool.h>
#include <uv.h>

struct decide_server;
struct client_log;
struct jsonrpc;

struct call_net_server;
struct call_net;

/* The server's proxy, on loop; ds and log are borrowed for its life (log
 * may be NULL).  NULL when out of memory. */
struct call_net_server *call_net_server_new(uv_loop_t *loop, struct decide_server *ds,
                                            struct client_log *log);

/* The transport questions go out on (borrowed; NULL once it is closed)
 * and whether the client can be asked (the elicitation capability). */
void call_net_server_set_client(struct call_net_server *ns, struct jsonrpc *rpc, bool elicitation);

/* Closes the proxy and every connection (the loop finishes the closing).
 * Questions still out are answered "declined" when their answer, or the
 * transport's end, comes.  NULL is a no-op. */
void call_net_server_free(struct call_net_server *ns);

/*
 * A call's share: call_id and command (copied) name it in questions and
 * records.  NULL when out of memory.
 */
struct call_net *call_net_new(struct call_net_server *ns, const char *call_id, const char *command);

/*
 * Makes the socket pair: returns the helper's end (close-on-exec, the
 * caller makes it inheritable at the helper's --net-proxy-fd number), or
 * a negative errno.  Once the helper is spawned call call_net_spawned.
 */
int call_net_open(struct call_net *cn);

/* The helper has its end (the server's copy is closed now); the
 * listener it sends is served from then on.  sc (borrowed, outlives cn)
 * is the call: its timeout stops while a person is asked about one of its
 * connections. */
struct shell_call;
void call_net_spawned(struct call_net *cn, struct shell_call *sc);

/* The call ended: its listener and connections close.  NULL is a no-op. */
void call_net_free(struct call_net *cn);

#endif
