/*
 * reaper: orphans are reaped without taking the exits libuv waits for,
 * and a process group is signalled only while one of our children is in
 * it.  Waits on events (the loop, waitpid), never on a clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "reaper.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

struct spawned {
    bool exited;
    int64_t status;
};

static void
on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
    struct spawned *s = p->data;
    s->exited = true;
    s->status = status;
    uv_close((uv_handle_t *)p, NULL);
}

/* Whether pid is still a child of ours, running or a zombie nobody has
 * reaped (looked at without reaping it). */
static bool
unreaped(pid_t pid)
{
    siginfo_t info = {0};
    return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

static void
test_reaps_orphans_not_libuv_children(void **state)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    char *err = NULL;
    struct reaper *r = reaper_new(&loop, &err);
    assert_non_null(r);
    /* a child libuv spawned, exiting 7, and one forked outside libuv */
    struct spawned sp = {0};
    uv_process_t proc;
    static char sh[] = "/bin/sh", c[] = "-c", script[] = "exit 7";
    char *args[] = {sh, c, script, NULL};
    uv_process_options_t opts = {.exit_cb = on_exit_cb, .file = args[0], .args = args};
    assert_int_equal(uv_spawn(&loop, &proc, &opts), 0);
    proc.data = &sp;
    pid_t orphan = fork();
    if (orphan == 0)
        _exit(3);
    assert_true(orphan > 0);
    /* the loop runs until libuv has reported its child's exit and the
     * reaper has taken the other one */
    while (!sp.exited || unreaped(orphan))
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(sp.status, 7); /* libuv got its own exit status */
    errno = 0;
    assert_int_equal(waitpid(orphan, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD); /* reaped by the reaper */
    reaper_close(r);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void
test_signals_only_groups_with_our_children(void **state)
{
    pid_t child = fork();
    if (child == 0) {
        setpgid(0, 0);
        pause();
        _exit(0);
    }
    assert_true(child > 0);
    /* the child may not have made its group yet: make it from here too */
    setpgid(child, child);
    /* a group with none of our children (our own): nothing sent (SIGCONT,
     * harmless should it be sent) */
    assert_int_equal(reaper_signal_group(getpgrp(), SIGCONT), 0);
    assert_int_equal(reaper_signal_group(child, SIGKILL), 1);
    int st = 0;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
    /* the group is gone with it: nothing to signal any more */
    assert_int_equal(reaper_signal_group(child, SIGKILL), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reaps_orphans_not_libuv_children),
        cmocka_unit_test(test_signals_only_groups_with_our_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
