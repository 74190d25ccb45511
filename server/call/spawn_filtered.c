/*
 * spawn_filtered: the server's own clone(CLONE_VM) start.
 *
 * Every call's sandbox helper and every escalated program start here
 * (spawn_start sends them: they die with the server and join the call's
 * cgroup; escalated programs also run by their checked fd and, in tree
 * mode, under the exec filter).  This is an exception to the house rule
 * (rule 8 of execgate's C conventions) that the daemon never hand-rolls a
 * fork and runs none of its code between fork and exec, all such work
 * being left to a helper binary that a plain spawn execs.  It is needed
 * because posix_spawn has no step for any of these: it cannot write to
 * cgroup.procs before the exec, set PR_SET_PDEATHSIG and check the parent
 * after it, exec a file by its fd (execveat), or install a seccomp filter
 * between its file actions and the exec.  An escalated program is any
 * program, which cannot be asked to do them itself, and passing it
 * through a helper that does (execgate-sandbox --exec-notify-fd) costs a
 * second exec each time; the call's helper gets the same steps from the
 * same place.  What keeps it within the rule's intent:
 *
 * - The child is started with clone(CLONE_VM) on a stack of its own (with
 *   clone3 and CLONE_INTO_CGROUP when it has a call cgroup to be in, so
 *   that it is created there): it shares the server's memory (nothing is
 *   copied, as with posix_spawn) but not its fd table or signal handlers.
 *   It calls nothing that allocates (the server's allocator is shared with
 *   it), resets every signal the server catches or ignores to its default
 *   before anything can be delivered, arranges its fds from an explicit
 *   list, and execs or _exits.
 * - The server blocks every signal until the child has exec'd (the child
 *   shares its errno), and waits for the exec on a socket rather than the
 *   vfork way: with the filter, the first exec is notified to the listener
 *   the child just sent, so CLONE_VFORK would hold the server until that
 *   exec is done while the exec waits for the server.  The listener
 *   arrives, the server continues the exec it knows (only this child runs
 *   under the new filter, and it runs the server's code), then the
 *   socket's EOF (the child's end is close-on-exec) says the exec is done
 *   and the shared memory is no longer used; an errno on the socket says
 *   where the child failed.  Like posix_spawn's, this blocks the loop
 *   until the child's exec, and no longer.
 */
#include "server/call/spawn_filtered.h"
#include "server/call/call_cgroup.h"
#include "sandbox/exec_filter.h"
#include "supervise/exec_notify.h"
#include "common/fd_pass.h"
#include "common/sig_defaults.h"
#include "rules/exec_path.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

extern char **environ;

#define FILTERED_STACK (256 * 1024)

/* The child's stack, mapped at the first filtered start and kept: starts
 * are one at a time (each waits until its child has exec'd), and a fresh
 * mapping per start cost an mmap, an munmap with its TLB flush and new
 * page faults on every escalated program.  NULL until then. */
static void *filtered_stack;

static void *
get_filtered_stack(void)
{
    if (filtered_stack == NULL) {
        void *m =
            mmap(NULL, FILTERED_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED)
            filtered_stack = m;
    }
    return filtered_stack;
}

struct filtered {
    const struct spawn_options *o;
    int join_procs; /* o->join->procs unless created in o->join->into; or -1 */
    bool filter;    /* load the exec filter (o->exec_listener) */
    int exec_at;    /* where *o->exec_fd is moved in the child (an entry of o->fds), or -1 */
    int sock;       /* the child's end of the socket pair */
    int max_at;     /* the highest target (at least 2) */
    int high;       /* above every target, source and sock */
    pid_t server;   /* the server's pid, which o->die_with_server ties the child to */
};

/* Reports the child's errno to the server and ends it. */
static _Noreturn void
filtered_fail(int sock, int err)
{
    ssize_t n;
    do
        n = send(sock, &err, sizeof err, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    _exit(127);
}

/* Every given fd at its number, /dev/null for 0-2 not given, the socket
 * at max_at + 1 (close-on-exec), nothing else open.  Returns the socket's
 * new number or -errno. */
static int
filtered_fds(const struct filtered *f)
{
    const struct spawn_options *o = f->o;
    /* The server's fds from high up (this table's copies only) go first,
     * so the copies below land on consecutive numbers from high: nothing
     * to remember them in without allocating. */
    if (syscall(SYS_close_range, (unsigned)f->high, ~0u, 0) < 0)
        return -errno;
    int sock = fcntl(f->sock, F_DUPFD_CLOEXEC, f->high);
    if (sock < 0)
        return -errno;
    /* every source above all targets first, so no dup2 overwrites one */
    int moved_from = sock + 1;
    for (size_t i = 0; i < o->n_fds; i++) {
        int moved = fcntl(o->fds[i].fd, F_DUPFD_CLOEXEC, moved_from);
        if (moved < 0)
            return -errno;
        if (moved != moved_from + (int)i)
            return -EBADF;
    }
    for (size_t i = 0; i < o->n_fds; i++) {
        if (dup2(moved_from + (int)i, o->fds[i].at) < 0)
            return -errno;
    }
    for (int t = 0; t <= 2; t++) {
        if (spawn_options_fd_given(o, t))
            continue;
        int nul = open("/dev/null", (t == 0 ? O_RDONLY : O_RDWR) | O_CLOEXEC);
        if (nul < 0 || dup2(nul, t) < 0)
            return -errno;
        if (nul != t)
            close(nul);
        else if (fcntl(t, F_SETFD, 0) < 0)
            return -errno;
    }
    if (dup3(sock, f->max_at + 1, O_CLOEXEC) < 0)
        return -errno;
    for (int t = 3; t <= f->max_at; t++) {
        if (!spawn_options_fd_given(o, t))
            close(t);
    }
    if (syscall(SYS_close_range, (unsigned)f->max_at + 2, ~0u, 0) < 0)
        return -errno;
    return f->max_at + 1;
}

/* The child, on its own stack; never returns (execve or _exit).  Not
 * instrumented: under ASan its frame would stay poisoned in the shadow of
 * a stack the server reuses. */
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address))
#endif
static int
filtered_child(void *arg)
{
    const struct filtered *f = arg;
    const struct spawn_options *o = f->o;
    /* one thread (no CLONE_THREAD), so "0" in a tasks file moves it all */
    if (f->join_procs >= 0 && write(f->join_procs, "0", 1) != 1)
        filtered_fail(f->sock, errno);
    for (size_t i = 0; o->join && i < o->join->n_tasks; i++) {
        if (write(o->join->tasks[i], "0", 1) != 1)
            filtered_fail(f->sock, errno);
    }
    if (o->die_with_server && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        filtered_fail(f->sock, errno);
    /* the server died before the signal was asked for: it never comes */
    if (o->die_with_server && getppid() != f->server)
        filtered_fail(f->sock, ESRCH);
    /* the server's handlers and ignored signals, which the kernel lists:
     * a handler left here could run on the server's memory once the mask
     * is cleared before the execve */
    sig_defaults_restore(true);
    if (o->new_session && setsid() < 0)
        filtered_fail(f->sock, errno);
    /* the checked directory, by its fd: before filtered_fds closes it */
    if (o->cwd_fd && fchdir(*o->cwd_fd) < 0)
        filtered_fail(f->sock, errno);
    int sock = filtered_fds(f);
    if (sock < 0)
        filtered_fail(f->sock, -sock);
    if (o->cwd && !o->cwd_fd && chdir(o->cwd) < 0)
        filtered_fail(sock, errno);
    /* the moved file fd lost close-on-exec in its dup2 */
    if (f->exec_at >= 0 && !o->exec_fd_inherited && fcntl(f->exec_at, F_SETFD, FD_CLOEXEC) < 0)
        filtered_fail(sock, errno);
    if (f->filter) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            filtered_fail(sock, errno);
        int listener = sandbox_exec_filter_load();
        if (listener < 0)
            filtered_fail(sock, -listener);
        int rc = sandbox_exec_filter_send(sock, o->file, listener);
        close(listener);
        if (rc < 0)
            filtered_fail(sock, -rc);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    char *const *env = o->env ? o->env : environ;
    if (f->exec_at >= 0)
        syscall(SYS_execveat, f->exec_at, "", o->argv, env, AT_EMPTY_PATH);
    else
        execve(o->file, o->argv, env);
    filtered_fail(sock, errno);
}

/* Continues the child's first exec (the only process under the filter).
 * Returns 0 or -errno (the child is then to be killed). */
static int
continue_first_exec(int listener, pid_t pid)
{
    struct seccomp_notif_sizes sizes;
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0)
        return -errno;
    struct seccomp_notif *req =
        calloc(1, sizes.seccomp_notif > sizeof(*req) ? sizes.seccomp_notif : sizeof(*req));
    struct seccomp_notif_resp *resp = calloc(
        1, sizes.seccomp_notif_resp > sizeof(*resp) ? sizes.seccomp_notif_resp : sizeof(*resp));
    int rc = req && resp ? 0 : -ENOMEM;
    struct pollfd p = {listener, POLLIN, 0};
    while (rc == 0 && poll(&p, 1, -1) < 0) {
        if (errno != EINTR)
            rc = -errno;
    }
    /* POLLHUP alone: the child died before its exec */
    if (rc == 0 && !(p.revents & POLLIN))
        rc = -ECHILD;
    while (rc == 0 && ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
        if (errno != EINTR)
            rc = -errno;
    }
    if (rc == 0 &&
        (req->pid != (__u32)pid || (req->data.nr != SYS_execve && req->data.nr != SYS_execveat)))
        rc = -EPROTO;
    if (rc == 0) {
        resp->id = req->id;
        resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0)
            rc = -errno;
    }
    free(req);
    free(resp);
    return rc;
}

/* The child's errno, 0 at EOF (its exec is done), or -errno of the
 * receive. */
static int
child_errno(int sock)
{
    int err = 0;
    size_t nfds = 0;
    ssize_t n = fd_pass_recv(sock, &err, sizeof err, NULL, 0, &nfds, NULL);
    if (n < 0)
        return (int)n;
    if (n == 0)
        return 0;
    return n == sizeof err && err > 0 ? err : EPROTO;
}

/* The child's errno from the len bytes of msg (an int alone: it failed
 * before its hand-over), or -EPROTO (EOF first, or an errno that is none). */
static int
failure_in(const char *msg, size_t len)
{
    int err = 0;
    if (len != sizeof err)
        return -EPROTO;
    memcpy(&err, msg, sizeof err);
    return err > 0 ? -err : -EPROTO;
}

/* The hand-over in the len bytes of msg, with fd (taken, or -1): 0 with
 * *listener when it hands over a listener for file, else -errno. */
static int
handover_for(const char *msg, size_t len, int flags, int fd, const char *file, int *listener)
{
    if (flags & MSG_TRUNC) {
        if (fd >= 0)
            close(fd);
        return -EPROTO;
    }
    char *path = NULL;
    int rc = exec_notify_parse_listener(msg, len, fd, listener, &path);
    if (rc == 0 && strcmp(path, file) != 0) {
        close(*listener);
        *listener = -1;
        rc = -EPROTO;
    }
    free(path);
    return rc;
}

/* What the child sent first when it was to load the filter: its errno,
 * or the hand-over of its listener for file.  Returns 0 with *listener,
 * or -errno (every fd that came closed). */
static int
receive_listener(int sock, const char *file, int *listener)
{
    *listener = -1;
    char *buf = malloc(EXEC_NOTIFY_HANDOVER_MAX + 1);
    if (buf == NULL)
        return -ENOMEM;
    int fd = -1;
    int flags = 0;
    ssize_t n = exec_notify_recv_handover(sock, buf, &fd, &flags);
    int rc;
    if (n < 0)
        rc = (int)n;
    else if (fd < 0 && (size_t)n <= sizeof(int))
        rc = failure_in(buf, (size_t)n);
    else
        rc = handover_for(buf, (size_t)n, flags, fd, file, listener);
    free(buf);
    return rc;
}

/* The listener and the first exec, once the child runs.  Returns 0 with
 * *listener (-1 without the filter) or -errno. */
static int
follow_filtered(int sock, pid_t pid, const char *file, bool filter, int *listener_out)
{
    *listener_out = -1;
    if (!filter) {
        int err = child_errno(sock);
        return err > 0 ? -err : err;
    }
    int listener = -1;
    int rc = receive_listener(sock, file, &listener);
    if (rc == 0)
        rc = continue_first_exec(listener, pid);
    if (rc == 0) {
        int err = child_errno(sock);
        rc = err > 0 ? -err : err;
    }
    if (rc < 0 && listener >= 0)
        close(listener);
    if (rc == 0)
        *listener_out = listener;
    return rc;
}

/* ---- a child created in its cgroup ---- */

#if defined(__x86_64__)
/*
 * clone3 for a child that runs fn(arg) on the stack args give it, then
 * exits with fn's value (filtered_child never returns).  glibc has no
 * clone3 wrapper, and a C caller cannot go on in the child of the raw
 * system call: the child returns on its fresh stack, where none of the
 * caller's frames are.  So the child's first steps are here: the system
 * call keeps every register but rax, rcx and r11, and the child starts
 * with the parent's registers and its stack pointer at the top of the
 * given stack (16-byte aligned: FILTERED_STACK from a page boundary, as
 * the call below needs).  Returns the child's pid, or -errno.
 */
static long
clone3_run(struct clone_args *args, int (*fn)(void *), void *arg)
{
    long ret;
    __asm__ volatile("syscall\n\t"
                     "testq %%rax, %%rax\n\t"
                     "jnz 1f\n\t"
                     /* the child: no frame to return to */
                     "xorl %%ebp, %%ebp\n\t"
                     "movq %[arg], %%rdi\n\t"
                     "callq *%[fn]\n\t"
                     "movl %%eax, %%edi\n\t"
                     "movl %[exit_nr], %%eax\n\t"
                     "syscall\n\t"
                     "ud2\n"
                     "1:"
                     : "=a"(ret)
                     : "0"((long)SYS_clone3), "D"(args),
                       "S"(sizeof(*args)), [fn] "r"(fn), [arg] "r"(arg), [exit_nr] "i"(SYS_exit)
                     : "rcx", "r11", "memory", "cc");
    return ret;
}
#define HAVE_CLONE3_RUN 1
#else
#define HAVE_CLONE3_RUN 0
#endif

bool
spawn_filtered_creates_in_cgroup(void)
{
    return HAVE_CLONE3_RUN;
}

/*
 * Starts filtered_child.  With o->join's v2 directory (into) the child is
 * created in it by clone3 with CLONE_INTO_CGROUP, so that none of its
 * writes moves a whole process, and none waits for the kernel's
 * cgroup_threadgroup_rwsem (call_cgroup.h).  Without, or on an
 * architecture this file has no clone3_run for, a clone child that writes
 * "0" to o->join's cgroup.procs (procs) first.  Returns the pid or -1 with
 * errno.
 */
static pid_t
start_child(struct filtered *f, void *stack)
{
    const struct call_cgroup_join *j = f->o->join;
    f->join_procs = j ? j->procs : -1;
#if HAVE_CLONE3_RUN
    if (j && j->into >= 0) {
        struct clone_args args = {
            .flags = CLONE_VM | CLONE_INTO_CGROUP,
            .exit_signal = SIGCHLD,
            .stack = (uint64_t)(uintptr_t)stack,
            .stack_size = FILTERED_STACK,
            .cgroup = (uint64_t)j->into,
        };
        f->join_procs = -1;
        long pid = clone3_run(&args, filtered_child, f);
        if (pid < 0) {
            errno = (int)-pid;
            return -1;
        }
        return (pid_t)pid;
    }
#endif
    return clone(filtered_child, (char *)stack + FILTERED_STACK, CLONE_VM | SIGCHLD, f);
}

/* The options with *o->exec_fd added as one more inherited fd, above
 * every target: the child execs it from there.  *extended is the caller's
 * to free. */
static int
with_exec_fd(const struct spawn_options *o, struct spawn_options *copy, struct spawn_fd **extended,
             int *exec_at)
{
    *copy = *o;
    *extended = NULL;
    *exec_at = -1;
    if (!o->exec_fd)
        return 0;
    struct spawn_fd *fds = calloc(o->n_fds + 1, sizeof(*fds));
    if (!fds)
        return -ENOMEM;
    int top = 2;
    for (size_t i = 0; i < o->n_fds; i++) {
        fds[i] = o->fds[i];
        top = o->fds[i].at > top ? o->fds[i].at : top;
    }
    fds[o->n_fds] = (struct spawn_fd){*o->exec_fd, top + 1};
    copy->fds = fds;
    copy->n_fds = o->n_fds + 1;
    *extended = fds;
    *exec_at = top + 1;
    return 0;
}

int
spawn_filtered_start(const struct spawn_options *given, pid_t *pid, int *listener)
{
    struct spawn_options o_copy;
    struct spawn_fd *extended = NULL;
    int exec_at = -1;
    /* the PATH search is the server's: the child could not allocate for
     * one (the filter's and a file fd's programs are named by path) */
    char *found = NULL;
    if (!strchr(given->file, '/') && (given->exec_listener || given->exec_fd))
        return -EINVAL;
    if (!strchr(given->file, '/') && !(found = exec_path_search(given->file)))
        return -ENOENT;
    int rc = with_exec_fd(given, &o_copy, &extended, &exec_at);
    if (rc < 0) {
        free(found);
        return rc;
    }
    if (found)
        o_copy.file = found;
    const struct spawn_options *o = &o_copy;
    struct filtered f = {.o = o,
                         .filter = o->exec_listener != NULL,
                         .exec_at = exec_at,
                         .max_at = 2,
                         .server = getpid()};
    for (size_t i = 0; i < o->n_fds; i++) {
        if (o->fds[i].fd < 0 || o->fds[i].at < 0) {
            free(extended);
            free(found);
            return -EBADF;
        }
        f.max_at = o->fds[i].at > f.max_at ? o->fds[i].at : f.max_at;
        f.high = o->fds[i].fd > f.high ? o->fds[i].fd : f.high;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        int e = errno;
        free(extended);
        free(found);
        return -e;
    }
    f.sock = sv[1];
    f.high = (f.high > sv[1] ? f.high : sv[1]);
    f.high = (f.high > f.max_at + 1 ? f.high : f.max_at + 1) + 1;
    void *stack = get_filtered_stack();
    if (stack == NULL) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        free(extended);
        free(found);
        return -e;
    }
    /* No handler of the server's may run in the child before it resets
     * them.  And the server keeps every signal blocked until the child has
     * exec'd: the child shares its errno (same memory, same thread
     * pointer), so an EINTR of the server's could be misread; with signals
     * blocked its calls here fail only once the child is gone. */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    pid_t child = start_child(&f, stack);
    int e = errno;
    close(sv[1]);
    rc = child < 0 ? -e : follow_filtered(sv[0], child, o->file, f.filter, listener);
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(sv[0]);
    if (child > 0 && rc < 0) {
        kill(child, SIGKILL);
        while (waitpid(child, NULL, __WALL) < 0 && errno == EINTR)
            ;
    }
    /* the child has exec'd or is gone: its stack is free for the next */
    UNPOISON(stack, FILTERED_STACK);
    free(extended);
    free(found);
    *pid = child;
    return rc;
}
