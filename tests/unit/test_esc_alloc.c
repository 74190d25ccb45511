/*
 * esc_proto under allocation failure: every allocation the codec makes is
 * failed in turn (the N-th, for N = 0, 1, ... until the call succeeds), and
 * each time the call must report -ENOMEM, store nothing and leak nothing.
 *
 * The codec is compiled into this test with its allocator calls redirected
 * to counting ones, so the library itself needs no test hooks.
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

static long fail_at = -1; /* index of the allocation to fail, -1: none */
static long calls;        /* allocations attempted since the last reset */
static long live;         /* blocks allocated and not yet freed */

static void *
counted_malloc(size_t n)
{
    if (calls++ == fail_at)
        return NULL;
    void *p = malloc(n);
    live += p != NULL;
    return p;
}

static void *
counted_calloc(size_t a, size_t b)
{
    if (calls++ == fail_at)
        return NULL;
    void *p = calloc(a, b);
    live += p != NULL;
    return p;
}

static void *
counted_realloc(void *old, size_t n)
{
    if (calls++ == fail_at)
        return NULL;
    void *p = realloc(old, n);
    live += p != NULL && old == NULL;
    return p;
}

static void
counted_free(void *p)
{
    live -= p != NULL;
    free(p);
}

#define malloc  counted_malloc
#define calloc  counted_calloc
#define realloc counted_realloc
#define free    counted_free
#include "../../wrapper/esc_proto.c"
#undef malloc
#undef calloc
#undef realloc
#undef free

/* Test messages are built from string literals; the codec never writes
 * through an encoder input. */
#pragma GCC diagnostic ignored "-Wdiscarded-qualifiers"

static void
encode_or_fail(const struct esc_msg *m, struct esc_buf *b)
{
    fail_at = -1;
    assert_int_equal(esc_msg_encode(m, b, NULL), 0);
}

/* Decodes frame with the N-th allocation failing, for every N. */
static void
sweep_decode(const struct esc_buf *frame, int want_type)
{
    for (long n = 0;; n++) {
        fail_at = n;
        calls = 0;
        live = 0;
        struct esc_msg m;
        size_t used = 0;
        const char *why = NULL;
        int rc = esc_msg_decode(frame->data, frame->len, &m, &used, &why);
        if (rc == 1) {
            assert_int_equal(m.type, want_type);
            assert_int_equal(used, frame->len);
            esc_msg_free(&m);
            assert_int_equal(live, 0);
            assert_true(n > 0); /* something was allocated and failed */
            return;
        }
        assert_int_equal(rc, -ENOMEM);
        assert_string_equal(why, "out of memory");
        assert_int_equal(live, 0);
        assert_true(n < 1000);
    }
}

static void
test_decode_request(void **state)
{
    char *argv[] = {"git", "commit", "-m", "msg"};
    char *env[] = {"A=1", "B=2", "C=3"};
    struct esc_msg m = {.type = ESC_MSG_REQUEST};
    m.u.request = (struct esc_request){
        .file = "/usr/bin/git", .argv = argv, .argc = 4, .workdir = "/tmp", .env = env, .envc = 3};
    struct esc_buf frame = {0};
    encode_or_fail(&m, &frame);
    sweep_decode(&frame, ESC_MSG_REQUEST);
    fail_at = -1;
    esc_buf_free(&frame);
}

static void
test_decode_deny_and_fds(void **state)
{
    struct esc_buf frame = {0};
    struct esc_msg d = {.type = ESC_MSG_DENY, .u.deny_reason = "User declined execution"};
    encode_or_fail(&d, &frame);
    sweep_decode(&frame, ESC_MSG_DENY);
    fail_at = -1;
    esc_buf_free(&frame);

    int targets[] = {0, 1, 2, 63};
    struct esc_msg f = {.type = ESC_MSG_FDS, .u.fds = {targets, 4}};
    encode_or_fail(&f, &frame);
    sweep_decode(&frame, ESC_MSG_FDS);
    fail_at = -1;
    esc_buf_free(&frame);
}

/* A failed encode leaves the buffer as it was, contents included. */
static void
test_encode(void **state)
{
    struct esc_buf b = {0};
    struct esc_msg run = {.type = ESC_MSG_RUN};
    fail_at = 0;
    calls = 0;
    const char *why = NULL;
    assert_int_equal(esc_msg_encode(&run, &b, &why), -ENOMEM);
    assert_null(b.data);
    assert_int_equal(b.len, 0);

    encode_or_fail(&run, &b);
    size_t len = b.len;
    char *big = counted_malloc(4000);
    memset(big, 'x', 3999);
    big[3999] = '\0';
    char *argv[] = {big};
    struct esc_msg req = {.type = ESC_MSG_REQUEST};
    req.u.request = (struct esc_request){.file = "/bin/x", .argv = argv, .argc = 1, .workdir = "/"};
    fail_at = 0;
    calls = 0;
    assert_int_equal(esc_msg_encode(&req, &b, &why), -ENOMEM);
    assert_int_equal(b.len, len);
    const unsigned char run_bytes[] = {0, 0, 0, 0, 2, 0, 3, 0};
    assert_memory_equal(b.data, run_bytes, sizeof run_bytes);
    fail_at = -1;
    counted_free(big);
    esc_buf_free(&b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_request),
        cmocka_unit_test(test_decode_deny_and_fds),
        cmocka_unit_test(test_encode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
