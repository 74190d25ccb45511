/*
 * server_suite: how a suite that drives the real server starts — the
 * server it tests and, in the unprivileged run, the user it runs it as.
 */
#ifndef EXECGATE_TESTS_SERVER_SUITE_H
#define EXECGATE_TESTS_SERVER_SUITE_H

#include <stdbool.h>

#include "tests/support/mcp_world.h"
#include "tests/support/test_user.h"

/* Sets *server from EXECGATE_TEST_SERVER.  Returns 0, or 1 (what main
 * returns) after saying that it is not set: for a suite with no
 * unprivileged run. */
int server_suite_server(const char **server);

/*
 * Sets *server as server_suite_server does and, with
 * EXECGATE_TEST_UNPRIVILEGED=1 in a run started as root, makes the test
 * user *u and sets *unprivileged.  Returns 0 to run the tests, or what
 * main returns: 1 when EXECGATE_TEST_SERVER is not set, 77 (meson's skip)
 * when the unprivileged run is not possible here (each after saying why).
 */
int server_suite_begin(const char **server, bool *unprivileged, struct test_user *u);

/* In the unprivileged run (unprivileged true) sets what in o runs the
 * server as u: the setpriv prefix, and the world's directories given to
 * u.  Otherwise leaves o as it is. */
void server_suite_as_user(struct mcp_world_options *o, bool unprivileged,
                          const struct test_user *u);

/* Gives the tree at path to u (chown -R), so that a server run as u may
 * use it; fails the test when it cannot. */
void server_suite_own_tree(const struct test_user *u, const char *path);

#endif
