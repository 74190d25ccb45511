#define _GNU_SOURCE /* O_PATH, AT_EMPTY_PATH */
/*
 * raw-exec (attack, tests only): starts a program with the raw system call,
 * no libc exec wrapper, no PATH.  The test compiles it -static.
 *
 *   raw-exec execve PATH ARGV0 ARGS...
 *   raw-exec execveat DIR NAME ARGV0 ARGS...   (execveat with a dirfd)
 *   raw-exec emptypath PATH ARGV0 ARGS...      (execveat(fd, "", AT_EMPTY_PATH))
 *   raw-exec straddle PATH ARGV0 ARGS...       (execve with the path, each
 *       argument and the pointer array each across a page boundary: the
 *       supervisor must read them whole)
 *   raw-exec ownlistener PATH ARGV0 ARGS...    (a child execs PATH under a
 *       seccomp listener of this process's own, which answers CONTINUE:
 *       the newest filter's listener would get the notification first)
 * Exit 3 when the own listener is refused.
 */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

static int
own_listener(char *path, char **argv)
{
    struct sock_filter prog[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog fp = {.len = 4, .filter = prog};
    int fd =
        (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fp);
    if (fd < 0) {
        perror("raw-exec: own listener refused");
        return 3;
    }
    pid_t pid = fork();
    if (pid == 0) {
        syscall(SYS_execve, path, argv, environ);
        _exit(1);
    }
    struct seccomp_notif_sizes sz;
    syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz);
    struct seccomp_notif *n = calloc(1, sz.seccomp_notif);
    struct seccomp_notif_resp *r = calloc(1, sz.seccomp_notif_resp);
    if (n != NULL && r != NULL && ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, n) == 0) {
        r->id = n->id;
        r->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, r);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    free(n);
    free(r);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* Copies s so that its middle falls on the boundary before page *k of
 * base, then moves on to the next page. */
static char *
across(char *base, size_t page, int *k, const char *s)
{
    size_t len = strlen(s) + 1;
    char *at = base + page * (size_t)(*k)++ - len / 2;
    memcpy(at, s, len);
    return at;
}

static int
straddle(int n, char **args)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (size_t)n + 4;
    char *base =
        mmap(NULL, page * pages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return 1;
    int k = 1;
    char *path = across(base, page, &k, args[0]);
    /* the pointer array: the first pointer before the boundary, the rest after */
    char **vec = (char **)(base + page * (size_t)k++ - sizeof(char *));
    for (int i = 1; i < n; i++)
        vec[i - 1] = across(base, page, &k, args[i]);
    vec[n - 1] = NULL;
    syscall(SYS_execve, path, vec, environ);
    return 1;
}

int
main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "execve") == 0) {
        syscall(SYS_execve, argv[2], &argv[3], environ);
    } else if (argc >= 5 && strcmp(argv[1], "execveat") == 0) {
        int dir = open(argv[2], O_RDONLY | O_DIRECTORY);
        syscall(SYS_execveat, dir, argv[3], &argv[4], environ, 0);
    } else if (argc >= 4 && strcmp(argv[1], "emptypath") == 0) {
        int fd = open(argv[2], O_PATH);
        syscall(SYS_execveat, fd, "", &argv[3], environ, AT_EMPTY_PATH);
    } else if (argc >= 4 && strcmp(argv[1], "straddle") == 0) {
        straddle(argc - 2, &argv[2]);
    } else if (argc >= 4 && strcmp(argv[1], "ownlistener") == 0) {
        return own_listener(argv[2], &argv[3]);
    } else {
        fprintf(stderr, "usage: raw-exec execve|execveat|emptypath|straddle|ownlistener ...\n");
        return 2;
    }
    perror("raw-exec");
    return 1;
}
