#include "server/net/netproxy_conn.h"

#include "server/net/nethost.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- connecting ---- */

/* Writes what it can of data[0..*n) now; advances data and *n.  Returns
 * false when something is left (or the write failed). */
static bool
write_now(struct side *s, const char **data, size_t *n)
{
    while (*n > 0) {
        uv_buf_t b = uv_buf_init((char *)*data, (unsigned)*n);
        int w = uv_try_write((uv_stream_t *)&s->tcp, &b, 1);
        if (w <= 0)
            return false;
        *data += w;
        *n -= (size_t)w;
    }
    return true;
}

#define SPLICE_PIPE_SIZE (256 * 1024) /* asked for each pipe; the kernel may give less */
#define SPLICE_ROUNDS    16           /* splices per direction per wake-up: others' turn */

static void splice_wake(uv_poll_t *p, int status, int events);

/* Moves what it can in one direction.  Returns 0, or -1 on an error. */
static int
splice_pump(struct splice_dir *d, int src, int dst)
{
    for (int round = 0; round < SPLICE_ROUNDS; round++) {
        bool progress = false;
        if (d->in_pipe > 0) {
            ssize_t n =
                splice(d->pipe[0], NULL, dst, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                d->in_pipe -= (size_t)n;
                progress = true;
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                return -1;
            }
        }
        if (!d->eof && d->in_pipe < d->cap) {
            ssize_t n = splice(src, NULL, d->pipe[1], NULL, d->cap - d->in_pipe,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                d->in_pipe += (size_t)n;
                progress = true;
            } else if (n == 0) {
                d->eof = true;
            } else if (errno != EAGAIN && errno != EINTR) {
                return -1;
            }
        }
        if (d->eof && d->in_pipe == 0 && !d->shut) {
            d->shut = true;
            if (shutdown(dst, SHUT_WR) < 0 && errno != ENOTCONN)
                return -1;
        }
        if (!progress)
            break;
    }
    return 0;
}

/* What each socket waits for: to be read while its direction has room
 * and no end, to be written while the other direction has bytes in its
 * pipe (a pump that stopped after SPLICE_ROUNDS with a full pipe is woken
 * so, as well as one that met EAGAIN). */
static void
splice_arm(struct conn *c)
{
    if (c->up.shut && c->down.shut) {
        proxy_conn_close(c);
        return;
    }
    int ev_c = (!c->up.eof && c->up.in_pipe < c->up.cap ? UV_READABLE : 0) |
               (c->down.in_pipe > 0 ? UV_WRITABLE : 0);
    int ev_u = (!c->down.eof && c->down.in_pipe < c->down.cap ? UV_READABLE : 0) |
               (c->up.in_pipe > 0 ? UV_WRITABLE : 0);
    int rc = ev_c ? uv_poll_start(&c->poll_c, ev_c, splice_wake) : uv_poll_stop(&c->poll_c);
    if (rc == 0)
        rc = ev_u ? uv_poll_start(&c->poll_u, ev_u, splice_wake) : uv_poll_stop(&c->poll_u);
    if (rc < 0)
        proxy_conn_close(c);
}

static void
splice_wake(uv_poll_t *p, int status, int events)
{
    struct conn *c = p->data;
    (void)events;
    if (c->st == ST_CLOSING)
        return;
    if (status < 0 || splice_pump(&c->up, c->fd_c, c->fd_u) < 0 ||
        splice_pump(&c->down, c->fd_u, c->fd_c) < 0) {
        proxy_conn_close(c);
        return;
    }
    splice_arm(c);
}

static int
make_pipe(struct splice_dir *d)
{
    if (pipe2(d->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        d->pipe[0] = d->pipe[1] = -1;
        return -1;
    }
    (void)fcntl(d->pipe[1], F_SETPIPE_SZ, SPLICE_PIPE_SIZE); /* less is fine */
    int size = fcntl(d->pipe[1], F_GETPIPE_SZ);
    d->cap = size > 0 ? (size_t)size : 4096;
    return 0;
}

/* Moves the tunnel to splicing: the sockets leave their stream handles
 * (nothing is queued on them) for polls.  Returns 0, or -1 with nothing
 * changed (the streams carry on). */
static int
splice_start(struct conn *c)
{
    uv_os_fd_t oc, ou;
    if (c->p->no_splice || uv_fileno((uv_handle_t *)&c->c.tcp, &oc) < 0 ||
        uv_fileno((uv_handle_t *)&c->u.tcp, &ou) < 0)
        return -1;
    if (make_pipe(&c->up) < 0 || make_pipe(&c->down) < 0)
        return -1; /* proxy_conn_unref closes a pipe made */
    int fc = fcntl(oc, F_DUPFD_CLOEXEC, 3);
    int fu = fc >= 0 ? fcntl(ou, F_DUPFD_CLOEXEC, 3) : -1;
    if (fu < 0) {
        if (fc >= 0)
            close(fc);
        return -1;
    }
    /* The stream handles close their own fds now (their epoll entries
     * with them); the copies are the polls'. */
    c->c.open = c->u.open = false;
    uv_close((uv_handle_t *)&c->c.tcp, proxy_side_closed);
    uv_close((uv_handle_t *)&c->u.tcp, proxy_side_closed);
    c->fd_c = fc;
    c->fd_u = fu;
    if (uv_poll_init_socket(c->p->loop, &c->poll_c, fc) < 0) {
        close(fc);
        close(fu);
        proxy_conn_close(c);
        return 0;
    }
    if (uv_poll_init_socket(c->p->loop, &c->poll_u, fu) < 0) {
        close(fu);
        c->fd_u = -1;
        c->poll_c.data = c;
        c->refs++;
        uv_close((uv_handle_t *)&c->poll_c, proxy_poll_closed);
        proxy_conn_close(c);
        return 0;
    }
    c->poll_c.data = c->poll_u.data = c;
    c->refs += 2;
    c->spliced = true;
    c->st = ST_RELAY;
    splice_arm(c);
    return 0;
}

/* A tunnel's start: the answer to the client and what it sent early go
 * now, then splicing; anything left over is queued on the streams. */
static int
tunnel_start(struct conn *c, const char *answer, size_t n_answer)
{
    const char *rest = c->in.data + c->rest_off;
    size_t n_rest = c->in.len - c->rest_off;
    if (write_now(&c->c, &answer, &n_answer) && write_now(&c->u, &rest, &n_rest) &&
        splice_start(c) == 0)
        return 1;
    if (proxy_send_copy(c, &c->c, answer, n_answer) < 0 ||
        proxy_send_copy(c, &c->u, rest, n_rest) < 0)
        return -1;
    c->st = ST_RELAY;
    return 0;
}

void
proxy_connected(struct conn *c)
{
    if (c->kind == K_CONNECT || c->kind == K_SOCKS) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        static const char socks_ok[10] = {5, SOCKS_OK, 0, 1, 0, 0, 0, 0, 0, 0};
        int rc = c->kind == K_CONNECT ? tunnel_start(c, ok, sizeof ok - 1)
                                      : tunnel_start(c, socks_ok, sizeof socks_ok);
        if (rc != 0)
            return; /* spliced (or closing) */
    } else {
        char *head = c->out_head;
        c->out_head = NULL;
        if (proxy_send_to(c, &c->u, NULL, head, head, strlen(head)) < 0)
            return;
        c->st = ST_FORWARD;
        /* The parser stopped on the head's last byte: the body (if any)
         * follows, up to the message's end. */
        http_parser_pause(&c->hp, 0);
        size_t from = c->rest_off - 1;
        size_t n =
            http_parser_execute(&c->hp, &proxy_body_settings, c->in.data + from, c->in.len - from);
        enum http_errno e = HTTP_PARSER_ERRNO(&c->hp);
        if (e != HPE_OK && e != HPE_PAUSED) {
            proxy_conn_close(c);
            return;
        }
        c->msg_done = e == HPE_PAUSED;
        if (n > 1 && proxy_send_copy(c, &c->u, c->in.data + c->rest_off, n - 1) < 0)
            return;
    }
    buf_free(&c->in);
    c->rest_off = 0;
    if (proxy_side_read_start(c, &c->u) < 0 ||
        (!c->msg_done && proxy_side_read_start(c, &c->c) < 0))
        proxy_conn_close(c);
}

/* The next address is tried once the failed handle has closed: its memory
 * is reused, and a handle is never initialised while its close is pending. */
static void
retry_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    if (c->st != ST_CLOSING)
        proxy_try_connect(c);
    proxy_conn_unref(c);
}

static void
retry_next(struct conn *c)
{
    c->u.open = false;
    uv_close((uv_handle_t *)&c->u.tcp, retry_closed);
}

static void
connect_done(uv_connect_t *req, int status)
{
    struct conn *c = req->data;
    if (c->st == ST_CLOSING) {
        proxy_conn_unref(c);
        return;
    }
    if (status == 0) {
        proxy_connected(c);
    } else {
        c->last_error = status;
        retry_next(c);
    }
    proxy_conn_unref(c);
}

void
proxy_try_connect(struct conn *c)
{
    while (c->ai_next) {
        struct addrinfo *a = c->ai_next;
        c->ai_next = a->ai_next;
        if ((!c->local_ok && nethost_addr_is_local(a->ai_addr)) || nethost_is_own(a->ai_addr))
            continue;
        int rc = uv_tcp_init(c->p->loop, &c->u.tcp);
        if (rc < 0) {
            c->last_error = rc;
            break;
        }
        c->u.tcp.data = c;
        c->u.open = true;
        c->refs++;
        c->creq.data = c;
        rc = uv_tcp_connect(&c->creq, &c->u.tcp, a->ai_addr, connect_done);
        if (rc == 0) {
            c->refs++;
            uv_tcp_nodelay(&c->u.tcp, 1);
            return;
        }
        c->last_error = rc;
        retry_next(c);
        return;
    }
    int e = c->last_error ? c->last_error : UV_EHOSTUNREACH;
    proxy_refuse_decided(c, 502, e == UV_ECONNREFUSED ? SOCKS_REFUSED : SOCKS_HOST_UNREACHABLE,
                         "execgate: cannot connect to %s:%u: %s", c->host, c->port, uv_strerror(e));
}
