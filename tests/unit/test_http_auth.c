/* http_auth: the Origin and bearer-token checks of the HTTP transport, and
 * the token file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/mcp/http_auth.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/tmpdir.h"

static void
test_loopback_origins_pass(void **state)
{
    assert_true(http_auth_origin_loopback("http://localhost"));
    assert_true(http_auth_origin_loopback("HTTPS://LOCALHOST:8443/"));
    assert_true(http_auth_origin_loopback("http://127.0.0.1:3000"));
    assert_true(http_auth_origin_loopback("http://127.200.3.4"));
    assert_true(http_auth_origin_loopback("http://[::1]:6274"));
    (void)state;
}

static void
test_other_origins_fail(void **state)
{
    /* another host, or one that only begins like a loopback name */
    assert_false(http_auth_origin_loopback("http://example.com"));
    assert_false(http_auth_origin_loopback("http://localhost.example.com"));
    assert_false(http_auth_origin_loopback("http://127.0.0.1.example.com"));
    assert_false(http_auth_origin_loopback("http://128.0.0.1"));
    assert_false(http_auth_origin_loopback("http://[::2]"));
    assert_false(http_auth_origin_loopback("http://[::1"));
    /* another scheme, a port with no digits, a path, nothing */
    assert_false(http_auth_origin_loopback("ftp://localhost"));
    assert_false(http_auth_origin_loopback("http://localhost:"));
    assert_false(http_auth_origin_loopback("http://localhost/path"));
    assert_false(http_auth_origin_loopback("null"));
    assert_false(http_auth_origin_loopback(""));
    (void)state;
}

static void
test_bearer_must_match_whole_token(void **state)
{
    const char *token = "0123456789abcdef0123";
    assert_true(http_auth_bearer("Bearer 0123456789abcdef0123", token));
    assert_true(http_auth_bearer("bearer   0123456789abcdef0123", token));
    assert_false(http_auth_bearer(NULL, token));
    assert_false(http_auth_bearer("", token));
    assert_false(http_auth_bearer("Basic 0123456789abcdef0123", token));
    assert_false(http_auth_bearer("Bearer", token));
    assert_false(http_auth_bearer("Bearer ", token));
    /* a prefix, a longer text, one character off */
    assert_false(http_auth_bearer("Bearer 0123456789abcdef012", token));
    assert_false(http_auth_bearer("Bearer 0123456789abcdef01234", token));
    assert_false(http_auth_bearer("Bearer 0123456789abcdef0124", token));
    (void)state;
}

static void
test_token_file_is_made_private(void **state)
{
    char *dir = tmpdir_new("http-auth");
    *state = dir;
    char *path = tmpdir_path(dir, "token");
    char *err = NULL;
    char *token = http_auth_load_token(path, &err);
    assert_non_null(token);
    assert_null(err);
    assert_int_equal(strlen(token), 2 * HTTP_AUTH_TOKEN_BYTES);
    for (const char *p = token; *p; p++)
        assert_true(isxdigit((unsigned char)*p));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* read again: the same token, not a new one */
    char *again = http_auth_load_token(path, &err);
    assert_non_null(again);
    assert_string_equal(again, token);
    free(again);
    free(token);
    free(path);
}

static void
test_token_file_refusals(void **state)
{
    char *dir = tmpdir_new("http-auth");
    *state = dir;
    char *path = tmpdir_path(dir, "token");
    char *err = NULL;

    /* blanks around the first line are not the token */
    tmpdir_write_file(path, "  a-token-of-20-chars\t\nsecond line\n", 0600);
    char *token = http_auth_load_token(path, &err);
    assert_non_null(token);
    assert_string_equal(token, "a-token-of-20-chars");
    free(token);

    /* others may read it */
    assert_int_equal(chmod(path, 0644), 0);
    assert_null(http_auth_load_token(path, &err));
    assert_non_null(strstr(err, "0600"));
    free(err);
    err = NULL;

    /* too short to be a token */
    assert_int_equal(chmod(path, 0600), 0);
    tmpdir_write_file(path, "short\n", 0600);
    assert_null(http_auth_load_token(path, &err));
    assert_non_null(strstr(err, "shorter than 16"));
    free(err);
    err = NULL;

    /* a symbolic link is not followed */
    tmpdir_make_link(path, dir, "link");
    char *link = tmpdir_path(dir, "link");
    assert_null(http_auth_load_token(link, &err));
    assert_non_null(err);
    free(err);
    free(link);
    free(path);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loopback_origins_pass),
        cmocka_unit_test(test_other_origins_fail),
        cmocka_unit_test(test_bearer_must_match_whole_token),
        cmocka_unit_test_teardown(test_token_file_is_made_private, tmpdir_teardown),
        cmocka_unit_test_teardown(test_token_file_refusals, tmpdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
