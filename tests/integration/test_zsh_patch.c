/*
 * The patched zsh: with EXEC_WRAPPER in the environment it passes to a
 * program, zsh runs WRAPPER FILE ARGV... instead, on every path of zsh's
 * that reaches execve(2).
 *
 * These tests run the real patched binary with record-argv as the wrapper;
 * record-argv logs each argv it receives and then runs the program, so both
 * what was intercepted and what the command printed can be checked.
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
#include <unistd.h>

#include "tests/support/patched_shell.h"
#include "tests/support/proc.h"
#include "tests/support/tmpdir.h"

static const char *patched_zsh;
static const char *recorder;

/* Runs `zsh -f -c script` (no start-up files: what is tested is the
 * shell's own exec paths) with a small fixed environment plus `extra` (may
 * be NULL) and PATH `path`, as $0 = "zsh" so messages do not depend on the
 * binary's path. */
static void
run_zsh_path(struct pshell_fixture *f, const char *zsh, const char *path, const char *script,
             const char *extra, struct proc_result *res)
{
    char *record_env, *path_env, *home_env;
    assert_true(asprintf(&record_env, "RECORD_ARGV_FILE=%s", f->log) > 0);
    assert_true(asprintf(&path_env, "PATH=%s", path) > 0);
    assert_true(asprintf(&home_env, "HOME=%s", f->dir) > 0);
    const char *envp[] = {path_env, "LC_ALL=C", home_env, record_env, extra, NULL};
    const char *argv[] = {zsh, "-f", "-c", script, "zsh", NULL};
    struct proc_options opts = {.envp = envp, .cwd = f->dir};

    assert_int_equal(proc_run(argv, &opts, res), 0);
    free(record_env);
    free(path_env);
    free(home_env);
}

static void
run_zsh(struct pshell_fixture *f, const char *zsh, const char *script, const char *extra,
        struct proc_result *res)
{
    run_zsh_path(f, zsh, "/usr/bin:/bin", script, extra, res);
}

/* Beside the common ones (tests/support/patched_shell.c), scripts the
 * patched zsh must run exactly as Debian's. */
static const char *const own_stock_scripts[] = {
    "=uname; hash u=/usr/bin/uname; u; noglob echo *",
    "echo $ZSH_VERSION",
    NULL,
};

static int
setup(void **state)
{
    struct pshell_fixture *f =
        pshell_fixture_new("zshpatch", recorder, patched_zsh, "/usr/bin/zsh", run_zsh);
    f->stock_scripts = own_stock_scripts;
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    pshell_fixture_free(*state);
    return 0;
}

/* zsh looks a program up by exec'ing it in each PATH directory in turn:
 * only the one that is there goes to the wrapper, once. */
static void
test_path_search_skips_missing_directories(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;
    char *empty = tmpdir_path(f->dir, "empty");
    tmpdir_make_dir(f->dir, "empty");
    char *path;
    assert_true(asprintf(&path, "/nonexistent:%s:/usr/bin:/bin", empty) > 0);

    run_zsh_path(f, patched_zsh, path, "uname -s; nosuch-xyz; echo \"s=$?\"", f->wrapper_env, &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "Linux\ns=127\n");
    assert_non_null(strstr(res.err, "command not found: nosuch-xyz"));
    pshell_expect_one_record(f, "/usr/bin/uname", (const char *[]){"uname", "-s", NULL});
    proc_result_free(&res);
    free(path);
    free(empty);
}

static void
test_command_precommand(void **state)
{
    pshell_expect_one(*state, "command uname -s", "Linux\n", "/usr/bin/uname",
                      (const char *[]){"uname", "-s", NULL});
}

static void
test_noglob_and_nocorrect(void **state)
{
    pshell_expect_one(*state, "noglob /bin/echo * ?; nocorrect true", "* ?\n", "/bin/echo",
                      (const char *[]){"/bin/echo", "*", "?", NULL});
    struct pshell_fixture *f = *state;
    unlink(f->log);
    pshell_expect_one(*state, "nocorrect uname -s", "Linux\n", "/usr/bin/uname",
                      (const char *[]){"uname", "-s", NULL});
}

/* =cmd expands to the program's path before the command runs. */
static void
test_equals_expansion(void **state)
{
    pshell_expect_one(*state, "=uname -s", "Linux\n", "/usr/bin/uname",
                      (const char *[]){"/usr/bin/uname", "-s", NULL});
}

/* A hashed name runs the file it was hashed to. */
static void
test_hashed_command(void **state)
{
    pshell_expect_one(*state, "hash myname=/usr/bin/uname; myname -s", "Linux\n", "/usr/bin/uname",
                      (const char *[]){"myname", "-s", NULL});
}

static void
test_process_substitution(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    pshell_run(f, "while read -r l; do echo \"<$l>\"; done < <(uname -s)", f->wrapper_env, &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "<Linux>\n");
    pshell_expect_one_record(f, "/usr/bin/uname", (const char *[]){"uname", "-s", NULL});
    proc_result_free(&res);
}

/* A function autoloaded from $fpath runs programs like any other code. */
static void
test_autoloaded_function(void **state)
{
    struct pshell_fixture *f = *state;
    tmpdir_make_dir(f->dir, "fn");
    char *fn = tmpdir_path(f->dir, "fn/sysname");
    tmpdir_write_file(fn, "uname -s\n", 0644);

    pshell_expect_one(f, "fpath=($PWD/fn); autoload -U sysname; sysname", "Linux\n",
                      "/usr/bin/uname", (const char *[]){"uname", "-s", NULL});
    free(fn);
}

/* zsh -c inside zsh: the inner zsh is wrapped, and gets the wrapper in
 * its environment, so its own programs are wrapped too. */
static void
test_nested_zsh(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;
    char *script;

    assert_true(asprintf(&script, "%s -f -c 'uname -s'", patched_zsh) > 0);
    pshell_run(f, script, f->wrapper_env, &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "Linux\n");
    json_t *all = pshell_records(f);
    assert_int_equal(json_array_size(all), 2);
    pshell_assert_record(f, pshell_record_for(all, patched_zsh), patched_zsh,
                         (const char *[]){patched_zsh, "-f", "-c", "uname -s", NULL});
    pshell_assert_record(f, pshell_record_for(all, "/usr/bin/uname"), "/usr/bin/uname",
                         (const char *[]){"uname", "-s", NULL});
    json_decref(all);
    proc_result_free(&res);
    free(script);
}

static void
test_builtins_functions_subshells_not_wrapped(void **state)
{
    struct pshell_fixture *f = *state;

    pshell_expect_none_wrapped(
        f,
        "echo a; printf 'b\\n'; cd / && pwd; whence -w ls; f() { echo fn; }; f; (echo sub); "
        "test -d / && echo dir; read -r x <<< 'y'; echo $x",
        f->wrapper_env, "a\nb\n/\nls: command\nfn\nsub\ndir\ny\n");
}

/* Relative paths: one that names a program is wrapped as it is written (in
 * PATH too: "." in PATH); one that names nothing fails as in stock zsh,
 * without the wrapper, and so does one that is not executable. */
static void
test_relative_paths(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;
    char *rel = tmpdir_path(f->dir, "rel");
    char *plain = tmpdir_path(f->dir, "plain");
    tmpdir_write_file(rel, "#!/bin/sh\necho rel \"$@\"\n", 0755);
    tmpdir_write_file(plain, "echo plain\n", 0644);

    run_zsh_path(f, patched_zsh, ".:/usr/bin:/bin",
                 "./rel a; rel b; ./missing; echo \"s=$?\"; ./plain; echo \"s=$?\"", f->wrapper_env,
                 &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "rel a\nrel b\ns=127\ns=126\n");
    assert_non_null(strstr(res.err, "no such file or directory: ./missing"));
    assert_non_null(strstr(res.err, "permission denied: ./plain"));
    json_t *all = pshell_records(f);
    assert_int_equal(json_array_size(all), 2);
    pshell_assert_record(f, json_array_get(all, 0), "./rel", (const char *[]){"./rel", "a", NULL});
    pshell_assert_record(f, json_array_get(all, 1), "rel", (const char *[]){"rel", "b", NULL});
    json_decref(all);
    proc_result_free(&res);
    free(rel);
    free(plain);
}

/* A wrapper that cannot run: the program does not run either, and the
 * shell says why, 127 for a missing wrapper, 126 for one that cannot be
 * executed. */
static void
test_unrunnable_wrapper_fails_closed(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    pshell_test_unrunnable_wrapper_fails_closed(state);

    /* Through a PATH search, too: no other directory is tried. */
    pshell_run(f, "uname; echo after", "EXEC_WRAPPER=/etc/passwd", &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "after\n");
    assert_non_null(strstr(res.err, "/usr/bin/uname: cannot execute exec wrapper /etc/passwd: "
                                    "permission denied"));
    proc_result_free(&res);
}

int
main(void)
{
    patched_zsh = getenv("EXECGATE_TEST_ZSH");
    recorder = getenv("EXECGATE_TEST_RECORD_ARGV");
    if (patched_zsh == NULL || recorder == NULL) {
        fprintf(stderr, "set EXECGATE_TEST_ZSH and EXECGATE_TEST_RECORD_ARGV (meson test does)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(pshell_test_plain_command, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_path_lookup_passes_resolved_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_path_search_skips_missing_directories, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(pshell_test_exec_builtin, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_exec_preserves_argv0, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_precommand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_noglob_and_nocorrect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_equals_expansion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hashed_command, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_pipeline_of_three, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_command_substitution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_process_substitution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_autoloaded_function, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested_zsh, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_empty_wrapper_means_no_wrapper, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_builtins_functions_subshells_not_wrapped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(pshell_test_prefix_assignment_wraps, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_wrap_names_narrow_the_wrapper, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_wrap_names_empty_or_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relative_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_in_shell_asks_itself, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unrunnable_wrapper_fails_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_unset_behaves_as_stock, setup, teardown),
    };
    return cmocka_run_group_tests_name("zsh_patch", tests, NULL, NULL);
}
