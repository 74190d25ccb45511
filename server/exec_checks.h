/*
 * exec_checks: the pure parts of a per-exec decision, kept apart from the
 * loop so they can be unit-tested and fuzzed: which environment variables
 * never reach an escalated program, and the reference's forced-`rm`
 * heuristic for commands no rule covers.  No I/O, no libuv.
 */
#ifndef EXECGATE_SERVER_EXEC_CHECKS_H
#define EXECGATE_SERVER_EXEC_CHECKS_H

#include <stdbool.h>
#include <stddef.h>

/* How deep `sh -c` scripts are looked into (sh -c "bash -c '...'"). */
#define EXEC_CHECKS_MAX_DEPTH 4

/*
 * Whether the environment entry "NAME=value" (or a bare NAME) is removed
 * from an escalated program's environment: loader, shell start-up and
 * interpreter hooks (the list is in docs/escalation.md).  Cannot fail.
 */
bool exec_checks_env_dropped(const char *entry);

/* The drop list itself, for docs and tests: names, a trailing '*' marks a
 * prefix.  *n gets the count.  Static storage. */
const char *const *exec_checks_env_drop_list(size_t *n);

/*
 * Whether argv[0..argc) is a forced rm: rm (any directory) with -f,
 * --force or combined short flags containing f before "--"; also behind
 * sudo, and inside the script of sh/bash/dash/zsh -c (split as a shell
 * would split words; ; && || | & separate commands), to
 * EXEC_CHECKS_MAX_DEPTH levels.  A script that cannot be split is not a
 * forced rm.  Out of memory counts as forced (the cautious answer).
 */
bool exec_checks_forces_rm(const char *const *argv, size_t argc);

/* The program names (basenames) exec_checks_forces_rm can answer true
 * for, NULL-terminated: for any other program it is false. */
const char *const *exec_checks_heuristic_programs(void);

#endif
