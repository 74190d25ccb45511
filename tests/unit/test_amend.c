/* rules amend: appended line format, preservation of existing bytes,
 * atomic replacement under concurrent readers and writers, errors. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rules/amend.h"
#include "rules/load.h"
#include "rules/policy.h"
#include "tests/support/fds.h"
#include "tests/support/tmpdir.h"

#define ARGV(...)  ((const char *const[]){__VA_ARGS__})
#define NARGV(...) (sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))
#define AMEND_OK(path, ...)                                                                        \
    do {                                                                                           \
        char *err_ = NULL;                                                                         \
        int rc_ = rules_amend_allow_prefix((path), ARGV(__VA_ARGS__), NARGV(__VA_ARGS__), &err_);  \
        if (rc_ != 0)                                                                              \
            fail_msg("amend failed: %d %s", rc_, err_ ? err_ : "(null)");                          \
        assert_null(err_);                                                                         \
    } while (0)

static void
expect_file(const char *path, const char *want)
{
    size_t len = 0;
    char *got = tmpdir_read_file(path, &len);
    assert_non_null(got);
    assert_string_equal(got, want);
    assert_int_equal(len, strlen(want));
    free(got);
}

static void
test_rule_line(void **state)
{
    (void)state;
    char *line = rules_amend_rule_line(ARGV("echo", "Hello, world!"), 2);
    assert_string_equal(line,
                        "prefix_rule(pattern=[\"echo\", \"Hello, world!\"], decision=\"allow\")");
    free(line);
    line = rules_amend_rule_line(ARGV("a\"b\\c", "x\ny\t\x01", "caf\xc3\xa9"), 3);
    assert_string_equal(line, "prefix_rule(pattern=[\"a\\\"b\\\\c\", \"x\\ny\\t\\u0001\", "
                              "\"caf\xc3\xa9\"], decision=\"allow\")");
    free(line);
    assert_null(rules_amend_rule_line(NULL, 0));
}

static void
test_plain_words(void **state)
{
    (void)state;
    /* subcommands and options are kept; a path, a URL or data ends it */
    assert_int_equal(rules_amend_plain_words(ARGV("push", "origin", "main"), 3), 3);
    assert_int_equal(rules_amend_plain_words(ARGV("init", "."), 2), 1);
    assert_int_equal(rules_amend_plain_words(ARGV("-rf", "--force", "run-tests", "a_b", "/x"), 5),
                     4);
    assert_int_equal(rules_amend_plain_words(ARGV("commit", "-m", "fix the bug"), 3), 2);
    assert_int_equal(rules_amend_plain_words(ARGV("fetch", "https://example.org/x"), 2), 1);
    assert_int_equal(rules_amend_plain_words(ARGV("log", "--output=out.txt"), 2), 1);
    assert_int_equal(rules_amend_plain_words(ARGV("run", "x.py"), 2), 1);
    assert_int_equal(rules_amend_plain_words(ARGV("--", "push"), 2), 0);
    assert_int_equal(rules_amend_plain_words(ARGV("-", "push"), 2), 0);
    assert_int_equal(rules_amend_plain_words(ARGV("~x", "push"), 2), 0);
    assert_int_equal(rules_amend_plain_words(ARGV("5", "push"), 2), 0);
    assert_int_equal(rules_amend_plain_words(ARGV("caf\xc3\xa9"), 1), 0);
    assert_int_equal(rules_amend_plain_words(ARGV("push", NULL, "x"), 3), 1);
    /* a word of 41 bytes is data */
    assert_int_equal(rules_amend_plain_words(ARGV("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), 1),
                     1);
    assert_int_equal(rules_amend_plain_words(ARGV("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), 1),
                     0);
    assert_int_equal(rules_amend_plain_words(NULL, 0), 0);
}

/* For programs whose arguments name the files they change, every word. */
static void
test_proposed_words(void **state)
{
    (void)state;
    assert_int_equal(rules_amend_proposed_words("rm", ARGV("-rf", "build"), 2), 2);
    assert_int_equal(rules_amend_proposed_words("/usr/bin/rm", ARGV("-rf", "/tmp/x y", "z"), 3), 3);
    assert_int_equal(rules_amend_proposed_words("chmod", ARGV("-R", "777", "."), 3), 3);
    assert_int_equal(rules_amend_proposed_words("dd", ARGV("if=a", "of=b"), 2), 2);
    assert_int_equal(rules_amend_proposed_words("tee", ARGV("-a", "f", NULL, "x"), 4), 2);
    assert_int_equal(rules_amend_proposed_words("git", ARGV("push", "origin", "./x"), 3), 2);
    assert_int_equal(rules_amend_proposed_words("rmx", ARGV("-rf", "./b"), 2), 1);
    assert_true(rules_amend_exact_program("/bin/mv"));
    assert_true(rules_amend_exact_program("rsync"));
    assert_false(rules_amend_exact_program("git"));
    assert_false(rules_amend_exact_program("ls"));
}

static void
test_creates_dirs_and_file(void **state)
{
    (void)state;
    char *dir = tmpdir_new("amend");
    char *path = tmpdir_path(dir, "a/b/rules/default.rules");
    mode_t old_mask = umask(027);
    AMEND_OK(path, "git", "status");
    umask(old_mask);
    expect_file(path, "prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n");
    /* A new file gets 0666 less the umask, as any program's new file. */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    /* No temporary file is left behind. */
    char *rdir = tmpdir_path(dir, "a/b/rules");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s' | grep -v '^default.rules$')\"", rdir);
    assert_int_equal(system(cmd), 0);
    free(rdir);
    free(path);
    tmpdir_remove(dir);
    free(dir);
}

static void
test_keeps_existing_bytes(void **state)
{
    (void)state;
    char *dir = tmpdir_new("amend");
    char *path = tmpdir_path(dir, "user.rules");
    /* No final newline, odd bytes, comments: all must survive. */
    const char *seed = "# mine\n\tprefix_rule(pattern=[\"ls\"])  # keep \xff\r\nx = 1";
    tmpdir_write_file(path, seed, 0640);
    AMEND_OK(path, "make", "test");
    char *want = NULL;
    assert_true(asprintf(&want,
                         "%s\nprefix_rule(pattern=[\"make\", \"test\"], decision=\"allow\")\n",
                         seed) > 0);
    expect_file(path, want);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    /* The same rule again changes nothing. */
    AMEND_OK(path, "make", "test");
    expect_file(path, want);
    /* A different one is appended after it. */
    AMEND_OK(path, "make");
    char *want2 = NULL;
    assert_true(asprintf(&want2, "%sprefix_rule(pattern=[\"make\"], decision=\"allow\")\n", want) >
                0);
    expect_file(path, want2);
    free(want);
    free(want2);
    free(path);
    tmpdir_remove(dir);
    free(dir);
}

static void
test_follows_symlink(void **state)
{
    (void)state;
    char *dir = tmpdir_new("amend");
    char *target = tmpdir_path(dir, "dotfiles.rules");
    char *link = tmpdir_path(dir, "default.rules");
    tmpdir_write_file(target, "prefix_rule(pattern=[\"ls\"])\n", 0600);
    assert_int_equal(symlink(target, link), 0);
    AMEND_OK(link, "pwd");
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    expect_file(target, "prefix_rule(pattern=[\"ls\"])\n"
                        "prefix_rule(pattern=[\"pwd\"], decision=\"allow\")\n");
    free(target);
    free(link);
    tmpdir_remove(dir);
    free(dir);
}

static void
expect_error(const char *path, const char *const *prefix, size_t n, int want_rc,
             const char *want_substr)
{
    char *err = NULL;
    int rc = rules_amend_allow_prefix(path, prefix, n, &err);
    assert_int_equal(rc, want_rc);
    assert_non_null(err);
    if (!strstr(err, want_substr))
        fail_msg("error \"%s\" lacks \"%s\"", err, want_substr);
    assert_null(strchr(err, '\n'));
    free(err);
}

static void
test_errors(void **state)
{
    (void)state;
    int fds_before = fds_open_count();
    char *dir = tmpdir_new("amend");
    char *file = tmpdir_path(dir, "plain");
    tmpdir_write_file(file, "data", 0644);
    char *under_file = tmpdir_path(dir, "plain/sub/x.rules");
    expect_error(under_file, ARGV("ls"), 1, -ENOTDIR, "cannot create directory");
    expect_error(file, NULL, 0, -EINVAL, "at least one token");
    expect_error("", ARGV("ls"), 1, -EINVAL, "no rules file");
    /* A directory where the file should be. */
    char *sub = tmpdir_path(dir, "isdir.rules");
    assert_int_equal(mkdir(sub, 0755), 0);
    expect_error(sub, ARGV("ls"), 1, -EINVAL, "not a regular file");
    /* A dangling symlink cannot be resolved. */
    char *dangling = tmpdir_path(dir, "dangling.rules");
    assert_int_equal(symlink("/nonexistent/target.rules", dangling), 0);
    expect_error(dangling, ARGV("ls"), 1, -ENOENT, "cannot resolve");
    /* The plain file was never touched by any of it, and no fd leaked. */
    expect_file(file, "data");
    assert_int_equal(fds_open_count(), fds_before);
    free(dangling);
    free(sub);
    free(under_file);
    free(file);
    tmpdir_remove(dir);
    free(dir);
}

/* Every state a reader may see: the seed plus k whole rule lines. */
static void
check_snapshot(const char *text, size_t len, const char *seed)
{
    size_t seed_len = strlen(seed);
    if (len < seed_len || memcmp(text, seed, seed_len) != 0)
        fail_msg("reader saw a file without its original bytes (%zu bytes)", len);
    const char *p = text + seed_len;
    const char *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            fail_msg("reader saw a partial line: %.*s", (int)(end - p), p);
        static const char head[] = "prefix_rule(pattern=[\"cmd\", \"";
        if ((size_t)(nl - p) < sizeof head - 1 || memcmp(p, head, sizeof head - 1) != 0)
            fail_msg("reader saw a foreign line: %.*s", (int)(nl - p), p);
        p = nl + 1;
    }
}

static void
amend_many(const char *path, const char *tag, int count)
{
    for (int i = 0; i < count; i++) {
        char arg[64];
        snprintf(arg, sizeof arg, "%s-%d", tag, i);
        char *err = NULL;
        if (rules_amend_allow_prefix(path, ARGV("cmd", arg), 2, &err) != 0)
            _exit(1);
    }
    _exit(0);
}

static void
test_concurrent_readers_and_writers(void **state)
{
    (void)state;
    char *dir = tmpdir_new("amend");
    char *path = tmpdir_path(dir, "shared.rules");
    const char *seed = "# seed\nprefix_rule(pattern=[\"ls\"])\n";
    tmpdir_write_file(path, seed, 0644);
    enum { PER_WRITER = 60 };
    pid_t w1 = fork();
    assert_true(w1 >= 0);
    if (w1 == 0)
        amend_many(path, "a", PER_WRITER);
    pid_t w2 = fork();
    assert_true(w2 >= 0);
    if (w2 == 0)
        amend_many(path, "b", PER_WRITER);

    int reads = 0, st1 = 0, st2 = 0;
    bool done1 = false, done2 = false;
    while (!done1 || !done2) {
        size_t len = 0;
        char *text = tmpdir_read_file(path, &len);
        assert_non_null(text); /* the file never disappears */
        check_snapshot(text, len, seed);
        free(text);
        reads++;
        if (!done1)
            done1 = waitpid(w1, &st1, WNOHANG) == w1;
        if (!done2)
            done2 = waitpid(w2, &st2, WNOHANG) == w2;
    }
    assert_true(WIFEXITED(st1) && WEXITSTATUS(st1) == 0);
    assert_true(WIFEXITED(st2) && WEXITSTATUS(st2) == 0);
    assert_true(reads > 0);

    /* No update was lost: every rule of both writers is there, once. */
    size_t len = 0;
    char *text = tmpdir_read_file(path, &len);
    check_snapshot(text, len, seed);
    for (int i = 0; i < PER_WRITER; i++) {
        char line[128];
        for (int w = 0; w < 2; w++) {
            snprintf(line, sizeof line, "\"cmd\", \"%c-%d\"]", w ? 'b' : 'a', i);
            char *hit = strstr(text, line);
            assert_non_null(hit);
            assert_null(strstr(hit + 1, line));
        }
    }
    free(text);
    free(path);
    tmpdir_remove(dir);
    free(dir);
}

/* The server reloads while "always allow" answers are written: every
 * reload must load cleanly and see no fewer rules than the one before. */
static void
test_reload_during_amendments(void **state)
{
    (void)state;
    char *dir = tmpdir_new("amend");
    char *path = tmpdir_path(dir, "default.rules");
    tmpdir_write_file(path, "prefix_rule(pattern = [\"ls\"])\n", 0644);
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0)
        amend_many(path, "r", 80);
    size_t last = 1;
    int st = 0, loads = 0;
    bool done = false;
    while (!done) {
        done = waitpid(w, &st, WNOHANG) == w;
        char *err = NULL;
        const char *files[] = {path};
        struct rules_policy *p = rules_load(NULL, files, 1, &err);
        if (!p)
            fail_msg("reload failed while amending: %s", err ? err : "(null)");
        size_t n = rules_policy_rule_count(p);
        assert_true(n >= last);
        last = n;
        loads++;
        rules_policy_free(p);
    }
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(last, 81);
    assert_true(loads > 0);
    free(path);
    tmpdir_remove(dir);
    free(dir);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_line),
        cmocka_unit_test(test_plain_words),
        cmocka_unit_test(test_proposed_words),
        cmocka_unit_test(test_creates_dirs_and_file),
        cmocka_unit_test(test_keeps_existing_bytes),
        cmocka_unit_test(test_follows_symlink),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_concurrent_readers_and_writers),
        cmocka_unit_test(test_reload_during_amendments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
