/*
 * exec_tell: the refusal line on a target's stderr.
 */
#include "supervise/exec_tell.h"
#include "supervise/exec_target.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A pipe whose reader has gone would raise SIGPIPE in the supervisor, not
 * in the target: blocked for the write, a pending one discarded after.
 * (The caller's loop is single-threaded, so the mask is the process's.) */
static void
write_without_sigpipe(int fd, const char *data, size_t len)
{
    sigset_t pipe_sig, old;
    sigemptyset(&pipe_sig);
    sigaddset(&pipe_sig, SIGPIPE);
    sigset_t pending;
    bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipe_sig, &old);
    (void)!write(fd, data, len);
    const struct timespec now = {0, 0};
    if (!was_pending)
        while (sigtimedwait(&pipe_sig, NULL, &now) > 0)
            ;
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* One line on the target's stderr, written through its own open file (a
 * duplicate by pidfd_getfd, so a read-only fd 2 stays unwritable and the
 * supervisor's rights never apply).  Skipped when writing could block the
 * caller's loop: a pipe without room, a socket, anything but a file,
 * pipe or terminal.  Best effort: the errno is the refusal itself. */
static void
tell_target(pid_t pid, const char *display, const char *reason)
{
    /* pid is the thread that asked: its fd 2 is its process's */
    int pidfd = exec_target_pidfd(pid);
    if (pidfd < 0)
        return;
    int fd = (int)syscall(SYS_pidfd_getfd, pidfd, 2, 0);
    close(pidfd);
    if (fd < 0)
        return;
    char *line = NULL;
    int len = asprintf(&line, "execgate: refused `%s`: %s\n", display, reason ? reason : "");
    struct stat st;
    bool ok = len > 0 && fstat(fd, &st) == 0;
    if (ok && S_ISSOCK(st.st_mode)) {
        (void)!send(fd, line, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL);
        ok = false;
    } else if (ok && S_ISFIFO(st.st_mode)) {
        int queued = 0, size = fcntl(fd, F_GETPIPE_SZ);
        ok = size > 0 && ioctl(fd, FIONREAD, &queued) == 0 && size - queued >= len &&
             len <= PIPE_BUF;
    } else if (ok) {
        ok = S_ISREG(st.st_mode) || S_ISCHR(st.st_mode);
    }
    if (ok)
        write_without_sigpipe(fd, line, (size_t)len);
    free(line);
    close(fd);
}

void
exec_notify_tell(pid_t pid, const char *display, const char *reason)
{
    tell_target(pid, display, reason);
}
