/*
 * spawn_child: exit codes and signals, fds at their numbers (also when a
 * source is another's target), /dev/null for 0-2, nothing else inherited,
 * cwd and environment, its own session, signal mask and dispositions
 * reset, exec errors, close before the exit, and no fd left behind.  Waits
 * on events (the loop), never on a clock.  Every test runs twice: with
 * posix_spawn, and with the exec filter (exec_listener; the listener's
 * notifications continued, or decided, on the loop), which must behave the
 * same and also watch every exec of the child's tree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "supervise/exec_notify.h"
#include "server/call/spawn_child.h"
#include "tests/support/fds.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

struct outcome {
    bool exited, closed;
    int64_t status;
    int sig;
};

static void
on_exit_cb(struct spawn_child *c, int64_t status, int sig)
{
    struct outcome *o = spawn_data(c);
    assert_false(o->exited); /* once */
    o->exited = true;
    o->status = status;
    o->sig = sig;
}

static void
on_close_cb(struct spawn_child *c)
{
    struct outcome *o = spawn_data(c);
    o->closed = true;
}

/* The group being run: with the exec filter or not. */
static bool filtered;
/* With the filter: the last child's listener, and what was decided. */
static int listener = -1;
static const char *refuse_base; /* execs of a file with this basename fail */
static size_t n_decided, n_refused;

static int
group_posix_spawn(void **state)
{
    filtered = false;
    return 0;
}

static int
group_filtered(void **state)
{
    filtered = true;
    return 0;
}

/* spawn_start, with the exec filter in the filtered group. */
static int
start(uv_loop_t *loop, const struct spawn_options *o, struct outcome *res, struct spawn_child **c)
{
    struct spawn_options f = *o;
    if (filtered)
        f.exec_listener = &listener;
    int rc = spawn_start(loop, &f, on_exit_cb, res, c);
    assert_true(!filtered || (rc == 0) == (listener >= 0));
    return rc;
}

static void
drop_listener(void)
{
    if (listener >= 0)
        close(listener);
    listener = -1;
}

static void
decide(void *arg, const struct exec_notify_request *req, struct exec_notify_decision *out)
{
    n_decided++;
    const char *slash = req->canonical ? strrchr(req->canonical, '/') : NULL;
    if (refuse_base && slash && strcmp(slash + 1, refuse_base) == 0) {
        n_refused++;
        out->verdict = EXEC_NOTIFY_REFUSE;
        out->err = EACCES;
    }
}

static void
on_notify(uv_poll_t *h, int status, int events)
{
    struct exec_notify *n = h->data;
    assert_true(exec_notify_process(n) >= 0);
    struct pollfd p = {exec_notify_fd(n), POLLIN, 0};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) && !(p.revents & POLLIN))
        uv_poll_stop(h);
}

/* Runs argv to its end; returns its outcome.  out_fd >= 0: its stdout and
 * stderr. */
static struct outcome
run(const struct spawn_options *o)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct outcome res = {0};
    struct spawn_child *c = NULL;
    assert_int_equal(start(&loop, o, &res, &c), 0);
    assert_non_null(c);
    assert_true(spawn_pid(c) > 0);
    uv_poll_t poll_h;
    struct exec_notify *n = NULL;
    if (filtered) {
        /* the child's own exec was continued already: only its tree's
         * execs come here */
        assert_non_null(n = exec_notify_new(listener, NULL, decide, NULL, NULL));
        listener = -1;
        assert_int_equal(uv_poll_init(&loop, &poll_h, exec_notify_fd(n)), 0);
        poll_h.data = n;
        assert_int_equal(uv_poll_start(&poll_h, UV_READABLE | UV_DISCONNECT, on_notify), 0);
    }
    while (!res.exited)
        uv_run(&loop, UV_RUN_ONCE);
    spawn_close(c, on_close_cb);
    if (n)
        uv_close((uv_handle_t *)&poll_h, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    exec_notify_free(n);
    assert_true(res.closed);
    assert_int_equal(uv_loop_close(&loop), 0);
    return res;
}

/* Everything readable from fd until EOF (the writers are gone), NUL-ended. */
static char *
slurp(int fd)
{
    size_t len = 0, cap = 256;
    char *buf = malloc(cap);
    assert_non_null(buf);
    for (;;) {
        if (len + 1 == cap)
            assert_non_null(buf = realloc(buf, cap *= 2));
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        assert_true(n >= 0);
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    close(fd);
    return buf;
}

/* Runs `bash -c script` with stdout and stderr a pipe; returns the output. */
static char *
bash_output(const char *script, const char *cwd, char *const *env, struct outcome *res)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    char *argv[] = {(char *)"/bin/bash", (char *)"-c", (char *)script, NULL};
    struct spawn_fd fds[] = {{p[1], 1}, {p[1], 2}};
    /* the filtered start needs a path (no PATH search) */
    struct spawn_options o = {.file = filtered ? "/bin/bash" : "bash",
                              .argv = argv,
                              .env = env,
                              .cwd = cwd,
                              .fds = fds,
                              .n_fds = 2};
    *res = run(&o);
    close(p[1]);
    return slurp(p[0]);
}

static void
test_exit_code_and_signal(void **state)
{
    char *a1[] = {(char *)"/bin/sh", (char *)"-c", (char *)"exit 7", NULL};
    struct spawn_options o = {.file = a1[0], .argv = a1};
    struct outcome r = run(&o);
    assert_int_equal(r.status, 7);
    assert_int_equal(r.sig, 0);
    char *a2[] = {(char *)"/bin/sh", (char *)"-c", (char *)"kill -TERM $$", NULL};
    o.argv = a2;
    r = run(&o);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.sig, SIGTERM);
}

static void
test_exec_error(void **state)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    char *argv[] = {(char *)"/nonexistent/program", NULL};
    struct spawn_options o = {.file = argv[0], .argv = argv};
    struct outcome res = {0};
    struct spawn_child *c = (struct spawn_child *)&res;
    assert_int_equal(start(&loop, &o, &res, &c), -ENOENT);
    assert_null(c);
    assert_int_equal(listener, -1);
    /* nothing left behind: no child, running or not */
    siginfo_t info;
    errno = 0;
    assert_int_equal(waitid(P_ALL, 0, &info, WEXITED | WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    /* a bad fd is refused before anything starts */
    struct spawn_fd bad[] = {{-1, 3}};
    o.fds = bad;
    o.n_fds = 1;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(start(&loop, &o, &res, &c), -EBADF);
    if (filtered) {
        /* a file without a '/' would need a PATH search the child cannot make */
        char *rel[] = {(char *)"true", NULL};
        struct spawn_options r = {.file = rel[0], .argv = rel};
        assert_int_equal(start(&loop, &r, &res, &c), -EINVAL);
    }
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Two pipes swapped: the fd at 20 goes to 21 and the one at 21 to 20, so a
 * plain dup2 order would overwrite a source before it is used. */
static void
test_fds_swapped(void **state)
{
    int a[2], b[2];
    assert_int_equal(pipe2(a, O_CLOEXEC), 0);
    assert_int_equal(pipe2(b, O_CLOEXEC), 0);
    assert_int_equal(dup3(a[1], 20, O_CLOEXEC), 20);
    assert_int_equal(dup3(b[1], 21, O_CLOEXEC), 21);
    close(a[1]);
    close(b[1]);
    char *argv[] = {(char *)"/bin/bash", (char *)"-c", (char *)"echo one >&21; echo two >&20",
                    NULL};
    /* other fds of the parent's just above, with a gap at 23: a start that
     * moves the sources up out of the way must not take one of these for
     * them */
    int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    assert_true(zero >= 0);
    for (int fd = 22; fd < 40; fd++)
        assert_int_equal(fd == 23 ? 23 : dup3(zero, fd, O_CLOEXEC), fd);
    struct spawn_fd fds[] = {{20, 21}, {21, 20}};
    struct spawn_options o = {.file = argv[0], .argv = argv, .fds = fds, .n_fds = 2};
    struct outcome r = run(&o);
    assert_int_equal(r.status, 0);
    for (int fd = 22; fd < 40; fd++)
        if (fd != 23)
            close(fd);
    close(zero);
    close(20);
    close(21);
    char *got_a = slurp(a[0]);
    char *got_b = slurp(b[0]);
    assert_string_equal(got_a, "one\n"); /* a was the child's 21 */
    assert_string_equal(got_b, "two\n");
    free(got_a);
    free(got_b);
}

/* Only the given fds (at their own numbers too), /dev/null for the rest of
 * 0-2, and not an fd the parent left inheritable by mistake. */
static void
test_only_given_fds(void **state)
{
    int leaky = open("/dev/zero", O_RDONLY); /* deliberately not close-on-exec */
    assert_true(leaky >= 0);
    int opened = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    assert_true(opened >= 0);
    int own = fcntl(opened, F_DUPFD_CLOEXEC, 9); /* one digit: the listing sorts as text */
    assert_int_equal(own, 9);
    close(opened);
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    /* the shell lists its own fds: the given ones and the directory its
     * glob reads, which takes the lowest free number, 3 */
    char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)"cd /proc/$$/fd && echo *", NULL};
    struct spawn_fd fds[] = {{p[1], 1}, {p[1], 2}, {own, own}};
    struct spawn_options o = {.file = argv[0], .argv = argv, .fds = fds, .n_fds = 3};
    struct outcome r = run(&o);
    assert_int_equal(r.status, 0);
    close(p[1]);
    char *out = slurp(p[0]);
    assert_true(leaky < 9);
    assert_string_equal(out, "0 1 2 3 9\n");
    free(out);
    /* 0 and 2 not given: /dev/null */
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    char *argv2[] = {(char *)"/bin/sh", (char *)"-c",
                     (char *)"readlink /proc/self/fd/0 /proc/self/fd/2 >&3", NULL};
    struct spawn_fd fds2[] = {{p[1], 3}};
    o = (struct spawn_options){.file = argv2[0], .argv = argv2, .fds = fds2, .n_fds = 1};
    r = run(&o);
    assert_int_equal(r.status, 0);
    close(p[1]);
    out = slurp(p[0]);
    assert_string_equal(out, "/dev/null\n/dev/null\n");
    free(out);
    close(leaky);
    close(own);
}

static void
test_cwd_env_session(void **state)
{
    char *env[] = {(char *)"FOO=bar", (char *)"PATH=/usr/bin:/bin", NULL};
    struct outcome r;
    char *out = bash_output("echo \"$(pwd -P) $FOO $HOME\"; "
                            "read -r _ _ _ _ pgrp sid _ < /proc/$$/stat; "
                            "[ $pgrp = $$ ] && [ $sid = $$ ] && echo leader || echo not-leader",
                            "/", env, &r);
    assert_int_equal(r.status, 0);
    /* without new_session it shares ours */
    assert_string_equal(out, "/ bar \nnot-leader\n");
    free(out);
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    char *argv[] = {(char *)"/bin/bash", (char *)"-c",
                    (char *)"read -r _ _ _ _ pgrp sid _ < /proc/$$/stat; "
                            "[ $pgrp = $$ ] && [ $sid = $$ ] && echo leader",
                    NULL};
    struct spawn_fd fds[] = {{p[1], 1}};
    struct spawn_options o = {
        .file = argv[0], .argv = argv, .fds = fds, .n_fds = 1, .new_session = true};
    r = run(&o);
    assert_int_equal(r.status, 0);
    close(p[1]);
    out = slurp(p[0]);
    assert_string_equal(out, "leader\n");
    free(out);
}

/* A blocked signal and an ignored one in the parent: neither reaches the
 * child. */
static void
test_signals_reset(void **state)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    assert_int_equal(sigprocmask(SIG_BLOCK, &block, &old), 0);
    void (*was)(int) = signal(SIGPIPE, SIG_IGN);
    struct outcome r;
    char *argv[] = {(char *)"/bin/grep", (char *)"-E", (char *)"^Sig(Blk|Ign)",
                    (char *)"/proc/self/status", NULL};
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    struct spawn_fd fds[] = {{p[1], 1}};
    struct spawn_options o = {.file = argv[0], .argv = argv, .fds = fds, .n_fds = 1};
    r = run(&o);
    signal(SIGPIPE, was);
    sigprocmask(SIG_SETMASK, &old, NULL);
    assert_int_equal(r.status, 0);
    close(p[1]);
    char *out = slurp(p[0]);
    /* glibc's posix_spawn leaves its two internal signals (32, 33) ignored
     * in the child; 1-31 are the ones that matter */
    unsigned long long blk = 1, ign = 1;
    assert_int_equal(sscanf(out, "SigBlk:\t%llx\nSigIgn:\t%llx\n", &blk, &ign), 2);
    free(out);
    assert_int_equal(blk, 0);
    assert_int_equal(ign & 0x7fffffffULL, 0);
}

/* Closed while running: not killed, no exit callback; the close callback
 * runs and the struct goes.  spawn_reap no longer claims it. */
static void
test_close_while_running(void **state)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    char *argv[] = {(char *)"/bin/cat", NULL};
    struct spawn_fd fds[] = {{p[0], 0}};
    struct spawn_options o = {.file = argv[0], .argv = argv, .fds = fds, .n_fds = 1};
    struct outcome res = {0};
    struct spawn_child *c = NULL;
    assert_int_equal(start(&loop, &o, &res, &c), 0);
    drop_listener();
    pid_t pid = spawn_pid(c);
    spawn_close(c, on_close_cb);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_true(res.closed);
    assert_false(res.exited);
    assert_int_equal(kill(pid, 0), 0); /* still running */
    close(p[0]);
    close(p[1]); /* cat sees EOF */
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    assert_int_equal(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
    assert_false(spawn_reap(pid));
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* The subreaper's way in: an exited child reaped through spawn_reap gets
 * its exit reported then, once. */
static void
test_reap_hands_over(void **state)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)"exit 9", NULL};
    struct spawn_options o = {.file = argv[0], .argv = argv};
    struct outcome res = {0};
    struct spawn_child *c = NULL;
    assert_int_equal(start(&loop, &o, &res, &c), 0);
    drop_listener();
    pid_t pid = spawn_pid(c);
    assert_false(spawn_reap(getpid()));
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    /* wait until it is a zombie, without reaping it */
    assert_int_equal(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
    assert_true(spawn_reap(pid));
    assert_true(res.exited);
    assert_int_equal(res.status, 9);
    assert_false(spawn_reap(pid)); /* reported: not claimed again */
    errno = 0;
    assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    spawn_close(c, on_close_cb);
    uv_run(&loop, UV_RUN_DEFAULT); /* the pidfd's readiness changes nothing now */
    assert_true(res.closed);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void
test_no_fd_left(void **state)
{
    int before = fds_open_count();
    char *argv[] = {(char *)"/bin/true", NULL};
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    struct spawn_fd fds[] = {{p[1], 1}, {p[0], 7}, {p[1], 9}};
    struct spawn_options o = {.file = argv[0], .argv = argv, .fds = fds, .n_fds = 3};
    for (int i = 0; i < 50; i++)
        assert_int_equal(run(&o).status, 0);
    close(p[0]);
    close(p[1]);
    assert_int_equal(fds_open_count(), before);
}

/* With the filter: every exec of the child's tree is notified (its own
 * first exec is not: spawn_start continued it), a refused one fails, and
 * the child runs with no_new_privs and a seccomp filter. */
static void
test_tree_watched(void **state)
{
    n_decided = n_refused = 0;
    refuse_base = "rm";
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    char *argv[] = {(char *)"/bin/sh", (char *)"-c",
                    (char *)"grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; "
                            "/bin/sh -c '/bin/rm /nonexistent/x' || echo refused $?; "
                            "exec /bin/echo last",
                    NULL};
    struct spawn_fd fds[] = {{p[1], 1}};
    struct spawn_options o = {.file = argv[0], .argv = argv, .fds = fds, .n_fds = 1};
    struct outcome r = run(&o);
    refuse_base = NULL;
    assert_int_equal(r.status, 0);
    close(p[1]);
    char *out = slurp(p[0]);
    assert_string_equal(out, "NoNewPrivs:\t1\nSeccomp:\t2\nrefused 126\nlast\n");
    free(out);
    /* grep, the inner sh, its rm (refused), echo: not the outer sh */
    assert_int_equal(n_decided, 4);
    assert_int_equal(n_refused, 1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_code_and_signal), cmocka_unit_test(test_exec_error),
        cmocka_unit_test(test_fds_swapped),          cmocka_unit_test(test_only_given_fds),
        cmocka_unit_test(test_cwd_env_session),      cmocka_unit_test(test_signals_reset),
        cmocka_unit_test(test_close_while_running),  cmocka_unit_test(test_reap_hands_over),
        cmocka_unit_test(test_no_fd_left),
    };
    const struct CMUnitTest filter_only[] = {
        cmocka_unit_test(test_tree_watched),
    };
    int failed = cmocka_run_group_tests_name("posix_spawn", tests, group_posix_spawn, NULL);
    failed += cmocka_run_group_tests_name("exec filter", tests, group_filtered, NULL);
    failed += cmocka_run_group_tests_name("exec filter only", filter_only, group_filtered, NULL);
    return failed;
}
