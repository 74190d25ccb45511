/*
 * fd_pass: fds over real socket pairs.  Every fd that arrives is either
 * the caller's (and close-on-exec) or closed again, checked by the fd
 * numbers the kernel used (fcntl) and by the count in /proc/self/fd: too
 * many fds, truncated control data, control messages of another kind.
 * A signal in the middle of a blocked send or receive does not show.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fd_pass.h"
#include "tests/support/fds.h"

static bool
fd_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0 || errno != EBADF;
}

/* The n lowest free fd numbers: where the kernel installs received fds. */
static void
lowest_free(int *out, size_t n)
{
    size_t k = 0;
    for (int fd = 0; k < n; fd++) {
        if (!fd_open(fd))
            out[k++] = fd;
    }
}

static void
pair(int type, int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
}

static ssize_t
send_buf(int sock, const void *data, size_t len, const int *fds, size_t nfds)
{
    struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
    return fd_pass_send(sock, &iov, 1, fds, nfds);
}

/* Three distinct files to pass around. */
struct files {
    int fd[3];
};

static int
files_setup(void **state)
{
    struct files *f = malloc(sizeof *f);
    assert_non_null(f);
    const char *paths[] = {"/dev/null", "/dev/zero", "/"};
    for (size_t i = 0; i < 3; i++) {
        f->fd[i] = open(paths[i], O_RDONLY | O_CLOEXEC);
        assert_true(f->fd[i] >= 0);
    }
    *state = f;
    return 0;
}

static int
files_teardown(void **state)
{
    struct files *f = *state;
    for (size_t i = 0; i < 3; i++)
        close(f->fd[i]);
    free(f);
    return 0;
}

/* ---- what arrives ---- */

static void
test_one_fd(void **state)
{
    struct files *f = *state;
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    assert_int_equal(send_buf(sv[0], "one", 3, f->fd, 1), 3);
    char buf[8];
    int got[2] = {-1, -1};
    size_t n = 9;
    int flags = -1;
    assert_int_equal(fd_pass_recv(sv[1], buf, sizeof buf, got, 2, &n, &flags), 3);
    assert_memory_equal(buf, "one", 3);
    assert_int_equal(n, 1);
    assert_int_equal(flags & (MSG_TRUNC | MSG_CTRUNC), 0);
    assert_true(fds_same_file(got[0], f->fd[0]));
    assert_int_equal(got[1], -1); /* nothing past *nfds is written */
    close(got[0]);
    close(sv[0]);
    close(sv[1]);
}

/* Several fds, in the order sent, the same file twice included; the
 * iovecs of one send arrive as one datagram. */
static void
test_several_fds(void **state)
{
    struct files *f = *state;
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    int sent[] = {f->fd[2], f->fd[0], f->fd[1], f->fd[0]};
    char ab[] = "ab", cde[] = "cde";
    struct iovec iov[2] = {{.iov_base = ab, .iov_len = 2}, {.iov_base = cde, .iov_len = 3}};
    assert_int_equal(fd_pass_send(sv[0], iov, 2, sent, 4), 5);
    char buf[8];
    int got[FD_PASS_MAX_FDS];
    size_t n = 0;
    assert_int_equal(fd_pass_recv(sv[1], buf, sizeof buf, got, FD_PASS_MAX_FDS, &n, NULL), 5);
    assert_memory_equal(buf, "abcde", 5);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < 4; i++) {
        assert_true(fds_same_file(got[i], sent[i]));
        close(got[i]);
    }
    close(sv[0]);
    close(sv[1]);
}

/* Received fds are close-on-exec from the start, whatever the sender's
 * copy was. */
static void
test_received_cloexec(void **state)
{
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    int inheritable = open("/dev/null", O_RDONLY); /* no O_CLOEXEC */
    assert_true(inheritable >= 0);
    assert_int_equal(fcntl(inheritable, F_GETFD) & FD_CLOEXEC, 0);
    int sent[] = {inheritable, inheritable};
    assert_int_equal(send_buf(sv[0], "x", 1, sent, 2), 1);
    char c;
    int got[2];
    size_t n = 0;
    assert_int_equal(fd_pass_recv(sv[1], &c, 1, got, 2, &n, NULL), 1);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) {
        assert_true(fcntl(got[i], F_GETFD) & FD_CLOEXEC);
        close(got[i]);
    }
    close(inheritable);
    close(sv[0]);
    close(sv[1]);
}

/* More fds than the receiver takes: the message is refused and every fd
 * the kernel installed for it is closed again, at the very numbers it
 * used. */
static void
test_more_fds_than_accepted(void **state)
{
    struct files *f = *state;
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    int before = fds_open_count();
    int would_be[3];
    lowest_free(would_be, 3);
    assert_int_equal(send_buf(sv[0], "xyz", 3, f->fd, 3), 3);
    char buf[4];
    int got[2] = {-1, -1};
    size_t n = 7;
    assert_int_equal(fd_pass_recv(sv[1], buf, sizeof buf, got, 2, &n, NULL), -EMSGSIZE);
    assert_int_equal(n, 0);
    for (size_t i = 0; i < 3; i++)
        assert_false(fd_open(would_be[i]));
    assert_int_equal(fds_open_count(), before);

    /* None accepted, one sent: the same. */
    assert_int_equal(send_buf(sv[0], "w", 1, f->fd, 1), 1);
    assert_int_equal(fd_pass_recv(sv[1], buf, sizeof buf, NULL, 0, &n, NULL), -EMSGSIZE);
    assert_int_equal(n, 0);
    assert_false(fd_open(would_be[0]));
    assert_int_equal(fds_open_count(), before);

    /* The socket still works: the message after arrives whole. */
    assert_int_equal(send_buf(sv[0], "ok", 2, f->fd, 2), 2);
    assert_int_equal(fd_pass_recv(sv[1], buf, sizeof buf, got, 2, &n, NULL), 2);
    assert_int_equal(n, 2);
    close(got[0]);
    close(got[1]);
    close(sv[0]);
    close(sv[1]);
}

/* The most fds a message can carry all arrive (the receiver always has
 * room for them); one more is the sender's error. */
static void
test_most_fds(void **state)
{
    struct files *f = *state;
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    int sent[FD_PASS_MAX_FDS + 1];
    for (size_t i = 0; i <= FD_PASS_MAX_FDS; i++)
        sent[i] = f->fd[i % 3];
    assert_int_equal(send_buf(sv[0], "m", 1, sent, FD_PASS_MAX_FDS + 1), -EINVAL);
    int before = fds_open_count();
    assert_int_equal(send_buf(sv[0], "m", 1, sent, FD_PASS_MAX_FDS), 1);
    char c;
    int got[FD_PASS_MAX_FDS];
    size_t n = 0;
    /* one fewer than arrive: all closed, and none missed */
    assert_int_equal(fd_pass_recv(sv[1], &c, 1, got, FD_PASS_MAX_FDS - 1, &n, NULL), -EMSGSIZE);
    assert_int_equal(fds_open_count(), before);
    assert_int_equal(send_buf(sv[0], "m", 1, sent, FD_PASS_MAX_FDS), 1);
    assert_int_equal(fd_pass_recv(sv[1], &c, 1, got, FD_PASS_MAX_FDS, &n, NULL), 1);
    assert_int_equal(n, FD_PASS_MAX_FDS);
    for (size_t i = 0; i < n; i++) {
        assert_true(fds_same_file(got[i], sent[i]));
        close(got[i]);
    }
    assert_int_equal(fds_open_count(), before);
    close(sv[0]);
    close(sv[1]);
}

/*
 * Truncated control data: with room for only two more fds in the
 * process (RLIMIT_NOFILE), the kernel installs two of five and reports
 * MSG_CTRUNC.  The message is refused and the two are closed.
 */
static void
test_truncated_control_data(void **state)
{
    struct files *f = *state;
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    int sent[] = {f->fd[0], f->fd[1], f->fd[2], f->fd[0], f->fd[1]};
    assert_int_equal(send_buf(sv[0], "t", 1, sent, 5), 1);
    int would_be[2];
    lowest_free(would_be, 2);
    int before = fds_open_count();
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = (rlim_t)would_be[1] + 1;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    char c;
    int got[5];
    size_t n = 3;
    int flags = 0;
    ssize_t rc = fd_pass_recv(sv[1], &c, 1, got, 5, &n, &flags);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(rc, -EBADMSG);
    assert_true(flags & MSG_CTRUNC);
    assert_int_equal(n, 0);
    assert_false(fd_open(would_be[0]));
    assert_false(fd_open(would_be[1]));
    assert_int_equal(fds_open_count(), before);
    close(sv[0]);
    close(sv[1]);
}

/* A control message of another kind (credentials, here) refuses the
 * message and closes the fds that came with it. */
static void
test_foreign_control_message(void **state)
{
    struct files *f = *state;
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    int on = 1;
    assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on), 0);
    int would_be[2];
    lowest_free(would_be, 2);
    int before = fds_open_count();
    assert_int_equal(send_buf(sv[0], "c", 1, f->fd, 2), 1);
    char c;
    int got[2];
    size_t n = 0;
    assert_int_equal(fd_pass_recv(sv[1], &c, 1, got, 2, &n, NULL), -EBADMSG);
    assert_int_equal(n, 0);
    assert_false(fd_open(would_be[0]));
    assert_false(fd_open(would_be[1]));
    assert_int_equal(fds_open_count(), before);
    /* and when no fd came, the same refusal */
    assert_int_equal(send_buf(sv[0], "d", 1, NULL, 0), 1);
    assert_int_equal(fd_pass_recv(sv[1], &c, 1, got, 2, &n, NULL), -EBADMSG);
    close(sv[0]);
    close(sv[1]);
}

/* No fd where one was expected: the bytes arrive and *nfds says 0; the
 * caller decides what the lack means. */
static void
test_no_fd_when_expected(void **state)
{
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    assert_int_equal(send_buf(sv[0], "bare", 4, NULL, 0), 4);
    char buf[8];
    int got = -1;
    size_t n = 5;
    assert_int_equal(fd_pass_recv(sv[1], buf, sizeof buf, &got, 1, &n, NULL), 4);
    assert_int_equal(n, 0);
    assert_int_equal(got, -1);
    close(sv[0]);
    close(sv[1]);
}

/* Data only, both ways: no fds sent, none taken; on a stream the bytes
 * are what counts; end of stream is 0; an empty datagram is 0 too. */
static void
test_data_only(void **state)
{
    int sv[2];
    pair(SOCK_STREAM, sv);
    assert_int_equal(send_buf(sv[0], "stream", 6, NULL, 0), 6);
    char buf[16];
    size_t n = 1;
    int flags = -1;
    assert_int_equal(fd_pass_recv(sv[1], buf, sizeof buf, NULL, 0, &n, &flags), 6);
    assert_memory_equal(buf, "stream", 6);
    assert_int_equal(n, 0);
    assert_int_equal(flags & (MSG_TRUNC | MSG_CTRUNC), 0);
    close(sv[0]);
    assert_int_equal(fd_pass_recv(sv[1], buf, sizeof buf, NULL, 0, &n, NULL), 0);
    close(sv[1]);

    pair(SOCK_SEQPACKET, sv);
    assert_int_equal(send_buf(sv[0], "", 0, NULL, 0), 0);
    assert_int_equal(fd_pass_recv(sv[1], buf, sizeof buf, NULL, 0, &n, NULL), 0);
    close(sv[0]);
    close(sv[1]);
}

/* A datagram longer than the buffer: MSG_TRUNC is reported, the fds are
 * adopted all the same (what the bytes mean is the caller's to judge). */
static void
test_datagram_truncated(void **state)
{
    struct files *f = *state;
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    assert_int_equal(send_buf(sv[0], "longer", 6, f->fd, 1), 6);
    char buf[2];
    int got = -1;
    size_t n = 0;
    int flags = 0;
    assert_int_equal(fd_pass_recv(sv[1], buf, sizeof buf, &got, 1, &n, &flags), 2);
    assert_true(flags & MSG_TRUNC);
    assert_int_equal(n, 1);
    assert_true(fds_same_file(got, f->fd[0]));
    close(got);
    close(sv[0]);
    close(sv[1]);
}

/* ---- errors of the socket ---- */

static void
test_socket_errors(void **state)
{
    struct files *f = *state;
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
    char c;
    size_t n = 4;
    assert_int_equal(fd_pass_recv(sv[1], &c, 1, NULL, 0, &n, NULL), -EAGAIN);
    assert_int_equal(n, 0);
    assert_int_equal(fd_pass_recv(-1, &c, 1, NULL, 0, &n, NULL), -EBADF);
    close(sv[1]);
    /* the peer is gone: -EPIPE, and no SIGPIPE (it would end the test) */
    assert_int_equal(send_buf(sv[0], "x", 1, f->fd, 1), -EPIPE);
    close(sv[0]);
}

/* ---- a signal in the middle ---- */

static atomic_int signals_seen;

static void
on_signal(int sig)
{
    (void)sig;
    atomic_fetch_add(&signals_seen, 1);
}

/* The system call thread tid is blocked in, -1 while it runs, or -2 when
 * it cannot be seen (/proc/PID/task/TID/syscall). */
static long
blocked_in(pid_t tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    FILE *fp = fopen(path, "re");
    if (fp == NULL)
        return -2;
    char word[32] = "";
    int got = fscanf(fp, "%31s", word);
    fclose(fp);
    if (got != 1)
        return -2;
    if (strcmp(word, "running") == 0)
        return -1;
    return strtol(word, NULL, 10);
}

struct interrupter {
    pid_t tid;            /* the test's thread, blocked in fd_pass_* */
    long nr;              /* the call it blocks in */
    atomic_bool done;     /* the test's call returned: stop waiting */
    void (*release)(int); /* what unblocks the call */
    int sock;
};

/* Waits (yielding, no timer) until the test's thread is blocked in nr, or
 * its call returned.  Returns whether it is blocked. */
static bool
wait_blocked(struct interrupter *in)
{
    while (!atomic_load(&in->done)) {
        if (blocked_in(in->tid) == in->nr)
            return true;
        sched_yield();
    }
    return false;
}

/* Interrupts the blocked call with a signal whose handler does not ask
 * for restarts, waits until the call is blocked again (retried, not
 * failed with EINTR), then releases it. */
static void *
interrupt(void *arg)
{
    struct interrupter *in = arg;
    if (!wait_blocked(in))
        return NULL;
    syscall(SYS_tgkill, getpid(), in->tid, SIGUSR1);
    while (atomic_load(&signals_seen) == 0 && !atomic_load(&in->done))
        sched_yield();
    if (wait_blocked(in))
        in->release(in->sock);
    return NULL;
}

/* The releases run on the interrupter's thread: no cmocka assertions
 * there (they jump back into the test's thread); the test's own checks
 * see what went wrong. */
static void
release_recv(int sock)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    (void)send_buf(sock, "late", 4, &fd, fd >= 0 ? 1 : 0);
    if (fd >= 0)
        close(fd);
}

static void
release_send(int sock)
{
    char buf[4096];
    while (recv(sock, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
}

/* Runs call(sock) with an interrupter on another thread; returns its
 * result, or skips the test where blocked threads cannot be seen. */
static ssize_t
with_signal(long nr, void (*release)(int), int other, ssize_t (*call)(int), int sock)
{
    if (blocked_in((pid_t)syscall(SYS_gettid)) == -2)
        skip();
    struct sigaction sa = {.sa_handler = on_signal}, old;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: the kernel returns EINTR */
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    atomic_store(&signals_seen, 0);
    struct interrupter in = {
        .tid = (pid_t)syscall(SYS_gettid), .nr = nr, .release = release, .sock = other};
    atomic_init(&in.done, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, interrupt, &in), 0);
    ssize_t rc = call(sock);
    atomic_store(&in.done, true);
    pthread_join(t, NULL);
    sigaction(SIGUSR1, &old, NULL);
    assert_int_equal(atomic_load(&signals_seen), 1);
    return rc;
}

static int recv_fd = -1;

static ssize_t
call_recv(int sock)
{
    char buf[8];
    size_t n = 0;
    ssize_t rc = fd_pass_recv(sock, buf, sizeof buf, &recv_fd, 1, &n, NULL);
    if (rc >= 0 && n != 1)
        return -1000;
    return rc;
}

static ssize_t
call_send(int sock)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ssize_t rc = send_buf(sock, "more", 4, &fd, 1);
    close(fd);
    return rc;
}

static void
test_recv_interrupted(void **state)
{
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    recv_fd = -1;
    assert_int_equal(with_signal(SYS_recvmsg, release_recv, sv[0], call_recv, sv[1]), 4);
    assert_true(recv_fd >= 0);
    close(recv_fd);
    close(sv[0]);
    close(sv[1]);
}

static void
test_send_interrupted(void **state)
{
    int sv[2];
    pair(SOCK_SEQPACKET, sv);
    /* fill the socket so that the next send blocks */
    char block[4096] = {0};
    while (send(sv[0], block, sizeof block, MSG_DONTWAIT) > 0)
        ;
    assert_int_equal(errno, EAGAIN);
    assert_int_equal(with_signal(SYS_sendmsg, release_send, sv[1], call_send, sv[0]), 4);
    close(sv[0]);
    close(sv[1]);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_fd, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_several_fds, files_setup, files_teardown),
        cmocka_unit_test(test_received_cloexec),
        cmocka_unit_test_setup_teardown(test_more_fds_than_accepted, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_most_fds, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_truncated_control_data, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_foreign_control_message, files_setup, files_teardown),
        cmocka_unit_test(test_no_fd_when_expected),
        cmocka_unit_test(test_data_only),
        cmocka_unit_test_setup_teardown(test_datagram_truncated, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_socket_errors, files_setup, files_teardown),
        cmocka_unit_test(test_recv_interrupted),
        cmocka_unit_test(test_send_interrupted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
