/*
 * execgate-wrapper, end to end: the real patched Bash with EXEC_WRAPPER set
 * runs the real wrapper, which talks over a real datagram socket to a fake
 * server (tests/support/fake_escalation_server) answering from a table.
 *
 * With EXECGATE_TEST_IN_SHELL=1 the same tests run the patched Bash's
 * linked-in client instead (EXECGATE_WRAP_IN_SHELL=1, and EXEC_WRAPPER
 * naming a file that does not exist, so an exec of the wrapper would
 * fail every test).
 *
 * Covered: Run in place with argv[0] and pid preserved; Deny message and
 * status; Escalate with fds at the same numbers (stdin, /dev/fd/63 from
 * process substitution, 3>log), exit codes and signal deaths propagated,
 * signals forwarded; failing closed without a server, with a dead server,
 * and with every kind of misbehaving server, never running the program.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/esc_proto.h"
#include "tests/support/fake_escalation_server.h"
#include "tests/support/proc.h"
#include "tests/support/tmpdir.h"

static const char *patched_bash;
static const char *wrapper;
static int in_shell; /* the patched Bash asks itself; no wrapper exec */

struct fixture {
    char *dir;
    int client;            /* the escalation socket's number in the shell, or -1 */
    const char *extra_env; /* one more NAME=VALUE for the shell, or NULL */
};

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = tmpdir_new("wrapper");
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

/* Runs `bash -c script` in the fixture's directory with the wrapper set and
 * the escalation socket named by `sock` (-1: CODEX_ESCALATE_SOCKET unset). */
static void
run_bash(struct fixture *f, const char *script, int sock, struct proc_result *res)
{
    char *wrap_env, *sock_env = NULL;
    assert_true(asprintf(&wrap_env, "EXEC_WRAPPER=%s",
                         in_shell ? "/nonexistent/execgate-wrapper" : wrapper) > 0);
    if (sock >= 0)
        assert_true(asprintf(&sock_env, "CODEX_ESCALATE_SOCKET=%d", sock) > 0);
    const char *envp[7] = {"PATH=/usr/bin:/bin", "LC_ALL=C", wrap_env};
    size_t n = 3;
    if (in_shell)
        envp[n++] = "EXECGATE_WRAP_IN_SHELL=1";
    if (f->extra_env)
        envp[n++] = f->extra_env;
    envp[n] = sock_env;
    const char *argv[] = {patched_bash, "-c", script, "bash", NULL};
    struct proc_options opts = {.envp = envp, .cwd = f->dir};
    assert_int_equal(proc_run(argv, &opts, res), 0);
    free(wrap_env);
    free(sock_env);
}

/* Runs script against a fresh fake server with these rules; the server is
 * returned still running (for its records) and must be stopped. */
static struct fake_esc_server *
run_with(struct fixture *f, const struct fake_esc_rule *rules, size_t n, const char *script,
         struct proc_result *res)
{
    int client;
    struct fake_esc_server *srv = fake_esc_server_start(rules, n, &client);
    f->client = client;
    run_bash(f, script, client, res);
    return srv;
}

static void
assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("expected \"%s\" in:\n%s", needle, hay);
}

static int
exists(struct fixture *f, const char *name)
{
    char *p = tmpdir_path(f->dir, name);
    struct stat st;
    int rc = stat(p, &st) == 0;
    free(p);
    return rc;
}

static int
has_target(const struct fake_esc_record *r, int fd)
{
    for (size_t i = 0; i < r->ntargets; i++) {
        if (r->targets[i] == fd)
            return 1;
    }
    return 0;
}

/* ---- Run ---- */

static void
test_run_in_place_keeps_argv0(void **state)
{
    struct fixture *f = *state;
    struct proc_result res;
    struct fake_esc_server *srv =
        run_with(f, NULL, 0, "exec -a custom-name cat /proc/self/cmdline", &res);
    assert_int_equal(proc_exit_code(&res), 0);
    const char want[] = "custom-name\0/proc/self/cmdline";
    assert_int_equal(res.out_len, sizeof want);
    assert_memory_equal(res.out, want, sizeof want);

    const struct fake_esc_record *r = fake_esc_server_find(srv, "cat");
    assert_non_null(r);
    assert_int_equal(r->action, FAKE_ESC_RUN);
    assert_string_equal(r->file, "/usr/bin/cat");
    assert_int_equal(r->argc, 2);
    assert_string_equal(r->argv[0], "custom-name");
    assert_string_equal(r->argv[1], "/proc/self/cmdline");
    char *real = realpath(f->dir, NULL);
    assert_string_equal(r->workdir, real);
    free(real);
    int saw_path = 0;
    for (size_t i = 0; r->env[i]; i++)
        saw_path |= strcmp(r->env[i], "PATH=/usr/bin:/bin") == 0;
    assert_true(saw_path);
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

/* Run means the wrapper becomes the program: same pid as the session's peer. */
static void
test_run_is_the_same_process(void **state)
{
    struct fixture *f = *state;
    struct proc_result res;
    struct fake_esc_server *srv = run_with(f, NULL, 0, "/bin/sh -c 'echo $$'", &res);
    assert_int_equal(proc_exit_code(&res), 0);
    const struct fake_esc_record *r = fake_esc_server_find(srv, "sh");
    assert_non_null(r);
    assert_int_equal(atoi(res.out), r->wrapper_pid);
    assert_true(r->wrapper_pid > 0);
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

/* Every program in a pipeline is asked about, each in its own session. */
/* No protocol socket leaks into a program: Run keeps exactly the shell's
 * sockets (the escalation socket, so nested shells can ask), Escalate
 * gets one fewer (the escalation socket stays behind). */
static void
test_no_socket_leaks(void **state)
{
    struct fixture *f = *state;
    const struct fake_esc_rule rules[] = {{"env", FAKE_ESC_ESCALATE, NULL, 0, 0}};
    struct proc_result res;
    struct fake_esc_server *srv =
        run_with(f, rules, 1,
                 "a=$(ls -l /proc/$$/fd | grep -c socket:);"
                 " b=$(ls -l /proc/self/fd | grep -c socket:);"
                 " c=$(/usr/bin/env ls -l /proc/self/fd | grep -c socket:); echo $a $b $c",
                 &res);
    int a = -1, b = -1, c = -1;
    assert_int_equal(sscanf(res.out, "%d %d %d", &a, &b, &c), 3);
    assert_true(a >= 1);
    assert_int_equal(b, a);
    assert_int_equal(c, a - 1);
    assert_int_equal(fake_esc_server_find(srv, "env")->action, FAKE_ESC_ESCALATE);
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

static void
test_run_pipeline(void **state)
{
    struct fixture *f = *state;
    struct proc_result res;
    struct fake_esc_server *srv =
        run_with(f, NULL, 0, "printf 'b\\na\\n' | /usr/bin/sort | /usr/bin/head -n1", &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "a\n");
    assert_non_null(fake_esc_server_find(srv, "sort"));
    assert_non_null(fake_esc_server_find(srv, "head"));
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

static void
test_run_script_without_shebang(void **state)
{
    struct fixture *f = *state;
    char *script = tmpdir_path(f->dir, "noshebang");
    tmpdir_write_file(script, "echo from-script \"$1\"\n", 0755);
    struct proc_result res;
    struct fake_esc_server *srv = run_with(f, NULL, 0, "./noshebang arg1; echo status=$?", &res);
    assert_string_equal(res.out, "from-script arg1\nstatus=0\n");
    fake_esc_server_stop(srv);
    proc_result_free(&res);
    free(script);
}

/* With EXECGATE_BASH naming the patched Bash, a script without "#!" runs in
 * it, so the script's own commands are asked about too. */
static void
test_run_script_keeps_wrapping(void **state)
{
    struct fixture *f = *state;
    char *script = tmpdir_path(f->dir, "inner");
    tmpdir_write_file(script, "/bin/echo inner \"$0\"\n", 0755);
    char *env;
    assert_true(asprintf(&env, "EXECGATE_BASH=%s", patched_bash) > 0);
    f->extra_env = env;
    struct proc_result res;
    struct fake_esc_server *srv = run_with(f, NULL, 0, "./inner; echo status=$?", &res);
    assert_string_equal(res.out, "inner ./inner\nstatus=0\n");
    const struct fake_esc_record *r = fake_esc_server_find(srv, "echo");
    assert_non_null(r);
    assert_string_equal(r->file, "/bin/echo");
    fake_esc_server_stop(srv);
    proc_result_free(&res);
    free(env);
    free(script);
}

/* A request beyond the protocol's limits is not sent, and nothing runs. */
/* A request that fits ESC_MAX_DGRAM rides in the datagram that opens the
 * session; a larger one (a 70 000-byte variable) follows a HELLO on the
 * stream, for a Run and an Escalate alike. */
static void
test_request_datagram_or_stream(void **state)
{
    struct fixture *f = *state;
    static const struct fake_esc_rule rules[] = {{"sh", FAKE_ESC_ESCALATE, NULL, 0, 0}};
    struct proc_result res;
    struct fake_esc_server *srv =
        run_with(f, rules, 1,
                 "/bin/true; BIG=$(printf '%070000d' 0) /bin/cat /dev/null; "
                 "BIG=$(printf '%070000d' 0) /bin/sh -c 'echo ${#BIG}; exit 7'",
                 &res);
    assert_int_equal(proc_exit_code(&res), 7);
    assert_string_equal(res.out, "70000\n");
    const struct fake_esc_record *t = fake_esc_server_find(srv, "true");
    const struct fake_esc_record *c = fake_esc_server_find(srv, "cat");
    const struct fake_esc_record *sh = fake_esc_server_find(srv, "sh");
    assert_non_null(t);
    assert_non_null(c);
    assert_non_null(sh);
    assert_int_equal(t->request_on_stream, 0);
    assert_int_equal(c->request_on_stream, 1);
    assert_int_equal(sh->request_on_stream, 1);
    assert_int_equal(sh->action, FAKE_ESC_ESCALATE);
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

/* A REQUEST datagram the socket refuses (EMSGSIZE: here a send buffer set
 * to its minimum, below the request's 20 000 bytes) is sent after a HELLO
 * on the stream instead: the program still runs, asked once. */
static void
test_request_datagram_refused_falls_back(void **state)
{
    struct fixture *f = *state;
    int client;
    struct fake_esc_server *srv = fake_esc_server_start(NULL, 0, &client);
    int small = 1;
    assert_int_equal(setsockopt(client, SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    struct proc_result res;
    run_bash(f, "BIG=$(printf '%020000d' 0) /bin/cat /dev/null && /bin/echo ok", client, &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_string_equal(res.out, "ok\n");
    const struct fake_esc_record *c = fake_esc_server_find(srv, "cat");
    assert_non_null(c);
    assert_int_equal(c->request_on_stream, 1);
    assert_int_equal(fake_esc_server_count(srv), 2);
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

static void
test_request_over_limit(void **state)
{
    struct fixture *f = *state;
    int client;
    struct fake_esc_server *srv = fake_esc_server_start(NULL, 0, &client);
    size_t n = ESC_MAX_ARGS + 1;
    const char **argv = calloc(n + 3, sizeof *argv);
    assert_non_null(argv);
    argv[0] = wrapper;
    argv[1] = "/usr/bin/touch";
    for (size_t i = 0; i < n; i++)
        argv[i + 2] = "m";
    char *sock_env;
    assert_true(asprintf(&sock_env, "CODEX_ESCALATE_SOCKET=%d", client) > 0);
    const char *envp[] = {sock_env, NULL};
    struct proc_options opts = {.envp = envp, .cwd = f->dir};
    struct proc_result res;
    assert_int_equal(proc_run(argv, &opts, &res), 0);
    assert_int_equal(proc_exit_code(&res), 126);
    assert_contains(res.err, "cannot ask about /usr/bin/touch: too many argv or env entries");
    assert_false(exists(f, "m"));
    fake_esc_server_stop(srv);
    proc_result_free(&res);
    free(sock_env);
    free(argv);
}

static void
test_run_exec_errors(void **state)
{
    struct fixture *f = *state;
    char *plain = tmpdir_path(f->dir, "notexec");
    tmpdir_write_file(plain, "echo never\n", 0644);
    /* Not a valid ELF file, with a NUL before the first newline: Bash calls
     * that binary and refuses it rather than running it as a script. */
    char *bin = tmpdir_path(f->dir, "binary");
    tmpdir_write_file(bin, "#", 0755);
    FILE *fp = fopen(bin, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite("\x00\x01\x02junk\n", 1, 8, fp), 8);
    fclose(fp);
    struct proc_result res;
    struct fake_esc_server *srv = run_with(
        f, NULL, 0, "./missing; echo s1=$?; ./notexec; echo s2=$?; ./binary; echo s3=$?", &res);
    assert_string_equal(res.out, "s1=127\ns2=126\ns3=126\n");
    /* the same statuses either way; the messages are whoever exec'd */
    const char *who = in_shell ? "bash: line 1: " : "execgate-wrapper: ";
    char *want[3];
    assert_true(asprintf(&want[0], "%s./missing: No such file or directory", who) > 0);
    assert_true(asprintf(&want[1], "%s./notexec: Permission denied", who) > 0);
    assert_true(asprintf(&want[2], "%s./binary: cannot execute binary file", who) > 0);
    for (size_t i = 0; i < 3; i++) {
        assert_contains(res.err, want[i]);
        free(want[i]);
    }
    fake_esc_server_stop(srv);
    proc_result_free(&res);
    free(plain);
    free(bin);
}

/* ---- Deny ---- */

static void
test_deny(void **state)
{
    struct fixture *f = *state;
    char *victim = tmpdir_path(f->dir, "victim");
    tmpdir_write_file(victim, "keep", 0644);
    const struct fake_esc_rule rules[] = {
        {"rm", FAKE_ESC_DENY, "Execution forbidden by policy", 0, 0},
    };
    struct proc_result res;
    struct fake_esc_server *srv = run_with(f, rules, 1, "rm -f victim; echo status=$?", &res);
    assert_string_equal(res.out, "status=1\n");
    assert_string_equal(res.err, "Execution denied: Execution forbidden by policy\n");
    assert_true(exists(f, "victim"));
    fake_esc_server_stop(srv);
    proc_result_free(&res);
    free(victim);
}

/* ---- Escalate ---- */

static void
test_escalate_exit_code(void **state)
{
    struct fixture *f = *state;
    const struct fake_esc_rule rules[] = {{"sh", FAKE_ESC_ESCALATE, NULL, 0, 0}};
    struct proc_result res;
    struct fake_esc_server *srv =
        run_with(f, rules, 1, "/bin/sh -c 'echo out; echo err >&2; exit 42'; echo status=$?", &res);
    assert_string_equal(res.out, "out\nstatus=42\n");
    assert_string_equal(res.err, "err\n");
    const struct fake_esc_record *r = fake_esc_server_find(srv, "sh");
    assert_non_null(r);
    assert_true(r->program_pid > 0);
    assert_int_not_equal(r->program_pid, r->wrapper_pid); /* the server ran it */
    assert_true(has_target(r, 0) && has_target(r, 1) && has_target(r, 2));
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

static void
test_escalate_stdin(void **state)
{
    struct fixture *f = *state;
    const struct fake_esc_rule rules[] = {{"cat", FAKE_ESC_ESCALATE, NULL, 0, 0}};
    struct proc_result res;
    struct fake_esc_server *srv =
        run_with(f, rules, 1, "echo piped-through | cat; echo status=$?", &res);
    assert_string_equal(res.out, "piped-through\nstatus=0\n");
    assert_int_equal(fake_esc_server_find(srv, "cat")->action, FAKE_ESC_ESCALATE);
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

/* diff <(a) <(b): the program opens /dev/fd/63 and /dev/fd/62, which only
 * exist if those fds arrive at the same numbers. */
static void
test_escalate_process_substitution(void **state)
{
    struct fixture *f = *state;
    const struct fake_esc_rule rules[] = {{"diff", FAKE_ESC_ESCALATE, NULL, 0, 0}};
    struct proc_result res;
    struct fake_esc_server *srv = run_with(
        f, rules, 1,
        "diff <(echo a) <(echo a); echo same=$?; diff <(echo a) <(echo b); echo differ=$?", &res);
    assert_contains(res.out, "same=0\n");
    assert_contains(res.out, "< a\n");
    assert_contains(res.out, "> b\n");
    assert_contains(res.out, "differ=1\n");
    assert_string_equal(res.err, "");
    const struct fake_esc_record *r = fake_esc_server_find(srv, "diff");
    assert_non_null(r);
    assert_int_equal(r->action, FAKE_ESC_ESCALATE);
    for (size_t i = 1; i <= 2; i++) {
        int fd = -1;
        assert_int_equal(sscanf(r->argv[i], "/dev/fd/%d", &fd), 1);
        assert_true(has_target(r, fd));
    }
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

static void
test_escalate_fd3(void **state)
{
    struct fixture *f = *state;
    const struct fake_esc_rule rules[] = {{"sh", FAKE_ESC_ESCALATE, NULL, 0, 0}};
    struct proc_result res;
    struct fake_esc_server *srv =
        run_with(f, rules, 1, "/bin/sh -c 'echo to-three >&3' 3>log; echo status=$?", &res);
    assert_string_equal(res.out, "status=0\n");
    char *log = tmpdir_path(f->dir, "log");
    char *text = tmpdir_read_file(log, NULL);
    assert_non_null(text);
    assert_string_equal(text, "to-three\n");
    const struct fake_esc_record *r = fake_esc_server_find(srv, "sh");
    assert_true(has_target(r, 3));
    assert_true(has_target(r, 0) && has_target(r, 1) && has_target(r, 2));
    /* The protocol's own socket stays with the wrapper. */
    assert_false(has_target(r, f->client));
    free(text);
    free(log);
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

/* SIGTERM to the wrapper reaches the escalated program through the server;
 * the program's signal death comes back as the shell reports it (143). */
static void
test_escalate_signal_forwarded(void **state)
{
    struct fixture *f = *state;
    const struct fake_esc_rule rules[] = {{"sleep", FAKE_ESC_ESCALATE_SIGNAL, NULL, SIGTERM, 0}};
    struct proc_result res;
    struct fake_esc_server *srv = run_with(f, rules, 1, "sleep 60; echo status=$?", &res);
    assert_string_equal(res.out, "status=143\n");
    const struct fake_esc_record *r = fake_esc_server_find(srv, "sleep");
    assert_non_null(r);
    assert_int_equal(r->nsignals, 1);
    assert_int_equal(r->signals[0], SIGTERM);
    assert_true(WIFSIGNALED(r->status));
    assert_int_equal(WTERMSIG(r->status), SIGTERM);
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

static void
test_escalate_sigint_forwarded(void **state)
{
    struct fixture *f = *state;
    const struct fake_esc_rule rules[] = {{"sleep", FAKE_ESC_ESCALATE_SIGNAL, NULL, SIGINT, 0}};
    struct proc_result res;
    struct fake_esc_server *srv = run_with(f, rules, 1, "sleep 60; echo status=$?", &res);
    assert_string_equal(res.out, "status=130\n");
    const struct fake_esc_record *r = fake_esc_server_find(srv, "sleep");
    assert_int_equal(r->nsignals, 1);
    assert_int_equal(r->signals[0], SIGINT);
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

/* Once the fds are handed over only the program holds them: when it closes
 * its stdout the reader sees end of file while the program still runs.
 * (The program then waits for the reader, so a wrapper that kept its copy
 * would leave cat waiting; `timeout` only bounds that failure.) */
static void
test_escalate_wrapper_lets_go_of_fds(void **state)
{
    struct fixture *f = *state;
    const struct fake_esc_rule rules[] = {{"sh", FAKE_ESC_ESCALATE, NULL, 0, 0}};
    struct proc_result res;
    struct fake_esc_server *srv =
        run_with(f, rules, 1,
                 "mkfifo go; /bin/sh -c 'exec >&-; read x < go' |"
                 " { timeout 20 cat; echo cat=$?; echo go > go; }; echo ps=${PIPESTATUS[*]}",
                 &res);
    assert_string_equal(res.out, "cat=0\nps=0 0\n");
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

/* A signal the shell ignores for this command (trap '' INT) is not
 * forwarded; the next one is. */
static void
test_escalate_ignored_signal_not_forwarded(void **state)
{
    struct fixture *f = *state;
    const struct fake_esc_rule rules[] = {
        {"sleep", FAKE_ESC_ESCALATE_SIGNAL, NULL, SIGINT, SIGTERM}};
    struct proc_result res;
    struct fake_esc_server *srv =
        run_with(f, rules, 1, "trap '' INT; sleep 60; echo status=$?", &res);
    assert_string_equal(res.out, "status=143\n");
    const struct fake_esc_record *r = fake_esc_server_find(srv, "sleep");
    assert_non_null(r);
    assert_int_equal(r->nsignals, 1);
    assert_int_equal(r->signals[0], SIGTERM);
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

/* A program killed by SIGPIPE: the wrapper dies the same way, so Bash
 * reports 141 and stays quiet about it, as for the program itself. */
static void
test_escalate_sigpipe(void **state)
{
    struct fixture *f = *state;
    const struct fake_esc_rule rules[] = {{"yes", FAKE_ESC_ESCALATE, NULL, 0, 0}};
    struct proc_result res;
    struct fake_esc_server *srv =
        run_with(f, rules, 1, "yes | head -n1; echo \"ps=${PIPESTATUS[*]}\"", &res);
    assert_string_equal(res.out, "y\nps=141 0\n");
    assert_string_equal(res.err, "");
    const struct fake_esc_record *r = fake_esc_server_find(srv, "yes");
    assert_non_null(r);
    assert_true(WIFSIGNALED(r->status));
    assert_int_equal(WTERMSIG(r->status), SIGPIPE);
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

/* ---- failing closed ---- */

static void
test_no_server(void **state)
{
    struct fixture *f = *state;
    struct proc_result res;
    run_bash(f, "touch made; echo status=$?", -1, &res);
    assert_string_equal(res.out, "status=126\n");
    assert_contains(res.err, "execgate-wrapper: CODEX_ESCALATE_SOCKET is not set: refusing to "
                             "run /usr/bin/touch without the server's decision");
    assert_false(exists(f, "made"));
    proc_result_free(&res);

    /* The variable names an fd that is not open, or not a datagram socket. */
    run_bash(f, "touch made; echo status=$?", 99, &res);
    assert_string_equal(res.out, "status=126\n");
    assert_contains(res.err, "cannot reach the execgate server");
    assert_false(exists(f, "made"));
    proc_result_free(&res);
    run_bash(f, "touch made; echo status=$?", 0, &res);
    assert_string_equal(res.out, "status=126\n");
    assert_false(exists(f, "made"));
    proc_result_free(&res);
}

/* The server's end is closed: sending the HELLO fails. */
static void
test_dead_server(void **state)
{
    struct fixture *f = *state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
    close(sv[0]);
    struct proc_result res;
    run_bash(f, "touch made; echo status=$?", sv[1], &res);
    close(sv[1]);
    assert_string_equal(res.out, "status=126\n");
    assert_contains(res.err, "cannot reach the execgate server: refusing to run /usr/bin/touch");
    assert_false(exists(f, "made"));
    proc_result_free(&res);
}

static void
expect_refused(struct fixture *f, enum fake_esc_action action, const char *message)
{
    const struct fake_esc_rule rules[] = {{"touch", action, NULL, 0, 0}};
    struct proc_result res;
    struct fake_esc_server *srv = run_with(f, rules, 1, "touch made; echo status=$?", &res);
    assert_string_equal(res.out, "status=126\n");
    assert_contains(res.err, message);
    assert_false(exists(f, "made"));
    assert_non_null(fake_esc_server_find(srv, "touch")); /* it did ask */
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

static void
test_server_dies_mid_handshake(void **state)
{
    expect_refused(*state, FAKE_ESC_HANGUP,
                   "the execgate server closed the connection before deciding");
}

static void
test_server_sends_garbage(void **state)
{
    expect_refused(*state, FAKE_ESC_GARBAGE, "bad message from the execgate server");
}

static void
test_server_wrong_version(void **state)
{
    expect_refused(*state, FAKE_ESC_BAD_VERSION, "protocol version mismatch");
}

static void
test_server_wrong_reply(void **state)
{
    expect_refused(*state, FAKE_ESC_WRONG_REPLY, "sent EXIT where a decision was expected");
}

/* Escalated, fds handed over, then the server goes away: the wrapper
 * cannot know the status and says so; it does not run the program itself. */
static void
test_server_dies_while_escalated(void **state)
{
    struct fixture *f = *state;
    const struct fake_esc_rule rules[] = {{"touch", FAKE_ESC_ESCALATE_HANGUP, NULL, 0, 0}};
    struct proc_result res;
    struct fake_esc_server *srv = run_with(f, rules, 1, "touch made; echo status=$?", &res);
    assert_string_equal(res.out, "status=126\n");
    assert_contains(res.err, "closed the connection while the escalated program ran");
    assert_false(exists(f, "made"));
    fake_esc_server_stop(srv);
    proc_result_free(&res);
}

/* ---- the command line itself ---- */

static void
test_usage(void **state)
{
    struct proc_result res;
    const char *argv[] = {wrapper, NULL};
    assert_int_equal(proc_run(argv, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 2);
    assert_contains(res.err, "usage: execgate-wrapper FILE ARGV0");
    proc_result_free(&res);
    const char *vargv[] = {wrapper, "--version", NULL};
    assert_int_equal(proc_run(vargv, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_contains(res.out, "execgate-wrapper ");
    proc_result_free(&res);
}

int
main(void)
{
    patched_bash = getenv("EXECGATE_TEST_BASH");
    wrapper = getenv("EXECGATE_TEST_WRAPPER");
    const char *mode = getenv("EXECGATE_TEST_IN_SHELL");
    in_shell = mode != NULL && strcmp(mode, "1") == 0;
    if (patched_bash == NULL || wrapper == NULL) {
        fprintf(stderr, "EXECGATE_TEST_BASH and EXECGATE_TEST_WRAPPER must be set\n");
        return 1;
    }
    /* The fake server may write to a session whose wrapper is gone. */
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_run_in_place_keeps_argv0, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_is_the_same_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_pipeline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_socket_leaks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_script_without_shebang, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_script_keeps_wrapping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_datagram_or_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_datagram_refused_falls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_over_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_exec_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deny, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escalate_exit_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escalate_stdin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escalate_process_substitution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escalate_fd3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escalate_signal_forwarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escalate_sigint_forwarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escalate_wrapper_lets_go_of_fds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escalate_ignored_signal_not_forwarded, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_escalate_sigpipe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_dies_mid_handshake, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_sends_garbage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_wrong_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_wrong_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_dies_while_escalated, setup, teardown),
        cmocka_unit_test(test_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
