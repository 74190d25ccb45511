#include "server/options.h"

#include "server/decide/escalated_env.h"
#include "common/strfmt.h"
#include "common/strv.h"
#include "common/macros.h"
#include "sandbox/policy/policy.h"
#include "execgate-config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    OPT_MAX_BACKGROUND,
    OPT_MAX_BACKGROUND_OUTPUT,
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
    OPT_ESCALATED_CHILDREN,
    OPT_PASS_ENV,
    OPT_ALLOW_UNIX_SOCKET,
    OPT_NO_LOGIN_SNAPSHOT,
    OPT_PREPARE,
    OPT_NO_PREPARE,
    OPT_MAX_PREPARED,
    OPT_PREPARED_IDLE,
    OPT_LOGIN_SNAPSHOT_TIMEOUT,
    OPT_SHELL,
    OPT_NETWORK_PROXY,
    OPT_LISTEN,
    OPT_TOKEN_FILE,
    OPT_SESSION_IDLE,
    OPT_MAX_SESSIONS,
    OPT_HEADER_TIMEOUT,
    OPT_WRITE_TIMEOUT,
    OPT_TASK_TTL,
    OPT_MAX_TASKS,
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
    {"max-background", required_argument, NULL, OPT_MAX_BACKGROUND},
    {"max-background-output", required_argument, NULL, OPT_MAX_BACKGROUND_OUTPUT},
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
    {"escalated-children", required_argument, NULL, OPT_ESCALATED_CHILDREN},
    {"pass-env", required_argument, NULL, OPT_PASS_ENV},
    {"allow-unix-socket", required_argument, NULL, OPT_ALLOW_UNIX_SOCKET},
    {"no-login-snapshot", no_argument, NULL, OPT_NO_LOGIN_SNAPSHOT},
    {"prepare", no_argument, NULL, OPT_PREPARE},
    {"no-prepare", no_argument, NULL, OPT_NO_PREPARE},
    {"max-prepared", required_argument, NULL, OPT_MAX_PREPARED},
    {"prepared-idle-ms", required_argument, NULL, OPT_PREPARED_IDLE},
    {"login-snapshot-timeout-ms", required_argument, NULL, OPT_LOGIN_SNAPSHOT_TIMEOUT},
    {"shell", required_argument, NULL, OPT_SHELL},
    {"network-proxy", required_argument, NULL, OPT_NETWORK_PROXY},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"session-idle-ms", required_argument, NULL, OPT_SESSION_IDLE},
    {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
    {"header-timeout-ms", required_argument, NULL, OPT_HEADER_TIMEOUT},
    {"write-timeout-ms", required_argument, NULL, OPT_WRITE_TIMEOUT},
    {"task-ttl-ms", required_argument, NULL, OPT_TASK_TTL},
    {"max-tasks", required_argument, NULL, OPT_MAX_TASKS},
    {NULL, 0, NULL, 0},
};

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: execgate [OPTION]...\n"
            "An MCP server (JSON-RPC on stdin/stdout, or Streamable HTTP with --listen)\n"
            "whose `shell` tool runs commands in a sandboxed, patched Bash.\n"
            "\n"
            "  --bash PATH               patched Bash (default: $CODEX_BASH_PATH, else the\n"
            "                            one installed with execgate)\n"
            "  --shell SHELL             the shell that runs commands: bash (the default),\n"
            "                            zsh (the patched zsh: $CODEX_ZSH_PATH, else the one\n"
            "                            installed with execgate), or the PATH of a patched\n"
            "                            shell (zsh when its name starts with \"zsh\")\n"
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
            "  --doctor                  check the programs, the rules and what this\n"
            "                            machine offers the sandbox, say what is missing\n"
            "                            and what that costs, and exit (0: nothing missing)\n"
            "  --max-pending-output N    no waiting call starts while this many bytes of\n"
            "                            answers wait for the client to read (67108864)\n"
            "  --max-background N        background processes (exec_command) of one\n"
            "                            session at once (8; 0: the tools are off)\n"
            "  --max-background-output N bytes of unread background output one session\n"
            "                            keeps, shared evenly by its processes (4194304)\n"
            "  --max-ask-ms MS           a call's timeout stops at most this long in all\n"
            "                            while a person is asked (600000)\n"
            "  --max-message-bytes N     largest JSON-RPC message accepted (16777216)\n"
            "  --kill-grace-ms N         SIGTERM-to-SIGKILL grace at shutdown (2000)\n"
            "  --task-ttl-ms MS          a task (a tools/call run as an MCP task) is kept\n"
            "                            this long after it ends; the most a client may ask\n"
            "                            for (3600000)\n"
            "  --max-tasks N             tasks a session keeps at once, running or ended\n"
            "                            (16)\n"
            "  --log-level LEVEL         error, warn, info or debug (info); logs go to stderr\n"
            "  --log-format FORMAT       text (a time, the level, the message) or json (one\n"
            "                            object a line, the exec records as the client's)\n"
            "  --audit-log PATH          append one JSON line per exec decision to PATH\n"
            "  --exec-enforcement MODE   tree: rules decide every exec of the command's\n"
            "                            process tree (seccomp user notification; the\n"
            "                            default); shell: only the execs the shell makes\n"
            "  --exec-strict             tree mode: refuse execs from processes whose memory\n"
            "                            other running threads share (docs/enforcement.md)\n"
            "  --escalated-children MODE ask: a program an escalated program starts runs\n"
            "                            only if a rule allows it or a person approves it\n"
            "                            (the default); inherit: it runs outside unless a\n"
            "                            rule forbids or prompts, as Codex does (accepts that\n"
            "                            an allowed program runs any code it is given)\n"
            "  --pass-env NAME           give programs run outside the sandbox NAME from\n"
            "                            the command's environment (repeatable; their\n"
            "                            environment is otherwise the server's, see\n"
            "                            docs/escalation.md)\n"
            "  --allow-unix-socket PATH  let sandboxed commands connect to the Unix socket\n"
            "                            PATH (the file it names now) although its server\n"
            "                            runs outside the sandbox (repeatable; by default\n"
            "                            only the sandbox's own sockets answer)\n"
            "  --no-login-snapshot       login calls run the whole profile (bash -lc, zsh -lc)\n"
            "                            each time instead of a snapshot of what it sets up\n"
            "  --login-snapshot-timeout-ms MS\n"
            "                            a snapshot's capture taking longer is killed and\n"
            "                            login calls run real login shells (10000)\n"
            "  --no-prepare              set up each call's sandbox when the call comes, not\n"
            "                            when the session's last call ends (--prepare: the\n"
            "                            default)\n"
            "  --max-prepared N          sandboxes set up ahead for HTTP sessions at once\n"
            "                            (4; 0: none); while as many wait, none is added\n"
            "  --prepared-idle-ms MS     an HTTP session's sandbox set up ahead and unused\n"
            "                            this long is discarded (60000)\n"
            "  --network-proxy MODE      with network off in the policy, reach the network\n"
            "                            through the proxy that network_rule decides: auto\n"
            "                            (when the rules have one; the default), on, off\n"
            "                            (docs/network.md)\n"
            "  --listen ADDRESS          serve MCP Streamable HTTP sessions at\n"
            "                            http://ADDRESS/mcp instead of stdio: unix:PATH\n"
            "                            (a socket of mode 0600) or HOST:PORT on a\n"
            "                            loopback address (port 0: any; repeatable)\n"
            "  --token-file PATH         bearer token every HTTP client must send\n"
            "                            (created, mode 0600, when missing)\n"
            "  --session-idle-ms MS      an HTTP session unused this long ends (1800000)\n"
            "  --max-sessions N          HTTP sessions at once (64)\n"
            "  --header-timeout-ms MS    an HTTP request's headers must arrive within\n"
            "                            this long, or the connection closes (10000)\n"
            "  --write-timeout-ms MS     an HTTP client that takes none of the bytes\n"
            "                            waiting for it this long is disconnected and\n"
            "                            the bytes freed (60000)\n"
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

const char *
options_program_problem(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return strerror(errno);
    if (S_ISDIR(st.st_mode))
        return "is a directory, not a program";
    if (!S_ISREG(st.st_mode))
        return "is not a regular file";
    if (access(path, X_OK) < 0)
        return errno == EACCES ? "is not executable" : strerror(errno);
    return NULL;
}

/* The first program (options_program_problem says none) of dir/rel[i], or
 * NULL. Caller frees. */
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
        if (real && !options_program_problem(real))
            return real;
        free(real);
    }
    return NULL;
}

/* A program named by flag (an option or a variable); -1 with *err when it
 * cannot be run. */
static int
check_named(const char *flag, const char *path, char **err)
{
    const char *problem = options_program_problem(path);
    if (!problem)
        return 0;
    *err = strfmt("%s: %s: %s", flag, path, problem);
    return -1;
}

const char *
options_shell_name(enum options_shell shell)
{
    return shell == OPTIONS_SHELL_ZSH ? "zsh" : "Bash";
}

/*
 * The shell that runs commands, from --shell (kept in o->shell_path until
 * now: bash, zsh or a path) and, for zsh, CODEX_ZSH_PATH or next to the
 * server: -1 with *err when --shell or the variable names a program that
 * cannot be run (unless for --doctor), 0 otherwise, o->shell_path NULL when
 * none was found (bash_path NULL, or no zsh next to the server).
 */
static int
resolve_shell(struct server_options *o, char **err)
{
    static const char *const zsh_rels[] = {"../subprojects/shells/zsh", EXECGATE_LIBEXEC_REL "/zsh",
                                           NULL};
    char *arg = o->shell_path;
    int rc = 0;
    o->shell_path = NULL;
    if (!arg || strcmp(arg, "bash") == 0) {
        o->shell = OPTIONS_SHELL_BASH;
        if (o->bash_path && !(o->shell_path = strdup(o->bash_path)))
            rc = -1; /* options_parse says "out of memory" */
    } else if (strcmp(arg, "zsh") == 0) {
        o->shell = OPTIONS_SHELL_ZSH;
        const char *env = getenv("CODEX_ZSH_PATH");
        if (env && *env) {
            if (!(o->shell_path = strdup(env)))
                rc = -1;
            else if (check_named("CODEX_ZSH_PATH", o->shell_path, err) < 0 && !o->doctor)
                rc = -1;
        } else {
            char *dir = self_dir();
            o->shell_path = find_next_to(dir, zsh_rels);
            free(dir);
        }
    } else if (strchr(arg, '/')) {
        const char *base = strrchr(arg, '/') + 1;
        o->shell = strncmp(base, "zsh", 3) == 0 ? OPTIONS_SHELL_ZSH : OPTIONS_SHELL_BASH;
        o->shell_path = arg;
        arg = NULL;
        if (check_named("--shell", o->shell_path, err) < 0 && !o->doctor)
            rc = -1;
    } else {
        *err = strfmt("--shell: must be bash, zsh or the path of a patched shell, not \"%s\"", arg);
        rc = -1;
    }
    free(arg);
    if (rc == 0 && o->doctor) {
        free(*err);
        *err = NULL;
    }
    return rc;
}

/*
 * Fills in the programs no option named, from CODEX_BASH_PATH and next to
 * the server, and checks that each can be run: -1 with *err when one
 * cannot (unless for --doctor, which says so itself).
 */
static int
resolve_helpers(struct server_options *o, char **err)
{
    static const char *const sandbox_rels[] = {"../sandbox/execgate-sandbox", "execgate-sandbox",
                                               EXECGATE_LIBEXEC_REL "/execgate-sandbox", NULL};
    static const char *const wrapper_rels[] = {"../wrapper/execgate-wrapper", "execgate-wrapper",
                                               EXECGATE_LIBEXEC_REL "/execgate-wrapper", NULL};
    static const char *const bash_rels[] = {"../subprojects/shells/bash",
                                            EXECGATE_LIBEXEC_REL "/bash", NULL};
    int rc = 0;
    if (o->bash_path) {
        rc = check_named("--bash", o->bash_path, err);
    } else {
        const char *env = getenv("CODEX_BASH_PATH");
        if (env && *env) {
            o->bash_path = strdup(env);
            if (!o->bash_path)
                return -1; /* options_parse says "out of memory" */
            rc = check_named("CODEX_BASH_PATH", o->bash_path, err);
        }
    }
    if (rc == 0 && o->execve_wrapper)
        rc = check_named("--execve", o->execve_wrapper, err);
    if (rc == 0 && o->sandbox_helper)
        rc = check_named("--sandbox-helper", o->sandbox_helper, err);
    if (rc < 0 && !o->doctor)
        return -1;
    free(*err);
    *err = NULL;
    char *dir = self_dir();
    if (!o->bash_path)
        o->bash_path = find_next_to(dir, bash_rels);
    if (!o->sandbox_helper)
        o->sandbox_helper = find_next_to(dir, sandbox_rels);
    if (!o->execve_wrapper)
        o->execve_wrapper = find_next_to(dir, wrapper_rels);
    free(dir);
    if (resolve_shell(o, err) < 0)
        return -1;
    if (o->doctor)
        return 0;
    if (!o->bash_path)
        *err = strfmt("cannot find the patched Bash next to the server: name it with --bash "
                      "or CODEX_BASH_PATH");
    else if (!o->shell_path)
        *err = strfmt("cannot find the patched zsh next to the server: name it with --shell PATH "
                      "or CODEX_ZSH_PATH");
    else if (!o->sandbox_helper)
        *err = strfmt("cannot find execgate-sandbox next to the server: name it with "
                      "--sandbox-helper");
    else if (!o->execve_wrapper)
        *err = strfmt("cannot find execgate-wrapper next to the server: name it with --execve");
    else
        return 0;
    return -1;
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
    json_t *cwd = policy ? json_object_get(v, "sandboxCwd") : NULL;
    if (cwd && (!json_is_string(cwd) || json_string_value(cwd)[0] != '/')) {
        *err = strfmt("--sandbox: sandboxCwd must be an absolute path");
        json_decref(v);
        return -1;
    }
    /* checked here, by the library the server applies it with, so that a
     * bad policy is refused as every other bad option is */
    char *why = NULL;
    struct sandbox_policy *p =
        sandbox_policy_from_json(policy ? policy : v, json_string_value(cwd), &why);
    sandbox_policy_free(p);
    if (!p) {
        *err = strfmt("--sandbox: %s", why ? why : "out of memory");
        free(why);
        json_decref(v);
        return -1;
    }
    json_decref(o->sandbox);
    o->sandbox = json_incref(policy ? policy : v);
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

/* --allow-unix-socket PATH: the socket's inode now, symlinks followed,
 * held open so that its number names no other file while the server runs;
 * a later file at PATH is another socket and stays unreachable. */
static int
add_allow_unix(struct server_options *o, const char *path, char **err)
{
    struct stat st;
    int pin = open(path, O_PATH | O_CLOEXEC);
    if (pin < 0 || fstat(pin, &st) != 0) {
        *err = strfmt("--allow-unix-socket: %s: %s", path, strerror(errno));
        if (pin >= 0)
            close(pin);
        return -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        *err = strfmt("--allow-unix-socket: %s: not a socket", path);
        close(pin);
        return -1;
    }
    o->allow_unix[o->allow_unix_count++] =
        (struct unix_connect_inode){.dev = st.st_dev, .ino = st.st_ino, .pin = pin};
    return 0;
}

/* The options that take a number, and the numbers each accepts. */
static const struct {
    int id;
    const char *name;
    uint64_t min, max;
} number_options[] = {
    {OPT_DEFAULT_TIMEOUT, "--default-timeout-ms", 1, OPTIONS_MAX_TIMEOUT_MS},
    {OPT_KILL_GRACE, "--kill-grace-ms", 0, 3600000},
    {OPT_MAX_OUTPUT, "--max-output-bytes", 64, SIZE_MAX / 4},
    {OPT_MAX_MESSAGE, "--max-message-bytes", 1024, SIZE_MAX / 4},
    {OPT_MAX_PROCESSES, "--max-processes", 0, UINT64_C(1) << 22},
    {OPT_MAX_MEMORY, "--max-memory", 0, UINT64_C(1) << 53},
    {OPT_MAX_PENDING, "--max-pending-output", 1024, SIZE_MAX / 4},
    {OPT_MAX_BACKGROUND, "--max-background", 0, 1024},
    {OPT_MAX_BACKGROUND_OUTPUT, "--max-background-output", 4096, SIZE_MAX / 4},
    {OPT_MAX_ASK, "--max-ask-ms", 0, UINT64_C(1) << 53},
    {OPT_MAX_CALLS, "--max-calls", 1, 4096},
    {OPT_LOGIN_SNAPSHOT_TIMEOUT, "--login-snapshot-timeout-ms", 1, UINT64_C(1) << 53},
    {OPT_SESSION_IDLE, "--session-idle-ms", 1, UINT64_C(1) << 53},
    {OPT_MAX_PREPARED, "--max-prepared", 0, 4096},
    {OPT_PREPARED_IDLE, "--prepared-idle-ms", 1, UINT64_C(1) << 53},
    {OPT_MAX_SESSIONS, "--max-sessions", 1, 65536},
    {OPT_HEADER_TIMEOUT, "--header-timeout-ms", 1, UINT64_C(1) << 53},
    {OPT_WRITE_TIMEOUT, "--write-timeout-ms", 1, UINT64_C(1) << 53},
    {OPT_TASK_TTL, "--task-ttl-ms", 1, OPTIONS_MAX_TIMEOUT_MS},
    {OPT_MAX_TASKS, "--max-tasks", 1, 4096},
};

/* An option of number_options; 0, or -1 with *err naming the option and
 * the numbers it takes. */
static int
apply_number(struct server_options *o, int c, const char *arg, char **err)
{
    size_t i = 0;
    while (i < ARRAY_SIZE(number_options) && number_options[i].id != c)
        i++;
    if (i == ARRAY_SIZE(number_options)) {
        *err = strfmt("option %d is not handled (a bug)", c);
        return -1;
    }
    uint64_t n = 0;
    if (parse_u64(arg, number_options[i].min, number_options[i].max, &n) < 0) {
        *err = strfmt("%s: '%s' is not a number from %llu to %llu", number_options[i].name, arg,
                      (unsigned long long)number_options[i].min,
                      (unsigned long long)number_options[i].max);
        return -1;
    }
    switch (c) {
    case OPT_DEFAULT_TIMEOUT:
        o->default_timeout_ms = n;
        break;
    case OPT_KILL_GRACE:
        o->kill_grace_ms = n;
        break;
    case OPT_MAX_OUTPUT:
        o->max_output_bytes = n;
        break;
    case OPT_MAX_MESSAGE:
        o->max_message_bytes = n;
        break;
    case OPT_MAX_PROCESSES:
        o->max_processes = n;
        break;
    case OPT_MAX_MEMORY:
        o->max_memory = n;
        break;
    case OPT_MAX_PENDING:
        o->max_pending_output = n;
        break;
    case OPT_MAX_BACKGROUND:
        o->max_background = (unsigned)n;
        break;
    case OPT_MAX_BACKGROUND_OUTPUT:
        o->max_background_output = n;
        break;
    case OPT_MAX_ASK:
        o->max_ask_ms = n;
        break;
    case OPT_LOGIN_SNAPSHOT_TIMEOUT:
        o->login_snapshot_timeout_ms = n;
        break;
    case OPT_SESSION_IDLE:
        o->session_idle_ms = n;
        break;
    case OPT_MAX_PREPARED:
        o->max_prepared = (unsigned)n;
        break;
    case OPT_PREPARED_IDLE:
        o->prepared_idle_ms = n;
        break;
    case OPT_MAX_SESSIONS:
        o->max_sessions = (unsigned)n;
        break;
    case OPT_HEADER_TIMEOUT:
        o->header_timeout_ms = n;
        break;
    case OPT_WRITE_TIMEOUT:
        o->write_timeout_ms = n;
        break;
    case OPT_TASK_TTL:
        o->task_ttl_ms = n;
        break;
    case OPT_MAX_TASKS:
        o->max_tasks = (unsigned)n;
        break;
    default: /* OPT_MAX_CALLS: at most 4096 */
        o->max_calls = (unsigned)n;
        break;
    }
    return 0;
}

/* One option; returns 0, 1 to exit after help/version, or -1 with *err. */
static int
apply_option(struct server_options *o, int c, const char *arg, char **err)
{
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
    case OPT_SHELL:
        /* bash, zsh or a path: resolve_shell makes it the shell's path;
         * NULL would mean the default, so out of memory is said here */
        free(o->shell_path);
        o->shell_path = strdup(arg);
        return o->shell_path ? 0 : -1;
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
    case OPT_ESCALATED_CHILDREN:
        if (strcmp(arg, "ask") == 0 || strcmp(arg, "inherit") == 0) {
            o->escalated_children_inherit = strcmp(arg, "inherit") == 0;
            return 0;
        }
        *err = strfmt("--escalated-children: expected ask or inherit, got '%s'", arg);
        return -1;
    case OPT_PASS_ENV:
        return add_pass_env(o, arg, err);
    case OPT_ALLOW_UNIX_SOCKET:
        return add_allow_unix(o, arg, err);
    case OPT_NO_LOGIN_SNAPSHOT:
        o->login_snapshot = false;
        return 0;
    case OPT_PREPARE:
        o->prepare = true;
        return 0;
    case OPT_NO_PREPARE:
        o->prepare = false;
        return 0;
    case OPT_LISTEN:
        o->listen[o->listen_count++] = strdup(arg);
        return o->listen[o->listen_count - 1] ? 0 : -1;
    case OPT_TOKEN_FILE:
        free(o->token_file);
        o->token_file = strdup(arg);
        return o->token_file ? 0 : -1;
    case OPT_EXEC_ENFORCEMENT:
        if (strcmp(arg, "tree") == 0 || strcmp(arg, "shell") == 0) {
            o->exec_enforcement = strcmp(arg, "tree") == 0 ? OPTIONS_EXEC_ENFORCEMENT_TREE
                                                           : OPTIONS_EXEC_ENFORCEMENT_SHELL;
            return 0;
        }
        *err = strfmt("--exec-enforcement: expected tree or shell, got '%s'", arg);
        return -1;
    case OPT_NETWORK_PROXY:
        if (strcmp(arg, "auto") == 0)
            o->network_proxy = OPTIONS_NETWORK_PROXY_AUTO;
        else if (strcmp(arg, "on") == 0)
            o->network_proxy = OPTIONS_NETWORK_PROXY_ON;
        else if (strcmp(arg, "off") == 0)
            o->network_proxy = OPTIONS_NETWORK_PROXY_OFF;
        else {
            *err = strfmt("--network-proxy: expected auto, on or off, got '%s'", arg);
            return -1;
        }
        return 0;
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
    case OPT_DOCTOR:
        o->doctor = true;
        return 0;
    default:
        return apply_number(o, c, arg, err);
    }
}

/* The short options, as getopt_long reports them in optopt. */
#define SHORT_OPTIONS "hVbe"

/*
 * What getopt_long's '?' or ':' (c) means, naming the option as it was
 * written: an argument missing, one given to an option that takes none, an
 * unknown option, or an abbreviation that fits several.  Caller frees.
 */
static char *
getopt_error(int c, int argc, char **argv)
{
    /* A long option always advances optind; a short one may be inside a
     * cluster (-Vx), so its name comes from optopt. */
    const char *word = optind > 1 && optind - 1 < argc ? argv[optind - 1] : "";
    bool is_long = strncmp(word, "--", 2) == 0 &&
                   (optopt == 0 || optopt > UCHAR_MAX || strchr(SHORT_OPTIONS, optopt));
    if (!is_long) {
        if (c == ':')
            return strfmt("-%c: needs an argument", optopt);
        return strfmt("-%c: unknown option (see --help)", optopt);
    }
    size_t len = strcspn(word, "=");
    if (c == ':')
        return strfmt("%.*s: needs an argument", (int)len, word);
    if (optopt != 0)
        return strfmt("%.*s: takes no argument", (int)len, word);
    /* glibc's abbreviations: a prefix of several options is ambiguous */
    char *matches = NULL;
    size_t n = 0;
    for (const struct option *opt = long_options; opt->name; opt++) {
        if (strncmp(opt->name, word + 2, len - 2) != 0)
            continue;
        char *more = strfmt("%s%s--%s", matches ? matches : "", matches ? ", " : "", opt->name);
        free(matches);
        matches = more;
        if (!matches)
            return NULL;
        n++;
    }
    char *msg = n > 1 ? strfmt("%.*s: ambiguous: %s (see --help)", (int)len, word, matches)
                      : strfmt("%.*s: unknown option (see --help)", (int)len, word);
    free(matches);
    return msg;
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
    o->max_background = OPTIONS_DEFAULT_MAX_BACKGROUND;
    o->max_background_output = OPTIONS_DEFAULT_MAX_BACKGROUND_OUTPUT;
    o->max_processes = OPTIONS_DEFAULT_MAX_PROCESSES;
    o->max_memory = OPTIONS_DEFAULT_MAX_MEMORY;
    o->login_snapshot = true;
    o->prepare = true;
    o->max_prepared = OPTIONS_DEFAULT_MAX_PREPARED;
    o->prepared_idle_ms = OPTIONS_DEFAULT_PREPARED_IDLE_MS;
    o->login_snapshot_timeout_ms = OPTIONS_DEFAULT_LOGIN_SNAPSHOT_TIMEOUT_MS;
    o->session_idle_ms = OPTIONS_DEFAULT_SESSION_IDLE_MS;
    o->header_timeout_ms = OPTIONS_DEFAULT_HEADER_TIMEOUT_MS;
    o->write_timeout_ms = OPTIONS_DEFAULT_WRITE_TIMEOUT_MS;
    o->max_sessions = OPTIONS_DEFAULT_MAX_SESSIONS;
    o->task_ttl_ms = OPTIONS_DEFAULT_TASK_TTL_MS;
    o->max_tasks = OPTIONS_DEFAULT_MAX_TASKS;
    o->log_level = LOG_LEVEL_INFO;
    /* at most one entry per argument, plus the default and the NULL */
    o->rules = calloc((size_t)argc + 2, sizeof(char *));
    o->pass_env = calloc((size_t)argc + 1, sizeof(char *));
    o->listen = calloc((size_t)argc + 1, sizeof(char *));
    o->allow_unix = calloc((size_t)argc + 1, sizeof(*o->allow_unix));
    if (!o->rules || !o->pass_env || !o->listen || !o->allow_unix) {
        options_release(o);
        *err = strfmt("out of memory");
        return OPTIONS_ERROR;
    }
    *err = NULL;
    optind = 1;
    opterr = 0;
    int c;
    int rc = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, ":hVb:e:", long_options, NULL)) != -1) {
        if (c == '?' || c == ':') {
            *err = getopt_error(c, argc, argv);
            rc = -1;
            break;
        }
        rc = apply_option(o, c, optarg, err);
    }
    if (rc == 0 && optind < argc) {
        *err = strfmt("%s: unexpected argument: execgate takes options only (see --help)",
                      argv[optind]);
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
    free(o->shell_path);
    free(o->execve_wrapper);
    free(o->sandbox_helper);
    strv_free_n(o->rules, o->rules_count);
    strv_free_n(o->pass_env, o->pass_env_count);
    strv_free_n(o->listen, o->listen_count);
    for (size_t i = 0; o->allow_unix && i < o->allow_unix_count; i++)
        close(o->allow_unix[i].pin);
    free(o->allow_unix);
    free(o->token_file);
    free(o->audit_log);
    json_decref(o->sandbox);
    free(o->sandbox_cwd);
    memset(o, 0, sizeof(*o));
}
