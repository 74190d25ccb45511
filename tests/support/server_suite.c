#include "tests/support/server_suite.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
server_suite_server(const char **server)
{
    *server = getenv("EXECGATE_TEST_SERVER");
    if (*server)
        return 0;
    fprintf(stderr, "EXECGATE_TEST_SERVER is not set\n");
    return 1;
}

int
server_suite_begin(const char **server, bool *unprivileged, struct test_user *u)
{
    if (server_suite_server(server) != 0)
        return 1;
    const char *flag = getenv("EXECGATE_TEST_UNPRIVILEGED");
    if (!flag || strcmp(flag, "1") != 0)
        return 0;
    if (getuid() != 0) {
        printf("not root: the main run is already the unprivileged one\n");
        return 77;
    }
    *unprivileged = true;
    test_user_create(u);
    return test_user_can_serve(u, *server) == 77 ? 77 : 0;
}

void
server_suite_as_user(struct mcp_world_options *o, bool unprivileged, const struct test_user *u)
{
    if (!unprivileged)
        return;
    o->prefix = u->prefix;
    o->chown = true;
    o->owner_uid = u->uid;
    o->owner_gid = u->gid;
}

void
server_suite_own_tree(const struct test_user *u, const char *path)
{
    char *owner = NULL;
    assert_true(asprintf(&owner, "%u:%u", (unsigned)u->uid, (unsigned)u->gid) > 0);
    const char *argv[] = {"/bin/chown", "-R", owner, path, NULL};
    struct proc_result res;
    assert_int_equal(proc_run(argv, NULL, &res), 0);
    if (proc_exit_code(&res) != 0)
        fail_msg("chown %s failed: %s", path, res.err);
    proc_result_free(&res);
    free(owner);
}
