/*
 * helper: the setup sequence of execgate-sandbox.
 *
 * Order (as bubblewrap does it): signals reset, policy checks, then
 * no_new_privs, namespaces and mounts, chdir, Landlock, the report line, and
 * the seccomp filter as the very last step before execve, so that nothing
 * the helper itself does runs under the filter.  The mount namespace is
 * helper_mounts.c's, the PID namespace helper_pidns.c's (helper_run.h).
 */
#include "sandbox/helper.h"
#include "sandbox/helper_run.h"
#include "sandbox/policy/cmdline.h"
#include "sandbox/exec_filter.h"
#include "sandbox/filter.h"
#include "sandbox/landlock.h"
#include "sandbox/netns.h"
#include "sandbox/ns.h"
#include "sandbox/placeholder.h"
#include "sandbox/policy/policy.h"
#include "sandbox/protect.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fd_pass.h"
#include "common/sig_defaults.h"
#include "common/macros.h"
#include "common/write_all.h"

__attribute__((format(printf, 2, 0))) static void
vmessage(int errnum, const char *fmt, va_list ap)
{
    int saved = errnum;
    fputs("execgate-sandbox: ", stderr);
    vfprintf(stderr, fmt, ap);
    if (saved != 0)
        fprintf(stderr, ": %s", strerror(saved));
    fputc('\n', stderr);
}

noreturn void
sandbox_helper_die(int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(errnum, fmt, ap);
    va_end(ap);
    _exit(SANDBOX_EXIT_SETUP_FAILED);
}

noreturn void
sandbox_helper_die_status(int status, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(errnum, fmt, ap);
    va_end(ap);
    _exit(status);
}

void
sandbox_helper_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("execgate-sandbox: warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Set by sandbox_helper_prepare_parent in the launcher, seen by its
 * children (copies of its memory): the signals are at their defaults. */
static bool signals_default;

/* The spawner may have left signals blocked or ignored; the program must
 * start from defaults whatever they were.  The execve that started the
 * helper reset every caught signal already: the ignored ones are left.  A
 * launcher's child inherits the defaults its parent set once. */
static void
reset_signals(void)
{
    if (signals_default)
        return;
    sigset_t all;
    sigemptyset(&all);
    if (sigprocmask(SIG_SETMASK, &all, NULL) != 0)
        sandbox_helper_die(errno, "resetting the signal mask");
    sig_defaults_restore(false);
}

void
sandbox_helper_prepare_parent(void)
{
    reset_signals();
    signals_default = true;
    /* 0: from /dev/urandom, once; each child's first object keeps it */
    json_object_seed(0);
}

void
helper_fd_not_inherited(int fd, const char *option)
{
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0)
        sandbox_helper_die(errno, "%s %d", option, fd);
    if (fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0)
        sandbox_helper_die(errno, "%s %d: setting close-on-exec", option, fd);
}

/* The report fd must be open and must not leak into the program. */
static void
check_report_fd(int fd)
{
    if (fd < 0)
        return;
    if (fd <= 2)
        sandbox_helper_die(0, "--report-fd %d: must not be stdin, stdout or stderr", fd);
    helper_fd_not_inherited(fd, "--report-fd");
}

/* Writes all of text and a newline to fd. */
static void
write_line(int fd, const char *text)
{
    int rc = write_all(fd, text, strlen(text));
    if (rc == 0)
        rc = write_all(fd, "\n", 1);
    if (rc < 0)
        sandbox_helper_die(-rc, "writing the report to fd %d", fd);
}

static void
send_report(int fd, json_t *report)
{
    if (fd < 0)
        return;
    char *text = json_dumps(report, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text == NULL)
        sandbox_helper_die(ENOMEM, "encoding the report");
    /* A reader that went away must end in 125 with a message, not in a
     * silent SIGPIPE death: block it for the write, discard it after. */
    sigset_t pipe_sig, old;
    sigemptyset(&pipe_sig);
    sigaddset(&pipe_sig, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipe_sig, &old);
    write_line(fd, text);
    const struct timespec now = {0, 0};
    while (sigtimedwait(&pipe_sig, NULL, &now) > 0)
        ;
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(text);
}

static noreturn void exec_program(const char *file, char **argv, int report_fd);

/* PROGRAM could not be started (errno e).  While the report fd is open
 * (it is close-on-exec, so only until an execve succeeds) one more line
 * goes there, SANDBOX_REPORT_EXEC_ERROR and e, by which a reader tells this
 * 126 or 127 from PROGRAM's own; then the message, and 127 (not found) or
 * 126. */
static noreturn void
die_not_started(int report_fd, int e, const char *file)
{
    if (report_fd >= 0) {
        char line[64];
        int n = snprintf(line, sizeof line, SANDBOX_REPORT_EXEC_ERROR "%d}\n", e);
        /* a reader that went away: the status still says it */
        signal(SIGPIPE, SIG_IGN);
        if (n > 0 && write(report_fd, line, (size_t)n) < 0)
            sandbox_helper_warn("writing the report to fd %d: %s", report_fd, strerror(errno));
    }
    sandbox_helper_die_status(e == ENOENT || e == ENOTDIR ? 127 : 126, e, "%s", file);
}

/* exec-notify (docs/enforcement.md): the socket must be open, a
 * message-preserving one (the listener message is one datagram), and must
 * not leak into the program. */
static void
check_exec_notify_fd(const struct sandbox_helper_options *o)
{
    int fd = o->exec_notify_fd;
    if (fd < 0)
        return;
    if (fd <= 2 || fd == o->report_fd)
        sandbox_helper_die(0, "--exec-notify-fd %d: must not be stdio or the report fd", fd);
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
        sandbox_helper_die(errno, "--exec-notify-fd %d", fd);
    if (type != SOCK_SEQPACKET && type != SOCK_DGRAM)
        sandbox_helper_die(0, "--exec-notify-fd %d: must be a SOCK_SEQPACKET or SOCK_DGRAM socket",
                           fd);
    helper_fd_not_inherited(fd, "--exec-notify-fd");
}

static void
check_net_proxy_fd(const struct sandbox_helper_options *o)
{
    int fd = o->net_proxy_fd;
    if (fd < 0)
        return;
    if (fd <= 2 || fd == o->report_fd || fd == o->exec_notify_fd)
        sandbox_helper_die(0, "--net-proxy-fd %d: must not be stdio, the report or exec-notify fd",
                           fd);
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
        sandbox_helper_die(errno, "--net-proxy-fd %d", fd);
    if (type != SOCK_SEQPACKET && type != SOCK_DGRAM)
        sandbox_helper_die(0, "--net-proxy-fd %d: must be a SOCK_SEQPACKET or SOCK_DGRAM socket",
                           fd);
    helper_fd_not_inherited(fd, "--net-proxy-fd");
}

/* --net-ns-fd: not one of the other fds, and not left to the program.
 * An fd that is not open is no error here: the join fails and the
 * command has no network, as for any namespace that cannot be joined. */
static void
check_net_ns_fd(const struct sandbox_helper_options *o)
{
    int fd = o->net_ns_fd;
    if (fd < 0)
        return;
    if (fd <= 2 || fd == o->report_fd || fd == o->exec_notify_fd || fd == o->net_proxy_fd ||
        fd == o->tty_fd)
        sandbox_helper_die(0,
                           "--net-ns-fd %d: must not be stdio, the report, exec-notify or "
                           "net-proxy fd",
                           fd);
    helper_fd_not_inherited(fd, "--net-ns-fd");
}

/* exec-notify: the path execvp would run, found before the filter is in
 * place, so that the helper's own execve is one call with a path the
 * supervisor was told in advance.  Dies 127 when nothing is found
 * (die_not_started). */
static char *
resolve_program(const char *name, int report_fd)
{
    if (strchr(name, '/') != NULL) {
        char *copy = strdup(name);
        if (copy == NULL)
            sandbox_helper_die(ENOMEM, "%s", name);
        return copy;
    }
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/bin:/usr/bin";
    int first_err = ENOENT;
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t dlen = end ? (size_t)(end - p) : strlen(p);
        char *cand = NULL;
        if (asprintf(&cand, "%.*s%s%s", (int)dlen, p, dlen ? "/" : "", name) < 0)
            sandbox_helper_die(ENOMEM, "%s", name);
        struct stat st;
        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(cand, X_OK) == 0)
                return cand;
            first_err = EACCES;
        }
        free(cand);
        if (end == NULL)
            break;
        p = end;
    }
    die_not_started(report_fd, first_err, name);
}

/* --command-fd: not one of the other fds, and not left to the program. */
static void
check_command_fd(const struct sandbox_helper_options *o)
{
    int fd = o->command_fd;
    if (fd < 0)
        return;
    if (fd <= 2 || fd == o->report_fd || fd == o->exec_notify_fd || fd == o->net_proxy_fd ||
        fd == o->net_ns_fd || fd == o->tty_fd)
        sandbox_helper_die(0, "--command-fd %d: must not be stdio or another of the helper's fds",
                           fd);
    helper_fd_not_inherited(fd, "--command-fd");
}

/* Reads exactly n bytes of fd into buf, through interruptions and short
 * reads.  Returns 0, or -1 with errno (0: the end came first). */
static int
read_exactly(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, (char *)buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = 0;
            return -1;
        }
        got += (size_t)k;
    }
    return 0;
}

/*
 * --command-fd: the call was prepared before it was asked for.  Everything
 * is in place (this runs after the seccomp filter, so nothing from here on
 * is unconfined); the server sends the program's last argument when the
 * call comes, and the exec is then the one an unprepared call makes.  A
 * server that dies or discards the call closes its end: exit 125 with
 * nothing run.
 */
static void
await_command(struct sandbox_helper_options *o)
{
    int fd = o->command_fd;
    if (fd < 0)
        return;
    uint32_t len = 0;
    if (read_exactly(fd, &len, sizeof len) != 0)
        sandbox_helper_die(errno, "--command-fd %d: closed before a command came", fd);
    if (len > SANDBOX_COMMAND_MAX)
        sandbox_helper_die(0, "--command-fd %d: a command of %u bytes is too long", fd, len);
    char *text = malloc((size_t)len + 1);
    if (text == NULL)
        sandbox_helper_die(ENOMEM, "--command-fd %d", fd);
    if (read_exactly(fd, text, len) != 0)
        sandbox_helper_die(errno, "--command-fd %d: closed in the middle of the command", fd);
    text[len] = '\0';
    if (memchr(text, '\0', len) != NULL)
        sandbox_helper_die(0, "--command-fd %d: the command holds a NUL byte", fd);
    close(fd);
    o->command_fd = -1;
    size_t n = 0;
    while (o->program_argv[n] != NULL)
        n++;
    o->program_argv[n - 1] = text; /* the exec takes it */
}

/* --argv0 replaces argv[0] only now: the file to run is the original
 * program_argv[0], already resolved into path with exec-notify. */
static noreturn void
exec_program_at(struct sandbox_helper_options *o, char *path)
{
    char **argv = o->program_argv;
    const char *file = argv[0];
    if (o->argv0 != NULL)
        argv[0] = (char *)o->argv0;
    if (path == NULL)
        exec_program(file, argv, o->report_fd);
    execv(path, argv);
    die_not_started(o->report_fd, errno, file);
}

static noreturn void
exec_program(const char *file, char **argv, int report_fd)
{
    execvp(file, argv);
    die_not_started(report_fd, errno, file);
}

static json_t *
report_new(const struct sandbox_policy *p)
{
    json_t *r = json_object();
    if (r == NULL ||
        json_object_set_new(r, "policy", json_string(sandbox_kind_name(sandbox_policy_kind(p)))) <
            0 ||
        json_object_set_new(r, "network", json_boolean(sandbox_policy_network_allowed(p))) < 0)
        sandbox_helper_die(ENOMEM, "building the report");
    return r;
}

void
helper_put(json_t *obj, const char *key, json_t *value)
{
    if (value == NULL || json_object_set_new(obj, key, value) != 0)
        sandbox_helper_die(ENOMEM, "building the report");
}

void
helper_append(json_t *arr, const char *text)
{
    if (json_array_append_new(arr, json_string(text)) != 0)
        sandbox_helper_die(ENOMEM, "building the report");
}

json_t *
helper_new_array(void)
{
    json_t *a = json_array();
    if (a == NULL)
        sandbox_helper_die(ENOMEM, "building the report");
    return a;
}

/* The policy asks for `feature` and the kernel cannot give it: refuse, or
 * with --allow-degraded say so on stderr and in the report, and go on. */
void
helper_require(struct run *r, const char *feature, const char *why)
{
    if (!r->o->allow_degraded)
        sandbox_helper_die(0,
                           "%s: %s; refusing to run the command less confined than the policy asks "
                           "(--allow-degraded accepts this)",
                           feature, why);
    sandbox_helper_warn("running without %s: %s (--allow-degraded)", feature, why);
    helper_append(r->degraded, feature);
}

static void
set_no_new_privs(struct run *r)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        sandbox_helper_die(errno, "PR_SET_NO_NEW_PRIVS");
    if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
        sandbox_helper_die(0, "PR_SET_NO_NEW_PRIVS did not take effect");
    helper_put(r->report, "no_new_privs", json_true());
}

/*
 * --net-ns-fd: the session's network namespace (docs/network.md), which
 * has only loopback, joined before the helper makes its own namespaces,
 * so that its user namespace nests in the one owning the network (the
 * command then holds no capability over the network it shares with the
 * session's other commands).  IP sockets are then allowed: the namespace
 * is the limit.  When it cannot be joined the command has no network at
 * all (seccomp, Landlock), and the report says "session_network": false.
 * With the network on there is nothing to join.
 */
static void
join_session_network(struct run *r)
{
    int fd = r->o->net_ns_fd;
    if (fd < 0)
        return;
    r->o->net_ns_fd = -1;
    if (!r->restrict_net) {
        close(fd);
        return;
    }
    const char *what = "";
    int rc = sandbox_netns_join(fd, &r->session_net_owner, &what);
    close(fd);
    if (rc < 0) {
        sandbox_helper_warn("session network: %s: %s; the command has no network", what,
                            strerror(-rc));
        r->session_net = -1;
        helper_put(r->report, "session_network", json_false());
        return;
    }
    r->session_net = 1;
    r->restrict_net = false;
    r->own_net = true;
    helper_put(r->report, "session_network", json_true());
}

/*
 * Having entered the user namespace that owns the session's network (to
 * join it), the helper holds every capability there; only a user
 * namespace of its own, nested there, takes them away from the command.
 * Without one (none left to make: the user's count of them has run out,
 * which a command can bring about; or the kernel's nesting depth), a root
 * command would keep them over the network every call of the session
 * shares: take its loopback down, add routes and netfilter rules for the
 * others' connections.  Refused, even with --allow-degraded: nothing here
 * is the policy's to relax.
 */
static void
refuse_unnested_session_network(const struct run *r)
{
    if (r->session_net_owner && !r->ns.user)
        sandbox_helper_die(0, "session network: no user namespace of the command's own could "
                              "be made in the one that owns the session's network, so the "
                              "command would hold its capabilities; refusing to run it");
}

/*
 * --net-proxy-fd: the command's network is the session's namespace
 * (above), or else a namespace of its own with only loopback, where the
 * helper listens; the listener goes to the
 * server (whose proxy serves it) and the proxy variables to the command.
 * IP sockets are then allowed (the namespace is the limit).  Without the
 * namespace the command has no network at all (seccomp), and the report
 * says "network_proxy": false.
 */
static void
enter_proxy_network(struct run *r)
{
    int sock = r->o->net_proxy_fd;
    if (sock < 0)
        return;
    unsigned port = 0;
    const char *what = "the session's network namespace could not be joined";
    /* in the session's namespace when one was given (a listener of its
     * own per call: the port says whose connection it is), else in one
     * of the call's own */
    int fd = r->session_net > 0    ? sandbox_netns_listen(&port, &what)
             : r->session_net == 0 ? sandbox_netns_enter(&port, &what)
                                   : -EPERM;
    if (fd < 0) {
        sandbox_helper_warn("network proxy: %s: %s; the command has no network", what,
                            strerror(-fd));
        helper_put(r->report, "network_proxy", json_false());
        close(sock);
        return;
    }
    char tag = 'L';
    struct iovec iov = {.iov_base = &tag, .iov_len = 1};
    ssize_t sent = fd_pass_send(sock, &iov, 1, &fd, 1);
    close(fd);
    close(sock);
    if (sent < 0)
        sandbox_helper_die((int)-sent, "network proxy: sending the listener on fd %d", sock);
    int rc = sandbox_netns_set_env(port);
    if (rc < 0)
        sandbox_helper_die(-rc, "network proxy: setting the proxy variables");
    r->restrict_net = false;
    r->own_net = true;
    helper_put(r->report, "network_proxy", json_integer(port));
}

void
helper_report_namespaces(struct run *r)
{
    json_t *o = json_object();
    helper_put(r->report, "namespaces", o);
    helper_put(o, "user", json_boolean(r->ns.user));
    helper_put(o, "mount", json_boolean(r->ns.mount));
    helper_put(o, "pid", json_boolean(r->ns.pid));
    helper_put(o, "ipc", json_boolean(r->ns.ipc));
    helper_put(o, "proc", json_boolean(r->own_proc));
    helper_put(r->report, "read_only", json_incref(r->read_only));
    if (r->o->n_hide > 0)
        helper_put(r->report, "hidden", json_incref(r->hidden));
}

static void
allow_path(struct run *r, struct sandbox_ll *ll, const char *path, enum sandbox_ll_access a)
{
    int rc = sandbox_ll_allow(ll, path, a);
    if (rc == -ENOENT || rc == -ENOTDIR)
        return; /* nothing there to grant */
    if (rc < 0)
        sandbox_helper_die(-rc, "landlock: adding a rule for %s", path);
    if (a == SANDBOX_LL_WRITE)
        helper_append(r->writable, path);
}

static void
allow_reads(struct run *r, struct sandbox_ll *ll)
{
    static const char *const platform[] = {"/bin",   "/sbin",   "/usr", "/lib", "/lib32",
                                           "/lib64", "/libx32", "/etc", "/opt", "/dev",
                                           "/proc",  "/sys",    "/run"};
    if (!sandbox_policy_reads_restricted(r->p)) {
        allow_path(r, ll, "/", SANDBOX_LL_READ);
        helper_put(r->report, "readable", json_string("all"));
        return;
    }
    json_t *readable = helper_new_array();
    helper_put(r->report, "readable", readable);
    if (sandbox_policy_platform_defaults(r->p)) {
        for (size_t i = 0; i < ARRAY_SIZE(platform); i++)
            allow_path(r, ll, platform[i], SANDBOX_LL_READ);
        helper_append(readable, "+platform");
    }
    for (size_t i = 0; i < sandbox_policy_readable_root_count(r->p); i++) {
        const char *path = sandbox_policy_readable_root(r->p, i);
        allow_path(r, ll, path, SANDBOX_LL_READ);
        helper_append(readable, path);
    }
    if (sandbox_policy_cwd_is_root(r->p))
        allow_path(r, ll, sandbox_policy_cwd(r->p), SANDBOX_LL_READ);
}

/* The writable set, as Landlock rules (a path that does not exist is
 * skipped: allow_path; a root, from the fd open_roots opened).  In the
 * sandbox's own /dev, read-only, beneath which lie only the writable
 * devices, its /dev/pts and links to them and to /proc, one rule on /dev
 * grants what the rules on each device would: the same rights on the same
 * files, for one lookup instead of eight. */
static void
allow_writes(struct run *r, struct sandbox_ll *ll)
{
    if (r->own_dev && r->w->n_devices > 0)
        allow_path(r, ll, "/dev", SANDBOX_LL_DEVICE);
    for (size_t i = 0; !r->own_dev && i < r->w->n_devices; i++)
        allow_path(r, ll, r->w->devices[i], SANDBOX_LL_DEVICE);
    helper_open_roots(r);
    for (size_t i = 0; i < r->w->n_roots; i++) {
        if (r->root_fds[i] < 0)
            continue;
        int rc = sandbox_ll_allow_fd(ll, r->root_fds[i], SANDBOX_LL_WRITE);
        if (rc < 0)
            sandbox_helper_die(-rc, "landlock: adding a rule for %s", r->w->roots[i]);
        helper_append(r->writable, r->w->roots[i]);
    }
}

static void
apply_landlock(struct run *r)
{
    bool fs = r->kind != SANDBOX_EXTERNAL;
    int abi = sandbox_ll_abi();
    if (abi < 1) {
        if (fs)
            helper_require(r, "landlock", "the kernel has no Landlock to confine the filesystem");
        return; /* external-sandbox: seccomp alone covers the network */
    }
    if (!fs && (!r->restrict_net || abi < 4))
        return;
    struct sandbox_ll *ll = sandbox_ll_new(abi, fs, r->restrict_net, fs);
    if (ll == NULL)
        sandbox_helper_die(errno, "landlock: creating the ruleset (ABI %d)", abi);
    for (size_t i = 0; fs && sandbox_ll_missing(ll, i) != NULL; i++) {
        const char *what = sandbox_ll_missing(ll, i);
        if (strcmp(what, "landlock-tcp") != 0) /* seccomp already refuses IP sockets */
            helper_require(r, what, "the kernel's Landlock ABI is too old for it");
    }
    if (fs) {
        allow_reads(r, ll);
        allow_writes(r, ll);
        helper_put(r->report, "writable", json_incref(r->writable));
    }
    int rc = sandbox_ll_enforce(ll, r->report);
    if (rc < 0)
        sandbox_helper_die(-rc, "landlock: enforcing the ruleset");
    sandbox_ll_free(ll);
}

/* The filter's sockets: none but Unix with the network off; in a
 * network namespace the sandbox entered (its session's, or its own for
 * the proxy) the families that namespace holds; else any. */
static enum sandbox_filter_net
filter_net(const struct run *r)
{
    if (r->restrict_net)
        return SANDBOX_FILTER_NET_UNIX;
    return r->own_net ? SANDBOX_FILTER_NET_OWN : SANDBOX_FILTER_NET_ANY;
}

/* Whether the policy has a seccomp filter of its own (beside exec-notify's). */
static bool
has_filter(const struct run *r)
{
    return r->kind != SANDBOX_EXTERNAL || r->restrict_net;
}

/* What a filter load that failed this way most likely met: a kernel
 * without seccomp filters or without user notification. */
static bool
refused_by_kernel(int rc)
{
    return rc == -EINVAL || rc == -ENOSYS || rc == -EOPNOTSUPP;
}

/* The policy's filter alone, without exec-notify. */
static void
apply_filter(struct run *r)
{
    if (!has_filter(r))
        return;
    int rc = sandbox_filter_apply(r->kind != SANDBOX_EXTERNAL, filter_net(r), r->report);
    if (refused_by_kernel(rc))
        helper_require(r, "seccomp", "the kernel refused the seccomp filter");
    else if (rc < 0)
        sandbox_helper_die(-rc, "seccomp: loading the filter");
}

/*
 * exec-notify, the last setup step (after Landlock, so the command and all
 * it starts are notified inside every other confinement): loads the filter
 * that hands execs to the supervisor and sends its listener.  When the
 * policy has a filter of its own, that one program does both (not two
 * stacked: each load costs the kernel a compilation and a run of the
 * program per call number).  A kernel without user notification gets the
 * policy's filter alone, and exec-notify is refused or, with
 * --allow-degraded, reported degraded.  Returns the path to execve.
 */
static char *
apply_exec_notify(struct run *r)
{
    struct sandbox_helper_options *o = r->o;
    int sock = o->exec_notify_fd;
    bool merged = has_filter(r);
    /* a confined command's sockets go to the supervisor too (the one
     * listener a filter chain may have: docs/enforcement.md) */
    bool sockets = r->kind == SANDBOX_READ_ONLY || r->kind == SANDBOX_WORKSPACE_WRITE;
    unsigned notify = (o->sockets_only ? 0 : SANDBOX_FILTER_NOTIFY_EXECS) |
                      (sockets ? SANDBOX_FILTER_NOTIFY_SOCKETS : 0);
    if (notify == 0)
        sandbox_helper_die(0, "--notify-sockets-only: only read-only and workspace-write "
                              "sandboxes have socket calls to notify");
    char *path = resolve_program(o->program_argv[0], o->report_fd);
    /* a filter that notifies sendmsg would hold our own sendmsg of its
     * listener: the supervisor takes it by number where it offered to,
     * else the courier sends it (exec_filter.h).  By number only when our
     * execve is notified: that is what keeps the listener here until the
     * supervisor has it. */
    bool held = merged && (notify & SANDBOX_FILTER_NOTIFY_SOCKETS);
    bool by_number = held && (notify & SANDBOX_FILTER_NOTIFY_EXECS) && r->take_offered;
    bool courier = held && !by_number;
    struct sandbox_courier c;
    int rc = courier ? sandbox_exec_filter_courier_start(&c, sock, path) : 0;
    if (rc < 0)
        sandbox_helper_die(-rc, "exec-notify: starting the listener's courier");
    int listener = !merged ? sandbox_exec_filter_load()
                           : sandbox_filter_apply_notify(r->kind != SANDBOX_EXTERNAL, filter_net(r),
                                                         notify, r->report);
    if (courier) {
        rc = sandbox_exec_filter_courier_send(&c, listener);
        if (rc < 0)
            sandbox_helper_die(-rc, "exec-notify: the courier sending the listener on fd %d", sock);
    }
    if (refused_by_kernel(listener)) {
        if (merged)
            apply_filter(r);
        if (!o->allow_degraded)
            sandbox_helper_die(-listener,
                               "exec-notify: the kernel has no seccomp user notification; refusing "
                               "to run the command without exec interception (--allow-degraded "
                               "accepts this)");
        sandbox_helper_warn("running without exec-notify: no seccomp user notification "
                            "(--allow-degraded)");
        helper_append(r->degraded, "exec-notify");
        rc = sandbox_exec_filter_send_degraded(sock, path);
    } else if (listener < 0) {
        sandbox_helper_die(-listener, "exec-notify: loading the filter");
    } else {
        if (by_number && fcntl(listener, F_SETFD, FD_CLOEXEC) != 0)
            sandbox_helper_die(errno, "exec-notify: the listener's close-on-exec");
        if (by_number)
            rc = sandbox_exec_filter_send_number(sock, path, listener);
        else if (!courier)
            rc = sandbox_exec_filter_send(sock, path, listener);
        /* By number, the listener stays open (close-on-exec) until the
         * execve: the supervisor takes it from this process while that
         * execve waits for it. */
        if (!by_number)
            close(listener);
        if (rc == 0 &&
            sandbox_exec_filter_report(r->report, notify & SANDBOX_FILTER_NOTIFY_EXECS,
                                       merged && (notify & SANDBOX_FILTER_NOTIFY_SOCKETS)) != 0)
            sandbox_helper_die(ENOMEM, "building the report");
    }
    if (rc < 0)
        sandbox_helper_die(-rc, "exec-notify: sending the listener on fd %d", sock);
    close(sock);
    return path;
}

/* The policy's deny paths (a permission profile's deny entries) join the
 * --hide paths, after them: what the command may not read is the
 * policy's to say, so no caller can run it and forget them.  The array is
 * never freed: the helper execs. */
static void
add_policy_hides(struct sandbox_helper_options *o, const struct sandbox_policy *p)
{
    size_t n = sandbox_policy_deny_count(p);
    if (n == 0)
        return;
    const char **all = calloc(o->n_hide + n, sizeof *all);
    if (all == NULL)
        sandbox_helper_die(ENOMEM, "the paths to hide");
    for (size_t i = 0; i < o->n_hide; i++)
        all[i] = o->hide[i];
    for (size_t i = 0; i < n; i++) {
        const char *path = sandbox_policy_deny(p, i);
        const char *why = sandbox_ns_hide_arg_error(path);
        if (why != NULL)
            sandbox_helper_die(0, "deny_paths \"%s\": %s", path, why);
        all[o->n_hide + i] = path;
    }
    o->hide = all;
    o->n_hide += n;
}

/*
 * Capabilities over files the command never needs, and which would let it
 * plant privilege for later: CAP_SETFCAP (a security.capability xattr, a
 * file capability that holds outside the sandbox: the user namespace of a
 * root server maps root to root), CAP_FSETID (writing to a set-user-ID
 * file without clearing the bit, setting set-group-ID for a group not
 * one's own) and CAP_MKNOD (device nodes, when root runs without a user
 * namespace).  Taken out of the bounding set (so no execve gives them
 * back), the ambient set, and the effective, permitted and inheritable
 * sets.  A process that cannot drop one (no CAP_SETPCAP: a user without a
 * user namespace) does not hold it either, and no_new_privs keeps file
 * capabilities from granting it.
 */
static void
drop_file_capabilities(struct run *r)
{
    static const struct {
        int cap;
        const char *name;
    } caps[] = {{CAP_SETFCAP, "setfcap"}, {CAP_FSETID, "fsetid"}, {CAP_MKNOD, "mknod"}};
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) != 0)
        sandbox_helper_die(errno, "reading the capabilities");
    json_t *names = helper_new_array();
    helper_put(r->report, "capabilities_dropped", names);
    for (size_t i = 0; i < ARRAY_SIZE(caps); i++) {
        int cap = caps[i].cap;
        __u32 bit = 1u << (cap % 32);
        bool held = (data[cap / 32].permitted & bit) != 0;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && (errno != EPERM || held))
            sandbox_helper_die(errno, "dropping CAP_%s from the bounding set", caps[i].name);
        data[cap / 32].effective &= ~bit;
        data[cap / 32].permitted &= ~bit;
        data[cap / 32].inheritable &= ~bit;
        helper_append(names, caps[i].name);
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        sandbox_helper_die(errno, "clearing the ambient capabilities");
    if (syscall(SYS_capset, &hdr, data) != 0)
        sandbox_helper_die(errno, "dropping the file capabilities");
}

static void
run_init(struct run *r, struct sandbox_helper_options *o)
{
    r->o = o;
    r->p = o->policy;
    r->kind = sandbox_policy_kind(r->p);
    /* $TMPDIR from the helper's own environment: the command's. */
    r->w = sandbox_writable_new(r->p, getenv("TMPDIR"));
    if (r->w == NULL)
        sandbox_helper_die(ENOMEM, "the writable set");
    r->restrict_net = !sandbox_policy_network_allowed(r->p);
    add_policy_hides(o, r->p);
    r->report = report_new(r->p);
    r->degraded = helper_new_array();
    helper_put(r->report, "degraded", r->degraded);
    r->read_only = helper_new_array();
    r->hidden = helper_new_array();
    r->writable = helper_new_array();
}

/* chdir, Landlock, the filter (last: after it only the listener with
 * exec-notify, the report and execve), the report and the command.  Runs
 * in the process that becomes the command; inside a PID namespace that is
 * a CLONE_VM child of the init (spawn_command), so it must end in execve
 * or _exit, never return. */
noreturn void
helper_finish_and_exec(struct run *r)
{
    if (chdir(r->o->cwd) != 0)
        sandbox_helper_die(errno, "--cwd %s", r->o->cwd);
    /* after the mounts: /dev/ptmx is the sandbox's own now */
    helper_take_terminal(r->o);
    if (r->kind == SANDBOX_READ_ONLY || r->kind == SANDBOX_WORKSPACE_WRITE)
        drop_file_capabilities(r);
    apply_landlock(r);
    char *path = NULL;
    if (r->o->exec_notify_fd >= 0)
        path = apply_exec_notify(r);
    else
        apply_filter(r);
    send_report(r->o->report_fd, r->report);
    await_command(r->o);
    exec_program_at(r->o, path);
}

noreturn void
sandbox_helper_run(struct sandbox_helper_options *o)
{
    struct run r = {0};
    reset_signals();
    check_report_fd(o->report_fd);
    check_exec_notify_fd(o);
    check_net_proxy_fd(o);
    check_net_ns_fd(o);
    helper_check_tty_fd(o);
    check_command_fd(o);
    run_init(&r, o);
    r.take_offered = o->exec_notify_fd >= 0 && sandbox_exec_filter_by_number(o->exec_notify_fd);
    bool confine = r.kind == SANDBOX_READ_ONLY || r.kind == SANDBOX_WORKSPACE_WRITE;
    bool notify = o->exec_notify_fd >= 0;
    if (!confine)
        helper_close_dev_template();
    if (r.kind == SANDBOX_DANGER_FULL_ACCESS) {
        if (chdir(o->cwd) != 0)
            sandbox_helper_die(errno, "--cwd %s", o->cwd);
        /* full access: the host's /dev/ptmx, as any program there has */
        helper_take_terminal(o);
        /* exec-notify alone: no confinement, only the exec filter (for
         * escalated programs); a filter needs no_new_privs. */
        char *path = NULL;
        if (notify) {
            set_no_new_privs(&r);
            path = apply_exec_notify(&r);
        }
        send_report(o->report_fd, r.report);
        await_command(o);
        exec_program_at(o, path);
    }

    if (confine || r.restrict_net || notify)
        set_no_new_privs(&r);
    if (!confine && o->net_proxy_fd >= 0) {
        close(o->net_proxy_fd); /* no namespaces here: the policy's network stands */
        o->net_proxy_fd = -1;
    }
    if (!confine && o->net_ns_fd >= 0) {
        close(o->net_ns_fd);
        o->net_ns_fd = -1;
    }
    if (confine) {
        join_session_network(&r);
        helper_enter_namespaces(&r);
        refuse_unnested_session_network(&r);
        enter_proxy_network(&r);
        if (r.ns.pid)
            helper_run_in_pid_namespace(&r);
        helper_report_namespaces(&r);
    }
    helper_finish_and_exec(&r);
}
