/*
 * exec_target: reading what an exec notification names, from the
 * target's memory and /proc (exec_target.h).
 */
#include "supervise/exec_target.h"

#include "common/strv.h"
#include "rules/exec_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* pidfd_open's PIDFD_THREAD (O_EXCL), Linux 6.9. */
#define PIDFD_THREAD_FLAG 0x80

int
exec_target_pidfd(pid_t tid)
{
    /* pidfds are close-on-exec always */
    int pidfd = (int)syscall(SYS_pidfd_open, tid, 0);
    if (pidfd < 0 && (errno == EINVAL || errno == ENOENT))
        pidfd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD_FLAG);
    return pidfd;
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

void
exec_target_free(struct exec_target *t)
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
read_interpreters(struct exec_target *t, pid_t pid)
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
quick_continue(const struct exec_target_how *how, struct exec_target *t, pid_t pid, bool at,
               int dirfd, int flags)
{
    if (how->quick == NULL || how->first || t->path[0] != '/')
        return false;
    t->file = open_target_file(pid, at, dirfd, flags, t->path);
    t->open_err = t->file < 0 ? errno : 0;
    if (t->file >= 0)
        t->canonical = fd_path(t->file);
    t->quick = t->canonical != NULL && how->quick(how->arg, pid, t->canonical);
    return t->quick;
}

/* The request of the first exec or a quick continue: the path as given,
 * no argv. */
static int
path_only_request(struct exec_target *t, const struct seccomp_notif *sn)
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

int
exec_target_read(const struct exec_target_how *how, const struct seccomp_notif *sn,
                 struct exec_target *t)
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
    if (ioctl(how->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &sn->id) !=
        0) { /* the pid may name another process now */
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
    bool path_only = rc == 0 && (how->first || quick_continue(how, t, pid, at, dirfd, flags));
    if (rc == 0 && !path_only)
        rc = read_argv(&rd[0], &rd[1], argv_ptr, &t->argv, &t->argc);
    /* the environment too, when asked: what it names for the loader, a
     * shell or an interpreter is code the program runs (exec_watch reads
     * it for an escalated program's children) */
    if (rc == 0 && !path_only && how->read_env)
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
bool
exec_target_shares_memory(pid_t pid)
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
