/*
 * exec_watch_probe: whether this kernel gives the server seccomp user
 * notification (exec_watch.h), tried once in a child: a filter with a
 * listener, the listener sent to the parent, one notification continued.
 */
#include "server/decide/exec_watch.h"

#include "common/macros.h"
#include "common/fd_pass.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int
probe_child(int sock)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {ARRAY_SIZE(code), code};
    long ppid = syscall(SYS_getppid);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return 2;
    long fd =
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0)
        return 3;
    int ifd = (int)fd;
    char l = 'L';
    const struct iovec iov = {.iov_base = &l, .iov_len = 1};
    if (fd_pass_send(sock, &iov, 1, &ifd, 1) != 1)
        return 4;
    close(ifd);
    /* continued by the parent: the real getppid runs */
    return syscall(SYS_getppid) == ppid ? 0 : 5;
}

static int
probe_answer(int sock)
{
    char b;
    int fd = -1;
    size_t nfds = 0;
    struct pollfd p = {sock, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1 || fd_pass_recv(sock, &b, 1, &fd, 1, &nfds, NULL) != 1 ||
        nfds != 1) {
        if (nfds > 0)
            close(fd);
        return -1;
    }
    struct seccomp_notif req;
    struct seccomp_notif_resp resp;
    memset(&req, 0, sizeof(req));
    memset(&resp, 0, sizeof(resp));
    struct pollfd pn = {fd, POLLIN, 0};
    int rc = -1;
    if (poll(&pn, 1, 5000) == 1 && ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
        resp.id = req.id;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        rc = ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0 ? 0 : -1;
    }
    close(fd);
    return rc;
}

/* The kernel's answer does not change while the process runs: probed once
 * (a server makes one mcp_server; the fuzz target makes one per input). */
static int probed;      /* 0: not yet, 1: supported, -1: not */
static char *probe_why; /* why not, kept for later callers */

static int probe_once(char **why);

int
exec_watch_probe(char **why)
{
    *why = NULL;
    const char *forced = getenv("EXECGATE_TEST_NO_USER_NOTIF");
    if (forced && strcmp(forced, "1") == 0) {
        *why = strdup("EXECGATE_TEST_NO_USER_NOTIF=1 (test)");
        return -1;
    }
    if (probed == 0) {
        probed = probe_once(&probe_why) == 0 ? 1 : -1;
    }
    if (probed < 0 && probe_why)
        *why = strdup(probe_why);
    return probed > 0 ? 0 : -1;
}

static int
probe_once(char **why)
{
    *why = NULL;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        if (asprintf(why, "socketpair: %s", strerror(errno)) < 0)
            *why = NULL;
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        _exit(probe_child(sv[1]));
    }
    close(sv[1]);
    int answered = pid > 0 ? probe_answer(sv[0]) : -1;
    close(sv[0]);
    int st = 0;
    if (pid > 0) {
        if (answered < 0)
            kill(pid, SIGKILL);
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
    if (pid > 0 && answered == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (asprintf(why, "the kernel has no usable seccomp user notification (probe %s %d)",
                 pid < 0 ? "fork failed" : "status", pid < 0 ? errno : st) < 0)
        *why = NULL;
    return -1;
}
