/*
 * unix_connect: the supervisor's side of a sandboxed command's socket
 * calls (connect, sendto with a destination address, sendmsg and
 * sendmmsg with one or without), which the
 * sandbox's filter hands to the same listener as its execs
 * (docs/enforcement.md, "Unix sockets").
 *
 * The supervisor never continues such a call: whatever the target's memory
 * or fd table says after the check would be what the kernel reads.  It
 * makes the call itself on objects it holds (the target's socket taken
 * with pidfd_getfd, the destination's inode opened O_PATH) and answers
 * with the result:
 *
 *  - a pathname Unix stream or seqpacket socket: a fresh socket of the
 *    supervisor's connects to the inode; the connection stands only when
 *    the process that listens there runs in the target's PID namespace (or
 *    one below it), or the inode is one the caller allowed; it is then
 *    installed over the target's fd (SECCOMP_IOCTL_NOTIF_ADDFD).  Else
 *    ECONNREFUSED and a line on the target's stderr;
 *  - a Unix datagram destination (connect, sendto, sendmsg): a socket a process of
 *    the sandbox holds (unix_holder.h: a datagram socket has no listening
 *    process to check), or an allowed inode;
 *  - an abstract Unix address: as a pathname one when the target shares
 *    the supervisor's network namespace (where the name is looked up), or
 *    the one the caller makes sockets in (cfg->netns: the fresh socket is
 *    made there), EPERM otherwise;
 *  - any other socket (TCP, UDP...): connected, or sent on, as asked, on
 *    the target's own socket with the address as read once, unless
 *    cfg->netns's ip_refused says why not (ECONNREFUSED and a line);
 *  - sendmsg without an address: sent as it is, from the copy of the
 *    message read once (unix_msg.h), on the target's own socket.
 *
 * No libuv: a blocking connect that is still in progress is handed back
 * to the caller to wait for (unix_connect_wait).
 */
#ifndef EXECGATE_SUPERVISE_UNIX_CONNECT_H
#define EXECGATE_SUPERVISE_UNIX_CONNECT_H

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* A socket file the user allowed, by the inode the server resolved.  The
 * caller keeps that inode open (pin) while it is allowed: a file deleted
 * frees its inode number for the next one made. */
struct unix_connect_inode {
    dev_t dev;
    ino_t ino;
    int pin; /* O_PATH fd of the inode, or -1 */
};

/* Told of each refusal (what: "connect /path", reason: the line's). */
typedef void (*unix_connect_refused_fn)(void *arg, pid_t pid, const char *what, const char *reason);

/* A network namespace the sandboxes run in that is not the supervisor's
 * (their session's, docs/network.md), and a way to make sockets there:
 * abstract names and sock_diag's answers are the network namespace's. */
struct unix_connect_netns {
    dev_t dev; /* the namespace, as fstat of an fd to it says */
    ino_t ino;
    /* socket(2) in that namespace, close-on-exec; -errno on failure */
    int (*socket)(void *arg, int domain, int type, int protocol);
    void *arg;
    /* May be NULL.  Why an IPv4 or IPv6 connect or send to addr must not
     * be made (a static string for the refusal line: the address is
     * another call's of the session, say), or NULL when it may. */
    const char *(*ip_refused)(void *arg, const struct sockaddr *addr, socklen_t len);
    void *ip_arg;
};

struct unix_connect_config {
    /* the sandboxes' network namespace when not the supervisor's; or NULL
     * (borrowed) */
    const struct unix_connect_netns *netns;
    const struct unix_connect_inode *allowed; /* borrowed */
    size_t n_allowed;
    unix_connect_refused_fn refused; /* may be NULL */
    void *arg;
};

/* A connect still in progress on the target's blocking socket, or a
 * sendmsg without an address that found its blocking socket's queue full:
 * answer it with unix_connect_finish once fd polls writable. */
struct unix_connect_send;
struct unix_connect_wait {
    uint64_t id;
    pid_t pid;
    int fd;                         /* the supervisor's copy of the target's socket */
    struct unix_connect_send *send; /* the message waiting for room; NULL: a connect */
};

/* Whether nr is a call this module handles (the filter's socket calls). */
bool unix_connect_handles(int nr);

/*
 * Handles the notification sn (a call unix_connect_handles) on listener:
 * makes the call on the target's behalf or refuses it, and answers.
 * cfg may be NULL (nothing allowed beyond the sandbox's own sockets).
 * Returns 0 when answered (or the target went away), 1 when *wait holds a
 * connect in progress (the notification stays unanswered), -errno when
 * the listener failed.
 */
int unix_connect_handle(int listener, const struct seccomp_notif *sn,
                        const struct unix_connect_config *cfg, struct unix_connect_wait *wait);

/* Answers a waiting connect with its outcome (err 0), or with err, and
 * closes wait->fd; a waiting send is sent now (err 0) or fails with err.
 * Returns 0 or -errno (listener failure), or 1 when the send still finds
 * no room: *wait stands, to poll again. */
int unix_connect_finish(int listener, struct unix_connect_wait *wait, int err);

/* Closes wait->fd and frees a waiting send without answering (the
 * listener is going away). */
void unix_connect_abandon(struct unix_connect_wait *wait);

#endif
