/*
 * call_net: the proxy's hooks (rules, questions, records) and each call's
 * hand-over of its namespace's listener.
 */
#include "server/net/call_net.h"

#include "common/list.h"
#include "common/macros.h"
#include <errno.h>
#include <netinet/in.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/decide/ask.h"
#include "server/decide/audit.h"
#include "server/rpc/client_log.h"
#include "server/decide/decide.h"
#include "common/log.h"
#include "server/decide/question_form.h"
#include "server/decide/question_text.h"
#include "server/net/netproxy.h"
#include "server/net/session_net.h"
#include "common/strfmt.h"
#include "common/fd_pass.h"

struct call_net_server {
    uv_loop_t *loop;
    struct netproxy *proxy;
    struct decide_server *ds;
};

struct call_net_client {
    unsigned refs;
    struct netproxy_session *approved; /* what its person approved for the session */
    struct session_net *netns;         /* its private network */
    struct list calls;                 /* of struct call_net: its calls' listeners */
};

/* A question about a connection, on its call's line (ask.h) until the
 * answer comes or the call ends. */
struct question {
    struct netproxy_ask *ask;
    struct ask_question *aq;
    char *message;
    struct list node; /* in its call's questions */
};

struct call_net {
    struct call_net_server *ns;
    struct call_net_client *cl; /* a reference */
    struct decide_call *dc;     /* a reference: the call's questions go on its line */
    char *call_id, *command;
    int sv[2]; /* [0] the server's end, [1] the helper's until spawned */
    uv_poll_t poll;
    bool poll_open; /* poll initialised: it ends in its close callback */
    struct netproxy_listener *listener;
    unsigned port;         /* the listener's on 127.0.0.1, once it came; or 0 */
    struct list node;      /* in its client's calls */
    struct list questions; /* of struct question, the newest first */
};

/* ---- hooks ---- */

static const struct rules_policy *
hook_policy(void *arg)
{
    struct call_net_server *ns = arg;
    return decide_server_rules(ns->ds);
}

/* A decision record: the audit log's line, the log of the client whose
 * call it is and stderr's. */
static void
hook_event(void *arg, const struct netproxy_event *ev)
{
    struct call_net_server *ns = arg;
    const struct call_net *cn = ev->owner;
    struct client_log *client_log = decide_call_log(cn->dc);
    enum client_log_level level = ev->allowed ? CLIENT_LOG_INFO : CLIENT_LOG_WARNING;
    enum log_level log_level = ev->allowed ? LOG_LEVEL_INFO : LOG_LEVEL_WARN;
    json_t *rec = json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s*, s:s*}", "event", "network",
                            "host", ev->host, "port", (json_int_t)ev->port, "protocol",
                            ev->protocol, "decision", ev->allowed ? "allow" : "deny", "rule",
                            ev->decision, "justification", ev->rule, "reason", ev->message);
    const json_t *request_id = decide_call_id(cn->dc);
    json_t *id = request_id ? json_incref((json_t *)request_id) : NULL;
    if (!rec) {
        json_decref(id);
        log_warn("network: out of memory recording a decision");
        return;
    }
    json_object_set_new(rec, "call", json_string(ev->call_id));
    json_object_set_new(rec, "command", json_string(ev->command));
    if (log_record_wanted(log_level))
        log_record(log_level, rec);
    else
        log_msg(log_level, "network: call %s: %s %s:%u (%s), rule: %s", ev->call_id,
                ev->allowed ? "allowed" : "refused", ev->host, ev->port, ev->protocol,
                ev->decision);
    if (client_log_wants(client_log, level)) {
        json_t *copy = json_deep_copy(rec);
        if (copy && id)
            json_object_set(copy, "requestId", id);
        client_log_send(client_log, level, copy);
    }
    json_decref(id);
    audit_write(decide_server_audit(ns->ds), rec);
}

static void
question_free(struct question *q)
{
    list_unlink(&q->node);
    free(q->message);
    free(q);
}

static json_t *
how_params(void *data, const char *note)
{
    const struct question *q = data;
    /* titled as the exec questions are (question_form.h), and meaning
     * what they mean (ask.h): abort stops the call */
    static const struct question_choice choices[] = {
        {"approved", "Yes, allow this connection"},
        {"approved_for_session", "Yes, and allow this host for the rest of the session"},
        {"denied", "No, refuse it (the agent is told and goes on)"},
        {"abort", "No, and stop the whole tool call"},
    };
    return question_form_params(
        q->message, note, choices, ARRAY_SIZE(choices),
        "approved: this connection; approved_for_session: this host for the rest of the "
        "session; denied; abort: stop the whole tool call",
        "Optional reason for allowing or denying");
}

/* The answer (ask.h's meaning): the connection goes ahead or is refused;
 * an abort has stopped the call already. */
static void
how_done(void *data, const struct ask_answer *a)
{
    struct question *q = data;
    enum netproxy_answer answer = a->kind == ASK_APPROVED ? NETPROXY_APPROVED
                                  : a->kind == ASK_APPROVED_FOR_SESSION
                                      ? NETPROXY_APPROVED_FOR_SESSION
                                  : a->kind == ASK_UNASKED ? NETPROXY_UNASKED
                                                           : NETPROXY_DENIED;
    struct netproxy_ask *ask = q->ask;
    question_free(q);
    netproxy_ask_answer(ask, answer);
}

static const struct ask_how net_question = {.params = how_params, .done = how_done};

/* "Allow network access to `HOST:PORT` (https) for `COMMAND`? Rule:
 * JUSTIFICATION", each part escaped as an exec question's are
 * (question_text.h): the command is the agent's, and a backtick or a
 * newline in it must not end the quote and write a question of its own.
 * NULL when out of memory. */
static char *
question_message(const struct netproxy_event *what)
{
    const char *scheme = strcmp(what->protocol, "http") == 0    ? "http"
                         : strcmp(what->protocol, "https") == 0 ? "https"
                                                                : "socks5";
    char *host = question_text_shown(what->host);
    char *command = question_text_shown(what->command);
    char *rule = what->rule ? question_text_shown(what->rule) : NULL;
    char *msg = host && command && (!what->rule || rule)
                    ? strfmt("Allow network access to `%s:%u` (%s) for `%s`?%s%s", host, what->port,
                             scheme, command, rule ? " Rule: " : "", rule ? rule : "")
                    : NULL;
    free(host);
    free(command);
    free(rule);
    return msg;
}

/* Asks the person of the client whose call it is, on the call's line
 * (its session's answers "for the session" are the listener's: netproxy
 * remembers them). */
static void
hook_ask(void *arg, struct netproxy_ask *ask, const struct netproxy_event *what)
{
    (void)arg;
    struct call_net *cn = what->owner;
    struct ask_line *line = decide_call_asking(cn->dc);
    if (!ask_line_can_ask(line)) {
        netproxy_ask_answer(ask, NETPROXY_UNASKED);
        return;
    }
    struct question *q = calloc(1, sizeof(*q));
    if (!q || !(q->message = question_message(what))) {
        free(q);
        netproxy_ask_answer(ask, NETPROXY_DENIED);
        return;
    }
    *q = (struct question){.ask = ask, .message = q->message};
    list_insert_head(&cn->questions, &q->node);
    /* the call's timeout stops while a person thinks, as for exec
     * questions (--max-ask-ms bounds it) */
    q->aq = ask_put(line, &net_question, q);
    if (!q->aq) {
        question_free(q);
        netproxy_ask_answer(ask, NETPROXY_UNASKED);
    }
}

/* ---- the server's proxy ---- */

struct call_net_server *
call_net_server_new(uv_loop_t *loop, struct decide_server *ds)
{
    struct call_net_server *ns = calloc(1, sizeof *ns);
    if (!ns)
        return NULL;
    ns->loop = loop;
    ns->ds = ds;
    const struct netproxy_hooks hooks = {
        .policy = hook_policy, .ask = hook_ask, .event = hook_event, .arg = ns};
    ns->proxy = netproxy_new(loop, &hooks);
    if (!ns->proxy) {
        free(ns);
        return NULL;
    }
    return ns;
}

/* ---- a client ---- */

struct call_net_client *
call_net_client_new(uv_loop_t *loop, const char *helper)
{
    struct call_net_client *cl = calloc(1, sizeof *cl);
    if (!cl)
        return NULL;
    cl->refs = 1;
    list_init(&cl->calls);
    cl->approved = netproxy_session_new();
    cl->netns = session_net_new(loop, helper);
    if (!cl->approved || !cl->netns) {
        netproxy_session_unref(cl->approved);
        session_net_free(cl->netns);
        free(cl);
        return NULL;
    }
    return cl;
}

struct call_net_client *
call_net_client_ref(struct call_net_client *cl)
{
    cl->refs++;
    return cl;
}

void
call_net_client_unref(struct call_net_client *cl)
{
    if (!cl || --cl->refs > 0)
        return;
    netproxy_session_unref(cl->approved);
    session_net_free(cl->netns);
    free(cl);
}

int
call_net_client_netns(struct call_net_client *cl)
{
    const char *why = NULL;
    bool first = !session_net_made(cl->netns);
    int fd = session_net_fd(cl->netns, &why);
    if (fd < 0 && first)
        log_warn("network: the session's network namespace: %s: %s; its sandboxed commands have "
                 "no network",
                 why ? why : "making it", strerror(-fd));
    return fd;
}

const char *
call_net_client_other_port(const struct call_net_client *cl, const struct call_net *own,
                           unsigned port)
{
    struct list *n;
    list_foreach(n, &cl->calls)
    {
        const struct call_net *cn = list_entry(n, struct call_net, node);
        if (cn != own && cn->port != 0 && cn->port == port)
            return "that port is the network proxy of another call of this session, which "
                   "decides and records its connections as that call's (use this call's own "
                   "HTTP_PROXY)";
    }
    return NULL;
}

int
call_net_client_socket(void *cl, int domain, int type, int protocol)
{
    struct call_net_client *c = cl;
    return session_net_socket(c->netns, domain, type, protocol);
}

void
call_net_server_free(struct call_net_server *ns)
{
    if (!ns)
        return;
    netproxy_free(ns->proxy);
    free(ns);
}

/* ---- a call's listener ---- */

struct call_net *
call_net_new(struct call_net_server *ns, struct call_net_client *cl, struct decide_call *dc,
             const char *command)
{
    struct call_net *cn = calloc(1, sizeof *cn);
    if (!cn)
        return NULL;
    cn->ns = ns;
    cn->cl = cl;
    cn->sv[0] = cn->sv[1] = -1;
    list_init(&cn->questions);
    list_init(&cn->node);
    cn->call_id = strdup(decide_call_label(dc));
    cn->command = strdup(command);
    if (!cn->call_id || !cn->command) {
        free(cn->call_id);
        free(cn->command);
        free(cn);
        return NULL;
    }
    cl->refs++;
    list_insert_head(&cl->calls, &cn->node);
    cn->dc = decide_call_ref(dc);
    return cn;
}

int
call_net_open(struct call_net *cn)
{
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cn->sv) < 0) {
        cn->sv[0] = cn->sv[1] = -1;
        return -errno;
    }
    return cn->sv[1];
}

/* The last of cn, once its poll (if any) is closed. */
static void
release(struct call_net *cn)
{
    if (cn->sv[0] >= 0)
        close(cn->sv[0]);
    list_unlink(&cn->node);
    call_net_client_unref(cn->cl);
    decide_call_unref(cn->dc);
    free(cn->call_id);
    free(cn->command);
    free(cn);
}

static void
poll_closed(uv_handle_t *h)
{
    release(h->data);
}

static void
stop_polling(struct call_net *cn)
{
    if (cn->poll_open)
        uv_poll_stop(&cn->poll);
}

/* The helper's message: one byte and the listener, or its end closing
 * (no namespace could be made: the command has no network). */
static void
on_listener(uv_poll_t *p, int status, int events)
{
    struct call_net *cn = p->data;
    (void)events;
    if (status < 0) {
        log_warn("network: call %s: waiting for the sandbox's listener: %s", cn->call_id,
                 uv_strerror(status));
        stop_polling(cn);
        return;
    }
    char tag;
    int fd = -1;
    size_t nfds = 0;
    ssize_t n = fd_pass_recv(cn->sv[0], &tag, 1, &fd, 1, &nfds, NULL);
    if (n == -EAGAIN)
        return;
    stop_polling(cn);
    if (n <= 0 || nfds != 1) {
        if (n < 0)
            log_warn("network: call %s: receiving the sandbox's listener: %s", cn->call_id,
                     strerror((int)-n));
        else
            log_info("network: call %s: the sandbox has no network namespace, so no network",
                     cn->call_id);
        if (nfds == 1)
            close(fd);
        return;
    }
    struct sockaddr_in at;
    socklen_t len = sizeof at;
    if (getsockname(fd, (struct sockaddr *)&at, &len) == 0 && at.sin_family == AF_INET)
        cn->port = ntohs(at.sin_port);
    char *why = NULL;
    if (netproxy_listen_fd(cn->ns->proxy, fd, cn->call_id, cn->command, cn->cl->approved, cn,
                           &cn->listener, &why) < 0) {
        log_error("network: call %s: %s", cn->call_id, why ? why : "out of memory");
        free(why);
    }
}

void
call_net_spawned(struct call_net *cn)
{
    if (cn->sv[1] >= 0) {
        close(cn->sv[1]);
        cn->sv[1] = -1;
    }
    if (cn->sv[0] < 0)
        return;
    int rc = uv_poll_init(cn->ns->loop, &cn->poll, cn->sv[0]);
    if (rc == 0) {
        cn->poll_open = true;
        cn->poll.data = cn;
        rc = uv_poll_start(&cn->poll, UV_READABLE | UV_DISCONNECT, on_listener);
    }
    if (rc < 0)
        log_error("network: call %s: cannot wait for the sandbox's listener: %s: the command "
                  "has no network",
                  cn->call_id, uv_strerror(rc));
}

void
call_net_free(struct call_net *cn)
{
    if (!cn)
        return;
    /* questions still out are withdrawn (the client told to close
     * them), their connections refused */
    while (!list_empty(&cn->questions)) {
        struct question *q = list_entry(cn->questions.next, struct question, node);
        struct netproxy_ask *ask = q->ask;
        ask_withdraw(q->aq);
        question_free(q);
        netproxy_ask_answer(ask, NETPROXY_DENIED);
    }
    netproxy_listener_close(cn->listener);
    cn->port = 0;
    list_unlink(&cn->node);
    if (cn->sv[1] >= 0)
        close(cn->sv[1]);
    if (cn->poll_open)
        uv_close((uv_handle_t *)&cn->poll, poll_closed);
    else
        release(cn);
}
