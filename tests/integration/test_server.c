/*
 * The execgate server through its real stdio: lifecycle, every error code,
 * concurrency, policy ordering, timeouts, cancellation, the output cap,
 * shutdown without orphans, malformed input, and a long session with a flat
 * fd count (the server runs under ASan/LSan here: exit 0 means no leak).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/mcp_client.h"
#include "tests/support/proc.h"
#include "tests/support/tmpdir.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FULL_ACCESS "{\"type\":\"danger-full-access\"}"

extern char **environ;

static const char *server_path;

/* The shell the suite's servers run commands in: --shell VALUE of
 * EXECGATE_TEST_SHELL appended to argv[0..n), when set (the zsh run of
 * tests/integration/meson.build) and argv has no --shell. Returns the new
 * n. */
static size_t
with_shell(const char **argv, size_t n)
{
    const char *shell = getenv("EXECGATE_TEST_SHELL");
    for (size_t i = 1; i < n; i++)
        if (strcmp(argv[i], "--shell") == 0)
            return n; /* the test names its own */
    if (shell && *shell) {
        argv[n++] = "--shell";
        argv[n++] = shell;
    }
    return n;
}

static bool
zsh(void)
{
    const char *shell = getenv("EXECGATE_TEST_SHELL");
    return shell && strcmp(shell, "zsh") == 0;
}

/* A command that prints "login" in a login shell, for each shell. */
static const char *
login_check(void)
{
    return zsh() ? "[[ -o login ]] && echo login" : "shopt -q login_shell && echo login";
}

/* Starts the server with extra arguments (NULL-terminated list). */
static struct mcp_client *
start_server(const char *first, ...)
{
    const char *argv[32] = {server_path};
    size_t n = 1;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && n < 29; a = va_arg(ap, const char *))
        argv[n++] = a;
    va_end(ap);
    n = with_shell(argv, n);
    argv[n] = NULL;
    return mcp_client_start(argv, NULL);
}

static struct mcp_client *
start_initialized(const char *first, ...)
{
    const char *argv[32] = {server_path};
    size_t n = 1;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && n < 29; a = va_arg(ap, const char *))
        argv[n++] = a;
    va_end(ap);
    n = with_shell(argv, n);
    argv[n] = NULL;
    struct mcp_client *c = mcp_client_start(argv, NULL);
    json_t *init = mcp_client_initialize(c);
    assert_non_null(json_object_get(init, "result"));
    json_decref(init);
    return c;
}

/* Closes stdin and asserts a clean exit (status 0: no leak, no crash). */
static void
finish(struct mcp_client *c)
{
    mcp_client_close_stdin(c);
    int status = mcp_client_wait_exit(c, MCP_CLIENT_WAIT_MS);
    assert_int_not_equal(status, -1);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    mcp_client_free(c);
}

static int
error_code(const json_t *answer)
{
    const json_t *e = json_object_get(answer, "error");
    assert_non_null(e);
    return (int)json_integer_value(json_object_get(e, "code"));
}

static const char *
error_message(const json_t *answer)
{
    return json_string_value(json_object_get(json_object_get(answer, "error"), "message"));
}

/* The structured result of a shell answer, checked against its text. */
static const json_t *
shell_result(const json_t *answer)
{
    const json_t *result = json_object_get(answer, "result");
    if (!result)
        fprintf(stderr, "not a result: %s\n", json_dumps(answer, 0));
    assert_non_null(result);
    const json_t *sc = json_object_get(result, "structuredContent");
    assert_non_null(sc);
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
    assert_non_null(text);
    json_t *parsed = json_loads(text, 0, NULL);
    assert_true(json_equal(parsed, sc));
    json_decref(parsed);
    return sc;
}

static const char *
result_output(const json_t *answer)
{
    return json_string_value(json_object_get(shell_result(answer), "output"));
}

static int
result_exit(const json_t *answer)
{
    return (int)json_integer_value(json_object_get(shell_result(answer), "exit_code"));
}

static json_t *
shell_args(const char *command, const char *workdir)
{
    return json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments", "command", command,
                     "workdir", workdir, "login", 0);
}

static json_t *
call_shell(struct mcp_client *c, const char *command, const char *workdir)
{
    return mcp_client_call(c, "tools/call", shell_args(command, workdir));
}

static bool
process_appears(const char *marker)
{
    for (int i = 0; i < 3000; i++) {
        if (proc_with_marker(marker))
            return true;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* ---- lifecycle ---- */

static void
test_initialize(void **state)
{
    struct mcp_client *c = start_server("--sandbox", FULL_ACCESS, NULL);
    /* ping works before initialize; other requests are refused */
    json_t *a = mcp_client_call(c, "ping", NULL);
    assert_true(json_is_object(json_object_get(a, "result")));
    json_decref(a);
    a = mcp_client_call(c, "tools/list", NULL);
    assert_int_equal(error_code(a), -32600);
    assert_non_null(strstr(error_message(a), "initialize"));
    json_decref(a);

    a = mcp_client_initialize(c);
    const json_t *r = json_object_get(a, "result");
    assert_string_equal(json_string_value(json_object_get(r, "protocolVersion")), "2025-06-18");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r, "serverInfo"), "name")), "execgate");
    assert_non_null(
        json_string_value(json_object_get(json_object_get(r, "serverInfo"), "version")));
    const json_t *caps = json_object_get(r, "capabilities");
    assert_true(json_is_object(json_object_get(caps, "tools")));
    assert_true(json_is_object(json_object_get(caps, "logging")));
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(caps, "experimental"), "codex/sandbox-state"),
            "version")),
        "1.0.0");
    assert_non_null(strstr(json_string_value(json_object_get(r, "instructions")), "shell"));
    json_decref(a);

    a = mcp_client_call(c, "initialize", json_pack("{s:s}", "protocolVersion", "2025-06-18"));
    assert_int_equal(error_code(a), -32600);
    json_decref(a);
    finish(c);
}

static void
test_version_negotiation(void **state)
{
    const char *versions[][2] = {{"2024-11-05", "2024-11-05"},
                                 {"2025-03-26", "2025-03-26"},
                                 {"2025-11-25", "2025-11-25"},
                                 {"1999-01-01", "2025-11-25"}};
    for (size_t i = 0; i < 4; i++) {
        struct mcp_client *c = start_server("--sandbox", FULL_ACCESS, NULL);
        json_t *a = mcp_client_call(c, "initialize",
                                    json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion",
                                              versions[i][0], "capabilities", "clientInfo", "name",
                                              "t", "version", "1"));
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(a, "result"), "protocolVersion")),
            versions[i][1]);
        json_decref(a);
        finish(c);
    }
}

static void
test_tools_list(void **state)
{
    /* the shell tool alone, as the reference has it (test_processes checks
     * the list with the background processes' tools) */
    struct mcp_client *c =
        start_initialized("--sandbox", FULL_ACCESS, "--max-background", "0", NULL);
    json_t *a = mcp_client_call(c, "tools/list", json_pack("{s:s}", "cursor", "ignored"));
    const json_t *tools = json_object_get(json_object_get(a, "result"), "tools");
    assert_int_equal(json_array_size(tools), 1);
    const json_t *t = json_array_get(tools, 0);
    assert_string_equal(json_string_value(json_object_get(t, "name")), "shell");
    /* with zsh, the texts that name the shell name zsh */
    assert_string_equal(json_string_value(json_object_get(t, "description")),
                        zsh() ? "Runs a shell command with zsh and returns its output. You MUST "
                                "provide the workdir as an absolute path."
                              : "Runs a shell command and returns its output. You MUST provide "
                                "the workdir as an absolute path.");
    /* the reference's input schema (codex-exec-mcp-server 0.97.0's tools/list
     * without "$schema" and its type's name "title") and Codex's arguments
     * for leaving the sandbox, no more and no less */
    char *schema = NULL;
    assert_true(
        asprintf(
            &schema,
            "{\"type\":\"object\",\"properties\":{"
            "\"command\":{\"description\":\"The %s string to execute.\",\"type\":\"string\"},"
            "\"workdir\":{\"description\":\"The working directory to execute the command in. Must "
            "be an absolute path.\",\"type\":\"string\"},"
            "\"timeout_ms\":{\"description\":\"The timeout for the command in milliseconds.\","
            "\"type\":\"integer\",\"format\":\"uint64\",\"minimum\":0,\"nullable\":true},"
            "\"login\":{\"description\":\"Launch %s with -lc instead of -c: defaults to true.\","
            "\"type\":\"boolean\",\"nullable\":true},"
            "\"sandbox_permissions\":{\"description\":\"require_escalated asks the user to let "
            "the command run outside the sandbox, with the user's access to files and the network "
            "(the exec rules still apply); only when the sandbox stops a command that must run. "
            "Defaults to use_default.\",\"type\":\"string\","
            "\"enum\":[\"use_default\",\"require_escalated\"],\"nullable\":true},"
            "\"with_escalated_permissions\":{\"description\":\"true is the older form of "
            "sandbox_permissions require_escalated.\",\"type\":\"boolean\",\"nullable\":true},"
            "\"justification\":{\"description\":\"With require_escalated: one sentence telling "
            "the user why the command must run outside the sandbox, shown when they are asked.\","
            "\"type\":\"string\",\"nullable\":true}},"
            "\"required\":[\"command\",\"workdir\"]}",
            zsh() ? "zsh" : "bash", zsh() ? "zsh" : "Bash") > 0);
    json_t *want = json_loads(schema, 0, NULL);
    free(schema);
    assert_non_null(want);
    if (!json_equal(json_object_get(t, "inputSchema"), want)) {
        char *got = json_dumps(json_object_get(t, "inputSchema"), JSON_COMPACT);
        fail_msg("inputSchema %s", got);
    }
    json_decref(want);
    /* a title and annotations: a command may change anything it can
     * reach, twice the same is not the same, and it talks to the world */
    assert_string_equal(json_string_value(json_object_get(t, "title")), "Shell command");
    want = json_pack("{s:s, s:b, s:b, s:b, s:b}", "title", "Shell command", "readOnlyHint", 0,
                     "destructiveHint", 1, "idempotentHint", 0, "openWorldHint", 1);
    assert_true(json_equal(json_object_get(t, "annotations"), want));
    json_decref(want);
    const json_t *out = json_object_get(t, "outputSchema");
    assert_non_null(json_object_get(json_object_get(out, "properties"), "timed_out"));
    json_decref(a);
    finish(c);
}

/* As the schema says: null timeout_ms and login are the defaults, and an
 * argument the schema does not name is ignored (as the reference does). */
static void
test_arguments_null_and_unknown(void **state)
{
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    char *command = NULL;
    assert_true(asprintf(&command, "echo \"$0\"; %s", login_check()) > 0);
    /* with_escalated_permissions: the policy is full access already, so
     * nobody is asked (the client could not be) */
    json_t *args = json_pack("{s:s, s:s, s:n, s:n, s:s, s:b, s:s}", "command", command, "workdir",
                             "/", "timeout_ms", "login", "justification", "because",
                             "with_escalated_permissions", 1, "a_future_argument", "x");
    free(command);
    json_t *a = mcp_client_call(c, "tools/call",
                                json_pack("{s:s, s:o}", "name", "shell", "arguments", args));
    const json_t *result = json_object_get(a, "result");
    if (!result)
        fail_msg("not a result: %s", json_dumps(a, JSON_COMPACT));
    assert_true(json_is_false(json_object_get(result, "isError")));
    const char *out =
        json_string_value(json_object_get(json_object_get(result, "structuredContent"), "output"));
    assert_non_null(strstr(out, "login\n")); /* login: null is true */
    json_decref(a);
    finish(c);
}

static void
run_cli(const char *arg, const char *arg2, int want_status, const char *want_out,
        const char *want_err)
{
    const char *argv[] = {server_path, arg, arg2, NULL};
    struct proc_result r;
    assert_int_equal(proc_run(argv, NULL, &r), 0);
    assert_int_equal(proc_exit_code(&r), want_status);
    if (want_out && !strstr(r.out, want_out))
        fail_msg("stdout '%s' lacks '%s'", r.out, want_out);
    if (want_err && !strstr(r.err, want_err))
        fail_msg("stderr '%s' lacks '%s'", r.err, want_err);
    if (want_status != 0)
        assert_int_equal(r.out_len, 0); /* stdout is the protocol's */
    proc_result_free(&r);
}

static void
test_command_line(void **state)
{
    run_cli("-V", NULL, 0, "execgate ", NULL);
    run_cli("--version", NULL, 0, "execgate ", NULL);
    run_cli("--help", NULL, 0, "--sandbox-helper", NULL);
    run_cli("-h", NULL, 0, "--max-output-bytes", NULL);
}

/* argv (after the server's path; NULL-terminated) refused at start: exit
 * 2, nothing on stdout, and exactly the line want_err on stderr. */
static void
golden(const char *const *args, const char *const *env, const char *want_err)
{
    const char *argv[16] = {server_path};
    size_t n = 1;
    while (args[n - 1] && n < 15) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    struct proc_options opts = {.envp = env};
    struct proc_result r;
    assert_int_equal(proc_run(argv, &opts, &r), 0);
    if (proc_exit_code(&r) != 2 || strcmp(r.err, want_err) != 0 || r.out_len != 0)
        fail_msg("%s ...: exit %d, stderr '%s', want exit 2, stderr '%s'", argv[1],
                 proc_exit_code(&r), r.err, want_err);
    proc_result_free(&r);
}

#define GOLDEN(want, ...) golden((const char *const[]){__VA_ARGS__, NULL}, NULL, want)

/* Every message the server prints about its options, as printed. */
static void
test_option_errors(void **state)
{
    GOLDEN("execgate: --rules: needs an argument\n", "--rules");
    GOLDEN("execgate: --bash: needs an argument\n", "--bash");
    GOLDEN("execgate: -b: needs an argument\n", "-b");
    GOLDEN("execgate: -e: needs an argument\n", "--log-level", "warn", "-e");
    GOLDEN("execgate: --no-such-flag: unknown option (see --help)\n", "--no-such-flag");
    GOLDEN("execgate: --no-such-flag: unknown option (see --help)\n", "--no-such-flag=1");
    GOLDEN("execgate: -x: unknown option (see --help)\n", "-x");
    GOLDEN("execgate: --help: takes no argument\n", "--help=me");
    GOLDEN("execgate: --doctor: takes no argument\n", "--doctor=now");
    GOLDEN("execgate: --max-m: ambiguous: --max-memory, --max-message-bytes (see --help)\n",
           "--max-m", "1");
    GOLDEN("execgate: stray: unexpected argument: execgate takes options only (see --help)\n",
           "stray");
    GOLDEN("execgate: --max-calls: '0' is not a number from 1 to 4096\n", "--max-calls", "0");
    GOLDEN("execgate: --max-calls: 'many' is not a number from 1 to 4096\n", "--max-calls", "many");
    GOLDEN("execgate: --default-timeout-ms: '-5' is not a number from 1 to "
           "86400000\n",
           "--default-timeout-ms", "-5");
    GOLDEN("execgate: --max-output-bytes: '10' is not a number from 64 to "
           "4611686018427387903\n",
           "--max-output-bytes", "10");
    GOLDEN("execgate: --max-message-bytes: '1k' is not a number from 1024 to "
           "4611686018427387903\n",
           "--max-message-bytes", "1k");
    GOLDEN("execgate: --max-pending-output: '1' is not a number from 1024 to "
           "4611686018427387903\n",
           "--max-pending-output", "1");
    GOLDEN("execgate: --max-processes: 'x' is not a number from 0 to 4194304\n", "--max-processes",
           "x");
    GOLDEN("execgate: --max-memory: '2G' is not a number from 0 to 9007199254740992\n",
           "--max-memory", "2G");
    GOLDEN("execgate: --max-ask-ms: '1.5' is not a number from 0 to 9007199254740992\n",
           "--max-ask-ms", "1.5");
    GOLDEN("execgate: --kill-grace-ms: '3600001' is not a number from 0 to 3600000\n",
           "--kill-grace-ms", "3600001");
    GOLDEN("execgate: --log-level: expected error, warn, info or debug, got 'loud'\n",
           "--log-level", "loud");
    GOLDEN("execgate: --log-format: expected text or json, got 'xml'\n", "--log-format", "xml");
    GOLDEN("execgate: --exec-enforcement: expected tree or shell, got 'all'\n",
           "--exec-enforcement", "all");
    GOLDEN("execgate: --pass-env: 'LD_PRELOAD' is on the drop list of loader, shell and "
           "interpreter hooks (docs/escalation.md)\n",
           "--pass-env", "LD_PRELOAD");
    GOLDEN("execgate: --sandbox: not a JSON object: '[' or '{' expected near 'not'\n", "--sandbox",
           "not json");
    GOLDEN("execgate: --sandbox: sandboxCwd must be an absolute path\n", "--sandbox",
           "{\"sandboxPolicy\":{\"type\":\"read-only\"},\"sandboxCwd\":\"rel\"}");
    /* refused once the options are read, as the server starts: the same form */
    GOLDEN("execgate: --sandbox: sandbox policy: unknown type \"no-such\" (expected "
           "danger-full-access, read-only, workspace-write or external-sandbox)\n",
           "--sandbox", "{\"type\":\"no-such\"}");
    GOLDEN("execgate: --audit-log: /nonexistent/audit.log: No such file or directory\n",
           "--audit-log", "/nonexistent/audit.log");
    GOLDEN("execgate: /nonexistent/x.rules:1:1: cannot open: No such file or directory\n",
           "--rules", "/nonexistent/x.rules");
    /* the programs it runs */
    GOLDEN("execgate: --bash: /nonexistent/bash: No such file or directory\n", "--bash",
           "/nonexistent/bash");
    GOLDEN("execgate: --bash: /: is a directory, not a program\n", "--bash", "/");
    GOLDEN("execgate: --sandbox-helper: /etc/passwd: is not executable\n", "--sandbox-helper",
           "/etc/passwd");
    GOLDEN("execgate: --execve: /dev/null: is not a regular file\n", "--execve", "/dev/null");
    const char *env[] = {"CODEX_BASH_PATH=/nonexistent/patched-bash", NULL};
    golden((const char *const[]){NULL}, env,
           "execgate: CODEX_BASH_PATH: /nonexistent/patched-bash: No such file or directory\n");
}

/* execgate --doctor ARGS... with the environment plus extra (NULL or one
 * NAME=VALUE) and HOME an empty directory; returns its stdout (caller
 * frees) and its exit code in *code.  Nothing goes to stderr. */
static char *
doctor(const char *extra, int *code, const char *const *args)
{
    char *home = tmpdir_new("doctor-home");
    char *home_env = NULL;
    assert_true(asprintf(&home_env, "HOME=%s", home) > 0);
    size_t n = 0;
    while (environ[n])
        n++;
    const char **env = calloc(n + 3, sizeof(char *));
    assert_non_null(env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "HOME=", 5) != 0 && strncmp(environ[i], "CODEX_HOME=", 11) != 0)
            env[k++] = environ[i];
    }
    env[k++] = home_env;
    if (extra)
        env[k++] = extra;
    const char *argv[16] = {server_path, "--doctor"};
    size_t a = 2;
    for (size_t i = 0; args && args[i] && a < 15; i++)
        argv[a++] = args[i];
    struct proc_options opts = {.envp = env};
    struct proc_result r;
    assert_int_equal(proc_run(argv, &opts, &r), 0);
    *code = proc_exit_code(&r);
    if (r.err_len)
        fail_msg("--doctor wrote to stderr: %s", r.err);
    char *out = strdup(r.out);
    proc_result_free(&r);
    free(env);
    free(home_env);
    tmpdir_remove(home);
    free(home);
    return out;
}

static void
assert_says(const char *out, const char *want)
{
    if (!strstr(out, want))
        fail_msg("--doctor does not say '%s':\n%s", want, out);
}

/* execgate --doctor: exit 0 only when nothing is missing, and each missing
 * part named (forced with the knobs the helper and the probes honour). */
static void
test_doctor(void **state)
{
    int code = -1;
    char *out = doctor(NULL, &code, NULL);
    /* this machine: everything there (or each missing part named) */
    assert_int_equal(code, strstr(out, "MISSING") ? 1 : 0);
    assert_says(out, "  ok       sandbox helper: ");
    assert_says(out, "  ok       exec wrapper: ");
    assert_says(out, "  ok       shell (the patched Bash): ");
    assert_says(out, "no rules (");
    if (!strstr(out, "MISSING  Landlock:"))
        assert_says(out, "  ok       Landlock ABI ");
    if (code == 0)
        assert_says(out, "everything is in place");
    free(out);

    out = doctor("EXECGATE_SANDBOX_MAX_ABI=0", &code, NULL);
    assert_int_equal(code, 1);
    assert_says(out, "  MISSING  Landlock: the kernel has none, or it is disabled: read-only and "
                     "workspace-write commands are refused");
    assert_says(out, "  MISSING  starting policy (read-only network=off): the sandbox cannot be "
                     "set up: every call under it is an error: execgate-sandbox: landlock: ");
    free(out);

    out = doctor("EXECGATE_SANDBOX_MAX_ABI=5", &code, NULL);
    assert_int_equal(code, 1);
    assert_says(out, "  MISSING  Landlock ABI 6 (scoping)");
    free(out);

    out = doctor("EXECGATE_SANDBOX_NO_NAMESPACES=1", &code, NULL);
    assert_int_equal(code, 1);
    assert_says(out,
                "  MISSING  mount namespace: read-only and workspace-write commands are refused");
    assert_says(out, "  MISSING  PID namespace: read-only and workspace-write commands are "
                     "refused");
    free(out);

    out = doctor("EXECGATE_TEST_NO_USER_NOTIF=1", &code, NULL);
    assert_int_equal(code, 1);
    assert_says(out, "  MISSING  seccomp user notification (EXECGATE_TEST_NO_USER_NOTIF=1 "
                     "(test)): the server falls back to --exec-enforcement=shell");
    free(out);
    out = doctor("EXECGATE_TEST_NO_USER_NOTIF=1", &code,
                 (const char *const[]){"--exec-enforcement=shell", NULL});
    assert_says(out, "not used: --exec-enforcement=shell");
    free(out);

    out = doctor("EXECGATE_TEST_NO_CGROUP=1", &code, NULL);
    assert_int_equal(code, 1);
    assert_says(out, "  MISSING  cgroups: unavailable: EXECGATE_TEST_NO_CGROUP=1");
    free(out);

    /* the rules, file by file; a bad one is what would stop the start */
    char *dir = tmpdir_new("doctor-rules");
    char *a = tmpdir_path(dir, "a.rules");
    char *b = tmpdir_path(dir, "b.rules");
    tmpdir_write_file(a,
                      "prefix_rule(pattern=[\"git\", \"push\"], decision=\"prompt\")\n"
                      "prefix_rule(pattern=[[\"ls\", \"cat\"]], decision=\"allow\")\n",
                      0644);
    tmpdir_write_file(b, "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n", 0644);
    out = doctor(NULL, &code, (const char *const[]){"--rules", dir, NULL});
    char *want = NULL;
    assert_true(asprintf(&want,
                         "  ok       4 prefix rule(s) from 2 file(s):\n             %s (3)\n"
                         "             %s (1)\n",
                         a, b) > 0);
    assert_says(out, want);
    free(want);
    free(out);
    tmpdir_write_file(b, "prefix_rule(pattern=[\"rm\"], decision=\"maybe\")\n", 0644);
    out = doctor(NULL, &code, (const char *const[]){"--rules", dir, NULL});
    assert_int_equal(code, 1);
    assert_true(asprintf(&want,
                         "  MISSING  %s:1:1: invalid decision: maybe (want allow, prompt or "
                         "forbidden): the server would not start (exit 2)\n",
                         b) > 0);
    assert_says(out, want);
    free(want);
    free(out);

    /* a Bash that cannot run stops a server's start, not the doctor */
    out = doctor(NULL, &code, (const char *const[]){"--bash", "/nonexistent/bash", NULL});
    assert_int_equal(code, 1);
    assert_says(out, "  MISSING  shell (the patched Bash): /nonexistent/bash: No such file or "
                     "directory\n");
    assert_says(out, "execgate-sandbox ran `true`");
    assert_says(out, "  ok       seccomp filter\n");
    free(out);
    /* nor one the starting policy cannot read */
    char *bash = tmpdir_path(dir, "bash");
    tmpdir_write_file(bash, "#!/bin/bash\nexec /bin/bash \"$@\"\n", 0755);
    char *inner = tmpdir_path(dir, "inner");
    tmpdir_make_dir(dir, "inner");
    char *policy = NULL;
    assert_true(asprintf(&policy,
                         "{\"sandboxPolicy\":{\"type\":\"read-only\",\"access\":{\"type\":"
                         "\"restricted\",\"readable_roots\":[]}},\"sandboxCwd\":\"%s\"}",
                         inner) > 0);
    out = doctor(NULL, &code, (const char *const[]){"--bash", bash, "--sandbox", policy, NULL});
    assert_int_equal(code, 1);
    assert_true(asprintf(&want,
                         ": the shell cannot be started: every call under it is an error: "
                         "execgate-sandbox: %s: Permission denied\n",
                         bash) > 0);
    assert_says(out, want);
    assert_says(out, "  ok       workspace-write, network off (as Codex sends it): the shell "
                     "starts\n");
    free(want);
    free(out);
    free(policy);
    free(inner);
    free(bash);
    free(a);
    free(b);
    tmpdir_remove(dir);
    free(dir);
}

/* A copy of the server alone in a directory finds nothing next to it. */
static void
test_programs_not_found(void **state)
{
    char *dir = tmpdir_new("alone");
    char *copy = tmpdir_path(dir, "execgate");
    FILE *in = fopen(server_path, "rb");
    FILE *out = fopen(copy, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
    assert_int_equal(chmod(copy, 0755), 0);
    const char *saved = server_path;
    server_path = copy;
    const char *env[] = {NULL};
    golden((const char *const[]){NULL}, env,
           "execgate: cannot find the patched Bash next to the server: name it with --bash or "
           "CODEX_BASH_PATH\n");
    golden((const char *const[]){"--bash", "/bin/sh", NULL}, env,
           "execgate: cannot find execgate-sandbox next to the server: name it with "
           "--sandbox-helper\n");
    golden((const char *const[]){"--bash", "/bin/sh", "--sandbox-helper", "/bin/sh", NULL}, env,
           "execgate: cannot find execgate-wrapper next to the server: name it with --execve\n");
    server_path = saved;
    tmpdir_remove(dir);
    free(copy);
    free(dir);
}

static void
test_codex_bash_path(void **state)
{
    /* CODEX_BASH_PATH names the Bash (a missing one: test_option_errors);
     * --bash wins over it */
    const char *env[] = {"CODEX_BASH_PATH=/bin/sh", NULL};
    const char *argv[] = {server_path, "--sandbox", FULL_ACCESS, NULL};
    struct mcp_client *c = mcp_client_start(argv, env);
    json_decref(mcp_client_initialize(c));
    json_t *a = call_shell(c, "echo \"${BASH_VERSION:-not bash}\"", "/");
    assert_string_equal(result_output(a), "not bash\n");
    json_decref(a);
    finish(c);
    const char *argv2[] = {server_path, "--sandbox", FULL_ACCESS, "--bash", "/bin/bash", NULL};
    c = mcp_client_start(argv2, env);
    json_decref(mcp_client_initialize(c));
    a = call_shell(c, "echo ran", "/");
    assert_string_equal(result_output(a), "ran\n");
    json_decref(a);
    finish(c);
}

/* ---- errors ---- */

static json_t *
raw_answer(struct mcp_client *c, const char *line)
{
    mcp_client_send_raw(c, line, strlen(line));
    json_t *a = mcp_client_next(c, MCP_CLIENT_WAIT_MS);
    assert_non_null(a);
    return a;
}

static void
expect_raw_error(struct mcp_client *c, const char *line, int code, bool id_null)
{
    json_t *a = raw_answer(c, line);
    assert_int_equal(error_code(a), code);
    if (id_null)
        assert_true(json_is_null(json_object_get(a, "id")));
    json_decref(a);
}

static void
test_protocol_errors(void **state)
{
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    expect_raw_error(c, "this is not json\n", -32700, true);
    expect_raw_error(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"\n", -32700, true);
    /* invalid UTF-8 inside a string */
    expect_raw_error(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\xfeng\"}\n", -32700,
                     true);
    expect_raw_error(c, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n", -32600, true);
    expect_raw_error(c, "42\n", -32600, true);
    expect_raw_error(c, "{\"id\":7,\"method\":\"ping\"}\n", -32600, false);
    expect_raw_error(c, "{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}\n", -32600, false);
    expect_raw_error(c, "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}\n", -32600,
                     true);
    expect_raw_error(c, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":7}\n", -32600, false);
    json_t *a = raw_answer(c, "{\"jsonrpc\":\"2.0\",\"id\":\"s-9\",\"method\":\"no/such\"}\n");
    assert_int_equal(error_code(a), -32601);
    assert_string_equal(json_string_value(json_object_get(a, "id")), "s-9");
    json_decref(a);
    expect_raw_error(c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":3}\n", -32602,
                     false);
    /* CRLF line endings and blank lines are fine */
    a = raw_answer(c, "\n  \r\n{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}\r\n");
    assert_int_equal(json_integer_value(json_object_get(a, "id")), 10);
    assert_non_null(json_object_get(a, "result"));
    json_decref(a);
    finish(c);
}

static void
expect_call_error(struct mcp_client *c, json_t *params, int code, const char *needle)
{
    json_t *a = mcp_client_call(c, "tools/call", params);
    assert_int_equal(error_code(a), code);
    if (!strstr(error_message(a), needle))
        fail_msg("'%s' does not name '%s'", error_message(a), needle);
    json_decref(a);
}

static void
test_invalid_params(void **state)
{
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    expect_call_error(c, json_pack("{s:s, s:{s:s}}", "name", "shell", "arguments", "workdir", "/"),
                      -32602, "command");
    expect_call_error(c, json_pack("{s:s, s:{s:s}}", "name", "shell", "arguments", "command", "x"),
                      -32602, "workdir");
    expect_call_error(c,
                      json_pack("{s:s, s:{s:s, s:s}}", "name", "shell", "arguments", "command", "x",
                                "workdir", "relative/dir"),
                      -32602, "relative/dir");
    expect_call_error(c,
                      json_pack("{s:s, s:{s:s, s:s}}", "name", "shell", "arguments", "command", "x",
                                "workdir", "/no/such/dir/anywhere"),
                      -32602, "/no/such/dir/anywhere");
    expect_call_error(c,
                      json_pack("{s:s, s:{s:s, s:s, s:i}}", "name", "shell", "arguments", "command",
                                "x", "workdir", "/", "timeout_ms", -5),
                      -32602, "timeout_ms");
    expect_call_error(c,
                      json_pack("{s:s, s:{s:s, s:s, s:f}}", "name", "shell", "arguments", "command",
                                "x", "workdir", "/", "timeout_ms", 1e300),
                      -32602, "timeout_ms");
    expect_call_error(c,
                      json_pack("{s:s, s:{s:s, s:s, s:f}}", "name", "shell", "arguments", "command",
                                "x", "workdir", "/", "timeout_ms", 2.5),
                      -32602, "timeout_ms");
    expect_call_error(c,
                      json_pack("{s:s, s:{s:s, s:s, s:s}}", "name", "shell", "arguments", "command",
                                "x", "workdir", "/", "login", "yes"),
                      -32602, "login");
    expect_call_error(c, json_pack("{s:s, s:{}}", "name", "python", "arguments"), -32602, "python");
    expect_call_error(c, json_pack("{s:s}", "name", "shell"), -32602, "arguments");

    json_t *a = mcp_client_call(c, "codex/sandbox-state/update", json_object());
    assert_int_equal(error_code(a), -32602);
    assert_non_null(strstr(error_message(a), "sandboxPolicy"));
    json_decref(a);
    a = mcp_client_call(c, "codex/sandbox-state/update",
                        json_pack("{s:{s:s}}", "sandboxPolicy", "type", "no-such-type"));
    assert_int_equal(error_code(a), -32602);
    assert_non_null(strstr(error_message(a), "no-such-type"));
    json_decref(a);
    a = mcp_client_call(c, "codex/sandbox-state/update",
                        json_pack("{s:{s:s}, s:s}", "sandboxPolicy", "type", "read-only",
                                  "sandboxCwd", "not/absolute"));
    assert_int_equal(error_code(a), -32602);
    assert_non_null(strstr(error_message(a), "sandboxCwd"));
    json_decref(a);
    /* unknown fields are accepted */
    a = mcp_client_call(c, "codex/sandbox-state/update",
                        json_pack("{s:{s:s}, s:s, s:n, s:b, s:{}}", "sandboxPolicy", "type",
                                  "danger-full-access", "sandboxCwd", "/tmp",
                                  "codexLinuxSandboxExe", "useLegacyLandlock", 0,
                                  "permissionProfile"));
    assert_true(json_is_object(json_object_get(a, "result")));
    assert_int_equal(json_object_size(json_object_get(a, "result")), 0);
    json_decref(a);
    finish(c);
}

static void
test_oversized_message(void **state)
{
    struct mcp_client *c =
        start_initialized("--sandbox", FULL_ACCESS, "--max-message-bytes", "2048", NULL);
    size_t n = 100000;
    char *big = malloc(n + 64);
    int head = snprintf(big, 64, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"");
    memset(big + head, 'a', n);
    strcpy(big + head + n, "\"}\n");
    mcp_client_send_raw(c, big, strlen(big));
    free(big);
    json_t *a = mcp_client_next(c, MCP_CLIENT_WAIT_MS);
    assert_int_equal(error_code(a), -32600);
    assert_non_null(strstr(error_message(a), "2048"));
    json_decref(a);
    /* the stream is back in step: the next message is answered */
    a = mcp_client_call(c, "ping", NULL);
    assert_non_null(json_object_get(a, "result"));
    json_decref(a);
    finish(c);
}

/* ---- calls ---- */

static void
test_call_result(void **state)
{
    char *wd = tmpdir_new("server-call");
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    json_t *a = call_shell(c, "echo out; echo err >&2; echo out2; pwd; exit 3", wd);
    const json_t *r = shell_result(a);
    char *expect = NULL;
    assert_true(asprintf(&expect, "out\nerr\nout2\n%s\n", wd) > 0);
    assert_string_equal(json_string_value(json_object_get(r, "output")), expect);
    free(expect);
    assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 3);
    assert_true(json_is_false(json_object_get(r, "timed_out")));
    assert_true(json_is_integer(json_object_get(json_object_get(r, "duration"), "nanos")));
    assert_true(json_is_false(json_object_get(json_object_get(a, "result"), "isError")));
    json_decref(a);

    /* bytes that are not UTF-8 arrive replaced, not lost or refused */
    a = call_shell(c, "printf 'a\\377b'", wd);
    assert_string_equal(result_output(a), "a\xEF\xBF\xBD"
                                          "b");
    json_decref(a);

    /* login defaults to true: -lc */
    a = mcp_client_call(c, "tools/call",
                        json_pack("{s:s, s:{s:s, s:s}}", "name", "shell", "arguments", "command",
                                  login_check(), "workdir", wd));
    assert_string_equal(result_output(a), "login\n");
    json_decref(a);
    char *plain = NULL;
    assert_true(asprintf(&plain, "%s || echo plain", login_check()) > 0);
    a = call_shell(c, plain, wd);
    free(plain);
    assert_string_equal(result_output(a), "plain\n");
    json_decref(a);
    finish(c);
    tmpdir_remove(wd);
    free(wd);
}

static void
test_concurrent_calls(void **state)
{
    enum { N = 64 };
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    long long ids[N];
    for (int i = 0; i < N; i++) {
        char cmd[128];
        /* the later ones finish first: answers arrive out of order */
        snprintf(cmd, sizeof(cmd), "sleep 0.%02d; echo call-%d", (N - i) % 100, i);
        ids[i] = mcp_client_send_request(c, "tools/call", shell_args(cmd, "/"));
    }
    for (int i = 0; i < N; i++) {
        json_t *id = json_integer(ids[i]);
        json_t *a = mcp_client_response(c, id, MCP_CLIENT_WAIT_MS);
        json_decref(id);
        assert_non_null(a);
        char want[32];
        snprintf(want, sizeof(want), "call-%d\n", i);
        assert_string_equal(result_output(a), want);
        json_decref(a);
    }
    finish(c);
}

static void
test_more_calls_than_slots_wait_in_order(void **state)
{
    char *wd = tmpdir_new("server-slots");
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, "--max-calls", "2", NULL);
    enum { N = 8 };
    long long ids[N];
    for (int i = 0; i < N; i++) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "echo %d >> order; sleep 0.05", i);
        ids[i] = mcp_client_send_request(c, "tools/call", shell_args(cmd, wd));
    }
    for (int i = 0; i < N; i++) {
        json_t *id = json_integer(ids[i]);
        json_t *a = mcp_client_response(c, id, MCP_CLIENT_WAIT_MS);
        json_decref(id);
        assert_int_equal(result_exit(a), 0);
        json_decref(a);
    }
    char *path = tmpdir_path(wd, "order");
    char *order = tmpdir_read_file(path, NULL);
    /* with two slots, call k starts before call k+2: no later call
     * overtakes a waiting one by more than the slots allow */
    int seen[N];
    int n = 0;
    for (char *p = order; *p && n < N; n++)
        seen[n] = (int)strtol(p, &p, 10);
    assert_int_equal(n, N);
    for (int k = 0; k < N; k++) {
        for (int j = 0; j < N; j++) {
            if (seen[j] == k)
                assert_true(j <= k + 1 && j >= k - 1);
        }
    }
    free(order);
    free(path);
    finish(c);
    tmpdir_remove(wd);
    free(wd);
}

static void
test_update_then_call(void **state)
{
    char *wd = tmpdir_new("server-update");
    struct mcp_client *c = start_initialized(NULL);
    for (int i = 0; i < 100; i++) {
        bool open = i % 2 == 0;
        json_t *policy = open ? json_pack("{s:s}", "type", "danger-full-access")
                              : json_pack("{s:s}", "type", "read-only");
        /* pipelined: the call is sent before the update's answer is read */
        long long up = mcp_client_send_request(c, "codex/sandbox-state/update",
                                               json_pack("{s:o, s:s, s:n}", "sandboxPolicy", policy,
                                                         "sandboxCwd", wd, "codexLinuxSandboxExe"));
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "echo %d > f%d && echo wrote", i, i);
        long long call = mcp_client_send_request(c, "tools/call", shell_args(cmd, wd));
        json_t *id = json_integer(up);
        json_t *a = mcp_client_response(c, id, MCP_CLIENT_WAIT_MS);
        assert_non_null(json_object_get(a, "result"));
        json_decref(a);
        json_decref(id);
        id = json_integer(call);
        a = mcp_client_response(c, id, MCP_CLIENT_WAIT_MS);
        json_decref(id);
        const char *out = result_output(a);
        if (open)
            assert_string_equal(out, "wrote\n");
        else
            assert_null(strstr(out, "wrote"));
        json_decref(a);
    }
    finish(c);
    tmpdir_remove(wd);
    free(wd);
}

static void
test_timeout_keeps_partial_output(void **state)
{
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    json_t *a =
        mcp_client_call(c, "tools/call",
                        json_pack("{s:s, s:{s:s, s:s, s:i, s:b}}", "name", "shell", "arguments",
                                  "command", "echo start; sleep 61.25; echo never", "workdir", "/",
                                  "timeout_ms", 1500, "login", 0));
    const json_t *r = shell_result(a);
    assert_true(json_is_true(json_object_get(r, "timed_out")));
    assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 124);
    assert_string_equal(json_string_value(json_object_get(r, "output")), "start\n");
    assert_true(json_is_false(json_object_get(json_object_get(a, "result"), "isError")));
    json_decref(a);
    assert_true(proc_gone("61.25", 10000));
    finish(c);
}

static void
test_default_timeout_option(void **state)
{
    struct mcp_client *c =
        start_initialized("--sandbox", FULL_ACCESS, "--default-timeout-ms", "200", NULL);
    json_t *a = call_shell(c, "sleep 62.5", "/");
    assert_true(json_is_true(json_object_get(shell_result(a), "timed_out")));
    json_decref(a);
    finish(c);
}

static void
test_cancel(void **state)
{
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    json_t *params = shell_args("echo begin; sleep 63.75 & sleep 63.75; echo end", "/");
    json_object_set_new(params, "_meta", json_pack("{s:s}", "progressToken", "tok-1"));
    long long id = mcp_client_send_request(c, "tools/call", params);
    /* progress tells us it runs */
    json_t *p = mcp_client_notification(c, "notifications/progress", MCP_CLIENT_WAIT_MS);
    assert_non_null(p);
    const json_t *pp = json_object_get(p, "params");
    assert_string_equal(json_string_value(json_object_get(pp, "progressToken")), "tok-1");
    assert_string_equal(json_string_value(json_object_get(pp, "message")), "begin");
    json_decref(p);
    assert_true(process_appears("63.75"));
    mcp_client_send(c, json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method",
                                 "notifications/cancelled", "params", "requestId", (json_int_t)id,
                                 "reason", "test"));
    /* the whole tree goes, and no answer comes for the call */
    assert_true(proc_gone("63.75", 10000));
    json_t *a = call_shell(c, "echo after", "/");
    assert_string_equal(result_output(a), "after\n");
    json_decref(a);
    json_t *jid = json_integer(id);
    a = mcp_client_response(c, jid, 300);
    assert_null(a);
    json_decref(jid);
    finish(c);
}

static void
test_cancel_waiting_call(void **state)
{
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, "--max-calls", "1", NULL);
    long long first = mcp_client_send_request(c, "tools/call", shell_args("sleep 66.125", "/"));
    long long second =
        mcp_client_send_request(c, "tools/call", shell_args("echo second-ran > /dev/null", "/"));
    assert_true(process_appears("66.125"));
    /* the waiting one first, then the running one */
    long long ids[2] = {second, first};
    for (int i = 0; i < 2; i++)
        mcp_client_send(c, json_pack("{s:s, s:s, s:{s:I}}", "jsonrpc", "2.0", "method",
                                     "notifications/cancelled", "params", "requestId",
                                     (json_int_t)ids[i]));
    assert_true(proc_gone("66.125", 10000));
    /* the slot is free again, and neither cancelled call was answered */
    json_t *a = call_shell(c, "echo next", "/");
    assert_string_equal(result_output(a), "next\n");
    json_decref(a);
    for (int i = 0; i < 2; i++) {
        json_t *jid = json_integer(ids[i]);
        assert_null(mcp_client_response(c, jid, 200));
        json_decref(jid);
    }
    finish(c);
}

static void
test_progress(void **state)
{
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    json_t *params = shell_args("echo one; sleep 0.6; printf 'two\\n'; sleep 0.6; echo", "/");
    json_object_set_new(params, "_meta", json_pack("{s:i}", "progressToken", 77));
    long long id = mcp_client_send_request(c, "tools/call", params);
    json_t *jid = json_integer(id);
    json_t *a = mcp_client_response(c, jid, MCP_CLIENT_WAIT_MS);
    json_decref(jid);
    assert_string_equal(result_output(a), "one\ntwo\n\n");
    json_decref(a);
    /* both lines were reported, in order, with a rising progress value */
    json_t *p1 = mcp_client_notification(c, "notifications/progress", 0);
    json_t *p2 = mcp_client_notification(c, "notifications/progress", 0);
    assert_non_null(p1);
    assert_non_null(p2);
    const json_t *a1 = json_object_get(p1, "params"), *a2 = json_object_get(p2, "params");
    assert_int_equal(json_integer_value(json_object_get(a1, "progressToken")), 77);
    assert_string_equal(json_string_value(json_object_get(a1, "message")), "one");
    assert_string_equal(json_string_value(json_object_get(a2, "message")), "two");
    assert_true(json_number_value(json_object_get(a2, "progress")) >
                json_number_value(json_object_get(a1, "progress")));
    json_decref(p1);
    json_decref(p2);
    /* a call without a token gets none */
    a = call_shell(c, "echo x; sleep 0.5; echo y", "/");
    json_decref(a);
    assert_null(mcp_client_notification(c, "notifications/progress", 0));
    finish(c);
}

static void
test_output_cap(void **state)
{
    struct mcp_client *c =
        start_initialized("--sandbox", FULL_ACCESS, "--max-output-bytes", "1000", NULL);
    /* 200000 bytes: 'h' x 600, then 'm' x 199000, then 'TAIL' x 100 */
    json_t *a = call_shell(c,
                           "head -c 600 /dev/zero | tr '\\0' h; head -c 199000 /dev/zero | "
                           "tr '\\0' m; for i in $(seq 100); do printf TAIL; done",
                           "/");
    const char *out = result_output(a);
    const char *marker = "\n[execgate: 199000 bytes of output omitted]\n";
    const char *m = strstr(out, marker);
    assert_non_null(m);
    assert_int_equal(m - out, 500);
    for (int i = 0; i < 500; i++)
        assert_int_equal(out[i], 'h');
    const char *tail = m + strlen(marker);
    assert_int_equal(strlen(tail), 500);
    assert_int_equal(tail[0], 'm'); /* the newest 500 bytes: 100 m, then TAIL */
    assert_non_null(strstr(tail, "mmmTAILTAIL"));
    assert_string_equal(tail + 500 - 8, "TAILTAIL");
    json_decref(a);
    /* many small writes through the ring: the tail is exactly the newest
     * 500 bytes, the count exact */
    a = call_shell(c, "for i in $(seq 1 20000); do echo $i; done", "/");
    out = result_output(a);
    size_t total = 0;
    char *all = NULL;
    size_t all_len = 0;
    FILE *mem = open_memstream(&all, &all_len);
    for (int i = 1; i <= 20000; i++)
        fprintf(mem, "%d\n", i);
    fclose(mem);
    total = all_len;
    char *want_marker = NULL;
    assert_true(
        asprintf(&want_marker, "\n[execgate: %zu bytes of output omitted]\n", total - 1000) > 0);
    m = strstr(out, want_marker);
    assert_non_null(m);
    assert_int_equal(m - out, 500);
    assert_memory_equal(out, all, 500);
    assert_string_equal(m + strlen(want_marker), all + total - 500);
    free(want_marker);
    free(all);
    json_decref(a);
    /* under the cap: all of it, no marker */
    a = call_shell(c, "head -c 999 /dev/zero | tr '\\0' q", "/");
    assert_int_equal(strlen(result_output(a)), 999);
    json_decref(a);
    finish(c);
}

/* What was kept of total bytes whose first and last half bytes are given:
 * both, and the marker with the count between. */
static void
expect_head_and_tail(const char *out, const char *head, const char *tail, size_t half, size_t total)
{
    char *marker = NULL;
    assert_true(asprintf(&marker, "\n[execgate: %zu bytes of output omitted]\n", total - 2 * half) >
                0);
    assert_memory_equal(out, head, half);
    assert_memory_equal(out + half, marker, strlen(marker));
    assert_int_equal(strlen(out + half + strlen(marker)), half);
    assert_memory_equal(out + half + strlen(marker), tail, half);
    free(marker);
}

static void
test_big_output(void **state)
{
    /* past the cap (1 MiB by default) the server reads in bulk, straight
     * into the ring: still exactly the first and the newest 512 KiB */
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    const size_t half = 512 * 1024;
    char *all = NULL;
    size_t all_len = 0;
    FILE *mem = open_memstream(&all, &all_len);
    assert_non_null(mem);
    for (int i = 1; i <= 3000000; i++)
        fprintf(mem, "%d\n", i);
    fclose(mem);
    json_t *a = call_shell(c, "seq 1 3000000", "/");
    assert_int_equal(result_exit(a), 0);
    expect_head_and_tail(result_output(a), all, all + all_len - half, half, all_len);
    json_decref(a);
    free(all);
    /* a writer faster than the server reads, then stderr after stdout */
    a = call_shell(c, "yes | head -c 50000000; echo done >&2", "/");
    assert_int_equal(result_exit(a), 0);
    size_t total = 50000000 + 5;
    char *head = malloc(half), *tail = malloc(half);
    assert_true(head && tail);
    for (size_t i = 0; i < half; i++) {
        head[i] = i % 2 ? '\n' : 'y';
        tail[i] = (total - half + i) % 2 ? '\n' : 'y';
    }
    memcpy(tail + half - 5, "done\n", 5);
    expect_head_and_tail(result_output(a), head, tail, half, total);
    free(head);
    free(tail);
    json_decref(a);
    finish(c);
}

static void
test_close_stdin_mid_call(void **state)
{
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    /* "started" comes after both background children were forked */
    json_t *params = shell_args("(sleep 64.5) & sleep 64.5 & echo started; wait", "/");
    json_object_set_new(params, "_meta", json_pack("{s:s}", "progressToken", "p"));
    long long id = mcp_client_send_request(c, "tools/call", params);
    json_t *p = mcp_client_notification(c, "notifications/progress", MCP_CLIENT_WAIT_MS);
    assert_non_null(p);
    json_decref(p);
    assert_true(proc_with_marker("64.5"));
    mcp_client_close_stdin(c);
    int status = mcp_client_wait_exit(c, MCP_CLIENT_WAIT_MS);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_false(proc_with_marker("64.5"));
    /* the call was answered on the way out */
    json_t *jid = json_integer(id);
    json_t *a = mcp_client_response(c, jid, MCP_CLIENT_WAIT_MS);
    json_decref(jid);
    assert_int_equal(result_exit(a), 128 + SIGTERM);
    assert_string_equal(result_output(a), "started\n");
    json_decref(a);
    mcp_client_free(c);
}

static void
test_sigterm_mid_call(void **state)
{
    struct mcp_client *c =
        start_initialized("--sandbox", FULL_ACCESS, "--kill-grace-ms", "300", NULL);
    /* ignores SIGTERM: only the SIGKILL after the grace period ends it */
    /* (zsh's wait returns at the SIGTERM it ignores: it waits again) */
    json_t *params = shell_args(zsh() ? "trap '' TERM; sleep 65.25 & echo ready; while :; do wait; "
                                        "done"
                                      : "trap '' TERM; sleep 65.25 & echo ready; wait; wait",
                                "/");
    json_object_set_new(params, "_meta", json_pack("{s:s}", "progressToken", "p"));
    long long id = mcp_client_send_request(c, "tools/call", params);
    json_t *p = mcp_client_notification(c, "notifications/progress", MCP_CLIENT_WAIT_MS);
    assert_non_null(p);
    json_decref(p);
    assert_true(proc_with_marker("65.25"));
    kill(mcp_client_pid(c), SIGTERM);
    int status = mcp_client_wait_exit(c, MCP_CLIENT_WAIT_MS);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_true(proc_gone("65.25", 10000));
    json_t *jid = json_integer(id);
    json_t *a = mcp_client_response(c, jid, MCP_CLIENT_WAIT_MS);
    json_decref(jid);
    assert_non_null(a);
    assert_true(result_exit(a) >= 128);
    json_decref(a);
    mcp_client_free(c);
}

/* ---- the sandbox ---- */

static void
test_default_policy_is_read_only(void **state)
{
    char *wd = tmpdir_new("server-ro");
    struct mcp_client *c = start_initialized(NULL);
    json_t *a = call_shell(c, "echo x > made-here; echo rc=$?; echo still-running", wd);
    const json_t *r = shell_result(a);
    if (json_object_get(r, "sandbox_error")) {
        fprintf(stderr, "read-only not applied by this execgate-sandbox: %s\n",
                json_string_value(json_object_get(r, "output")));
        json_decref(a);
        finish(c);
        tmpdir_remove(wd);
        free(wd);
        skip();
    }
    /* the refused write is the command's own business: a normal result */
    assert_true(json_is_false(json_object_get(json_object_get(a, "result"), "isError")));
    assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 0);
    const char *out = json_string_value(json_object_get(r, "output"));
    assert_non_null(strstr(out, "rc=1\n"));
    assert_non_null(strstr(out, "still-running\n"));
    char *path = tmpdir_path(wd, "made-here");
    assert_int_equal(access(path, F_OK), -1);
    free(path);
    json_decref(a);
    finish(c);
    tmpdir_remove(wd);
    free(wd);
}

static void
test_workspace_write_update(void **state)
{
    char *wd = tmpdir_new("server-ww");
    char *other = tmpdir_new("server-ww-other");
    struct mcp_client *c = start_initialized(NULL);
    json_t *a = mcp_client_call(c, "codex/sandbox-state/update",
                                json_pack("{s:{s:s, s:[], s:b, s:b, s:b}, s:s}", "sandboxPolicy",
                                          "type", "workspace-write", "writable_roots",
                                          "network_access", 0, "exclude_tmpdir_env_var", 1,
                                          "exclude_slash_tmp", 1, "sandboxCwd", wd));
    assert_non_null(json_object_get(a, "result"));
    json_decref(a);
    char *cmd = NULL;
    assert_true(asprintf(&cmd,
                         "echo in > inside && echo in-ok; echo out > %s/outside || echo "
                         "out-refused",
                         other) > 0);
    a = call_shell(c, cmd, wd);
    free(cmd);
    const char *out = result_output(a);
    assert_non_null(strstr(out, "in-ok\n"));
    assert_non_null(strstr(out, "out-refused\n"));
    assert_true(json_is_false(json_object_get(json_object_get(a, "result"), "isError")));
    json_decref(a);
    char *inside = tmpdir_path(wd, "inside");
    char *outside = tmpdir_path(other, "outside");
    assert_int_equal(access(inside, F_OK), 0);
    assert_int_equal(access(outside, F_OK), -1);
    free(inside);
    free(outside);
    finish(c);
    tmpdir_remove(wd);
    tmpdir_remove(other);
    free(wd);
    free(other);
}

static void
test_sandbox_setup_failure_is_reported(void **state)
{
    char *wd = tmpdir_new("server-setup");
    /* a helper that fails the way execgate-sandbox does: one line on
     * stderr, exit 125, and no report on the report fd */
    char *helper = tmpdir_path(wd, "failing-helper");
    tmpdir_write_file(helper,
                      "#!/bin/sh\necho 'execgate-sandbox: landlock: not available' >&2\nexit 125\n",
                      0755);
    struct mcp_client *c = start_initialized("--sandbox-helper", helper, NULL);
    json_t *a = call_shell(c, "echo never", wd);
    const json_t *result = json_object_get(a, "result");
    assert_non_null(result);
    assert_true(json_is_true(json_object_get(result, "isError")));
    const json_t *r = shell_result(a);
    assert_non_null(json_string_value(json_object_get(r, "sandbox_error")));
    assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 125);
    assert_non_null(strstr(json_string_value(json_object_get(r, "output")), "landlock"));
    json_decref(a);
    finish(c);

    /* a command that itself exits 125 under a working helper is no such
     * failure */
    c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    a = call_shell(c, "echo mine; exit 125", wd);
    r = shell_result(a);
    assert_null(json_object_get(r, "sandbox_error"));
    assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 125);
    assert_true(json_is_false(json_object_get(json_object_get(a, "result"), "isError")));
    json_decref(a);
    finish(c);
    free(helper);
    tmpdir_remove(wd);
    free(wd);
}

/* codex/sandbox-state/update to workspace-write (no /tmp, no $TMPDIR)
 * with sandbox cwd cwd; asserts success. */
static void
workspace_at(struct mcp_client *c, const char *cwd)
{
    json_t *a = mcp_client_call(c, "codex/sandbox-state/update",
                                json_pack("{s:{s:s, s:b, s:b}, s:s}", "sandboxPolicy", "type",
                                          "workspace-write", "exclude_slash_tmp", 1,
                                          "exclude_tmpdir_env_var", 1, "sandboxCwd", cwd));
    assert_non_null(json_object_get(a, "result"));
    json_decref(a);
}

static char *
dir_in(const char *base, const char *name)
{
    char *p = tmpdir_path(base, name);
    assert_int_equal(mkdir(p, 0755), 0);
    return p;
}

/* The shell gone by the time of a call (one missing at start stops the
 * start): the helper cannot start it, nothing ran, and the call is an
 * error saying so; a command of the shell's that is not found, or that
 * exits 126 or 127 itself, is not. */
static void
test_shell_not_started_is_an_error(void **state)
{
    char *wd = tmpdir_new("server-noshell");
    /* the shell the suite runs: --bash, or --shell PATH named zsh */
    char *bash = tmpdir_path(wd, zsh() ? "zsh" : "bash");
    tmpdir_write_file(bash, "#!/bin/bash\nexec /bin/bash \"$@\"\n", 0755);
    const char *modes[] = {"--exec-enforcement=tree", "--exec-enforcement=shell"};
    for (size_t m = 0; m < 2; m++) {
        for (size_t p = 0; p < 2; p++) {
            char *policy = NULL;
            assert_true(asprintf(&policy,
                                 p == 0 ? FULL_ACCESS
                                        : "{\"sandboxPolicy\":{\"type\":\"workspace-write\"},"
                                          "\"sandboxCwd\":\"%s\"}",
                                 wd) > 0);
            tmpdir_write_file(bash, "#!/bin/bash\nexec /bin/bash \"$@\"\n", 0755);
            struct mcp_client *c = start_initialized(zsh() ? "--shell" : "--bash", bash,
                                                     "--sandbox", policy, modes[m], NULL);
            json_t *a = call_shell(c, "no-such-command-here; echo $?; exit 126", wd);
            const json_t *r = shell_result(a);
            assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 126);
            assert_non_null(strstr(json_string_value(json_object_get(r, "output")), "127\n"));
            assert_null(json_object_get(r, "shell_error"));
            assert_true(json_is_false(json_object_get(json_object_get(a, "result"), "isError")));
            json_decref(a);
            assert_int_equal(unlink(bash), 0);
            a = call_shell(c, "echo never", wd);
            r = shell_result(a);
            assert_true(json_is_true(json_object_get(json_object_get(a, "result"), "isError")));
            assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 127);
            assert_string_equal(json_string_value(json_object_get(r, "shell_error")),
                                "execgate-sandbox could not start the shell; the command did not "
                                "run: see output");
            char *line = NULL;
            assert_true(asprintf(&line, "execgate-sandbox: %s: No such file or directory\n", bash) >
                        0);
            assert_string_equal(json_string_value(json_object_get(r, "output")), line);
            free(line);
            json_decref(a);
            finish(c);
            free(policy);
        }
    }
    /* a policy under which the shell cannot be read: Landlock refuses its
     * execve (readable roots: the platform's and the sandbox cwd, not wd) */
    tmpdir_write_file(bash, "#!/bin/bash\nexec /bin/bash \"$@\"\n", 0755);
    char *inner = dir_in(wd, "inner");
    char *policy = NULL;
    assert_true(asprintf(&policy,
                         "{\"sandboxPolicy\":{\"type\":\"read-only\",\"access\":{\"type\":"
                         "\"restricted\",\"readable_roots\":[]}},\"sandboxCwd\":\"%s\"}",
                         inner) > 0);
    struct mcp_client *c = start_initialized("--bash", bash, "--sandbox", policy, NULL);
    json_t *a = call_shell(c, "echo never", inner);
    const json_t *r = shell_result(a);
    assert_true(json_is_true(json_object_get(json_object_get(a, "result"), "isError")));
    assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 126);
    assert_non_null(json_object_get(r, "shell_error"));
    assert_non_null(strstr(json_string_value(json_object_get(r, "output")), "Permission denied"));
    json_decref(a);
    finish(c);
    free(policy);
    free(inner);
    free(bash);
    tmpdir_remove(wd);
    free(wd);
}

/*
 * A call that waits for a slot (--max-calls 1) starts with the writable
 * roots the server resolved when it arrived.  Its sandbox cwd L is a link
 * to D1 then; while it waits, L is pointed at D2 (as a sandbox that could
 * write L's directory could do): it may write D1, what the server saw,
 * and not D2.  A second waiting call's sandbox cwd D3 is a directory when
 * it arrives and a link to D4 when it starts: it fails with the helper's
 * error, and D4 is not written.
 */
static void
test_waiting_call_keeps_the_roots_it_arrived_with(void **state)
{
    char *base = tmpdir_new_in("/var/tmp", "server-roots");
    char *d1 = dir_in(base, "d1"), *d2 = dir_in(base, "d2"), *d3 = dir_in(base, "d3");
    char *d4 = dir_in(base, "d4");
    char *link = tmpdir_path(base, "l");
    char *go = tmpdir_path(base, "go");
    char *d3_moved = tmpdir_path(base, "d3-moved");
    assert_int_equal(symlink(d1, link), 0);
    struct mcp_client *c = start_initialized("--max-calls", "1", NULL);
    /* read-only (the default) holds the slot until go appears */
    char *wait = NULL;
    assert_true(asprintf(&wait, "while [ ! -e %s ]; do sleep 0.02; done; echo released", go) > 0);
    long long first = mcp_client_send_request(c, "tools/call", shell_args(wait, base));
    workspace_at(c, link);
    char *probe = NULL;
    assert_true(asprintf(&probe,
                         "for d in %s %s; do if (: > \"$d/probe\") 2>/dev/null; then echo "
                         "\"$d yes\"; else echo \"$d no\"; fi; done",
                         d1, d2) > 0);
    long long second = mcp_client_send_request(c, "tools/call", shell_args(probe, base));
    workspace_at(c, d3);
    char *write_d3 = NULL;
    assert_true(asprintf(&write_d3, "echo x > %s/probe; echo wrote", d3) > 0);
    long long third = mcp_client_send_request(c, "tools/call", shell_args(write_d3, base));
    json_t *a = mcp_client_call(c, "ping", NULL); /* the three have arrived */
    json_decref(a);

    assert_int_equal(unlink(link), 0);
    assert_int_equal(symlink(d2, link), 0);
    assert_int_equal(rename(d3, d3_moved), 0);
    assert_int_equal(symlink(d4, d3), 0);
    tmpdir_write_file(go, "", 0644);

    long long ids[] = {first, second, third};
    json_t *answers[3];
    for (int i = 0; i < 3; i++) {
        json_t *id = json_integer(ids[i]);
        answers[i] = mcp_client_response(c, id, MCP_CLIENT_WAIT_MS);
        json_decref(id);
        assert_non_null(answers[i]);
    }
    assert_string_equal(result_output(answers[0]), "released\n");
    char *want = NULL;
    assert_true(asprintf(&want, "%s yes\n%s no\n", d1, d2) > 0);
    if (strcmp(result_output(answers[1]), want) != 0)
        fail_msg("the waiting call could write [%s], wanted [%s]", result_output(answers[1]), want);
    const json_t *result = json_object_get(answers[2], "result");
    assert_true(json_is_true(json_object_get(result, "isError")));
    const json_t *r = shell_result(answers[2]);
    assert_non_null(json_object_get(r, "sandbox_error"));
    const char *out = json_string_value(json_object_get(r, "output"));
    if (!strstr(out, "a symbolic link lies on its path") || !strstr(out, d3))
        fail_msg("the helper's error does not say why: [%s]", out);
    char *d4_probe = tmpdir_path(d4, "probe");
    assert_int_not_equal(access(d4_probe, F_OK), 0);
    for (int i = 0; i < 3; i++)
        json_decref(answers[i]);
    finish(c);
    free(d4_probe);
    free(want);
    free(write_d3);
    free(probe);
    free(wait);
    free(d3_moved);
    free(go);
    free(link);
    free(d1);
    free(d2);
    free(d3);
    free(d4);
    tmpdir_remove(base);
    free(base);
}

/* A helper that is gone by the time of a call (one missing at start stops
 * the start: test_option_errors). */
static void
test_missing_helper_is_a_failed_call(void **state)
{
    char *dir = tmpdir_new("gone");
    char *helper = tmpdir_path(dir, "execgate-sandbox");
    tmpdir_write_file(helper, "#!/bin/sh\nexit 0\n", 0755);
    struct mcp_client *c = start_initialized("--sandbox-helper", helper, NULL);
    assert_int_equal(unlink(helper), 0);
    json_t *a = call_shell(c, "echo never", "/");
    const json_t *result = json_object_get(a, "result");
    assert_true(json_is_true(json_object_get(result, "isError")));
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
    assert_non_null(strstr(text, helper));
    json_decref(a);
    tmpdir_remove(dir);
    free(helper);
    free(dir);
    /* and the server carries on */
    a = mcp_client_call(c, "ping", NULL);
    assert_non_null(json_object_get(a, "result"));
    json_decref(a);
    finish(c);
}

/* ---- malformed input ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t
rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static const char *const seeds[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
    "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/list\",\"params\":{\"cursor\":null}}",
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\","
    "\"arguments\":{\"command\":7,\"workdir\":\"rel\",\"timeout_ms\":-1}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"codex/sandbox-state/update\",\"params\":"
    "{\"sandboxPolicy\":{\"type\":\"workspace-write\",\"writable_roots\":[\"x\"]}}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}",
    "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}",
    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\",\"params\":{\"protocolVersion\":3}}",
};

/* One malformed line: a seed cut, spliced, or sprinkled with bad bytes. */
static size_t
mutate(char *out, size_t cap)
{
    const char *seed = seeds[rng() % (sizeof(seeds) / sizeof(seeds[0]))];
    size_t len = strlen(seed);
    memcpy(out, seed, len);
    switch (rng() % 5) {
    case 0: /* truncated */
        len = rng() % len;
        break;
    case 1: /* random bytes over it */
        for (int i = 0; i < 4; i++)
            out[rng() % len] = (char)(rng() % 256);
        break;
    case 2: /* a bad UTF-8 byte inside a string */
        out[len / 2] = (char)(0x80 + rng() % 64);
        break;
    case 3: /* deep nesting */
        len = 0;
        for (size_t i = 0; i < 3000 && len < cap - 2; i++)
            out[len++] = '[';
        break;
    default: /* a type swapped */
        for (size_t i = 0; i < len; i++) {
            if (out[i] == '{' && i > 0) {
                out[i] = '[';
                break;
            }
        }
        break;
    }
    for (size_t i = 0; i < len; i++) {
        if (out[i] == '\n')
            out[i] = ' ';
    }
    out[len++] = '\n';
    return len;
}

static void
test_malformed_lines(void **state)
{
    char *wd = tmpdir_new("server-malformed");
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    size_t cap = 8192;
    char *line = malloc(cap);
    for (int i = 0; i < 10000; i++) {
        size_t len = mutate(line, cap);
        assert_int_equal(mcp_client_send_raw(c, line, len), 0);
    }
    free(line);
    json_t *a = mcp_client_call(c, "ping", NULL);
    assert_non_null(json_object_get(a, "result"));
    json_decref(a);
    /* everything that came back is a well-formed answer or notification */
    int answers = 0;
    while ((a = mcp_client_next(c, 0))) {
        assert_string_equal(json_string_value(json_object_get(a, "jsonrpc")), "2.0");
        assert_true(json_object_get(a, "result") || json_object_get(a, "error") ||
                    json_object_get(a, "method"));
        answers++;
        json_decref(a);
    }
    assert_true(answers > 5000);
    /* and it still works */
    a = call_shell(c, "echo alive", wd);
    assert_string_equal(result_output(a), "alive\n");
    json_decref(a);
    finish(c);
    tmpdir_remove(wd);
    free(wd);
}

/* ---- a long session ---- */

static void
test_long_session_flat_fds(void **state)
{
    enum { CALLS = 1000, IN_FLIGHT = 16 };
    struct mcp_client *c = start_initialized("--sandbox", FULL_ACCESS, NULL);
    int fds_early = -1;
    long long ids[IN_FLIGHT];
    for (int round = 0; round < CALLS / IN_FLIGHT + 1; round++) {
        int n = round < CALLS / IN_FLIGHT ? IN_FLIGHT : CALLS % IN_FLIGHT;
        for (int i = 0; i < n; i++) {
            char cmd[64];
            snprintf(cmd, sizeof(cmd), "echo %d", round * IN_FLIGHT + i);
            ids[i] = mcp_client_send_request(c, "tools/call", shell_args(cmd, "/"));
        }
        for (int i = 0; i < n; i++) {
            json_t *id = json_integer(ids[i]);
            json_t *a = mcp_client_response(c, id, MCP_CLIENT_WAIT_MS);
            json_decref(id);
            char want[32];
            snprintf(want, sizeof(want), "%d\n", round * IN_FLIGHT + i);
            assert_string_equal(result_output(a), want);
            json_decref(a);
        }
        if (round == 2)
            fds_early = mcp_client_fd_count(c);
    }
    int fds_late = mcp_client_fd_count(c);
    assert_true(fds_early > 0);
    assert_int_equal(fds_late, fds_early);
    finish(c);
}

/* The HTTP exchange of one shell call over the Unix socket sock, with
 * curl as the owner's client (served without a token): initialize,
 * initialized, tools/call of command in workdir.  Returns every body
 * (malloc'd). */
static char *
http_shell_call(const char *sock, const char *token, const char *command, const char *workdir)
{
    static const char script[] =
        "s=$1; t=$3; u=http://localhost/mcp;"
        "h() { curl -sN --unix-socket \"$s\" -H \"Authorization: Bearer $t\""
        " -H 'Content-Type: application/json'"
        " -H 'Accept: application/json, text/event-stream' \"$@\" $u; };"
        "sid=$(h -D - -o /dev/null -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
        "\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
        "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}' | tr -d '\\r' |"
        " sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p');"
        "h -H \"Mcp-Session-Id: $sid\" -d '{\"jsonrpc\":\"2.0\",\"method\":"
        "\"notifications/initialized\"}';"
        "h -H \"Mcp-Session-Id: $sid\" -d \"$2\"";
    json_t *call = json_pack("{s:s, s:i, s:s, s:{s:s, s:{s:s, s:s}}}", "jsonrpc", "2.0", "id", 2,
                             "method", "tools/call", "params", "name", "shell", "arguments",
                             "command", command, "workdir", workdir);
    char *body = json_dumps(call, JSON_COMPACT);
    json_decref(call);
    const char *argv[] = {"/bin/bash", "-c", script, "bash", sock, body, token, NULL};
    struct proc_result res;
    assert_int_equal(proc_run(argv, NULL, &res), 0);
    char *out = strdup(res.out);
    proc_result_free(&res);
    free(body);
    return out;
}

/*
 * The server's state is invisible in its sandboxes: a server listening on
 * TCP and a Unix socket, with a --token-file and an audit log (all in a directory
 * below /tmp, a writable root of workspace-write), runs a call that tries
 * to read the token and the log and looks for the socket, under read-only
 * and workspace-write, with tree and shell enforcement: it sees neither
 * (before, it printed the token: the key to the TCP listener).  The
 * control under danger-full-access sees all three.
 */
static void
test_server_state_hidden(void **state)
{
    const char *policies[] = {"{\"type\":\"read-only\"}", "{\"type\":\"workspace-write\"}",
                              FULL_ACCESS};
    const char *modes[] = {"tree", "shell"};
    for (size_t m = 0; m < 2; m++) {
        for (size_t p = 0; p < 3; p++) {
            if (p == 2 && m == 1)
                continue; /* one control is enough */
            char *dir = tmpdir_new("state");
            char *wd = dir_in(dir, "wd");
            char *sock = tmpdir_path(dir, "mcp.sock");
            char *token = tmpdir_path(dir, "token");
            char *audit = tmpdir_path(dir, "audit.log");
            tmpdir_write_file(audit, "AUDIT-MARK\n", 0600);
            char *listen = NULL, *policy = NULL, *command = NULL;
            assert_true(asprintf(&listen, "unix:%s", sock) > 0);
            assert_true(asprintf(&policy, "{\"sandboxPolicy\":%s,\"sandboxCwd\":\"%s\"}",
                                 policies[p], wd) > 0);
            assert_true(asprintf(&command,
                                 "cat %s %s 2>/dev/null; test -S %s && echo sock-visible;"
                                 " echo ran-$((6*7))",
                                 token, audit, sock) > 0);
            struct mcp_client *c = start_server(
                "--listen", "127.0.0.1:0", "--listen", listen, "--token-file", token, "--audit-log",
                audit, "--sandbox", policy, "--exec-enforcement", modes[m], NULL);
            struct stat st;
            for (int i = 0; i < 1000 && stat(sock, &st) != 0; i++)
                usleep(10000); /* until it listens; not a timed assertion */
            char *secret = tmpdir_read_file(token, NULL);
            assert_non_null(secret);
            secret[strcspn(secret, "\n")] = '\0';
            char *out = http_shell_call(sock, secret, command, wd);
            /* the server goes before any verdict: a failed assertion
             * must not leave it holding the test's output open */
            kill(mcp_client_pid(c), SIGTERM);
            assert_int_not_equal(mcp_client_wait_exit(c, MCP_CLIENT_WAIT_MS), -1);
            mcp_client_free(c);
            if (!strstr(out, "ran-42"))
                fail_msg("%s, %s: the call did not run: %s", policies[p], modes[m], out);
            bool seen =
                strstr(out, secret) || strstr(out, "AUDIT-MARK") || strstr(out, "sock-visible");
            if (seen != (p == 2))
                fail_msg("%s, %s: %s: %s", policies[p], modes[m],
                         seen ? "the server's state was visible" : "the control saw nothing", out);
            tmpdir_remove(dir);
            char *all[] = {dir, wd, sock, token, audit, listen, policy, command, out, secret};
            for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
                free(all[i]);
        }
    }
}

int
main(void)
{
    server_path = getenv("EXECGATE_TEST_SERVER");
    if (!server_path) {
        fprintf(stderr, "EXECGATE_TEST_SERVER is not set\n");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initialize),
        cmocka_unit_test(test_version_negotiation),
        cmocka_unit_test(test_tools_list),
        cmocka_unit_test(test_arguments_null_and_unknown),
        cmocka_unit_test(test_command_line),
        cmocka_unit_test(test_option_errors),
        cmocka_unit_test(test_programs_not_found),
        cmocka_unit_test(test_doctor),
        cmocka_unit_test(test_codex_bash_path),
        cmocka_unit_test(test_protocol_errors),
        cmocka_unit_test(test_invalid_params),
        cmocka_unit_test(test_oversized_message),
        cmocka_unit_test(test_call_result),
        cmocka_unit_test(test_concurrent_calls),
        cmocka_unit_test(test_more_calls_than_slots_wait_in_order),
        cmocka_unit_test(test_update_then_call),
        cmocka_unit_test(test_timeout_keeps_partial_output),
        cmocka_unit_test(test_default_timeout_option),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_cancel_waiting_call),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_output_cap),
        cmocka_unit_test(test_big_output),
        cmocka_unit_test(test_close_stdin_mid_call),
        cmocka_unit_test(test_sigterm_mid_call),
        cmocka_unit_test(test_default_policy_is_read_only),
        cmocka_unit_test(test_workspace_write_update),
        cmocka_unit_test(test_sandbox_setup_failure_is_reported),
        cmocka_unit_test(test_missing_helper_is_a_failed_call),
        cmocka_unit_test(test_shell_not_started_is_an_error),
        cmocka_unit_test(test_waiting_call_keeps_the_roots_it_arrived_with),
        cmocka_unit_test(test_malformed_lines),
        cmocka_unit_test(test_long_session_flat_fds),
        cmocka_unit_test(test_server_state_hidden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
