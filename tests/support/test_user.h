/*
 * test_user: the unprivileged user some suites run the server as
 * (EXECGATE_TEST_UNPRIVILEGED=1, started as root): made once with
 * useradd, and a setpriv prefix that runs a program as it.
 */
#ifndef EXECGATE_TESTS_TEST_USER_H
#define EXECGATE_TESTS_TEST_USER_H

#include <stdbool.h>
#include <sys/types.h>

#include "tests/support/proc.h"

#define TEST_USER "execgate-sbx"

struct test_user {
    uid_t uid;
    gid_t gid;
    char *prefix_uid, *prefix_gid;
    /* setpriv ... -- : put before a program's argv; NULL-terminated */
    const char *prefix[6];
};

/* Makes the user if it is missing (another suite may be making it at the
 * same time) and fills *u.  Exits the test program when it cannot. */
void test_user_create(struct test_user *u);

/* Runs argv as the user; returns its exit code, output in *res (to free). */
int test_user_run(const struct test_user *u, const char *const *argv, struct proc_result *res);

/*
 * Whether the user can run the server: server and the programs named by
 * EXECGATE_TEST_SANDBOX, _WRAPPER and _BASH readable and executable by
 * it, and a sandbox the helper can make for it (unprivileged user
 * namespaces).  Returns 0, or 77 (meson's skip) after saying why.
 */
int test_user_can_serve(const struct test_user *u, const char *server);

void test_user_release(struct test_user *u);

#endif
