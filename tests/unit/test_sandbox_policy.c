/*
 * sandbox policy: parsing the sandboxPolicy JSON, canonical text, describe
 * and the helper's command line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/alloc_fail.h"
#include "sandbox/policy/policy.h"
#include "sandbox/policy/cmdline.h"
#include "common/strv.h"

/* Parses text as JSON and then as a policy with cwd; returns the policy or
 * NULL with *err set. */

/* The helper's argv for p (the real builder, sandbox_cmdline_argv, with
 * the fields these tests set). */
static char **
helper_argv(const struct sandbox_policy *p, const char *helper, const char *cwd, int report_fd,
            bool allow_degraded, const char *const *protect, size_t n_protect,
            const char *const *prog)
{
    const struct sandbox_cmdline c = {
        .helper = helper,
        .policy = p,
        .cwd = cwd,
        .report_fd = report_fd,
        .exec_notify_fd = -1,
        .allow_degraded = allow_degraded,
        .protect = protect,
        .n_protect = n_protect,
        .program = prog,
    };
    return sandbox_cmdline_argv(&c);
}

static struct sandbox_policy *
parse_with(const char *text, const char *cwd, char **err)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_ALLOW_NUL, &jerr);
    assert_non_null(j);
    struct sandbox_policy *p = sandbox_policy_from_json(j, cwd, err);
    json_decref(j);
    return p;
}

/* Asserts that text (with cwd) is refused with exactly want. */
static void
assert_refused(const char *text, const char *cwd, const char *want)
{
    char *err = NULL;
    struct sandbox_policy *p = parse_with(text, cwd, &err);
    assert_null(p);
    assert_non_null(err);
    assert_string_equal(err, want);
    free(err);
}

static char *
describe_of(const char *text, const char *cwd)
{
    char *err = NULL;
    struct sandbox_policy *p = parse_with(text, cwd, &err);
    assert_non_null(p);
    assert_null(err);
    char *d = sandbox_policy_describe(p);
    assert_non_null(d);
    sandbox_policy_free(p);
    return d;
}

static void
test_danger(void **state)
{
    char *err = NULL;
    struct sandbox_policy *p = parse_with("{\"type\":\"danger-full-access\"}", NULL, &err);
    assert_non_null(p);
    assert_int_equal(sandbox_policy_kind(p), SANDBOX_DANGER_FULL_ACCESS);
    assert_true(sandbox_policy_network_allowed(p));
    assert_null(sandbox_policy_cwd(p));
    char *d = sandbox_policy_describe(p);
    assert_string_equal(d, "danger-full-access");
    free(d);
    sandbox_policy_free(p);
}

static void
test_read_only_defaults(void **state)
{
    char *err = NULL;
    struct sandbox_policy *p = parse_with("{\"type\":\"read-only\"}", "/w", &err);
    assert_non_null(p);
    assert_int_equal(sandbox_policy_kind(p), SANDBOX_READ_ONLY);
    assert_false(sandbox_policy_network_allowed(p));
    assert_false(sandbox_policy_tmpdir_writable(p));
    assert_false(sandbox_policy_slash_tmp_writable(p));
    assert_false(sandbox_policy_reads_restricted(p));
    assert_string_equal(sandbox_policy_cwd(p), "/w");
    sandbox_policy_free(p);
}

static void
test_workspace_write_fields(void **state)
{
    char *err = NULL;
    struct sandbox_policy *p =
        parse_with("{\"type\":\"workspace-write\",\"writable_roots\":[\"/a\",\"/b c\"],"
                   "\"network_access\":true,\"exclude_tmpdir_env_var\":true,"
                   "\"exclude_slash_tmp\":false,\"future_field\":{\"x\":1}}",
                   "/home/u/code", &err);
    assert_non_null(p);
    assert_null(err);
    assert_int_equal(sandbox_policy_kind(p), SANDBOX_WORKSPACE_WRITE);
    assert_true(sandbox_policy_network_allowed(p));
    assert_int_equal(sandbox_policy_writable_root_count(p), 2);
    assert_string_equal(sandbox_policy_writable_root(p, 0), "/a");
    assert_string_equal(sandbox_policy_writable_root(p, 1), "/b c");
    assert_null(sandbox_policy_writable_root(p, 2));
    assert_false(sandbox_policy_tmpdir_writable(p));
    assert_true(sandbox_policy_slash_tmp_writable(p));
    sandbox_policy_free(p);
}

static void
test_describe(void **state)
{
    char *d =
        describe_of("{\"type\":\"workspace-write\",\"writable_roots\":[\"/a\",\"/b c\"]}", "/w");
    assert_string_equal(d, "workspace-write roots=/w,/a,/b\\x20c,$TMPDIR,/tmp network=off");
    free(d);
    d = describe_of("{\"type\":\"workspace-write\",\"exclude_tmpdir_env_var\":true,"
                    "\"exclude_slash_tmp\":true,\"network_access\":true}",
                    "/w");
    assert_string_equal(d, "workspace-write roots=/w network=on");
    free(d);
    d = describe_of("{\"type\":\"read-only\",\"access\":{\"type\":\"restricted\","
                    "\"readable_roots\":[\"/r\"]}}",
                    "/w");
    assert_string_equal(d, "read-only reads=/r,+platform network=off");
    free(d);
    d = describe_of("{\"type\":\"external-sandbox\",\"network_access\":\"enabled\"}", NULL);
    assert_string_equal(d, "external-sandbox network=on");
    free(d);
    /* A newline in a path must not split the log line. */
    d = describe_of("{\"type\":\"workspace-write\",\"exclude_tmpdir_env_var\":true,"
                    "\"exclude_slash_tmp\":true}",
                    "/w\nx");
    assert_string_equal(d, "workspace-write roots=/w\\x0ax network=off");
    free(d);
}

static void
test_external(void **state)
{
    char *err = NULL;
    struct sandbox_policy *p = parse_with("{\"type\":\"external-sandbox\"}", NULL, &err);
    assert_non_null(p);
    assert_int_equal(sandbox_policy_kind(p), SANDBOX_EXTERNAL);
    assert_false(sandbox_policy_network_allowed(p));
    sandbox_policy_free(p);
    p = parse_with("{\"type\":\"external-sandbox\",\"network_access\":\"restricted\"}", NULL, &err);
    assert_non_null(p);
    assert_false(sandbox_policy_network_allowed(p));
    sandbox_policy_free(p);
    assert_refused("{\"type\":\"external-sandbox\",\"network_access\":true}", NULL,
                   "sandbox policy: network_access must be \"restricted\" or \"enabled\"");
}

static void
test_restricted_reads(void **state)
{
    char *err = NULL;
    struct sandbox_policy *p =
        parse_with("{\"type\":\"workspace-write\",\"read_only_access\":{\"type\":\"restricted\","
                   "\"include_platform_defaults\":false,\"readable_roots\":[\"/x\",\"/y\"]}}",
                   "/w", &err);
    assert_non_null(p);
    assert_true(sandbox_policy_reads_restricted(p));
    assert_false(sandbox_policy_platform_defaults(p));
    assert_int_equal(sandbox_policy_readable_root_count(p), 2);
    assert_string_equal(sandbox_policy_readable_root(p, 1), "/y");
    sandbox_policy_free(p);
    p = parse_with("{\"type\":\"read-only\",\"access\":{\"type\":\"full-access\"}}", "/w", &err);
    assert_non_null(p);
    assert_false(sandbox_policy_reads_restricted(p));
    sandbox_policy_free(p);
}

static void
test_errors(void **state)
{
    assert_refused("{\"type\":\"everything\"}", "/w",
                   "sandbox policy: unknown type \"everything\" (expected danger-full-access, "
                   "read-only, workspace-write or external-sandbox)");
    assert_refused("{\"network_access\":true}", "/w", "sandbox policy: type must be a string");
    assert_refused("[]", "/w", "sandbox policy: sandboxPolicy must be an object");
    assert_refused("{\"type\":\"workspace-write\",\"writable_roots\":[\"/a\",\"rel/b\"]}", "/w",
                   "sandbox policy: writable_roots[1]: \"rel/b\" is not an absolute path");
    assert_refused("{\"type\":\"workspace-write\",\"writable_roots\":\"/a\"}", "/w",
                   "sandbox policy: writable_roots must be an array of absolute paths");
    assert_refused("{\"type\":\"workspace-write\",\"writable_roots\":[\"\"]}", "/w",
                   "sandbox policy: writable_roots[0]: empty path");
    assert_refused("{\"type\":\"workspace-write\",\"writable_roots\":[\"/a\\u0000b\"]}", "/w",
                   "sandbox policy: writable_roots[0]: path contains a NUL byte");
    assert_refused("{\"type\":\"workspace-write\",\"writable_roots\":[7]}", "/w",
                   "sandbox policy: writable_roots[0] must be a string");
    assert_refused("{\"type\":\"workspace-write\"}", "w",
                   "sandbox policy: sandboxCwd: \"w\" is not an absolute path");
    assert_refused("{\"type\":\"workspace-write\"}", NULL,
                   "sandbox policy: workspace-write needs sandboxCwd");
    assert_refused("{\"type\":\"read-only\",\"network_access\":\"yes\"}", "/w",
                   "sandbox policy: network_access must be true or false");
    assert_refused("{\"type\":\"workspace-write\",\"exclude_slash_tmp\":1}", "/w",
                   "sandbox policy: exclude_slash_tmp must be true or false");
    assert_refused("{\"type\":\"read-only\",\"access\":{\"type\":\"some\"}}", "/w",
                   "sandbox policy: access.type \"some\" is not one of full-access, restricted");
    assert_refused("{\"type\":\"read-only\",\"access\":{\"type\":\"restricted\","
                   "\"readable_roots\":[\"x\"]}}",
                   "/w", "sandbox policy: readable_roots[0]: \"x\" is not an absolute path");
    assert_refused("{\"type\":\"workspace-write\",\"read_only_access\":\"restricted\"}", "/w",
                   "sandbox policy: read_only_access must be an object");
}

/* The canonical text parses back to the same canonical text. */
static void
roundtrip(const char *text, const char *cwd)
{
    char *err = NULL;
    struct sandbox_policy *p = parse_with(text, cwd, &err);
    assert_non_null(p);
    char *canon = sandbox_policy_to_json(p);
    assert_non_null(canon);
    struct sandbox_policy *q = sandbox_policy_parse(canon, &err);
    assert_non_null(q);
    char *again = sandbox_policy_to_json(q);
    assert_string_equal(canon, again);
    char *d1 = sandbox_policy_describe(p), *d2 = sandbox_policy_describe(q);
    assert_string_equal(d1, d2);
    free(d1);
    free(d2);
    free(again);
    free(canon);
    sandbox_policy_free(q);
    sandbox_policy_free(p);
}

static void
test_canonical(void **state)
{
    char *err = NULL;
    struct sandbox_policy *p = parse_with(
        "{\"writable_roots\":[\"/a\"],\"type\":\"workspace-write\",\"x\":1}", "/w", &err);
    char *canon = sandbox_policy_to_json(p);
    assert_string_equal(canon,
                        "{\"type\":\"workspace-write\",\"sandboxCwd\":\"/w\",\"writable_roots\":"
                        "[\"/a\"],\"network_access\":false,\"exclude_tmpdir_env_var\":false,"
                        "\"exclude_slash_tmp\":false,\"read_only_access\":{\"type\":"
                        "\"full-access\"}}");
    free(canon);
    sandbox_policy_free(p);

    roundtrip("{\"type\":\"danger-full-access\"}", NULL);
    roundtrip("{\"type\":\"read-only\",\"network_access\":true}", "/w");
    roundtrip("{\"type\":\"external-sandbox\",\"network_access\":\"enabled\"}", NULL);
    roundtrip("{\"type\":\"workspace-write\",\"writable_roots\":[\"/a\",\"/b\"],"
              "\"exclude_slash_tmp\":true,\"read_only_access\":{\"type\":\"restricted\","
              "\"include_platform_defaults\":true,\"readable_roots\":[\"/r\"]}}",
              "/w");
}

static void
test_parse_text_errors(void **state)
{
    char *err = NULL;
    assert_null(sandbox_policy_parse("{\"type\":", &err));
    assert_non_null(err);
    assert_non_null(strstr(err, "sandbox policy: invalid JSON at line 1"));
    free(err);
    assert_null(sandbox_policy_parse("{\"type\":\"read-only\",\"sandboxCwd\":3}", &err));
    assert_string_equal(err, "sandbox policy: sandboxCwd must be a string");
    free(err);
    assert_null(sandbox_policy_parse("{\"type\":\"read-only\",\"type\":\"read-only\"}", &err));
    assert_non_null(strstr(err, "duplicate"));
    free(err);
}

static void
test_helper_argv(void **state)
{
    char *err = NULL;
    struct sandbox_policy *p = parse_with("{\"type\":\"read-only\"}", "/w", &err);
    const char *prog[] = {"/bin/echo", "a b", NULL};
    char **argv = helper_argv(p, "/x/execgate-sandbox", "/w/sub", 5, false, NULL, 0, prog);
    assert_non_null(argv);
    char *canon = sandbox_policy_to_json(p);
    const char *want[] = {"/x/execgate-sandbox", "--policy", canon, "--cwd",     "/w/sub",
                          "--report-fd",         "5",        "--",  "/bin/echo", "a b"};
    size_t n = sizeof want / sizeof want[0];
    for (size_t i = 0; i < n; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[n]);
    strv_free(argv);

    argv = helper_argv(p, "h", "/w", -1, false, NULL, 0, prog);
    assert_string_equal(argv[5], "--");
    assert_string_equal(argv[6], "/bin/echo");
    assert_null(argv[8]);
    strv_free(argv);

    argv = helper_argv(p, "h", "/w", -1, true, NULL, 0, prog);
    assert_string_equal(argv[1], "--allow-degraded");
    assert_string_equal(argv[2], "--policy");
    assert_string_equal(argv[6], "--");
    assert_string_equal(argv[8], "a b");
    assert_null(argv[9]);
    strv_free(argv);
    strv_free(NULL);
    sandbox_policy_free(NULL);
    free(canon);
    sandbox_policy_free(p);
}

/* --protect PATH for each protect path, in order, after the flags'
 * options and before --policy; none gives the same argv as the flags
 * variant. */
static void
test_helper_argv_protect(void **state)
{
    char *err = NULL;
    struct sandbox_policy *p = parse_with("{\"type\":\"workspace-write\"}", "/w", &err);
    assert_non_null(p);
    char *canon = sandbox_policy_to_json(p);
    const char *prog[] = {"/bin/echo", "a b", NULL};
    const char *protect[] = {"/home/u/.codex", "/tmp/execgate audit.log", "/home/u/.codex"};
    char **argv = helper_argv(p, "/x/execgate-sandbox", "/w/sub", 5, true, protect, 3, prog);
    assert_non_null(argv);
    const char *want[] = {"/x/execgate-sandbox",
                          "--allow-degraded",
                          "--protect",
                          "/home/u/.codex",
                          "--protect",
                          "/tmp/execgate audit.log",
                          "--protect",
                          "/home/u/.codex",
                          "--policy",
                          canon,
                          "--cwd",
                          "/w/sub",
                          "--report-fd",
                          "5",
                          "--",
                          "/bin/echo",
                          "a b"};
    size_t n = sizeof want / sizeof want[0];
    for (size_t i = 0; i < n; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[n]);
    strv_free(argv);

    /* Without flags: the first --protect right after the helper. */
    argv = helper_argv(p, "h", "/w", -1, false, protect, 1, prog);
    assert_string_equal(argv[1], "--protect");
    assert_string_equal(argv[2], "/home/u/.codex");
    assert_string_equal(argv[3], "--policy");
    assert_string_equal(argv[7], "--");
    assert_null(argv[10]);
    strv_free(argv);

    /* None: protect may then be NULL, and the argv is the same either way. */
    char **plain = helper_argv(p, "h", "/w", 3, true, NULL, 0, prog);
    argv = helper_argv(p, "h", "/w", 3, true, protect, 0, prog);
    size_t k = 0;
    for (; plain[k] != NULL; k++)
        assert_string_equal(argv[k], plain[k]);
    assert_null(argv[k]);
    strv_free(plain);
    strv_free(argv);

    /* A count no argv can hold: refused, not overflowed. */
    assert_null(helper_argv(p, "h", "/w", -1, false, protect, SIZE_MAX / 2, prog));
    free(canon);
    sandbox_policy_free(p);
}

/* --- the writable set ------------------------------------------------------
 * What sandbox_writable_new yields for each policy: the helper's Landlock
 * rules and the server's writable view are both made from it. */

/* The device nodes the confining policies make writable, in order: never
 * /dev itself, so /dev/shm, /dev/mqueue and new files in /dev stay out. */
static const char *const devices[] = {"/dev/null",   "/dev/zero",    "/dev/full",
                                      "/dev/random", "/dev/urandom", "/dev/tty",
                                      "/dev/ptmx",   "/dev/pts",     NULL};

/* Asserts that the n items of list are exactly want (NULL-terminated). */
static void
assert_list(char *const *list, size_t n, const char *const *want, const char *what)
{
    size_t k = 0;
    while (want[k] != NULL)
        k++;
    if (n != k)
        fail_msg("%s: %zu paths, wanted %zu", what, n, k);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(list[i], want[i]) != 0)
            fail_msg("%s[%zu]: \"%s\", wanted \"%s\"", what, i, list[i], want[i]);
    }
}

/* The writable set of text (with sandbox cwd cwd) and tmpdir. */
static struct sandbox_writable *
writable_of(const char *text, const char *cwd, const char *tmpdir)
{
    char *err = NULL;
    struct sandbox_policy *p = parse_with(text, cwd, &err);
    if (p == NULL)
        fail_msg("%s: %s", text, err);
    struct sandbox_writable *w = sandbox_writable_new(p, tmpdir);
    assert_non_null(w);
    sandbox_policy_free(p); /* the set holds copies */
    return w;
}

/* Asserts the set of text/cwd/tmpdir: roots, repo roots, and the devices
 * (any confining policy) or everything (none). */
static void
assert_writable(const char *text, const char *cwd, const char *tmpdir, bool everything,
                const char *const *roots, const char *const *repo_roots)
{
    static const char *const none[] = {NULL};
    struct sandbox_writable *w = writable_of(text, cwd, tmpdir);
    assert_int_equal(w->everything, everything);
    assert_list(w->roots, w->n_roots, roots ? roots : none, "roots");
    assert_list(w->repo_roots, w->n_repo_roots, repo_roots ? repo_roots : none, "repo_roots");
    assert_list(w->devices, w->n_devices, everything ? none : devices, "devices");
    sandbox_writable_free(w);
}

/* No filesystem confinement: everything the user may write, no lists. */
static void
test_writable_unconfined(void **state)
{
    assert_writable("{\"type\":\"danger-full-access\"}", NULL, "/t", true, NULL, NULL);
    assert_writable("{\"type\":\"danger-full-access\"}", "/w", "/t", true, NULL, NULL);
    assert_writable("{\"type\":\"external-sandbox\"}", "/w", "/t", true, NULL, NULL);
    assert_writable("{\"type\":\"external-sandbox\",\"network_access\":\"enabled\"}", "/w", "/t",
                    true, NULL, NULL);
    sandbox_writable_free(NULL);
}

/* read-only: the devices alone, whatever else the policy says. */
static void
test_writable_read_only(void **state)
{
    assert_writable("{\"type\":\"read-only\"}", "/w", "/t", false, NULL, NULL);
    assert_writable("{\"type\":\"read-only\"}", NULL, NULL, false, NULL, NULL);
    assert_writable("{\"type\":\"read-only\",\"network_access\":true,\"access\":"
                    "{\"type\":\"restricted\",\"readable_roots\":[\"/r\"]}}",
                    "/w", "/t", false, NULL, NULL);
    /* fields of workspace-write mean nothing here */
    assert_writable("{\"type\":\"read-only\",\"writable_roots\":[\"/a\"]}", "/w", "/t", false, NULL,
                    NULL);
}

/* workspace-write: the cwd and the writable roots (repo roots too), then
 * $TMPDIR and /tmp unless excluded; the network changes nothing. */
static void
test_writable_workspace(void **state)
{
    const char *all[] = {"/w", "/a", "/b c", "/t", "/tmp", NULL};
    const char *repos[] = {"/w", "/a", "/b c", NULL};
    const char *ws = "{\"type\":\"workspace-write\",\"writable_roots\":[\"/a\",\"/b c\"]}";
    assert_writable(ws, "/w", "/t", false, all, repos);
    assert_writable("{\"type\":\"workspace-write\",\"writable_roots\":[\"/a\",\"/b c\"],"
                    "\"network_access\":true}",
                    "/w", "/t", false, all, repos);
    assert_writable("{\"type\":\"workspace-write\",\"writable_roots\":[\"/a\",\"/b c\"],"
                    "\"network_access\":false,\"exclude_tmpdir_env_var\":false,"
                    "\"exclude_slash_tmp\":false}",
                    "/w", "/t", false, all, repos);
    const char *only_cwd[] = {"/w", "/t", "/tmp", NULL};
    const char *cwd_repo[] = {"/w", NULL};
    assert_writable("{\"type\":\"workspace-write\"}", "/w", "/t", false, only_cwd, cwd_repo);
    assert_writable("{\"type\":\"workspace-write\",\"writable_roots\":[]}", "/w", "/t", false,
                    only_cwd, cwd_repo);
}

static void
test_writable_excluded(void **state)
{
    const char *no_tmpdir[] = {"/w", "/a", "/tmp", NULL};
    const char *no_tmp[] = {"/w", "/a", "/t", NULL};
    const char *neither[] = {"/w", "/a", NULL};
    const char *repos[] = {"/w", "/a", NULL};
    assert_writable("{\"type\":\"workspace-write\",\"writable_roots\":[\"/a\"],"
                    "\"exclude_tmpdir_env_var\":true}",
                    "/w", "/t", false, no_tmpdir, repos);
    assert_writable("{\"type\":\"workspace-write\",\"writable_roots\":[\"/a\"],"
                    "\"exclude_slash_tmp\":true}",
                    "/w", "/t", false, no_tmp, repos);
    assert_writable("{\"type\":\"workspace-write\",\"writable_roots\":[\"/a\"],"
                    "\"exclude_tmpdir_env_var\":true,\"exclude_slash_tmp\":true}",
                    "/w", "/t", false, neither, repos);
}

/* Only an absolute $TMPDIR counts: unset, empty and relative ones add
 * nothing (a relative one is not resolved against anything). */
static void
test_writable_tmpdir(void **state)
{
    const char *ws = "{\"type\":\"workspace-write\"}";
    const char *without[] = {"/w", "/tmp", NULL};
    const char *repos[] = {"/w", NULL};
    const char *ignored[] = {NULL, "", "tmp", "./tmp", "../t", "w", "~/tmp"};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        assert_writable(ws, "/w", ignored[i], false, without, repos);
    /* absolute ones as given: resolving them is for whoever compares */
    const char *dotted[] = {"/w", "/w/../t/", "/tmp", NULL};
    assert_writable(ws, "/w", "/w/../t/", false, dotted, repos);
    const char *root[] = {"/w", "/", "/tmp", NULL};
    assert_writable(ws, "/w", "/", false, root, repos);
}

/* Paths are the policy's, as given: one that does not exist is yielded
 * all the same (Landlock, and the server's realpath, skip it), and
 * nothing is looked up on the filesystem. */
static void
test_writable_missing_root(void **state)
{
    const char *missing = "/nonexistent-execgate/root";
    char *text;
    assert_true(asprintf(&text,
                         "{\"type\":\"workspace-write\",\"writable_roots\":[\"%s\",\"/l/./x/\"],"
                         "\"exclude_slash_tmp\":true}",
                         missing) > 0);
    const char *roots[] = {"/nonexistent-execgate/cwd", missing, "/l/./x/",
                           "/nonexistent-execgate/t", NULL};
    const char *repos[] = {"/nonexistent-execgate/cwd", missing, "/l/./x/", NULL};
    assert_writable(text, "/nonexistent-execgate/cwd", "/nonexistent-execgate/t", false, roots,
                    repos);
    free(text);
}

/* The writable set of the canonical text text (sandbox_policy_parse). */
static struct sandbox_writable *
writable_of_text(const char *text, const char *tmpdir)
{
    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_parse(text, &err);
    if (p == NULL)
        fail_msg("%s: %s", text, err);
    struct sandbox_writable *w = sandbox_writable_new(p, tmpdir);
    assert_non_null(w);
    sandbox_policy_free(p);
    return w;
}

/* Asserts that the canonical text text is refused with exactly want. */
static void
assert_text_refused(const char *text, const char *want)
{
    char *err = NULL;
    assert_null(sandbox_policy_parse(text, &err));
    assert_non_null(err);
    assert_string_equal(err, want);
    free(err);
}

#define WS_TEXT "{\"type\":\"workspace-write\",\"sandboxCwd\":\"/w\","

/* Canonical roots (a server's resolution) are the writable set, whatever
 * the sandbox cwd, writable_roots, $TMPDIR and /tmp; they survive the
 * canonical text; bad ones are refused with the field named; a client's
 * sandboxPolicy cannot bring them. */
static void
test_canonical_roots(void **state)
{
    const char *text = WS_TEXT "\"writable_roots\":[\"/l\"],"
                               "\"canonical_roots\":{\"roots\":[\"/real/w\",\"/r\",\"/t\"],"
                               "\"repo_roots\":[\"/real/w\",\"/r\"]}}";
    const char *roots[] = {"/real/w", "/r", "/t", NULL};
    const char *repos[] = {"/real/w", "/r", NULL};
    struct sandbox_writable *w = writable_of_text(text, "/tmpdir");
    assert_true(w->canonical);
    assert_false(w->everything);
    assert_list(w->roots, w->n_roots, roots, "roots");
    assert_list(w->repo_roots, w->n_repo_roots, repos, "repo_roots");
    assert_list(w->devices, w->n_devices, devices, "devices");
    sandbox_writable_free(w);
    /* from a client's sandboxPolicy: an unknown field, ignored */
    const char *own[] = {"/w", "/l", "/tmpdir", "/tmp", NULL};
    const char *own_repos[] = {"/w", "/l", NULL};
    assert_writable(text, "/w", "/tmpdir", false, own, own_repos);
    w = writable_of(text, "/w", NULL);
    assert_false(w->canonical);
    sandbox_writable_free(w);
    /* no roots at all is fine: devices only */
    w = writable_of_text(WS_TEXT "\"canonical_roots\":{}}", "/t");
    assert_true(w->canonical);
    assert_int_equal(w->n_roots, 0);
    assert_int_equal(w->n_devices, 8);
    sandbox_writable_free(w);

    /* the canonical text carries them, and parses back to the same */
    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_parse(text, &err);
    assert_non_null(p);
    char *canon = sandbox_policy_to_json(p);
    assert_non_null(strstr(canon, "\"canonical_roots\":{\"roots\":[\"/real/w\",\"/r\",\"/t\"],"
                                  "\"repo_roots\":[\"/real/w\",\"/r\"]}"));
    struct sandbox_policy *q = sandbox_policy_parse(canon, &err);
    assert_non_null(q);
    char *again = sandbox_policy_to_json(q);
    assert_string_equal(canon, again);
    free(again);
    sandbox_policy_free(q);
    free(canon);

    /* the setter replaces them */
    const char *const set[] = {"/x", "/y"};
    assert_int_equal(sandbox_policy_set_canonical_roots(p, set, 2, set + 1, 1, &err), 0);
    assert_null(err);
    w = sandbox_writable_new(p, "/t");
    const char *want[] = {"/x", "/y", NULL};
    const char *want_repo[] = {"/y", NULL};
    assert_list(w->roots, w->n_roots, want, "roots");
    assert_list(w->repo_roots, w->n_repo_roots, want_repo, "repo_roots");
    sandbox_writable_free(w);
    /* a bad one leaves the policy as it was */
    const char *const dotted[] = {"/x/../y"};
    assert_int_equal(sandbox_policy_set_canonical_roots(p, dotted, 1, NULL, 0, &err), -1);
    assert_string_equal(err, "sandbox policy: canonical_roots.roots[0]: \"/x/../y\" is not a "
                             "canonical path");
    free(err);
    const char *const other[] = {"/z"};
    assert_int_equal(sandbox_policy_set_canonical_roots(p, set, 2, other, 1, &err), -1);
    assert_string_equal(err, "sandbox policy: canonical_roots.repo_roots[0]: \"/z\" is not one "
                             "of the roots");
    free(err);
    w = sandbox_writable_new(p, "/t");
    assert_list(w->roots, w->n_roots, want, "roots");
    sandbox_writable_free(w);
    sandbox_policy_free(p);

    /* only workspace-write has roots to resolve */
    p = parse_with("{\"type\":\"read-only\"}", "/w", &err);
    assert_int_equal(sandbox_policy_set_canonical_roots(p, set, 2, NULL, 0, &err), -1);
    assert_non_null(strstr(err, "only workspace-write"));
    free(err);
    sandbox_policy_free(p);

    assert_text_refused(WS_TEXT "\"canonical_roots\":[\"/a\"]}",
                        "sandbox policy: canonical_roots must be an object");
    assert_text_refused(WS_TEXT "\"canonical_roots\":{\"roots\":\"/a\"}}",
                        "sandbox policy: canonical_roots.roots must be an array of absolute paths");
    assert_text_refused(WS_TEXT "\"canonical_roots\":{\"roots\":[\"a\"]}}",
                        "sandbox policy: canonical_roots.roots[0]: \"a\" is not an absolute path");
    const char *not_canonical[] = {"/a/", "/a//b", "/./a", "/a/..", "//"};
    for (size_t i = 0; i < sizeof not_canonical / sizeof not_canonical[0]; i++) {
        char *t = NULL, *want_err = NULL;
        assert_true(asprintf(&t, WS_TEXT "\"canonical_roots\":{\"roots\":[\"/\",\"%s\"]}}",
                             not_canonical[i]) > 0);
        assert_true(asprintf(&want_err,
                             "sandbox policy: canonical_roots.roots[1]: \"%s\" is not a "
                             "canonical path",
                             not_canonical[i]) > 0);
        assert_text_refused(t, want_err);
        free(want_err);
        free(t);
    }
    assert_text_refused(WS_TEXT "\"canonical_roots\":{\"roots\":[\"/a\"],"
                                "\"repo_roots\":[\"/b\"]}}",
                        "sandbox policy: canonical_roots.repo_roots[0]: \"/b\" is not one of the "
                        "roots");
    (void)state;
}

/* --- allocation-failure sweep ---------------------------------------------
 * alloc_fail.h fails the N-th allocation of policy.c (and of jansson, given
 * the wrapped allocator below) for every N; every round must fail cleanly
 * (NULL, no crash) and free what it allocated. */

/* One round of everything the server does with a policy; with no
 * allocation failing, all of it succeeds (or the parser says why not). */
static void
policy_round(void *arg)
{
    const char *text = arg;
    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_parse(text, &err);
    if (p == NULL) {
        /* Out of memory, or a policy the parser refuses with a reason. */
        assert_true(alloc_fail_injected() || err != NULL);
        free(err);
        return;
    }
    char *canon = sandbox_policy_to_json(p);
    char *desc = sandbox_policy_describe(p);
    const char *prog[] = {"/bin/sh", "-c", "true", NULL};
    char **argv = helper_argv(p, "/h", "/w", 4, true, NULL, 0, prog);
    const char *protect[] = {"/p/rules", "/p/audit.log"};
    char **pargv = helper_argv(p, "/h", "/w", 4, true, protect, 2, prog);
    struct sandbox_writable *w = sandbox_writable_new(p, "/t");
    if (!alloc_fail_injected()) {
        assert_non_null(canon);
        assert_non_null(desc);
        assert_non_null(argv);
        assert_non_null(pargv);
        assert_non_null(w);
    }
    const char *const roots[] = {"/w", "/a"};
    if (sandbox_policy_kind(p) == SANDBOX_WORKSPACE_WRITE &&
        sandbox_policy_set_canonical_roots(p, roots, 2, roots, 1, &err) < 0) {
        assert_true(alloc_fail_injected());
        free(err);
    }
    sandbox_writable_free(w);
    strv_free(pargv);
    strv_free(argv);
    free(desc);
    free(canon);
    sandbox_policy_free(p);
}

static void
test_allocation_failures(void **state)
{
    const char *texts[] = {
        "{\"type\":\"workspace-write\",\"sandboxCwd\":\"/w\",\"writable_roots\":[\"/a\",\"/b\"],"
        "\"read_only_access\":{\"type\":\"restricted\",\"readable_roots\":[\"/r\"]}}",
        "{\"type\":\"workspace-write\",\"sandboxCwd\":\"/w\",\"writable_roots\":[\"rel\"]}",
        "{\"type\":\"external-sandbox\",\"network_access\":\"enabled\"}",
        "{\"type\":\"read-only\",\"sandboxCwd\":\"/w\"}",
        "{\"type\":\"workspace-write\",\"sandboxCwd\":\"/w\",\"canonical_roots\":{\"roots\":"
        "[\"/w\",\"/t\"],\"repo_roots\":[\"/w\"]}}",
        /* a permission profile's fields */
        "{\"type\":\"workspace-write\",\"sandboxCwd\":\"/w\",\"exclude_cwd\":true,"
        "\"writable_roots\":[\"/p\"],\"plain_writable_roots\":[\"/tmp\",\"/p/.git\"],"
        "\"read_only_paths\":[\"/p/.codex\",\"/p/docs\"],\"deny_paths\":[\"/p/secret\"]}",
        "{\"type\":\"read-only\",\"sandboxCwd\":\"/w\",\"exclude_cwd\":true,"
        "\"deny_paths\":[\"/s\"]}",
    };
    /* The linker wraps these references too: jansson allocates through
     * alloc_fail from here on. */
    json_set_alloc_funcs(malloc, free);
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        /* The sweep really went through allocations. */
        assert_true(alloc_fail_sweep(policy_round, (void *)texts[t]) > 3);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_danger),
        cmocka_unit_test(test_read_only_defaults),
        cmocka_unit_test(test_workspace_write_fields),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_external),
        cmocka_unit_test(test_restricted_reads),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_parse_text_errors),
        cmocka_unit_test(test_helper_argv),
        cmocka_unit_test(test_helper_argv_protect),
        cmocka_unit_test(test_writable_unconfined),
        cmocka_unit_test(test_writable_read_only),
        cmocka_unit_test(test_writable_workspace),
        cmocka_unit_test(test_writable_excluded),
        cmocka_unit_test(test_writable_tmpdir),
        cmocka_unit_test(test_writable_missing_root),
        cmocka_unit_test(test_canonical_roots),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
