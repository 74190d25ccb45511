/*
 * exec_filter: the helper's last step before execve with --exec-notify-fd:
 * a seccomp filter that hands execve and execveat to a supervisor
 * (SECCOMP_RET_USER_NOTIF) and the sending of its listener.
 *
 * Wire format, one datagram on the given SOCK_SEQPACKET/SOCK_DGRAM socket:
 * "EGX1" then one byte, 'L' (the listener fd rides along as SCM_RIGHTS),
 * 'N' (the listener stays in the sender's fd table: its number follows as
 * 4 bytes, native order, and the supervisor takes it from there) or 'D'
 * (degraded: the kernel has no user notification, no fd), then the path
 * the helper is about to pass to execve (no NUL).  The supervisor allows the
 * first notification of the listener when its path is this one: until that
 * execve only the helper runs under the filter, so nothing else can make it.
 */
#ifndef EXECGATE_SANDBOX_EXEC_FILTER_H
#define EXECGATE_SANDBOX_EXEC_FILTER_H

#include <jansson.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <sys/types.h>

#define SANDBOX_EXEC_NOTIFY_MAGIC     "EGX1"
#define SANDBOX_EXEC_NOTIFY_LISTENER  'L'
#define SANDBOX_EXEC_NOTIFY_DEGRADED  'D'
#define SANDBOX_EXEC_NOTIFY_BY_NUMBER 'N'
#define SANDBOX_EXEC_NOTIFY_OFFER     SANDBOX_EXEC_NOTIFY_MAGIC "N"

/*
 * There is no kind for a helper that execs its program by fd, unnotified:
 * a filter cannot let execveat(K, "", ..., AT_EMPTY_PATH) pass for an fd K
 * alone, since the kernel ignores the fd of an execveat whose path is
 * absolute ("/bin/rm") and a filter cannot read the path.  The supervisor
 * refuses any other kind as a malformed message (docs/enforcement.md).
 */

/*
 * sandbox_exec_filter_load installs the exec filter in the calling thread
 * (no_new_privs must be set) and returns its listener, or -errno
 * (-ENOSYS/-EINVAL/-EOPNOTSUPP: no user notification, nothing installed).
 * sandbox_exec_filter_send sends the 'L' message with a listener (this
 * filter's, or that of the sandbox's filter with execs notified: filter.h;
 * borrowed, not closed) and exec_path over sock: 0 or -errno.  Neither
 * calls malloc, so the server's clone(CLONE_VM) child (spawn_child.c) can
 * use them.
 */
int sandbox_exec_filter_load(void);
int sandbox_exec_filter_send(int sock, const char *exec_path, int listener);

/*
 * The courier: a filter that notifies sendmsg (the sandbox's, with its
 * socket calls supervised) would hold the loader's own sendmsg of the
 * listener until a supervisor answers, and the supervisor gets the
 * listener only from that sendmsg.  So the message goes from a process
 * the filter does not cover: started before the load with
 * clone(CLONE_FILES), it shares the loader's fd table (the listener is
 * already in it when the load returns) and not its seccomp filters.
 *
 * sandbox_exec_filter_courier_start starts one that will send over sock
 * with exec_path (borrowed: the courier has its own copy of memory).
 * sandbox_exec_filter_courier_send tells it the listener (or, with -1, to
 * exit without sending: the degraded path sends itself), waits for it to
 * exit and returns 0 or the -errno of its send.  The courier dies with the
 * loader (PR_SET_PDEATHSIG), so a loader that dies in between leaves
 * nothing behind.  The loader must be single-threaded.
 */
struct sandbox_courier {
    pid_t pid;
    int pipe_w; /* the loader writes the listener's number here */
    int pipe_r;
};
int sandbox_exec_filter_courier_start(struct sandbox_courier *c, int sock, const char *exec_path);
int sandbox_exec_filter_courier_send(struct sandbox_courier *c, int listener);

/*
 * The hand-over without a courier, where the kernel can say who sent a
 * message (SO_PASSPIDFD and SCM_PIDFD, Linux 6.5; pidfd_getfd, 5.6).  The
 * loader sends only the listener's number, with send(2), which no filter
 * notifies (sendto without an address), and keeps the listener open,
 * close-on-exec: its own execve, the first notification, then waits until
 * the supervisor has taken its copy with pidfd_getfd from the pidfd that
 * came with the message (exec_notify.h) and answered; the execve closes
 * the loader's copy.  No extra process and no wait in the loader.  A
 * supervisor that cannot take it kills the sender: nothing answers that
 * execve otherwise.  Only for a filter that notifies execve: without that
 * wait the execve would close the listener before it is taken.
 *
 * The supervisor says it can (its end of sock has SO_PASSPIDFD and it may
 * take fds from its descendants) with one message queued before the
 * helper starts: SANDBOX_EXEC_NOTIFY_OFFER, the magic and 'N'.
 * sandbox_exec_filter_by_number reads it if it is there (without
 * waiting): true when that offer came, false otherwise (no offer, a kernel
 * without SO_PASSPIDFD, or a message that is not exactly the offer: the
 * courier then sends).
 * The helper reads it first thing, whatever path it takes: an unread
 * message on a socket that closes resets the connection (ECONNRESET),
 * and the supervisor would lose the hand-over queued behind it.
 * sandbox_exec_filter_send_number sends the 'N' message: 0 or -errno.
 * Neither calls malloc.
 */
bool sandbox_exec_filter_by_number(int sock);
int sandbox_exec_filter_send_number(int sock, const char *exec_path, int listener);

/* Adds the "exec_notify" object to the helper's report, "notified" naming
 * the execs and the socket calls as the filter notifies them: 0 or
 * -ENOMEM. */
int sandbox_exec_filter_report(json_t *report, bool execs, bool sockets);

/*
 * Sends the degraded message (no listener) so the supervisor is not left
 * waiting.  Returns 0 or -errno.
 */
int sandbox_exec_filter_send_degraded(int sock, const char *exec_path);

#endif
