/*
 * output_ring: what a call keeps of its output, checked against the plain
 * definition (all of it up to max; past max the first max/2 bytes, the
 * newest max - max/2, and the count of the rest) for many ways of cutting
 * the same bytes into appends; the marker; and running out of memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/call/output_ring.h"
#include "tests/support/alloc_fail.h"
#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What must be kept of all[0, n) with max: the definition, written out. */
static void
expect_kept(struct output_ring *r, const char *all, size_t n, size_t max)
{
    struct output_ring_text t;
    output_ring_text(r, &t);
    assert_int_equal(r->total, n);
    if (n <= max) {
        assert_false(t.cut);
        assert_int_equal(t.head_len, n);
        if (n > 0)
            assert_memory_equal(t.head, all, n);
        assert_int_equal(t.tail_len, 0);
        assert_int_equal(t.omitted, 0);
        return;
    }
    size_t head = max / 2, tail = max - head;
    assert_true(t.cut);
    assert_int_equal(t.head_len, head);
    assert_int_equal(t.tail_len, tail);
    assert_int_equal(t.omitted, n - max);
    if (head > 0)
        assert_memory_equal(t.head, all, head);
    assert_memory_equal(t.tail, all + n - tail, tail);
}

/* all[0, n) appended in pieces of step bytes (the last one shorter). */
static void
append_in_steps(struct output_ring *r, const char *all, size_t n, size_t step)
{
    for (size_t at = 0; at < n; at += step)
        assert_int_equal(output_ring_append(r, all + at, n - at < step ? n - at : step), 0);
}

/* Bytes that show where each came from: position i holds i's low byte mixed
 * with its higher ones, so a shifted or misplaced run does not compare
 * equal. */
static char *
numbered(size_t n)
{
    char *p = malloc(n ? n : 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (char)(i ^ (i >> 8) ^ (i >> 16));
    return p;
}

static void
check(size_t max, size_t n, size_t step)
{
    char *all = numbered(n);
    struct output_ring r;
    output_ring_init(&r, max);
    append_in_steps(&r, all, n, step);
    expect_kept(&r, all, n, max);
    output_ring_release(&r);
    free(all);
}

static void
test_small_output_is_kept_whole(void **state)
{
    check(1024, 0, 1);
    check(1024, 1, 1);
    check(1024, 100, 7);
    check(1024, 1000, 1000);
    /* nothing written: an empty head, no buffer needed */
    struct output_ring r;
    output_ring_init(&r, 64);
    struct output_ring_text t;
    output_ring_text(&r, &t);
    assert_int_equal(t.head_len, 0);
    assert_non_null(t.head);
    assert_false(t.cut);
    output_ring_release(&r);
}

static void
test_exactly_at_the_limit(void **state)
{
    check(1024, 1024, 1024);
    check(1024, 1024, 1);
    check(1024, 1024, 1000);
    check(1, 1, 1);
    check(4097, 4097, 4096); /* past the first allocation's size */
}

static void
test_one_byte_over(void **state)
{
    /* head max/2, tail the rest; the one byte over pushed out byte max/2 */
    check(1024, 1025, 1025);
    check(1024, 1025, 1);
    check(1024, 1025, 1024);
    check(1023, 1024, 5); /* odd max: the tail gets the larger half */
    check(1, 2, 1);       /* max 1: no head, a one-byte tail */
    check(2, 3, 3);
}

static void
test_huge_output_head_tail_and_marker(void **state)
{
    /* 20 MB through 1 MiB in reads of the sizes a pipe gives */
    size_t n = 20u << 20, max = 1u << 20;
    char *all = numbered(n);
    static const size_t steps[] = {4096, 65536, 65537, 524288, 1048576, 3u << 20};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        struct output_ring r;
        output_ring_init(&r, max);
        append_in_steps(&r, all, n, steps[i]);
        expect_kept(&r, all, n, max);
        output_ring_release(&r);
    }
    free(all);
    char marker[OUTPUT_RING_MARKER_MAX];
    size_t len = output_ring_marker(19922944, marker);
    assert_string_equal(marker, "\n[execgate: 19922944 bytes of output omitted]\n");
    assert_int_equal(len, strlen(marker));
    len = output_ring_marker(UINT64_MAX, marker);
    assert_string_equal(marker, "\n[execgate: 18446744073709551615 bytes of output omitted]\n");
    assert_int_equal(len, strlen(marker));
}

static void
test_many_tiny_writes(void **state)
{
    /* byte by byte, and in pieces of 1 to 13 bytes, around the ring many times */
    check(100, 100000, 1);
    check(101, 12345, 3);
    for (size_t step = 1; step <= 13; step++)
        check(64, 5000 + step, step);
}

static void
test_nul_bytes_are_kept(void **state)
{
    char all[300];
    for (size_t i = 0; i < sizeof(all); i++)
        all[i] = i % 3 ? '\0' : 'x';
    struct output_ring r;
    output_ring_init(&r, 100);
    append_in_steps(&r, all, sizeof(all), 7);
    expect_kept(&r, all, sizeof(all), 100);
    output_ring_release(&r);
}

/*
 * The kept text as a person reads it: head, marker, tail, each repaired as
 * UTF-8 on its own, equals the repair of their concatenation (which is
 * what the output was before the pieces were kept apart).
 */
static void
expect_pieces_repair_as_one(struct output_ring *r)
{
    struct output_ring_text t;
    output_ring_text(r, &t);
    char marker[OUTPUT_RING_MARKER_MAX];
    size_t m = t.cut ? output_ring_marker(t.omitted, marker) : 0;
    size_t n = t.head_len + m + t.tail_len;
    char *joined = malloc(n + 1);
    assert_non_null(joined);
    memcpy(joined, t.head, t.head_len);
    memcpy(joined + t.head_len, marker, m);
    memcpy(joined + t.head_len + m, t.tail, t.tail_len);
    size_t want_len = utf8_json_escape(NULL, joined, n, 1);
    char *want = malloc(want_len);
    assert_non_null(want);
    utf8_json_escape(want, joined, n, 1);
    size_t got_len = utf8_json_escape(NULL, t.head, t.head_len, 1) +
                     utf8_json_escape(NULL, marker, m, 1) +
                     utf8_json_escape(NULL, t.tail, t.tail_len, 1);
    assert_int_equal(got_len, want_len);
    char *got = malloc(got_len);
    assert_non_null(got);
    size_t at = utf8_json_escape(got, t.head, t.head_len, 1);
    at += utf8_json_escape(got + at, marker, m, 1);
    utf8_json_escape(got + at, t.tail, t.tail_len, 1);
    assert_memory_equal(got, want, want_len);
    free(got);
    free(want);
    free(joined);
}

static void
test_utf8_cut_at_the_ring_boundaries(void **state)
{
    /* "€" (3 bytes) over and over: max 64 keeps a head of 32 bytes (10 and
     * 2/3 of a "€") and a tail of 32 that starts inside one */
    const char euro[] = "\xE2\x82\xAC";
    char all[3 * 100];
    for (size_t i = 0; i < 100; i++)
        memcpy(all + 3 * i, euro, 3);
    for (size_t n = 60; n <= sizeof(all); n++) {
        for (size_t step = 1; step <= 5; step += 2) {
            struct output_ring r;
            output_ring_init(&r, 64);
            append_in_steps(&r, all, n, step);
            expect_kept(&r, all, n, 64);
            expect_pieces_repair_as_one(&r);
            output_ring_release(&r);
        }
    }
    /* max 62: the head (31 bytes) ends in the first byte of a "€", which
     * becomes one replacement; the tail (31) starts on the last byte of
     * one, a lone continuation byte */
    struct output_ring r;
    output_ring_init(&r, 62);
    append_in_steps(&r, all, sizeof(all), 4);
    struct output_ring_text t;
    output_ring_text(&r, &t);
    size_t len = 0;
    char *head = utf8_lossy(t.head, t.head_len, &len);
    assert_non_null(head);
    assert_int_equal(len, 33); /* 10 whole "€" and one U+FFFD */
    assert_memory_equal(head + 30, "\xEF\xBF\xBD", 3);
    free(head);
    char *tail = utf8_lossy(t.tail, t.tail_len, &len);
    assert_non_null(tail);
    assert_int_equal(t.tail_len, 31);
    assert_int_equal(len, 33);
    assert_memory_equal(tail, "\xEF\xBF\xBD\xE2\x82\xAC", 6);
    free(tail);
    output_ring_release(&r);
}

/* all[0, n) as a reader would put it: appended until the ring starts, then
 * read straight into the space it offers, at most step bytes at a time. */
static void
read_in_steps(struct output_ring *r, const char *all, size_t n, size_t step)
{
    size_t at = 0;
    while (at < n) {
        size_t room = 0, now = n - at < step ? n - at : step;
        char *space = output_ring_space(r, &room);
        if (!space) {
            assert_int_equal(output_ring_append(r, all + at, now), 0);
        } else {
            assert_true(room > 0);
            if (now > room)
                now = room;
            memcpy(space, all + at, now);
            output_ring_wrote(r, now);
        }
        at += now;
    }
}

static void
test_reads_into_the_ring(void **state)
{
    char *all = numbered(300000);
    static const size_t maxes[] = {1, 2, 64, 65, 1000, 4097};
    static const size_t steps[] = {1, 3, 64, 4096, 65536};
    for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
        for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
            struct output_ring r;
            output_ring_init(&r, maxes[m]);
            read_in_steps(&r, all, 300000, steps[k]);
            expect_kept(&r, all, 300000, maxes[m]);
            output_ring_release(&r);
        }
    }
    /* no space is offered before the ring starts */
    struct output_ring r;
    output_ring_init(&r, 64);
    size_t room = 7;
    assert_null(output_ring_space(&r, &room));
    assert_int_equal(output_ring_append(&r, all, 64), 0);
    assert_null(output_ring_space(&r, &room));
    assert_int_equal(output_ring_append(&r, all + 64, 1), 0);
    assert_non_null(output_ring_space(&r, &room));
    assert_int_equal(room, 31); /* the ring's oldest byte was replaced */
    output_ring_release(&r);
    free(all);
}

static void
test_text_twice_and_appending_after(void **state)
{
    /* output_ring_text turns the ring in place; the ring stays a ring */
    char *all = numbered(5000);
    struct output_ring r;
    output_ring_init(&r, 100);
    append_in_steps(&r, all, 3333, 17);
    expect_kept(&r, all, 3333, 100);
    expect_kept(&r, all, 3333, 100);
    append_in_steps(&r, all + 3333, 5000 - 3333, 9);
    expect_kept(&r, all, 5000, 100);
    output_ring_release(&r);
    free(all);
}

static void
test_out_of_memory_counts_as_omitted(void **state)
{
    char *all = numbered(10000);
    struct output_ring r;
    output_ring_init(&r, 8192);
    assert_int_equal(output_ring_append(&r, all, 100), 0);
    alloc_fail_arm(0);
    /* growing past the first 4096 bytes fails: those bytes are left out */
    assert_int_equal(output_ring_append(&r, all + 100, 5000), -1);
    alloc_fail_disarm();
    assert_int_equal(r.total, 5100);
    assert_int_equal(r.omitted, 5000);
    struct output_ring_text t;
    output_ring_text(&r, &t);
    assert_false(t.cut);
    assert_int_equal(t.head_len, 100);
    assert_memory_equal(t.head, all, 100);
    /* later output is kept again */
    assert_int_equal(output_ring_append(&r, all + 5100, 10), 0);
    output_ring_text(&r, &t);
    assert_int_equal(t.head_len, 110);
    assert_memory_equal(t.head + 100, all + 5100, 10);
    output_ring_release(&r);
    /* the first allocation fails: nothing kept, all counted */
    output_ring_init(&r, 8192);
    alloc_fail_arm(0);
    assert_int_equal(output_ring_append(&r, all, 1), -1);
    alloc_fail_disarm();
    output_ring_text(&r, &t);
    assert_int_equal(t.head_len, 0);
    assert_int_equal(t.omitted, 1);
    output_ring_release(&r);
    output_ring_release(&r); /* again: a no-op on an empty ring */
    free(all);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_output_is_kept_whole),
        cmocka_unit_test(test_exactly_at_the_limit),
        cmocka_unit_test(test_one_byte_over),
        cmocka_unit_test(test_huge_output_head_tail_and_marker),
        cmocka_unit_test(test_many_tiny_writes),
        cmocka_unit_test(test_nul_bytes_are_kept),
        cmocka_unit_test(test_utf8_cut_at_the_ring_boundaries),
        cmocka_unit_test(test_reads_into_the_ring),
        cmocka_unit_test(test_text_twice_and_appending_after),
        cmocka_unit_test(test_out_of_memory_counts_as_omitted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
