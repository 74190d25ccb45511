/* writable_history: the views of every call a server accepted, each
 * distinct one once, capped; views of everything left out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/call/writable_history.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dev_null[] = "/dev/null", dev_pts[] = "/dev/pts";
static char *devices[] = {dev_null, dev_pts};
/* roots (string literals are const: -Wwrite-strings) */
static char w_a[] = "/w/a", w_b[] = "/w/b", tmp[] = "/tmp";

/* A SOME view of the n roots (borrowed: the history copies), repo roots
 * the first n_repo of them, and the devices above. */
static struct writable_view
view_of(char **roots, size_t n, size_t n_repo)
{
    return (struct writable_view){
        .kind = WRITABLE_VIEW_SOME,
        .roots = roots,
        .n = n,
        .devices = devices,
        .n_devices = 2,
        .repo_roots = roots,
        .n_repo_roots = n_repo,
    };
}

static void
test_empty(void **state)
{
    struct writable_history *h = writable_history_new();
    assert_non_null(h);
    assert_false(writable_history_everything(h));
    assert_false(writable_history_contains(h, "/tmp/x"));
    assert_false(writable_history_contains(h, "/dev/null"));
    size_t n = 1;
    writable_history_views(h, &n);
    assert_int_equal(n, 0);
    assert_int_equal(writable_history_roots(h), 0);
    writable_history_free(h);
    writable_history_free(NULL);
    (void)state;
}

static void
test_add(void **state)
{
    struct writable_history *h = writable_history_new();
    char *a[] = {w_a, tmp};
    char *b[] = {w_b, tmp};
    struct writable_view va = view_of(a, 2, 1);
    assert_false(writable_history_add(h, &va));
    assert_true(writable_history_contains(h, "/w/a"));
    assert_true(writable_history_contains(h, "/w/a/tool"));
    assert_true(writable_history_contains(h, "/tmp/x"));
    assert_true(writable_history_contains(h, "/dev/pts/3"));
    assert_false(writable_history_contains(h, "/w/b/tool"));
    assert_false(writable_history_contains(h, "/w/ab"));
    /* the same view again, from another call: once */
    char a_copy[] = "/w/a", tmp_copy[] = "/tmp";
    struct writable_view again = view_of((char *[]){a_copy, tmp_copy}, 2, 1);
    assert_false(writable_history_add(h, &again));
    size_t n = 0;
    const struct writable_view *views = writable_history_views(h, &n);
    assert_int_equal(n, 1);
    assert_int_equal(writable_history_roots(h), 2);
    /* a copy: the history does not keep the caller's strings */
    assert_true(views[0].roots != a);
    assert_string_equal(views[0].roots[0], "/w/a");
    assert_int_equal(views[0].n_repo_roots, 1);
    /* the same roots with other repo roots are another view */
    struct writable_view other_repos = view_of(a, 2, 2);
    assert_false(writable_history_add(h, &other_repos));
    struct writable_view vb = view_of(b, 2, 1);
    assert_false(writable_history_add(h, &vb));
    writable_history_views(h, &n);
    assert_int_equal(n, 3);
    assert_int_equal(writable_history_roots(h), 6);
    assert_true(writable_history_contains(h, "/w/b/tool"));
    assert_false(writable_history_contains(h, "/w/c"));
    assert_false(writable_history_everything(h));
    writable_history_free(h);
    (void)state;
}

/* A command with no sandbox of execgate's had the rights an escalated
 * program has: its view (everything) is not remembered. */
static void
test_everything_view_not_remembered(void **state)
{
    struct writable_history *h = writable_history_new();
    struct writable_view all = {.kind = WRITABLE_VIEW_ALL};
    assert_false(writable_history_add(h, &all));
    assert_false(writable_history_everything(h));
    assert_false(writable_history_contains(h, "/w/a"));
    size_t n = 1;
    writable_history_views(h, &n);
    assert_int_equal(n, 0);
    /* a read-only call: its devices only */
    struct writable_view ro = view_of(NULL, 0, 0);
    assert_false(writable_history_add(h, &ro));
    assert_true(writable_history_contains(h, "/dev/null"));
    assert_false(writable_history_contains(h, "/w/a"));
    writable_history_free(h);
    (void)state;
}

/* WRITABLE_HISTORY_MAX_ROOTS roots in all are remembered; one more makes
 * the history everything, once, for good. */
static void
test_cap(void **state)
{
    struct writable_history *h = writable_history_new();
    char *roots[WRITABLE_HISTORY_MAX_ROOTS + 1];
    for (size_t i = 0; i <= WRITABLE_HISTORY_MAX_ROOTS; i++)
        assert_true(asprintf(&roots[i], "/w/%zu", i) > 0);
    /* views of four roots each, all distinct */
    for (size_t i = 0; i + 4 <= WRITABLE_HISTORY_MAX_ROOTS; i += 4) {
        struct writable_view v = view_of(roots + i, 4, 1);
        assert_false(writable_history_add(h, &v));
    }
    assert_int_equal(writable_history_roots(h), WRITABLE_HISTORY_MAX_ROOTS);
    assert_false(writable_history_everything(h));
    assert_false(writable_history_contains(h, "/elsewhere"));
    /* one already there is no more */
    struct writable_view first = view_of(roots, 4, 1);
    assert_false(writable_history_add(h, &first));
    assert_false(writable_history_everything(h));
    /* one root more */
    struct writable_view more = view_of(roots + WRITABLE_HISTORY_MAX_ROOTS, 1, 1);
    assert_true(writable_history_add(h, &more));
    assert_true(writable_history_everything(h));
    assert_true(writable_history_contains(h, "/elsewhere"));
    assert_true(writable_history_contains(h, "/usr/bin/cat"));
    size_t n = 1;
    writable_history_views(h, &n);
    assert_int_equal(n, 0);
    /* said once */
    assert_false(writable_history_add(h, &first));
    assert_false(writable_history_add(h, &more));
    assert_true(writable_history_everything(h));
    writable_history_free(h);

    /* one view larger than the cap alone */
    h = writable_history_new();
    struct writable_view big = view_of(roots, WRITABLE_HISTORY_MAX_ROOTS + 1, 0);
    assert_true(writable_history_add(h, &big));
    assert_true(writable_history_contains(h, "/"));
    writable_history_free(h);
    for (size_t i = 0; i <= WRITABLE_HISTORY_MAX_ROOTS; i++)
        free(roots[i]);
    (void)state;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_everything_view_not_remembered),
        cmocka_unit_test(test_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
