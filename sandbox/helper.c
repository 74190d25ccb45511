/*
 * helper: the setup sequence of execgate-sandbox.
 *
 * Order (as bubblewrap does it): signals reset, policy checks, then
 * no_new_privs, namespaces and mounts, chdir, Landlock, the report line, and
 * the seccomp filter as the very last step before execve, so that nothing
 * the helper itself does runs under the filter.
 */
#include "sandbox/helper.h"
#include "sandbox/cmdline.h"
#include "sandbox/exec_filter.h"
#include "sandbox/filter.h"
#include "sandbox/landlock.h"
#include "sandbox/netns.h"
#include "sandbox/ns.h"
#include "sandbox/placeholder.h"
#include "sandbox/policy.h"
#include "sandbox/protect.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "wrapper/fd_pass.h"

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

/* The spawner may have left signals blocked or ignored; the program must
 * start from defaults whatever they were. */
static void
reset_signals(void)
{
    sigset_t all;
    sigemptyset(&all);
    if (sigprocmask(SIG_SETMASK, &all, NULL) != 0)
        sandbox_helper_die(errno, "resetting the signal mask");
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int s = 1; s < NSIG; s++) {
        if (s == SIGKILL || s == SIGSTOP)
            continue;
        /* EINVAL for the signal numbers libc reserves: nothing to reset. */
        (void)sigaction(s, &dfl, NULL);
    }
}

/* The report fd must be open and must not leak into the program. */
static void
check_report_fd(int fd)
{
    if (fd < 0)
        return;
    if (fd <= 2)
        sandbox_helper_die(0, "--report-fd %d: must not be stdin, stdout or stderr", fd);
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0)
        sandbox_helper_die(errno, "--report-fd %d", fd);
    if (fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0)
        sandbox_helper_die(errno, "--report-fd %d: setting close-on-exec", fd);
}

/* Writes all of text and a newline to fd. */
static void
write_line(int fd, const char *text)
{
    size_t len = strlen(text);
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            sandbox_helper_die(errno, "writing the report to fd %d", fd);
        text += n;
        len -= (size_t)n;
    }
    while (write(fd, "\n", 1) < 0) {
        if (errno != EINTR)
            sandbox_helper_die(errno, "writing the report to fd %d", fd);
    }
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
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0)
        sandbox_helper_die(errno, "--exec-notify-fd %d: setting close-on-exec", fd);
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
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0)
        sandbox_helper_die(errno, "--net-proxy-fd %d: setting close-on-exec", fd);
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

/* A placeholder .codex held for the call, and its root's path as this
 * process sees it (getcwd there; NULL: unknown), below which the binds
 * over it are taken off at the end. */
struct codex_hold {
    struct sandbox_placeholder ph;
    char *root_path;
};

/* Everything the helper learns on the way, for the report line. */
struct run {
    struct sandbox_helper_options *o;
    const struct sandbox_policy *p;
    enum sandbox_kind kind;
    struct sandbox_writable *w; /* where the command may write; never freed: we exec */
    /* w's roots, opened once (open_roots; -1: nothing there to grant):
     * the .git/.codex binds and the Landlock rules act on these very
     * directories, whatever their paths name later */
    int *root_fds;
    bool roots_open;
    /* One per repo root: the placeholder .codex held there (fd -1: none),
     * released by the process outside the PID namespace when the command
     * has ended */
    struct codex_hold *codex;
    /* the supervisor offered to take the listener by number (read at
     * once: an offer left unread when the socket closes would reset the
     * connection, and the supervisor lose the hand-over) */
    bool take_offered;
    bool restrict_net;
    json_t *report;
    json_t *degraded; /* borrowed from report */
    json_t *read_only;
    json_t *hidden;
    json_t *writable;
    struct sandbox_ns_state ns;
    bool own_proc;
};

static void
put(json_t *obj, const char *key, json_t *value)
{
    if (value == NULL || json_object_set_new(obj, key, value) != 0)
        sandbox_helper_die(ENOMEM, "building the report");
}

static void
append(json_t *arr, const char *text)
{
    if (json_array_append_new(arr, json_string(text)) != 0)
        sandbox_helper_die(ENOMEM, "building the report");
}

static json_t *
new_array(void)
{
    json_t *a = json_array();
    if (a == NULL)
        sandbox_helper_die(ENOMEM, "building the report");
    return a;
}

/* The policy asks for `feature` and the kernel cannot give it: refuse, or
 * with --allow-degraded say so on stderr and in the report, and go on. */
static void
require(struct run *r, const char *feature, const char *why)
{
    if (!r->o->allow_degraded)
        sandbox_helper_die(0,
                           "%s: %s; refusing to run the command less confined than the policy asks "
                           "(--allow-degraded accepts this)",
                           feature, why);
    sandbox_helper_warn("running without %s: %s (--allow-degraded)", feature, why);
    append(r->degraded, feature);
}

static void
set_no_new_privs(struct run *r)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        sandbox_helper_die(errno, "PR_SET_NO_NEW_PRIVS");
    if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
        sandbox_helper_die(0, "PR_SET_NO_NEW_PRIVS did not take effect");
    put(r->report, "no_new_privs", json_true());
}

/* Opens path one component at a time, refusing a symbolic link
 * anywhere (O_PATH).  Returns the fd or -errno (-ELOOP: a link). */
static int
open_without_links(const char *path)
{
    int dir = open("/", O_PATH | O_CLOEXEC | O_DIRECTORY);
    if (dir < 0)
        return -errno;
    for (const char *c = path; *c != '\0';) {
        size_t n = strcspn(c, "/");
        if (n == 0) {
            c++;
            continue;
        }
        char *name = strndup(c, n);
        if (name == NULL)
            sandbox_helper_die(ENOMEM, "%s", path);
        int next = openat(dir, name, O_PATH | O_CLOEXEC | O_NOFOLLOW);
        int e = errno;
        free(name);
        close(dir);
        if (next < 0)
            return -e;
        struct stat st;
        e = fstat(next, &st) != 0 ? errno : S_ISLNK(st.st_mode) ? ELOOP : 0;
        if (e != 0) {
            close(next);
            return -e;
        }
        dir = next;
        c += n;
    }
    return dir;
}

/*
 * Opens each writable root once, after the namespaces are made (the binds
 * through these fds must be in the helper's own mount namespace).  A root
 * that is not there grants nothing, as Landlock grants nothing there.
 * Canonical roots (the server's, resolved when the call arrived) are
 * reached without following any link: one on the way now means a
 * directory was replaced since the server looked, and the command would be
 * let write a place the server never saw, so the helper refuses to run it.
 */
static void
open_roots(struct run *r)
{
    if (r->roots_open)
        return;
    r->roots_open = true;
    r->root_fds = calloc(r->w->n_roots ? r->w->n_roots : 1, sizeof *r->root_fds);
    if (r->root_fds == NULL)
        sandbox_helper_die(ENOMEM, "the writable roots");
    for (size_t i = 0; i < r->w->n_roots; i++) {
        const char *root = r->w->roots[i];
        int fd = r->w->canonical ? open_without_links(root) : open(root, O_PATH | O_CLOEXEC);
        if (fd < 0 && !r->w->canonical)
            fd = -errno;
        if (fd == -ELOOP && r->w->canonical)
            sandbox_helper_die(0,
                               "writable root %s: a symbolic link lies on its path now, though "
                               "the server resolved it to this path, without one, when the call "
                               "arrived (a directory on the way was replaced since); refusing to "
                               "run the command rather than let it write where the server never "
                               "looked",
                               root);
        if (fd < 0 && fd != -ENOENT && fd != -ENOTDIR)
            sandbox_helper_die(-fd, "opening the writable root %s", root);
        r->root_fds[i] = fd;
    }
}

/* sandbox_ns_reopen_fn: root i as its path leads now, reached as
 * open_roots reached it. */
static int
reopen_root(void *arg, size_t i)
{
    struct run *r = arg;
    const char *root = r->w->roots[i];
    if (r->w->canonical)
        return open_without_links(root);
    int fd = open(root, O_PATH | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/*
 * The read-only world: every mount read-only, the writable roots put back
 * on top, nosuid and nodev (sandbox_ns_read_only_world); their fds then
 * hold the copies the command sees, on which the .git/.codex binds and the
 * Landlock rules are made.  A kernel without the calls is refused, or
 * with --allow-degraded reported.
 */
static void
make_world_read_only(struct run *r)
{
    char *err = NULL;
    int rc =
        sandbox_ns_read_only_world(r->root_fds, r->w->roots, r->w->n_roots, reopen_root, r, &err);
    if (rc == -ENOSYS) {
        require(r, "read-only-world",
                "the kernel lacks open_tree, move_mount or mount_setattr, so chmod, chown, "
                "utimensat, setxattr and truncate outside the writable roots would not be "
                "stopped");
    } else if (rc == -EAGAIN) {
        sandbox_helper_die(0,
                           "%s: it was replaced while the helper set up the sandbox; refusing "
                           "to run the command rather than let it write a directory nobody "
                           "checked",
                           err ? err : "a writable root");
    } else if (rc < 0) {
        sandbox_helper_die(-rc, "the read-only world: %s", err ? err : "out of memory");
    }
    free(err);
    put(r->report, "read_only_world", json_boolean(rc == 0));
}

/* The fd of the root named root (a repo root is one of the roots), or -1. */
static int
root_fd(const struct run *r, const char *root)
{
    for (size_t i = 0; i < r->w->n_roots; i++) {
        if (strcmp(r->w->roots[i], root) == 0)
            return r->root_fds[i];
    }
    return -1;
}

/* The paths sandbox_ns_protect appended to ro from index from on, named
 * relative to the root ("./.git"), named from the root's path instead. */
static void
name_from_root(json_t *ro, size_t from, const char *root)
{
    for (size_t i = from; i < json_array_size(ro); i++) {
        const char *path = json_string_value(json_array_get(ro, i));
        if (path == NULL || strncmp(path, "./", 2) != 0)
            continue;
        char *named = NULL;
        if (asprintf(&named, "%s%s%s", root, strcmp(root, "/") == 0 ? "" : "/", path + 2) < 0 ||
            json_array_set_new(ro, i, json_string(named)) != 0)
            sandbox_helper_die(ENOMEM, "building the report");
        free(named);
    }
}

/* The .git and .codex of the writable set's repo roots, read-only: found
 * from the root's fd (the helper's working directory for the while), so
 * that they are those of the directory the rules are for. */
static void
protect_paths(struct run *r)
{
    int here = open(".", O_PATH | O_CLOEXEC | O_DIRECTORY);
    if (here < 0)
        sandbox_helper_die(errno, "opening the working directory");
    r->codex = calloc(r->w->n_repo_roots ? r->w->n_repo_roots : 1, sizeof *r->codex);
    if (r->codex == NULL)
        sandbox_helper_die(ENOMEM, "the repo roots");
    for (size_t i = 0; i < r->w->n_repo_roots; i++)
        r->codex[i].ph.fd = -1;
    for (size_t i = 0; i < r->w->n_repo_roots; i++) {
        const char *root = r->w->repo_roots[i];
        int fd = root_fd(r, root);
        char *err = NULL;
        if (fd < 0)
            continue;
        if (fchdir(fd) != 0)
            sandbox_helper_die(errno, "keeping .git and .codex read-only in %s", root);
        size_t from = json_array_size(r->read_only);
        int rc = sandbox_ns_protect(".", &r->codex[i].ph, r->read_only, &err);
        if (rc < 0)
            sandbox_helper_die(-rc, "keeping .git and .codex read-only in %s: %s", root,
                               err ? err : "out of memory");
        if (r->codex[i].ph.fd >= 0)
            r->codex[i].root_path = getcwd(NULL, 0);
        free(err);
        name_from_root(r->read_only, from, root);
    }
    if (fchdir(here) != 0)
        sandbox_helper_die(errno, "returning to the working directory");
    close(here);
}

static struct sandbox_protect *
protect_new(struct run *r)
{
    struct sandbox_protect *sp = sandbox_protect_new(r->w);
    if (sp == NULL)
        sandbox_helper_die(ENOMEM, "--protect");
    return sp;
}

/* The --protect paths: each that resolves within a writable location is
 * bound read-only (created first when missing), its ancestors inside one
 * pinned; the others need nothing, Landlock keeps them read-only. */
static void
protect_extra(struct run *r)
{
    if (r->o->n_protect == 0)
        return;
    struct sandbox_protect *sp = protect_new(r);
    for (size_t i = 0; i < r->o->n_protect; i++) {
        const char *path = r->o->protect[i];
        char *err = NULL;
        int rc = sandbox_protect_apply(sp, path, r->read_only, &err);
        if (rc < 0)
            sandbox_helper_die(-rc, "--protect: %s", err ? err : path);
        free(err);
    }
    sandbox_protect_free(sp);
}

/* The writable set's read-only paths (a permission profile's read entries
 * beneath its write entries): each that exists is bound read-only, its
 * ancestors inside a writable location pinned; one that does not exist is
 * skipped, as Codex skips it (creating it would change the workspace). */
static void
protect_read_only(struct run *r)
{
    if (r->w->n_read_only == 0)
        return;
    struct sandbox_protect *sp = protect_new(r);
    for (size_t i = 0; i < r->w->n_read_only; i++) {
        const char *path = r->w->read_only[i];
        char *resolved = NULL, *err = NULL;
        size_t missing = 0;
        int rc = sandbox_protect_resolve(sp, path, &resolved, &missing, &err);
        free(resolved);
        if (rc == -ENOMEM)
            sandbox_helper_die(ENOMEM, "read-only path %s", path);
        if (rc == 1 && missing == 0) {
            free(err);
            err = NULL;
            rc = sandbox_protect_apply(sp, path, r->read_only, &err);
            if (rc < 0)
                sandbox_helper_die(-rc, "keeping %s read-only: %s", path,
                                   err ? err : "out of memory");
        }
        free(err);
    }
    sandbox_protect_free(sp);
}

/* The --protect paths that a command could change without the mount
 * namespace, ", " separated after ", and the --protect paths " (malloc'd;
 * "" when none).  A path that cannot be resolved counts. */
static char *
protect_exposed(struct run *r)
{
    char *list = strdup("");
    if (list == NULL)
        sandbox_helper_die(ENOMEM, "--protect");
    if (r->o->n_protect == 0)
        return list;
    struct sandbox_protect *sp = protect_new(r);
    for (size_t i = 0; i < r->o->n_protect; i++) {
        char *resolved = NULL, *err = NULL;
        size_t missing;
        int rc = sandbox_protect_resolve(sp, r->o->protect[i], &resolved, &missing, &err);
        free(resolved);
        free(err);
        if (rc == 0)
            continue;
        char *longer;
        if (asprintf(&longer, "%s%s%s", list, list[0] ? ", " : ", and the --protect paths ",
                     r->o->protect[i]) < 0)
            sandbox_helper_die(ENOMEM, "--protect");
        free(list);
        list = longer;
    }
    sandbox_protect_free(sp);
    return list;
}

/* The --hide paths, covered last, over every other mount; under
 * workspace-write their ancestors in writable locations pinned first. */
static void
hide_paths(struct run *r)
{
    char *err = NULL;
    if (r->kind == SANDBOX_WORKSPACE_WRITE && r->o->n_hide > 0) {
        struct sandbox_protect *sp = protect_new(r);
        for (size_t i = 0; i < r->o->n_hide; i++) {
            int rc = sandbox_protect_pin_ancestors(sp, r->o->hide[i], &err);
            if (rc < 0)
                sandbox_helper_die(-rc, "--hide: %s", err ? err : r->o->hide[i]);
        }
        sandbox_protect_free(sp);
    }
    int rc = sandbox_ns_hide(r->o->hide, r->o->n_hide, r->hidden, &err);
    if (rc < 0)
        sandbox_helper_die(-rc, "--hide: %s", err ? err : "out of memory");
}

/* The --hide paths that name something now, ", " separated (malloc'd;
 * "" when none): what a command could see without the mount namespace. */
static char *
hide_exposed(struct run *r)
{
    char *list = strdup("");
    for (size_t i = 0; list != NULL && i < r->o->n_hide; i++) {
        struct stat st;
        if (stat(r->o->hide[i], &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
            continue;
        char *longer = NULL;
        if (asprintf(&longer, "%s%s%s", list, list[0] ? ", " : "", r->o->hide[i]) < 0)
            longer = NULL;
        free(list);
        list = longer;
    }
    if (list == NULL)
        sandbox_helper_die(ENOMEM, "--hide");
    return list;
}

/* Why running without a mount namespace would be less than the policy
 * asks (malloc'd). */
static char *
without_mount_namespace(struct run *r)
{
    char *hidden = hide_exposed(r);
    char *exposed = r->kind == SANDBOX_WORKSPACE_WRITE ? protect_exposed(r) : NULL;
    char *why = NULL;
    int n;
    if (exposed != NULL)
        n = asprintf(&why,
                     "cannot create a mount namespace, so .git and .codex inside the writable "
                     "roots%s would stay writable%s%s%s, and chmod, chown, utimensat and setxattr "
                     "outside the writable roots would not be stopped",
                     exposed, hidden[0] ? ", the --hide paths " : "", hidden,
                     hidden[0] ? " visible" : "");
    else
        n = asprintf(&why,
                     "cannot create a mount namespace, so %s%s%schmod, chown, utimensat and "
                     "setxattr outside the writable roots would not be stopped",
                     hidden[0] ? "the --hide paths " : "", hidden,
                     hidden[0] ? " would stay visible, and " : "");
    if (n < 0)
        sandbox_helper_die(ENOMEM, "building a message");
    free(hidden);
    free(exposed);
    return why;
}

/* The sandbox's /dev (sandbox_ns_minimal_dev): only the usual devices,
 * unless a writable root lies under /dev (the policy asked for that part
 * of the host's /dev; the rest of it then stays, read-only). */
static void
minimal_dev(struct run *r)
{
    bool under_dev = false;
    for (size_t i = 0; i < r->w->n_roots; i++) {
        const char *root = r->w->roots[i];
        under_dev |=
            strcmp(root, "/") == 0 || strcmp(root, "/dev") == 0 || strncmp(root, "/dev/", 5) == 0;
    }
    int rc = under_dev ? 0 : sandbox_ns_minimal_dev();
    if (rc == -ENOSYS)
        require(r, "minimal-dev",
                "the kernel lacks fsopen, so the host's devices under /dev could be opened");
    else if (rc < 0)
        sandbox_helper_die(-rc, "making the sandbox's /dev");
    put(r->report, "minimal_dev", json_boolean(!under_dev && rc == 0));
}

/* The sandbox's own /dev/pts (sandbox_ns_own_terminals), before the
 * Landlock rules that grant it are made: the user's other terminals are
 * not there to read or write.  A kernel without fsopen is refused, or
 * with --allow-degraded reported. */
static void
own_terminals(struct run *r)
{
    int rc = sandbox_ns_own_terminals();
    if (rc == -ENOSYS)
        require(r, "own-terminals",
                "the kernel lacks fsopen, so the user's other terminals under /dev/pts could be "
                "read and written");
    else if (rc < 0)
        sandbox_helper_die(-rc, "mounting the sandbox's own /dev/pts");
    put(r->report, "own_terminals", json_boolean(rc == 0));
}

static void
enter_namespaces(struct run *r)
{
    int rc = sandbox_ns_unshare(&r->ns);
    if (rc < 0) {
        sandbox_helper_warn("namespaces: %s", strerror(-rc));
        char *why = without_mount_namespace(r);
        require(r, "mount-namespace", why);
        free(why);
        put(r->report, "read_only_world", json_false());
        require(r, "pid-namespace",
                "cannot create a PID namespace, so the command would see every process");
        return;
    }
    open_roots(r);
    make_world_read_only(r);
    minimal_dev(r);
    own_terminals(r);
    if (r->kind == SANDBOX_WORKSPACE_WRITE) {
        protect_paths(r);
        protect_extra(r);
        protect_read_only(r);
    }
    hide_paths(r);
}

/* Where each process forwards signals: the init to the command, the
 * process outside the PID namespace to the init. Two variables, because
 * those two processes share their memory (run_in_pid_namespace) and each
 * names its child by its own namespace's pid. */
static volatile sig_atomic_t forward_to = -1, forward_to_init = -1;

static void
forward_signal(int sig)
{
    if (forward_to > 0)
        kill((pid_t)forward_to, sig);
}

static void
forward_signal_to_init(int sig)
{
    if (forward_to_init > 0)
        kill((pid_t)forward_to_init, sig);
}

/* Signals that ask the command to stop or that it may need to see; the
 * rest keep their defaults. */
static const int forwarded_signals[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT,
                                        SIGUSR1, SIGUSR2, SIGWINCH};

/*
 * Blocks (block true) or unblocks the forwarded signals.  They are blocked
 * from before each fork or clone until the parent's handler is in place:
 * a signal that arrived in between would otherwise be lost — an init
 * without a handler drops what its parent namespace sends it, and a
 * SIGTERM to the outside process before its handler would end it instead
 * of reaching the command.  Blocked, it waits and is forwarded.  The child
 * unblocks them for itself.
 */
static void
block_forwarded(bool block)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaddset(&set, forwarded_signals[i]);
    if (sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL) != 0)
        sandbox_helper_die(errno, "%s the forwarded signals", block ? "blocking" : "unblocking");
}

/* Forwards the signals to child (through handler, which reads the
 * variable slot) from now on, and lets those that waited while they were
 * blocked through. */
static void
install_forwarding(volatile sig_atomic_t *slot, void (*handler)(int), pid_t child)
{
    *slot = child;
    struct sigaction sa = {.sa_handler = handler, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaction(forwarded_signals[i], &sa, NULL);
    block_forwarded(false);
}

/* Waits for child (reaping any other child on the way, as a PID
 * namespace's init must) and returns its status, shell-style. */
static int
wait_for(pid_t child)
{
    for (;;) {
        int st;
        pid_t w = waitpid(-1, &st, 0);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            sandbox_helper_die(errno, "waiting for the command");
        if (w != child)
            continue;
        if (WIFEXITED(st))
            return WEXITSTATUS(st);
        if (WIFSIGNALED(st))
            return 128 + WTERMSIG(st);
    }
}

/* Waits for child as wait_for does and ends with its status. */
static noreturn void
wait_and_propagate(pid_t child)
{
    _exit(wait_for(child));
}

/*
 * The init's copies of the placeholder fds, closed (the fds only; the
 * memory it shares with the process outside stays as it is): that process
 * alone holds the placeholders, so that when it is killed its holds end
 * with it, not only when the init follows it, and the command's process,
 * started from the init, has no copies either.
 */
static void
close_placeholder_copies(const struct run *r)
{
    for (size_t i = 0; r->codex != NULL && i < r->w->n_repo_roots; i++) {
        if (r->codex[i].ph.fd >= 0)
            close(r->codex[i].ph.fd);
    }
}

/*
 * Once the command has ended (the init is reaped, and with it everything
 * in the PID namespace, so this process is alone in the mount namespace):
 * each placeholder this call held is unbound here and released, and
 * removed by the last sandbox that held it (sandbox/placeholder.h).  Its
 * bind may also have been copied by a recursive bind made after it over a
 * directory above it (a pin for --protect, a read-only gitdir): what is
 * mounted above it comes off first, and whatever is left on it through the
 * root's fd.  A failure is reported and leaves the command's status as it
 * is.
 */
static void
release_placeholders(struct run *r)
{
    for (size_t i = 0; r->codex != NULL && i < r->w->n_repo_roots; i++) {
        struct codex_hold *h = &r->codex[i];
        if (h->ph.fd < 0)
            continue;
        const char *root = r->w->repo_roots[i];
        int fd = root_fd(r, root);
        char *codex = NULL;
        const char *dir = h->root_path ? h->root_path : root;
        int rc = asprintf(&codex, "%s/.codex", strcmp(dir, "/") == 0 ? "" : dir) < 0
                     ? -ENOMEM
                     : sandbox_ns_unbind_above(codex);
        free(codex);
        if (rc >= 0)
            rc = fchdir(fd) == 0 ? sandbox_ns_unbind(".codex") : -errno;
        int released = sandbox_placeholder_release(fd, ".codex", &h->ph);
        if (rc >= 0)
            rc = released;
        if (rc < 0)
            sandbox_helper_warn("removing the placeholder %s/.codex: %s", root, strerror(-rc));
    }
}

/* Also the exec-notify socket: only the process that becomes the command
 * sends on it, and the supervisor sees its end close when that one has. */
static void
close_report_copy(struct run *r)
{
    if (r->o->report_fd >= 0)
        close(r->o->report_fd);
    if (r->o->exec_notify_fd >= 0)
        close(r->o->exec_notify_fd);
}

/*
 * --net-proxy-fd: the command's network is a namespace of its own with
 * only loopback, where the helper listens; the listener goes to the
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
    const char *what = "unshare";
    int fd = sandbox_netns_enter(&port, &what);
    if (fd < 0) {
        sandbox_helper_warn("network proxy: %s: %s; the command has no network", what,
                            strerror(-fd));
        put(r->report, "network_proxy", json_false());
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
    put(r->report, "network_proxy", json_integer(port));
}

static void
report_namespaces(struct run *r)
{
    json_t *o = json_object();
    put(r->report, "namespaces", o);
    put(o, "user", json_boolean(r->ns.user));
    put(o, "mount", json_boolean(r->ns.mount));
    put(o, "pid", json_boolean(r->ns.pid));
    put(o, "ipc", json_boolean(r->ns.ipc));
    put(o, "proc", json_boolean(r->own_proc));
    put(r->report, "read_only", json_incref(r->read_only));
    if (r->o->n_hide > 0)
        put(r->report, "hidden", json_incref(r->hidden));
}

/* The command's setup and execve, in the process that becomes the
 * command; see finish_and_exec below. */
static noreturn void finish_and_exec(struct run *r);

static int
command_main(void *arg)
{
    block_forwarded(false); /* blocked by the init until its handler is in */
    finish_and_exec(arg);
}

/* The stack the command's process runs on until its execve. */
#define COMMAND_STACK_SIZE (256 * 1024)

/*
 * Starts the command's process from the namespace's init without copying
 * the init's memory: CLONE_VM|CLONE_VFORK shares the address space and
 * suspends the init until the child has called execve or exited, so the
 * child runs as if it were the init, on a stack of its own (posix_spawn
 * does the same).  That stack is an array in this frame: the init is
 * suspended while it is in use, it costs no mmap, and it lies within the
 * thread's stack, which AddressSanitizer builds expect of every stack.
 * The child has its own file table, cwd, credentials, signal handlers and
 * seccomp/Landlock state (none of CLONE_FILES, _FS, _SIGHAND, _THREAD), so
 * what it confines is itself only.  Saves the page table copy and
 * copy-on-write faults of a fork on every spawn.  Returns the child's pid
 * in the init.
 */
static pid_t
spawn_command(struct run *r)
{
    _Alignas(16) char stack[COMMAND_STACK_SIZE];
    pid_t cmd = clone(command_main, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, r);
    if (cmd < 0)
        sandbox_helper_die(errno, "starting the command in the PID namespace");
    return cmd;
}

/* The namespace's init: mounts /proc, starts the command and stays to
 * reap orphans. It dies with the process outside. */
static noreturn void
run_as_init(struct run *r)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        sandbox_helper_die(errno, "PR_SET_PDEATHSIG");
    close_placeholder_copies(r);
    int rc = sandbox_ns_mount_proc();
    if (rc < 0)
        require(r, "pid-namespace-proc", "cannot mount a /proc for the PID namespace");
    r->own_proc = rc == 0;
    report_namespaces(r);
    pid_t cmd = spawn_command(r);
    close_report_copy(r);
    install_forwarding(&forward_to, forward_signal, cmd);
    wait_and_propagate(cmd);
}

static int
init_main(void *arg)
{
    run_as_init(arg);
}

/* The init's stack: its own frames and spawn_command's. */
#define INIT_STACK_SIZE (COMMAND_STACK_SIZE + 128 * 1024)

/*
 * The process that unshared CLONE_NEWPID stays outside the namespace; its
 * first child is the namespace's init.  This process waits and forwards
 * signals; the init does the rest.  The init is started with CLONE_VM, on
 * a stack in this frame, rather than forked: a fork copies the page tables
 * and then takes copy-on-write faults in both processes, on every call,
 * for a process that only waits.  Sharing the memory is safe because from
 * the clone on this process changes nothing the init uses: it only closes
 * its copies of two fds (whose numbers nothing changes after the options
 * are read), installs its own signal handler (its own table: no
 * CLONE_SIGHAND) with its own variable, and waits; on an error it writes
 * to stderr and _exits, as the init would.  Only once the init is reaped
 * does it release the placeholders (release_placeholders).
 * Killing the helper's process group kills the init, and with it
 * everything inside.  Does not return.
 */
static noreturn void
run_in_pid_namespace(struct run *r)
{
    _Alignas(16) char stack[INIT_STACK_SIZE];
    block_forwarded(true);
    pid_t init = clone(init_main, stack + sizeof stack, CLONE_VM | SIGCHLD, r);
    if (init < 0)
        sandbox_helper_die(errno, "starting the PID namespace's init");
    close_report_copy(r);
    install_forwarding(&forward_to_init, forward_signal_to_init, init);
    int status = wait_for(init);
    /* The init is reaped: its pid may be anyone's now. */
    block_forwarded(true);
    release_placeholders(r);
    _exit(status);
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
        append(r->writable, path);
}

static void
allow_reads(struct run *r, struct sandbox_ll *ll)
{
    static const char *const platform[] = {"/bin",   "/sbin",   "/usr", "/lib", "/lib32",
                                           "/lib64", "/libx32", "/etc", "/opt", "/dev",
                                           "/proc",  "/sys",    "/run"};
    if (!sandbox_policy_reads_restricted(r->p)) {
        allow_path(r, ll, "/", SANDBOX_LL_READ);
        put(r->report, "readable", json_string("all"));
        return;
    }
    json_t *readable = new_array();
    put(r->report, "readable", readable);
    if (sandbox_policy_platform_defaults(r->p)) {
        for (size_t i = 0; i < sizeof platform / sizeof platform[0]; i++)
            allow_path(r, ll, platform[i], SANDBOX_LL_READ);
        append(readable, "+platform");
    }
    for (size_t i = 0; i < sandbox_policy_readable_root_count(r->p); i++) {
        const char *path = sandbox_policy_readable_root(r->p, i);
        allow_path(r, ll, path, SANDBOX_LL_READ);
        append(readable, path);
    }
    if (sandbox_policy_cwd_is_root(r->p))
        allow_path(r, ll, sandbox_policy_cwd(r->p), SANDBOX_LL_READ);
}

/* The writable set, as Landlock rules (a path that does not exist is
 * skipped: allow_path; a root, from the fd open_roots opened). */
static void
allow_writes(struct run *r, struct sandbox_ll *ll)
{
    for (size_t i = 0; i < r->w->n_devices; i++)
        allow_path(r, ll, r->w->devices[i], SANDBOX_LL_DEVICE);
    open_roots(r);
    for (size_t i = 0; i < r->w->n_roots; i++) {
        if (r->root_fds[i] < 0)
            continue;
        int rc = sandbox_ll_allow_fd(ll, r->root_fds[i], SANDBOX_LL_WRITE);
        if (rc < 0)
            sandbox_helper_die(-rc, "landlock: adding a rule for %s", r->w->roots[i]);
        append(r->writable, r->w->roots[i]);
    }
}

static void
apply_landlock(struct run *r)
{
    bool fs = r->kind != SANDBOX_EXTERNAL;
    int abi = sandbox_ll_abi();
    if (abi < 1) {
        if (fs)
            require(r, "landlock", "the kernel has no Landlock to confine the filesystem");
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
            require(r, what, "the kernel's Landlock ABI is too old for it");
    }
    if (fs) {
        allow_reads(r, ll);
        allow_writes(r, ll);
        put(r->report, "writable", json_incref(r->writable));
    }
    int rc = sandbox_ll_enforce(ll, r->report);
    if (rc < 0)
        sandbox_helper_die(-rc, "landlock: enforcing the ruleset");
    sandbox_ll_free(ll);
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
    int rc = sandbox_filter_apply(r->kind != SANDBOX_EXTERNAL, r->restrict_net, r->report);
    if (refused_by_kernel(rc))
        require(r, "seccomp", "the kernel refused the seccomp filter");
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
    int rc = courier ? sandbox_exec_filter_courier_start(&c, o->exec_notify_fd, path) : 0;
    if (rc < 0)
        sandbox_helper_die(-rc, "exec-notify: starting the listener's courier");
    int listener = merged ? sandbox_filter_apply_notify(r->kind != SANDBOX_EXTERNAL,
                                                        r->restrict_net, notify, r->report)
                          : sandbox_exec_filter_load();
    if (courier) {
        rc = sandbox_exec_filter_courier_send(&c, listener);
        if (rc < 0)
            sandbox_helper_die(-rc, "exec-notify: the courier sending the listener on fd %d",
                               o->exec_notify_fd);
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
        append(r->degraded, "exec-notify");
        rc = sandbox_exec_filter_send_degraded(o->exec_notify_fd, path);
    } else if (listener < 0) {
        sandbox_helper_die(-listener, "exec-notify: loading the filter");
    } else {
        if (by_number && fcntl(listener, F_SETFD, FD_CLOEXEC) != 0)
            sandbox_helper_die(errno, "exec-notify: the listener's close-on-exec");
        if (by_number)
            rc = sandbox_exec_filter_send_number(o->exec_notify_fd, path, listener);
        else
            rc = courier ? 0 : sandbox_exec_filter_send(o->exec_notify_fd, path, listener);
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
        sandbox_helper_die(-rc, "exec-notify: sending the listener on fd %d", o->exec_notify_fd);
    close(o->exec_notify_fd);
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
    json_t *names = new_array();
    put(r->report, "capabilities_dropped", names);
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        int cap = caps[i].cap;
        __u32 bit = 1u << (cap % 32);
        bool held = (data[cap / 32].permitted & bit) != 0;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && (errno != EPERM || held))
            sandbox_helper_die(errno, "dropping CAP_%s from the bounding set", caps[i].name);
        data[cap / 32].effective &= ~bit;
        data[cap / 32].permitted &= ~bit;
        data[cap / 32].inheritable &= ~bit;
        append(names, caps[i].name);
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
    r->degraded = new_array();
    put(r->report, "degraded", r->degraded);
    r->read_only = new_array();
    r->hidden = new_array();
    r->writable = new_array();
}

/* chdir, Landlock, the filter (last: after it only the listener with
 * exec-notify, the report and execve), the report and the command.  Runs
 * in the process that becomes the command; inside a PID namespace that is
 * a CLONE_VM child of the init (spawn_command), so it must end in execve
 * or _exit, never return. */
static noreturn void
finish_and_exec(struct run *r)
{
    if (chdir(r->o->cwd) != 0)
        sandbox_helper_die(errno, "--cwd %s", r->o->cwd);
    if (r->kind == SANDBOX_READ_ONLY || r->kind == SANDBOX_WORKSPACE_WRITE)
        drop_file_capabilities(r);
    apply_landlock(r);
    char *path = NULL;
    if (r->o->exec_notify_fd >= 0)
        path = apply_exec_notify(r);
    else
        apply_filter(r);
    send_report(r->o->report_fd, r->report);
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
    run_init(&r, o);
    r.take_offered = o->exec_notify_fd >= 0 && sandbox_exec_filter_by_number(o->exec_notify_fd);
    bool confine = r.kind == SANDBOX_READ_ONLY || r.kind == SANDBOX_WORKSPACE_WRITE;
    bool notify = o->exec_notify_fd >= 0;
    if (r.kind == SANDBOX_DANGER_FULL_ACCESS) {
        if (chdir(o->cwd) != 0)
            sandbox_helper_die(errno, "--cwd %s", o->cwd);
        /* exec-notify alone: no confinement, only the exec filter (for
         * escalated programs); a filter needs no_new_privs. */
        char *path = NULL;
        if (notify) {
            set_no_new_privs(&r);
            path = apply_exec_notify(&r);
        }
        send_report(o->report_fd, r.report);
        exec_program_at(o, path);
    }

    if (confine || r.restrict_net || notify)
        set_no_new_privs(&r);
    if (!confine && o->net_proxy_fd >= 0) {
        close(o->net_proxy_fd); /* no namespaces here: the policy's network stands */
        o->net_proxy_fd = -1;
    }
    if (confine) {
        enter_namespaces(&r);
        enter_proxy_network(&r);
        if (r.ns.pid)
            run_in_pid_namespace(&r);
        report_namespaces(&r);
    }
    finish_and_exec(&r);
}
