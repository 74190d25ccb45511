#include "tests/support/mcp_client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct kept {
    json_t *msg;
    struct kept *next;
};

struct mcp_client {
    pid_t pid;
    int in_fd;  /* the server's stdin */
    int out_fd; /* the server's stdout */
    char *rx;
    size_t rx_len, rx_cap;
    bool eof;
    struct kept *kept, **kept_tail;
    long long next_id;
    bool reaped;
    int status;
};

static void
die(const char *what)
{
    fprintf(stderr, "mcp_client: %s: %s\n", what, strerror(errno));
    abort();
}

struct mcp_client *
mcp_client_start(const char *const *argv, const char *const *extra_env)
{
    struct mcp_client *c = calloc(1, sizeof(*c));
    if (!c)
        die("calloc");
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
        die("pipe2");
    size_t n_env = 0, n_extra = 0;
    while (environ[n_env])
        n_env++;
    while (extra_env && extra_env[n_extra])
        n_extra++;
    char **env = calloc(n_env + n_extra + 1, sizeof(char *));
    if (!env)
        die("calloc");
    memcpy(env, environ, n_env * sizeof(char *));
    for (size_t i = 0; i < n_extra; i++)
        env[n_env + i] = (char *)extra_env[i];
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
            _exit(127);
        execve(argv[0], (char *const *)argv, env);
        _exit(127);
    }
    free(env);
    close(in[0]);
    close(out[1]);
    c->pid = pid;
    c->in_fd = in[1];
    c->out_fd = out[0];
    fcntl(c->in_fd, F_SETFL, O_NONBLOCK);
    c->kept_tail = &c->kept;
    c->next_id = 1000;
    return c;
}

pid_t
mcp_client_pid(const struct mcp_client *c)
{
    return c->pid;
}

static long long
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads what is available into rx. */
static void
read_some(struct mcp_client *c)
{
    if (c->rx_cap - c->rx_len < 65536) {
        c->rx_cap = c->rx_cap ? c->rx_cap * 2 : 131072;
        c->rx = realloc(c->rx, c->rx_cap);
        if (!c->rx)
            die("realloc");
    }
    ssize_t n = read(c->out_fd, c->rx + c->rx_len, c->rx_cap - c->rx_len);
    if (n < 0 && errno != EINTR && errno != EAGAIN)
        die("read");
    if (n == 0)
        c->eof = true;
    if (n > 0)
        c->rx_len += (size_t)n;
}

/* Moves complete lines from rx to the kept list. */
static void
parse_lines(struct mcp_client *c)
{
    size_t start = 0;
    for (;;) {
        char *nl = memchr(c->rx + start, '\n', c->rx_len - start);
        if (!nl)
            break;
        size_t len = (size_t)(nl - (c->rx + start));
        json_error_t err;
        json_t *msg = json_loadb(c->rx + start, len, 0, &err);
        if (!msg) {
            fprintf(stderr, "mcp_client: server sent a line that is not JSON: %s\n", err.text);
            abort();
        }
        struct kept *k = malloc(sizeof(*k));
        if (!k)
            die("malloc");
        k->msg = msg;
        k->next = NULL;
        *c->kept_tail = k;
        c->kept_tail = &k->next;
        start += len + 1;
    }
    memmove(c->rx, c->rx + start, c->rx_len - start);
    c->rx_len -= start;
}

int
mcp_client_send_raw(struct mcp_client *c, const char *data, size_t len)
{
    while (len > 0) {
        struct pollfd p[2] = {{.fd = c->in_fd, .events = POLLOUT},
                              {.fd = c->out_fd, .events = POLLIN}};
        if (poll(p, c->eof ? 1 : 2, MCP_CLIENT_WAIT_MS) <= 0)
            die("poll (server neither reads nor writes)");
        if (!c->eof && (p[1].revents & (POLLIN | POLLHUP))) {
            read_some(c);
            parse_lines(c);
        }
        if (p[0].revents & (POLLERR | POLLHUP))
            return -1;
        if (p[0].revents & POLLOUT) {
            ssize_t n = write(c->in_fd, data, len);
            if (n < 0 && errno == EPIPE)
                return -1;
            if (n < 0 && errno != EAGAIN && errno != EINTR)
                die("write");
            if (n > 0) {
                data += n;
                len -= (size_t)n;
            }
        }
    }
    return 0;
}

int
mcp_client_send(struct mcp_client *c, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text)
        die("json_dumps");
    size_t len = strlen(text);
    text = realloc(text, len + 2);
    text[len] = '\n';
    int rc = mcp_client_send_raw(c, text, len + 1);
    free(text);
    return rc;
}

long long
mcp_client_send_request(struct mcp_client *c, const char *method, json_t *params)
{
    long long id = c->next_id++;
    json_t *msg =
        json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)id, "method", method);
    if (params)
        json_object_set_new(msg, "params", params);
    mcp_client_send(c, msg);
    return id;
}

typedef bool (*match_fn)(const json_t *msg, const void *arg);

static json_t *
take_kept(struct mcp_client *c, match_fn match, const void *arg)
{
    for (struct kept **kp = &c->kept; *kp; kp = &(*kp)->next) {
        if (match((*kp)->msg, arg)) {
            struct kept *k = *kp;
            *kp = k->next;
            if (c->kept_tail == &k->next)
                c->kept_tail = kp;
            json_t *msg = k->msg;
            free(k);
            return msg;
        }
    }
    return NULL;
}

static json_t *
wait_for(struct mcp_client *c, match_fn match, const void *arg, int timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        json_t *msg = take_kept(c, match, arg);
        if (msg || c->eof)
            return msg;
        long long left = deadline - now_ms();
        if (left <= 0)
            return NULL;
        struct pollfd p = {.fd = c->out_fd, .events = POLLIN};
        int rc = poll(&p, 1, (int)left);
        if (rc < 0 && errno != EINTR)
            die("poll");
        if (rc > 0) {
            read_some(c);
            parse_lines(c);
        }
    }
}

static bool
match_any(const json_t *msg, const void *arg)
{
    return true;
}

static bool
match_id(const json_t *msg, const void *arg)
{
    return !json_object_get(msg, "method") && json_equal(json_object_get(msg, "id"), arg);
}

static bool
match_method(const json_t *msg, const void *arg)
{
    const char *m = json_string_value(json_object_get(msg, "method"));
    return m && !json_object_get(msg, "id") && strcmp(m, arg) == 0;
}

json_t *
mcp_client_next(struct mcp_client *c, int timeout_ms)
{
    return wait_for(c, match_any, NULL, timeout_ms);
}

json_t *
mcp_client_response(struct mcp_client *c, const json_t *id, int timeout_ms)
{
    return wait_for(c, match_id, id, timeout_ms);
}

json_t *
mcp_client_notification(struct mcp_client *c, const char *method, int timeout_ms)
{
    return wait_for(c, match_method, method, timeout_ms);
}

json_t *
mcp_client_next_named(struct mcp_client *c, const char *method, int timeout_ms)
{
    for (;;) {
        json_t *msg = mcp_client_next(c, timeout_ms);
        const char *name = json_string_value(json_object_get(msg, "method"));
        if (!msg || (name && strcmp(name, method) == 0))
            return msg;
        json_decref(msg);
    }
}

json_t *
mcp_client_call(struct mcp_client *c, const char *method, json_t *params)
{
    long long id = mcp_client_send_request(c, method, params);
    json_t *jid = json_integer(id);
    json_t *answer = mcp_client_response(c, jid, MCP_CLIENT_WAIT_MS);
    json_decref(jid);
    return answer;
}

json_t *
mcp_client_initialize(struct mcp_client *c)
{
    json_t *answer = mcp_client_call(c, "initialize",
                                     json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion",
                                               "2025-06-18", "capabilities", "clientInfo", "name",
                                               "execgate-tests", "version", "1"));
    mcp_client_send(
        c, json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized"));
    return answer;
}

json_t *
mcp_client_shell(struct mcp_client *c, const char *command, const char *workdir)
{
    return mcp_client_call(c, "tools/call",
                           json_pack("{s:s, s:{s:s, s:s}}", "name", "shell", "arguments", "command",
                                     command, "workdir", workdir));
}

void
mcp_client_close_stdin(struct mcp_client *c)
{
    if (c->in_fd >= 0)
        close(c->in_fd);
    c->in_fd = -1;
}

int
mcp_client_wait_exit(struct mcp_client *c, int timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    while (!c->reaped) {
        /* keep draining its output so it can never block on a full pipe */
        if (!c->eof) {
            struct pollfd p = {.fd = c->out_fd, .events = POLLIN};
            if (poll(&p, 1, 20) > 0) {
                read_some(c);
                parse_lines(c);
            }
        } else {
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        pid_t r = waitpid(c->pid, &c->status, WNOHANG);
        if (r == c->pid)
            c->reaped = true;
        else if (now_ms() > deadline)
            return -1;
    }
    return c->status;
}

int
mcp_client_fd_count(const struct mcp_client *c)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)c->pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] != '.')
            n++;
    }
    closedir(d);
    return n;
}

int
mcp_client_fd_count_settled(const struct mcp_client *c)
{
    int last = mcp_client_fd_count(c), same = 0;
    for (int i = 0; i < 250 && same < 10; i++) {
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
        int now = mcp_client_fd_count(c);
        same = now == last ? same + 1 : 0;
        last = now;
    }
    return last;
}

void
mcp_client_free(struct mcp_client *c)
{
    if (!c)
        return;
    if (!c->reaped) {
        kill(c->pid, SIGKILL);
        waitpid(c->pid, &c->status, 0);
    }
    mcp_client_close_stdin(c);
    close(c->out_fd);
    while (c->kept) {
        struct kept *k = c->kept;
        c->kept = k->next;
        json_decref(k->msg);
        free(k);
    }
    free(c->rx);
    free(c);
}
