/*
 * exec_filter: the helper's last step before execve with --exec-notify-fd:
 * a seccomp filter that hands execve and execveat to a supervisor
 * (SECCOMP_RET_USER_NOTIF) and the sending of its listener.
 *
 * Wire format, one datagram on the given SOCK_SEQPACKET/SOCK_DGRAM socket:
 * "EGX1" then one byte, 'L' (the listener fd rides along as SCM_RIGHTS) or
 * 'D' (degraded: the kernel has no user notification, no fd), then the path
 * the helper is about to pass to execve (no NUL).  The supervisor allows the
 * first notification of the listener when its path is this one: until that
 * execve only the helper runs under the filter, so nothing else can make it.
 */
#ifndef EXECGATE_SANDBOX_EXEC_FILTER_H
#define EXECGATE_SANDBOX_EXEC_FILTER_H

#include <jansson.h>
#include <stdbool.h>

#define SANDBOX_EXEC_NOTIFY_MAGIC    "EGX1"
#define SANDBOX_EXEC_NOTIFY_LISTENER 'L'
#define SANDBOX_EXEC_NOTIFY_DEGRADED 'D'

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
