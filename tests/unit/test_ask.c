/*
 * ask over a real jsonrpc on a loop, the client played by hand on the
 * other end of socketpairs: what each answer means (one table for every
 * asker), one question of a line out at a time, a withdrawn question
 * closed in the client, and an abort run before the asker is told.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/decide/ask.h"
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
    struct ask_peer peer;
    struct ask_line *line;
    int to_server, from_server;
    char rx[1 << 16];
    size_t rx_len;
    char *aborted; /* on_abort's why */
    int aborts;
    bool closed;
};

/* One question's asker: what it was told. */
struct asker {
    const char *take; /* take_always's answer */
    int asked;        /* params built */
    char *last_note;
    int told;
    enum ask_kind kind;
    enum ask_refusal refusal;
    char *reason;
    bool had_content;
};

static void
on_request(struct jsonrpc *rpc, const json_t *id, const char *method, const json_t *params,
           void *data)
{
    (void)method, (void)params, (void)data;
    jsonrpc_reply(rpc, id, json_object());
}

static void
on_notification(struct jsonrpc *rpc, const char *method, const json_t *params, void *data)
{
    (void)rpc, (void)method, (void)params, (void)data;
}

static const struct jsonrpc_handler handler = {on_request, on_notification, NULL, NULL};

static void
on_abort(void *data, const char *why)
{
    struct fixture *f = data;
    f->aborts++;
    free(f->aborted);
    f->aborted = strdup(why);
}

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    int a[2], b[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    f->rpc = jsonrpc_new(&f->loop, &handler, f, 1 << 16);
    assert_non_null(f->rpc);
    assert_int_equal(jsonrpc_start(f->rpc, a[0], b[0]), 0);
    f->to_server = a[1];
    f->from_server = b[1];
    fcntl(f->from_server, F_SETFL, O_NONBLOCK);
    f->peer = (struct ask_peer){.rpc = f->rpc, .elicitation = true};
    f->line = ask_line_new(on_abort, f);
    assert_non_null(f->line);
    ask_line_set_peer(f->line, &f->peer);
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
    ask_line_unref(f->line);
    jsonrpc_close(f->rpc, 1, on_closed, f);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_true(f->closed);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    close(f->to_server);
    close(f->from_server);
    free(f->aborted);
    free(f);
    return 0;
}

/* The next line the server wrote, running the loop until it comes. */
static json_t *
next_message(struct fixture *f)
{
    for (;;) {
        char *nl = memchr(f->rx, '\n', f->rx_len);
        if (nl) {
            size_t len = (size_t)(nl - f->rx);
            json_t *msg = json_loadb(f->rx, len, 0, NULL);
            assert_non_null(msg);
            memmove(f->rx, nl + 1, f->rx_len - len - 1);
            f->rx_len -= len + 1;
            return msg;
        }
        uv_run(&f->loop, UV_RUN_NOWAIT);
        ssize_t r = read(f->from_server, f->rx + f->rx_len, sizeof(f->rx) - f->rx_len);
        if (r > 0)
            f->rx_len += (size_t)r;
        else
            assert_int_equal(
                poll(&(struct pollfd){.fd = f->from_server, .events = POLLIN}, 1, 5000), 1);
    }
}

/* Whether the server wrote nothing more (after running the loop). */
static bool
nothing_written(struct fixture *f)
{
    uv_run(&f->loop, UV_RUN_NOWAIT);
    ssize_t r = read(f->from_server, f->rx + f->rx_len, sizeof(f->rx) - f->rx_len);
    if (r > 0)
        f->rx_len += (size_t)r;
    return f->rx_len == 0;
}

/* Answers request with the JSON text body ("result":... or "error":...)
 * and runs the loop until the asker was told, or was asked again. */
static void
reply(struct fixture *f, const json_t *request, const char *body, struct asker *a)
{
    char *line = NULL;
    assert_true(asprintf(&line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,%s}\n",
                         (long long)json_integer_value(json_object_get(request, "id")), body) > 0);
    assert_int_equal(write(f->to_server, line, strlen(line)), (ssize_t)strlen(line));
    free(line);
    int told = a->told, asked = a->asked;
    while (a->told == told && a->asked == asked)
        uv_run(&f->loop, UV_RUN_ONCE);
}

static json_t *
params(void *data, const char *note)
{
    struct asker *a = data;
    a->asked++;
    free(a->last_note);
    a->last_note = note ? strdup(note) : NULL;
    return json_pack("{s:s, s:{}}", "message", "Allow?", "requestedSchema");
}

static const char *
take_always(void *data, const json_t *decision)
{
    (void)decision;
    return ((struct asker *)data)->take;
}

static void
done(void *data, const struct ask_answer *ans)
{
    struct asker *a = data;
    a->told++;
    a->kind = ans->kind;
    a->refusal = ans->refusal;
    free(a->reason);
    a->reason = ans->reason ? strdup(ans->reason) : NULL;
    a->had_content = ans->content != NULL;
}

static const struct ask_how how = {.params = params, .take_always = take_always, .done = done};
static const struct ask_how how_no_always = {.params = params, .done = done};
static const struct ask_how how_explicit = {
    .params = params, .done = done, .explicit_approval = true};

static void
asker_release(struct asker *a)
{
    free(a->last_note);
    free(a->reason);
}

/* The table of ask.h: one answer each, what the asker is told. */
static void
test_meaning_of_each_answer(void **state)
{
    struct fixture *f = *state;
    static const struct {
        const char *body;
        enum ask_kind kind;
        const char *reason; /* NULL: none */
        enum ask_refusal refusal;
    } rows[] = {
        {"\"result\":{\"action\":\"accept\"}", ASK_APPROVED, NULL, ASK_REFUSED_NONE},
        {"\"result\":{\"action\":\"accept\",\"content\":{\"decision\":\"approved\"}}", ASK_APPROVED,
         NULL, ASK_REFUSED_NONE},
        {"\"result\":{\"action\":\"accept\",\"content\":{\"decision\":\"approved_for_session\"}}",
         ASK_APPROVED_FOR_SESSION, NULL, ASK_REFUSED_NONE},
        {"\"result\":{\"action\":\"accept\",\"content\":{\"decision\":"
         "\"approved_execpolicy_amendment\"}}",
         ASK_ALWAYS, NULL, ASK_REFUSED_NONE},
        {"\"result\":{\"action\":\"accept\",\"content\":{\"decision\":\"denied\",\"reason\":"
         "\" not\\nnow\"}}",
         ASK_DENIED, "User denied execution, saying: not\\nnow", ASK_REFUSED_IN_FORM},
        {"\"result\":{\"action\":\"accept\",\"content\":{\"decision\":\"maybe\"}}", ASK_DENIED,
         "User declined execution", ASK_REFUSED_IN_FORM},
        {"\"result\":{\"action\":\"accept\",\"content\":{\"decision\":{\"other\":1}}}", ASK_DENIED,
         "User declined execution", ASK_REFUSED_IN_FORM},
        {"\"result\":{\"action\":\"decline\"}", ASK_DENIED, "User declined execution",
         ASK_REFUSED_DECLINED},
        {"\"result\":{\"action\":\"cancel\"}", ASK_DENIED, "User cancelled execution",
         ASK_REFUSED_CANCELLED},
        {"\"result\":{}", ASK_DENIED, "User cancelled execution", ASK_REFUSED_CANCELLED},
        {"\"error\":{\"code\":-32601,\"message\":\"no form\"}", ASK_DENIED,
         "The MCP client could not be asked for approval: no form", ASK_REFUSED_FAILED},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct asker a = {0};
        assert_non_null(ask_put(f->line, &how, &a));
        json_t *req = next_message(f);
        assert_string_equal(json_string_value(json_object_get(req, "method")),
                            "elicitation/create");
        reply(f, req, rows[i].body, &a);
        json_decref(req);
        assert_int_equal(a.told, 1);
        assert_int_equal(a.kind, rows[i].kind);
        assert_int_equal(a.refusal, rows[i].refusal);
        if (rows[i].reason)
            assert_string_equal(a.reason, rows[i].reason);
        else
            assert_null(a.reason);
        asker_release(&a);
    }
    assert_int_equal(f->aborts, 0);
}

/* A question that needs an explicit approval (leaving the sandbox): a
 * form accepted blank and an approval for the session are refusals in
 * the form; approved approves; the rest mean what they mean for all. */
static void
test_explicit_approval(void **state)
{
    struct fixture *f = *state;
    static const struct {
        const char *body;
        enum ask_kind kind;
        enum ask_refusal refusal;
    } rows[] = {
        {"\"result\":{\"action\":\"accept\"}", ASK_DENIED, ASK_REFUSED_IN_FORM},
        {"\"result\":{\"action\":\"accept\",\"content\":{\"decision\":\"approved_for_session\"}}",
         ASK_DENIED, ASK_REFUSED_IN_FORM},
        {"\"result\":{\"action\":\"accept\",\"content\":{\"decision\":\"approved\"}}", ASK_APPROVED,
         ASK_REFUSED_NONE},
        {"\"result\":{\"action\":\"decline\"}", ASK_DENIED, ASK_REFUSED_DECLINED},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct asker a = {0};
        assert_non_null(ask_put(f->line, &how_explicit, &a));
        json_t *req = next_message(f);
        reply(f, req, rows[i].body, &a);
        json_decref(req);
        assert_int_equal(a.told, 1);
        assert_int_equal(a.kind, rows[i].kind);
        assert_int_equal(a.refusal, rows[i].refusal);
        asker_release(&a);
    }
}

/* abort stops the call before the asker hears of it, once, whichever
 * asker's question it was. */
static void
test_abort_stops_the_call_first(void **state)
{
    struct fixture *f = *state;
    struct asker a = {0}, b = {0};
    assert_non_null(ask_put(f->line, &how_no_always, &a));
    json_t *req = next_message(f);
    reply(f, req,
          "\"result\":{\"action\":\"accept\",\"content\":{\"decision\":\"abort\",\"reason\":"
          "\"wrong host\"}}",
          &a);
    json_decref(req);
    assert_int_equal(a.kind, ASK_ABORTED);
    assert_string_equal(a.reason, "User aborted the tool call, saying: wrong host");
    assert_int_equal(f->aborts, 1);
    assert_string_equal(f->aborted, a.reason);
    /* a second abort does not stop it twice */
    assert_non_null(ask_put(f->line, &how, &b));
    req = next_message(f);
    reply(f, req, "\"result\":{\"action\":\"accept\",\"content\":{\"decision\":\"abort\"}}", &b);
    json_decref(req);
    assert_int_equal(b.kind, ASK_ABORTED);
    assert_int_equal(f->aborts, 1);
    asker_release(&a);
    asker_release(&b);
}

/* An "always" answer the asker cannot take is asked again, saying why,
 * twice at most; then it is a refusal. */
static void
test_always_not_taken_is_asked_again(void **state)
{
    struct fixture *f = *state;
    struct asker a = {0};
    assert_non_null(ask_put(f->line, &how_no_always, &a));
    for (int i = 0; i < 3; i++) {
        json_t *req = next_message(f);
        reply(f, req,
              "\"result\":{\"action\":\"accept\",\"content\":{\"decision\":"
              "\"approved_execpolicy_amendment\"}}",
              &a);
        json_decref(req);
        assert_int_equal(a.asked, i < 2 ? i + 2 : 3);
    }
    assert_string_equal(a.last_note, "always allowing is not offered for this question");
    assert_int_equal(a.told, 1);
    assert_int_equal(a.kind, ASK_DENIED);
    assert_string_equal(a.reason, "The answer could not be taken: always allowing is not offered "
                                  "for this question");
    asker_release(&a);
}

/* One question of a line out at a time, in the order they came; a
 * withdrawn one is closed in the client and the next goes out. */
static void
test_one_at_a_time_and_withdraw(void **state)
{
    struct fixture *f = *state;
    struct asker a = {0}, b = {0}, c = {0};
    struct ask_question *qa = ask_put(f->line, &how, &a);
    assert_non_null(qa);
    struct ask_question *qb = ask_put(f->line, &how, &b);
    assert_non_null(ask_put(f->line, &how, &c));
    assert_non_null(qb);
    json_t *req = next_message(f);
    assert_int_equal(a.asked, 1);
    assert_true(nothing_written(f));
    assert_int_equal(b.asked + c.asked, 0);
    /* b withdrawn while waiting: never sent, never told */
    ask_withdraw(qb);
    /* a withdrawn while out: the client is told to close it, c goes out */
    ask_withdraw(qa);
    json_t *cancelled = next_message(f);
    assert_string_equal(json_string_value(json_object_get(cancelled, "method")),
                        "notifications/cancelled");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(cancelled, "params"), "requestId")),
        json_integer_value(json_object_get(req, "id")));
    json_decref(cancelled);
    json_decref(req);
    req = next_message(f);
    assert_int_equal(c.asked, 1);
    reply(f, req, "\"result\":{\"action\":\"decline\"}", &c);
    json_decref(req);
    assert_int_equal(a.told + b.told, 0);
    assert_int_equal(b.asked, 0);
    assert_int_equal(c.told, 1);
    asker_release(&a);
    asker_release(&b);
    asker_release(&c);
}

/* A line's watch: what it was told, in order, and its release. */
struct watcher {
    char told[16]; /* '1' out, '0' none out */
    size_t n;
    int released;
};

static void
watch_out(void *data, bool out)
{
    struct watcher *w = data;
    if (w->n < sizeof(w->told) - 1)
        w->told[w->n++] = out ? '1' : '0';
}

static void
watch_release(void *data)
{
    ((struct watcher *)data)->released++;
}

/* The watch hears of a question out once per change (an answer followed
 * at once by the next question is no change), every question carries its
 * _meta beside the asker's params, and it ends, released once, when the
 * line's peer goes: nothing is told after. */
static void
test_watch(void **state)
{
    struct fixture *f = *state;
    struct asker a = {0}, b = {0}, c = {0};
    struct watcher w = {0};
    json_t *meta = json_pack("{s:{s:s}}", "io.modelcontextprotocol/related-task", "taskId", "t1");
    ask_line_watch(f->line, meta, watch_out, watch_release, &w);
    json_decref(meta);
    assert_int_equal(w.n, 0);
    assert_non_null(ask_put(f->line, &how, &a));
    assert_non_null(ask_put(f->line, &how, &b));
    assert_string_equal(w.told, "1");
    json_t *req = next_message(f);
    const json_t *p = json_object_get(req, "params");
    assert_string_equal(json_string_value(json_object_get(p, "message")), "Allow?");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(p, "_meta"), "io.modelcontextprotocol/related-task"),
            "taskId")),
        "t1");
    reply(f, req, "\"result\":{\"action\":\"decline\"}", &a);
    json_decref(req);
    /* a answered, b out at once: still out, nothing told */
    assert_string_equal(w.told, "1");
    req = next_message(f);
    assert_non_null(json_object_get(json_object_get(req, "params"), "_meta"));
    reply(f, req, "\"result\":{\"action\":\"decline\"}", &b);
    json_decref(req);
    assert_string_equal(w.told, "10");
    /* withdrawn while out: told too */
    struct ask_question *qc = ask_put(f->line, &how, &c);
    assert_non_null(qc);
    json_decref(next_message(f));
    ask_withdraw(qc);
    assert_string_equal(w.told, "1010");
    json_t *closed = next_message(f);
    assert_string_equal(json_string_value(json_object_get(closed, "method")),
                        "notifications/cancelled");
    json_decref(closed);
    assert_int_equal(w.released, 0);
    ask_line_set_peer(f->line, NULL);
    assert_int_equal(w.released, 1);
    ask_line_set_peer(f->line, &f->peer);
    struct asker d = {0};
    assert_non_null(ask_put(f->line, &how, &d));
    json_t *plain = next_message(f);
    assert_null(json_object_get(json_object_get(plain, "params"), "_meta"));
    reply(f, plain, "\"result\":{\"action\":\"decline\"}", &d);
    json_decref(plain);
    assert_int_equal(w.n, 4);
    assert_int_equal(w.released, 1);
    asker_release(&a);
    asker_release(&b);
    asker_release(&c);
    asker_release(&d);
}

/* A watch still on the line when it is freed is released then. */
static void
test_watch_released_with_line(void **state)
{
    struct fixture *f = *state;
    struct watcher w = {0};
    struct ask_line *l = ask_line_new(NULL, NULL);
    assert_non_null(l);
    ask_line_set_peer(l, &f->peer);
    ask_line_watch(l, NULL, watch_out, watch_release, &w);
    ask_line_unref(l);
    assert_int_equal(w.released, 1);
    assert_int_equal(w.n, 0);
}

/* Nobody to ask: nothing is sent and nothing is called. */
static void
test_nobody_to_ask(void **state)
{
    struct fixture *f = *state;
    struct asker a = {0};
    f->peer.elicitation = false;
    assert_false(ask_line_can_ask(f->line));
    assert_null(ask_put(f->line, &how, &a));
    f->peer.elicitation = true;
    ask_line_set_peer(f->line, NULL);
    assert_null(ask_put(f->line, &how, &a));
    assert_int_equal(a.asked + a.told, 0);
    assert_true(nothing_written(f));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_meaning_of_each_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_explicit_approval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_stops_the_call_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_always_not_taken_is_asked_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_at_a_time_and_withdraw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nobody_to_ask, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_released_with_line, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
