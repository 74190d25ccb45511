/*
 * call_fds: a call's table of inherited fds to spawn_child's list.
 */
#include "server/call/call_fds.h"

void
call_fds_init(struct call_fds *f)
{
    for (size_t at = 0; at < CALL_FD_COUNT; at++)
        f->fd[at] = -1;
}

size_t
call_fds_spawn_list(const struct call_fds *f, struct spawn_fd *out)
{
    size_t n = 0;
    for (size_t at = 0; at < CALL_FD_COUNT; at++) {
        if (f->fd[at] >= 0)
            out[n++] = (struct spawn_fd){.fd = f->fd[at], .at = (int)at};
    }
    return n;
}
