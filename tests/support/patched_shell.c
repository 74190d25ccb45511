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

#include "tests/support/tmpdir.h"

struct pshell_fixture *
pshell_fixture_new(const char *name, const char *recorder)
{
    struct pshell_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = tmpdir_new(name);
    f->log = tmpdir_path(f->dir, "argv.log");
    f->recorder = recorder;
    assert_true(asprintf(&f->wrapper_env, "EXEC_WRAPPER=%s", recorder) > 0);
    return f;
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
pshell_expect_no_records(const struct pshell_fixture *f)
{
    json_t *all = pshell_records(f);
    assert_int_equal(json_array_size(all), 0);
    json_decref(all);
}

void
pshell_assert_as_stock(const char *script, struct proc_result *ours, struct proc_result *stock,
                       bool must_succeed)
{
    if (strcmp(ours->out, stock->out) != 0 || strcmp(ours->err, stock->err) != 0 ||
        ours->status != stock->status ||
        (must_succeed && (stock->status != 0 || ours->out[0] == '\0')))
        fail_msg("script %s differs:\nours:  [%s] [%s] %d\nstock: [%s] [%s] %d", script, ours->out,
                 ours->err, ours->status, stock->out, stock->err, stock->status);
    proc_result_free(ours);
    proc_result_free(stock);
}
