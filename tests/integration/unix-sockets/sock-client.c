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
 *
 * Servers bind with mode 0666 (another user's client may connect) and
 * run until killed.  A PATH starting with '@' is an abstract name.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
    if (argc == 3 && strcmp(argv[1], "dgram") == 0)
        return dgram(argv[2]);
    if (argc == 5 && strcmp(argv[1], "race") == 0)
        return race(argv[2], argv[3], atoi(argv[4]));
    if (argc == 4 && strcmp(argv[1], "race-fd") == 0)
        return race_fd(argv[2], atoi(argv[3]));
    if (argc == 4 && strcmp(argv[1], "loop") == 0)
        return loop(argv[2], atoi(argv[3]));
    if (argc == 6 && strcmp(argv[1], "race-rename") == 0)
        return race_rename(argv[2], argv[3], argv[4], atoi(argv[5]));
    fprintf(stderr, "usage: see tests/integration/unix-sockets/sock-client.c\n");
    return 2;
}
