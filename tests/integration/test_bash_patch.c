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

static int
setup(void **state)
{
    *state = pshell_fixture_new("bashpatch", recorder);
    return 0;
}

static int
teardown(void **state)
{
    pshell_fixture_free(*state);
    return 0;
}

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

static void
test_plain_command(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    run_bash(f, patched_bash, "/bin/echo hi there", f->wrapper_env, &res);
    pshell_expect_ran_once(f, "/bin/echo hi there", &res, "hi there\n", "/bin/echo",
                           (const char *[]){"/bin/echo", "hi", "there", NULL});
}

static void
test_path_lookup_passes_resolved_file(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    /* FILE is the absolute path found through PATH; argv[0] stays "uname". */
    run_bash(f, patched_bash, "uname -s", f->wrapper_env, &res);
    pshell_expect_ran_once(f, "uname -s", &res, "Linux\n", "/usr/bin/uname",
                           (const char *[]){"uname", "-s", NULL});
}

static void
test_exec_builtin(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    run_bash(f, patched_bash, "exec /bin/echo via exec", f->wrapper_env, &res);
    pshell_expect_ran_once(f, "exec /bin/echo via exec", &res, "via exec\n", "/bin/echo",
                           (const char *[]){"/bin/echo", "via", "exec", NULL});
}

static void
test_exec_preserves_argv0(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    run_bash(f, patched_bash, "exec -a custom-name /bin/sh -c 'echo $0'", f->wrapper_env, &res);
    pshell_expect_ran_once(f, "exec -a custom-name /bin/sh -c 'echo $0'", &res, "custom-name\n",
                           "/bin/sh", (const char *[]){"custom-name", "-c", "echo $0", NULL});
}

static void
test_pipeline_of_three(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    run_bash(f, patched_bash, "/bin/echo abc | tr a x | cat -n", f->wrapper_env, &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "     1\txbc\n");

    json_t *all = pshell_records(f);
    assert_int_equal(json_array_size(all), 3);
    pshell_assert_record(f, pshell_record_for(all, "/bin/echo"), "/bin/echo",
                         (const char *[]){"/bin/echo", "abc", NULL});
    pshell_assert_record(f, pshell_record_for(all, "/usr/bin/tr"), "/usr/bin/tr",
                         (const char *[]){"tr", "a", "x", NULL});
    pshell_assert_record(f, pshell_record_for(all, "/usr/bin/cat"), "/usr/bin/cat",
                         (const char *[]){"cat", "-n", NULL});
    json_decref(all);
    proc_result_free(&res);
}

static void
test_command_substitution(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    run_bash(f, patched_bash, "v=$(uname -s); echo \"got $v\"", f->wrapper_env, &res);
    /* One exec only: echo is a builtin. */
    pshell_expect_ran_once(f, "command substitution", &res, "got Linux\n", "/usr/bin/uname",
                           (const char *[]){"uname", "-s", NULL});
}

static void
test_command_builtin_still_wraps(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    run_bash(f, patched_bash, "command uname -s", f->wrapper_env, &res);
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
    run_bash(f, patched_bash, "/bin/echo legacy", legacy, &res);
    pshell_expect_ran_once(f, "/bin/echo legacy", &res, "legacy\n", "/bin/echo",
                           (const char *[]){"/bin/echo", "legacy", NULL});
    free(legacy);
}

static void
test_empty_wrapper_means_no_wrapper(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    run_bash(f, patched_bash, "/bin/echo direct; uname -s", "EXEC_WRAPPER=", &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "direct\nLinux\n");
    pshell_expect_no_records(f);
    proc_result_free(&res);
}

static void
test_builtins_functions_subshells_not_wrapped(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    run_bash(f, patched_bash,
             "echo a; printf 'b\\n'; cd / && pwd; type -t ls; f() { echo fn; }; f; (echo sub); "
             "test -d / && echo dir; read -r x <<< 'y'; echo $x",
             f->wrapper_env, &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "a\nb\n/\nfile\nfn\nsub\ndir\ny\n");
    pshell_expect_no_records(f);
    proc_result_free(&res);
}

static void
test_prefix_assignment_wraps(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;
    char *script;

    /* Only the environment the program receives counts: a prefix
     * assignment puts the wrapper there, a plain shell variable does not. */
    assert_true(asprintf(&script, "EXEC_WRAPPER=%s /bin/echo one; EXEC_WRAPPER=%s; /bin/echo two",
                         recorder, recorder) > 0);
    run_bash(f, patched_bash, script, NULL, &res);
    pshell_expect_ran_once(f, script, &res, "one\ntwo\n", "/bin/echo",
                           (const char *[]){"/bin/echo", "one", NULL});
    free(script);
}

/* EXECGATE_WRAP_NAMES narrows the wrapper to the programs it lists, by
 * last component or by full path; a relative path is always wrapped. */
static void
test_wrap_names_narrow_the_wrapper(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;
    char *rel = tmpdir_path(f->dir, "rel");
    tmpdir_write_file(rel, "#!/bin/sh\necho rel\n", 0755);

    run_bash(f, patched_bash,
             "export EXECGATE_WRAP_NAMES='ca:cat2:cat:/usr/bin/head:sor'; "
             "/bin/echo one; echo two | /bin/cat; /usr/bin/head -n1 /dev/null; "
             "/usr/bin/tail -n1 /dev/null; /bin/sort </dev/null; ./rel",
             f->wrapper_env, &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "one\ntwo\nrel\n");
    json_t *all = pshell_records(f);
    assert_int_equal(json_array_size(all), 3);
    pshell_assert_record(f, pshell_record_for(all, "/bin/cat"), "/bin/cat",
                         (const char *[]){"/bin/cat", NULL});
    pshell_assert_record(f, pshell_record_for(all, "/usr/bin/head"), "/usr/bin/head",
                         (const char *[]){"/usr/bin/head", "-n1", "/dev/null", NULL});
    pshell_assert_record(f, pshell_record_for(all, "./rel"), "./rel",
                         (const char *[]){"./rel", NULL});
    json_decref(all);
    proc_result_free(&res);
    free(rel);
}

/* An empty list wraps no absolute path; without EXEC_WRAPPER the list
 * wraps nothing at all. */
static void
test_wrap_names_empty_or_alone(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    run_bash(f, patched_bash, "EXECGATE_WRAP_NAMES= /bin/echo one; /bin/echo two", f->wrapper_env,
             &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "one\ntwo\n");
    pshell_expect_one_record(f, "/bin/echo", (const char *[]){"/bin/echo", "two", NULL});
    proc_result_free(&res);

    unlink(f->log);
    run_bash(f, patched_bash, "/bin/echo three", "EXECGATE_WRAP_NAMES=echo", &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "three\n");
    pshell_expect_no_records(f);
    proc_result_free(&res);
}

/* EXECGATE_WRAP_IN_SHELL=1, exactly, has the Bash ask itself through the
 * linked-in client instead of running the wrapper: here without a server
 * (no CODEX_ESCALATE_SOCKET), so it refuses, and neither the wrapper nor
 * the program runs. Any other value leaves the wrapper in charge. */
static void
test_in_shell_asks_itself(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    run_bash(f, patched_bash,
             "EXECGATE_WRAP_IN_SHELL=yes /bin/echo one; EXECGATE_WRAP_IN_SHELL=1 /bin/echo two;"
             " echo \"s=$?\"",
             f->wrapper_env, &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "one\ns=126\n");
    assert_non_null(strstr(res.err, "execgate-wrapper: CODEX_ESCALATE_SOCKET is not set: refusing "
                                    "to run /bin/echo without the server's decision"));
    pshell_expect_one_record(f, "/bin/echo", (const char *[]){"/bin/echo", "one", NULL});
    proc_result_free(&res);
}

static void
test_unrunnable_wrapper_fails_closed(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    run_bash(f, patched_bash, "/bin/echo must-not-run", "EXEC_WRAPPER=/nonexistent/wrapper", &res);
    assert_int_equal(proc_exit_code(&res), 127);
    assert_string_equal(res.out, "");
    assert_non_null(strstr(res.err, "cannot execute exec wrapper /nonexistent/wrapper"));
    proc_result_free(&res);
}

/* Without the variable the patched Bash must behave exactly as Debian's. */
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
    };

    if (access("/bin/bash", X_OK) != 0)
        skip();
    for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
        struct proc_result ours, stock;
        run_bash(f, patched_bash, scripts[i], NULL, &ours);
        run_bash(f, "/bin/bash", scripts[i], NULL, &stock);
        pshell_assert_as_stock(scripts[i], &ours, &stock, true);
    }
}

static void
test_unset_behaves_as_stock_bash(void **state)
{
    struct pshell_fixture *f = *state;
    static const char *const scripts[] = {
        "echo hi; ls /nonexistent-path; echo status $?",
        "nosuchcommand-xyz; echo $?",
        "/bin/sh -c 'exit 7'; echo $?",
        "printf '%s\\n' b a c | sort -r | head -n 2",
        "x=$(uname); echo \"$x\"",
        "/etc/passwd; echo $?",
        "./missing-script; echo $?",
        "exec /nonexistent/prog",
        "cd /tmp && pwd && exit 3",
        "echo $BASH_VERSION",
    };

    if (access("/bin/bash", X_OK) != 0)
        skip();
    for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
        struct proc_result ours, stock;
        run_bash(f, patched_bash, scripts[i], NULL, &ours);
        run_bash(f, "/bin/bash", scripts[i], NULL, &stock);
        pshell_assert_as_stock(scripts[i], &ours, &stock, false);
    }
    pshell_expect_no_records(f);
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
        cmocka_unit_test_setup_teardown(test_plain_command, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_lookup_passes_resolved_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_builtin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_preserves_argv0, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipeline_of_three, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_substitution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_builtin_still_wraps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_legacy_variable_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_wrapper_means_no_wrapper, setup, teardown),
        cmocka_unit_test_setup_teardown(test_builtins_functions_subshells_not_wrapped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_prefix_assignment_wraps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrap_names_narrow_the_wrapper, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrap_names_empty_or_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_shell_asks_itself, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unrunnable_wrapper_fails_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unset_behaves_as_stock_bash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heavy_strings_and_memory_as_stock_bash, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("bash_patch", tests, NULL, NULL);
}
