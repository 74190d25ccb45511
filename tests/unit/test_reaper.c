/*
 * reaper: orphans are reaped without taking the exits spawn_child waits for,
 * and a process group is signalled only while one of our children is in
 * it.  Waits on events (the loop, waitpid), never on a clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/call/reaper.h"
#include "server/call/spawn_child.h"

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
on_exit_cb(struct spawn_child *c, int64_t status, int sig)
{
    struct spawned *s = spawn_data(c);
    s->exited = true;
    s->status = status;
    spawn_close(c, NULL);
}

/* Whether pid is still a child of ours, running or a zombie nobody has
 * reaped (looked at without reaping it). */
static bool
unreaped(pid_t pid)
{
    siginfo_t info = {0};
    return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

/* Children of spawn_child, exiting 7 each, and as many forked outside it
 * (exiting 3): whichever of the pidfd and SIGCHLD is seen first, every
 * spawned child's status reaches its callback and the others are reaped.
 * Several at once, so that the reaper finds spawned zombies among the
 * orphans (its hand-over through spawn_reap). */
static void
test_reaps_orphans_not_spawned_children(void **state)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    char *err = NULL;
    struct reaper *r = reaper_new(&loop, &err);
    assert_non_null(r);
    enum { N = 8 };
    struct spawned sp[N] = {{0}};
    pid_t orphans[N];
    static char sh[] = "/bin/sh", c[] = "-c", script[] = "exit 7";
    char *args[] = {sh, c, script, NULL};
    struct spawn_options opts = {.file = args[0], .argv = args};
    for (int i = 0; i < N; i++) {
        struct spawn_child *child = NULL;
        assert_int_equal(spawn_start(&loop, &opts, on_exit_cb, &sp[i], &child), 0);
        orphans[i] = fork();
        if (orphans[i] == 0)
            _exit(3);
        assert_true(orphans[i] > 0);
    }
    /* the loop runs until every exit was reported and the reaper has taken
     * the others */
    for (;;) {
        bool done = true;
        for (int i = 0; i < N; i++)
            done = done && sp[i].exited && !unreaped(orphans[i]);
        if (done)
            break;
        uv_run(&loop, UV_RUN_ONCE);
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(sp[i].status, 7); /* the spawned child's own status */
        errno = 0;
        assert_int_equal(waitpid(orphans[i], NULL, WNOHANG), -1);
        assert_int_equal(errno, ECHILD); /* reaped by the reaper */
    }
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
        cmocka_unit_test(test_reaps_orphans_not_spawned_children),
        cmocka_unit_test(test_signals_only_groups_with_our_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
