/*
 * peer_cred: who is at the other end of a Unix socket, as the kernel
 * recorded it when the connection was made (SO_PEERCRED).
 */
#ifndef EXECGATE_COMMON_PEER_CRED_H
#define EXECGATE_COMMON_PEER_CRED_H

#include <errno.h>
#include <sys/socket.h>

/* The pid, uid and gid of fd's peer into *out.  Returns 0, or -errno:
 * -EPROTO when the kernel answered with a struct of another size (then
 * what it answered is not to be trusted).  On failure *out is zeroed, so
 * that no caller can read what was never written. */
static inline int
peer_cred(int fd, struct ucred *out)
{
    *out = (struct ucred){0};
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return -errno;
    if (len != sizeof(cred))
        return -EPROTO;
    *out = cred;
    return 0;
}

#endif
