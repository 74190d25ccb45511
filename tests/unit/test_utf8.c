/* utf8_lossy and utf8_json_escape: command output to JSON text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/utf8.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void
check(const char *in, size_t n, const char *want, size_t want_len)
{
    size_t len = 0;
    char *out = utf8_lossy(in, n, &len);
    assert_non_null(out);
    assert_int_equal(len, want_len);
    assert_memory_equal(out, want, want_len);
    assert_int_equal(out[len], '\0');
    free(out);
}

#define CHECK(in, want) check(in, sizeof(in) - 1, want, sizeof(want) - 1)
#define FFFD            "\xEF\xBF\xBD"

static void
test_valid_text_is_unchanged(void **state)
{
    CHECK("", "");
    CHECK("plain ascii\n", "plain ascii\n");
    CHECK("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    CHECK("nul\0inside", "nul\0inside");
    CHECK("\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF"); /* U+10FFFF */
}

static void
test_bad_bytes_are_replaced(void **state)
{
    CHECK("a\xFF"
          "b",
          "a" FFFD "b");
    CHECK("\x80", FFFD);
    CHECK("\xC0\xAF", FFFD FFFD);                   /* overlong '/' */
    CHECK("\xE0\x80\xAF", FFFD FFFD FFFD);          /* overlong, 3 bytes */
    CHECK("\xED\xA0\x80", FFFD FFFD FFFD);          /* a surrogate */
    CHECK("\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* beyond U+10FFFF */
    CHECK("\xF5", FFFD);
}

static void
test_truncated_sequences(void **state)
{
    /* one replacement for the maximal valid prefix of a sequence */
    CHECK("\xE2\x82", FFFD);
    CHECK("x\xF0\x9F\x98", "x" FFFD);
    CHECK("\xE2\x82"
          "A",
          FFFD "A");
    CHECK("\xF0\x9F"
          "\xE2\x82\xAC",
          FFFD "\xE2\x82\xAC");
}

/* The inside of the string jansson's json_dumps makes of n bytes (valid
 * UTF-8). */
static char *
jansson_body(const char *in, size_t n, size_t *len)
{
    json_t *str = json_stringn(in, n);
    assert_non_null(str);
    char *dumped = json_dumps(str, JSON_ENCODE_ANY | JSON_COMPACT);
    assert_non_null(dumped);
    json_decref(str);
    *len = strlen(dumped) - 2;
    memmove(dumped, dumped + 1, *len);
    return dumped;
}

static char *
escaped(const char *in, size_t n, unsigned depth, size_t *len)
{
    *len = utf8_json_escape(NULL, in, n, depth);
    /* exactly the measured length: ASan finds a write past it */
    char *out = malloc(*len ? *len : 1);
    assert_non_null(out);
    assert_int_equal(utf8_json_escape(out, in, n, depth), *len);
    return out;
}

/* utf8_json_escape against jansson: once = jansson's text of the repaired
 * bytes; twice = jansson's text of that text. */
static void
check_escape(const char *in, size_t n)
{
    size_t fixed_len, want1_len, want2_len, got1_len, got2_len;
    char *fixed = utf8_lossy(in, n, &fixed_len);
    assert_non_null(fixed);
    char *want1 = jansson_body(fixed, fixed_len, &want1_len);
    char *want2 = jansson_body(want1, want1_len, &want2_len);
    char *got1 = escaped(in, n, 1, &got1_len);
    char *got2 = escaped(in, n, 2, &got2_len);
    assert_int_equal(got1_len, want1_len);
    assert_memory_equal(got1, want1, want1_len);
    assert_int_equal(got2_len, want2_len);
    assert_memory_equal(got2, want2, want2_len);
    free(fixed);
    free(want1);
    free(want2);
    free(got1);
    free(got2);
}

#define CHECK_ESCAPE(in) check_escape(in, sizeof(in) - 1)

static void
test_escape_like_jansson(void **state)
{
    CHECK_ESCAPE("");
    CHECK_ESCAPE("plain text, long enough for the eight-byte steps\n");
    CHECK_ESCAPE("\"quoted\" back\\slash /slash\b\f\n\r\t\x01\x1f\x7f");
    CHECK_ESCAPE("nul\0inside and \0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0 many");
    CHECK_ESCAPE("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF");
    CHECK_ESCAPE("bad \xFF\xFE\xC0\xAF\xED\xA0\x80\xF4\x90\x80\x80\xE2\x82 end");
    CHECK_ESCAPE("\xE2\x82"); /* cut at the very end */
    /* words of 8 bytes that all need an escape */
    CHECK_ESCAPE("\n\n\n\n\n\n\n\n\"\"\"\"\"\"\"\"\\\\\\\\\\\\\\\\\x01\x02\x03\x04\x05\x06\x07\x08"
                 "\x1f\x1e\x1d\x1c\x1b\x1a\x19\x18 and a plain end");
    /* every byte value, alone and between plain runs */
    for (unsigned c = 0; c < 256; c++) {
        char one[20];
        memset(one, 'a', sizeof(one));
        one[0] = (char)c;
        check_escape(one, 1);
        one[9] = (char)c;
        check_escape(one, sizeof(one));
    }
}

static void
test_escape_at_every_offset(void **state)
{
    /* the eight-byte steps and the end of the input: a byte that needs an
     * escape, or a sequence to check, at each offset of inputs of each
     * length */
    static const char *const odd[] = {
        "\n",   "\"",      "\\", "\x01", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
        "\xFF", "\xE2\x82"};
    char buf[48];
    for (size_t k = 0; k < sizeof(odd) / sizeof(odd[0]); k++) {
        size_t m = strlen(odd[k]);
        for (size_t n = m; n <= sizeof(buf); n++) {
            for (size_t at = 0; at + m <= n; at++) {
                memset(buf, 'x', n);
                memcpy(buf + at, odd[k], m);
                check_escape(buf, n);
            }
        }
    }
}

static void
test_escape_random_bytes(void **state)
{
    /* bytes drawn from those that matter, in long runs */
    static const char pool[] = "ab \n\"\\\x01\x1f\x7f\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xFF\x80";
    char buf[4096] = {0};
    unsigned seed = 7;
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)(round * 20) % sizeof(buf);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            buf[i] = pool[(seed >> 16) % (sizeof(pool) - 1)];
        }
        check_escape(buf, n);
    }
}

static void
test_valid(void **state)
{
    (void)state;
    assert_true(utf8_valid("", 0));
    assert_true(utf8_valid("plain", 5));
    assert_true(utf8_valid("a\0b", 3)); /* NUL is a character */
    assert_true(utf8_valid("\xc3\xa9", 2));
    assert_true(utf8_valid("\xef\xbf\xbf", 3));
    assert_true(utf8_valid("\xf4\x8f\xbf\xbf", 4));      /* U+10FFFF */
    assert_false(utf8_valid("\xe0\x80\x80", 3));         /* overlong */
    assert_false(utf8_valid("\xc0\xaf", 2));             /* overlong '/' */
    assert_false(utf8_valid("\xf0\x80\x80\x80", 4));     /* overlong */
    assert_false(utf8_valid("\xed\xa0\x80", 3));         /* a surrogate */
    assert_false(utf8_valid("\xf4\x90\x80\x80", 4));     /* above U+10FFFF */
    assert_false(utf8_valid("\xc3", 1));                 /* truncated */
    assert_false(utf8_valid("\xc3\xa9", 1));             /* cut by n */
    assert_false(utf8_valid("\xf8\x88\x80\x80\x80", 5)); /* five bytes */
    assert_false(utf8_valid("\x80", 1));                 /* a lone continuation */
}

/* The validator and the repair read bytes alike: text is valid exactly
 * when the repair leaves it as it is. */
static void
test_valid_agrees_with_repair(void **state)
{
    (void)state;
    static const char pool[] = "a\x00\x7f\x80\xbf\xc2\xc3\xa9\xe0\xa0\xed\x9f\xf0\x90\xf4\x8f\xff";
    char buf[12];
    unsigned seed = 11;
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)round % sizeof(buf);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            buf[i] = pool[(seed >> 16) % (sizeof(pool) - 1)];
        }
        size_t len = 0;
        char *out = utf8_lossy(buf, n, &len);
        assert_non_null(out);
        bool same = len == n && memcmp(out, buf, n) == 0;
        if (utf8_valid(buf, n) != same)
            fail_msg("round %d: utf8_valid says %d, the repair %s the text", round,
                     utf8_valid(buf, n), same ? "keeps" : "changes");
        free(out);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_valid_agrees_with_repair),
        cmocka_unit_test(test_valid_text_is_unchanged),
        cmocka_unit_test(test_bad_bytes_are_replaced),
        cmocka_unit_test(test_truncated_sequences),
        cmocka_unit_test(test_escape_like_jansson),
        cmocka_unit_test(test_escape_at_every_offset),
        cmocka_unit_test(test_escape_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
