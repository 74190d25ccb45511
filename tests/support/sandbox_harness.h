/*
 * sandbox_harness: runs execgate-sandbox for the sandbox integration
 * tests and collects its exit code, output and report line.
 */
#ifndef EXECGATE_TESTS_SANDBOX_HARNESS_H
#define EXECGATE_TESTS_SANDBOX_HARNESS_H

#include <jansson.h>
#include <stdbool.h>

#include "tests/support/proc.h"

struct sbx_result {
    struct proc_result res;
    int code;       /* exit code, 128+signal when killed */
    json_t *report; /* the report line, NULL when none was written */
    int exec_error; /* the errno of the helper's exec_error line, 0 when none */
    int report_fd;  /* the --report-fd number the helper was given (closed) */
};

/* The helper binary (from $EXECGATE_TEST_SANDBOX); aborts when unset. */
const char *sbx_helper(void);

/* When non-NULL, every run is prefixed with this argv (e.g. setpriv ...),
 * NULL-terminated; borrowed, must outlive the runs. */
void sbx_set_prefix(const char *const *prefix);

/*
 * Runs HELPER [extra...] --policy POLICY --cwd CWD --report-fd N -- argv...
 * with env envp (NULL: a small fixed one).  Fills r; free with
 * sbx_result_free.  Aborts the test when the helper cannot be started.
 */
void sbx_run(const char *policy, const char *cwd, const char *const *extra, const char *const *argv,
             const char *const *envp, struct sbx_result *r);

/* As sbx_run, running `/bin/sh -c script` inside. */
void sbx_sh(const char *policy, const char *cwd, const char *script, struct sbx_result *r);

void sbx_result_free(struct sbx_result *r);

/* Asserts r exited with want, printing its stderr when it did not. */
void sbx_assert_code(const struct sbx_result *r, int want);

#endif
