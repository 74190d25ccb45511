#include "server/mcp/tool_shell.h"

#include "common/strfmt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * The shell tool as tools/list shows it.  The input schema is the
 * reference's, property by property (timeout_ms and login "nullable", as it
 * sends them: null is the default), and Codex's own shell's arguments for
 * leaving the sandbox (sandbox_permissions, the older
 * with_escalated_permissions, justification); like the reference,
 * arguments it does not name are ignored, so it does not say
 * additionalProperties false.  The
 * title and annotations (MCP 2025-03-26 and later) tell a client that a
 * command may change anything the sandbox lets it reach and talk to the
 * world outside.
 */
static const char tool_json[] =
    "{\"name\":\"shell\",\"title\":\"Shell command\","
    "\"description\":\"Runs a shell command and returns its output. You MUST provide the "
    "workdir as an absolute path.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"command\":{\"description\":\"The bash string to execute.\",\"type\":\"string\"},"
    "\"workdir\":{\"description\":\"The working directory to execute the command in. Must be an "
    "absolute path.\",\"type\":\"string\"},"
    "\"timeout_ms\":{\"description\":\"The timeout for the command in milliseconds.\","
    "\"type\":\"integer\",\"format\":\"uint64\",\"minimum\":0,\"nullable\":true},"
    "\"login\":{\"description\":\"Launch Bash with -lc instead of -c: defaults to true.\","
    "\"type\":\"boolean\",\"nullable\":true},"
    "\"sandbox_permissions\":{\"description\":\"require_escalated asks the user to let the "
    "command run outside the sandbox, with the user's access to files and the network (the exec "
    "rules still apply); only when the sandbox stops a command that must run. Defaults to "
    "use_default.\",\"type\":\"string\",\"enum\":[\"use_default\",\"require_escalated\"],"
    "\"nullable\":true},"
    "\"with_escalated_permissions\":{\"description\":\"true is the older form of "
    "sandbox_permissions require_escalated.\",\"type\":\"boolean\",\"nullable\":true},"
    "\"justification\":{\"description\":\"With require_escalated: one sentence telling the user "
    "why the command must run outside the sandbox, shown when they are asked.\","
    "\"type\":\"string\",\"nullable\":true}},"
    "\"required\":[\"command\",\"workdir\"]},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"exit_code\":{\"type\":\"integer\"},\"output\":{\"type\":\"string\"},"
    "\"duration\":{\"type\":\"object\",\"properties\":{\"secs\":{\"type\":\"integer\"},"
    "\"nanos\":{\"type\":\"integer\"}},\"required\":[\"secs\",\"nanos\"]},"
    "\"timed_out\":{\"type\":\"boolean\"},\"sandbox_error\":{\"type\":\"string\"},"
    "\"shell_error\":{\"type\":\"string\"},\"aborted\":{\"type\":\"string\"},"
    "\"person_said\":{\"type\":\"string\"}},"
    "\"required\":[\"exit_code\",\"output\",\"duration\",\"timed_out\"]},"
    "\"annotations\":{\"title\":\"Shell command\",\"readOnlyHint\":false,"
    "\"destructiveHint\":true,\"idempotentHint\":false,\"openWorldHint\":true}}";

/* With background processes on, the description says when to use them
 * instead (the model chooses by it). */
#define BACKGROUND_HINT                                                                            \
    " For a command that does not end by itself (a server, a watcher) or that needs input, "       \
    "use exec_command instead."

static int
add_background_hint(json_t *tool, const struct server_options *o)
{
    (void)o;
    const char *d = json_string_value(json_object_get(tool, "description"));
    char *more = d ? strfmt("%s" BACKGROUND_HINT, d) : NULL;
    int rc = more ? json_object_set_new(tool, "description", json_string(more)) : -1;
    free(more);
    return rc;
}

/* The tool for the server's shell: with zsh, the texts that name the
 * shell name zsh (with Bash they are the reference's, word for word). */
json_t *
tool_shell_definition(const struct server_options *o)
{
    json_t *tool = json_loads(tool_json, 0, NULL);
    if (tool && o->max_background > 0 && add_background_hint(tool, o) < 0) {
        json_decref(tool);
        return NULL;
    }
    if (!tool || o->shell != OPTIONS_SHELL_ZSH)
        return tool;
    json_t *props = json_object_get(json_object_get(tool, "inputSchema"), "properties");
    int rc = json_object_set_new(tool, "description",
                                 json_string(o->max_background > 0
                                                 ? "Runs a shell command with zsh and returns its "
                                                   "output. You MUST provide the workdir as an "
                                                   "absolute path." BACKGROUND_HINT
                                                 : "Runs a shell command with zsh and returns its "
                                                   "output. You MUST provide the workdir as an "
                                                   "absolute path."));
    rc |= json_object_set_new(json_object_get(props, "command"), "description",
                              json_string("The zsh string to execute."));
    rc |= json_object_set_new(json_object_get(props, "login"), "description",
                              json_string("Launch zsh with -lc instead of -c: defaults to true."));
    if (rc != 0) {
        json_decref(tool);
        return NULL;
    }
    return tool;
}

int
tool_shell_workdir(const json_t *workdir, const char **wd, char **err)
{
    if (!json_is_string(workdir)) {
        *err = strdup(workdir ? "workdir: must be a string (an absolute path)"
                              : "workdir: required (an absolute path)");
        return -1;
    }
    *wd = json_string_value(workdir);
    if ((*wd)[0] != '/') {
        *err = strfmt("workdir: must be an absolute path, got '%s'", *wd);
        return -1;
    }
    struct stat st;
    if (stat(*wd, &st) < 0) {
        *err = strfmt("workdir: %s: %s", *wd, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        *err = strfmt("workdir: %s: not a directory", *wd);
        return -1;
    }
    return 0;
}

static int
check_permissions(const json_t *args, struct call_request *r, char **err)
{
    const json_t *perm = json_object_get(args, "sandbox_permissions");
    const json_t *old = json_object_get(args, "with_escalated_permissions");
    const json_t *just = json_object_get(args, "justification");
    const char *p = json_string_value(perm);
    if (perm && !json_is_null(perm) &&
        (!p || (strcmp(p, "use_default") != 0 && strcmp(p, "require_escalated") != 0))) {
        *err = strdup("sandbox_permissions: must be \"use_default\" or "
                      "\"require_escalated\"");
        return -1;
    }
    if (old && !json_is_null(old) && !json_is_boolean(old)) {
        *err = strdup("with_escalated_permissions: must be a boolean");
        return -1;
    }
    if (just && !json_is_null(just) && !json_is_string(just)) {
        *err = strdup("justification: must be a string");
        return -1;
    }
    r->leave_sandbox = (p && strcmp(p, "require_escalated") == 0) || json_is_true(old);
    r->justification = json_string_value(just);
    return 0;
}

/* Validates the arguments into *r; returns 0, or -1 with *err. */
static int
check_arguments(const struct server_options *o, const json_t *args, struct call_request *r,
                char **err)
{
    const json_t *command = json_object_get(args, "command");
    const json_t *workdir = json_object_get(args, "workdir");
    const json_t *t = json_object_get(args, "timeout_ms");
    const json_t *l = json_object_get(args, "login");
    if (!json_is_string(command)) {
        *err = strdup(command ? "command: must be a string" : "command: required");
        return -1;
    }
    const char *wd = NULL;
    if (tool_shell_workdir(workdir, &wd, err) < 0)
        return -1;
    r->command = json_string_value(command);
    r->workdir = wd;
    r->timeout_ms = o->default_timeout_ms;
    if (t && !json_is_null(t)) {
        double v = json_number_value(t);
        /* compared before the cast: a double beyond uint64_t is UB to cast */
        if (!json_is_number(t) || v < 0 || v > OPTIONS_MAX_TIMEOUT_MS || v != (double)(uint64_t)v) {
            *err = strfmt("timeout_ms: must be an integer from 0 to %u (a day)",
                          OPTIONS_MAX_TIMEOUT_MS);
            return -1;
        }
        /* 0 means no timeout of the caller's choosing: the default applies */
        if (v > 0)
            r->timeout_ms = (uint64_t)v;
    }
    r->login = true;
    if (l && !json_is_null(l)) {
        if (!json_is_boolean(l)) {
            *err = strdup("login: must be a boolean");
            return -1;
        }
        r->login = json_is_true(l);
    }
    return check_permissions(args, r, err);
}

int
tool_shell_arguments(const json_t *params, const json_t **args, char **err)
{
    *err = NULL;
    const json_t *name = json_object_get(params, "name");
    *args = json_object_get(params, "arguments");
    if (!json_is_string(name)) {
        *err = strdup("name: required (the tool)");
        return -1;
    }
    if (strcmp(json_string_value(name), "shell") != 0) {
        *err = strfmt("unknown tool '%s' (this server has shell)", json_string_value(name));
        return -1;
    }
    if (!json_is_object(*args)) {
        *err = strdup(*args ? "arguments: must be an object" : "arguments: required");
        return -1;
    }
    return 0;
}

int
tool_shell_request(const struct server_options *o, const json_t *params, const json_t *args,
                   struct call_request *r, char **err)
{
    *err = NULL;
    if (check_arguments(o, args, r, err) < 0)
        return -1;
    const json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    r->progress_token = json_is_string(token) || json_is_integer(token) ? token : NULL;
    return 0;
}

int
tool_shell_offer_tasks(json_t *tool)
{
    return json_object_set_new(tool, "execution", json_pack("{s:s}", "taskSupport", "optional"));
}
