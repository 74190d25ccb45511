/*
 * patched_shell: what the tests of the patched shells (Bash, zsh) share.
 * A fixture holds a scratch directory, the log record-argv writes each
 * wrapped argv to, and "EXEC_WRAPPER=<recorder>"; the records are read
 * back and checked here, and a script's run in the patched shell is
 * compared with its run in the stock one.
 */
#ifndef EXECGATE_TESTS_PATCHED_SHELL_H
#define EXECGATE_TESTS_PATCHED_SHELL_H

#include <jansson.h>
#include <stdbool.h>

#include "tests/support/proc.h"

struct pshell_fixture {
    char *dir;            /* the scratch directory, the shell's cwd */
    char *log;            /* dir/argv.log: RECORD_ARGV_FILE */
    char *wrapper_env;    /* "EXEC_WRAPPER=<recorder>" */
    const char *recorder; /* borrowed: record-argv's path */
};

/* A new fixture with a fresh directory named after `name`; recorder is
 * borrowed and must outlive it.  Fails the test when it cannot be made. */
struct pshell_fixture *pshell_fixture_new(const char *name, const char *recorder);

/* Removes the directory and frees f; NULL is a no-op. */
void pshell_fixture_free(struct pshell_fixture *f);

/* Every argv the wrapper saw, as a JSON array of arrays (empty if none);
 * the caller owns it.  Fails the test on an unparsable line. */
json_t *pshell_records(const struct pshell_fixture *f);

/* Asserts that rec is [recorder, file, args...] (args NULL-terminated). */
void pshell_assert_record(const struct pshell_fixture *f, const json_t *rec, const char *file,
                          const char *const *args);

/* The record whose FILE is `file` (borrowed from all), or fails the test. */
const json_t *pshell_record_for(const json_t *all, const char *file);

/* Asserts that the wrapper saw exactly one exec: FILE run as ARGS. */
void pshell_expect_one_record(const struct pshell_fixture *f, const char *file,
                              const char *const *args);

/* Asserts that the run `res` of `script` exited 0 having printed `out`,
 * and that the wrapper saw exactly one exec: FILE run as ARGS.  Frees
 * res. */
void pshell_expect_ran_once(const struct pshell_fixture *f, const char *script,
                            struct proc_result *res, const char *out, const char *file,
                            const char *const *args);

/* Asserts that the wrapper saw no exec at all. */
void pshell_expect_no_records(const struct pshell_fixture *f);

/* Fails the test when `ours` and `stock` (the runs of `script` in the
 * patched and the stock shell) differ in output, errors or status, or,
 * with must_succeed, when the stock run failed or ours printed nothing.
 * Frees both results. */
void pshell_assert_as_stock(const char *script, struct proc_result *ours, struct proc_result *stock,
                            bool must_succeed);

#endif
