#include "tests/support/attack_suite.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/proc.h"
#include "tests/support/server_suite.h"
#include "tests/support/tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    const char *server;
    const char *extra; /* one more server argument, or NULL */
    const char *client_name;
    int timeout_ms;
    bool unprivileged;
    struct test_user user;
    /* the running test's world (NULL when none runs) and scratch
     * directories, for the teardown after a failed assertion */
    struct mcp_world *world;
    char *scratch[4];
} suite;

/* The running test's world lives here, not on the test's stack, so that
 * the teardown can end it after a failed assertion. */
static struct mcp_world the_world;

int
attack_suite_begin(const char *client_name, int timeout_ms)
{
    suite.client_name = client_name;
    suite.timeout_ms = timeout_ms;
    const char *extra = getenv("EXECGATE_TEST_EXTRA");
    suite.extra = extra && *extra ? extra : NULL;
    return server_suite_begin(&suite.server, &suite.unprivileged, &suite.user);
}

void
attack_suite_end(void)
{
    if (suite.unprivileged)
        test_user_release(&suite.user);
}

const char *
attack_suite_server(void)
{
    return suite.server;
}

const char *
attack_suite_extra(void)
{
    return suite.extra;
}

const struct test_user *
attack_suite_user(void)
{
    return suite.unprivileged ? &suite.user : NULL;
}

struct mcp_world *
attack_world_start(const char *rules, const struct mcp_world_options *o)
{
    struct mcp_world_options full = {.extra = suite.extra};
    if (o)
        full = *o;
    full.server = suite.server;
    if (!full.client_name)
        full.client_name = suite.client_name;
    server_suite_as_user(&full, suite.unprivileged, &suite.user);
    mcp_world_start(&the_world, rules, &full);
    suite.world = &the_world;
    return suite.world;
}

struct mcp_world *
attack_world(const char *rules, bool elicitation)
{
    const struct mcp_world_options o = {.elicitation = elicitation, .extra = suite.extra};
    return attack_world_start(rules, &o);
}

void
attack_world_end(struct mcp_world *w)
{
    mcp_world_end(w); /* on a failed assertion there, the teardown frees it */
    suite.world = NULL;
}

json_t *
attack_run(struct mcp_world *w, const char *command, struct mcp_answers *a)
{
    return mcp_world_run(w, command, a, suite.timeout_ms);
}

void
attack_assert_not_outside(const struct mcp_world *w, const char *name, const json_t *a)
{
    if (mcp_world_exists(w->outside, name))
        fail_msg("%s/%s exists: a program ran outside the sandbox for the command\n"
                 "output: [%s]",
                 w->outside, name, a ? mcp_world_output(a) : "");
}

char *
attack_scratch(const char *base, const char *tag)
{
    for (size_t i = 0; i < sizeof(suite.scratch) / sizeof(suite.scratch[0]); i++) {
        if (!suite.scratch[i]) {
            suite.scratch[i] = base ? tmpdir_new_in(base, tag) : tmpdir_new(tag);
            return suite.scratch[i];
        }
    }
    fail_msg("too many scratch directories");
    return NULL;
}

void
attack_as_server_user(const char **full, size_t cap, const char *const *argv)
{
    size_t n = 0;
    for (size_t i = 0; suite.unprivileged && suite.user.prefix[i]; i++) {
        assert_true(n < cap - 1);
        full[n++] = suite.user.prefix[i];
    }
    for (size_t i = 0; argv[i]; i++) {
        assert_true(n < cap - 1);
        full[n++] = argv[i];
    }
    full[n] = NULL;
}

void
attack_outside_run(const char *const *argv, const char *cwd, char **out)
{
    const char *full[32];
    attack_as_server_user(full, sizeof(full) / sizeof(full[0]), argv);
    struct proc_result res;
    struct proc_options opts = {.cwd = cwd};
    assert_int_equal(proc_run(full, &opts, &res), 0);
    if (proc_exit_code(&res) != 0)
        fail_msg("%s %s failed: %s", argv[0], argv[1] ? argv[1] : "", res.err);
    if (out)
        *out = strdup(res.out ? res.out : "");
    proc_result_free(&res);
}

void
attack_own(const char *path)
{
    if (suite.unprivileged)
        server_suite_own_tree(&suite.user, path);
}

int
attack_teardown(void **state)
{
    (void)state;
    if (suite.world) { /* a failed assertion left it running */
        mcp_world_abandon(suite.world);
        suite.world = NULL;
    }
    for (size_t i = 0; i < sizeof(suite.scratch) / sizeof(suite.scratch[0]); i++) {
        tmpdir_remove(suite.scratch[i]);
        free(suite.scratch[i]);
        suite.scratch[i] = NULL;
    }
    return 0;
}
