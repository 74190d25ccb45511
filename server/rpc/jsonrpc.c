#include "server/rpc/jsonrpc.h"

#include "common/buf.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The chunk libuv reads into; lines of any length up to max_message are
 * assembled from chunks in a growable buffer. */
#define READ_CHUNK (64u * 1024)

union stream {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_pipe_t pipe;
    uv_tty_t tty;
    uv_idle_t idle; /* a regular file as input: read a chunk per loop turn */
};

struct pending {
    long long id;
    jsonrpc_response_cb cb;
    void *data;
    struct pending *next;
};

struct out_write {
    uv_write_t req;
    struct jsonrpc *rpc;
    char *owned[2]; /* the message's buffers to free once written (or NULL) */
    size_t len;     /* the message's bytes, its newline included */
};

struct jsonrpc {
    uv_loop_t *loop;
    struct jsonrpc_handler handler;
    void *data;
    size_t max_message;

    union stream in, out;
    bool in_open, out_open;
    bool in_file; /* input is a regular file (epoll cannot watch it) */
    int in_fd;
    int in_stream_fd; /* the input pipe or socket, for the hang-up watch; -1: none */
    /* while input is paused: a copy of in_stream_fd polled for the hang-up */
    uv_poll_t hup;
    int hup_fd;
    bool hup_open;
    int out_file_fd; /* >= 0: output is a regular file, written directly */
    bool reading, paused, input_done, eof_reported, out_failed;
    int open_handles;

    struct buf line; /* a message split across reads, until its newline */
    bool discarding;
    char chunk[READ_CHUNK];

    size_t out_bytes;
    unsigned writes_in_flight;

    struct pending *pending;
    long long next_id;

    jsonrpc_sink_fn sink; /* output framed by someone else (jsonrpc_start_sink), or NULL */
    void *sink_data;

    bool closing;
    void (*done)(void *data);
    void *done_data;
};

struct jsonrpc *
jsonrpc_new(uv_loop_t *loop, const struct jsonrpc_handler *h, void *data, size_t max_message)
{
    struct jsonrpc *rpc = calloc(1, sizeof(*rpc));
    if (!rpc)
        return NULL;
    rpc->loop = loop;
    rpc->handler = *h;
    rpc->data = data;
    rpc->max_message = max_message ? max_message : JSONRPC_DEFAULT_MAX_MESSAGE;
    rpc->next_id = 1;
    rpc->out_file_fd = -1;
    rpc->in_fd = -1;
    rpc->in_stream_fd = -1;
    rpc->hup_fd = -1;
    return rpc;
}

static int
open_stream(struct jsonrpc *rpc, union stream *s, int fd)
{
    uv_handle_type type = uv_guess_handle(fd);
    int rc;
    if (type == UV_TTY) {
        rc = uv_tty_init(rpc->loop, &s->tty, fd, 0);
    } else if (type == UV_NAMED_PIPE || type == UV_TCP) {
        rc = uv_pipe_init(rpc->loop, &s->pipe, 0);
        if (rc == 0) {
            rc = uv_pipe_open(&s->pipe, fd);
            if (rc < 0) {
                /* initialised, so it must be closed like an open one */
                s->handle.data = rpc;
                rpc->open_handles++;
                return rc;
            }
            if (s == &rpc->in)
                rpc->in_stream_fd = fd;
        }
    } else if (type == UV_FILE && s == &rpc->in) {
        /* epoll cannot watch a regular file, and reading one does not
         * block for long: an idle handle reads it a chunk per turn. */
        rc = uv_idle_init(rpc->loop, &s->idle);
        rpc->in_file = true;
        rpc->in_fd = fd;
    } else if (type == UV_FILE) {
        rpc->out_file_fd = fd;
        return 0;
    } else {
        return UV_EINVAL;
    }
    if (rc < 0)
        return rc;
    s->handle.data = rpc;
    rpc->open_handles++;
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void watch_hangup(struct jsonrpc *rpc, bool on);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void on_file_turn(uv_idle_t *h);

static int
start_input(struct jsonrpc *rpc)
{
    if (rpc->in_file)
        return uv_idle_start(&rpc->in.idle, on_file_turn);
    return uv_read_start(&rpc->in.stream, on_alloc, on_read);
}

static void
stop_input(struct jsonrpc *rpc)
{
    if (rpc->in_file)
        uv_idle_stop(&rpc->in.idle);
    else
        uv_read_stop(&rpc->in.stream);
}

int
jsonrpc_start(struct jsonrpc *rpc, int in_fd, int out_fd)
{
    int rc = open_stream(rpc, &rpc->out, out_fd);
    rpc->out_open = rpc->open_handles > 0 || rpc->out_file_fd >= 0;
    if (rc < 0)
        return rc;
    int before = rpc->open_handles;
    rc = open_stream(rpc, &rpc->in, in_fd);
    rpc->in_open = rpc->open_handles > before;
    if (rc < 0)
        return rc;
    rc = start_input(rpc);
    if (rc < 0)
        return rc;
    rpc->reading = true;
    return 0;
}

void
jsonrpc_start_sink(struct jsonrpc *rpc, jsonrpc_sink_fn sink, void *data)
{
    rpc->sink = sink;
    rpc->sink_data = data;
}

static void
on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct jsonrpc *rpc = h->data;
    buf->base = rpc->chunk;
    buf->len = sizeof(rpc->chunk);
}

/* ---- output ---- */

static void maybe_resume(struct jsonrpc *rpc);
static void finish_close(struct jsonrpc *rpc);

static void
on_written(uv_write_t *req, int status)
{
    struct out_write *w = (struct out_write *)req;
    struct jsonrpc *rpc = w->rpc;
    rpc->out_bytes -= w->len;
    rpc->writes_in_flight--;
    free(w->owned[0]);
    free(w->owned[1]);
    free(w);
    if (status < 0 && status != UV_ECANCELED && !rpc->out_failed) {
        log_warn("stdout: %s; further output is dropped", uv_strerror(status));
        rpc->out_failed = true;
    }
    maybe_resume(rpc);
    if (rpc->closing && rpc->writes_in_flight == 0)
        finish_close(rpc);
    else if (!rpc->closing && rpc->handler.on_written)
        rpc->handler.on_written(rpc, rpc->data);
}

/* Output to a regular file: written at once. */
static int
write_file(struct jsonrpc *rpc, const uv_buf_t *bufs, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        const char *p = bufs[i].base;
        size_t left = bufs[i].len;
        while (left > 0) {
            ssize_t done = write(rpc->out_file_fd, p, left);
            if (done < 0 && errno == EINTR)
                continue;
            if (done <= 0) {
                log_warn("stdout: %s; further output is dropped", strerror(errno));
                rpc->out_failed = true;
                return -1;
            }
            p += done;
            left -= (size_t)done;
        }
    }
    return 0;
}

/* Starts writing bufs[0..n) to the output stream; w then owns the buffers
 * in w->owned until on_written. */
static int
start_write(struct jsonrpc *rpc, struct out_write *w, const uv_buf_t *bufs, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        w->len += bufs[i].len;
    int rc = uv_write(&w->req, &rpc->out.stream, bufs, n, on_written);
    if (rc < 0) {
        log_warn("stdout: %s; further output is dropped", uv_strerror(rc));
        rpc->out_failed = true;
        return -1;
    }
    rpc->writes_in_flight++;
    rpc->out_bytes += w->len;
    if (rpc->reading && rpc->out_bytes > JSONRPC_WRITE_HIGH_WATER) {
        stop_input(rpc);
        rpc->reading = false;
        rpc->paused = true;
        watch_hangup(rpc, true);
        log_debug("client reads slowly: input paused with %zu bytes queued", rpc->out_bytes);
    }
    return 0;
}

/*
 * Queues one message: bufs[0..n), the last ending in its newline.  Takes
 * own0 and own1 (malloc'd or NULL: what bufs point into), also on failure;
 * they are freed once the message is written.
 */
static int
queue_msg(struct jsonrpc *rpc, const uv_buf_t *bufs, unsigned n, char *own0, char *own1,
          const json_t *answers, const json_t *msg)
{
    int rc = -1;
    if (rpc->sink && !rpc->closing) {
        struct jsonrpc_out m = {
            .bufs = bufs,
            .n = n,
            .own = {own0, own1},
            .answers = answers,
            .method = json_string_value(json_object_get(msg, "method")),
            .params = json_object_get(msg, "params"),
        };
        return rpc->sink(rpc->sink_data, &m);
    }
    if (!rpc->out_open) {
        rc = 0; /* no output (the fuzz target): dropped */
    } else if (rpc->out_failed || rpc->closing) {
        rc = -1;
    } else if (rpc->out_file_fd >= 0) {
        rc = write_file(rpc, bufs, n);
    } else {
        struct out_write *w = malloc(sizeof(*w));
        if (w) {
            *w = (struct out_write){.rpc = rpc, .owned = {own0, own1}};
            if (start_write(rpc, w, bufs, n) == 0)
                return 0;
            free(w);
        }
    }
    free(own0);
    free(own1);
    return rc;
}

/* Serialises msg (taken) and queues it with its newline. */
static int
send_msg(struct jsonrpc *rpc, json_t *msg)
{
    if (!msg)
        return -1;
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text) {
        json_decref(msg);
        log_error("could not serialise an outgoing message (out of memory)");
        return -1;
    }
    uv_buf_t bufs[2] = {uv_buf_init(text, (unsigned)strlen(text)), uv_buf_init((char *)"\n", 1)};
    const json_t *answers = json_object_get(msg, "method") ? NULL : json_object_get(msg, "id");
    int rc = queue_msg(rpc, bufs, 2, text, NULL, answers, msg);
    json_decref(msg);
    return rc;
}

static void
maybe_resume(struct jsonrpc *rpc)
{
    if (!rpc->paused || rpc->input_done || rpc->out_bytes > JSONRPC_WRITE_HIGH_WATER / 2)
        return;
    rpc->paused = false;
    watch_hangup(rpc, false);
    if (start_input(rpc) == 0)
        rpc->reading = true;
}

static json_t *
envelope(const json_t *id)
{
    json_t *msg = json_object();
    if (!msg)
        return NULL;
    json_object_set_new(msg, "jsonrpc", json_string("2.0"));
    json_object_set_new(msg, "id", id ? json_deep_copy(id) : json_null());
    return msg;
}

int
jsonrpc_reply(struct jsonrpc *rpc, const json_t *id, json_t *result)
{
    if (!result) {
        /* whoever built the result ran out of memory: the client still
         * gets an answer */
        jsonrpc_reply_error(rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    json_t *msg = envelope(id);
    if (!msg || json_object_set_new(msg, "result", result) < 0) {
        if (!msg)
            json_decref(result);
        json_decref(msg);
        jsonrpc_reply_error(rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    return send_msg(rpc, msg);
}

int
jsonrpc_reply_text(struct jsonrpc *rpc, const json_t *id, char *result, size_t len)
{
    char *id_text = id ? json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    char *head = NULL;
    if ((id && !id_text) ||
        asprintf(&head, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":", id ? id_text : "null") < 0)
        head = NULL;
    free(id_text);
    if (!head) {
        free(result);
        jsonrpc_reply_error(rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    /* the envelope's text around result's, as send_msg would write it */
    uv_buf_t bufs[3] = {uv_buf_init(head, (unsigned)strlen(head)),
                        {.base = result, .len = len}, /* uv_buf_init takes an unsigned */
                        uv_buf_init((char *)"}\n", 2)};
    return queue_msg(rpc, bufs, 3, head, result, id ? id : json_null(), NULL);
}

int
jsonrpc_reply_error(struct jsonrpc *rpc, const json_t *id, int code, const char *message)
{
    json_t *msg = envelope(id);
    if (!msg)
        return -1;
    json_t *err = json_pack("{s:i,s:s}", "code", code, "message", message);
    if (!err || json_object_set_new(msg, "error", err) < 0) {
        json_decref(msg);
        return -1;
    }
    return send_msg(rpc, msg);
}

/* A request (id >= 0) or notification (id < 0) to method with params
 * (taken, also on failure; NULL: none).  NULL when out of memory. */
static json_t *
new_call(const char *method, long long id, json_t *params)
{
    json_t *msg = id >= 0 ? json_pack("{s:s,s:I,s:s}", "jsonrpc", "2.0", "id", (json_int_t)id,
                                      "method", method)
                          : json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
    if (!msg) {
        json_decref(params);
        return NULL;
    }
    /* json_object_set_new releases params on failure too */
    if (params && json_object_set_new(msg, "params", params) < 0) {
        json_decref(msg);
        return NULL;
    }
    return msg;
}

int
jsonrpc_notify(struct jsonrpc *rpc, const char *method, json_t *params)
{
    json_t *msg = new_call(method, -1, params);
    return msg ? send_msg(rpc, msg) : -1;
}

long long
jsonrpc_request(struct jsonrpc *rpc, const char *method, json_t *params, jsonrpc_response_cb cb,
                void *data)
{
    json_t *msg = new_call(method, rpc->next_id, params);
    if (!msg)
        return -1;
    struct pending *p = NULL;
    if ((!rpc->out_open && !rpc->sink) || rpc->out_failed || rpc->closing ||
        !(p = malloc(sizeof(*p)))) {
        json_decref(msg);
        return -1;
    }
    if (send_msg(rpc, msg) < 0) {
        free(p);
        return -1;
    }
    p->id = rpc->next_id++;
    p->cb = cb;
    p->data = data;
    p->next = rpc->pending;
    rpc->pending = p;
    return p->id;
}

static struct pending *
take_pending(struct jsonrpc *rpc, long long id)
{
    for (struct pending **pp = &rpc->pending; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            struct pending *p = *pp;
            *pp = p->next;
            return p;
        }
    }
    return NULL;
}

void
jsonrpc_forget_request(struct jsonrpc *rpc, long long id)
{
    free(take_pending(rpc, id));
}

size_t
jsonrpc_pending_output(const struct jsonrpc *rpc)
{
    return rpc->out_bytes;
}

/* ---- input ---- */

static void
handle_response(struct jsonrpc *rpc, const json_t *msg, const json_t *id)
{
    const json_t *result = json_object_get(msg, "result");
    const json_t *error = json_object_get(msg, "error");
    if (!json_is_integer(id) || (!result && !error) || (result && error)) {
        log_warn("ignoring a response that is not an answer to one of our requests");
        return;
    }
    struct pending *p = take_pending(rpc, json_integer_value(id));
    if (!p) {
        log_warn("ignoring an answer to unknown request id %" JSON_INTEGER_FORMAT,
                 json_integer_value(id));
        return;
    }
    p->cb(result, error, p->data);
    free(p);
}

static void
handle_message(struct jsonrpc *rpc, const json_t *msg)
{
    if (!json_is_object(msg)) {
        const char *what = json_is_array(msg) ? "batches are not supported: send one message a line"
                                              : "a message must be a JSON object";
        jsonrpc_reply_error(rpc, NULL, JSONRPC_INVALID_REQUEST, what);
        return;
    }
    const json_t *id = json_object_get(msg, "id");
    if (id && !json_is_string(id) && !json_is_integer(id)) {
        jsonrpc_reply_error(rpc, NULL, JSONRPC_INVALID_REQUEST,
                            "id must be a string or an integer");
        return;
    }
    const json_t *version = json_object_get(msg, "jsonrpc");
    if (!json_is_string(version) || strcmp(json_string_value(version), "2.0") != 0) {
        jsonrpc_reply_error(rpc, id, JSONRPC_INVALID_REQUEST, "jsonrpc must be \"2.0\"");
        return;
    }
    const json_t *method = json_object_get(msg, "method");
    if (!method) {
        if (id) {
            handle_response(rpc, msg, id);
        } else {
            jsonrpc_reply_error(rpc, NULL, JSONRPC_INVALID_REQUEST,
                                "a message needs a method or an id");
        }
        return;
    }
    if (!json_is_string(method)) {
        if (id)
            jsonrpc_reply_error(rpc, id, JSONRPC_INVALID_REQUEST, "method must be a string");
        return;
    }
    const json_t *params = json_object_get(msg, "params");
    if (params && json_is_null(params))
        params = NULL;
    if (params && !json_is_object(params)) {
        if (id)
            jsonrpc_reply_error(rpc, id, JSONRPC_INVALID_PARAMS, "params must be an object");
        return;
    }
    if (id)
        rpc->handler.on_request(rpc, id, json_string_value(method), params, rpc->data);
    else
        rpc->handler.on_notification(rpc, json_string_value(method), params, rpc->data);
}

static void
process_line(struct jsonrpc *rpc, const char *p, size_t n)
{
    while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    size_t skip = 0;
    while (skip < n && (p[skip] == ' ' || p[skip] == '\t'))
        skip++;
    if (skip == n)
        return;
    json_error_t jerr;
    json_t *msg = json_loadb(p + skip, n - skip, JSON_DECODE_ANY, &jerr);
    if (!msg) {
        char text[JSON_ERROR_TEXT_LENGTH + 64];
        snprintf(text, sizeof(text), "Parse error: %s at byte %d", jerr.text, jerr.position);
        jsonrpc_reply_error(rpc, NULL, JSONRPC_PARSE_ERROR, text);
        return;
    }
    handle_message(rpc, msg);
    json_decref(msg);
}

static void
refuse_oversized(struct jsonrpc *rpc)
{
    char text[96];
    snprintf(text, sizeof(text), "message exceeds the maximum size of %zu bytes", rpc->max_message);
    log_warn("%s; it is skipped", text);
    jsonrpc_reply_error(rpc, NULL, JSONRPC_INVALID_REQUEST, text);
}

/* The line taken so far is done with (its room kept for the next). */
static void
line_reset(struct jsonrpc *rpc)
{
    rpc->line.len = 0;
    if (rpc->line.data)
        rpc->line.data[0] = '\0';
}

void
jsonrpc_feed(struct jsonrpc *rpc, const char *buf, size_t len)
{
    while (len > 0 && !rpc->input_done) {
        const char *nl = memchr(buf, '\n', len);
        size_t take = nl ? (size_t)(nl - buf) : len;
        size_t used = take + (nl ? 1 : 0);
        if (rpc->discarding) {
            rpc->discarding = !nl;
        } else if (rpc->line.len + take > rpc->max_message) {
            refuse_oversized(rpc);
            line_reset(rpc);
            rpc->discarding = !nl;
        } else if (nl && rpc->line.len == 0) {
            process_line(rpc, buf, take);
        } else if (buf_append(&rpc->line, buf, take) < 0) {
            jsonrpc_reply_error(rpc, NULL, JSONRPC_INTERNAL_ERROR,
                                "out of memory while reading a message");
            line_reset(rpc);
            rpc->discarding = !nl;
        } else if (nl) {
            size_t total = rpc->line.len;
            rpc->line.len = 0;
            process_line(rpc, rpc->line.data, total);
        }
        buf += used;
        len -= used;
    }
}

static void
report_eof(struct jsonrpc *rpc)
{
    if (rpc->eof_reported)
        return;
    rpc->eof_reported = true;
    rpc->handler.on_eof(rpc, rpc->data);
}

static void
on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct jsonrpc *rpc = s->data;
    if (n > 0) {
        jsonrpc_feed(rpc, buf->base, (size_t)n);
        return;
    }
    if (n == 0)
        return;
    if (n != UV_EOF)
        log_warn("stdin: %s", uv_strerror((int)n));
    /* A last message without its newline still counts. */
    if (rpc->line.len > 0 && !rpc->discarding && !rpc->input_done) {
        size_t l = rpc->line.len;
        rpc->line.len = 0;
        process_line(rpc, rpc->line.data, l);
    }
    jsonrpc_stop_reading(rpc);
    report_eof(rpc);
}

static void
on_file_turn(uv_idle_t *h)
{
    struct jsonrpc *rpc = h->data;
    ssize_t n = read(rpc->in_fd, rpc->chunk, sizeof(rpc->chunk));
    if (n < 0 && errno == EINTR)
        return;
    uv_buf_t buf = uv_buf_init(rpc->chunk, sizeof(rpc->chunk));
    on_read((uv_stream_t *)h, n < 0 ? uv_translate_sys_error(errno) : n == 0 ? UV_EOF : n, &buf);
}

/* The client closed its end while its input was paused. */
static void
on_hangup(uv_poll_t *h, int status, int events)
{
    struct jsonrpc *rpc = h->data;
    uv_poll_stop(h);
    if (rpc->input_done)
        return;
    log_info("stdin: the client closed its end while answers wait for it: input ends");
    jsonrpc_stop_reading(rpc);
    report_eof(rpc);
}

/*
 * While input is paused for a slow reader the stream is not read, so its
 * end would go unnoticed until the client reads again, which a client that
 * left never does.  A copy of the fd is polled for the hang-up alone
 * (requests waiting in it do not wake the loop).
 */
static void
watch_hangup(struct jsonrpc *rpc, bool on)
{
    if (!on || rpc->in_stream_fd < 0) {
        if (rpc->hup_open)
            uv_poll_stop(&rpc->hup);
        return;
    }
    if (!rpc->hup_open) {
        int fd = fcntl(rpc->in_stream_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0 || uv_poll_init(rpc->loop, &rpc->hup, fd) < 0) {
            log_warn("stdin: cannot watch for the client's hang-up while input is paused");
            if (fd >= 0)
                close(fd);
            return;
        }
        rpc->hup.data = rpc;
        rpc->hup_fd = fd;
        rpc->hup_open = true;
        rpc->open_handles++;
    }
    uv_poll_start(&rpc->hup, UV_DISCONNECT, on_hangup);
}

void
jsonrpc_stop_reading(struct jsonrpc *rpc)
{
    rpc->input_done = true;
    watch_hangup(rpc, false);
    if (rpc->reading)
        stop_input(rpc);
    rpc->reading = false;
}

/* ---- closing ---- */

static void
fail_pending(struct jsonrpc *rpc)
{
    json_t *err =
        json_pack("{s:i,s:s}", "code", JSONRPC_INTERNAL_ERROR, "message", "connection closed");
    while (rpc->pending) {
        struct pending *p = rpc->pending;
        rpc->pending = p->next;
        p->cb(NULL, err, p->data);
        free(p);
    }
    json_decref(err);
}

static void
free_rpc(struct jsonrpc *rpc)
{
    void (*done)(void *) = rpc->done;
    void *data = rpc->done_data;
    buf_free(&rpc->line);
    free(rpc);
    if (done)
        done(data);
}

static void
on_closed(uv_handle_t *h)
{
    struct jsonrpc *rpc = h->data;
    if (--rpc->open_handles == 0)
        free_rpc(rpc);
}

static void
on_hup_closed(uv_handle_t *h)
{
    struct jsonrpc *rpc = h->data;
    close(rpc->hup_fd);
    rpc->hup_fd = -1;
    on_closed(h);
}

static void
finish_close(struct jsonrpc *rpc)
{
    if (rpc->open_handles == 0) {
        free_rpc(rpc);
        return;
    }
    if (rpc->hup_open && !uv_is_closing((uv_handle_t *)&rpc->hup)) {
        rpc->hup_open = false;
        uv_close((uv_handle_t *)&rpc->hup, on_hup_closed);
    }
    int handles = rpc->open_handles;
    bool out_handle = rpc->out_open && rpc->out_file_fd < 0;
    union stream *streams[2] = {rpc->in_open ? &rpc->in : NULL, out_handle ? &rpc->out : NULL};
    rpc->in_open = rpc->out_open = false;
    for (int i = 0; i < 2 && handles > 0; i++) {
        if (streams[i] && !uv_is_closing(&streams[i]->handle))
            uv_close(&streams[i]->handle, on_closed);
    }
}

void
jsonrpc_close(struct jsonrpc *rpc, int force, void (*done)(void *data), void *data)
{
    if (rpc->closing) {
        if (force)
            finish_close(rpc);
        return;
    }
    rpc->done = done;
    rpc->done_data = data;
    jsonrpc_stop_reading(rpc);
    fail_pending(rpc);
    rpc->closing = true;
    if (force || rpc->writes_in_flight == 0 || rpc->out_failed)
        finish_close(rpc);
}
