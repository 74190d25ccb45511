/*
 * jsonrpc: JSON-RPC 2.0 over newline-delimited stdio, on a libuv loop.
 *
 * Splits the input into lines (partial reads, a maximum message size),
 * answers malformed input itself (-32700, -32600) and hands well-formed
 * requests and notifications to a handler.  Writes are queued through libuv;
 * while more than JSONRPC_WRITE_HIGH_WATER bytes wait for a slow client, the
 * input is not read, which bounds the memory of answers; the client's
 * hang-up is still noticed then.  Requests that the
 * server sends get their own integer ids and wait in a table for the
 * client's answer.
 */
#ifndef EXECGATE_SERVER_JSONRPC_H
#define EXECGATE_SERVER_JSONRPC_H

#include <jansson.h>
#include <stddef.h>
#include <uv.h>

#define JSONRPC_PARSE_ERROR      -32700
#define JSONRPC_INVALID_REQUEST  -32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS   -32602
#define JSONRPC_INTERNAL_ERROR   -32603

/* Default largest message, in bytes, without its newline. */
#define JSONRPC_DEFAULT_MAX_MESSAGE (16u * 1024 * 1024)
/* Input is paused while this many bytes of output wait to be written. */
#define JSONRPC_WRITE_HIGH_WATER (8u * 1024 * 1024)

struct jsonrpc;

struct jsonrpc_handler {
    /* A request: id (string or integer) and params (an object, or NULL when
     * absent) are borrowed for the duration of the call. */
    void (*on_request)(struct jsonrpc *rpc, const json_t *id, const char *method,
                       const json_t *params, void *data);
    /* A notification; params as for on_request. */
    void (*on_notification)(struct jsonrpc *rpc, const char *method, const json_t *params,
                            void *data);
    /* The input ended (EOF or read error), or the client closed its end
     * while input was paused for a slow reader.  Called once. */
    void (*on_eof)(struct jsonrpc *rpc, void *data);
    /* Some queued output was written (may be NULL). */
    void (*on_written)(struct jsonrpc *rpc, void *data);
};

/*
 * The answer to a request this side sent: exactly one of result and error is
 * non-NULL (both borrowed).  When the transport closes first, error is a
 * synthetic {code:-32603, message:"connection closed"}.
 */
typedef void (*jsonrpc_response_cb)(const json_t *result, const json_t *error, void *data);

/*
 * A transport on loop with handler h (copied) and its data.  max_message is
 * the largest accepted line.  Nothing is read until jsonrpc_start.  Returns
 * NULL when out of memory.
 */
struct jsonrpc *jsonrpc_new(uv_loop_t *loop, const struct jsonrpc_handler *h, void *data,
                            size_t max_message);

/*
 * Starts reading in_fd and makes out_fd the output (pipes, sockets or
 * terminals; both are set non-blocking).  Returns 0 or a negative libuv
 * error; on error nothing was started and jsonrpc_close still applies.
 */
int jsonrpc_start(struct jsonrpc *rpc, int in_fd, int out_fd);

/* One outgoing message for a sink: bufs[0..n), the last ending in the
 * message's newline.  The sink takes own[0] and own[1] (malloc'd or NULL:
 * what bufs point into) and frees them once the bytes are written.
 * answers is the id a response answers (borrowed; NULL for a request or a
 * notification), method and params those of a request or notification
 * (borrowed; NULL otherwise): what a transport routes the message by. */
struct jsonrpc_out {
    const uv_buf_t *bufs;
    unsigned n;
    char *own[2];
    const json_t *answers;
    const char *method;
    const json_t *params;
};

/* Returns 0, or -1 when the message was dropped (own is then freed too). */
typedef int (*jsonrpc_sink_fn)(void *data, struct jsonrpc_out *m);

/*
 * Output through sink(data, message) instead of a stream: for a transport
 * that frames and routes messages itself (mcp_http: HTTP responses and SSE
 * streams), which feeds input with jsonrpc_feed.  Until jsonrpc_close;
 * cannot fail.  Instead of jsonrpc_start.
 */
void jsonrpc_start_sink(struct jsonrpc *rpc, jsonrpc_sink_fn sink, void *data);

/*
 * Processes len bytes of input as if read: complete lines are dispatched,
 * the rest is kept for later.  jsonrpc_start calls this itself; it is public
 * for the fuzz target, which runs without streams (output is then
 * serialised and dropped).  Cannot fail.
 */
void jsonrpc_feed(struct jsonrpc *rpc, const char *buf, size_t len);

/* Sends {"result": result} for id.  Takes result; a NULL result (a failed
 * allocation upstream) sends -32603 instead.  Returns 0, or -1 when the
 * result could not be sent or the output is gone. */
int jsonrpc_reply(struct jsonrpc *rpc, const json_t *id, json_t *result);

/* Sends {"result": result} for id, result being the text of one JSON value
 * (len bytes, taken, also on failure; the caller vouches for it): a large
 * result is written as it is, without being parsed or serialised again.
 * Returns as jsonrpc_reply. */
int jsonrpc_reply_text(struct jsonrpc *rpc, const json_t *id, char *result, size_t len);

/* Sends an error answer for id (NULL means null); message is copied. Returns
 * as jsonrpc_reply. */
int jsonrpc_reply_error(struct jsonrpc *rpc, const json_t *id, int code, const char *message);

/* Sends a notification; takes params (may be NULL).  Returns as jsonrpc_reply. */
int jsonrpc_notify(struct jsonrpc *rpc, const char *method, json_t *params);

/*
 * Sends a request and remembers it: cb runs once with the answer, or with a
 * synthetic error when the transport closes first.  Takes params.  Returns
 * the request's id (>= 1), or -1 when it could not be sent (cb is then not
 * called).
 */
long long jsonrpc_request(struct jsonrpc *rpc, const char *method, json_t *params,
                          jsonrpc_response_cb cb, void *data);

/* Forgets the pending request id without calling its callback; an answer
 * that arrives later is logged and dropped. Unknown ids are ignored. */
void jsonrpc_forget_request(struct jsonrpc *rpc, long long id);

/* Stops taking input (idempotent); output still works. */
void jsonrpc_stop_reading(struct jsonrpc *rpc);

/* Number of bytes queued for output and not yet written. */
size_t jsonrpc_pending_output(const struct jsonrpc *rpc);

/*
 * Closes the transport once queued output has been written (or at once when
 * force is set), fails pending requests, and frees rpc in its last close
 * callback, after which done(data) runs (done may be NULL).  Calling it again
 * before done ran, with force set, stops waiting for the output (a client
 * that never reads); done and data of the first call stay.
 */
void jsonrpc_close(struct jsonrpc *rpc, int force, void (*done)(void *data), void *data);

#endif
