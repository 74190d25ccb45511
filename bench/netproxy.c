/*
 * bench-netproxy MEGABYTES ROUNDS TUNNELS: the network proxy's throughput
 * and memory.
 *
 * A source process (forked) sends MEGABYTES to each connection on one
 * port and holds connections open on another; a client process (forked)
 * reads MEGABYTES from the source directly and then through a CONNECT
 * tunnel of the proxy, ROUNDS times each, alternating; the proxy runs on
 * this process's libuv loop, as in the server.  Then the client opens
 * TUNNELS tunnels to the holding port at once and this process's resident
 * memory is read before and while they are open.  Prints the median
 * throughput of each path, their ratio (tunnel / direct) and the memory
 * the tunnels added; asserts nothing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "bench/timing.h"
#include "rules/policy.h"
#include "server/net/netproxy.h"

#define CHUNK (256 * 1024)

static void
die(const char *what)
{
    perror(what);
    exit(1);
}

static int
listen_loopback(unsigned *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1024) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        die("listen");
    *port = ntohs(a.sin_port);
    return fd;
}

static int
connect_loopback(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        die("connect");
    return fd;
}

/* The source: sends `bytes` to each connection on send_fd, one at a time
 * (the client asks for one at a time), and keeps hold_fd's open. */
static void
source(int send_fd, int hold_fd, size_t bytes)
{
    char *buf = calloc(1, CHUNK);
    struct pollfd p[2] = {{send_fd, POLLIN, 0}, {hold_fd, POLLIN, 0}};
    for (;;) {
        if (poll(p, 2, -1) < 0)
            die("poll");
        if (p[1].revents & POLLIN) {
            if (accept4(hold_fd, NULL, NULL, SOCK_CLOEXEC) < 0)
                die("accept");
        }
        if (p[0].revents & POLLIN) {
            int c = accept4(send_fd, NULL, NULL, SOCK_CLOEXEC);
            for (size_t sent = 0; c >= 0 && sent < bytes;) {
                size_t n = bytes - sent < CHUNK ? bytes - sent : CHUNK;
                ssize_t w = write(c, buf, n);
                if (w <= 0)
                    break;
                sent += (size_t)w;
            }
            if (c >= 0)
                close(c);
        }
    }
}

/* Reads the CONNECT answer's head; returns 0 when it was 200. */
static int
read_connect_reply(int fd)
{
    char head[256];
    size_t n = 0;
    while (n < sizeof head - 1) {
        ssize_t r = read(fd, head + n, 1);
        if (r <= 0)
            return -1;
        n++;
        head[n] = '\0';
        if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
            return strncmp(head, "HTTP/1.1 200", 12) == 0 ? 0 : -1;
    }
    return -1;
}

static int
tunnel(unsigned proxy_port, unsigned dest_port)
{
    int fd = connect_loopback(proxy_port);
    char req[128];
    int n = snprintf(req, sizeof req, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", dest_port);
    if (write(fd, req, (size_t)n) != n || read_connect_reply(fd) != 0)
        die("CONNECT");
    return fd;
}

/* Reads everything; returns MB/s. */
static double
drain(int fd, size_t bytes)
{
    char *buf = malloc(CHUNK);
    double t0 = now_ms();
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd, buf, CHUNK)) > 0)
        got += (size_t)r;
    double ms = now_ms() - t0;
    free(buf);
    close(fd);
    if (got != bytes) {
        fprintf(stderr, "read %zu bytes of %zu\n", got, bytes);
        exit(1);
    }
    return (double)bytes / (1024.0 * 1024.0) / (ms / 1000.0);
}

/* The client: throughput rounds, then the tunnels held open while the
 * parent reads its memory (one byte on report: "measure now"; then it
 * waits for the parent's byte on go). */
static void
client(unsigned proxy_port, unsigned send_port, unsigned hold_port, size_t bytes, int rounds,
       int tunnels, int report, int go)
{
    double direct[64], through[64];
    for (int i = 0; i < rounds; i++) {
        direct[i] = drain(connect_loopback(send_port), bytes);
        through[i] = drain(tunnel(proxy_port, send_port), bytes);
    }
    double d = median(direct, rounds), t = median(through, rounds);
    printf("download of %zu MB, median of %d rounds:\n", bytes >> 20, rounds);
    printf("  direct loopback copy   %8.0f MB/s\n", d);
    printf("  through CONNECT tunnel %8.0f MB/s\n", t);
    printf("  ratio tunnel/direct    %8.2f\n", t / d);
    fflush(stdout);
    int *fds = malloc(sizeof *fds * (size_t)tunnels);
    for (int i = 0; i < tunnels; i++)
        fds[i] = tunnel(proxy_port, hold_port);
    char x = 'm';
    if (write(report, &x, 1) != 1 || read(go, &x, 1) != 1)
        die("client pipe");
    for (int i = 0; i < tunnels; i++)
        close(fds[i]);
    free(fds);
    exit(0);
}

static long
rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

/* This process's CPU time (user + system), ms. */
static double
cpu_ms(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

struct state {
    int go;
    double cpu0;
    size_t megabytes;
    int rounds;
    long before_kb;
    int tunnels;
    struct netproxy *proxy;
};

static const struct rules_policy *rules;

static const struct rules_policy *
policy(void *arg)
{
    (void)arg;
    return rules;
}

static void
on_report(uv_poll_t *p, int status, int events)
{
    struct state *st = p->data;
    (void)status;
    (void)events;
    char x;
    if (read(p->io_watcher.fd, &x, 1) != 1) {
        uv_poll_stop(p);
        uv_stop(p->loop);
        return;
    }
    printf("  proxy CPU per 100 MB   %8.1f ms (user+system, the tunnels' share)\n",
           (cpu_ms() - st->cpu0) / ((double)st->megabytes * st->rounds / 100.0));
    long now = rss_kb();
    printf("%d tunnels open: %zu connections, RSS +%.2f MB (%ld kB -> %ld kB)\n", st->tunnels,
           netproxy_conn_count(st->proxy), (double)(now - st->before_kb) / 1024.0, st->before_kb,
           now);
    fflush(stdout);
    if (write(st->go, "g", 1) != 1)
        die("go");
}

int
main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench-netproxy MEGABYTES ROUNDS TUNNELS\n");
        return 2;
    }
    size_t bytes = (size_t)atol(argv[1]) << 20;
    int rounds = atoi(argv[2]), tunnels = atoi(argv[3]);
    if (rounds < 1 || rounds > 64 || tunnels < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    unsigned send_port, hold_port, proxy_port;
    int send_fd = listen_loopback(&send_port), hold_fd = listen_loopback(&hold_port);
    pid_t src = fork();
    if (src == 0)
        source(send_fd, hold_fd, bytes);
    close(send_fd);
    close(hold_fd);

    struct rules_policy *p = rules_policy_new();
    rules_policy_add_network_rule(p, "127.0.0.1", "https", RULES_DECISION_ALLOW, NULL);
    rules = p;
    uv_loop_t *loop = uv_default_loop();
    const struct netproxy_hooks hooks = {.policy = policy};
    struct netproxy *proxy = netproxy_new(loop, &hooks);
    struct netproxy_listener *l;
    char *why = NULL;
    int pfd = listen_loopback(&proxy_port);
    if (!proxy || netproxy_listen_fd(proxy, pfd, "bench", "bench", NULL, NULL, &l, &why) != 0)
        die(why ? why : "proxy");

    int report[2], go[2];
    if (pipe2(report, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0)
        die("pipe");
    /* settle the allocator's first use before the baseline */
    uv_run(loop, UV_RUN_NOWAIT);
    struct state st = {.go = go[1],
                       .tunnels = tunnels,
                       .proxy = proxy,
                       .megabytes = bytes >> 20,
                       .rounds = rounds};
    st.before_kb = rss_kb();
    st.cpu0 = cpu_ms();
    pid_t cl = fork();
    if (cl == 0)
        client(proxy_port, send_port, hold_port, bytes, rounds, tunnels, report[1], go[0]);
    close(report[1]);
    close(go[0]);
    uv_poll_t poll_h;
    uv_poll_init(loop, &poll_h, report[0]);
    poll_h.data = &st;
    uv_poll_start(&poll_h, UV_READABLE | UV_DISCONNECT, on_report);
    uv_run(loop, UV_RUN_DEFAULT);
    int status;
    waitpid(cl, &status, 0);
    kill(src, SIGKILL);
    waitpid(src, &status, 0);
    uv_close((uv_handle_t *)&poll_h, NULL);
    netproxy_free(proxy);
    uv_run(loop, UV_RUN_DEFAULT);
    rules_policy_free(p);
    return 0;
}
