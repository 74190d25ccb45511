/*
 * esc_io: escalation frames and fds on Unix sockets.
 *
 * Small helpers for both sides, on top of fd_pass (fd_pass.h): the
 * wrapper calls them on blocking sockets, the server on non-blocking ones
 * from its loop (they then return -EAGAIN). Received fds are always
 * close-on-exec (MSG_CMSG_CLOEXEC) and every one is either handed to the
 * caller in a struct esc_fdlist or closed before returning; any control
 * message other than SCM_RIGHTS is refused.
 */
#ifndef EXECGATE_PROTO_ESC_IO_H
#define EXECGATE_PROTO_ESC_IO_H

#include <stddef.h>
#include <sys/types.h>

#include "proto/esc_proto.h"

/* Fds received so far on one session, in arrival order. Bounded by the
 * protocol's limit; going past it is an error, never a truncation. */
struct esc_fdlist {
    int fds[ESC_MAX_FDS];
    size_t count;
};

/* Closes every fd in the list and empties it. NULL is a no-op. Cannot fail. */
void esc_fdlist_close(struct esc_fdlist *list);

/*
 * One recvmsg(2) of up to len bytes into buf (EINTR is retried).
 * Returns the byte count (0: end of stream, or an empty datagram), or a
 * negative errno: -EAGAIN on a non-blocking socket with nothing to read;
 * -EBADMSG when a control message other than SCM_RIGHTS arrived or control
 * data was truncated; -EMSGSIZE when the fds would exceed ESC_MAX_FDS.
 * On success every received fd was appended to fds; on error the fds of
 * this call were closed (earlier ones stay in the list).
 */
ssize_t esc_io_recvmsg(int sock, void *buf, size_t len, struct esc_fdlist *fds);

/*
 * Sends all len bytes of data on a blocking socket, with fds (nfds <=
 * ESC_MAX_FDS, may be 0) attached to the first byte. Never raises SIGPIPE.
 * Returns 0 or a negative errno (-EPIPE when the peer is gone). The fds
 * stay the caller's.
 */
int esc_io_send_all(int sock, const void *data, size_t len, const int *fds, size_t nfds);

/*
 * Encodes msg (see esc_msg_encode) and sends it with esc_io_send_all; on a
 * datagram socket the frame is one datagram. Returns 0 or a negative errno;
 * *why (when not NULL) is set for encoding errors.
 */
int esc_io_send_msg(int sock, const struct esc_msg *msg, const int *fds, size_t nfds,
                    const char **why);

/*
 * Blocking: reads from sock, buffering in *in (kept between calls: bytes
 * after the frame stay there), until one frame decodes.
 * Returns 1 with *out filled (caller frees with esc_msg_free); 0 on end of
 * stream with no partial frame pending; -ECONNRESET on end of stream inside
 * a frame; a decode error of esc_msg_decode (with *why); or -errno from
 * recvmsg. Fds that arrive are appended to fds (caller owns them).
 */
int esc_io_recv_msg(int sock, struct esc_buf *in, struct esc_msg *out, struct esc_fdlist *fds,
                    const char **why);

/*
 * Server side of a session's start: reads one datagram from the call's
 * escalation socket into buf[0..cap) (cap > ESC_MAX_DGRAM; a longer
 * datagram is refused, not truncated). It must be exactly one frame, a
 * HELLO (empty body) or a REQUEST, carrying exactly one fd, and that fd
 * must be an AF_UNIX SOCK_STREAM socket.
 * Returns 1 with *stream set (caller owns it, close-on-exec) and *first the
 * decoded frame (type HELLO or REQUEST; caller frees with esc_msg_free),
 * -EAGAIN when nothing is waiting on a non-blocking socket, 0 for an empty
 * datagram or end of file, or a negative errno for anything malformed
 * (-EBADMSG, -EPROTONOSUPPORT, -EMSGSIZE, ...; *why set); every received fd
 * is closed and nothing is stored on error.
 */
int esc_io_recv_hello(int dgram, void *buf, size_t cap, int *stream, struct esc_msg *first,
                      const char **why);

#endif
