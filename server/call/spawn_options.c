/*
 * spawn_options: questions about a child's start options.
 */
#include "server/call/spawn_options.h"

bool
spawn_options_fd_given(const struct spawn_options *o, int at)
{
    for (size_t i = 0; i < o->n_fds; i++) {
        if (o->fds[i].at == at)
            return true;
    }
    return false;
}
