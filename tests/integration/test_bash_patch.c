/*
 * The patched Bash: with EXEC_WRAPPER (or BASH_EXEC_WRAPPER) in the
 * environment it passes to a program, Bash runs WRAPPER FILE ARGV... instead.
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

static const char *patched_bash;
static const char *recorder;

/* Runs `bash -c script` with a small fixed environment plus `extra` (may be
 * NULL), as $0 = "bash" so messages do not depend on the binary's path. */
static void
run_bash(struct pshell_fixture *f, const char *bash, const char *script, const char *extra,
         struct proc_result *res)
{
    char *record_env;
    assert_true(asprintf(&record_env, "RECORD_ARGV_FILE=%s", f->log) > 0);
    const char *envp[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", record_env, extra, NULL};
    const char *argv[] = {bash, "-c", script, "bash", NULL};
    struct proc_options opts = {.envp = envp, .cwd = f->dir};

    assert_int_equal(proc_run(argv, &opts, res), 0);
    free(record_env);
}

/* Beside the common ones (tests/support/patched_shell.c), scripts the
 * patched Bash must run exactly as Debian's. */
static const char *const own_stock_scripts[] = {
    "echo $BASH_VERSION",
    NULL,
};

static int
setup(void **state)
{
    struct pshell_fixture *f =
        pshell_fixture_new("bashpatch", recorder, patched_bash, "/bin/bash", run_bash);
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

static void
test_command_builtin_still_wraps(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    pshell_run(f, "command uname -s", f->wrapper_env, &res);
    assert_int_equal(proc_exit_code(&res), 0);
    pshell_expect_one_record(f, "/usr/bin/uname", (const char *[]){"uname", "-s", NULL});
    proc_result_free(&res);
}

static void
test_legacy_variable_name(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;
    char *legacy;

    assert_true(asprintf(&legacy, "BASH_EXEC_WRAPPER=%s", recorder) > 0);
    pshell_run(f, "/bin/echo legacy", legacy, &res);
    pshell_expect_ran_once(f, "/bin/echo legacy", &res, "legacy\n", "/bin/echo",
                           (const char *[]){"/bin/echo", "legacy", NULL});
    free(legacy);
}

static void
test_builtins_functions_subshells_not_wrapped(void **state)
{
    struct pshell_fixture *f = *state;

    pshell_expect_none_wrapped(
        f,
        "echo a; printf 'b\\n'; cd / && pwd; type -t ls; f() { echo fn; }; f; (echo sub); "
        "test -d / && echo dir; read -r x <<< 'y'; echo $x",
        f->wrapper_env, "a\nb\n/\nfile\nfn\nsub\ndir\ny\n");
}

/*
 * Shell code that allocates, measures and copies strings heavily gives what
 * Debian's Bash gives: the musl build runs on Bash's own allocator with a
 * heap of execgate's, and on execgate's string functions.  Under a
 * `ulimit -v` far below the address space the heap first asks for, a new
 * shell still gets one.
 */
static void
test_heavy_strings_and_memory_as_stock_bash(void **state)
{
    struct pshell_fixture *f = *state;
    static const char *const scripts[] = {
        "s=; for k in $(seq 3000); do s=\"$s$k\"; done; echo ${#s} ${s:100:20} ${s: -7}",
        "a=(); for i in $(seq 50000); do a+=(\"item$i\"); done; echo ${#a[@]} ${a[49999]};"
        " unset a; b=(); for i in $(seq 50000); do b+=($i); done; echo ${#b[@]}",
        "s=$(head -c 3000000 /dev/zero | tr '\\0' x); t=\"$s$s\"; echo ${#s} ${#t} ${t:5999995};"
        " unset s t; u=$(seq 200000); echo ${#u}",
        "x='a:b:c:dd'; echo ${x%%:*} ${x#*:} ${x//:/-} ${x##*:};"
        " case abcdef in *cd*) echo match;; esac; [[ abc == *b* ]] && echo yes",
        "for n in 0 1 15 16 17 63 64 65 100; do s=$(printf '%*s' $n ''); echo -n ${#s},; done; "
        "echo",
        "ulimit -v 400000; \"$BASH\" -c 'a=(); for i in $(seq 20000); do a+=($i); done;"
        " s=$(seq 100000); echo ${#a[@]} ${#s}'",
        NULL,
    };

    pshell_expect_as_stock(f, scripts, true);
}

int
main(void)
{
    patched_bash = getenv("EXECGATE_TEST_BASH");
    recorder = getenv("EXECGATE_TEST_RECORD_ARGV");
    if (patched_bash == NULL || recorder == NULL) {
        fprintf(stderr, "set EXECGATE_TEST_BASH and EXECGATE_TEST_RECORD_ARGV (meson test does)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(pshell_test_plain_command, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_path_lookup_passes_resolved_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(pshell_test_exec_builtin, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_exec_preserves_argv0, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_pipeline_of_three, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_command_substitution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_builtin_still_wraps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_legacy_variable_name, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_empty_wrapper_means_no_wrapper, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_builtins_functions_subshells_not_wrapped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(pshell_test_prefix_assignment_wraps, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_wrap_names_narrow_the_wrapper, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_wrap_names_empty_or_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_in_shell_asks_itself, setup, teardown),
        cmocka_unit_test_setup_teardown(pshell_test_unrunnable_wrapper_fails_closed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(pshell_test_unset_behaves_as_stock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heavy_strings_and_memory_as_stock_bash, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("bash_patch", tests, NULL, NULL);
}
