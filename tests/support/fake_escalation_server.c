/*
 * fake_escalation_server: see the header. Blocking code on threads; the real
 * server does the same on its libuv loop.
 */
#include "tests/support/fake_escalation_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/esc_io.h"
#include "proto/esc_proto.h"

struct fake_esc_server {
    const struct fake_esc_rule *rules;
    size_t nrules;
    int dgram;   /* server end */
    int client;  /* wrapper end, inheritable */
    int wake[2]; /* stop signal for the listener */
    pthread_t listener;
    pthread_mutex_t lock;
    pthread_cond_t idle;
    size_t live;                       /* sessions still running */
    struct fake_esc_record **records;  /* grows: the benchmark makes many */
    char dgram_buf[ESC_MAX_DGRAM + 1]; /* the listener's */
    size_t nrecords, cap;
};

struct session {
    struct fake_esc_server *srv;
    int stream;
    struct esc_msg first; /* the first datagram: a HELLO or the REQUEST */
};

static void
die_test(const char *what)
{
    fprintf(stderr, "fake_escalation_server: %s: %s\n", what, strerror(errno));
    abort();
}

static char **
strvec_dup(char **v, size_t n)
{
    char **out = calloc(n + 1, sizeof *out);
    if (out == NULL)
        die_test("calloc");
    for (size_t i = 0; i < n; i++) {
        out[i] = strdup(v[i]);
        if (out[i] == NULL)
            die_test("strdup");
    }
    return out;
}

static void
strvec_free(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

static void
record_free(struct fake_esc_record *r)
{
    if (r == NULL)
        return;
    free(r->file);
    strvec_free(r->argv);
    free(r->workdir);
    strvec_free(r->env);
    free(r);
}

/* Makes a record visible to the test; called before the session's last
 * message so that it is there once the wrapper has finished. */
static void
publish(struct fake_esc_server *srv, struct fake_esc_record **rec)
{
    pthread_mutex_lock(&srv->lock);
    if (srv->nrecords == srv->cap) {
        srv->cap = srv->cap ? srv->cap * 2 : 64;
        srv->records = realloc(srv->records, srv->cap * sizeof *srv->records);
        if (srv->records == NULL)
            die_test("realloc");
    }
    srv->records[srv->nrecords++] = *rec;
    *rec = NULL;
    pthread_mutex_unlock(&srv->lock);
}

static const struct fake_esc_rule *
lookup(const struct fake_esc_server *srv, const char *file)
{
    const char *slash = strrchr(file, '/');
    const char *base = slash ? slash + 1 : file;
    for (size_t i = 0; i < srv->nrules; i++) {
        if (strcmp(srv->rules[i].basename, base) == 0)
            return &srv->rules[i];
    }
    return NULL;
}

static void
send_or_ignore(int stream, const struct esc_msg *m)
{
    /* The wrapper may be gone already; the test checks what it saw. */
    (void)esc_io_send_msg(stream, m, NULL, 0, NULL);
}

/* In the child: put fds[i] at targets[i], close everything else, run. Only
 * async-signal-safe calls: the parent has threads. */
static void
child_exec(const struct esc_request *req, const struct esc_fdlist *fds, const int *targets,
           size_t n)
{
    int base = 3;
    for (size_t i = 0; i < n; i++) {
        if (targets[i] >= base)
            base = targets[i] + 1;
        if (fds->fds[i] >= base)
            base = fds->fds[i] + 1;
    }
    int moved[ESC_MAX_FDS];
    for (size_t i = 0; i < n; i++) {
        moved[i] = fcntl(fds->fds[i], F_DUPFD_CLOEXEC, base);
        if (moved[i] < 0)
            _exit(125);
    }
    for (size_t i = 0; i < n; i++) {
        if (dup2(moved[i], targets[i]) < 0)
            _exit(125);
    }
    for (int fd = 0; fd < base + (int)n + 1; fd++) {
        int keep = 0;
        for (size_t i = 0; i < n; i++)
            keep |= targets[i] == fd;
        if (!keep)
            close(fd);
    }
    close_range((unsigned)(base + (int)n + 1), ~0u, 0);
    /* The program starts with default signal handling, as a real spawn
     * gives it, whatever this test process ignores. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (chdir(req->workdir) < 0)
        _exit(125);
    execve(req->file, req->argv, req->env);
    _exit(127);
}

/* Escalate: take the fds, run the program, forward signals, send EXIT. */
static void
escalate(struct session *s, const struct fake_esc_rule *rule, const struct esc_request *req,
         struct esc_buf *in, struct fake_esc_record **rec)
{
    struct esc_msg m = {.type = ESC_MSG_ESCALATE};
    send_or_ignore(s->stream, &m);
    struct esc_fdlist fds = {.count = 0};
    struct esc_msg fm = {0};
    if (esc_io_recv_msg(s->stream, in, &fm, &fds, NULL) != 1 || fm.type != ESC_MSG_FDS ||
        fm.u.fds.count != fds.count) {
        esc_msg_free(&fm);
        esc_fdlist_close(&fds);
        publish(s->srv, rec);
        return;
    }
    (*rec)->ntargets = fm.u.fds.count;
    memcpy((*rec)->targets, fm.u.fds.targets, fm.u.fds.count * sizeof(int));
    if (rule->action == FAKE_ESC_ESCALATE_HANGUP) {
        esc_msg_free(&fm);
        esc_fdlist_close(&fds);
        publish(s->srv, rec);
        return;
    }

    pid_t pid = fork();
    if (pid < 0)
        die_test("fork");
    if (pid == 0)
        child_exec(req, &fds, fm.u.fds.targets, fm.u.fds.count);
    esc_msg_free(&fm);
    esc_fdlist_close(&fds);
    (*rec)->program_pid = pid;
    int pfd = pidfd_open(pid, 0);
    if (pfd < 0)
        die_test("pidfd_open");
    if (rule->action == FAKE_ESC_ESCALATE_SIGNAL) {
        kill((*rec)->wrapper_pid, rule->signo);
        if (rule->signo2)
            kill((*rec)->wrapper_pid, rule->signo2);
    }

    int watch = s->stream;
    for (int running = 1; running;) {
        struct pollfd p[2] = {{.fd = pfd, .events = POLLIN}, {.fd = watch, .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            die_test("poll");
        if (p[0].revents)
            running = 0;
        if (running && p[1].revents) {
            struct esc_msg sm;
            if (esc_io_recv_msg(s->stream, in, &sm, &fds, NULL) != 1) {
                /* The wrapper is gone: its program goes with it. */
                kill(pid, SIGKILL);
                watch = -1;
                continue;
            }
            if (sm.type == ESC_MSG_SIGNAL && (*rec)->nsignals < 8) {
                (*rec)->signals[(*rec)->nsignals++] = sm.u.signo;
                kill(pid, sm.u.signo);
            }
            esc_msg_free(&sm);
            esc_fdlist_close(&fds);
        }
    }
    close(pfd);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            die_test("waitpid");
    }
    (*rec)->status = status;
    struct esc_msg em = {.type = ESC_MSG_EXIT};
    em.u.exit.kind = WIFSIGNALED(status) ? ESC_EXIT_SIGNAL : ESC_EXIT_CODE;
    em.u.exit.value = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
    publish(s->srv, rec);
    send_or_ignore(s->stream, &em);
}

static void
answer(struct session *s, const struct esc_request *req, struct esc_buf *in,
       struct fake_esc_record **rec)
{
    const struct fake_esc_rule *rule = lookup(s->srv, req->file);
    enum fake_esc_action action = rule ? rule->action : FAKE_ESC_RUN;
    (*rec)->action = action;
    struct esc_msg m = {.type = ESC_MSG_RUN};
    struct esc_buf raw = {0};
    switch (action) {
    case FAKE_ESC_RUN:
        publish(s->srv, rec);
        send_or_ignore(s->stream, &m);
        break;
    case FAKE_ESC_DENY:
        m.type = ESC_MSG_DENY;
        m.u.deny_reason = (char *)rule->reason;
        publish(s->srv, rec);
        send_or_ignore(s->stream, &m);
        break;
    case FAKE_ESC_HANGUP:
        publish(s->srv, rec);
        break;
    case FAKE_ESC_GARBAGE:
        publish(s->srv, rec);
        (void)esc_io_send_all(s->stream, "\x01\x02garbage, not a frame", 23, NULL, 0);
        break;
    case FAKE_ESC_BAD_VERSION:
        (void)esc_msg_encode(&m, &raw, NULL);
        raw.data[4] = 7; /* version 7 */
        publish(s->srv, rec);
        (void)esc_io_send_all(s->stream, raw.data, raw.len, NULL, 0);
        esc_buf_free(&raw);
        break;
    case FAKE_ESC_WRONG_REPLY:
        m.type = ESC_MSG_EXIT;
        m.u.exit.kind = ESC_EXIT_CODE;
        m.u.exit.value = 0;
        publish(s->srv, rec);
        send_or_ignore(s->stream, &m);
        break;
    case FAKE_ESC_ESCALATE:
    case FAKE_ESC_ESCALATE_HANGUP:
    case FAKE_ESC_ESCALATE_SIGNAL:
        escalate(s, rule, req, in, rec);
        break;
    }
}

static void *
session_main(void *arg)
{
    struct session *s = arg;
    struct fake_esc_server *srv = s->srv;
    struct esc_buf in = {0};
    struct esc_fdlist fds = {.count = 0};
    struct esc_msg m = s->first;
    int on_stream = m.type == ESC_MSG_HELLO;
    if (on_stream)
        esc_msg_free(&m);
    if ((!on_stream || esc_io_recv_msg(s->stream, &in, &m, &fds, NULL) == 1) &&
        m.type == ESC_MSG_REQUEST && fds.count == 0) {
        struct fake_esc_record *rec = calloc(1, sizeof *rec);
        if (rec == NULL)
            die_test("calloc");
        const struct esc_request *r = &m.u.request;
        rec->file = strdup(r->file);
        rec->argv = strvec_dup(r->argv, r->argc);
        rec->argc = r->argc;
        rec->workdir = strdup(r->workdir);
        rec->env = strvec_dup(r->env, r->envc);
        rec->request_on_stream = on_stream;
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(s->stream, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
            rec->wrapper_pid = cred.pid;
        answer(s, r, &in, &rec);
        record_free(rec);
    }
    esc_msg_free(&m);
    esc_fdlist_close(&fds);
    esc_buf_free(&in);
    close(s->stream);
    free(s);
    pthread_mutex_lock(&srv->lock);
    srv->live--;
    pthread_cond_broadcast(&srv->idle);
    pthread_mutex_unlock(&srv->lock);
    return NULL;
}

static void *
listener_main(void *arg)
{
    struct fake_esc_server *srv = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = srv->dgram, .events = POLLIN},
                              {.fd = srv->wake[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            die_test("poll");
        }
        if (p[1].revents)
            return NULL;
        int stream = -1;
        struct esc_msg first;
        if (esc_io_recv_hello(srv->dgram, srv->dgram_buf, sizeof srv->dgram_buf, &stream, &first,
                              NULL) != 1)
            continue;
        struct session *s = calloc(1, sizeof *s);
        if (s == NULL)
            die_test("calloc");
        s->srv = srv;
        s->stream = stream;
        s->first = first;
        pthread_mutex_lock(&srv->lock);
        srv->live++;
        pthread_mutex_unlock(&srv->lock);
        pthread_t t;
        if (pthread_create(&t, NULL, session_main, s) != 0)
            die_test("pthread_create");
        pthread_detach(t);
    }
}

struct fake_esc_server *
fake_esc_server_start(const struct fake_esc_rule *rules, size_t nrules, int *client_fd)
{
    struct fake_esc_server *srv = calloc(1, sizeof *srv);
    if (srv == NULL)
        die_test("calloc");
    srv->rules = rules;
    srv->nrules = nrules;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
        die_test("socketpair");
    srv->dgram = sv[0];
    srv->client = sv[1];
    /* The one fd made inheritable: the shell the test spawns gets it. */
    if (fcntl(srv->client, F_SETFD, 0) < 0)
        die_test("fcntl");
    if (pipe2(srv->wake, O_CLOEXEC) < 0)
        die_test("pipe2");
    pthread_mutex_init(&srv->lock, NULL);
    pthread_cond_init(&srv->idle, NULL);
    if (pthread_create(&srv->listener, NULL, listener_main, srv) != 0)
        die_test("pthread_create");
    *client_fd = srv->client;
    return srv;
}

void
fake_esc_server_stop(struct fake_esc_server *srv)
{
    if (srv == NULL)
        return;
    if (write(srv->wake[1], "x", 1) != 1)
        die_test("write");
    pthread_join(srv->listener, NULL);
    /* Closing the wrapper's end first lets a session blocked on a wrapper
     * that never speaks end once every holder is gone. */
    close(srv->client);
    pthread_mutex_lock(&srv->lock);
    while (srv->live > 0)
        pthread_cond_wait(&srv->idle, &srv->lock);
    pthread_mutex_unlock(&srv->lock);
    for (size_t i = 0; i < srv->nrecords; i++)
        record_free(srv->records[i]);
    free(srv->records);
    close(srv->dgram);
    close(srv->wake[0]);
    close(srv->wake[1]);
    pthread_mutex_destroy(&srv->lock);
    pthread_cond_destroy(&srv->idle);
    free(srv);
}

size_t
fake_esc_server_count(struct fake_esc_server *srv)
{
    pthread_mutex_lock(&srv->lock);
    size_t n = srv->nrecords;
    pthread_mutex_unlock(&srv->lock);
    return n;
}

const struct fake_esc_record *
fake_esc_server_record(struct fake_esc_server *srv, size_t i)
{
    pthread_mutex_lock(&srv->lock);
    const struct fake_esc_record *r = i < srv->nrecords ? srv->records[i] : NULL;
    pthread_mutex_unlock(&srv->lock);
    return r;
}

const struct fake_esc_record *
fake_esc_server_find(struct fake_esc_server *srv, const char *basename)
{
    const struct fake_esc_record *found = NULL;
    pthread_mutex_lock(&srv->lock);
    for (size_t i = 0; i < srv->nrecords && found == NULL; i++) {
        const char *slash = strrchr(srv->records[i]->file, '/');
        if (strcmp(slash ? slash + 1 : srv->records[i]->file, basename) == 0)
            found = srv->records[i];
    }
    pthread_mutex_unlock(&srv->lock);
    return found;
}
