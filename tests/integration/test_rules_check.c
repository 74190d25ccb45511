/*
 * `execgate-rules check` side by side with `codex execpolicy check`: every
 * case of rules-check/cases.txt runs through our binary, and its output
 * must equal, byte for byte, what the real Codex printed (kept in
 * rules-check/expected/ by regen.sh).  For a policy Codex rejects, ours
 * must fail too, print nothing on stdout, and name the same file and, when
 * Codex gives one, the same line and column.
 *
 * rules-check/deep-cases.txt does the same for nesting at and just past
 * where Codex's stack overflows: files made here, loaded iff Codex loaded
 * them (its crash counts as refusing).
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include <cmocka.h>

#include "tests/support/proc.h"

#include "common/strv.h"
#include "rules/shlex.h"
#include "tests/support/tmpdir.h"

static const char *rules_bin;
static const char *cases_dir;

static char *
read_expected(const char *id, const char *ext)
{
    char name[512];
    snprintf(name, sizeof name, "expected/%s.%s", id, ext);
    char *path = tmpdir_path(cases_dir, name);
    char *text = tmpdir_read_file(path, NULL);
    free(path);
    return text;
}

/* The first "FILE:LINE:COL" after "--> " in Codex's error, with a colon
 * after it as ours has, or NULL. */
static char *
codex_location(const char *err)
{
    const char *arrow = err ? strstr(err, "--> ") : NULL;
    if (!arrow)
        return NULL;
    arrow += 4;
    const char *colon = strchr(arrow, ':');
    if (!colon)
        return NULL;
    const char *end = colon + 1 + strspn(colon + 1, "0123456789");
    if (*end == ':')
        end += 1 + strspn(end + 1, "0123456789");
    char *loc = NULL;
    return asprintf(&loc, "%.*s:", (int)(end - arrow), arrow) < 0 ? NULL : loc;
}

/* The last --rules argument: the file Codex blames for an error. */
static const char *
last_rules_file(char **args, size_t n)
{
    const char *last = NULL;
    for (size_t i = 0; i + 1 < n; i++)
        if (strcmp(args[i], "--rules") == 0)
            last = args[i + 1];
    return last;
}

/* How id is listed in known-differences.txt: 0 not at all, 1 for the
 * whole location, 2 for the column only ("ID column: why"). */
static int
known_difference(const char *id)
{
    char *path = tmpdir_path(cases_dir, "known-differences.txt");
    char *text = tmpdir_read_file(path, NULL);
    free(path);
    int found = 0;
    size_t n = strlen(id);
    for (const char *l = text; l && *l && !found; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "")
        if (strncmp(l, id, n) == 0 && l[n] == ' ')
            found = strncmp(l + n + 1, "column:", 7) == 0 ? 2 : 1;
    free(text);
    return found;
}

/* Runs one case; returns 0 when it agrees with Codex, else prints why. */
static int
run_case(const char *line)
{
    char **words = NULL;
    size_t n = 0;
    const char *serr = NULL;
    assert_int_equal(shlex_split(line, strlen(line), &words, &n, &serr), 0);
    assert_true(n >= 2);
    const char *id = words[0];
    const char **argv = calloc(n + 2, sizeof *argv);
    argv[0] = rules_bin;
    argv[1] = "check";
    for (size_t i = 1; i < n; i++)
        argv[i + 1] = words[i];
    struct proc_options opts = {.cwd = cases_dir};
    struct proc_result res;
    assert_int_equal(proc_run(argv, &opts, &res), 0);

    char *want_out = read_expected(id, "out");
    char *want_status = read_expected(id, "status");
    char *want_err = read_expected(id, "err");
    assert_non_null(want_out);
    assert_non_null(want_status);
    int code = proc_exit_code(&res);
    int bad = 0;
    if (atoi(want_status) == 0) {
        if (code != 0 || strcmp(res.out, want_out) != 0) {
            fprintf(stderr, "case %s: exit %d\n  want: %s  got:  %s  stderr: %s\n", id, code,
                    want_out, res.out, res.err);
            bad = 1;
        }
    } else {
        const char *file = last_rules_file(words, n);
        int known = known_difference(id);
        char *loc = known == 1 ? NULL : codex_location(want_err);
        if (loc && known == 2) {
            loc[strlen(loc) - 1] = '\0'; /* FILE:LINE:COL */
            strrchr(loc, ':')[1] = '\0'; /* FILE:LINE: */
        }
        if (code == 0 || res.out_len != 0 || res.err_len == 0) {
            fprintf(stderr, "case %s: want a failure, got exit %d, stdout %s\n", id, code, res.out);
            bad = 1;
        } else if (loc ? !strstr(res.err, loc) : (file && !strstr(res.err, file))) {
            fprintf(stderr, "case %s: error does not name %s\n  ours:  %s  codex: %s\n", id,
                    loc ? loc : file, res.err, want_err);
            bad = 1;
        }
        free(loc);
    }
    free(want_out);
    free(want_status);
    free(want_err);
    proc_result_free(&res);
    free(argv);
    strv_free(words);
    return bad;
}

/* Runs each case of cases_dir/name (a line; blank lines and comments
 * left out) through run, which returns 1 when it differs from Codex: the
 * test fails on any, or on fewer than min cases. */
static void
run_cases(const char *name, int (*run)(const char *line, void *arg), void *arg, int min)
{
    char *path = tmpdir_path(cases_dir, name);
    char *text = tmpdir_read_file(path, NULL);
    assert_non_null(text);
    int cases = 0, failures = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || line[0] == '\0')
            continue;
        cases++;
        failures += run(line, arg);
    }
    fprintf(stderr, "%s: %d cases, %d differ from codex\n", name, cases, failures);
    assert_true(cases >= min);
    assert_int_equal(failures, 0);
    free(text);
    free(path);
}

static int
run_listed_case(const char *line, void *arg)
{
    (void)arg;
    return run_case(line);
}

static void
test_same_output_as_codex(void **state)
{
    (void)state;
    run_cases("cases.txt", run_listed_case, NULL, 51);
}

/* s with "\\n" made a newline and "{N}" the count; malloc'd. */
static char *
deep_text(const char *s, const char *count)
{
    size_t cap = strlen(s) * (strlen(count) + 1) + 1, o = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] == 'n') {
            t[o++] = '\n';
            s++;
        } else if (strncmp(s, "{N}", 3) == 0) {
            o += (size_t)sprintf(t + o, "%s", count);
            s += 2;
        } else {
            t[o++] = *s;
        }
    }
    t[o] = '\0';
    return t;
}

/* Makes the file of one deep-cases.txt line in dir; returns its path. */
static char *
deep_file(char **w, const char *dir)
{
    size_t n = strtoul(w[1], NULL, 10);
    char *part[5];
    for (int i = 0; i < 5; i++)
        part[i] = deep_text(w[2 + i], w[1]);
    size_t len = strlen(part[0]) + n * (strlen(part[1]) + strlen(part[3])) + strlen(part[2]) +
                 strlen(part[4]) + 2;
    char *text = malloc(len), *o = text;
    assert_non_null(text);
    o = stpcpy(o, part[0]);
    for (size_t i = 0; i < n; i++)
        o = stpcpy(o, part[1]);
    o = stpcpy(o, part[2]);
    for (size_t i = 0; i < n; i++)
        o = stpcpy(o, part[3]);
    o = stpcpy(o, part[4]);
    strcpy(o, "\n");
    char name[256];
    snprintf(name, sizeof name, "%s.rules", w[0]);
    char *path = tmpdir_path(dir, name);
    tmpdir_write_file(path, text, 0644);
    free(text);
    for (int i = 0; i < 5; i++)
        free(part[i]);
    return path;
}

/* One line of deep-cases.txt: its file made in dir, checked, compared
 * with what Codex did (loaded it and printed this, or crashed: refused). */
static int
run_deep_case(const char *line, void *dir)
{
    char **w = NULL;
    size_t n = 0;
    const char *serr = NULL;
    assert_int_equal(shlex_split(line, strlen(line), &w, &n, &serr), 0);
    assert_int_equal(n, 7);
    char *file = deep_file(w, dir);
    const char *argv[] = {rules_bin, "check", "--rules", file, "ls", NULL};
    struct proc_result res;
    assert_int_equal(proc_run(argv, &(struct proc_options){0}, &res), 0);
    char id[256];
    snprintf(id, sizeof id, "deep-%s", w[0]);
    char *want_out = read_expected(id, "out");
    char *want_status = read_expected(id, "status");
    assert_non_null(want_out);
    assert_non_null(want_status);
    int code = proc_exit_code(&res), bad = 0;
    if (atoi(want_status) == 0 ? code != 0 || strcmp(res.out, want_out) != 0
                               : code != 1 || res.out_len != 0 || !strstr(res.err, "too deeply")) {
        fprintf(stderr, "case %s: exit %d (codex %d)\n  stdout: %s  stderr: %.300s\n", id, code,
                atoi(want_status), res.out, res.err);
        bad = 1;
    }
    free(want_out);
    free(want_status);
    proc_result_free(&res);
    free(file);
    strv_free(w);
    return bad;
}

static void
test_deep_nesting_as_codex(void **state)
{
    (void)state;
    /* The sanitizers' frames are larger than a release build's: give the
     * binary the stack it needs to reach Codex's depths, as a user would
     * with ulimit -s (what it does with less is tested in test_eval). */
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_STACK, &rl), 0);
    rlim_t want = (rlim_t)256 << 20;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
        want = rl.rlim_max;
    rl.rlim_cur = want;
    assert_int_equal(setrlimit(RLIMIT_STACK, &rl), 0);

    char *dir = tmpdir_new("deep");
    run_cases("deep-cases.txt", run_deep_case, dir, 31);
    tmpdir_remove(dir);
    free(dir);
}

int
main(void)
{
    rules_bin = getenv("EXECGATE_TEST_RULES");
    cases_dir = getenv("EXECGATE_TEST_RULES_CHECK_DIR");
    if (!rules_bin || !cases_dir) {
        fprintf(stderr, "set EXECGATE_TEST_RULES and EXECGATE_TEST_RULES_CHECK_DIR\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_output_as_codex),
        cmocka_unit_test(test_deep_nesting_as_codex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
