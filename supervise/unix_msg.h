/*
 * unix_msg: a sendmsg message of a sandboxed command, read once from its
 * memory into the supervisor's (unix_connect.h sends it on the command's
 * behalf, so nothing the command rewrites afterwards is what is sent).
 *
 * The msghdr, the iovecs and the bytes they name, and the control data
 * are each read once with process_vm_readv; the fds of SCM_RIGHTS are
 * taken from the command (pidfd_getfd) and replace its numbers in the
 * copy.  Bounded: at most UNIX_MSG_MAX_DATA bytes of data (EMSGSIZE
 * beyond: more than any Unix or UDP datagram holds), UIO_MAXIOV iovecs and
 * UNIX_MSG_MAX_CONTROL bytes of control data (ENOBUFS beyond, as the
 * kernel's own limit answers).
 */
#ifndef EXECGATE_SUPERVISE_UNIX_MSG_H
#define EXECGATE_SUPERVISE_UNIX_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#define UNIX_MSG_MAX_DATA    (1u << 20)
#define UNIX_MSG_MAX_CONTROL (64u << 10)

struct unix_msg {
    struct msghdr hdr; /* the copy, sendmsg-ready; msg_name NULL when none was given */
    struct sockaddr_storage name;
    struct iovec iov;
    char *data;    /* malloc'd */
    char *control; /* malloc'd, or NULL */
    int *fds;      /* the taken SCM_RIGHTS fds, malloc'd */
    size_t nfds;
};

/*
 * Reads the msghdr at addr in pid's memory (pidfd: pid's, to take fds
 * with) into *m (zeroed first).  Returns 0, or a positive errno to answer
 * the call with: EFAULT (unreadable), EMSGSIZE, ENOBUFS, EINVAL (a name
 * longer than any address, a control header past its buffer), EBADF (an SCM_RIGHTS fd the command
 * does not have), ENOMEM.  Free *m with unix_msg_free either way.
 */
int unix_msg_read(pid_t pid, int pidfd, uint64_t addr, struct unix_msg *m);

/* Closes the taken fds and frees the copies. */
void unix_msg_free(struct unix_msg *m);

#endif
