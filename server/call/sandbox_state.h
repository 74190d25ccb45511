/*
 * sandbox_state: the sandbox a Codex client asks for, as it says it: in
 * the _meta of each tools/call ("codex/sandbox-state" and
 * "codex/sandbox-state-meta", Codex 0.169 and later) or in a
 * codex/sandbox-state/update request (older clients).  A state carries a
 * permissionProfile (profile.h) or a sandboxPolicy (policy.h) and a
 * sandboxCwd (a file:// URL or an absolute path); either way it is
 * resolved, for one call, into the one policy model: a sandboxPolicy
 * object and the directory the sandbox is rooted at.
 */
#ifndef EXECGATE_SERVER_SANDBOX_STATE_H
#define EXECGATE_SERVER_SANDBOX_STATE_H

#include <jansson.h>

/* The _meta keys a state may come under, and the capability names that
 * the server advertises for them in initialize. */
#define SANDBOX_STATE_KEY      "codex/sandbox-state"
#define SANDBOX_STATE_META_KEY "codex/sandbox-state-meta"

/*
 * Resolves state (an object with permissionProfile or sandboxPolicy, and
 * an optional sandboxCwd) for a call in workdir (absolute; the sandbox cwd
 * when the state names none).  When both are there the sandboxPolicy is
 * used: clients that still send it (Codex 0.97) send an incomplete
 * permissionProfile beside it.  Globs are expanded now, against the
 * file system as it is.  On success returns 0 with *policy a new
 * sandboxPolicy object, *cwd a malloc'd absolute path and, unless parsed
 * is NULL, *parsed the policy parsed (the check's parse, kept: the
 * caller's to free); on error -1 with *err a malloc'd message naming the
 * field (NULL: out of memory).
 */
struct sandbox_policy;
int sandbox_state_resolve(const json_t *state, const char *workdir, json_t **policy, char **cwd,
                          struct sandbox_policy **parsed, char **err);

/*
 * The state in a tools/call's _meta (meta may be NULL), resolved as
 * sandbox_state_resolve does.  Returns 0 when meta carries none (nothing
 * set), 1 when it does (*policy and *cwd set), -1 with *err when it is
 * invalid, or when both keys are there with different objects (which one
 * the client meant cannot be known).
 */
int sandbox_state_from_meta(const json_t *meta, const char *workdir, json_t **policy, char **cwd,
                            struct sandbox_policy **parsed, char **err);

#endif
