/*
 * exec_filter: installs the exec-notification filter and hands its listener
 * to the supervisor.
 *
 * The program is ten BPF instructions written out here rather than built
 * with libseccomp, small enough to read.  It is the filter of exec
 * notification alone (danger-full-access, escalated programs); where the
 * sandbox has a filter of its own, filter.c loads that one with execs
 * notified instead, so that only one program is loaded.  Like those, it
 * costs no filter compilation per spawn.
 */
#include "sandbox/exec_filter.h"

#include "common/macros.h"
#include "common/fd_pass.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdnoreturn.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "exec_filter: add this architecture's AUDIT_ARCH"
#endif

/* The longest path a hand-over carries (exec_notify.h's
 * EXEC_NOTIFY_MAX_PATH: the supervisor refuses longer ones). */
#define EXEC_FILTER_MAX_PATH 4096

/* x32 calls share x86-64's audit arch and set this bit in the number. */
#define X32_SYSCALL_BIT 0x40000000u

#define LD_ARCH BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch))
#define LD_NR   BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define RET(v)  BPF_STMT(BPF_RET | BPF_K, (v))

/* A foreign architecture's execve has another number and would slip past
 * the comparisons, so foreign calls kill the process (as filter.c does). */
static const struct sock_filter program[] = {
    LD_ARCH,
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
    RET(SECCOMP_RET_KILL_PROCESS),
    LD_NR,
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1),
    RET(SECCOMP_RET_KILL_PROCESS),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 1, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 0, 1),
    RET(SECCOMP_RET_USER_NOTIF),
    RET(SECCOMP_RET_ALLOW),
};

/* One datagram: magic, kind, path, and the listener when fd >= 0.  No
 * allocation (fd_pass_send neither): the server's clone(CLONE_VM) child
 * sends with this. */
static int
send_message(int sock, char kind, const char *exec_path, int fd)
{
    size_t plen = strlen(exec_path);
    char head[5];
    memcpy(head, SANDBOX_EXEC_NOTIFY_MAGIC, 4);
    head[4] = kind;
    const struct iovec iov[2] = {{head, sizeof head}, {(void *)exec_path, plen}};
    ssize_t n = fd_pass_send(sock, iov, 2, &fd, fd >= 0 ? 1 : 0);
    if (n < 0)
        return (int)n;
    return (size_t)n == sizeof head + plen ? 0 : -EMSGSIZE;
}

int
sandbox_exec_filter_send_degraded(int sock, const char *exec_path)
{
    return send_message(sock, SANDBOX_EXEC_NOTIFY_DEGRADED, exec_path, -1);
}

bool
sandbox_exec_filter_by_number(int sock)
{
    static const char offer[] = SANDBOX_EXEC_NOTIFY_OFFER;
    char msg[sizeof offer]; /* one byte more: a longer message is no offer */
    ssize_t n;
    do
        n = recv(sock, msg, sizeof msg, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof offer - 1 && memcmp(msg, offer, sizeof offer - 1) == 0;
}

/* One send(2), not sendmsg: a sendto without an address is the one send
 * the sandbox's filter lets through without asking the supervisor, which
 * has not got the listener yet.  So the message is built in one buffer
 * (on the stack: no allocation). */
int
sandbox_exec_filter_send_number(int sock, const char *exec_path, int listener)
{
    char msg[5 + sizeof listener + EXEC_FILTER_MAX_PATH];
    size_t plen = strlen(exec_path);
    if (plen > EXEC_FILTER_MAX_PATH)
        return -ENAMETOOLONG;
    memcpy(msg, SANDBOX_EXEC_NOTIFY_MAGIC, 4);
    msg[4] = SANDBOX_EXEC_NOTIFY_BY_NUMBER;
    memcpy(msg + 5, &listener, sizeof listener);
    memcpy(msg + 5 + sizeof listener, exec_path, plen);
    size_t len = 5 + sizeof listener + plen;
    ssize_t n;
    do
        n = send(sock, msg, len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    return (size_t)n == len ? 0 : -EMSGSIZE;
}

int
sandbox_exec_filter_load(void)
{
    const struct sock_fprog prog = {.len = ARRAY_SIZE(program),
                                    .filter = (struct sock_filter *)program};
    int listener =
        (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    return listener < 0 ? -errno : listener;
}

int
sandbox_exec_filter_send(int sock, const char *exec_path, int listener)
{
    return send_message(sock, SANDBOX_EXEC_NOTIFY_LISTENER, exec_path, listener);
}

/* The courier's side: one listener number from the pipe, then the
 * message; its exit status is the send's errno (0: sent, or told to send
 * nothing). */
static noreturn void
courier_run(struct sandbox_courier *c, int sock, const char *exec_path, pid_t loader)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != loader)
        _exit(ESRCH);
    int listener = -1;
    ssize_t n;
    do
        n = read(c->pipe_r, &listener, sizeof listener);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof listener || listener < 0)
        _exit(0);
    int rc = sandbox_exec_filter_send(sock, exec_path, listener);
    _exit(rc < 0 ? (-rc & 0xff) : 0);
}

int
sandbox_exec_filter_courier_start(struct sandbox_courier *c, int sock, const char *exec_path)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -errno;
    c->pipe_r = p[0];
    c->pipe_w = p[1];
    pid_t loader = getpid();
    /* fork's semantics (own memory, SIGCHLD) with the fd table shared */
    long pid = syscall(SYS_clone, (unsigned long)(CLONE_FILES | SIGCHLD), 0, 0, 0, 0);
    if (pid == 0)
        courier_run(c, sock, exec_path, loader);
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return -e;
    }
    c->pid = (pid_t)pid;
    return 0;
}

int
sandbox_exec_filter_courier_send(struct sandbox_courier *c, int listener)
{
    ssize_t n = 0;
    if (listener >= 0) {
        do
            n = write(c->pipe_w, &listener, sizeof listener);
        while (n < 0 && errno == EINTR);
    }
    /* the one reference to the pipe's ends, shared: the courier reads EOF */
    close(c->pipe_w);
    int status = 0;
    pid_t w;
    do
        w = waitpid(c->pid, &status, 0);
    while (w < 0 && errno == EINTR);
    close(c->pipe_r);
    if (w < 0)
        return -errno;
    if (listener >= 0 && n != (ssize_t)sizeof listener)
        return -EPIPE;
    if (!WIFEXITED(status))
        return -EPIPE; /* killed before it could send */
    return WEXITSTATUS(status) ? -WEXITSTATUS(status) : 0;
}

int
sandbox_exec_filter_report(json_t *report, bool execs, bool sockets)
{
    json_t *notified = json_array();
    int rc = notified ? 0 : -1;
    if (execs && rc == 0)
        rc = json_array_append_new(notified, json_string("execve")) |
             json_array_append_new(notified, json_string("execveat"));
    if (sockets && rc == 0)
        rc = json_array_append_new(notified, json_string("connect")) |
             json_array_append_new(notified, json_string("sendto")) |
             json_array_append_new(notified, json_string("sendmsg")) |
             json_array_append_new(notified, json_string("sendmmsg"));
    json_t *o = rc == 0 ? json_pack("{s:s,s:o}", "mode", "user-notif", "notified", notified) : NULL;
    if (!o) {
        json_decref(notified);
        return -ENOMEM;
    }
    return json_object_set_new(report, "exec_notify", o) == 0 ? 0 : -ENOMEM;
}
