/* utf8_lossy: command output to JSON text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "utf8.h"

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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_text_is_unchanged),
        cmocka_unit_test(test_bad_bytes_are_replaced),
        cmocka_unit_test(test_truncated_sequences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
