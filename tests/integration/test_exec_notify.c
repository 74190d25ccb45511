/*
 * exec-notify: execgate-sandbox --exec-notify-fd under the test supervisor
 * (exec_notify + the server's decide_exec).  With `rm` forbidden, every way of
 * starting rm from inside the command's process tree must fail, leave the
 * file in place and print the refusal; prompts ask for descendants; normal
 * work runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervise/exec_notify.h"
#include "supervise/unix_connect.h"
#include "tests/support/proc.h"
#include "tests/support/tmpdir.h"

#define RULES                                                                                      \
    "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", justification=\"rm is off limits\")\n"  \
    "prefix_rule(pattern=[\"touch\"], decision=\"prompt\")\n"

struct fixture {
    char *dir;   /* the command's workspace, holding `victim` */
    char *rules; /* outside the workspace */
    char *rules_dir;
};

static const char *
env_or_skip(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr, "%s not set\n", name);
        exit(77);
    }
    return v;
}

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = tmpdir_new("exnf");
    f->rules_dir = tmpdir_new("exnf-rules");
    f->rules = tmpdir_path(f->rules_dir, "test.rules");
    tmpdir_write_file(f->rules, RULES, 0644);
    char *victim = tmpdir_path(f->dir, "victim");
    tmpdir_write_file(victim, "keep me\n", 0644);
    free(victim);
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    tmpdir_remove(f->dir);
    tmpdir_remove(f->rules_dir);
    free(f->dir);
    free(f->rules);
    free(f->rules_dir);
    free(f);
    return 0;
}

static char *
policy_for(const struct fixture *f, bool full_access)
{
    char *p = NULL;
    if (full_access)
        p = strdup("{\"type\":\"danger-full-access\"}");
    else
        assert_true(asprintf(&p, "{\"type\":\"workspace-write\",\"sandboxCwd\":\"%s\"}", f->dir) >
                    0);
    assert_non_null(p);
    return p;
}

/* Runs `sh -c script` in f->dir under the supervisor. */
static void
run_sh(const struct fixture *f, bool full_access, const char *answer, const char *script,
       struct proc_result *res)
{
    char *policy = policy_for(f, full_access);
    const char *argv[] = {env_or_skip("EXECGATE_TEST_EXEC_NOTIFY_SUPERVISOR"),
                          f->rules,
                          env_or_skip("EXECGATE_TEST_SANDBOX"),
                          policy,
                          f->dir,
                          "--",
                          "/bin/sh",
                          "-c",
                          script,
                          NULL};
    setenv("EXEC_NOTIFY_ANSWER", answer ? answer : "decline", 1);
    struct proc_options o = {.cwd = f->dir};
    assert_int_equal(proc_run(argv, &o, res), 0);
    free(policy);
}

static bool
exists(const struct fixture *f, const char *name)
{
    char *p = tmpdir_path(f->dir, name);
    struct stat st;
    bool ok = lstat(p, &st) == 0;
    free(p);
    return ok;
}

/* The attack ran, rm was refused with the rule's reason, victim is intact. */
static void
assert_rm_refused(const struct fixture *f, bool full_access, const char *script)
{
    struct proc_result res;
    run_sh(f, full_access, NULL, script, &res);
    if (!exists(f, "victim") || strstr(res.err, "execgate: refused `") == NULL ||
        strstr(res.err, "rm is off limits") == NULL)
        fprintf(stderr, "script: %s\nstatus %d\nstdout: %s\nstderr: %s\n", script,
                proc_exit_code(&res), res.out, res.err);
    assert_true(exists(f, "victim"));
    /* The line names the command as started (a symlink's own name) and
     * the rule's reason. */
    assert_non_null(strstr(res.err, "execgate: refused `"));
    assert_non_null(strstr(res.err, "rm is off limits"));
    proc_result_free(&res);
}

/* The control: without the rule the same mechanism lets rm run, so a
 * refusal above is the rule's doing and the attack scripts do work. */
static void
test_control_rm_allowed_without_rule(void **state)
{
    struct fixture *f = *state;
    tmpdir_write_file(f->rules, "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n", 0644);
    struct proc_result res;
    run_sh(f, false, NULL, "env rm victim", &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_false(exists(f, "victim"));
    proc_result_free(&res);
}

static void
test_sh_c_rm(void **state)
{
    assert_rm_refused(*state, false, "rm victim");
}

static void
test_python_execv(void **state)
{
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    /* argv[0] lies: the program is chosen by the path. */
    assert_rm_refused(
        *state, false,
        "/usr/bin/python3 -c 'import os; os.execv(\"/bin/rm\", [\"ls\", \"victim\"])'");
}

static void
test_env_rm(void **state)
{
    assert_rm_refused(*state, false, "env rm victim");
}

/* The refusal line goes to a pipe nobody reads: the write's SIGPIPE must
 * not kill the supervisor (exit 141), which goes on refusing. */
static void
test_stderr_pipe_without_reader(void **state)
{
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    struct fixture *f = *state;
    struct proc_result res;
    run_sh(f, false, NULL,
           "/usr/bin/python3 -c 'import os\n"
           "r, w = os.pipe(); os.close(r); os.dup2(w, 2)\n"
           "pid = os.fork()\n"
           "if pid == 0:\n"
           "    try: os.execv(\"/bin/rm\", [\"rm\", \"victim\"])\n"
           "    except OSError: os._exit(3)\n"
           "print(\"child\", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n'; "
           "rm victim",
           &res);
    assert_int_not_equal(proc_exit_code(&res), 141);
    assert_non_null(strstr(res.out, "child 3"));
    /* The second rm, after the pipe episode, is still refused and told. */
    assert_non_null(strstr(res.err, "execgate: refused `rm victim`"));
    assert_true(exists(f, "victim"));
    proc_result_free(&res);
}

/* env's PATH search retries rm in every PATH directory that has it (at
 * least /usr/bin and /bin here): the person still reads one line. */
static void
test_one_line_per_refused_command(void **state)
{
    struct fixture *f = *state;
    struct proc_result res;
    run_sh(f, false, NULL, "PATH=/usr/bin:/bin:/usr/bin env rm victim", &res);
    size_t lines = 0;
    for (const char *p = res.err; (p = strstr(p, "execgate: refused")) != NULL; p++)
        lines++;
    assert_int_equal(lines, 1);
    assert_true(exists(f, "victim"));
    proc_result_free(&res);
}

static void
test_xargs_rm(void **state)
{
    assert_rm_refused(*state, false, "echo victim | xargs rm");
}

static void
test_find_exec_rm(void **state)
{
    assert_rm_refused(*state, false, "find . -name victim -exec rm {} +");
}

static void
test_makefile_recipe(void **state)
{
    struct fixture *f = *state;
    char *mk = tmpdir_path(f->dir, "Makefile");
    tmpdir_write_file(mk, "all:\n\trm victim\n", 0644);
    free(mk);
    assert_rm_refused(f, false, "make");
}

static void
test_git_hook(void **state)
{
    struct fixture *f = *state;
    struct proc_result res;
    /* The repository and its hook are made before, outside the sandbox. */
    run_sh(f, true, NULL,
           "git init -q . && printf '#!/bin/sh\\nrm victim\\n' > .git/hooks/pre-commit && "
           "chmod +x .git/hooks/pre-commit",
           &res);
    assert_int_equal(proc_exit_code(&res), 0);
    proc_result_free(&res);
    assert_rm_refused(f, true, "git -c user.name=t -c user.email=t@e commit -q --allow-empty -m x");
}

static void
test_sh_c_nested(void **state)
{
    assert_rm_refused(*state, true, "sh -c 'sh -c \"rm victim\"'");
}

/* Compiles raw-exec.c statically, outside the workspace. */
static char *
raw_exec(const struct fixture *f)
{
    char *bin = tmpdir_path(f->rules_dir, "raw-exec");
    const char *argv[] = {"/usr/bin/cc", "-static", "-O1",
                          "-o",          bin,       env_or_skip("EXECGATE_TEST_RAW_EXEC_SRC"),
                          NULL};
    struct proc_result res;
    assert_int_equal(proc_run(argv, NULL, &res), 0);
    if (proc_exit_code(&res) != 0)
        fprintf(stderr, "cc -static failed: %s\n", res.err);
    assert_int_equal(proc_exit_code(&res), 0);
    proc_result_free(&res);
    return bin;
}

static void
run_raw(void **state, const char *args)
{
    struct fixture *f = *state;
    if (access("/usr/bin/cc", X_OK) != 0)
        skip();
    char *bin = raw_exec(f);
    char *script = NULL;
    assert_true(asprintf(&script, "%s %s", bin, args) > 0);
    assert_rm_refused(f, false, script);
    free(script);
    free(bin);
}

static void
test_static_raw_execve(void **state)
{
    run_raw(state, "execve /bin/rm harmless victim");
}

static void
test_execveat_dirfd(void **state)
{
    run_raw(state, "execveat /usr/bin rm harmless victim");
}

static void
test_execveat_empty_path(void **state)
{
    run_raw(state, "emptypath /usr/bin/rm harmless victim");
}

/* The path, the arguments and the argv array each across a page boundary
 * (the supervisor reads the target's memory a page at a time): a rule on
 * the third argument refuses `rm -f victim`, while `rm -f other` (allowed:
 * the prefix differs only in the part on the second page) runs.  A reader
 * that cut or garbled them would let the first through or refuse both. */
static void
test_arguments_across_pages(void **state)
{
    struct fixture *f = *state;
    if (access("/usr/bin/cc", X_OK) != 0)
        skip();
    tmpdir_write_file(f->rules,
                      "prefix_rule(pattern=[\"rm\", \"-f\", \"victim\"], decision=\"forbidden\", "
                      "justification=\"rm is off limits\")\n",
                      0644);
    char *other = tmpdir_path(f->dir, "other");
    tmpdir_write_file(other, "delete me\n", 0644);
    free(other);
    char *bin = raw_exec(f);
    char *script = NULL;
    assert_true(asprintf(&script, "%s straddle /bin/rm rm -f victim", bin) > 0);
    struct proc_result res;
    run_sh(f, false, NULL, script, &res);
    assert_true(exists(f, "victim"));
    assert_non_null(strstr(res.err, "execgate: refused `rm -f victim`: rm is off limits"));
    proc_result_free(&res);
    free(script);
    assert_true(asprintf(&script, "%s straddle /bin/rm rm -f other", bin) > 0);
    run_sh(f, false, NULL, script, &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_false(exists(f, "other"));
    proc_result_free(&res);
    free(script);
    free(bin);
}

/* A process under our filter installs a listener of its own for execve:
 * were it allowed, the newest filter's listener would be asked first and
 * its CONTINUE would end the question.  The kernel allows one listener per
 * filter tree (EBUSY for the second), so the attack fails at its start;
 * this test keeps that true.  (Outside our filter the same program does
 * run rm: see docs/enforcement.md.) */
static void
test_own_listener_refused(void **state)
{
    struct fixture *f = *state;
    if (access("/usr/bin/cc", X_OK) != 0)
        skip();
    char *bin = raw_exec(f);
    char *script = NULL;
    assert_true(asprintf(&script, "%s ownlistener /bin/rm rm victim; echo status=$?", bin) > 0);
    struct proc_result res;
    run_sh(f, false, NULL, script, &res);
    if (!exists(f, "victim"))
        fprintf(stderr, "stdout: %s\nstderr: %s\n", res.out, res.err);
    assert_true(exists(f, "victim"));
    assert_non_null(strstr(res.out, "status=3"));
    assert_non_null(strstr(res.err, "own listener refused"));
    proc_result_free(&res);
    free(script);
    free(bin);
}

static void
test_relative_path_after_cd(void **state)
{
    struct fixture *f = *state;
    char *script = NULL;
    assert_true(asprintf(&script, "cd /usr/bin && ./rm %s/victim", f->dir) > 0);
    assert_rm_refused(f, false, script);
    free(script);
}

static void
test_symlink_other_name(void **state)
{
    assert_rm_refused(*state, false, "ln -s /bin/rm zap && ./zap victim");
}

static void
test_shebang_interpreter(void **state)
{
    /* The kernel runs the #! interpreter without another execve. */
    assert_rm_refused(*state, false, "printf '#!/bin/rm\\n' > zap && chmod +x zap && ./zap victim");
}

/* The reference runs an approved `sh -c` with nothing inside checked
 * again; here the approved shell's own children are still decided. */
static void
test_approved_shell_still_checked_inside(void **state)
{
    struct fixture *f = *state;
    tmpdir_write_file(f->rules, RULES "prefix_rule(pattern=[\"sh\"], decision=\"prompt\")\n", 0644);
    struct proc_result res;
    run_sh(f, false, "approve", "sh -c 'echo inner; rm victim'", &res);
    assert_non_null(strstr(res.err, "exec-notify: asked: /usr/bin/sh"));
    assert_non_null(strstr(res.out, "inner"));
    assert_non_null(strstr(res.err, "execgate: refused `rm victim`: rm is off limits"));
    assert_true(exists(f, "victim"));
    proc_result_free(&res);
}

static void
test_prompt_approved(void **state)
{
    struct fixture *f = *state;
    struct proc_result res;
    run_sh(f, false, "approve", "sh -c 'touch made'", &res);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_non_null(strstr(res.err, "exec-notify: asked: /usr/bin/touch"));
    assert_true(exists(f, "made"));
    proc_result_free(&res);
}

static void
test_prompt_declined(void **state)
{
    struct fixture *f = *state;
    struct proc_result res;
    run_sh(f, false, "decline", "sh -c 'touch made'", &res);
    assert_int_not_equal(proc_exit_code(&res), 0);
    assert_non_null(strstr(res.err, "exec-notify: asked:"));
    assert_non_null(strstr(res.err, "execgate: refused `touch made`: declined"));
    assert_false(exists(f, "made"));
    proc_result_free(&res);
}

static void
test_normal_work(void **state)
{
    struct fixture *f = *state;
    struct proc_result res;
    run_sh(f, true, NULL,
           "git init -q . && git status --short && printf 'int f(void){return 1;}' > "
           "a.c && cc -c a.c -o a.o && test -s a.o && echo ok",
           &res);
    if (proc_exit_code(&res) != 0)
        fprintf(stderr, "%s", res.err);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_non_null(strstr(res.out, "ok"));
    assert_null(strstr(res.err, "execgate: refused"));
    proc_result_free(&res);
}

static void
test_npm_version(void **state)
{
    struct fixture *f = *state;
    if (access("/usr/bin/npm", X_OK) != 0)
        skip();
    struct proc_result res;
    run_sh(f, false, NULL, "HOME=$PWD npm --version", &res);
    if (proc_exit_code(&res) != 0)
        fprintf(stderr, "%s", res.err);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_true(res.out[0] >= '0' && res.out[0] <= '9');
    assert_null(strstr(res.err, "execgate: refused"));
    proc_result_free(&res);
}

static void
test_make_200_files(void **state)
{
    struct fixture *f = *state;
    struct proc_result res;
    run_sh(f, false, NULL,
           "for i in $(seq 200); do echo \"int f$i(void){return $i;}\" > f$i.c; done; "
           "printf 'SRC=$(wildcard *.c)\\nall: $(SRC:.c=.o)\\n%%.o: %%.c\\n\\tcc -c $< -o $@\\n' "
           "> Makefile && make -s -j2 && ls *.o | wc -l",
           &res);
    if (proc_exit_code(&res) != 0)
        fprintf(stderr, "%s", res.err);
    assert_int_equal(proc_exit_code(&res), 0);
    assert_int_equal(atoi(res.out), 200);
    proc_result_free(&res);
}

static void
test_helper_rejects_bad_notify_fd(void **state)
{
    /* A non-socket fd is refused before anything runs (125). */
    struct fixture *f = *state;
    char *policy = policy_for(f, true);
    const char *argv[] = {env_or_skip("EXECGATE_TEST_SANDBOX"),
                          "--policy",
                          policy,
                          "--cwd",
                          f->dir,
                          "--exec-notify-fd",
                          "0",
                          "--",
                          "/bin/true",
                          NULL};
    struct proc_result res;
    assert_int_equal(proc_run(argv, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 125);
    assert_non_null(strstr(res.err, "--exec-notify-fd 0"));
    proc_result_free(&res);
    free(policy);
}

/* A Python program that execs from a single-threaded process, then
 * posix_spawns (CLONE_VM) and execs with a second thread running. */
#define THREADED_PY                                                                                \
    "/usr/bin/python3 -c '\n"                                                                      \
    "import threading, os, time\n"                                                                 \
    "os.posix_spawn(\"/bin/echo\", [\"echo\", \"spawn-single\"], os.environ); os.wait()\n"         \
    "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"                        \
    "try:\n"                                                                                       \
    "    os.posix_spawn(\"/bin/echo\", [\"echo\", \"spawn-threaded\"], os.environ)\n"              \
    "    os.wait()\n"                                                                              \
    "except OSError: print(\"spawn-threaded refused\")\n"                                          \
    "try: os.execv(\"/bin/echo\", [\"echo\", \"exec-threaded\"])\n"                                \
    "except OSError: print(\"exec-threaded refused\")\n"                                           \
    "'"

static void
test_shared_memory_default_allows(void **state)
{
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    struct proc_result res;
    unsetenv("EXEC_NOTIFY_STRICT");
    run_sh(*state, false, NULL, THREADED_PY, &res);
    assert_non_null(strstr(res.out, "spawn-single\nspawn-threaded\nexec-threaded\n"));
    proc_result_free(&res);
}

static void
test_shared_memory_strict_refuses(void **state)
{
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    struct proc_result res;
    setenv("EXEC_NOTIFY_STRICT", "1", 1);
    run_sh(*state, false, NULL, THREADED_PY, &res);
    unsetenv("EXEC_NOTIFY_STRICT");
    /* Single-threaded spawns still run; with a thread running, both the
     * CLONE_VM child's exec (kcmp with its parent) and the threaded exec
     * are refused. */
    assert_non_null(
        strstr(res.out, "spawn-single\nspawn-threaded refused\nexec-threaded refused\n"));
    assert_non_null(strstr(res.err, "(strict mode)"));
    proc_result_free(&res);
}

/* Starts the helper with a report pipe and an exec-notify socket, in a
 * child where seccomp refuses SECCOMP_FILTER_FLAG_NEW_LISTENER with EINVAL
 * as a kernel without user notification does (flags 0 still load). */
static pid_t
start_without_user_notif(const char *policy, const char *dir, bool degraded, int sock, int rep)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid != 0)
        return pid;
    struct sock_filter prog[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_seccomp, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, SECCOMP_FILTER_FLAG_NEW_LISTENER, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog fp = {.len = sizeof prog / sizeof prog[0], .filter = prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) != 0)
        _exit(99);
    fcntl(sock, F_SETFD, 0);
    fcntl(rep, F_SETFD, 0);
    char s[16], r[16];
    snprintf(s, sizeof s, "%d", sock);
    snprintf(r, sizeof r, "%d", rep);
    const char *helper = getenv("EXECGATE_TEST_SANDBOX");
    execl(helper, helper, "--policy", policy, "--cwd", dir, "--report-fd", r, "--exec-notify-fd", s,
          degraded ? "--allow-degraded" : "--", degraded ? "--" : "true", degraded ? "true" : NULL,
          (char *)NULL);
    _exit(127);
}

static void
test_no_user_notif_fails_closed(void **state)
{
    struct fixture *f = *state;
    env_or_skip("EXECGATE_TEST_SANDBOX");
    char *policy = policy_for(f, false);
    for (int degraded = 0; degraded <= 1; degraded++) {
        int sv[2], rep[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
        pid_t pid = start_without_user_notif(policy, f->dir, degraded, sv[1], rep[1]);
        close(sv[1]);
        close(rep[1]);
        int listener = -1;
        char *path = NULL;
        int rc = exec_notify_receive_listener(sv[0], &listener, &path);
        close(sv[0]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        char buf[4096];
        ssize_t len = read(rep[0], buf, sizeof buf - 1);
        close(rep[0]);
        buf[len > 0 ? len : 0] = '\0';
        if (!degraded) {
            /* Refused before anything ran: no listener, no report, 125. */
            assert_int_equal(rc, -EPIPE);
            assert_int_equal(WEXITSTATUS(st), 125);
            assert_true(len <= 0);
        } else {
            /* Runs, tells the supervisor interception is off, reports it. */
            assert_int_equal(rc, -EOPNOTSUPP);
            assert_int_equal(listener, -1);
            assert_non_null(strstr(path, "/true"));
            assert_int_equal(WEXITSTATUS(st), 0);
            assert_non_null(strstr(buf, "\"exec-notify\""));
            assert_null(strstr(buf, "\"exec_notify\":{"));
        }
        free(path);
    }
    free(policy);
}

/* Drives the helper directly, as the server will: the listener arrives
 * with the path of the helper's own execve, that first exec is allowed
 * without a decision, and the report line names the feature. */
static void
count_decisions(void *arg, const struct exec_notify_request *req, struct exec_notify_decision *out)
{
    (void)req;
    (*(int *)arg)++;
    out->verdict = EXEC_NOTIFY_CONTINUE;
}

static void
test_helper_hands_over_listener_and_reports(void **state)
{
    struct fixture *f = *state;
    char *policy = policy_for(f, false);
    int sv[2], rep[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
    const char *helper = env_or_skip("EXECGATE_TEST_SANDBOX");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fcntl(sv[1], F_SETFD, 0);
        fcntl(rep[1], F_SETFD, 0);
        char s[16], r[16];
        snprintf(s, sizeof s, "%d", sv[1]);
        snprintf(r, sizeof r, "%d", rep[1]);
        execl(helper, helper, "--policy", policy, "--cwd", f->dir, "--report-fd", r,
              "--exec-notify-fd", s, "--", "true", (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    close(rep[1]);
    int listener = -1;
    char *path = NULL;
    assert_int_equal(exec_notify_receive_listener(sv[0], &listener, &path), 0);
    close(sv[0]);
    /* The helper searched PATH itself: an absolute path to true. */
    assert_true(path[0] == '/');
    assert_non_null(strstr(path, "/true"));
    int decisions = 0;
    struct exec_notify *n = exec_notify_new(listener, path, count_decisions, NULL, &decisions);
    assert_non_null(n);
    free(path);
    for (;;) {
        /* Wakes up now and then to reap: without a PID namespace the
         * command is our child, and its zombie keeps the listener open. */
        struct pollfd p = {.fd = exec_notify_fd(n), .events = POLLIN};
        assert_true(poll(&p, 1, 100) >= 0);
        if (p.revents & POLLIN)
            assert_true(exec_notify_process(n) >= 0);
        else if (p.revents & (POLLHUP | POLLERR))
            break;
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            assert_true(WIFEXITED(st));
            assert_int_equal(WEXITSTATUS(st), 0);
            pid = -1;
        }
    }
    if (pid > 0) {
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_int_equal(WEXITSTATUS(st), 0);
    }
    struct exec_notify_stats stats;
    exec_notify_get_stats(n, &stats);
    assert_int_equal(stats.continued, 1); /* the helper's own execve */
    assert_int_equal(decisions, 0);       /* ... allowed without a decision */
    exec_notify_free(n);
    char buf[4096];
    ssize_t len = read(rep[0], buf, sizeof buf - 1);
    close(rep[0]);
    assert_true(len > 0);
    buf[len] = '\0';
    assert_non_null(strstr(buf, "\"exec_notify\":{\"mode\":\"user-notif\""));
    /* workspace-write: the socket calls ride on the same listener */
    assert_non_null(strstr(
        buf,
        "\"notified\":[\"execve\",\"execveat\",\"connect\",\"sendto\",\"sendmsg\",\"sendmmsg\"]"));
    free(policy);
}

/*
 * The hand-over without a courier (exec_filter.h): the supervisor offers
 * to take the listener, the helper leaves it in its fd table and the
 * supervisor takes it with pidfd_getfd.  The attack is the window that
 * could open: a command that connects to an outside socket as its very
 * first act, from its main thread and from a thread started at once.
 * Every connect must reach the supervisor (and be refused: the listener
 * runs outside the sandbox); the outside socket accepts nothing.
 */
struct refusals {
    int count;
};

static void
count_refused(void *arg, pid_t pid, const char *what, const char *reason)
{
    (void)pid;
    (void)what;
    (void)reason;
    ((struct refusals *)arg)->count++;
}

#define FIRST_ACT_CONNECT                                                                          \
    "import socket, sys, threading\n"                                                              \
    "def hit():\n"                                                                                 \
    "    for _ in range(20):\n"                                                                    \
    "        s = socket.socket(socket.AF_UNIX)\n"                                                  \
    "        e = s.connect_ex(sys.argv[1])\n"                                                      \
    "        print('reached' if e == 0 else 'errno %d' % e)\n"                                     \
    "        if e == 0: s.send(b'PWNED')\n"                                                        \
    "        s.close()\n"                                                                          \
    "t = threading.Thread(target=hit); t.start(); hit(); t.join()\n"

static void
test_listener_taken_by_number(void **state)
{
    struct fixture *f = *state;
    const char *helper = env_or_skip("EXECGATE_TEST_SANDBOX");
    char *policy = policy_for(f, false);
    char *sock_path = tmpdir_path(f->dir, "outside.sock");
    int outside = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    assert_true(strlen(sock_path) < sizeof sa.sun_path);
    strcpy(sa.sun_path, sock_path);
    assert_int_equal(bind(outside, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(outside, 64), 0);
    int sv[2], rep[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
    int offered = exec_notify_offer_take(sv[0]);
    if (offered == -ENOPROTOOPT || offered == -EPERM)
        skip(); /* a kernel before 6.5, or Yama: the courier's path, tested above */
    assert_int_equal(offered, 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fcntl(sv[1], F_SETFD, 0);
        fcntl(rep[1], F_SETFD, 0);
        char s[16], r[16];
        snprintf(s, sizeof s, "%d", sv[1]);
        snprintf(r, sizeof r, "%d", rep[1]);
        execl(helper, helper, "--policy", policy, "--cwd", f->dir, "--report-fd", r,
              "--exec-notify-fd", s, "--", "python3", "-c", FIRST_ACT_CONNECT, sock_path,
              (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    close(rep[1]);
    int listener = -1;
    char *path = NULL;
    assert_int_equal(exec_notify_receive_listener(sv[0], &listener, &path), 0);
    close(sv[0]);
    assert_non_null(strstr(path, "/python3"));
    int decisions = 0;
    struct exec_notify *n = exec_notify_new(listener, path, count_decisions, NULL, &decisions);
    assert_non_null(n);
    free(path);
    struct refusals refused = {0};
    const struct unix_connect_config cfg = {.refused = count_refused, .arg = &refused};
    exec_notify_set_connect(n, &cfg, NULL, NULL);
    int st = 0;
    while (pid > 0) {
        struct pollfd p = {.fd = exec_notify_fd(n), .events = POLLIN};
        assert_true(poll(&p, 1, 100) >= 0);
        if (p.revents & POLLIN)
            assert_true(exec_notify_process(n) >= 0);
        if (waitpid(pid, &st, WNOHANG) == pid)
            pid = -1;
    }
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    exec_notify_free(n);
    /* all 40 connects went to the supervisor and were refused: the
     * outside socket saw only the supervisor's own look at its peer,
     * closed with nothing sent */
    assert_int_equal(refused.count, 40);
    int conn;
    while ((conn = accept(outside, NULL, NULL)) >= 0) {
        char b[8];
        assert_int_equal(recv(conn, b, sizeof b, MSG_DONTWAIT), 0);
        close(conn);
    }
    assert_int_equal(errno, EAGAIN);
    close(outside);
    char buf[4096];
    ssize_t len = read(rep[0], buf, sizeof buf - 1);
    close(rep[0]);
    assert_true(len > 0);
    buf[len] = '\0';
    assert_non_null(strstr(
        buf,
        "\"notified\":[\"execve\",\"execveat\",\"connect\",\"sendto\",\"sendmsg\",\"sendmmsg\"]"));
    free(sock_path);
    free(policy);
}

/* A hand-over by number that names no listener (a closed fd, or a pipe):
 * refused, and the sender, which would otherwise wait in an execve nobody
 * answers, is killed. */
static void
test_bad_number_kills_sender(void **state)
{
    (void)state;
    for (int which = 0; which < 2; which++) {
        int sv[2], p[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        int offered = exec_notify_offer_take(sv[0]);
        if (offered == -ENOPROTOOPT || offered == -EPERM)
            skip();
        assert_int_equal(offered, 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            int number = which == 0 ? 999 : p[0];
            char msg[64] = "EGX1N";
            memcpy(msg + 5, &number, sizeof number);
            memcpy(msg + 5 + sizeof number, "/bin/true", 9);
            if (send(sv[1], msg, 5 + sizeof number + 9, 0) < 0)
                _exit(1);
            pause();
            _exit(2);
        }
        close(sv[1]);
        int listener = -1;
        char *path = NULL;
        int rc = exec_notify_receive_listener(sv[0], &listener, &path);
        assert_int_equal(rc, which == 0 ? -EBADF : -EPROTO);
        assert_int_equal(listener, -1);
        assert_null(path);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st));
        assert_int_equal(WTERMSIG(st), SIGKILL);
        close(sv[0]);
        close(p[0]);
        close(p[1]);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(test_control_rm_allowed_without_rule),
        T(test_sh_c_rm),
        T(test_python_execv),
        T(test_env_rm),
        T(test_one_line_per_refused_command),
        T(test_stderr_pipe_without_reader),
        T(test_xargs_rm),
        T(test_find_exec_rm),
        T(test_makefile_recipe),
        T(test_git_hook),
        T(test_sh_c_nested),
        T(test_static_raw_execve),
        T(test_execveat_dirfd),
        T(test_execveat_empty_path),
        T(test_own_listener_refused),
        T(test_arguments_across_pages),
        T(test_relative_path_after_cd),
        T(test_symlink_other_name),
        T(test_shebang_interpreter),
        T(test_approved_shell_still_checked_inside),
        T(test_prompt_approved),
        T(test_prompt_declined),
        T(test_normal_work),
        T(test_npm_version),
        T(test_make_200_files),
        T(test_helper_rejects_bad_notify_fd),
        T(test_helper_hands_over_listener_and_reports),
        T(test_listener_taken_by_number),
        T(test_bad_number_kills_sender),
        T(test_no_user_notif_fails_closed),
        T(test_shared_memory_default_allows),
        T(test_shared_memory_strict_refuses),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
