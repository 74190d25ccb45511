/*
 * esc_client: one exec's session with the server (see esc_client.h and
 * docs/escalation-protocol.md). Everything here may run inside the patched
 * Bash, so it leaves the shell's state alone: no exit(3) (the shell's
 * atexit handlers and stdio buffers are not ours), no environ (the
 * program's environment is the one passed in), and it exits or returns
 * with nothing of its own left open.
 */
#include "proto/esc_client.h"
#include "proto/esc_env.h"
#include "common/macros.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/esc_io.h"
#include "proto/esc_proto.h"

noreturn void
esc_client_die(int status, int errnum, const char *fmt, ...)
{
    va_list ap;
    fputs(ESC_CLIENT_PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (errnum != 0)
        fprintf(stderr, ": %s", strerror(errnum));
    fputc('\n', stderr);
    fflush(stderr);
    _exit(status);
}

/* The value of NAME in env, or NULL. */
static const char *
env_value(char *const *env, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
        if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
            return env[i] + len + 1;
    }
    return NULL;
}

/* The call's escalation socket: a datagram Unix socket inherited from the
 * server through Bash. Anything else is refused before a byte is sent. */
static int
escalate_socket(const char *file, char *const *env)
{
    const char *s = env_value(env, ESC_ENV_SOCKET);
    if (s == NULL || *s == '\0')
        esc_client_die(ESC_CLIENT_EXIT_FAILED, 0,
                       ESC_ENV_SOCKET " is not set: refusing to run %s without the "
                                      "server's decision",
                       file);
    char *end;
    errno = 0;
    long fd = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || end == s || fd < 0 || fd > INT_MAX)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, 0, ESC_ENV_SOCKET "=%s is not an fd number", s);
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, errno,
                       "cannot reach the execgate server (" ESC_ENV_SOCKET "=%ld): refusing "
                       "to run %s",
                       fd, file);
    if (type != SOCK_DGRAM)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, 0,
                       ESC_ENV_SOCKET "=%ld is not a datagram socket: refusing to run %s", fd,
                       file);
    return (int)fd;
}

/* The REQUEST frame for this exec, encoded into *frame. The codec only
 * reads the strings; its struct is not const because decoding fills it. */
static void
encode_request(struct esc_buf *frame, const char *file, char *const *args, char *const *env)
{
    char *cwd = getcwd(NULL, 0);
    if (cwd == NULL)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, errno,
                       "cannot determine the current directory for %s", file);
    size_t argc = 0, envc = 0;
    while (args[argc] != NULL)
        argc++;
    while (env != NULL && env[envc] != NULL)
        envc++;
    static char *no_env[] = {NULL};
    struct esc_msg req = {.type = ESC_MSG_REQUEST};
    req.u.request = (struct esc_request){
        .file = (char *)file,
        .argv = (char **)args,
        .argc = argc,
        .workdir = cwd,
        .env = env != NULL ? (char **)env : no_env,
        .envc = envc,
    };
    const char *why = NULL;
    int rc = esc_msg_encode(&req, frame, &why);
    free(cwd);
    if (rc < 0 && why != NULL)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, 0, "cannot ask about %s: %s", file, why);
    if (rc < 0)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, -rc, "cannot ask about %s", file);
}

/* Opens this exec's session and asks: a stream pair whose far end goes to
 * the server attached to the REQUEST datagram, or, for a request too large
 * for one datagram, attached to a HELLO, the REQUEST following on the
 * stream. Returns our end (close-on-exec). */
static int
open_session(int dgram, const struct esc_buf *request, const char *file)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, errno, "socketpair");
    int rc = -EMSGSIZE;
    if (request->len <= ESC_MAX_DGRAM)
        rc = esc_io_send_all(dgram, request->data, request->len, &pair[1], 1);
    /* EMSGSIZE: larger than the socket's send buffer allows for one
     * datagram; the stream has no such limit */
    int on_stream = rc == -EMSGSIZE;
    if (on_stream) {
        struct esc_msg hello = {.type = ESC_MSG_HELLO};
        rc = esc_io_send_msg(dgram, &hello, &pair[1], 1, NULL);
    }
    if (rc < 0)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, -rc,
                       "cannot reach the execgate server: refusing to run %s", file);
    close(pair[1]);
    if (on_stream && (rc = esc_io_send_all(pair[0], request->data, request->len, NULL, 0)) < 0)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, -rc,
                       "lost the execgate server while asking about %s", file);
    return pair[0];
}

/* Waits for the next frame from the server; anything but a frame is fatal
 * (the program has not been approved, or its status is unknown). */
static void
recv_or_die(int stream, struct esc_buf *in, struct esc_msg *msg, const char *file, const char *when)
{
    struct esc_fdlist fds = {.count = 0};
    const char *why = NULL;
    int rc = esc_io_recv_msg(stream, in, msg, &fds, &why);
    if (rc == 1 && fds.count == 0)
        return;
    esc_fdlist_close(&fds);
    if (rc == 1) {
        esc_msg_free(msg);
        esc_client_die(ESC_CLIENT_EXIT_FAILED, 0, "the execgate server sent fds %s (%s)", when,
                       file);
    }
    esc_buf_free(in);
    if (rc == 0)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, 0,
                       "the execgate server closed the connection %s (%s)", when, file);
    esc_client_die(ESC_CLIENT_EXIT_FAILED, 0,
                   "bad message from the execgate server %s (%s): %s: %s", when, file,
                   why ? why : "receive failed", strerror(-rc));
}

/* Whether fd is one an exec would keep, and not one of skip[]. */
static int
forwarded_fd(int fd, const int *skip, size_t nskip)
{
    for (size_t k = 0; k < nskip; k++) {
        if (skip[k] == fd)
            return 0;
    }
    int flags = fcntl(fd, F_GETFD);
    return flags >= 0 && !(flags & FD_CLOEXEC);
}

/* Appends fd to out[*n], or dies when past the protocol's limits. */
static void
add_fd(int *out, size_t *n, int fd)
{
    if (fd >= ESC_MAX_FD_NUMBER)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, 0, "fd %d is above the forwarding limit %d", fd,
                       ESC_MAX_FD_NUMBER - 1);
    if (*n >= ESC_MAX_FDS)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, 0, "more than %u open fds to forward", ESC_MAX_FDS);
    out[(*n)++] = fd;
}

/* Every fd an exec would keep, except the protocol's own, ascending:
 * what the escalated program is to find open. */
static size_t
collect_fds(int *out, const int *skip, size_t nskip)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) {
        for (int fd = 0; fd < ESC_MAX_FD_NUMBER; fd++) {
            if (forwarded_fd(fd, skip, nskip))
                add_fd(out, &n, fd);
        }
        return n;
    }
    /* the directory's own fd is close-on-exec, so it is skipped too */
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        int fd = atoi(e->d_name);
        if (forwarded_fd(fd, skip, nskip))
            add_fd(out, &n, fd);
    }
    closedir(d);
    return n;
}

/* Ends this process the way the escalated program ended, so the calling
 * Bash sees the same $? and the same reaction (a SIGINT death stops a
 * script, a SIGPIPE one is quiet): a signal is re-raised on ourselves; if
 * it does not kill us (its default is to ignore or stop), 128+n. */
static noreturn void
exit_like(const struct esc_msg *m)
{
    if (m->u.exit.kind == ESC_EXIT_CODE)
        _exit(m->u.exit.value);
    int sig = m->u.exit.value;
    struct rlimit no_core = {0, 0};
    (void)setrlimit(RLIMIT_CORE, &no_core); /* our core would not be the program's */
    struct sigaction sa = {.sa_handler = SIG_DFL};
    sigemptyset(&sa.sa_mask);
    (void)sigaction(sig, &sa, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    (void)sigprocmask(SIG_UNBLOCK, &set, NULL);
    (void)raise(sig);
    _exit(128 + sig);
}

/* Forwards one signal that arrived on the signalfd to the server. */
static void
forward_signal(int sfd, int stream)
{
    struct signalfd_siginfo si;
    ssize_t n = read(sfd, &si, sizeof si);
    if (n != (ssize_t)sizeof si)
        return;
    struct esc_msg m = {.type = ESC_MSG_SIGNAL, .u.signo = (int)si.ssi_signo};
    /* A lost server shows up as end of stream on the next read. */
    (void)esc_io_send_msg(stream, &m, NULL, 0, NULL);
}

/* Escalate: hand over our fds, forward signals, wait for the status. */
static noreturn void
escalate(int dgram, int stream, struct esc_buf *in, const char *file)
{
    /* A signal Bash told us to ignore (SIGINT for `cmd &` in a script) is
     * not the program's to receive either: only the others are forwarded. */
    static const int forwarded[] = {ESC_FORWARDED_SIGNALS};
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++) {
        struct sigaction old;
        if (sigaction(forwarded[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaddset(&set, forwarded[i]);
    }
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, errno, "sigprocmask");
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd < 0)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, errno, "signalfd");

    int fds[ESC_MAX_FDS];
    int skip[] = {dgram, stream, sfd};
    size_t n = collect_fds(fds, skip, ARRAY_SIZE(skip));
    struct esc_msg m = {.type = ESC_MSG_FDS, .u.fds = {.targets = fds, .count = n}};
    int rc = esc_io_send_msg(stream, &m, fds, n, NULL);
    if (rc < 0)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, -rc, "cannot hand %s to the execgate server", file);
    /* The program holds them now; our copies would keep a pipe open after
     * it closed its end. stderr stays for our own last words. */
    for (size_t i = 0; i < n; i++) {
        if (fds[i] != 2)
            close(fds[i]);
    }

    for (;;) {
        struct pollfd p[2] = {{.fd = stream, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            esc_client_die(ESC_CLIENT_EXIT_FAILED, errno, "poll");
        }
        if (p[1].revents & POLLIN)
            forward_signal(sfd, stream);
        if (p[0].revents == 0)
            continue;
        struct esc_msg reply;
        recv_or_die(stream, in, &reply, file, "while the escalated program ran");
        if (reply.type == ESC_MSG_EXIT) {
            esc_buf_free(in);
            exit_like(&reply);
        }
        const char *what = esc_msg_type_name(reply.type);
        esc_msg_free(&reply);
        esc_buf_free(in);
        esc_client_die(ESC_CLIENT_EXIT_FAILED, 0,
                       "the execgate server sent %s while %s ran escalated", what, file);
    }
}

void
esc_client_decide(const char *file, char *const *args, char *const *env)
{
    int dgram = escalate_socket(file, env);
    struct esc_buf request = {0};
    encode_request(&request, file, args, env);
    int stream = open_session(dgram, &request, file);
    esc_buf_free(&request);

    struct esc_buf in = {0};
    struct esc_msg reply;
    recv_or_die(stream, &in, &reply, file, "before deciding");
    switch (reply.type) {
    case ESC_MSG_RUN:
        /* a program a rule let out runs here after all: say why */
        if (reply.u.run_note) {
            fprintf(stderr, "execgate: %s\n", reply.u.run_note);
            fflush(stderr);
        }
        esc_msg_free(&reply);
        esc_buf_free(&in);
        close(stream);
        return;
    case ESC_MSG_ESCALATE:
        escalate(dgram, stream, &in, file);
    case ESC_MSG_DENY:
        fprintf(stderr, "Execution denied: %s\n", reply.u.deny_reason);
        fflush(stderr);
        esc_msg_free(&reply);
        esc_buf_free(&in);
        _exit(ESC_CLIENT_EXIT_DENIED);
    default: {
        const char *what = esc_msg_type_name(reply.type);
        esc_msg_free(&reply);
        esc_buf_free(&in);
        esc_client_die(ESC_CLIENT_EXIT_FAILED, 0,
                       "the execgate server sent %s where a decision was expected: refusing to "
                       "run %s",
                       what, file);
    }
    }
}
