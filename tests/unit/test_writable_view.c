/* writable_view: where a call's sandbox can write, as the server sees it
 * from the call's sandboxPolicy object: the helper's writable set
 * (sandbox_writable_new), resolved. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/call/writable_view.h"
#include "sandbox/policy/policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/tmpdir.h"

/* Scratch directories, canonical: S under /var/tmp (outside /tmp, so
 * that only what a test grants covers it), T another one for $TMPDIR. */

/* The view of a sandboxPolicy object, as the server makes it: the policy
 * parsed (its errors are the parser's), then the view of what it grants. */
static int
view_from_json(struct writable_view *v, const json_t *policy, const char *sandbox_cwd, char **err)
{
    memset(v, 0, sizeof(*v));
    struct sandbox_policy *p = sandbox_policy_from_json(policy, sandbox_cwd, err);
    int rc = p ? writable_view_init_after(v, p, NULL, NULL, err) : -1;
    sandbox_policy_free(p);
    return rc;
}

static char *scratch;
static char *tmpdir_root;
static char *saved_tmpdir;

static void
make_dir(const char *dir, const char *rel)
{
    char *p = tmpdir_path(dir, rel);
    assert_int_equal(mkdir(p, 0755), 0);
    free(p);
}

static int
setup(void **state)
{
    const char *t = getenv("TMPDIR");
    saved_tmpdir = t ? strdup(t) : NULL;
    scratch = tmpdir_new_in("/var/tmp", "wv-s");
    tmpdir_root = tmpdir_new_in("/var/tmp", "wv-t");
    make_dir(scratch, "w");
    make_dir(scratch, "ab");
    make_dir(scratch, "abc");
    make_dir(scratch, "real");
    make_dir(scratch, "other");
    char *real = tmpdir_path(scratch, "real");
    char *link = tmpdir_path(scratch, "link");
    assert_int_equal(symlink(real, link), 0);
    free(real);
    free(link);
    (void)state;
    return 0;
}

static int
teardown(void **state)
{
    if (saved_tmpdir)
        setenv("TMPDIR", saved_tmpdir, 1);
    else
        unsetenv("TMPDIR");
    free(saved_tmpdir);
    tmpdir_remove(scratch);
    tmpdir_remove(tmpdir_root);
    free(scratch);
    free(tmpdir_root);
    (void)state;
    return 0;
}

/* Each test starts with TMPDIR pointing at T. */
static int
with_tmpdir(void **state)
{
    assert_int_equal(setenv("TMPDIR", tmpdir_root, 1), 0);
    (void)state;
    return 0;
}

/* The view of the policy text with sandbox cwd cwd; fails the test when
 * it is refused. */
static void
view_of(struct writable_view *v, const char *policy_text, const char *cwd)
{
    json_error_t jerr;
    json_t *policy = json_loads(policy_text, 0, &jerr);
    if (!policy)
        fail_msg("bad test policy %s: %s", policy_text, jerr.text);
    char *err = NULL;
    int rc = view_from_json(v, policy, cwd, &err);
    if (rc != 0)
        fail_msg("view_from_json(%s): %s", policy_text, err ? err : "(no message)");
    assert_null(err);
    json_decref(policy);
}

/* A policy text with the sandbox's writable_roots given as a JSON array. */
static char *
workspace(const char *roots_json, bool exclude_tmp, bool exclude_tmpdir)
{
    char *s = NULL;
    assert_true(asprintf(&s,
                         "{\"type\":\"workspace-write\",\"writable_roots\":%s,"
                         "\"exclude_slash_tmp\":%s,\"exclude_tmpdir_env_var\":%s}",
                         roots_json ? roots_json : "[]", exclude_tmp ? "true" : "false",
                         exclude_tmpdir ? "true" : "false") >= 0);
    return s;
}

static bool
has(char *const *list, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(list[i], path) == 0)
            return true;
    }
    return false;
}

static void
assert_root(const struct writable_view *v, const char *path, bool want)
{
    if (has(v->roots, v->n, path) != want)
        fail_msg("%s is%s a root, expected%s", path, want ? " not" : "", want ? "" : " not");
}

static void
assert_contains(const struct writable_view *v, const char *path, bool want)
{
    if (writable_view_contains(v, path) != want)
        fail_msg("contains(%s): %s, expected %s", path, want ? "false" : "true",
                 want ? "true" : "false");
}

static void
test_workspace_write(void **state)
{
    char *w = tmpdir_path(scratch, "w");
    char *other = tmpdir_path(scratch, "other");
    char *roots = NULL;
    assert_true(asprintf(&roots, "[\"%s\"]", other) >= 0);
    char *text = workspace(roots, false, false);
    struct writable_view v;
    view_of(&v, text, w);
    assert_int_equal(v.kind, WRITABLE_VIEW_SOME);
    char *tmp = realpath("/tmp", NULL);
    char *dev = realpath("/dev", NULL);
    assert_non_null(tmp);
    assert_non_null(dev);
    assert_root(&v, w, true);
    assert_root(&v, other, true);
    assert_root(&v, tmp, true);
    assert_root(&v, tmpdir_root, true);
    /* /dev is no root: the helper makes only its device nodes writable */
    assert_root(&v, dev, false);
    assert_int_equal(v.n, 4);

    char *file = tmpdir_path(w, "x/y");
    assert_contains(&v, file, true);
    free(file);
    file = tmpdir_path(other, "prog");
    assert_contains(&v, file, true);
    free(file);
    file = tmpdir_path(tmpdir_root, "f");
    assert_contains(&v, file, true);
    free(file);
    assert_contains(&v, "/tmp/anything", true);
    assert_contains(&v, "/dev/null", true);
    assert_contains(&v, "/dev/shm/prog", false);
    assert_contains(&v, "/usr/bin/cat", false);
    assert_contains(&v, scratch, false);
    file = tmpdir_path(scratch, "ab/x");
    assert_contains(&v, file, false);
    free(file);

    /* repo_roots: the sandbox cwd and the writable roots, not /tmp,
     * $TMPDIR or /dev */
    assert_int_equal(v.n_repo_roots, 2);
    assert_true(has(v.repo_roots, v.n_repo_roots, w));
    assert_true(has(v.repo_roots, v.n_repo_roots, other));
    assert_false(has(v.repo_roots, v.n_repo_roots, tmp));
    assert_false(has(v.repo_roots, v.n_repo_roots, tmpdir_root));
    writable_view_release(&v);
    free(text);

    /* without /tmp and $TMPDIR */
    text = workspace(roots, true, true);
    view_of(&v, text, w);
    assert_root(&v, tmp, false);
    assert_root(&v, tmpdir_root, false);
    assert_root(&v, w, true);
    assert_root(&v, other, true);
    assert_contains(&v, "/tmp/anything", false);
    file = tmpdir_path(tmpdir_root, "f");
    assert_contains(&v, file, false);
    free(file);
    assert_contains(&v, "/dev/null", true);
    assert_int_equal(v.n_repo_roots, 2);
    writable_view_release(&v);
    free(text);

    /* each exclusion on its own */
    text = workspace(NULL, true, false);
    view_of(&v, text, w);
    assert_root(&v, tmp, false);
    assert_root(&v, tmpdir_root, true);
    writable_view_release(&v);
    free(text);
    text = workspace(NULL, false, true);
    view_of(&v, text, w);
    assert_root(&v, tmp, true);
    assert_root(&v, tmpdir_root, false);
    assert_int_equal(v.n_repo_roots, 1);
    writable_view_release(&v);
    free(text);

    free(tmp);
    free(dev);
    free(roots);
    free(w);
    free(other);
    (void)state;
}

static void
test_tmpdir_env(void **state)
{
    char *w = tmpdir_path(scratch, "w");
    char *text = workspace(NULL, true, false);
    struct writable_view v;

    /* a relative $TMPDIR grants nothing (not even relative to anything) */
    assert_int_equal(setenv("TMPDIR", "w", 1), 0);
    view_of(&v, text, scratch);
    assert_int_equal(v.n, 1);     /* the sandbox cwd */
    assert_contains(&v, w, true); /* under the sandbox cwd anyway */
    writable_view_release(&v);
    view_of(&v, text, w);
    char *ab = tmpdir_path(scratch, "ab");
    assert_contains(&v, ab, false);
    writable_view_release(&v);

    /* unset: nothing */
    assert_int_equal(unsetenv("TMPDIR"), 0);
    view_of(&v, text, w);
    assert_int_equal(v.n, 1);
    writable_view_release(&v);

    /* through a link: canonical */
    char *link = tmpdir_path(scratch, "link");
    char *real = tmpdir_path(scratch, "real");
    assert_int_equal(setenv("TMPDIR", link, 1), 0);
    view_of(&v, text, w);
    assert_root(&v, real, true);
    assert_root(&v, link, false);
    writable_view_release(&v);

    /* missing: nothing */
    char *missing = tmpdir_path(scratch, "missing");
    assert_int_equal(setenv("TMPDIR", missing, 1), 0);
    view_of(&v, text, w);
    assert_int_equal(v.n, 1);
    assert_contains(&v, missing, false);
    writable_view_release(&v);

    free(missing);
    free(link);
    free(real);
    free(ab);
    free(text);
    free(w);
    (void)state;
}

static void
test_read_only(void **state)
{
    char *w = tmpdir_path(scratch, "w");
    struct writable_view v;
    view_of(&v, "{\"type\":\"read-only\"}", w);
    assert_int_equal(v.kind, WRITABLE_VIEW_SOME);
    /* no root, /dev included: only the helper's device nodes */
    assert_int_equal(v.n, 0);
    assert_int_equal(v.n_repo_roots, 0);
    assert_contains(&v, "/dev/null", true);
    assert_contains(&v, "/dev/shm/prog", false);
    assert_contains(&v, "/dev/prog", false);
    assert_contains(&v, w, false);
    assert_contains(&v, "/tmp/x", false);
    char *file = tmpdir_path(tmpdir_root, "x");
    assert_contains(&v, file, false);
    free(file);
    assert_contains(&v, "/device", false);
    writable_view_release(&v);
    free(w);
    (void)state;
}

/* What contains answers with ALL: the path or its directory writable. */
static bool
writable_by_access(const char *path)
{
    char *dir = strdup(path);
    assert_non_null(dir);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    bool w = access(path, W_OK) == 0 || access(dir, W_OK) == 0;
    free(dir);
    return w;
}

static void
test_full_access(void **state)
{
    char *w = tmpdir_path(scratch, "w");
    struct writable_view v;
    const char *kinds[] = {"{\"type\":\"danger-full-access\"}", "{\"type\":\"external-sandbox\"}"};
    for (size_t k = 0; k < 2; k++) {
        view_of(&v, kinds[k], w);
        assert_int_equal(v.kind, WRITABLE_VIEW_ALL);
        assert_int_equal(v.n_repo_roots, 0);
        /* ours: writable */
        assert_contains(&v, w, true);
        char *f = tmpdir_path(w, "new-file");
        assert_contains(&v, f, true); /* its directory is */
        free(f);
        /* nothing there at all: not */
        assert_contains(&v, "/nonexistent-execgate/dir/x", false);
        /* the system's: whatever access(2) says for this user */
        const char *paths[] = {"/usr/bin/cat", "/usr/bin", "/", "/proc/self/status",
                               "/etc/hostname"};
        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
            assert_contains(&v, paths[i], writable_by_access(paths[i]));
        /* a file in a directory nobody may write (without privilege) */
        char *ro = tmpdir_path(scratch, "ro");
        assert_int_equal(mkdir(ro, 0555), 0);
        char *rof = tmpdir_path(ro, "f");
        assert_contains(&v, rof, writable_by_access(rof));
        if (geteuid() != 0)
            assert_contains(&v, rof, false);
        assert_int_equal(rmdir(ro), 0);
        free(rof);
        free(ro);
        writable_view_release(&v);
    }
    free(w);
    (void)state;
}

static void
test_roots_canonical(void **state)
{
    char *w = tmpdir_path(scratch, "w");
    char *link = tmpdir_path(scratch, "link");
    char *real = tmpdir_path(scratch, "real");
    char *missing = tmpdir_path(scratch, "missing");
    char *roots = NULL;
    assert_true(asprintf(&roots, "[\"%s\",\"%s\"]", link, missing) >= 0);
    char *text = workspace(roots, true, true);
    struct writable_view v;
    view_of(&v, text, w);
    /* the link is followed: the real directory is the root */
    assert_root(&v, real, true);
    assert_root(&v, link, false);
    assert_true(has(v.repo_roots, v.n_repo_roots, real));
    char *f = tmpdir_path(real, "f");
    assert_contains(&v, f, true);
    free(f);
    /* paths are compared as given: callers pass canonical ones */
    f = tmpdir_path(link, "f");
    assert_contains(&v, f, false);
    free(f);
    /* a root that does not exist grants nothing, nor its repo root */
    assert_root(&v, missing, false);
    assert_false(has(v.repo_roots, v.n_repo_roots, missing));
    assert_contains(&v, missing, false);
    f = tmpdir_path(missing, "f");
    assert_contains(&v, f, false);
    free(f);
    assert_int_equal(v.n, 2); /* w, real */
    assert_int_equal(v.n_repo_roots, 2);
    writable_view_release(&v);
    free(text);

    /* a sandbox cwd given through a link, and one that does not exist */
    text = workspace(NULL, true, true);
    view_of(&v, text, link);
    assert_root(&v, real, true);
    assert_true(has(v.repo_roots, v.n_repo_roots, real));
    writable_view_release(&v);
    view_of(&v, text, missing);
    assert_int_equal(v.n, 0);
    assert_int_equal(v.n_repo_roots, 0);
    assert_contains(&v, missing, false);
    writable_view_release(&v);
    free(text);

    free(roots);
    free(w);
    free(link);
    free(real);
    free(missing);
    (void)state;
}

/* whether dir (canonical) lies under the directory arg names */
static bool
written_under(void *arg, const char *dir)
{
    size_t n = strlen(arg);
    return strncmp(dir, arg, n) == 0 && (dir[n] == '/' || dir[n] == '\0');
}

/* A root reached through a link that lies in a writable location (the
 * policy's own roots, or where the caller says an earlier sandbox could
 * write) grants nothing; a link elsewhere (the user's) is followed. */
static void
test_planted_links(void **state)
{
    char *w = tmpdir_path(scratch, "w");
    char *real = tmpdir_path(scratch, "real");
    char *planted = tmpdir_path(w, "planted");     /* in the cwd: writable */
    char *below = tmpdir_path(w, "planted/below"); /* a link on the way */
    char *users = tmpdir_path(scratch, "link");    /* outside every root */
    make_dir(real, "below");
    assert_int_equal(symlink(real, planted), 0);
    char *roots = NULL;
    assert_true(asprintf(&roots, "[\"%s\",\"%s\"]", planted, below) >= 0);
    char *text = workspace(roots, true, true);
    struct writable_view v;
    view_of(&v, text, w);
    assert_root(&v, w, true);
    assert_root(&v, real, false);
    char *real_below = tmpdir_path(real, "below");
    assert_root(&v, real_below, false);
    assert_false(has(v.repo_roots, v.n_repo_roots, real));
    assert_int_equal(v.n, 1); /* w alone */
    writable_view_release(&v);
    free(text);
    free(roots);

    /* the user's link is followed, unless an earlier sandbox could write
     * where it lies */
    assert_true(asprintf(&roots, "[\"%s\"]", users) >= 0);
    text = workspace(roots, true, true);
    json_t *policy = json_loads(text, 0, NULL);
    assert_non_null(policy);
    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_from_json(policy, w, &err);
    assert_non_null(p);
    assert_int_equal(writable_view_init_after(&v, p, written_under, scratch, &err), 0);
    assert_root(&v, real, false);
    writable_view_release(&v);
    assert_int_equal(writable_view_init_after(&v, p, written_under, w, &err), 0);
    assert_root(&v, real, true);
    writable_view_release(&v);
    sandbox_policy_free(p);
    json_decref(policy);
    unlink(planted);
    free(text);
    free(roots);
    free(real_below);
    free(w);
    free(real);
    free(planted);
    free(below);
    free(users);
    (void)state;
}

static void
test_boundaries(void **state)
{
    char *w = tmpdir_path(scratch, "w");
    char *ab = tmpdir_path(scratch, "ab");
    char *roots = NULL;
    assert_true(asprintf(&roots, "[\"%s\"]", ab) >= 0);
    char *text = workspace(roots, true, true);
    struct writable_view v;
    view_of(&v, text, w);
    assert_contains(&v, ab, true);
    char *p = tmpdir_path(scratch, "ab/x");
    assert_contains(&v, p, true);
    free(p);
    p = tmpdir_path(scratch, "abc");
    assert_contains(&v, p, false); /* /a/bc is not under /a/b */
    free(p);
    p = tmpdir_path(scratch, "abc/x");
    assert_contains(&v, p, false);
    free(p);
    p = tmpdir_path(scratch, "a");
    assert_contains(&v, p, false);
    free(p);
    assert_contains(&v, scratch, false);
    /* "/dev/null" is a device: "/dev/nullx" is not under it, and /dev
     * itself is not writable */
    char *null = realpath("/dev/null", NULL);
    assert_non_null(null);
    assert_contains(&v, null, true);
    char *nullx = NULL;
    assert_true(asprintf(&nullx, "%sx", null) >= 0);
    assert_contains(&v, nullx, false);
    free(nullx);
    free(null);
    assert_contains(&v, "/device", false);
    assert_contains(&v, "/de", false);
    assert_contains(&v, "/dev", false);
    writable_view_release(&v);
    free(text);
    free(roots);

    /* "/" as a root: everything */
    text = workspace("[\"/\"]", true, true);
    view_of(&v, text, w);
    assert_contains(&v, "/usr/bin/cat", true);
    assert_contains(&v, "/", true);
    writable_view_release(&v);
    free(text);
    free(ab);
    free(w);
    (void)state;
}

/* Asserts that list (n long) is exactly the paths of want that resolve,
 * resolved, in order. */
static void
assert_resolved(char *const *list, size_t n, char *const *want, size_t n_want, const char *what)
{
    size_t k = 0;
    for (size_t i = 0; i < n_want; i++) {
        char *real = realpath(want[i], NULL);
        if (!real)
            continue;
        if (k >= n || strcmp(list[k], real) != 0)
            fail_msg("%s[%zu]: %s, wanted %s (from %s)", what, k, k < n ? list[k] : "(none)", real,
                     want[i]);
        free(real);
        k++;
    }
    if (k != n)
        fail_msg("%s: %zu paths, wanted %zu", what, n, k);
}

/* The view is the helper's writable set (sandbox_writable_new, with the
 * same $TMPDIR), each path resolved and those that do not resolve left
 * out: for every kind of policy. */
static void
test_follows_writable_set(void **state)
{
    char *w = tmpdir_path(scratch, "w");
    char *link = tmpdir_path(scratch, "link");
    char *missing = tmpdir_path(scratch, "missing");
    char *roots = NULL;
    assert_true(asprintf(&roots, "[\"%s\",\"%s\"]", link, missing) >= 0);
    char *texts[] = {
        strdup("{\"type\":\"danger-full-access\"}"),
        strdup("{\"type\":\"external-sandbox\",\"network_access\":\"restricted\"}"),
        strdup("{\"type\":\"read-only\"}"),
        strdup("{\"type\":\"read-only\",\"network_access\":true}"),
        workspace(NULL, false, false),
        workspace(roots, false, false),
        workspace(roots, true, false),
        workspace(roots, false, true),
        workspace(roots, true, true),
    };
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++)
        assert_non_null(texts[t]);
    const char *tmpdirs[] = {tmpdir_root, link, "relative", NULL};
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        for (size_t d = 0; d < sizeof tmpdirs / sizeof tmpdirs[0]; d++) {
            if (tmpdirs[d])
                assert_int_equal(setenv("TMPDIR", tmpdirs[d], 1), 0);
            else
                assert_int_equal(unsetenv("TMPDIR"), 0);
            char *err = NULL;
            json_t *j = json_loads(texts[t], 0, NULL);
            assert_non_null(j);
            struct sandbox_policy *p = sandbox_policy_from_json(j, w, &err);
            assert_non_null(p);
            struct sandbox_writable *set = sandbox_writable_new(p, tmpdirs[d]);
            assert_non_null(set);
            struct writable_view v;
            view_of(&v, texts[t], w);
            assert_int_equal(v.kind == WRITABLE_VIEW_ALL, set->everything);
            assert_resolved(v.roots, v.n, set->roots, set->n_roots, "roots");
            assert_resolved(v.devices, v.n_devices, set->devices, set->n_devices, "devices");
            assert_resolved(v.repo_roots, v.n_repo_roots, set->repo_roots, set->n_repo_roots,
                            "repo_roots");
            writable_view_release(&v);
            sandbox_writable_free(set);
            sandbox_policy_free(p);
            json_decref(j);
        }
    }
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++)
        free(texts[t]);
    free(roots);
    free(missing);
    free(link);
    free(w);
    (void)state;
}

/* In /dev only the helper's device nodes are writable: a program placed
 * anywhere else there (/dev/shm, /dev/mqueue, /dev itself) was put there
 * by someone the sandbox is not, unless a writable root lies there. */
static void
test_devices(void **state)
{
    char *w = tmpdir_path(scratch, "w");
    char *text = workspace(NULL, true, true);
    const char *policies[] = {"{\"type\":\"read-only\"}", text};
    for (size_t k = 0; k < 2; k++) {
        struct writable_view v;
        view_of(&v, policies[k], w);
        assert_true(v.n_devices > 0);
        char *null = realpath("/dev/null", NULL);
        assert_non_null(null);
        assert_contains(&v, null, true);
        free(null);
        struct stat st;
        if (stat("/dev/pts", &st) == 0) {
            char *pts = realpath("/dev/pts", NULL);
            char *pty = NULL;
            assert_true(asprintf(&pty, "%s/0", pts) >= 0);
            assert_contains(&v, pty, true);
            free(pty);
            free(pts);
        }
        const char *
            not [] = {"/dev",      "/dev/shm",   "/dev/shm/prog", "/dev/mqueue/prog",   "/dev/prog",
                      "/dev/fd/3", "/dev/stdin", "/dev/nullx",    "/dev/hugepages/prog"};
        for (size_t i = 0; i < sizeof not / sizeof not [0]; i++)
            assert_contains(&v, not [i], false);
        writable_view_release(&v);
    }
    free(text);

    /* a writable root in /dev is writable like any root */
    char *shm = realpath("/dev/shm", NULL);
    if (shm) {
        char *roots = NULL;
        assert_true(asprintf(&roots, "[\"%s\"]", shm) >= 0);
        text = workspace(roots, true, true);
        struct writable_view v;
        view_of(&v, text, w);
        char *prog = tmpdir_path(shm, "prog");
        assert_contains(&v, prog, true);
        assert_contains(&v, "/dev/mqueue/prog", false);
        free(prog);
        writable_view_release(&v);
        free(text);
        free(roots);
        free(shm);
    }
    free(w);
    (void)state;
}

static void
test_refused_and_release(void **state)
{
    struct writable_view v;
    memset(&v, 0, sizeof(v));
    writable_view_release(&v);
    writable_view_release(&v);
    /* an empty view grants nothing */
    assert_false(writable_view_contains(&v, "/tmp/x"));

    json_t *bad = json_loads("{\"type\":\"everything\"}", 0, NULL);
    assert_non_null(bad);
    char *err = NULL;
    assert_int_equal(view_from_json(&v, bad, "/", &err), -1);
    assert_non_null(err);
    assert_non_null(strstr(err, "everything"));
    assert_null(v.roots);
    assert_int_equal(v.n, 0);
    free(err);
    json_decref(bad);
    writable_view_release(&v);
    (void)state;
}

/* A copy is equal to its original and owns its lists; a view that
 * differs in any list, in order or in kind is not equal. */
static void
test_copy_and_equal(void **state)
{
    json_t *policy =
        json_pack("{s:s, s:[s], s:b, s:b}", "type", "workspace-write", "writable_roots",
                  tmpdir_root, "exclude_slash_tmp", 1, "exclude_tmpdir_env_var", 1);
    assert_non_null(policy);
    char *w = tmpdir_path(scratch, "w");
    struct writable_view v, c;
    char *err = NULL;
    assert_int_equal(view_from_json(&v, policy, w, &err), 0);
    assert_int_equal(v.n, 2);
    assert_int_equal(v.n_repo_roots, 2);
    assert_true(v.n_devices > 0);
    assert_int_equal(writable_view_copy(&c, &v), 0);
    assert_true(writable_view_equal(&c, &v));
    assert_true(c.roots[0] != v.roots[0]);
    assert_string_equal(c.roots[0], v.roots[0]);

    /* the order of the roots counts */
    char *first = c.roots[0];
    c.roots[0] = c.roots[1];
    c.roots[1] = first;
    assert_false(writable_view_equal(&c, &v));
    c.roots[1] = c.roots[0];
    c.roots[0] = first;
    assert_true(writable_view_equal(&c, &v));
    /* so do the repo roots, the devices and the kind */
    c.n_repo_roots--;
    assert_false(writable_view_equal(&c, &v));
    c.n_repo_roots++;
    c.n_devices--;
    assert_false(writable_view_equal(&c, &v));
    c.n_devices++;
    c.kind = WRITABLE_VIEW_ALL;
    assert_false(writable_view_equal(&c, &v));
    writable_view_release(&c);
    writable_view_release(&v);

    /* an empty view copies to an empty view */
    memset(&v, 0, sizeof(v));
    assert_int_equal(writable_view_copy(&c, &v), 0);
    assert_true(writable_view_equal(&c, &v));
    assert_null(c.roots);
    writable_view_release(&c);
    json_decref(policy);
    free(w);
    (void)state;
}

/* Pinned, a workspace-write policy's writable set is the view's roots,
 * resolved, whatever its links name later, and without a root that did
 * not exist when the view was made; other kinds are left alone. */
static void
test_pin(void **state)
{
    char *link = tmpdir_path(scratch, "link");
    char *real = tmpdir_path(scratch, "real");
    char *other = tmpdir_path(scratch, "other");
    char *w = tmpdir_path(scratch, "w");
    char *later = tmpdir_path(scratch, "later");
    json_t *policy = json_pack("{s:s, s:[s, s], s:b}", "type", "workspace-write", "writable_roots",
                               link, later, "exclude_slash_tmp", 1);
    assert_non_null(policy);
    struct writable_view v;
    char *err = NULL;
    assert_int_equal(view_from_json(&v, policy, w, &err), 0);
    struct sandbox_policy *p = sandbox_policy_from_json(policy, w, &err);
    assert_non_null(p);
    assert_int_equal(writable_view_pin(&v, p, &err), 0);
    /* the link now names another directory, and the missing root is
     * there: the pinned set follows neither */
    assert_int_equal(unlink(link), 0);
    assert_int_equal(symlink(other, link), 0);
    assert_int_equal(mkdir(later, 0755), 0);
    struct sandbox_writable *set = sandbox_writable_new(p, "/elsewhere");
    assert_non_null(set);
    assert_true(set->canonical);
    assert_int_equal(set->n_roots, 3);
    assert_string_equal(set->roots[0], w);
    assert_string_equal(set->roots[1], real);
    assert_string_equal(set->roots[2], tmpdir_root); /* $TMPDIR, resolved by the view */
    assert_int_equal(set->n_repo_roots, 2);
    assert_string_equal(set->repo_roots[1], real);
    sandbox_writable_free(set);
    sandbox_policy_free(p);
    writable_view_release(&v);
    assert_int_equal(unlink(link), 0);
    assert_int_equal(symlink(real, link), 0);
    assert_int_equal(rmdir(later), 0);
    free(later);
    json_decref(policy);

    policy = json_pack("{s:s}", "type", "read-only");
    assert_int_equal(view_from_json(&v, policy, w, &err), 0);
    p = sandbox_policy_from_json(policy, w, &err);
    assert_int_equal(writable_view_pin(&v, p, &err), 0);
    set = sandbox_writable_new(p, NULL);
    assert_false(set->canonical);
    assert_int_equal(set->n_roots, 0);
    sandbox_writable_free(set);
    sandbox_policy_free(p);
    writable_view_release(&v);
    json_decref(policy);
    free(w);
    free(other);
    free(real);
    free(link);
    (void)state;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_workspace_write, with_tmpdir),
        cmocka_unit_test_setup(test_tmpdir_env, with_tmpdir),
        cmocka_unit_test_setup(test_read_only, with_tmpdir),
        cmocka_unit_test_setup(test_full_access, with_tmpdir),
        cmocka_unit_test_setup(test_roots_canonical, with_tmpdir),
        cmocka_unit_test_setup(test_boundaries, with_tmpdir),
        cmocka_unit_test_setup(test_follows_writable_set, with_tmpdir),
        cmocka_unit_test_setup(test_devices, with_tmpdir),
        cmocka_unit_test_setup(test_refused_and_release, with_tmpdir),
        cmocka_unit_test_setup(test_copy_and_equal, with_tmpdir),
        cmocka_unit_test_setup(test_pin, with_tmpdir),
        cmocka_unit_test_setup(test_planted_links, with_tmpdir),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
