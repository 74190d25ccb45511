/*
 * Tests for starlark/unicode: the code-point walk over UTF-8 and the
 * properties and case mappings, checked against what Rust's char methods
 * (and so Codex) answer for the characters that differ from ASCII rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "starlark/unicode.h"

static void
test_walk(void **state)
{
    (void)state;
    const char *s = "a\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\xbf"; /* a é 日 😿 */
    size_t n = strlen(s), i = 0;
    assert_int_equal(unicode_count(s, n), 4);
    assert_int_equal(unicode_next(s, n, &i), 'a');
    assert_int_equal(unicode_next(s, n, &i), 0xe9);
    assert_int_equal(unicode_next(s, n, &i), 0x65e5);
    assert_int_equal(unicode_next(s, n, &i), 0x1f63f);
    assert_int_equal(i, n);
    assert_int_equal(unicode_prev(s, &i), 0x1f63f);
    assert_int_equal(i, 6);
    assert_int_equal(unicode_offset(s, n, 2), 3);
    assert_int_equal(unicode_offset(s, n, 9), n);
    assert_false(unicode_is_ascii(s, n));
    assert_true(unicode_is_ascii(s, 1));
}

static void
test_properties(void **state)
{
    (void)state;
    /* White_Space, as char::is_whitespace: U+200B and U+FEFF are not. */
    static const uint32_t space[] = {0x9,    0xd,    0x20,   0x85,   0xa0,   0x1680, 0x2000,
                                     0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000};
    for (size_t i = 0; i < sizeof space / sizeof space[0]; i++)
        assert_true(unicode_is_whitespace(space[i]));
    assert_false(unicode_is_whitespace(0x200b));
    assert_false(unicode_is_whitespace(0xfeff));
    assert_false(unicode_is_whitespace('x'));
    assert_true(unicode_is_alphabetic(0xe9));
    assert_true(unicode_is_alphabetic(0x65e5));
    assert_false(unicode_is_alphabetic('1'));
    assert_true(unicode_is_numeric(0x663)); /* ARABIC-INDIC DIGIT THREE */
    assert_true(unicode_is_numeric(0xbd));  /* VULGAR FRACTION ONE HALF */
    assert_true(unicode_is_lowercase(0xdf));
    assert_true(unicode_is_uppercase(0x130));
    assert_false(unicode_is_lowercase(0x1c5)); /* titlecase DŽ is neither */
    assert_false(unicode_is_uppercase(0x1c5));
    assert_true(unicode_is_cased(0x1c5));
    assert_true(unicode_is_case_ignorable('\''));
    assert_true(unicode_is_case_ignorable(0x301));
    assert_false(unicode_is_case_ignorable('a'));
}

static void
expect_map(uint32_t cp, bool upper, const uint32_t *want, size_t n)
{
    uint32_t out[UNICODE_MAX_MAPPING];
    size_t got = upper ? unicode_to_upper(cp, out) : unicode_to_lower(cp, out);
    assert_int_equal(got, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(out[i], want[i]);
}

static void
test_case_mappings(void **state)
{
    (void)state;
    expect_map('a', true, (uint32_t[]){'A'}, 1);
    expect_map('Z', false, (uint32_t[]){'z'}, 1);
    expect_map(0xdf, true, (uint32_t[]){'S', 'S'}, 2);             /* ß */
    expect_map(0xe9, true, (uint32_t[]){0xc9}, 1);                 /* é */
    expect_map(0x130, false, (uint32_t[]){'i', 0x307}, 2);         /* İ */
    expect_map(0xfb01, true, (uint32_t[]){'F', 'I'}, 2);           /* ﬁ */
    expect_map(0x390, true, (uint32_t[]){0x399, 0x308, 0x301}, 3); /* ΐ */
    expect_map(0x1c5, true, (uint32_t[]){0x1c4}, 1);
    expect_map(0x1c5, false, (uint32_t[]){0x1c6}, 1);
    expect_map(0x65e5, true, (uint32_t[]){0x65e5}, 1);
    expect_map(0x10ffff, false, (uint32_t[]){0x10ffff}, 1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk),
        cmocka_unit_test(test_properties),
        cmocka_unit_test(test_case_mappings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
