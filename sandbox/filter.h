/*
 * filter: the seccomp filter the helper installs right before execve.
 *
 * With confine (read-only, workspace-write): chroot, every mount-changing
 * call, the keyring calls and the TIOCSTI/TIOCLINUX ioctls fail with EPERM.  With the
 * network off, also: socket(2)/socketpair(2) for any family but AF_UNIX and
 * the three io_uring calls (its requests would bypass this filter; denied
 * too where socket calls are notified).  In a network namespace of the
 * sandbox's own: socket(2)/socketpair(2) for any family but AF_UNIX,
 * AF_INET, AF_INET6 and AF_NETLINK (EAFNOSUPPORT: vsock or Bluetooth
 * would reach past the namespace).  System calls of other
 * architectures (x32, i386) kill the process, so the 32-bit socketcall(2)
 * cannot go around the rules.
 *
 * The rules live in filter-rules.c (libseccomp); the build compiles them
 * to BPF once (filter-gen) and this module only loads the result.
 */
#ifndef EXECGATE_SANDBOX_FILTER_H
#define EXECGATE_SANDBOX_FILTER_H

#include <jansson.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>

/* What the sandbox's sockets may be (filter-rules.h has the same values
 * for the build).  A bool converts to the first two. */
enum sandbox_filter_net {
    SANDBOX_FILTER_NET_ANY = 0,  /* the network is on */
    SANDBOX_FILTER_NET_UNIX = 1, /* the network is off: Unix sockets only */
    SANDBOX_FILTER_NET_OWN = 2,  /* its own network namespace: Unix, IPv4, IPv6, netlink */
};

/*
 * Loads the filter into the calling thread (no_new_privs must be set) and
 * adds a "seccomp" object to report.  Returns 0, or -errno with nothing
 * loaded.
 */
int sandbox_filter_apply(bool confine, enum sandbox_filter_net net, json_t *report);

/* What the filter hands to the supervisor (flags; filter-rules.h has the
 * same values for the build). */
#define SANDBOX_FILTER_NOTIFY_EXECS 1u /* execve, execveat */
#define SANDBOX_FILTER_NOTIFY_SOCKETS                                                              \
    2u /* connect, sendto with an address, sendmsg, sendmmsg; confine only */

/*
 * The same filter with the calls notify names also handed to a supervisor
 * (exec-notify in one program instead of stacking exec_filter.c's on this
 * one: each load costs a compilation and a pass per call number).  Returns
 * the listener (close-on-exec), -EINVAL when neither confine nor
 * net SANDBOX_FILTER_NET_UNIX is set, when notify is 0, or names sockets without
 * confine, or -errno with nothing loaded (-EINVAL, -ENOSYS, -EOPNOTSUPP:
 * likely no user notification in this kernel).
 */
int sandbox_filter_apply_notify(bool confine, enum sandbox_filter_net net, unsigned notify,
                                json_t *report);

/*
 * The precompiled program for this combination (notify: the flags above) and its instruction count
 * in *len, and in *names the NULL-terminated names of the denied calls
 * (static storage, never freed).  NULL when the combination installs no
 * sandbox filter (neither confine nor net SANDBOX_FILTER_NET_UNIX), or
 * SANDBOX_FILTER_NET_OWN without confine.
 */
const struct sock_filter *sandbox_filter_program(bool confine, enum sandbox_filter_net net,
                                                 unsigned notify, size_t *len,
                                                 const char *const **names);

#endif
