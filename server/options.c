#include "server/options.h"

#include "server/escalated_env.h"
#include "server/strfmt.h"
#include "execgate-config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef EXECGATE_LIBEXEC_REL
#define EXECGATE_LIBEXEC_REL "../libexec/execgate"
#endif

enum {
    OPT_SANDBOX_HELPER = 1000,
    OPT_RULES,
    OPT_SANDBOX,
    OPT_DEFAULT_TIMEOUT,
    OPT_MAX_OUTPUT,
    OPT_MAX_CALLS,
    OPT_MAX_ASK,
    OPT_MAX_PENDING,
    OPT_MAX_PROCESSES,
    OPT_MAX_MEMORY,
    OPT_DOCTOR,
    OPT_MAX_MESSAGE,
    OPT_KILL_GRACE,
    OPT_LOG_LEVEL,
    OPT_LOG_FORMAT,
    OPT_PRESERVE,
    OPT_AUDIT_LOG, /* escalation */
    OPT_EXEC_ENFORCEMENT,
    OPT_EXEC_STRICT,
    OPT_PASS_ENV,
};

static const struct option long_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {"bash", required_argument, NULL, 'b'},
    {"execve", required_argument, NULL, 'e'},
    {"preserve-program-paths", no_argument, NULL, OPT_PRESERVE},
    {"sandbox-helper", required_argument, NULL, OPT_SANDBOX_HELPER},
    {"rules", required_argument, NULL, OPT_RULES},
    {"sandbox", required_argument, NULL, OPT_SANDBOX},
    {"default-timeout-ms", required_argument, NULL, OPT_DEFAULT_TIMEOUT},
    {"max-output-bytes", required_argument, NULL, OPT_MAX_OUTPUT},
    {"max-calls", required_argument, NULL, OPT_MAX_CALLS},
    {"max-ask-ms", required_argument, NULL, OPT_MAX_ASK},
    {"max-pending-output", required_argument, NULL, OPT_MAX_PENDING},
    {"max-processes", required_argument, NULL, OPT_MAX_PROCESSES},
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
    {"doctor", no_argument, NULL, OPT_DOCTOR},
    {"max-message-bytes", required_argument, NULL, OPT_MAX_MESSAGE},
    {"kill-grace-ms", required_argument, NULL, OPT_KILL_GRACE},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
    {"audit-log", required_argument, NULL, OPT_AUDIT_LOG},
    {"exec-enforcement", required_argument, NULL, OPT_EXEC_ENFORCEMENT},
    {"exec-strict", no_argument, NULL, OPT_EXEC_STRICT},
    {"pass-env", required_argument, NULL, OPT_PASS_ENV},
    {NULL, 0, NULL, 0},
};

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: execgate [OPTION]...\n"
            "An MCP server (JSON-RPC on stdin/stdout) whose `shell` tool runs commands\n"
            "in a sandboxed, patched Bash.\n"
            "\n"
            "  --bash PATH               patched Bash (default: $CODEX_BASH_PATH, else the\n"
            "                            one installed with execgate)\n"
            "  --execve PATH             exec wrapper (default: execgate-wrapper next to\n"
            "                            the server)\n"
            "  --preserve-program-paths  match rules on full program paths\n"
            "  --sandbox-helper PATH     execgate-sandbox (default: next to the server)\n"
            "  --rules PATH              a .rules file or directory (repeatable; default\n"
            "                            $CODEX_HOME/rules, else ~/.codex/rules)\n"
            "  --sandbox JSON            policy until the client sends one: a sandboxPolicy\n"
            "                            object, or {\"sandboxPolicy\":...,\"sandboxCwd\":...}\n"
            "                            (default: read-only, sandbox cwd = the call's workdir)\n"
            "  --default-timeout-ms N    timeout of a call without timeout_ms (10000)\n"
            "  --max-output-bytes N      output kept per call, head and tail (1048576)\n"
            "  --max-calls N             calls running at once; more wait in order (64)\n"
            "  --max-processes N         processes of one call at once, where a cgroup\n"
            "                            per call can be made (1024; 0: no limit)\n"
            "  --max-memory BYTES        memory of one call, likewise (2147483648; 0: none)\n"
            "  --doctor                  say what this machine offers (cgroups), and exit\n"
            "  --max-pending-output N    no waiting call starts while this many bytes of\n"
            "                            answers wait for the client to read (67108864)\n"
            "  --max-ask-ms MS           a call's timeout stops at most this long in all\n"
            "                            while a person is asked (600000)\n"
            "  --max-message-bytes N     largest JSON-RPC message accepted (16777216)\n"
            "  --kill-grace-ms N         SIGTERM-to-SIGKILL grace at shutdown (2000)\n"
            "  --log-level LEVEL         error, warn, info or debug (info); logs go to stderr\n"
            "  --log-format FORMAT       text (a time, the level, the message) or json (one\n"
            "                            object a line, the exec records as the client's)\n"
            "  --audit-log PATH          append one JSON line per exec decision to PATH\n"
            "  --exec-enforcement MODE   tree: rules decide every exec of the command's\n"
            "                            process tree (seccomp user notification; the\n"
            "                            default); shell: only the execs the shell makes\n"
            "  --exec-strict             tree mode: refuse execs from processes whose memory\n"
            "                            other running threads share (docs/enforcement.md)\n"
            "  --pass-env NAME           give programs run outside the sandbox NAME from\n"
            "                            the command's environment (repeatable; their\n"
            "                            environment is otherwise the server's, see\n"
            "                            docs/escalation.md)\n"
            "  -h, --help                print this help and exit\n"
            "  -V, --version             print the version and exit\n");
}

static int
parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!*text || *text == '-' || *text == '+')
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* The directory of the running binary, or NULL. Caller frees. */
static char *
self_dir(void)
{
    char *buf = NULL;
    for (size_t cap = 256; cap <= 65536; cap *= 2) {
        char *grown = realloc(buf, cap);
        if (!grown)
            break;
        buf = grown;
        ssize_t n = readlink("/proc/self/exe", buf, cap);
        if (n < 0)
            break;
        if ((size_t)n < cap) {
            buf[n] = '\0';
            char *slash = strrchr(buf, '/');
            if (slash)
                *slash = '\0';
            return buf;
        }
    }
    free(buf);
    return NULL;
}

/* The first executable of dir/rel[i], or NULL. Caller frees. */
static char *
find_next_to(const char *dir, const char *const *rels)
{
    if (!dir)
        return NULL;
    for (size_t i = 0; rels[i]; i++) {
        char *path = strfmt("%s/%s", dir, rels[i]);
        if (!path)
            return NULL;
        char *real = realpath(path, NULL);
        free(path);
        if (real && access(real, X_OK) == 0)
            return real;
        free(real);
    }
    return NULL;
}

static int
resolve_helpers(struct server_options *o, char **err)
{
    char *dir = self_dir();
    static const char *const sandbox_rels[] = {"../sandbox/execgate-sandbox", "execgate-sandbox",
                                               EXECGATE_LIBEXEC_REL "/execgate-sandbox", NULL};
    static const char *const wrapper_rels[] = {"../wrapper/execgate-wrapper", "execgate-wrapper",
                                               EXECGATE_LIBEXEC_REL "/execgate-wrapper", NULL};
    static const char *const bash_rels[] = {"../subprojects/bash/bash",
                                            EXECGATE_LIBEXEC_REL "/bash", NULL};
    if (!o->bash_path) {
        const char *env = getenv("CODEX_BASH_PATH");
        o->bash_path = env && *env ? strdup(env) : find_next_to(dir, bash_rels);
    }
    if (!o->sandbox_helper)
        o->sandbox_helper = find_next_to(dir, sandbox_rels);
    if (!o->execve_wrapper)
        o->execve_wrapper = find_next_to(dir, wrapper_rels);
    free(dir);
    if (!o->bash_path) {
        *err = strfmt("cannot find the patched Bash next to the server: use --bash or "
                      "CODEX_BASH_PATH");
        return -1;
    }
    if (!o->sandbox_helper) {
        *err = strfmt("cannot find execgate-sandbox next to the server: use --sandbox-helper");
        return -1;
    }
    /* The wrapper is only needed once escalation is on; a missing one is
     * not an error yet. */
    return 0;
}

static int
default_rules(struct server_options *o)
{
    const char *home = getenv("CODEX_HOME");
    char *path = NULL;
    if (home && *home) {
        path = strfmt("%s/rules", home);
    } else {
        const char *user_home = getenv("HOME");
        if (!user_home || !*user_home)
            return 0;
        path = strfmt("%s/.codex/rules", user_home);
    }
    if (!path)
        return -1;
    o->rules[0] = path;
    o->rules_count = 1;
    o->rules_default = true; /* escalation: a missing default directory is no rules */
    return 0;
}

static int
parse_sandbox(struct server_options *o, const char *text, char **err)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (!v || !json_is_object(v)) {
        *err = strfmt("--sandbox: not a JSON object%s%s", v ? "" : ": ", v ? "" : jerr.text);
        json_decref(v);
        return -1;
    }
    json_t *policy = json_object_get(v, "sandboxPolicy");
    if (!policy) {
        json_decref(o->sandbox);
        o->sandbox = v;
        return 0;
    }
    json_t *cwd = json_object_get(v, "sandboxCwd");
    if (cwd && (!json_is_string(cwd) || json_string_value(cwd)[0] != '/')) {
        *err = strfmt("--sandbox: sandboxCwd must be an absolute path");
        json_decref(v);
        return -1;
    }
    json_decref(o->sandbox);
    o->sandbox = json_incref(policy);
    free(o->sandbox_cwd);
    o->sandbox_cwd = cwd ? strdup(json_string_value(cwd)) : NULL;
    json_decref(v);
    return 0;
}

/* --pass-env NAME: checked, and kept once. */
static int
add_pass_env(struct server_options *o, const char *name, char **err)
{
    const char *problem = escalated_env_pass_name_problem(name);
    if (problem) {
        *err = strfmt("--pass-env: '%s' %s", name, problem);
        return -1;
    }
    for (size_t i = 0; i < o->pass_env_count; i++) {
        if (strcmp(o->pass_env[i], name) == 0)
            return 0;
    }
    char *copy = strdup(name);
    if (!copy)
        return -1; /* options_parse says "out of memory" */
    o->pass_env[o->pass_env_count++] = copy;
    return 0;
}

/* One option; returns 0, 1 to exit after help/version, or -1 with *err. */
static int
apply_option(struct server_options *o, int c, const char *arg, char **err)
{
    uint64_t n = 0;
    switch (c) {
    case 'h':
        usage(stdout);
        return 1;
    case 'V':
        printf("%s %s\n", EXECGATE_NAME, EXECGATE_VERSION);
        return 1;
    case 'b':
        free(o->bash_path);
        o->bash_path = strdup(arg);
        return 0;
    case 'e':
        free(o->execve_wrapper);
        o->execve_wrapper = strdup(arg);
        return 0;
    case OPT_PRESERVE:
        o->preserve_program_paths = true;
        return 0;
    case OPT_SANDBOX_HELPER:
        free(o->sandbox_helper);
        o->sandbox_helper = strdup(arg);
        return 0;
    case OPT_RULES:
        o->rules[o->rules_count++] = strdup(arg);
        return 0;
    case OPT_AUDIT_LOG:
        free(o->audit_log);
        o->audit_log = strdup(arg);
        return 0;
    case OPT_SANDBOX:
        return parse_sandbox(o, arg, err);
    case OPT_EXEC_STRICT:
        o->exec_strict = true;
        return 0;
    case OPT_PASS_ENV:
        return add_pass_env(o, arg, err);
    case OPT_EXEC_ENFORCEMENT:
        if (strcmp(arg, "tree") == 0 || strcmp(arg, "shell") == 0) {
            o->exec_enforcement = strcmp(arg, "tree") == 0 ? OPTIONS_EXEC_ENFORCEMENT_TREE
                                                           : OPTIONS_EXEC_ENFORCEMENT_SHELL;
            return 0;
        }
        *err = strfmt("--exec-enforcement: expected tree or shell, got '%s'", arg);
        return -1;
    case OPT_LOG_LEVEL:
        if (log_level_parse(arg, &o->log_level) == 0)
            return 0;
        *err = strfmt("--log-level: expected error, warn, info or debug, got '%s'", arg);
        return -1;
    case OPT_LOG_FORMAT:
        if (log_format_parse(arg, &o->log_format) == 0)
            return 0;
        *err = strfmt("--log-format: expected text or json, got '%s'", arg);
        return -1;
    case OPT_DEFAULT_TIMEOUT:
        if (parse_u64(arg, 1, UINT64_MAX / 2, &o->default_timeout_ms) == 0)
            return 0;
        break;
    case OPT_KILL_GRACE:
        if (parse_u64(arg, 0, 3600000, &o->kill_grace_ms) == 0)
            return 0;
        break;
    case OPT_MAX_OUTPUT:
        if (parse_u64(arg, 64, SIZE_MAX / 4, &n) == 0) {
            o->max_output_bytes = n;
            return 0;
        }
        break;
    case OPT_MAX_MESSAGE:
        if (parse_u64(arg, 1024, SIZE_MAX / 4, &n) == 0) {
            o->max_message_bytes = n;
            return 0;
        }
        break;
    case OPT_MAX_PROCESSES:
        if (parse_u64(arg, 0, UINT64_C(1) << 22, &o->max_processes) == 0)
            return 0;
        break;
    case OPT_MAX_MEMORY:
        if (parse_u64(arg, 0, UINT64_C(1) << 53, &o->max_memory) == 0)
            return 0;
        break;
    case OPT_DOCTOR:
        o->doctor = true;
        return 0;
    case OPT_MAX_PENDING:
        if (parse_u64(arg, 1024, SIZE_MAX / 4, &n) == 0) {
            o->max_pending_output = n;
            return 0;
        }
        break;
    case OPT_MAX_ASK:
        if (parse_u64(arg, 0, UINT64_C(1) << 53, &o->max_ask_ms) == 0)
            return 0;
        break;
    case OPT_MAX_CALLS:
        if (parse_u64(arg, 1, 4096, &n) == 0) {
            o->max_calls = (unsigned)n;
            return 0;
        }
        break;
    default:
        *err = strfmt("unknown option (try --help)");
        return -1;
    }
    *err = strfmt("invalid number '%s' for an option (see --help for the range)", arg);
    return -1;
}

enum options_outcome
options_parse(int argc, char **argv, struct server_options *o, char **err)
{
    memset(o, 0, sizeof(*o));
    o->default_timeout_ms = OPTIONS_DEFAULT_TIMEOUT_MS;
    o->max_output_bytes = OPTIONS_DEFAULT_MAX_OUTPUT;
    o->max_calls = OPTIONS_DEFAULT_MAX_CALLS;
    o->max_message_bytes = OPTIONS_DEFAULT_MAX_MESSAGE;
    o->kill_grace_ms = OPTIONS_DEFAULT_KILL_GRACE_MS;
    o->max_ask_ms = OPTIONS_DEFAULT_MAX_ASK_MS;
    o->max_pending_output = OPTIONS_DEFAULT_MAX_PENDING;
    o->max_processes = OPTIONS_DEFAULT_MAX_PROCESSES;
    o->max_memory = OPTIONS_DEFAULT_MAX_MEMORY;
    o->log_level = LOG_LEVEL_INFO;
    /* at most one entry per argument, plus the default and the NULL */
    o->rules = calloc((size_t)argc + 2, sizeof(char *));
    o->pass_env = calloc((size_t)argc + 1, sizeof(char *));
    if (!o->rules || !o->pass_env) {
        options_release(o);
        *err = strfmt("out of memory");
        return OPTIONS_ERROR;
    }
    *err = NULL;
    optind = 1;
    opterr = 0;
    int c;
    int rc = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "hVb:e:", long_options, NULL)) != -1) {
        if (c == '?' || c == ':') {
            const char *what = optopt ? "" : argv[optind - 1];
            *err = c == ':' || (optopt && strchr("be", optopt))
                       ? strfmt("option %s needs an argument", argv[optind - 1])
                       : strfmt("unknown option %s (try --help)", *what ? what : argv[optind - 1]);
            rc = -1;
            break;
        }
        rc = apply_option(o, c, optarg, err);
    }
    if (rc == 0 && optind < argc) {
        *err = strfmt("unexpected argument '%s' (try --help)", argv[optind]);
        rc = -1;
    }
    if (rc == 0 && o->rules_count == 0 && default_rules(o) < 0)
        rc = -1;
    if (rc == 0)
        rc = resolve_helpers(o, err);
    if (rc != 0) {
        options_release(o);
        if (rc < 0 && !*err)
            *err = strfmt("out of memory");
        return rc > 0 ? OPTIONS_EXIT : OPTIONS_ERROR;
    }
    return OPTIONS_RUN;
}

void
options_release(struct server_options *o)
{
    free(o->bash_path);
    free(o->execve_wrapper);
    free(o->sandbox_helper);
    for (size_t i = 0; o->rules && i < o->rules_count; i++)
        free(o->rules[i]);
    free(o->rules);
    for (size_t i = 0; o->pass_env && i < o->pass_env_count; i++)
        free(o->pass_env[i]);
    free(o->pass_env);
    free(o->audit_log);
    json_decref(o->sandbox);
    free(o->sandbox_cwd);
    memset(o, 0, sizeof(*o));
}
