/*
 * exec_notify: the supervisor's side of --exec-notify-fd.  Receives the
 * listener the helper sends, reads each execve/execveat notification (path,
 * argv, the file it names) from the target, asks a decision callback, and
 * answers: continue, or an errno with one line on the target's stderr.
 *
 * No libuv and no blocking: the listener is non-blocking and
 * exec_notify_process handles what is ready, so a loop can watch
 * exec_notify_fd for POLLIN.  A decision of "ask" keeps the notification
 * pending (the target waits in its execve) until exec_notify_answer.
 * See docs/enforcement.md.
 */
#ifndef EXECGATE_SUPERVISE_EXEC_NOTIFY_H
#define EXECGATE_SUPERVISE_EXEC_NOTIFY_H

#include "supervise/exec_notify_types.h" /* the request, its bounds, the quick decision */
#include "supervise/exec_tell.h"         /* exec_notify_tell */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum exec_notify_verdict {
    EXEC_NOTIFY_CONTINUE = 0, /* the kernel runs the exec */
    EXEC_NOTIFY_REFUSE = 1,   /* the exec fails with err */
    EXEC_NOTIFY_ASK = 2,      /* kept pending until exec_notify_answer */
};

struct exec_notify_decision {
    enum exec_notify_verdict verdict;
    int err;      /* for REFUSE: positive errno (0: EACCES) */
    char *reason; /* malloc'd, taken by the library; for REFUSE the stderr line's reason */
};

/* Decides one exec; fills *out (zeroed on entry). */
typedef void (*exec_notify_decide_fn)(void *arg, const struct exec_notify_request *req,
                                      struct exec_notify_decision *out);

/* Told of each ASK as it is kept pending (the request is borrowed). */
typedef void (*exec_notify_ask_fn)(void *arg, const struct exec_notify_request *req);

/* The longest hand-over message (exec_filter.h): magic, kind, the
 * listener's number ('N') and a path of EXEC_NOTIFY_MAX_PATH bytes. */
#define EXEC_NOTIFY_HANDOVER_MAX (5 + sizeof(int) + EXEC_NOTIFY_MAX_PATH)

/*
 * Offers the helper that will get the other end of sock to take its
 * listener by number (exec_filter.h): sets SO_PASSPIDFD on sock and queues
 * the offer, when this process may take fds from its descendants (tried
 * once per process).  0, or -errno: -EPERM (not allowed: Yama),
 * -ENOPROTOOPT (a kernel before 6.5); the helper then sends the listener
 * itself, as it does for a supervisor that made no offer.
 */
int exec_notify_offer_take(int sock);

/*
 * Receives the helper's message from sock (one fd_pass_recv: on a
 * non-blocking socket -EAGAIN when none is waiting).  On success returns 0
 * with *listener (close-on-exec, taken) and *exec_path (malloc'd, the path
 * of the helper's own execve).  A listener sent by number is taken from
 * the sender (pidfd_getfd through the message's SCM_PIDFD) and checked to
 * be a seccomp listener; when it cannot be, the sender is killed (it waits
 * in an execve nothing else would answer) and -errno returned (-EPERM:
 * not allowed to take it; -EPROTO: no pidfd came, or not a listener).
 * Returns -EOPNOTSUPP with *exec_path set and
 * *listener -1 when the helper runs degraded without interception;
 * -EPIPE when the helper closed the socket without sending (it failed);
 * -EPROTO for a malformed message or a kind other than 'L', 'N' and 'D'
 * (every fd that came with it closed: no hand-over leaves the helper's
 * own exec to be continued without its path);
 * other -errno.
 */
int exec_notify_receive_listener(int sock, int *listener, char **exec_path);

/*
 * One receive of a message of at most EXEC_NOTIFY_HANDOVER_MAX bytes into
 * buf (room for one byte more, so a longer message shows as MSG_TRUNC in
 * *flags): returns its length, with *fd the one fd that came with it (the
 * caller's) or -1.  More fds or control data of another kind: -EPROTO,
 * every fd that came closed; other failures -errno.  For the receivers of
 * a hand-over that read the socket themselves.
 */
ssize_t exec_notify_recv_handover(int sock, char *buf, int *fd, int *flags);

/*
 * The same for a message already received: the len bytes of msg and fd,
 * the one fd that came with it (taken, closed on error) or -1.  Same
 * results; -ENOMEM when out of memory.  For a receiver that also expects
 * messages of its own on the socket (spawn_filtered's child reports its
 * errno there).
 */
int exec_notify_parse_listener(const void *msg, size_t len, int fd, int *listener,
                               char **exec_path);

struct exec_notify;

/*
 * A supervisor for listener (taken, even on failure; made non-blocking).
 * The first notification is allowed without a decision when its path is
 * exec_path (copied) and refused otherwise; with exec_path NULL every
 * notification is decided (the caller continued the first exec itself,
 * as spawn_child does).  ask may be NULL when decide
 * never asks.  NULL on OOM.
 */
struct exec_notify *exec_notify_new(int listener, const char *exec_path,
                                    exec_notify_decide_fn decide, exec_notify_ask_fn ask,
                                    void *arg);

/* Closes the listener (pending execs fail with ENOSYS) and frees; NULL ok. */
void exec_notify_free(struct exec_notify *n);

/* The listener, to poll for POLLIN (work) and POLLHUP (no target left). */
int exec_notify_fd(const struct exec_notify *n);

/*
 * Handles every notification ready now without blocking.  Returns the
 * number handled (>= 0), or -errno on a listener error.  Problems with one
 * target (it died, its memory is unreadable) end that notification only.
 */
int exec_notify_process(struct exec_notify *n);

/*
 * Answers a pending ASK: allow continues it, else it fails with EACCES and
 * the stderr line gives reason (borrowed; NULL: "declined").  Returns 0,
 * -ENOENT when id is not pending; a target that died meanwhile is 0.
 */
int exec_notify_answer(struct exec_notify *n, uint64_t id, bool allow, const char *reason);

/*
 * Strict mode for the check-then-use window (docs/enforcement.md): refuse
 * (EACCES) an exec whose process has other threads, or shares its memory
 * with its parent (CLONE_VM, as posix_spawn/vfork do) while the parent has
 * other threads — the cases where a running thread could rewrite the path
 * between the check and the kernel's read.  Off by default: it refuses the
 * normal spawns of multi-threaded programs (Go, the JVM, posix_spawn from
 * threads).  A CLONE_VM sharer that is neither is not detected.
 */
void exec_notify_set_refuse_shared_memory(struct exec_notify *n, bool on);

/* Whether each exec's environment is read into the request's envp (off by
 * default: a tree in the sandbox is decided without it). */
void exec_notify_set_read_env(struct exec_notify *n, bool on);

/* Sets the quick decision (exec_notify_quick_fn, exec_notify_types.h). */
void exec_notify_set_quick(struct exec_notify *n, exec_notify_quick_fn quick);

/* Whether exec_notify_process's last look at the listener found no
 * notification and POLLHUP: no process is left under the filter (the
 * listener can go), without another poll by the caller. */
bool exec_notify_hung_up(const struct exec_notify *n);

struct unix_connect_config;
struct unix_connect_wait;

/*
 * The sandbox's socket calls (connect, sendto with an address, sendmsg,
 * sendmmsg) that come on the same listener are made by unix_connect.h with
 * cfg (borrowed; NULL: nothing allowed beyond the sandbox's own sockets).
 * A connect still in progress on a blocking socket, or a sendmsg waiting
 * for room on one, goes to wait (taken: answer it with unix_connect_finish
 * on exec_notify_fd(n) when wait->fd polls writable, polling again while
 * that returns 1, or unix_connect_abandon when the listener goes);
 * with wait NULL the library polls for it itself, blocking (supervisors
 * with nothing else to do).  Without this call the same, with cfg NULL.
 */
typedef void (*exec_notify_wait_fn)(void *arg, const struct unix_connect_wait *wait);
void exec_notify_set_connect(struct exec_notify *n, const struct unix_connect_config *cfg,
                             exec_notify_wait_fn wait, void *arg);

/* Counters since exec_notify_new. */
struct exec_notify_stats {
    uint64_t continued; /* CONTINUE sent */
    uint64_t refused;   /* an errno sent after a decision (or an unreadable exec) */
    uint64_t missing;   /* ENOENT/ENOTDIR sent for a file that is not there */
    uint64_t asked;     /* kept pending for exec_notify_answer */
    uint64_t dropped;   /* the target went away before the answer */
};
void exec_notify_get_stats(const struct exec_notify *n, struct exec_notify_stats *out);

#endif
