/*
 * http_session: a test client of the server's Streamable HTTP listener
 * (--listen), over a Unix socket or TCP, on plain blocking HTTP/1.1
 * connections: requests written whole, responses read whole (a body of
 * Content-Length bytes, or chunks up to the last), the JSON-RPC answer
 * with a given id found in a plain JSON body or in an SSE event; and a
 * session on one connection (initialize and its Mcp-Session-Id, the
 * sandbox state, pings, shell calls, DELETE).
 *
 * For tests only: each wait is bounded by a safety limit that only keeps a
 * broken server from hanging the suite (never what a test asserts), and
 * any failure fails the running cmocka test.
 */
#ifndef EXECGATE_TESTS_HTTP_SESSION_H
#define EXECGATE_TESTS_HTTP_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Safety limit for one wait, in milliseconds. */
#define HTTP_SESSION_WAIT_MS 60000

/* A stream socket (close-on-exec) connected to the Unix socket at path,
 * or to 127.0.0.1:port. */
int http_session_connect_unix(const char *path);
int http_session_connect_tcp(unsigned port);

/* Sends all of text on fd. */
void http_session_send_all(int fd, const char *text);

/* Reads into *buf (grown, *len bytes used of *cap, NUL-terminated) what
 * comes within the safety limit.  Returns 1 when bytes came, 0 at the
 * peer's end (a reset counts as one). */
int http_session_read_some(int fd, char **buf, size_t *len, size_t *cap);

/* One whole response on fd (head and body, chunks as they came), or what
 * came before the server closed ("" when nothing).  Caller frees. */
char *http_session_read_response(int fd);

/* The status of the response resp, 0 when it has no status line. */
int http_session_status(const char *resp);

/* Sends a POST of body (JSON) to /mcp on fd with the bearer token and
 * session id (each NULL: none); its response is left to read. */
void http_session_post_send(int fd, const char *token, const char *sid, const char *body);

/* The same, then its response.  Caller frees. */
char *http_session_post(int fd, const char *token, const char *sid, const char *body);

/* The JSON-RPC answer to id in resp: the SSE event that holds it, or
 * else the body.  Caller owns it. */
json_t *http_session_answer(const char *resp, long long id);

/* An initialize request (id 1), as JSON text. */
extern const char http_session_initialize_body[];

/* The arguments of a shell tool call. */
struct http_session_call {
    const char *command;
    const char *workdir;
    bool login;
    long long timeout_ms; /* 0: none given (the server's default) */
    bool progress;        /* with a progress token ("tick") */
};

/* The tools/call request id for call, as JSON text.  Caller frees. */
char *http_session_call_body(long long id, const struct http_session_call *call);

/* A session: its connection, token and id; the id of its next request. */
struct http_session {
    int fd;            /* owned */
    const char *token; /* borrowed; NULL: none sent */
    char *sid;         /* owned */
    long long next_id;
};

/* Opens a session on fd (taken) with token (borrowed, NULL: none):
 * initialize, the initialized notification, then the sandbox state
 * update with policy (JSON text) in cwd, each answered as it must be. */
void http_session_open(struct http_session *se, int fd, const char *token, const char *policy,
                       const char *cwd);

/* A ping on the session's connection: whether it was answered (200). */
bool http_session_ping(struct http_session *se);

/* Sends a shell call on the session's connection; its id. */
long long http_session_call_send(struct http_session *se, const struct http_session_call *call);

/* The output of the shell call id sent on the session's connection (its
 * response read now).  Caller frees. */
char *http_session_call_output(struct http_session *se, long long id);

/* A shell call on the session's connection; its output.  Caller frees. */
char *http_session_call(struct http_session *se, const struct http_session_call *call);

/* Ends the session (DELETE on its connection); the status. */
int http_session_delete(struct http_session *se);

/* Closes the session's connection and frees what it owns. */
void http_session_close(struct http_session *se);

#endif
