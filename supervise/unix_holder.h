/*
 * unix_holder: whether a datagram socket file belongs to a socket that a
 * process of a sandbox holds (unix_connect.h's test for datagrams, which
 * have no listening process to ask).
 *
 * The file's inode leads to its socket through sock_diag (UNIX_DIAG_VFS,
 * in the supervisor's network namespace, or through a socket the caller
 * made in the target's), and the socket to its holders
 * through the fds of the processes of the sandbox's own /proc.
 */
#ifndef EXECGATE_SUPERVISE_UNIX_HOLDER_H
#define EXECGATE_SUPERVISE_UNIX_HOLDER_H

#include <sys/stat.h>
#include <sys/types.h>

/*
 * Whether the datagram socket bound to the file st describes (fstat of
 * an O_PATH fd) is held open by a process of target's PID namespace, seen
 * through the procfs mounted at /proc in target's root, which must be that
 * namespace's.  Returns 1 held inside, 0 not (no such socket in the
 * supervisor's network namespace, another type, or held only outside), or
 * -errno (unreadable: the caller refuses).  diag: a NETLINK_SOCK_DIAG
 * socket of the target's network namespace to ask (taken: closed here),
 * or -1 to ask in the supervisor's.
 */
int unix_holder_inside(pid_t target, const struct stat *st, int diag);

#endif
