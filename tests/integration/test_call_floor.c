/*
 * What a call skips to be fast, attacked and checked through the real
 * server.
 *
 * The helper's own exec of the shell is notified like every other: its
 * exec by fd, which the server was not asked about, is gone (an execveat
 * of an absolute path passed for the fd it used: test_new_attacks.c).
 *
 * The placeholder .codex kept for the session (docs/sandbox.md): made by
 * the session's first call, the same directory in the next call, the
 * command still unable to write there, and gone once the session ends.
 *
 * Variants (meson.build): as the invoking user and, with
 * EXECGATE_TEST_UNPRIVILEGED=1 and started as root, with the server run as
 * a test user (attack_suite.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/attack_suite.h"
#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define RM_FORBIDDEN                                                                               \
    "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", justification=\"fd-test: keep "         \
    "files\")\n"

/* The shell still starts as itself, and a second call as well: the
 * server decided nothing for it, and the shell's own children run. */
static void
test_shell_runs_commands(void **state)
{
    (void)state;
    struct mcp_world *w = attack_world(RM_FORBIDDEN, false);
    for (int i = 0; i < 2; i++) {
        json_t *r = attack_run(w, "ls -d . && echo \"shell=$0\"", NULL);
        mcp_world_assert_contains(mcp_world_output(r), ".\nshell=");
        json_decref(r);
    }
    attack_world_end(w);
}

static bool
same_inode_lines(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

static void
test_session_keeps_placeholder(void **state)
{
    (void)state;
    struct mcp_world *w = attack_world(RM_FORBIDDEN, false);
    assert_false(mcp_world_exists(w->wd, ".codex"));
    const char *cmd = "stat -c 'inode=%i mode=%a' .codex; mkdir .codex/x 2>/dev/null || echo "
                      "refused; rmdir .codex 2>/dev/null || echo kept";
    json_t *first = attack_run(w, cmd, NULL);
    const char *out1 = mcp_world_output(first);
    mcp_world_assert_contains(out1, "mode=1700\n");
    mcp_world_assert_contains(out1, "refused\nkept\n");
    /* between the calls the session holds it: still there */
    assert_true(mcp_world_exists(w->wd, ".codex"));
    json_t *second = attack_run(w, cmd, NULL);
    const char *out2 = mcp_world_output(second);
    if (!same_inode_lines(out1, out2))
        fprintf(stderr, "first call:\n%s\nsecond call:\n%s\n", out1, out2);
    assert_true(same_inode_lines(out1, out2)); /* the same directory, made once */
    json_decref(first);
    json_decref(second);
    /* the session ends (stdin's end), the directories stay until the
     * world goes: the server's end removed it */
    mcp_client_close_stdin(w->c);
    int status = mcp_client_wait_exit(w->c, 30000);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(mcp_world_exists(w->wd, "."));
    assert_false(mcp_world_exists(w->wd, ".codex"));
    attack_world_end(w);
}

int
main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = attack_suite_begin("call-floor-tests", 30000);
    if (rc != 0)
        return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_shell_runs_commands, attack_teardown),
        cmocka_unit_test_teardown(test_session_keeps_placeholder, attack_teardown),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    attack_suite_end();
    return rc;
}
