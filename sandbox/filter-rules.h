/*
 * filter-rules: the seccomp rules of the sandbox, stated once with
 * libseccomp.
 *
 * The helper does not run this: the build runs it (filter-gen) and embeds
 * the BPF program libseccomp exports, so no spawn pays for compiling the
 * filter.  The unit test runs it again and checks that the embedded
 * programs are still what libseccomp builds.
 */
#ifndef EXECGATE_SANDBOX_FILTER_RULES_H
#define EXECGATE_SANDBOX_FILTER_RULES_H

#include <seccomp.h>
#include <stdbool.h>

/* What a filter hands to a supervisor (SCMP_ACT_NOTIFY), as flags. */
#define SANDBOX_NOTIFY_EXECS   1u /* execve, execveat */
#define SANDBOX_NOTIFY_SOCKETS 2u /* connect, sendto with an address, sendmsg, sendmmsg */

/* What the sandbox's sockets may be (filter.h's enum sandbox_filter_net
 * has the same values for the helper). */
#define SANDBOX_NET_ANY  0 /* the network is on: every family */
#define SANDBOX_NET_UNIX 1 /* the network is off: Unix sockets only */
#define SANDBOX_NET_OWN  2 /* a network namespace of its own: Unix, IPv4, IPv6, netlink */

/* Called with the name of each denied call (or ioctl request) in order;
 * a non-zero return stops the build with that value. */
typedef int (*sandbox_filter_note_fn)(void *arg, const char *name);

/*
 * A new libseccomp context for the native architecture holding the
 * sandbox's rules: with confine the always-denied calls, terminal
 * injection ioctls and set-user-ID/set-group-ID modes (openat2 and
 * fchmodat2: ENOSYS), with confine, net SANDBOX_NET_UNIX or supervised
 * sockets the io_uring calls, with net SANDBOX_NET_UNIX non-Unix sockets,
 * with SANDBOX_NET_OWN sockets of families a network namespace does not
 * hold in (vsock, Bluetooth, ...: all but Unix, IPv4, IPv6, netlink);
 * notify's flags hand calls to a supervisor (SCMP_ACT_NOTIFY: the
 * program must be loaded with SECCOMP_FILTER_FLAG_NEW_LISTENER): execve
 * and execveat, and connect, sendto with a destination address, sendmsg
 * and sendmmsg; calls
 * of foreign architectures kill the process.  Returns the context
 * (release it with seccomp_release), or NULL with *rc set to a negative
 * errno or the note callback's non-zero value.
 */
scmp_filter_ctx sandbox_filter_rules_new(bool confine, int net, unsigned notify,
                                         sandbox_filter_note_fn note, void *arg, int *rc);

#endif
