/* exec_checks: the escalated environment's drop list and the forced-rm
 * heuristic; approvals: what "approved for the session" covers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/decide/approvals.h"
#include "server/decide/exec_checks.h"
#include "rules/heuristic.h"

#include <stdlib.h>
#include <string.h>

#define FORCES(...)                                                                                \
    heuristic_forces_rm((const char *const[]){__VA_ARGS__},                                        \
                        sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static void
test_env_drop(void **state)
{
    assert_true(exec_checks_env_dropped("LD_PRELOAD=/x.so"));
    assert_true(exec_checks_env_dropped("LD_LIBRARY_PATH=/x"));
    assert_true(exec_checks_env_dropped("LD_=x"));
    assert_true(exec_checks_env_dropped("BASH_ENV=/x"));
    /* every variable of the escalation protocol (esc_env.h) */
    assert_true(exec_checks_env_dropped("EXECGATE_WRAP_IN_SHELL=1"));
    assert_true(exec_checks_env_dropped("EXECGATE_WRAP_NAMES=git"));
    assert_true(exec_checks_env_dropped("CODEX_ESCALATE_SOCKET=4"));
    assert_true(exec_checks_env_dropped("EXEC_WRAPPER=/x"));
    assert_true(exec_checks_env_dropped("EXECGATE_BASH=/x"));
    assert_true(exec_checks_env_dropped("ENV=/x"));
    assert_true(exec_checks_env_dropped("SHELLOPTS=xtrace"));
    assert_true(exec_checks_env_dropped("BASHOPTS=x"));
    assert_true(exec_checks_env_dropped("PROMPT_COMMAND=x"));
    assert_true(exec_checks_env_dropped("GCONV_PATH=/x"));
    assert_true(exec_checks_env_dropped("BASH_FUNC_ls%%=() { :; }"));
    assert_true(exec_checks_env_dropped("GIT_CONFIG_COUNT=1"));
    assert_true(exec_checks_env_dropped("CODEX_ESCALATE_SOCKET=4"));
    assert_true(exec_checks_env_dropped("ENV")); /* a bare name too */
    /* exact names are not prefixes, and case matters */
    assert_false(exec_checks_env_dropped("ENVIRONMENT=x"));
    assert_false(exec_checks_env_dropped("ENV_X=x"));
    assert_false(exec_checks_env_dropped("HOME=/root"));
    assert_false(exec_checks_env_dropped("PATH=/usr/bin"));
    assert_false(exec_checks_env_dropped("ld_preload=x"));
    assert_false(exec_checks_env_dropped("XLD_PRELOAD=x"));
    size_t n = 0;
    const char *const *list = exec_checks_env_drop_list(&n);
    assert_true(n > 10);
    assert_string_equal(list[0], "LD_*");
}

static void
test_forced_rm(void **state)
{
    assert_true(FORCES("rm", "-f", "a"));
    assert_true(FORCES("/bin/rm", "-rf", "a"));
    assert_true(FORCES("rm", "-r", "-f", "a"));
    assert_true(FORCES("rm", "--force", "a"));
    assert_true(FORCES("rm", "a", "-fr"));
    assert_true(FORCES("sudo", "rm", "-f", "a"));
    assert_true(FORCES("sudo", "-n", "/usr/bin/rm", "-Rf", "a"));
    assert_true(FORCES("sh", "-c", "rm -f a"));
    assert_true(FORCES("bash", "-lc", "echo x; rm -rf /tmp/y"));
    assert_true(FORCES("bash", "-c", "true && sudo rm --force z"));
    assert_true(FORCES("sh", "-c", "bash -c 'rm -f a'"));
    assert_true(FORCES("sh", "-c", "ls;rm -f a"));
    assert_true(FORCES("sh", "-c", "ls&&rm -f a"));
    assert_true(FORCES("sh", "-c", "ls|rm -f a"));

    assert_false(FORCES("rm", "a"));
    assert_false(FORCES("rm", "-r", "a"));
    assert_false(FORCES("rm", "--", "-f"));
    assert_false(FORCES("rm", "--forceful")); /* not an rm option, not --force */
    assert_false(FORCES("ls", "-f"));
    assert_false(FORCES("sh", "-c", "ls -f; echo rm"));
    assert_false(FORCES("sh", "-c", "rm 'unclosed -f"));
    assert_false(FORCES("python3", "-c", "rm -f a"));
    assert_false(FORCES("sudo"));
    assert_false(FORCES("sh", "-c", ""));
    assert_false(FORCES("sh", "-c", ";;&&|"));
    assert_false(heuristic_forces_rm(NULL, 0));
}

static void
test_forced_rm_depth_is_bounded(void **state)
{
    /* five nested shells: deeper than HEURISTIC_MAX_DEPTH is not looked into */
    assert_true(FORCES("sh", "-c", "sh -c \"sh -c 'rm -f a'\""));
    assert_false(FORCES("sh", "-c", "sh -c \"sh -c 'sh -c \\\"sh -c rm\\\\ -f\\\\ a\\\"'\""));
}

/* Whether program + args is approved in a, by its key. */
static bool
approved(const struct approvals *a, const char *program, const char *const *args, size_t n)
{
    size_t len = 0;
    char *key = approvals_key(program, args, n, &len);
    assert_non_null(key);
    bool found = approvals_contains(a, key, len);
    free(key);
    return found;
}

static int
approve(struct approvals *a, const char *program, const char *const *args, size_t n)
{
    size_t len = 0;
    char *key = approvals_key(program, args, n, &len);
    assert_non_null(key);
    int rc = approvals_add(a, key, len);
    free(key);
    return rc;
}

static void
test_approvals(void **state)
{
    struct approvals *a = approvals_new();
    assert_non_null(a);
    const char *args[] = {"init", "."};
    assert_false(approved(a, "/usr/bin/git", args, 2));
    assert_int_equal(approve(a, "/usr/bin/git", args, 2), 0);
    assert_int_equal(approve(a, "/usr/bin/git", args, 2), 0); /* twice is once */
    assert_true(approved(a, "/usr/bin/git", args, 2));
    /* another program, other or fewer arguments, or joined differently */
    assert_false(approved(a, "/tmp/git", args, 2));
    assert_false(approved(a, "/usr/bin/git", args, 1));
    const char *more[] = {"init", ".", "--bare"};
    assert_false(approved(a, "/usr/bin/git", more, 3));
    const char *joined[] = {"init ."};
    assert_false(approved(a, "/usr/bin/git", joined, 1));
    const char *none[] = {NULL};
    assert_int_equal(approve(a, "/bin/true", none, 0), 0);
    assert_true(approved(a, "/bin/true", none, 0));
    approvals_free(a);
    approvals_free(NULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_drop),
        cmocka_unit_test(test_forced_rm),
        cmocka_unit_test(test_forced_rm_depth_is_bounded),
        cmocka_unit_test(test_approvals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
