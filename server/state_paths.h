/*
 * state_paths: the server's own files that a sandboxed command must never
 * write, wherever they lie: CODEX_HOME (Codex's config.toml and rules, ~/.codex
 * when unset), every rules file or directory the server reads, and the
 * audit log.  A command that could write them would add an allow rule for
 * the next start, or forge the record of what it did.  Each call's sandbox
 * helper binds them read-only when they fall inside a writable root
 * (execgate-sandbox --protect, docs/sandbox.md).
 */
#ifndef EXECGATE_SERVER_STATE_PATHS_H
#define EXECGATE_SERVER_STATE_PATHS_H

#include <stddef.h>

struct server_options;

/*
 * The paths for o, canonical (links resolved as far as the path exists,
 * the missing rest appended; made absolute against the server's cwd),
 * each once.  Computed once, at start: a path named by a link the sandbox
 * may later repoint is pinned to what it named then.  Returns a
 * NULL-terminated array (*n entries) to free with strv_free, or
 * NULL when out of memory.
 */
char **state_paths_new(const struct server_options *o, size_t *n);

/*
 * The server's state no sandboxed command may even read, canonical as
 * above, each once: the --token-file, every --listen unix:PATH socket and
 * the audit log.  Each call's sandbox helper covers them (execgate-sandbox
 * --hide, docs/sandbox.md).  Same result and ownership as
 * state_paths_new.
 */
char **state_paths_hidden(const struct server_options *o, size_t *n);

/* path made absolute and canonical as state_paths_new does it, or NULL
 * (out of memory, or a path that cannot be made so: a loop).  Caller frees. */
char *state_paths_canonical(const char *path);

#endif
