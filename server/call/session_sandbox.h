/*
 * session_sandbox: the sandbox a session's calls run under unless a call
 * carries its own — the server's --sandbox (else read-only) until the
 * client's codex/sandbox-state/update says otherwise.
 */
#ifndef EXECGATE_SERVER_SESSION_SANDBOX_H
#define EXECGATE_SERVER_SESSION_SANDBOX_H

#include <jansson.h>

struct session_sandbox {
    /* a sandboxPolicy object and its sandboxCwd (NULL: each call's
     * workdir) */
    json_t *policy;
    char *policy_cwd;
    /* or, when the last update carried a permissionProfile, that update's
     * state (sandbox_state.h), resolved for each call against its workdir
     * (globs expanded then); NULL: policy and policy_cwd */
    json_t *state;
};

/* policy (a sandboxPolicy, checked here; NULL: read-only) rooted at cwd
 * (NULL: each call's workdir).  Returns 0, or -1 with *err (malloc'd;
 * NULL: out of memory). */
int session_sandbox_init(struct session_sandbox *sb, const json_t *policy, const char *cwd,
                         char **err);

void session_sandbox_release(struct session_sandbox *sb);

/* A codex/sandbox-state/update's params, checked and in force for the
 * calls that arrive from now on (logged).  Returns 0, or -1 with *err
 * (malloc'd; an invalid-params answer; NULL: out of memory) and sb as it
 * was. */
int session_sandbox_update(struct session_sandbox *sb, const json_t *params, char **err);

/*
 * The sandbox of a call in workdir, into *policy (a reference), *cwd
 * (malloc'd) and *parsed (the policy parsed, the one parse of this call:
 * the caller's to free; NULL only when the session's own policy does not
 * parse for this workdir): the state in the call's _meta (Codex 0.169
 * sends it with every call; meta may be NULL), else the session's from
 * its last update (a permissionProfile resolved now, for this workdir),
 * else its sandboxPolicy.  Returns 0, or -1 with *err (malloc'd; an
 * invalid-params answer; NULL: out of memory).
 */
struct sandbox_policy;
int session_sandbox_for_call(const struct session_sandbox *sb, const json_t *meta,
                             const char *workdir, json_t **policy, char **cwd,
                             struct sandbox_policy **parsed, char **err);

#endif
