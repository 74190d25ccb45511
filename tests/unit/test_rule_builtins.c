/*
 * The rule built-ins and the loader: prefix_rule, host_executable and
 * network_rule with every check Codex makes, examples checked at load
 * time, directories loaded in name order, and a policy with any error
 * rejected whole.  Each error is compared with its exact text and position.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "rules/load.h"
#include "rules/policy.h"
#include "tests/support/tmpdir.h"

static char *dir;

static int
setup(void **state)
{
    (void)state;
    dir = tmpdir_new("starlark-rules");
    return dir ? 0 : -1;
}

static int
teardown(void **state)
{
    (void)state;
    tmpdir_remove(dir);
    free(dir);
    return 0;
}

/* Writes src to dir/name and returns the path (caller frees). */
static char *
write_rules(const char *name, const char *src)
{
    char *path = tmpdir_path(dir, name);
    tmpdir_write_file(path, src, 0644);
    return path;
}

/* Loads src as one file; returns the policy or NULL with *err. */
static struct rules_policy *
load_src(const char *src, char **err, char **path_out)
{
    char *path = write_rules("t.rules", src);
    const char *extra[] = {path};
    struct rules_policy *p = rules_load(NULL, extra, 1, err);
    if (path_out)
        *path_out = path;
    else
        free(path);
    return p;
}

/* Expects src to fail with "<path>:<want>". */
static void
expect_err(const char *src, const char *want)
{
    char *err = NULL, *path = NULL;
    struct rules_policy *p = load_src(src, &err, &path);
    if (p != NULL) {
        rules_policy_free(p);
        print_error("loaded, want error %s\n--- file:\n%s", want, src);
        free(path);
        fail();
    }
    char *full = NULL;
    assert_true(asprintf(&full, "%s:%s", path, want) > 0);
    if (err == NULL || strcmp(err, full) != 0) {
        print_error("error\n  got:  %s\n  want: %s\n--- file:\n%s", err ? err : "(none)", full,
                    src);
        free(err);
        free(full);
        free(path);
        fail();
    }
    free(err);
    free(full);
    free(path);
}

/* The decision for a command (words separated by spaces) under p. */
static enum rules_decision
decide(const struct rules_policy *p, const char *cmd, unsigned flags)
{
    char *copy = strdup(cmd);
    const char *argv[32];
    size_t argc = 0;
    for (char *tok = strtok(copy, " "); tok && argc < 32; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    struct rules_result r;
    assert_int_equal(rules_policy_check(p, argv, argc, flags, &r), 0);
    enum rules_decision d = r.decision;
    rules_result_free(&r);
    free(copy);
    return d;
}

static void
test_prefix_rules_load(void **state)
{
    (void)state;
    char *err = NULL;
    struct rules_policy *p = load_src(
        "# plain calls, variables, helpers and comprehensions\n"
        "prefix_rule(pattern = ['ls'])\n"
        "GIT = 'git'\n"
        "prefix_rule(pattern = [GIT, ['push', 'fetch'], '--force'], decision = 'prompt',\n"
        "            justification = 'rewrites history')\n"
        "def deny(*tokens, why = 'dangerous'):\n"
        "    prefix_rule(pattern = list(tokens), decision = 'forbidden', justification = why)\n"
        "deny('rm', '-rf')\n"
        "[prefix_rule(pattern = [t, 'status']) for t in ['hg', 'svn']]\n"
        "for tool in ['npm', 'pnpm']:\n"
        "    prefix_rule(pattern = [tool, 'test'], decision = 'allow')\n"
        "prefix_rule(pattern = [['python', 'python3'], '-V'])\n",
        &err, NULL);
    if (p == NULL)
        fail_msg("%s", err);
    assert_int_equal(rules_policy_rule_count(p), 9);
    assert_int_equal(decide(p, "ls -la", 0), RULES_DECISION_ALLOW);
    assert_int_equal(decide(p, "git push --force origin", 0), RULES_DECISION_PROMPT);
    assert_int_equal(decide(p, "git push origin", 0), RULES_DECISION_NONE);
    assert_int_equal(decide(p, "rm -rf /", 0), RULES_DECISION_FORBIDDEN);
    assert_int_equal(decide(p, "svn status", 0), RULES_DECISION_ALLOW);
    assert_int_equal(decide(p, "pnpm test", 0), RULES_DECISION_ALLOW);
    assert_int_equal(decide(p, "python3 -V", 0), RULES_DECISION_ALLOW);
    rules_policy_free(p);
}

static void
test_prefix_rule_errors(void **state)
{
    (void)state;
    expect_err("prefix_rule(pattern = [])\n",
               "1:1: invalid pattern element: pattern cannot be empty");
    expect_err("prefix_rule(pattern = ['git', []])\n",
               "1:1: invalid pattern element: pattern alternatives cannot be empty");
    expect_err("prefix_rule(pattern = ['git', 1])\n",
               "1:1: invalid pattern element: pattern element must be a string or list of "
               "strings (got int)");
    expect_err("prefix_rule(pattern = ['git', ['a', None]])\n",
               "1:1: invalid pattern element: pattern alternative must be a string (got "
               "NoneType)");
    expect_err("prefix_rule(pattern = 'git status')\n",
               "1:1: prefix_rule: pattern must be a list, not string");
    expect_err("prefix_rule()\n", "1:1: prefix_rule: missing argument for pattern");
    expect_err(
        "prefix_rule(pattern = ['ls'])\nprefix_rule(pattern = ['git'], decision = 'maybe')\n",
        "2:1: invalid decision: maybe (want allow, prompt or forbidden)");
    expect_err("prefix_rule(pattern = ['git'], justification = '  \\t ')\n",
               "1:1: invalid rule: justification cannot be empty");
    expect_err("def allow(*t, why = None):\n"
               "    prefix_rule(pattern = list(t), justification = why)\n"
               "allow('make')\n",
               "2:5: prefix_rule: justification must be a string, not NoneType");
    expect_err("prefix_rule(pattern = ['ls'], decison = 'allow')\n",
               "1:1: prefix_rule: unexpected keyword argument 'decison'");
    expect_err("    prefix_rule(pattern = ['x'],\n", "1:1: unexpected indentation");
    expect_err("prefix_rule(pattern = ['x'],\n", "1:12: '(' is never closed");
}

static void
test_examples(void **state)
{
    (void)state;
    char *err = NULL;
    struct rules_policy *p =
        load_src("prefix_rule(\n"
                 "    pattern = ['git', ['push', 'fetch'], '--force'],\n"
                 "    match = [['git', 'push', '--force'], 'git fetch --force origin',\n"
                 "             \"git push --force 'my branch'\"],\n"
                 "    not_match = ['git push origin', ['git', 'fetch'], \"git 'push --force'\"],\n"
                 ")\n"
                 "prefix_rule(pattern = ['git', 'status'], match = ['/usr/bin/git status'],\n"
                 "            not_match = ['/tmp/git status'])\n"
                 "host_executable(name = 'git', paths = ['/usr/bin/git'])\n",
                 &err, NULL);
    if (p == NULL)
        fail_msg("%s", err);
    rules_policy_free(p);

    expect_err("prefix_rule(\n    pattern = ['git', 'push'],\n    match = ['git push origin', "
               "'git pull'],\n)\n",
               "1:1: a match example does not match the rule: rule pattern [\"git\", \"push\"], "
               "example: git pull");
    expect_err("x = 1\nprefix_rule(pattern = ['git', 'push'], not_match = ['git push --force'])\n",
               "2:1: a not_match example matches the rule: rule pattern [\"git\", \"push\"], "
               "example: git push --force");
    expect_err("prefix_rule(pattern = ['echo'], match = [\"echo 'unterminated\"])\n",
               "1:1: invalid example: example string has invalid shell syntax (No closing "
               "quotation)");
    expect_err("prefix_rule(pattern = ['echo'], match = ['   '])\n",
               "1:1: invalid example: example cannot be an empty string");
    expect_err("prefix_rule(pattern = ['echo'], match = [[]])\n",
               "1:1: invalid example: example cannot be an empty list");
    expect_err("prefix_rule(pattern = ['echo'], match = [1])\n",
               "1:1: invalid example: example must be a string or list of strings (got int)");
    expect_err("prefix_rule(pattern = ['echo'], match = [['echo', 2]])\n",
               "1:1: invalid example: example tokens must be strings (got int)");
    /* Found by the fuzzer: running out of memory while examples are split
     * must not leak the split words. */
    expect_err("prefix_rule(pattern = ['git'], match = ['git x'] * 3000000)\n",
               "1:1: out of memory: the file needs more than 256 MiB");
    expect_err("prefix_rule(pattern = ['echo'], match = 'echo hi')\n",
               "1:1: prefix_rule: match must be a list, not string");
}

static void
test_host_executables(void **state)
{
    (void)state;
    setenv("HOME", "/home/tester", 1);
    char *err = NULL;
    struct rules_policy *p = load_src(
        "host_executable(name = 'git', paths = ['/usr/bin/git', '~/bin/git', '/usr/bin/git'])\n"
        "prefix_rule(pattern = ['git', 'status'])\n",
        &err, NULL);
    if (p == NULL)
        fail_msg("%s", err);
    bool known = false;
    assert_true(rules_policy_host_executable_allows(p, "git", "/home/tester/bin/git", &known));
    assert_true(known);
    assert_int_equal(decide(p, "/usr/bin/git status", RULES_CHECK_RESOLVE_HOST_EXECUTABLES),
                     RULES_DECISION_ALLOW);
    assert_int_equal(decide(p, "/tmp/git status", RULES_CHECK_RESOLVE_HOST_EXECUTABLES),
                     RULES_DECISION_NONE);
    rules_policy_free(p);

    expect_err("host_executable(name = 'git', paths = ['/usr/bin/git', '/usr/bin/hub'])\n",
               "1:1: invalid rule: host_executable path `/usr/bin/hub` must have basename `git`");
    expect_err("host_executable(name = 'git', paths = ['bin/git'])\n",
               "1:1: invalid rule: host_executable paths must be absolute (got bin/git)");
    /* Loaded as Codex loads it (execgate-rules check), ~/ is not absolute */
    char *tilde =
        write_rules("tilde.rules", "host_executable(name = 'git', paths = ['~/bin/git'])\n");
    const char *files[] = {tilde};
    err = NULL;
    assert_null(rules_load_as_codex(NULL, files, 1, &err));
    assert_non_null(strstr(err, "tilde.rules:1:1: invalid rule: host_executable paths must be "
                                "absolute (got ~/bin/git)"));
    free(err);
    err = NULL;
    p = rules_load(NULL, files, 1, &err);
    assert_non_null(p);
    rules_policy_free(p);
    free(tilde);
    expect_err("host_executable(name = '', paths = [])\n",
               "1:1: invalid rule: host_executable name cannot be empty");
    expect_err("host_executable(name = 'bin/git', paths = [])\n",
               "1:1: invalid rule: host_executable name must be a bare executable name (got "
               "bin/git)");
    expect_err("host_executable(name = 'git', paths = [1])\n",
               "1:1: invalid rule: host_executable paths must be strings (got int)");
    expect_err("host_executable(name = 'git')\n",
               "1:1: host_executable: missing argument for paths");
}

static void
test_network_rules(void **state)
{
    (void)state;
    char *err = NULL;
    struct rules_policy *p =
        load_src("network_rule(host = 'GitHub.com.', protocol = 'https', decision = 'allow',\n"
                 "             justification = 'code hosting')\n"
                 "network_rule(host = 'example.org', protocol = 'socks5_tcp', decision = 'deny')\n",
                 &err, NULL);
    if (p == NULL)
        fail_msg("%s", err);
    assert_int_equal(rules_policy_network_rule_count(p), 2);
    rules_policy_free(p);
    expect_err("network_rule(host = 'github.com', protocol = 'ftp', decision = 'allow')\n",
               "1:1: invalid rule: network_rule protocol must be one of http, https, "
               "socks5_tcp, socks5_udp (got ftp)");
    expect_err("network_rule(host = 'github.com', protocol = 'http', decision = 'block')\n",
               "1:1: invalid decision: block (want allow, prompt, forbidden or deny)");
    expect_err("network_rule(host = 'https://github.com', protocol = 'http', decision = 'allow')\n",
               "1:1: invalid rule: network_rule host must be a hostname or IP literal (without "
               "scheme or path)");
    expect_err("network_rule(host = '*.github.com', protocol = 'http', decision = 'allow')\n",
               "1:1: invalid rule: network_rule host must be a specific host; wildcards are not "
               "allowed");
    expect_err("network_rule(host = '  ', protocol = 'http', decision = 'allow')\n",
               "1:1: invalid rule: network_rule host cannot be empty");
}

/* The first match's justification for a command, as check() gives it. */
static void
expect_justification(const struct rules_policy *p, const char *cmd, const char *shown,
                     const char *text, size_t text_len)
{
    const char *argv[] = {cmd};
    struct rules_result r;
    assert_int_equal(rules_policy_check(p, argv, 1, 0, &r), 0);
    assert_int_equal(r.n_matches, 1);
    assert_string_equal(r.matches[0].justification, shown);
    assert_int_equal(r.matches[0].justification_len, text_len);
    assert_memory_equal(r.matches[0].justification_text, text, text_len + 1);
    rules_result_free(&r);
}

/* Codex keeps NUL bytes wherever a rule takes a string; so does the
 * policy, and a NUL never lets a command from outside match. */
static void
test_nul_bytes(void **state)
{
    (void)state;
    char *err = NULL;
    struct rules_policy *p = load_src(
        "prefix_rule(pattern = ['ls'], justification = 'a\\0b')\n"
        "prefix_rule(pattern = ['cat'], justification = ''.join(['\\0', chr(0), 'c']) + ' ')\n"
        "prefix_rule(pattern = ['rm'], decision = 'forbidden', justification = ' \\0 ',\n"
        "            match = [['rm', 'a\\0']], not_match = ['r\\0m'])\n"
        "prefix_rule(pattern = ['ls', ['x\\0', 'y']], match = [['ls', 'x\\0', 'z']],\n"
        "            not_match = ['ls x'])\n"
        "host_executable(name = 'ls', paths = ['/bin/ls', '/b\\0/ls'])\n"
        "host_executable(name = 'g\\0', paths = ['/bin/g\\0'])\n"
        "prefix_rule(pattern = ['g\\0'], match = ['/bin/g\\0'], not_match = ['/usr/g\\0'])\n"
        "prefix_rule(pattern = ['ls', 'q'], match = ['/b\\0/ls q'], decision = 'prompt')\n"
        "network_rule(host = 'a\\0b.test', protocol = 'https', decision = 'allow',\n"
        "             justification = 'n\\0')\n"
        "network_rule(host = 'c.test', protocol = 'https', decision = 'prompt',\n"
        "             justification = 'n\\0')\n",
        &err, NULL);
    if (p == NULL)
        fail_msg("%s", err);
    expect_justification(p, "ls",
                         "a\xe2\x90\x80"
                         "b",
                         "a\0b", 3);
    expect_justification(p, "cat",
                         "\xe2\x90\x80\xe2\x90\x80"
                         "c ",
                         "\0\0c ", 4);
    expect_justification(p, "rm", " \xe2\x90\x80 ", " \0 ", 3);
    /* A pattern token with a NUL is left out of the policy... */
    assert_int_equal(decide(p, "ls y", 0), RULES_DECISION_ALLOW);
    assert_int_equal(decide(p, "ls x", 0), RULES_DECISION_ALLOW); /* the ['ls'] rule only */
    assert_int_equal(rules_policy_rule_count(p), 5);              /* not the g\0 one */
    /* ...and a command carrying the stand-in bytes does not reach what a
     * NUL was written into: not a listed path, not a network host. */
    assert_int_equal(decide(p, "/bin/ls q", RULES_CHECK_RESOLVE_HOST_EXECUTABLES),
                     RULES_DECISION_PROMPT);
    assert_int_equal(
        decide(p, "/b" RULES_NUL_STANDIN "/ls q", RULES_CHECK_RESOLVE_HOST_EXECUTABLES),
        RULES_DECISION_NONE);
    assert_int_equal(decide(p, "/b" RULES_NUL_STANDIN "/ls q",
                            RULES_CHECK_RESOLVE_HOST_EXECUTABLES | RULES_CHECK_EXAMPLE),
                     RULES_DECISION_PROMPT);
    struct rules_network_result n =
        rules_policy_network_check(p, "a" RULES_NUL_STANDIN "b.test", "https");
    assert_int_equal(n.decision, RULES_DECISION_NONE);
    n = rules_policy_network_check(p, "c.test", "https");
    assert_int_equal(n.decision, RULES_DECISION_PROMPT);
    assert_string_equal(n.justification, "n\xe2\x90\x80");
    rules_policy_free(p);

    /* The examples compare NULs exactly, and errors show them as \0. */
    expect_err("prefix_rule(pattern = ['ls', 'a\\0'], match = [['ls', 'a']])\n",
               "1:1: a match example does not match the rule: rule pattern [\"ls\", \"a\\0\"], "
               "example: ls a");
    expect_err("prefix_rule(pattern = ['l\\0s'], not_match = ['l\\0s'])\n",
               "1:1: a not_match example matches the rule: rule pattern [\"l\\0s\"], example: "
               "'l\\0s'");
    expect_err("host_executable(name = 'ls', paths = ['/bin/l\\0s'])\n",
               "1:1: invalid rule: host_executable path `/bin/l\\0s` must have basename `ls`");
}

static void
test_directory(void **state)
{
    (void)state;
    char *sub = tmpdir_path(dir, "rules.d");
    assert_int_equal(mkdir(sub, 0755), 0);
    char *a = tmpdir_path(sub, "b.rules");
    char *b = tmpdir_path(sub, "a.rules");
    char *c = tmpdir_path(sub, "notes.txt");
    tmpdir_write_file(a, "prefix_rule(pattern = ['ls'], decision = 'forbidden')\n", 0644);
    tmpdir_write_file(b, "prefix_rule(pattern = ['ls'])\n", 0644);
    tmpdir_write_file(c, "this is not starlark (\n", 0644);
    char *err = NULL;
    struct rules_policy *p = rules_load(sub, NULL, 0, &err);
    if (p == NULL)
        fail_msg("%s", err);
    assert_int_equal(rules_policy_rule_count(p), 2);
    /* Both rules count; a.rules first. */
    const char *argv[] = {"ls"};
    struct rules_result r;
    assert_int_equal(rules_policy_check(p, argv, 1, 0, &r), 0);
    assert_int_equal(r.n_matches, 2);
    assert_int_equal(r.matches[0].decision, RULES_DECISION_ALLOW);
    assert_int_equal(r.decision, RULES_DECISION_FORBIDDEN);
    rules_result_free(&r);
    rules_policy_free(p);

    /* An error in any file rejects the whole policy, and names that file. */
    tmpdir_write_file(a, "prefix_rule(pattern = ['ls'])\nprefix_rule(pattern = [)\n", 0644);
    p = rules_load(sub, NULL, 0, &err);
    assert_null(p);
    char *want = NULL;
    assert_true(asprintf(&want, "%s:2:24: ')' does not match the '[' opened at 2:23", a) > 0);
    assert_string_equal(err, want);
    free(want);
    free(err);

    /* A missing directory is an empty policy. */
    char *missing = tmpdir_path(dir, "no-such-dir");
    p = rules_load(missing, NULL, 0, &err);
    assert_non_null(p);
    assert_int_equal(rules_policy_rule_count(p), 0);
    rules_policy_free(p);

    /* A missing extra file is an error. */
    const char *extra[] = {missing};
    p = rules_load(NULL, extra, 1, &err);
    assert_null(p);
    assert_non_null(strstr(err, "no-such-dir:1:1: cannot open: No such file or directory"));
    free(err);
    free(missing);
    free(a);
    free(b);
    free(c);
    free(sub);
}

static void
test_default_dir(void **state)
{
    (void)state;
    setenv("CODEX_HOME", "/opt/codex", 1);
    char *d = rules_default_dir();
    assert_string_equal(d, "/opt/codex/rules");
    free(d);
    unsetenv("CODEX_HOME");
    setenv("HOME", "/home/u", 1);
    d = rules_default_dir();
    assert_string_equal(d, "/home/u/.codex/rules");
    free(d);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_rules_load), cmocka_unit_test(test_prefix_rule_errors),
        cmocka_unit_test(test_examples),          cmocka_unit_test(test_host_executables),
        cmocka_unit_test(test_network_rules),     cmocka_unit_test(test_directory),
        cmocka_unit_test(test_default_dir),       cmocka_unit_test(test_nul_bytes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
