/*
 * path_list: appending copies and taken paths, membership, and that a
 * failed append leaves the list as it was and leaks nothing.
 */
#include "common/strv.h"
#include "sandbox/policy/path_list.h"

#include "tests/support/alloc_fail.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void
test_add_copies_and_keeps_order(void **state)
{
    (void)state;
    char **list = NULL;
    size_t n = 0;
    char path[] = "/work/a";
    assert_int_equal(path_list_add(&list, &n, path), 0);
    assert_int_equal(path_list_add(&list, &n, "/tmp"), 0);
    path[1] = 'X'; /* the list holds its own copy */
    assert_int_equal(n, 2);
    assert_string_equal(list[0], "/work/a");
    assert_string_equal(list[1], "/tmp");
    assert_true(path_list_has(list, n, "/tmp"));
    assert_true(path_list_has(list, n, "/work/a"));
    assert_false(path_list_has(list, n, "/work"));
    assert_false(path_list_has(list, n, "/tmp/"));
    assert_false(path_list_has(NULL, 0, "/tmp"));
    strv_free_n(list, n);
    strv_free_n(NULL, 0);
}

static void
test_take_owns_the_path(void **state)
{
    (void)state;
    char **list = NULL;
    size_t n = 0;
    char *p = strdup("/dev/null");
    assert_non_null(p);
    assert_int_equal(path_list_take(&list, &n, p), 0);
    assert_ptr_equal(list[0], p);
    strv_free_n(list, n);
}

/* One round: three appends (copies, then a taken path) into an empty
 * list, with one allocation failing when the sweep says so. */
static void
append_round(void *arg)
{
    (void)arg;
    char **list = NULL;
    size_t n = 0;
    int rc = path_list_add(&list, &n, "/a");
    if (rc == 0)
        rc = path_list_add(&list, &n, "/b");
    char *c = rc == 0 ? strdup("/c") : NULL;
    if (rc == 0)
        rc = c ? path_list_take(&list, &n, c) : -ENOMEM;
    if (alloc_fail_injected()) {
        assert_int_equal(rc, -ENOMEM);
        /* what was appended before the failure is still there, whole */
        assert_true(n < 3);
        for (size_t i = 0; i < n; i++)
            assert_string_equal(list[i], i == 0 ? "/a" : "/b");
    } else {
        assert_int_equal(rc, 0);
        assert_int_equal(n, 3);
        assert_string_equal(list[2], "/c");
    }
    strv_free_n(list, n);
}

static void
test_failed_append_leaves_the_list(void **state)
{
    (void)state;
    assert_true(alloc_fail_sweep(append_round, NULL) > 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_copies_and_keeps_order),
        cmocka_unit_test(test_take_owns_the_path),
        cmocka_unit_test(test_failed_append_leaves_the_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
