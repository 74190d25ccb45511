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
    const char *patched;  /* borrowed: the patched shell */
    const char *stock;    /* borrowed: the distribution's shell, to compare */
    /* Runs `script` in `shell`, in dir, with the suite's fixed environment
     * plus `extra` (may be NULL); fills res. */
    void (*run)(struct pshell_fixture *f, const char *shell, const char *script, const char *extra,
                struct proc_result *res);
    /* Scripts of this shell's own that the patched one must run as the
     * stock one, beside the common ones (NULL-terminated), or NULL. */
    const char *const *stock_scripts;
};

/* A new fixture with a fresh directory named after `name`, running the
 * patched shell `patched` (and the stock one `stock`) with `run`; recorder,
 * patched and stock are borrowed and must outlive it.  Fails the test when
 * it cannot be made. */
struct pshell_fixture *
pshell_fixture_new(const char *name, const char *recorder, const char *patched, const char *stock,
                   void (*run)(struct pshell_fixture *f, const char *shell, const char *script,
                               const char *extra, struct proc_result *res));

/* Runs script in the patched shell (f->run with f->patched). */
void pshell_run(struct pshell_fixture *f, const char *script, const char *extra,
                struct proc_result *res);

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

/* Runs script with `extra` in the environment; expects exit 0, output
 * `out`, and no wrapped exec at all. */
void pshell_expect_none_wrapped(struct pshell_fixture *f, const char *script, const char *extra,
                                const char *out);

/* Asserts that the wrapper saw no exec at all. */
void pshell_expect_no_records(const struct pshell_fixture *f);

/* Runs each of scripts (NULL-terminated) without the wrapper in the
 * patched and in the stock shell, and fails the test when the two differ
 * in output, errors or status, or, with must_succeed, when the stock run
 * failed or ours printed nothing.  Skips the test without the stock shell. */
void pshell_expect_as_stock(struct pshell_fixture *f, const char *const *scripts,
                            bool must_succeed);

/*
 * What every patched shell promises alike, as cmocka tests whose state is a
 * pshell_fixture: the wrapper gets plain commands, PATH lookups (FILE
 * resolved, argv[0] kept), the exec builtin (with -a), pipelines and
 * command substitutions; an empty EXEC_WRAPPER means none; only the
 * environment a program receives counts; EXECGATE_WRAP_NAMES narrows the
 * wrapper; EXECGATE_WRAP_IN_SHELL=1 asks the linked-in client (refusing
 * without a server); a wrapper that cannot run fails closed with 127.
 * Without EXEC_WRAPPER the patched shell is the stock one.
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
/* Without the variable the patched shell behaves exactly as the stock one,
 * on common scripts and on f->stock_scripts, and nothing is wrapped. */
void pshell_test_unset_behaves_as_stock(void **state);

#endif
