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
    /* Runs `script` in the patched shell, in dir, with the suite's fixed
     * environment plus `extra` (may be NULL); fills res. */
    void (*run)(struct pshell_fixture *f, const char *script, const char *extra,
                struct proc_result *res);
};

/* A new fixture with a fresh directory named after `name`, running the
 * patched shell with `run`; recorder is borrowed and must outlive it.
 * Fails the test when it cannot be made. */
struct pshell_fixture *pshell_fixture_new(const char *name, const char *recorder,
                                          void (*run)(struct pshell_fixture *f, const char *script,
                                                      const char *extra, struct proc_result *res));

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

/* Runs script with the recorder as wrapper; expects exit 0, output `out`
 * and exactly one wrapped exec: FILE run as ARGS. */
void pshell_expect_one(struct pshell_fixture *f, const char *script, const char *out,
                       const char *file, const char *const *args);

/* Asserts that the wrapper saw no exec at all. */
void pshell_expect_no_records(const struct pshell_fixture *f);

/* Fails the test when `ours` and `stock` (the runs of `script` in the
 * patched and the stock shell) differ in output, errors or status, or,
 * with must_succeed, when the stock run failed or ours printed nothing.
 * Frees both results. */
void pshell_assert_as_stock(const char *script, struct proc_result *ours, struct proc_result *stock,
                            bool must_succeed);

/*
 * What every patched shell promises alike, as cmocka tests whose state is a
 * pshell_fixture: the wrapper gets plain commands, PATH lookups (FILE
 * resolved, argv[0] kept), the exec builtin (with -a), pipelines and
 * command substitutions; an empty EXEC_WRAPPER means none; only the
 * environment a program receives counts; EXECGATE_WRAP_NAMES narrows the
 * wrapper; EXECGATE_WRAP_IN_SHELL=1 asks the linked-in client (refusing
 * without a server); a wrapper that cannot run fails closed with 127.
 */
void pshell_test_plain_command(void **state);
void pshell_test_path_lookup_passes_resolved_file(void **state);
void pshell_test_exec_builtin(void **state);
void pshell_test_exec_preserves_argv0(void **state);
void pshell_test_pipeline_of_three(void **state);
void pshell_test_command_substitution(void **state);
void pshell_test_empty_wrapper_means_no_wrapper(void **state);
void pshell_test_prefix_assignment_wraps(void **state);
void pshell_test_wrap_names_narrow_the_wrapper(void **state);
void pshell_test_wrap_names_empty_or_alone(void **state);
void pshell_test_in_shell_asks_itself(void **state);
void pshell_test_unrunnable_wrapper_fails_closed(void **state);

#endif
