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

#include "rules/lint.h"
#include "rules/load.h"
#include "rules/policy.h"
#include "tests/support/tmpdir.h"

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

#define PROMPT "; use decision=\"prompt\"\n"
#define GIT_RUNS                                                                                   \
    "warning: allow rule for \"git\" runs code from the working tree when escalated (hooks, and "  \
    "core.fsmonitor, core.pager, filters and aliases in .git/config)" PROMPT

/* Each program family with its own reason; a versioned interpreter and a
 * call inside a block keep their positions. */
static void
test_program_families(void **state)
{
    (void)state;
    assert_lines("if True:\n"
                 "    prefix_rule(pattern = [\"python3.12\", \"-m\", \"pytest\"])\n"
                 "prefix_rule(pattern = [\"bash\"], justification = \"scripts\")\n"
                 "prefix_rule(pattern = [\"timeout\", \"10\"])\n"
                 "prefix_rule(pattern = [[\"npm\", \"ls\", \"pnpm\"], \"run\"])\n"
                 "prefix_rule(pattern = [\"/usr/local/bin/cargo\", \"build\"])\n"
                 "prefix_rule(pattern = [\"makefile\"])\n"
                 "prefix_rule(pattern = [\"pythonista\"])\n",
                 6,
                 "t.rules:2:5: warning: allow rule for \"python3.12\" runs code from the working "
                 "tree when escalated (the scripts it is given, and modules of the current "
                 "directory, which are imported before installed ones)" PROMPT
                 "t.rules:3:1: warning: allow rule for \"bash\" runs any command it is given when "
                 "escalated (a script, or a -c string)" PROMPT
                 "t.rules:4:1: warning: allow rule for \"timeout\" runs any program named in its "
                 "arguments when escalated; use decision=\"prompt\" or write rules for the "
                 "programs it would run\n"
                 "t.rules:5:1: warning: allow rule for \"npm\" runs code from the working tree "
                 "when escalated (package.json scripts, install scripts of dependencies, "
                 ".npmrc)" PROMPT
                 "t.rules:5:1: warning: allow rule for \"pnpm\" runs code from the working tree "
                 "when escalated (package.json scripts, install scripts of dependencies, "
                 ".npmrc)" PROMPT
                 "t.rules:6:1: warning: allow rule for \"/usr/local/bin/cargo\" runs code from "
                 "the working tree when escalated (build.rs, procedural macros, tests, "
                 ".cargo/config.toml)" PROMPT);
}

/* The options a prefix leaves open, and the prefixes that close them. */
static void
test_open_options_golden(void **state)
{
    (void)state;
    assert_lines(
        "prefix_rule(pattern = [\"sort\"])\n"
        "prefix_rule(pattern = [\"tee\", \"-a\"])\n"
        "prefix_rule(pattern = [\"rsync\", \"-a\"])\n"
        "prefix_rule(pattern = [\"sed\", \"--sandbox\", \"-n\"])\n"
        "prefix_rule(pattern = [\"sort\", \"-k\", \"1\", \"--\"])\n"
        "prefix_rule(pattern = [\"sort\", \"-t\", \"--\"])\n",
        5,
        "t.rules:1:1: warning: allow rule \"sort\" also allows \"sort -o FILE\", \"sort "
        "--output=FILE\" (writes any file), \"sort --compress-program=COMMAND\" (runs any "
        "command)" PROMPT
        "t.rules:2:1: warning: allow rule \"tee -a\" allows \"tee -a ... FILE\" (writes any "
        "file)" PROMPT
        "t.rules:3:1: warning: allow rule \"rsync -a\" also allows \"rsync -a ... -e COMMAND\", "
        "\"rsync -a ... --rsh=COMMAND\", \"rsync -a ... --rsync-path=COMMAND\" (runs any "
        "command), \"rsync -a ... SRC DEST\" (writes any file)" PROMPT
        /* --sandbox closes sed's e and w commands and -f, not -i */
        "t.rules:4:1: warning: allow rule \"sed --sandbox -n\" also allows \"sed --sandbox -n "
        "... -i\", \"sed --sandbox -n ... --in-place\" (edits any file in place)" PROMPT
        /* line 5: "--" after an operand ends the options; line 6: -t may take it */
        "t.rules:6:1: warning: allow rule \"sort -t --\" also allows \"sort -t -- ... -o FILE\", "
        "\"sort -t -- ... --output=FILE\" (writes any file), \"sort -t -- ... "
        "--compress-program=COMMAND\" (runs any command)" PROMPT);
}

/* git: options before the subcommand, per subcommand, and the prefixes
 * that close them. */
static void
test_git_rules(void **state)
{
    (void)state;
    assert_lines("prefix_rule(pattern = [\"git\", \"log\", \"--\", \"README\"])\n"
                 "prefix_rule(pattern = [\"git\", \"--no-pager\", \"rebase\"])\n"
                 "prefix_rule(pattern = [\"git\", \"-c\", \"core.pager=cat\", \"log\"])\n"
                 "prefix_rule(pattern = [\"git\", [\"status\", \"show\"]])\n",
                 8,
                 "t.rules:1:1: " GIT_RUNS "t.rules:2:1: " GIT_RUNS
                 "t.rules:2:1: warning: allow rule \"git --no-pager rebase\" also allows \"git "
                 "--no-pager rebase -x COMMAND\", \"git --no-pager rebase --exec=COMMAND\" (runs "
                 "any command)" PROMPT "t.rules:3:1: " GIT_RUNS
                 "t.rules:3:1: warning: allow rule \"git -c core.pager=cat log\" also allows \"git "
                 "-c NAME=VALUE\", \"git --config-env=NAME=VARIABLE\" (sets configuration that "
                 "runs commands), \"git --exec-path=DIR\" (runs git commands from any "
                 "directory), \"git -C DIR\", \"git --git-dir=DIR\" (uses the hooks and "
                 "configuration of any repository), \"git --work-tree=DIR\" (writes files in any "
                 "directory)" PROMPT
                 "t.rules:3:1: warning: allow rule \"git -c core.pager=cat log\" also allows \"git "
                 "-c core.pager=cat log --output=FILE\" (writes any file), \"git -c "
                 "core.pager=cat log --ext-diff\" (runs the external diff command the repository "
                 "configures)" PROMPT "t.rules:4:1: " GIT_RUNS
                 "t.rules:4:1: warning: allow rule \"git status|show\" also allows \"git show "
                 "--output=FILE\" (writes any file), \"git show --ext-diff\" (runs the external "
                 "diff command the repository configures)" PROMPT);

    /* A rule that stops before the subcommand leaves every subcommand's
     * options open: one line for git itself, one per group. */
    int count = 0;
    char *got = lint_text("prefix_rule(pattern = [\"git\"])\n", &count);
    assert_int_equal(count, 16);
    assert_non_null(strstr(got, "t.rules:1:1: warning: allow rule \"git\" also allows \"git "
                                "bisect run COMMAND\" (runs any command)" PROMPT));
    assert_non_null(strstr(got, "t.rules:1:1: warning: allow rule \"git\" also allows \"git "
                                "push --receive-pack=COMMAND\", \"git push --exec=COMMAND\" "
                                "(runs any command)" PROMPT));
    assert_non_null(strstr(got, "t.rules:1:1: warning: allow rule \"git\" allows \"git "
                                "filter-branch --tree-filter COMMAND\" (runs any command)" PROMPT));
    free(got);
}

/* Inside a helper, the position of the prefix_rule call; a rule made in a
 * loop warns once; a rule's words stay on one line, inside their quotes. */
static void
test_helpers_loops_and_escapes(void **state)
{
    (void)state;
    assert_lines("def allow(*words):\n"
                 "    prefix_rule(pattern = list(words))\n"
                 "\n"
                 "allow(\"ls\")\n"
                 "allow(\"env\")\n"
                 "[prefix_rule(pattern = [\"cp\"]) for i in range(3)]\n"
                 "prefix_rule(pattern = [\"tee\", \"a\\nb\\\"c\\\\\\x01\"])\n",
                 3,
                 "t.rules:2:5: warning: allow rule for \"env\" runs any program named in its "
                 "arguments when escalated; use decision=\"prompt\" or write rules for the "
                 "programs it would run\n"
                 "t.rules:6:2: warning: allow rule \"cp\" allows \"cp SRC DEST\" (writes any "
                 "file)" PROMPT
                 "t.rules:7:1: warning: allow rule \"tee a\\nb\\\"c\\\\\\x01\" allows \"tee "
                 "a\\nb\\\"c\\\\\\x01 FILE\" (writes any file)" PROMPT);
}

/* Rules of two files carry their own file name; a rule added without an
 * origin has no position. */
static void
test_origins(void **state)
{
    (void)state;
    char *dir = tmpdir_new("lint");
    assert_int_equal(chdir(dir), 0);
    tmpdir_write_file("a.rules",
                      "prefix_rule(pattern = [\"cat\"])\nprefix_rule(pattern = [\"go\"])\n", 0644);
    tmpdir_write_file("b.rules", "\n\nNone if False else prefix_rule(pattern = [\"cp\"])\n", 0644);
    const char *files[] = {"a.rules", "b.rules"};
    char *err = NULL;
    struct rules_policy *p = rules_load(NULL, files, 2, &err);
    assert_non_null(p);
    struct lines l = {NULL, 0};
    assert_int_equal(rules_lint_policy(p, collect, &l), 2);
    assert_string_equal(l.text, "a.rules:2:1: warning: allow rule for \"go\" runs code from the "
                                "working tree when escalated (go run, go test, go generate, cgo, "
                                "toolchains named in go.mod)" PROMPT
                                "b.rules:3:20: warning: allow rule \"cp\" allows \"cp SRC DEST\" "
                                "(writes any file)" PROMPT);
    free(l.text);
    rules_policy_free(p);
    assert_int_equal(chdir("/"), 0);
    tmpdir_remove(dir);
    free(dir);

    p = rules_policy_new();
    assert_non_null(p);
    const char *const tee[] = {"tee"};
    const struct rules_token pat[] = {{tee, 1}};
    assert_int_equal(rules_policy_add_prefix_rule(p, pat, 1, RULES_DECISION_ALLOW, NULL), 0);
    l = (struct lines){NULL, 0};
    assert_int_equal(rules_lint_policy(p, collect, &l), 1);
    assert_string_equal(l.text,
                        "warning: allow rule \"tee\" allows \"tee FILE\" (writes any file)" PROMPT);
    free(l.text);
    rules_policy_free(p);
    assert_int_equal(rules_lint_policy(NULL, collect, &l), 0);
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

#define EXPECT_USE(want, ...)                                                                      \
    do {                                                                                           \
        const char *got_ = USE(__VA_ARGS__);                                                       \
        if (!got_ || strcmp(got_, (want)) != 0)                                                    \
            fail_msg("%s: got %s, want %s", #__VA_ARGS__, got_ ? got_ : "NULL", (want));           \
    } while (0)
#define EXPECT_SAFE(...)                                                                           \
    do {                                                                                           \
        const char *got_ = USE(__VA_ARGS__);                                                       \
        if (got_)                                                                                  \
            fail_msg("%s: got %s, want NULL", #__VA_ARGS__, got_);                                 \
    } while (0)

static void
test_use_git(void **state)
{
    (void)state;
    const char *output = "git --output=FILE (writes any file)";
    EXPECT_USE(output, "git", "log", "--output=/home/u/.bashrc");
    EXPECT_USE(output, "git", "log", "-p", "--output", "x");
    EXPECT_USE(output, "/usr/bin/git", "show", "--output=x");
    EXPECT_USE(output, "git", "--namespace", "ns", "diff", "--output=x");
    EXPECT_USE(output, "git", "--no-pager", "format-patch", "--output=x");
    EXPECT_USE("git -c NAME=VALUE (sets configuration that runs commands)", "git", "-c",
               "core.pager=sh -c id", "log");
    EXPECT_USE("git -C DIR (uses the hooks and configuration of any repository)", "git", "-C",
               "/tmp/evil", "status");
    EXPECT_USE("git --git-dir=DIR (uses the hooks and configuration of any repository)", "git",
               "--git-dir=/tmp/evil/.git", "status");
    EXPECT_USE("git --work-tree=DIR (writes files in any directory)", "git", "--work-tree",
               "/home/u", "checkout", ".");
    EXPECT_USE("git --exec-path=DIR (runs git commands from any directory)", "git",
               "--exec-path=/tmp", "status");
    EXPECT_USE("git rebase -x COMMAND (runs any command)", "git", "rebase", "-ix", "make", "main");
    EXPECT_USE("git rebase --exec=COMMAND (runs any command)", "git", "rebase", "--exec=make");
    EXPECT_USE("git bisect run COMMAND (runs any command)", "git", "bisect", "run", "make");
    EXPECT_USE("git --upload-pack=COMMAND (runs any command)", "git", "fetch", "--upload-pack",
               "sh -c id", "origin");
    EXPECT_USE("git push --receive-pack=COMMAND (runs any command)", "git", "push",
               "--receive-pack=x", "origin");
    EXPECT_USE("git clone --template=DIR (installs hooks from any directory)", "git", "clone",
               "--template=/tmp/t", "url");
    EXPECT_USE("git grep -OCOMMAND (runs any command)", "git", "grep", "-Ovim", "x");
    EXPECT_USE("git format-patch -o DIR (writes files in any directory)", "git", "format-patch",
               "-o", "/tmp", "HEAD~1");

    EXPECT_SAFE("git", "log", "-c"); /* combined diff, not git -c */
    EXPECT_SAFE("git", "log", "-C"); /* copy detection, not git -C */
    EXPECT_SAFE("git", "log", "--outputx");
    EXPECT_SAFE("git", "diff", "--exit-code");
    EXPECT_SAFE("git", "log", "--", "--output=x"); /* a path after "--" */
    EXPECT_SAFE("git", "-p", "log", "-n", "3");
    EXPECT_SAFE("git", "fetch", "-u"); /* --update-head-ok */
    EXPECT_SAFE("git", "push", "--recurse-submodules=check");
    EXPECT_SAFE("git", "config", "--get", "user.name");
    EXPECT_SAFE("git", "status", "--output=x"); /* not an option of status */
}

static void
test_use_options(void **state)
{
    (void)state;
    const char *sort_o = "sort -o FILE (writes any file)";
    EXPECT_USE(sort_o, "/usr/bin/sort", "in", "-o", "out"); /* after an operand */
    EXPECT_USE("sort --output=FILE (writes any file)", "sort", "--out=x", "in");
    EXPECT_USE("sort --compress-program=COMMAND (runs any command)", "sort", "--compress-program",
               "sh", "in");
    EXPECT_USE("find -fprint FILE (writes any file)", "find", ".", "-fprint", "/tmp/x");
    EXPECT_USE("tar -C DIR (writes files in any directory)", "tar", "tf", "a.tar", "-C", "/");
    EXPECT_USE("tar -c (writes the archive -f names, any file)", "tar", "czf", "/tmp/o", "d");
    EXPECT_USE("tar -I COMMAND (runs any command)", "tar", "-xI", "zstd", "-f", "a.tar");
    EXPECT_USE("rsync -e COMMAND (runs any command)", "rsync", "-avze", "ssh", "a", "h:b");
    EXPECT_USE("sed -i (edits any file in place)", "sed", "-i.bak", "s/a/b/", "f");
    EXPECT_USE("sed --in-place (edits any file in place)", "sed", "--in-place=.orig", "p", "f");
    EXPECT_USE("curl -o FILE (writes any file)", "curl", "-sSLo", "/home/u/.bashrc", "url");
    EXPECT_USE("curl -K FILE (reads options, output files included, from any file)", "curl", "-K",
               "cfg");
    EXPECT_USE("wget -O FILE (writes any file)", "wget", "-qO", "/tmp/x", "url");

    EXPECT_SAFE("cat", "-o", "x");
    EXPECT_SAFE("make", "-o", "x"); /* a program family warns at lint time only */
    EXPECT_SAFE("sort", "-n", "-k", "2", "in");
    EXPECT_SAFE("tar", "-tzf", "a.tgz");
    EXPECT_SAFE("tar", "tzf", "a.tgz");
    EXPECT_SAFE("rsync", "-a", "a", "b"); /* the copy itself is what a rule allowed */
    EXPECT_SAFE("curl", "-o", "-", "url");
    EXPECT_SAFE("curl", "-sSo/dev/null", "url");
    EXPECT_SAFE("curl", "-D", "-", "url");
    EXPECT_SAFE("wget", "-qO-", "url");
    EXPECT_SAFE("sortx", "-o", "f");
    assert_null(rules_lint_dangerous_use((const char *const[]){"sort", "-o"}, 0));
    /* A NULL word ends the command, as for exec. */
    assert_null(rules_lint_dangerous_use((const char *const[]){"sort", NULL, "-o", "x"}, 4));
}

/* "--" ends the options only where it cannot be an option's value. */
static void
test_use_dashdash(void **state)
{
    (void)state;
    EXPECT_SAFE("sort", "-k", "1", "--", "-o", "x");
    EXPECT_SAFE("sort", "--key=1", "--", "-o", "x");
    EXPECT_SAFE("curl", "--", "-o", "x");
    EXPECT_SAFE("sed", "-n", "p", "--", "-i");
    /* -t's value is "--": the options go on. */
    EXPECT_USE("sort -o FILE (writes any file)", "sort", "-t", "--", "-o", "x");
    EXPECT_USE("sort -o FILE (writes any file)", "sort", "--field-separator", "--", "-o", "x");
    /* tar's first word is a cluster whose f takes "--". */
    EXPECT_USE("tar -C DIR (writes files in any directory)", "tar", "tf", "--", "-C", "/");
    EXPECT_USE("find -exec COMMAND ; (runs any command)", "find", "--", ".", "-exec", "id", ";");
}

/* sed scripts: e and w commands, s///e and s///w, --sandbox. */
static void
test_use_sed_scripts(void **state)
{
    (void)state;
    const char *runs = "sed 'e COMMAND' (runs any command)";
    const char *writes = "sed 'w FILE' (writes any file)";
    EXPECT_USE(runs, "sed", "e id", "f");
    EXPECT_USE(runs, "sed", "1e id", "f");
    EXPECT_USE(runs, "sed", "s/x/id/e", "f");
    EXPECT_USE(runs, "sed", "-n", "-e", "p", "-e", "$!{e id\n}", "f");
    EXPECT_USE(runs, "sed", "-ne", "/x/!e id", "f");
    EXPECT_USE(runs, "sed", "--expression=p;e id", "f");
    EXPECT_USE(runs, "sed", "--", "e id", "f");
    EXPECT_USE(writes, "sed", "s/a/b/w /home/u/.bashrc", "f");
    EXPECT_USE(writes, "sed", "-n", "/x/w out", "f");
    EXPECT_USE(writes, "sed", "--expr=1W out", "p");
    EXPECT_USE(writes, "sed", "s/a/b/gw out", "f");
    EXPECT_USE("sed -f SCRIPT (runs a script that can run commands and write files)", "sed", "-f",
               "script.sed", "f");
    /* What the reader does not understand counts. */
    EXPECT_USE(runs, "sed", "s/a/b", "f");
    EXPECT_USE(runs, "sed", "k", "f");

    EXPECT_SAFE("sed", "s/hello/world/g", "f");
    EXPECT_SAFE("sed", "-n", "/^a/,/^b/{s/x/y/g;p}", "f");
    EXPECT_SAFE("sed", ":a;N;$!ba;s/\\n/ /g", "f");
    EXPECT_SAFE("sed", "1i\\\nwe said e and w", "f");
    EXPECT_SAFE("sed", "$a extra text with w and e", "f");
    EXPECT_SAFE("sed", "-E", "s|a/b|c|2", "f");
    EXPECT_SAFE("sed", "y/abc/xyz/", "f");
    EXPECT_SAFE("sed", "-n", "-e", "r other", "-e", "p", "f");
    EXPECT_SAFE("sed", "\\%e%d", "f");
    EXPECT_SAFE("sed", "# e and w\n3q", "f");
    EXPECT_SAFE("sed", "--sandbox", "s/a/b/w out", "f");
    EXPECT_SAFE("sed", "--sandbox", "-f", "script.sed", "f");
}

/* sed's --sandbox counts only where sed reads it as the option: not as
 * the value of -f, -e or -l, alone or at the end of a cluster. */
static void
test_use_sed_sandbox_is_an_option(void **state)
{
    (void)state;
    const char *script = "sed -f SCRIPT (runs a script that can run commands and write files)";
    EXPECT_USE(script, "sed", "-f", "--sandbox", "f");
    EXPECT_USE(script, "sed", "-nf", "--sandbox", "f");
    EXPECT_USE(script, "sed", "-f", "--sandbox", "--", "--sandbox");
    EXPECT_USE("sed 'w FILE' (writes any file)", "sed", "-e", "w out", "-l", "--sandbox", "f");
    /* "--sandbox" is the script here, which sed cannot read: it counts */
    EXPECT_USE("sed 'e COMMAND' (runs any command)", "sed", "--expression", "--sandbox", "f");
    EXPECT_USE("sed 'w FILE' (writes any file)", "sed", "--sand", "w out", "f");
    /* options after operands count, as GNU sed reads them */
    EXPECT_SAFE("sed", "-f", "script.sed", "f", "--sandbox");
    EXPECT_SAFE("sed", "-fs.sed", "--sandbox", "f");
    EXPECT_SAFE("sed", "-n", "--sandbox", "-e", "w out", "f");
}

/* Programs and options the table did not know. */
static void
test_use_more_programs(void **state)
{
    (void)state;
    EXPECT_USE("tar --one-top-level=DIR (writes files in any directory)", "tar", "-t",
               "--one-top-level=/etc", "-f", "a.tar");
    EXPECT_USE("tar --index-file=FILE (writes any file)", "tar", "-tf", "a.tar",
               "--index-file=/home/u/.bashrc");
    const char *extract =
        "tar -x (writes files wherever the archive's names and the links in the directory lead)";
    EXPECT_USE(extract, "tar", "xf", "a.tar");
    EXPECT_USE(extract, "tar", "-xzf", "a.tgz");
    EXPECT_USE("tar --extract (writes files wherever the archive's names and the links in the "
               "directory lead)",
               "tar", "--extract", "-f", "a.tar");
    const char *awk = "awk 'PROGRAM' (a program that can run commands and write files)";
    EXPECT_USE(awk, "awk", "BEGIN{system(\"touch /tmp/x\")}");
    EXPECT_USE(awk, "gawk", "{print | \"sh\"}", "f");
    EXPECT_USE(awk, "mawk", "{print > \"/home/u/.bashrc\"}", "f");
    EXPECT_USE(awk, "awk", "-f", "prog.awk", "f");
    EXPECT_USE(awk, "gawk", "-i", "inplace", "{print}", "f");
    EXPECT_USE(awk, "gawk", "-e", "BEGIN{}", "-e", "@load \"x\"", "f");
    EXPECT_USE(awk, "awk", "-F:", "--", "BEGIN{system(\"id\")}");
    EXPECT_SAFE("awk", "{print $1}", "f");
    EXPECT_SAFE("awk", "-F:", "-v", "n=2", "{print $n}", "/etc/passwd");
    EXPECT_SAFE("gawk", "--field-separator=,", "--", "{s += $2} END {print s}", "f");
    const char *every = "vim ... (runs commands its arguments or input name)";
    EXPECT_USE(every, "vim", "-es", "f");
    EXPECT_USE(every, "/usr/bin/vi", "f");
    EXPECT_USE("ed ... (runs commands its arguments or input name)", "ed", "f");
    EXPECT_USE("less ... (runs commands its arguments or input name)", "less", "f");
    const char *given = "the program ... (runs commands its arguments or input name)";
    EXPECT_USE(given, "script", "-qc", "id", "/dev/null");
    EXPECT_USE(given, "strace", "-f", "id");
    EXPECT_USE(given, "gdb", "-batch", "-ex", "shell id");
    EXPECT_USE("zip -TT COMMAND (runs any command)", "zip", "-T", "-TT", "sh -c id", "a.zip", "f");
    EXPECT_USE("zip --unzip-command=COMMAND (runs any command)", "zip", "-T", "--unzip-command=id",
               "a.zip", "f");
    EXPECT_USE("ssh -o ProxyCommand=COMMAND (runs any command)", "ssh", "-o",
               "ProxyCommand=touch /tmp/x", "h");
    EXPECT_USE("ssh -o ProxyCommand=COMMAND (runs any command)", "ssh", "-oProxyCommand=id", "h");
    EXPECT_USE("ssh -F FILE (reads options that run commands from any file)", "scp", "-F", "cfg",
               "a", "h:b");
    EXPECT_USE("openssl -out FILE (writes any file)", "openssl", "req", "-new", "-out",
               "/home/u/.bashrc");
    EXPECT_USE("man -P PAGER (runs any command)", "man", "-P", "sh -c id", "ls");
    EXPECT_SAFE("ssh", "h", "uptime");
    EXPECT_SAFE("zip", "-r", "a.zip", "d");
    EXPECT_SAFE("openssl", "x509", "-in", "c.pem", "-noout", "-text");
}

/* Which programs read repository or working-tree configuration: these
 * are not escalated in a repository a sandbox could have written. */
static void
test_reads_repository(void **state)
{
    (void)state;
    assert_true(rules_lint_reads_repository("git"));
    assert_true(rules_lint_reads_repository("/usr/bin/git"));
    assert_true(rules_lint_reads_repository("/usr/lib/git-core/git-upload-pack"));
    assert_true(rules_lint_reads_repository("tig"));
    assert_true(rules_lint_reads_repository("gh"));
    assert_true(rules_lint_reads_repository("pre-commit"));
    assert_true(rules_lint_reads_repository("make"));
    assert_true(rules_lint_reads_repository("python3.11"));
    assert_true(rules_lint_reads_repository("/bin/sh"));
    assert_true(rules_lint_reads_repository("env"));
    assert_true(rules_lint_reads_repository(NULL));
    assert_false(rules_lint_reads_repository("/usr/bin/touch"));
    assert_false(rules_lint_reads_repository("rm"));
    assert_false(rules_lint_reads_repository("cat"));
    assert_false(rules_lint_reads_repository("gitx")); /* not a git-* program */
}

#define ARGV(...) ((const char *const[]){__VA_ARGS__})

static void
test_too_broad_to_always_allow(void **state)
{
    (void)state;
    /* runs any code it is given, whatever follows */
    assert_true(rules_lint_too_broad(ARGV("sh", "-c"), 2));
    assert_true(rules_lint_too_broad(ARGV("/usr/bin/bash", "-lc"), 2));
    assert_true(rules_lint_too_broad(ARGV("python3.11", "-m", "pip"), 3));
    assert_true(rules_lint_too_broad(ARGV("node", "-e"), 2));
    assert_true(rules_lint_too_broad(ARGV("env", "FOO"), 2));
    assert_true(rules_lint_too_broad(ARGV("xargs", "-n", "rm"), 3));
    assert_true(rules_lint_too_broad(ARGV("sudo", "ls"), 2));
    /* a working-tree program alone, but not with a subcommand */
    assert_true(rules_lint_too_broad(ARGV("git"), 1));
    assert_true(rules_lint_too_broad(ARGV("make"), 1));
    assert_false(rules_lint_too_broad(ARGV("git", "push"), 2));
    assert_false(rules_lint_too_broad(ARGV("cargo", "test"), 2));
    /* anything else */
    assert_false(rules_lint_too_broad(ARGV("ls"), 1));
    assert_false(rules_lint_too_broad(ARGV("rm", "-rf"), 2));
    /* programs whose program text or input is code */
    assert_true(rules_lint_too_broad(ARGV("awk"), 1));
    assert_true(rules_lint_too_broad(ARGV("gawk", "-F:"), 2));
    assert_true(rules_lint_too_broad(ARGV("vim", "-es"), 2));
    assert_true(rules_lint_too_broad(ARGV("ed"), 1));
    assert_true(rules_lint_too_broad(ARGV("strace", "-f"), 2));
    assert_true(rules_lint_too_broad(ARGV("gdb", "-batch"), 2));
    assert_true(rules_lint_too_broad(ARGV("script", "-q"), 2));
    assert_true(rules_lint_too_broad(ARGV("less"), 1));
    assert_true(rules_lint_too_broad(NULL, 0));
    assert_true(rules_lint_too_broad(ARGV("git"), 0));
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
        cmocka_unit_test(test_program_families),
        cmocka_unit_test(test_open_options_golden),
        cmocka_unit_test(test_git_rules),
        cmocka_unit_test(test_helpers_loops_and_escapes),
        cmocka_unit_test(test_origins),
        cmocka_unit_test(test_use_git),
        cmocka_unit_test(test_use_options),
        cmocka_unit_test(test_use_dashdash),
        cmocka_unit_test(test_use_sed_sandbox_is_an_option),
        cmocka_unit_test(test_use_more_programs),
        cmocka_unit_test(test_reads_repository),
        cmocka_unit_test(test_use_sed_scripts),
        cmocka_unit_test(test_too_broad_to_always_allow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
