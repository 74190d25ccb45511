/*
 * state_paths: the server's own files, made absolute and canonical on a
 * scratch tree: links resolved as far as the path exists, the missing rest
 * appended with "." and ".." taken as the kernel would once it exists,
 * relative paths against the cwd; and the list state_paths_new builds from
 * CODEX_HOME (or HOME), the rules paths and the audit log, each once, and
 * the one state_paths_hidden builds from the token file, the Unix sockets
 * and the audit log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/options.h"
#include "server/state_paths.h"
#include "common/strv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/tmpdir.h"

/* The scratch tree's root, canonical. */
static char *root;

static char *
at(const char *rel)
{
    return tmpdir_path(root, rel);
}

static int
setup(void **state)
{
    root = tmpdir_new("state-paths"); /* canonical */
    tmpdir_make_dir(root, "real");
    tmpdir_make_dir(root, "real/sub");
    char *file = at("real/file");
    tmpdir_write_file(file, "", 0644);
    free(file);
    tmpdir_make_link("real", root, "rel-link");
    char *abs_target = at("real/sub");
    tmpdir_make_link(abs_target, root, "abs-link");
    free(abs_target);
    tmpdir_make_link("loop-b", root, "loop-a");
    tmpdir_make_link("loop-a", root, "loop-b");
    *state = root; /* removed by tmpdir_teardown */
    return 0;
}

/* Asserts that the canonical form of root/rel is root/want. */
static void
assert_canonical(const char *rel, const char *want_rel)
{
    char *path = at(rel);
    char *want = want_rel[0] ? at(want_rel) : strdup(root);
    assert_non_null(want);
    char *got = state_paths_canonical(path);
    if (got == NULL || strcmp(got, want) != 0)
        fail_msg("canonical(%s): %s, expected %s", path, got ? got : "NULL", want);
    free(got);
    free(want);
    free(path);
}

static void
test_existing(void **state)
{
    assert_canonical("real/file", "real/file");
    assert_canonical("real/./sub", "real/sub");
    assert_canonical("real/sub/..", "real");
    assert_canonical("real/sub/../file", "real/file");
    assert_canonical("real/", "real");
    (void)state;
}

static void
test_links_resolved(void **state)
{
    assert_canonical("rel-link/file", "real/file");
    assert_canonical("abs-link", "real/sub");
    /* ".." of a link is the parent of what it names, not of the link. */
    assert_canonical("abs-link/../file", "real/file");
    (void)state;
}

/* What does not exist yet is appended to what does, resolved. */
static void
test_missing_tail(void **state)
{
    assert_canonical("real/new", "real/new");
    assert_canonical("real/new/deeper/file", "real/new/deeper/file");
    assert_canonical("rel-link/new/file", "real/new/file");
    assert_canonical("abs-link/new", "real/sub/new");
    assert_canonical("real/new/./file", "real/new/file");
    assert_canonical("real/new/", "real/new");
    /* ".." after an existing directory inside the missing part. */
    assert_canonical("real/sub/../new", "real/new");
    (void)state;
}

/* ".." right after a missing directory: once a command creates it (a
 * directory, not a link), the path names the missing directory's parent's
 * child; that is what must be protected. */
static void
test_dot_dot_after_missing(void **state)
{
    assert_canonical("real/new/../file", "real/file");
    assert_canonical("real/new/../other", "real/other");
    assert_canonical("real/a/b/../../c", "real/c");
    assert_canonical("rel-link/new/../file", "real/file");
    (void)state;
}

static void
test_relative_to_cwd(void **state)
{
    char *old = getcwd(NULL, 0);
    assert_non_null(old);
    char *dir = at("real");
    assert_int_equal(chdir(dir), 0);
    char *got = state_paths_canonical("sub/new");
    char *want = at("real/sub/new");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
    got = state_paths_canonical("../rel-link/file");
    want = at("real/file");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
    assert_int_equal(chdir(old), 0);
    free(dir);
    free(old);
    (void)state;
}

static void
test_loop(void **state)
{
    char *p = at("loop-a/file");
    assert_null(state_paths_canonical(p));
    free(p);
    (void)state;
}

static void
test_root(void **state)
{
    char *got = state_paths_canonical("/");
    assert_non_null(got);
    assert_string_equal(got, "/");
    free(got);
    got = state_paths_canonical("/..");
    assert_non_null(got);
    assert_string_equal(got, "/");
    free(got);
    (void)state;
}

/* A list of n paths (NULL after them) is want (n_want names in the tree,
 * in order); then it is freed. */
static void
assert_paths(char **paths, size_t n, const char *const *want, size_t n_want)
{
    assert_non_null(paths);
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++) {
        char *w = at(want[i]);
        assert_string_equal(paths[i], w);
        free(w);
    }
    assert_null(paths[n]);
    strv_free(paths);
}

/* The list: CODEX_HOME, the rules paths, the audit log; canonical, each
 * once, empty entries left out. */
static void
test_new(void **state)
{
    char *home = at("rel-link/codex-home");
    assert_int_equal(setenv("CODEX_HOME", home, 1), 0);
    char *r1 = at("real/rules");
    char *r2 = at("rel-link/rules"); /* the same place as r1 */
    char *r3 = at("abs-link/x.rules");
    char *empty = strdup("");
    char *rules[] = {r1, r2, r3, empty, NULL};
    struct server_options o = {.rules = rules, .rules_count = 4};
    o.audit_log = at("real/new/../audit.log");

    size_t n = 99;
    char **paths = state_paths_new(&o, &n);
    const char *want[] = {"real/codex-home", "real/rules", "real/sub/x.rules", "real/audit.log"};
    assert_paths(paths, n, want, sizeof want / sizeof want[0]);

    /* Without CODEX_HOME: HOME/.codex. */
    assert_int_equal(unsetenv("CODEX_HOME"), 0);
    char *h = at("real");
    assert_int_equal(setenv("HOME", h, 1), 0);
    struct server_options none = {.rules = (char *[]){NULL}};
    paths = state_paths_new(&none, &n);
    assert_non_null(paths);
    assert_int_equal(n, 1);
    char *w = at("real/.codex");
    assert_string_equal(paths[0], w);
    free(w);
    strv_free(paths);
    strv_free(NULL);

    free(h);
    free(o.audit_log);
    free(empty);
    free(r3);
    free(r2);
    free(r1);
    free(home);
    (void)state;
}

/* The hidden list: the token file, each Unix socket of --listen (TCP
 * addresses left out), the audit log; canonical, each once. */
static void
test_hidden(void **state)
{
    char *token = at("rel-link/token");
    char *sock = at("abs-link/../sub/mcp.sock");
    char *unix1 = NULL, *unix2 = NULL;
    assert_true(asprintf(&unix1, "unix:%s", sock) > 0);
    char *again = at("real/sub/mcp.sock");
    assert_true(asprintf(&unix2, "unix:%s", again) > 0);
    char tcp[] = "127.0.0.1:0";
    char *listen[] = {tcp, unix1, unix2, NULL};
    struct server_options o = {.token_file = token, .listen = listen, .listen_count = 3};
    o.audit_log = at("real/audit.log");
    size_t n = 99;
    char **paths = state_paths_hidden(&o, &n);
    const char *want[] = {"real/token", "real/sub/mcp.sock", "real/audit.log"};
    assert_paths(paths, n, want, sizeof want / sizeof want[0]);

    /* Stdio, no token, no log: nothing to hide. */
    struct server_options none = {.rules = (char *[]){NULL}};
    paths = state_paths_hidden(&none, &n);
    assert_non_null(paths);
    assert_int_equal(n, 0);
    assert_null(paths[0]);
    strv_free(paths);

    free(o.audit_log);
    free(again);
    free(unix1);
    free(unix2);
    free(sock);
    free(token);
    (void)state;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_existing),
        cmocka_unit_test(test_links_resolved),
        cmocka_unit_test(test_missing_tail),
        cmocka_unit_test(test_dot_dot_after_missing),
        cmocka_unit_test(test_relative_to_cwd),
        cmocka_unit_test(test_loop),
        cmocka_unit_test(test_root),
        cmocka_unit_test(test_new),
        cmocka_unit_test(test_hidden),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
