#include "server/call/session_sandbox.h"

#include "sandbox/policy/policy.h"
#include "sandbox/policy/profile.h"
#include "common/log.h"
#include "server/call/sandbox_state.h"
#include "common/strfmt.h"

#include <stdlib.h>
#include <string.h>

/* policy rooted at cwd, checked (what the helper is given must parse) and
 * in force from now on. */
static int
set_policy(struct session_sandbox *sb, const json_t *policy, const char *cwd, char **err)
{
    struct sandbox_policy *p = sandbox_policy_from_json(policy, cwd, err);
    if (!p)
        return -1;
    char *desc = sandbox_policy_describe(p);
    sandbox_policy_free(p);
    json_t *copy = json_deep_copy(policy);
    char *cwd_copy = cwd ? strdup(cwd) : NULL;
    if (!copy || (cwd && !cwd_copy)) {
        json_decref(copy);
        free(cwd_copy);
        free(desc);
        *err = NULL;
        return -1;
    }
    session_sandbox_release(sb);
    sb->policy = copy;
    sb->policy_cwd = cwd_copy;
    log_info("sandbox policy: %s%s%s", desc ? desc : "(?)",
             cwd ? "" : ", sandbox cwd = ", cwd ? "" : "each call's workdir");
    free(desc);
    return 0;
}

int
session_sandbox_init(struct session_sandbox *sb, const json_t *policy, const char *cwd, char **err)
{
    *err = NULL;
    memset(sb, 0, sizeof(*sb));
    if (policy)
        return set_policy(sb, policy, cwd, err);
    sb->policy = json_pack("{s:s}", "type", "read-only");
    return sb->policy ? 0 : -1;
}

void
session_sandbox_release(struct session_sandbox *sb)
{
    json_decref(sb->policy);
    free(sb->policy_cwd);
    json_decref(sb->state);
    memset(sb, 0, sizeof(*sb));
}

/*
 * An update carrying a permissionProfile and no sandboxPolicy (clients
 * newer than the sandboxPolicy form): checked now against the sandbox cwd
 * it names (or "/" when none: each call's workdir stands in for it then),
 * kept as it came, and resolved again for each call.
 */
static int
update_profile(struct session_sandbox *sb, const json_t *params, char **err)
{
    json_t *policy = NULL;
    char *cwd = NULL;
    struct sandbox_policy *p = NULL;
    if (sandbox_state_resolve(params, "/", &policy, &cwd, &p, err) < 0)
        return -1;
    char *desc = sandbox_policy_describe(p);
    sandbox_policy_free(p);
    json_decref(policy);
    free(cwd);
    json_t *copy = json_deep_copy(params);
    if (!copy) {
        free(desc);
        return -1;
    }
    json_decref(sb->state);
    sb->state = copy;
    const json_t *named = json_object_get(params, "sandboxCwd");
    log_info("sandbox state: permission profile, now %s%s", desc ? desc : "(?)",
             named && !json_is_null(named) ? "" : " (with \"/\" standing for each call's workdir)");
    free(desc);
    return 0;
}

int
session_sandbox_update(struct session_sandbox *sb, const json_t *params, char **err)
{
    *err = NULL;
    const json_t *policy = json_object_get(params, "sandboxPolicy");
    const json_t *profile = json_object_get(params, "permissionProfile");
    if ((!policy || json_is_null(policy)) && profile && !json_is_null(profile))
        return update_profile(sb, params, err);
    const json_t *cwd = json_object_get(params, "sandboxCwd");
    if (!json_is_object(policy)) {
        *err = strdup(policy ? "sandboxPolicy: must be an object" : "sandboxPolicy: required");
        return -1;
    }
    if (cwd && json_is_null(cwd))
        cwd = NULL;
    char *path = NULL;
    if (cwd &&
        (!json_is_string(cwd) || !(path = sandbox_profile_cwd(json_string_value(cwd), err)))) {
        if (!*err)
            *err = strdup("sandboxCwd: must be an absolute path or a file:// URL");
        return -1;
    }
    char *why = NULL;
    int rc = set_policy(sb, policy, path, &why);
    free(path);
    if (rc < 0) {
        *err = strfmt("sandboxPolicy: %s", why ? why : "out of memory");
        free(why);
    }
    return rc;
}

int
session_sandbox_for_call(const struct session_sandbox *sb, const json_t *meta, const char *workdir,
                         json_t **policy, char **cwd, struct sandbox_policy **parsed, char **err)
{
    *err = NULL;
    int rc = sandbox_state_from_meta(meta, workdir, policy, cwd, parsed, err);
    if (rc == 0 && sb->state) {
        char *why = NULL;
        rc = sandbox_state_resolve(sb->state, workdir, policy, cwd, parsed, &why) < 0 ? -1 : 1;
        if (rc < 0)
            *err = strfmt("the session's sandbox state: %s", why ? why : "out of memory");
        free(why);
    }
    if (rc == 0) {
        *policy = json_incref(sb->policy);
        *cwd = strdup(sb->policy_cwd ? sb->policy_cwd : workdir);
        if (!*cwd) {
            json_decref(*policy);
            *policy = NULL;
            return -1;
        }
        /* checked when it was set, for the sandbox cwd it had then: parsed
         * again for this one (NULL here: call_new parses, and says why) */
        char *why = NULL;
        *parsed = sandbox_policy_from_json(*policy, *cwd, &why);
        free(why);
    }
    return rc < 0 ? -1 : 0;
}
