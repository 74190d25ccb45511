#include "server/mcp/scheduler.h"

#include "server/call/call_cgroup_pool.h"
#include "server/call/call_fds.h"
#include "common/log.h"
#include "server/call/login_snapshot.h"
#include "server/call/session_codex.h"
#include "server/state_paths.h"

#include <stdlib.h>
#include <string.h>

struct scheduler {
    const struct call_context *cx;
    struct call_queue *queues; /* in turn order */
    unsigned n_running;        /* calls running in all sessions */
    unsigned n_prepared;       /* prepared calls not yet ended, taken or not */
    /* the HTTP sessions' prepared calls unused for --prepared-idle-ms go
     * when it fires (made with the first of them, closed at the stop) */
    uv_timer_t idle;
    bool idle_made;
    bool stopped;
    /* login calls' snapshots of the login environment; NULL: off */
    struct login_snapshot *snap;
    const struct login_snapshot_kind *snap_kind;
};

struct scheduler *
scheduler_new(const struct call_context *cx)
{
    struct scheduler *sch = calloc(1, sizeof(*sch));
    if (sch)
        sch->cx = cx;
    return sch;
}

void
scheduler_free(struct scheduler *sch)
{
    if (!sch)
        return;
    login_snapshot_free(sch->snap);
    free(sch);
}

/* ---- room for answers ---- */

/* Bytes of q's answers and notifications its client has not taken yet. */
static size_t
pending_output(const struct call_queue *q)
{
    return q->ops->pending(q);
}

/* What the clients of all sessions have not taken yet. */
static size_t
pending_total(const struct scheduler *sch)
{
    size_t n = 0;
    for (const struct call_queue *q = sch->queues; q; q = q->next)
        n += pending_output(q);
    return n;
}

/* Whether q may be sent an answer of size bytes (0: whether it may start
 * another call): what waits for its client stays within a quarter of
 * --max-pending-output (so that a client that stops reading leaves room
 * for the others), and what waits for all clients within all of it.  An
 * answer larger than that goes when nothing waits. */
static bool
answer_room(const struct scheduler *sch, const struct call_queue *q, size_t size)
{
    size_t max = sch->cx->o->max_pending_output;
    size_t mine = pending_output(q), all = pending_total(sch);
    if (size == 0)
        return mine < max / 4 && all < max;
    return (mine == 0 || mine + size <= max / 4) && (all == 0 || all + size <= max);
}

/*
 * Whether c's answer (size bytes) may go now: there is room for it
 * (answer_room), or, over HTTP, it answers an older call than every
 * answer its client has not finished taking.  An HTTP client that reads
 * its answers in the order it asked (one connection after the other)
 * waits for this one and takes nothing else meanwhile: held behind a
 * later answer, it would wait forever.  On stdio the answers share one
 * stream, which the client reads in the order they come.
 */
static bool
answer_fits(struct call_queue *q, const struct call *c, size_t size)
{
    if (pending_output(q) == 0)
        q->sent_oldest = UINT64_MAX;
    return (q->streams && c->seq < q->sent_oldest) || answer_room(q->sched, q, size);
}

/* Sends c's result (cr) as its answer. */
static void
answer_call(struct call_queue *q, struct call *c, const struct call_result *cr)
{
    if (pending_output(q) == 0)
        q->sent_oldest = UINT64_MAX;
    if (c->seq < q->sent_oldest)
        q->sent_oldest = c->seq;
    q->ops->answer(q, c, cr);
}

/*
 * Keeps c's result, with a copy of its kept output, on q's held list: an
 * answer is up to about 13 times the output it carries (call_result.h),
 * so while the client has not taken what it was sent, the output waits
 * as it is, not as its answer.  Returns -1 when out of memory (c is then
 * answered at once).
 */
static int
hold_answer(struct call_queue *q, struct call *c, const struct call_result *cr)
{
    const struct output_ring_text *o = cr->output;
    char marker[OUTPUT_RING_MARKER_MAX];
    size_t mlen = o->cut ? output_ring_marker(o->omitted, marker) : 0;
    size_t len = o->head_len + mlen + (o->cut ? o->tail_len : 0);
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, o->head, o->head_len);
    if (o->cut) {
        memcpy(copy + o->head_len, marker, mlen);
        memcpy(copy + o->head_len + mlen, o->tail, o->tail_len);
    }
    /* the marker begins and ends with a newline: the three pieces check
     * as UTF-8 alike apart or together (output_ring.h), so one run gives
     * the same answer */
    c->held_output = copy;
    c->held_text = (struct output_ring_text){.head = copy, .head_len = len, .tail = ""};
    c->held = *cr;
    c->held.output = &c->held_text;
    call_list_push(&q->held, c);
    return 0;
}

void
scheduler_send_held(struct call_queue *q)
{
    struct scheduler *sch = q->sched;
    while (q->held.head) {
        struct call *c = q->held.head;
        for (struct call *o = c->next; o; o = o->next)
            c = o->seq < c->seq ? o : c;
        if (!q->ending && !sch->stopped && !answer_fits(q, c, call_result_size(&c->held)))
            break;
        call_list_remove(&q->held, c);
        if (!q->ending)
            answer_call(q, c, &c->held);
        call_free(c);
    }
}

/* ---- login snapshots ---- */

static void login_capture_done(struct scheduler *sch, const struct shell_call_result *r);

/* c's end, answered: its result, or held until there is room.  Returns
 * whether c was kept (held). */
static bool
answer_end(struct call_queue *q, struct call *c, const struct shell_call_result *r)
{
    struct scheduler *sch = q->sched;
    if (c->snap_capture) {
        login_capture_done(sch, r);
        return false;
    }
    if (r->cancelled) {
        log_info("call: cancelled after %llu ms; no answer is sent",
                 (unsigned long long)(r->duration_ns / 1000000));
        return false;
    }
    if (!r->spawned) {
        log_error("call: %s", r->error ? r->error : "cannot start");
        if (!q->ending)
            q->ops->refuse(q, c, r->error ? r->error : "cannot start");
        return false;
    }
    log_debug("call: exit %d after %llu ms, %zu bytes of output%s", r->exit_code,
              (unsigned long long)(r->duration_ns / 1000000),
              r->output.head_len + r->output.tail_len, r->timed_out ? ", timed out" : "");
    if (r->setup_failed)
        log_warn("call: the sandbox could not be set up; its reason is in the output");
    if (r->not_started)
        log_warn("call: the shell %s could not be started; the reason is in the output",
                 sch->cx->o->shell_path);
    /* a person answered `abort` to an approval in this call: the result
     * says so and is an error of the tool call */
    struct call_result cr = {
        .exit_code = r->exit_code,
        .output = &r->output,
        .duration_ns = r->duration_ns,
        .timed_out = r->timed_out,
        .setup_failed = r->setup_failed,
        .not_started = r->not_started,
        .aborted = c->aborted,
        .said = c->said,
    };
    if (q->ops->keep && q->ops->keep(q, c, &cr))
        return false; /* a task's: not sent now, so never held */
    if (!q->ending && !sch->stopped && !answer_fits(q, c, call_result_size(&cr)) &&
        hold_answer(q, c, &cr) == 0)
        return true; /* answered by scheduler_send_held */
    if (!q->ending)
        answer_call(q, c, &cr);
    return false;
}

/* ---- prepared calls ---- */

/* A prepared call's end before any call took it (discarded, or its
 * sandbox could not be set up): nothing is answered. */
static void
on_prepared_end(struct call *p, const struct shell_call_result *r)
{
    struct call_queue *q = p->q;
    if (q->prepared == p)
        q->prepared = NULL;
    if (!r->cancelled)
        log_info("call: a prepared sandbox ended before a call came (exit %d)", r->exit_code);
    q->sched->n_prepared--;
    q->prepared_live--;
    call_free(p);
    q->ops->ended(q);
}

void
scheduler_discard_prepared(struct call_queue *q)
{
    struct call *p = q->prepared;
    if (!p)
        return;
    q->prepared = NULL;
    log_debug("call: the prepared sandbox (pid %d) is discarded", shell_call_pgid(p->sc));
    call_cancel(p); /* on_prepared_end frees it */
}

/*
 * p, a prepared login call, sources the snapshot a login call of its key
 * would source now (login_ready), so that the call that takes it runs
 * what it would have run unprepared; without snapshots (or with the last
 * capture for its key failed) it runs a real login shell, as that call
 * would.  Returns 0, or -1: nothing is prepared (a capture is due or
 * running, which the next login call waits for anyway; out of memory).
 */
static int
give_snapshot(struct scheduler *sch, struct call *p)
{
    if (!sch->snap)
        return 0;
    char *key = call_prepared_login_key(p);
    if (!key)
        return -1;
    int fd = -1;
    enum login_snapshot_state st = login_snapshot_get(sch->snap, sch->snap_kind, key,
                                                      getenv("HOME"), uv_now(sch->cx->loop), &fd);
    free(key);
    if (st == LOGIN_SNAPSHOT_FALLBACK)
        return 0;
    if (st != LOGIN_SNAPSHOT_READY)
        return -1;
    return call_use_snapshot(p, sch->snap, sch->snap_kind, fd);
}

/* Whether the HTTP sessions' prepared calls already number
 * --max-prepared.  A full set is left alone rather than the oldest
 * discarded to make room: with more sessions calling than the cap, each
 * call's end would set one up and kill another, paying a sandbox per call
 * that no call takes.  A slot comes free when its call is taken, its
 * session ends, or it has waited --prepared-idle-ms. */
static bool
prepared_full(const struct scheduler *sch)
{
    unsigned n = 0;
    for (const struct call_queue *o = sch->queues; o; o = o->next)
        n += o->streams && o->prepared;
    return n >= sch->cx->o->max_prepared;
}

static void on_prepared_idle(uv_timer_t *t);

/* The idle timer fires when the oldest HTTP session's prepared call has
 * waited --prepared-idle-ms; it is stopped while there is none.  It never
 * keeps the loop running by itself. */
static void
arm_idle(struct scheduler *sch)
{
    uint64_t now = uv_now(sch->cx->loop), next = UINT64_MAX;
    for (const struct call_queue *q = sch->queues; q; q = q->next) {
        if (q->streams && q->prepared && q->prepared_at + sch->cx->o->prepared_idle_ms < next)
            next = q->prepared_at + sch->cx->o->prepared_idle_ms;
    }
    if (sch->stopped || (next == UINT64_MAX && !sch->idle_made))
        return;
    if (!sch->idle_made) {
        uv_timer_init(sch->cx->loop, &sch->idle);
        uv_unref((uv_handle_t *)&sch->idle);
        sch->idle.data = sch;
        sch->idle_made = true;
    }
    if (next == UINT64_MAX)
        uv_timer_stop(&sch->idle);
    else
        uv_timer_start(&sch->idle, on_prepared_idle, next > now ? next - now : 0, 0);
}

/* An HTTP session whose prepared call nobody took for --prepared-idle-ms
 * is idle: its sandbox goes, so that an idle server holds none. */
static void
on_prepared_idle(uv_timer_t *t)
{
    struct scheduler *sch = t->data;
    uint64_t now = uv_now(sch->cx->loop);
    for (struct call_queue *q = sch->queues; q; q = q->next) {
        if (q->streams && q->prepared && now - q->prepared_at >= sch->cx->o->prepared_idle_ms) {
            log_debug("call: an HTTP session's prepared sandbox is discarded, unused for %llu ms "
                      "(--prepared-idle-ms)",
                      (unsigned long long)(now - q->prepared_at));
            scheduler_discard_prepared(q);
        }
    }
    arm_idle(sch);
}

/*
 * After c (of q) ended: the sandbox of q's next call, set up now, as c's
 * was (a login call's with the login snapshot in force), while nothing of
 * q runs or waits; the next call takes it if it fits (take_prepared).
 * None while q or the server ends, or for a call whose kind is not
 * prepared.  An HTTP session's counts against --max-prepared, server wide
 * (none is set up while as many wait), and goes after --prepared-idle-ms
 * unused: a server of many clients holds a few waiting sandboxes, and an
 * idle one none.  A failure only means no prepared call.
 */
static void
prepare_next(struct call_queue *q, const struct call *c, const struct shell_call_result *r)
{
    struct scheduler *sch = q->sched;
    if (!c->preparable || q->prepared || q->ending || sch->stopped || c->snap_capture ||
        !r->spawned || r->setup_failed || r->cancelled || q->running.count > 0 || q->waiting.head ||
        (q->streams && sch->cx->o->max_prepared == 0))
        return;
    if (q->streams && prepared_full(sch)) {
        log_debug("call: no prepared sandbox for the next call: %u HTTP sessions' wait already "
                  "(--max-prepared)",
                  sch->cx->o->max_prepared);
        return;
    }
    char *err = NULL;
    struct call *p = call_prepare_next(c, q->client, q->net, &err);
    if (!p) {
        log_warn("call: no prepared sandbox for the next call: %s", err ? err : "out of memory");
        free(err);
        return;
    }
    if (p->login && give_snapshot(sch, p) < 0) {
        log_debug("call: no prepared sandbox for the next login call: its login snapshot is not "
                  "ready");
        call_free(p);
        return;
    }
    p->q = q;
    p->session = c->session;
    p->on_end = on_prepared_end;
    q->prepared = p;
    q->prepared_at = uv_now(sch->cx->loop);
    sch->n_prepared++;
    q->prepared_live++;
    session_codex_hold(&q->codex, (const char *const *)p->codex_roots);
    call_start(p);
    if (q->streams)
        arm_idle(sch);
}

/* c, about to start, runs in q's prepared call when that fits it (which
 * then takes c's place); else the prepared one is discarded.  Returns the
 * call that runs (c, or the prepared one, c then freed). */
static struct call *
take_prepared(struct call_queue *q, struct call *c)
{
    struct call *p = q->prepared;
    if (!p)
        return c;
    q->prepared = NULL;
    const char *why = NULL;
    if (call_take_prepared(p, c, &why) < 0) {
        log_info("call %s: its prepared sandbox is discarded: %s", c->label, why);
        call_cancel(p); /* on_prepared_end frees it */
        return c;
    }
    q->sched->n_prepared--;
    q->prepared_live--;
    log_debug("call %s: runs in its prepared sandbox", p->label);
    call_free(c);
    return p;
}

static void
on_call_end(struct call *c, const struct shell_call_result *r)
{
    struct call_queue *q = c->q;
    struct scheduler *sch = q->sched;
    call_list_remove(&q->running, c);
    sch->n_running--;
    bool held = answer_end(q, c, r);
    /* before the answers held may go (and c with them) */
    prepare_next(q, c, r);
    scheduler_run(sch);
    if (!held)
        call_free(c);
    q->ops->ended(q);
}

/* Starts c, its session's next call (running, on its running list). */
static void
start_call(struct call *c)
{
    struct call_queue *q = c->q;
    c = take_prepared(q, c); /* already started when it is the prepared one */
    call_list_push(&q->running, c);
    q->sched->n_running++;
    c->on_end = on_call_end;
    session_codex_hold(&q->codex, (const char *const *)c->codex_roots);
    if (!c->started)
        call_start(c);
}

/*
 * The capture of the login environment for the waiting login call w, as a
 * call of w's session (the same sandbox policy, rules, questions and
 * cgroup as w's would have: the profile is code like any other; it counts
 * against --max-calls and ends with the session) running `SHELL -lc
 * CAPTURE` in w's workdir, under w's sandbox (each call may carry its
 * own).  The snapshot is the server's: the login calls of every session
 * with the same key use it.  Returns 0 when it started (w waits for it),
 * -1 when w runs a real login shell instead (out of memory).
 */
static int
start_capture(struct call *w)
{
    struct call_queue *q = w->q;
    struct scheduler *sch = q->sched;
    const struct call_context *cx = sch->cx;
    struct call_request r = {
        .workdir = w->snap_workdir,
        .timeout_ms = cx->o->login_snapshot_timeout_ms,
        .login = true,
        .max_output = LOGIN_SNAPSHOT_MAX_BYTES,
        .policy = w->snap_policy,
        .sandbox_cwd = w->snap_sandbox_cwd,
    };
    char *key = call_login_key(cx, &r);
    if (!key || strcmp(key, w->snap_key) != 0) {
        free(key);
        return -1;
    }
    char *command =
        login_snapshot_begin(sch->snap, sch->snap_kind, key, getenv("HOME"), uv_now(cx->loop));
    free(key);
    if (!command)
        return -1;
    r.command = command;
    json_t *id = json_pack("{s:s}", "login-snapshot", login_snapshot_kind_name(sch->snap_kind));
    char *err = NULL;
    struct call *cap = id ? call_new(cx, id, &r, q->client, q->net, false, &err) : NULL;
    json_decref(id);
    free(command);
    if (!cap) {
        char *noise = NULL, *why = NULL;
        login_snapshot_done(sch->snap, false, "", 0, &noise, &why);
        log_warn("login snapshot: cannot start its capture: %s; login calls run real login "
                 "shells",
                 err ? err : "out of memory");
        free(noise);
        free(why);
        free(err);
        return -1;
    }
    cap->snap_capture = true;
    cap->q = q;
    cap->session = w->session;
    cap->seq = ++q->next_seq;
    log_info("login snapshot: capturing what a login shell of %s sets up, in %s", cx->o->shell_path,
             w->snap_workdir);
    start_call(cap);
    return 0;
}

/* The capture's end; the calls that waited for it, in any session, start
 * next (scheduler_run). */
static void
login_capture_done(struct scheduler *sch, const struct shell_call_result *r)
{
    if (r->cancelled) {
        /* its session ended: no fault of the profile's; the next login
         * call, of any session, captures again */
        login_snapshot_abandon(sch->snap);
        log_info("login snapshot: its capture was called off (its session ended)");
        return;
    }
    bool ran = r->spawned && !r->timed_out && !r->cancelled && !r->term_signal &&
               r->exit_code == 0 && !r->setup_failed && !r->not_started && !r->output.cut;
    char *noise = NULL, *why = NULL;
    int rc = login_snapshot_done(sch->snap, ran, r->output.head, r->output.head_len, &noise, &why);
    if (noise)
        log_info("login snapshot: the login shell printed (not shown in calls): %s", noise);
    if (rc < 0)
        log_warn("login snapshot: not taken after %llu ms: %s (exit %d%s); login calls run real "
                 "login shells until a startup file changes",
                 (unsigned long long)(r->duration_ns / 1000000), why ? why : "out of memory",
                 r->exit_code, r->timed_out ? ", timed out" : "");
    else
        log_info("login snapshot: taken in %llu ms",
                 (unsigned long long)(r->duration_ns / 1000000));
    free(noise);
    free(why);
}

/*
 * Whether the waiting call c, the first of its session, may start now.  A
 * login call sources a good snapshot (login_snapshot_use), waits while one
 * is captured (and so do the calls of its session behind it: a session's
 * calls start in order), or runs a real login shell when there can be
 * none.
 */
static bool
login_ready(struct call *c)
{
    struct scheduler *sch = c->q->sched;
    if (!c->snap_key)
        return true;
    int fd = -1;
    enum login_snapshot_state st = login_snapshot_get(sch->snap, sch->snap_kind, c->snap_key,
                                                      getenv("HOME"), uv_now(sch->cx->loop), &fd);
    if (st == LOGIN_SNAPSHOT_CAPTURE && start_capture(c) == 0)
        return false;
    if (st == LOGIN_SNAPSHOT_WAIT)
        return false;
    if (st == LOGIN_SNAPSHOT_READY && call_use_snapshot(c, sch->snap, sch->snap_kind, fd) < 0)
        log_warn("login snapshot: out of memory: this call runs a real login shell");
    free(c->snap_key);
    c->snap_key = NULL;
    return true;
}

void
scheduler_start_login_snapshots(struct scheduler *sch, char ***protect, size_t *n_protect)
{
    char *err = NULL;
    char *parent = login_snapshot_parent(&err);
    struct login_snapshot *ls =
        parent ? login_snapshot_new(parent, CALL_FD_LOGIN_SNAPSHOT, &err) : NULL;
    free(parent);
    char *dir = ls ? state_paths_canonical(login_snapshot_dir(ls)) : NULL;
    char **grown = dir ? realloc(*protect, (*n_protect + 2) * sizeof(char *)) : NULL;
    if (!grown) {
        log_warn("%s: login calls run real login shells",
                 err ? err : "login snapshots: out of memory");
        free(err);
        free(dir);
        login_snapshot_free(ls);
        return;
    }
    *protect = grown;
    grown[(*n_protect)++] = dir;
    grown[*n_protect] = NULL;
    sch->snap = ls;
    /* the shell that runs the calls (--shell), whatever its file is
     * called */
    sch->snap_kind =
        login_snapshot_kind_find(sch->cx->o->shell == OPTIONS_SHELL_ZSH ? "zsh" : "bash");
    log_debug("login snapshots: in %s", login_snapshot_dir(ls));
}

bool
scheduler_snapshots(const struct scheduler *sch)
{
    return sch->snap != NULL;
}

/* ---- turns ---- */

void
scheduler_add_queue(struct scheduler *sch, struct call_queue *q)
{
    q->sched = sch;
    q->sent_oldest = UINT64_MAX;
    q->prev = NULL;
    q->next = sch->queues;
    if (sch->queues)
        sch->queues->prev = q;
    sch->queues = q;
}

void
scheduler_remove_queue(struct call_queue *q)
{
    struct scheduler *sch = q->sched;
    while (q->held.head) {
        struct call *c = q->held.head;
        call_list_remove(&q->held, c);
        call_free(c);
    }
    session_codex_release(&q->codex);
    if (!sch)
        return;
    if (q->prev)
        q->prev->next = q->next;
    else
        sch->queues = q->next;
    if (q->next)
        q->next->prev = q->prev;
    q->prev = q->next = NULL;
    q->sched = NULL;
}

/* Whether a call of q may start now. */
static bool
may_start(const struct scheduler *sch, const struct call_queue *q)
{
    return !sch->stopped && !q->ending && q->waiting.head &&
           sch->n_running < sch->cx->o->max_calls && !q->held.head && answer_room(sch, q, 0);
}

/* The next call to start: sessions take turns (the one that started the
 * last goes to the back of the line), so one busy client does not hold
 * the others' calls back.  A session whose first call waits for a login
 * snapshot's capture (login_ready, which may start the capture) waits
 * with it; the others go on. */
static struct call *
next_waiting(struct scheduler *sch)
{
    for (struct call_queue *q = sch->queues; q; q = q->next) {
        if (!may_start(sch, q) || !login_ready(q->waiting.head))
            continue;
        if (q->next) {
            if (q->prev)
                q->prev->next = q->next;
            else
                sch->queues = q->next;
            q->next->prev = q->prev;
            struct call_queue *last = q->next;
            while (last->next)
                last = last->next;
            last->next = q;
            q->prev = last;
            q->next = NULL;
        }
        return q->waiting.head;
    }
    return NULL;
}

void
scheduler_run(struct scheduler *sch)
{
    for (struct call_queue *q = sch->queues; q; q = q->next)
        scheduler_send_held(q);
    struct call *c;
    while ((c = next_waiting(sch)) != NULL) {
        call_list_remove(&c->q->waiting, c);
        start_call(c);
    }
}

void
scheduler_submit(struct call_queue *q, struct call *c)
{
    c->q = q;
    c->seq = ++q->next_seq;
    call_list_push(&q->waiting, c);
    scheduler_run(q->sched);
}

unsigned
scheduler_running(const struct scheduler *sch)
{
    return sch->n_running;
}

unsigned
scheduler_live(const struct scheduler *sch)
{
    return sch->n_running + sch->n_prepared;
}

bool
scheduler_busy_id(const struct call_queue *q, const json_t *id)
{
    return call_list_find(&q->running, id) || call_list_find(&q->waiting, id) ||
           call_list_find(&q->asking, id);
}

bool
scheduler_cancel(struct call_queue *q, const json_t *id)
{
    struct call *c = call_list_find(&q->waiting, id);
    if (c) {
        call_list_remove(&q->waiting, c);
        call_free(c);
        log_info("a waiting call was cancelled before it started");
        return true;
    }
    c = call_list_find(&q->running, id);
    if (c) {
        log_info("cancelling a running call (pid %d)", shell_call_pgid(c->sc));
        call_cancel(c);
        return true;
    }
    /* an ended call whose answer waits for room: the client wants none */
    c = call_list_find(&q->held, id);
    if (c) {
        call_list_remove(&q->held, c);
        call_free(c);
        log_info("a call was cancelled while its answer waited for the client to read");
        scheduler_run(q->sched);
        return true;
    }
    return false;
}

void
scheduler_drop_waiting(struct call_queue *q, const char *why)
{
    while (q->waiting.head) {
        struct call *c = q->waiting.head;
        call_list_remove(&q->waiting, c);
        if (why)
            q->ops->drop(q, c, why);
        call_free(c);
    }
}

void
scheduler_signal(struct scheduler *sch, int sig)
{
    for (struct call_queue *q = sch->queues; q; q = q->next) {
        for (struct call *c = q->running.head; c; c = c->next)
            call_signal(c, sig);
    }
}

void
scheduler_stop(struct scheduler *sch)
{
    sch->stopped = true;
    for (struct call_queue *q = sch->queues; q; q = q->next)
        scheduler_discard_prepared(q);
    if (sch->idle_made)
        uv_close((uv_handle_t *)&sch->idle, NULL);
    sch->idle_made = false;
    call_cgroup_pool_stop(sch->cx->pool);
}
