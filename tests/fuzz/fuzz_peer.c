#include "fuzz_peer.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

enum { MAX_ROUNDS = 20000 };

void
fuzz_peer_talk(const struct fuzz_peer *p, const uint8_t *data, size_t size)
{
    size_t sent = 0;
    bool eof = false;
    int quiet = 0;
    if (size == 0 && p->half_close)
        shutdown(p->fd, SHUT_WR);
    for (int round = 0; round < MAX_ROUNDS && !eof && quiet < p->quiet_limit; round++) {
        if (sent < size) {
            ssize_t n = send(p->fd, data + sent, size - sent, MSG_NOSIGNAL);
            if (n > 0)
                sent += (size_t)n;
            else if (n < 0 && errno != EAGAIN)
                sent = size; /* the server closed */
            if (sent == size && p->half_close)
                shutdown(p->fd, SHUT_WR);
        }
        uv_run(p->loop, UV_RUN_NOWAIT);
        char buf[4096];
        ssize_t n = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);
        eof = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
        quiet = n < 0 && sent == size ? quiet + 1 : 0;
        if (quiet == 2 && p->on_quiet && p->on_quiet(p->data))
            quiet = 0;
        if (quiet > 0 && !eof) {
            /* a server waiting on a timer or a lookup: give it a moment */
            struct pollfd pf = {.fd = p->fd, .events = POLLIN};
            poll(&pf, 1, 1);
        }
    }
}
