#include "server/call/shell_call.h"

#include "common/macros.h"
#include "common/strv.h"
#include "common/log.h"
#include "server/call/output_ring.h"
#include "server/call/spawn_child.h"
#include "sandbox/policy/cmdline.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK (64u * 1024)

/* One read buffer for every call: each read callback consumes its bytes
 * (into the call's head or ring) before it returns, and the loop runs on one
 * thread, so no two reads ever hold it at once.  A call then costs a few
 * hundred bytes plus its output instead of a 64 KiB buffer each. */
static char read_chunk[READ_CHUNK];

/* Output past max_output is read in bulk, its pipe grown to this size
 * (the most an unprivileged process may ask for by default,
 * /proc/sys/fs/pipe-max-size), with pauses of PACE_MS between reads. */
#define BULK_PIPE_SIZE (1024u * 1024)
#define PACE_MS        1
/* Calls whose pipe is grown at once, server-wide: a grown pipe counts
 * against its user's pipe-user-pages-soft (64 MiB by default), past which
 * the kernel makes that user's new pipes as small as it can (pipe(7)). */
#define BULK_PIPES 16

static unsigned bulk_pipes; /* calls whose pipe is grown now */

struct shell_call {
    uv_loop_t *loop;
    struct shell_call_spec spec;
    struct shell_call_events ev;
    void *data;

    struct spawn_child *proc; /* NULL until spawned, or when that failed */
    uv_pipe_t out;
    uv_pipe_t report; /* the helper's "sandbox in place" line */
    uv_timer_t timeout;
    uv_timer_t tick; /* progress while running, the drain limit after exit */
    uv_timer_t pace; /* output in bulk: the pause between reads */
    int handles_open;

    bool started, exited, eof, ending, reading;
    bool report_eof, report_reading;
    size_t report_len; /* bytes the helper reported */
    /* the report line being read: how far, and whether it begins as the
     * helper's "could not start the program" line does */
    size_t report_line_pos;
    bool report_line_exec_error;
    bool exec_error; /* such a line came: the program never ran */
    bool timed_out, cancelled;
    char *spawn_error;
    int pid;
    int64_t exit_status;
    int term_signal;
    uint64_t started_ns, ended_ns;

    /* Output: everything until max_output, then a fixed head and a ring of
     * the newest bytes. */
    struct output_ring kept;
    bool kept_short;       /* out of memory for some output (said once) */
    bool bulk_tried, bulk; /* past max_output: the pipe was grown, reads are paced */
    bool pausing;          /* reading stopped until the pace timer fires */
    size_t bulk_size;      /* the grown pipe's size */
    size_t burst;          /* bytes read since reading last resumed */

    /* Newest line for progress messages. */
    char preview[SHELL_CALL_PREVIEW_MAX];
    size_t preview_len;
    bool preview_new; /* output arrived since the last progress report */
    bool line_done;   /* the preview's line has ended: the next byte starts a new one */

    /* the hooks' fds for the child (escalation socket, tree enforcement's
     * hand-over), at their numbers; the output and report pipes join them
     * at the start */
    struct call_fds inherit;
    /* escalation hook: the timeout clock stopped while someone is asked */
    unsigned timeout_paused;
    const struct call_cgroup_join *join; /* the call's cgroup, or NULL */
    uint64_t paused_ms;                  /* the clock's stops so far, in all */
    uint64_t pause_began;                /* uv_now when the current stop began */
    uint64_t timeout_left_ms;
    /* spec.prepared: the write end of the pipe the helper waits on for
     * its command, until it is sent; or -1 */
    int command_wfd;
};

struct shell_call *
shell_call_new(uv_loop_t *loop, struct shell_call_spec *spec, const struct shell_call_events *ev,
               void *data)
{
    struct shell_call *c = calloc(1, sizeof(*c));
    if (!c) {
        strv_free(spec->argv);
        strv_free(spec->env);
        return NULL;
    }
    c->loop = loop;
    call_fds_init(&c->inherit);
    c->spec = *spec;
    c->ev = *ev;
    c->data = data;
    c->line_done = true;
    c->command_wfd = -1;
    output_ring_init(&c->kept, spec->max_output);
    return c;
}

static void
free_call(struct shell_call *c)
{
    if (c->command_wfd >= 0)
        close(c->command_wfd);
    strv_free(c->spec.argv);
    strv_free(c->spec.env);
    free(c->spawn_error);
    output_ring_release(&c->kept);
    free(c);
}

struct shell_call_spec *
shell_call_spec(struct shell_call *c)
{
    return &c->spec;
}

void
shell_call_discard(struct shell_call *c)
{
    if (c)
        free_call(c);
}

static void on_timeout(uv_timer_t *t);

void
shell_call_set_fd(struct shell_call *c, enum call_fd at, int fd)
{
    /* the numbers below are the call's own pipes, set at the start */
    if (at >= CALL_FD_ESCALATE && at < CALL_FD_COUNT)
        c->inherit.fd[at] = fd;
}

void
shell_call_set_stdin(struct shell_call *c, int fd)
{
    c->inherit.fd[CALL_FD_STDIN] = fd;
}

void
shell_call_set_join(struct shell_call *c, const struct call_cgroup_join *j)
{
    c->join = j;
}

void
shell_call_pause_timeout(struct shell_call *c)
{
    if (c->timeout_paused++ > 0 || !c->started || c->exited || c->timed_out ||
        c->spec.timeout_ms == 0 || c->command_wfd >= 0)
        return;
    c->timeout_left_ms = uv_timer_get_due_in(&c->timeout);
    c->pause_began = uv_now(c->loop);
    uv_timer_stop(&c->timeout);
    /* what is left of the allowance, then the time that was left */
    uint64_t max = c->spec.max_pause_ms;
    if (max > 0)
        uv_timer_start(&c->timeout, on_timeout,
                       (max > c->paused_ms ? max - c->paused_ms : 0) + c->timeout_left_ms, 0);
}

void
shell_call_resume_timeout(struct shell_call *c)
{
    if (c->timeout_paused == 0 || --c->timeout_paused > 0)
        return;
    if (!c->started || c->exited || c->timed_out || c->spec.timeout_ms == 0 ||
        c->command_wfd >= 0 || uv_is_closing((uv_handle_t *)&c->timeout))
        return;
    c->paused_ms += uv_now(c->loop) - c->pause_began;
    uv_timer_start(&c->timeout, on_timeout, c->timeout_left_ms ? c->timeout_left_ms : 1, 0);
}

int
shell_call_pgid(const struct shell_call *c)
{
    return c->started && !c->exited ? c->pid : 0;
}

void
shell_call_signal(struct shell_call *c, int sig)
{
    if (c->pid > 0 && !c->exited) {
        /* The command is a session leader (new_session): its pid is
         * its group's id, and everything it starts stays in that group. */
        int rc = kill(-c->pid, sig);
        /* no such group yet: the child has not made its session (the
         * launcher's child does that first of all, so it has started
         * nothing either); it is still ours, unreaped, so its pid is */
        if (rc < 0 && errno == ESRCH)
            rc = kill(c->pid, sig);
        if (rc < 0 && errno != ESRCH)
            log_warn("call pid %d: kill: %s", c->pid, strerror(errno));
    }
    if (c->ev.on_signal)
        c->ev.on_signal(c, sig, c->data);
}

void
shell_call_cancel(struct shell_call *c)
{
    if (c->ending || c->cancelled)
        return;
    c->cancelled = true;
    /* a prepared call's helper waiting for its command ends by itself
     * when the pipe closes, whatever became of the signal */
    if (c->command_wfd >= 0)
        close(c->command_wfd);
    c->command_wfd = -1;
    shell_call_signal(c, SIGKILL);
}

/* ---- output ---- */

static void
keep_preview(struct shell_call *c, const char *buf, size_t n)
{
    /* The newest line with text: after the last newline, or, when the chunk
     * ends with one, the line that newline ends. */
    bool ends_line = buf[n - 1] == '\n';
    size_t end = ends_line ? n - 1 : n;
    const char *nl = end ? memrchr(buf, '\n', end) : NULL;
    size_t start = nl ? (size_t)(nl - buf) + 1 : 0;
    if (start < end) {
        size_t len = end - start;
        if (nl || c->line_done)
            c->preview_len = 0;
        size_t room = sizeof(c->preview) - c->preview_len;
        size_t add = len < room ? len : room;
        memcpy(c->preview + c->preview_len, buf + start, add);
        c->preview_len += add;
        c->preview_new = true;
    }
    c->line_done = ends_line;
}

static void
keep_output(struct shell_call *c, const char *buf, size_t n)
{
    if (c->ev.on_output) {
        c->ev.on_output(c, buf, n, c->data);
        return;
    }
    if (c->spec.progress)
        keep_preview(c, buf, n);
    if (output_ring_append(&c->kept, buf, n) < 0 && !c->kept_short) {
        /* counted as omitted: the answer is short, not wrong */
        log_warn("call pid %d: out of memory for its output; some is left out", c->pid);
        c->kept_short = true;
    }
}

/*
 * Past max_output a command prints fast, and reading each of its writes as
 * it arrives costs a wakeup for every few KiB (seq 1 3000000: 2500 to 4800
 * reads of 4 to 8 KiB for 20 MB), each one also slowing the writer.  So
 * the pipe grows to BULK_PIPE_SIZE and, each time a read empties it,
 * reading stops for PACE_MS: the writer fills the pipe meanwhile, and one
 * wakeup takes it all, straight into the ring.  A pipe found full since
 * reading resumed may have held the writer up: then reading goes on
 * without a pause.
 */
static void
start_bulk(struct shell_call *c)
{
    c->bulk_tried = true;
    uv_os_fd_t fd;
    if (bulk_pipes >= BULK_PIPES || uv_fileno((uv_handle_t *)&c->out, &fd) < 0)
        return;
    int size = fcntl(fd, F_SETPIPE_SZ, (int)BULK_PIPE_SIZE);
    if (size < 0) {
        log_debug("call pid %d: cannot grow its output pipe: %s; reading it as it comes", c->pid,
                  strerror(errno));
        return;
    }
    c->bulk = true;
    c->bulk_size = (size_t)size;
    bulk_pipes++;
}

static void
end_bulk(struct shell_call *c)
{
    if (c->bulk)
        bulk_pipes--;
    c->bulk = false;
}

static void on_out_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void maybe_end(struct shell_call *c);

static void
read_output(struct shell_call *c)
{
    c->burst = 0;
    int rc = uv_read_start((uv_stream_t *)&c->out, on_out_alloc, on_read);
    c->reading = rc == 0;
    if (rc < 0) {
        log_warn("call pid %d: cannot read its output: %s", c->pid, uv_strerror(rc));
        c->eof = true;
    }
}

static void
on_pace(uv_timer_t *t)
{
    struct shell_call *c = container_of(t, struct shell_call, pace);
    c->pausing = false;
    if (c->ending || c->eof)
        return;
    read_output(c);
    maybe_end(c);
}

/* A read left the pipe empty: pause, unless reading in bulk is off, the
 * command has ended (what is left is read at once), or the pipe was full
 * since reading resumed. */
static void
pace(struct shell_call *c)
{
    bool was_full = c->burst >= c->bulk_size;
    c->burst = 0;
    if (!c->bulk || c->exited || was_full)
        return;
    uv_read_stop((uv_stream_t *)&c->out);
    c->reading = false;
    c->pausing = true;
    uv_timer_start(&c->pace, on_pace, PACE_MS, 0);
}

/* The command ended: what its pipe still holds is read now. */
static void
stop_pacing(struct shell_call *c)
{
    if (!c->pausing)
        return;
    c->pausing = false;
    uv_timer_stop(&c->pace);
    read_output(c);
}

/* n bytes read into buf: read_chunk, or the ring itself. */
static void
keep_read(struct shell_call *c, const char *buf, size_t n)
{
    c->burst += n;
    if (buf != read_chunk) {
        if (c->spec.progress)
            keep_preview(c, buf, n);
        output_ring_wrote(&c->kept, n);
        return;
    }
    keep_output(c, buf, n);
    if (c->kept.cut && !c->bulk_tried)
        start_bulk(c);
}

/* ---- the end ---- */

static void report_and_free(struct shell_call *c);

static void
on_handle_closed(uv_handle_t *h)
{
    struct shell_call *c = h->data;
    if (--c->handles_open == 0)
        report_and_free(c);
}

static void
on_proc_closed(struct spawn_child *p)
{
    struct shell_call *c = spawn_data(p);
    if (--c->handles_open == 0)
        report_and_free(c);
}

static void
close_handle(struct shell_call *c, uv_handle_t *h)
{
    if (h->data == c && !uv_is_closing(h))
        uv_close(h, on_handle_closed);
}

static void
end_call(struct shell_call *c)
{
    if (c->ending)
        return;
    c->ending = true;
    if (c->command_wfd >= 0)
        close(c->command_wfd);
    c->command_wfd = -1;
    if (c->reading)
        uv_read_stop((uv_stream_t *)&c->out);
    c->reading = false;
    end_bulk(c);
    if (c->proc)
        spawn_close(c->proc, on_proc_closed);
    close_handle(c, (uv_handle_t *)&c->out);
    if (c->report_reading)
        uv_read_stop((uv_stream_t *)&c->report);
    c->report_reading = false;
    close_handle(c, (uv_handle_t *)&c->report);
    close_handle(c, (uv_handle_t *)&c->timeout);
    close_handle(c, (uv_handle_t *)&c->tick);
    close_handle(c, (uv_handle_t *)&c->pace);
}

static void
maybe_end(struct shell_call *c)
{
    if ((c->exited || !c->started) && c->eof && (c->report_eof || !c->spec.report))
        end_call(c);
}

static void
report_and_free(struct shell_call *c)
{
    struct shell_call_result r = {0};
    r.spawned = c->started && !c->spawn_error;
    r.error = c->spawn_error;
    r.timed_out = c->timed_out;
    r.cancelled = c->cancelled;
    r.term_signal = c->term_signal;
    bool helper_ended =
        c->spec.report && r.spawned && !c->timed_out && !c->cancelled && !c->term_signal;
    r.setup_failed = helper_ended && c->exit_status == 125 && c->report_len == 0;
    r.not_started =
        helper_ended && (c->exit_status == 126 || c->exit_status == 127) && c->exec_error;
    if (c->timed_out)
        r.exit_code = SHELL_CALL_TIMEOUT_EXIT;
    else if (c->term_signal)
        r.exit_code = 128 + c->term_signal;
    else
        r.exit_code = (int)c->exit_status;
    output_ring_text(&c->kept, &r.output);
    r.duration_ns = c->ended_ns > c->started_ns ? c->ended_ns - c->started_ns : 0;
    c->ev.on_done(c, &r, c->data);
    free_call(c);
}

/* ---- callbacks ---- */

static void
on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    buf->base = read_chunk;
    buf->len = sizeof(read_chunk);
}

/* Past max_output, reads go straight into the ring. */
static void
on_out_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct shell_call *c = h->data;
    size_t n = 0;
    char *at = output_ring_space(&c->kept, &n);
    buf->base = at ? at : read_chunk;
    buf->len = at ? n : sizeof(read_chunk);
}

static void
on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct shell_call *c = s->data;
    if (n > 0) {
        keep_read(c, buf->base, (size_t)n);
        if ((size_t)n < buf->len)
            pace(c);
        return;
    }
    if (n == 0) {
        pace(c); /* nothing more for now */
        return;
    }
    if (n != UV_EOF)
        log_warn("call pid %d: reading output: %s", c->pid, uv_strerror((int)n));
    uv_read_stop(s);
    c->reading = false;
    c->eof = true;
    maybe_end(c);
}

/* Looks for the line the helper writes when it could not start the
 * program (SANDBOX_REPORT_EXEC_ERROR...), across reads. */
static void
scan_report(struct shell_call *c, const char *p, size_t n)
{
    static const char marker[] = SANDBOX_REPORT_EXEC_ERROR;
    for (size_t i = 0; i < n; i++) {
        if (c->report_line_pos == 0)
            c->report_line_exec_error = true;
        if (p[i] == '\n') {
            if (c->report_line_exec_error && c->report_line_pos >= sizeof(marker) - 1)
                c->exec_error = true;
            c->report_line_pos = 0;
            continue;
        }
        if (c->report_line_pos < sizeof(marker) - 1 && p[i] != marker[c->report_line_pos])
            c->report_line_exec_error = false;
        c->report_line_pos++;
    }
}

static void
on_report_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct shell_call *c = s->data;
    if (n > 0) {
        if (c->report_len <= SHELL_CALL_REPORT_MAX)
            scan_report(c, buf->base, (size_t)n);
        c->report_len += (size_t)n;
        if (c->report_len > SHELL_CALL_REPORT_MAX)
            log_warn("call pid %d: the sandbox helper reports too much; ignored", c->pid);
        return;
    }
    if (n == 0)
        return;
    uv_read_stop(s);
    c->report_reading = false;
    c->report_eof = true;
    maybe_end(c);
}

static void
on_drain_expired(uv_timer_t *t)
{
    struct shell_call *c = container_of(t, struct shell_call, tick);
    log_warn("call pid %d: output pipe still open %d ms after the command ended (a process "
             "left its group?); not waiting for it",
             c->pid, SHELL_CALL_DRAIN_MS);
    c->eof = true;
    if (!c->report_eof && c->report_reading)
        uv_read_stop((uv_stream_t *)&c->report);
    c->report_reading = false;
    c->report_eof = true;
    maybe_end(c);
}

static void
on_child_exit(struct spawn_child *p, int64_t status, int sig)
{
    struct shell_call *c = spawn_data(p);
    c->ended_ns = uv_hrtime();
    c->exit_status = status;
    c->term_signal = sig;
    /* Whatever the command left running in its group ends with it; this
     * also closes the pipe they might hold. */
    shell_call_signal(c, SIGKILL);
    c->exited = true;
    uv_timer_stop(&c->timeout);
    uv_timer_stop(&c->tick);
    stop_pacing(c);
    if (!c->eof || !c->report_eof)
        uv_timer_start(&c->tick, on_drain_expired, SHELL_CALL_DRAIN_MS, 0);
    maybe_end(c);
}

static void
on_timeout(uv_timer_t *t)
{
    struct shell_call *c = container_of(t, struct shell_call, timeout);
    if (c->exited)
        return;
    log_info("call pid %d: timed out after %llu ms; killing its process group", c->pid,
             (unsigned long long)c->spec.timeout_ms);
    c->timed_out = true;
    shell_call_signal(c, SIGKILL);
}

static void
on_tick(uv_timer_t *t)
{
    struct shell_call *c = container_of(t, struct shell_call, tick);
    if (!c->preview_new || c->exited)
        return;
    c->preview_new = false;
    c->ev.on_progress(c, c->preview, c->preview_len, c->kept.total, c->data);
}

/* ---- start ---- */

/* A pipe whose read end p owns; *wfd gets the write end. */
static int
open_pipe(struct shell_call *c, uv_pipe_t *p, int *wfd)
{
    uv_file fds[2];
    int rc = uv_pipe(fds, 0, 0); /* both ends close-on-exec */
    if (rc < 0)
        return rc;
    rc = uv_pipe_init(c->loop, p, 0);
    if (rc == 0) {
        p->data = c;
        c->handles_open++;
        rc = uv_pipe_open(p, fds[0]);
    }
    if (rc < 0) {
        close(fds[0]);
        close(fds[1]);
        return rc;
    }
    *wfd = fds[1];
    return 0;
}

static int
init_handles(struct shell_call *c, int *wfd, int *report_wfd)
{
    int rc = open_pipe(c, &c->out, wfd);
    if (rc == 0 && c->spec.report) {
        rc = open_pipe(c, &c->report, report_wfd);
        if (rc < 0) {
            close(*wfd);
            *wfd = -1;
        }
    }
    if (rc < 0)
        return rc;
    uv_timer_init(c->loop, &c->timeout);
    c->timeout.data = c;
    c->handles_open++;
    uv_timer_init(c->loop, &c->tick);
    c->tick.data = c;
    c->handles_open++;
    uv_timer_init(c->loop, &c->pace);
    c->pace.data = c;
    c->handles_open++;
    return 0;
}

/* The pipe a prepared call's helper waits on for its command: the read
 * end in *rfd for the child, the write end kept, non-blocking (a write
 * that does not fit at once is not waited for). */
static int
open_command_pipe(struct shell_call *c, int *rfd)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -errno;
    if (fcntl(fds[1], F_SETFL, O_NONBLOCK) != 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return -e;
    }
    *rfd = fds[0];
    c->command_wfd = fds[1];
    return 0;
}

/* The call's clock: its timeout and progress ticks, from now. */
static void
start_clock(struct shell_call *c)
{
    if (c->spec.timeout_ms > 0)
        uv_timer_start(&c->timeout, on_timeout, c->spec.timeout_ms, 0);
    if (c->spec.progress)
        uv_timer_start(&c->tick, on_tick, SHELL_CALL_PROGRESS_MS, SHELL_CALL_PROGRESS_MS);
}

void
shell_call_start(struct shell_call *c)
{
    c->started = true;
    c->started_ns = uv_hrtime();
    int wfd = -1, report_wfd = -1;
    int rc = init_handles(c, &wfd, &report_wfd);
    if (rc == 0) {
        /* The inherited fds, all here (call_fds.h): the output pipe's write
         * end becomes the child's stdout and stderr, the report pipe's its
         * CALL_FD_REPORT, the hooks' fds theirs; stdin is /dev/null
         * (spawn_child.c). */
        struct call_fds inherit = c->inherit;
        inherit.fd[CALL_FD_STDOUT] = wfd;
        inherit.fd[CALL_FD_STDERR] = wfd;
        inherit.fd[CALL_FD_REPORT] = report_wfd;
        int command_rfd = -1;
        if (c->spec.prepared)
            rc = open_command_pipe(c, &command_rfd);
        inherit.fd[CALL_FD_COMMAND] = command_rfd;
        struct spawn_fd fds[CALL_FD_COUNT];
        size_t n = call_fds_spawn_list(&inherit, fds);
        struct spawn_options opts = {
            .file = c->spec.argv[0],
            .argv = c->spec.argv,
            .env = c->spec.env,
            .fds = fds,
            .n_fds = n,
            .new_session = true,
            .die_with_server = true,
            .join = c->join,
            .via_launcher = c->spec.helper,
        };
        if (rc == 0)
            rc = spawn_start(c->loop, &opts, on_child_exit, c, &c->proc);
        close(wfd);
        if (command_rfd >= 0)
            close(command_rfd);
        if (report_wfd >= 0)
            close(report_wfd);
        if (rc == 0)
            c->handles_open++;
        else
            c->exited = true;
    }
    if (rc < 0) {
        if (asprintf(&c->spawn_error, "cannot start %s: %s", c->spec.argv[0], uv_strerror(rc)) < 0)
            c->spawn_error = NULL;
        if (!c->spawn_error)
            c->spawn_error = strdup("cannot start the sandbox helper");
        c->ended_ns = uv_hrtime();
        c->eof = true;
        c->report_eof = true;
        if (c->handles_open == 0) {
            /* nothing to close: report from a later loop turn all the same */
            uv_timer_init(c->loop, &c->tick);
            c->tick.data = c;
            c->handles_open++;
        }
        end_call(c);
        return;
    }
    c->pid = spawn_pid(c->proc);
    read_output(c);
    if (c->spec.report) {
        rc = uv_read_start((uv_stream_t *)&c->report, on_alloc, on_report_read);
        c->report_reading = rc == 0;
        c->report_eof = rc != 0;
    }
    if (!c->spec.prepared)
        start_clock(c);
}

int
shell_call_send_command(struct shell_call *c, const char *command)
{
    if (!c->spec.prepared || c->command_wfd < 0 || c->exited || c->ending)
        return -ESRCH;
    size_t len = strlen(command);
    if (len > SANDBOX_COMMAND_MAX)
        return -EMSGSIZE;
    /* one write, as the pipe takes it whole or not at all here: the
     * frame is far under the pipe's size, and a helper that reads it
     * sees the whole of it or, the call discarded, an end */
    uint32_t n = (uint32_t)len;
    char *frame = malloc(sizeof n + len);
    if (!frame)
        return -ENOMEM;
    memcpy(frame, &n, sizeof n);
    memcpy(frame + sizeof n, command, len);
    ssize_t w = write(c->command_wfd, frame, sizeof n + len);
    int e = errno;
    free(frame);
    if (w < 0)
        return -e;
    if ((size_t)w != sizeof n + len)
        return -EAGAIN;
    close(c->command_wfd);
    c->command_wfd = -1;
    c->started_ns = uv_hrtime();
    start_clock(c);
    return 0;
}
