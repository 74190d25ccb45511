/*
 * esc_io: frames and fds over real Unix sockets. Fds received are
 * close-on-exec and either handed over or closed (counted through
 * /proc/self/fd), and every attack on the first datagram (HELLO or
 * REQUEST) is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/esc_io.h"
#include "proto/esc_proto.h"
#include "tests/support/fds.h"

/* Test messages are built from string literals; the codec never writes
 * through an encoder input. */
#pragma GCC diagnostic ignored "-Wdiscarded-qualifiers"

static void
pair(int type, int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
}

/* Sends raw bytes with an arbitrary set of fds, bypassing the encoder. */
static void
raw_send(int sock, const void *data, size_t len, const int *fds, size_t nfds)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * 253)];
    } c;
    struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds) {
        mh.msg_control = c.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(h), fds, sizeof(int) * nfds);
    }
    assert_int_equal(sendmsg(sock, &mh, 0), (ssize_t)len);
}

static void
test_frame_with_fds(void **state)
{
    int sv[2], p[2];
    pair(SOCK_STREAM, sv);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    int targets[] = {0, 63};
    int fds[] = {p[0], p[1]};
    struct esc_msg m = {.type = ESC_MSG_FDS, .u.fds = {targets, 2}};
    assert_int_equal(esc_io_send_msg(sv[0], &m, fds, 2, NULL), 0);

    struct esc_buf in = {0};
    struct esc_fdlist got = {.count = 0};
    struct esc_msg out;
    assert_int_equal(esc_io_recv_msg(sv[1], &in, &out, &got, NULL), 1);
    assert_int_equal(out.type, ESC_MSG_FDS);
    assert_int_equal(out.u.fds.count, 2);
    assert_int_equal(out.u.fds.targets[1], 63);
    assert_int_equal(got.count, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_true(fds_same_file(got.fds[i], fds[i]));
        assert_true(fcntl(got.fds[i], F_GETFD) & FD_CLOEXEC);
    }
    /* The fds really work: write through the received write end. */
    assert_int_equal(write(got.fds[1], "z", 1), 1);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    assert_int_equal(c, 'z');
    esc_msg_free(&out);
    esc_fdlist_close(&got);
    assert_int_equal(got.count, 0);
    esc_buf_free(&in);
    close(p[0]);
    close(p[1]);
    close(sv[0]);
    close(sv[1]);
}

static void
test_recv_byte_by_byte_and_eof(void **state)
{
    int sv[2];
    pair(SOCK_STREAM, sv);
    struct esc_msg d = {.type = ESC_MSG_DENY, .u.deny_reason = "User declined execution"};
    struct esc_buf frame = {0};
    assert_int_equal(esc_msg_encode(&d, &frame, NULL), 0);
    struct esc_msg r = {.type = ESC_MSG_RUN};
    assert_int_equal(esc_msg_encode(&r, &frame, NULL), 0);
    for (size_t i = 0; i < frame.len; i++)
        assert_int_equal(write(sv[0], frame.data + i, 1), 1);
    /* Half a frame, then the writer goes away. */
    assert_int_equal(write(sv[0], frame.data, 5), 5);
    close(sv[0]);

    struct esc_buf in = {0};
    struct esc_fdlist fds = {.count = 0};
    struct esc_msg out;
    const char *why = NULL;
    assert_int_equal(esc_io_recv_msg(sv[1], &in, &out, &fds, &why), 1);
    assert_string_equal(out.u.deny_reason, "User declined execution");
    esc_msg_free(&out);
    assert_int_equal(esc_io_recv_msg(sv[1], &in, &out, &fds, &why), 1);
    assert_int_equal(out.type, ESC_MSG_RUN);
    assert_int_equal(esc_io_recv_msg(sv[1], &in, &out, &fds, &why), -ECONNRESET);
    assert_non_null(strstr(why, "inside a frame"));
    esc_buf_free(&in);
    esc_buf_free(&frame);
    close(sv[1]);
}

static void
test_recv_clean_eof_and_garbage(void **state)
{
    int sv[2];
    pair(SOCK_STREAM, sv);
    close(sv[0]);
    struct esc_buf in = {0};
    struct esc_fdlist fds = {.count = 0};
    struct esc_msg out;
    assert_int_equal(esc_io_recv_msg(sv[1], &in, &out, &fds, NULL), 0);
    close(sv[1]);

    pair(SOCK_STREAM, sv);
    const char garbage[] = "GET / HTTP/1.1\r\n\r\n";
    assert_int_equal(write(sv[0], garbage, sizeof garbage), (ssize_t)sizeof garbage);
    const char *why = NULL;
    int rc = esc_io_recv_msg(sv[1], &in, &out, &fds, &why);
    assert_true(rc == -EPROTONOSUPPORT || rc == -EBADMSG || rc == -EMSGSIZE);
    assert_non_null(why);
    esc_buf_free(&in);
    close(sv[0]);
    close(sv[1]);
}

/* The receiver's buffer for a first datagram (static: 64 KiB). */
static char dgram_buf[ESC_MAX_DGRAM + 1];

/* A REQUEST whose frame is exactly `size` bytes: one env entry padded. */
static void
encode_request_of_size(struct esc_buf *out, size_t size)
{
    struct esc_msg m = {.type = ESC_MSG_REQUEST};
    char *argv[] = {"ls", "-l"};
    char *env[] = {NULL};
    m.u.request = (struct esc_request){
        .file = "/bin/ls", .argv = argv, .argc = 2, .workdir = "/", .env = env, .envc = 1};
    struct esc_buf probe = {0};
    env[0] = "A=";
    assert_int_equal(esc_msg_encode(&m, &probe, NULL), 0);
    assert_true(size >= probe.len);
    char *val = malloc(size - probe.len + 3);
    assert_non_null(val);
    memset(val, 'x', size - probe.len + 2);
    memcpy(val, "A=", 2);
    val[size - probe.len + 2] = '\0';
    env[0] = val;
    assert_int_equal(esc_msg_encode(&m, out, NULL), 0);
    assert_int_equal(out->len, size);
    free(val);
    esc_buf_free(&probe);
}

static void
test_hello_ok(void **state)
{
    int dg[2], st[2];
    pair(SOCK_DGRAM, dg);
    pair(SOCK_STREAM, st);
    struct esc_msg hello = {.type = ESC_MSG_HELLO};
    assert_int_equal(esc_io_send_msg(dg[0], &hello, &st[1], 1, NULL), 0);
    int stream = -1;
    struct esc_msg first;
    assert_int_equal(esc_io_recv_hello(dg[1], dgram_buf, sizeof dgram_buf, &stream, &first, NULL),
                     1);
    assert_int_equal(first.type, ESC_MSG_HELLO);
    assert_true(fds_same_file(stream, st[1]));
    assert_true(fcntl(stream, F_GETFD) & FD_CLOEXEC);
    close(stream);
    /* Nothing more waiting on a non-blocking socket. */
    assert_int_equal(fcntl(dg[1], F_SETFL, O_NONBLOCK), 0);
    assert_int_equal(esc_io_recv_hello(dg[1], dgram_buf, sizeof dgram_buf, &stream, &first, NULL),
                     -EAGAIN);
    for (int i = 0; i < 2; i++) {
        close(dg[i]);
        close(st[i]);
    }
}

/* A REQUEST opens the session in one datagram, up to ESC_MAX_DGRAM bytes,
 * decoded as on the stream. */
static void
test_request_datagram_ok(void **state)
{
    int dg[2], st[2];
    pair(SOCK_DGRAM, dg);
    pair(SOCK_STREAM, st);
    size_t sizes[] = {100, ESC_MAX_DGRAM};
    for (size_t i = 0; i < 2; i++) {
        struct esc_buf req = {0};
        encode_request_of_size(&req, sizes[i]);
        assert_int_equal(esc_io_send_all(dg[0], req.data, req.len, &st[1], 1), 0);
        int stream = -1;
        struct esc_msg first;
        assert_int_equal(
            esc_io_recv_hello(dg[1], dgram_buf, sizeof dgram_buf, &stream, &first, NULL), 1);
        assert_int_equal(first.type, ESC_MSG_REQUEST);
        assert_string_equal(first.u.request.file, "/bin/ls");
        assert_int_equal(first.u.request.argc, 2);
        assert_string_equal(first.u.request.argv[1], "-l");
        assert_null(first.u.request.argv[2]);
        assert_int_equal(first.u.request.envc, 1);
        struct esc_buf again = {0};
        assert_int_equal(esc_msg_encode(&first, &again, NULL), 0);
        assert_int_equal(again.len, req.len);
        assert_memory_equal(again.data, req.data, req.len);
        esc_buf_free(&again);
        assert_true(fds_same_file(stream, st[1]));
        close(stream);
        esc_msg_free(&first);
        esc_buf_free(&req);
    }
    for (int i = 0; i < 2; i++) {
        close(dg[i]);
        close(st[i]);
    }
}

/* Each bad first datagram is refused and leaves no fd behind in the
 * receiver. */
static void
test_hello_attacks(void **state)
{
    int dg[2], st[2], p[2];
    pair(SOCK_DGRAM, dg);
    pair(SOCK_STREAM, st);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    int dgram_pair[2];
    pair(SOCK_DGRAM, dgram_pair);

    struct esc_buf hello = {0}, run = {0}, req = {0}, big = {0}, two = {0};
    struct esc_msg h = {.type = ESC_MSG_HELLO}, r = {.type = ESC_MSG_RUN};
    assert_int_equal(esc_msg_encode(&h, &hello, NULL), 0);
    assert_int_equal(esc_msg_encode(&r, &run, NULL), 0);
    encode_request_of_size(&req, 200);
    encode_request_of_size(&big, ESC_MAX_DGRAM + 1);
    /* a REQUEST and a second frame in one datagram */
    encode_request_of_size(&two, 200);
    assert_int_equal(esc_msg_encode(&r, &two, NULL), 0);
    unsigned char badver[ESC_HEADER_SIZE];
    memcpy(badver, hello.data, sizeof badver);
    badver[4] = 9;
    char longer[ESC_HEADER_SIZE + 4] = {0};
    memcpy(longer, hello.data, ESC_HEADER_SIZE);

    struct {
        const void *data;
        size_t len;
        int fds[2];
        size_t nfds;
        int rc;
        const char *why;
    } cases[] = {
        {hello.data, hello.len, {0}, 0, -EBADMSG, "exactly one fd"},
        {hello.data, hello.len, {st[1], p[0]}, 2, -EBADMSG, "exactly one fd"},
        {hello.data, hello.len, {p[0]}, 1, -EBADMSG, "not a Unix stream"},
        {hello.data, hello.len, {dgram_pair[1]}, 1, -EBADMSG, "not a Unix stream"},
        {run.data, run.len, {st[1]}, 1, -EBADMSG, "HELLO"},
        {badver, sizeof badver, {st[1]}, 1, -EPROTONOSUPPORT, "version"},
        {longer, sizeof longer, {st[1]}, 1, -EBADMSG, "HELLO"},
        {"abc", 3, {st[1]}, 1, -EBADMSG, "shorter"},
        {req.data, req.len, {0}, 0, -EBADMSG, "exactly one fd"},
        {req.data, req.len, {st[1], st[1]}, 2, -EBADMSG, "exactly one fd"},
        {req.data, req.len, {p[1]}, 1, -EBADMSG, "not a Unix stream"},
        {req.data, req.len - 1, {st[1]}, 1, -EBADMSG, "shorter"},
        {big.data, big.len, {st[1]}, 1, -EMSGSIZE, "ESC_MAX_DGRAM"},
        {two.data, two.len, {st[1]}, 1, -EBADMSG, "exactly a HELLO or a REQUEST"},
    };
    int before = fds_open_count();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        raw_send(dg[0], cases[i].data, cases[i].len, cases[i].fds, cases[i].nfds);
        int stream = -1;
        const char *why = NULL;
        struct esc_msg first;
        assert_int_equal(
            esc_io_recv_hello(dg[1], dgram_buf, sizeof dgram_buf, &stream, &first, &why),
            cases[i].rc);
        assert_int_equal(stream, -1);
        assert_int_equal(first.type, 0); /* nothing to free */
        if (strstr(why, cases[i].why) == NULL)
            fail_msg("case %zu: reason \"%s\" lacks \"%s\"", i, why, cases[i].why);
        assert_int_equal(fds_open_count(), before);
    }
    esc_buf_free(&hello);
    esc_buf_free(&run);
    esc_buf_free(&req);
    esc_buf_free(&big);
    esc_buf_free(&two);
    int all[] = {dg[0], dg[1], st[0], st[1], p[0], p[1], dgram_pair[0], dgram_pair[1]};
    for (size_t i = 0; i < 8; i++)
        close(all[i]);
}

/* More fds than the protocol allows in one message: all are closed. */
static void
test_too_many_fds(void **state)
{
    int sv[2];
    pair(SOCK_STREAM, sv);
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    size_t n = ESC_MAX_FDS + 10;
    int *fds = malloc(n * sizeof *fds);
    for (size_t i = 0; i < n; i++)
        fds[i] = p[0];
    int before = fds_open_count();
    raw_send(sv[0], "x", 1, fds, n);
    struct esc_fdlist got = {.count = 0};
    char c;
    ssize_t rc = esc_io_recvmsg(sv[1], &c, 1, &got);
    assert_true(rc == -EMSGSIZE || rc == -EBADMSG);
    assert_int_equal(got.count, 0);
    assert_int_equal(fds_open_count(), before);

    /* A previously adopted fd stays when a later call fails. */
    raw_send(sv[0], "y", 1, fds, 1);
    assert_int_equal(esc_io_recvmsg(sv[1], &c, 1, &got), 1);
    assert_int_equal(got.count, 1);
    raw_send(sv[0], "z", 1, fds, n);
    rc = esc_io_recvmsg(sv[1], &c, 1, &got);
    assert_true(rc < 0);
    assert_int_equal(got.count, 1);
    assert_int_equal(fds_open_count(), before + 1);
    esc_fdlist_close(&got);
    assert_int_equal(fds_open_count(), before);

    /* Filling the list exactly is fine; one more is refused. */
    for (size_t i = 0; i < ESC_MAX_FDS; i++)
        raw_send(sv[0], "a", 1, fds, 1);
    for (size_t i = 0; i < ESC_MAX_FDS; i++)
        assert_int_equal(esc_io_recvmsg(sv[1], &c, 1, &got), 1);
    assert_int_equal(got.count, ESC_MAX_FDS);
    raw_send(sv[0], "b", 1, fds, 1);
    assert_int_equal(esc_io_recvmsg(sv[1], &c, 1, &got), -EMSGSIZE);
    assert_int_equal(got.count, ESC_MAX_FDS);
    esc_fdlist_close(&got);
    assert_int_equal(fds_open_count(), before);

    free(fds);
    close(p[0]);
    close(p[1]);
    close(sv[0]);
    close(sv[1]);
}

/* A control message that is not SCM_RIGHTS (credentials, here) is refused
 * and the fds that came with it are closed. */
static void
test_other_control_message(void **state)
{
    int sv[2];
    pair(SOCK_STREAM, sv);
    int on = 1;
    assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on), 0);
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    int before = fds_open_count();
    raw_send(sv[0], "x", 1, &p[0], 1);
    struct esc_fdlist got = {.count = 0};
    char c;
    assert_int_equal(esc_io_recvmsg(sv[1], &c, 1, &got), -EBADMSG);
    assert_int_equal(got.count, 0);
    assert_int_equal(fds_open_count(), before);
    close(p[0]);
    close(p[1]);
    close(sv[0]);
    close(sv[1]);
}

static void
test_send_errors(void **state)
{
    int sv[2];
    pair(SOCK_STREAM, sv);
    close(sv[1]);
    struct esc_msg r = {.type = ESC_MSG_RUN};
    /* No SIGPIPE: the test would die instead of seeing -EPIPE. */
    assert_int_equal(esc_io_send_msg(sv[0], &r, NULL, 0, NULL), -EPIPE);
    struct esc_msg bad = {.type = ESC_MSG_SIGNAL, .u.signo = 9};
    const char *why = NULL;
    assert_int_equal(esc_io_send_msg(sv[0], &bad, NULL, 0, &why), -EINVAL);
    assert_non_null(why);
    int fds[ESC_MAX_FDS + 1] = {0};
    assert_int_equal(esc_io_send_all(sv[0], "x", 1, fds, ESC_MAX_FDS + 1), -EMSGSIZE);
    assert_int_equal(esc_io_send_msg(-1, &r, NULL, 0, NULL), -EBADF);
    close(sv[0]);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_with_fds),
        cmocka_unit_test(test_recv_byte_by_byte_and_eof),
        cmocka_unit_test(test_recv_clean_eof_and_garbage),
        cmocka_unit_test(test_hello_ok),
        cmocka_unit_test(test_hello_attacks),
        cmocka_unit_test(test_request_datagram_ok),
        cmocka_unit_test(test_too_many_fds),
        cmocka_unit_test(test_other_control_message),
        cmocka_unit_test(test_send_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
