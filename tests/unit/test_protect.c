/*
 * protect: the --protect argument check, the writable locations, and how
 * a path is resolved and judged inside or outside them.  (Creating,
 * pinning and binding need a mount namespace: tests/integration.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/policy/policy.h"
#include "sandbox/protect.h"
#include "tests/support/tmpdir.h"

static void
test_arg_error(void **state)
{
    assert_string_equal(sandbox_protect_arg_error(""), "empty path");
    assert_string_equal(sandbox_protect_arg_error("rel/x"), "not an absolute path");
    assert_string_equal(sandbox_protect_arg_error("./x"), "not an absolute path");
    const char *dots[] = {"/a/./b", "/a/..", "/..", "/.", "/a//../b", "/a/b/./"};
    for (size_t i = 0; i < sizeof dots / sizeof dots[0]; i++)
        assert_string_equal(sandbox_protect_arg_error(dots[i]), "has a \".\" or \"..\" component");
    const char *fine[] = {"/", "/a", "//a//b/", "/a/.b", "/a/..b", "/a/b..", "/.codex", "/a b"};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++)
        assert_null(sandbox_protect_arg_error(fine[i]));
}

static void
test_within(void **state)
{
    assert_true(sandbox_path_within("/a/b", "/a"));
    assert_true(sandbox_path_within("/a", "/a"));
    assert_true(sandbox_path_within("/a/b/c", "/a/b"));
    assert_false(sandbox_path_within("/ab", "/a"));
    assert_false(sandbox_path_within("/a", "/a/b"));
    assert_false(sandbox_path_within("/b", "/a"));
    assert_true(sandbox_path_within("/x/y", "/"));
    assert_true(sandbox_path_within("/", "/"));
}

struct fixture {
    char *ws;  /* the sandbox cwd, canonical */
    char *out; /* outside every writable location, canonical */
    struct sandbox_policy *policy;
    struct sandbox_protect *sp;
};

static char *
canonical_tmpdir(const char *tag)
{
    char *dir = tmpdir_new(tag);
    char *canon = realpath(dir, NULL);
    assert_non_null(canon);
    free(dir);
    return canon;
}

/* The --protect set of p's writable set with $TMPDIR tmpdir. */
static struct sandbox_protect *
protect_of(const struct sandbox_policy *p, const char *tmpdir)
{
    struct sandbox_writable *w = sandbox_writable_new(p, tmpdir);
    assert_non_null(w);
    struct sandbox_protect *sp = sandbox_protect_new(w);
    sandbox_writable_free(w);
    return sp;
}

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->ws = canonical_tmpdir("sbxprotws");
    f->out = canonical_tmpdir("sbxprotout");
    char *text;
    /* /tmp and $TMPDIR out: the scratch directories live there. */
    assert_true(asprintf(&text,
                         "{\"type\":\"workspace-write\",\"sandboxCwd\":\"%s\","
                         "\"exclude_tmpdir_env_var\":true,\"exclude_slash_tmp\":true}",
                         f->ws) > 0);
    char *err = NULL;
    f->policy = sandbox_policy_parse(text, &err);
    assert_non_null(f->policy);
    free(text);
    f->sp = protect_of(f->policy, NULL);
    assert_non_null(f->sp);
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    sandbox_protect_free(f->sp);
    sandbox_policy_free(f->policy);
    tmpdir_remove(f->ws);
    tmpdir_remove(f->out);
    free(f->ws);
    free(f->out);
    free(f);
    return 0;
}

/* Resolves path and checks the verdict, the canonical path and the
 * number of missing components. */
static void
assert_resolves(const struct fixture *f, const char *path, int want_rc, const char *want,
                size_t want_missing)
{
    char *resolved = NULL, *err = NULL;
    size_t missing = 99;
    int rc = sandbox_protect_resolve(f->sp, path, &resolved, &missing, &err);
    if (rc != want_rc)
        fail_msg("%s: rc %d, wanted %d (%s)", path, rc, want_rc, err ? err : "");
    assert_null(err);
    assert_non_null(resolved);
    assert_string_equal(resolved, want);
    assert_int_equal(missing, want_missing);
    free(resolved);
}

static char *
joined(const char *dir, const char *name)
{
    char *p;
    assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
    return p;
}

/* The locations are canonical; missing ones and those the policy
 * excludes are left out; other policies have none. */
static void
test_locations(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(sandbox_protect_location_count(f->sp), 1);
    assert_string_equal(sandbox_protect_location(f->sp, 0), f->ws);
    assert_null(sandbox_protect_location(f->sp, 1));

    char *link = joined(f->out, "link");
    assert_int_equal(symlink(f->ws, link), 0);
    char *text;
    assert_true(asprintf(&text,
                         "{\"type\":\"workspace-write\",\"sandboxCwd\":\"%s\","
                         "\"writable_roots\":[\"%s/none\",\"%s\"],\"exclude_slash_tmp\":true}",
                         link, f->out, f->out) > 0);
    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_parse(text, &err);
    assert_non_null(p);
    struct sandbox_protect *sp = protect_of(p, "relative/tmp");
    assert_int_equal(sandbox_protect_location_count(sp), 2);
    assert_string_equal(sandbox_protect_location(sp, 0), f->ws); /* the link resolved */
    assert_string_equal(sandbox_protect_location(sp, 1), f->out);
    sandbox_protect_free(sp);
    sp = protect_of(p, f->out); /* $TMPDIR, absolute */
    assert_int_equal(sandbox_protect_location_count(sp), 3);
    sandbox_protect_free(sp);
    sandbox_protect_free(NULL);
    sandbox_policy_free(p);
    free(text);

    p = sandbox_policy_parse("{\"type\":\"read-only\",\"sandboxCwd\":\"/\"}", &err);
    assert_non_null(p);
    sp = protect_of(p, "/tmp");
    assert_int_equal(sandbox_protect_location_count(sp), 0);
    char *resolved = NULL;
    size_t missing;
    assert_int_equal(sandbox_protect_resolve(sp, "/tmp", &resolved, &missing, &err), 0);
    free(resolved);
    sandbox_protect_free(sp);
    sandbox_policy_free(p);
    free(link);
}

static void
test_resolve_inside(void **state)
{
    struct fixture *f = *state;
    char *rules = joined(f->ws, "rules");
    assert_int_equal(mkdir(rules, 0755), 0);
    assert_resolves(f, f->ws, 1, f->ws, 0); /* the location itself */
    assert_resolves(f, rules, 1, rules, 0);

    /* Missing components are appended to the deepest existing ancestor,
     * doubled and trailing slashes dropped. */
    char *spelled, *want;
    assert_true(asprintf(&spelled, "%s//rules/a//b/", f->ws) > 0);
    assert_true(asprintf(&want, "%s/rules/a/b", f->ws) > 0);
    assert_resolves(f, spelled, 1, want, 2);

    /* A symlink: judged and named by its target. */
    char *link = joined(f->ws, "link");
    assert_int_equal(symlink("rules", link), 0);
    assert_resolves(f, link, 1, rules, 0);
    char *through = joined(link, "missing");
    char *through_want = joined(rules, "missing");
    assert_resolves(f, through, 1, through_want, 1);
    free(spelled);
    free(want);
    free(link);
    free(through);
    free(through_want);
    free(rules);
}

static void
test_resolve_outside(void **state)
{
    struct fixture *f = *state;
    char *missing = joined(f->out, "missing/deeper");
    assert_resolves(f, f->out, 0, f->out, 0);
    assert_resolves(f, missing, 0, missing, 2);
    assert_resolves(f, "/etc", 0, "/etc", 0);
    /* "/wsx" next to "/ws" is not inside it. */
    char *sibling;
    assert_true(asprintf(&sibling, "%sx", f->ws) > 0);
    assert_resolves(f, sibling, 0, sibling, 1);

    /* A symlink outside that leads into the workspace: inside. */
    char *link = joined(f->out, "to-ws");
    assert_int_equal(symlink(f->ws, link), 0);
    char *via = joined(link, "state");
    char *via_want = joined(f->ws, "state");
    assert_resolves(f, via, 1, via_want, 1);

    /* Unresolvable, but outside: nothing a command can change. */
    char *file = joined(f->out, "file");
    tmpdir_write_file(file, "x\n", 0644);
    char *under = joined(file, "sub");
    char *resolved = NULL, *err = NULL;
    size_t n;
    assert_int_equal(sandbox_protect_resolve(f->sp, under, &resolved, &n, &err), 0);
    assert_null(err);
    free(resolved);
    free(file);
    free(under);
    free(link);
    free(via);
    free(via_want);
    free(sibling);
    free(missing);
}

/* Unresolvable inside a location (a file or a symlink loop where a
 * directory should be): an error naming the path, nothing resolved. */
static void
test_resolve_unresolvable_inside(void **state)
{
    struct fixture *f = *state;
    char *file = joined(f->ws, "file");
    tmpdir_write_file(file, "x\n", 0644);
    char *under = joined(file, "sub");
    char *resolved = NULL, *err = NULL;
    size_t n;
    assert_int_equal(sandbox_protect_resolve(f->sp, under, &resolved, &n, &err), -ENOTDIR);
    assert_null(resolved);
    char *want;
    assert_true(asprintf(&want, "cannot resolve %s", under) > 0);
    assert_string_equal(err, want);
    free(err);
    free(want);

    char *loop = joined(f->ws, "loop");
    assert_int_equal(symlink("loop", loop), 0);
    char *in_loop = joined(loop, "x");
    err = NULL;
    assert_int_equal(sandbox_protect_resolve(f->sp, in_loop, &resolved, &n, &err), -ELOOP);
    assert_null(resolved);
    assert_non_null(err);
    free(err);
    free(loop);
    free(in_loop);
    free(file);
    free(under);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arg_error),
        cmocka_unit_test(test_within),
        cmocka_unit_test_setup_teardown(test_locations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_inside, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_outside, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_unresolvable_inside, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
