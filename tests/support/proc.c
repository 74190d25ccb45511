#include "tests/support/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct sink {
    char *buf;
    size_t len;
    size_t cap;
};

static void
sink_append(struct sink *s, const char *data, size_t n)
{
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n + 1)
            cap *= 2;
        char *grown = realloc(s->buf, cap);
        if (grown == NULL)
            abort();
        s->buf = grown;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    s->buf[s->len] = '\0';
}

/* Reads from fd into s; returns 0 on EOF, 1 if more may come. */
static int
drain(int fd, struct sink *s)
{
    char chunk[65536];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) {
        sink_append(s, chunk, (size_t)n);
        return 1;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 1;
    return 0;
}

static void
pump(int out_fd, int err_fd, int in_fd, const char *input, struct sink *out, struct sink *err)
{
    size_t in_off = 0, in_len = input ? strlen(input) : 0;
    struct pollfd pfd[3];

    for (;;) {
        nfds_t n = 0;
        if (out_fd >= 0)
            pfd[n++] = (struct pollfd){.fd = out_fd, .events = POLLIN};
        if (err_fd >= 0)
            pfd[n++] = (struct pollfd){.fd = err_fd, .events = POLLIN};
        if (in_fd >= 0)
            pfd[n++] = (struct pollfd){.fd = in_fd, .events = POLLOUT};
        if (n == 0)
            return;
        if (poll(pfd, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            abort();
        }
        for (nfds_t i = 0; i < n; i++) {
            if (pfd[i].revents == 0)
                continue;
            if (pfd[i].fd == out_fd && !drain(out_fd, out)) {
                close(out_fd);
                out_fd = -1;
            } else if (pfd[i].fd == err_fd && !drain(err_fd, err)) {
                close(err_fd);
                err_fd = -1;
            } else if (pfd[i].fd == in_fd) {
                ssize_t w = in_off < in_len ? write(in_fd, input + in_off, in_len - in_off) : 0;
                if (w > 0)
                    in_off += (size_t)w;
                if (w < 0 && errno != EINTR && errno != EAGAIN)
                    in_off = in_len;
                if (in_off >= in_len) {
                    close(in_fd);
                    in_fd = -1;
                }
            }
        }
    }
}

int
proc_run(const char *const *argv, const struct proc_options *opts, struct proc_result *res)
{
    static const struct proc_options defaults = {0};
    int out_pipe[2], err_pipe[2], in_pipe[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int rc;

    if (opts == NULL)
        opts = &defaults;
    memset(res, 0, sizeof *res);
    if (pipe2(out_pipe, O_CLOEXEC) < 0 || pipe2(err_pipe, O_CLOEXEC) < 0)
        abort();
    if (opts->input && pipe2(in_pipe, O_CLOEXEC) < 0)
        abort();

    posix_spawn_file_actions_init(&fa);
    if (opts->input)
        posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    if (opts->cwd)
        posix_spawn_file_actions_addchdir_np(&fa, opts->cwd);

    /* The test runner may ignore SIGPIPE; the child should not inherit that. */
    posix_spawnattr_t attr;
    sigset_t none, all;
    posix_spawnattr_init(&attr);
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    rc = posix_spawn(&pid, argv[0], &fa, &attr, (char *const *)argv,
                     opts->envp ? (char *const *)opts->envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (opts->input)
        close(in_pipe[0]);
    if (rc != 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        if (opts->input)
            close(in_pipe[1]);
        return -rc;
    }

    struct sink out = {0}, err = {0};
    sink_append(&out, "", 0);
    sink_append(&err, "", 0);
    pump(out_pipe[0], err_pipe[0], opts->input ? in_pipe[1] : -1, opts->input, &out, &err);
    while (waitpid(pid, &res->status, 0) < 0) {
        if (errno != EINTR)
            abort();
    }
    res->out = out.buf;
    res->out_len = out.len;
    res->err = err.buf;
    res->err_len = err.len;
    return 0;
}

void
proc_result_free(struct proc_result *res)
{
    if (res == NULL)
        return;
    free(res->out);
    free(res->err);
    res->out = res->err = NULL;
}

int
proc_exit_code(const struct proc_result *res)
{
    if (WIFEXITED(res->status))
        return WEXITSTATUS(res->status);
    if (WIFSIGNALED(res->status))
        return 128 + WTERMSIG(res->status);
    return -1;
}

bool
proc_with_marker(const char *marker)
{
    DIR *d = opendir("/proc");
    if (!d)
        abort();
    bool found = false;
    struct dirent *e;
    size_t mlen = strlen(marker);
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        char buf[8192];
        size_t n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        for (size_t i = 0; i < n; i++) {
            if (buf[i] == '\0')
                buf[i] = ' ';
        }
        if (n >= mlen && memmem(buf, n, marker, mlen))
            found = true;
    }
    closedir(d);
    return found;
}

bool
proc_gone(const char *marker, int ms)
{
    for (int waited = 0; waited < ms; waited += 10) {
        if (!proc_with_marker(marker))
            return true;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return !proc_with_marker(marker);
}

int
proc_count_sleeps(const char *arg)
{
    char want[64];
    int wlen = snprintf(want, sizeof(want), "sleep%c%s%c", 0, arg, 0);
    DIR *d = opendir("/proc");
    if (d == NULL)
        abort(); /* a test that cannot read /proc can say nothing */
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char path[300], buf[128];
        snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof(buf));
        close(fd);
        if (n == wlen && memcmp(buf, want, (size_t)n) == 0)
            count++;
    }
    closedir(d);
    return count;
}

int
proc_wait_sleeps(const char *arg, bool more, int want, int ms)
{
    int n;
    for (int waited = 0;; waited += 20) {
        n = proc_count_sleeps(arg);
        if ((more && n >= want) || (!more && n <= want) || waited >= ms)
            return n;
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

char
proc_state(pid_t pid, pid_t *ppid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    /* the command name in parentheses may hold anything, ')' too */
    const char *end = strrchr(buf, ')');
    char state = '?';
    int parent = 0;
    if (!end || sscanf(end + 1, " %c %d", &state, &parent) != 2)
        return '?';
    if (ppid)
        *ppid = parent;
    return state;
}

long
proc_rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}
