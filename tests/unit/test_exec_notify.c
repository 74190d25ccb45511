/*
 * exec_notify: the helper's hand-over message as the supervisor receives
 * it (good, degraded, malformed, no fd leaks), and the supervisor's offer
 * as the helper reads it (exactly "EGX1N", nothing else).  What each exec gets is the
 * server's decision (tests/unit/test_decide.c; the exec-notify suite runs
 * it on real execs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proto/esc_io.h"
#include "sandbox/exec_filter.h"
#include "supervise/exec_notify.h"

/* ---- the hand-over message ---- */

/* Sends data with n_fds copies of fd (n_fds 0: none) on sock, through
 * the escalation protocol's sender (proto/esc_io.c). */
static void
send_with_fds(int sock, const void *data, size_t len, int fd, int n_fds)
{
    int fds[2] = {fd, fd};
    assert_int_equal(esc_io_send_all(sock, data, len, fds, (size_t)n_fds), 0);
}

/* The lowest free fd number: a leaked received fd would take it. */
static int
lowest_free_fd(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    close(fd);
    return fd;
}

struct pair {
    int s[2];
    int payload; /* an fd to pass around */
};

static int
pair_setup(void **state)
{
    struct pair *p = calloc(1, sizeof *p);
    assert_non_null(p);
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p->s), 0);
    p->payload = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(p->payload >= 0);
    *state = p;
    return 0;
}

static int
pair_teardown(void **state)
{
    struct pair *p = *state;
    close(p->s[0]);
    if (p->s[1] >= 0)
        close(p->s[1]);
    close(p->payload);
    free(p);
    return 0;
}

static void
test_listener_received(void **state)
{
    struct pair *p = *state;
    send_with_fds(p->s[1], "EGX1L/usr/bin/sh", 16, p->payload, 1);
    int fd = -1;
    char *path = NULL;
    assert_int_equal(exec_notify_receive_listener(p->s[0], &fd, &path), 0);
    assert_true(fd >= 0);
    assert_string_equal(path, "/usr/bin/sh");
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
    free(path);
}

static void
test_degraded_received(void **state)
{
    struct pair *p = *state;
    send_with_fds(p->s[1], "EGX1Dbash", 9, -1, 0);
    int fd = 7;
    char *path = NULL;
    assert_int_equal(exec_notify_receive_listener(p->s[0], &fd, &path), -EOPNOTSUPP);
    assert_int_equal(fd, -1);
    assert_string_equal(path, "bash");
    free(path);
}

/* Each malformed message is -EPROTO, sets nothing, keeps no fd. */
static void
expect_proto(struct pair *p, const void *data, size_t len, int n_fds)
{
    int before = lowest_free_fd();
    send_with_fds(p->s[1], data, len, p->payload, n_fds);
    int fd = 7;
    char *path = (char *)"untouched";
    assert_int_equal(exec_notify_receive_listener(p->s[0], &fd, &path), -EPROTO);
    assert_int_equal(fd, -1);
    assert_null(path);
    assert_int_equal(lowest_free_fd(), before);
}

static void
test_malformed_messages(void **state)
{
    struct pair *p = *state;
    expect_proto(p, "EGX2L/bin/sh", 12, 1);  /* wrong magic */
    expect_proto(p, "EGX1L/bin/sh", 12, 0);  /* listener without fd */
    expect_proto(p, "EGX1D/bin/sh", 12, 1);  /* degraded with an fd */
    expect_proto(p, "EGX1Q/bin/sh", 12, 1);  /* unknown kind */
    expect_proto(p, "EGX1l", 5, 1);          /* the retired exec by fd, as it was sent */
    expect_proto(p, "EGX1l/bin/sh", 12, 1);  /* the same with a path */
    expect_proto(p, "EGX", 3, 1);            /* too short */
    expect_proto(p, "EGX1L/bin\0sh", 12, 1); /* NUL inside the path */
    expect_proto(p, "EGX1L/bin/sh", 12, 2);  /* two fds */
    size_t big = 5 + EXEC_NOTIFY_MAX_PATH + 1;
    char *huge = malloc(big);
    assert_non_null(huge);
    memcpy(huge, "EGX1L", 5);
    memset(huge + 5, 'a', big - 5);
    expect_proto(p, huge, big, 1); /* path over the limit */
    free(huge);
    /* The socket still works after all of that. */
    test_listener_received(state);
}

static void
test_peer_closed(void **state)
{
    struct pair *p = *state;
    close(p->s[1]);
    p->s[1] = -1;
    int fd = 7;
    char *path = NULL;
    assert_int_equal(exec_notify_receive_listener(p->s[0], &fd, &path), -EPIPE);
    assert_int_equal(fd, -1);
    assert_null(path);
}

/* A message read by the caller itself: parsed alike, and the fd given
 * with it is taken on every path (kept on success, closed otherwise). */
static void
test_parse_listener(void **state)
{
    int before = lowest_free_fd();
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    int listener = -1;
    char *path = NULL;
    assert_int_equal(exec_notify_parse_listener("EGX1L/bin/sh", 12, fd, &listener, &path), 0);
    assert_int_equal(listener, fd);
    assert_string_equal(path, "/bin/sh");
    close(listener);
    free(path);

    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_int_equal(exec_notify_parse_listener("EGX1D/bin/sh", 12, fd, &listener, &path), -EPROTO);
    assert_int_equal(listener, -1);
    assert_null(path);
    assert_int_equal(lowest_free_fd(), before); /* the fd of a refused message is closed */

    /* no kind of hand-over leaves the first exec undecided without a path */
    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_int_equal(exec_notify_parse_listener("EGX1l", 5, fd, &listener, &path), -EPROTO);
    assert_int_equal(listener, -1);
    assert_null(path);
    assert_int_equal(lowest_free_fd(), before);

    assert_int_equal(exec_notify_parse_listener("EGX1Dsh", 7, -1, &listener, &path), -EOPNOTSUPP);
    assert_int_equal(listener, -1);
    assert_string_equal(path, "sh");
    free(path);
    assert_int_equal(exec_notify_parse_listener("EGX1L", 4, -1, &listener, &path), -EPROTO);
    assert_int_equal(lowest_free_fd(), before);
}

/* The helper takes its listener by number only on the offer exactly: a
 * longer one (the retired "EGX1NF", which also offered the exec by fd) or
 * another is no offer, and no message is none.  Each read takes the
 * message, so the next one is read on its own. */
static void
test_offer_read_exactly(void **state)
{
    struct pair *p = *state;
    const struct {
        const char *msg;
        bool offer;
    } cases[] = {
        {"EGX1N", true}, {"EGX1NF", false}, {"EGX1F", false}, {"EGX1", false}, {"EGX2N", false},
    };
    assert_false(sandbox_exec_filter_by_number(p->s[1])); /* nothing queued */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        send_with_fds(p->s[0], cases[i].msg, strlen(cases[i].msg), -1, 0);
        assert_int_equal(sandbox_exec_filter_by_number(p->s[1]), cases[i].offer);
    }
    assert_false(sandbox_exec_filter_by_number(p->s[1])); /* each was taken */
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_listener_received, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(test_degraded_received, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(test_malformed_messages, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(test_peer_closed, pair_setup, pair_teardown),
        cmocka_unit_test(test_parse_listener),
        cmocka_unit_test_setup_teardown(test_offer_read_exactly, pair_setup, pair_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
