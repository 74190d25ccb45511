/*
 * jsonrpc on a real loop over socketpairs: framing across partial reads,
 * error answers, dispatch, the table of outgoing requests, and closing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/rpc/jsonrpc.h"

#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct fixture {
    uv_loop_t loop;
    struct jsonrpc *rpc;
    int to_server;         /* we write requests here */
    int from_server;       /* and read answers here */
    json_t *requests;      /* [method, id, params] per request seen */
    json_t *notifications; /* [method, params] */
    int eofs;
    json_t *answers; /* what outgoing requests got back: {result} or {error} */
    bool closed;
    char rx[1 << 16];
    size_t rx_len;
};

static void
on_request(struct jsonrpc *rpc, const json_t *id, const char *method, const json_t *params,
           void *data)
{
    struct fixture *f = data;
    json_array_append_new(f->requests,
                          json_pack("[s,O,O]", method, id, params ? params : json_null()));
    jsonrpc_reply(rpc, id, json_pack("{s:s}", "echo", method));
}

static void
on_notification(struct jsonrpc *rpc, const char *method, const json_t *params, void *data)
{
    struct fixture *f = data;
    json_array_append_new(f->notifications, json_pack("[s]", method));
}

static void
on_eof(struct jsonrpc *rpc, void *data)
{
    struct fixture *f = data;
    f->eofs++;
}

static const struct jsonrpc_handler handler = {on_request, on_notification, on_eof, NULL};

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    int a[2], b[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    f->rpc = jsonrpc_new(&f->loop, &handler, f, 4096);
    assert_non_null(f->rpc);
    assert_int_equal(jsonrpc_start(f->rpc, a[0], b[0]), 0);
    f->to_server = a[1];
    f->from_server = b[1];
    fcntl(f->from_server, F_SETFL, O_NONBLOCK);
    f->requests = json_array();
    f->notifications = json_array();
    f->answers = json_array();
    *state = f;
    return 0;
}

static void
on_closed(void *data)
{
    struct fixture *f = data;
    f->closed = true;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    if (!f->closed) {
        jsonrpc_close(f->rpc, 1, on_closed, f);
        uv_run(&f->loop, UV_RUN_DEFAULT);
    }
    assert_true(f->closed);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    close(f->to_server);
    close(f->from_server);
    json_decref(f->requests);
    json_decref(f->notifications);
    json_decref(f->answers);
    free(f);
    return 0;
}

static void
send_text(struct fixture *f, const char *text)
{
    size_t len = strlen(text);
    assert_int_equal(write(f->to_server, text, len), (ssize_t)len);
}

/* Runs the loop until the server has written n more lines; returns them. */
static json_t *
lines(struct fixture *f, size_t n)
{
    json_t *out = json_array();
    while (json_array_size(out) < n) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        ssize_t r = read(f->from_server, f->rx + f->rx_len, sizeof(f->rx) - f->rx_len);
        if (r > 0)
            f->rx_len += (size_t)r;
        char *nl;
        while ((nl = memchr(f->rx, '\n', f->rx_len))) {
            size_t len = (size_t)(nl - f->rx);
            json_t *msg = json_loadb(f->rx, len, 0, NULL);
            assert_non_null(msg);
            json_array_append_new(out, msg);
            memmove(f->rx, nl + 1, f->rx_len - len - 1);
            f->rx_len -= len + 1;
        }
        if (r <= 0)
            poll(&(struct pollfd){.fd = f->from_server, .events = POLLIN}, 1, 10);
    }
    return out;
}

static int
code_of(const json_t *msg)
{
    return (int)json_integer_value(json_object_get(json_object_get(msg, "error"), "code"));
}

static void
test_partial_reads_and_dispatch(void **state)
{
    struct fixture *f = *state;
    const char *msg = "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"m1\",\"params\":{\"k\":1}}\n"
                      "{\"jsonrpc\":\"2.0\",\"method\":\"n1\"}\n"
                      "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"m2\"}\n";
    /* one byte at a time, running the loop in between */
    for (const char *p = msg; *p; p++) {
        assert_int_equal(write(f->to_server, p, 1), 1);
        uv_run(&f->loop, UV_RUN_NOWAIT);
    }
    json_t *out = lines(f, 2);
    assert_int_equal(json_array_size(f->requests), 2);
    assert_string_equal(json_string_value(json_array_get(json_array_get(f->requests, 0), 0)), "m1");
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_array_get(f->requests, 0), 2), "k")),
        1);
    assert_int_equal(json_array_size(f->notifications), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(out, 0), "id")), "a");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(out, 1), "id")), 7);
    json_decref(out);
}

static void
test_error_answers(void **state)
{
    struct fixture *f = *state;
    send_text(f, "nope\n[]\n{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"x\"}\n"
                 "{\"jsonrpc\":\"2.0\",\"id\":3}\n"
                 "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"x\",\"params\":[1]}\n");
    json_t *out = lines(f, 4);
    assert_int_equal(code_of(json_array_get(out, 0)), JSONRPC_PARSE_ERROR);
    assert_true(json_is_null(json_object_get(json_array_get(out, 0), "id")));
    assert_int_equal(code_of(json_array_get(out, 1)), JSONRPC_INVALID_REQUEST);
    assert_int_equal(code_of(json_array_get(out, 2)), JSONRPC_INVALID_REQUEST);
    /* an "answer" to a request never sent: ignored, nothing written; so the
     * next line out is about id 4 */
    assert_int_equal(code_of(json_array_get(out, 3)), JSONRPC_INVALID_PARAMS);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(out, 3), "id")), 4);
    assert_int_equal(json_array_size(f->requests), 0);
    json_decref(out);
}

static void
test_oversized_is_skipped(void **state)
{
    struct fixture *f = *state;
    char big[10000];
    memset(big, ' ', sizeof(big));
    big[sizeof(big) - 1] = '\0';
    send_text(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"pad\":\"");
    send_text(f, big);
    send_text(f, "\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"after\"}\n");
    json_t *out = lines(f, 2);
    assert_int_equal(code_of(json_array_get(out, 0)), JSONRPC_INVALID_REQUEST);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(out, 1), "id")), 2);
    assert_int_equal(json_array_size(f->requests), 1);
    json_decref(out);
}

static void
on_answer(const json_t *result, const json_t *error, void *data)
{
    struct fixture *f = data;
    json_array_append_new(f->answers, result ? json_pack("{s:O}", "result", result)
                                             : json_pack("{s:O}", "error", error));
}

static void
test_outgoing_requests(void **state)
{
    struct fixture *f = *state;
    long long a = jsonrpc_request(f->rpc, "elicitation/create", json_pack("{s:s}", "message", "?"),
                                  on_answer, f);
    long long b = jsonrpc_request(f->rpc, "other", NULL, on_answer, f);
    long long c = jsonrpc_request(f->rpc, "forgotten", NULL, on_answer, f);
    assert_true(a >= 1 && b > a && c > b);
    json_t *out = lines(f, 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(out, 0), "method")),
                        "elicitation/create");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(out, 0), "id")), a);
    json_decref(out);
    jsonrpc_forget_request(f->rpc, c);
    char text[256];
    /* answered out of order; the forgotten one's answer is dropped */
    snprintf(text, sizeof(text),
             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"action\":\"accept\"}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}\n",
             b, c);
    send_text(f, text);
    while (json_array_size(f->answers) < 1)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(f->answers, 0), "result"), "action")),
                        "accept");
    /* a's answer never comes: closing fails it */
    jsonrpc_close(f->rpc, 0, on_closed, f);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_true(f->closed);
    assert_int_equal(json_array_size(f->answers), 2);
    assert_int_equal(code_of(json_array_get(f->answers, 1)), JSONRPC_INTERNAL_ERROR);
}

static void
test_eof_and_last_line_without_newline(void **state)
{
    struct fixture *f = *state;
    send_text(f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"last\"}");
    shutdown(f->to_server, SHUT_WR);
    json_t *out = lines(f, 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(out, 0), "id")), 9);
    while (f->eofs == 0)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_int_equal(f->eofs, 1);
    json_decref(out);
}

static void
test_slow_reader_pauses_input(void **state)
{
    struct fixture *f = *state;
    /* answers pile up because nobody reads them */
    size_t big = 1024 * 1024;
    char *text = malloc(big + 1);
    memset(text, 'x', big);
    text[big] = '\0';
    json_t *id = json_integer(1);
    while (jsonrpc_pending_output(f->rpc) <= JSONRPC_WRITE_HIGH_WATER)
        assert_int_equal(jsonrpc_reply(f->rpc, id, json_pack("{s:s}", "blob", text)), 0);
    json_decref(id);
    free(text);
    /* a request arrives while the output is backed up: it waits */
    send_text(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"later\"}\n");
    for (int i = 0; i < 20; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(json_array_size(f->requests), 0);
    /* the client catches up: input resumes, the request is handled */
    char sink[65536];
    while (json_array_size(f->requests) == 0) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        if (read(f->from_server, sink, sizeof(sink)) <= 0)
            poll(&(struct pollfd){.fd = f->from_server, .events = POLLIN}, 1, 10);
    }
    assert_string_equal(json_string_value(json_array_get(json_array_get(f->requests, 0), 0)),
                        "later");
}

/* The next line the server writes, without its newline (caller frees). */
static char *
raw_line(struct fixture *f)
{
    char *nl;
    while (!(nl = memchr(f->rx, '\n', f->rx_len))) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        ssize_t r = read(f->from_server, f->rx + f->rx_len, sizeof(f->rx) - f->rx_len);
        if (r > 0)
            f->rx_len += (size_t)r;
        else
            poll(&(struct pollfd){.fd = f->from_server, .events = POLLIN}, 1, 10);
    }
    size_t len = (size_t)(nl - f->rx);
    char *line = strndup(f->rx, len);
    assert_non_null(line);
    memmove(f->rx, nl + 1, f->rx_len - len - 1);
    f->rx_len -= len + 1;
    return line;
}

/* A result given as text is sent as jsonrpc_reply sends it as a value. */
static void
check_reply_text(struct fixture *f, json_t *id, const char *result)
{
    json_t *value = json_loads(result, 0, NULL);
    assert_non_null(value);
    assert_int_equal(jsonrpc_reply(f->rpc, id, value), 0);
    char *text = strdup(result);
    assert_non_null(text);
    assert_int_equal(jsonrpc_reply_text(f->rpc, id, text, strlen(text)), 0);
    char *want = raw_line(f);
    char *got = raw_line(f);
    assert_string_equal(got, want);
    free(want);
    free(got);
    json_decref(id);
}

static void
test_reply_text(void **state)
{
    struct fixture *f = *state;
    const char *result = "{\"content\":[{\"type\":\"text\",\"text\":\"a\\\"b\\n\\u0001\"}],"
                         "\"isError\":false,\"n\":-12}";
    check_reply_text(f, json_integer(7), result);
    check_reply_text(f, json_string("id \"quoted\"\n"), result);
    check_reply_text(f, NULL, "[]");
    /* a large one goes out whole */
    size_t big = 3 * sizeof(f->rx);
    char *blob = malloc(big + 3);
    assert_non_null(blob);
    blob[0] = '"';
    memset(blob + 1, 'y', big);
    memcpy(blob + 1 + big, "\"", 2);
    json_t *id = json_integer(8);
    assert_int_equal(jsonrpc_reply_text(f->rpc, id, blob, big + 2), 0);
    json_decref(id);
    size_t seen = 0;
    bool ended = false;
    while (!ended) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        char chunk[4096];
        ssize_t r = read(f->from_server, chunk, sizeof(chunk));
        if (r <= 0) {
            poll(&(struct pollfd){.fd = f->from_server, .events = POLLIN}, 1, 10);
            continue;
        }
        seen += (size_t)r;
        ended = chunk[r - 1] == '\n';
    }
    assert_int_equal(seen, strlen("{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":") + big + 2 + 2);
    assert_int_equal(jsonrpc_pending_output(f->rpc), 0);
}

static void
test_reply_text_to_a_file(void **state)
{
    /* output to a regular file is written at once, in the same form */
    char path[] = "/tmp/execgate-jsonrpc-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    int in[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in), 0);
    struct fixture f = {0};
    assert_int_equal(uv_loop_init(&f.loop), 0);
    f.rpc = jsonrpc_new(&f.loop, &handler, &f, 4096);
    assert_non_null(f.rpc);
    assert_int_equal(jsonrpc_start(f.rpc, in[0], fd), 0);
    json_t *id = json_integer(3);
    assert_int_equal(jsonrpc_reply(f.rpc, id, json_pack("{s:i}", "x", 1)), 0);
    char *text = strdup("{\"x\":1}");
    assert_non_null(text);
    assert_int_equal(jsonrpc_reply_text(f.rpc, id, text, strlen(text)), 0);
    json_decref(id);
    char got[256];
    ssize_t n = pread(fd, got, sizeof(got) - 1, 0);
    assert_true(n > 0);
    got[n] = '\0';
    assert_string_equal(got, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"x\":1}}\n"
                             "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"x\":1}}\n");
    jsonrpc_close(f.rpc, 1, on_closed, &f);
    uv_run(&f.loop, UV_RUN_DEFAULT);
    assert_true(f.closed);
    assert_int_equal(uv_loop_close(&f.loop), 0);
    close(in[1]);
    close(fd);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_partial_reads_and_dispatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversized_is_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outgoing_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eof_and_last_line_without_newline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_reader_pauses_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reply_text, setup, teardown),
        cmocka_unit_test(test_reply_text_to_a_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
