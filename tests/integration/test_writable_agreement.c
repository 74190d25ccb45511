/*
 * The server's writable view against the real helper: for each kind of
 * policy, a sandboxed shell tries to write each of a set of probe paths,
 * and what it managed must be exactly what writable_view_contains says.
 *
 * The view decides what may vouch for a program run outside the sandbox:
 * a path the sandbox can write that the view calls read-only would let a
 * command plant what the server then trusts (an escape); a path the view
 * calls writable that the sandbox cannot write makes the server refuse
 * escalations for nothing (/dev/shm, /dev/mqueue, new files in /dev were
 * such paths).  Both sides come from sandbox_writable_new now; this test
 * checks the outcome, not the code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/policy/policy.h"
#include "sandbox/policy/profile.h"
#include "tests/support/sandbox_harness.h"
#include "tests/support/tmpdir.h"
#include "server/call/writable_view.h"

/* Scratch space under /var/tmp (outside /tmp, which most policies make
 * writable), canonical: S holds C (the sandbox cwd), R (a writable root),
 * L (a link to R2, given as a writable root), T ($TMPDIR) and LT (a link
 * to it), O (written by no policy) and t (what a relative $TMPDIR "t"
 * would name from S); M (a writable root) does not exist. */

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

static struct {
    char *s, *c, *r, *r2, *l, *t, *lt, *o, *rel_t, *m;
    char *shm_probe, *tmp_probe, *dev_probe;
} g;

/* The most probes a case has. */
#define MAX_PROBES 16

static char *
made_dir(const char *name)
{
    char *p = tmpdir_path(g.s, name);
    assert_int_equal(mkdir(p, 0755), 0);
    return p;
}

static int
setup(void **state)
{
    g.s = tmpdir_new_in("/var/tmp", "wagree");
    g.c = made_dir("c");
    g.r = made_dir("r");
    g.r2 = made_dir("r2");
    g.t = made_dir("tmp");
    g.o = made_dir("o");
    g.rel_t = made_dir("t");
    g.l = tmpdir_path(g.s, "l");
    assert_int_equal(symlink(g.r2, g.l), 0);
    g.lt = tmpdir_path(g.s, "lt");
    assert_int_equal(symlink(g.t, g.lt), 0);
    g.m = tmpdir_path(g.s, "m");
    assert_true(asprintf(&g.shm_probe, "/dev/shm/execgate-wagree-%ld", (long)getpid()) > 0);
    assert_true(asprintf(&g.tmp_probe, "/tmp/execgate-wagree-%ld", (long)getpid()) > 0);
    assert_true(asprintf(&g.dev_probe, "/dev/execgate-wagree-%ld", (long)getpid()) > 0);
    (void)state;
    return 0;
}

static int
teardown(void **state)
{
    tmpdir_remove(g.s);
    char **all[] = {&g.s, &g.c, &g.r,     &g.r2,        &g.l,         &g.t,        &g.lt,
                    &g.o, &g.m, &g.rel_t, &g.shm_probe, &g.tmp_probe, &g.dev_probe};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(*all[i]);
    (void)state;
    return 0;
}

/* A probe: a file to create or append to. */
static char *
in(const char *dir)
{
    return tmpdir_path(dir, "probe");
}

struct probes {
    char *path[MAX_PROBES];
    size_t n;
};

static void
add(struct probes *pr, char *path)
{
    assert_true(pr->n < MAX_PROBES);
    pr->path[pr->n++] = path;
}

static void
add_copy(struct probes *pr, const char *path)
{
    char *copy = strdup(path);
    assert_non_null(copy);
    add(pr, copy);
}

/* Probes every policy gets: the scratch directories (R2 named through
 * R2 itself, the canonical path the server compares), the missing root,
 * the relative $TMPDIR's target, /tmp and /dev/null. */
static void
common_probes(struct probes *pr)
{
    add(pr, in(g.c));
    add(pr, in(g.r));
    add(pr, in(g.r2));
    add(pr, in(g.t));
    add(pr, in(g.o));
    add(pr, in(g.rel_t));
    add_copy(pr, g.m);
    add_copy(pr, g.tmp_probe);
    add_copy(pr, "/dev/null");
}

/* Probes in /dev beside the device nodes, for the confining policies
 * only: without confinement root would really create them. */
static void
dev_probes(struct probes *pr)
{
    add_copy(pr, "/dev/zero");
    add_copy(pr, g.dev_probe);
    struct stat st;
    if (stat("/dev/shm", &st) == 0)
        add_copy(pr, g.shm_probe);
}

/* Removes what a run created (never a device node). */
static void
clean(struct probes *pr)
{
    for (size_t i = 0; i < pr->n; i++) {
        struct stat st;
        if (lstat(pr->path[i], &st) == 0 && S_ISREG(st.st_mode))
            assert_int_equal(unlink(pr->path[i]), 0);
        free(pr->path[i]);
    }
    pr->n = 0;
}

/* What the sandbox managed: one '1' (appended) or '0' (refused) per
 * probe, in order. */
static char *
sandbox_writes(const char *policy, const char *tmpdir, struct probes *pr)
{
    const char *argv[MAX_PROBES + 5] = {
        "/bin/sh", "-c",
        "for p; do if (: >>\"$p\") 2>/dev/null; then printf 1; else printf 0; fi; done", "sh"};
    for (size_t i = 0; i < pr->n; i++)
        argv[4 + i] = pr->path[i];
    char *tmpdir_env = NULL;
    if (tmpdir)
        assert_true(asprintf(&tmpdir_env, "TMPDIR=%s", tmpdir) > 0);
    const char *envp[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", tmpdir_env, NULL};
    struct sbx_result r;
    /* --cwd S: the relative $TMPDIR would name S/t from there */
    sbx_run(policy, g.s, NULL, argv, envp, &r);
    sbx_assert_code(&r, 0);
    char *out = strdup(r.res.out);
    assert_non_null(out);
    sbx_result_free(&r);
    free(tmpdir_env);
    return out;
}

/* The sandbox's writes (sandbox_writes) of helper_policy against the
 * view v, probe by probe. */
static void
compare(const char *what, const char *helper_policy, const char *tmpdir, bool confining,
        const struct writable_view *v)
{
    struct probes pr = {.n = 0};
    common_probes(&pr);
    if (confining)
        dev_probes(&pr);
    char *wrote = sandbox_writes(helper_policy, tmpdir, &pr);
    assert_int_equal(strlen(wrote), pr.n);
    for (size_t i = 0; i < pr.n; i++) {
        bool sandbox = wrote[i] == '1';
        bool server = writable_view_contains(v, pr.path[i]);
        if (sandbox != server)
            fail_msg("%s, TMPDIR=%s: %s: the sandbox %s write it, the server's view says %s", what,
                     tmpdir ? tmpdir : "(unset)", pr.path[i], sandbox ? "could" : "could not",
                     server ? "writable" : "read-only");
    }
    clean(&pr);
    free(wrote);
}

/* Runs policy (a sandboxPolicy object, sandbox cwd C) with $TMPDIR
 * tmpdir (NULL: unset) in both places, and compares probe by probe; then
 * the same with the policy as the server hands it to the helper, its
 * roots those of the view (writable_view_pin). */
static void
check_agreement(const char *policy_text, const char *tmpdir, bool confining)
{
    if (tmpdir)
        assert_int_equal(setenv("TMPDIR", tmpdir, 1), 0);
    else
        assert_int_equal(unsetenv("TMPDIR"), 0);
    json_t *policy = json_loads(policy_text, 0, NULL);
    assert_non_null(policy);
    struct writable_view v;
    char *err = NULL;
    if (view_from_json(&v, policy, g.c, &err) != 0)
        fail_msg("view_from_json(%s): %s", policy_text, err);
    assert_int_equal(json_object_set_new(policy, "sandboxCwd", json_string(g.c)), 0);
    char *helper_policy = json_dumps(policy, JSON_COMPACT);
    assert_non_null(helper_policy);
    compare(policy_text, helper_policy, tmpdir, confining, &v);

    struct sandbox_policy *p = sandbox_policy_from_json(policy, g.c, &err);
    assert_non_null(p);
    assert_int_equal(writable_view_pin(&v, p, &err), 0);
    char *pinned = sandbox_policy_to_json(p);
    assert_non_null(pinned);
    char *what = NULL;
    assert_true(asprintf(&what, "%s as the server pins it", policy_text) > 0);
    compare(what, pinned, tmpdir, confining, &v);
    free(what);
    free(pinned);
    sandbox_policy_free(p);
    free(helper_policy);
    json_decref(policy);
    writable_view_release(&v);
}

/* workspace-write with writable roots R, L (-> R2) and M (missing). */
static char *
workspace(const char *extra)
{
    char *text = NULL;
    assert_true(
        asprintf(&text,
                 "{\"type\":\"workspace-write\",\"writable_roots\":[\"%s\",\"%s\",\"%s\"]%s}", g.r,
                 g.l, g.m, extra) > 0);
    return text;
}

static void
test_read_only(void **state)
{
    check_agreement("{\"type\":\"read-only\"}", g.t, true);
    check_agreement("{\"type\":\"read-only\",\"network_access\":true}", NULL, true);
    (void)state;
}

static void
test_workspace_write(void **state)
{
    const char *extras[] = {
        "",
        ",\"network_access\":true",
        ",\"exclude_tmpdir_env_var\":true",
        ",\"exclude_slash_tmp\":true",
        ",\"exclude_tmpdir_env_var\":true,\"exclude_slash_tmp\":true",
    };
    for (size_t i = 0; i < sizeof extras / sizeof extras[0]; i++) {
        char *text = workspace(extras[i]);
        check_agreement(text, g.t, true);
        free(text);
    }
    (void)state;
}

/* $TMPDIR unset, relative (S/t from the helper's --cwd), and through a
 * link: the helper and the view take the same one, or none. */
static void
test_tmpdir(void **state)
{
    char *text = workspace("");
    check_agreement(text, NULL, true);
    check_agreement(text, "t", true);
    check_agreement(text, g.lt, true);
    free(text);
    (void)state;
}

/* No filesystem confinement: whatever the user may write, both ways. */
static void
test_unconfined(void **state)
{
    check_agreement("{\"type\":\"danger-full-access\"}", g.t, false);
    check_agreement("{\"type\":\"external-sandbox\"}", g.t, false);
    (void)state;
}

/* A permission profile as the server resolves it (tmpdir T): R, L (->
 * R2) and M (missing) writable, /tmp and $TMPDIR as entries say, the
 * sandbox cwd C writable or only readable (exclude_cwd), and .git of R
 * written explicitly (R then a plain root). */
static void
check_profile(const char *cwd_access, const char *extra)
{
    char *text = NULL;
    assert_true(
        asprintf(&text,
                 "{\"type\":\"managed\",\"network\":\"restricted\",\"file_system\":{\"type\":"
                 "\"restricted\",\"entries\":["
                 "{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"root\"}},\"access\":"
                 "\"read\"},"
                 "{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"project_roots\"}},"
                 "\"access\":\"%s\"},"
                 "{\"path\":{\"type\":\"path\",\"path\":\"%s\"},\"access\":\"write\"},"
                 "{\"path\":{\"type\":\"path\",\"path\":\"%s\"},\"access\":\"write\"},"
                 "{\"path\":{\"type\":\"path\",\"path\":\"%s\"},\"access\":\"write\"}%s]}}",
                 cwd_access, g.r, g.l, g.m, extra) > 0);
    json_t *profile = json_loads(text, 0, NULL);
    assert_non_null(profile);
    char *err = NULL;
    json_t *policy = sandbox_profile_to_policy(profile, g.c, g.t, &err);
    if (policy == NULL)
        fail_msg("profile refused: %s", err);
    char *policy_text = json_dumps(policy, JSON_COMPACT);
    assert_non_null(policy_text);
    check_agreement(policy_text, g.t, true);
    free(policy_text);
    json_decref(policy);
    json_decref(profile);
    free(text);
}

static void
test_profiles(void **state)
{
    char *git = NULL;
    assert_true(asprintf(&git,
                         ",{\"path\":{\"type\":\"path\",\"path\":\"%s/.git\"},\"access\":"
                         "\"write\"}",
                         g.r) > 0);
    const char *scratch = ",{\"path\":{\"type\":\"special\",\"value\":{\"kind\":"
                          "\"slash_tmp\"}},\"access\":\"write\"},{\"path\":{\"type\":"
                          "\"special\",\"value\":{\"kind\":\"tmpdir\"}},\"access\":\"write\"}";
    check_profile("write", scratch);
    check_profile("read", scratch);
    check_profile("read", "");
    check_profile("write", git);
    free(git);
    (void)state;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_only), cmocka_unit_test(test_workspace_write),
        cmocka_unit_test(test_tmpdir),    cmocka_unit_test(test_unconfined),
        cmocka_unit_test(test_profiles),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
