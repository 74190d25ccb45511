#include "exec_watch.h"

#include "approvals.h"
#include "esc_io.h"
#include "escalation.h"
#include "log.h"
#include "utf8.h"
/* rules/ and sandbox/ both have a policy.h: named by their directories */
#include "../rules/policy.h"
#include "../sandbox/exec_notify.h"
#include "../sandbox/exec_notify_rules.h"

#include <errno.h>
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

struct listener;

/* A command remembered for the call: approved for one exec by pid, or
 * declined (pid 0: any process). */
struct memo {
    pid_t pid;
    char *key; /* program NUL args... joined with NUL, keylen bytes */
    size_t keylen;
    char *reason; /* declined: the reason to repeat */
};

struct memo_list {
    struct memo items[EXEC_WATCH_MAX_REMEMBERED];
    size_t n;
};

/* One exec kept waiting while the person is asked. */
struct ask {
    struct listener *l;
    uint64_t id;
    pid_t pid;
    char *argv0;
    char *program;
    char *file;  /* the canonical file (declines are remembered by it) */
    char **args; /* argv[1..] */
    size_t nargs;
    char *cwd;
    struct escalation_question *q;
    struct ask *next;
};

/* One hand-over socket, then the listener it brought. */
struct listener {
    struct exec_watch *w;
    int sock;     /* the server's end, until the helper's message came */
    int child_fd; /* the child's end, until exec_watch_spawned */
    uv_poll_t sock_poll, notify_poll;
    bool sock_polling, notify_polling;
    struct exec_notify *n;
    int handles_open;
    bool closing;
    struct listener *next;
};

struct exec_watch {
    uv_loop_t *loop;
    struct escalation_server *es;
    struct escalation_call *ec;
    char *wrapper_real; /* NULL when the wrapper cannot be resolved */
    char *bash_real;    /* the patched Bash, likewise */
    char *label;
    struct listener *listeners;
    struct ask *asks;
    struct memo_list expected, declined;
    bool strict;
    bool released;
};

/* ---- the probe ---- */

static int
probe_child(int sock)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof(code) / sizeof(code[0]), code};
    long ppid = syscall(SYS_getppid);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return 2;
    long fd =
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0)
        return 3;
    int ifd = (int)fd;
    if (esc_io_send_all(sock, "L", 1, &ifd, 1) != 0)
        return 4;
    close(ifd);
    /* continued by the parent: the real getppid runs */
    return syscall(SYS_getppid) == ppid ? 0 : 5;
}

static int
probe_answer(int sock)
{
    char b;
    struct esc_fdlist fds = {.count = 0};
    struct pollfd p = {sock, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1 || esc_io_recvmsg(sock, &b, 1, &fds) != 1 || fds.count != 1) {
        esc_fdlist_close(&fds);
        return -1;
    }
    int fd = fds.fds[0];
    struct seccomp_notif req;
    struct seccomp_notif_resp resp;
    memset(&req, 0, sizeof(req));
    memset(&resp, 0, sizeof(resp));
    struct pollfd pn = {fd, POLLIN, 0};
    int rc = -1;
    if (poll(&pn, 1, 5000) == 1 && ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
        resp.id = req.id;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        rc = ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0 ? 0 : -1;
    }
    close(fd);
    return rc;
}

/* The kernel's answer does not change while the process runs: probed once
 * (a server makes one mcp_server; the fuzz target makes one per input). */
static int probed;      /* 0: not yet, 1: supported, -1: not */
static char *probe_why; /* why not, kept for later callers */

static int probe_once(char **why);

int
exec_watch_probe(char **why)
{
    *why = NULL;
    const char *forced = getenv("EXECGATE_TEST_NO_USER_NOTIF");
    if (forced && strcmp(forced, "1") == 0) {
        *why = strdup("EXECGATE_TEST_NO_USER_NOTIF=1 (test)");
        return -1;
    }
    if (probed == 0) {
        probed = probe_once(&probe_why) == 0 ? 1 : -1;
    }
    if (probed < 0 && probe_why)
        *why = strdup(probe_why);
    return probed > 0 ? 0 : -1;
}

static int
probe_once(char **why)
{
    *why = NULL;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        if (asprintf(why, "socketpair: %s", strerror(errno)) < 0)
            *why = NULL;
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        _exit(probe_child(sv[1]));
    }
    close(sv[1]);
    int answered = pid > 0 ? probe_answer(sv[0]) : -1;
    close(sv[0]);
    int st = 0;
    if (pid > 0) {
        if (answered < 0)
            kill(pid, SIGKILL);
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
    if (pid > 0 && answered == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (asprintf(why, "the kernel has no usable seccomp user notification (probe %s %d)",
                 pid < 0 ? "fork failed" : "status", pid < 0 ? errno : st) < 0)
        *why = NULL;
    return -1;
}

/* ---- memos ---- */

static void
memo_free(struct memo *m)
{
    free(m->key);
    free(m->reason);
    memset(m, 0, sizeof(*m));
}

static void
memo_remove(struct memo_list *l, size_t i)
{
    memo_free(&l->items[i]);
    memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof(l->items[0]));
    l->n--;
}

static void
memo_add(struct memo_list *l, pid_t pid, char *key, size_t keylen, const char *reason)
{
    if (l->n == EXEC_WATCH_MAX_REMEMBERED)
        memo_remove(l, 0);
    char *r = reason ? strdup(reason) : NULL;
    l->items[l->n++] = (struct memo){pid, key, keylen, r};
}

/* The index of the memo for key (and pid, unless the memo's is 0), or -1. */
static long
memo_find(const struct memo_list *l, pid_t pid, const char *key, size_t keylen)
{
    for (size_t i = 0; i < l->n; i++) {
        const struct memo *m = &l->items[i];
        if ((m->pid == 0 || m->pid == pid) && m->keylen == keylen &&
            memcmp(m->key, key, keylen) == 0)
            return (long)i;
    }
    return -1;
}

static void
memo_clear(struct memo_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        memo_free(&l->items[i]);
    l->n = 0;
}

void
exec_watch_expect(struct exec_watch *w, pid_t pid, const char *program, const char *const *argv,
                  size_t argc)
{
    if (pid <= 0 || argc == 0)
        return;
    size_t len = 0;
    char *key = approvals_key(program, argv + 1, argc - 1, &len);
    if (key)
        memo_add(&w->expected, pid, key, len, NULL);
}

/* ---- decisions ---- */

static void
refuse(struct exec_notify_decision *out, const char *reason)
{
    out->verdict = EXEC_NOTIFY_REFUSE;
    out->err = EACCES;
    out->reason = strdup(reason);
}

static json_t *
text_json(const char *t)
{
    size_t len = 0;
    char *u = utf8_lossy(t, strlen(t), &len);
    json_t *j = u ? json_stringn(u, len) : NULL;
    free(u);
    return j ? j : json_null();
}

/*
 * One audit record for a decision that was not a plain "continue": a
 * refusal, or an exec that needed a question (docs/escalation.md, "Audit
 * log"; "source":"tree").  argv[0] is argv0, then args.  by: who decided.
 */
static void
audit_exec(struct exec_watch *w, pid_t pid, const char *file, const char *argv0,
           const char *const *args, size_t nargs, const char *cwd, bool allowed, const char *reason,
           const char *by)
{
    if (!escalation_server_auditing(w->es))
        return;
    json_t *argv = json_array();
    json_array_append_new(argv, text_json(argv0));
    for (size_t i = 0; i < nargs; i++)
        json_array_append_new(argv, text_json(args[i]));
    json_t *rec = json_pack("{s:s, s:s, s:i, s:o, s:o, s:o, s:s, s:s*, s:s}", "call", w->label,
                            "source", "tree", "pid", (int)pid, "file", text_json(file), "argv",
                            argv ? argv : json_array(), "workdir", text_json(cwd), "decision",
                            allowed ? "continue" : "refuse", "reason", reason, "answered_by", by);
    escalation_server_audit(w->es, rec);
}

static void
audit_req(struct exec_watch *w, const struct exec_notify_request *req, bool allowed,
          const char *reason, const char *by)
{
    audit_exec(w, req->pid, req->resolved, req->argc > 0 ? req->argv[0] : "",
               req->argc > 1 ? (const char *const *)req->argv + 1 : NULL,
               req->argc > 1 ? req->argc - 1 : 0, req->cwd, allowed, reason, by);
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
    const char *file = req->argv[1];
    char *abs = NULL;
    if (file[0] != '/' && req->cwd[0] && asprintf(&abs, "%s/%s", req->cwd, file) < 0)
        abs = NULL;
    bool preserve = escalation_server_preserve_program_paths(w->es);
    const char *names[] = {file[0] == '/' ? file : abs,
                           preserve ? NULL : exec_notify_rules_basename(file),
                           preserve ? NULL : exec_notify_rules_basename(req->argv[2])};
    struct exec_notify_decision v = {0};
    exec_notify_rules_decide_names(escalation_server_rules(w->es), names, 3,
                                   (const char *const *)req->argv + 3, req->argc - 3,
                                   preserve ? 0 : RULES_CHECK_RESOLVE_HOST_EXECUTABLES, &v);
    free(abs);
    if (v.verdict == EXEC_NOTIFY_REFUSE && v.err == ENOMEM) {
        free(v.reason);
        refuse(out, "out of memory");
    } else if (v.verdict == EXEC_NOTIFY_REFUSE) {
        *out = v;
        audit_req(w, req, false, out->reason, "rules");
    } else {
        /* a prompt is the wrapper's to ask, once it runs */
        free(v.reason);
        out->verdict = EXEC_NOTIFY_CONTINUE;
    }
}

/* The rules' verdict under every name the exec goes by (exec_notify_rules);
 * with --preserve-program-paths, as the escalation path matches, under
 * the full paths only. */
static void
decide_rules(struct exec_watch *w, const struct exec_notify_request *req,
             struct exec_notify_decision *out)
{
    const struct rules_policy *rules = escalation_server_rules(w->es);
    if (!escalation_server_preserve_program_paths(w->es)) {
        exec_notify_rules_decide((void *)rules, req, out);
        return;
    }
    const char *names[2 + EXEC_NOTIFY_MAX_INTERP_DEPTH] = {req->resolved, req->canonical};
    size_t n = 2;
    for (size_t i = 0; i < req->n_interpreters && n < sizeof(names) / sizeof(names[0]); i++)
        names[n++] = req->interpreters[i];
    exec_notify_rules_decide_names(rules, names, n,
                                   req->argc > 1 ? (const char *const *)req->argv + 1 : NULL,
                                   req->argc > 1 ? req->argc - 1 : 0, 0, out);
}

static void ask_free(struct ask *a);

static void
on_answer(void *data, bool approved, const char *reason)
{
    struct ask *a = data;
    struct exec_watch *w = a->l->w;
    a->q = NULL;
    if (!approved) {
        size_t len = 0;
        char *key = approvals_key(a->file, (const char *const *)a->args, a->nargs, &len);
        if (key)
            memo_add(&w->declined, 0, key, len, reason);
    }
    audit_exec(w, a->pid, a->program, a->argv0, (const char *const *)a->args, a->nargs, a->cwd,
               approved, reason, "user");
    if (a->l->n && exec_notify_answer(a->l->n, a->id, approved, reason) < 0)
        log_debug("exec watch %s: the exec asked about is gone", w->label);
    log_info("exec watch %s: %s %s%s%s", w->label, approved ? "approved" : "refused", a->program,
             approved ? "" : ": ", approved ? "" : (reason ? reason : ""));
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
    escalation_question_cancel(a->q);
    free(a->argv0);
    free(a->program);
    free(a->file);
    for (size_t i = 0; i < a->nargs; i++)
        free(a->args[i]);
    free(a->args);
    free(a->cwd);
    free(a);
}

static struct ask *
ask_new(struct listener *l, const struct exec_notify_request *req)
{
    struct ask *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->l = l;
    a->id = req->id;
    a->pid = req->pid;
    a->argv0 = strdup(req->argc > 0 ? req->argv[0] : "");
    a->nargs = req->argc > 0 ? req->argc - 1 : 0;
    a->program = strdup(req->resolved);
    a->file = strdup(req->canonical ? req->canonical : req->resolved);
    a->cwd = strdup(req->cwd);
    a->args = calloc(a->nargs + 1, sizeof(char *));
    bool ok = a->argv0 && a->program && a->file && a->cwd && a->args;
    for (size_t i = 0; ok && i < a->nargs; i++)
        ok = (a->args[i] = strdup(req->argv[i + 1])) != NULL;
    a->next = l->w->asks;
    l->w->asks = a;
    if (!ok) {
        ask_free(a);
        return NULL;
    }
    return a;
}

/* A prompt: what the call already knows answers it; else the person. */
static void
decide_ask(struct listener *l, const struct exec_notify_request *req,
           struct exec_notify_decision *out)
{
    struct exec_watch *w = l->w;
    size_t len = 0;
    char *key =
        approvals_key(req->resolved, req->argc > 1 ? (const char *const *)req->argv + 1 : NULL,
                      req->argc > 1 ? req->argc - 1 : 0, &len);
    if (!key) {
        refuse(out, "out of memory");
        return;
    }
    long i = memo_find(&w->expected, req->pid, key, len);
    if (i >= 0) {
        /* the wrapper's execv of what a person just approved */
        memo_remove(&w->expected, (size_t)i);
        free(key);
        out->verdict = EXEC_NOTIFY_CONTINUE;
        audit_req(w, req, true, "the wrapper's exec of what the escalation path approved",
                  "escalation");
        return;
    }
    free(key);
    /* declines are remembered by the file itself: a PATH search retries
     * /usr/bin/x and /bin/x, the same file on merged-/usr systems */
    key = approvals_key(req->canonical ? req->canonical : req->resolved,
                        req->argc > 1 ? (const char *const *)req->argv + 1 : NULL,
                        req->argc > 1 ? req->argc - 1 : 0, &len);
    if (!key) {
        refuse(out, "out of memory");
        return;
    }
    i = memo_find(&w->declined, req->pid, key, len);
    free(key);
    if (i >= 0) {
        refuse(out, w->declined.items[i].reason ? w->declined.items[i].reason : "declined");
        audit_req(w, req, false, out->reason, "earlier-answer");
        return;
    }
    struct ask *a = w->ec && !w->released ? ask_new(l, req) : NULL;
    if (!a) {
        refuse(out, w->ec ? "out of memory" : REASON_NO_ANSWER);
        return;
    }
    const char *reason = NULL, *by = NULL;
    switch (escalation_call_ask(w->ec, a->program, (const char *const *)a->args, a->nargs, a->cwd,
                                on_answer, a, &a->q, &reason, &by)) {
    case ESCALATION_ASK_APPROVED:
        ask_free(a);
        out->verdict = EXEC_NOTIFY_CONTINUE;
        audit_req(w, req, true, NULL, by);
        return;
    case ESCALATION_ASK_DENIED:
        ask_free(a);
        refuse(out, reason);
        audit_req(w, req, false, reason, by);
        return;
    case ESCALATION_ASK_PENDING:
        log_info("exec watch %s: asking about %s (pid %d)", w->label, req->resolved, req->pid);
        out->verdict = EXEC_NOTIFY_ASK;
        return;
    }
}

/*
 * Whether the process execing the wrapper is the patched Bash, the one
 * the server starts: its execs of the wrapper are the hand-over the
 * escalation path decides (with Deny's own message), so they continue
 * without any check here.  The process is stopped in this exec (the
 * notification was still valid after it was read), so its pid is not
 * reused while /proc/PID/exe is read.
 */
static bool
from_shell(struct exec_watch *w, pid_t pid)
{
    if (!w->bash_real)
        return false;
    char *link = NULL;
    if (asprintf(&link, "/proc/%d/exe", (int)pid) < 0)
        return false;
    size_t cap = strlen(w->bash_real) + 2;
    char *buf = malloc(cap);
    ssize_t n = buf ? readlink(link, buf, cap) : -1;
    free(link);
    bool same = n >= 0 && (size_t)n == cap - 2 && memcmp(buf, w->bash_real, (size_t)n) == 0;
    free(buf);
    return same;
}

/* The patched Bash's exec of the wrapper, known from the file and the
 * process alone (exec_notify's quick path: its argv, cwd and #! lines are
 * not read).  Anything else is decided in full. */
static bool
quick(void *arg, pid_t pid, const char *canonical)
{
    struct listener *l = arg;
    struct exec_watch *w = l->w;
    return w->wrapper_real && strcmp(canonical, w->wrapper_real) == 0 && from_shell(w, pid);
}

static void
decide(void *arg, const struct exec_notify_request *req, struct exec_notify_decision *out)
{
    struct listener *l = arg;
    struct exec_watch *w = l->w;
    if (w->wrapper_real && req->canonical && strcmp(req->canonical, w->wrapper_real) == 0) {
        if (from_shell(w, req->pid))
            out->verdict = EXEC_NOTIFY_CONTINUE;
        else
            decide_wrapper(w, req, out);
        return;
    }
    decide_rules(w, req, out);
    if (out->verdict == EXEC_NOTIFY_REFUSE) {
        log_info("exec watch %s: refused %s (pid %d): %s", w->label, req->resolved, req->pid,
                 out->reason ? out->reason : "");
        audit_req(w, req, false, out->reason, "rules");
        return;
    }
    if (out->verdict != EXEC_NOTIFY_ASK)
        return;
    free(out->reason);
    *out = (struct exec_notify_decision){0};
    decide_ask(l, req, out);
}

/* ---- listeners on the loop ---- */

static void maybe_free(struct exec_watch *w);

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
    if (l->n) {
        exec_notify_set_refuse_shared_memory(l->n, l->w->strict);
        exec_notify_set_quick(l->n, quick);
    }
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

int
exec_watch_adopt(struct exec_watch *w, int listener)
{
    struct listener *l = w->released ? NULL : calloc(1, sizeof(*l));
    if (!l) {
        close(listener);
        return w->released ? -EINVAL : -ENOMEM;
    }
    l->w = w;
    l->sock = -1;
    l->child_fd = -1;
    l->n = exec_notify_new(listener, NULL, decide, NULL, l);
    if (l->n) {
        exec_notify_set_refuse_shared_memory(l->n, w->strict);
        exec_notify_set_quick(l->n, quick);
    }
    int rc = l->n ? uv_poll_init(w->loop, &l->notify_poll, exec_notify_fd(l->n)) : -ENOMEM;
    if (rc < 0) {
        exec_notify_free(l->n);
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

char **
exec_watch_helper_argv(char **argv, int fd, const char *argv0)
{
    size_t n = 0;
    while (argv[n])
        n++;
    char **out = calloc(n + 5, sizeof(char *));
    char num[16];
    snprintf(num, sizeof(num), "%d", fd);
    bool ok = out != NULL;
    size_t k = 0;
    if (ok) {
        out[k++] = argv[0];
        ok = (out[k++] = strdup("--exec-notify-fd")) && (out[k++] = strdup(num));
    }
    if (ok && argv0)
        ok = (out[k++] = strdup("--argv0")) && (out[k++] = strdup(argv0));
    if (!ok) {
        for (size_t i = 1; out && i < k; i++)
            free(out[i]);
        free(out);
        for (size_t i = 0; i < n; i++)
            free(argv[i]);
        free(argv);
        return NULL;
    }
    for (size_t i = 1; i < n; i++)
        out[k++] = argv[i];
    free(argv);
    return out;
}

/* ---- life ---- */

/* The server's wrapper and Bash are fixed by its options, but a call used
 * to resolve both afresh: realpath reads every component's link, some 15
 * system calls per call.  Each is resolved once per path (again only when
 * the path given changes, or when it could not be resolved). */
struct resolved {
    char *path, *real;
};
static struct resolved resolved_wrapper, resolved_bash;

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
exec_watch_new(uv_loop_t *loop, struct escalation_server *es, const char *wrapper, const char *bash,
               const char *label)
{
    struct exec_watch *w = calloc(1, sizeof(*w));
    if (!w || !(w->label = strdup(label))) {
        free(w);
        return NULL;
    }
    w->loop = loop;
    w->es = es;
    /* NULL when it cannot be resolved: then nothing is treated as the wrapper */
    w->wrapper_real = wrapper ? resolve_cached(&resolved_wrapper, wrapper) : NULL;
    w->bash_real = bash ? resolve_cached(&resolved_bash, bash) : NULL;
    return w;
}

void
exec_watch_set_strict(struct exec_watch *w, bool on)
{
    w->strict = on;
}

void
exec_watch_set_call(struct exec_watch *w, struct escalation_call *ec)
{
    w->ec = ec;
}

static void
maybe_free(struct exec_watch *w)
{
    if (!w->released || w->listeners)
        return;
    memo_clear(&w->expected);
    memo_clear(&w->declined);
    free(w->wrapper_real);
    free(w->bash_real);
    free(w->label);
    free(w);
}

void
exec_watch_release(struct exec_watch *w)
{
    if (!w || w->released)
        return;
    w->released = true;
    w->ec = NULL;
    for (struct listener *l = w->listeners, *next; l; l = next) {
        next = l->next;
        listener_close(l);
    }
    maybe_free(w);
}
