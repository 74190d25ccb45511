/*
 * call_net: the calls' network through the proxy (docs/network.md).
 *
 * One struct call_net_server per MCP server owns the proxy (netproxy.h)
 * and answers its hooks: the rules in force (decide_server_rules), the
 * person asked by elicitation for a `prompt` rule, and each decision
 * written to the audit log and the client's log.  One struct
 * call_net_client per MCP session (client): its calls' questions go to its
 * transport, their records to its log, and its "approved_for_session"
 * holds for that host for its calls only.  One struct call_net per call whose
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
struct call_net_client;
struct call_net;

/* The server's proxy, on loop; ds is borrowed for its life.  NULL when
 * out of memory. */
struct call_net_server *call_net_server_new(uv_loop_t *loop, struct decide_server *ds);

/* A client (one MCP session) with nobody to ask yet and nothing approved.
 * Reference counted: the creator holds one, each call_net given it
 * another.  NULL when out of memory. */
struct call_net_client *call_net_client_new(void);

/* Sets cl's transport questions go out on (borrowed; NULL once it is
 * closed), whether the client can be asked (the elicitation capability),
 * and its log (borrowed; NULL: none).  Cannot fail. */
void call_net_client_set(struct call_net_client *cl, struct jsonrpc *rpc, bool elicitation,
                         struct client_log *log);

/* Releases a reference; NULL is a no-op. */
void call_net_client_unref(struct call_net_client *cl);

/* Closes the proxy and every connection (the loop finishes the closing).
 * Questions still out are answered "declined" when their answer, or the
 * transport's end, comes.  NULL is a no-op. */
void call_net_server_free(struct call_net_server *ns);

/*
 * A call's share, for the client cl (a reference is taken): its questions
 * go to cl, its records to cl's log; call_id and command (copied) name it
 * in both.  NULL when out of memory.
 */
struct call_net *call_net_new(struct call_net_server *ns, struct call_net_client *cl,
                              const char *call_id, const char *command);

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
