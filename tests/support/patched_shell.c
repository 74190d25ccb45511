/*
 * patched_shell: fixture, records and comparisons for the patched-shell
 * tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/patched_shell.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/tmpdir.h"

struct pshell_fixture *
pshell_fixture_new(const char *name, const char *recorder, const char *patched, const char *stock,
                   void (*run)(struct pshell_fixture *f, const char *shell, const char *script,
                               const char *extra, struct proc_result *res))
{
    struct pshell_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = tmpdir_new(name);
    f->log = tmpdir_path(f->dir, "argv.log");
    f->recorder = recorder;
    f->patched = patched;
    f->stock = stock;
    f->run = run;
    assert_true(asprintf(&f->wrapper_env, "EXEC_WRAPPER=%s", recorder) > 0);
    return f;
}

void
pshell_run(struct pshell_fixture *f, const char *script, const char *extra, struct proc_result *res)
{
    f->run(f, f->patched, script, extra, res);
}

void
pshell_fixture_free(struct pshell_fixture *f)
{
    if (f == NULL)
        return;
    tmpdir_remove(f->dir);
    free(f->dir);
    free(f->log);
    free(f->wrapper_env);
    free(f);
}

json_t *
pshell_records(const struct pshell_fixture *f)
{
    json_t *all = json_array();
    char *text = tmpdir_read_file(f->log, NULL);
    if (text == NULL)
        return all;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t err;
        json_t *rec = json_loads(line, 0, &err);
        if (rec == NULL)
            fail_msg("unparsable record line: %s (%s)", line, err.text);
        json_array_append_new(all, rec);
    }
    free(text);
    return all;
}

void
pshell_assert_record(const struct pshell_fixture *f, const json_t *rec, const char *file,
                     const char *const *args)
{
    assert_true(json_is_array(rec));
    assert_string_equal(json_string_value(json_array_get(rec, 0)), f->recorder);
    assert_string_equal(json_string_value(json_array_get(rec, 1)), file);
    size_t i = 0;
    for (; args[i]; i++)
        assert_string_equal(json_string_value(json_array_get(rec, i + 2)), args[i]);
    assert_int_equal(json_array_size(rec), i + 2);
}

const json_t *
pshell_record_for(const json_t *all, const char *file)
{
    size_t i;
    const json_t *rec;
    json_array_foreach(all, i, rec)
    {
        if (strcmp(json_string_value(json_array_get(rec, 1)), file) == 0)
            return rec;
    }
    fail_msg("no exec of %s was wrapped", file);
    return NULL;
}

void
pshell_expect_one_record(const struct pshell_fixture *f, const char *file, const char *const *args)
{
    json_t *all = pshell_records(f);
    assert_int_equal(json_array_size(all), 1);
    pshell_assert_record(f, json_array_get(all, 0), file, args);
    json_decref(all);
}

void
pshell_expect_ran_once(const struct pshell_fixture *f, const char *script, struct proc_result *res,
                       const char *out, const char *file, const char *const *args)
{
    if (proc_exit_code(res) != 0)
        fail_msg("%s: exit %d, stderr: %s", script, proc_exit_code(res), res->err);
    assert_string_equal(res->out, out);
    pshell_expect_one_record(f, file, args);
    proc_result_free(res);
}

void
pshell_expect_one(struct pshell_fixture *f, const char *script, const char *out, const char *file,
                  const char *const *args)
{
    struct proc_result res;

    pshell_run(f, script, f->wrapper_env, &res);
    pshell_expect_ran_once(f, script, &res, out, file, args);
}

void
pshell_expect_none_wrapped(struct pshell_fixture *f, const char *script, const char *extra,
                           const char *out)
{
    struct proc_result res;

    pshell_run(f, script, extra, &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, out);
    pshell_expect_no_records(f);
    proc_result_free(&res);
}

void
pshell_expect_no_records(const struct pshell_fixture *f)
{
    json_t *all = pshell_records(f);
    assert_int_equal(json_array_size(all), 0);
    json_decref(all);
}

void
pshell_expect_as_stock(struct pshell_fixture *f, const char *const *scripts, bool must_succeed)
{
    if (access(f->stock, X_OK) != 0)
        skip();
    for (size_t i = 0; scripts[i]; i++) {
        struct proc_result ours, stock;
        f->run(f, f->patched, scripts[i], NULL, &ours);
        f->run(f, f->stock, scripts[i], NULL, &stock);
        if (strcmp(ours.out, stock.out) != 0 || strcmp(ours.err, stock.err) != 0 ||
            ours.status != stock.status ||
            (must_succeed && (stock.status != 0 || ours.out[0] == '\0')))
            fail_msg("script %s differs:\nours:  [%s] [%s] %d\nstock: [%s] [%s] %d", scripts[i],
                     ours.out, ours.err, ours.status, stock.out, stock.err, stock.status);
        proc_result_free(&ours);
        proc_result_free(&stock);
    }
}

/* ---- what every patched shell promises alike ---- */

void
pshell_test_plain_command(void **state)
{
    pshell_expect_one(*state, "/bin/echo hi there", "hi there\n", "/bin/echo",
                      (const char *[]){"/bin/echo", "hi", "there", NULL});
}

/* FILE is the absolute path found through PATH; argv[0] stays "uname". */
void
pshell_test_path_lookup_passes_resolved_file(void **state)
{
    pshell_expect_one(*state, "uname -s", "Linux\n", "/usr/bin/uname",
                      (const char *[]){"uname", "-s", NULL});
}

void
pshell_test_exec_builtin(void **state)
{
    pshell_expect_one(*state, "exec /bin/echo via exec", "via exec\n", "/bin/echo",
                      (const char *[]){"/bin/echo", "via", "exec", NULL});
}

void
pshell_test_exec_preserves_argv0(void **state)
{
    pshell_expect_one(*state, "exec -a custom-name /bin/sh -c 'echo $0'", "custom-name\n",
                      "/bin/sh", (const char *[]){"custom-name", "-c", "echo $0", NULL});
}

void
pshell_test_pipeline_of_three(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    pshell_run(f, "/bin/echo abc | tr a x | cat -n", f->wrapper_env, &res);
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

/* One exec only: echo is a builtin. */
void
pshell_test_command_substitution(void **state)
{
    pshell_expect_one(*state, "v=$(uname -s); echo \"got $v\"", "got Linux\n", "/usr/bin/uname",
                      (const char *[]){"uname", "-s", NULL});
}

void
pshell_test_empty_wrapper_means_no_wrapper(void **state)
{
    pshell_expect_none_wrapped(*state, "/bin/echo direct; uname -s",
                               "EXEC_WRAPPER=", "direct\nLinux\n");
}

void
pshell_test_prefix_assignment_wraps(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;
    char *script;

    /* Only the environment the program receives counts: a prefix
     * assignment puts the wrapper there, a plain shell variable does not. */
    assert_true(asprintf(&script, "EXEC_WRAPPER=%s /bin/echo one; EXEC_WRAPPER=%s; /bin/echo two",
                         f->recorder, f->recorder) > 0);
    pshell_run(f, script, NULL, &res);
    pshell_expect_ran_once(f, script, &res, "one\ntwo\n", "/bin/echo",
                           (const char *[]){"/bin/echo", "one", NULL});
    free(script);
}

/* EXECGATE_WRAP_NAMES narrows the wrapper to the programs it lists, by
 * last component or by full path; a relative path is always wrapped. */
void
pshell_test_wrap_names_narrow_the_wrapper(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;
    char *rel = tmpdir_path(f->dir, "rel");
    tmpdir_write_file(rel, "#!/bin/sh\necho rel\n", 0755);

    pshell_run(f,
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
void
pshell_test_wrap_names_empty_or_alone(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    pshell_run(f, "EXECGATE_WRAP_NAMES= /bin/echo one; /bin/echo two", f->wrapper_env, &res);
    pshell_expect_ran_once(f, "EXECGATE_WRAP_NAMES= /bin/echo one; /bin/echo two", &res,
                           "one\ntwo\n", "/bin/echo", (const char *[]){"/bin/echo", "two", NULL});

    unlink(f->log);
    pshell_expect_none_wrapped(f, "/bin/echo three", "EXECGATE_WRAP_NAMES=echo", "three\n");
}

/* EXECGATE_WRAP_IN_SHELL=1, exactly, has the shell ask itself through the
 * linked-in client instead of running the wrapper: here without a server
 * (no CODEX_ESCALATE_SOCKET), so it refuses, and neither the wrapper nor
 * the program runs. Any other value leaves the wrapper in charge. */
void
pshell_test_in_shell_asks_itself(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    pshell_run(f,
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

/* A wrapper that is missing: the program does not run either, and the
 * shell says why, with 127. */
void
pshell_test_unrunnable_wrapper_fails_closed(void **state)
{
    struct pshell_fixture *f = *state;
    struct proc_result res;

    pshell_run(f, "/bin/echo must-not-run", "EXEC_WRAPPER=/nonexistent/wrapper", &res);
    assert_int_equal(proc_exit_code(&res), 127);
    assert_string_equal(res.out, "");
    assert_non_null(strstr(res.err, "cannot execute exec wrapper /nonexistent/wrapper"));
    proc_result_free(&res);
}

void
pshell_test_unset_behaves_as_stock(void **state)
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
        NULL,
    };

    pshell_expect_as_stock(f, scripts, false);
    if (f->stock_scripts != NULL)
        pshell_expect_as_stock(f, f->stock_scripts, false);
    pshell_expect_no_records(f);
}
