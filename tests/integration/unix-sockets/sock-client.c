/*
 * sock-client (tests only): the Unix-socket servers and clients of
 * test_unix_sockets, in and out of the sandbox.
 *
 *   sock-client serve PATH MARK BANNER   stream server: sends BANNER to each
 *                                        client; a client that sends "PWNED"
 *                                        creates the file MARK ("-": none)
 *   sock-client serve-dgram PATH MARK    datagram server: "PWNED" creates MARK
 *   sock-client connect PATH             connects, sends "PWNED", prints the
 *                                        reply ("reply: ..."); 0 when connected
 *   sock-client connect-thread PATH      connect, from a second thread (its
 *                                        thread id is not the process's id)
 *   sock-client exec-thread PROGRAM ARG...
 *                                        execs PROGRAM from a second thread;
 *                                        prints "exec: ERROR" when refused
 *   sock-client dgram PATH               sendto PATH, then connect + send;
 *                                        prints each outcome; 0 when one went
 *   sock-client race INSIDE OUTSIDE N    N connects (more until one reaches
 *                                        INSIDE, at most 100 N) while a thread
 *                                        rewrites the address between the two
 *                                        paths; prints "banners: I inside, O
 *                                        outside (of N)"
 *   sock-client race-rename LINK INSIDE OUTSIDE N
 *                                        N connects to LINK while a child
 *                                        swaps it (rename) between symlinks to
 *                                        the two (more, as above); prints the
 *                                        same line
 *   sock-client race-fd OUTSIDE N        N connects of one fd number to
 *                                        OUTSIDE while a thread swaps a Unix
 *                                        and a TCP socket onto that number;
 *                                        prints "outside: O of N"
 *   sock-client loop PATH N              N connects, each reading the banner:
 *                                        prints "per connect: U us" (bench)
 *   sock-client msg PATH                 sendmsg to PATH, then sendmmsg of two
 *                                        messages; prints each outcome
 *                                        ("sendmsg: sent", "sendmmsg: 2 sent");
 *                                        0 when one went
 *   sock-client msg-race PATH N          N sendmsg and N sendmmsg on an
 *                                        unconnected datagram socket while a
 *                                        thread flips their msghdr between no
 *                                        address and PATH (more, as race does,
 *                                        until the address was read once);
 *                                        prints "msg-race: S of M sent (R
 *                                        refused, ...)" (S > 0: PATH reached)
 *   sock-client pass-fd DIR              an fd (a pipe's end) through a
 *                                        socketpair with sendmsg, then through
 *                                        a datagram socket it binds at
 *                                        DIR/own.sock; prints "socketpair: fd
 *                                        passed" and "own socket: fd passed"
 *   sock-client msg-stream MB            MB MiB through a blocking stream
 *                                        socketpair with sendmsg (64 KiB each)
 *                                        while a child reads it all: prints
 *                                        "msg-stream: S of T bytes sent, R
 *                                        read" or the error that stopped it
 *   sock-client msg-bad-cmsg             sendmsg on a socketpair whose SCM_RIGHTS
 *                                        header claims more than its control
 *                                        buffer holds: prints "bad cmsg: ERROR"
 *   sock-client msg-loop PATH N          N sendmsg on a socketpair, then N to
 *                                        PATH (a datagram server): prints the
 *                                        time of each ("per sendmsg ...: U us",
 *                                        bench)
 *
 * Servers bind with mode 0666 (another user's client may connect) and
 * run until killed.  A PATH starting with '@' is an abstract name.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_un
address(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        fprintf(stderr, "sock-client: path too long: %s\n", path);
        exit(2);
    }
    strcpy(a.sun_path, path);
    if (path[0] == '@') /* abstract: the whole sun_path, zero-padded, is the name */
        a.sun_path[0] = '\0';
    return a;
}

static int
bound(const char *path, int type)
{
    struct sockaddr_un a = address(path);
    bool abstract = path[0] == '@';
    if (!abstract)
        unlink(path);
    int s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
        (!abstract && chmod(path, 0666) != 0) || (type == SOCK_STREAM && listen(s, 64) != 0)) {
        fprintf(stderr, "sock-client: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    return s;
}

static void
mark(const char *path)
{
    if (strcmp(path, "-") == 0)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
}

static _Noreturn void
serve(const char *path, const char *mark_path, const char *banner)
{
    int s = bound(path, SOCK_STREAM);
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        (void)!write(c, banner, strlen(banner));
        char buf[64] = {0};
        ssize_t n = read(c, buf, sizeof buf - 1);
        if (n > 0 && strstr(buf, "PWNED"))
            mark(mark_path);
        close(c);
    }
}

static _Noreturn void
serve_dgram(const char *path, const char *mark_path)
{
    int s = bound(path, SOCK_DGRAM);
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        char buf[64] = {0};
        ssize_t n = recv(s, buf, sizeof buf - 1, 0);
        if (n > 0 && strstr(buf, "PWNED"))
            mark(mark_path);
    }
}

static int
connect_once(const char *path)
{
    struct sockaddr_un a = address(path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        printf("connect: %s\n", strerror(errno));
        return 1;
    }
    char buf[64] = {0};
    (void)!write(s, "PWNED\n", 6);
    ssize_t n = read(s, buf, sizeof buf - 1);
    printf("reply: %s\n", n > 0 ? buf : "(none)");
    close(s);
    return 0;
}

static void *
connect_thread_main(void *path)
{
    return (void *)(intptr_t)connect_once(path);
}

/* connect_once from a thread other than the first: the supervisor reaches
 * that thread by its own id. */
static int
connect_thread(const char *path)
{
    pthread_t t;
    void *rc = NULL;
    if (pthread_create(&t, NULL, connect_thread_main, (void *)path) != 0 ||
        pthread_join(t, &rc) != 0) {
        fprintf(stderr, "sock-client: no thread\n");
        return 2;
    }
    fflush(stdout);
    return (int)(intptr_t)rc;
}

static void *
exec_thread_main(void *argv)
{
    char **v = argv;
    execv(v[0], v);
    printf("exec: %s\n", strerror(errno));
    fflush(stdout);
    return (void *)1;
}

/* execv from a thread other than the first (the supervisor reaches the
 * thread that asked by its own id). */
static int
exec_thread(char **argv)
{
    pthread_t t;
    void *rc = NULL;
    if (pthread_create(&t, NULL, exec_thread_main, argv) != 0 || pthread_join(t, &rc) != 0) {
        fprintf(stderr, "sock-client: no thread\n");
        return 2;
    }
    return (int)(intptr_t)rc;
}

static int
dgram(const char *path)
{
    struct sockaddr_un a = address(path);
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int ok = 0;
    if (sendto(s, "PWNED", 5, 0, (struct sockaddr *)&a, sizeof a) == 5)
        ok |= 1;
    printf("sendto: %s\n", ok & 1 ? "sent" : strerror(errno));
    int c = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (connect(c, (struct sockaddr *)&a, sizeof a) == 0 && send(c, "PWNED", 5, 0) == 5)
        ok |= 2;
    printf("connect: %s\n", ok & 2 ? "sent" : strerror(errno));
    return ok ? 0 : 1;
}

/* The banner a connect to addr gets (0 none, 1 inside, 2 outside). */
static int
banner_of(const struct sockaddr_un *addr)
{
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int kind = 0;
    if (connect(s, (const struct sockaddr *)addr, sizeof *addr) == 0) {
        char buf[64] = {0};
        if (read(s, buf, sizeof buf - 1) > 0)
            kind = strstr(buf, "SECRET") ? 2 : 1;
    }
    close(s);
    return kind;
}

static struct sockaddr_un shared;
static atomic_bool stop;
static char paths[2][sizeof shared.sun_path];

static void *
flip(void *arg)
{
    (void)arg;
    for (unsigned i = 0; !atomic_load(&stop); i++)
        memcpy(shared.sun_path, paths[i & 1], sizeof shared.sun_path);
    return NULL;
}

static void
report(int n, const int *counts)
{
    printf("banners: %d inside, %d outside (of %d)\n", counts[1], counts[2], n);
}

static int
race(const char *inside, const char *outside, int n)
{
    shared = address(inside);
    strncpy(paths[0], inside, sizeof paths[0] - 1);
    strncpy(paths[1], outside, sizeof paths[1] - 1);
    pthread_t t;
    if (pthread_create(&t, NULL, flip, NULL) != 0)
        return 2;
    int counts[3] = {0}, i = 0;
    for (; i < n || (counts[1] == 0 && i < 100 * n); i++)
        counts[banner_of(&shared)]++;
    atomic_store(&stop, true);
    pthread_join(t, NULL);
    report(i, counts);
    return 0;
}

static int
race_rename(const char *link, const char *inside, const char *outside, int n)
{
    char tmp[2][sizeof shared.sun_path + 8];
    snprintf(tmp[0], sizeof tmp[0], "%s.a", link);
    snprintf(tmp[1], sizeof tmp[1], "%s.b", link);
    pid_t swapper = fork();
    if (swapper == 0) {
        for (unsigned i = 0;; i++) {
            const char *t = tmp[i & 1];
            unlink(t);
            if (symlink(i & 1 ? outside : inside, t) == 0)
                (void)rename(t, link);
        }
    }
    struct sockaddr_un a = address(link);
    int counts[3] = {0}, i = 0;
    for (; i < n || (counts[1] == 0 && i < 100 * n); i++)
        counts[banner_of(&a)]++;
    kill(swapper, SIGKILL);
    waitpid(swapper, NULL, 0);
    report(i, counts);
    return 0;
}

/* The fd number race_fd's connects use, and the two sockets swapped onto it. */
#define RACE_FD 100
static int swap_fds[2];

static void *
swap(void *arg)
{
    (void)arg;
    for (unsigned i = 0; !atomic_load(&stop); i++)
        dup2(swap_fds[i & 1], RACE_FD);
    return NULL;
}

static int
race_fd(const char *outside, int n)
{
    struct sockaddr_un a = address(outside);
    int reached = 0;
    for (int i = 0; i < n; i++) {
        swap_fds[0] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        swap_fds[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (swap_fds[0] < 0 || swap_fds[1] < 0 || dup2(swap_fds[1], RACE_FD) < 0) {
            perror("sock-client: race-fd");
            return 2;
        }
        atomic_store(&stop, false);
        pthread_t t;
        if (pthread_create(&t, NULL, swap, NULL) != 0)
            return 2;
        int rc = connect(RACE_FD, (struct sockaddr *)&a, sizeof a);
        atomic_store(&stop, true);
        pthread_join(t, NULL);
        /* the thread may have moved the connected socket off RACE_FD: the
         * Unix socket itself, and whatever is at RACE_FD now */
        const int check[] = {swap_fds[0], RACE_FD};
        for (size_t k = 0; rc == 0 && k < 2; k++) {
            char buf[64] = {0};
            if (read(check[k], buf, sizeof buf - 1) > 0 && strstr(buf, "SECRET")) {
                (void)!send(check[k], "PWNED\n", 6, MSG_NOSIGNAL);
                reached++;
                break;
            }
        }
        close(RACE_FD);
        close(swap_fds[0]);
        close(swap_fds[1]);
    }
    printf("outside: %d of %d\n", reached, n);
    return 0;
}

/* sendmsg of "PWNED" to a, fds (n of them) attached when n > 0. */
static ssize_t
send_to(int s, const struct sockaddr_un *a, const int *fds, size_t n)
{
    char text[] = "PWNED";
    struct iovec iov = {text, 5};
    union {
        struct cmsghdr h;
        char room[CMSG_SPACE(4 * sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {
        .msg_name = (void *)a, .msg_namelen = a ? sizeof *a : 0, .msg_iov = &iov, .msg_iovlen = 1};
    if (n > 0) {
        m.msg_control = u.room;
        m.msg_controllen = CMSG_SPACE(n * sizeof(int));
        u.h.cmsg_level = SOL_SOCKET;
        u.h.cmsg_type = SCM_RIGHTS;
        u.h.cmsg_len = CMSG_LEN(n * sizeof(int));
        memcpy(CMSG_DATA(&u.h), fds, n * sizeof(int));
    }
    return sendmsg(s, &m, MSG_NOSIGNAL);
}

static int
msg(const char *path)
{
    struct sockaddr_un a = address(path);
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int ok = 0;
    if (send_to(s, &a, NULL, 0) == 5)
        ok |= 1;
    printf("sendmsg: %s\n", ok & 1 ? "sent" : strerror(errno));
    char text[] = "PWNED";
    struct iovec iov = {text, 5};
    struct mmsghdr v[2];
    memset(v, 0, sizeof v);
    for (int i = 0; i < 2; i++)
        v[i].msg_hdr = (struct msghdr){
            .msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &iov, .msg_iovlen = 1};
    int n = sendmmsg(s, v, 2, 0);
    if (n > 0)
        ok |= 2;
    if (n > 0)
        printf("sendmmsg: %d sent (%u bytes)\n", n, v[0].msg_len);
    else
        printf("sendmmsg: %s\n", strerror(errno));
    close(s);
    return ok ? 0 : 1;
}

static struct msghdr race_msg;
static struct sockaddr_un race_addr;
static atomic_uint flips;

static void *
flip_name(void *arg)
{
    (void)arg;
    /* each state held a while, so a send meets either as often */
    for (unsigned i = 0; !atomic_load(&stop); i++) {
        race_msg.msg_name = i & 1 ? &race_addr : NULL;
        race_msg.msg_namelen = i & 1 ? sizeof race_addr : 0;
        for (int k = 0; k < 2000; k++)
            atomic_fetch_add(&flips, 1);
    }
    return NULL;
}

/* Counts one send's outcome: [0] sent, [1] refused (an address was read),
 * [2] not connected (none was), [3] anything else. */
static void
tally(bool sent, int *counts)
{
    counts[sent ? 0 : errno == ECONNREFUSED ? 1 : errno == ENOTCONN ? 2 : 3]++;
}

static int
msg_race(const char *path, int n)
{
    race_addr = address(path);
    static char text[] = "PWNED";
    static struct iovec iov = {text, 5};
    race_msg = (struct msghdr){.msg_iov = &iov, .msg_iovlen = 1};
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    pthread_t t;
    if (s < 0 || pthread_create(&t, NULL, flip_name, NULL) != 0)
        return 2;
    while (atomic_load(&flips) < 2)
        ; /* racing from the first send */
    /* sendmmsg's vector of one, its msghdr flipped by the thread too */
    static struct mmsghdr v;
    int counts[4] = {0}, i = 0;
    /* more until the address was read at least once, at most 100 N */
    for (; i < n || (counts[0] + counts[1] == 0 && i < 100 * n); i++) {
        tally(sendmsg(s, &race_msg, MSG_NOSIGNAL) == 5, counts);
        v.msg_hdr = race_msg;
        tally(sendmmsg(s, &v, 1, 0) == 1, counts);
    }
    atomic_store(&stop, true);
    pthread_join(t, NULL);
    printf("msg-race: %d of %d sent (%d refused, %d without an address, %d other)\n", counts[0],
           2 * i, counts[1], counts[2], counts[3]);
    close(s);
    return 0;
}

/* One fd through s (sendmsg to a, or connected when a is NULL), received
 * on r: the pipe written through the received fd is read back. */
static bool
pass_one(int s, const struct sockaddr_un *a, int r)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0 || send_to(s, a, &p[1], 1) != 5)
        return false;
    close(p[1]);
    char buf[16];
    union {
        struct cmsghdr h;
        char room[CMSG_SPACE(sizeof(int))];
    } u;
    struct iovec iov = {buf, sizeof buf};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.room, .msg_controllen = sizeof u.room};
    int got = -1;
    if (recvmsg(r, &m, MSG_CMSG_CLOEXEC) == 5 && CMSG_FIRSTHDR(&m) &&
        CMSG_FIRSTHDR(&m)->cmsg_type == SCM_RIGHTS)
        memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof got);
    bool ok = got >= 0 && write(got, "fd!", 3) == 3;
    if (got >= 0)
        close(got);
    ok = ok && read(p[0], buf, sizeof buf) == 3 && memcmp(buf, "fd!", 3) == 0;
    close(p[0]);
    return ok;
}

static int
pass_fd(const char *dir)
{
    int sp[2];
    bool pair =
        socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) == 0 && pass_one(sp[0], NULL, sp[1]);
    printf("socketpair: %s\n", pair ? "fd passed" : strerror(errno));
    char path[sizeof shared.sun_path];
    snprintf(path, sizeof path, "%s/own.sock", dir);
    int r = bound(path, SOCK_DGRAM);
    struct sockaddr_un a = address(path);
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    bool own = pass_one(s, &a, r);
    printf("own socket: %s\n", own ? "fd passed" : strerror(errno));
    return pair && own ? 0 : 1;
}

static int
msg_stream(int mb)
{
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0)
        return 2;
    size_t total = (size_t)mb << 20, sent = 0;
    pid_t reader = fork();
    if (reader == 0) {
        close(sp[0]);
        static char in[65536];
        size_t got = 0;
        for (ssize_t n; (n = read(sp[1], in, sizeof in)) > 0;)
            got += (size_t)n;
        printf("msg-stream: %zu read\n", got);
        fflush(stdout);
        _exit(0);
    }
    close(sp[1]);
    static char out[65536];
    memset(out, 'x', sizeof out);
    while (sent < total) {
        size_t len = total - sent < sizeof out ? total - sent : sizeof out;
        struct iovec iov = {out, len};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
        ssize_t n = sendmsg(sp[0], &m, MSG_NOSIGNAL);
        if (n < 0) {
            printf("msg-stream: sendmsg: %s\n", strerror(errno));
            break;
        }
        sent += (size_t)n;
    }
    close(sp[0]);
    waitpid(reader, NULL, 0);
    printf("msg-stream: %zu of %zu bytes sent\n", sent, total);
    return sent == total ? 0 : 1;
}

static int
msg_bad_cmsg(void)
{
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) != 0)
        return 2;
    char text[] = "x";
    struct iovec iov = {text, 1};
    union {
        struct cmsghdr h;
        char room[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    u.h.cmsg_level = SOL_SOCKET;
    u.h.cmsg_type = SCM_RIGHTS;
    u.h.cmsg_len = 1 << 16; /* far past the buffer */
    memcpy(CMSG_DATA(&u.h), &sp[0], sizeof(int));
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.room, .msg_controllen = sizeof u.room};
    ssize_t n = sendmsg(sp[0], &m, 0);
    printf("bad cmsg: %s\n", n < 0 ? strerror(errno) : "sent");
    return 0;
}

static double
since_us(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return ((double)(t1.tv_sec - t0->tv_sec) * 1e9 + (double)(t1.tv_nsec - t0->tv_nsec)) / 1e3;
}

static int
msg_loop(const char *path, int n)
{
    struct sockaddr_un a = address(path);
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), sp[2];
    if (s < 0 || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) != 0)
        return 2;
    char buf[16];
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) {
        if (send_to(sp[0], NULL, NULL, 0) != 5 || recv(sp[1], buf, sizeof buf, 0) != 5) {
            fprintf(stderr, "sock-client: msg-loop: socketpair: %s\n", strerror(errno));
            return 1;
        }
    }
    printf("per sendmsg on a socketpair: %.2f us\n", since_us(&t0) / n);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) {
        if (send_to(s, &a, NULL, 0) != 5) {
            fprintf(stderr, "sock-client: msg-loop: %s: %s\n", path, strerror(errno));
            return 1;
        }
    }
    printf("per sendmsg to %s: %.2f us\n", path, since_us(&t0) / n);
    return 0;
}

static int
loop(const char *path, int n)
{
    struct sockaddr_un a = address(path);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) {
        if (banner_of(&a) == 0) {
            fprintf(stderr, "sock-client: %s: no banner\n", path);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3;
    printf("per connect: %.2f us\n", us / n);
    return 0;
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 5 && strcmp(argv[1], "serve") == 0)
        serve(argv[2], argv[3], argv[4]);
    if (argc == 4 && strcmp(argv[1], "serve-dgram") == 0)
        serve_dgram(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "connect") == 0)
        return connect_once(argv[2]);
    if (argc == 3 && strcmp(argv[1], "connect-thread") == 0)
        return connect_thread(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "exec-thread") == 0)
        return exec_thread(&argv[2]);
    if (argc == 3 && strcmp(argv[1], "dgram") == 0)
        return dgram(argv[2]);
    if (argc == 5 && strcmp(argv[1], "race") == 0)
        return race(argv[2], argv[3], atoi(argv[4]));
    if (argc == 4 && strcmp(argv[1], "race-fd") == 0)
        return race_fd(argv[2], atoi(argv[3]));
    if (argc == 4 && strcmp(argv[1], "loop") == 0)
        return loop(argv[2], atoi(argv[3]));
    if (argc == 3 && strcmp(argv[1], "msg") == 0)
        return msg(argv[2]);
    if (argc == 4 && strcmp(argv[1], "msg-race") == 0)
        return msg_race(argv[2], atoi(argv[3]));
    if (argc == 3 && strcmp(argv[1], "pass-fd") == 0)
        return pass_fd(argv[2]);
    if (argc == 2 && strcmp(argv[1], "msg-bad-cmsg") == 0)
        return msg_bad_cmsg();
    if (argc == 3 && strcmp(argv[1], "msg-stream") == 0)
        return msg_stream(atoi(argv[2]));
    if (argc == 4 && strcmp(argv[1], "msg-loop") == 0)
        return msg_loop(argv[2], atoi(argv[3]));
    if (argc == 6 && strcmp(argv[1], "race-rename") == 0)
        return race_rename(argv[2], argv[3], argv[4], atoi(argv[5]));
    fprintf(stderr, "usage: see tests/integration/unix-sockets/sock-client.c\n");
    return 2;
}
