/*
 * unix_msg: reads a target's sendmsg message once (unix_msg.h).
 */
#include "supervise/unix_msg.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UIO_MAXIOV
#define UIO_MAXIOV 1024
#endif

/* len bytes at remote in pid into local: 0 or EFAULT. */
static int
read_remote(pid_t pid, void *local, uint64_t remote, size_t len)
{
    if (len == 0)
        return 0;
    struct iovec l = {local, len}, r = {(void *)(uintptr_t)remote, len};
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : EFAULT;
}

/* The iovecs' bytes, gathered into one buffer. */
static int
read_data(pid_t pid, const struct msghdr *remote, struct unix_msg *m)
{
    size_t n = remote->msg_iovlen;
    if (n > UIO_MAXIOV)
        return EMSGSIZE;
    struct iovec *iov = calloc(n ? n : 1, sizeof *iov);
    if (iov == NULL)
        return ENOMEM;
    int rc = read_remote(pid, iov, (uintptr_t)remote->msg_iov, n * sizeof *iov);
    size_t total = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (iov[i].iov_len > UNIX_MSG_MAX_DATA - total)
            rc = EMSGSIZE;
        else
            total += iov[i].iov_len;
    }
    m->data = rc == 0 ? malloc(total ? total : 1) : NULL;
    if (rc == 0 && m->data == NULL)
        rc = ENOMEM;
    if (rc == 0 && total > 0) {
        /* one call for all of them: the remote side may be any count up
         * to UIO_MAXIOV, which is the kernel's limit for it too */
        struct iovec local = {m->data, total};
        if (process_vm_readv(pid, &local, 1, iov, n, 0) != (ssize_t)total)
            rc = EFAULT;
    }
    free(iov);
    m->iov = (struct iovec){m->data, total};
    return rc;
}

/* Replaces the target's fd numbers in each SCM_RIGHTS by fds taken now. */
static int
take_fds(int pidfd, struct unix_msg *m)
{
    size_t room = m->hdr.msg_controllen / sizeof(int);
    m->fds = malloc((room ? room : 1) * sizeof(int));
    if (m->fds == NULL)
        return ENOMEM;
    const char *end = m->control + m->hdr.msg_controllen;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m->hdr); c != NULL; c = CMSG_NXTHDR(&m->hdr, c)) {
        /* each header inside the buffer, as the kernel checks (EINVAL):
         * a length the target wrote is never trusted past it */
        if (c->cmsg_len < sizeof *c || c->cmsg_len > (size_t)(end - (const char *)c))
            return EINVAL;
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        unsigned char *p = CMSG_DATA(c);
        for (size_t i = 0; i < k; i++) {
            int theirs, mine;
            memcpy(&theirs, p + i * sizeof(int), sizeof(int));
            mine = (int)syscall(SYS_pidfd_getfd, pidfd, theirs, 0);
            if (mine < 0)
                return errno == EBADF ? EBADF : EACCES;
            m->fds[m->nfds++] = mine;
            memcpy(p + i * sizeof(int), &mine, sizeof(int));
        }
    }
    return 0;
}

int
unix_msg_read(pid_t pid, int pidfd, uint64_t addr, struct unix_msg *m)
{
    memset(m, 0, sizeof *m);
    struct msghdr remote;
    int rc = read_remote(pid, &remote, addr, sizeof remote);
    if (rc != 0)
        return rc;
    if (remote.msg_name != NULL && remote.msg_namelen > 0) {
        if (remote.msg_namelen > sizeof m->name)
            return EINVAL;
        rc = read_remote(pid, &m->name, (uintptr_t)remote.msg_name, remote.msg_namelen);
        m->hdr.msg_name = &m->name;
        m->hdr.msg_namelen = remote.msg_namelen;
    }
    if (rc == 0)
        rc = read_data(pid, &remote, m);
    m->hdr.msg_iov = &m->iov;
    m->hdr.msg_iovlen = 1;
    if (rc == 0 && remote.msg_control != NULL && remote.msg_controllen > 0) {
        if (remote.msg_controllen > UNIX_MSG_MAX_CONTROL)
            return ENOBUFS;
        m->control = malloc(remote.msg_controllen);
        if (m->control == NULL)
            return ENOMEM;
        rc = read_remote(pid, m->control, (uintptr_t)remote.msg_control, remote.msg_controllen);
        m->hdr.msg_control = m->control;
        m->hdr.msg_controllen = remote.msg_controllen;
        if (rc == 0)
            rc = take_fds(pidfd, m);
    }
    return rc;
}

void
unix_msg_free(struct unix_msg *m)
{
    for (size_t i = 0; i < m->nfds; i++)
        close(m->fds[i]);
    free(m->fds);
    free(m->data);
    free(m->control);
    memset(m, 0, sizeof *m);
}
