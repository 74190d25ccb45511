/*
 * fuzz_exec_notify: the supervisor's receiver of the helper's hand-over
 * datagram.  The first input byte chooses how many fds ride along (0-2),
 * the rest is the datagram.  Whatever the input: no crash, no leak, no fd
 * left open but the one returned, and the results agree with the status
 * and the kind (a kind the protocol does not have is refused).
 */
#include "proto/esc_io.h"
#include "supervise/exec_notify.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The lowest free fd number: a leaked received fd would take it. */
static int
lowest_free(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0)
        close(fd);
    return fd;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int n_fds = data[0] % 3;
    data++;
    size--;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return 0;
    int payload = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int fds[2] = {payload, payload};
    if (payload < 0)
        n_fds = 0;
    if (esc_io_send_all(sv[1], data, size, fds, (size_t)n_fds) == 0) {
        close(sv[1]);
        sv[1] = -1;
        int before = lowest_free();
        int listener = -1;
        char *path = NULL;
        int rc = exec_notify_receive_listener(sv[0], &listener, &path);
        /* a listener comes only with an 'L' (or an 'N', taken from its
         * sender), always with the path of the helper's first exec: any
         * other kind, 'l' (the retired exec by fd) too, is refused */
        char kind = size >= 5 ? (char)data[4] : '\0';
        if (rc == 0 && (listener < 0 || path == NULL || (kind != 'L' && kind != 'N')))
            abort();
        if (rc == -EOPNOTSUPP && (listener >= 0 || path == NULL || kind != 'D'))
            abort();
        if (rc != 0 && rc != -EOPNOTSUPP && (listener >= 0 || path != NULL))
            abort();
        if (path != NULL && strlen(path) > EXEC_NOTIFY_MAX_PATH)
            abort();
        if (listener >= 0)
            close(listener);
        free(path);
        if (lowest_free() != before) /* a received fd was left open */
            abort();
    }
    if (payload >= 0)
        close(payload);
    close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    return 0;
}
