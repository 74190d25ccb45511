/*
 * execgate-sandbox's command line: options, exit codes, the report line,
 * and danger-full-access (which applies nothing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/sandbox_harness.h"
#include "sandbox/policy/policy.h"
#include "tests/support/proc.h"
#include "sandbox/policy/cmdline.h"
#include "common/fd_pass.h"
#include "common/strv.h"
#include "tests/support/tmpdir.h"

#define DANGER "{\"type\":\"danger-full-access\"}"

struct fixture {
    char *dir;
};

/* The helper's argv for p (the real builder, sandbox_cmdline_argv, with
 * the fields these tests set). */
static char **
helper_argv(const struct sandbox_policy *p, const char *helper, const char *cwd, int report_fd,
            bool allow_degraded, const char *const *protect, size_t n_protect,
            const char *const *prog)
{
    const struct sandbox_cmdline c = {
        .helper = helper,
        .policy = p,
        .cwd = cwd,
        .report_fd = report_fd,
        .exec_notify_fd = -1,
        .allow_degraded = allow_degraded,
        .protect = protect,
        .n_protect = n_protect,
        .program = prog,
    };
    return sandbox_cmdline_argv(&c);
}

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = tmpdir_new("sbxcli");
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    tmpdir_remove(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void
test_danger_runs_in_cwd(void **state)
{
    struct fixture *f = *state;
    struct sbx_result r;
    const char *argv[] = {"/bin/sh", "-c", "pwd; echo err >&2; exit 3", NULL};
    sbx_run(DANGER, f->dir, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 3);
    char *want;
    assert_true(asprintf(&want, "%s\n", f->dir) > 0);
    assert_string_equal(r.res.out, want);
    assert_string_equal(r.res.err, "err\n");
    free(want);
    assert_non_null(r.report);
    assert_string_equal(json_string_value(json_object_get(r.report, "policy")),
                        "danger-full-access");
    assert_true(json_is_true(json_object_get(r.report, "network")));
    sbx_result_free(&r);
}

static void
test_path_search_and_args(void **state)
{
    struct fixture *f = *state;
    struct sbx_result r;
    const char *argv[] = {"printf", "%s|", "a b", "", "c", NULL};
    sbx_run(DANGER, f->dir, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "a b||c|");
    sbx_result_free(&r);
}

static void
test_not_found_is_127(void **state)
{
    struct fixture *f = *state;
    struct sbx_result r;
    const char *argv[] = {"/nonexistent/prog", NULL};
    sbx_run(DANGER, f->dir, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 127);
    assert_non_null(strstr(r.res.err, "execgate-sandbox: /nonexistent/prog: No such file"));
    /* the report fd says the program never ran: the sandbox was in place
     * (the report), then {"exec_error":ENOENT} */
    assert_non_null(r.report);
    assert_int_equal(r.exec_error, ENOENT);
    sbx_result_free(&r);

    const char *argv2[] = {"no-such-program-anywhere", NULL};
    sbx_run(DANGER, f->dir, NULL, argv2, NULL, &r);
    sbx_assert_code(&r, 127);
    assert_int_equal(r.exec_error, ENOENT);
    sbx_result_free(&r);

    /* a program that ran and exited 127 itself is no such failure */
    sbx_sh(DANGER, f->dir, "exit 127", &r);
    sbx_assert_code(&r, 127);
    assert_int_equal(r.exec_error, 0);
    sbx_result_free(&r);
}

static void
test_not_executable_is_126(void **state)
{
    struct fixture *f = *state;
    char *file = tmpdir_path(f->dir, "data.txt");
    tmpdir_write_file(file, "not a program\n", 0644);
    struct sbx_result r;
    const char *argv[] = {file, NULL};
    sbx_run(DANGER, f->dir, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 126);
    assert_non_null(strstr(r.res.err, "Permission denied"));
    assert_int_equal(r.exec_error, EACCES);
    sbx_result_free(&r);
    const char *argv2[] = {f->dir, NULL}; /* a directory */
    sbx_run(DANGER, f->dir, NULL, argv2, NULL, &r);
    sbx_assert_code(&r, 126);
    assert_int_equal(r.exec_error, EACCES);
    sbx_result_free(&r);
    free(file);
}

/* Setup failures: 125, a message naming the problem, and nothing runs. */
static void
assert_setup_failure(const char *policy, const char *cwd, const char *const *extra,
                     const char *want_msg)
{
    struct sbx_result r;
    const char *argv[] = {"/bin/echo", "RAN", NULL};
    sbx_run(policy, cwd, extra, argv, NULL, &r);
    sbx_assert_code(&r, 125);
    if (strstr(r.res.err, want_msg) == NULL)
        fail_msg("stderr \"%s\" lacks \"%s\"", r.res.err, want_msg);
    assert_null(strstr(r.res.out, "RAN"));
    assert_null(r.report);
    sbx_result_free(&r);
}

static void
test_setup_failures_are_125(void **state)
{
    struct fixture *f = *state;
    assert_setup_failure("{\"type\":\"bogus\"}", f->dir, NULL,
                         "execgate-sandbox: sandbox policy: unknown type \"bogus\"");
    assert_setup_failure("{not json", f->dir, NULL, "sandbox policy: invalid JSON");
    assert_setup_failure(
        "{\"type\":\"workspace-write\",\"sandboxCwd\":\"/w\",\"writable_roots\":[\"rel\"]}", f->dir,
        NULL, "writable_roots[0]: \"rel\" is not an absolute path");
    assert_setup_failure(DANGER, "/nonexistent/dir", NULL,
                         "--cwd /nonexistent/dir: No such file or directory");
    const char *bad_opt[] = {"--frobnicate", NULL};
    assert_setup_failure(DANGER, f->dir, bad_opt, "unknown or incomplete option \"--frobnicate\"");
}

static void
test_usage_errors(void **state)
{
    struct proc_result res;
    const char *no_prog[] = {sbx_helper(), "--policy", DANGER, "--cwd", "/", "--", NULL};
    assert_int_equal(proc_run(no_prog, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 125);
    assert_non_null(strstr(res.err, "no program given"));
    proc_result_free(&res);

    const char *no_policy[] = {sbx_helper(), "--cwd", "/", "--", "/bin/true", NULL};
    assert_int_equal(proc_run(no_policy, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 125);
    assert_non_null(strstr(res.err, "--policy is required"));
    proc_result_free(&res);

    const char *bad_fd[] = {sbx_helper(),  "--policy", DANGER, "--cwd",     "/",
                            "--report-fd", "x1",       "--",   "/bin/true", NULL};
    assert_int_equal(proc_run(bad_fd, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 125);
    assert_non_null(strstr(res.err, "--report-fd: \"x1\" is not a file descriptor number"));
    proc_result_free(&res);

    const char *closed_fd[] = {sbx_helper(),  "--policy", DANGER, "--cwd",     "/",
                               "--report-fd", "987",      "--",   "/bin/true", NULL};
    assert_int_equal(proc_run(closed_fd, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 125);
    assert_non_null(strstr(res.err, "--report-fd 987: Bad file descriptor"));
    proc_result_free(&res);

    const char *help[] = {sbx_helper(), "--help", NULL};
    assert_int_equal(proc_run(help, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_non_null(strstr(res.out, "usage: execgate-sandbox --policy JSON --cwd DIR"));
    proc_result_free(&res);
}

/* ---- --command-fd ---- */

/* The prefix that puts the harness's stdin pipe at fd 7 of the helper
 * (its --command-fd) and gives the helper /dev/null as its stdin. */
static const char *const command_fd_prefix[] = {"/bin/sh", "-c",
                                                "exec 7<&0 0</dev/null; exec \"$@\"", "sh", NULL};

/* Runs /bin/sh -c "" under policy with --command-fd 7, sends it what
 * (n bytes, in pieces of at most piece, each after a pause that lets the
 * helper read what came before: a short read for it), then closes the
 * pipe, and fills r. */
static void
run_command_fd(const char *policy, const char *cwd, const void *what, size_t n, size_t piece,
               struct sbx_result *r)
{
    const char *extra[] = {"--command-fd", "7", NULL};
    const char *argv[] = {"/bin/sh", "-c", "", NULL};
    struct sbx_call c;
    sbx_set_prefix(command_fd_prefix);
    sbx_start(policy, cwd, extra, argv, NULL, &c);
    sbx_set_prefix(NULL);
    for (size_t off = 0; off < n; off += piece) {
        size_t k = n - off < piece ? n - off : piece;
        assert_int_equal(write(c.in, (const char *)what + off, k), (ssize_t)k);
        usleep(20000);
    }
    sbx_finish(&c, r);
}

/* A frame: the length in the host's order, then the command. */
static size_t
frame(char *buf, size_t size, const char *command, size_t len)
{
    uint32_t n = (uint32_t)len;
    assert_true(sizeof n + len <= size);
    memcpy(buf, &n, sizeof n);
    memcpy(buf + sizeof n, command, len);
    return sizeof n + len;
}

/* The command comes last, in pieces (short reads), and runs as the
 * program's last argument, under danger-full-access and read-only alike;
 * the command fd is not left to it. */
static void
test_command_fd_runs_the_command(void **state)
{
    struct fixture *f = *state;
    const char *policies[] = {DANGER, "{\"type\":\"read-only\"}"};
    const char *cmd = "echo \"ran [$0] $#\"; ls /proc/self/fd/7 2>/dev/null || echo no-fd-7";
    for (size_t i = 0; i < 2; i++) {
        char buf[512];
        size_t n = frame(buf, sizeof buf, cmd, strlen(cmd));
        struct sbx_result r;
        run_command_fd(policies[i], f->dir, buf, n, 3, &r);
        sbx_assert_code(&r, 0);
        assert_string_equal(r.res.out, "ran [/bin/sh] 0\nno-fd-7\n");
        sbx_result_free(&r);
    }
}

/* No command, half a command, a NUL in it: exit 125, nothing ran. */
static void
test_command_fd_incomplete_runs_nothing(void **state)
{
    struct fixture *f = *state;
    const char *policy = "{\"type\":\"read-only\"}";
    struct sbx_result r;
    run_command_fd(policy, f->dir, "", 0, 1, &r);
    sbx_assert_code(&r, 125);
    assert_non_null(strstr(r.res.err, "closed before a command came"));
    sbx_result_free(&r);

    char buf[512];
    const char *cmd = "echo RAN";
    size_t n = frame(buf, sizeof buf, cmd, strlen(cmd));
    run_command_fd(policy, f->dir, buf, n - 3, 2, &r); /* the pipe closes mid-command */
    sbx_assert_code(&r, 125);
    assert_non_null(strstr(r.res.err, "closed in the middle of the command"));
    assert_null(strstr(r.res.out, "RAN"));
    sbx_result_free(&r);

    n = frame(buf, sizeof buf, "echo RAN\0; echo X", 17);
    run_command_fd(policy, f->dir, buf, n, n, &r);
    sbx_assert_code(&r, 125);
    assert_non_null(strstr(r.res.err, "NUL byte"));
    assert_null(strstr(r.res.out, "RAN"));
    sbx_result_free(&r);
}

/* The report fd is the helper's, not the program's. */
static void
test_report_fd_not_inherited(void **state)
{
    struct fixture *f = *state;
    struct sbx_result r;
    const char *argv[] = {"/bin/sh", "-c", "ls -l /proc/self/fd/", NULL};
    sbx_run(DANGER, f->dir, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 0);
    assert_non_null(r.report); /* it was open and written to */
    assert_non_null(strstr(r.res.out, " 2 -> "));
    assert_null(strstr(r.res.out, "sbx-report")); /* the harness's report file */
    sbx_result_free(&r);
}

static char *
ws_policy(const char *dir, const char *extra)
{
    char *p;
    assert_true(asprintf(&p, "{\"type\":\"workspace-write\",\"sandboxCwd\":\"%s\"%s}", dir, extra) >
                0);
    return p;
}

/* Runs `sh -c script` under policy with extra options and env entries
 * added to a small fixed environment. */
static void
run_env(const char *policy, const char *cwd, const char *const *extra, const char *env1,
        const char *script, struct sbx_result *r)
{
    const char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", env1, NULL};
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    sbx_run(policy, cwd, extra, argv, envp, r);
}

static json_t *
degraded_of(struct sbx_result *r)
{
    assert_non_null(r->report);
    return json_object_get(r->report, "degraded");
}

/* A kernel without Landlock (or with an older ABI) must not quietly give a
 * weaker sandbox: 125, a message naming the feature, nothing run. */
static void
test_fail_closed_without_landlock(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    struct sbx_result r;
    run_env(policy, f->dir, NULL, "EXECGATE_SANDBOX_MAX_ABI=0", "echo RAN", &r);
    sbx_assert_code(&r, 125);
    assert_non_null(strstr(r.res.err, "landlock: the kernel has no Landlock"));
    assert_null(strstr(r.res.out, "RAN"));
    assert_null(r.report);
    sbx_result_free(&r);

    run_env(policy, f->dir, NULL, "EXECGATE_SANDBOX_MAX_ABI=5", "echo RAN", &r);
    sbx_assert_code(&r, 125);
    assert_non_null(strstr(r.res.err, "landlock-scope: the kernel's Landlock ABI is too old"));
    assert_null(strstr(r.res.out, "RAN"));
    sbx_result_free(&r);
    free(policy);
}

/* With --allow-degraded the same run goes ahead, says so on stderr and
 * lists what is missing in the report. */
static void
test_allow_degraded_reports(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    const char *degrade[] = {"--allow-degraded", NULL};
    struct sbx_result r;
    run_env(policy, f->dir, degrade, "EXECGATE_SANDBOX_MAX_ABI=5", "echo RAN", &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "RAN\n");
    assert_non_null(strstr(r.res.err, "warning: running without landlock-scope"));
    json_t *d = degraded_of(&r);
    assert_int_equal(json_array_size(d), 1);
    assert_string_equal(json_string_value(json_array_get(d, 0)), "landlock-scope");
    json_t *ll = json_object_get(r.report, "landlock");
    assert_int_equal(json_integer_value(json_object_get(ll, "abi")), 5);
    assert_int_equal(json_array_size(json_object_get(ll, "scoped")), 0);
    assert_int_equal(json_array_size(json_object_get(ll, "net")), 2);
    sbx_result_free(&r);
    free(policy);
}

/* Without namespaces: refused, or with --allow-degraded run with .git left
 * writable (the documented fallback), while Landlock's own scoping still
 * stops signals to processes outside. */
static void
test_no_namespaces(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    struct sbx_result r;
    run_env(policy, f->dir, NULL, "EXECGATE_SANDBOX_NO_NAMESPACES=1", "echo RAN", &r);
    sbx_assert_code(&r, 125);
    assert_non_null(strstr(r.res.err, "mount-namespace: cannot create a mount namespace"));
    assert_null(strstr(r.res.out, "RAN"));
    sbx_result_free(&r);

    const char *degrade[] = {"--allow-degraded", NULL};
    char *script;
    assert_true(asprintf(&script, "kill -0 %d 2>/dev/null || echo refused", (int)getpid()) > 0);
    run_env(policy, f->dir, degrade, "EXECGATE_SANDBOX_NO_NAMESPACES=1", script, &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "refused\n");
    json_t *d = degraded_of(&r);
    assert_int_equal(json_array_size(d), 2);
    assert_string_equal(json_string_value(json_array_get(d, 0)), "mount-namespace");
    assert_string_equal(json_string_value(json_array_get(d, 1)), "pid-namespace");
    assert_int_equal(json_array_size(json_object_get(r.report, "read_only")), 0);
    assert_true(json_is_false(json_object_get(r.report, "read_only_world")));
    assert_true(json_is_false(json_object_get(json_object_get(r.report, "namespaces"), "pid")));
    sbx_result_free(&r);
    free(script);
    free(policy);
}

static void
test_external_sandbox(void **state)
{
    struct fixture *f = *state;
    struct sbx_result r;
    char *file = tmpdir_path(f->dir, "ext");
    char *script;
    assert_true(asprintf(&script,
                         "echo x > %s && /usr/bin/python3 -c 'import socket; "
                         "socket.socket()' 2>/dev/null || echo no-inet",
                         file) > 0);
    run_env("{\"type\":\"external-sandbox\",\"network_access\":\"restricted\"}", f->dir, NULL, NULL,
            script, &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "no-inet\n");
    assert_int_equal(access(file, F_OK), 0);
    json_t *ll = json_object_get(r.report, "landlock");
    assert_int_equal(json_array_size(json_object_get(ll, "fs")), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r.report, "seccomp"), "sockets")),
        "unix-only");
    sbx_result_free(&r);

    run_env("{\"type\":\"external-sandbox\",\"network_access\":\"enabled\"}", f->dir, NULL, NULL,
            "/usr/bin/python3 -c 'import socket; socket.socket(); print(\"inet\")'", &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "inet\n");
    assert_null(json_object_get(r.report, "seccomp"));
    assert_null(json_object_get(r.report, "landlock"));
    sbx_result_free(&r);
    free(script);
    free(file);
}

/* Signals the spawner left ignored (as nohup and some shells leave them)
 * reach the command at their defaults, under every policy: the helper
 * resets those the kernel lists as ignored, the low, middle and real-time
 * ones alike. */
static void
test_ignored_signals_reset(void **state)
{
    struct fixture *f = *state;
    static const int ignored[] = {SIGHUP, SIGINT, SIGPIPE, SIGUSR2, SIGXFSZ, 40, 64};
    struct sigaction ign = {.sa_handler = SIG_IGN}, was[7];
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(sigaction(ignored[i], &ign, &was[i]), 0);
    char *ws = ws_policy(f->dir, "");
    const char *policies[] = {DANGER, ws};
    for (size_t i = 0; i < 2; i++) {
        struct sbx_result r;
        run_env(policies[i], f->dir, NULL, NULL, "grep '^SigIgn:' /proc/self/status", &r);
        sbx_assert_code(&r, 0);
        assert_string_equal(r.res.out, "SigIgn:\t0000000000000000\n");
        sbx_result_free(&r);
    }
    free(ws);
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(sigaction(ignored[i], &was[i], NULL), 0);
}

static void
test_exit_status_propagates(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    struct sbx_result r;
    run_env(policy, f->dir, NULL, NULL, "exit 7", &r);
    sbx_assert_code(&r, 7);
    sbx_result_free(&r);
    run_env(policy, f->dir, NULL, NULL, "kill -TERM $$", &r);
    sbx_assert_code(&r, 128 + SIGTERM);
    assert_true(WIFEXITED(r.res.status)); /* reported shell-style by the helper */
    sbx_result_free(&r);
    const char *argv[] = {"/nonexistent", NULL};
    sbx_run(policy, f->dir, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 127);
    sbx_result_free(&r);
    free(policy);
}

/* A missing .codex: inside, an empty directory nothing can be put into
 * (reported read-only); afterwards gone, with nothing else made (no .git
 * either), also when the root is named twice (the sandbox cwd and a
 * writable root). */
static void
test_codex_placeholder_read_only_and_removed(void **state)
{
    struct fixture *f = *state;
    char *twice = NULL;
    assert_true(asprintf(&twice, ",\"writable_roots\":[\"%s\"]", f->dir) > 0);
    const char *extras[] = {"", twice};
    char *codex = tmpdir_path(f->dir, ".codex");
    for (size_t i = 0; i < 2; i++) {
        char *policy = ws_policy(f->dir, extras[i]);
        assert_int_equal(access(codex, F_OK), -1);
        struct sbx_result r;
        run_env(policy, f->dir, NULL, NULL,
                "test -d .codex && ls -A .codex && echo listed; "
                "touch .codex/x 2>/dev/null || echo refused",
                &r);
        sbx_assert_code(&r, 0);
        assert_string_equal(r.res.out, "listed\nrefused\n");
        json_t *ro = json_object_get(r.report, "read_only");
        assert_int_equal(json_array_size(ro), i + 1);
        assert_string_equal(json_string_value(json_array_get(ro, 0)), codex);
        sbx_result_free(&r);
        free(policy);
        DIR *d = opendir(f->dir);
        assert_non_null(d);
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                fail_msg("left in the workspace: %s", e->d_name);
        }
        closedir(d);
    }
    free(codex);
    free(twice);
}

/* A .codex of the user's, even an empty directory, is bound read-only
 * and kept. */
static void
test_codex_of_the_user_kept(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char *codex = tmpdir_path(f->dir, ".codex");
    assert_int_equal(mkdir(codex, 0755), 0);
    struct sbx_result r;
    run_env(policy, f->dir, NULL, NULL, "touch .codex/x 2>/dev/null || echo refused", &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "refused\n");
    sbx_result_free(&r);
    struct stat st;
    assert_int_equal(lstat(codex, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0755);
    free(codex);
    free(policy);
}

/* --- --protect: the server's own files inside a writable location --- */

/* Runs `sh -c script` under policy with `--protect P` for each P of the
 * NULL-terminated protect, and env1 (may be NULL) in the environment. */
static void
run_protected(const char *policy, const char *cwd, const char *const *protect, const char *env1,
              const char *script, struct sbx_result *r)
{
    const char *extra[16];
    size_t n = 0;
    for (size_t i = 0; protect[i] != NULL; i++) {
        assert_true(n + 3 < sizeof extra / sizeof extra[0]);
        extra[n++] = "--protect";
        extra[n++] = protect[i];
    }
    extra[n] = NULL;
    run_env(policy, cwd, extra, env1, script, r);
}

/* Whether the report's read_only list holds path. */
static bool
read_only_has(const struct sbx_result *r, const char *path)
{
    assert_non_null(r->report);
    json_t *ro = json_object_get(r->report, "read_only");
    for (size_t i = 0; i < json_array_size(ro); i++)
        if (strcmp(json_string_value(json_array_get(ro, i)), path) == 0)
            return true;
    return false;
}

static void
assert_file_is(const char *path, const char *want)
{
    char *text = tmpdir_read_file(path, NULL);
    assert_non_null(text);
    assert_string_equal(text, want);
    free(text);
}

/* --- canonical roots: the server's resolution, reached without links --- */

static char *
made_dir(const char *dir, const char *name)
{
    char *p = tmpdir_path(dir, name);
    assert_int_equal(mkdir(p, 0755), 0);
    return p;
}

/* workspace-write with sandbox cwd cwd whose writable roots are the
 * canonical roots (JSON array texts). */
static char *
canonical_policy(const char *cwd, const char *roots, const char *repo_roots)
{
    char *p;
    assert_true(asprintf(&p,
                         "{\"type\":\"workspace-write\",\"sandboxCwd\":\"%s\","
                         "\"canonical_roots\":{\"roots\":%s,\"repo_roots\":%s}}",
                         cwd, roots, repo_roots) > 0);
    return p;
}

static int
compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* dir holds exactly the names of want (space-separated, sorted). */
static void
assert_lists(const char *dir, const char *want)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *names[16];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        assert_true(n < sizeof names / sizeof names[0]);
        names[n] = strdup(e->d_name);
        assert_non_null(names[n++]);
    }
    closedir(d);
    qsort(names, n, sizeof *names, compare_names);
    char got[512] = "";
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            strcat(got, " ");
        assert_true(strlen(got) + strlen(names[i]) + 2 < sizeof got);
        strcat(got, names[i]);
        free(names[i]);
    }
    if (strcmp(got, want) != 0)
        fail_msg("%s holds \"%s\", wanted \"%s\"", dir, got, want);
}

/* A placeholder's bind copied by a later recursive bind of a directory
 * above it (a pin of an ancestor for --protect, a read-only gitdir) is
 * removed all the same: nothing is left, and nothing is said. */
static void
test_codex_placeholder_removed_under_later_binds(void **state)
{
    struct fixture *f = *state;
    /* p, a writable root in /tmp (a location itself), holds the sandbox
     * cwd ws, and --protect ws/state pins ws and p. */
    char *p = made_dir(f->dir, "p");
    char *ws = made_dir(p, "ws");
    char *st = made_dir(ws, "state");
    char *roots = NULL;
    assert_true(asprintf(&roots, ",\"writable_roots\":[\"%s\"]", p) > 0);
    char *policy = ws_policy(ws, roots);
    const char *extra[] = {"--protect", st, NULL};
    struct sbx_result r;
    run_env(policy, ws, extra, NULL, "touch .codex/x 2>/dev/null || echo refused", &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "refused\n");
    assert_string_equal(r.res.err, "");
    sbx_result_free(&r);
    assert_lists(p, "ws");
    assert_lists(ws, "state");
    free(policy);
    free(roots);

    /* The sandbox cwd w, and a writable root w/sub whose .git file names
     * w: w is bound read-only (recursively) after w's placeholder. */
    char *w = made_dir(f->dir, "w");
    char *sub = made_dir(w, "sub");
    char *gitfile = tmpdir_path(sub, ".git");
    char *text = NULL;
    assert_true(asprintf(&text, "gitdir: %s\n", w) > 0);
    tmpdir_write_file(gitfile, text, 0644);
    assert_true(asprintf(&roots, ",\"writable_roots\":[\"%s\"]", sub) > 0);
    policy = ws_policy(w, roots);
    run_env(policy, w, NULL, NULL, "touch .codex/x 2>/dev/null || echo refused", &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "refused\n");
    assert_string_equal(r.res.err, "");
    sbx_result_free(&r);
    assert_lists(w, "sub");
    assert_lists(sub, ".git");
    free(text);
    free(gitfile);
    free(sub);
    free(w);
    free(policy);
    free(roots);
    free(st);
    free(ws);
    free(p);
}

/* With canonical roots the command may write exactly those (not the
 * sandbox cwd, $TMPDIR or /tmp the policy would name), the .git and .codex
 * of the repo roots among them stay read-only, and a root that is not
 * there grants nothing. */
static void
test_canonical_roots_are_the_roots(void **state)
{
    struct fixture *f = *state;
    char *c = made_dir(f->dir, "c");
    char *r = made_dir(f->dir, "r");
    char *git = made_dir(r, ".git");
    char *missing = tmpdir_path(f->dir, "missing");
    char *roots = NULL;
    assert_true(asprintf(&roots, "[\"%s\",\"%s\"]", r, missing) > 0);
    char *repo = NULL;
    assert_true(asprintf(&repo, "[\"%s\"]", r) > 0);
    char *policy = canonical_policy(c, roots, repo);
    char *script = NULL;
    assert_true(asprintf(&script,
                         "for p in %s/x %s/x %s/.git/x /tmp/execgate-canonical-%ld; do "
                         "if (: > \"$p\") 2>/dev/null; then echo yes; else echo no; fi; done",
                         c, r, r, (long)getpid()) > 0);
    struct sbx_result res;
    run_env(policy, f->dir, NULL, "TMPDIR=/tmp", script, &res);
    sbx_assert_code(&res, 0);
    assert_string_equal(res.res.out, "no\nyes\nno\nno\n");
    json_t *writable = json_object_get(res.report, "writable");
    assert_int_equal(json_array_size(writable), 1);
    assert_string_equal(json_string_value(json_array_get(writable, 0)), r);
    /* named by the root's path, though found from its fd */
    char *codex = tmpdir_path(r, ".codex");
    assert_true(read_only_has(&res, git));
    assert_true(read_only_has(&res, codex));
    sbx_result_free(&res);
    free(codex);
    free(script);
    free(policy);
    free(repo);
    free(roots);
    free(missing);
    free(git);
    free(r);
    free(c);
}

/* A canonical root with a symbolic link on its path (the root itself, or
 * a directory above it) is refused: 125, the reason, nothing run. */
static void
test_canonical_root_through_link_refused(void **state)
{
    struct fixture *f = *state;
    char *real = made_dir(f->dir, "real");
    char *sub = made_dir(real, "sub");
    char *link = tmpdir_path(f->dir, "link");
    assert_int_equal(symlink(real, link), 0);
    char *via_parent = tmpdir_path(link, "sub");
    char *ran = tmpdir_path(f->dir, "ran");
    char *script = NULL;
    assert_true(asprintf(&script, "touch %s", ran) > 0);
    const char *const roots[] = {link, via_parent};
    for (size_t i = 0; i < 2; i++) {
        char *list = NULL;
        assert_true(asprintf(&list, "[\"%s\"]", roots[i]) > 0);
        char *policy = canonical_policy(f->dir, list, "[]");
        struct sbx_result res;
        run_env(policy, f->dir, NULL, NULL, script, &res);
        sbx_assert_code(&res, 125);
        if (!strstr(res.res.err, "a symbolic link lies on its path") ||
            !strstr(res.res.err, roots[i]))
            fail_msg("%s: no clear reason: [%s]", roots[i], res.res.err);
        assert_int_not_equal(access(ran, F_OK), 0);
        sbx_result_free(&res);
        free(policy);
        free(list);
    }
    /* not canonical in form: refused as a policy error */
    const char *bad[] = {"[\"relative\"]", "[\"/a/../b\"]", "[\"/a/./b\"]", "[\"/a//b\"]",
                         "[\"/a/\"]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *policy = canonical_policy(f->dir, bad[i], "[]");
        struct sbx_result res;
        run_env(policy, f->dir, NULL, NULL, script, &res);
        sbx_assert_code(&res, 125);
        assert_non_null(strstr(res.res.err, "canonical_roots.roots[0]"));
        sbx_result_free(&res);
        free(policy);
    }
    free(script);
    free(ran);
    free(via_parent);
    free(link);
    free(sub);
    free(real);
}

/* A protected file in the workspace (an audit log): readable, but it
 * cannot be appended to, truncated, replaced, renamed or deleted. */
static void
test_protect_file(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char *log = tmpdir_path(f->dir, "audit.log");
    char *forged = tmpdir_path(f->dir, "forged");
    tmpdir_write_file(log, "entry 1\n", 0644);
    tmpdir_write_file(forged, "forged\n", 0644);
    const char *protect[] = {log, NULL};
    struct sbx_result r;
    run_protected(policy, f->dir, protect, NULL,
                  "exec 2>/dev/null;"
                  "printf 'forged 2\\n' >> audit.log || echo no-append;"
                  "true > audit.log || echo no-truncate-open;"
                  "truncate -s 0 audit.log || echo no-truncate;"
                  "mv -f forged audit.log || echo no-rename-over;"
                  "ln -f forged audit.log || echo no-link-over;"
                  "mv audit.log moved || echo no-rename-away;"
                  "rm -f audit.log || echo no-delete;"
                  "cat audit.log; echo new > beside && echo dir-writable",
                  &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "no-append\nno-truncate-open\nno-truncate\nno-rename-over\n"
                                   "no-link-over\nno-rename-away\nno-delete\nentry 1\n"
                                   "dir-writable\n");
    assert_true(read_only_has(&r, log));
    sbx_result_free(&r);
    assert_file_is(log, "entry 1\n");
    assert_file_is(forged, "forged\n");
    free(log);
    free(forged);
    free(policy);
}

/* A protected directory (a rules directory): no new files, no changed
 * ones, and it cannot be removed or renamed away; still listable. */
static void
test_protect_directory(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char *rules = tmpdir_path(f->dir, "rules");
    assert_int_equal(mkdir(rules, 0755), 0);
    char *def = tmpdir_path(rules, "default.rules");
    tmpdir_write_file(def, "# none\n", 0644);
    const char *protect[] = {rules, NULL};
    struct sbx_result r;
    run_protected(policy, f->dir, protect, NULL,
                  "exec 2>/dev/null;"
                  "echo 'prefix_rule(pattern=[\"bash\"], decision=\"allow\")' > rules/new.rules"
                  " || echo no-new-file;"
                  "echo 'prefix_rule(pattern=[\"bash\"], decision=\"allow\")' >> "
                  "rules/default.rules || echo no-append;"
                  "mkdir rules/sub || echo no-mkdir;"
                  "rm -rf rules || echo no-remove;"
                  "mv rules gone || echo no-rename;"
                  "ls rules",
                  &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "no-new-file\nno-append\nno-mkdir\nno-remove\nno-rename\n"
                                   "default.rules\n");
    assert_true(read_only_has(&r, rules));
    sbx_result_free(&r);
    assert_file_is(def, "# none\n");
    char *added = tmpdir_path(rules, "new.rules");
    assert_int_equal(access(added, F_OK), -1);
    free(added);
    free(def);
    free(rules);
    free(policy);
}

/* A missing protected directory (a CODEX_HOME not made yet) is created,
 * with its missing parent, mode 0700, and is read-only inside.  The parent
 * stays writable but cannot be renamed away and replaced. */
static void
test_protect_missing_created(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char *parent = tmpdir_path(f->dir, "state");
    char *home = tmpdir_path(parent, "codex-home");
    const char *protect[] = {home, NULL};
    struct sbx_result r;
    run_protected(policy, f->dir, protect, NULL,
                  "exec 2>/dev/null;"
                  "test -d state/codex-home && echo exists;"
                  "echo 'sandbox_mode = \"danger-full-access\"' > state/codex-home/config.toml"
                  " || echo no-config;"
                  "mkdir state/codex-home/rules || echo no-rules;"
                  "mv state state2 || echo no-rename-parent;"
                  "rm -rf state || echo no-remove-parent;"
                  "touch state/other && echo parent-writable",
                  &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "exists\nno-config\nno-rules\nno-rename-parent\n"
                                   "no-remove-parent\nparent-writable\n");
    assert_true(read_only_has(&r, home));
    assert_false(read_only_has(&r, parent)); /* pinned, not read-only */
    sbx_result_free(&r);
    struct stat st;
    assert_int_equal(stat(home, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(stat(parent, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    char *config = tmpdir_path(home, "config.toml");
    assert_int_equal(access(config, F_OK), -1);
    free(config);
    free(home);
    free(parent);
    free(policy);
}

/* Protected paths nested in each other, in either order, and one given
 * twice: each is read-only (a directory pinned as an ancestor of the
 * first is still bound read-only when it is itself protected), each is
 * reported once. */
static void
test_protect_nested_and_repeated(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char *home = tmpdir_path(f->dir, "home");
    char *rules = tmpdir_path(home, "rules");
    assert_int_equal(mkdir(home, 0755), 0);
    assert_int_equal(mkdir(rules, 0755), 0);
    const char *inner_first[] = {rules, home, rules, NULL};
    const char *outer_first[] = {home, rules, NULL};
    const char *const *orders[] = {inner_first, outer_first};
    for (size_t i = 0; i < 2; i++) {
        struct sbx_result r;
        run_protected(policy, f->dir, orders[i], NULL,
                      "exec 2>/dev/null; touch home/config.toml || echo no-config;"
                      " touch home/rules/x.rules || echo no-rules; mv home h2 || echo no-move",
                      &r);
        sbx_assert_code(&r, 0);
        assert_string_equal(r.res.out, "no-config\nno-rules\nno-move\n");
        assert_true(read_only_has(&r, home));
        assert_true(read_only_has(&r, rules));
        /* .codex, home, rules: no duplicates. */
        assert_int_equal(json_array_size(json_object_get(r.report, "read_only")), 3);
        sbx_result_free(&r);
    }
    free(home);
    free(rules);
    free(policy);
}

/* A protected path outside every writable location needs nothing:
 * Landlock keeps it read-only.  It is not bound, not reported, and not
 * created when missing; under read-only nothing is writable, and
 * danger-full-access ignores the option. */
static void
test_protect_outside_skipped(void **state)
{
    struct fixture *f = *state;
    char *other = tmpdir_new("sbxprot");
    char *missing = tmpdir_path(other, "missing");
    char *inside_missing = tmpdir_path(f->dir, "missing");
    char *file = tmpdir_path(other, "file");
    tmpdir_write_file(file, "outside\n", 0644);
    /* The scratch directories live in /tmp: keep it out of the roots. */
    char *policy = ws_policy(f->dir, ",\"exclude_tmpdir_env_var\":true,\"exclude_slash_tmp\":true");
    const char *protect[] = {other, missing, file, "/etc", NULL};
    struct sbx_result r;
    char *script;
    assert_true(asprintf(&script, "cat %s; echo x >> %s 2>/dev/null || echo refused", file, file) >
                0);
    run_protected(policy, f->dir, protect, NULL, script, &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "outside\nrefused\n"); /* Landlock's refusal */
    json_t *ro = json_object_get(r.report, "read_only");
    assert_int_equal(json_array_size(ro), 1); /* the workspace's .codex only */
    assert_false(read_only_has(&r, other));
    assert_false(read_only_has(&r, file));
    assert_false(read_only_has(&r, "/etc"));
    sbx_result_free(&r);
    assert_int_equal(access(missing, F_OK), -1);

    /* read-only: nothing to protect, nothing created. */
    const char *protect_ro[] = {inside_missing, NULL};
    char *ro_policy;
    assert_true(asprintf(&ro_policy, "{\"type\":\"read-only\",\"sandboxCwd\":\"%s\"}", f->dir) > 0);
    run_protected(ro_policy, f->dir, protect_ro, NULL, "echo ran", &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "ran\n");
    assert_int_equal(json_array_size(json_object_get(r.report, "read_only")), 0);
    sbx_result_free(&r);
    assert_int_equal(access(inside_missing, F_OK), -1);

    /* danger-full-access: no sandbox, the option changes nothing. */
    const char *protect_file[] = {file, NULL};
    run_protected(DANGER, f->dir, protect_file, NULL, script, &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "outside\n");
    sbx_result_free(&r);
    assert_file_is(file, "outside\nx\n");

    tmpdir_remove(other);
    free(ro_policy);
    free(script);
    free(other);
    free(missing);
    free(inside_missing);
    free(file);
    free(policy);
}

/* A protected path that is a symlink (which a command could have planted)
 * pointing elsewhere in the workspace: the target is what is protected
 * and reported. */
static void
test_protect_symlink_target(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char *real = tmpdir_path(f->dir, "real");
    char *link = tmpdir_path(f->dir, "link");
    char *flink = tmpdir_path(f->dir, "flink");
    char *target_file = tmpdir_path(real, "log");
    assert_int_equal(mkdir(real, 0755), 0);
    tmpdir_write_file(target_file, "log\n", 0644);
    assert_int_equal(symlink("real", link), 0);
    assert_int_equal(symlink("real/log", flink), 0);
    char *canon_real = realpath(real, NULL);
    char *canon_file = realpath(target_file, NULL);
    assert_non_null(canon_real);
    assert_non_null(canon_file);
    const char *protect[] = {link, flink, NULL};
    struct sbx_result r;
    run_protected(policy, f->dir, protect, NULL,
                  "exec 2>/dev/null;"
                  "touch real/new || echo no-new;"
                  "touch link/new || echo no-new-through-link;"
                  "echo x >> flink || echo no-append-through-link;"
                  "cat link/log",
                  &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "no-new\nno-new-through-link\nno-append-through-link\nlog\n");
    assert_true(read_only_has(&r, canon_real));
    assert_true(read_only_has(&r, canon_file));
    assert_false(read_only_has(&r, link));
    sbx_result_free(&r);
    free(canon_real);
    free(canon_file);
    free(real);
    free(link);
    free(flink);
    free(target_file);
    free(policy);
}

/* A missing protected path in a directory of another user, which neither
 * the helper nor the command can write (nor chmod): left out, not
 * created, and the command cannot create it either. */
static void
test_protect_uncreatable_left_out(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char *foreign = tmpdir_path(f->dir, "foreign");
    char *path = tmpdir_path(foreign, "state");
    assert_int_equal(mkdir(foreign, 0755), 0);
    assert_int_equal(chown(foreign, 65534, 65534), 0);
    const char *protect[] = {path, NULL};
    struct sbx_result r;
    run_protected(policy, f->dir, protect, NULL,
                  "mkdir foreign/state 2>/dev/null || echo cannot; chmod 0777 foreign 2>/dev/null "
                  "|| echo no-chmod",
                  &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "cannot\nno-chmod\n");
    assert_false(read_only_has(&r, path));
    sbx_result_free(&r);
    assert_int_equal(access(path, F_OK), -1);
    free(foreign);
    free(path);
    free(policy);
}

/* A protected path that resolves through something a command could have
 * put there (a file where a directory should be, a dangling symlink)
 * cannot be protected: refused with 125 rather than guessed at. */
static void
test_protect_unresolvable_refused(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char *file = tmpdir_path(f->dir, "file");
    tmpdir_write_file(file, "x\n", 0644);
    char *under_file = tmpdir_path(file, "state");
    char *dangling = tmpdir_path(f->dir, "dangling");
    assert_int_equal(symlink("nowhere/at/all", dangling), 0);
    const char *extra1[] = {"--protect", under_file, NULL};
    char *want1, *want2;
    assert_true(asprintf(&want1, "--protect: cannot resolve %s: Not a directory", under_file) > 0);
    assert_true(asprintf(&want2, "--protect: creating %s: %s is in the way", dangling, dangling) >
                0);
    assert_setup_failure(policy, f->dir, extra1, want1);
    const char *extra2[] = {"--protect", dangling, NULL};
    assert_setup_failure(policy, f->dir, extra2, want2);
    free(want1);
    free(want2);
    free(file);
    free(under_file);
    free(dangling);
    free(policy);
}

/* Bad --protect arguments: 125, a message naming the argument. */
static void
test_protect_bad_arguments(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    const char *rel[] = {"--protect", "rules", NULL};
    assert_setup_failure(policy, f->dir, rel, "--protect \"rules\": not an absolute path");
    const char *empty[] = {"--protect", "", NULL};
    assert_setup_failure(policy, f->dir, empty, "--protect \"\": empty path");
    const char *dots[] = {"--protect", "/tmp/../etc", NULL};
    assert_setup_failure(policy, f->dir, dots,
                         "--protect \"/tmp/../etc\": has a \".\" or \"..\" component");
    /* Checked whatever the policy, before anything is applied. */
    assert_setup_failure(DANGER, f->dir, rel, "--protect \"rules\": not an absolute path");
    free(policy);
}

/* --hide takes absolute paths without "." or ".." components, never "/"
 * itself, whatever the policy; without a mount namespace a --hide path
 * that names something would stay visible: refused, naming it (not the
 * missing one), unless --allow-degraded; so is a read-only call without
 * any, whose world would not be read-only. */
static void
test_hide_arguments_and_without_namespaces(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    const char *rel[] = {"--hide", "token", NULL};
    assert_setup_failure(policy, f->dir, rel, "--hide \"token\": not an absolute path");
    const char *root[] = {"--hide", "//", NULL};
    assert_setup_failure(DANGER, f->dir, root, "--hide \"//\": is the root directory");
    const char *dots[] = {"--hide", "/tmp/./x", NULL};
    assert_setup_failure(policy, f->dir, dots,
                         "--hide \"/tmp/./x\": has a \".\" or \"..\" component");

    char *token = tmpdir_path(f->dir, "token");
    char *missing = tmpdir_path(f->dir, "missing");
    tmpdir_write_file(token, "TOKEN\n", 0600);
    const char *ro = "{\"type\":\"read-only\"}";
    const char *hide[] = {"--hide", token, "--hide", missing, NULL};
    struct sbx_result r;
    run_env(ro, f->dir, hide, "EXECGATE_SANDBOX_NO_NAMESPACES=1", "echo RAN", &r);
    sbx_assert_code(&r, 125);
    char *want;
    assert_true(asprintf(&want, "so the --hide paths %s would stay visible", token) > 0);
    if (strstr(r.res.err, want) == NULL)
        fail_msg("stderr \"%s\" lacks \"%s\"", r.res.err, want);
    assert_null(strstr(r.res.err, missing));
    assert_null(strstr(r.res.out, "RAN"));
    sbx_result_free(&r);
    /* read-only without --hide: the read-only world alone is reason
     * enough, and the message says what it would lose */
    run_env(ro, f->dir, NULL, "EXECGATE_SANDBOX_NO_NAMESPACES=1", "echo RAN", &r);
    sbx_assert_code(&r, 125);
    assert_non_null(strstr(r.res.err, "mount-namespace: cannot create a mount namespace, so chmod, "
                                      "chown, utimensat and setxattr outside the writable roots "
                                      "would not be stopped"));
    sbx_result_free(&r);
    free(want);
    free(token);
    free(missing);
    free(policy);
}

/* Without a mount namespace a protected path in a writable location would
 * stay writable: refused, naming it, unless --allow-degraded. */
static void
test_protect_without_namespaces(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char *rules = tmpdir_path(f->dir, "rules");
    const char *protect[] = {rules, "/etc", NULL};
    struct sbx_result r;
    run_protected(policy, f->dir, protect, "EXECGATE_SANDBOX_NO_NAMESPACES=1", "echo RAN", &r);
    sbx_assert_code(&r, 125);
    char *want;
    assert_true(asprintf(&want, "and the --protect paths %s would stay writable", rules) > 0);
    if (strstr(r.res.err, want) == NULL)
        fail_msg("stderr \"%s\" lacks \"%s\"", r.res.err, want);
    assert_null(strstr(r.res.err, "/etc")); /* outside: not exposed */
    assert_null(strstr(r.res.out, "RAN"));
    sbx_result_free(&r);

    const char *extra[] = {"--allow-degraded", "--protect", rules, NULL};
    run_env(policy, f->dir, extra, "EXECGATE_SANDBOX_NO_NAMESPACES=1", "echo RAN", &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "RAN\n");
    assert_non_null(strstr(r.res.err, want));
    assert_string_equal(json_string_value(json_array_get(degraded_of(&r), 0)), "mount-namespace");
    sbx_result_free(&r);
    free(want);
    free(rules);
    free(policy);
}

static void
test_restricted_reads(void **state)
{
    struct fixture *f = *state;
    char *other = tmpdir_new("sbxother");
    char *secret = tmpdir_path(other, "secret");
    tmpdir_write_file(secret, "s3cret\n", 0644);
    char *mine = tmpdir_path(f->dir, "mine");
    tmpdir_write_file(mine, "mine\n", 0644);
    char *policy, *script;
    assert_true(asprintf(&policy,
                         "{\"type\":\"read-only\",\"sandboxCwd\":\"%s\",\"access\":{\"type\":"
                         "\"restricted\",\"include_platform_defaults\":true,"
                         "\"readable_roots\":[\"%s\"]}}",
                         f->dir, f->dir) > 0);
    assert_true(asprintf(&script, "cat mine; cat %s 2>/dev/null || echo refused", secret) > 0);
    struct sbx_result r;
    run_env(policy, f->dir, NULL, NULL, script, &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "mine\nrefused\n");
    json_t *readable = json_object_get(r.report, "readable");
    assert_string_equal(json_string_value(json_array_get(readable, 0)), "+platform");
    assert_string_equal(json_string_value(json_array_get(readable, 1)), f->dir);
    sbx_result_free(&r);
    tmpdir_remove(other);
    free(other);
    free(secret);
    free(mine);
    free(policy);
    free(script);
}

/* Starts the helper in its own process group with stdout on a pipe;
 * returns its pid and the read end in *out_fd. */
static pid_t
spawn_helper(const char *policy, const char *cwd, const char *script, int *out_fd)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        dup2(p[1], 1);
        execl(sbx_helper(), sbx_helper(), "--policy", policy, "--cwd", cwd, "--", "/bin/sh", "-c",
              script, (char *)NULL);
        _exit(99);
    }
    setpgid(pid, pid);
    close(p[1]);
    *out_fd = p[0];
    return pid;
}

/* Reads from fd until text has arrived (or EOF). */
static void
wait_for_output(int fd, const char *text)
{
    char buf[256];
    size_t len = 0;
    while (len < sizeof buf - 1) {
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, text) != NULL)
            return;
    }
    buf[len] = '\0';
    fail_msg("waiting for \"%s\", got \"%s\"", text, buf);
}

/* Killing the helper's process group ends everything inside, also what
 * left the group (setsid): the PID namespace dies with its init. */
static void
test_group_kill_ends_everything(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char marker[32];
    snprintf(marker, sizeof marker, "%d", 4000 + (int)(getpid() % 1000));
    char *script;
    assert_true(
        asprintf(&script, "setsid sleep %s & sleep %s & echo started; wait", marker, marker) > 0);
    int out;
    pid_t pid = spawn_helper(policy, f->dir, script, &out);
    wait_for_output(out, "started");
    assert_true(proc_with_marker(marker));
    assert_int_equal(kill(-pid, SIGKILL), 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    /* The namespace's processes are killed as its init exits; wait for
     * the last of them to go (bounded, so a failure cannot hang). */
    assert_true(proc_gone(marker, 5000));
    close(out);
    free(script);
    free(policy);
}

/* What the command leaves running in the background (also in a session
 * of its own) is dead and reaped by the time the helper has exited: the
 * helper waits for the init, whose exit kills and reaps the whole PID
 * namespace, so no polling here. */
static void
test_leftovers_dead_at_exit(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char marker[32];
    snprintf(marker, sizeof marker, "%d", 5000 + (int)(getpid() % 1000));
    char *script;
    /* No output pipe held by the leftovers: nothing to wait for but the
     * helper itself. */
    assert_true(asprintf(&script,
                         "setsid sleep %s >/dev/null 2>&1 & sleep %s >/dev/null 2>&1 & exit 5",
                         marker, marker) > 0);
    int out;
    pid_t pid = spawn_helper(policy, f->dir, script, &out);
    close(out);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 5);
    assert_false(proc_with_marker(marker));
    free(script);
    free(policy);
}

/* The pid of the helper's only child (the namespace's init). */
static pid_t
only_child(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *fp = fopen(path, "re");
    assert_non_null(fp);
    int child = -1;
    assert_int_equal(fscanf(fp, "%d", &child), 1);
    fclose(fp);
    return child;
}

/* The value of a "Name:\t..." line of /proc/PID/status (malloc'd). */
static char *
status_field(pid_t pid, const char *name)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *fp = fopen(path, "re");
    assert_non_null(fp);
    char *value = NULL;
    size_t len = strlen(name);
    while (value == NULL && fgets(line, sizeof line, fp) != NULL) {
        if (strncmp(line, name, len) == 0 && line[len] == ':') {
            char *v = line + len + 1;
            v += strspn(v, " \t");
            v[strcspn(v, "\n")] = '\0';
            value = strdup(v);
        }
    }
    fclose(fp);
    assert_non_null(value);
    return value;
}

/* The command shares the init's memory until its execve
 * (CLONE_VM|CLONE_VFORK) but not its confinement: the filter is on the
 * command only, the init (which reaps and forwards) has none. */
static void
test_init_not_confined_by_command(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    int out;
    pid_t pid = spawn_helper(policy, f->dir, "echo ready; exec sleep 30", &out);
    wait_for_output(out, "ready");
    pid_t init = only_child(pid);
    pid_t cmd = only_child(init);
    assert_int_equal(kill(cmd, 0), 0);
    char *init_seccomp = status_field(init, "Seccomp");
    char *cmd_seccomp = status_field(cmd, "Seccomp");
    assert_string_equal(init_seccomp, "0");
    assert_string_equal(cmd_seccomp, "2"); /* filter mode */
    assert_int_equal(kill(-pid, SIGKILL), 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    close(out);
    free(init_seccomp);
    free(cmd_seccomp);
    free(policy);
}

/* An init killed while the command runs: the helper answers with the
 * init's own death (128+9), and the namespace dies with it. */
static void
test_init_killed(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    char marker[32];
    snprintf(marker, sizeof marker, "%d", 6000 + (int)(getpid() % 1000));
    char *script;
    assert_true(asprintf(&script, "echo ready; sleep %s", marker) > 0);
    int out;
    pid_t pid = spawn_helper(policy, f->dir, script, &out);
    wait_for_output(out, "ready");
    pid_t init = only_child(pid);
    assert_true(init > 0);
    assert_int_equal(kill(init, SIGKILL), 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 128 + SIGKILL);
    assert_true(proc_gone(marker, 5000));
    close(out);
    free(script);
    free(policy);
}

/* SIGTERM to the helper reaches the command, which may handle it. */
static void
test_sigterm_forwarded(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    int out;
    pid_t pid = spawn_helper(policy, f->dir,
                             "trap 'echo got-term; exit 3' TERM; echo ready; "
                             "while :; do sleep 0.05; done",
                             &out);
    wait_for_output(out, "ready");
    assert_int_equal(kill(pid, SIGTERM), 0);
    wait_for_output(out, "got-term");
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 3);
    close(out);
    free(policy);
}

/* A SIGTERM sent the moment the command has started is never lost: the
 * init blocks the forwarded signals until its handler is in place (an init
 * without a handler drops what its parent namespace sends).  The command
 * is sleep itself, so the status shows whether the signal reached it. */
static void
test_sigterm_at_start_never_lost(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    for (int i = 0; i < 30; i++) {
        int out;
        pid_t pid = spawn_helper(policy, f->dir, "echo go; exec sleep 3", &out);
        wait_for_output(out, "go");
        assert_int_equal(kill(pid, SIGTERM), 0);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 128 + SIGTERM)
            fprintf(stderr, "round %d: status %#x\n", i, st);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 128 + SIGTERM);
        close(out);
    }
    free(policy);
}

/* The library's argv, as the server builds it, runs the real helper. */
static void
test_library_argv_runs(void **state)
{
    struct fixture *f = *state;
    json_t *j = json_pack("{s:s, s:[s], s:b}", "type", "workspace-write", "writable_roots",
                          "/nonexistent-root", "exclude_slash_tmp", 1);
    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_from_json(j, f->dir, &err);
    assert_non_null(p);
    const char *prog[] = {"/bin/sh", "-c", "echo in > x && cat x && echo no > /tmp/x-$$ || true",
                          NULL};
    char **argv = helper_argv(p, sbx_helper(), f->dir, -1, false, NULL, 0, prog);
    assert_non_null(argv);
    struct proc_result res;
    assert_int_equal(proc_run((const char *const *)argv, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "in\n");
    assert_non_null(strstr(res.err, "Read-only file system")); /* /tmp excluded */
    proc_result_free(&res);
    strv_free(argv);
    sandbox_policy_free(p);
    json_decref(j);
}

/* The library's argv with protect paths runs the real helper, which
 * keeps them read-only. */
static void
test_library_argv_protect_runs(void **state)
{
    struct fixture *f = *state;
    json_t *j = json_pack("{s:s}", "type", "workspace-write");
    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_from_json(j, f->dir, &err);
    assert_non_null(p);
    char *log = tmpdir_path(f->dir, "audit.log");
    tmpdir_write_file(log, "kept\n", 0644);
    char *home = tmpdir_path(f->dir, "home");
    const char *protect[] = {log, home};
    const char *prog[] = {"/bin/sh", "-c",
                          "exec 2>/dev/null; echo x >> audit.log || echo no-log;"
                          " touch home/config.toml || echo no-home; echo in > x && cat x",
                          NULL};
    char **argv = helper_argv(p, sbx_helper(), f->dir, -1, false, protect, 2, prog);
    assert_non_null(argv);
    struct proc_result res;
    assert_int_equal(proc_run((const char *const *)argv, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "no-log\nno-home\nin\n");
    proc_result_free(&res);
    assert_file_is(log, "kept\n");
    strv_free(argv);
    sandbox_policy_free(p);
    json_decref(j);
    free(log);
    free(home);
}

/* A report reader that has gone away: 125 and a message, nothing run. */
static void
test_report_reader_gone(void **state)
{
    int p[2];
    assert_int_equal(pipe(p), 0); /* inherited on purpose: the report fd */
    close(p[0]);
    char fd[16];
    snprintf(fd, sizeof fd, "%d", p[1]);
    const char *argv[] = {sbx_helper(), "--policy", DANGER,      "--cwd", "/", "--report-fd",
                          fd,           "--",       "/bin/echo", "RAN",   NULL};
    struct proc_result res;
    assert_int_equal(proc_run(argv, NULL, &res), 0);
    close(p[1]);
    assert_int_equal(proc_exit_code(&res), 125);
    assert_non_null(strstr(res.err, "writing the report"));
    assert_non_null(strstr(res.err, "Broken pipe"));
    assert_null(strstr(res.out, "RAN"));
    proc_result_free(&res);
}

/* The server reads the report until EOF while the command still runs: no
 * process of the helper (outside, init, command) may keep the fd open. */
static void
test_report_eof_while_running(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    int rep[2], in[2];
    assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(rep[1], 9); /* dup2 clears close-on-exec: inherited */
        execl(sbx_helper(), sbx_helper(), "--policy", policy, "--cwd", f->dir, "--report-fd", "9",
              "--", "/bin/sh", "-c", "read line; echo \"$line\"", (char *)NULL);
        _exit(99);
    }
    close(rep[1]);
    close(in[0]);
    char buf[4096];
    size_t len = 0;
    for (;;) {
        struct pollfd pfd = {.fd = rep[0], .events = POLLIN};
        /* Bounded so a leaked fd fails the test instead of hanging it. */
        assert_int_equal(poll(&pfd, 1, 10000), 1);
        ssize_t n = read(rep[0], buf + len, sizeof buf - 1 - len);
        assert_true(n >= 0);
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    assert_non_null(strstr(buf, "\"policy\":\"workspace-write\""));
    /* EOF came while the command still waits for its input. */
    assert_int_equal(waitpid(pid, NULL, WNOHANG), 0);
    assert_int_equal(write(in[1], "bye\n", 4), 4);
    close(in[1]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    close(rep[0]);
    free(policy);
}

/* --tty-fd: the command runs on a terminal of the sandbox's own devpts
 * (its only entry besides ptmx, although the host has one of this test's
 * open); the master comes over the socket and carries the command's output.
 * A --tty-fd that is not a socket is refused (125) before anything runs. */
static void
test_tty_fd(void **state)
{
    struct fixture *f = *state;
    char *policy = ws_policy(f->dir, "");
    int host = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    assert_true(host >= 0);
    assert_int_equal(unlockpt(host), 0);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(sv[1], 9); /* dup2 clears close-on-exec: inherited */
        execl(sbx_helper(), sbx_helper(), "--policy", policy, "--cwd", f->dir, "--tty-fd", "9",
              "--", "/bin/sh", "-c", "tty; ls /dev/pts | tr '\\n' ' '; echo", (char *)NULL);
        _exit(99);
    }
    close(sv[1]);
    char byte;
    int fds[1] = {-1};
    size_t nfds = 0;
    assert_int_equal(fd_pass_recv(sv[0], &byte, 1, fds, 1, &nfds, NULL), 1);
    assert_int_equal(nfds, 1);
    char out[4096];
    size_t len = 0;
    for (;;) {
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        assert_int_equal(poll(&pfd, 1, 10000), 1);
        ssize_t n = read(fds[0], out + len, sizeof out - 1 - len);
        if (n <= 0) /* EIO: the last slave closed */
            break;
        len += (size_t)n;
    }
    out[len] = '\0';
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (!strstr(out, "/dev/pts/0\r\n0 ptmx \r\n"))
        fprintf(stderr, "on the terminal: %s\n", out);
    assert_non_null(strstr(out, "/dev/pts/0\r\n0 ptmx \r\n"));
    close(fds[0]);
    close(sv[0]);
    close(host);

    int p[2];
    assert_int_equal(pipe(p), 0); /* inherited: not a socket */
    char fd[16];
    snprintf(fd, sizeof fd, "%d", p[0]);
    const char *argv[] = {sbx_helper(), "--policy", policy,      "--cwd", f->dir, "--tty-fd",
                          fd,           "--",       "/bin/echo", "RAN",   NULL};
    struct proc_result res;
    assert_int_equal(proc_run(argv, NULL, &res), 0);
    close(p[0]);
    close(p[1]);
    assert_int_equal(proc_exit_code(&res), 125);
    assert_non_null(strstr(res.err, "--tty-fd"));
    assert_null(strstr(res.out, "RAN"));
    proc_result_free(&res);
    free(policy);
}

int
main(void)
{
    sbx_helper();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_danger_runs_in_cwd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_search_and_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_found_is_127, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_executable_is_126, setup, teardown),
        cmocka_unit_test_setup_teardown(test_setup_failures_are_125, setup, teardown),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_report_reader_gone),
        cmocka_unit_test_setup_teardown(test_tty_fd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_fd_not_inherited, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_fd_runs_the_command, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_fd_incomplete_runs_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_closed_without_landlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allow_degraded_reports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_namespaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_external_sandbox, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_status_propagates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ignored_signals_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_codex_placeholder_read_only_and_removed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_codex_of_the_user_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_codex_placeholder_removed_under_later_binds, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_canonical_roots_are_the_roots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_canonical_root_through_link_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protect_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protect_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protect_missing_created, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protect_nested_and_repeated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protect_outside_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protect_symlink_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protect_uncreatable_left_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protect_unresolvable_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protect_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protect_without_namespaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hide_arguments_and_without_namespaces, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_restricted_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_kill_ends_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_forwarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_at_start_never_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leftovers_dead_at_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_not_confined_by_command, setup, teardown),
        cmocka_unit_test_setup_teardown(test_library_argv_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_library_argv_protect_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_eof_while_running, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
