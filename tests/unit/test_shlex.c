/* shlex: splitting like Python's shlex.split (POSIX) and quoting like
 * shlex.join. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/strv.h"
#include "rules/shlex.h"

/* Splits s and compares with the NULL-terminated expected words. */
static void
expect_split(const char *s, const char *const *want)
{
    char **words = NULL;
    size_t n = 99;
    const char *err = "unset";
    assert_int_equal(shlex_split(s, strlen(s), &words, &n, &err), 0);
    assert_null(err);
    size_t want_n = 0;
    while (want[want_n])
        want_n++;
    assert_int_equal(n, want_n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(words[i], want[i]);
    assert_null(words[n]);
    strv_free(words);
}

static void
expect_error(const char *s, size_t len, const char *msg)
{
    char **words = (char **)1;
    size_t n = 99;
    const char *err = NULL;
    assert_int_equal(shlex_split(s, len, &words, &n, &err), -EINVAL);
    assert_non_null(err);
    assert_string_equal(err, msg);
    assert_null(words);
    assert_int_equal(n, 0);
}

static void
test_plain_words(void **state)
{
    (void)state;
    expect_split("git push origin", (const char *[]){"git", "push", "origin", NULL});
    expect_split("  a \t b\n\r c  ", (const char *[]){"a", "b", "\r", "c", NULL});
    expect_split("", (const char *[]){NULL});
    expect_split("   \t\n", (const char *[]){NULL});
}

static void
test_quotes(void **state)
{
    (void)state;
    expect_split("echo 'hello world'", (const char *[]){"echo", "hello world", NULL});
    expect_split("echo \"a b\" c", (const char *[]){"echo", "a b", "c", NULL});
    expect_split("a\"b c\"d", (const char *[]){"ab cd", NULL});
    expect_split("'it'\"'\"'s'", (const char *[]){"it's", NULL});
    /* Single quotes keep backslashes; double quotes keep $ and `. */
    expect_split("'a\\b' \"$x `y`\"", (const char *[]){"a\\b", "$x `y`", NULL});
    /* In double quotes \" \\ \$ \` are escapes; before other bytes the
     * backslash stays, and backslash-newline vanishes. */
    expect_split("\"a\\\"b\\\\c\\nd\"", (const char *[]){"a\"b\\c\\nd", NULL});
    expect_split("\"\\$x \\`y\\` \\q\"", (const char *[]){"$x `y` \\q", NULL});
    expect_split("\"a\\\nb\"", (const char *[]){"ab", NULL});
    /* A # that starts a word comments out the rest of the line, as in
     * Codex; inside a word it is an ordinary character. */
    expect_split("ls # a comment\nb", (const char *[]){"ls", "b", NULL});
    expect_split("#ls", (const char *[]){NULL});
    expect_split("a#b '#c' #d", (const char *[]){"a#b", "#c", NULL});
    /* A carriage return is part of a word, not a separator. */
    expect_split("a\r b", (const char *[]){"a\r", "b", NULL});
}

static void
test_empty_words(void **state)
{
    (void)state;
    expect_split("''", (const char *[]){"", NULL});
    expect_split("a \"\" b", (const char *[]){"a", "", "b", NULL});
    expect_split("'' ''", (const char *[]){"", "", NULL});
}

static void
test_escapes(void **state)
{
    (void)state;
    expect_split("a\\ b c", (const char *[]){"a b", "c", NULL});
    expect_split("\\'x\\\"", (const char *[]){"'x\"", NULL});
    expect_split("\\\\", (const char *[]){"\\", NULL});
    /* An escaped newline continues the word, as in Codex. */
    expect_split("a\\\nb", (const char *[]){"ab", NULL});
    expect_split("caf\xc3\xa9 \xe2\x9c\x93", (const char *[]){"caf\xc3\xa9", "\xe2\x9c\x93", NULL});
}

static void
test_errors(void **state)
{
    (void)state;
    expect_error("echo 'abc", 9, "No closing quotation");
    expect_error("echo \"abc", 9, "No closing quotation");
    expect_error("echo \"a'", 8, "No closing quotation");
    expect_error("abc\\", 4, "No escaped character");
    expect_error("\"abc\\", 5, "No escaped character");
    expect_error("a\0b", 3, "NUL byte in command");
    expect_error("a\\\0", 3, "NUL byte in command");
}

static void
test_length_is_respected(void **state)
{
    (void)state;
    char **words = NULL;
    size_t n = 0;
    const char *err = NULL;
    /* Only the first 5 bytes count: the open quote after them is unseen. */
    assert_int_equal(shlex_split("ab cd 'x", 5, &words, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(words[1], "cd");
    strv_free(words);
    strv_free(NULL);
}

static void
expect_quote(const char *in, const char *want)
{
    char *q = shlex_quote(in);
    assert_non_null(q);
    assert_string_equal(q, want);
    /* Whatever we quote splits back to exactly the original word. */
    char **words = NULL;
    size_t n = 0;
    const char *err = NULL;
    assert_int_equal(shlex_split(q, strlen(q), &words, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(words[0], in);
    strv_free(words);
    free(q);
}

static void
test_quote(void **state)
{
    (void)state;
    expect_quote("plain", "plain");
    expect_quote("a/b.c-d_e@f%g+h=i:j,k", "a/b.c-d_e@f%g+h=i:j,k");
    expect_quote("", "''");
    expect_quote("hello world", "'hello world'");
    expect_quote("it's", "'it'\"'\"'s'");
    expect_quote("$HOME", "'$HOME'");
    expect_quote("a\nb", "'a\nb'");
    expect_quote("\\", "'\\'");
    expect_quote("caf\xc3\xa9", "'caf\xc3\xa9'");
}

static void
test_join_round_trip(void **state)
{
    (void)state;
    const char *argv[] = {"git", "commit", "-m", "it's a \"fix\"", "", "--", "*.c"};
    size_t n = sizeof argv / sizeof argv[0];
    char *joined = shlex_join(argv, n);
    assert_non_null(joined);
    assert_string_equal(joined, "git commit -m 'it'\"'\"'s a \"fix\"' '' -- '*.c'");
    char **words = NULL;
    size_t got = 0;
    const char *err = NULL;
    assert_int_equal(shlex_split(joined, strlen(joined), &words, &got, &err), 0);
    assert_int_equal(got, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(words[i], argv[i]);
    strv_free(words);
    free(joined);
    char *empty = shlex_join(NULL, 0);
    assert_string_equal(empty, "");
    free(empty);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_words), cmocka_unit_test(test_quotes),
        cmocka_unit_test(test_empty_words), cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_errors),      cmocka_unit_test(test_length_is_respected),
        cmocka_unit_test(test_quote),       cmocka_unit_test(test_join_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
