/*
 * `execgate-rules check` as a user runs it: the default rules directory,
 * exit statuses, errors on stderr only, refusal of bad input, and an
 * "always allow" amendment that the next check picks up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rules/amend.h"
#include "tests/support/proc.h"
#include "tests/support/tmpdir.h"

static const char *rules_bin;

/* Runs `execgate-rules check ARGS...` with env (NULL-terminated) and
 * returns its exit code; *res must be freed. */
static int
run(const char *const *env, struct proc_result *res, const char *const *args)
{
    size_t n = 0;
    while (args[n])
        n++;
    const char **argv = calloc(n + 3, sizeof *argv);
    argv[0] = rules_bin;
    argv[1] = "check";
    for (size_t i = 0; i < n; i++)
        argv[i + 2] = args[i];
    struct proc_options opts = {.envp = env};
    assert_int_equal(proc_run(argv, &opts, res), 0);
    free(argv);
    return proc_exit_code(res);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void
test_default_dir_from_codex_home(void **state)
{
    (void)state;
    char *home = tmpdir_new("codex-home");
    char *rules = tmpdir_path(home, "rules");
    assert_int_equal(mkdir(rules, 0755), 0);
    char *a = tmpdir_path(rules, "a.rules");
    char *b = tmpdir_path(rules, "b.rules");
    char *ignored = tmpdir_path(rules, "notes.txt");
    tmpdir_write_file(a, "prefix_rule(pattern = [\"git\"], decision = \"prompt\")\n", 0644);
    tmpdir_write_file(b, "prefix_rule(pattern = [\"git\", \"push\"], decision = \"forbidden\")\n",
                      0644);
    tmpdir_write_file(ignored, "this is not starlark (", 0644);
    char *env_home = NULL;
    assert_true(asprintf(&env_home, "CODEX_HOME=%s", home) > 0);
    const char *env[] = {env_home, "PATH=/usr/bin:/bin", NULL};
    struct proc_result res;
    assert_int_equal(run(env, &res, ARGS("--", "git", "push")), 0);
    assert_string_equal(res.out,
                        "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\"],"
                        "\"decision\":\"prompt\"}},{\"prefixRuleMatch\":{\"matchedPrefix\":"
                        "[\"git\",\"push\"],\"decision\":\"forbidden\"}}],\"decision\":"
                        "\"forbidden\"}\n");
    assert_int_equal(res.err_len, 0);
    proc_result_free(&res);
    free(env_home);
    free(a);
    free(b);
    free(ignored);
    free(rules);
    tmpdir_remove(home);
    free(home);
}

static void
test_missing_default_dir_is_empty_policy(void **state)
{
    (void)state;
    char *home = tmpdir_new("codex-home");
    char *env_home = NULL;
    assert_true(asprintf(&env_home, "CODEX_HOME=%s/none", home) > 0);
    const char *env[] = {env_home, NULL};
    struct proc_result res;
    assert_int_equal(run(env, &res, ARGS("--", "rm", "-rf", "/")), 0);
    assert_string_equal(res.out, "{\"matchedRules\":[]}\n");
    proc_result_free(&res);
    free(env_home);
    tmpdir_remove(home);
    free(home);
}

static void
test_exit_statuses(void **state)
{
    (void)state;
    char *dir = tmpdir_new("rules-cli");
    char *good = tmpdir_path(dir, "good.rules");
    char *bad = tmpdir_path(dir, "bad.rules");
    tmpdir_write_file(good, "prefix_rule(pattern = [\"ls\"])\n", 0644);
    tmpdir_write_file(bad, "prefix_rule(pattern = [\"ls\"])\nprefix_rule(pattern = [])\n", 0644);
    struct proc_result res;

    /* A bad policy: exit 1, nothing on stdout, the file and line on stderr. */
    assert_int_equal(run(NULL, &res, ARGS("--rules", good, "--rules", bad, "--", "ls")), 1);
    assert_int_equal(res.out_len, 0);
    assert_non_null(strstr(res.err, "bad.rules:2:"));
    proc_result_free(&res);

    /* A file that does not exist. */
    assert_int_equal(run(NULL, &res, ARGS("--rules", "/nonexistent/x.rules", "--", "ls")), 1);
    assert_int_equal(res.out_len, 0);
    assert_non_null(strstr(res.err, "/nonexistent/x.rules"));
    proc_result_free(&res);

    /* Usage errors: exit 2. */
    assert_int_equal(run(NULL, &res, ARGS("--rules", good)), 2);
    assert_int_equal(res.out_len, 0);
    proc_result_free(&res);
    assert_int_equal(run(NULL, &res, ARGS("--rules")), 2);
    proc_result_free(&res);
    assert_int_equal(run(NULL, &res, ARGS("--rules", good, "--", "ls\xff")), 2);
    assert_non_null(strstr(res.err, "UTF-8"));
    proc_result_free(&res);

    free(good);
    free(bad);
    tmpdir_remove(dir);
    free(dir);
}

/* A malloc'd string: n copies of c between before and after. */
static char *
around(const char *before, char c, size_t n, const char *after)
{
    size_t b = strlen(before), a = strlen(after);
    char *s = malloc(b + n + a + 1);
    assert_non_null(s);
    memcpy(s, before, b);
    memset(s + b, c, n);
    memcpy(s + b + n, after, a + 1);
    return s;
}

/* Checks `ls` against a file of src_before + n c's + src_after, which must
 * fail with stderr "execgate-rules check: FILE" + err_before + the same
 * c's + err_after + "\n", exactly. */
static void
expect_long_error(const char *src_before, const char *src_after, char c, size_t n,
                  const char *err_before, const char *err_after)
{
    char *dir = tmpdir_new("rules-cli");
    char *file = tmpdir_path(dir, "long.rules");
    char *src = around(src_before, c, n, src_after);
    tmpdir_write_file(file, src, 0644);
    char *head = NULL;
    assert_true(asprintf(&head, "execgate-rules check: %s%s", file, err_before) > 0);
    char *want = around(head, c, n, err_after);
    struct proc_result res;
    assert_int_equal(run(NULL, &res, ARGS("--rules", file, "--", "ls")), 1);
    assert_int_equal(res.out_len, 0);
    assert_string_equal(res.err, want);
    proc_result_free(&res);
    free(want);
    free(head);
    free(src);
    free(file);
    tmpdir_remove(dir);
    free(dir);
}

/* An error quoting a long name or string reaches the user whole. */
static void
test_long_errors_whole(void **state)
{
    (void)state;
    expect_long_error("prefix_rule(pattern = [", "])\n", 'N', 1000,
                      ":1:24: undefined: ", " is not defined\n");
    expect_long_error("prefix_rule(pattern = ['ls'], decision = '", "')\n", 'd', 2000,
                      ":1:1: invalid decision: ", " (want allow, prompt or forbidden)\n");
}

/* "Always allow": the amended file loads and the command is now allowed,
 * the rules already there still apply. */
static void
test_amend_then_check(void **state)
{
    (void)state;
    char *dir = tmpdir_new("rules-cli");
    char *path = tmpdir_path(dir, "rules/default.rules");
    char *err = NULL;
    /* The first amendment creates rules/; then the user's own rule (with
     * no final newline) replaces what it wrote. */
    const char *first[] = {"rm"};
    assert_int_equal(rules_amend_allow_prefix(path, first, 1, &err), 0);
    tmpdir_write_file(path, "prefix_rule(pattern = [\"rm\", \"-rf\"], decision = \"forbidden\")",
                      0644);
    const char *prefix[] = {"npm", "run", "it's \"odd\"\\"};
    assert_int_equal(rules_amend_allow_prefix(path, prefix, 3, &err), 0);
    struct proc_result res;
    assert_int_equal(
        run(NULL, &res, ARGS("--rules", path, "--", "npm", "run", "it's \"odd\"\\", "x")), 0);
    assert_string_equal(res.out, "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":"
                                 "[\"npm\",\"run\",\"it's \\\"odd\\\"\\\\\"],\"decision\":"
                                 "\"allow\"}}],\"decision\":\"allow\"}\n");
    proc_result_free(&res);
    assert_int_equal(run(NULL, &res, ARGS("--rules", path, "--", "rm", "-rf", "x")), 0);
    assert_non_null(strstr(res.out, "\"decision\":\"forbidden\"}"));
    proc_result_free(&res);
    free(path);
    tmpdir_remove(dir);
    free(dir);
}

/* `execgate-rules lint FILE`: its exit status and what it printed. */
static int
lint(const char *file, struct proc_result *res)
{
    const char *argv[] = {rules_bin, "lint", file, NULL};
    struct proc_options opts = {0};
    assert_int_equal(proc_run(argv, &opts, res), 0);
    return proc_exit_code(res);
}

/* 0 without warnings, 1 with warnings on stdout (file:line:col), 2 for a
 * file that does not load (its error on stderr, nothing on stdout). */
static void
test_lint_exit_statuses(void **state)
{
    (void)state;
    char *dir = tmpdir_new("lint-cli");
    char *quiet = tmpdir_path(dir, "quiet.rules");
    char *loud = tmpdir_path(dir, "loud.rules");
    char *bad = tmpdir_path(dir, "bad.rules");
    tmpdir_write_file(quiet, "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n", 0644);
    tmpdir_write_file(loud,
                      "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n"
                      "prefix_rule(pattern=[\"make\"], decision=\"allow\")\n",
                      0644);
    tmpdir_write_file(bad, "prefix_rule(pattern=[], decision=\"allow\")\n", 0644);
    struct proc_result r;
    assert_int_equal(lint(quiet, &r), 0);
    assert_int_equal(r.out_len, 0);
    proc_result_free(&r);
    assert_int_equal(lint(loud, &r), 1);
    char *want = NULL;
    assert_true(asprintf(&want, "%s:2:1: warning: allow rule for \"make\"", loud) > 0);
    if (!strstr(r.out, want))
        fail_msg("no [%s] in [%s]", want, r.out);
    assert_int_equal(r.err_len, 0);
    proc_result_free(&r);
    assert_int_equal(lint(bad, &r), 2);
    assert_int_equal(r.out_len, 0);
    assert_non_null(strstr(r.err, "bad.rules:1:"));
    proc_result_free(&r);
    free(want);
    free(quiet);
    free(loud);
    free(bad);
    tmpdir_remove(dir);
    free(dir);
}

/* `execgate-rules lint` with several files, "--", the default directory,
 * a usage error, and a bad file's error exactly as `check` words it. */
static void
test_lint_files_and_usage(void **state)
{
    (void)state;
    char *home = tmpdir_new("lint-cli-home");
    char *rules = tmpdir_path(home, "rules");
    assert_int_equal(mkdir(rules, 0755), 0);
    char *a = tmpdir_path(rules, "a.rules");
    char *b = tmpdir_path(rules, "b.rules");
    char *bad = tmpdir_path(home, "-bad.rules");
    tmpdir_write_file(a, "prefix_rule(pattern = [\"npm\", \"test\"], decision = \"prompt\")\n",
                      0644);
    tmpdir_write_file(b, "\nprefix_rule(pattern = [\"sort\"])\n", 0644);
    tmpdir_write_file(bad, "prefix_rule(pattern = [\"ls\"], decision = \"maybe\")\n", 0644);
    char *env_home = NULL;
    assert_true(asprintf(&env_home, "CODEX_HOME=%s", home) > 0);
    const char *env[] = {env_home, NULL};
    struct proc_result r;

    /* Two files: one warning, from the second file. */
    const char *two[] = {rules_bin, "lint", a, b, NULL};
    assert_int_equal(proc_run(two, &(struct proc_options){0}, &r), 0);
    assert_int_equal(proc_exit_code(&r), 1);
    char *want = NULL;
    assert_true(asprintf(&want,
                         "%s:2:1: warning: allow rule \"sort\" also allows \"sort -o FILE\", "
                         "\"sort --output=FILE\" (writes any file), \"sort "
                         "--compress-program=COMMAND\" (runs any command); use "
                         "decision=\"prompt\"\n",
                         b) > 0);
    assert_string_equal(r.out, want);
    assert_int_equal(r.err_len, 0);
    proc_result_free(&r);
    free(want);

    /* No file: the default directory, named in the lines. */
    const char *none[] = {rules_bin, "lint", NULL};
    assert_int_equal(proc_run(none, &(struct proc_options){.envp = env}, &r), 0);
    assert_int_equal(proc_exit_code(&r), 1);
    assert_true(asprintf(&want, "%s/b.rules:2:1: warning: allow rule \"sort\"", rules) > 0);
    if (strncmp(r.out, want, strlen(want)) != 0)
        fail_msg("got [%s], want [%s...]", r.out, want);
    proc_result_free(&r);
    free(want);

    /* A file whose name starts with "-" after "--": it does not load, and
     * the error is the one `check` prints, with lint's name. */
    const char *dash[] = {rules_bin, "lint", "--", bad, NULL};
    assert_int_equal(proc_run(dash, &(struct proc_options){0}, &r), 0);
    assert_int_equal(proc_exit_code(&r), 2);
    assert_int_equal(r.out_len, 0);
    assert_true(asprintf(&want,
                         "execgate-rules lint: %s:1:1: invalid decision: maybe (want allow, "
                         "prompt or forbidden)\n",
                         bad) > 0);
    assert_string_equal(r.err, want);
    proc_result_free(&r);
    free(want);
    assert_int_equal(run(NULL, &r, ARGS("--rules", bad, "--", "ls")), 1);
    assert_true(asprintf(&want,
                         "execgate-rules check: %s:1:1: invalid decision: maybe (want allow, "
                         "prompt or forbidden)\n",
                         bad) > 0);
    assert_string_equal(r.err, want);
    proc_result_free(&r);
    free(want);

    /* An unknown option is a usage error. */
    const char *usage[] = {rules_bin, "lint", "--strict", a, NULL};
    assert_int_equal(proc_run(usage, &(struct proc_options){0}, &r), 0);
    assert_int_equal(proc_exit_code(&r), 2);
    assert_int_equal(r.out_len, 0);
    assert_non_null(strstr(r.err, "usage: execgate-rules lint"));
    proc_result_free(&r);

    free(env_home);
    free(a);
    free(b);
    free(bad);
    free(rules);
    tmpdir_remove(home);
    free(home);
}

/* `execgate-rules amend --allow`: the line Codex writes, once however
 * often asked, in a file that loads; usage errors are 2. */
static void
test_amend_command(void **state)
{
    (void)state;
    char *dir = tmpdir_new("amend-cli");
    const char *argv[] = {rules_bin, "amend", "--allow", "--rules-dir", dir,
                          "--",      "npm",   "run",     "build",       NULL};
    struct proc_result r;
    struct proc_options opts = {0};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(proc_run(argv, &opts, &r), 0);
        assert_int_equal(proc_exit_code(&r), 0);
        proc_result_free(&r);
    }
    char *file = tmpdir_path(dir, "default.rules");
    char *text = tmpdir_read_file(file, NULL);
    assert_string_equal(text,
                        "prefix_rule(pattern=[\"npm\", \"run\", \"build\"], decision=\"allow\")\n");
    const char *check[] = {rules_bin, "check", "--rules", file, "--", "npm", "run", "build", NULL};
    assert_int_equal(proc_run(check, &opts, &r), 0);
    assert_int_equal(proc_exit_code(&r), 0);
    assert_non_null(strstr(r.out, "\"decision\":\"allow\""));
    proc_result_free(&r);
    const char *bad[] = {rules_bin, "amend", "--rules-dir", dir, "--", "x", NULL};
    assert_int_equal(proc_run(bad, &opts, &r), 0);
    assert_int_equal(proc_exit_code(&r), 2);
    proc_result_free(&r);
    free(text);
    free(file);
    tmpdir_remove(dir);
    free(dir);
}

/* Runs `execgate-rules explain --rules DIR [EXTRA] -- CMD...` and returns
 * its exit code; *res must be freed. */
static int
explain(const char *dir, const char *extra, struct proc_result *res, const char *const *cmd)
{
    const char *argv[32] = {rules_bin, "explain", "--rules", dir};
    size_t n = 4;
    if (extra)
        argv[n++] = extra;
    argv[n++] = "--";
    for (size_t i = 0; cmd[i] && n < 31; i++)
        argv[n++] = cmd[i];
    struct proc_options opts = {0};
    assert_int_equal(proc_run(argv, &opts, res), 0);
    return proc_exit_code(res);
}

static void
assert_has(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fprintf(stderr, "expected [%s] in [%s]\n", needle, hay);
    assert_non_null(strstr(hay, needle));
}

/* `execgate-rules explain`: every name tried, the rule behind the
 * decision with its file and line, standing answers, what "always allow"
 * would add, the forced-rm heuristic, and its exit statuses. */
static void
test_explain(void **state)
{
    (void)state;
    char *dir = tmpdir_new("explain");
    char *team = tmpdir_path(dir, "team.rules");
    char *answers = tmpdir_path(dir, "default.rules");
    tmpdir_write_file(team,
                      "prefix_rule(pattern=[\"sort\"], decision=\"prompt\")\n"
                      "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", "
                      "justification=\"use the trash\")\n"
                      "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n",
                      0644);
    tmpdir_write_file(answers, "prefix_rule(pattern=[\"sort\", \"-n\"], decision=\"allow\")\n",
                      0644);
    struct proc_result r;
    char *want = NULL;

    /* a standing answer settles the prompt rule */
    assert_int_equal(explain(dir, NULL, &r, ARGS("sort", "-n", "f")), 0);
    assert_has(r.out, "decision: allow: it runs outside the sandbox\n");
    assert_true(asprintf(&want, "allow %s:1:1: sort -n (matched ", answers) > 0);
    assert_has(r.out, want);
    assert_has(r.out, "(a standing answer: it settles the prompt rules)");
    free(want);
    proc_result_free(&r);

    /* asked, with what "always" would add */
    assert_int_equal(explain(dir, NULL, &r, ARGS("sort", "-r", "f")), 0);
    assert_has(r.out, "decision: prompt: a person is asked first");
    assert_true(asprintf(&want, "prompt %s:1:1: sort", team) > 0);
    assert_has(r.out, want);
    free(want);
    assert_true(asprintf(&want,
                         "always allow: offered; answering it adds prefix_rule(pattern=[\"sort\", "
                         "\"-r\", \"f\"], decision=\"allow\") to %s\n",
                         answers) > 0);
    assert_has(r.out, want);
    free(want);
    proc_result_free(&r);

    /* forbidden, with its justification; an allow */
    assert_int_equal(explain(dir, NULL, &r, ARGS("rm", "-f", "x")), 0);
    assert_has(r.out,
               "decision: forbidden: refused (\"Execution forbidden by policy: use the trash\")");
    proc_result_free(&r);
    assert_int_equal(explain(dir, NULL, &r, ARGS("ls", "-l")), 0);
    assert_has(r.out, "decision: allow: it runs outside the sandbox\n");
    assert_has(r.out, "  ls (may only make the answer stricter): no rule\n");
    proc_result_free(&r);

    /* a link is one more name; argv[0]'s last component may only restrict */
    char *bin = tmpdir_path(dir, "bin");
    assert_int_equal(mkdir(bin, 0755), 0);
    char *link = tmpdir_path(bin, "lister");
    assert_int_equal(symlink("/usr/bin/ls", link), 0);
    assert_int_equal(explain(dir, NULL, &r, ARGS(link, "-l")), 0);
    assert_true(asprintf(&want, "  %s (a path of the program): no rule\n", link) > 0);
    assert_has(r.out, want);
    free(want);
    assert_has(r.out, "  /usr/bin/ls (a path of the program): allow\n");
    assert_has(r.out, "  lister (may only make the answer stricter): no rule\n");
    proc_result_free(&r);

    /* program paths only: no last components, no resolution */
    assert_int_equal(explain(dir, "--preserve-program-paths", &r, ARGS("ls", "-l")), 0);
    assert_has(r.out, "decision: no rule: it runs in the sandbox\n");
    assert_null(strstr(r.out, "may only make the answer stricter"));
    proc_result_free(&r);

    /* no rule, and the forced-rm heuristic */
    assert_int_equal(explain(link, NULL, &r, ARGS("rm", "-rf", "x")), 2); /* not rules */
    proc_result_free(&r);
    char *none = tmpdir_path(dir, "none.rules");
    tmpdir_write_file(none, "", 0644);
    assert_int_equal(explain(none, NULL, &r, ARGS("rm", "-rf", "x")), 0);
    assert_has(r.out, "decision: no rule, but a forced rm: a person is asked first");
    proc_result_free(&r);
    assert_int_equal(explain(none, NULL, &r, ARGS("cat", "x")), 0);
    assert_has(r.out, "decision: no rule: it runs in the sandbox\n");
    proc_result_free(&r);

    /* a program not on PATH is 1; a usage error 2 */
    assert_int_equal(explain(dir, NULL, &r, ARGS("no-such-program-here")), 1);
    assert_has(r.err, "no-such-program-here: not found on PATH");
    assert_string_equal(r.out, "");
    proc_result_free(&r);
    const char *usage[] = {rules_bin, "explain", "--rules", dir, NULL};
    assert_int_equal(proc_run(usage, &(struct proc_options){0}, &r), 0);
    assert_int_equal(proc_exit_code(&r), 2);
    proc_result_free(&r);

    free(none);
    free(link);
    free(bin);
    free(team);
    free(answers);
    tmpdir_remove(dir);
    free(dir);
}

/* The dynamic loader run as a program runs the program it is given:
 * `explain` decides under that program's names too, as the server does
 * (one decision function), so a forbidden program stays forbidden behind
 * the loader, its options included. */
static void
test_explain_loader(void **state)
{
    (void)state;
    const char *loader = "/lib64/ld-linux-x86-64.so.2";
    if (access(loader, X_OK) != 0 || access("/usr/bin/rm", X_OK) != 0)
        skip();
    char *dir = tmpdir_new("explain-loader");
    char *team = tmpdir_path(dir, "team.rules");
    tmpdir_write_file(team,
                      "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", "
                      "justification=\"use the trash\")\n",
                      0644);
    struct proc_result r;
    assert_int_equal(explain(dir, NULL, &r, ARGS(loader, "/usr/bin/rm", "-f", "x")), 0);
    assert_has(r.out,
               "decision: forbidden: refused (\"Execution forbidden by policy: use the trash\")");
    proc_result_free(&r);
    assert_int_equal(
        explain(dir, NULL, &r, ARGS(loader, "--argv0", "ls", "--", "/usr/bin/rm", "-f", "x")), 0);
    assert_has(r.out, "decision: forbidden");
    proc_result_free(&r);
    free(team);
    tmpdir_remove(dir);
    free(dir);
}

/* `explain` traces the rules that name the program and did not match:
 * its file and line, and the word that stopped it, or the end of the
 * command. */
static void
test_explain_trace(void **state)
{
    (void)state;
    char *dir = tmpdir_new("explain-trace");
    char *team = tmpdir_path(dir, "team.rules");
    tmpdir_write_file(team,
                      "prefix_rule(pattern=[\"ls\", [\"-l\", \"-a\"], \"x\"], decision=\"allow\")\n"
                      "prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n",
                      0644);
    struct proc_result r;
    char *want = NULL;
    assert_int_equal(explain(dir, NULL, &r, ARGS("ls", "-R", "x")), 0);
    assert_true(asprintf(&want,
                         "      not matched: allow %s:1:1: ls [-l|-a] x (argument 1 is -R)\n",
                         team) > 0);
    assert_has(r.out, want);
    free(want);
    assert_null(strstr(r.out, "cat"));
    proc_result_free(&r);
    assert_int_equal(explain(dir, NULL, &r, ARGS("ls", "-a")), 0);
    assert_has(r.out, "ls [-l|-a] x (the command has no argument 2)\n");
    proc_result_free(&r);
    free(team);
    tmpdir_remove(dir);
    free(dir);
}

int
main(void)
{
    rules_bin = getenv("EXECGATE_TEST_RULES");
    if (!rules_bin) {
        fprintf(stderr, "set EXECGATE_TEST_RULES\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_dir_from_codex_home),
        cmocka_unit_test(test_missing_default_dir_is_empty_policy),
        cmocka_unit_test(test_exit_statuses),
        cmocka_unit_test(test_long_errors_whole),
        cmocka_unit_test(test_amend_then_check),
        cmocka_unit_test(test_lint_exit_statuses),
        cmocka_unit_test(test_lint_files_and_usage),
        cmocka_unit_test(test_amend_command),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_explain_loader),
        cmocka_unit_test(test_explain_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
