/*
 * exec_notify: reads, decides and answers exec notifications.
 *
 * Order for each notification (seccomp_unotify(2)): open /proc/PID/mem,
 * check the id is still valid (so PID was not reused), read path and argv,
 * open the file they name through the target's own cwd, fd or root, then
 * check validity again before answering: what was read belonged to the
 * process that is still stopped in that execve.
 */
#include "supervise/exec_notify.h"
#include "sandbox/exec_filter.h"
#include "supervise/unix_connect.h"
#include "rules/exec_path.h"
#include "common/fd_pass.h"
#include "common/strv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct pending {
    uint64_t id;
    pid_t pid;
    char *display;
};

struct exec_notify {
    int fd;
    char *first_path;
    bool first_seen;
    bool refuse_shared_memory;
    bool read_env;
    bool hung_up;        /* the last poll of exec_notify_process saw POLLHUP alone */
    pid_t last_told_pid; /* the last refusal line written, to write it once */
    char *last_told;
    exec_notify_decide_fn decide;
    exec_notify_ask_fn ask;
    exec_notify_quick_fn quick;
    void *arg;
    struct seccomp_notif_sizes sizes;
    struct seccomp_notif_resp *resp; /* sizes.seccomp_notif_resp bytes */
    struct pending *pending;
    size_t n_pending, cap_pending;
    struct exec_notify_stats stats;
    const struct unix_connect_config *connect_cfg;
    exec_notify_wait_fn connect_wait;
    void *connect_arg;
};

/* ---- receiving the listener ---- */

/* The listener's number in an 'N' message, after the kind byte. */
#define NUMBER_LEN sizeof(int)

/* Where the path starts in a hand-over of kind k. */
static size_t
path_at(char k)
{
    return k == SANDBOX_EXEC_NOTIFY_BY_NUMBER ? 5 + NUMBER_LEN : 5;
}

/* Whether msg is a hand-over: the magic, a kind that says whether an fd
 * came along (none with 'N': it stays with the sender), and a path
 * without NUL. */
static bool
handover_ok(const char *msg, size_t len, int fd)
{
    if (len < 5 || len > EXEC_NOTIFY_HANDOVER_MAX || memcmp(msg, SANDBOX_EXEC_NOTIFY_MAGIC, 4) != 0)
        return false;
    bool kind_ok = (msg[4] == SANDBOX_EXEC_NOTIFY_LISTENER && fd >= 0) ||
                   (msg[4] == SANDBOX_EXEC_NOTIFY_DEGRADED && fd < 0) ||
                   (msg[4] == SANDBOX_EXEC_NOTIFY_BY_NUMBER && fd < 0 && len >= path_at(msg[4]));
    size_t at = path_at(msg[4]);
    return kind_ok && len - at <= EXEC_NOTIFY_MAX_PATH && memchr(msg + at, '\0', len - at) == NULL;
}

/* The message's path, or NULL (-EPROTO or -ENOMEM in *rc); fd closed
 * when it is refused. */
static char *
handover_path(const char *m, size_t len, int fd, int *rc)
{
    bool ok = handover_ok(m, len, fd);
    char *path = ok ? strndup(m + path_at(m[4]), len - path_at(m[4])) : NULL;
    if (path == NULL && fd >= 0)
        close(fd);
    *rc = path ? 0 : ok ? -ENOMEM : -EPROTO;
    return path;
}

int
exec_notify_parse_listener(const void *msg, size_t len, int fd, int *listener, char **exec_path)
{
    *listener = -1;
    *exec_path = NULL;
    const char *m = msg;
    int rc;
    char *path = handover_path(m, len, fd, &rc);
    if (path == NULL)
        return rc;
    if (m[4] == SANDBOX_EXEC_NOTIFY_BY_NUMBER) {
        free(path); /* no sender to take it from here */
        return -EPROTO;
    }
    *exec_path = path;
    *listener = fd;
    return m[4] == SANDBOX_EXEC_NOTIFY_LISTENER ? 0 : -EOPNOTSUPP;
}

ssize_t
exec_notify_recv_handover(int sock, char *buf, int *fd, int *flags)
{
    size_t nfds = 0;
    *fd = -1;
    *flags = 0;
    /* one fd at most: more, or control data of another kind, and every
     * fd that came is closed and the message refused */
    ssize_t n = fd_pass_recv(sock, buf, EXEC_NOTIFY_HANDOVER_MAX + 1, fd, 1, &nfds, flags);
    if (n < 0)
        return n == -EBADMSG || n == -EMSGSIZE ? -EPROTO : n;
    if (nfds == 0)
        *fd = -1;
    return n;
}

/* Whether fd is a seccomp listener (an anonymous inode of that name). */
static bool
is_listener(int fd)
{
    char link[64], target[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0)
        return false;
    target[n] = '\0';
    return strcmp(target, "anon_inode:seccomp notify") == 0;
}

/*
 * An 'N' hand-over: the listener is fd number in the table of the process
 * pidfd names, the one that sent the message (SCM_PIDFD: not a pid that
 * could be reused).  That process waits in its execve for this
 * supervisor; if the listener cannot be taken nothing will answer it, so
 * it is killed.  Returns 0 with *listener, or -errno.
 */
static int
take_by_number(const char *m, int pidfd, int *listener)
{
    int number;
    memcpy(&number, m + 5, sizeof number);
    int rc = -EPROTO; /* no pidfd: the server's end lacks SO_PASSPIDFD */
    if (pidfd >= 0) {
        long fd = syscall(SYS_pidfd_getfd, pidfd, number, 0);
        rc = fd < 0 ? -errno : 0;
        if (rc == 0 && !is_listener((int)fd)) {
            close((int)fd);
            rc = -EPROTO;
        }
        if (rc == 0)
            *listener = (int)fd;
        else
            (void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    }
    return rc;
}

/* SO_PASSPIDFD, Linux 6.5 (older libc headers lack it). */
#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD 76
#endif

/*
 * Whether this process may take an fd from a descendant (pidfd_getfd: the
 * ptrace access check, which Yama's ptrace_scope 2 or 3 refuses to a
 * process without CAP_SYS_PTRACE): tried once on a child that waits on a
 * pipe, taking the child's copy of that pipe.  The answer holds for the
 * helpers, whose user namespaces this process owns.
 */
static bool
can_take_fds(void)
{
    static int known; /* 0: not tried, 1: yes, -1: no */
    if (known != 0)
        return known > 0;
    known = -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return false;
    pid_t pid = fork();
    if (pid == 0) {
        char b;
        close(p[1]);
        _exit(read(p[0], &b, 1) < 0);
    }
    if (pid > 0) {
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        long fd = pidfd >= 0 ? syscall(SYS_pidfd_getfd, pidfd, p[0], 0) : -1;
        if (fd >= 0) {
            known = 1;
            close((int)fd);
        }
        if (pidfd >= 0)
            close(pidfd);
    }
    close(p[0]);
    close(p[1]); /* the child reads EOF and exits */
    while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return known > 0;
}

int
exec_notify_offer_take(int sock)
{
    int on = 1;
    if (!can_take_fds())
        return -EPERM;
    if (setsockopt(sock, SOL_SOCKET, SO_PASSPIDFD, &on, sizeof on) != 0)
        return -errno;
    const char offer[] = SANDBOX_EXEC_NOTIFY_OFFER;
    ssize_t n = send(sock, offer, sizeof offer - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0)
        return -errno;
    return n == (ssize_t)(sizeof offer - 1) ? 0 : -EMSGSIZE;
}

int
exec_notify_receive_listener(int sock, int *listener, char **exec_path)
{
    *listener = -1;
    *exec_path = NULL;
    /* The path comes from the helper's caller: one byte more than the
     * longest message, so a longer one shows as MSG_TRUNC. */
    char *buf = malloc(EXEC_NOTIFY_HANDOVER_MAX + 1);
    if (buf == NULL)
        return -ENOMEM;
    int taken = -1, pidfd = -1;
    int flags = 0;
    size_t nfds = 0;
    /* one fd at most: more, or control data of another kind, and every
     * fd that came is closed and the message refused */
    ssize_t n = fd_pass_recv_pidfd(sock, buf, EXEC_NOTIFY_HANDOVER_MAX + 1, &taken, 1, &nfds,
                                   &flags, &pidfd);
    if (n < 0) {
        free(buf);
        /* ECONNRESET: the helper closed its end with the offer
         * (exec_notify_offer_take) unread: it failed before the hand-over */
        if (n == -ECONNRESET)
            return -EPIPE;
        return n == -EBADMSG || n == -EMSGSIZE ? -EPROTO : (int)n;
    }
    if (nfds == 0)
        taken = -1;
    int rc;
    if (n == 0 || (flags & MSG_TRUNC)) {
        if (taken >= 0)
            close(taken);
        /* nothing sent: the helper closed the socket (it failed) */
        rc = n == 0 ? -EPIPE : -EPROTO;
    } else if (n >= 5 && buf[4] == SANDBOX_EXEC_NOTIFY_BY_NUMBER) {
        char *path = handover_path(buf, (size_t)n, taken, &rc);
        if (path != NULL)
            rc = take_by_number(buf, pidfd, listener);
        if (rc == 0)
            *exec_path = path;
        else
            free(path);
    } else {
        rc = exec_notify_parse_listener(buf, (size_t)n, taken, listener, exec_path);
    }
    if (pidfd >= 0)
        close(pidfd);
    free(buf);
    return rc;
}

/* ---- lifetime ---- */

struct exec_notify *
exec_notify_new(int listener, const char *exec_path, exec_notify_decide_fn decide,
                exec_notify_ask_fn ask, void *arg)
{
    struct exec_notify *n = calloc(1, sizeof *n);
    if (n == NULL || (exec_path && (n->first_path = strdup(exec_path)) == NULL) ||
        syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &n->sizes) != 0 ||
        (n->resp = calloc(1, n->sizes.seccomp_notif_resp)) == NULL) {
        if (n != NULL)
            free(n->first_path);
        free(n);
        close(listener);
        return NULL;
    }
    int fl = fcntl(listener, F_GETFL);
    if (fl >= 0)
        (void)fcntl(listener, F_SETFL, fl | O_NONBLOCK);
    (void)fcntl(listener, F_SETFD, FD_CLOEXEC);
    n->fd = listener;
    /* no path: the first exec was continued by whoever set the filter up */
    n->first_seen = exec_path == NULL;
    n->decide = decide;
    n->ask = ask;
    n->arg = arg;
    return n;
}

void
exec_notify_free(struct exec_notify *n)
{
    if (n == NULL)
        return;
    close(n->fd);
    for (size_t i = 0; i < n->n_pending; i++)
        free(n->pending[i].display);
    free(n->pending);
    free(n->first_path);
    free(n->last_told);
    free(n->resp);
    free(n);
}

int
exec_notify_fd(const struct exec_notify *n)
{
    return n->fd;
}

bool
exec_notify_hung_up(const struct exec_notify *n)
{
    return n->hung_up;
}

void
exec_notify_set_quick(struct exec_notify *n, exec_notify_quick_fn quick)
{
    n->quick = quick;
}

void
exec_notify_set_read_env(struct exec_notify *n, bool on)
{
    n->read_env = on;
}

void
exec_notify_set_refuse_shared_memory(struct exec_notify *n, bool on)
{
    n->refuse_shared_memory = on;
}

void
exec_notify_get_stats(const struct exec_notify *n, struct exec_notify_stats *out)
{
    *out = n->stats;
}

/* ---- reading the target ---- */

static bool
id_valid(const struct exec_notify *n, uint64_t id)
{
    return ioctl(n->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

/* The target's memory, read a page at a time: one pread (one page lookup
 * in the kernel) serves the pointer array and the strings on that page,
 * where a pread per pointer and per string cost a system call each. */
struct mem_reader {
    int mem;
    uint64_t page; /* address of the page in buf; UINT64_MAX: none */
    size_t len;    /* bytes of it read */
    char buf[4096];
};

/* Up to n bytes at addr, not across the end of its page, into *at (pointing
 * into r->buf).  Returns the count (> 0) or -EFAULT. */
static ssize_t
mem_at(struct mem_reader *r, uint64_t addr, size_t n, const char **at)
{
    const uint64_t size = sizeof r->buf;
    uint64_t page = addr - addr % size;
    if (page != r->page) {
        r->page = UINT64_MAX;
        ssize_t got = pread(r->mem, r->buf, size, (off_t)page);
        if (got <= 0)
            return -EFAULT;
        r->page = page;
        r->len = (size_t)got;
    }
    size_t off = (size_t)(addr - page);
    if (off >= r->len)
        return -EFAULT;
    *at = r->buf + off;
    return (ssize_t)(r->len - off < n ? r->len - off : n);
}

/* A NUL-terminated string at addr, at most max bytes before the NUL.
 * Returns 0, -E2BIG/-ENAMETOOLONG when longer, -EFAULT, -ENOMEM. */
static int
read_string(struct mem_reader *r, uint64_t addr, size_t max, int too_long, char **out)
{
    size_t cap = 256, len = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        return -ENOMEM;
    for (;;) {
        const char *src;
        ssize_t got = mem_at(r, addr + len, max + 1 - len, &src);
        if (got < 0) {
            free(buf);
            return (int)got;
        }
        const char *nul = memchr(src, '\0', (size_t)got);
        size_t take = nul ? (size_t)(nul - src) + 1 : (size_t)got;
        if (len + take > cap) {
            while (len + take > cap)
                cap *= 2;
            char *b = realloc(buf, cap);
            if (b == NULL) {
                free(buf);
                return -ENOMEM;
            }
            buf = b;
        }
        memcpy(buf + len, src, take);
        len += take;
        if (nul != NULL) {
            *out = buf;
            return 0;
        }
        if (len > max) {
            free(buf);
            return -too_long;
        }
    }
}

/* argv from the pointer array at addr; NULL addr is an empty argv (Linux
 * accepts it).  Pointers are read from their own reader, so the array and
 * the strings, usually on other pages, do not evict each other. */
static int
read_argv(struct mem_reader *ptrs, struct mem_reader *strs, uint64_t addr, char ***out,
          size_t *argc_out)
{
    size_t argc = 0, cap = 8, bytes = 0;
    char **argv = calloc(cap + 1, sizeof *argv);
    if (argv == NULL)
        return -ENOMEM;
    for (; addr != 0; argc++) {
        uint64_t p = 0;
        char *bytes_p = (char *)&p;
        for (size_t have = 0; have < sizeof p;) {
            const char *src;
            ssize_t got = mem_at(ptrs, addr + argc * sizeof p + have, sizeof p - have, &src);
            if (got < 0) {
                strv_free_n(argv, argc);
                return -EFAULT;
            }
            memcpy(bytes_p + have, src, (size_t)got);
            have += (size_t)got;
        }
        if (p == 0)
            break;
        if (argc >= EXEC_NOTIFY_MAX_ARGC) {
            strv_free_n(argv, argc);
            return -E2BIG;
        }
        if (argc == cap) {
            char **a = realloc(argv, (cap * 2 + 1) * sizeof *a);
            if (a == NULL) {
                strv_free_n(argv, argc);
                return -ENOMEM;
            }
            argv = a;
            cap *= 2;
        }
        int rc = read_string(strs, p, EXEC_NOTIFY_MAX_ARG_BYTES - bytes, E2BIG, &argv[argc]);
        if (rc < 0) {
            strv_free_n(argv, argc);
            return rc;
        }
        bytes += strlen(argv[argc]) + 1;
    }
    argv[argc] = NULL;
    *out = argv;
    *argc_out = argc;
    return 0;
}

/* readlink into a malloc'd string of any length; NULL on failure. */
static char *
readlink_alloc(const char *path)
{
    for (size_t cap = 256; cap <= (1u << 20); cap *= 2) {
        char *buf = malloc(cap);
        if (buf == NULL)
            return NULL;
        ssize_t n = readlink(path, buf, cap);
        if (n < 0) {
            free(buf);
            return NULL;
        }
        if ((size_t)n < cap) {
            buf[n] = '\0';
            return buf;
        }
        free(buf);
    }
    return NULL;
}

static char *
proc_link(pid_t pid, const char *what)
{
    char name[128];
    snprintf(name, sizeof name, "/proc/%d/%s", (int)pid, what);
    return readlink_alloc(name);
}

/* Everything read for one notification. */
struct target {
    struct exec_notify_request req;
    char *path, *resolved, *canonical, *cwd;
    char **argv;
    size_t argc;
    char **envp;
    size_t envc;
    char *interp[EXEC_NOTIFY_MAX_INTERP_DEPTH];
    int file;     /* O_PATH of the file the exec names, -1 when unopened */
    int open_err; /* why file is -1 */
    bool quick;   /* the quick callback continues it: argv, cwd, #! unread */
};

static void
target_free(struct target *t)
{
    free(t->path);
    free(t->resolved);
    free(t->canonical);
    free(t->cwd);
    strv_free_n(t->argv, t->argc);
    strv_free_n(t->envp, t->envc);
    for (size_t i = 0; i < EXEC_NOTIFY_MAX_INTERP_DEPTH; i++)
        free(t->interp[i]);
    if (t->file >= 0)
        close(t->file);
}

/* Opens (O_PATH) what the exec names as the target would: from its own
 * root, cwd or dirfd (so mount namespaces and deleted cwds are seen as it
 * sees them), with /proc/self and /proc/thread-self its own, never the
 * supervisor's (exec_path_open_as). */
static int
open_target_file(pid_t pid, bool at, int dirfd, int flags, const char *path)
{
    char base[64];
    snprintf(base, sizeof base, "/proc/%d/root", (int)pid);
    int root = open(base, O_PATH | O_CLOEXEC);
    if (root < 0)
        return -1;
    int start = root;
    if (path[0] != '/') {
        if (at && dirfd != AT_FDCWD)
            snprintf(base, sizeof base, "/proc/%d/fd/%d", (int)pid, dirfd);
        else
            snprintf(base, sizeof base, "/proc/%d/cwd", (int)pid);
        start = open(base, O_PATH | O_CLOEXEC);
    }
    int f = -1;
    if (start >= 0 && path[0] == '\0' && (flags & AT_EMPTY_PATH))
        f = dup(start);
    else if (start >= 0)
        f = exec_path_open_as(pid, root, start, path[0] == '\0' ? "." : path);
    int e = errno;
    if (start >= 0 && start != root)
        close(start);
    close(root);
    errno = e;
    return f;
}

static char *
fd_path(int fd)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    return readlink_alloc(name);
}

/* The interpreter a "#!" line names, or NULL (not a script, unreadable). */
static char *
shebang_of(int file)
{
    char name[64], buf[257];
    /* Regular files only, checked before opening: opening a device or a
     * FIFO the target names could have effects of its own. */
    struct stat st;
    if (fstat(file, &st) != 0 || !S_ISREG(st.st_mode))
        return NULL;
    snprintf(name, sizeof name, "/proc/self/fd/%d", file);
    int fd = open(name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return NULL;
    ssize_t n = pread(fd, buf, 256, 0);
    close(fd);
    if (n < 3 || buf[0] != '#' || buf[1] != '!')
        return NULL;
    buf[n] = '\0';
    char *p = buf + 2;
    p += strspn(p, " \t");
    size_t len = strcspn(p, " \t\n");
    return len > 0 ? strndup(p, len) : NULL;
}

/* Follows #! lines from t->file, recording each interpreter (canonical
 * when it can be opened, as written otherwise). */
static void
read_interpreters(struct target *t, pid_t pid)
{
    int file = t->file >= 0 ? dup(t->file) : -1;
    for (size_t d = 0; file >= 0 && d < EXEC_NOTIFY_MAX_INTERP_DEPTH; d++) {
        char *interp = shebang_of(file);
        close(file);
        file = -1;
        if (interp == NULL)
            break;
        file = open_target_file(pid, false, AT_FDCWD, 0, interp);
        char *canon = file >= 0 ? fd_path(file) : NULL;
        if (canon != NULL) {
            free(interp);
            interp = canon;
        }
        t->interp[t->req.n_interpreters++] = interp;
    }
    if (file >= 0)
        close(file);
}

/* With a quick callback and an absolute path: opens the file (kept for
 * the full read when the callback says no) and asks the callback about its
 * canonical path.  True: t->quick, the exec continues without argv, cwd
 * and #! lines being read. */
static bool
quick_continue(const struct exec_notify *n, struct target *t, pid_t pid, bool at, int dirfd,
               int flags)
{
    if (n->quick == NULL || !n->first_seen || t->path[0] != '/')
        return false;
    t->file = open_target_file(pid, at, dirfd, flags, t->path);
    t->open_err = t->file < 0 ? errno : 0;
    if (t->file >= 0)
        t->canonical = fd_path(t->file);
    t->quick = t->canonical != NULL && n->quick(n->arg, pid, t->canonical);
    return t->quick;
}

/* The request of the first exec or a quick continue: the path as given,
 * no argv. */
static int
path_only_request(struct target *t, const struct seccomp_notif *sn)
{
    t->resolved = strdup(t->path);
    if (t->resolved == NULL)
        return -ENOMEM;
    t->req = (struct exec_notify_request){
        .id = sn->id,
        .pid = (pid_t)sn->pid,
        .execveat = sn->data.nr == SYS_execveat,
        .path = t->path,
        .resolved = t->resolved,
        .canonical = t->canonical,
        .interpreters = (const char *const *)t->interp,
        .cwd = "",
    };
    return 0;
}

static int
read_target(const struct exec_notify *n, const struct seccomp_notif *sn, struct target *t)
{
    pid_t pid = (pid_t)sn->pid;
    bool at = sn->data.nr == SYS_execveat;
    uint64_t path_ptr = at ? sn->data.args[1] : sn->data.args[0];
    uint64_t argv_ptr = at ? sn->data.args[2] : sn->data.args[1];
    uint64_t envp_ptr = at ? sn->data.args[3] : sn->data.args[2];
    int dirfd = at ? (int)sn->data.args[0] : AT_FDCWD;
    int flags = at ? (int)sn->data.args[4] : 0;

    char name[64];
    snprintf(name, sizeof name, "/proc/%d/mem", (int)pid);
    int mem = open(name, O_RDONLY | O_CLOEXEC);
    if (mem < 0)
        return errno == ENOENT ? -ESRCH : -EACCES;
    if (!id_valid(n, sn->id)) { /* the pid may name another process now */
        close(mem);
        return -ESRCH;
    }
    struct mem_reader *rd = malloc(2 * sizeof *rd);
    if (rd == NULL) {
        close(mem);
        return -ENOMEM;
    }
    rd[0].mem = rd[1].mem = mem;
    rd[0].page = rd[1].page = UINT64_MAX;
    int rc = read_string(&rd[1], path_ptr, EXEC_NOTIFY_MAX_PATH - 1, ENAMETOOLONG, &t->path);
    /* The first exec is judged on its path alone (decide_and_answer), and
     * a quick continue on the file: neither needs argv, cwd or #! lines. */
    bool path_only = rc == 0 && (!n->first_seen || quick_continue(n, t, pid, at, dirfd, flags));
    if (rc == 0 && !path_only)
        rc = read_argv(&rd[0], &rd[1], argv_ptr, &t->argv, &t->argc);
    /* the environment too, when asked: what it names for the loader, a
     * shell or an interpreter is code the program runs (exec_watch reads
     * it for an escalated program's children) */
    if (rc == 0 && !path_only && n->read_env)
        rc = read_argv(&rd[0], &rd[1], envp_ptr, &t->envp, &t->envc);
    free(rd);
    close(mem);
    if (rc < 0 || path_only)
        return rc < 0 ? rc : path_only_request(t, sn);

    t->cwd = proc_link(pid, "cwd");
    if (t->path[0] == '/') {
        t->resolved = strdup(t->path);
    } else {
        char *base = NULL;
        if (at && dirfd != AT_FDCWD) {
            snprintf(name, sizeof name, "fd/%d", dirfd);
            base = proc_link(pid, name);
        } else if (t->cwd != NULL) {
            base = strdup(t->cwd);
        }
        if (base != NULL)
            t->resolved = t->path[0] == '\0' ? base : exec_path_join(base, t->path);
        if (base != NULL && t->path[0] != '\0')
            free(base);
    }
    if (t->resolved == NULL)
        return -ENOMEM;
    if (t->file < 0 && t->open_err == 0) {
        t->file = open_target_file(pid, at, dirfd, flags, t->path);
        t->open_err = t->file < 0 ? errno : 0;
        if (t->file >= 0)
            t->canonical = fd_path(t->file);
    }
    read_interpreters(t, pid);

    t->req = (struct exec_notify_request){
        .id = sn->id,
        .pid = pid,
        .execveat = at,
        .path = t->path,
        .resolved = t->resolved,
        .canonical = t->canonical,
        .interpreters = (const char *const *)t->interp,
        .n_interpreters = t->req.n_interpreters,
        .argv = (const char *const *)t->argv,
        .argc = t->argc,
        .envp = (const char *const *)t->envp,
        .envc = t->envc,
        .cwd = t->cwd ? t->cwd : "",
    };
    return 0;
}

/* A number field ("Threads:", "PPid:") of /proc/PID/status; -1 when
 * unreadable.  The file is small and its size bounded by the kernel. */
static long
status_field(pid_t pid, const char *field)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%d/status", (int)pid);
    FILE *f = fopen(name, "re");
    if (f == NULL)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    long v = -1;
    size_t flen = strlen(field);
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, field, flen) == 0) {
            v = strtol(line + flen, NULL, 10);
            break;
        }
    }
    free(line);
    fclose(f);
    return v;
}

#ifndef KCMP_VM
#define KCMP_VM 1
#endif

/* Whether another running thread may write the memory the exec's path is
 * in: the process's own threads, or a parent it shares memory with that
 * has threads besides the one waiting in vfork.  Unreadable counts as
 * shared (fail closed). */
static bool
shares_memory(pid_t pid)
{
    long threads = status_field(pid, "Threads:");
    if (threads != 1)
        return true;
    long ppid = status_field(pid, "PPid:");
    if (ppid <= 0)
        return false;
    long same = syscall(SYS_kcmp, pid, (pid_t)ppid, KCMP_VM, 0, 0);
    if (same != 0)
        return same < 0 && errno != ESRCH && errno != EPERM ? true : false;
    return status_field((pid_t)ppid, "Threads:") != 1;
}

/* ---- answering ---- */

/* Sends the answer and counts it in *counter (dropped when the target has
 * gone meanwhile).  The response buffer was allocated with n, so an answer
 * never fails for want of memory. */
static int
respond_counted(struct exec_notify *n, uint64_t id, int err, uint64_t *counter)
{
    struct seccomp_notif_resp *r = n->resp;
    memset(r, 0, n->sizes.seccomp_notif_resp);
    r->id = id;
    if (err == 0)
        r->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    else
        r->error = -err;
    int rc = ioctl(n->fd, SECCOMP_IOCTL_NOTIF_SEND, r) == 0 ? 0 : -errno;
    if (rc == -ENOENT) /* the target died or was interrupted meanwhile */
        n->stats.dropped++;
    else if (rc == 0)
        (*counter)++;
    return rc == -ENOENT ? 0 : rc;
}

static int
respond(struct exec_notify *n, uint64_t id, int err)
{
    return respond_counted(n, id, err, err == 0 ? &n->stats.continued : &n->stats.refused);
}

/* "rm -f a" for the stderr line: the program's name and the arguments,
 * shortened past a screen line. */
static char *
display_of(const struct exec_notify_request *req)
{
    const char *slash = strrchr(req->resolved, '/');
    const char *prog = slash ? slash + 1 : req->resolved;
    size_t cap = 200;
    char *s = malloc(cap + 4);
    if (s == NULL)
        return NULL;
    size_t len = (size_t)snprintf(s, cap, "%s", prog);
    for (size_t i = 1; i < req->argc && len < cap; i++)
        len += (size_t)snprintf(s + len, cap - len, " %s", req->argv[i]);
    if (len >= cap)
        strcpy(s + cap - 1, "...");
    return s;
}

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
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
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

static int
refuse(struct exec_notify *n, uint64_t id, pid_t pid, int err, const char *display,
       const char *reason)
{
    if (!id_valid(n, id)) {
        n->stats.dropped++;
        return 0;
    }
    /* A PATH search (execvp, a shell) retries the same command in each
     * directory that has it: one line for the lot, not one per try. */
    char *line = NULL;
    if (asprintf(&line, "%s\n%s", display, reason ? reason : "") < 0)
        line = NULL;
    bool repeat = line != NULL && n->last_told != NULL && pid == n->last_told_pid &&
                  strcmp(line, n->last_told) == 0;
    if (!repeat)
        tell_target(pid, display, reason);
    if (line != NULL) {
        free(n->last_told);
        n->last_told = line;
        n->last_told_pid = pid;
    }
    return respond(n, id, err > 0 ? err : EACCES);
}

static int
keep_pending(struct exec_notify *n, const struct exec_notify_request *req)
{
    if (n->n_pending == n->cap_pending) {
        size_t cap = n->cap_pending ? n->cap_pending * 2 : 8;
        struct pending *p = realloc(n->pending, cap * sizeof *p);
        if (p == NULL)
            return -ENOMEM;
        n->pending = p;
        n->cap_pending = cap;
    }
    char *display = display_of(req);
    if (display == NULL)
        return -ENOMEM;
    n->pending[n->n_pending++] = (struct pending){req->id, req->pid, display};
    n->stats.asked++;
    if (n->ask != NULL)
        n->ask(n->arg, req);
    return 0;
}

static int
decide_and_answer(struct exec_notify *n, struct target *t)
{
    const struct exec_notify_request *req = &t->req;
    char *display = display_of(req);
    if (display == NULL)
        return respond(n, req->id, ENOMEM);
    int rc;
    if (!n->first_seen) {
        /* The helper's own execve: nothing else runs under a new listener
         * before it, and the helper told us its path in advance. */
        n->first_seen = true;
        rc = strcmp(req->path, n->first_path) == 0
                 ? respond(n, req->id, 0)
                 : refuse(n, req->id, req->pid, EACCES, display,
                          "the first exec is not the sandboxed command");
        free(display);
        return rc;
    }
    if (n->refuse_shared_memory && shares_memory(req->pid)) {
        rc = refuse(n, req->id, req->pid, EACCES, display,
                    "the process shares its memory with running threads (strict mode)");
        free(display);
        return rc;
    }
    if (t->quick) {
        rc = respond(n, req->id, 0);
        free(display);
        return rc;
    }
    struct exec_notify_decision d = {0};
    n->decide(n->arg, req, &d);
    if (d.verdict == EXEC_NOTIFY_ASK) {
        rc = id_valid(n, req->id) ? keep_pending(n, req) : 0;
        if (rc < 0)
            rc = refuse(n, req->id, req->pid, ENOMEM, display, "out of memory");
    } else if (d.verdict == EXEC_NOTIFY_REFUSE) {
        rc = refuse(n, req->id, req->pid, d.err, display, d.reason ? d.reason : "refused");
    } else {
        rc = respond(n, req->id, 0);
    }
    free(d.reason);
    free(display);
    return rc;
}

void
exec_notify_set_connect(struct exec_notify *n, const struct unix_connect_config *cfg,
                        exec_notify_wait_fn wait, void *arg)
{
    n->connect_cfg = cfg;
    n->connect_wait = wait;
    n->connect_arg = arg;
}

void
exec_notify_tell(pid_t pid, const char *display, const char *reason)
{
    tell_target(pid, display, reason);
}

/* A socket call (unix_connect.h) rather than an exec. */
static int
handle_socket(struct exec_notify *n, const struct seccomp_notif *sn)
{
    struct unix_connect_wait wait;
    int rc = unix_connect_handle(n->fd, sn, n->connect_cfg, &wait);
    if (rc != 1)
        return rc;
    if (n->connect_wait != NULL) {
        n->connect_wait(n->connect_arg, &wait);
        return 0;
    }
    do {
        struct pollfd p = {.fd = wait.fd, .events = POLLOUT};
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
            ;
        rc = unix_connect_finish(n->fd, &wait, 0);
    } while (rc == 1); /* a send that still finds no room */
    return rc;
}

static int
handle(struct exec_notify *n, const struct seccomp_notif *sn)
{
    if (unix_connect_handles(sn->data.nr))
        return handle_socket(n, sn);
    struct target t = {.file = -1};
    int rc = read_target(n, sn, &t);
    if (rc == -ESRCH) {
        n->stats.dropped++;
        rc = 0;
    } else if (rc < 0) {
        /* Fail closed: what cannot be read cannot be allowed. */
        char *why = NULL;
        if (asprintf(&why, "cannot read the exec's arguments: %s", strerror(-rc)) < 0)
            why = NULL;
        rc = refuse(n, sn->id, (pid_t)sn->pid, -rc == ENOMEM ? ENOMEM : -rc, "(unreadable exec)",
                    why);
        free(why);
    } else if (!id_valid(n, sn->id)) {
        n->stats.dropped++;
    } else if (t.file < 0 && (t.open_err == ENOENT || t.open_err == ENOTDIR)) {
        /* Nothing there: the kernel would fail the same way, and a PATH
         * search (execvp) goes on to the next directory without a refusal
         * line or a question for each miss.  A file created after this
         * check does not run: the exec fails here. */
        rc = respond_counted(n, sn->id, t.open_err, &n->stats.missing);
    } else {
        rc = decide_and_answer(n, &t);
    }
    target_free(&t);
    return rc;
}

int
exec_notify_process(struct exec_notify *n)
{
    struct seccomp_notif *sn = malloc(n->sizes.seccomp_notif);
    if (sn == NULL)
        return -ENOMEM;
    int handled = 0, rc = 0;
    for (;;) {
        /* The receive ioctl blocks even on a non-blocking fd: only call it
         * when poll says a notification waits. */
        struct pollfd p = {.fd = n->fd, .events = POLLIN};
        int ready = poll(&p, 1, 0);
        n->hung_up = ready == 1 && (p.revents & POLLHUP) && !(p.revents & POLLIN);
        if (ready <= 0 || !(p.revents & POLLIN))
            break;
        memset(sn, 0, n->sizes.seccomp_notif);
        if (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_RECV, sn) != 0) {
            if (errno == EINTR || errno == ENOENT)
                continue; /* the target went away between poll and receive */
            rc = -errno;
            break;
        }
        rc = handle(n, sn);
        if (rc < 0)
            break;
        handled++;
    }
    free(sn);
    return rc < 0 ? rc : handled;
}

int
exec_notify_answer(struct exec_notify *n, uint64_t id, bool allow, const char *reason)
{
    size_t i = 0;
    while (i < n->n_pending && n->pending[i].id != id)
        i++;
    if (i == n->n_pending)
        return -ENOENT;
    struct pending p = n->pending[i];
    n->pending[i] = n->pending[--n->n_pending];
    int rc = allow ? respond(n, id, 0)
                   : refuse(n, id, p.pid, EACCES, p.display, reason ? reason : "declined");
    free(p.display);
    return rc;
}
