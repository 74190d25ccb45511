#include "server/mcp/process.h"

#include "common/buf.h"
#include "common/fd_pass.h"
#include "common/log.h"
#include "common/macros.h"
#include "server/call/call_fds.h"
#include "server/call/shell_call.h"
#include "server/mcp/call.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One read buffer for every terminal: each read is consumed into its
 * process's ring before the callback returns (one loop, one thread). */
static char tty_chunk[16 * 1024];

struct process {
    struct process_table *t;
    struct list node; /* in t->procs until forgotten */
    int64_t id;
    char *command;
    bool tty;
    struct call *c; /* until its end */
    struct output_ring unread;
    uint64_t started_ms;

    /* the command's input: a pipe's write end, or its terminal's master
     * (which also carries its output) */
    uv_pipe_t io;
    bool io_open;
    /* tty: the socket its master comes back on, until it has */
    uv_poll_t sock;
    int sock_fd;
    bool sock_open;
    /* input written before the terminal came: it goes first, then */
    struct buf early_in;
    uv_timer_t yield; /* the waiter's */
    uv_timer_t drain; /* tty: how long the master may lag behind the end */
    int handles_open;

    bool call_done, ended, killed, forgotten;
    int exit_code, term_signal;
    bool setup_failed;
    char *error;

    process_wait_fn wait_cb;
    void *wait_data;
};

/* Input kept while the terminal is on its way, at most. */
#define PROCESS_EARLY_INPUT_MAX (64u * 1024)
/* Input written and not yet taken by the command, at most: a command that
 * does not read cannot make the server hold what it is sent. */
#define PROCESS_INPUT_QUEUE_MAX (1024u * 1024)

#define PROCESS(n) list_entry(n, struct process, node)

void
process_table_init(struct process_table *t, uv_loop_t *loop, size_t ring_max,
                   void (*on_empty)(void *data), void *data)
{
    memset(t, 0, sizeof(*t));
    t->loop = loop;
    list_init(&t->procs);
    t->ring_max = ring_max;
    t->on_empty = on_empty;
    t->data = data;
}

/* ---- freeing ---- */

static void
try_free(struct process *p)
{
    if (!p->forgotten || !p->call_done || p->handles_open > 0)
        return;
    struct process_table *t = p->t;
    output_ring_release(&p->unread);
    free(p->early_in.data);
    free(p->command);
    free(p->error);
    free(p);
    if (--t->live == 0 && t->ending && t->on_empty)
        t->on_empty(t->data);
}

static void
on_handle_closed(uv_handle_t *h)
{
    struct process *p = h->data;
    p->handles_open--;
    try_free(p);
}

static void
close_handle(uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, on_handle_closed);
}

static void
close_io(struct process *p)
{
    if (!p->io_open)
        return;
    p->io_open = false;
    close_handle((uv_handle_t *)&p->io);
}

static void
close_sock(struct process *p)
{
    if (!p->sock_open)
        return;
    p->sock_open = false;
    close_handle((uv_handle_t *)&p->sock);
    close(p->sock_fd);
    p->sock_fd = -1;
}

/* ---- the end ---- */

/* The waiter, told (p NULL: dropped, nothing to answer). */
static void
wake(struct process *p, bool dropped)
{
    process_wait_fn cb = p->wait_cb;
    void *data = p->wait_data;
    if (!cb)
        return;
    p->wait_cb = NULL;
    p->wait_data = NULL;
    uv_timer_stop(&p->yield);
    cb(dropped ? NULL : p, data);
}

/* Ended once the call has and nothing more can come from its terminal. */
static void
maybe_ended(struct process *p)
{
    if (p->ended || !p->call_done || p->io_open || p->sock_open)
        return;
    p->ended = true;
    uv_timer_stop(&p->drain);
    wake(p, false);
}

static void
on_drain_expired(uv_timer_t *h)
{
    struct process *p = h->data;
    log_warn("process %lld: its terminal still open %d ms after the command ended; not waiting "
             "for it",
             (long long)p->id, SHELL_CALL_DRAIN_MS);
    close_io(p);
    maybe_ended(p);
}

static void
on_call_end(struct call *c, const struct shell_call_result *r)
{
    struct process *p = c->session;
    p->exit_code = r->exit_code;
    p->term_signal = r->term_signal;
    p->setup_failed = r->setup_failed;
    if (!r->spawned && !(p->error = strdup(r->error ? r->error : "cannot start")))
        log_warn("process %lld: out of memory keeping why it did not start", (long long)p->id);
    log_info("process %lld: ended: exit %d%s", (long long)p->id, r->exit_code,
             p->killed ? " (killed)" : "");
    call_free(c);
    p->c = NULL;
    p->call_done = true;
    close_sock(p);
    if (!p->tty || p->forgotten)
        close_io(p); /* nobody reads its input (or its terminal) any more */
    else if (p->io_open)
        uv_timer_start(&p->drain, on_drain_expired, SHELL_CALL_DRAIN_MS, 0);
    maybe_ended(p);
    try_free(p);
}

/* ---- output ---- */

static void
keep(struct process *p, const char *buf, size_t n)
{
    if (output_ring_append(&p->unread, buf, n) < 0)
        log_warn("process %lld: out of memory for its output; %zu bytes are left out",
                 (long long)p->id, n);
}

static void
on_call_output(struct call *c, const char *buf, size_t n)
{
    keep(c->session, buf, n);
}

static void
on_tty_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    buf->base = tty_chunk;
    buf->len = sizeof(tty_chunk);
}

static void
on_tty_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct process *p = s->data;
    if (n > 0) {
        keep(p, buf->base, (size_t)n);
        return;
    }
    if (n == 0)
        return;
    /* the last slave closed: EIO from a master is its end of file */
    if (n != UV_EOF && n != UV_EIO)
        log_warn("process %lld: reading its terminal: %s", (long long)p->id, uv_strerror((int)n));
    close_io(p);
    maybe_ended(p);
}

/* tty: the helper sends the master of the command's terminal. */
static void
on_sock(uv_poll_t *h, int status, int events)
{
    struct process *p = h->data;
    char byte;
    int fds[1] = {-1};
    size_t nfds = 0;
    ssize_t rc = status < 0 ? status : fd_pass_recv(p->sock_fd, &byte, 1, fds, 1, &nfds, NULL);
    if (rc == -EAGAIN)
        return;
    close_sock(p);
    if (rc <= 0 || nfds != 1) {
        if (nfds == 1)
            close(fds[0]);
        /* the helper ended first: its output says why */
        log_info("process %lld: no terminal came from its sandbox", (long long)p->id);
        maybe_ended(p);
        return;
    }
    int err = uv_pipe_init(p->t->loop, &p->io, 0);
    if (err == 0) {
        p->io.data = p;
        p->handles_open++;
        p->io_open = true;
        err = uv_pipe_open(&p->io, fds[0]);
        if (err < 0)
            close(fds[0]);
    } else {
        close(fds[0]);
    }
    if (err == 0)
        err = uv_read_start((uv_stream_t *)&p->io, on_tty_alloc, on_tty_read);
    if (err == 0 && p->early_in.len > 0) {
        int wrc = process_write(p, p->early_in.data, p->early_in.len);
        if (wrc < 0)
            log_info("process %lld: the input written before its terminal came is lost: %s",
                     (long long)p->id, strerror(-wrc));
    }
    free(p->early_in.data);
    p->early_in = (struct buf){0};
    if (err < 0) {
        log_warn("process %lld: cannot use its terminal: %s; killing it", (long long)p->id,
                 uv_strerror(err));
        close_io(p);
        process_kill(p);
    }
}

/* ---- starting ---- */

/* The input pipe: its read end in *child (for the command's stdin), its
 * write end on p->io.  Returns 0 or a libuv error. */
static int
open_input(struct process *p, int *child)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return uv_translate_sys_error(errno);
    int rc = uv_pipe_init(p->t->loop, &p->io, 0);
    if (rc == 0) {
        p->io.data = p;
        p->handles_open++;
        p->io_open = true;
        rc = uv_pipe_open(&p->io, fds[1]);
    }
    if (rc < 0) {
        close(fds[0]);
        close(fds[1]);
        return rc;
    }
    *child = fds[0];
    return 0;
}

/* tty: the socket the master comes back on: the helper's end in *child. */
static int
open_tty_socket(struct process *p, int *child)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
        return uv_translate_sys_error(errno);
    int rc = uv_poll_init(p->t->loop, &p->sock, sv[0]);
    if (rc == 0) {
        p->sock.data = p;
        p->handles_open++;
        p->sock_open = true;
        p->sock_fd = sv[0];
        rc = uv_poll_start(&p->sock, UV_READABLE | UV_DISCONNECT, on_sock);
    }
    if (rc < 0) {
        if (!p->sock_open)
            close(sv[0]);
        close(sv[1]);
        return rc;
    }
    *child = sv[1];
    return 0;
}

static void
init_timer(struct process *p, uv_timer_t *h)
{
    uv_timer_init(p->t->loop, h);
    h->data = p;
    p->handles_open++;
}

struct process *
process_start(struct process_table *t, struct call *c, const char *command, bool tty, char **err)
{
    *err = NULL;
    struct process *p = calloc(1, sizeof(*p));
    if (!p || !(p->command = strdup(command))) {
        free(p);
        call_free(c);
        return NULL;
    }
    p->t = t;
    p->tty = tty;
    p->c = c;
    p->sock_fd = -1;
    p->id = ++t->next_id;
    p->started_ms = uv_now(t->loop);
    output_ring_init(&p->unread, t->ring_max);
    list_init(&p->node);
    list_insert_tail(&t->procs, &p->node);
    t->count++;
    t->live++;
    init_timer(p, &p->yield);
    init_timer(p, &p->drain);
    c->session = p;
    c->on_end = on_call_end;
    c->on_output = on_call_output;
    int child = -1;
    int rc = tty ? open_tty_socket(p, &child) : open_input(p, &child);
    if (rc < 0) {
        *err = strdup(uv_strerror(rc));
        /* never started: it ends here, as a call that could not start */
        call_free(c);
        p->c = NULL;
        p->call_done = true;
        p->ended = true;
        process_forget(p);
        return NULL;
    }
    if (tty)
        shell_call_set_fd(c->sc, CALL_FD_TTY, child);
    else
        shell_call_set_stdin(c->sc, child);
    call_start(c); /* the spawn is done when it returns: the child has its copy */
    close(child);
    log_info("process %lld: started%s", (long long)p->id, tty ? " on a terminal" : "");
    return p;
}

/* ---- the owner's ---- */

struct process *
process_find(struct process_table *t, int64_t id)
{
    struct list *n;
    list_foreach(n, &t->procs)
    {
        if (PROCESS(n)->id == id)
            return PROCESS(n);
    }
    return NULL;
}

struct process *
process_first(struct process_table *t)
{
    return list_empty(&t->procs) ? NULL : PROCESS(t->procs.next);
}

struct process *
process_next(struct process_table *t, struct process *p)
{
    return p->node.next == &t->procs ? NULL : PROCESS(p->node.next);
}

void
process_state(const struct process *p, struct process_state *st)
{
    *st = (struct process_state){
        .id = p->id,
        .command = p->command,
        .tty = p->tty,
        .running = !p->ended,
        .exit_code = p->exit_code,
        .term_signal = p->term_signal,
        .killed = p->killed,
        .error = p->error,
        .setup_failed = p->setup_failed,
        .age_ms = uv_now(p->t->loop) - p->started_ms,
        .unread = p->unread.total,
    };
}

struct write_req {
    uv_write_t req;
    int64_t id;
    char bytes[];
};

static void
on_written(uv_write_t *req, int status)
{
    struct write_req *w = container_of(req, struct write_req, req);
    if (status < 0 && status != UV_ECANCELED)
        log_info("process %lld: its input: %s", (long long)w->id, uv_strerror(status));
    free(w);
}

int
process_write(struct process *p, const char *buf, size_t n)
{
    if (p->sock_open && !p->call_done) {
        /* the terminal is on its way: kept until it comes, within reason */
        if (p->early_in.len + n > PROCESS_EARLY_INPUT_MAX)
            return -ENOBUFS;
        return buf_append(&p->early_in, buf, n) == 0 ? 0 : -ENOMEM;
    }
    if (!p->io_open || p->call_done)
        return -EPIPE;
    if (n == 0)
        return 0;
    if (uv_stream_get_write_queue_size((uv_stream_t *)&p->io) + n > PROCESS_INPUT_QUEUE_MAX)
        return -ENOBUFS;
    struct write_req *w = malloc(sizeof(*w) + n);
    if (!w)
        return -ENOMEM;
    w->id = p->id;
    memcpy(w->bytes, buf, n);
    uv_buf_t b = uv_buf_init(w->bytes, (unsigned)n);
    int rc = uv_write(&w->req, (uv_stream_t *)&p->io, &b, 1, on_written);
    if (rc < 0) {
        free(w);
        return rc == UV_ENOMEM ? -ENOMEM : -EPIPE;
    }
    return 0;
}

static void
on_yield(uv_timer_t *h)
{
    wake(h->data, false);
}

int
process_wait(struct process *p, uint64_t yield_ms, process_wait_fn cb, void *data)
{
    if (p->wait_cb)
        return -EBUSY;
    if (p->ended) {
        cb(p, data);
        return 0;
    }
    p->wait_cb = cb;
    p->wait_data = data;
    uv_timer_start(&p->yield, on_yield, yield_ms, 0);
    return 0;
}

void *
process_waiter(const struct process *p)
{
    return p->wait_cb ? p->wait_data : NULL;
}

void
process_unwait(struct process *p)
{
    wake(p, true);
}

void
process_wake(struct process *p)
{
    wake(p, false);
}

void
process_output(struct process *p, struct output_ring_text *t)
{
    output_ring_text(&p->unread, t);
}

void
process_output_taken(struct process *p)
{
    output_ring_release(&p->unread);
}

void
process_kill(struct process *p)
{
    if (p->call_done || !p->c)
        return;
    p->killed = true;
    call_cancel(p->c);
}

void
process_forget(struct process *p)
{
    if (p->forgotten)
        return;
    p->forgotten = true;
    list_unlink(&p->node);
    p->t->count--;
    wake(p, true);
    process_kill(p);
    close_handle((uv_handle_t *)&p->yield);
    close_handle((uv_handle_t *)&p->drain);
    if (p->call_done) {
        close_io(p);
        close_sock(p);
    }
    try_free(p);
}

void
process_table_end(struct process_table *t)
{
    if (t->ending)
        return;
    t->ending = true;
    if (t->count > 0)
        log_info("%u background process(es) of the session are killed", t->count);
    while (!list_empty(&t->procs))
        process_forget(PROCESS(t->procs.next));
}
