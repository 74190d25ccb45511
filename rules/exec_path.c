#include "rules/exec_path.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The walk's state: `done` is the resolved prefix (absolute, no links,
 * "/" at the start), `rest` what is still to walk. */
struct walk {
    char *done;
    char *rest;
    struct exec_path *out;
    bool st_done; /* out->st is done's (the last step entered it) */
};

char *
exec_path_join(const char *dir, const char *name)
{
    char *s = NULL;
    size_t n = strlen(dir);
    if (asprintf(&s, "%s%s%s", dir, n > 0 && dir[n - 1] == '/' ? "" : "/", name) < 0)
        return NULL;
    return s;
}

/* Takes the first component off w->rest into *comp (malloc'd); NULL
 * when nothing is left. */
static int
next_component(struct walk *w, char **comp)
{
    char *p = w->rest;
    p += strspn(p, "/");
    size_t n = strcspn(p, "/");
    *comp = NULL;
    if (n == 0)
        return 0;
    *comp = strndup(p, n);
    if (*comp == NULL)
        return -ENOMEM;
    memmove(w->rest, p + n, strlen(p + n) + 1);
    return 0;
}

static bool
rest_empty(const struct walk *w)
{
    return w->rest[strspn(w->rest, "/")] == '\0';
}

static void
pop_component(struct walk *w)
{
    char *slash = strrchr(w->done, '/');
    if (slash == w->done)
        w->done[1] = '\0';
    else
        *slash = '\0';
}

static int
record_link(struct exec_path *out, char *path, bool program)
{
    struct exec_path_link *grown = realloc(out->links, (out->n_links + 1) * sizeof(*grown));
    if (grown == NULL) {
        free(path);
        return -ENOMEM;
    }
    out->links = grown;
    out->links[out->n_links++] = (struct exec_path_link){path, program};
    return 0;
}

/* The link at candidate: its target goes in front of what is left; an
 * absolute target restarts the walk at "/". */
static int
follow_link(struct walk *w, char *candidate)
{
    char target[PATH_MAX];
    ssize_t n = readlink(candidate, target, sizeof(target));
    if (n < 0 || (size_t)n >= sizeof(target)) {
        int e = n < 0 ? errno : ENAMETOOLONG;
        free(candidate);
        w->out->error = e;
        return 1;
    }
    target[n] = '\0';
    int rc = record_link(w->out, candidate, rest_empty(w));
    if (rc < 0)
        return rc;
    char *rest = NULL;
    if (asprintf(&rest, "%s%s%s", target, w->rest[0] ? "/" : "", w->rest) < 0)
        return -ENOMEM;
    free(w->rest);
    w->rest = rest;
    if (target[0] == '/') {
        w->done[0] = '/';
        w->done[1] = '\0';
        w->st_done = false;
    }
    return 0;
}

/* One step: 0 to go on, 1 when the walk stops with out->error, -ENOMEM. */
static int
step(struct walk *w, const char *comp)
{
    if (strcmp(comp, ".") == 0)
        return 0;
    if (strcmp(comp, "..") == 0) {
        pop_component(w);
        w->st_done = false;
        return 0;
    }
    char *candidate = exec_path_join(w->done, comp);
    if (candidate == NULL)
        return -ENOMEM;
    struct stat st;
    if (lstat(candidate, &st) < 0) {
        w->out->error = errno;
        free(candidate);
        return 1;
    }
    if (S_ISLNK(st.st_mode)) {
        if (w->out->n_links >= EXEC_PATH_MAX_LINKS) {
            w->out->error = ELOOP;
            free(candidate);
            return 1;
        }
        return follow_link(w, candidate);
    }
    /* anything after a file, a trailing slash too, asks for a directory */
    if (!S_ISDIR(st.st_mode) && w->rest[0] != '\0') {
        w->out->error = ENOTDIR;
        free(candidate);
        return 1;
    }
    free(w->done);
    w->done = candidate;
    w->out->st = st;
    w->st_done = true;
    return 0;
}

int
exec_path_walk(const char *path, const char *cwd, struct exec_path *out)
{
    memset(out, 0, sizeof(*out));
    out->absolute = path[0] == '/' ? strdup(path) : exec_path_join(cwd, path);
    struct walk w = {.done = strdup("/"), .out = out};
    w.rest = out->absolute ? strdup(out->absolute) : NULL;
    int rc = w.done && w.rest ? 0 : -ENOMEM;
    /* execve("") names nothing, whatever the cwd */
    if (path[0] == '\0')
        out->error = ENOENT;
    while (rc == 0 && out->error == 0) {
        char *comp = NULL;
        rc = next_component(&w, &comp);
        if (rc < 0 || comp == NULL)
            break;
        rc = step(&w, comp);
        free(comp);
    }
    /* after "..", a path of "/" alone or an absolute link's target, the
     * last file looked at is not the result: its own */
    if (rc == 0 && out->error == 0 && !w.st_done && lstat(w.done, &out->st) < 0)
        out->error = errno;
    if (rc == 0 && out->error == 0) {
        out->canonical = w.done;
        w.done = NULL;
    }
    free(w.done);
    free(w.rest);
    return rc < 0 ? rc : 0;
}

void
exec_path_release(struct exec_path *p)
{
    free(p->absolute);
    for (size_t i = 0; i < p->n_links; i++)
        free(p->links[i].path);
    free(p->links);
    free(p->canonical);
    memset(p, 0, sizeof(*p));
}

/* The interpreter the "#!" line of the file at path names, as written, or
 * NULL (not a script, unreadable); st is the file's, as the walk saw it;
 * *script says whether it starts with "#!" at all. */
static char *
shebang_of(const char *path, const struct stat *st, bool *script)
{
    *script = false;
    if (!S_ISREG(st->st_mode))
        return NULL;
    /* a FIFO swapped in since the walk must not block the caller */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return NULL;
    char buf[257];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    if (n < 2 || buf[0] != '#' || buf[1] != '!')
        return NULL;
    *script = true;
    buf[n] = '\0';
    char *p = buf + 2 + strspn(buf + 2, " \t");
    size_t len = strcspn(p, " \t\n");
    return len > 0 ? strndup(p, len) : NULL;
}

int
exec_path_interpreters(const struct exec_path *walk, const char *cwd, struct exec_interpreters *in)
{
    memset(in, 0, sizeof(*in));
    const struct exec_path *file = walk;
    while (file->canonical && in->n < EXEC_PATH_MAX_INTERPRETERS) {
        bool script = false;
        char *interp = shebang_of(file->canonical, &file->st, &script);
        if (in->n == 0 && file == walk)
            in->script = script;
        if (!interp)
            break;
        struct exec_path *w = &in->walks[in->n];
        int rc = exec_path_walk(interp, cwd, w);
        free(interp);
        in->names[in->n++] = w->canonical ? w->canonical : w->absolute;
        if (rc < 0)
            return rc;
        file = w;
    }
    return 0;
}

void
exec_interpreters_release(struct exec_interpreters *in)
{
    for (size_t i = 0; i < in->n; i++)
        exec_path_release(&in->walks[i]);
    memset(in, 0, sizeof(*in));
}

char *
exec_path_search(const char *name)
{
    const char *path = getenv("PATH");
    const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin";
    for (;;) {
        size_t len = strcspn(p, ":");
        char *file = NULL;
        if (asprintf(&file, "%.*s%s%s", (int)len, p, len ? "/" : "", name) < 0)
            return NULL;
        struct stat st;
        if (stat(file, &st) == 0 && S_ISREG(st.st_mode) && access(file, X_OK) == 0)
            return file;
        free(file);
        if (p[len] == '\0')
            return NULL;
        p += len + 1;
    }
}

bool
exec_path_is_loader(const char *file)
{
    const char *slash = file ? strrchr(file, '/') : NULL;
    const char *name = slash ? slash + 1 : file;
    if (!name)
        return false;
    /* glibc: ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld-linux.so.2,
     * ld64.so.2 (ppc64), ld-2.31.so (older releases), ld.so; musl:
     * ld-musl-x86_64.so.1 */
    return strncmp(name, "ld-", 3) == 0
               ? strstr(name, ".so") != NULL
               : strncmp(name, "ld64.so", 7) == 0 || strcmp(name, "ld.so") == 0;
}

/* The loader's options that take the next word as their value (glibc's
 * and musl's). */
static const char *const loader_valued[] = {
    "--library-path",         "--inhibit-rpath",     "--audit", "--preload", "--argv0",
    "--glibc-hwcaps-prepend", "--glibc-hwcaps-mask", NULL,
};

size_t
exec_path_loader_program(const char *const *argv, size_t argc)
{
    size_t i = 1;
    while (i < argc && strncmp(argv[i], "--", 2) == 0) {
        if (argv[i][2] == '\0')
            return i + 1 < argc ? i + 1 : 0;
        bool valued = false;
        for (size_t k = 0; loader_valued[k] && !valued; k++)
            valued = strcmp(argv[i], loader_valued[k]) == 0;
        i += valued ? 2 : 1;
    }
    return i < argc ? i : 0;
}

/* ---- a path opened in another process's view ---- */

#define PROC_ROOT_INO 1

/* Whether dir is the top of a procfs, where "self" and "thread-self" are
 * links whose text depends on who reads them. */
static bool
procfs_top(int dir)
{
    struct statfs fs;
    struct stat st;
    return fstatfs(dir, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC && fstat(dir, &st) == 0 &&
           st.st_ino == PROC_ROOT_INO;
}

static bool
on_procfs(int dir)
{
    struct statfs fs;
    return fstatfs(dir, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
}

/* The values of the status line "Name:\t..." of /proc/PID (a tab-separated
 * list of numbers, outermost namespace first) into ids; returns how many,
 * or 0 when unreadable.  Read through dir, a /proc or /proc/PID of any
 * procfs, when pid is 0. */
static size_t
status_ids(int dir, const char *file, const char *name, long *ids, size_t max)
{
    int fd = openat(dir, file, O_RDONLY | O_CLOEXEC);
    char buf[4096];
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    size_t len = strlen(name);
    for (char *line = buf; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, name, len) != 0 || line[len] != ':')
            continue;
        size_t count = 0;
        char *p = line + len + 1, *end = NULL;
        for (long v = strtol(p, &end, 10); end != p && count < max; v = strtol(p, &end, 10)) {
            ids[count++] = v;
            p = end;
        }
        return count;
    }
    return 0;
}

/*
 * The name the process pid (a thread id, in the caller's view) has in the
 * procfs whose top is dir: "TGID" for "self", "TGID/task/TID" for
 * "thread-self".  The procfs may belong to any pid namespace on the
 * process's chain (its own /proc, or the host's for a process outside
 * any); each candidate is checked by reading its status there: the same
 * ids from that namespace inwards.  NULL when none matches (the process
 * is not visible in that procfs: the kernel would fail too).
 */
static char *
self_name(int dir, pid_t pid, bool thread)
{
    char host[64];
    long tgids[32], tids[32];
    snprintf(host, sizeof(host), "/proc/%d/status", (int)pid);
    size_t ng = status_ids(AT_FDCWD, host, "NStgid", tgids, 32);
    size_t nt = status_ids(AT_FDCWD, host, "NSpid", tids, 32);
    if (ng == 0 || ng != nt)
        return NULL;
    for (size_t i = 0; i < ng; i++) {
        char file[96];
        long seen[32];
        snprintf(file, sizeof(file), "%ld/task/%ld/status", tgids[i], tids[i]);
        size_t n = status_ids(dir, file, "NSpid", seen, 32);
        if (n != nt - i || memcmp(seen, tids + i, n * sizeof(long)) != 0)
            continue;
        char *name = NULL;
        if ((thread ? asprintf(&name, "%ld/task/%ld", tgids[i], tids[i])
                    : asprintf(&name, "%ld", tgids[i])) < 0)
            return NULL;
        return name;
    }
    return NULL;
}

/* rest with text put before it ("text/rest"); NULL when out of memory. */
static char *
prepend(const char *text, const char *rest)
{
    char *joined = NULL;
    if (asprintf(&joined, "%s%s%s", text, *rest ? "/" : "", rest) < 0)
        return NULL;
    return joined;
}

/* Whether a and b are the same directory. */
static bool
same_dir(int a, int b)
{
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* One step of exec_path_open_as: dir's entry name, the next directory or
 * the file.  *todo (malloc'd, the rest of the path) grows by a link's
 * text; *cur changes to the directory to go on from.  Returns 0, or -errno. */
static int
open_step(int root, pid_t pid, int *cur, const char *name, char **todo, int *links)
{
    if (strcmp(name, "..") == 0) {
        /* never above the process's root, as the kernel keeps it */
        if (same_dir(*cur, root))
            return 0;
        int up = openat(*cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (up < 0)
            return -errno;
        close(*cur);
        *cur = up;
        return 0;
    }
    int next = openat(*cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (next < 0 || fstat(next, &st) < 0) {
        int e = errno;
        if (next >= 0)
            close(next);
        return -e;
    }
    if (S_ISLNK(st.st_mode) && on_procfs(*cur) && !procfs_top(*cur)) {
        /* /proc/PID/fd/N, cwd, root, exe: the kernel jumps to the object
         * the link stands for, whatever its text says */
        close(next);
        next = openat(*cur, name, O_PATH | O_CLOEXEC);
        if (next < 0)
            return -errno;
    } else if (S_ISLNK(st.st_mode)) {
        close(next);
        if (++*links > EXEC_PATH_MAX_LINKS)
            return -ELOOP;
        bool self =
            procfs_top(*cur) && (strcmp(name, "self") == 0 || strcmp(name, "thread-self") == 0);
        char *text = NULL;
        if (self) {
            text = self_name(*cur, pid, strcmp(name, "thread-self") == 0);
            if (!text)
                return -ENOENT;
        } else {
            char buf[PATH_MAX];
            ssize_t n = readlinkat(*cur, name, buf, sizeof(buf) - 1);
            if (n < 0)
                return -errno;
            buf[n] = '\0';
            text = strdup(buf);
        }
        char *rest = text ? prepend(text, *todo) : NULL;
        bool absolute = text && text[0] == '/';
        free(text);
        if (!rest)
            return -ENOMEM;
        free(*todo);
        *todo = rest;
        if (absolute) {
            int top = dup(root);
            if (top < 0)
                return -errno;
            close(*cur);
            *cur = top;
        }
        return 0;
    }
    close(*cur);
    *cur = next;
    return 0;
}

/*
 * The common case in one system call: a path without any symbolic link
 * (so no procfs "self" either) is opened as the kernel would open it,
 * an absolute one kept in the process's root, a relative one beneath its
 * start.  Returns the fd, or -1 with errno; ENOENT and ENOTDIR are the
 * answer, anything else (a link on the way: ELOOP; ".." above the start:
 * EXDEV; no openat2: ENOSYS) leaves it to the walk.
 */
static int
open_without_links(int root, int start, const char *path)
{
#ifdef SYS_openat2
    struct open_how how = {
        .flags = O_PATH | O_CLOEXEC,
        .resolve = RESOLVE_NO_SYMLINKS | (path[0] == '/' ? RESOLVE_IN_ROOT : RESOLVE_BENEATH),
    };
    return (int)syscall(SYS_openat2, path[0] == '/' ? root : start, path, &how, sizeof(how));
#else
    (void)root;
    (void)start;
    (void)path;
    errno = ENOSYS;
    return -1;
#endif
}

int
exec_path_open_as(pid_t pid, int root, int start, const char *path)
{
    int fast = open_without_links(root, start, path);
    if (fast >= 0 || errno == ENOENT || errno == ENOTDIR)
        return fast;
    char *todo = strdup(path[0] == '/' ? path + 1 : path);
    int cur = dup(path[0] == '/' ? root : start);
    int links = 0, rc = todo && cur >= 0 ? 0 : -ENOMEM;
    if (cur < 0 && todo)
        rc = -errno;
    while (rc == 0 && todo[0] != '\0') {
        size_t len = strcspn(todo, "/");
        char name[NAME_MAX + 1];
        if (len > NAME_MAX) {
            rc = -ENAMETOOLONG;
            break;
        }
        memcpy(name, todo, len);
        name[len] = '\0';
        memmove(todo, todo + len + strspn(todo + len, "/"),
                strlen(todo + len + strspn(todo + len, "/")) + 1);
        if (len == 0 || strcmp(name, ".") == 0)
            continue;
        rc = open_step(root, pid, &cur, name, &todo, &links);
    }
    free(todo);
    if (rc < 0) {
        if (cur >= 0)
            close(cur);
        errno = -rc;
        return -1;
    }
    return cur;
}
