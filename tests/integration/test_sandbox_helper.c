/*
 * execgate-sandbox's command line: options, exit codes, the report line,
 * and danger-full-access (which applies nothing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "proc.h"
#include "tmpdir.h"

#define DANGER "{\"type\":\"danger-full-access\"}"

struct fixture {
    char *dir;
};

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = tmpdir_new("sbxcli");
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    tmpdir_remove(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void
test_danger_runs_in_cwd(void **state)
{
    struct fixture *f = *state;
    struct sbx_result r;
    const char *argv[] = {"/bin/sh", "-c", "pwd; echo err >&2; exit 3", NULL};
    sbx_run(DANGER, f->dir, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 3);
    char *want;
    assert_true(asprintf(&want, "%s\n", f->dir) > 0);
    assert_string_equal(r.res.out, want);
    assert_string_equal(r.res.err, "err\n");
    free(want);
    assert_non_null(r.report);
    assert_string_equal(json_string_value(json_object_get(r.report, "policy")),
                        "danger-full-access");
    assert_true(json_is_true(json_object_get(r.report, "network")));
    sbx_result_free(&r);
}

static void
test_path_search_and_args(void **state)
{
    struct fixture *f = *state;
    struct sbx_result r;
    const char *argv[] = {"printf", "%s|", "a b", "", "c", NULL};
    sbx_run(DANGER, f->dir, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "a b||c|");
    sbx_result_free(&r);
}

static void
test_not_found_is_127(void **state)
{
    struct fixture *f = *state;
    struct sbx_result r;
    const char *argv[] = {"/nonexistent/prog", NULL};
    sbx_run(DANGER, f->dir, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 127);
    assert_non_null(strstr(r.res.err, "execgate-sandbox: /nonexistent/prog: No such file"));
    sbx_result_free(&r);

    const char *argv2[] = {"no-such-program-anywhere", NULL};
    sbx_run(DANGER, f->dir, NULL, argv2, NULL, &r);
    sbx_assert_code(&r, 127);
    sbx_result_free(&r);
}

static void
test_not_executable_is_126(void **state)
{
    struct fixture *f = *state;
    char *file = tmpdir_path(f->dir, "data.txt");
    tmpdir_write_file(file, "not a program\n", 0644);
    struct sbx_result r;
    const char *argv[] = {file, NULL};
    sbx_run(DANGER, f->dir, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 126);
    assert_non_null(strstr(r.res.err, "Permission denied"));
    sbx_result_free(&r);
    const char *argv2[] = {f->dir, NULL}; /* a directory */
    sbx_run(DANGER, f->dir, NULL, argv2, NULL, &r);
    sbx_assert_code(&r, 126);
    sbx_result_free(&r);
    free(file);
}

/* Setup failures: 125, a message naming the problem, and nothing runs. */
static void
assert_setup_failure(const char *policy, const char *cwd, const char *const *extra,
                     const char *want_msg)
{
    struct sbx_result r;
    const char *argv[] = {"/bin/echo", "RAN", NULL};
    sbx_run(policy, cwd, extra, argv, NULL, &r);
    sbx_assert_code(&r, 125);
    if (strstr(r.res.err, want_msg) == NULL)
        fail_msg("stderr \"%s\" lacks \"%s\"", r.res.err, want_msg);
    assert_null(strstr(r.res.out, "RAN"));
    assert_null(r.report);
    sbx_result_free(&r);
}

static void
test_setup_failures_are_125(void **state)
{
    struct fixture *f = *state;
    assert_setup_failure("{\"type\":\"bogus\"}", f->dir, NULL,
                         "execgate-sandbox: sandbox policy: unknown type \"bogus\"");
    assert_setup_failure("{not json", f->dir, NULL, "sandbox policy: invalid JSON");
    assert_setup_failure(
        "{\"type\":\"workspace-write\",\"sandboxCwd\":\"/w\",\"writable_roots\":[\"rel\"]}", f->dir,
        NULL, "writable_roots[0]: \"rel\" is not an absolute path");
    assert_setup_failure(DANGER, "/nonexistent/dir", NULL,
                         "--cwd /nonexistent/dir: No such file or directory");
    const char *bad_opt[] = {"--frobnicate", NULL};
    assert_setup_failure(DANGER, f->dir, bad_opt, "unknown or incomplete option \"--frobnicate\"");
}

static void
test_usage_errors(void **state)
{
    struct proc_result res;
    const char *no_prog[] = {sbx_helper(), "--policy", DANGER, "--cwd", "/", "--", NULL};
    assert_int_equal(proc_run(no_prog, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 125);
    assert_non_null(strstr(res.err, "no program given"));
    proc_result_free(&res);

    const char *no_policy[] = {sbx_helper(), "--cwd", "/", "--", "/bin/true", NULL};
    assert_int_equal(proc_run(no_policy, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 125);
    assert_non_null(strstr(res.err, "--policy is required"));
    proc_result_free(&res);

    const char *bad_fd[] = {sbx_helper(),  "--policy", DANGER, "--cwd",     "/",
                            "--report-fd", "x1",       "--",   "/bin/true", NULL};
    assert_int_equal(proc_run(bad_fd, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 125);
    assert_non_null(strstr(res.err, "--report-fd: \"x1\" is not a file descriptor number"));
    proc_result_free(&res);

    const char *closed_fd[] = {sbx_helper(),  "--policy", DANGER, "--cwd",     "/",
                               "--report-fd", "987",      "--",   "/bin/true", NULL};
    assert_int_equal(proc_run(closed_fd, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 125);
    assert_non_null(strstr(res.err, "--report-fd 987: Bad file descriptor"));
    proc_result_free(&res);

    const char *help[] = {sbx_helper(), "--help", NULL};
    assert_int_equal(proc_run(help, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_non_null(strstr(res.out, "usage: execgate-sandbox --policy JSON --cwd DIR"));
    proc_result_free(&res);
}

/* The report fd is the helper's, not the program's. */
static void
test_report_fd_not_inherited(void **state)
{
    struct fixture *f = *state;
    struct sbx_result r;
    const char *argv[] = {"/bin/sh", "-c", "ls /proc/self/fd", NULL};
    sbx_run(DANGER, f->dir, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 0);
    /* 0, 1, 2 and ls's own directory fd: nothing else. */
    assert_string_equal(r.res.out, "0\n1\n2\n3\n");
    sbx_result_free(&r);
}

int
main(void)
{
    sbx_helper();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_danger_runs_in_cwd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_search_and_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_found_is_127, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_executable_is_126, setup, teardown),
        cmocka_unit_test_setup_teardown(test_setup_failures_are_125, setup, teardown),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test_setup_teardown(test_report_fd_not_inherited, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
