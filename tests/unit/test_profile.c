/*
 * profile: Codex permission profiles resolved into the one policy model,
 * against Codex's precedence rules (the most specific entry wins; ties
 * deny > write > read; uncovered paths denied), and sandboxCwd URLs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/policy/policy.h"
#include "sandbox/policy/profile.h"
#include "tests/support/alloc_fail.h"

/* The policy object for a profile given as JSON text. */
static json_t *
resolve(const char *profile, const char *cwd, const char *tmpdir)
{
    json_t *j = json_loads(profile, 0, NULL);
    assert_non_null(j);
    char *err = NULL;
    json_t *policy = sandbox_profile_to_policy(j, cwd, tmpdir, &err);
    if (policy == NULL)
        fail_msg("refused: %s", err ? err : "(no message)");
    assert_null(err);
    json_decref(j);
    return policy;
}

/* The message a profile is refused with (malloc'd). */
static char *
refusal(const char *profile)
{
    json_t *j = json_loads(profile, 0, NULL);
    assert_non_null(j);
    char *err = NULL;
    json_t *policy = sandbox_profile_to_policy(j, "/w", NULL, &err);
    assert_null(policy);
    assert_non_null(err);
    json_decref(j);
    return err;
}

/* The array policy.key as one comma-separated string (malloc'd). */
static char *
list(const json_t *policy, const char *key)
{
    const json_t *a = json_object_get(policy, key);
    char *out = strdup("");
    for (size_t i = 0; i < json_array_size(a); i++) {
        char *longer = NULL;
        assert_true(asprintf(&longer, "%s%s%s", out, i ? "," : "",
                             json_string_value(json_array_get(a, i))) >= 0);
        free(out);
        out = longer;
    }
    return out;
}

static void
assert_list(const json_t *policy, const char *key, const char *want)
{
    char *got = list(policy, key);
    if (strcmp(got, want) != 0)
        fail_msg("%s: got \"%s\", want \"%s\"", key, got, want);
    free(got);
}

static const char *
type_of(const json_t *policy)
{
    return json_string_value(json_object_get(policy, "type"));
}

/* The read access object of a policy (access or read_only_access). */
static const json_t *
reads_of(const json_t *policy)
{
    const json_t *a = json_object_get(policy, "read_only_access");
    return a ? a : json_object_get(policy, "access");
}

#define ENTRY(path, acc)                                                                           \
    "{\"path\":{\"type\":\"path\",\"path\":\"" path "\"},\"access\":\"" acc "\"}"
#define SPECIAL(kind, acc)                                                                         \
    "{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"" kind "\"}},\"access\":\"" acc "\"}"
#define GLOB(pat, acc)                                                                             \
    "{\"path\":{\"type\":\"glob_pattern\",\"pattern\":\"" pat "\"},\"access\":\"" acc "\"}"
#define MANAGED(entries)                                                                           \
    "{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\",\"entries\":[" entries         \
    "]},\"network\":\"restricted\"}"

/* What Codex 0.169 sends for read-only: root readable, nothing else. */
static void
test_read_only_0169(void **state)
{
    (void)state;
    json_t *p = resolve(MANAGED(SPECIAL("root", "read")), "/w", "/t");
    assert_string_equal(type_of(p), "read-only");
    assert_string_equal(json_string_value(json_object_get(reads_of(p), "type")), "full-access");
    assert_true(json_is_false(json_object_get(p, "network_access")));
    char *err = NULL;
    struct sandbox_policy *sp = sandbox_policy_from_json(p, "/w", &err);
    assert_non_null(sp);
    struct sandbox_writable *w = sandbox_writable_new(sp, "/t");
    assert_int_equal(w->n_roots, 0);
    assert_false(w->everything);
    sandbox_writable_free(w);
    sandbox_policy_free(sp);
    json_decref(p);
}

/* The writable roots of a policy object, sorted, comma-separated. */
static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *
writable_roots(const json_t *policy, const char *cwd, const char *tmpdir, bool repo)
{
    char *err = NULL;
    struct sandbox_policy *sp = sandbox_policy_from_json(policy, cwd, &err);
    if (sp == NULL)
        fail_msg("policy refused: %s", err);
    struct sandbox_writable *w = sandbox_writable_new(sp, tmpdir);
    assert_non_null(w);
    char **v = repo ? w->repo_roots : w->roots;
    size_t n = repo ? w->n_repo_roots : w->n_roots;
    qsort(v, n, sizeof *v, cmp_str);
    char *out = strdup("");
    for (size_t i = 0; i < n; i++) {
        char *longer = NULL;
        assert_true(asprintf(&longer, "%s%s%s", out, i ? "," : "", v[i]) >= 0);
        free(out);
        out = longer;
    }
    sandbox_writable_free(w);
    sandbox_policy_free(sp);
    return out;
}

/* What Codex 0.169 sends for workspace-write gives the writable set that
 * the legacy workspace-write policy gives: the same roots, the same repo
 * roots; its .git/.agents/.codex/.aws entries become read-only paths. */
static void
test_workspace_write_0169_is_legacy(void **state)
{
    (void)state;
    json_t *p = resolve(
        MANAGED(SPECIAL("root", "read") "," ENTRY("/home/u/proj", "write") "," SPECIAL(
            "slash_tmp",
            "write") "," SPECIAL("tmpdir",
                                 "write") ","
                                          "{\"path\":{\"type\":\"path\",\"path\":\"/home/u/proj/"
                                          ".git\"},"
                                          "\"access\":\"read\",\"missing_path_behavior\":\"skip\"}"
                                          "," ENTRY("/home/u/proj/.agents", "read") "," ENTRY(
                                              "/home/u/proj/.codex",
                                              "read") "," ENTRY("/home/u/proj/.aws", "read")),
        "/home/u/proj", "/var/tmp/u");
    assert_string_equal(type_of(p), "workspace-write");
    assert_list(p, "writable_roots", "/home/u/proj");
    assert_list(p, "plain_writable_roots", "/tmp,/var/tmp/u");
    assert_list(p, "read_only_paths",
                "/home/u/proj/.agents,/home/u/proj/.aws,/home/u/proj/.codex,/home/u/proj/.git");
    assert_list(p, "deny_paths", "");
    json_t *legacy = json_pack("{s:s}", "type", "workspace-write");
    char *a = writable_roots(p, "/home/u/proj", "/var/tmp/u", false);
    char *b = writable_roots(legacy, "/home/u/proj", "/var/tmp/u", false);
    assert_string_equal(a, b);
    free(a);
    free(b);
    a = writable_roots(p, "/home/u/proj", "/var/tmp/u", true);
    b = writable_roots(legacy, "/home/u/proj", "/var/tmp/u", true);
    assert_string_equal(a, b);
    free(a);
    free(b);
    json_decref(legacy);
    json_decref(p);
}

/* Nesting: each path takes the access of the entry nearest above it. */
static void
test_nested(void **state)
{
    (void)state;
    json_t *p = resolve(
        MANAGED(
            SPECIAL("root", "read") "," ENTRY("/a", "write") "," ENTRY("/a/b", "read") "," ENTRY(
                "/a/b/c", "write") "," ENTRY("/a/b/c/d", "deny") "," ENTRY("/a/b/c/d/e", "read")),
        "/w", NULL);
    assert_string_equal(type_of(p), "workspace-write");
    assert_list(p, "writable_roots", "/a,/a/b/c");
    /* .agents of each writable root stays read-only; /a/b beneath /a */
    assert_list(p, "read_only_paths", "/a/.agents,/a/b,/a/b/c/.agents");
    assert_list(p, "deny_paths", "/a/b/c/d");
    json_decref(p);
}

/* On the same path, deny beats write beats read; and the order of the
 * entries does not matter. */
static void
test_ties(void **state)
{
    (void)state;
    json_t *p =
        resolve(MANAGED(SPECIAL("root", "read") "," ENTRY("/x", "read") "," ENTRY("/x", "write")),
                "/w", NULL);
    assert_list(p, "writable_roots", "/x");
    json_decref(p);
    p = resolve(MANAGED(SPECIAL("root", "read") "," ENTRY("/x", "write") "," ENTRY("/x", "read")),
                "/w", NULL);
    assert_list(p, "writable_roots", "/x");
    json_decref(p);
    p = resolve(MANAGED(SPECIAL("root", "read") "," ENTRY("/x", "deny") "," ENTRY("/x", "write")),
                "/w", NULL);
    assert_string_equal(type_of(p), "read-only");
    assert_list(p, "deny_paths", "/x");
    json_decref(p);
    /* "none" is deny; a root given deny and read is denied: reads narrow */
    p = resolve(
        MANAGED(SPECIAL("root", "read") "," SPECIAL("root", "none") "," ENTRY("/y", "read")), "/w",
        NULL);
    assert_string_equal(json_string_value(json_object_get(reads_of(p), "type")), "restricted");
    assert_list(reads_of(p), "readable_roots", "/y");
    json_decref(p);
}

/* The same path twice (also spelled differently) is one entry. */
static void
test_duplicates(void **state)
{
    (void)state;
    json_t *p = resolve(MANAGED(SPECIAL("root", "read") "," ENTRY("/p", "write") "," ENTRY(
                            "/p/", "write") "," ENTRY("/q/../p/.", "write")),
                        "/w", NULL);
    assert_list(p, "writable_roots", "/p");
    json_decref(p);
}

/* Without an entry for "/", reads narrow to the entries (and the
 * platform's paths with `minimal`); a deny nothing readable covers needs
 * no hiding. */
static void
test_uncovered(void **state)
{
    (void)state;
    json_t *p = resolve(MANAGED(SPECIAL("minimal", "read") "," SPECIAL(
                            "project_roots", "write") "," ENTRY("/etc/secret", "deny")),
                        "/w", NULL);
    const json_t *r = reads_of(p);
    assert_string_equal(json_string_value(json_object_get(r, "type")), "restricted");
    assert_true(json_is_true(json_object_get(r, "include_platform_defaults")));
    assert_list(r, "readable_roots", "/w");
    assert_list(p, "deny_paths", "");
    assert_true(json_is_true(json_object_get(p, "exclude_cwd")));
    json_decref(p);
    /* no entries at all: nothing readable, nothing writable */
    p = resolve(MANAGED(""), "/w", NULL);
    assert_string_equal(type_of(p), "read-only");
    r = reads_of(p);
    assert_true(json_is_false(json_object_get(r, "include_platform_defaults")));
    assert_list(r, "readable_roots", "");
    char *err = NULL;
    struct sandbox_policy *sp = sandbox_policy_from_json(p, "/w", &err);
    assert_non_null(sp);
    assert_false(sandbox_policy_cwd_is_root(sp));
    sandbox_policy_free(sp);
    json_decref(p);
}

/* A kind from a later Codex is ignored; an unknown path type or access
 * is refused, not guessed. */
static void
test_unknown_kinds(void **state)
{
    (void)state;
    json_t *p = resolve(
        MANAGED(SPECIAL("root", "read") "," SPECIAL(
            "unknown", "write") ","
                                "{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"future_"
                                "thing\",\"x\":1}},\"access\":\"deny\"}"),
        "/w", NULL);
    assert_string_equal(type_of(p), "read-only");
    assert_list(p, "deny_paths", "");
    json_decref(p);
    char *e = refusal(MANAGED("{\"path\":{\"type\":\"url\",\"url\":\"x\"},\"access\":\"read\"}"));
    assert_non_null(strstr(e, "entries[0].path.type \"url\""));
    free(e);
    e = refusal(MANAGED(ENTRY("/x", "execute")));
    assert_non_null(strstr(e, "entries[0].access"));
    free(e);
    e = refusal(MANAGED(ENTRY("relative", "read")));
    assert_non_null(strstr(e, "absolute"));
    free(e);
    e = refusal("{\"type\":\"sandboxed\"}");
    assert_non_null(strstr(e, "unknown type \"sandboxed\""));
    free(e);
    e = refusal("{\"type\":\"managed\",\"file_system\":{\"type\":\"partial\"}}");
    assert_non_null(strstr(e, "file_system.type"));
    free(e);
    e = refusal("{\"type\":\"managed\",\"file_system\":{\"type\":\"unrestricted\"},"
                "\"network\":\"sometimes\"}");
    assert_non_null(strstr(e, "network"));
    free(e);
}

/* disabled, external and an unrestricted file system as the legacy
 * kinds. */
static void
test_other_types(void **state)
{
    (void)state;
    json_t *p = resolve("{\"type\":\"disabled\"}", "/w", NULL);
    assert_string_equal(type_of(p), "danger-full-access");
    json_decref(p);
    p = resolve("{\"type\":\"external\",\"network\":\"enabled\"}", "/w", NULL);
    assert_string_equal(type_of(p), "external-sandbox");
    assert_string_equal(json_string_value(json_object_get(p, "network_access")), "enabled");
    json_decref(p);
    p = resolve("{\"type\":\"external\"}", "/w", NULL);
    assert_string_equal(json_string_value(json_object_get(p, "network_access")), "restricted");
    json_decref(p);
    p = resolve("{\"type\":\"managed\",\"file_system\":{\"type\":\"unrestricted\"},"
                "\"network\":\"restricted\"}",
                "/w", NULL);
    assert_string_equal(type_of(p), "external-sandbox");
    assert_string_equal(json_string_value(json_object_get(p, "network_access")), "restricted");
    json_decref(p);
    json_t *j = json_loads("{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\","
                           "\"entries\":[]},\"network\":\"enabled\"}",
                           0, NULL);
    char *err = NULL;
    p = sandbox_profile_to_policy(j, "/w", NULL, &err);
    assert_true(json_is_true(json_object_get(p, "network_access")));
    json_decref(p);
    json_decref(j);
}

/* An entry giving a root's .git or .codex write exempts it: the root is
 * then plain, and the names no entry writes stay read-only. */
static void
test_git_write(void **state)
{
    (void)state;
    json_t *p = resolve(
        MANAGED(SPECIAL("root", "read") "," ENTRY("/p", "write") "," ENTRY("/p/.git", "write")),
        "/w", NULL);
    assert_list(p, "writable_roots", "");
    assert_list(p, "plain_writable_roots", "/p,/p/.git");
    assert_list(p, "read_only_paths", "/p/.codex,/p/.agents");
    json_decref(p);
}

/* project_roots is the sandbox cwd, with its subpath; tmpdir names
 * nothing when there is none. */
static void
test_project_roots(void **state)
{
    (void)state;
    json_t *p =
        resolve(MANAGED(SPECIAL(
                    "root", "read") ","
                                    "{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"current_"
                                    "working_directory\",\"subpath\":\"out/../build\"}},"
                                    "\"access\":\"write\"}," SPECIAL("tmpdir", "write")),
                "/w/x", NULL);
    assert_list(p, "writable_roots", "/w/x/build");
    assert_list(p, "plain_writable_roots", "");
    json_decref(p);
    char *e = refusal(MANAGED("{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"project_"
                              "roots\",\"subpath\":\"/abs\"}},\"access\":\"write\"}"));
    assert_non_null(strstr(e, "subpath"));
    free(e);
}

/* ---- globs, against a real tree ---- */

static char glob_dir[] = "/tmp/execgate-profile-XXXXXX";

static void
touch(const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", glob_dir, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    close(fd);
}

static void
mkdir_in(const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", glob_dir, rel);
    assert_int_equal(mkdir(path, 0700), 0);
}

static int
setup_tree(void **state)
{
    (void)state;
    strcpy(glob_dir, "/tmp/execgate-profile-XXXXXX");
    if (mkdtemp(glob_dir) == NULL)
        return -1;
    mkdir_in("sub");
    mkdir_in("sub/deep");
    touch("a.key");
    touch("b.key");
    touch("c.txt");
    touch(".hidden.key");
    touch("sub/d.key");
    touch("sub/deep/e.key");
    char link[256];
    snprintf(link, sizeof link, "%s/loop", glob_dir);
    return symlink(".", link); /* a walk must not follow it */
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int
teardown_tree(void **state)
{
    (void)state;
    return nftw(glob_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The deny paths of a glob entry beneath a readable root, relative to the
 * tree, sorted. */
static char *
glob_denies(const char *pattern_rel, int depth)
{
    char *profile = NULL;
    char depth_text[64] = "";
    if (depth >= 0)
        snprintf(depth_text, sizeof depth_text, ",\"glob_scan_max_depth\":%d", depth);
    assert_true(asprintf(&profile,
                         "{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\"%s,"
                         "\"entries\":[" SPECIAL("root", "read") ",{\"path\":{\"type\":\"glob_"
                                                                 "pattern\",\"pattern\":\"%s/%s\"},"
                                                                 "\"access\":\"deny\"}]}}",
                         depth_text, glob_dir, pattern_rel) >= 0);
    json_t *p = resolve(profile, "/w", NULL);
    free(profile);
    const json_t *a = json_object_get(p, "deny_paths");
    size_t n = json_array_size(a);
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        assert_memory_equal(s, glob_dir, strlen(glob_dir));
        v[i] = strdup(s + strlen(glob_dir) + 1);
    }
    qsort(v, n, sizeof *v, cmp_str);
    char *out = strdup("");
    for (size_t i = 0; i < n; i++) {
        char *longer = NULL;
        assert_true(asprintf(&longer, "%s%s%s", out, i ? "," : "", v[i]) >= 0);
        free(out);
        out = longer;
        free(v[i]);
    }
    free(v);
    json_decref(p);
    return out;
}

static void
assert_glob(const char *pattern, int depth, const char *want)
{
    char *got = glob_denies(pattern, depth);
    if (strcmp(got, want) != 0)
        fail_msg("%s (depth %d): got \"%s\", want \"%s\"", pattern, depth, got, want);
    free(got);
}

static void
test_globs(void **state)
{
    (void)state;
    assert_glob("*.key", -1, ".hidden.key,a.key,b.key");
    assert_glob("?.key", -1, "a.key,b.key");
    assert_glob("[a].key", -1, "a.key");
    assert_glob("*/*.key", -1, "sub/d.key");
    assert_glob("**/*.key", -1, ".hidden.key,a.key,b.key,sub/d.key,sub/deep/e.key");
    /* a match beneath another match is hidden with it: one deny path */
    assert_glob("sub/**", -1, "sub");
    assert_glob("sub/*", -1, "sub/d.key,sub/deep");
    assert_glob("sub/**/e.key", -1, "sub/deep/e.key");
    /* the link to "." is a match, never a way down */
    assert_glob("lo*/*.key", -1, "");
    /* but a literal prefix is opened as named, links and all */
    assert_glob("loop/sub/*.key", -1, "loop/sub/d.key");
    /* the bound: levels below the literal prefix */
    assert_glob("**/*.key", 1, ".hidden.key,a.key,b.key");
    assert_glob("**/*.key", 2, ".hidden.key,a.key,b.key,sub/d.key");
    assert_glob("sub/**/*.key", 1, "sub/d.key");
    /* nothing matches, or the prefix is missing: no entry, no error */
    assert_glob("*.none", -1, "");
    assert_glob("missing/*.key", -1, "");
    /* no pattern in it: a path, missing or not */
    assert_glob("c.txt", -1, "c.txt");
}

/* The profile with one glob entry for glob_dir/rel of access acc. */
static json_t *
one_glob(const char *rel, const char *acc)
{
    char *text = NULL;
    assert_true(asprintf(&text,
                         MANAGED(SPECIAL("root", "read") ",{\"path\":{\"type\":\"glob_pattern\","
                                                         "\"pattern\":\"%s/%s\"},"
                                                         "\"access\":\"%s\"}"),
                         glob_dir, rel, acc) > 0);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(j);
    return j;
}

/* In a process of its own, as a user that cannot list locked/: a deny
 * pattern there is refused naming it, a write pattern grants nothing.
 * Exit status 0 when both held. */
static int
unreadable_checks(json_t *deny, json_t *write)
{
    char *err = NULL;
    json_t *p = sandbox_profile_to_policy(deny, "/w", NULL, &err);
    bool refused = p == NULL && err != NULL && strstr(err, "cannot read") != NULL;
    json_decref(p);
    free(err);
    p = sandbox_profile_to_policy(write, "/w", NULL, &err);
    bool nothing = p != NULL && json_array_size(json_object_get(p, "writable_roots")) == 0 &&
                   json_array_size(json_object_get(p, "plain_writable_roots")) == 0;
    json_decref(p);
    free(err);
    if (!refused || !nothing)
        fprintf(stderr, "refused %d, nothing granted %d\n", refused, nothing);
    return refused && nothing ? 0 : 1;
}

static int
give_to_nobody(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return lchown(path, 65534, 65534);
}

/* A deny pattern that meets a directory it cannot list refuses the
 * profile (a name there may still be opened); a write pattern there grants
 * nothing.  Root lists everything, so as root the checks run as nobody. */
static void
test_glob_unreadable(void **state)
{
    (void)state;
    mkdir_in("locked");
    touch("locked/x.key");
    char path[256];
    snprintf(path, sizeof path, "%s/locked", glob_dir);
    json_t *deny = one_glob("locked/*.key", "deny");
    json_t *write = one_glob("locked/*.key", "write");
    if (geteuid() == 0)
        assert_int_equal(nftw(glob_dir, give_to_nobody, 16, FTW_PHYS), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                               setresuid(65534, 65534, 65534) != 0))
            _exit(2);
        if (chmod(path, 0111) != 0)
            _exit(3);
        _exit(unreadable_checks(deny, write));
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(chmod(path, 0700), 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    json_decref(deny);
    json_decref(write);
}

/* A pattern that matches more than the bound refuses the profile: a deny
 * entry cut short would hide too little. */
static void
test_glob_too_many(void **state)
{
    (void)state;
    mkdir_in("many");
    char name[64];
    for (int i = 0; i <= SANDBOX_PROFILE_GLOB_MATCHES; i++) {
        snprintf(name, sizeof name, "many/%d", i);
        touch(name);
    }
    char *profile = NULL;
    assert_true(asprintf(&profile,
                         "{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\","
                         "\"entries\":[" SPECIAL(
                             "root", "read") ",{\"path\":{\"type\":\"glob_pattern\",\"pattern\":"
                                             "\"%s/many/*\"},\"access\":\"deny\"}]}}",
                         glob_dir) >= 0);
    char *e = refusal(profile);
    assert_non_null(strstr(e, "matches more than 4096 paths"));
    free(e);
    /* one fewer file: accepted, every match kept */
    snprintf(name, sizeof name, "%s/many/0", glob_dir);
    assert_int_equal(unlink(name), 0);
    json_t *p = resolve(profile, "/w", NULL);
    free(profile);
    assert_int_equal(json_array_size(json_object_get(p, "deny_paths")),
                     SANDBOX_PROFILE_GLOB_MATCHES);
    json_decref(p);
}

/* A pattern that would read more directory entries than the bound (here
 * 17 patterns of 4096 entries, none matching) refuses the profile: the
 * scan runs on the server's loop. */
static void
test_glob_scan_bound(void **state)
{
    (void)state;
    mkdir_in("many");
    char name[64];
    for (int i = 0; i < 4096; i++) {
        snprintf(name, sizeof name, "many/%d", i);
        touch(name);
    }
    char *entries = strdup(SPECIAL("root", "read"));
    for (int i = 0; i <= SANDBOX_PROFILE_GLOB_SCAN / 4096; i++) {
        char *longer = NULL;
        assert_true(asprintf(&longer,
                             "%s,{\"path\":{\"type\":\"glob_pattern\",\"pattern\":"
                             "\"%s/many/x%d*\"},\"access\":\"deny\"}",
                             entries, glob_dir, i) > 0);
        free(entries);
        entries = longer;
    }
    char *profile = NULL;
    assert_true(asprintf(&profile, MANAGED("%s"), entries) > 0);
    char *e = refusal(profile);
    assert_non_null(strstr(e, "more than 65536 directory entries to scan"));
    free(e);
    free(profile);
    free(entries);
}

/* ---- sandboxCwd ---- */

static void
assert_cwd(const char *text, const char *want)
{
    char *err = NULL;
    char *got = sandbox_profile_cwd(text, &err);
    if (want == NULL) {
        assert_null(got);
        assert_non_null(err);
        free(err);
        return;
    }
    if (got == NULL)
        fail_msg("%s refused: %s", text, err);
    assert_string_equal(got, want);
    free(got);
}

static void
test_cwd_url(void **state)
{
    (void)state;
    assert_cwd("file:///home/u/proj", "/home/u/proj");
    assert_cwd("file:///home/u/my%20proj/%C3%A9t%c3%a9", "/home/u/my proj/\xc3\xa9t\xc3\xa9");
    assert_cwd("FILE://localhost/srv/x", "/srv/x");
    assert_cwd("file:///a%2Fb", "/a/b");
    assert_cwd("file:///a%25", "/a%");
    assert_cwd("/plain/path", "/plain/path");
    assert_cwd("file://server/share", NULL);
    assert_cwd("file:///a%00b", NULL);
    assert_cwd("file:///a%zz", NULL);
    assert_cwd("file:///a%2", NULL);
    assert_cwd("http:///x", NULL);
    assert_cwd("relative/dir", NULL);
    assert_cwd("file://", NULL);
}

/* ---- allocation failures ---- */

/* One resolution with the N-th allocation failing (alloc_fail.h): NULL
 * with a message or out of memory, nothing held afterwards. */
static void
profile_round(void *arg)
{
    const char *text = arg;
    json_t *j = json_loads(text, 0, NULL);
    if (j == NULL) {
        assert_true(alloc_fail_injected());
        return;
    }
    char *err = NULL;
    json_t *p = sandbox_profile_to_policy(j, "/w", "/t", &err);
    if (p == NULL)
        assert_true(alloc_fail_injected() || err != NULL);
    free(err);
    char *cwd = sandbox_profile_cwd("file:///a%20b", &err);
    if (cwd == NULL)
        assert_true(alloc_fail_injected());
    free(cwd);
    free(err);
    json_decref(p);
    json_decref(j);
}

static void
test_allocation_failures(void **state)
{
    (void)state;
    char *glob = NULL;
    assert_true(asprintf(&glob, MANAGED(SPECIAL("root", "read") ",%s"),
                         "{\"path\":{\"type\":\"glob_pattern\",\"pattern\":\"/proc/self/"
                         "fd*/*\"},\"access\":\"deny\"}") > 0);
    const char *texts[] = {
        MANAGED(SPECIAL("root", "read") "," ENTRY("/w", "write") "," SPECIAL(
            "slash_tmp",
            "write") "," SPECIAL("tmpdir",
                                 "write") "," ENTRY("/w/.git",
                                                    "read") "," ENTRY("/w/x",
                                                                      "deny") "," ENTRY("/w/.codex",
                                                                                        "write")),
        MANAGED(SPECIAL("minimal", "read") "," SPECIAL("project_roots", "read")),
        glob,
        "{\"type\":\"external\",\"network\":\"enabled\"}",
        "{\"type\":\"managed\",\"file_system\":{\"type\":\"unrestricted\"}}",
    };
    /* jansson allocates through alloc_fail from here on */
    json_set_alloc_funcs(malloc, free);
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++)
        assert_true(alloc_fail_sweep(profile_round, (void *)texts[t]) > 3);
    free(glob);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_only_0169),
        cmocka_unit_test(test_workspace_write_0169_is_legacy),
        cmocka_unit_test(test_nested),
        cmocka_unit_test(test_ties),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_uncovered),
        cmocka_unit_test(test_unknown_kinds),
        cmocka_unit_test(test_other_types),
        cmocka_unit_test(test_git_write),
        cmocka_unit_test(test_project_roots),
        cmocka_unit_test_setup_teardown(test_globs, setup_tree, teardown_tree),
        cmocka_unit_test_setup_teardown(test_glob_too_many, setup_tree, teardown_tree),
        cmocka_unit_test_setup_teardown(test_glob_scan_bound, setup_tree, teardown_tree),
        cmocka_unit_test_setup_teardown(test_glob_unreadable, setup_tree, teardown_tree),
        cmocka_unit_test(test_cwd_url),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
