/*
 * http_conn: the server side of one HTTP/1.1 connection on the libuv
 * loop, parsed by Debian's http-parser.
 *
 * Requests are read one at a time: a request's line, headers and body are
 * assembled (within HTTP_CONN_MAX_HEADER_BYTES and the body limit given)
 * and handed to the handler, which owes exactly one response: a whole one
 * (http_conn_respond) or a chunked stream (http_conn_stream_begin, _write,
 * _end).  Bytes that arrive meanwhile wait (up to
 * HTTP_CONN_MAX_PIPELINED) and are parsed after the response.  What cannot
 * be parsed is answered 400, headers too large 431, a body too large 413,
 * and the connection closes.  A peer that hangs up closes it too, with
 * whatever response was owed.  A request's headers must arrive within a
 * deadline (header_ms): counted from the connection's start or its last
 * answer, or, once the connection is trusted (http_conn_trust: it has
 * authenticated), from the request's first byte, so that an idle trusted
 * connection stays open; when it passes, 408 and the connection closes.
 */
#ifndef EXECGATE_SERVER_HTTP_CONN_H
#define EXECGATE_SERVER_HTTP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* Request line and headers together, in bytes; more is answered 431. */
#define HTTP_CONN_MAX_HEADER_BYTES (16u * 1024)
/* Headers in one request; more is answered 431. */
#define HTTP_CONN_MAX_HEADERS 64u
/* Bytes of the next requests kept while one is answered; beyond this the
 * connection is not read until the answer is out. */
#define HTTP_CONN_MAX_PIPELINED (64u * 1024)

struct http_conn;

struct http_header {
    char *name; /* lower case */
    char *value;
};

struct http_request {
    const char *method; /* "GET", "POST"... (static) */
    char *url;
    struct http_header *headers;
    size_t n_headers;
    char *body; /* NUL-terminated; body_len bytes (NULL: none) */
    size_t body_len;
};

struct http_conn_handler {
    /* A complete request (borrowed until the response ends). */
    void (*on_request)(struct http_conn *c, const struct http_request *r, void *data);
    /* The connection closed (peer, error or http_conn_close); c is freed
     * right after.  Called once. */
    void (*on_close)(struct http_conn *c, void *data);
    /* Queued bytes were taken by the kernel (http_conn_queued fell).
     * Optional (NULL). */
    void (*on_written)(struct http_conn *c, void *data);
};

/*
 * Accepts a connection waiting on listener (a listening TCP or Unix
 * socket stream) and starts reading it.  Bodies larger than max_body are
 * refused; headers that take longer than header_ms (0: no limit) are
 * answered 408.  A peer that takes none of the bytes written to it for
 * write_ms (0: no limit) is closed and the bytes freed, also after
 * http_conn_close.  Returns 0 with *out, or a negative libuv error (nothing
 * to close then).
 */
int http_conn_accept(uv_stream_t *listener, size_t max_body, uint64_t header_ms, uint64_t write_ms,
                     const struct http_conn_handler *h, void *data, struct http_conn **out);

/* c has authenticated: between requests it may wait as long as it likes
 * (a request begun still has header_ms for its headers).  Cannot fail. */
void http_conn_trust(struct http_conn *c);

/* The connection's socket (borrowed), to ask the kernel about its peer.
 * Cannot fail. */
int http_conn_fd(const struct http_conn *c);

/* The value of header name (lower case), or NULL.  Cannot fail. */
const char *http_request_header(const struct http_request *r, const char *name);

/*
 * The whole response to the current request: status, its reason phrase,
 * content_type (NULL: no body type), extra header lines (each ending in
 * "\r\n"; NULL: none) and the body bufs[0..n) (n <= 4).  Takes own0 and own1
 * (malloc'd or NULL: what the body points into), also on failure.
 * Returns 0, or -1 when the connection is gone.
 */
int http_conn_respond(struct http_conn *c, int status, const char *reason, const char *content_type,
                      const char *headers, const uv_buf_t *bufs, unsigned n, char *own0,
                      char *own1);

/* A chunked 200 response begins (Server-Sent Events: text/event-stream). */
int http_conn_stream_begin(struct http_conn *c, const char *content_type, const char *headers);

/* One chunk of bufs[0..n) (n <= 8); ownership as for http_conn_respond. */
int http_conn_stream_write(struct http_conn *c, const uv_buf_t *bufs, unsigned n, char *own0,
                           char *own1);

/* The stream ends; the next request may be read. */
int http_conn_stream_end(struct http_conn *c);

/* Whether the current request's response has begun as a stream. */
bool http_conn_streaming(const struct http_conn *c);

/* Bytes written and not yet taken by the kernel. */
size_t http_conn_queued(const struct http_conn *c);

/* Closes c once what is queued is written (on_close then runs).
 * Idempotent. */
void http_conn_close(struct http_conn *c);

/* Stops serving requests: c closes after the current response, or now
 * when none is owed.  For a server shutting down. */
void http_conn_finish(struct http_conn *c);

#endif
