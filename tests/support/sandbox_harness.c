/*
 * sandbox_harness: runs execgate-sandbox and captures what it reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/sandbox_harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const *run_prefix;

const char *
sbx_helper(void)
{
    const char *h = getenv("EXECGATE_TEST_SANDBOX");
    if (h == NULL) {
        fprintf(stderr, "EXECGATE_TEST_SANDBOX is not set\n");
        abort();
    }
    return h;
}

void
sbx_set_prefix(const char *const *prefix)
{
    run_prefix = prefix;
}

static size_t
count(const char *const *v)
{
    size_t n = 0;
    while (v != NULL && v[n] != NULL)
        n++;
    return n;
}

/* The report fd's lines: at most one report line (JSON) and, when the
 * program could not be started, a last line {"exec_error":ERRNO}. */
static void
read_report(int fd, struct sbx_result *r)
{
    char buf[8192];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    assert_true(n >= 0);
    buf[n] = '\0';
    for (char *line = buf; *line;) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl); /* every line ends */
        *nl = '\0';
        json_error_t jerr;
        json_t *j = json_loads(line, 0, &jerr);
        if (j == NULL)
            fail_msg("report is not JSON: %s (%s)", line, jerr.text);
        json_t *e = json_object_get(j, "exec_error");
        if (e) {
            assert_int_equal(r->exec_error, 0); /* once */
            assert_int_equal(nl[1], '\0');      /* last */
            assert_true(json_integer_value(e) > 0);
            r->exec_error = (int)json_integer_value(e);
            json_decref(j);
        } else {
            assert_null(r->report); /* one report line, first */
            r->report = j;
        }
        line = nl + 1;
    }
}

void
sbx_run(const char *policy, const char *cwd, const char *const *extra, const char *const *argv,
        const char *const *envp, struct sbx_result *r)
{
    char path[] = "/tmp/sbx-report-XXXXXX";
    int fd = mkstemp(path); /* inherited on purpose: it is the report fd */
    assert_true(fd > 2);
    unlink(path);
    char fdtext[16];
    snprintf(fdtext, sizeof fdtext, "%d", fd);

    size_t n = count(run_prefix) + count(extra) + count(argv) + 10;
    const char **full = calloc(n, sizeof *full);
    assert_non_null(full);
    size_t i = 0;
    for (size_t k = 0; k < count(run_prefix); k++)
        full[i++] = run_prefix[k];
    full[i++] = sbx_helper();
    for (size_t k = 0; k < count(extra); k++)
        full[i++] = extra[k];
    full[i++] = "--policy";
    full[i++] = policy;
    full[i++] = "--cwd";
    full[i++] = cwd;
    full[i++] = "--report-fd";
    full[i++] = fdtext;
    full[i++] = "--";
    for (size_t k = 0; k < count(argv); k++)
        full[i++] = argv[k];
    full[i] = NULL;

    static const char *const default_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C",
                                              "HOME=/nonexistent", NULL};
    struct proc_options opts = {.envp = envp ? envp : default_env};
    memset(r, 0, sizeof *r);
    assert_int_equal(proc_run(full, &opts, &r->res), 0);
    free(full);
    r->code = proc_exit_code(&r->res);
    read_report(fd, r);
    r->report_fd = fd;
    close(fd);
}

void
sbx_sh(const char *policy, const char *cwd, const char *script, struct sbx_result *r)
{
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    sbx_run(policy, cwd, NULL, argv, NULL, r);
}

void
sbx_result_free(struct sbx_result *r)
{
    proc_result_free(&r->res);
    json_decref(r->report);
    r->report = NULL;
}

void
sbx_assert_code(const struct sbx_result *r, int want)
{
    if (r->code != want)
        fail_msg("exit code %d, wanted %d; stdout: %s; stderr: %s", r->code, want, r->res.out,
                 r->res.err);
}
