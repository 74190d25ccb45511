/*
 * rules lint: the warnings about allow rules, golden lines with their
 * positions, and the runtime question the server asks of a command about
 * to run outside the sandbox (rules_lint_dangerous_use).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lint.h"
#include "load.h"
#include "policy.h"
#include "tmpdir.h"

/* The warnings, each line followed by '\n', for a rules file holding text
 * (named "t.rules" in the lines); *count gets rules_lint_policy's result. */
struct lines {
    char *text;
    size_t len;
};

static void
collect(void *arg, const char *line)
{
    struct lines *l = arg;
    size_t n = strlen(line);
    char *grown = realloc(l->text, l->len + n + 2);
    assert_non_null(grown);
    l->text = grown;
    memcpy(l->text + l->len, line, n);
    l->len += n;
    l->text[l->len++] = '\n';
    l->text[l->len] = '\0';
}

static char *
lint_text(const char *rules, int *count)
{
    char *dir = tmpdir_new("lint");
    char *path = tmpdir_path(dir, "t.rules");
    tmpdir_write_file(path, rules, 0644);
    assert_int_equal(chdir(dir), 0);
    const char *files[] = {"t.rules"};
    char *err = NULL;
    struct rules_policy *p = rules_load(NULL, files, 1, &err);
    if (!p)
        fail_msg("load: %s", err ? err : "?");
    struct lines l = {NULL, 0};
    *count = rules_lint_policy(p, collect, &l);
    rules_policy_free(p);
    assert_int_equal(chdir("/"), 0);
    tmpdir_remove(dir);
    free(path);
    free(dir);
    return l.text ? l.text : strdup("");
}

static void
assert_lines(const char *rules, int want_count, const char *want)
{
    int count = -2;
    char *got = lint_text(rules, &count);
    if (strcmp(got, want) != 0)
        fail_msg("lint of\n%s\ngave\n%s\nwanted\n%s", rules, got, want);
    assert_int_equal(count, want_count);
    free(got);
}

static void
test_harmless_and_strict_rules_are_quiet(void **state)
{
    (void)state;
    assert_lines("prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n"
                 "prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n"
                 "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n"
                 "prefix_rule(pattern=[\"make\"], decision=\"prompt\")\n"
                 "prefix_rule(pattern=[\"git\", \"push\"], decision=\"prompt\")\n",
                 0, "");
}

static void
test_program_that_runs_working_tree_code(void **state)
{
    (void)state;
    assert_lines("prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n"
                 "\n"
                 "prefix_rule(pattern=[\"make\"], decision=\"allow\")\n",
                 1,
                 "t.rules:3:1: warning: allow rule for \"make\" runs code from the working tree "
                 "when escalated (the Makefile's recipes and $(shell ...)); use "
                 "decision=\"prompt\"\n");
}

static void
test_git_log_leaves_output_open(void **state)
{
    (void)state;
    assert_lines(
        "x = 1; prefix_rule(pattern=[\"git\", \"log\"], decision=\"allow\")\n", 2,
        "t.rules:1:8: warning: allow rule for \"git\" runs code from the working tree when "
        "escalated (hooks, and core.fsmonitor, core.pager, filters and aliases in .git/config); "
        "use decision=\"prompt\"\n"
        "t.rules:1:8: warning: allow rule \"git log\" also allows \"git log --output=FILE\" "
        "(writes any file), \"git log --ext-diff\" (runs the external diff command the "
        "repository configures); use decision=\"prompt\"\n");
}

/* Alternatives in the first position: one warning per alternative it
 * concerns; a path counts by its last component. */
static void
test_alternatives_and_paths(void **state)
{
    (void)state;
    int count = 0;
    char *got = lint_text("prefix_rule(pattern=[[\"cat\", \"find\"]], decision=\"allow\")\n"
                          "prefix_rule(pattern=[\"/usr/bin/sort\"], decision=\"allow\")\n",
                          &count);
    assert_int_equal(count, 3);
    assert_non_null(strstr(got, "t.rules:1:1: warning: allow rule for \"find\" runs any program"));
    assert_non_null(strstr(got, "t.rules:1:1: warning: allow rule \"find\" also allows \"find "
                                "-exec COMMAND ;\""));
    assert_null(strstr(got, "\"cat\""));
    assert_non_null(strstr(got, "t.rules:2:1: warning: allow rule \"/usr/bin/sort\" also allows "
                                "\"/usr/bin/sort -o FILE\""));
    free(got);
}

/* A prefix that fixes another subcommand does not leave git log's
 * options open. */
static void
test_other_subcommand_closes_options(void **state)
{
    (void)state;
    int count = 0;
    char *got =
        lint_text("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", &count);
    assert_null(strstr(got, "--output"));
    assert_int_equal(count, 1); /* git itself still warns */
    free(got);
}

#define USE(...)                                                                                   \
    rules_lint_dangerous_use((const char *const[]){__VA_ARGS__},                                   \
                             sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

static void
test_dangerous_use_found(void **state)
{
    (void)state;
    assert_non_null(USE("git", "log", "--output=/x"));
    assert_non_null(USE("/usr/bin/git", "log", "--output", "/x"));
    assert_non_null(USE("git", "-c", "core.pager=sh", "log"));
    assert_non_null(USE("find", ".", "-exec", "sh", "{}", ";"));
    assert_non_null(USE("find", ".", "--", "-delete")); /* find's expression goes on past -- */
    assert_non_null(USE("sort", "-o", "/x", "in"));
    assert_non_null(USE("sort", "-ox", "in"));
    assert_non_null(USE("sort", "-uo", "/x", "in"));
    assert_non_null(USE("tar", "xf", "a.tar", "--to-command=sh"));
    assert_non_null(USE("curl", "-o", "/x", "http://h/"));
    assert_non_null(USE("git", "filter-branch", "--tree-filter", "sh"));
}

static void
test_dangerous_use_absent(void **state)
{
    (void)state;
    assert_null(USE("git", "log", "--oneline"));
    assert_null(USE("git", "status"));
    assert_null(USE("ls", "-la"));
    assert_null(USE("sort", "in"));
    assert_null(USE("sort", "--", "-o")); /* an operand after -- */
    assert_null(USE("curl", "http://h/"));
    assert_null(USE("find", ".", "-name", "x"));
    assert_null(rules_lint_dangerous_use(NULL, 0));
    /* the program's own and only use: the rule that allowed it meant it */
    assert_null(USE("tee", "/x"));
    assert_null(USE("cp", "a", "/x"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_harmless_and_strict_rules_are_quiet),
        cmocka_unit_test(test_program_that_runs_working_tree_code),
        cmocka_unit_test(test_git_log_leaves_output_open),
        cmocka_unit_test(test_alternatives_and_paths),
        cmocka_unit_test(test_other_subcommand_closes_options),
        cmocka_unit_test(test_dangerous_use_found),
        cmocka_unit_test(test_dangerous_use_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
