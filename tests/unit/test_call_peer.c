/*
 * call_peer: a process counts as one of a server's calls when it descends
 * from the server (orphans too, the server being their subreaper) or sits
 * in one of its call cgroups; the test process plays the server with a
 * child of its own, and its grandchildren the calls.  A peer that exited
 * before the check is unknown, never outside.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/mcp/call_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void
test_cgroup_text(void **state)
{
    const char *v2 = "0::/user.slice/execgate-1234-7\n";
    assert_true(call_peer_cgroup_is_call(v2, strlen(v2), 1234));
    assert_false(call_peer_cgroup_is_call(v2, strlen(v2), 123));
    assert_false(call_peer_cgroup_is_call(v2, strlen(v2), 12345));
    /* deeper below a call's cgroup: still the call's */
    const char *deep = "0::/a/execgate-1234-7/inner\n";
    assert_true(call_peer_cgroup_is_call(deep, strlen(deep), 1234));
    /* the server's own leaf is no call */
    const char *own = "0::/a/execgate-1234-server\n";
    assert_false(call_peer_cgroup_is_call(own, strlen(own), 1234));
    /* v1 lines, the call in one hierarchy only */
    const char *v1 = "12:pids:/x/execgate-99-3\n11:memory:/x\n0::/\n";
    assert_true(call_peer_cgroup_is_call(v1, strlen(v1), 99));
    const char *none = "0::/user.slice/execgate-1234-\n0::/execgate-1234-1x\n";
    assert_false(call_peer_cgroup_is_call(none, strlen(none), 1234));
    assert_false(call_peer_cgroup_is_call("", 0, 1234));
    /* no trailing newline, and a name that only starts like one */
    const char *cut = "0::/execgate-1234-5";
    assert_true(call_peer_cgroup_is_call(cut, strlen(cut), 1234));
    const char *longer = "0::/execgate-12345-5";
    assert_false(call_peer_cgroup_is_call(longer, strlen(longer), 1234));
}

static int
pidfd_of(pid_t pid)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    assert_true(fd >= 0);
    return fd;
}

/* A stand-in server: a child that is the subreaper of what it starts,
 * with a grandchild that connects to path and an orphan (its parent
 * exited) that does too; both then wait to be killed.  The server's pid;
 * *conn and *orphan the connections accepted on lfd. */
static pid_t
start_server(int lfd, const char *path, int *conn, int *orphan)
{
    /* ready: a leaf has connected (to this process); step: the first
     * leaf has (to the stand-in server), so that the second pair starts
     * only then and the connections are accepted in the order they are
     * named here, whatever the scheduler does */
    int ready[2], step[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    assert_int_equal(pipe2(step, O_CLOEXEC), 0);
    pid_t server = fork();
    assert_true(server >= 0);
    if (server == 0) {
        /* a group of its own: the test kills it all at the end */
        if (setpgid(0, 0) < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
            _exit(1);
        for (int which = 0; which < 2; which++) {
            pid_t mid = fork();
            if (mid < 0)
                _exit(1);
            if (mid == 0) {
                pid_t leaf = fork();
                if (leaf < 0)
                    _exit(1);
                if (leaf == 0) {
                    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                    struct sockaddr_un sa = {.sun_family = AF_UNIX};
                    strcpy(sa.sun_path, path);
                    if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                        _exit(1);
                    if (write(ready[1], "c", 1) != 1 || (which == 0 && write(step[1], "c", 1) != 1))
                        _exit(1);
                    pause();
                    _exit(0);
                }
                /* the second leaf's parent leaves: an orphan */
                if (which == 1)
                    _exit(0);
                pause();
                _exit(0);
            }
            char c;
            if (which == 0 && read(step[0], &c, 1) != 1)
                _exit(1);
        }
        close(ready[1]);
        for (;;) {
            if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD)
                pause();
        }
    }
    close(ready[1]);
    close(step[0]);
    close(step[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    *conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(*conn >= 0);
    assert_int_equal(read(ready[0], &c, 1), 1);
    *orphan = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(*orphan >= 0);
    close(ready[0]);
    return server;
}

static pid_t
peer_pid(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len), 0);
    return cred.pid;
}

/* Waits until pid's parent is want (the orphan's reparenting). */
static void
wait_parent(pid_t pid, pid_t want)
{
    for (;;) {
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        int ppid = -1;
        char st;
        assert_int_equal(sscanf(strrchr(buf, ')') + 1, " %c %d", &st, &ppid), 2);
        if (ppid == want)
            return;
        usleep(1000);
    }
}

static void
test_descendants(void **state)
{
    char dir[] = "/tmp/call-peer-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[sizeof(dir) + 8];
    snprintf(path, sizeof(path), "%s/s", dir);
    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    strcpy(sa.sun_path, path);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(lfd, 8), 0);
    int conn = -1, orphan = -1;
    pid_t server = start_server(lfd, path, &conn, &orphan);
    wait_parent(peer_pid(orphan), server);

    /* the server's grandchild, and the orphan it inherited: its calls' */
    assert_int_equal(call_peer_origin(conn, server), CALL_PEER_CALL);
    assert_int_equal(call_peer_origin(orphan, server), CALL_PEER_CALL);
    /* another server's calls are not this one's: the test process is
     * their ancestor, not their server */
    assert_int_equal(call_peer_origin(conn, getpid() + 1000000), CALL_PEER_OUTSIDE);
    /* a peer outside: this process, connected to the server's socket */
    int mine = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(mine, (struct sockaddr *)&sa, sizeof(sa)), 0);
    int mine_conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    assert_int_equal(call_peer_origin(mine_conn, server), CALL_PEER_OUTSIDE);
    /* the server itself is no call of its own */
    assert_int_equal(call_peer_origin(mine_conn, getpid()), CALL_PEER_OUTSIDE);

    /* the call's process exits (the server reaps it): its pid may name
     * anyone now, and the pidfd taken at the check knows it is gone */
    pid_t leaf = peer_pid(orphan);
    int pidfd = pidfd_of(leaf);
    assert_int_equal(call_peer_origin_of(leaf, pidfd, server), CALL_PEER_CALL);
    kill(leaf, SIGKILL);
    struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, -1), 1);
    /* reaped, not a zombie any more */
    while (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0)
        usleep(1000);
    assert_int_equal(call_peer_origin_of(leaf, pidfd, server), CALL_PEER_UNKNOWN);
    assert_int_equal(call_peer_origin(orphan, server), CALL_PEER_UNKNOWN);
    close(pidfd);

    /* the stand-in server's group, and what it leaves (this process is
     * their subreaper then) */
    kill(-server, SIGKILL);
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
        ;
    close(conn);
    close(orphan);
    close(mine);
    close(mine_conn);
    close(lfd);
    unlink(path);
    rmdir(dir);
}

/* A TCP listener on the loopback of family (port chosen by the kernel). */
static int
tcp_listener(int family, struct sockaddr_storage *addr, socklen_t *len)
{
    int l = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(l >= 0);
    memset(addr, 0, sizeof(*addr));
    if (family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)addr;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *len = sizeof(*in);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)addr;
        in6->sin6_family = AF_INET6;
        in6->sin6_addr = in6addr_loopback;
        *len = sizeof(*in6);
    }
    assert_int_equal(bind(l, (struct sockaddr *)addr, *len), 0);
    assert_int_equal(listen(l, 8), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)addr, len), 0);
    return l;
}

/* The user at the other end of a loopback TCP connection, IPv4 and IPv6:
 * this process's own, and (as root) a child's that became nobody. */
static void
test_tcp_uid(void **state)
{
    const int families[] = {AF_INET, AF_INET6};
    for (size_t f = 0; f < 2; f++) {
        struct sockaddr_storage addr;
        socklen_t len;
        int l = tcp_listener(families[f], &addr, &len);
        int c = socket(families[f], SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(connect(c, (struct sockaddr *)&addr, len), 0);
        int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        assert_true(a >= 0);
        assert_int_equal(call_peer_tcp_uid(a), getuid());
        assert_int_equal(call_peer_tcp_uid(c), getuid());
        close(c);
        close(a);
        if (getuid() == 0) {
            /* go: the child says it is connected; done: its end */
            int go[2], done[2];
            assert_int_equal(pipe2(go, O_CLOEXEC), 0);
            assert_int_equal(pipe2(done, O_CLOEXEC), 0);
            pid_t child = fork();
            assert_true(child >= 0);
            if (child == 0) {
                close(go[0]);
                close(done[1]);
                if (setgid(65534) < 0 || setuid(65534) < 0)
                    _exit(1);
                int s = socket(families[f], SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (s < 0 || connect(s, (struct sockaddr *)&addr, len) < 0)
                    _exit(2);
                char x;
                if (write(go[1], "c", 1) != 1 || read(done[0], &x, 1) < 0)
                    _exit(3);
                _exit(0);
            }
            close(go[1]);
            close(done[0]);
            char x;
            if (read(go[0], &x, 1) != 1) {
                int status = 0;
                waitpid(child, &status, 0);
                fail_msg("the child as nobody did not connect (status %d)", status);
            }
            a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
            assert_true(a >= 0);
            /* the socket was made after setuid: nobody's */
            assert_int_equal(call_peer_tcp_uid(a), 65534);
            close(done[1]); /* the child's end */
            waitpid(child, NULL, 0);
            close(go[0]);
            close(a);
        }
        close(l);
    }
    /* not a TCP socket */
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(call_peer_tcp_uid(sv[0]), (uid_t)-1);
    close(sv[0]);
    close(sv[1]);
}

int
main(void)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cgroup_text),
        cmocka_unit_test(test_descendants),
        cmocka_unit_test(test_tcp_uid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
