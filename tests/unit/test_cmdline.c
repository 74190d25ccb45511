/*
 * sandbox cmdline: the helper's argv from a struct, every option in its
 * place.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/strv.h"
#include "sandbox/policy/cmdline.h"
#include "sandbox/policy/policy.h"

static struct sandbox_policy *
workspace_write(void)
{
    char *err = NULL;
    struct sandbox_policy *p =
        sandbox_policy_parse("{\"type\":\"workspace-write\",\"sandboxCwd\":\"/w\"}", &err);
    assert_non_null(p);
    return p;
}

static void
assert_argv(char **argv, const char *const *want, size_t n)
{
    assert_non_null(argv);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[n]);
}

/* Every option at once, in the documented order. */
static void
test_every_option(void **state)
{
    struct sandbox_policy *p = workspace_write();
    char *canon = sandbox_policy_to_json(p);
    const char *prog[] = {"/bin/bash", "-c", "echo hi", NULL};
    const char *protect[] = {"/home/u/.codex", "/var/log/a b"};
    const char *hide[] = {"/run/execgate/token"};
    const struct sandbox_cmdline c = {
        .helper = "/x/execgate-sandbox",
        .policy = p,
        .cwd = "/w/sub",
        .report_fd = 3,
        .exec_notify_fd = 5,
        .notify_sockets_only = true,
        .net_proxy_fd = 6,
        .tty_fd = 8,
        .argv0 = "-bash",
        .allow_degraded = true,
        .protect = protect,
        .n_protect = 2,
        .hide = hide,
        .n_hide = 1,
        .program = prog,
    };
    char **argv = sandbox_cmdline_argv(&c);
    const char *want[] = {"/x/execgate-sandbox",
                          "--exec-notify-fd",
                          "5",
                          "--notify-sockets-only",
                          "--net-proxy-fd",
                          "6",
                          "--tty-fd",
                          "8",
                          "--argv0",
                          "-bash",
                          "--allow-degraded",
                          "--protect",
                          "/home/u/.codex",
                          "--protect",
                          "/var/log/a b",
                          "--hide",
                          "/run/execgate/token",
                          "--policy",
                          canon,
                          "--cwd",
                          "/w/sub",
                          "--report-fd",
                          "3",
                          "--",
                          "/bin/bash",
                          "-c",
                          "echo hi"};
    assert_argv(argv, want, sizeof want / sizeof want[0]);
    strv_free(argv);
    free(canon);
    sandbox_policy_free(p);
}

/* No optional field: the helper, the policy, the cwd, the program. */
static void
test_no_option(void **state)
{
    struct sandbox_policy *p = workspace_write();
    char *canon = sandbox_policy_to_json(p);
    const char *prog[] = {"/bin/true", NULL};
    const struct sandbox_cmdline c = {
        .helper = "h",
        .policy = p,
        .cwd = "/w",
        .report_fd = -1,
        .exec_notify_fd = -1,
        .program = prog,
    };
    char **argv = sandbox_cmdline_argv(&c);
    const char *want[] = {"h", "--policy", canon, "--cwd", "/w", "--", "/bin/true"};
    assert_argv(argv, want, sizeof want / sizeof want[0]);
    strv_free(argv);
    free(canon);
    sandbox_policy_free(p);
}

/* A protect count no argv can hold is refused, not overflowed. */
static void
test_too_many_protect(void **state)
{
    struct sandbox_policy *p = workspace_write();
    const char *prog[] = {"/bin/true", NULL};
    const char *protect[] = {"/p"};
    const struct sandbox_cmdline c = {
        .helper = "h",
        .policy = p,
        .cwd = "/w",
        .report_fd = -1,
        .exec_notify_fd = -1,
        .protect = protect,
        .n_protect = SIZE_MAX / 2,
        .program = prog,
    };
    assert_null(sandbox_cmdline_argv(&c));
    /* and so is one where protect and hide paths together overflow */
    struct sandbox_cmdline both = c;
    both.n_protect = SIZE_MAX / 4;
    both.hide = protect;
    both.n_hide = SIZE_MAX / 4;
    assert_null(sandbox_cmdline_argv(&both));
    sandbox_policy_free(p);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_option),
        cmocka_unit_test(test_no_option),
        cmocka_unit_test(test_too_many_protect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
