#include "server/decide/escalation.h"

#include "proto/esc_env.h"

#include "server/call/call_fds.h"
#include "server/decide/decide.h"
#include "proto/esc_io.h"
#include "proto/esc_proto.h"
#include "server/decide/escalated_env.h"
#include "common/list.h"
#include "common/log.h"
#include "common/macros.h"
#include "common/peer_cred.h"
#include "common/strv.h"
#include "server/call/reaper.h"
#include "server/call/spawn_child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/* Said on the program's stderr when the sandbox hands a terminal to a
 * program that would run outside: pagers, editors and password prompts
 * would start there (docs/escalation.md). */
#define REASON_TERMINAL                                                                            \
    "a terminal was handed over; programs run outside the sandbox only on pipes and files"

enum session_state {
    SESSION_REQUEST, /* reading the REQUEST */
    SESSION_ASKING,  /* a person is asked */
    SESSION_FDS,     /* ESCALATE sent, reading FDS */
    SESSION_RUNNING, /* the program runs; SIGNALs may come */
    SESSION_CLOSING, /* handles closing */
};

struct session {
    struct escalation_call *ec;
    int fd;
    uv_poll_t poll;
    bool watched; /* poll initialised: only sessions that outlive their first datagram */
    struct spawn_child *proc; /* the escalated program, once started */
    bool proc_open, proc_exited;
    int handles_open;
    enum session_state state;
    struct esc_buf in;
    struct esc_fdlist fds;
    struct esc_request req; /* owned once the REQUEST arrived */
    bool have_req;
    struct decide_exec exec; /* req, as the decision sees it */
    /* the request's workdir, opened once when it arrived (O_PATH), and its
     * real path then: decided on, shown, and where the program starts */
    int workdir_fd;
    char *workdir;
    struct decide_result decision;
    bool decided;
    struct decide_question *question; /* a person is asked, or NULL */
    const char *answered_by;
    struct list node; /* in ec's sessions */
};

struct escalation_call {
    uv_loop_t *loop;
    struct decide_call *dc; /* a reference */
    const char *label;      /* dc's */
    struct shell_call *sc;
    escalation_adopt_fn adopt;
    void *adopt_data;
    const char *const *pass_env;
    size_t n_pass_env;
    int server_fd, child_fd;
    uv_poll_t poll;
    bool poll_open, released;
    int handles_open;
    struct list sessions;
    unsigned n_sessions;
    size_t buffered;                     /* received and not yet decoded, all sessions together */
    const struct call_cgroup_join *join; /* the call's cgroup, or NULL */
    /* process groups of escalated programs that have exited: what they
     * left running is killed with the call (reaper_signal_group) */
    pid_t *groups;
    size_t n_groups;
};

/* Exec sessions open in the whole server. */
static unsigned server_sessions;

/* One first datagram at a time: the loop runs on one thread. */
static char dgram_buf[ESC_MAX_DGRAM + 1];

static void session_end(struct session *s);
static void session_free(struct session *s);
static void on_session_handle_closed(uv_handle_t *h);
static void maybe_free_call(struct escalation_call *ec);

static void
audit(struct session *s, const char *decision, const char *reason, int exit_kind, int exit_value)
{
    if (s->decided)
        decide_audit(s->ec->dc, &s->exec, &s->decision, decision, reason, s->answered_by, exit_kind,
                     exit_value);
}

/* Sends one frame; on a fresh stream socket a few bytes never block. */
static int
session_send(struct session *s, const struct esc_msg *m)
{
    const char *why = NULL;
    int rc = esc_io_send_msg(s->fd, m, NULL, 0, &why);
    if (rc < 0)
        log_debug("escalation %s: cannot answer: %s", s->ec->label, why ? why : strerror(-rc));
    return rc;
}

static void
session_deny(struct session *s, const char *reason)
{
    log_info("escalation %s: deny %s: %s", s->ec->label, s->req.file, reason);
    audit(s, "deny", reason, -1, 0);
    struct esc_msg m = {.type = ESC_MSG_DENY};
    m.u.deny_reason = (char *)reason;
    session_send(s, &m);
    session_end(s);
}

/* Runs the program in place.  One a rule let out that stays in the
 * sandbox says why on its stderr (the wrapper prints the RUN's note) and
 * in the log, at the level of a refusal. */
static void
session_run(struct session *s, const char *why)
{
    char *note = s->decided ? decide_inside_note(&s->decision) : NULL;
    if (note)
        log_warn("escalation %s: %s", s->ec->label, note);
    else
        log_debug("escalation %s: run %s in the sandbox (%s)", s->ec->label, s->req.file, why);
    audit(s, "run", why, -1, 0);
    struct esc_msg m = {.type = ESC_MSG_RUN};
    m.u.run_note = note;
    session_send(s, &m);
    free(note);
    session_end(s);
}

static void
session_escalate(struct session *s)
{
    struct esc_msg m = {.type = ESC_MSG_ESCALATE};
    if (session_send(s, &m) < 0) {
        session_end(s);
        return;
    }
    s->state = SESSION_FDS;
}

/* A person approved: outside when the file may go there, else in place
 * (and the tree watch lets the wrapper's exec of it through once). */
static void
session_approved(struct session *s)
{
    if (s->decision.escalate_if_approved) {
        session_escalate(s);
        return;
    }
    decide_call_expect(s->ec->dc, s->exec.pid, &s->decision);
    session_run(s, s->decision.reason ? s->decision.reason : "approved, runs in the sandbox");
}

static void
on_session_answer(void *data, bool approved, const char *reason)
{
    struct session *s = data;
    s->question = NULL;
    s->answered_by = "user";
    if (approved)
        session_approved(s);
    else
        session_deny(s, reason);
}

/* An allowed command asked about for what it does (decide_result's
 * caution) that nobody can be asked about: the refusal says what, not
 * only that a question was needed. */
static void
session_deny_unasked(struct session *s, const char *reason)
{
    char *said = NULL;
    if (s->decision.caution && strcmp(s->answered_by, "no-elicitation") == 0 &&
        asprintf(&said,
                 "Approval was required: an allow rule matched, but %s; the MCP client did not "
                 "declare the elicitation capability, so it cannot be asked",
                 s->decision.caution) < 0)
        said = NULL;
    session_deny(s, said ? said : reason);
    free(said);
}

static void
session_ask(struct session *s)
{
    const char *reason = NULL;
    switch (decide_ask(s->ec->dc, &s->exec, &s->decision, on_session_answer, s, &s->question,
                       &reason, &s->answered_by)) {
    case DECIDE_ASK_APPROVED:
        session_approved(s);
        break;
    case DECIDE_ASK_DENIED:
        session_deny_unasked(s, reason);
        break;
    case DECIDE_ASK_PENDING:
        s->state = SESSION_ASKING;
        break;
    }
}

/* The peer's pid: the process that is about to exec (the patched Bash's
 * child, or execgate-wrapper). 0 when it cannot be told. */
static pid_t
peer_pid(int fd)
{
    struct ucred cred = {0};
    return peer_cred(fd, &cred) == 0 ? cred.pid : 0;
}

/*
 * The request's workdir as an object: opened once (following its links,
 * as a chdir would), and named by the path that fd has now.  Everything
 * after this (the decision, the question, the program's start by fchdir)
 * uses the fd or that path, so repointing a link of the request's path
 * later changes nothing.  Returns 0, or -1 when the workdir is not an
 * existing directory or its real path does not name it.
 */
static int
pin_workdir(struct session *s)
{
    if (s->req.workdir[0] != '/')
        return -1;
    s->workdir_fd = open(s->req.workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (s->workdir_fd < 0)
        return -1;
    char link[64], real[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", s->workdir_fd);
    ssize_t n = readlink(link, real, sizeof(real) - 1);
    if (n <= 0 || real[0] != '/')
        return -1;
    real[n] = '\0';
    /* a directory removed since, or one outside the server's view, has no
     * path that names it: refused rather than decided by a stale name */
    struct stat pinned, named;
    if (fstat(s->workdir_fd, &pinned) < 0 || stat(real, &named) < 0 ||
        pinned.st_dev != named.st_dev || pinned.st_ino != named.st_ino)
        return -1;
    s->workdir = strdup(real);
    return s->workdir ? 0 : -1;
}

/*
 * Whether the pinned workdir's path still names it.  The decision reads
 * the repositories around it by that path: a directory (or one above it)
 * renamed while it was decided, or before the program starts, would have
 * had another directory's surroundings checked.  Any rename on the way
 * changes the path, so this catches it.
 */
static bool
workdir_still_named(const struct session *s)
{
    struct stat pinned, named;
    return fstat(s->workdir_fd, &pinned) == 0 && stat(s->workdir, &named) == 0 &&
           pinned.st_dev == named.st_dev && pinned.st_ino == named.st_ino;
}

#define REASON_WORKDIR_MOVED "the working directory was moved while it was decided"

/* The decision for a complete REQUEST (docs/escalation.md). */
static void
session_decide(struct session *s)
{
    if (pin_workdir(s) < 0) {
        session_deny(s, "the request's workdir is not an existing directory");
        return;
    }
    s->exec = (struct decide_exec){
        .source = DECIDE_FROM_WRAPPER,
        .path = s->req.file,
        .cwd = s->workdir,
        .argv = (const char *const *)s->req.argv,
        .argc = s->req.argc,
        .pid = peer_pid(s->fd),
    };
    decide_exec(s->ec->dc, &s->exec, &s->decision);
    s->decided = true;
    s->answered_by = s->decision.answered_by;
    if (s->decision.verdict != DECIDE_DENY && !workdir_still_named(s)) {
        session_deny(s, REASON_WORKDIR_MOVED);
        return;
    }
    switch (s->decision.verdict) {
    case DECIDE_DENY:
        session_deny(s, s->decision.reason);
        break;
    case DECIDE_RUN:
        session_run(s, s->decision.reason ? s->decision.reason : "no rule");
        break;
    case DECIDE_ESCALATE:
        session_escalate(s);
        break;
    case DECIDE_ASK:
        session_ask(s);
        break;
    }
}

static void
remember_group(struct escalation_call *ec, pid_t pgid)
{
    pid_t *grown = realloc(ec->groups, (ec->n_groups + 1) * sizeof(pid_t));
    if (!grown) {
        /* cannot wait for the call's end: what it left goes now */
        reaper_signal_group(pgid, SIGKILL);
        return;
    }
    ec->groups = grown;
    ec->groups[ec->n_groups++] = pgid;
}

static void on_session_proc_closed(struct spawn_child *p);

static void
on_program_exit(struct spawn_child *p, int64_t status, int sig)
{
    struct session *s = spawn_data(p);
    s->proc_exited = true;
    remember_group(s->ec, spawn_pid(p));
    if (s->state == SESSION_CLOSING) {
        spawn_close(s->proc, on_session_proc_closed);
        return;
    }
    struct esc_msg m = {.type = ESC_MSG_EXIT};
    if (sig > 0 && sig <= 64) {
        m.u.exit.kind = ESC_EXIT_SIGNAL;
        m.u.exit.value = sig;
    } else {
        m.u.exit.kind = ESC_EXIT_CODE;
        m.u.exit.value = (int)(status & 0xff);
    }
    log_debug("escalation %s: %s ended (%s %d)", s->ec->label, s->decision.program,
              m.u.exit.kind == ESC_EXIT_CODE ? "exit" : "signal", m.u.exit.value);
    audit(s, "escalate", NULL, (int)m.u.exit.kind, m.u.exit.value);
    if (s->state == SESSION_RUNNING)
        session_send(s, &m);
    session_end(s);
}

static void
session_free(struct session *s)
{
    struct escalation_call *ec = s->ec;
    list_unlink(&s->node);
    ec->n_sessions--;
    server_sessions--;
    ec->buffered -= s->in.len;
    if (s->fd >= 0)
        close(s->fd);
    esc_buf_free(&s->in);
    esc_fdlist_close(&s->fds);
    if (s->have_req) {
        struct esc_msg m = {.type = ESC_MSG_REQUEST};
        m.u.request = s->req;
        esc_msg_free(&m);
    }
    if (s->decided)
        decide_result_release(&s->decision);
    if (s->workdir_fd >= 0)
        close(s->workdir_fd);
    free(s->workdir);
    free(s);
    maybe_free_call(ec);
}

static void
on_session_handle_closed(uv_handle_t *h)
{
    struct session *s = h->data;
    if (--s->handles_open == 0)
        session_free(s);
}

static void
on_session_proc_closed(struct spawn_child *p)
{
    struct session *s = spawn_data(p);
    if (--s->handles_open == 0)
        session_free(s);
}

/* Ends the session with the program's EXIT as if it had exited with
 * code, without starting it; why goes to the program's stderr, when the
 * wrapper forwarded one. */
static void
session_refuse_start(struct session *s, const int *targets, size_t count, int code, const char *why)
{
    for (size_t i = 0; i < count; i++) {
        if (targets[i] == STDERR_FILENO) {
            char *line = NULL;
            int n = asprintf(&line, "execgate: %s not run outside the sandbox: %s\n",
                             s->decision.program, why);
            if (n > 0 && write(s->fds.fds[i], line, (size_t)n) < 0)
                log_debug("escalation %s: cannot say why: %s", s->ec->label, strerror(errno));
            free(line);
        }
    }
    esc_fdlist_close(&s->fds);
    audit(s, "deny", why, ESC_EXIT_CODE, code);
    struct esc_msg m = {.type = ESC_MSG_EXIT};
    m.u.exit.kind = ESC_EXIT_CODE;
    m.u.exit.value = code;
    session_send(s, &m);
    session_end(s);
}

/* Whether one of the forwarded fds is a terminal. */
static bool
hands_terminal(const struct session *s)
{
    for (size_t i = 0; i < s->fds.count; i++) {
        if (isatty(s->fds.fds[i]))
            return true;
    }
    return false;
}

/* The request's argv with argv[0] the name the program's rule matched
 * (decide_result's run_as): a multi-call program does what the rule
 * named, never what the request's argv[0] says (git-clone for git).  The
 * array is malloc'd, its words borrowed; NULL when out of memory. */
static char **
run_as_argv(const struct session *s)
{
    size_t n = s->req.argc;
    char **argv = calloc(n + 2, sizeof(*argv));
    if (!argv || !s->decision.run_as) {
        free(argv);
        return NULL;
    }
    argv[0] = s->decision.run_as;
    for (size_t i = 1; i < n; i++)
        argv[i] = s->req.argv[i];
    return argv;
}

/* Starts the checked file with the received fds at their targets. */
static void
session_spawn(struct session *s, const int *targets, size_t count)
{
    if (hands_terminal(s)) {
        log_info("escalation %s: %s: %s", s->ec->label, s->decision.program, REASON_TERMINAL);
        session_refuse_start(s, targets, count, 126, REASON_TERMINAL);
        return;
    }
    if (!workdir_still_named(s)) {
        log_warn("escalation %s: %s: %s", s->ec->label, s->decision.program, REASON_WORKDIR_MOVED);
        session_refuse_start(s, targets, count, 126, REASON_WORKDIR_MOVED);
        return;
    }
    /* + 1: never a zero-sized allocation */
    struct spawn_fd *fds = calloc(count + 1, sizeof(*fds));
    char **env =
        escalated_env_build(environ, s->req.env, s->ec->pass_env, s->ec->n_pass_env, s->workdir);
    char **argv = run_as_argv(s);
    if (env && s->decision.git_ceiling &&
        escalated_env_add(&env, "GIT_CEILING_DIRECTORIES", s->decision.git_ceiling) < 0) {
        strv_free(env);
        env = NULL;
    }
    /* in a repository the sandbox could have written: any git the
     * program starts fails ("not a git repository") instead of reading it */
    if (env && s->decision.git_fenced && escalated_env_add(&env, "GIT_DIR", "/dev/null") < 0) {
        strv_free(env);
        env = NULL;
    }
    if (!fds || !env || !argv) {
        free(fds);
        free(argv);
        strv_free(env);
        session_end(s);
        return;
    }
    for (size_t i = 0; i < count; i++)
        fds[i] = (struct spawn_fd){s->fds.fds[i], targets[i]};
    struct spawn_options opts = {
        .file = s->decision.program,
        .exec_fd = &s->decision.fd,
        .exec_fd_inherited = s->decision.script,
        .argv = argv,
        .env = env,
        .cwd = s->workdir,
        .cwd_fd = &s->workdir_fd,
        .fds = fds,
        .n_fds = count,
        /* its own session and group: a signal for the call reaches its tree */
        .new_session = true,
        .die_with_server = true,
        /* in the call's cgroup: limited and killed with the call's */
        .join = s->ec->join,
    };
    /* tree enforcement: the program starts under the exec filter (no other
     * confinement: it is escalated), so every exec of its tree is decided
     * too; the server continues its own first exec, of the checked file */
    int listener = -1;
    if (s->ec->adopt)
        opts.exec_listener = &listener;
    int rc = spawn_start(s->ec->loop, &opts, on_program_exit, s, &s->proc);
    if (rc == 0 && s->ec->adopt) {
        /* a person who saw the command approved what it runs; a rule
         * names one program (docs/enforcement.md) */
        bool by_person =
            strcmp(s->answered_by, "user") == 0 || strcmp(s->answered_by, "session-approval") == 0;
        int arc = s->ec->adopt(s->ec->adopt_data, listener, &s->exec, &s->decision, by_person);
        if (arc < 0)
            log_error("escalation %s: cannot watch %s's execs: %s", s->ec->label,
                      s->decision.program, uv_strerror(arc));
    }
    free(fds);
    free(argv);
    strv_free(env);
    /* the program has its copies; ours go, so its readers see EOF with it */
    esc_fdlist_close(&s->fds);
    if (rc < 0) {
        s->proc_exited = true;
        log_warn("escalation %s: cannot start %s: %s", s->ec->label, s->decision.program,
                 uv_strerror(rc));
        struct esc_msg m = {.type = ESC_MSG_EXIT};
        m.u.exit.kind = ESC_EXIT_CODE;
        m.u.exit.value = rc == -ENOENT ? 127 : 126;
        audit(s, "escalate", uv_strerror(rc), ESC_EXIT_CODE, m.u.exit.value);
        session_send(s, &m);
        session_end(s);
        return;
    }
    s->proc_open = true;
    s->handles_open++;
    log_info("escalation %s: escalated %s (pid %d)", s->ec->label, s->decision.program,
             spawn_pid(s->proc));
    s->state = SESSION_RUNNING;
}

/* One decoded message; returns -1 when the session ended. */
static int
session_message(struct session *s, struct esc_msg *m)
{
    if (s->state == SESSION_REQUEST && m->type == ESC_MSG_REQUEST && s->fds.count == 0) {
        s->req = m->u.request;
        s->have_req = true;
        memset(m, 0, sizeof(*m));
        session_decide(s);
        return s->state == SESSION_CLOSING ? -1 : 0;
    }
    if (s->state == SESSION_FDS && m->type == ESC_MSG_FDS && m->u.fds.count == s->fds.count) {
        session_spawn(s, m->u.fds.targets, m->u.fds.count);
        esc_msg_free(m);
        return s->state == SESSION_CLOSING ? -1 : 0;
    }
    if (s->state == SESSION_RUNNING && m->type == ESC_MSG_SIGNAL && s->fds.count == 0) {
        if (!s->proc_exited && kill(-spawn_pid(s->proc), m->u.signo) < 0 && errno != ESRCH)
            log_warn("escalation: kill: %s", strerror(errno));
        esc_msg_free(m);
        return 0;
    }
    log_warn("escalation %s: unexpected %s message%s: session ended", s->ec->label,
             esc_msg_type_name((int)m->type), s->fds.count ? " (or fds)" : "");
    esc_msg_free(m);
    session_end(s);
    return -1;
}

static void
on_session_readable(uv_poll_t *h, int status, int events)
{
    struct session *s = h->data;
    if (s->state == SESSION_CLOSING)
        return;
    for (int rounds = 0; rounds < 16; rounds++) {
        if (esc_buf_reserve(&s->in, ESCALATION_READ_CHUNK) < 0) {
            session_end(s);
            return;
        }
        ssize_t n = esc_io_recvmsg(s->fd, s->in.data + s->in.len, ESCALATION_READ_CHUNK, &s->fds);
        if (n == -EAGAIN)
            break;
        if (n <= 0) {
            /* end of the stream (the wrapper is gone) or an error */
            if (n < 0)
                log_debug("escalation %s: session read: %s", s->ec->label, strerror((int)-n));
            session_end(s);
            return;
        }
        s->in.len += (size_t)n;
        s->ec->buffered += (size_t)n;
        if (s->ec->buffered > ESCALATION_MAX_BUFFERED) {
            log_warn("escalation %s: its exec sessions sent more than %u bytes not yet decoded: "
                     "session ended",
                     s->ec->label, ESCALATION_MAX_BUFFERED);
            session_end(s);
            return;
        }
        if (s->fds.count > 0 && s->state != SESSION_FDS) {
            log_warn("escalation %s: fds outside FDS: session ended", s->ec->label);
            session_end(s);
            return;
        }
        for (;;) {
            struct esc_msg m = {0};
            size_t used = 0;
            const char *why = NULL;
            int rc = esc_msg_decode(s->in.data, s->in.len, &m, &used, &why);
            if (rc == 0)
                break;
            if (rc < 0) {
                log_warn("escalation %s: bad message: %s: session ended", s->ec->label,
                         why ? why : strerror(-rc));
                session_end(s);
                return;
            }
            esc_buf_consume(&s->in, used);
            s->ec->buffered -= used;
            if (session_message(s, &m) < 0)
                return;
            if (s->state == SESSION_ASKING) {
                /* nothing may come while the person is asked but the end of
                 * the stream, which still must be noticed */
                break;
            }
        }
        if (s->state == SESSION_ASKING && s->in.len > 0) {
            log_warn("escalation %s: data while deciding: session ended", s->ec->label);
            session_end(s);
            return;
        }
    }
}

/* Ends the session: kills its program if it still runs, forgets an open
 * question, closes its handles (freed in the last close callback). */
static void
session_end(struct session *s)
{
    if (s->state == SESSION_CLOSING)
        return;
    decide_question_cancel(s->question);
    s->question = NULL;
    s->state = SESSION_CLOSING;
    if (s->watched) {
        uv_poll_stop(&s->poll);
        uv_close((uv_handle_t *)&s->poll, on_session_handle_closed);
    }
    /* uv_close has already dropped the fd from the loop's poll set: it
     * goes now, so the wrapper sees the end at once (an unwatched session
     * is freed by session_start, which is still on the stack) */
    close(s->fd);
    s->fd = -1;
    if (s->proc_open && !s->proc_exited) {
        /* the handle closes when the exit is reaped (on_program_exit) */
        kill(-spawn_pid(s->proc), SIGKILL);
    } else if (s->proc_open) {
        spawn_close(s->proc, on_session_proc_closed);
    }
}

/* Puts the session's socket on the loop (the FDS, SIGNALs, or its end
 * while a person is asked). Returns 0, or -1 with the session ended. */
static int
session_watch(struct session *s)
{
    if (uv_poll_init(s->ec->loop, &s->poll, s->fd) < 0) {
        log_warn("escalation %s: cannot serve a session", s->ec->label);
        session_end(s);
        return -1;
    }
    s->watched = true;
    s->poll.data = s;
    s->handles_open++;
    uv_poll_start(&s->poll, UV_READABLE | UV_DISCONNECT, on_session_readable);
    return 0;
}

/* A session from its first datagram: with a REQUEST it is decided at once,
 * and put on the loop only when it goes on (Escalate, a question); a Run
 * or a Deny never costs a loop round. With a HELLO the REQUEST is read
 * from the stream. Takes fd and what first owns. */
static void
session_start(struct escalation_call *ec, int fd, struct esc_msg *first)
{
    struct session *s = calloc(1, sizeof(*s));
    int flags = fcntl(fd, F_GETFL);
    if (!s || flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        log_warn("escalation %s: cannot serve a session", ec->label);
        free(s);
        close(fd);
        esc_msg_free(first);
        return;
    }
    s->ec = ec;
    s->fd = fd;
    s->workdir_fd = -1;
    list_insert_head(&ec->sessions, &s->node);
    ec->n_sessions++;
    server_sessions++;
    if (first->type == ESC_MSG_REQUEST) {
        s->req = first->u.request;
        s->have_req = true;
        memset(first, 0, sizeof(*first));
        session_decide(s);
    }
    esc_msg_free(first);
    if (s->state != SESSION_CLOSING)
        session_watch(s);
    if (s->state == SESSION_CLOSING && s->handles_open == 0)
        session_free(s);
}

/* ---- the call ---- */

static void
on_hello_readable(uv_poll_t *h, int status, int events)
{
    struct escalation_call *ec = h->data;
    if (ec->released)
        return;
    for (int i = 0; i < 64 && !ec->released; i++) {
        int fd = -1;
        const char *why = NULL;
        struct esc_msg first;
        int rc = esc_io_recv_hello(ec->server_fd, dgram_buf, sizeof(dgram_buf), &fd, &first, &why);
        if (rc == -EAGAIN || rc == 0)
            return;
        if (rc < 0) {
            log_warn("escalation %s: bad first datagram: %s", ec->label, why ? why : strerror(-rc));
            continue;
        }
        if (ec->n_sessions >= ESCALATION_MAX_SESSIONS ||
            server_sessions >= ESCALATION_MAX_SERVER_SESSIONS) {
            log_warn("escalation %s: more than %d exec sessions at once (%d in the server): "
                     "refused",
                     ec->label, ESCALATION_MAX_SESSIONS, ESCALATION_MAX_SERVER_SESSIONS);
            close(fd);
            esc_msg_free(&first);
            continue;
        }
        session_start(ec, fd, &first);
    }
}

struct escalation_call *
escalation_call_new(uv_loop_t *loop, struct decide_call *dc, escalation_adopt_fn adopt,
                    void *adopt_data, const char *const *pass_env, size_t n_pass_env)
{
    struct escalation_call *ec = calloc(1, sizeof(*ec));
    if (!ec)
        return NULL;
    ec->loop = loop;
    list_init(&ec->sessions);
    ec->dc = decide_call_ref(dc);
    ec->label = decide_call_label(dc);
    ec->adopt = adopt;
    ec->adopt_data = adopt_data;
    ec->pass_env = pass_env;
    ec->n_pass_env = n_pass_env;
    ec->server_fd = ec->child_fd = -1;
    return ec;
}

static void
free_call(struct escalation_call *ec)
{
    if (ec->server_fd >= 0)
        close(ec->server_fd);
    if (ec->child_fd >= 0)
        close(ec->child_fd);
    decide_call_unref(ec->dc);
    free(ec->groups);
    free(ec);
}

static void
maybe_free_call(struct escalation_call *ec)
{
    if (ec->released && ec->handles_open == 0 && list_empty(&ec->sessions))
        free_call(ec);
}

static void
on_call_poll_closed(uv_handle_t *h)
{
    struct escalation_call *ec = h->data;
    ec->handles_open--;
    maybe_free_call(ec);
}

void
escalation_call_signal(struct escalation_call *ec, int sig)
{
    struct list *pos;
    list_foreach(pos, &ec->sessions)
    {
        struct session *s = list_entry(pos, struct session, node);
        if (s->proc_open && !s->proc_exited && kill(-spawn_pid(s->proc), sig) < 0 && errno != ESRCH)
            log_warn("escalation: kill: %s", strerror(errno));
    }
    reaper_signal_groups(ec->groups, ec->n_groups, sig);
}

void
escalation_call_release(struct escalation_call *ec)
{
    if (!ec || ec->released)
        return;
    ec->released = true;
    ec->sc = NULL;
    /* what escalated programs left in their groups ends with the call */
    reaper_signal_groups(ec->groups, ec->n_groups, SIGKILL);
    struct list *pos, *tmp;
    list_foreach_safe(pos, tmp, &ec->sessions)
    {
        session_end(list_entry(pos, struct session, node));
    }
    if (ec->poll_open) {
        ec->poll_open = false;
        uv_poll_stop(&ec->poll);
        uv_close((uv_handle_t *)&ec->poll, on_call_poll_closed);
    }
    /* as for sessions: the loop no longer watches it */
    if (ec->server_fd >= 0) {
        close(ec->server_fd);
        ec->server_fd = -1;
    }
    maybe_free_call(ec);
}

/* The call's datagram socket pair (the server's end becomes non-blocking
 * in start_serving's uv_poll_init). */
static int
open_socket(struct escalation_call *ec)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) < 0)
        return -errno;
    ec->server_fd = pair[0];
    ec->child_fd = pair[1];
    return 0;
}

/* Makes the socket pair and watches the server's end.  Returns 0 or a
 * negative errno (logged; the pair is then closed or never made). */
static int
start_serving(struct escalation_call *ec)
{
    int rc = open_socket(ec);
    if (rc == 0) {
        rc = uv_poll_init(ec->loop, &ec->poll, ec->server_fd);
        if (rc == 0) {
            ec->poll.data = ec;
            ec->poll_open = true;
            ec->handles_open++;
            rc = uv_poll_start(&ec->poll, UV_READABLE, on_hello_readable);
        } else {
            close(ec->server_fd);
            close(ec->child_fd);
            ec->server_fd = ec->child_fd = -1;
        }
    }
    if (rc < 0)
        log_error("escalation %s: cannot serve an escalation socket: %s: every exec of this call "
                  "will fail closed",
                  ec->label, uv_strerror(rc));
    return rc;
}

void
escalation_call_start(struct escalation_call *ec, struct shell_call *sc)
{
    ec->sc = sc;
    if (start_serving(ec) == 0)
        shell_call_set_fd(sc, CALL_FD_ESCALATE, ec->child_fd);
}

int
escalation_call_serve_detached(struct escalation_call *ec, int *child_fd)
{
    int rc = start_serving(ec);
    *child_fd = ec->child_fd;
    return rc;
}

void
escalation_call_end_detached(struct escalation_call *ec)
{
    escalation_call_release(ec);
}

void
escalation_call_spawned(struct escalation_call *ec)
{
    if (ec->child_fd >= 0) {
        close(ec->child_fd);
        ec->child_fd = -1;
    }
}

static char *
env_entry(const char *name, const char *value)
{
    char *e = NULL;
    if (asprintf(&e, "%s=%s", name, value) < 0)
        return NULL;
    return e;
}

/* Whether the entry "NAME=value" sets one of the protocol's variables. */
static bool
is_protocol_env(const char *entry)
{
    static const char *const names[] = {ESC_ENV_ALL};
    size_t len = strcspn(entry, "=");
    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        if (strlen(names[i]) == len && strncmp(entry, names[i], len) == 0)
            return true;
    }
    return false;
}

char **
escalation_shell_env(const char *wrapper, const char *bash, const char *wrap_names)
{
    size_t n = strv_len(environ);
    char **env = calloc(n + 6, sizeof(char *));
    if (!env)
        return NULL;
    size_t k = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        if (is_protocol_env(environ[i]))
            continue;
        ok = (env[k++] = strdup(environ[i])) != NULL;
    }
    char fdnum[16];
    snprintf(fdnum, sizeof(fdnum), "%d", CALL_FD_ESCALATE);
    if (ok)
        ok = (env[k++] = env_entry(ESC_ENV_WRAPPER, wrapper)) != NULL;
    /* the patched Bash asks in its own process (esc_client) instead of
     * exec'ing the wrapper: the same session, one exec fewer */
    if (ok)
        ok = (env[k++] = env_entry(ESC_ENV_WRAP_IN_SHELL, "1")) != NULL;
    if (ok && wrap_names)
        ok = (env[k++] = env_entry(ESC_ENV_WRAP_NAMES, wrap_names)) != NULL;
    if (ok)
        ok = (env[k++] = env_entry(ESC_ENV_SOCKET, fdnum)) != NULL;
    if (ok)
        ok = (env[k++] = env_entry(ESC_ENV_BASH, bash)) != NULL;
    if (!ok) {
        strv_free(env); /* a failed entry is the first NULL */
        return NULL;
    }
    return env;
}

void
escalation_call_set_join(struct escalation_call *ec, const struct call_cgroup_join *j)
{
    if (ec)
        ec->join = j;
}
