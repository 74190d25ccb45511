/* decide: the one decision for every exec of a call, without a server
 * process: a decide_server with a rules file written here, a call whose
 * workspace-write sandbox has a scratch directory W as its cwd, and
 * decide_exec's verdicts on real system programs and on links planted in
 * W. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sandbox/policy/policy.h"
#include "server/decide/decide.h"
#include "server/decide/question_text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/tmpdir.h"

/* W: the sandbox cwd (under /tmp); R: the rules and audit files; O: a
 * directory outside every writable root of the policies that exclude /tmp
 * and $TMPDIR (under /var/tmp).  All canonical. */
static char *W;
static char *R;
static char *O;

#define ARGV(...)                                                                                  \
    (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)

static void
make_dir(const char *dir, const char *rel)
{
    char *p = tmpdir_path(dir, rel);
    assert_int_equal(mkdir(p, 0755), 0);
    free(p);
}

static void
make_link(const char *target, const char *dir, const char *rel)
{
    char *p = tmpdir_path(dir, rel);
    assert_int_equal(symlink(target, p), 0);
    free(p);
}

static void
write_in(const char *dir, const char *rel, const char *data, int mode)
{
    char *p = tmpdir_path(dir, rel);
    tmpdir_write_file(p, data, mode);
    free(p);
}

/* realpath, or a failed test. */
static char *
real(const char *path)
{
    char *r = realpath(path, NULL);
    if (!r)
        fail_msg("realpath(%s): %s", path, strerror(errno));
    return r;
}

static int
setup(void **state)
{
    W = tmpdir_new_in("/tmp", "decide-w");
    R = tmpdir_new_in("/tmp", "decide-r");
    O = tmpdir_new_in("/var/tmp", "decide-o");
    /* the escalatable cases need system programs that exist */
    assert_int_equal(access("/bin/cat", X_OK), 0);
    assert_int_equal(access("/bin/sh", X_OK), 0);
    assert_int_equal(access("/bin/rm", X_OK), 0);
    assert_int_equal(access("/bin/true", X_OK), 0);
    assert_int_equal(access("/bin/ls", X_OK), 0);
    make_link("/bin/sh", W, "cat");
    make_link("/bin/rm", W, "git");
    make_link("/bin/cat", W, "realcat");
    make_dir(W, "plain");
    make_dir(W, "sub");
    make_dir(W, "sub/.git");
    make_dir(W, "gd");
    make_dir(W, "sub2");
    char *gd = tmpdir_path(W, "gd");
    char *text = NULL;
    assert_true(asprintf(&text, "gitdir: %s\n", gd) >= 0);
    write_in(W, "sub2/.git", text, 0644);
    free(text);
    make_dir(W, "sub3");
    write_in(W, "sub3/.git", "not a gitdir line\n", 0644);
    /* outside: a repository git would use, and one whose .git file names
     * a gitdir in W */
    make_dir(O, "repo");
    make_dir(O, "repo/.git");
    make_dir(O, "repo2");
    assert_true(asprintf(&text, "gitdir: %s\n", gd) >= 0);
    write_in(O, "repo2/.git", text, 0644);
    free(text);
    free(gd);
    make_dir(O, "plain");
    (void)state;
    return 0;
}

static int
teardown(void **state)
{
    tmpdir_remove(W);
    tmpdir_remove(R);
    tmpdir_remove(O);
    free(W);
    free(R);
    free(O);
    (void)state;
    return 0;
}

/* ---- fixtures ---- */

static struct decide_server *
server_with(const char *rules)
{
    char *path = tmpdir_path(R, "test.rules");
    tmpdir_write_file(path, rules, 0644);
    const char *paths[] = {path};
    struct decide_config cfg = {.rules_paths = paths, .n_rules_paths = 1};
    char *err = NULL;
    struct decide_server *ds = decide_server_new(&cfg, &err);
    if (!ds)
        fail_msg("decide_server_new(%s): %s", rules, err ? err : "(no message)");
    assert_null(err);
    free(path);
    return ds;
}

#define WORKSPACE "{\"type\":\"workspace-write\"}"
#define WORKSPACE_NO_TMP                                                                           \
    "{\"type\":\"workspace-write\",\"exclude_slash_tmp\":true,\"exclude_tmpdir_env_var\":true}"

/* A call under policy_text with sandbox cwd cwd. */
static struct decide_call *
call_at(struct decide_server *ds, const char *policy_text, const char *cwd)
{
    json_t *policy = json_loads(policy_text, 0, NULL);
    assert_non_null(policy);
    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_from_json(policy, cwd, &err);
    if (!p)
        fail_msg("sandbox_policy_from_json: %s", err ? err : "(no message)");
    struct decide_call *dc = decide_call_new(ds, p, NULL, "test-call", NULL, NULL, &err);
    if (!dc)
        fail_msg("decide_call_new: %s", err ? err : "(no message)");
    assert_null(err);
    sandbox_policy_free(p);
    json_decref(policy);
    return dc;
}

/* A call under policy_text with W as its sandbox cwd. */
static struct decide_call *
call_with(struct decide_server *ds, const char *policy_text)
{
    return call_at(ds, policy_text, W);
}

static void
decide(struct decide_call *dc, enum decide_source source, const char *path, const char *cwd,
       const char *const *argv, size_t argc, pid_t pid, struct decide_result *r)
{
    struct decide_exec e = {
        .source = source,
        .path = path,
        .cwd = cwd,
        .argv = argv,
        .argc = argc,
        .pid = pid,
    };
    decide_exec(dc, &e, r);
}

static const char *
verdict_name(enum decide_verdict v)
{
    switch (v) {
    case DECIDE_RUN:
        return "RUN";
    case DECIDE_DENY:
        return "DENY";
    case DECIDE_ESCALATE:
        return "ESCALATE";
    case DECIDE_ASK:
        return "ASK";
    }
    return "?";
}

static void
assert_verdict(const struct decide_result *r, enum decide_verdict want)
{
    if (r->verdict != want)
        fail_msg("verdict %s (reason: %s), expected %s", verdict_name(r->verdict),
                 r->reason ? r->reason : "(none)", verdict_name(want));
}

static void
assert_reason_has(const struct decide_result *r, const char *part)
{
    if (!r->reason || !strstr(r->reason, part))
        fail_msg("reason \"%s\" does not mention \"%s\"", r->reason ? r->reason : "(none)", part);
}

/* The fd decide opened is the file at path (its inode), O_PATH and
 * close-on-exec. */
static void
assert_fd_is(int fd, const char *path)
{
    assert_true(fd >= 0);
    struct stat a, b;
    assert_int_equal(fstat(fd, &a), 0);
    assert_int_equal(stat(path, &b), 0);
    assert_true(a.st_dev == b.st_dev);
    assert_true(a.st_ino == b.st_ino);
    int flags = fcntl(fd, F_GETFD);
    assert_true(flags >= 0 && (flags & FD_CLOEXEC));
    int fl = fcntl(fd, F_GETFL);
    assert_true(fl >= 0 && (fl & O_PATH));
}

/* ---- the server ---- */

static void
test_server(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n"
                                           "prefix_rule(pattern=[\"git\", \"push\"], "
                                           "decision=\"prompt\")\n");
    assert_int_equal(decide_server_rule_count(ds), 2);
    assert_null(decide_server_audit(ds));
    const char *names = decide_server_wrap_names(ds);
    assert_non_null(names);
    char *padded = NULL;
    assert_true(asprintf(&padded, ":%s:", names) >= 0);
    assert_non_null(strstr(padded, ":cat:"));
    assert_non_null(strstr(padded, ":git:"));
    assert_non_null(strstr(padded, ":rm:")); /* the forced-rm heuristic's */
    free(padded);
    decide_server_free(ds);
    decide_server_free(NULL);

    /* a bad file refuses the whole set, with the file named */
    char *path = tmpdir_path(R, "bad.rules");
    tmpdir_write_file(path, "prefix_rule(pattern=[\"cat\"], decison=\"allow\")\n", 0644);
    const char *paths[] = {path};
    struct decide_config cfg = {.rules_paths = paths, .n_rules_paths = 1};
    char *err = NULL;
    assert_null(decide_server_new(&cfg, &err));
    assert_non_null(err);
    assert_non_null(strstr(err, "bad.rules"));
    free(err);
    assert_int_equal(unlink(path), 0);

    /* a missing path is an error, unless it is the default directory */
    err = NULL;
    assert_null(decide_server_new(&cfg, &err));
    assert_non_null(err);
    free(err);
    cfg.default_rules_dir = path;
    err = NULL;
    ds = decide_server_new(&cfg, &err);
    assert_non_null(ds);
    assert_null(err);
    assert_int_equal(decide_server_rule_count(ds), 0);
    decide_server_free(ds);
    free(path);

    /* a directory: its *.rules, nothing else */
    make_dir(R, "dir");
    char *dir = tmpdir_path(R, "dir");
    write_in(dir, "a.rules", "prefix_rule(pattern=[\"ls\"])\n", 0644);
    write_in(dir, "b.txt", "this is not read\n", 0644);
    write_in(dir, ".hidden.rules", "this is not read either\n", 0644);
    paths[0] = dir;
    cfg.default_rules_dir = NULL;
    err = NULL;
    ds = decide_server_new(&cfg, &err);
    if (!ds)
        fail_msg("%s", err);
    assert_int_equal(decide_server_rule_count(ds), 1);
    decide_server_free(ds);
    tmpdir_remove(dir);
    free(dir);
    (void)state;
}

static void
test_call_ref(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"])\n");
    struct decide_call *dc = call_with(ds, WORKSPACE);
    assert_string_equal(decide_call_label(dc), "test-call");
    assert_ptr_equal(decide_call_ref(dc), dc);
    decide_call_unref(dc);
    decide_call_unref(dc);
    decide_call_unref(NULL);

    /* a policy the sandbox refuses refuses the call: it is refused as
     * it is parsed, before there is a call */
    json_t *bad = json_loads("{\"type\":\"everything\"}", 0, NULL);
    char *err = NULL;
    assert_null(sandbox_policy_from_json(bad, W, &err));
    assert_non_null(err);
    free(err);
    json_decref(bad);
    decide_server_free(ds);
    (void)state;
}

/* ---- verdicts ---- */

static void
test_allow_escalates(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_result r;
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "x"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    char *cat = real("/bin/cat");
    assert_string_equal(r.program, cat);
    assert_string_equal(r.file, "/bin/cat");
    assert_string_equal(r.answered_by, "rules");
    assert_fd_is(r.fd, cat);
    assert_false(r.script);
    assert_null(r.matched); /* no audit log */
    assert_non_null(r.key);
    assert_true(r.keylen > 0);
    decide_result_release(&r);
    assert_int_equal(r.fd, -1);
    assert_null(r.key);
    decide_result_release(&r); /* twice is fine */

    /* by its canonical path too */
    decide(dc, DECIDE_FROM_WRAPPER, cat, W, ARGV("cat"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    assert_fd_is(r.fd, cat);
    decide_result_release(&r);

    /* a relative path, from a cwd outside the sandbox's reach */
    decide(dc, DECIDE_FROM_WRAPPER, "../bin/cat", "/usr/lib", ARGV("cat"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    assert_string_equal(r.file, "/usr/lib/../bin/cat");
    decide_result_release(&r);

    /* the same from the tree: runs in place */
    decide(dc, DECIDE_FROM_TREE, "/bin/cat", W, ARGV("cat", "x"), 77, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_int_equal(r.fd, -1);
    decide_result_release(&r);

    /* what does not resolve runs in place (and fails there) */
    char *missing = tmpdir_path(O, "cat");
    decide(dc, DECIDE_FROM_WRAPPER, missing, W, ARGV("cat"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_string_equal(r.program, missing);
    assert_int_equal(r.fd, -1);
    decide_result_release(&r);
    free(missing);
    free(cat);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

static void
test_link_in_sandbox(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_result r;
    /* W/cat -> /bin/sh: the name grants, but the sandbox made the link */
    decide(dc, DECIDE_FROM_WRAPPER, "./cat", W, ARGV("cat", "-c", "id"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_reason_has(&r, "sandbox can write");
    char *sh = real("/bin/sh");
    assert_string_equal(r.program, sh);
    char *file = tmpdir_path(W, "./cat");
    assert_string_equal(r.file, file);
    assert_int_equal(r.fd, -1);
    decide_result_release(&r);
    free(file);

    /* W/realcat -> /bin/cat: the very file, but through a writable link */
    decide(dc, DECIDE_FROM_WRAPPER, "realcat", W, ARGV("realcat"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_reason_has(&r, "sandbox can write");
    decide_result_release(&r);

    /* a file the sandbox can write, named cat only by argv[0] */
    write_in(W, "mycat", "#!/bin/sh\n", 0755);
    char *mycat = tmpdir_path(W, "mycat");
    decide(dc, DECIDE_FROM_WRAPPER, mycat, "/", ARGV("cat"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    decide_result_release(&r);
    assert_int_equal(unlink(mycat), 0);
    free(mycat);
    free(sh);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

static void
test_forbidden_through_link(void **state)
{
    struct decide_server *ds =
        server_with("prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n"
                    "prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_result r;
    /* W/git -> /bin/rm: `git status` names it, rm is what runs */
    decide(dc, DECIDE_FROM_WRAPPER, "./git", W, ARGV("./git", "status", "-rf", "x"), 0, &r);
    assert_verdict(&r, DECIDE_DENY);
    assert_non_null(r.reason);
    assert_true(strncmp(r.reason, "Execution forbidden by policy",
                        strlen("Execution forbidden by policy")) == 0);
    char *rm = real("/bin/rm");
    assert_string_equal(r.program, rm);
    assert_int_equal(r.fd, -1);
    decide_result_release(&r);

    /* the tree's refusal is its own line */
    decide(dc, DECIDE_FROM_TREE, "./git", W, ARGV("./git", "status", "-rf", "x"), 5, &r);
    assert_verdict(&r, DECIDE_DENY);
    assert_non_null(r.reason);
    decide_result_release(&r);

    /* the watch's canonical file restricts too: a `git status` by a path
     * the kernel ran as rm */
    struct decide_exec e = {
        .source = DECIDE_FROM_TREE,
        .path = "/usr/bin/git-renamed",
        .cwd = W,
        .argv = (const char *const[]){"git", "status"},
        .argc = 2,
        .canonical = rm,
        .pid = 5,
    };
    decide_exec(dc, &e, &r);
    assert_verdict(&r, DECIDE_DENY);
    assert_string_equal(r.program, rm);
    decide_result_release(&r);
    free(rm);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

static void
test_argv0(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"git\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_result r;
    /* exec -a git /bin/sh: argv[0] never grants */
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", W, ARGV("git", "status"), 0, &r);
    if (r.verdict == DECIDE_ESCALATE)
        fail_msg("argv[0] `git` escalated /bin/sh");
    assert_verdict(&r, DECIDE_RUN);
    assert_int_equal(r.fd, -1);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);

    /* but it restricts */
    ds = server_with("prefix_rule(pattern=[\"git\"], decision=\"forbidden\")\n");
    dc = call_with(ds, WORKSPACE);
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/true", W, ARGV("git"), 0, &r);
    assert_verdict(&r, DECIDE_DENY);
    assert_true(strncmp(r.reason, "Execution forbidden by policy", 29) == 0);
    decide_result_release(&r);
    decide(dc, DECIDE_FROM_TREE, "/bin/true", W, ARGV("/some/where/git", "x"), 9, &r);
    assert_verdict(&r, DECIDE_DENY);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

static void
test_prompt(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"], decision=\"prompt\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_result r;
    char *cat = real("/bin/cat");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "f"), 0, &r);
    assert_verdict(&r, DECIDE_ASK);
    assert_true(r.escalate_if_approved);
    assert_fd_is(r.fd, cat);
    assert_string_equal(r.program, cat);
    decide_result_release(&r);

    /* W/realcat -> /bin/cat: asked, and an approval runs in place */
    decide(dc, DECIDE_FROM_WRAPPER, "realcat", W, ARGV("cat", "f"), 0, &r);
    assert_verdict(&r, DECIDE_ASK);
    assert_false(r.escalate_if_approved);
    assert_int_equal(r.fd, -1);
    assert_string_equal(r.program, cat);
    assert_reason_has(&r, "sandbox can write");
    decide_result_release(&r);

    /* the tree never escalates */
    decide(dc, DECIDE_FROM_TREE, "/bin/cat", W, ARGV("cat", "f"), 3, &r);
    assert_verdict(&r, DECIDE_ASK);
    assert_false(r.escalate_if_approved);
    assert_int_equal(r.fd, -1);
    decide_result_release(&r);
    free(cat);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* sh reads repositories (it runs what it is given, git too). */
static void
test_repositories(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"sh\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    struct decide_result r;
    char *cwd = tmpdir_path(W, "plain");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", cwd, ARGV("sh"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    decide_result_release(&r);
    free(cwd);

    /* W/sub/.git, a directory the sandbox can write */
    cwd = tmpdir_path(W, "sub");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", cwd, ARGV("sh"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_reason_has(&r, "git repository");
    char *dotgit = tmpdir_path(W, "sub/.git");
    assert_reason_has(&r, dotgit);
    /* the line the program's stderr gets (golden) */
    char *note = decide_inside_note(&r);
    char *want = NULL;
    assert_true(asprintf(&want,
                         "sh is allowed by %s/test.rules:1, but runs inside the sandbox: the "
                         "working directory is in a git repository at %s that the sandbox could "
                         "have written, and the program reads repository configuration",
                         R, dotgit) > 0);
    assert_non_null(note);
    assert_string_equal(note, want);
    free(note);
    free(want);
    free(dotgit);
    decide_result_release(&r);
    free(cwd);

    /* deeper in it too */
    make_dir(W, "sub/deep");
    cwd = tmpdir_path(W, "sub/deep");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", cwd, ARGV("sh"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_reason_has(&r, "git repository");
    decide_result_release(&r);
    free(cwd);

    /* W/sub2/.git, a "gitdir: " file */
    cwd = tmpdir_path(W, "sub2");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", cwd, ARGV("sh"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_reason_has(&r, "git repository");
    decide_result_release(&r);
    free(cwd);

    /* W/sub3/.git, a file git would not read: still the sandbox's */
    cwd = tmpdir_path(W, "sub3");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", cwd, ARGV("sh"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    decide_result_release(&r);
    free(cwd);

    /* O/repo/.git, out of the sandbox's reach: escalates */
    cwd = tmpdir_path(O, "repo");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", cwd, ARGV("sh"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    decide_result_release(&r);
    free(cwd);

    /* O/repo2/.git, out of reach, names a gitdir in W: the gitdir counts */
    cwd = tmpdir_path(O, "repo2");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", cwd, ARGV("sh"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_reason_has(&r, "git repository");
    decide_result_release(&r);
    free(cwd);

    /* a workdir that does not exist: the cautious answer */
    cwd = tmpdir_path(O, "gone");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", cwd, ARGV("sh"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    decide_result_release(&r);
    free(cwd);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

static void
test_host_executable(void **state)
{
    struct decide_server *ds =
        server_with("host_executable(name=\"sh\", paths=[\"/nonexistent/sh\"])\n"
                    "prefix_rule(pattern=[\"sh\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_result r;
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", W, ARGV("sh", "-c", "id"), 0, &r);
    if (r.verdict == DECIDE_ESCALATE)
        fail_msg("/bin/sh escalated though host_executable lists only /nonexistent/sh");
    assert_verdict(&r, DECIDE_RUN);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);

    /* listed: it grants */
    ds = server_with("host_executable(name=\"sh\", paths=[\"/bin/sh\"])\n"
                     "prefix_rule(pattern=[\"sh\"], decision=\"allow\")\n");
    dc = call_with(ds, WORKSPACE);
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", W, ARGV("sh", "-c", "id"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    char *sh = real("/bin/sh");
    assert_fd_is(r.fd, sh);
    free(sh);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* In /dev the sandbox can write only the helper's device nodes
 * (sandbox_writable_new): a program put in /dev/shm from outside is one
 * it could not have made, and escalates like any other; under a policy
 * that makes /dev/shm a writable root it runs in the sandbox. */
static void
test_dev_programs(void **state)
{
    if (access("/dev/shm", W_OK) != 0)
        skip();
    char *prog = NULL;
    assert_true(asprintf(&prog, "/dev/shm/execgate-decide-%ld", (long)getpid()) > 0);
    tmpdir_write_file(prog, "#!/bin/sh\n", 0755);
    char *real_prog = real(prog);
    char *rules = NULL;
    assert_true(asprintf(&rules, "prefix_rule(pattern=[\"%s\"], decision=\"allow\")\n", prog) > 0);
    struct decide_server *ds = server_with(rules);
    const char *outside[] = {WORKSPACE, WORKSPACE_NO_TMP, "{\"type\":\"read-only\"}"};
    struct decide_result r;
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
        struct decide_call *dc = call_with(ds, outside[i]);
        decide(dc, DECIDE_FROM_WRAPPER, prog, "/", ARGV(prog), 0, &r);
        assert_verdict(&r, DECIDE_ESCALATE);
        assert_fd_is(r.fd, real_prog);
        decide_result_release(&r);
        decide_call_unref(dc);
    }
    struct decide_call *dc =
        call_with(ds, "{\"type\":\"workspace-write\",\"writable_roots\":[\"/dev/shm\"]}");
    decide(dc, DECIDE_FROM_WRAPPER, prog, "/", ARGV("prog"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_reason_has(&r, "sandbox can write");
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);
    assert_int_equal(unlink(prog), 0);
    free(rules);
    free(real_prog);
    free(prog);
    (void)state;
}

/* ---- what the sandboxes of other calls could write ---- */

/* O/x holds an allowed program and a link to one, made by the test: a
 * call that cannot write O/x escalates them until a call whose sandbox
 * can write O/x arrives; from then on they run in the sandbox, for that
 * call while it runs, for the calls before it and for every later one,
 * whatever their policy. */
static void
test_other_calls_sandbox(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"tool\"], decision=\"allow\")\n"
                                           "prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n");
    make_dir(O, "x");
    write_in(O, "x/tool", "#!/bin/sh\n", 0755);
    make_link("/bin/cat", O, "x/cat");
    char *x = tmpdir_path(O, "x");
    char *tool = tmpdir_path(O, "x/tool");
    char *cat = tmpdir_path(O, "x/cat");
    struct decide_result r;
    struct decide_call *before = call_with(ds, WORKSPACE_NO_TMP);
    decide(before, DECIDE_FROM_WRAPPER, tool, W, ARGV("tool"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    decide_result_release(&r);
    decide(before, DECIDE_FROM_WRAPPER, cat, W, ARGV("cat"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    decide_result_release(&r);

    struct decide_call *writer = call_at(ds, WORKSPACE_NO_TMP, x);
    const char *const paths[] = {tool, cat};
    for (size_t i = 0; i < 2; i++) {
        decide(before, DECIDE_FROM_WRAPPER, paths[i], W, ARGV("tool"), 0, &r);
        assert_verdict(&r, DECIDE_RUN);
        assert_reason_has(&r, "sandbox can write");
        assert_int_equal(r.fd, -1);
        decide_result_release(&r);
    }
    decide_call_unref(writer);
    decide_call_unref(before);

    /* after it ended, under policies that cannot write O/x */
    const char *later[] = {WORKSPACE, WORKSPACE_NO_TMP, "{\"type\":\"read-only\"}"};
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++) {
        struct decide_call *dc = call_with(ds, later[i]);
        for (size_t j = 0; j < 2; j++) {
            decide(dc, DECIDE_FROM_WRAPPER, paths[j], W, ARGV("tool"), 0, &r);
            assert_verdict(&r, DECIDE_RUN);
            assert_reason_has(&r, "sandbox can write");
            decide_result_release(&r);
        }
        /* what no sandbox could write still escalates */
        decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat"), 0, &r);
        assert_verdict(&r, DECIDE_ESCALATE);
        decide_result_release(&r);
        decide_call_unref(dc);
    }
    decide_server_free(ds);

    /* another server has seen no sandbox write O/x */
    ds = server_with("prefix_rule(pattern=[\"tool\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    decide(dc, DECIDE_FROM_WRAPPER, tool, W, ARGV("tool"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);
    assert_int_equal(unlink(tool), 0);
    assert_int_equal(unlink(cat), 0);
    assert_int_equal(rmdir(x), 0);
    free(cat);
    free(tool);
    free(x);
    (void)state;
}

/* A call with no sandbox (danger-full-access) or another's
 * (external-sandbox) ran with the rights an escalated program has: what
 * it could write is not held against later calls. */
static void
test_full_access_call_does_not_taint(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"tool\"], decision=\"allow\")\n");
    make_dir(O, "fa");
    write_in(O, "fa/tool", "#!/bin/sh\n", 0755);
    char *fa = tmpdir_path(O, "fa");
    char *tool = tmpdir_path(O, "fa/tool");
    const char *full[] = {"{\"type\":\"danger-full-access\"}",
                          "{\"type\":\"external-sandbox\",\"network_access\":\"enabled\"}"};
    struct decide_result r;
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++) {
        struct decide_call *dc = call_at(ds, full[i], fa);
        decide_call_unref(dc);
    }
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    decide(dc, DECIDE_FROM_WRAPPER, tool, W, ARGV("tool"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);
    assert_int_equal(unlink(tool), 0);
    assert_int_equal(rmdir(fa), 0);
    free(tool);
    free(fa);
    (void)state;
}

/* O/repo/.git is out of this call's reach, but not of a call whose
 * sandbox cwd is O: no escalation in it from then on. */
static void
test_other_calls_repositories(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"sh\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    char *repo = tmpdir_path(O, "repo");
    struct decide_result r;
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", repo, ARGV("sh"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    decide_result_release(&r);
    decide_call_unref(call_at(ds, WORKSPACE_NO_TMP, O));
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", repo, ARGV("sh"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_reason_has(&r, "git repository");
    char *dotgit = tmpdir_path(O, "repo/.git");
    assert_reason_has(&r, dotgit);
    free(dotgit);
    decide_result_release(&r);
    /* outside any repository still escalates */
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", "/usr", ARGV("sh"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    decide_result_release(&r);
    free(repo);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* The places remembered are capped (WRITABLE_HISTORY_MAX_ROOTS, 1024):
 * 512 distinct sandboxes of two roots each (W and one of O/cap/N) fill
 * it, and escalation goes on; one more, and nothing escalates any more. */
static void
test_other_calls_cap(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n"
                                           "prefix_rule(pattern=[\"ls\"], decision=\"prompt\")\n");
    make_dir(O, "cap");
    struct decide_result r;
    for (int i = 0; i <= 512; i++) {
        char *rel = NULL;
        assert_true(asprintf(&rel, "cap/%d", i) > 0);
        make_dir(O, rel);
        char *dir = tmpdir_path(O, rel);
        char *policy = NULL;
        assert_true(asprintf(&policy,
                             "{\"type\":\"workspace-write\",\"exclude_slash_tmp\":true,"
                             "\"exclude_tmpdir_env_var\":true,\"writable_roots\":[\"%s\"]}",
                             dir) > 0);
        struct decide_call *dc = call_with(ds, policy);
        decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", "/usr", ARGV("cat"), 0, &r);
        if (i < 512)
            assert_verdict(&r, DECIDE_ESCALATE);
        else
            assert_verdict(&r, DECIDE_RUN);
        decide_result_release(&r);
        decide_call_unref(dc);
        free(policy);
        free(dir);
        free(rel);
    }
    /* for good, whatever the policy; a prompted program is still asked,
     * and an approval runs it in the sandbox */
    struct decide_call *dc = call_with(ds, "{\"type\":\"read-only\"}");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", "/usr", ARGV("cat"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_reason_has(&r, "sandbox can write");
    decide_result_release(&r);
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/ls", "/usr", ARGV("ls"), 0, &r);
    assert_verdict(&r, DECIDE_ASK);
    assert_false(r.escalate_if_approved);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);
    char *cap = tmpdir_path(O, "cap");
    tmpdir_remove(cap);
    free(cap);
    (void)state;
}

static void
test_forced_rm(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"pwd\"])\n");
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_result r;
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/rm", W, ARGV("rm", "-rf", "x"), 0, &r);
    assert_verdict(&r, DECIDE_ASK);
    assert_false(r.escalate_if_approved);
    assert_int_equal(r.fd, -1);
    assert_reason_has(&r, "forced rm");
    decide_result_release(&r);

    /* through a link named otherwise: the canonical name counts */
    decide(dc, DECIDE_FROM_WRAPPER, "./git", W, ARGV("git", "-f", "x"), 0, &r);
    assert_verdict(&r, DECIDE_ASK);
    assert_false(r.escalate_if_approved);
    decide_result_release(&r);

    /* not forced, or from the tree: runs */
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/rm", W, ARGV("rm", "x"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    decide_result_release(&r);
    decide(dc, DECIDE_FROM_TREE, "/bin/rm", W, ARGV("rm", "-rf", "x"), 12, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_string_equal(r.answered_by, "rules");
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* With rules that forbid rm: both the tree's and the wrapper's verdicts
 * deny it, with the reason the rules give shown as `shown`. */
static void
assert_rm_forbidden(const char *rules, const char *shown)
{
    struct decide_server *ds = server_with(rules);
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_result r;
    decide(dc, DECIDE_FROM_TREE, "/bin/rm", W, ARGV("rm", "x"), 20, &r);
    assert_verdict(&r, DECIDE_DENY);
    assert_string_equal(r.reason, shown);
    decide_result_release(&r);
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/rm", W, ARGV("rm", "x"), 0, &r);
    assert_verdict(&r, DECIDE_DENY);
    char want[256];
    snprintf(want, sizeof want, "Execution forbidden by policy: %s", shown);
    assert_string_equal(r.reason, want);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);
}

static void
test_tree(void **state)
{
    assert_rm_forbidden(
        "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", justification=\"keep\")\n", "keep");

    struct decide_server *ds;
    struct decide_call *dc;
    struct decide_result r;
    ds = server_with("prefix_rule(pattern=[\"rm\"], decision=\"allow\")\n");
    dc = call_with(ds, WORKSPACE);
    decide(dc, DECIDE_FROM_TREE, "/bin/rm", W, ARGV("rm", "-rf", "x"), 20, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_int_equal(r.fd, -1);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* ---- keys ---- */

static bool
same_key(const struct decide_result *a, const struct decide_result *b)
{
    assert_non_null(a->key);
    assert_non_null(b->key);
    return a->keylen == b->keylen && memcmp(a->key, b->key, a->keylen) == 0;
}

static void
test_keys(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"prog\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    struct decide_result a, b;
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "a"), 0, &a);
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "a"), 0, &b);
    assert_true(same_key(&a, &b));
    decide_result_release(&b);
    /* argv[0], the source, the workdir and the path's spelling do not count */
    char *cat = real("/bin/cat");
    struct decide_exec e = {.source = DECIDE_FROM_TREE,
                            .path = cat,
                            .cwd = "/",
                            .argv = (const char *const[]){"zz", "a"},
                            .argc = 2};
    decide_exec(dc, &e, &b);
    assert_true(same_key(&a, &b));
    decide_result_release(&b);
    free(cat);
    /* the arguments do */
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "b"), 0, &b);
    assert_false(same_key(&a, &b));
    decide_result_release(&b);
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "a", ""), 0, &b);
    assert_false(same_key(&a, &b));
    decide_result_release(&b);
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat"), 0, &b);
    assert_false(same_key(&a, &b));
    decide_result_release(&b);
    /* and the file */
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/ls", W, ARGV("cat", "a"), 0, &b);
    assert_false(same_key(&a, &b));
    decide_result_release(&b);
    decide_result_release(&a);

    /* a file replaced at the same path: another (dev, ino), another key */
    write_in(O, "prog", "#!/bin/sh\necho one\n", 0755);
    char *prog = tmpdir_path(O, "prog");
    struct stat st1, st2;
    assert_int_equal(stat(prog, &st1), 0);
    decide(dc, DECIDE_FROM_WRAPPER, prog, W, ARGV("prog", "a"), 0, &a);
    assert_verdict(&a, DECIDE_ESCALATE); /* O is outside this sandbox's reach */
    assert_true(a.script);
    assert_fd_is(a.fd, prog);
    write_in(O, "prog.new", "#!/bin/sh\necho two\n", 0755);
    char *next = tmpdir_path(O, "prog.new");
    assert_int_equal(rename(next, prog), 0);
    assert_int_equal(stat(prog, &st2), 0);
    assert_true(st1.st_ino != st2.st_ino);
    decide(dc, DECIDE_FROM_WRAPPER, prog, W, ARGV("prog", "a"), 0, &b);
    assert_verdict(&b, DECIDE_ESCALATE);
    assert_string_equal(a.program, b.program);
    assert_false(same_key(&a, &b));
    assert_fd_is(b.fd, prog);
    /* the first fd is still the first file */
    struct stat fst;
    assert_int_equal(fstat(a.fd, &fst), 0);
    assert_true(fst.st_ino == st1.st_ino);
    decide_result_release(&a);
    decide_result_release(&b);
    assert_int_equal(unlink(prog), 0);
    free(prog);
    free(next);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* An approval for the session names the workdir and where the program
 * runs: the same command in another directory, or on the other side of
 * the sandbox, is asked again. */
static void
test_approval_keys(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"], decision=\"prompt\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    struct decide_result a, b;
    char *plain = tmpdir_path(O, "plain");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "a"), 0, &a);
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "a"), 0, &b);
    assert_verdict(&a, DECIDE_ASK);
    assert_true(a.approval && b.approval && a.approvallen == b.approvallen &&
                memcmp(a.approval, b.approval, a.approvallen) == 0);
    decide_result_release(&b);
    /* another workdir */
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", plain, ARGV("cat", "a"), 0, &b);
    assert_verdict(&b, DECIDE_ASK);
    assert_true(same_key(&a, &b)); /* the call's memos do not care */
    assert_false(a.approvallen == b.approvallen &&
                 memcmp(a.approval, b.approval, a.approvallen) == 0);
    decide_result_release(&b);
    /* the same file, run inside (a link the sandbox could have made) */
    decide(dc, DECIDE_FROM_WRAPPER, "realcat", W, ARGV("cat", "a"), 0, &b);
    assert_verdict(&b, DECIDE_ASK);
    assert_false(b.escalate_if_approved);
    assert_true(a.escalate_if_approved);
    assert_false(a.approvallen == b.approvallen &&
                 memcmp(a.approval, b.approval, a.approvallen) == 0);
    decide_result_release(&b);
    decide_result_release(&a);
    free(plain);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* The program runs as the name its rule matched, never as argv[0] says;
 * a request whose argv[0] names another program is asked about. */
static void
test_run_as(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    struct decide_result r;
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "f"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    assert_string_equal(r.run_as, "cat");
    decide_result_release(&r);
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("/bin/cat", "f"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    decide_result_release(&r);
    /* exec -a git-clone cat f */
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("git-clone", "f"), 0, &r);
    assert_verdict(&r, DECIDE_ASK);
    assert_true(r.escalate_if_approved);
    assert_string_equal(r.run_as, "cat");
    assert_non_null(r.caution);
    assert_non_null(strstr(r.caution, "argv[0]"));
    decide_result_release(&r);
    /* a link named otherwise, outside the sandbox's reach: the rule
     * matched the file's own name, and that is what it runs as */
    char *link = tmpdir_path(O, "upload-pack");
    assert_int_equal(symlink("/bin/cat", link), 0);
    decide(dc, DECIDE_FROM_WRAPPER, link, W, ARGV("upload-pack", "f"), 0, &r);
    assert_verdict(&r, DECIDE_ASK);
    assert_string_equal(r.run_as, "cat");
    decide_result_release(&r);
    assert_int_equal(unlink(link), 0);
    free(link);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* A directory laid out as a git directory (a bare repository) where a
 * sandbox could write is a repository too; with the children of escalated
 * programs decided, it stops only programs that read repositories. */
static void
test_bare_repositories(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n"
                                           "prefix_rule(pattern=[\"sh\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    struct decide_result r;
    make_dir(W, "bare");
    make_dir(W, "bare/objects");
    make_dir(W, "bare/refs");
    write_in(W, "bare/HEAD", "ref: refs/heads/main\n", 0644);
    char *bare = tmpdir_path(W, "bare");
    char *inside = tmpdir_path(W, "bare/objects");
    const char *cwds[] = {bare, inside};
    for (size_t i = 0; i < 2; i++) {
        decide(dc, DECIDE_FROM_WRAPPER, "/bin/sh", cwds[i], ARGV("sh"), 0, &r);
        assert_verdict(&r, DECIDE_RUN);
        assert_reason_has(&r, "git repository");
        assert_reason_has(&r, bare);
        assert_reason_has(&r, "reads repository configuration");
        decide_result_release(&r);
    }
    /* cat reads no repository: it escalates, there and in W/sub, with any
     * git it would start fenced off */
    char *sub = tmpdir_path(W, "sub");
    const char *cat_cwds[] = {bare, inside, sub};
    for (size_t i = 0; i < 3; i++) {
        decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", cat_cwds[i], ARGV("cat"), 0, &r);
        assert_verdict(&r, DECIDE_ESCALATE);
        assert_true(r.git_fenced);
        assert_null(r.git_ceiling);
        decide_result_release(&r);
    }
    char *plain = tmpdir_path(O, "plain");
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", plain, ARGV("cat"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    assert_false(r.git_fenced);
    decide_result_release(&r);
    free(plain);
    free(sub);
    free(bare);
    free(inside);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* git run outside looks for a repository no higher than the one the
 * decision checked. */
static void
test_git_ceiling(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    struct decide_result r;
    char *repo = tmpdir_path(O, "repo");
    make_dir(O, "repo/deeper");
    char *deeper = tmpdir_path(O, "repo/deeper");
    char *plain = tmpdir_path(O, "plain");
    const char *cwds[] = {repo, deeper, plain};
    for (size_t i = 0; i < 3; i++) {
        decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", cwds[i], ARGV("cat"), 0, &r);
        assert_verdict(&r, DECIDE_ESCALATE);
        assert_non_null(r.git_ceiling);
        assert_string_equal(r.git_ceiling, O);
        decide_result_release(&r);
    }
    free(repo);
    free(deeper);
    free(plain);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

static void
test_expect(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"], decision=\"prompt\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_result r, t;
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "f"), 0, &r);
    assert_verdict(&r, DECIDE_ASK);
    decide_call_expect(dc, 4242, &r);
    decide_call_expect(dc, 0, &r); /* no process: nothing remembered */
    decide_result_release(&r);

    /* another process: asked */
    decide(dc, DECIDE_FROM_TREE, "/bin/cat", W, ARGV("cat", "f"), 4343, &t);
    assert_verdict(&t, DECIDE_ASK);
    decide_result_release(&t);
    /* other arguments: asked */
    decide(dc, DECIDE_FROM_TREE, "/bin/cat", W, ARGV("cat", "g"), 4242, &t);
    assert_verdict(&t, DECIDE_ASK);
    decide_result_release(&t);
    /* the wrapper's own exec of it: runs, once */
    decide(dc, DECIDE_FROM_TREE, "/bin/cat", W, ARGV("cat", "f"), 4242, &t);
    assert_verdict(&t, DECIDE_RUN);
    assert_string_equal(t.answered_by, "escalation");
    decide_result_release(&t);
    decide(dc, DECIDE_FROM_TREE, "/bin/cat", W, ARGV("cat", "f"), 4242, &t);
    assert_verdict(&t, DECIDE_ASK);
    assert_string_equal(t.answered_by, "rules");
    decide_result_release(&t);

    /* the wrapper's requests never use the memo */
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "f"), 0, &r);
    decide_call_expect(dc, 4242, &r);
    decide_result_release(&r);
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat", "f"), 4242, &t);
    assert_verdict(&t, DECIDE_ASK);
    decide_result_release(&t);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* ---- the question ---- */

static void
assert_question(const char *program, const char *const *args, size_t nargs, const char *workdir,
                const char *want)
{
    char *got = question_text_exec(program, args, nargs, workdir);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* Backticks in s: a backslash does not escape one in a Markdown code
 * span, so the question's own four must be the only ones. */
static size_t
backticks(const char *s)
{
    size_t n = 0;
    for (size_t i = 0; s[i]; i++)
        n += s[i] == '`';
    return n;
}

static void
test_question_text(void **state)
{
    assert_question("/usr/bin/git", ARGV("init", "."), "/tmp/wd",
                    "Allow agent to run `/usr/bin/git init .` in `/tmp/wd`?");
    assert_question("/usr/bin/ls", NULL, 0, "/", "Allow agent to run `/usr/bin/ls` in `/`?");
    /* shlex quoting */
    assert_question("/bin/echo", ARGV("a b", "it's", "", "x=1,y:2@3%4+5/-_."), "/w",
                    "Allow agent to run `/bin/echo 'a b' 'it'\"'\"'s' '' x=1,y:2@3%4+5/-_.` in "
                    "`/w`?");
    /* control characters, backticks and invisible code points escaped,
     * bytes that are not UTF-8 replaced */
    assert_question("/bin/echo", ARGV("a\nb", "c\td", "e\x01", "`id`", "x\xe2\x80\xaey", "\xff"),
                    "/w",
                    "Allow agent to run `/bin/echo 'a\\nb' 'c\\td' 'e\\x01' '\\x60id\\x60' "
                    "'x\\u{202E}y' '\xef\xbf\xbd'` in `/w`?");
    /* a backslash doubled: a literal "\n" does not read as an escaped newline */
    assert_question("/bin/echo", ARGV("a\\nb"), "/w",
                    "Allow agent to run `/bin/echo 'a\\\\nb'` in `/w`?");
    /* in the program and the workdir too */
    assert_question("/tmp/a\nb`c", ARGV("x"), "/w\r`\x7f\xe2\x80\x8b",
                    "Allow agent to run `/tmp/a\\nb\\x60c x` in `/w\\r\\x60\\x7f\\u{200B}`?");
    /* other invisible code points: C1 controls, isolates, the byte-order
     * mark; ordinary non-ASCII text stays as it is */
    assert_question(
        "/bin/echo", ARGV("\xc2\x85", "\xe2\x81\xa6", "\xef\xbb\xbf", "h\xc3\xa9"), "/w",
        "Allow agent to run `/bin/echo '\\u{0085}' '\\u{2066}' '\\u{FEFF}' 'h\xc3\xa9'` "
        "in `/w`?");

    /* a forged question: no raw newline, no backtick beyond the four */
    const char *const forged[] = {"x` in `/safe`?\n\nAllow agent to run `true", "\r\n\x1b[2K",
                                  "\\`"};
    char *got = question_text_exec("/bin/sh", forged, 3, "/tmp/wd\n`");
    assert_non_null(got);
    assert_null(strchr(got, '\n'));
    assert_null(strchr(got, '\r'));
    assert_null(strchr(got, '\x1b'));
    assert_int_equal(backticks(got), 4);
    assert_true(strncmp(got, "Allow agent to run `/bin/sh ", 28) == 0);
    free(got);
    (void)state;
}

/* A child in the tree of a program a rule let out (e.outside): an allow
 * rule runs it, anything else is asked about with the refusal ready; a
 * dash that only starts one plain command runs; forbidden still denies. */
static void
test_outside_children(void **state)
{
    struct decide_server *ds =
        server_with("prefix_rule(pattern=[\"true\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"git\", \"log\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    const struct decide_outside parent = {"make", "allowed by test.rules:1"};
    struct decide_result r;
    struct decide_exec e = {.source = DECIDE_FROM_TREE, .cwd = W, .pid = 7, .outside = &parent};

    e.path = "/bin/true";
    e.argv = (const char *const[]){"true", "x"};
    e.argc = 2;
    decide_exec(dc, &e, &r);
    assert_verdict(&r, DECIDE_RUN);
    decide_result_release(&r);

    e.path = "/bin/echo";
    e.argv = (const char *const[]){"echo", "hi"};
    decide_exec(dc, &e, &r);
    assert_verdict(&r, DECIDE_ASK);
    assert_string_equal(r.refusal,
                        "started outside the sandbox by `make` (allowed by test.rules:1), and no "
                        "rule names it; no person could be asked. This rule would allow it: "
                        "prefix_rule(pattern=[\"echo\", \"hi\"], decision=\"allow\")");
    decide_result_release(&r);

    /* allowed, but with an option that writes any file */
    e.path = "/usr/bin/git";
    e.argv = (const char *const[]){"git", "log", "--output=/tmp/x"};
    e.argc = 3;
    decide_exec(dc, &e, &r);
    assert_verdict(&r, DECIDE_ASK);
    assert_non_null(r.caution);
    decide_result_release(&r);

    e.path = "/usr/bin/rm";
    e.argv = (const char *const[]){"rm", "-f", "x"};
    decide_exec(dc, &e, &r);
    assert_verdict(&r, DECIDE_DENY);
    decide_result_release(&r);

    /* dash starting one plain command; not with more than that */
    char *dash = real("/bin/sh");
    bool is_dash = dash && strcmp(strrchr(dash, '/'), "/dash") == 0;
    free(dash);
    const char *const scripts[] = {"git-upload-pack '/srv/r.git'",
                                   "git-upload-pack '/r'; touch x",
                                   "eval touch x",
                                   ". ./x",
                                   "X=1 touch x",
                                   "touch $HOME",
                                   "touch `x`",
                                   "touch x > y",
                                   "'touch' x"};
    for (size_t i = 0; is_dash && i < sizeof(scripts) / sizeof(scripts[0]); i++) {
        e.path = "/bin/sh";
        e.argv = (const char *const[]){"sh", "-c", scripts[i]};
        e.argc = 3;
        decide_exec(dc, &e, &r);
        if (r.verdict != (i == 0 ? DECIDE_RUN : DECIDE_ASK))
            fail_msg("sh -c %s: %d", scripts[i], (int)r.verdict);
        decide_result_release(&r);
    }
    /* a login shell reads startup files */
    e.argv = (const char *const[]){"-sh", "-c", "git-upload-pack '/srv/r.git'"};
    decide_exec(dc, &e, &r);
    assert_verdict(&r, DECIDE_ASK);
    decide_result_release(&r);

    /* the same children inside the sandbox run */
    e.outside = NULL;
    e.path = "/bin/echo";
    e.argv = (const char *const[]){"echo", "hi"};
    e.argc = 2;
    decide_exec(dc, &e, &r);
    assert_verdict(&r, DECIDE_RUN);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* The loader's program counts: rm through it is forbidden, inside and
 * out, by the wrapper and the tree. */
static void
test_loader_program(void **state)
{
    const char *loader = "/lib64/ld-linux-x86-64.so.2";
    if (access(loader, X_OK) != 0)
        skip();
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n"
                                           "prefix_rule(pattern=[\"cat\"], decision=\"prompt\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    struct decide_result r;
    enum decide_source sources[] = {DECIDE_FROM_WRAPPER, DECIDE_FROM_TREE};
    for (size_t i = 0; i < 2; i++) {
        decide(dc, sources[i], loader, W, ARGV(loader, "/usr/bin/rm", "-f", "x"), 3, &r);
        assert_verdict(&r, DECIDE_DENY);
        decide_result_release(&r);
        decide(dc, sources[i], loader, W, ARGV(loader, "--argv0", "cat", "/bin/cat", "f"), 3, &r);
        assert_verdict(&r, DECIDE_ASK);
        /* the rule of the program the loader runs restricted it, but what
         * runs outside is still the loader */
        if (sources[i] == DECIDE_FROM_WRAPPER)
            assert_string_equal(r.run_as, "ld-linux-x86-64.so.2");
        decide_result_release(&r);
        decide(dc, sources[i], loader, W, ARGV(loader, "/bin/true"), 3, &r);
        assert_verdict(&r, DECIDE_RUN);
        decide_result_release(&r);
    }
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* The question about an escalated program's child: the parent, its rule,
 * the child and the workdir, each escaped; no part can add a backtick or
 * a line. */
static void
test_child_question_text(void **state)
{
    const char *const args[] = {"-c", "touch /var/tmp/x; false"};
    char *got = question_text_child("git status", "allowed by default.rules:3", "/usr/bin/dash",
                                    args, 2, "/home/me/proj");
    assert_non_null(got);
    assert_string_equal(got, "`git status` (allowed by default.rules:3) wants to start "
                             "`/usr/bin/dash -c 'touch /var/tmp/x; false'` outside the sandbox, "
                             "in `/home/me/proj`. Allow it?");
    free(got);
    const char *const forged[] = {"x`\n\nAllow it?"};
    got =
        question_text_child("make `x`\n", "allowed by a\nb.rules:1", "/bin/sh", forged, 1, "/w\r`");
    assert_non_null(got);
    assert_null(strchr(got, '\n'));
    assert_null(strchr(got, '\r'));
    assert_int_equal(backticks(got), 6);
    free(got);
    (void)state;
}

/* ---- since the first core: #! interpreters and dangerous options ---- */

static void
test_interpreters(void **state)
{
    struct decide_server *ds =
        server_with("prefix_rule(pattern=[\"prog\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE_NO_TMP);
    struct decide_result r;

    /* a script out of reach whose interpreter is too: escalates */
    write_in(O, "prog", "#!/bin/sh\necho\n", 0755);
    char *prog = tmpdir_path(O, "prog");
    decide(dc, DECIDE_FROM_WRAPPER, prog, W, ARGV("prog"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    assert_true(r.script);
    decide_result_release(&r);

    /* its interpreter in the sandbox's reach (a link in W to /bin/sh) */
    char *text = NULL;
    assert_true(asprintf(&text, "#!%s/cat\necho\n", W) >= 0);
    write_in(O, "prog", text, 0755);
    free(text);
    decide(dc, DECIDE_FROM_WRAPPER, prog, W, ARGV("prog"), 0, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_reason_has(&r, "interpreter");
    assert_int_equal(r.fd, -1);
    decide_result_release(&r);

    /* an interpreter's name restricts: #!/bin/rm under forbidden rm */
    write_in(O, "prog", "#!/bin/rm -f\n", 0755);
    decide(dc, DECIDE_FROM_WRAPPER, prog, W, ARGV("prog"), 0, &r);
    assert_verdict(&r, DECIDE_DENY);
    decide_result_release(&r);

    /* two deep: prog -> #!O/mid, mid -> #!/bin/rm */
    write_in(O, "mid", "#!/bin/rm\n", 0755);
    char *mid = tmpdir_path(O, "mid");
    assert_true(asprintf(&text, "#!%s\n", mid) >= 0);
    write_in(O, "prog", text, 0755);
    free(text);
    decide(dc, DECIDE_FROM_WRAPPER, prog, W, ARGV("prog"), 0, &r);
    assert_verdict(&r, DECIDE_DENY);
    decide_result_release(&r);

    /* the tree's interpreters (the watch's view) restrict too */
    write_in(O, "prog", "#!/bin/sh\n", 0755);
    struct decide_exec e = {
        .source = DECIDE_FROM_TREE,
        .path = prog,
        .cwd = W,
        .argv = (const char *const[]){"prog"},
        .argc = 1,
        .interpreters = (const char *const[]){"/usr/bin/rm"},
        .n_interpreters = 1,
        .pid = 30,
    };
    decide_exec(dc, &e, &r);
    assert_verdict(&r, DECIDE_DENY);
    decide_result_release(&r);
    assert_int_equal(unlink(prog), 0);
    assert_int_equal(unlink(mid), 0);
    free(mid);
    free(prog);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

static void
test_dangerous_option(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"find\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_result r;
    char *find = real("/usr/bin/find");
    decide(dc, DECIDE_FROM_WRAPPER, "/usr/bin/find", W, ARGV("find", ".", "-name", "x"), 0, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    assert_null(r.caution);
    decide_result_release(&r);

    /* allowed, but -exec runs any command: a person is asked, and an
     * approval escalates */
    decide(dc, DECIDE_FROM_WRAPPER, "/usr/bin/find", W,
           ARGV("find", ".", "-exec", "sh", "-c", "id", ";"), 0, &r);
    assert_verdict(&r, DECIDE_ASK);
    assert_non_null(r.caution);
    assert_true(r.escalate_if_approved);
    assert_fd_is(r.fd, find);
    decide_result_release(&r);

    /* inside the sandbox anyway (the tree): no question */
    decide(dc, DECIDE_FROM_TREE, "/usr/bin/find", W, ARGV("find", ".", "-delete"), 31, &r);
    assert_verdict(&r, DECIDE_RUN);
    assert_null(r.caution);
    decide_result_release(&r);
    free(find);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

/* A NUL in a justification (Codex keeps it) is shown as U+2400, so the
 * text after it reaches the client and JSON stays whole. */
static void
test_nul_justification(void **state)
{
    assert_rm_forbidden(
        "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", justification=\"keep\\0out\")\n",
        "keep\xe2\x90\x80out");
    (void)state;
}

/* ---- the audit log ---- */

static void
test_audit(void **state)
{
    char *rules = tmpdir_path(R, "audit.rules");
    tmpdir_write_file(rules,
                      "prefix_rule(pattern=[\"cat\"], decision=\"allow\", "
                      "justification=\"reads\")\n",
                      0644);
    char *log = tmpdir_path(R, "audit.log");
    const char *paths[] = {rules};
    struct decide_config cfg = {.rules_paths = paths, .n_rules_paths = 1, .audit_path = log};
    char *err = NULL;
    struct decide_server *ds = decide_server_new(&cfg, &err);
    if (!ds)
        fail_msg("decide_server_new: %s", err);
    assert_non_null(decide_server_audit(ds));
    assert_null(decide_server_wrap_names(ds)); /* every exec goes to the wrapper */
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_exec e = {
        .source = DECIDE_FROM_WRAPPER,
        .path = "/bin/cat",
        .cwd = W,
        .argv = (const char *const[]){"cat", "f\xff"},
        .argc = 2,
    };
    struct decide_result r;
    decide_exec(dc, &e, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    assert_non_null(r.matched);
    assert_int_equal(json_array_size(r.matched), 1);
    json_t *m = json_array_get(r.matched, 0);
    assert_string_equal(json_string_value(json_object_get(m, "decision")), "allow");
    assert_string_equal(json_string_value(json_object_get(m, "justification")), "reads");
    assert_string_equal(json_string_value(json_array_get(json_object_get(m, "prefix"), 0)), "cat");
    decide_audit(dc, &e, &r, "escalate", NULL, "rules", -1, 0);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);

    size_t len = 0;
    char *text = tmpdir_read_file(log, &len);
    assert_non_null(text);
    assert_non_null(strchr(text, '\n'));
    assert_ptr_equal(strchr(text, '\n'), text + len - 1); /* one line */
    json_error_t jerr;
    json_t *rec = json_loads(text, 0, &jerr);
    if (!rec)
        fail_msg("audit line is not JSON: %s: %s", jerr.text, text);
    char *cat = real("/bin/cat");
    assert_string_equal(json_string_value(json_object_get(rec, "call")), "test-call");
    assert_string_equal(json_string_value(json_object_get(rec, "file")), "/bin/cat");
    assert_string_equal(json_string_value(json_object_get(rec, "program")), cat);
    assert_string_equal(json_string_value(json_object_get(rec, "workdir")), W);
    assert_string_equal(json_string_value(json_object_get(rec, "decision")), "escalate");
    assert_string_equal(json_string_value(json_object_get(rec, "answered_by")), "rules");
    json_t *argv = json_object_get(rec, "argv");
    assert_int_equal(json_array_size(argv), 2);
    assert_string_equal(json_string_value(json_array_get(argv, 1)), "f\xef\xbf\xbd");
    assert_int_equal(json_array_size(json_object_get(rec, "matched_rules")), 1);
    assert_null(json_object_get(rec, "exit_code"));
    assert_null(json_object_get(rec, "source"));
    json_decref(rec);
    free(cat);
    free(text);
    unlink(log);
    unlink(rules);
    free(log);
    free(rules);
    (void)state;
}

/* An exec with no arguments at all (argv empty) is decided like any. */
static void
test_empty_argv(void **state)
{
    struct decide_server *ds = server_with("prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n");
    struct decide_call *dc = call_with(ds, WORKSPACE);
    struct decide_exec e = {.source = DECIDE_FROM_WRAPPER, .path = "/bin/cat", .cwd = W};
    struct decide_result r, t;
    decide_exec(dc, &e, &r);
    assert_verdict(&r, DECIDE_ESCALATE);
    assert_non_null(r.key);
    /* the same as argv = ["cat"] for the key: argv[0] never counts */
    decide(dc, DECIDE_FROM_WRAPPER, "/bin/cat", W, ARGV("cat"), 0, &t);
    assert_true(same_key(&r, &t));
    decide_result_release(&t);
    decide_result_release(&r);
    decide_call_unref(dc);
    decide_server_free(ds);
    (void)state;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server),
        cmocka_unit_test(test_call_ref),
        cmocka_unit_test(test_allow_escalates),
        cmocka_unit_test(test_link_in_sandbox),
        cmocka_unit_test(test_forbidden_through_link),
        cmocka_unit_test(test_argv0),
        cmocka_unit_test(test_prompt),
        cmocka_unit_test(test_repositories),
        cmocka_unit_test(test_host_executable),
        cmocka_unit_test(test_dev_programs),
        cmocka_unit_test(test_other_calls_sandbox),
        cmocka_unit_test(test_full_access_call_does_not_taint),
        cmocka_unit_test(test_other_calls_repositories),
        cmocka_unit_test(test_other_calls_cap),
        cmocka_unit_test(test_forced_rm),
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_nul_justification),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_approval_keys),
        cmocka_unit_test(test_run_as),
        cmocka_unit_test(test_bare_repositories),
        cmocka_unit_test(test_git_ceiling),
        cmocka_unit_test(test_expect),
        cmocka_unit_test(test_question_text),
        cmocka_unit_test(test_child_question_text),
        cmocka_unit_test(test_outside_children),
        cmocka_unit_test(test_loader_program),
        cmocka_unit_test(test_interpreters),
        cmocka_unit_test(test_dangerous_option),
        cmocka_unit_test(test_audit),
        cmocka_unit_test(test_empty_argv),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
