#include "server/mcp/mcp_http_int.h"

#include "common/log.h"
#include "common/strfmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* ---- sessions ---- */

void
hsess_backlog_clear(struct hsess *se)
{
    while (se->backlog) {
        struct backlog *b = se->backlog;
        se->backlog = b->next;
        free(b->text);
        free(b);
    }
    se->backlog_tail = &se->backlog;
    se->n_backlog = 0;
    se->backlog_bytes = 0;
}

/* hc's queue holds messages of se from now on. */
static void
hconn_charge(struct hconn *hc, struct hsess *se)
{
    if (hc->charged == se)
        return;
    if (hc->charged)
        hconn_uncharge(hc);
    hc->charged = se;
    list_insert_head(&se->charged, &hc->cnode);
}

void
hconn_uncharge(struct hconn *hc)
{
    struct hsess *se = hc->charged;
    if (!se)
        return;
    list_unlink(&hc->cnode);
    hc->charged = NULL;
}

/* What se's client has not taken yet (mcp_session_pending_fn): messages
 * waiting for its GET stream and those queued on its connections. */
static size_t
hsess_pending(void *data)
{
    struct hsess *se = data;
    size_t n = se->backlog_bytes;
    struct list *l;
    list_foreach(l, &se->charged)
    {
        n += http_conn_queued(CHARGED_CONN(l)->c);
    }
    return n;
}

struct hsess *
hsess_find(struct mcp_http *h, const char *id)
{
    struct list *n;
    list_foreach(n, &h->sessions)
    {
        struct hsess *se = list_entry(n, struct hsess, node);
        if (strcmp(se->id, id) == 0)
            return se;
    }
    return NULL;
}

/* hc no longer owes se anything. */
void
hconn_unbind(struct hconn *hc)
{
    struct hsess *se = hc->sess;
    if (!se)
        return;
    list_unlink(&hc->snode);
    if (se->get == hc)
        se->get = NULL;
    hc->sess = NULL;
    hc->get = false;
    json_decref(hc->ids);
    json_decref(hc->tokens);
    hc->ids = hc->tokens = NULL;
}

void
hconn_bind(struct hconn *hc, struct hsess *se)
{
    hc->sess = se;
    list_insert_head(&se->conns, &hc->snode);
}

char *
hsess_header(const struct hsess *se)
{
    return strfmt("Mcp-Session-Id: %s\r\n", se->id);
}

/* Frees se's record after its session ended or was closed: its GET stream
 * ends, requests still owed an answer get none (their connections close). */
static void
hsess_forget(struct hsess *se)
{
    struct mcp_http *h = se->h;
    while (!list_empty(&se->charged))
        hconn_uncharge(CHARGED_CONN(se->charged.next));
    while (!list_empty(&se->conns)) {
        struct hconn *hc = SESSION_CONN(se->conns.next);
        /* hc may be freed by what follows (on_conn_close); c lives until
         * its close callback, on a later turn of the loop */
        struct http_conn *c = hc->c;
        bool get = hc->get;
        hconn_unbind(hc);
        if (h->shutting_down)
            http_conn_finish(c);
        if (get)
            http_conn_stream_end(c);
        else
            http_conn_close(c);
    }
    hsess_report_drops(se);
    hsess_backlog_clear(se);
    list_unlink(&se->node);
    h->n_sessions--;
    free(se);
}

void
hsess_end(struct hsess *se, const char *why)
{
    log_info("http: session %.8s... ends: %s", se->id, why);
    mcp_session_end(se->ms, why);
    hsess_forget(se);
}

/* ---- messages to clients ---- */

static struct hconn *
find_by(struct hsess *se, const json_t *value, bool token)
{
    if (!value)
        return NULL;
    struct list *l;
    list_foreach(l, &se->conns)
    {
        struct hconn *hc = SESSION_CONN(l);
        const json_t *list = token ? hc->tokens : hc->ids;
        for (size_t i = 0; list && i < json_array_size(list); i++) {
            if (json_equal(json_array_get(list, i), value))
                return hc;
        }
    }
    return NULL;
}

/* m as one SSE event on hc's stream (begun if need be). */
static int
send_event(struct hconn *hc, struct jsonrpc_out *m)
{
    if (!http_conn_streaming(hc->c)) {
        char *hdr = hsess_header(hc->sess);
        int rc = hdr ? http_conn_stream_begin(hc->c, "text/event-stream", hdr) : -1;
        free(hdr);
        if (rc < 0) {
            free(m->own[0]);
            free(m->own[1]);
            return -1;
        }
    }
    uv_buf_t bufs[8];
    unsigned n = 0;
    bufs[n++] = uv_buf_init((char *)"data: ", 6);
    for (unsigned i = 0; i < m->n && i < 5; i++)
        bufs[n++] = m->bufs[i];
    bufs[n++] = uv_buf_init((char *)"\n", 1); /* the message's newline, then the event's */
    hconn_charge(hc, hc->sess);
    return http_conn_stream_write(hc->c, bufs, n, m->own[0], m->own[1]);
}

/* Keeps m for the session's GET stream. */
static int
keep_for_later(struct hsess *se, struct jsonrpc_out *m)
{
    size_t len = 0;
    for (unsigned i = 0; i < m->n; i++)
        len += m->bufs[i].len;
    struct backlog *b = calloc(1, sizeof(*b));
    char *text = b ? malloc(len) : NULL;
    if (text) {
        size_t off = 0;
        for (unsigned i = 0; i < m->n; i++) {
            memcpy(text + off, m->bufs[i].base, m->bufs[i].len);
            off += m->bufs[i].len;
        }
    }
    free(m->own[0]);
    free(m->own[1]);
    if (!text) {
        free(b);
        log_warn("http: session %.8s...: out of memory: a message is dropped", se->id);
        return -1;
    }
    b->text = text;
    b->len = len;
    *se->backlog_tail = b;
    se->backlog_tail = &b->next;
    se->backlog_bytes += len;
    if (++se->n_backlog > MCP_HTTP_BACKLOG) {
        struct backlog *old = se->backlog;
        se->backlog = old->next;
        if (!se->backlog)
            se->backlog_tail = &se->backlog;
        se->n_backlog--;
        se->backlog_bytes -= old->len;
        free(old->text);
        free(old);
        if (se->dropped++ == 0)
            log_warn("http: session %.8s...: no stream open for %u messages: the oldest is "
                     "dropped (the next are counted)",
                     se->id, MCP_HTTP_BACKLOG);
    }
    return 0;
}

/* One line for the drops not said yet (keep_for_later). */
void
hsess_report_drops(struct hsess *se)
{
    if (se->dropped > 1)
        log_warn("http: session %.8s...: %llu more messages with no stream open were dropped",
                 se->id, se->dropped - 1);
    se->dropped = 0;
}

void
hsess_flush_backlog(struct hsess *se, struct hconn *hc)
{
    hsess_report_drops(se);
    while (se->backlog) {
        struct backlog *b = se->backlog;
        se->backlog = b->next;
        uv_buf_t buf = uv_buf_init(b->text, (unsigned)b->len);
        struct jsonrpc_out m = {.bufs = &buf, .n = 1, .own = {b->text, NULL}};
        send_event(hc, &m);
        free(b);
    }
    se->backlog_tail = &se->backlog;
    se->n_backlog = 0;
    se->backlog_bytes = 0;
}

/* An answer: to the connection that carried its request, as JSON, or as
 * the last event of its stream. */
static int
send_answer(struct hsess *se, struct jsonrpc_out *m)
{
    struct hconn *hc = find_by(se, m->answers, false);
    if (!hc) {
        /* its client hung up, or cancelled it */
        free(m->own[0]);
        free(m->own[1]);
        return -1;
    }
    for (size_t i = 0; i < json_array_size(hc->ids); i++) {
        if (json_equal(json_array_get(hc->ids, i), m->answers)) {
            json_array_remove(hc->ids, i);
            break;
        }
    }
    int rc;
    if (http_conn_streaming(hc->c)) {
        rc = send_event(hc, m);
        if (json_array_size(hc->ids) == 0) {
            hconn_unbind(hc);
            http_conn_stream_end(hc->c);
        }
        return rc;
    }
    char *hdr = hsess_header(se);
    hconn_unbind(hc);
    hconn_charge(hc, se);
    if (!hdr) {
        free(m->own[0]);
        free(m->own[1]);
        http_conn_close(hc->c);
        return -1;
    }
    rc = http_conn_respond(hc->c, 200, "OK", "application/json", hdr, m->bufs, m->n, m->own[0],
                           m->own[1]);
    free(hdr);
    return rc;
}

/* The session's messages (mcp_session_sink_fn). */
static int
hsess_sink(void *data, struct jsonrpc_out *m)
{
    struct hsess *se = data;
    if (!m) {
        /* the server's shutdown closed the session */
        hsess_forget(se);
        return 0;
    }
    /* what the server sends is not the client's doing: last_used does
     * not move (a dead client's call that prints on would keep it alive) */
    if (m->answers)
        return send_answer(se, m);
    /* what it is about: a call's progress or log record goes with the
     * call's answer */
    struct hconn *hc = NULL;
    if (m->method && strcmp(m->method, "notifications/progress") == 0)
        hc = find_by(se, json_object_get(m->params, "progressToken"), true);
    else if (m->method && strcmp(m->method, "notifications/message") == 0)
        hc = find_by(se, json_object_get(json_object_get(m->params, "data"), "requestId"), false);
    if (!hc)
        hc = se->get;
    struct list *l;
    list_foreach(l, &se->conns)
    {
        if (!hc && json_array_size(SESSION_CONN(l)->ids) > 0)
            hc = SESSION_CONN(l);
    }
    if (!hc)
        return keep_for_later(se, m);
    return send_event(hc, m);
}

struct hsess *
hsess_create(struct mcp_http *h)
{
    struct hsess *se = calloc(1, sizeof(*se));
    unsigned char raw[16];
    if (!se || getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        free(se);
        return NULL;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(se->id + 2 * i, 3, "%02x", raw[i]);
    se->h = h;
    list_init(&se->node);
    list_init(&se->conns);
    list_init(&se->charged);
    se->backlog_tail = &se->backlog;
    se->ms = mcp_session_new(h->s, hsess_sink, hsess_pending, se);
    if (!se->ms) {
        free(se);
        return NULL;
    }
    list_insert_head(&h->sessions, &se->node);
    h->n_sessions++;
    log_info("http: session %.8s... begins (%u open)", se->id, h->n_sessions);
    return se;
}

/* A notifications/cancelled for a request hc carries: its exchange ends
 * without an answer (an empty event stream). */
void
hsess_cancelled(struct hsess *se, const json_t *msg)
{
    const json_t *id = json_object_get(json_object_get(msg, "params"), "requestId");
    struct hconn *hc = find_by(se, id, false);
    if (!hc)
        return;
    for (size_t i = 0; i < json_array_size(hc->ids); i++) {
        if (json_equal(json_array_get(hc->ids, i), id)) {
            json_array_remove(hc->ids, i);
            break;
        }
    }
    if (json_array_size(hc->ids) > 0)
        return;
    if (!http_conn_streaming(hc->c)) {
        char *hdr = hsess_header(se);
        http_conn_stream_begin(hc->c, "text/event-stream", hdr);
        free(hdr);
    }
    hconn_unbind(hc);
    http_conn_stream_end(hc->c);
}
