/*
 * netproxy: the network proxy that enforces network_rule.
 *
 * One proxy per server, on its libuv loop; each shell call whose sandbox
 * has a network namespace of its own hands the proxy a listening TCP
 * socket made inside that namespace (netproxy_listen_fd).  A connection
 * to it speaks SOCKS5 (its first byte is 5) or HTTP: a CONNECT tunnel or
 * a plain request in absolute form (GET http://host/...), parsed with
 * Debian's http-parser.  Each destination is decided by the rules'
 * network_rules for its host and protocol (http for plain requests,
 * https for CONNECT, socks5_tcp for SOCKS5): allow connects, forbidden
 * refuses, prompt asks the person through the hooks (an answer "for the
 * session" holds for that host and protocol in the listener's session,
 * struct netproxy_session: the listeners of one client's calls share one),
 * and a host without a rule is refused with a message saying how to
 * allow it.  The proxy resolves names itself; a name that resolves to a
 * local or private address is refused unless the rule names a local host
 * itself (an address literal or localhost).  Every decision is reported
 * through the hooks (audit and logs).  Tunnels move their bytes with
 * splice(2) (reading and writing them where pipes cannot be had, or with
 * $EXECGATE_NETPROXY_NO_SPLICE=1, a test knob).  Limits below.
 */
#ifndef EXECGATE_SERVER_NETPROXY_H
#define EXECGATE_SERVER_NETPROXY_H

#include <stdbool.h>
#include <uv.h>

struct rules_policy;

/* The most bytes of a request line and headers (a longer head is 431). */
#define NETPROXY_HEAD_MAX (64 * 1024)
/* The bytes read from one side at a time. */
#define NETPROXY_READ_SIZE (256 * 1024)
/* The most bytes queued towards one side before the other side's reading
 * pauses (and resumes once they are written). */
#define NETPROXY_QUEUE_MAX (512 * 1024)
/* The most connections open at once through one proxy; more are closed
 * as soon as accepted. */
#define NETPROXY_CONN_MAX 4096

/* One decision, as the hooks see it.  Everything is borrowed for the
 * duration of the hook. */
struct netproxy_event {
    void *owner;          /* the listener's (netproxy_listen_fd) */
    const char *call_id;  /* the listener's */
    const char *command;  /* the listener's */
    const char *host;     /* the rule key (nethost_normalize) */
    unsigned port;        /* 1..65535 */
    const char *protocol; /* "http", "https", "socks5_tcp" */
    const char *decision; /* the rules': "allow", "prompt", "forbidden" or "none" */
    bool allowed;         /* whether the connection goes ahead */
    const char *rule;     /* the deciding rule's justification, or NULL */
    const char *message;  /* why it was refused (what the client is told); NULL when allowed */
};

/* A question to the person, answered once with netproxy_ask_answer. */
struct netproxy_ask;

enum netproxy_answer {
    NETPROXY_UNASKED, /* nobody could be asked (no client, or it cannot elicit) */
    NETPROXY_DENIED,
    NETPROXY_APPROVED,
    NETPROXY_APPROVED_FOR_SESSION,
};

struct netproxy_hooks {
    /* The rules now (the server reloads them); NULL counts as none. */
    const struct rules_policy *(*policy)(void *arg);
    /* Asks whether `what` may connect (what->decision is "prompt"); the
     * owner answers later, exactly once, with netproxy_ask_answer.  NULL:
     * prompt rules refuse. */
    void (*ask)(void *arg, struct netproxy_ask *ask, const struct netproxy_event *what);
    /* Told each decision, allowed or not.  NULL: nobody is told. */
    void (*event)(void *arg, const struct netproxy_event *ev);
    void *arg;
};

struct netproxy;
struct netproxy_listener;

/* What a person approved "for the session" (a protocol and host): one per
 * client session, shared by the listeners of its calls.  Reference
 * counted: the creator holds one, each listener given it another.  NULL
 * when out of memory. */
struct netproxy_session;
struct netproxy_session *netproxy_session_new(void);

/* Releases a reference; NULL is a no-op. */
void netproxy_session_unref(struct netproxy_session *ps);

/* A new proxy on loop (hooks copied).  NULL when out of memory. */
struct netproxy *netproxy_new(uv_loop_t *loop, const struct netproxy_hooks *hooks);

/*
 * Closes every listener and connection; the proxy's memory goes with the
 * last close callback (run the loop).  Questions still unanswered stay
 * valid until answered.  NULL is a no-op.
 */
void netproxy_free(struct netproxy *p);

/*
 * Serves the listening TCP socket fd (taken, closed by the proxy even on
 * failure) for the call call_id running command (both copied), of the
 * client session `session` (a reference is taken; NULL: no answer "for the
 * session" is remembered) and of owner (borrowed, must outlive the
 * listener: the hooks' own, in each event of its connections).  Returns 0
 * with *out set, or a negative errno with *why a malloc'd message.
 */
int netproxy_listen_fd(struct netproxy *p, int fd, const char *call_id, const char *command,
                       struct netproxy_session *session, void *owner,
                       struct netproxy_listener **out, char **why);

/* Stops listening and closes the listener's connections (its call ended).
 * NULL is a no-op. */
void netproxy_listener_close(struct netproxy_listener *l);

/* Number of connections open now (for tests and doctor). */
size_t netproxy_conn_count(const struct netproxy *p);

/* Answers a question (and frees it): the connection, if still open, goes
 * ahead or is refused. */
void netproxy_ask_answer(struct netproxy_ask *ask, enum netproxy_answer answer);

#endif
