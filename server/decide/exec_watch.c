#include "server/decide/exec_watch.h"

#include "server/decide/decide.h"
#include "common/fd_pass.h"
#include "common/log.h"
#include "common/proc_stat.h"
#include "server/call/shell_call.h"
#include "supervise/exec_notify.h"
#include "rules/shlex.h"
#include "supervise/unix_connect.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define REASON_NO_ANSWER "no answer (the call ended)"

/* Processes of an outside tree a person let run, remembered per listener;
 * the oldest goes past this. */
#define MAX_APPROVED_PIDS 256
/* How far up the parents are looked at for one of them. */
#define MAX_ANCESTRY 64

struct listener;

/* One exec kept waiting while the person is asked. */
struct ask {
    struct listener *l;
    uint64_t id;
    struct decide_exec exec; /* copies of the request's strings */
    struct decide_result decision;
    struct decide_question *q;
    struct ask *next;
};

/* A connect of the tree still in progress on a blocking socket, or a
 * sendmsg waiting for room on one (unix_connect_wait): answered when its
 * socket polls writable. */
struct conn_wait {
    struct listener *l; /* NULL once l closed */
    struct unix_connect_wait w;
    uv_poll_t poll;
    struct conn_wait *next;
};

/* One hand-over socket, then the listener it brought. */
struct listener {
    struct exec_watch *w;
    int sock;     /* the server's end, until the helper's message came */
    int child_fd; /* the child's end, until exec_watch_spawned */
    uv_poll_t sock_poll, notify_poll;
    bool sock_polling, notify_polling;
    struct exec_notify *n;
    struct conn_wait *waits;
    int handles_open;
    bool closing;
    /* an escalated program's tree, let out by a rule: its execs run only
     * when a rule names them or a person approves (NULL: in place) */
    struct decide_outside *outside;
    /* the tree of an escalated program, however its execs are decided:
     * it runs outside the sandbox */
    bool escalated;
    /* processes of that tree a person approved, with their start times:
     * what they run is decided as in the sandbox */
    struct approved_pid {
        pid_t pid;
        unsigned long long start;
    } * approved;
    size_t n_approved;
    struct listener *next;
};

struct exec_watch {
    uv_loop_t *loop;
    struct decide_call *dc; /* a reference */
    char *wrapper_real;     /* NULL when the wrapper cannot be resolved */
    char *bash_real;        /* the patched Bash, likewise */
    char *shell_real;       /* the shell that runs the command (--shell), likewise */
    char *label;
    struct listener *listeners;
    struct ask *asks;
    struct unix_connect_config sockets; /* the tree's connects (unix_connect.h) */
    struct unix_connect_netns netns;    /* sockets.netns points here when set */
    bool strict;
    bool take_listener; /* offer to take the helper's listener by number */
    bool inherit;       /* --escalated-children=inherit: outside trees are not asked about */
    bool released;
};

/* ---- decisions ---- */

static void
refuse(struct exec_notify_decision *out, const char *reason)
{
    out->verdict = EXEC_NOTIFY_REFUSE;
    out->err = EACCES;
    out->reason = strdup(reason);
}

/* The parent and start time (clock ticks since boot) of pid
 * (proc_stat_read).  Returns 0, or -1 when it cannot be read. */
static int
proc_stat(pid_t pid, pid_t *ppid, unsigned long long *start)
{
    struct proc_stat st;
    if (proc_stat_read(pid, &st) < 0)
        return -1;
    *ppid = st.ppid;
    *start = st.start;
    return 0;
}

/* Whether pid, or a parent of it within the tree, is a process a person
 * approved on l (the same process: pid and start time).  A process whose
 * parent died has the server as parent: the chain ends there, and its
 * execs are asked about again. */
static bool
under_approval(const struct listener *l, pid_t pid)
{
    pid_t self = getpid();
    for (int depth = 0; l->n_approved > 0 && depth < MAX_ANCESTRY && pid > 1 && pid != self;
         depth++) {
        pid_t ppid = 0;
        unsigned long long start = 0;
        bool listed = false;
        for (size_t i = 0; i < l->n_approved && !listed; i++)
            listed = l->approved[i].pid == pid;
        if (proc_stat(pid, &ppid, &start) < 0)
            return false;
        for (size_t i = 0; listed && i < l->n_approved; i++) {
            if (l->approved[i].pid == pid && l->approved[i].start == start)
                return true;
        }
        pid = ppid;
    }
    return false;
}

/* A person approved pid's exec on l: what it runs from now on (and its
 * children) is decided as in the sandbox.  Called while pid waits in that
 * exec, so it is not a reused pid. */
static void
note_approved(struct listener *l, pid_t pid)
{
    pid_t ppid;
    unsigned long long start;
    if (!l->outside || proc_stat(pid, &ppid, &start) < 0)
        return;
    if (!l->approved && !(l->approved = calloc(MAX_APPROVED_PIDS, sizeof(*l->approved)))) {
        /* its children are asked about again */
        log_warn("exec watch %s: out of memory remembering an approval", l->w->label);
        return;
    }
    if (l->n_approved == MAX_APPROVED_PIDS) {
        memmove(&l->approved[0], &l->approved[1], (MAX_APPROVED_PIDS - 1) * sizeof(l->approved[0]));
        l->n_approved--;
    }
    l->approved[l->n_approved++] = (struct approved_pid){pid, start};
}

/* Variables that name code to run: the dynamic loader's and the C
 * library's (into any dynamically linked program), a shell's before its
 * script, an interpreter's before its program ('*': a prefix).  The
 * escalated program's own environment has none (escalated_env); these
 * are what it set for its children. */
static const char *const code_vars[] = {
    "LD_*",     "GCONV_PATH",  "GLIBC_TUNABLES", "LOCPATH",    "BASH_ENV",
    "ENV",      "BASH_FUNC_*", "SHELLOPTS",      "BASHOPTS",   "PS4",
    "PERL5OPT", "PERL5LIB",    "PERLLIB",        "PYTHONPATH", "PYTHONHOME",
    "RUBYOPT",  "RUBYLIB",     "NODE_OPTIONS",   NULL,
};

static bool
sets_code_env(const struct exec_notify_request *req)
{
    for (size_t i = 0; i < req->envc; i++) {
        const char *eq = strchr(req->envp[i], '=');
        size_t len = eq ? (size_t)(eq - req->envp[i]) : strlen(req->envp[i]);
        for (size_t k = 0; code_vars[k]; k++) {
            size_t vlen = strlen(code_vars[k]);
            bool prefix = code_vars[k][vlen - 1] == '*';
            if (prefix ? len >= vlen - 1 && strncmp(req->envp[i], code_vars[k], vlen - 1) == 0
                       : len == vlen && strncmp(req->envp[i], code_vars[k], vlen) == 0)
                return true;
        }
    }
    return false;
}

/* The exec as the decision sees it (req borrowed). */
static struct decide_exec
exec_of(const struct listener *l, const struct exec_notify_request *req)
{
    const struct decide_outside *outside =
        l && l->outside && !under_approval(l, req->pid) ? l->outside : NULL;
    return (struct decide_exec){
        .source = DECIDE_FROM_TREE,
        .path = req->resolved,
        .cwd = req->cwd[0] ? req->cwd : "/",
        .argv = req->argv,
        .argc = req->argc,
        .canonical = req->canonical,
        .interpreters = req->interpreters,
        .n_interpreters = req->n_interpreters,
        .pid = req->pid,
        .outside = outside,
        .outside_tree = l && l->escalated,
        .code_env = sets_code_env(req),
    };
}

/*
 * execgate-wrapper FILE ARGV0 ARGS...: the shell hands the wrapper the
 * program it is about to run, and the wrapper asks the escalation path,
 * which decides (and asks) about that program.  So the wrapper's own exec
 * continues without a question, unless the program it names is forbidden:
 * then it is refused here, so a forged exec of the wrapper (one that does
 * not come from the shell, or whose escalation socket is gone) gains
 * nothing either.
 */
static void
decide_wrapper(struct exec_watch *w, const struct exec_notify_request *req,
               struct exec_notify_decision *out)
{
    if (req->argc < 3) {
        out->verdict = EXEC_NOTIFY_CONTINUE; /* the wrapper refuses to run anything */
        return;
    }
    struct decide_exec e = exec_of(NULL, req);
    e.path = req->argv[1];
    e.canonical = NULL;
    e.interpreters = NULL;
    e.n_interpreters = 0;
    e.argv = req->argv + 2;
    e.argc = req->argc - 2;
    struct decide_result r;
    decide_exec(w->dc, &e, &r);
    if (r.verdict == DECIDE_DENY) {
        refuse(out, r.reason);
        decide_audit(w->dc, &e, &r, "refuse", r.reason, r.answered_by, -1, 0);
    } else {
        /* a prompt is the wrapper's to ask, once it runs */
        out->verdict = EXEC_NOTIFY_CONTINUE;
    }
    decide_result_release(&r);
}

static void ask_free(struct ask *a);

static void
on_answer(void *data, bool approved, const char *reason)
{
    struct ask *a = data;
    struct exec_watch *w = a->l->w;
    a->q = NULL;
    decide_audit(w->dc, &a->exec, &a->decision, approved ? "continue" : "refuse", reason, "user",
                 -1, 0);
    if (approved)
        note_approved(a->l, a->exec.pid);
    if (a->l->n && exec_notify_answer(a->l->n, a->id, approved, reason) < 0)
        log_debug("exec watch %s: the exec asked about is gone", w->label);
    log_info("exec watch %s: %s %s%s%s", w->label, approved ? "approved" : "refused",
             a->decision.program, approved ? "" : ": ", approved ? "" : (reason ? reason : ""));
    ask_free(a);
}

static void
ask_free(struct ask *a)
{
    struct exec_watch *w = a->l->w;
    for (struct ask **p = &w->asks; *p; p = &(*p)->next) {
        if (*p == a) {
            *p = a->next;
            break;
        }
    }
    decide_question_cancel(a->q);
    decide_result_release(&a->decision);
    for (size_t i = 0; i < a->exec.argc; i++)
        free((char *)a->exec.argv[i]);
    free((char **)a->exec.argv);
    free((char *)a->exec.path);
    free((char *)a->exec.cwd);
    free(a);
}

/* A question for the exec req, on w's list; what it keeps comes with
 * ask_keep once the person is really asked.  NULL when out of memory. */
static struct ask *
ask_new(struct listener *l, const struct exec_notify_request *req)
{
    struct ask *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->l = l;
    a->id = req->id;
    a->decision.fd = -1;
    a->next = l->w->asks;
    l->w->asks = a;
    return a;
}

/* Keeps in a what the answer's audit record needs once req is gone:
 * copies of its strings, and the decision (taken from r, also on
 * failure).  Returns 0, or -1 when out of memory. */
static int
ask_keep(struct ask *a, const struct exec_notify_request *req, const struct decide_outside *outside,
         bool outside_tree, struct decide_result *r)
{
    a->decision = *r;
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    a->exec = exec_of(NULL, req);
    a->exec.outside = outside;
    a->exec.outside_tree = outside_tree;
    a->exec.canonical = NULL;
    a->exec.interpreters = NULL;
    a->exec.n_interpreters = 0;
    char **argv = calloc(req->argc + 1, sizeof(char *));
    a->exec.argv = (const char *const *)argv;
    a->exec.path = strdup(req->resolved);
    a->exec.cwd = strdup(a->exec.cwd);
    bool ok = argv && a->exec.path && a->exec.cwd;
    a->exec.argc = 0;
    for (size_t i = 0; ok && i < req->argc; i++, a->exec.argc++)
        ok = (argv[i] = strdup(req->argv[i])) != NULL;
    return ok ? 0 : -1;
}

/* A person is to answer (r taken): a session approval, or a client that
 * cannot be asked, answers at once, without copying the request. */
static void
decide_ask_tree(struct listener *l, const struct exec_notify_request *req,
                const struct decide_exec *e, struct decide_result *r,
                struct exec_notify_decision *out)
{
    struct exec_watch *w = l->w;
    struct ask *a = !w->released ? ask_new(l, req) : NULL;
    if (!a) {
        decide_result_release(r);
        refuse(out, w->released ? REASON_NO_ANSWER : "out of memory");
        return;
    }
    const char *reason = NULL, *by = NULL;
    switch (decide_ask(w->dc, e, r, on_answer, a, &a->q, &reason, &by)) {
    case DECIDE_ASK_APPROVED:
        note_approved(l, req->pid);
        out->verdict = EXEC_NOTIFY_CONTINUE;
        decide_audit(w->dc, e, r, "continue", NULL, by, -1, 0);
        break;
    case DECIDE_ASK_DENIED:
        log_warn("exec watch %s: refused %s (pid %d): %s", w->label, req->resolved, req->pid,
                 reason);
        refuse(out, reason);
        decide_audit(w->dc, e, r, "refuse", reason, by, -1, 0);
        break;
    case DECIDE_ASK_PENDING:
        if (ask_keep(a, req, e->outside, e->outside_tree, r) < 0) {
            refuse(out, "out of memory");
            break; /* ask_free withdraws the question */
        }
        log_info("exec watch %s: asking about %s (pid %d)", w->label, req->resolved, req->pid);
        out->verdict = EXEC_NOTIFY_ASK;
        return;
    }
    ask_free(a);
    decide_result_release(r);
}

/* Every exec of the tree but the shell's hand-over to the wrapper. */
static void
decide_tree(struct listener *l, const struct exec_notify_request *req,
            struct exec_notify_decision *out)
{
    struct exec_watch *w = l->w;
    struct decide_exec e = exec_of(l, req);
    struct decide_result r;
    decide_exec(w->dc, &e, &r);
    switch (r.verdict) {
    case DECIDE_DENY:
        log_info("exec watch %s: refused %s (pid %d): %s", w->label, req->resolved, req->pid,
                 r.reason);
        refuse(out, r.reason);
        decide_audit(w->dc, &e, &r, "refuse", r.reason, r.answered_by, -1, 0);
        break;
    case DECIDE_ASK:
        decide_ask_tree(l, req, &e, &r, out);
        return;
    case DECIDE_RUN:
    case DECIDE_ESCALATE: /* never for the tree: runs in place */
        out->verdict = EXEC_NOTIFY_CONTINUE;
        /* only what was not a plain "continue" is written; the client
         * may ask for every decision at debug */
        if (strcmp(r.answered_by, "rules") != 0)
            decide_audit(w->dc, &e, &r, "continue", r.reason, r.answered_by, -1, 0);
        else
            decide_trace(w->dc, &e, &r, "continue");
        break;
    }
    decide_result_release(&r);
}

/* Whether /proc/PID/exe is the file real (a resolved path), or NULL. */
static bool
exe_is(pid_t pid, const char *real)
{
    if (!real)
        return false;
    char *link = NULL;
    if (asprintf(&link, "/proc/%d/exe", (int)pid) < 0)
        return false;
    size_t cap = strlen(real) + 2;
    char *buf = malloc(cap);
    ssize_t n = buf ? readlink(link, buf, cap) : -1;
    free(link);
    bool same = n >= 0 && (size_t)n == cap - 2 && memcmp(buf, real, (size_t)n) == 0;
    free(buf);
    return same;
}

/*
 * Whether the process execing the wrapper is one of the server's patched
 * shells, the one it starts (--shell) or the Bash the wrapper runs scripts
 * with (EXECGATE_BASH): their execs of the wrapper are the hand-over the
 * escalation path decides (with Deny's own message), so they continue
 * without any check here.  The process is stopped in this exec (the
 * notification was still valid after it was read), so its pid is not
 * reused while /proc/PID/exe is read.
 */
static bool
from_shell(struct exec_watch *w, pid_t pid)
{
    return exe_is(pid, w->bash_real) ||
           (w->shell_real && (!w->bash_real || strcmp(w->shell_real, w->bash_real) != 0) &&
            exe_is(pid, w->shell_real));
}

/* The patched Bash's exec of the wrapper, known from the file and the
 * process alone (exec_notify's quick path: its argv, cwd and #! lines are
 * not read).  Anything else is decided in full. */
static bool
quick(void *arg, pid_t pid, const char *canonical)
{
    struct listener *l = arg;
    struct exec_watch *w = l->w;
    /* outside the sandbox the wrapper is a program like any other */
    return !l->outside && w->wrapper_real && strcmp(canonical, w->wrapper_real) == 0 &&
           from_shell(w, pid);
}

static void
decide(void *arg, const struct exec_notify_request *req, struct exec_notify_decision *out)
{
    struct listener *l = arg;
    struct exec_watch *w = l->w;
    if (!l->outside && w->wrapper_real && req->canonical &&
        strcmp(req->canonical, w->wrapper_real) == 0) {
        if (from_shell(w, req->pid))
            out->verdict = EXEC_NOTIFY_CONTINUE;
        else
            decide_wrapper(w, req, out);
        return;
    }
    decide_tree(l, req, out);
}

/* ---- listeners on the loop ---- */

static void maybe_free(struct exec_watch *w);
static void outside_free(struct decide_outside *o);

/* ---- the tree's sockets ---- */

static void
on_socket_refused(void *arg, pid_t pid, const char *what, const char *reason)
{
    struct exec_watch *w = arg;
    log_info("exec watch %s: refused %s (pid %d): %s", w->label, what, (int)pid, reason);
}

static void
on_wait_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Unlinks cw from its listener and closes it (its fd goes with it, after
 * uv_close took it out of the epoll set). */
static void
conn_wait_close(struct conn_wait *cw)
{
    if (cw->l) {
        for (struct conn_wait **p = &cw->l->waits; *p; p = &(*p)->next) {
            if (*p == cw) {
                *p = cw->next;
                break;
            }
        }
        cw->l = NULL;
    }
    uv_close((uv_handle_t *)&cw->poll, on_wait_closed);
    unix_connect_abandon(&cw->w);
}

/* What a poll that failed (status < 0) says about the connect: libuv
 * reports a socket in error (a refused connect among them) as a failed
 * poll, and the socket's own error is the answer the kernel would have
 * given the command; EIO only when it has none to give. */
static int
poll_error(const struct unix_connect_wait *w, int status)
{
    if (status >= 0)
        return 0;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err == 0)
        return EIO;
    return err;
}

static void
on_connect_done(uv_poll_t *h, int status, int events)
{
    struct conn_wait *cw = h->data;
    (void)events;
    /* out of the epoll set while the fd is still open: its file is the
     * target's socket, which outlives this fd, and a registration left on
     * it would keep reporting it writable */
    uv_poll_stop(&cw->poll);
    if (cw->l && cw->l->n) {
        int listener = exec_notify_fd(cw->l->n);
        int rc = unix_connect_finish(listener, &cw->w, poll_error(&cw->w, status));
        /* a send that still finds no room waits for the next writable */
        if (rc == 1 && uv_poll_start(&cw->poll, UV_WRITABLE | UV_DISCONNECT, on_connect_done) == 0)
            return;
        if (rc == 1)
            (void)unix_connect_finish(listener, &cw->w, ENOMEM);
    }
    conn_wait_close(cw);
}

/* exec_notify's wait callback: a connect of the tree in progress waits on
 * the loop; if it cannot, it fails now (ENOMEM) rather than hang. */
static void
on_connect_wait(void *arg, const struct unix_connect_wait *wait)
{
    struct listener *l = arg;
    struct unix_connect_wait copy = *wait;
    struct conn_wait *cw = calloc(1, sizeof(*cw));
    /* uv_poll_init makes the fd non-blocking: the file is the target's
     * socket, whose flags are the target's own */
    int flags = fcntl(copy.fd, F_GETFL);
    int rc = cw && flags >= 0 ? uv_poll_init(l->w->loop, &cw->poll, copy.fd) : UV_ENOMEM;
    if (flags >= 0)
        (void)fcntl(copy.fd, F_SETFL, flags);
    if (rc < 0) {
        free(cw);
        (void)unix_connect_finish(exec_notify_fd(l->n), &copy, ENOMEM);
        return;
    }
    cw->l = l;
    cw->w = copy;
    cw->poll.data = cw;
    cw->next = l->waits;
    l->waits = cw;
    if (uv_poll_start(&cw->poll, UV_WRITABLE | UV_DISCONNECT, on_connect_done) < 0) {
        uv_poll_stop(&cw->poll);
        (void)unix_connect_finish(exec_notify_fd(l->n), &cw->w, ENOMEM);
        conn_wait_close(cw);
    }
}

/* What every listener of w shares: strict mode, the quick path, and the
 * tree's sockets. */
static void
listener_setup(struct listener *l)
{
    exec_notify_set_refuse_shared_memory(l->n, l->w->strict);
    exec_notify_set_quick(l->n, quick);
    /* an escalated program's children: what its environment names for the
     * loader is code that would run outside (code_env) */
    exec_notify_set_read_env(l->n, l->outside != NULL);
    exec_notify_set_connect(l->n, &l->w->sockets, on_connect_wait, l);
}

static void
on_listener_closed(uv_handle_t *h)
{
    struct listener *l = h->data;
    if (--l->handles_open > 0)
        return;
    struct exec_watch *w = l->w;
    for (struct listener **p = &w->listeners; *p; p = &(*p)->next) {
        if (*p == l) {
            *p = l->next;
            break;
        }
    }
    outside_free(l->outside);
    free(l->approved);
    free(l);
    maybe_free(w);
}

/* Closes what l holds; its asks are withdrawn (their execs fail with the
 * listener). */
static void
listener_close(struct listener *l)
{
    if (l->closing)
        return;
    l->closing = true;
    for (struct ask *a = l->w->asks, *next; a; a = next) {
        next = a->next;
        if (a->l == l)
            ask_free(a);
    }
    while (l->waits)
        conn_wait_close(l->waits); /* the connects fail with the listener */
    if (l->sock_polling) {
        l->sock_polling = false;
        uv_close((uv_handle_t *)&l->sock_poll, on_listener_closed);
    }
    if (l->notify_polling) {
        l->notify_polling = false;
        uv_close((uv_handle_t *)&l->notify_poll, on_listener_closed);
    }
    /* uv_close dropped them from the poll set: the fds go now */
    if (l->sock >= 0)
        close(l->sock);
    l->sock = -1;
    if (l->child_fd >= 0)
        close(l->child_fd);
    l->child_fd = -1;
    exec_notify_free(l->n);
    l->n = NULL;
    /* freed by on_listener_closed: sock_poll always exists, so at least
     * one close callback is still to come */
}

static void
on_notify(uv_poll_t *h, int status, int events)
{
    struct listener *l = h->data;
    if (l->closing)
        return;
    int rc = status < 0 ? status : exec_notify_process(l->n);
    if (rc < 0) {
        log_warn("exec watch %s: listener: %s", l->w->label, strerror(-rc));
        listener_close(l);
        return;
    }
    /* POLLHUP: no process is left under this filter (libuv reports it as
     * readable; exec_notify_process's own poll told them apart) */
    if (exec_notify_hung_up(l->n))
        listener_close(l);
}

static void
start_listening(struct listener *l, int fd, const char *exec_path)
{
    l->n = exec_notify_new(fd, exec_path, decide, NULL, l);
    if (l->n)
        listener_setup(l);
    int rc = l->n ? uv_poll_init(l->w->loop, &l->notify_poll, exec_notify_fd(l->n)) : UV_ENOMEM;
    if (rc == 0) {
        l->notify_poll.data = l;
        l->notify_polling = true;
        l->handles_open++;
        rc = uv_poll_start(&l->notify_poll, UV_READABLE | UV_DISCONNECT, on_notify);
    }
    if (rc < 0) {
        /* the execs of this tree then fail: the listener closes */
        log_error("exec watch %s: cannot watch a listener: %s", l->w->label, uv_strerror(rc));
        listener_close(l);
    }
}

static void
on_handover(uv_poll_t *h, int status, int events)
{
    struct listener *l = h->data;
    if (l->closing)
        return;
    int fd = -1;
    char *exec_path = NULL;
    int rc = status < 0 ? -EPIPE : exec_notify_receive_listener(l->sock, &fd, &exec_path);
    if (rc == -EAGAIN || rc == -EINTR) {
        free(exec_path);
        return;
    }
    uv_poll_stop(&l->sock_poll);
    l->sock_polling = false;
    uv_close((uv_handle_t *)&l->sock_poll, on_listener_closed);
    close(l->sock);
    l->sock = -1;
    if (rc == 0) {
        start_listening(l, fd, exec_path);
    } else {
        if (rc == -EOPNOTSUPP)
            log_warn("exec watch %s: %s runs without exec interception (the kernel has no user "
                     "notification)",
                     l->w->label, exec_path ? exec_path : "a command");
        else if (rc == -EPERM || rc == -ESRCH)
            log_warn("exec watch %s: cannot take the listener from the sandbox (%s); its command "
                     "is killed, since nothing would decide its execs",
                     l->w->label, strerror(-rc));
        else if (rc != -EPIPE)
            log_warn("exec watch %s: bad hand-over: %s", l->w->label, strerror(-rc));
        /* -EPIPE: the helper failed before handing over; it says why */
        listener_close(l);
    }
    free(exec_path);
}

/* Puts l, with its one handle open, on w's list. */
static void
listener_link(struct exec_watch *w, struct listener *l)
{
    l->w = w;
    l->handles_open = 1;
    l->next = w->listeners;
    w->listeners = l;
}

int
exec_watch_open(struct exec_watch *w)
{
    if (w->released)
        return -EINVAL;
    struct listener *l = calloc(1, sizeof(*l));
    int sv[2];
    if (!l)
        return -ENOMEM;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        int e = errno;
        free(l);
        return -e;
    }
    /* the helper may leave its listener for us to take (no courier
     * process per call) where this kernel and process allow it; otherwise
     * it sends it itself (exec_filter.h).  Only in tree mode: in shell
     * mode the helper's own execve is not notified, so it cannot wait
     * there for the listener to be taken. */
    if (w->take_listener)
        (void)exec_notify_offer_take(sv[0]);
    /* uv_poll_init makes the server's end non-blocking; the helper's stays
     * as a helper expects it */
    int rc = uv_poll_init(w->loop, &l->sock_poll, sv[0]);
    if (rc < 0) {
        close(sv[0]);
        close(sv[1]);
        free(l);
        return rc;
    }
    l->sock = sv[0];
    l->child_fd = sv[1];
    l->sock_poll.data = l;
    l->sock_polling = true;
    listener_link(w, l);
    rc = uv_poll_start(&l->sock_poll, UV_READABLE | UV_DISCONNECT, on_handover);
    if (rc < 0) {
        listener_close(l);
        return rc;
    }
    return sv[1];
}

void
exec_watch_spawned(struct exec_watch *w, int child_fd)
{
    if (child_fd < 0)
        return;
    for (struct listener *l = w->listeners; l; l = l->next) {
        if (l->child_fd == child_fd) {
            close(child_fd);
            l->child_fd = -1;
            return;
        }
    }
}

/* "git status": the program's last component and its arguments, quoted
 * as a shell would need them; NULL when out of memory. */
static char *
command_shown(const char *program, const char *const *argv, size_t argc)
{
    const char **words = calloc(argc + 1, sizeof(*words));
    if (!words)
        return NULL;
    const char *slash = strrchr(program, '/');
    words[0] = slash ? slash + 1 : program;
    for (size_t i = 1; i < argc; i++)
        words[i] = argv[i];
    char *joined = shlex_join(words, argc > 0 ? argc : 1);
    free(words);
    return joined;
}

static void
outside_free(struct decide_outside *o)
{
    if (!o)
        return;
    free((char *)o->command);
    free((char *)o->why);
    free(o);
}

/* What the children's questions say of the program e started, let out by
 * r; NULL when out of memory. */
static struct decide_outside *
outside_new(const struct decide_exec *e, const struct decide_result *r)
{
    struct decide_outside *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->command = command_shown(r->program ? r->program : e->path, e->argv, e->argc);
    o->why = strdup(r->parent_rule ? r->parent_rule : "allowed by a rule");
    if (!o->command || !o->why) {
        outside_free(o);
        return NULL;
    }
    return o;
}

int
exec_watch_adopt(struct exec_watch *w, int listener, const struct decide_exec *e,
                 const struct decide_result *r, bool by_person)
{
    struct listener *l = w->released ? NULL : calloc(1, sizeof(*l));
    /* a person saw the command, or --escalated-children=inherit: the tree
     * is decided as in the sandbox (the reference's way) */
    if (l && !by_person && !w->inherit && !(l->outside = outside_new(e, r))) {
        free(l);
        l = NULL;
    }
    if (!l) {
        close(listener);
        return w->released ? -EINVAL : -ENOMEM;
    }
    l->w = w;
    l->escalated = true;
    l->sock = -1;
    l->child_fd = -1;
    l->n = exec_notify_new(listener, NULL, decide, NULL, l);
    if (l->n)
        listener_setup(l);
    int rc = l->n ? uv_poll_init(w->loop, &l->notify_poll, exec_notify_fd(l->n)) : -ENOMEM;
    if (rc < 0) {
        exec_notify_free(l->n);
        outside_free(l->outside);
        free(l);
        return rc;
    }
    l->notify_poll.data = l;
    l->notify_polling = true;
    listener_link(w, l);
    rc = uv_poll_start(&l->notify_poll, UV_READABLE | UV_DISCONNECT, on_notify);
    if (rc < 0) {
        log_error("exec watch %s: cannot watch a listener: %s", w->label, uv_strerror(rc));
        listener_close(l);
    }
    return rc;
}

/* ---- life ---- */

/* The server's wrapper and Bash are fixed by its options, but a call used
 * to resolve both afresh: realpath reads every component's link, some 15
 * system calls per call.  Each is resolved once per path (again only when
 * the path given changes, or when it could not be resolved). */
struct resolved {
    char *path, *real;
};
static struct resolved resolved_wrapper, resolved_bash, resolved_shell;

/* realpath(path) as a new malloc'd string, or NULL. */
static char *
resolve_cached(struct resolved *r, const char *path)
{
    if (!r->path || strcmp(r->path, path) != 0) {
        char *real = realpath(path, NULL);
        char *copy = real ? strdup(path) : NULL;
        if (!copy) {
            free(real);
            return NULL;
        }
        free(r->path);
        free(r->real);
        r->path = copy;
        r->real = real;
    }
    return strdup(r->real);
}

struct exec_watch *
exec_watch_new(uv_loop_t *loop, struct decide_call *dc, const char *wrapper, const char *bash,
               const char *shell)
{
    struct exec_watch *w = calloc(1, sizeof(*w));
    if (!w || !(w->label = strdup(decide_call_label(dc)))) {
        free(w);
        return NULL;
    }
    w->loop = loop;
    w->dc = decide_call_ref(dc);
    w->sockets.refused = on_socket_refused;
    w->sockets.arg = w;
    /* NULL when it cannot be resolved: then nothing is treated as the wrapper */
    w->wrapper_real = wrapper ? resolve_cached(&resolved_wrapper, wrapper) : NULL;
    w->bash_real = bash ? resolve_cached(&resolved_bash, bash) : NULL;
    w->shell_real = shell ? resolve_cached(&resolved_shell, shell) : NULL;
    return w;
}

void
exec_watch_set_strict(struct exec_watch *w, bool on)
{
    w->strict = on;
}

void
exec_watch_set_take_listener(struct exec_watch *w, bool on)
{
    w->take_listener = on;
}

void
exec_watch_allow_unix(struct exec_watch *w, const struct unix_connect_inode *allowed, size_t n)
{
    w->sockets.allowed = allowed;
    w->sockets.n_allowed = n;
}

void
exec_watch_set_netns(struct exec_watch *w, const struct unix_connect_netns *ns)
{
    w->netns = *ns;
    w->sockets.netns = &w->netns;
}

void
exec_watch_set_inherit(struct exec_watch *w, bool on)
{
    w->inherit = on;
}

static void
maybe_free(struct exec_watch *w)
{
    if (!w->released || w->listeners)
        return;
    decide_call_unref(w->dc);
    free(w->wrapper_real);
    free(w->bash_real);
    free(w->shell_real);
    free(w->label);
    free(w);
}

void
exec_watch_release(struct exec_watch *w)
{
    if (!w || w->released)
        return;
    w->released = true;
    for (struct listener *l = w->listeners, *next; l; l = next) {
        next = l->next;
        listener_close(l);
    }
    maybe_free(w);
}
