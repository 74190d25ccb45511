/*
 * esc_proto: the escalation codec. Round trips, exact byte layout, every
 * way a frame can be malformed, truncated, oversized or from another
 * version, and every allocation the codec makes failed in turn: the call
 * must report -ENOMEM, store nothing and leak nothing (alloc_fail.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/alloc_fail.h"
#include "proto/esc_proto.h"

/* Test messages are built from string literals; the codec never writes
 * through an encoder input. */
#pragma GCC diagnostic ignored "-Wdiscarded-qualifiers"

/* ---- raw frame building, for inputs the encoder would refuse ---- */

static void
raw_bytes(struct esc_buf *b, const void *p, size_t n)
{
    assert_int_equal(esc_buf_reserve(b, n), 0);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void
raw_u32(struct esc_buf *b, uint32_t v)
{
    unsigned char p[4] = {v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF, v >> 24};
    raw_bytes(b, p, 4);
}

static void
raw_u16(struct esc_buf *b, uint16_t v)
{
    unsigned char p[2] = {v & 0xFF, v >> 8};
    raw_bytes(b, p, 2);
}

static void
raw_str(struct esc_buf *b, const char *s, size_t n)
{
    raw_u32(b, (uint32_t)n);
    raw_bytes(b, s, n);
}

/* A frame around body (version and type as given). */
static void
raw_frame(struct esc_buf *out, uint16_t version, uint16_t type, const struct esc_buf *body)
{
    raw_u32(out, (uint32_t)body->len);
    raw_u16(out, version);
    raw_u16(out, type);
    if (body->len)
        raw_bytes(out, body->data, body->len);
}

/* Decodes a whole buffer that must fail with rc; checks the reason is set. */
static void
expect_decode_error(const struct esc_buf *frame, int rc, const char *why_part)
{
    struct esc_msg m;
    size_t used = 12345;
    const char *why = NULL;
    int got = esc_msg_decode(frame->data, frame->len, &m, &used, &why);
    assert_int_equal(got, rc);
    assert_int_equal(used, 12345);
    assert_non_null(why);
    if (why_part != NULL && strstr(why, why_part) == NULL)
        fail_msg("reason \"%s\" does not mention \"%s\"", why, why_part);
}

/* A REQUEST body with the given parts; argv and env are counted arrays of
 * (pointer, length) so that NULs and odd bytes can be embedded. */
struct part {
    const char *s;
    size_t n;
};
#define P(lit)                                                                                     \
    {                                                                                              \
        lit, sizeof(lit) - 1                                                                       \
    }

static void
raw_request(struct esc_buf *frame, struct part file, const struct part *argv, uint32_t argc,
            struct part workdir, const struct part *env, uint32_t envc)
{
    struct esc_buf body = {0};
    raw_str(&body, file.s, file.n);
    raw_u32(&body, argc);
    for (uint32_t i = 0; i < argc; i++)
        raw_str(&body, argv[i].s, argv[i].n);
    raw_str(&body, workdir.s, workdir.n);
    raw_u32(&body, envc);
    for (uint32_t i = 0; i < envc; i++)
        raw_str(&body, env[i].s, env[i].n);
    raw_frame(frame, ESC_PROTO_VERSION, ESC_MSG_REQUEST, &body);
    esc_buf_free(&body);
}

/* ---- round trips ---- */

static void
roundtrip(const struct esc_msg *in, struct esc_msg *out)
{
    struct esc_buf b = {0};
    const char *why = NULL;
    assert_int_equal(esc_msg_encode(in, &b, &why), 0);
    size_t used = 0;
    assert_int_equal(esc_msg_decode(b.data, b.len, out, &used, &why), 1);
    assert_int_equal(used, b.len);
    assert_int_equal(out->type, in->type);
    esc_buf_free(&b);
}

static void
test_roundtrip_request(void **state)
{
    /* argv and env are bytes: non-UTF-8, control characters and empty
     * strings must all come back unchanged. */
    char *argv[] = {"git", "commit", "-m", "\xff\xfe not utf-8 \x01", "", NULL};
    char *env[] = {"PATH=/usr/bin:/bin", "EMPTY=", "WEIRD=\xc3\x28", NULL};
    struct esc_msg in = {.type = ESC_MSG_REQUEST};
    in.u.request = (struct esc_request){.file = "/usr/bin/git",
                                        .argv = argv,
                                        .argc = 5,
                                        .workdir = "/tmp/wd",
                                        .env = env,
                                        .envc = 3};
    struct esc_msg out;
    roundtrip(&in, &out);
    const struct esc_request *r = &out.u.request;
    assert_string_equal(r->file, "/usr/bin/git");
    assert_int_equal(r->argc, 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(r->argv[i], argv[i]);
    assert_null(r->argv[5]);
    assert_string_equal(r->workdir, "/tmp/wd");
    assert_int_equal(r->envc, 3);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(r->env[i], env[i]);
    assert_null(r->env[3]);
    esc_msg_free(&out);
    assert_int_equal(out.type, 0); /* freed messages are zeroed */
}

static void
test_roundtrip_request_no_env(void **state)
{
    char *argv[] = {"true"};
    struct esc_msg in = {.type = ESC_MSG_REQUEST};
    in.u.request = (struct esc_request){
        .file = "/bin/true", .argv = argv, .argc = 1, .workdir = "/", .env = NULL, .envc = 0};
    struct esc_msg out;
    roundtrip(&in, &out);
    assert_int_equal(out.u.request.envc, 0);
    assert_non_null(out.u.request.env);
    assert_null(out.u.request.env[0]);
    esc_msg_free(&out);
}

static void
test_roundtrip_small_messages(void **state)
{
    int types[] = {ESC_MSG_HELLO, ESC_MSG_RUN, ESC_MSG_ESCALATE};
    for (size_t i = 0; i < 3; i++) {
        struct esc_msg in = {.type = types[i]}, out;
        roundtrip(&in, &out);
        esc_msg_free(&out);
    }
    struct esc_msg deny = {.type = ESC_MSG_DENY, .u.deny_reason = "Execution forbidden by policy"};
    struct esc_msg out;
    roundtrip(&deny, &out);
    assert_string_equal(out.u.deny_reason, "Execution forbidden by policy");
    esc_msg_free(&out);
    /* a RUN with a note, and one without */
    struct esc_msg run = {.type = ESC_MSG_RUN, .u.run_note = "git runs inside the sandbox"};
    roundtrip(&run, &out);
    assert_string_equal(out.u.run_note, "git runs inside the sandbox");
    esc_msg_free(&out);
    run.u.run_note = NULL;
    roundtrip(&run, &out);
    assert_null(out.u.run_note);
    esc_msg_free(&out);

    struct esc_msg utf = {.type = ESC_MSG_DENY, .u.deny_reason = "refus\xc3\xa9 \xf0\x9f\x9a\xab"};
    roundtrip(&utf, &out);
    assert_string_equal(out.u.deny_reason, utf.u.deny_reason);
    esc_msg_free(&out);

    int sigs[] = {SIGHUP, SIGINT, SIGTERM};
    for (size_t i = 0; i < 3; i++) {
        struct esc_msg s = {.type = ESC_MSG_SIGNAL, .u.signo = sigs[i]};
        roundtrip(&s, &out);
        assert_int_equal(out.u.signo, sigs[i]);
    }

    struct esc_msg e1 = {.type = ESC_MSG_EXIT, .u.exit = {ESC_EXIT_CODE, 42}};
    roundtrip(&e1, &out);
    assert_int_equal(out.u.exit.kind, ESC_EXIT_CODE);
    assert_int_equal(out.u.exit.value, 42);
    struct esc_msg e2 = {.type = ESC_MSG_EXIT, .u.exit = {ESC_EXIT_SIGNAL, SIGKILL}};
    roundtrip(&e2, &out);
    assert_int_equal(out.u.exit.kind, ESC_EXIT_SIGNAL);
    assert_int_equal(out.u.exit.value, SIGKILL);
}

static void
test_roundtrip_fds(void **state)
{
    int targets[] = {0, 1, 2, 63, 62, 3, ESC_MAX_FD_NUMBER - 1};
    struct esc_msg in = {.type = ESC_MSG_FDS, .u.fds = {targets, 7}}, out;
    roundtrip(&in, &out);
    assert_int_equal(out.u.fds.count, 7);
    assert_memory_equal(out.u.fds.targets, targets, sizeof targets);
    esc_msg_free(&out);

    struct esc_msg none = {.type = ESC_MSG_FDS, .u.fds = {NULL, 0}};
    roundtrip(&none, &out);
    assert_int_equal(out.u.fds.count, 0);
    esc_msg_free(&out);
}

/* ---- exact layout (the doc's examples) ---- */

static void
test_layout(void **state)
{
    struct esc_buf b = {0};
    struct esc_msg run = {.type = ESC_MSG_RUN};
    assert_int_equal(esc_msg_encode(&run, &b, NULL), 0);
    const unsigned char run_bytes[] = {0, 0, 0, 0, 2, 0, 3, 0};
    assert_int_equal(b.len, sizeof run_bytes);
    assert_memory_equal(b.data, run_bytes, sizeof run_bytes);
    b.len = 0;

    struct esc_msg sig = {.type = ESC_MSG_SIGNAL, .u.signo = SIGTERM};
    assert_int_equal(esc_msg_encode(&sig, &b, NULL), 0);
    const unsigned char sig_bytes[] = {4, 0, 0, 0, 2, 0, 7, 0, 15, 0, 0, 0};
    assert_int_equal(b.len, sizeof sig_bytes);
    assert_memory_equal(b.data, sig_bytes, sizeof sig_bytes);
    b.len = 0;

    char *argv[] = {"ls"};
    char *env[] = {"A=b"};
    struct esc_msg req = {.type = ESC_MSG_REQUEST};
    req.u.request = (struct esc_request){
        .file = "/bin/ls", .argv = argv, .argc = 1, .workdir = "/", .env = env, .envc = 1};
    assert_int_equal(esc_msg_encode(&req, &b, NULL), 0);
    const unsigned char req_bytes[] = {
        37, 0, 0, 0, 2,   0,   2,   0,                  /* header: body 37, v2, REQUEST */
        7,  0, 0, 0, '/', 'b', 'i', 'n', '/', 'l', 's', /* file */
        1,  0, 0, 0, 2,   0,   0,   0,   'l', 's',      /* argc 1, "ls" */
        1,  0, 0, 0, '/',                               /* workdir */
        1,  0, 0, 0, 3,   0,   0,   0,   'A', '=', 'b', /* envc 1, "A=b" */
    };
    assert_int_equal(b.len, sizeof req_bytes);
    assert_memory_equal(b.data, req_bytes, sizeof req_bytes);
    esc_buf_free(&b);
}

/* ---- streaming: partial and concatenated frames ---- */

static void
test_every_truncation_needs_more(void **state)
{
    char *argv[] = {"echo", "hello", "world"};
    char *env[] = {"A=1", "B=2"};
    struct esc_msg req = {.type = ESC_MSG_REQUEST};
    req.u.request = (struct esc_request){
        .file = "/bin/echo", .argv = argv, .argc = 3, .workdir = "/tmp", .env = env, .envc = 2};
    struct esc_buf b = {0};
    assert_int_equal(esc_msg_encode(&req, &b, NULL), 0);
    for (size_t n = 0; n < b.len; n++) {
        struct esc_msg m;
        size_t used = 999;
        assert_int_equal(esc_msg_decode(b.data, n, &m, &used, NULL), 0);
        assert_int_equal(used, 999);
    }
    esc_buf_free(&b);
}

static void
test_concatenated_frames(void **state)
{
    struct esc_buf b = {0};
    struct esc_msg a = {.type = ESC_MSG_ESCALATE};
    struct esc_msg d = {.type = ESC_MSG_DENY, .u.deny_reason = "no"};
    struct esc_msg e = {.type = ESC_MSG_EXIT, .u.exit = {ESC_EXIT_CODE, 7}};
    assert_int_equal(esc_msg_encode(&a, &b, NULL), 0);
    assert_int_equal(esc_msg_encode(&d, &b, NULL), 0);
    assert_int_equal(esc_msg_encode(&e, &b, NULL), 0);
    int want[] = {ESC_MSG_ESCALATE, ESC_MSG_DENY, ESC_MSG_EXIT};
    for (size_t i = 0; i < 3; i++) {
        struct esc_msg m;
        size_t used = 0;
        assert_int_equal(esc_msg_decode(b.data, b.len, &m, &used, NULL), 1);
        assert_int_equal(m.type, want[i]);
        esc_msg_free(&m);
        esc_buf_consume(&b, used);
    }
    assert_int_equal(b.len, 0);
    esc_buf_free(&b);
}

/* ---- header errors: decided from 8 bytes, before any body arrives ---- */

static void
test_wrong_version(void **state)
{
    /* 1: the protocol before REQUEST datagrams; 3: a newer one */
    uint16_t versions[] = {0, 1, 3, 0xFFFF};
    for (size_t i = 0; i < 4; i++) {
        struct esc_buf f = {0}, empty = {0};
        raw_frame(&f, versions[i], ESC_MSG_RUN, &empty);
        expect_decode_error(&f, -EPROTONOSUPPORT, "version");
        esc_buf_free(&f);
    }
    /* A newer peer's huge frame is refused on its version alone. */
    struct esc_buf f = {0};
    raw_u32(&f, 100000);
    raw_u16(&f, 3);
    raw_u16(&f, ESC_MSG_REQUEST);
    expect_decode_error(&f, -EPROTONOSUPPORT, "version");
    esc_buf_free(&f);
}

static void
test_oversized_from_header(void **state)
{
    uint32_t sizes[] = {ESC_MAX_BODY + 1, 0xFFFFFFFFu};
    for (size_t i = 0; i < 2; i++) {
        struct esc_buf f = {0};
        raw_u32(&f, sizes[i]);
        raw_u16(&f, ESC_PROTO_VERSION);
        raw_u16(&f, ESC_MSG_REQUEST);
        expect_decode_error(&f, -EMSGSIZE, "ESC_MAX_BODY");
        esc_buf_free(&f);
    }
    /* Exactly the limit is only a partial frame here, not an error. */
    struct esc_buf f = {0};
    raw_u32(&f, ESC_MAX_BODY);
    raw_u16(&f, ESC_PROTO_VERSION);
    raw_u16(&f, ESC_MSG_REQUEST);
    struct esc_msg m;
    size_t used;
    assert_int_equal(esc_msg_decode(f.data, f.len, &m, &used, NULL), 0);
    esc_buf_free(&f);
}

static void
test_unknown_type(void **state)
{
    uint16_t types[] = {0, 9, 0x7FFF, 0xFFFF};
    for (size_t i = 0; i < 4; i++) {
        struct esc_buf f = {0}, empty = {0};
        raw_frame(&f, ESC_PROTO_VERSION, types[i], &empty);
        expect_decode_error(&f, -EBADMSG, "type");
        esc_buf_free(&f);
    }
}

static void
test_trailing_bytes(void **state)
{
    int types[] = {ESC_MSG_HELLO, ESC_MSG_RUN, ESC_MSG_ESCALATE, ESC_MSG_SIGNAL, ESC_MSG_EXIT};
    for (size_t i = 0; i < 5; i++) {
        struct esc_buf body = {0}, f = {0};
        if (types[i] == ESC_MSG_RUN) /* RUN's one optional field: a note */
            raw_str(&body, "note", 4);
        if (types[i] == ESC_MSG_SIGNAL)
            raw_u32(&body, SIGINT);
        if (types[i] == ESC_MSG_EXIT) {
            raw_u32(&body, 0);
            raw_u32(&body, 0);
        }
        raw_bytes(&body, "x", 1);
        raw_frame(&f, ESC_PROTO_VERSION, (uint16_t)types[i], &body);
        expect_decode_error(&f, -EBADMSG, "trailing");
        esc_buf_free(&body);
        esc_buf_free(&f);
    }
}

/* ---- REQUEST bodies ---- */

static const struct part ok_argv[] = {P("ls"), P("-l")};
static const struct part ok_env[] = {P("A=1")};

static void
test_request_malformed(void **state)
{
    struct {
        struct part file;
        const struct part *argv;
        uint32_t argc;
        struct part workdir;
        const struct part *env;
        uint32_t envc;
        int rc;
        const char *why;
    } cases[] = {
        {P(""), ok_argv, 2, P("/"), ok_env, 1, -EBADMSG, "file is empty"},
        {P("/bin/l\0s"), ok_argv, 2, P("/"), ok_env, 1, -EBADMSG, "NUL"},
        {P("/bin/ls"), ok_argv, 0, P("/"), ok_env, 1, -EBADMSG, "argv is empty"},
        {P("/bin/ls"), (const struct part[]){P("a\0b")}, 1, P("/"), ok_env, 1, -EBADMSG, "NUL"},
        {P("/bin/ls"), ok_argv, 2, P(""), ok_env, 1, -EBADMSG, "absolute"},
        {P("/bin/ls"), ok_argv, 2, P("tmp"), ok_env, 1, -EBADMSG, "absolute"},
        {P("/bin/ls"), ok_argv, 2, P("/t\0mp"), ok_env, 1, -EBADMSG, "NUL"},
        {P("/bin/ls"), ok_argv, 2, P("/"), (const struct part[]){P("NOEQUALS")}, 1, -EBADMSG,
         "NAME=VALUE"},
        {P("/bin/ls"), ok_argv, 2, P("/"), (const struct part[]){P("=value")}, 1, -EBADMSG,
         "NAME=VALUE"},
        {P("/bin/ls"), ok_argv, 2, P("/"), (const struct part[]){P("A=\0")}, 1, -EBADMSG, "NUL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct esc_buf f = {0};
        raw_request(&f, cases[i].file, cases[i].argv, cases[i].argc, cases[i].workdir, cases[i].env,
                    cases[i].envc);
        expect_decode_error(&f, cases[i].rc, cases[i].why);
        esc_buf_free(&f);
    }
}

static void
test_request_lengths_lie(void **state)
{
    /* A string length that runs past the body. */
    struct esc_buf body = {0}, f = {0};
    raw_u32(&body, 1000);
    raw_bytes(&body, "/bin/ls", 7);
    raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_REQUEST, &body);
    expect_decode_error(&f, -EBADMSG, "past the end");
    esc_buf_free(&body);
    esc_buf_free(&f);

    /* An argc far larger than the body could hold is refused before any
     * allocation for it. */
    raw_str(&body, "/bin/ls", 7);
    raw_u32(&body, ESC_MAX_ARGS);
    raw_str(&body, "ls", 2);
    raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_REQUEST, &body);
    expect_decode_error(&f, -EBADMSG, "count runs past");
    esc_buf_free(&body);
    esc_buf_free(&f);

    /* Counts above the named limits. */
    raw_str(&body, "/bin/ls", 7);
    raw_u32(&body, ESC_MAX_ARGS + 1);
    raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_REQUEST, &body);
    expect_decode_error(&f, -EMSGSIZE, "too many");
    esc_buf_free(&body);
    esc_buf_free(&f);

    raw_str(&body, "/bin/ls", 7);
    raw_u32(&body, 1);
    raw_str(&body, "ls", 2);
    raw_str(&body, "/", 1);
    raw_u32(&body, 0xFFFFFFFFu);
    raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_REQUEST, &body);
    expect_decode_error(&f, -EMSGSIZE, "too many");
    esc_buf_free(&body);
    esc_buf_free(&f);

    /* The body ends before the env count. */
    raw_str(&body, "/bin/ls", 7);
    raw_u32(&body, 1);
    raw_str(&body, "ls", 2);
    raw_str(&body, "/", 1);
    raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_REQUEST, &body);
    expect_decode_error(&f, -EBADMSG, "ends inside");
    esc_buf_free(&body);
    esc_buf_free(&f);

    /* An env string cut short, with a later entry missing: the partial
     * vectors must be freed (LeakSanitizer checks). */
    raw_str(&body, "/bin/ls", 7);
    raw_u32(&body, 2);
    raw_str(&body, "ls", 2);
    raw_str(&body, "-l", 2);
    raw_str(&body, "/", 1);
    raw_u32(&body, 3);
    raw_str(&body, "A=1", 3);
    raw_u32(&body, 50);
    raw_bytes(&body, "B=", 2);
    raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_REQUEST, &body);
    expect_decode_error(&f, -EBADMSG, "past the end");
    esc_buf_free(&body);
    esc_buf_free(&f);
}

static void
test_request_string_limits(void **state)
{
    size_t n = ESC_MAX_STRING + 1;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, 'a', n);
    struct esc_buf f = {0};
    raw_request(&f, (struct part)P("/bin/ls"), (const struct part[]){{big, n}}, 1,
                (struct part)P("/"), NULL, 0);
    expect_decode_error(&f, -EMSGSIZE, "ESC_MAX_STRING");
    f.len = 0;
    /* Exactly the limit is fine. */
    raw_request(&f, (struct part)P("/bin/ls"), (const struct part[]){{big, n - 1}}, 1,
                (struct part)P("/"), NULL, 0);
    struct esc_msg m;
    size_t used;
    assert_int_equal(esc_msg_decode(f.data, f.len, &m, &used, NULL), 1);
    assert_int_equal(strlen(m.u.request.argv[0]), n - 1);
    esc_msg_free(&m);
    f.len = 0;
    raw_request(&f, (struct part){big, ESC_MAX_PATH + 1}, ok_argv, 2, (struct part)P("/"), NULL, 0);
    expect_decode_error(&f, -EMSGSIZE, "ESC_MAX_PATH");
    f.len = 0;
    big[0] = '/';
    raw_request(&f, (struct part)P("/bin/ls"), ok_argv, 2, (struct part){big, ESC_MAX_PATH + 1},
                NULL, 0);
    expect_decode_error(&f, -EMSGSIZE, "ESC_MAX_PATH");
    esc_buf_free(&f);
    free(big);
}

/* ---- DENY, FDS, SIGNAL, EXIT bodies ---- */

static void
test_deny_malformed(void **state)
{
    struct part bad[] = {
        P(""),                 /* empty */
        P("a\0b"),             /* NUL */
        P("\xc0\xaf"),         /* overlong '/' */
        P("\xed\xa0\x80"),     /* surrogate */
        P("\xf4\x90\x80\x80"), /* above U+10FFFF */
        P("abc\xe2\x82"),      /* cut short */
        P("\xff"),             /* never valid */
        P("\x80"),             /* lone continuation */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct esc_buf body = {0}, f = {0};
        raw_str(&body, bad[i].s, bad[i].n);
        raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_DENY, &body);
        expect_decode_error(&f, -EBADMSG, NULL);
        esc_buf_free(&body);
        esc_buf_free(&f);
    }
    struct esc_buf body = {0}, f = {0};
    raw_u32(&body, ESC_MAX_REASON + 1);
    char *big = calloc(1, ESC_MAX_REASON + 1);
    memset(big, 'r', ESC_MAX_REASON + 1);
    raw_bytes(&body, big, ESC_MAX_REASON + 1);
    raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_DENY, &body);
    expect_decode_error(&f, -EMSGSIZE, "ESC_MAX_REASON");
    free(big);
    esc_buf_free(&body);
    esc_buf_free(&f);
}

static void
test_fds_malformed(void **state)
{
    struct {
        uint32_t count;
        uint32_t targets[4];
        size_t given;
        int rc;
        const char *why;
    } cases[] = {
        {ESC_MAX_FDS + 1, {0}, 0, -EMSGSIZE, "ESC_MAX_FDS"},
        {0xFFFFFFFFu, {0}, 0, -EMSGSIZE, "ESC_MAX_FDS"},
        {3, {0, 1}, 2, -EBADMSG, "past the end"},
        {2, {1, 1}, 2, -EBADMSG, "repeated"},
        {3, {0, 63, 63}, 3, -EBADMSG, "repeated"},
        {1, {ESC_MAX_FD_NUMBER}, 1, -EBADMSG, "out of range"},
        {1, {0xFFFFFFFFu}, 1, -EBADMSG, "out of range"},
        {1, {0x80000000u}, 1, -EBADMSG, "out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct esc_buf body = {0}, f = {0};
        raw_u32(&body, cases[i].count);
        for (size_t k = 0; k < cases[i].given; k++)
            raw_u32(&body, cases[i].targets[k]);
        raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_FDS, &body);
        expect_decode_error(&f, cases[i].rc, cases[i].why);
        esc_buf_free(&body);
        esc_buf_free(&f);
    }
}

static void
test_signal_and_exit_malformed(void **state)
{
    uint32_t sigs[] = {0, SIGKILL, SIGSTOP, SIGQUIT, 65, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct esc_buf body = {0}, f = {0};
        raw_u32(&body, sigs[i]);
        raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_SIGNAL, &body);
        expect_decode_error(&f, -EBADMSG, "signal");
        esc_buf_free(&body);
        esc_buf_free(&f);
    }
    uint32_t exits[][2] = {{0, 256}, {0, 0xFFFFFFFFu}, {1, 0}, {1, 65}, {2, 0}, {0xFFFF, 1}};
    for (size_t i = 0; i < sizeof exits / sizeof exits[0]; i++) {
        struct esc_buf body = {0}, f = {0};
        raw_u32(&body, exits[i][0]);
        raw_u32(&body, exits[i][1]);
        raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_EXIT, &body);
        expect_decode_error(&f, -EBADMSG, "exit");
        esc_buf_free(&body);
        esc_buf_free(&f);
    }
    /* Short bodies. */
    struct esc_buf body = {0}, f = {0};
    raw_u32(&body, 0);
    raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_EXIT, &body);
    expect_decode_error(&f, -EBADMSG, "ends inside");
    f.len = 0;
    body.len = 0;
    raw_frame(&f, ESC_PROTO_VERSION, ESC_MSG_SIGNAL, &body);
    expect_decode_error(&f, -EBADMSG, "ends inside");
    esc_buf_free(&body);
    esc_buf_free(&f);
}

/* ---- the encoder refuses what the decoder would refuse ---- */

static void
expect_encode_error(const struct esc_msg *m, int rc)
{
    struct esc_buf b = {0};
    const char *why = NULL;
    assert_int_equal(esc_msg_encode(m, &b, &why), rc);
    assert_non_null(why);
    assert_int_equal(b.len, 0);
    esc_buf_free(&b);
}

static void
test_encode_refuses(void **state)
{
    char *argv[] = {"ls"};
    char *bad_env[] = {"NOEQUALS"};
    struct esc_msg m = {.type = ESC_MSG_REQUEST};
    m.u.request = (struct esc_request){.file = "", .argv = argv, .argc = 1, .workdir = "/"};
    expect_encode_error(&m, -EINVAL);
    m.u.request.file = "/bin/ls";
    m.u.request.workdir = "relative";
    expect_encode_error(&m, -EINVAL);
    m.u.request.workdir = "/";
    m.u.request.argc = 0;
    expect_encode_error(&m, -EINVAL);
    m.u.request.argc = 1;
    m.u.request.env = bad_env;
    m.u.request.envc = 1;
    expect_encode_error(&m, -EINVAL);
    m.u.request.envc = ESC_MAX_ENV + 1;
    expect_encode_error(&m, -EMSGSIZE);

    char *big = malloc(ESC_MAX_STRING + 2);
    memset(big, 'a', ESC_MAX_STRING + 1);
    big[ESC_MAX_STRING + 1] = '\0';
    char *big_argv[] = {big};
    m.u.request =
        (struct esc_request){.file = "/bin/ls", .argv = big_argv, .argc = 1, .workdir = "/"};
    expect_encode_error(&m, -EMSGSIZE);
    free(big);

    /* Many strings each within limits but together above ESC_MAX_BODY. */
    size_t each = ESC_MAX_STRING, count = ESC_MAX_BODY / each + 2;
    char *s = malloc(each + 1);
    memset(s, 'b', each);
    s[each] = '\0';
    char **many = calloc(count, sizeof *many);
    for (size_t i = 0; i < count; i++)
        many[i] = s;
    m.u.request.argv = many;
    m.u.request.argc = count;
    expect_encode_error(&m, -EMSGSIZE);
    free(many);
    free(s);

    struct esc_msg sig = {.type = ESC_MSG_SIGNAL, .u.signo = SIGKILL};
    expect_encode_error(&sig, -EINVAL);
    int dup[] = {1, 1};
    struct esc_msg fds = {.type = ESC_MSG_FDS, .u.fds = {dup, 2}};
    expect_encode_error(&fds, -EINVAL);
    int neg[] = {-1};
    fds.u.fds.targets = neg;
    fds.u.fds.count = 1;
    expect_encode_error(&fds, -EINVAL);
    fds.u.fds.count = ESC_MAX_FDS + 1;
    expect_encode_error(&fds, -EMSGSIZE);
    struct esc_msg ex = {.type = ESC_MSG_EXIT, .u.exit = {ESC_EXIT_CODE, 256}};
    expect_encode_error(&ex, -EINVAL);
    ex.u.exit.kind = 7;
    ex.u.exit.value = 0;
    expect_encode_error(&ex, -EINVAL);
    struct esc_msg deny = {.type = ESC_MSG_DENY, .u.deny_reason = "\xff"};
    expect_encode_error(&deny, -EINVAL);
    struct esc_msg unknown = {.type = 42};
    expect_encode_error(&unknown, -EINVAL);
}

static void
test_names(void **state)
{
    assert_string_equal(esc_msg_type_name(ESC_MSG_REQUEST), "REQUEST");
    assert_string_equal(esc_msg_type_name(ESC_MSG_EXIT), "EXIT");
    assert_string_equal(esc_msg_type_name(0), "unknown");
    assert_string_equal(esc_msg_type_name(99), "unknown");
    esc_msg_free(NULL);
    esc_buf_free(NULL);
}

/* ---- allocation failure ---- */

struct decode_round {
    const struct esc_buf *frame;
    int want_type;
};

/* Decodes the frame; with an allocation failing, it must say so. */
static void
decode_round(void *arg)
{
    const struct decode_round *d = arg;
    struct esc_msg m;
    size_t used = 0;
    const char *why = NULL;
    int rc = esc_msg_decode(d->frame->data, d->frame->len, &m, &used, &why);
    if (alloc_fail_injected()) {
        assert_int_equal(rc, -ENOMEM);
        assert_string_equal(why, "out of memory");
        return;
    }
    assert_int_equal(rc, 1);
    assert_int_equal(m.type, d->want_type);
    assert_int_equal(used, d->frame->len);
    esc_msg_free(&m);
}

/* Encodes m into a fresh frame, then sweeps its decoding. */
static void
sweep_decode(const struct esc_msg *m)
{
    struct esc_buf frame = {0};
    assert_int_equal(esc_msg_encode(m, &frame, NULL), 0);
    struct decode_round d = {&frame, m->type};
    assert_true(alloc_fail_sweep(decode_round, &d) > 0); /* it allocates */
    esc_buf_free(&frame);
}

static void
test_decode_allocation_failures(void **state)
{
    char *argv[] = {"git", "commit", "-m", "msg"};
    char *env[] = {"A=1", "B=2", "C=3"};
    struct esc_msg req = {.type = ESC_MSG_REQUEST};
    req.u.request = (struct esc_request){
        .file = "/usr/bin/git", .argv = argv, .argc = 4, .workdir = "/tmp", .env = env, .envc = 3};
    sweep_decode(&req);

    struct esc_msg deny = {.type = ESC_MSG_DENY, .u.deny_reason = "User declined execution"};
    sweep_decode(&deny);

    int targets[] = {0, 1, 2, 63};
    struct esc_msg fds = {.type = ESC_MSG_FDS, .u.fds = {targets, 4}};
    sweep_decode(&fds);
}

/* A failed encode leaves the buffer as it was, contents included. */
static void
test_encode_allocation_failure(void **state)
{
    struct esc_buf b = {0};
    struct esc_msg run = {.type = ESC_MSG_RUN};
    const char *why = NULL;
    alloc_fail_arm(0);
    assert_int_equal(esc_msg_encode(&run, &b, &why), -ENOMEM);
    alloc_fail_disarm();
    assert_null(b.data);
    assert_int_equal(b.len, 0);

    assert_int_equal(esc_msg_encode(&run, &b, NULL), 0);
    size_t len = b.len;
    char big[4000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char *argv[] = {big};
    struct esc_msg req = {.type = ESC_MSG_REQUEST};
    req.u.request = (struct esc_request){.file = "/bin/x", .argv = argv, .argc = 1, .workdir = "/"};
    alloc_fail_arm(0);
    assert_int_equal(esc_msg_encode(&req, &b, &why), -ENOMEM);
    alloc_fail_disarm();
    assert_int_equal(b.len, len);
    const unsigned char run_bytes[] = {0, 0, 0, 0, 2, 0, 3, 0};
    assert_memory_equal(b.data, run_bytes, sizeof run_bytes);
    esc_buf_free(&b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_request),
        cmocka_unit_test(test_roundtrip_request_no_env),
        cmocka_unit_test(test_roundtrip_small_messages),
        cmocka_unit_test(test_roundtrip_fds),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_every_truncation_needs_more),
        cmocka_unit_test(test_concatenated_frames),
        cmocka_unit_test(test_wrong_version),
        cmocka_unit_test(test_oversized_from_header),
        cmocka_unit_test(test_unknown_type),
        cmocka_unit_test(test_trailing_bytes),
        cmocka_unit_test(test_request_malformed),
        cmocka_unit_test(test_request_lengths_lie),
        cmocka_unit_test(test_request_string_limits),
        cmocka_unit_test(test_deny_malformed),
        cmocka_unit_test(test_fds_malformed),
        cmocka_unit_test(test_signal_and_exit_malformed),
        cmocka_unit_test(test_encode_refuses),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_decode_allocation_failures),
        cmocka_unit_test(test_encode_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
