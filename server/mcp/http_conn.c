#include "server/mcp/http_conn.h"

#include "common/log.h"
#include "common/strfmt.h"

#include <ctype.h>
#include <http_parser.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK (64u * 1024)
#define MAX_BUFS   12

union conn_stream {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
};

struct conn_write {
    uv_write_t req;
    struct http_conn *c;
    char *owned[3];
    size_t len;
};

enum conn_state {
    CONN_READING,   /* parsing the next request */
    CONN_ANSWERING, /* a request was handed over: its response is owed */
    CONN_STREAMING, /* the response is a chunked stream */
    CONN_CLOSING,   /* closes once written */
};

struct http_conn {
    union conn_stream sock;
    /* the next request is parsed on a turn of its own, never inside the
     * call that answered the last (see request_done) */
    uv_idle_t resume;
    /* a request's headers must arrive within header_ms (see
     * http_conn_accept); stopped while they are not awaited */
    uv_timer_t deadline;
    uint64_t header_ms;
    bool trusted;
    /* a peer that takes none of what is queued for write_ms is closed
     * (see http_conn_accept): checked every write_ms while bytes wait;
     * stall_mark is what waited at the last check, moved whether a write
     * finished since */
    uv_timer_t stall;
    uint64_t write_ms;
    size_t stall_mark;
    bool moved;
    int handles; /* sock, resume, deadline and stall, until their close callbacks */
    http_parser parser;
    const struct http_conn_handler *h;
    void *data;
    size_t max_body;
    enum conn_state state;
    bool reading, dispatching, finish_after, closed_reported, keep_alive;
    bool refused; /* the request is refused (status below) */
    int refuse_status;
    const char *refuse_reason;

    /* unparsed input: in[pos..len) */
    char *in;
    size_t in_len, in_pos, in_cap;
    char chunk[READ_CHUNK];

    struct http_request req;
    size_t header_bytes;
    bool last_was_value;
    bool complete;

    size_t queued;
    unsigned writes;
};

/* ---- the request being read ---- */

static void
request_clear(struct http_request *r)
{
    free(r->url);
    for (size_t i = 0; i < r->n_headers; i++) {
        free(r->headers[i].name);
        free(r->headers[i].value);
    }
    free(r->headers);
    free(r->body);
    memset(r, 0, sizeof(*r));
}

const char *
http_request_header(const struct http_request *r, const char *name)
{
    for (size_t i = 0; i < r->n_headers; i++) {
        if (strcmp(r->headers[i].name, name) == 0)
            return r->headers[i].value;
    }
    return NULL;
}

/* Appends at..len to *s (NUL-terminated, grown); -1 when out of memory. */
static int
append(char **s, const char *at, size_t len)
{
    size_t old = *s ? strlen(*s) : 0;
    char *grown = realloc(*s, old + len + 1);
    if (!grown)
        return -1;
    memcpy(grown + old, at, len);
    grown[old + len] = '\0';
    *s = grown;
    return 0;
}

static int
refuse(struct http_conn *c, int status, const char *reason)
{
    if (!c->refused) {
        c->refused = true;
        c->refuse_status = status;
        c->refuse_reason = reason;
    }
    return -1; /* stops the parser */
}

static int
count_header_bytes(struct http_conn *c, size_t len)
{
    c->header_bytes += len;
    if (c->header_bytes > HTTP_CONN_MAX_HEADER_BYTES)
        return refuse(c, 431, "Request Header Fields Too Large");
    return 0;
}

static void arm_deadline(struct http_conn *c);

static int
on_message_begin(http_parser *p)
{
    struct http_conn *c = p->data;
    arm_deadline(c);
    request_clear(&c->req);
    c->header_bytes = 0;
    c->last_was_value = false;
    c->complete = false;
    return 0;
}

static int
on_url(http_parser *p, const char *at, size_t len)
{
    struct http_conn *c = p->data;
    if (count_header_bytes(c, len) < 0)
        return -1;
    return append(&c->req.url, at, len) < 0 ? refuse(c, 500, "Internal Server Error") : 0;
}

static int
on_header_field(http_parser *p, const char *at, size_t len)
{
    struct http_conn *c = p->data;
    struct http_request *r = &c->req;
    if (count_header_bytes(c, len) < 0)
        return -1;
    if (r->n_headers == 0 || c->last_was_value) {
        if (r->n_headers >= HTTP_CONN_MAX_HEADERS)
            return refuse(c, 431, "Request Header Fields Too Large");
        struct http_header *grown = realloc(r->headers, (r->n_headers + 1) * sizeof(*grown));
        if (!grown)
            return refuse(c, 500, "Internal Server Error");
        r->headers = grown;
        r->headers[r->n_headers++] = (struct http_header){NULL, NULL};
        c->last_was_value = false;
    }
    struct http_header *hd = &r->headers[r->n_headers - 1];
    if (append(&hd->name, at, len) < 0)
        return refuse(c, 500, "Internal Server Error");
    for (char *q = hd->name; *q; q++)
        *q = (char)tolower((unsigned char)*q);
    return 0;
}

static int
on_header_value(http_parser *p, const char *at, size_t len)
{
    struct http_conn *c = p->data;
    struct http_request *r = &c->req;
    if (count_header_bytes(c, len) < 0)
        return -1;
    if (r->n_headers == 0)
        return refuse(c, 400, "Bad Request");
    c->last_was_value = true;
    struct http_header *hd = &r->headers[r->n_headers - 1];
    return append(&hd->value, at, len) < 0 ? refuse(c, 500, "Internal Server Error") : 0;
}

static int
on_headers_complete(http_parser *p)
{
    struct http_conn *c = p->data;
    struct http_request *r = &c->req;
    for (size_t i = 0; i < r->n_headers; i++) {
        if (!r->headers[i].value && !(r->headers[i].value = strdup("")))
            return refuse(c, 500, "Internal Server Error");
        /* the parser keeps trailing blanks of a value */
        char *v = r->headers[i].value;
        size_t n = strlen(v);
        while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
            v[--n] = '\0';
    }
    if (!r->url && !(r->url = strdup("")))
        return refuse(c, 500, "Internal Server Error");
    uv_timer_stop(&c->deadline); /* the headers are in */
    if (p->content_length != ULLONG_MAX && p->content_length > c->max_body)
        return refuse(c, 413, "Payload Too Large");
    return 0;
}

static int
on_body(http_parser *p, const char *at, size_t len)
{
    struct http_conn *c = p->data;
    struct http_request *r = &c->req;
    if (r->body_len + len > c->max_body)
        return refuse(c, 413, "Payload Too Large");
    char *grown = realloc(r->body, r->body_len + len + 1);
    if (!grown)
        return refuse(c, 500, "Internal Server Error");
    memcpy(grown + r->body_len, at, len);
    r->body = grown;
    r->body_len += len;
    r->body[r->body_len] = '\0';
    return 0;
}

static int
on_message_complete(http_parser *p)
{
    struct http_conn *c = p->data;
    c->complete = true;
    c->req.method = http_method_str((enum http_method)p->method);
    c->keep_alive = http_should_keep_alive(p) != 0;
    /* one request at a time: the rest waits until it is answered */
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* ---- closing ---- */

static void
on_handle_closed(uv_handle_t *h)
{
    struct http_conn *c = h->data;
    if (--c->handles > 0)
        return;
    request_clear(&c->req);
    free(c->in);
    free(c);
}

static void
report_close(struct http_conn *c)
{
    if (c->closed_reported)
        return;
    c->closed_reported = true;
    c->h->on_close(c, c->data);
}

/* Closes the socket now (pending writes are cancelled). */
static void
close_now(struct http_conn *c)
{
    c->state = CONN_CLOSING;
    report_close(c);
    if (!uv_is_closing(&c->sock.handle)) {
        uv_close(&c->sock.handle, on_handle_closed);
        uv_close((uv_handle_t *)&c->resume, on_handle_closed);
        uv_close((uv_handle_t *)&c->deadline, on_handle_closed);
        uv_close((uv_handle_t *)&c->stall, on_handle_closed);
    }
}

void
http_conn_close(struct http_conn *c)
{
    if (uv_is_closing(&c->sock.handle))
        return;
    c->state = CONN_CLOSING;
    if (c->reading)
        uv_read_stop(&c->sock.stream);
    c->reading = false;
    if (c->writes == 0)
        close_now(c);
    else
        report_close(c);
}

/* ---- writing ---- */

static void
on_written(uv_write_t *req, int status)
{
    struct conn_write *w = (struct conn_write *)req;
    struct http_conn *c = w->c;
    c->writes--;
    c->queued -= w->len;
    c->moved = true;
    if (c->writes == 0 && !uv_is_closing((uv_handle_t *)&c->stall))
        uv_timer_stop(&c->stall);
    for (int i = 0; i < 3; i++)
        free(w->owned[i]);
    free(w);
    if (status < 0 && status != UV_ECANCELED && !uv_is_closing(&c->sock.handle)) {
        log_debug("http: a write failed: %s; the connection closes", uv_strerror(status));
        close_now(c);
        return;
    }
    if (c->state == CONN_CLOSING && c->writes == 0 && !uv_is_closing(&c->sock.handle)) {
        close_now(c);
        return;
    }
    /* after report_close the handler's data may be gone */
    if (c->h->on_written && !c->closed_reported)
        c->h->on_written(c, c->data);
}

static size_t
bufs_len(const uv_buf_t *bufs, unsigned n)
{
    size_t len = 0;
    for (unsigned i = 0; i < n; i++)
        len += bufs[i].len;
    return len;
}

/* The peer took nothing of what waits for write_ms: it is not reading,
 * and what waits for it would be held for as long as it likes; the
 * connection closes and the bytes are freed.  A peer that reads slowly
 * but reads (the kernel took some bytes since the last check) stays. */
static void
on_stall(uv_timer_t *t)
{
    struct http_conn *c = t->data;
    size_t waiting = uv_stream_get_write_queue_size(&c->sock.stream);
    if (c->writes == 0) {
        uv_timer_stop(t);
        return;
    }
    if (c->moved || waiting < c->stall_mark) {
        c->moved = false;
        c->stall_mark = waiting;
        return;
    }
    log_info("http: the peer took none of %zu bytes in %llu ms; the connection closes "
             "(--write-timeout-ms)",
             c->queued, (unsigned long long)c->write_ms);
    close_now(c);
}

/* Starts the stall clock when bytes begin to wait. */
static void
arm_stall(struct http_conn *c)
{
    if (c->write_ms == 0 || uv_is_active((uv_handle_t *)&c->stall) ||
        uv_is_closing((uv_handle_t *)&c->stall))
        return;
    c->moved = false;
    c->stall_mark = uv_stream_get_write_queue_size(&c->sock.stream);
    uv_timer_start(&c->stall, on_stall, c->write_ms, c->write_ms);
}

/* Writes bufs[0..n); takes own[0..3) (each malloc'd or NULL). */
static int
conn_write(struct http_conn *c, const uv_buf_t *bufs, unsigned n, char *own0, char *own1,
           char *own2)
{
    struct conn_write *w = NULL;
    if (c->state == CONN_CLOSING || uv_is_closing(&c->sock.handle) ||
        !(w = calloc(1, sizeof(*w)))) {
        free(own0);
        free(own1);
        free(own2);
        return -1;
    }
    w->c = c;
    w->owned[0] = own0;
    w->owned[1] = own1;
    w->owned[2] = own2;
    w->len = bufs_len(bufs, n);
    int rc = uv_write(&w->req, &c->sock.stream, bufs, n, on_written);
    if (rc < 0) {
        log_debug("http: cannot write: %s; the connection closes", uv_strerror(rc));
        for (int i = 0; i < 3; i++)
            free(w->owned[i]);
        free(w);
        close_now(c);
        return -1;
    }
    c->writes++;
    c->queued += w->len;
    arm_stall(c);
    return 0;
}

/* ---- the header deadline ---- */

/* The headers did not come in time: 408, saying so, and the connection
 * closes.  A request being answered is not cut short (the clock stops
 * when its headers are in, so this is a connection waiting for one). */
static void
on_deadline(uv_timer_t *t)
{
    struct http_conn *c = t->data;
    if (c->state != CONN_READING)
        return;
    log_debug("http: no request headers within %llu ms; the connection closes",
              (unsigned long long)c->header_ms);
    c->keep_alive = false;
    c->state = CONN_ANSWERING;
    char *body = strfmt("execgate: a request's headers must arrive within %llu ms "
                        "(--header-timeout-ms)\n",
                        (unsigned long long)c->header_ms);
    uv_buf_t b = uv_buf_init(body ? body : (char *)"", body ? (unsigned)strlen(body) : 0);
    http_conn_respond(c, 408, "Request Timeout", "text/plain", NULL, &b, 1, body, NULL);
}

/* Starts the clock for the next request's headers, unless it runs. */
static void
arm_deadline(struct http_conn *c)
{
    if (c->header_ms > 0 && !uv_is_active((uv_handle_t *)&c->deadline) &&
        !uv_is_closing((uv_handle_t *)&c->deadline))
        uv_timer_start(&c->deadline, on_deadline, c->header_ms, 0);
}

void
http_conn_trust(struct http_conn *c)
{
    c->trusted = true;
}

/* ---- reading ---- */

static void process(struct http_conn *c);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void
on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct http_conn *c = h->data;
    buf->base = c->chunk;
    buf->len = sizeof(c->chunk);
}

static void
set_reading(struct http_conn *c, bool on)
{
    if (on == c->reading || c->state == CONN_CLOSING)
        return;
    if (on ? uv_read_start(&c->sock.stream, on_alloc, on_read) == 0
           : uv_read_stop(&c->sock.stream) == 0)
        c->reading = on;
}

static void
on_resume(uv_idle_t *h)
{
    struct http_conn *c = h->data;
    uv_idle_stop(h);
    if (c->state == CONN_READING)
        process(c);
}

/*
 * The response to the current request is out: the next may be parsed.
 * Not here: the response may be written from deep inside its handler's
 * own work (a call's end, in scheduler.c), which the next request (a DELETE of
 * the same session) must not run into; process() comes on the loop's
 * next turn.
 */
static void
request_done(struct http_conn *c)
{
    request_clear(&c->req);
    if (c->state == CONN_CLOSING)
        return;
    if (!c->keep_alive || c->finish_after) {
        http_conn_close(c);
        return;
    }
    c->state = CONN_READING;
    http_parser_pause(&c->parser, 0);
    if (!c->trusted)
        arm_deadline(c);
    if (!c->dispatching)
        uv_idle_start(&c->resume, on_resume);
}

static void
answer_refusal(struct http_conn *c)
{
    int status = c->refused ? c->refuse_status : 400;
    const char *reason = c->refused ? c->refuse_reason : "Bad Request";
    const char *why = c->refused ? reason : http_errno_description(HTTP_PARSER_ERRNO(&c->parser));
    log_debug("http: request refused, %d %s (%s); the connection closes", status, reason, why);
    c->keep_alive = false;
    c->state = CONN_ANSWERING;
    char *body = strfmt("%s\n", why);
    uv_buf_t b = uv_buf_init(body ? body : (char *)"", body ? (unsigned)strlen(body) : 0);
    http_conn_respond(c, status, reason, "text/plain", NULL, &b, 1, body, NULL);
}

/* Parses what waits, handing over each complete request. */
static void
process(struct http_conn *c)
{
    c->dispatching = true;
    while (c->state == CONN_READING && c->in_pos < c->in_len) {
        size_t n = http_parser_execute(&c->parser, &parser_settings, c->in + c->in_pos,
                                       c->in_len - c->in_pos);
        c->in_pos += n;
        enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
        if (e != HPE_OK && e != HPE_PAUSED) {
            answer_refusal(c);
            break;
        }
        if (!c->complete)
            continue; /* all parsed: the request goes on in the next read */
        c->complete = false;
        c->state = CONN_ANSWERING;
        c->h->on_request(c, &c->req, c->data);
    }
    c->dispatching = false;
    if (c->in_pos == c->in_len)
        c->in_pos = c->in_len = 0;
    if (c->state == CONN_READING)
        http_parser_pause(&c->parser, 0);
    /* a response completed inside the handler: what waits is next */
    if (c->state == CONN_READING && c->in_pos < c->in_len) {
        process(c);
        return;
    }
    set_reading(c, c->state != CONN_CLOSING && c->in_len - c->in_pos < HTTP_CONN_MAX_PIPELINED);
}

static void
on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct http_conn *c = s->data;
    if (n == 0)
        return;
    if (n < 0) {
        /* a request cut short dies with its connection */
        if (n != UV_EOF)
            log_debug("http: read: %s", uv_strerror((int)n));
        set_reading(c, false);
        close_now(c);
        return;
    }
    if (c->in_pos > 0 && c->in_pos == c->in_len)
        c->in_pos = c->in_len = 0;
    if (c->in_len + (size_t)n > c->in_cap) {
        size_t cap = c->in_cap ? c->in_cap : READ_CHUNK;
        while (cap < c->in_len + (size_t)n)
            cap *= 2;
        char *grown = realloc(c->in, cap);
        if (!grown) {
            log_warn("http: out of memory reading a request; the connection closes");
            close_now(c);
            return;
        }
        c->in = grown;
        c->in_cap = cap;
    }
    memcpy(c->in + c->in_len, buf->base, (size_t)n);
    c->in_len += (size_t)n;
    if (c->state == CONN_READING)
        process(c);
    else if (c->in_len - c->in_pos >= HTTP_CONN_MAX_PIPELINED)
        set_reading(c, false);
}

int
http_conn_accept(uv_stream_t *listener, size_t max_body, uint64_t header_ms, uint64_t write_ms,
                 const struct http_conn_handler *h, void *data, struct http_conn **out)
{
    struct http_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return UV_ENOMEM;
    int rc = listener->type == UV_TCP ? uv_tcp_init(listener->loop, &c->sock.tcp)
                                      : uv_pipe_init(listener->loop, &c->sock.pipe, 0);
    if (rc < 0) {
        free(c);
        return rc;
    }
    uv_idle_init(listener->loop, &c->resume);    /* cannot fail */
    uv_timer_init(listener->loop, &c->deadline); /* cannot fail */
    uv_timer_init(listener->loop, &c->stall);    /* cannot fail */
    c->handles = 4;
    c->stall.data = c;
    c->write_ms = write_ms;
    c->sock.handle.data = c;
    c->resume.data = c;
    c->deadline.data = c;
    c->header_ms = header_ms;
    c->h = h;
    c->data = data;
    c->max_body = max_body;
    c->closed_reported = true; /* nothing to report until it is accepted */
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    rc = uv_accept(listener, &c->sock.stream);
    if (rc == 0)
        rc = uv_read_start(&c->sock.stream, on_alloc, on_read);
    if (rc < 0) {
        c->state = CONN_CLOSING;
        uv_close(&c->sock.handle, on_handle_closed);
        uv_close((uv_handle_t *)&c->resume, on_handle_closed);
        uv_close((uv_handle_t *)&c->deadline, on_handle_closed);
        uv_close((uv_handle_t *)&c->stall, on_handle_closed);
        return rc;
    }
    c->closed_reported = false;
    c->reading = true;
    arm_deadline(c);
    *out = c;
    return 0;
}

int
http_conn_fd(const struct http_conn *c)
{
    uv_os_fd_t fd = -1;
    uv_fileno(&c->sock.handle, &fd);
    return fd;
}

/* ---- responses ---- */

/*
 * Writes prefix (malloc'd; NULL: out of memory, and the connection
 * closes), then bufs[0..n), then suffix (static, may be NULL); at most
 * MAX_BUFS buffers in all.  Takes prefix, own0 and own1.
 */
static int
write_framed(struct http_conn *c, char *prefix, const uv_buf_t *bufs, unsigned n,
             const char *suffix, char *own0, char *own1)
{
    if (!prefix) {
        free(own0);
        free(own1);
        http_conn_close(c);
        return -1;
    }
    uv_buf_t all[MAX_BUFS];
    unsigned k = 0;
    all[k++] = uv_buf_init(prefix, (unsigned)strlen(prefix));
    for (unsigned i = 0; i < n; i++)
        all[k++] = bufs[i];
    if (suffix)
        all[k++] = uv_buf_init((char *)suffix, (unsigned)strlen(suffix));
    return conn_write(c, all, k, prefix, own0, own1);
}

static char *
head_text(struct http_conn *c, int status, const char *reason, const char *content_type,
          const char *headers, const char *framing)
{
    return strfmt("HTTP/1.1 %d %s\r\n%s%s%s%s%sCache-Control: no-store\r\n\r\n", status, reason,
                  content_type ? "Content-Type: " : "", content_type ? content_type : "",
                  content_type ? "\r\n" : "", headers ? headers : "", framing);
}

int
http_conn_respond(struct http_conn *c, int status, const char *reason, const char *content_type,
                  const char *headers, const uv_buf_t *bufs, unsigned n, char *own0, char *own1)
{
    if (c->state != CONN_ANSWERING || n > MAX_BUFS - 1) {
        free(own0);
        free(own1);
        return -1;
    }
    char *framing = strfmt("Content-Length: %zu\r\n%s", bufs_len(bufs, n),
                           c->keep_alive && !c->finish_after ? "" : "Connection: close\r\n");
    char *head = framing ? head_text(c, status, reason, content_type, headers, framing) : NULL;
    free(framing);
    int rc = write_framed(c, head, bufs, n, NULL, own0, own1);
    if (c->state != CONN_CLOSING)
        request_done(c);
    return rc;
}

int
http_conn_stream_begin(struct http_conn *c, const char *content_type, const char *headers)
{
    if (c->state != CONN_ANSWERING)
        return -1;
    char *head = head_text(c, 200, "OK", content_type, headers, "Transfer-Encoding: chunked\r\n");
    if (!head) {
        http_conn_close(c);
        return -1;
    }
    c->state = CONN_STREAMING;
    uv_buf_t b = uv_buf_init(head, (unsigned)strlen(head));
    return conn_write(c, &b, 1, head, NULL, NULL);
}

int
http_conn_stream_write(struct http_conn *c, const uv_buf_t *bufs, unsigned n, char *own0,
                       char *own1)
{
    if (c->state != CONN_STREAMING || n > MAX_BUFS - 2) {
        free(own0);
        free(own1);
        return -1;
    }
    return write_framed(c, strfmt("%zx\r\n", bufs_len(bufs, n)), bufs, n, "\r\n", own0, own1);
}

int
http_conn_stream_end(struct http_conn *c)
{
    if (c->state != CONN_STREAMING)
        return -1;
    uv_buf_t b = uv_buf_init((char *)"0\r\n\r\n", 5);
    int rc = conn_write(c, &b, 1, NULL, NULL, NULL);
    if (c->state != CONN_CLOSING)
        request_done(c);
    return rc;
}

bool
http_conn_streaming(const struct http_conn *c)
{
    return c->state == CONN_STREAMING;
}

size_t
http_conn_queued(const struct http_conn *c)
{
    return c->queued;
}

void
http_conn_finish(struct http_conn *c)
{
    c->finish_after = true;
    if (c->state == CONN_READING)
        http_conn_close(c);
}
