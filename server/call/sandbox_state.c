/*
 * sandbox_state: a client's sandbox state resolved into a sandboxPolicy
 * object and its sandbox cwd.
 */
#include "server/call/sandbox_state.h"

#include "sandbox/policy/policy.h"
#include "sandbox/policy/profile.h"
#include "common/strfmt.h"

#include <stdlib.h>
#include <string.h>

/* The sandbox cwd the state names, else workdir. */
static char *
state_cwd(const json_t *state, const char *workdir, char **err)
{
    const json_t *v = json_object_get(state, "sandboxCwd");
    if (v == NULL || json_is_null(v)) {
        char *copy = strdup(workdir);
        if (copy == NULL)
            *err = NULL;
        return copy;
    }
    const char *s = json_string_value(v);
    if (s == NULL || strlen(s) != json_string_length(v)) {
        *err = strdup("sandboxCwd: must be a file:// URL or an absolute path");
        return NULL;
    }
    return sandbox_profile_cwd(s, err);
}

/* Whether the policy parses (what the helper will be given must), into
 * *parsed unless parsed is NULL. */
static int
check_policy(const json_t *policy, const char *cwd, struct sandbox_policy **parsed, char **err)
{
    struct sandbox_policy *p = sandbox_policy_from_json(policy, cwd, err);
    if (parsed)
        *parsed = p;
    else
        sandbox_policy_free(p);
    return p ? 0 : -1;
}

int
sandbox_state_resolve(const json_t *state, const char *workdir, json_t **policy, char **cwd,
                      struct sandbox_policy **parsed, char **err)
{
    *err = NULL;
    *policy = NULL;
    if (parsed)
        *parsed = NULL;
    if (!json_is_object(state)) {
        *err = strdup("the sandbox state must be an object");
        return -1;
    }
    const json_t *profile = json_object_get(state, "permissionProfile");
    const json_t *legacy = json_object_get(state, "sandboxPolicy");
    if ((profile == NULL || json_is_null(profile)) && (legacy == NULL || json_is_null(legacy))) {
        *err = strdup("permissionProfile: required");
        return -1;
    }
    if ((*cwd = state_cwd(state, workdir, err)) == NULL)
        return -1;
    if (legacy != NULL && !json_is_null(legacy)) {
        if (json_is_object(legacy))
            *policy = json_incref((json_t *)legacy);
        else
            *err = strdup("sandboxPolicy: must be an object");
    } else {
        const char *tmpdir = getenv("TMPDIR"); /* the helper's: the call's environment is ours */
        *policy = sandbox_profile_to_policy(profile, *cwd, tmpdir, err);
    }
    if (*policy == NULL || check_policy(*policy, *cwd, parsed, err) < 0) {
        json_decref(*policy);
        *policy = NULL;
        free(*cwd);
        *cwd = NULL;
        return -1;
    }
    return 0;
}

int
sandbox_state_from_meta(const json_t *meta, const char *workdir, json_t **policy, char **cwd,
                        struct sandbox_policy **parsed, char **err)
{
    *err = NULL;
    const json_t *a = json_object_get(meta, SANDBOX_STATE_KEY);
    const json_t *b = json_object_get(meta, SANDBOX_STATE_META_KEY);
    if (a != NULL && json_is_null(a))
        a = NULL;
    if (b != NULL && json_is_null(b))
        b = NULL;
    if (a == NULL && b == NULL)
        return 0;
    if (a != NULL && b != NULL && !json_equal(a, b)) {
        *err = strfmt("_meta: \"%s\" and \"%s\" differ; send one state, or the same under both",
                      SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY);
        return -1;
    }
    const char *key = a != NULL ? SANDBOX_STATE_KEY : SANDBOX_STATE_META_KEY;
    char *why = NULL;
    if (sandbox_state_resolve(a != NULL ? a : b, workdir, policy, cwd, parsed, &why) < 0) {
        *err = strfmt("_meta[\"%s\"]: %s", key, why ? why : "out of memory");
        free(why);
        return -1;
    }
    return 1;
}
