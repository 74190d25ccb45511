/*
 * execgate-wrapper FILE ARGV0 ARGV1...
 *
 * The patched Bash runs this in place of every program it starts. It asks
 * the server (over the datagram socket named by CODEX_ESCALATE_SOCKET) what
 * to do with FILE and then execs it in place (Run), hands its fds to the
 * server and waits for the program the server runs (Escalate), or refuses
 * (Deny). Every path that is not an explicit decision exits non-zero: the
 * default is to refuse. See docs/escalation-protocol.md.
 */
#include "execgate-config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "esc_io.h"
#include "esc_proto.h"

#define PROG "execgate-wrapper"

/* Exit status of every failure of the wrapper itself (no socket, protocol
 * error, lost server): Bash's "found but could not be executed". */
#define EXIT_WRAPPER_FAILED 126
#define EXIT_NOT_FOUND      127
#define EXIT_DENIED         1

/* Shell used for a Run of a script without "#!" (see run_in_place). */
#define FALLBACK_SCRIPT_SHELL "/bin/sh"

extern char **environ;

/* Prints "execgate-wrapper: MESSAGE[: strerror(errnum)]" and exits. */
static noreturn void die(int status, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static noreturn void
die(int status, int errnum, const char *fmt, ...)
{
    va_list ap;
    fputs(PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (errnum != 0)
        fprintf(stderr, ": %s", strerror(errnum));
    fputc('\n', stderr);
    exit(status);
}

static void
usage(FILE *out)
{
    fprintf(out, "usage: " PROG " FILE ARGV0 [ARGV1...]\n"
                 "       " PROG " --help | --version\n"
                 "Asks the execgate server (socket fd in CODEX_ESCALATE_SOCKET) whether FILE\n"
                 "may run, then runs it in place, has the server run it, or refuses.\n");
}

/* The call's escalation socket: a datagram Unix socket inherited from the
 * server through Bash. Anything else is refused before a byte is sent. */
static int
escalate_socket(const char *file)
{
    const char *s = getenv("CODEX_ESCALATE_SOCKET");
    if (s == NULL || *s == '\0')
        die(EXIT_WRAPPER_FAILED, 0,
            "CODEX_ESCALATE_SOCKET is not set: refusing to run %s without the "
            "server's decision",
            file);
    char *end;
    errno = 0;
    long fd = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || end == s || fd < 0 || fd > INT_MAX)
        die(EXIT_WRAPPER_FAILED, 0, "CODEX_ESCALATE_SOCKET=%s is not an fd number", s);
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
        die(EXIT_WRAPPER_FAILED, errno,
            "cannot reach the execgate server (CODEX_ESCALATE_SOCKET=%ld): refusing to run %s", fd,
            file);
    if (type != SOCK_DGRAM)
        die(EXIT_WRAPPER_FAILED, 0,
            "CODEX_ESCALATE_SOCKET=%ld is not a datagram socket: refusing to run %s", fd, file);
    return (int)fd;
}

/* The REQUEST frame for this exec, encoded into *frame. */
static void
encode_request(struct esc_buf *frame, const char *file, char **args, int nargs)
{
    char *cwd = getcwd(NULL, 0);
    if (cwd == NULL)
        die(EXIT_WRAPPER_FAILED, errno, "cannot determine the current directory for %s", file);
    size_t envc = 0;
    while (environ[envc] != NULL)
        envc++;
    struct esc_msg req = {.type = ESC_MSG_REQUEST};
    req.u.request = (struct esc_request){
        .file = (char *)file,
        .argv = args,
        .argc = (size_t)nargs,
        .workdir = cwd,
        .env = environ,
        .envc = envc,
    };
    const char *why = NULL;
    int rc = esc_msg_encode(&req, frame, &why);
    free(cwd);
    if (rc < 0 && why != NULL)
        die(EXIT_WRAPPER_FAILED, 0, "cannot ask about %s: %s", file, why);
    if (rc < 0)
        die(EXIT_WRAPPER_FAILED, -rc, "cannot ask about %s", file);
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
        die(EXIT_WRAPPER_FAILED, errno, "socketpair");
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
        die(EXIT_WRAPPER_FAILED, -rc, "cannot reach the execgate server: refusing to run %s", file);
    close(pair[1]);
    if (on_stream && (rc = esc_io_send_all(pair[0], request->data, request->len, NULL, 0)) < 0)
        die(EXIT_WRAPPER_FAILED, -rc, "lost the execgate server while asking about %s", file);
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
        die(EXIT_WRAPPER_FAILED, 0, "the execgate server sent fds %s (%s)", when, file);
    }
    esc_buf_free(in);
    if (rc == 0)
        die(EXIT_WRAPPER_FAILED, 0, "the execgate server closed the connection %s (%s)", when,
            file);
    die(EXIT_WRAPPER_FAILED, 0, "bad message from the execgate server %s (%s): %s: %s", when, file,
        why ? why : "receive failed", strerror(-rc));
}

/* Bash's test for "binary": an ELF header, or a NUL before the first
 * newline of the first 80 bytes. */
static int
looks_binary(const char *file)
{
    char sample[80];
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, sample, sizeof sample);
    close(fd);
    static const char elf_magic[4] = {0x7f, 'E', 'L', 'F'};
    if (n >= 4 && memcmp(sample, elf_magic, sizeof elf_magic) == 0)
        return 1;
    for (ssize_t i = 0; i < n; i++) {
        if (sample[i] == '\n')
            return 0;
        if (sample[i] == '\0')
            return 1;
    }
    return 0;
}

/* A script without "#!" runs the way Bash runs one: with a shell. The
 * patched Bash (EXECGATE_BASH, set by the server) keeps its execs wrapped;
 * without it, /bin/sh as execvp(3) would. $0 becomes FILE. */
static noreturn void
run_script(const char *file, char **args, int nargs)
{
    const char *sh = getenv("EXECGATE_BASH");
    if (sh == NULL || sh[0] != '/')
        sh = FALLBACK_SCRIPT_SHELL;
    char **v = calloc((size_t)nargs + 2, sizeof *v);
    if (v == NULL)
        die(EXIT_WRAPPER_FAILED, ENOMEM, "%s", file);
    v[0] = (char *)sh;
    v[1] = (char *)file;
    for (int i = 1; i < nargs; i++)
        v[i + 1] = args[i];
    execv(sh, v);
    int err = errno;
    free(v);
    die(err == ENOENT ? EXIT_NOT_FOUND : EXIT_WRAPPER_FAILED, err,
        "%s: cannot run the script with %s", file, sh);
}

/* Run: become the program, as Bash's own execve would have. */
static noreturn void
run_in_place(const char *file, char **args, int nargs)
{
    execv(file, args);
    int err = errno;
    struct stat st;
    int exists = stat(file, &st) == 0;
    if (err == ENOEXEC && !looks_binary(file))
        run_script(file, args, nargs);
    if (err == ENOEXEC)
        die(EXIT_WRAPPER_FAILED, err, "%s: cannot execute binary file", file);
    if (err == ENOENT && exists)
        die(EXIT_NOT_FOUND, 0, "%s: cannot execute: required file not found", file);
    if (err == ENOENT)
        die(EXIT_NOT_FOUND, err, "%s", file);
    if (exists && S_ISDIR(st.st_mode))
        die(EXIT_WRAPPER_FAILED, EISDIR, "%s", file);
    die(EXIT_WRAPPER_FAILED, err, "%s", file);
}

/* Every fd this process holds except the protocol's own, ascending. */
static size_t
collect_fds(int *out, const int *skip, size_t nskip)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/fd");
    int dfd = d ? dirfd(d) : -1;
    for (int fd = 0; d == NULL && fd < ESC_MAX_FD_NUMBER; fd++) {
        if (fcntl(fd, F_GETFD) < 0)
            continue;
        int mine = 0;
        for (size_t k = 0; k < nskip; k++)
            mine |= skip[k] == fd;
        if (!mine && n >= ESC_MAX_FDS)
            die(EXIT_WRAPPER_FAILED, 0, "more than %u open fds to forward", ESC_MAX_FDS);
        if (!mine)
            out[n++] = fd;
    }
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        int fd = atoi(e->d_name);
        int mine = fd == dfd;
        for (size_t k = 0; k < nskip; k++)
            mine |= skip[k] == fd;
        if (mine)
            continue;
        if (fd >= ESC_MAX_FD_NUMBER)
            die(EXIT_WRAPPER_FAILED, 0, "fd %d is above the forwarding limit %d", fd,
                ESC_MAX_FD_NUMBER - 1);
        if (n >= ESC_MAX_FDS)
            die(EXIT_WRAPPER_FAILED, 0, "more than %u open fds to forward", ESC_MAX_FDS);
        out[n++] = fd;
    }
    if (d != NULL)
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
        exit(m->u.exit.value);
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
    exit(128 + sig);
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
    static const int forwarded[] = {SIGHUP, SIGINT, SIGTERM};
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) {
        struct sigaction old;
        if (sigaction(forwarded[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaddset(&set, forwarded[i]);
    }
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        die(EXIT_WRAPPER_FAILED, errno, "sigprocmask");
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd < 0)
        die(EXIT_WRAPPER_FAILED, errno, "signalfd");

    int fds[ESC_MAX_FDS];
    int skip[] = {dgram, stream, sfd};
    size_t n = collect_fds(fds, skip, sizeof skip / sizeof skip[0]);
    struct esc_msg m = {.type = ESC_MSG_FDS, .u.fds = {.targets = fds, .count = n}};
    int rc = esc_io_send_msg(stream, &m, fds, n, NULL);
    if (rc < 0)
        die(EXIT_WRAPPER_FAILED, -rc, "cannot hand %s to the execgate server", file);
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
            die(EXIT_WRAPPER_FAILED, errno, "poll");
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
        die(EXIT_WRAPPER_FAILED, 0, "the execgate server sent %s while %s ran escalated", what,
            file);
    }
}

int
main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf(PROG " %s\n", EXECGATE_VERSION);
        return 0;
    }
    if (argc < 3) {
        usage(stderr);
        return 2;
    }
    const char *file = argv[1];
    char **args = argv + 2;
    int nargs = argc - 2;

    int dgram = escalate_socket(file);
    struct esc_buf request = {0};
    encode_request(&request, file, args, nargs);
    int stream = open_session(dgram, &request, file);
    esc_buf_free(&request);

    struct esc_buf in = {0};
    struct esc_msg reply;
    recv_or_die(stream, &in, &reply, file, "before deciding");
    switch (reply.type) {
    case ESC_MSG_RUN:
        esc_buf_free(&in);
        close(stream);
        run_in_place(file, args, nargs);
    case ESC_MSG_ESCALATE:
        escalate(dgram, stream, &in, file);
    case ESC_MSG_DENY:
        fprintf(stderr, "Execution denied: %s\n", reply.u.deny_reason);
        esc_msg_free(&reply);
        esc_buf_free(&in);
        return EXIT_DENIED;
    default: {
        const char *what = esc_msg_type_name(reply.type);
        esc_msg_free(&reply);
        esc_buf_free(&in);
        die(EXIT_WRAPPER_FAILED, 0,
            "the execgate server sent %s where a decision was expected: refusing to run %s", what,
            file);
    }
    }
}
