/*
 * helper_tty: the command's terminal (--tty-fd).
 *
 * The terminal is made here, inside the sandbox, from the sandbox's own
 * devpts instance (/dev/ptmx is a link to its pts/ptmx, helper_mounts.c):
 * so the command's terminal and every terminal it could open belong to
 * that instance, and nothing of the host's /dev/pts is within its reach.
 * Only the master leaves the sandbox, over --tty-fd, to the server, which
 * reads the command's output from it and writes its input (Ctrl-C
 * included: the line discipline turns it into SIGINT for the foreground
 * process group).  The slave becomes the command's controlling terminal
 * and its stdin, stdout and stderr.
 */
#include "sandbox/helper_run.h"

#include "common/fd_pass.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

/* The size a terminal has until the client says otherwise: what most
 * programs assume when they cannot ask. */
#define TTY_ROWS 24
#define TTY_COLS 80

void
helper_check_tty_fd(const struct sandbox_helper_options *o)
{
    int fd = o->tty_fd;
    if (fd < 0)
        return;
    if (fd <= 2 || fd == o->report_fd || fd == o->exec_notify_fd || fd == o->net_proxy_fd ||
        fd == o->net_ns_fd)
        sandbox_helper_die(0, "--tty-fd %d: must not be stdio or another of the helper's fds", fd);
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
        sandbox_helper_die(errno, "--tty-fd %d", fd);
    helper_fd_not_inherited(fd, "--tty-fd");
}

/* Sends master over sock: one byte with the fd attached. */
static void
send_master(int sock, int master)
{
    char byte = 't';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    ssize_t n = fd_pass_send(sock, &iov, 1, &master, 1);
    if (n < 0)
        sandbox_helper_die((int)-n, "--tty-fd %d: sending the terminal", sock);
}

void
helper_take_terminal(struct sandbox_helper_options *o)
{
    if (o->tty_fd < 0)
        return;
    int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0)
        sandbox_helper_die(errno, "opening the sandbox's /dev/ptmx");
    int unlock = 0;
    if (ioctl(master, TIOCSPTLCK, &unlock) != 0)
        sandbox_helper_die(errno, "unlocking the terminal");
    struct winsize ws = {.ws_row = TTY_ROWS, .ws_col = TTY_COLS};
    if (ioctl(master, TIOCSWINSZ, &ws) != 0)
        sandbox_helper_die(errno, "setting the terminal's size");
    /* the slave through the master: no path, so no other devpts */
    int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0)
        sandbox_helper_die(errno, "opening the terminal's slave");
    send_master(o->tty_fd, master);
    close(master);
    close(o->tty_fd);
    o->tty_fd = -1;
    /* a session of its own, whose controlling terminal this is; the
     * helper started as a session leader already when it is not in a PID
     * namespace (EPERM then) */
    if (setsid() < 0 && errno != EPERM)
        sandbox_helper_die(errno, "setsid");
    if (ioctl(slave, TIOCSCTTY, 0) != 0)
        sandbox_helper_die(errno, "making the terminal the controlling one");
    for (int t = 0; t <= 2; t++) {
        if (dup2(slave, t) < 0)
            sandbox_helper_die(errno, "the terminal as fd %d", t);
    }
    close(slave);
}
