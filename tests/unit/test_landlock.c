/*
 * landlock: ABI detection, rights per ABI, rules, and enforcement (in a
 * forked child, so the test process itself stays unconfined).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/landlock.h"
#include "tests/support/tmpdir.h"

static int
need_landlock(void **state)
{
    unsetenv("EXECGATE_SANDBOX_MAX_ABI");
    if (sandbox_ll_abi() < 1) {
        print_message("no Landlock in this kernel\n");
        return -1;
    }
    return 0;
}

static void
test_max_abi_only_lowers(void **state)
{
    int real = sandbox_ll_abi();
    setenv("EXECGATE_SANDBOX_MAX_ABI", "2", 1);
    assert_int_equal(sandbox_ll_abi(), real < 2 ? real : 2);
    setenv("EXECGATE_SANDBOX_MAX_ABI", "99", 1);
    assert_int_equal(sandbox_ll_abi(), real);
    setenv("EXECGATE_SANDBOX_MAX_ABI", "x", 1);
    assert_int_equal(sandbox_ll_abi(), real);
    unsetenv("EXECGATE_SANDBOX_MAX_ABI");
}

static void
test_missing_by_abi(void **state)
{
    struct sandbox_ll *ll = sandbox_ll_new(2, true, true, true);
    assert_non_null(ll);
    assert_string_equal(sandbox_ll_missing(ll, 0), "landlock-truncate");
    assert_string_equal(sandbox_ll_missing(ll, 1), "landlock-tcp");
    assert_string_equal(sandbox_ll_missing(ll, 2), "landlock-scope");
    assert_null(sandbox_ll_missing(ll, 3));
    sandbox_ll_free(ll);

    if (sandbox_ll_abi() >= 6) {
        ll = sandbox_ll_new(sandbox_ll_abi(), true, true, true);
        assert_non_null(ll);
        assert_null(sandbox_ll_missing(ll, 0));
        sandbox_ll_free(ll);
    }
    ll = sandbox_ll_new(0, true, false, false);
    assert_null(ll);
    assert_int_equal(errno, EOPNOTSUPP);
    sandbox_ll_free(NULL);
}

static void
test_allow_paths(void **state)
{
    struct sandbox_ll *ll = sandbox_ll_new(sandbox_ll_abi(), true, false, false);
    assert_non_null(ll);
    assert_int_equal(sandbox_ll_allow(ll, "/nonexistent/x", SANDBOX_LL_READ), -ENOENT);
    /* A file takes only the rights that apply to files. */
    assert_int_equal(sandbox_ll_allow(ll, "/dev/null", SANDBOX_LL_WRITE), 0);
    assert_int_equal(sandbox_ll_allow(ll, "/", SANDBOX_LL_READ), 0);
    sandbox_ll_free(ll);
}

/* In a child: read everywhere, write only in dir; exits 0 when writes land
 * where they should and are refused elsewhere, and the report says so. */
static int
confined_child(const char *dir, const char *outside)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return 10;
    struct sandbox_ll *ll = sandbox_ll_new(sandbox_ll_abi(), true, true, true);
    if (ll == NULL || sandbox_ll_allow(ll, "/", SANDBOX_LL_READ) != 0 ||
        sandbox_ll_allow(ll, dir, SANDBOX_LL_WRITE) != 0)
        return 11;
    json_t *report = json_object();
    if (sandbox_ll_enforce(ll, report) != 0)
        return 12;
    sandbox_ll_free(ll);
    char *inside = tmpdir_path(dir, "ok");
    int fd = open(inside, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return 13;
    close(fd);
    free(inside);
    fd = open(outside, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EACCES)
        return 14;
    fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 15;
    close(fd);
    json_t *ll_report = json_object_get(report, "landlock");
    if (json_integer_value(json_object_get(ll_report, "abi")) != sandbox_ll_abi())
        return 16;
    if (sandbox_ll_abi() >= 4 && json_array_size(json_object_get(ll_report, "net")) != 2)
        return 17;
    json_decref(report);
    return 0;
}

static void
test_enforce_in_child(void **state)
{
    char *dir = tmpdir_new("llunit");
    char *other = tmpdir_new("llother");
    char *outside = tmpdir_path(other, "no");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(confined_child(dir, outside));
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(access(outside, F_OK), -1);
    /* The test process itself is not confined. */
    tmpdir_write_file(outside, "x", 0644);
    tmpdir_remove(dir);
    tmpdir_remove(other);
    free(dir);
    free(other);
    free(outside);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_abi_only_lowers),
        cmocka_unit_test(test_missing_by_abi),
        cmocka_unit_test(test_allow_paths),
        cmocka_unit_test(test_enforce_in_child),
    };
    return cmocka_run_group_tests(tests, need_landlock, NULL);
}
