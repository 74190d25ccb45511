/*
 * call_fds: a call's table of inherited fds becomes spawn_child's list,
 * each fd at its number, lowest number first, none where none was set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "server/call/call_fds.h"

static void
test_empty(void **state)
{
    struct call_fds f;
    call_fds_init(&f);
    struct spawn_fd out[CALL_FD_COUNT];
    assert_int_equal(call_fds_spawn_list(&f, out), 0);
}

/* The numbers the helper's command line and the shell's environment
 * name: a background process's input, the report line, the escalation
 * socket, the hand-over sockets, the login snapshot the shell reads
 * through /proc/self/fd/7, the session's network namespace and the
 * terminal's socket (--tty-fd). */
static void
test_numbers(void **state)
{
    assert_int_equal(CALL_FD_STDIN, 0);
    assert_int_equal(CALL_FD_STDOUT, 1);
    assert_int_equal(CALL_FD_STDERR, 2);
    assert_int_equal(CALL_FD_REPORT, 3);
    assert_int_equal(CALL_FD_ESCALATE, 4);
    assert_int_equal(CALL_FD_EXEC_NOTIFY, 5);
    assert_int_equal(CALL_FD_NET_PROXY, 6);
    assert_int_equal(CALL_FD_LOGIN_SNAPSHOT, 7);
    assert_int_equal(CALL_FD_NET_NS, 8);
    assert_int_equal(CALL_FD_TTY, 9);
    assert_int_equal(CALL_FD_COMMAND, 10);
    assert_int_equal(CALL_FD_COUNT, CALL_FD_COMMAND + 1);
}

static void
test_full_call(void **state)
{
    struct call_fds f;
    call_fds_init(&f);
    /* set in another order than the numbers' */
    f.fd[CALL_FD_EXEC_NOTIFY] = 40;
    f.fd[CALL_FD_REPORT] = 30;
    f.fd[CALL_FD_STDOUT] = 10;
    f.fd[CALL_FD_STDERR] = 10;
    f.fd[CALL_FD_ESCALATE] = 20;
    struct spawn_fd out[CALL_FD_COUNT];
    assert_int_equal(call_fds_spawn_list(&f, out), 5);
    const struct spawn_fd want[] = {{10, 1}, {10, 2}, {30, 3}, {20, 4}, {40, 5}};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(out[i].fd, want[i].fd);
        assert_int_equal(out[i].at, want[i].at);
    }
}

/* Without tree enforcement and an escalation socket: the gaps stay gaps. */
static void
test_gaps(void **state)
{
    struct call_fds f;
    call_fds_init(&f);
    f.fd[CALL_FD_STDOUT] = 7;
    f.fd[CALL_FD_STDERR] = 7;
    f.fd[CALL_FD_EXEC_NOTIFY] = 9;
    struct spawn_fd out[CALL_FD_COUNT];
    assert_int_equal(call_fds_spawn_list(&f, out), 3);
    assert_int_equal(out[2].fd, 9);
    assert_int_equal(out[2].at, CALL_FD_EXEC_NOTIFY);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_full_call),
        cmocka_unit_test(test_gaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
