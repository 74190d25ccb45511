/*
 * attack: one escape attempt per invocation, for the sandbox tests.
 *
 *   attack NAME ARGS...
 *
 * Exit 0 and "escaped: ..." when the attempt worked, 1 and "denied: CALL:
 * REASON" when the system refused it, 2 on a usage error.  The tests run it
 * inside execgate-sandbox and expect 1, and outside (as a control) to show
 * that the attempt is real.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int
denied(const char *call)
{
    printf("denied: %s: %s\n", call, strerror(errno));
    return 1;
}

static int
escaped(const char *what)
{
    printf("escaped: %s\n", what);
    return 0;
}

static int
do_write(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return denied("open");
    if (write(fd, "pwned\n", 6) != 6) {
        close(fd);
        return denied("write");
    }
    close(fd);
    return escaped(path);
}

static int
do_mkdir(const char *path)
{
    if (mkdir(path, 0755) != 0)
        return denied("mkdir");
    return escaped(path);
}

static int
do_rename(const char *from, const char *to)
{
    if (rename(from, to) != 0)
        return denied("rename");
    return escaped(to);
}

static int
do_link(const char *from, const char *to)
{
    if (link(from, to) != 0)
        return denied("link");
    return escaped(to);
}

static int
do_symlink(const char *target, const char *path)
{
    if (symlink(target, path) != 0)
        return denied("symlink");
    return escaped(path);
}

static int
do_unlink(const char *path)
{
    if (unlink(path) != 0)
        return denied("unlink");
    return escaped(path);
}

static int
do_rmdir(const char *path)
{
    if (rmdir(path) != 0)
        return denied("rmdir");
    return escaped(path);
}

static int
do_mount(const char *target)
{
    if (mount("none", target, "tmpfs", 0, NULL) != 0)
        return denied("mount");
    return escaped("mounted");
}

static int
do_chroot(const char *dir)
{
    if (chroot(dir) != 0)
        return denied("chroot");
    return escaped("chroot");
}

static int
do_sethostname(void)
{
    if (sethostname("pwned", 5) != 0)
        return denied("sethostname");
    return escaped("sethostname");
}

static int
do_kill(const char *pid)
{
    if (kill((pid_t)atoi(pid), SIGKILL) != 0)
        return denied("kill");
    return escaped("kill");
}

static int
do_ptrace(const char *pid)
{
    pid_t p = (pid_t)atoi(pid);
    if (ptrace(PTRACE_ATTACH, p, NULL, NULL) != 0)
        return denied("ptrace");
    waitpid(p, NULL, 0);
    ptrace(PTRACE_DETACH, p, NULL, NULL);
    return escaped("ptrace");
}

static int
connect_inet(int type, const char *port)
{
    int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return denied("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = type == SOCK_STREAM ? connect(fd, (struct sockaddr *)&a, sizeof a)
             : (int)sendto(fd, "pwned", 5, 0, (struct sockaddr *)&a, sizeof a) == 5 ? 0
                                                                                    : -1;
    if (rc != 0) {
        rc = denied(type == SOCK_STREAM ? "connect" : "sendto");
        close(fd);
        return rc;
    }
    if (type == SOCK_STREAM && write(fd, "pwned", 5) != 5) {
        close(fd);
        return denied("write");
    }
    close(fd);
    return escaped("network");
}

static int
do_socket(int domain, int type, int proto, const char *what)
{
    int fd = socket(domain, type | SOCK_CLOEXEC, proto);
    if (fd < 0)
        return denied("socket");
    close(fd);
    return escaped(what);
}

/* The user's keyring: secrets outside any file. */
static int
do_keyctl(void)
{
    long id = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -4 /* KEY_SPEC_USER_KEYRING */, 0);
    if (id < 0)
        return denied("keyctl");
    return escaped("keyring");
}

/* Typing into a terminal: a new session with a pty as its controlling
 * terminal, so only the sandbox can stand in the way. */
static int
do_tiocsti(void)
{
    if (setsid() < 0)
        return 2;
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0)
        return denied("posix_openpt");
    const char *name = ptsname(m);
    int s = name ? open(name, O_RDWR | O_CLOEXEC) : -1;
    if (s < 0)
        return denied("open pts");
    if (ioctl(s, TIOCSCTTY, 0) != 0)
        return denied("TIOCSCTTY");
    char c = 'x';
    if (ioctl(s, TIOCSTI, &c) != 0)
        return denied("ioctl TIOCSTI");
    return escaped("tiocsti");
}

/* io_uring would let a socket be made without the socket(2) system call. */
static int
do_io_uring(void)
{
    unsigned char params[120] = {0};
    long fd = syscall(SYS_io_uring_setup, 4, params);
    if (fd < 0)
        return denied("io_uring_setup");
    close((int)fd);
    return escaped("io_uring");
}

static int
abstract_addr(const char *name, struct sockaddr_un *a, socklen_t *len)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    size_t n = strlen(name);
    if (n + 1 > sizeof a->sun_path)
        return -1;
    memcpy(a->sun_path + 1, name, n);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    return 0;
}

static int
do_abstract_connect(const char *name)
{
    struct sockaddr_un a;
    socklen_t len;
    if (abstract_addr(name, &a, &len) != 0)
        return 2;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return denied("socket");
    if (connect(fd, (struct sockaddr *)&a, len) != 0) {
        int rc = denied("connect");
        close(fd);
        return rc;
    }
    close(fd);
    return escaped("abstract socket");
}

/* Must keep working: a Unix socket bound at path (and an abstract one)
 * inside the sandbox, used from inside. */
static int
do_unix_inside(const char *path)
{
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (l < 0 || strlen(path) >= sizeof a.sun_path)
        return denied("socket");
    strcpy(a.sun_path, path);
    if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0)
        return denied("bind");
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
        return denied("connect");
    int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    char buf[8] = {0};
    if (s < 0 || write(c, "ping", 4) != 4 || read(s, buf, sizeof buf - 1) != 4)
        return denied("transfer");
    close(s);
    close(c);
    close(l);
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        return denied("socketpair");
    close(pair[0]);
    close(pair[1]);
    printf("ok: %s\n", buf);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *a = argv[1];
    const char *x = argc > 2 ? argv[2] : "";
    const char *y = argc > 3 ? argv[3] : "";
    if (strcmp(a, "write") == 0)
        return do_write(x);
    if (strcmp(a, "mkdir") == 0)
        return do_mkdir(x);
    if (strcmp(a, "rename") == 0)
        return do_rename(x, y);
    if (strcmp(a, "link") == 0)
        return do_link(x, y);
    if (strcmp(a, "symlink") == 0)
        return do_symlink(x, y);
    if (strcmp(a, "unlink") == 0)
        return do_unlink(x);
    if (strcmp(a, "rmdir") == 0)
        return do_rmdir(x);
    if (strcmp(a, "mount") == 0)
        return do_mount(x);
    if (strcmp(a, "chroot") == 0)
        return do_chroot(x);
    if (strcmp(a, "sethostname") == 0)
        return do_sethostname();
    if (strcmp(a, "kill") == 0)
        return do_kill(x);
    if (strcmp(a, "ptrace") == 0)
        return do_ptrace(x);
    if (strcmp(a, "tcp") == 0)
        return connect_inet(SOCK_STREAM, x);
    if (strcmp(a, "udp") == 0)
        return connect_inet(SOCK_DGRAM, x);
    if (strcmp(a, "tcp6") == 0)
        return do_socket(AF_INET6, SOCK_STREAM, 0, "inet6 socket");
    if (strcmp(a, "raw") == 0)
        return do_socket(AF_INET, SOCK_RAW, IPPROTO_ICMP, "raw socket");
    if (strcmp(a, "packet") == 0)
        return do_socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL), "packet socket");
    if (strcmp(a, "netlink") == 0)
        return do_socket(AF_NETLINK, SOCK_RAW, 0, "netlink socket");
    if (strcmp(a, "keyctl") == 0)
        return do_keyctl();
    if (strcmp(a, "tiocsti") == 0)
        return do_tiocsti();
    if (strcmp(a, "io_uring") == 0)
        return do_io_uring();
    if (strcmp(a, "abstract") == 0)
        return do_abstract_connect(x);
    if (strcmp(a, "unix-inside") == 0)
        return do_unix_inside(x);
    fprintf(stderr, "attack: unknown attack %s\n", a);
    return 2;
}
