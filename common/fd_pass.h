/*
 * fd_pass: fds over Unix sockets (SCM_RIGHTS), sent and received in one
 * place for every side: the wrapper and the server's escalation sessions
 * (esc_io), the sandbox helper's hand-over of its exec filter listener
 * (sandbox/exec_filter.c) and its receiver (supervise/exec_notify.c), the
 * server's filtered start (server/call/spawn_filtered.c) and its kernel probe.
 *
 * Ownership on receipt is total: every fd the kernel installs is either
 * handed to the caller or closed before fd_pass_recv returns, whatever
 * arrives (more fds than the caller takes, a truncated control buffer,
 * control messages of another kind).  Received fds are close-on-exec
 * (MSG_CMSG_CLOEXEC) from the moment they exist.
 *
 * Neither function allocates, so the server's clone(CLONE_VM) child,
 * which shares the server's allocator, may send with fd_pass_send.
 * Nothing here knows the messages' contents; no libuv, libc only (the
 * musl-built helper and wrapper and the patched Bash compile it too).
 */
#ifndef EXECGATE_COMMON_FD_PASS_H
#define EXECGATE_COMMON_FD_PASS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The most fds one message can carry: the kernel's SCM_MAX_FD.  The
 * receiver always makes room for this many, so it sees (and closes) every
 * fd a sender attached, not only the ones it wanted. */
#define FD_PASS_MAX_FDS 253

/*
 * One sendmsg(2) of the iovcnt buffers of iov, with nfds fds (borrowed;
 * nfds <= FD_PASS_MAX_FDS, fds may be NULL when nfds is 0) attached to its
 * first byte.  EINTR is retried; never raises SIGPIPE (MSG_NOSIGNAL).
 * Returns the bytes sent, which on a stream socket may be fewer than
 * asked (the fds went with the first of them: send the rest without), or
 * a negative errno: -EINVAL for nfds over FD_PASS_MAX_FDS, -EPIPE when the
 * peer is gone, -EAGAIN on a full non-blocking socket.
 */
ssize_t fd_pass_send(int sock, const struct iovec *iov, size_t iovcnt, const int *fds, size_t nfds);

/*
 * One recvmsg(2) of up to len bytes into buf (EINTR is retried).
 * Up to max fds that came with the bytes are stored in fds[0..*nfds), in
 * the order sent; they are close-on-exec and the caller's.  *msg_flags
 * (may be NULL) gets the kernel's msg_flags, e.g. MSG_TRUNC for a datagram
 * longer than len.
 * Returns the byte count (0: end of stream, or an empty datagram) or a
 * negative errno: -EAGAIN on a non-blocking socket with nothing to read;
 * -EBADMSG when a control message other than SCM_RIGHTS arrived or the
 * control data was truncated (MSG_CTRUNC); -EMSGSIZE when more than max
 * fds arrived.  On every error *nfds is 0 and each fd of this message
 * has been closed; the message's bytes are consumed all the same.
 */
ssize_t fd_pass_recv(int sock, void *buf, size_t len, int *fds, size_t max, size_t *nfds,
                     int *msg_flags);

/*
 * fd_pass_recv that also takes the sender's pidfd (SCM_PIDFD, which the
 * kernel adds to each message when the receiver set SO_PASSPIDFD on sock,
 * Linux 6.5): *pidfd is that pidfd (close-on-exec, the caller's) or -1
 * when none came.  It names the process that sent the message even after
 * its pid is reused.  On every error *pidfd is -1 and closed with the
 * rest.
 */
ssize_t fd_pass_recv_pidfd(int sock, void *buf, size_t len, int *fds, size_t max, size_t *nfds,
                           int *msg_flags, int *pidfd);

#endif
