/*
 * call_result: the text written directly is, byte for byte, what jansson
 * makes of the same result built as JSON values (the way the result was
 * built before: the repaired output in an object, that object dumped into
 * the content's text and kept as structuredContent, aborted added after).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/call/call_result.h"
#include "server/call/output_ring.h"
#include "common/utf8.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* head + marker + tail, as one run of bytes (caller frees). */
static char *
joined(const struct output_ring_text *o, size_t *len)
{
    char marker[OUTPUT_RING_MARKER_MAX];
    size_t m = o->cut ? output_ring_marker(o->omitted, marker) : 0;
    *len = o->head_len + m + o->tail_len;
    char *all = malloc(*len + 1);
    assert_non_null(all);
    memcpy(all, o->head, o->head_len);
    memcpy(all + o->head_len, marker, m);
    memcpy(all + o->head_len + m, o->tail, o->tail_len);
    return all;
}

/* The result as JSON values, dumped by jansson. */
static char *
with_jansson(const struct call_result *r)
{
    size_t raw_len, len;
    char *raw = joined(r->output, &raw_len);
    char *text = utf8_lossy(raw, raw_len, &len);
    assert_non_null(text);
    json_t *obj =
        json_pack("{s:i, s:s%, s:{s:I, s:I}, s:b}", "exit_code", r->exit_code, "output", text, len,
                  "duration", "secs", (json_int_t)(r->duration_ns / 1000000000u), "nanos",
                  (json_int_t)(r->duration_ns % 1000000000u), "timed_out", r->timed_out);
    assert_non_null(obj);
    if (r->setup_failed)
        json_object_set_new(obj, "sandbox_error", json_string(CALL_RESULT_SETUP_FAILED));
    if (r->not_started)
        json_object_set_new(obj, "shell_error", json_string(CALL_RESULT_NOT_STARTED));
    if (r->aborted)
        json_object_set_new(obj, "aborted", json_string(r->aborted));
    if (r->said)
        json_object_set_new(obj, "person_said", json_string(r->said));
    char *dumped = json_dumps(obj, JSON_COMPACT);
    assert_non_null(dumped);
    json_t *result = json_pack("{s:[{s:s, s:s}], s:O, s:b}", "content", "type", "text", "text",
                               dumped, "structuredContent", obj, "isError",
                               r->setup_failed || r->not_started || r->aborted);
    assert_non_null(result);
    char *out = json_dumps(result, JSON_COMPACT);
    assert_non_null(out);
    json_decref(result);
    json_decref(obj);
    free(dumped);
    free(text);
    free(raw);
    return out;
}

static void
check(const struct call_result *r)
{
    char *want = with_jansson(r);
    size_t len = 0;
    char *got = call_result_json(r, &len);
    assert_non_null(got);
    assert_int_equal(len, strlen(want));
    assert_string_equal(got, want);
    free(got);
    free(want);
}

/* The kept text of n bytes of out through a ring of max. */
static void
check_output(const char *out, size_t n, size_t max, struct call_result *r)
{
    struct output_ring ring;
    output_ring_init(&ring, max);
    for (size_t at = 0; at < n; at += 7)
        assert_int_equal(output_ring_append(&ring, out + at, n - at < 7 ? n - at : 7), 0);
    struct output_ring_text t;
    output_ring_text(&ring, &t);
    r->output = &t;
    check(r);
    output_ring_release(&ring);
}

#define OUT(s) s, sizeof(s) - 1

static void
test_plain_results(void **state)
{
    struct call_result r = {.exit_code = 0, .duration_ns = 1234567890};
    check_output(OUT(""), 64, &r);
    check_output(OUT("hi\n"), 64, &r);
    r.exit_code = 127;
    r.timed_out = true;
    r.duration_ns = 0;
    check_output(OUT("bash: nope: command not found\n"), 64, &r);
    r.exit_code = -1;
    r.timed_out = false;
    r.duration_ns = UINT64_MAX;
    check_output(OUT("odd"), 64, &r);
}

static void
test_awkward_output(void **state)
{
    struct call_result r = {.exit_code = 1, .duration_ns = 5};
    check_output(OUT("\"quotes\" and \\backslashes\\ and /slashes/\b\f\n\r\t\x01\x1f\x7f"), 4096,
                 &r);
    check_output(OUT("nul\0in\0the\0middle\0"), 4096, &r);
    check_output(
        OUT("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 bad: \xFF\xC0\xAF\xED\xA0\x80\xE2\x82"),
        4096, &r);
    check_output(OUT("{\"exit_code\":0,\"output\":\"a JSON-looking output\\n\"}"), 4096, &r);
}

static void
test_cut_output_with_marker(void **state)
{
    /* 3000 lines through max 100: head, marker, tail; "€" cut at both ends */
    char out[3 * 3000];
    for (size_t i = 0; i < 3000; i++)
        memcpy(out + 3 * i, i % 5 ? "\xE2\x82\xAC" : "a\"\n", 3);
    struct call_result r = {.exit_code = 0, .duration_ns = 999999999};
    for (size_t max = 64; max < 80; max++)
        check_output(out, sizeof(out), max, &r);
}

static void
test_sandbox_error_abort_and_said(void **state)
{
    struct call_result r = {.exit_code = 125, .duration_ns = 42, .setup_failed = true};
    check_output(OUT("execgate-sandbox: landlock: not supported\n"), 4096, &r);
    r.aborted = "a person answered \"abort\"\nto: rm -rf /";
    check_output(OUT("partial output\n"), 4096, &r);
    r.setup_failed = false;
    check_output(OUT("partial output\n"), 4096, &r);
    r = (struct call_result){.exit_code = 127, .duration_ns = 7, .not_started = true};
    check_output(OUT("execgate-sandbox: /opt/bash: No such file or directory\n"), 4096, &r);
    /* what a person said with approvals: a result, not an error */
    r = (struct call_result){.duration_ns = 9,
                             .said = "approved `/usr/bin/git push`: only \"main\"\napproved "
                                     "`/usr/bin/make`: fine \xc3\xa9"};
    check_output(OUT("pushed\n"), 4096, &r);
    r.aborted = "stopped";
    check_output(OUT("pushed\n"), 4096, &r);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_results),
        cmocka_unit_test(test_awkward_output),
        cmocka_unit_test(test_cut_output_with_marker),
        cmocka_unit_test(test_sandbox_error_abort_and_said),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
