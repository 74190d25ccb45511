/*
 * esc_io: escalation frames and their fds on Unix sockets, on top of
 * fd_pass (which sends, receives, and adopts or closes every fd).
 */
#include "proto/esc_io.h"

#include "common/close_keep_errno.h"
#include "common/fd_pass.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void
esc_fdlist_close(struct esc_fdlist *list)
{
    if (list == NULL)
        return;
    for (size_t i = 0; i < list->count; i++)
        close_keep_errno(list->fds[i]);
    list->count = 0;
}

/* One receive whose fds go to the end of list, as many as it has room
 * for (more is -EMSGSIZE: fd_pass closes this call's fds on any error,
 * earlier ones stay).  *flags gets the kernel's msg_flags (MSG_TRUNC for a
 * datagram longer than len). */
static ssize_t
recv_flags(int sock, void *buf, size_t len, struct esc_fdlist *list, int *flags)
{
    size_t got = 0;
    ssize_t n = fd_pass_recv(sock, buf, len, list->fds + list->count, ESC_MAX_FDS - list->count,
                             &got, flags);
    list->count += got;
    return n;
}

ssize_t
esc_io_recvmsg(int sock, void *buf, size_t len, struct esc_fdlist *fds)
{
    int flags = 0;
    return recv_flags(sock, buf, len, fds, &flags);
}

int
esc_io_send_all(int sock, const void *data, size_t len, const int *fds, size_t nfds)
{
    if (nfds > ESC_MAX_FDS)
        return -EMSGSIZE;
    const char *p = data;
    size_t sent = 0;
    do {
        struct iovec iov = {.iov_base = (void *)(p + sent), .iov_len = len - sent};
        /* the fds ride with the first byte only */
        bool first = sent == 0;
        ssize_t n = fd_pass_send(sock, &iov, 1, first ? fds : NULL, first ? nfds : 0);
        if (n < 0)
            return (int)n;
        sent += (size_t)n;
    } while (sent < len);
    return 0;
}

int
esc_io_send_msg(int sock, const struct esc_msg *msg, const int *fds, size_t nfds, const char **why)
{
    struct esc_buf frame = {0};
    int rc = esc_msg_encode(msg, &frame, why);
    if (rc == 0)
        rc = esc_io_send_all(sock, frame.data, frame.len, fds, nfds);
    esc_buf_free(&frame);
    return rc;
}

/* Bytes still missing from the frame at the start of in (its header was
 * already checked by the decoder when complete), at most 64 KiB a read. */
static size_t
frame_missing(const struct esc_buf *in)
{
    size_t want;
    if (in->len < ESC_HEADER_SIZE) {
        want = ESC_HEADER_SIZE - in->len;
    } else {
        const unsigned char *p = (const unsigned char *)in->data;
        size_t body =
            (size_t)p[0] | ((size_t)p[1] << 8) | ((size_t)p[2] << 16) | ((size_t)p[3] << 24);
        want = ESC_HEADER_SIZE + body - in->len;
    }
    return want > 65536 ? 65536 : want;
}

int
esc_io_recv_msg(int sock, struct esc_buf *in, struct esc_msg *out, struct esc_fdlist *fds,
                const char **why)
{
    const char *ignored;
    if (why == NULL)
        why = &ignored;
    for (;;) {
        size_t used;
        int rc = esc_msg_decode(in->data, in->len, out, &used, why);
        if (rc != 0) {
            if (rc == 1)
                esc_buf_consume(in, used);
            return rc;
        }
        /* Read at most what completes the header or the body, so fds that
         * belong to a later frame are not taken with this one. */
        size_t want = frame_missing(in);
        if ((rc = esc_buf_reserve(in, want)) < 0) {
            *why = "out of memory";
            return rc;
        }
        ssize_t n = esc_io_recvmsg(sock, in->data + in->len, want, fds);
        if (n < 0) {
            *why = "receiving from the peer failed";
            return (int)n;
        }
        if (n == 0) {
            *why = in->len ? "connection closed inside a frame" : "connection closed";
            return in->len ? -ECONNRESET : 0;
        }
        in->len += (size_t)n;
    }
}

/* The received session fd must be a stream Unix socket, not a file or a
 * pipe that would make the session's reads mean something else. */
static int
is_unix_stream(int fd)
{
    int type = 0, domain = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
        return 0;
    len = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
        return 0;
    return type == SOCK_STREAM && domain == AF_UNIX;
}

/* Decodes a first datagram: exactly one HELLO or REQUEST frame. */
static int
decode_first(const void *buf, size_t n, struct esc_msg *first, const char **why)
{
    size_t used = 0;
    int rc = esc_msg_decode(buf, n, first, &used, why);
    if (rc == 0) {
        *why = "datagram shorter than a frame";
        return -EBADMSG;
    }
    if (rc < 0)
        return rc;
    if ((first->type != ESC_MSG_HELLO && first->type != ESC_MSG_REQUEST) || used != n) {
        esc_msg_free(first);
        *why = "the first datagram must be exactly a HELLO or a REQUEST";
        return -EBADMSG;
    }
    return 1;
}

int
esc_io_recv_hello(int dgram, void *buf, size_t cap, int *stream, struct esc_msg *first,
                  const char **why)
{
    const char *ignored;
    if (why == NULL)
        why = &ignored;
    struct esc_fdlist fds = {.count = 0};
    int flags = 0;
    memset(first, 0, sizeof *first);
    ssize_t n = recv_flags(dgram, buf, cap, &fds, &flags);
    if (n < 0) {
        *why = "bad control data on the escalation socket";
        return (int)n;
    }
    if (n == 0 && fds.count == 0)
        return 0;
    int rc;
    if ((flags & MSG_TRUNC) || (size_t)n > ESC_MAX_DGRAM) {
        *why = "first datagram longer than ESC_MAX_DGRAM";
        rc = -EMSGSIZE;
    } else {
        rc = decode_first(buf, (size_t)n, first, why);
    }
    if (rc == 1 && fds.count != 1) {
        *why = "a HELLO or REQUEST datagram must carry exactly one fd";
        rc = -EBADMSG;
    } else if (rc == 1 && !is_unix_stream(fds.fds[0])) {
        *why = "the fd of a HELLO or REQUEST datagram is not a Unix stream socket";
        rc = -EBADMSG;
    }
    if (rc < 0) {
        esc_msg_free(first); /* zeroed above, or a frame with the wrong fds */
        esc_fdlist_close(&fds);
        return rc;
    }
    *stream = fds.fds[0];
    return 1;
}
