/*
 * libFuzzer target for one connection of the Streamable HTTP transport
 * (http_conn), through its real entry point: a Unix socket listener on a
 * loop of its own, http_conn_accept, and the bytes a client sends on a
 * connected socket, then the end of its stream.  The first byte of an
 * input chooses how the handler answers (so that whole responses, chunked
 * streams, responses a turn late while pipelined bytes wait, closing and
 * finishing all meet the parser's states) and the body limit; the rest is
 * the client's bytes.  Whatever arrives, the connection must answer or
 * close, and free everything (LeakSanitizer) once the loop runs dry.
 * Nothing leaves the process: the socket lives in a private temporary
 * directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include "fuzz_peer.h"
#include "server/mcp/http_conn.h"
#include "common/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum answer {
    ANSWER_WHOLE,    /* http_conn_respond at once */
    ANSWER_STREAM,   /* stream_begin, two writes, end at once */
    ANSWER_LATER,    /* a whole response on a later turn (pipelined bytes wait) */
    ANSWER_STREAMED, /* stream_begin at once, a write and the end a turn later */
    ANSWER_CLOSE,    /* http_conn_close instead of an answer */
    ANSWER_FINISH,   /* http_conn_finish, then a whole response */
    ANSWER_MIXED,    /* by request: alternately whole and later */
    ANSWER_COUNT,
};

struct fuzz_conn {
    struct http_conn *c; /* NULL once on_close ran */
    enum answer mode;
    unsigned requests;
    bool owed_later; /* a response is owed on a later turn */
    bool stream_open;
    uv_idle_t later;
};

static uv_loop_t loop;
static uv_pipe_t listener;
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static char sock_dir[64];
static struct fuzz_conn *current;
static size_t max_body;

static void
answer_whole(struct fuzz_conn *f, const struct http_request *r)
{
    /* echo the method and URL: the response's size depends on the input */
    char *body = NULL;
    if (asprintf(&body, "%s %s %zu\n", r && r->method ? r->method : "?", r ? r->url : "?",
                 r ? r->body_len : 0) < 0)
        body = NULL;
    uv_buf_t b = uv_buf_init(body ? body : (char *)"", body ? (unsigned)strlen(body) : 0);
    http_conn_respond(f->c, 200, "OK", "text/plain", "X-Fuzz: 1\r\n", &b, 1, body, NULL);
}

static void
on_later(uv_idle_t *h)
{
    struct fuzz_conn *f = h->data;
    uv_idle_stop(h);
    if (!f->c || !f->owed_later)
        return;
    f->owed_later = false;
    if (f->stream_open) {
        f->stream_open = false;
        uv_buf_t b = uv_buf_init((char *)"data: late\n\n", 12);
        http_conn_stream_write(f->c, &b, 1, NULL, NULL);
        if (f->c)
            http_conn_stream_end(f->c);
    } else {
        answer_whole(f, NULL);
    }
}

static void
on_request(struct http_conn *c, const struct http_request *r, void *data)
{
    struct fuzz_conn *f = data;
    unsigned n = f->requests++;
    /* read what a real handler reads */
    (void)http_request_header(r, "content-type");
    (void)http_request_header(r, "mcp-session-id");
    enum answer mode = f->mode == ANSWER_MIXED ? (n % 2 ? ANSWER_LATER : ANSWER_WHOLE) : f->mode;
    switch (mode) {
    case ANSWER_WHOLE:
        answer_whole(f, r);
        break;
    case ANSWER_STREAM: {
        if (http_conn_stream_begin(c, "text/event-stream", NULL) < 0)
            break;
        char *ev = strdup("data: {}\n\n");
        uv_buf_t b = uv_buf_init(ev ? ev : (char *)"", ev ? (unsigned)strlen(ev) : 0);
        http_conn_stream_write(c, &b, 1, ev, NULL);
        uv_buf_t parts[2] = {uv_buf_init((char *)"data: ", 6), uv_buf_init((char *)"x\n\n", 3)};
        http_conn_stream_write(c, parts, 2, NULL, NULL);
        (void)http_conn_streaming(c);
        (void)http_conn_queued(c);
        http_conn_stream_end(c);
        break;
    }
    case ANSWER_STREAMED:
        if (http_conn_stream_begin(c, "text/event-stream", "X-Fuzz: 2\r\n") < 0)
            break;
        /* the rest comes a turn later */
        f->stream_open = true;
        f->owed_later = true;
        uv_idle_start(&f->later, on_later);
        break;
    case ANSWER_LATER:
        f->owed_later = true;
        uv_idle_start(&f->later, on_later);
        break;
    case ANSWER_CLOSE:
        http_conn_close(c);
        break;
    case ANSWER_FINISH:
        http_conn_finish(c);
        answer_whole(f, r);
        break;
    case ANSWER_MIXED:
    case ANSWER_COUNT:
        break;
    }
}

static void
later_closed(uv_handle_t *h)
{
    free(h->data);
}

static void
on_close(struct http_conn *c, void *data)
{
    struct fuzz_conn *f = data;
    (void)c;
    f->c = NULL;
    if (current == f)
        current = NULL;
    uv_close((uv_handle_t *)&f->later, later_closed);
}

static const struct http_conn_handler handler = {.on_request = on_request, .on_close = on_close};

static enum answer next_mode;

static void
on_connection(uv_stream_t *server, int status)
{
    if (status < 0)
        return;
    struct fuzz_conn *f = calloc(1, sizeof(*f));
    if (!f)
        abort();
    f->mode = next_mode;
    uv_idle_init(&loop, &f->later);
    f->later.data = f;
    if (http_conn_accept(server, max_body, 0, 0, &handler, f, &f->c) < 0) {
        uv_close((uv_handle_t *)&f->later, later_closed);
        return;
    }
    current = f;
}

/* The socket's name is needed for each input's connect; it goes at exit
 * (a crash leaves it behind in /tmp, with nothing listening). */
static void
remove_socket(void)
{
    unlink(sock_path);
    rmdir(sock_dir);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_set_level(LOG_LEVEL_ERROR);
    snprintf(sock_dir, sizeof(sock_dir), "/tmp/execgate-fuzz-http-XXXXXX");
    if (!mkdtemp(sock_dir))
        abort();
    snprintf(sock_path, sizeof(sock_path), "%s/s", sock_dir);
    if (uv_loop_init(&loop) != 0 || uv_pipe_init(&loop, &listener, 0) != 0 ||
        uv_pipe_bind(&listener, sock_path) != 0 ||
        uv_listen((uv_stream_t *)&listener, 16, on_connection) != 0)
        abort();
    atexit(remove_socket);
    return 0;
}

static int
connect_client(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, sock_path, sizeof(a.sun_path));
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
        abort();
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

static void
count_handle(uv_handle_t *h, void *arg)
{
    if (h != (uv_handle_t *)&listener)
        (*(int *)arg)++;
}

static int
handles_besides_listener(void)
{
    int n = 0;
    uv_walk(&loop, count_handle, &n);
    return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t cfg = size > 0 ? data[0] : 0;
    if (size > 0) {
        data++;
        size--;
    }
    next_mode = (enum answer)((cfg & 0x0f) % ANSWER_COUNT);
    /* a small limit makes 413 reachable; a roomy one lets bodies through */
    max_body = (cfg & 0x10) ? 16 : 1024 * 1024;
    bool half_close = !(cfg & 0x20); /* else the client hangs up only at the end */
    int peer = connect_client();
    /* the listener accepts on the loop's next turn */
    for (int i = 0; i < 100 && !current; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    if (!current)
        abort();
    /* feed what the connection takes, reading its answers, until it closes
     * (EOF at the client) or the input is all in and nothing moves for a
     * few rounds (a keep-alive connection waiting for the next request) */
    struct fuzz_peer fp = {.loop = &loop, .fd = peer, .half_close = half_close, .quiet_limit = 3};
    fuzz_peer_talk(&fp, data, size);
    close(peer);
    /* the hang-up closes the connection: run the loop until the close
     * callbacks have freed it, leaving the listener alone */
    for (int i = 0; i < 10000 && handles_besides_listener() > 0; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    if (handles_besides_listener() > 0)
        abort(); /* a connection that outlives its peer */
    return 0;
}
