/*
 * heuristic: the reference's forced-rm heuristic for commands no rule
 * covers.  The server asks a person before such a command runs;
 * `execgate-rules explain` says so.  No I/O.
 */
#ifndef EXECGATE_RULES_HEURISTIC_H
#define EXECGATE_RULES_HEURISTIC_H

#include <stdbool.h>
#include <stddef.h>

/* How deep `sh -c` scripts are looked into (sh -c "bash -c '...'"). */
#define HEURISTIC_MAX_DEPTH 4

/*
 * Whether argv[0..argc) is a forced rm: rm (any directory) with -f,
 * --force or combined short flags containing f before "--"; also behind
 * sudo, and inside the script of sh/bash/dash/zsh -c (split as a shell
 * would split words; ; && || | & separate commands), to
 * HEURISTIC_MAX_DEPTH levels.  A script that cannot be split is not a
 * forced rm.  Out of memory counts as forced (the cautious answer).
 */
bool heuristic_forces_rm(const char *const *argv, size_t argc);

/* The program names (basenames) heuristic_forces_rm can answer true
 * for, NULL-terminated: for any other program it is false. */
const char *const *heuristic_programs_list(void);

#endif
