/*
 * exec_checks: which environment variables never reach an escalated
 * program, kept apart from the loop so it can be unit-tested and fuzzed.
 * No I/O, no libuv.
 */
#ifndef EXECGATE_SERVER_EXEC_CHECKS_H
#define EXECGATE_SERVER_EXEC_CHECKS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Whether the environment entry "NAME=value" (or a bare NAME) is removed
 * from an escalated program's environment: loader, shell start-up and
 * interpreter hooks (the list is in docs/escalation.md).  Cannot fail.
 */
bool exec_checks_env_dropped(const char *entry);

/* The drop list itself, for docs and tests: names, a trailing '*' marks a
 * prefix.  *n gets the count.  Static storage. */
const char *const *exec_checks_env_drop_list(size_t *n);

#endif
