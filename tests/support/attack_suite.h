/*
 * attack_suite: the frame every attack suite against the real server
 * repeats, written once — which server, which variant (one more server
 * argument, a test user the server runs as), the world one test starts
 * with its rules, the command run in it, the proof that nothing ran
 * outside, and a teardown that ends what a failed assertion left running.
 * A test then reads as its attack: rules, command, what must not have
 * happened.
 *
 * One suite per test program: the state is the program's (plain globals,
 * one thread).  Failures are cmocka assertions.
 */
#ifndef EXECGATE_TESTS_ATTACK_SUITE_H
#define EXECGATE_TESTS_ATTACK_SUITE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "tests/support/mcp_world.h"
#include "tests/support/test_user.h"

/*
 * Reads the variant from the environment: EXECGATE_TEST_SERVER (the
 * server), EXECGATE_TEST_EXTRA (one more server argument; empty: none) and
 * EXECGATE_TEST_UNPRIVILEGED=1 (started as root: the server runs as a test
 * user, which this makes).  client_name is the worlds' clientInfo.name,
 * timeout_ms each attack_run's.  Returns 0 to run the tests, or what main
 * returns: 1 when EXECGATE_TEST_SERVER is not set, 77 (meson's skip) when
 * the unprivileged run is not possible here (each after saying why).
 */
int attack_suite_begin(const char *client_name, int timeout_ms);

/* Releases the test user of the unprivileged run. */
void attack_suite_end(void);

const char *attack_suite_server(void);
/* EXECGATE_TEST_EXTRA, or NULL when there is none. */
const char *attack_suite_extra(void);
/* Whether the server runs as the test user: the user, or NULL. */
const struct test_user *attack_suite_user(void);

/*
 * Starts the running test's world with rules: o's options (NULL: none,
 * and the suite's extra argument), to which this adds the server, the
 * client's name when o has none, and, in the unprivileged run, the test
 * user's prefix with the world's directories given to it.  The world is
 * the suite's, so that attack_teardown can end it after a failed
 * assertion.
 */
struct mcp_world *attack_world_start(const char *rules, const struct mcp_world_options *o);

/* The common case: rules, whether the client declares elicitation, and
 * the suite's extra argument. */
struct mcp_world *attack_world(const char *rules, bool elicitation);

/* Ends the world as mcp_world_end does (a clean exit 0 asserted). */
void attack_world_end(struct mcp_world *w);

/* Runs command in the world with the suite's timeout (mcp_world_run). */
json_t *attack_run(struct mcp_world *w, const char *command, struct mcp_answers *a);

/* The escalation attacks' proof: w->outside/name must not exist (only a
 * program run outside the sandbox could write there); a is the call's
 * answer, shown on failure, or NULL. */
void attack_assert_not_outside(const struct mcp_world *w, const char *name, const json_t *a);

/* A scratch directory under base (NULL: $TMPDIR or /tmp) that
 * attack_teardown removes. */
char *attack_scratch(const char *base, const char *tag);

/* full (cap entries, NULL-terminated) is argv run as the server's user:
 * after the test user's prefix in the unprivileged run. */
void attack_as_server_user(const char **full, size_t cap, const char *const *argv);

/* Runs argv outside any sandbox as the server's user (git refuses a
 * repository another user owns), in cwd (NULL: this one), and asserts
 * exit 0; its output (malloc'd) in *out when out is not NULL. */
void attack_outside_run(const char *const *argv, const char *cwd, char **out);

/* Gives path (and what is below it) to the server's user, in the
 * unprivileged run; nothing otherwise. */
void attack_own(const char *path);

/* cmocka teardown: abandons a world a failed assertion left running and
 * removes the scratch directories. */
int attack_teardown(void **state);

#endif
