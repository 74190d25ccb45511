/*
 * fd_pass: sendmsg/recvmsg with SCM_RIGHTS, and the adopt-or-close walk
 * over what a receive brought in (and the sender's SCM_PIDFD, for the
 * receivers that ask for it).
 */
#include "common/fd_pass.h"
#include "common/close_keep_errno.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Room for the most fds one message can carry, aligned for cmsghdr.  On
 * the stack of both sides (about 1 KiB): the sender may be the server's
 * clone(CLONE_VM) child, which must not allocate. */
union fd_pass_cmsg {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int) * FD_PASS_MAX_FDS) + CMSG_SPACE(sizeof(int))];
};

#ifndef SCM_PIDFD
#define SCM_PIDFD 0x04 /* Linux 6.5; older libc headers lack it */
#endif
ssize_t
fd_pass_send(int sock, const struct iovec *iov, size_t iovcnt, const int *fds, size_t nfds)
{
    union fd_pass_cmsg ctl;
    if (nfds > FD_PASS_MAX_FDS)
        return -EINVAL;
    /* sendmsg does not write through msg_iov; the cast only drops const */
    struct msghdr mh = {.msg_iov = (struct iovec *)iov, .msg_iovlen = iovcnt};
    if (nfds > 0) {
        size_t bytes = sizeof(int) * nfds;
        memset(ctl.buf, 0, CMSG_SPACE(bytes));
        mh.msg_control = ctl.buf;
        mh.msg_controllen = CMSG_SPACE(bytes);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(bytes);
        memcpy(CMSG_DATA(c), fds, bytes);
    }
    ssize_t n;
    do
        n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

/* Adopts (into fds, up to max) or closes one SCM_RIGHTS message's fds.
 * Returns 0, or -EMSGSIZE once one fd did not fit. */
static int
take_rights(const struct cmsghdr *c, int *fds, size_t max, size_t *nfds)
{
    int rc = 0;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const unsigned char *data = CMSG_DATA(c);
    for (size_t i = 0; i < count; i++) {
        int fd;
        memcpy(&fd, data + i * sizeof fd, sizeof fd);
        if (*nfds < max) {
            fds[(*nfds)++] = fd;
        } else {
            close_keep_errno(fd);
            rc = -EMSGSIZE;
        }
    }
    return rc;
}

/* The one SCM_PIDFD a receiver asked for (pidfd non-NULL, still -1), or
 * false: a second one, or one nobody asked for, is closed. */
static bool
take_pidfd(const struct cmsghdr *c, int *pidfd)
{
    int fd;
    if (c->cmsg_len != CMSG_LEN(sizeof fd))
        return false;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    if (pidfd != NULL && *pidfd < 0) {
        *pidfd = fd;
        return true;
    }
    close_keep_errno(fd);
    return false;
}

/*
 * Walks every control message of one recvmsg.  Each fd is stored or
 * closed; on any problem the stored ones are closed too, so the caller
 * holds either all it asked for or nothing.  A foreign control message or
 * truncated control data makes the message untrustworthy (-EBADMSG, which
 * wins over -EMSGSIZE); the kernel installs the fds of a truncated
 * message only in part (those that fit; none past an EMFILE), and those
 * are closed like the rest.  The sender's pidfd is a foreign message
 * unless pidfd asks for it.
 */
static int
take_all(struct msghdr *mh, int *fds, size_t max, size_t *nfds, int *pidfd)
{
    bool bad = (mh->msg_flags & MSG_CTRUNC) != 0;
    bool too_many = false;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_PIDFD)
            bad |= !take_pidfd(c, pidfd);
        else if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            bad = true;
        else if (take_rights(c, fds, max, nfds) < 0)
            too_many = true;
    }
    if (!bad && !too_many)
        return 0;
    for (size_t i = 0; i < *nfds; i++)
        close_keep_errno(fds[i]);
    *nfds = 0;
    if (pidfd != NULL && *pidfd >= 0) {
        close_keep_errno(*pidfd);
        *pidfd = -1;
    }
    return bad ? -EBADMSG : -EMSGSIZE;
}

ssize_t
fd_pass_recv_pidfd(int sock, void *buf, size_t len, int *fds, size_t max, size_t *nfds,
                   int *msg_flags, int *pidfd)
{
    union fd_pass_cmsg ctl;
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct msghdr mh = {
        .msg_iov = &iov,
        .msg_iovlen = 1,
        .msg_control = ctl.buf,
        .msg_controllen = sizeof ctl.buf,
    };
    *nfds = 0;
    if (msg_flags != NULL)
        *msg_flags = 0;
    if (pidfd != NULL)
        *pidfd = -1;
    ssize_t n;
    do
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno; /* nothing was installed */
    if (msg_flags != NULL)
        *msg_flags = mh.msg_flags;
    int rc = take_all(&mh, fds, max, nfds, pidfd);
    return rc < 0 ? rc : n;
}

ssize_t
fd_pass_recv(int sock, void *buf, size_t len, int *fds, size_t max, size_t *nfds, int *msg_flags)
{
    return fd_pass_recv_pidfd(sock, buf, len, fds, max, nfds, msg_flags, NULL);
}
