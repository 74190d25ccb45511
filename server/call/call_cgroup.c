#include "server/call/call_cgroup.h"

#include "common/log.h"
#include "common/strfmt.h"
#include "server/call/call_cgroup_fs.h"
#include "server/call/call_cgroup_probe_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* How often call_cgroup_free kills and waits before it leaves a directory
 * that still holds processes, and how long each wait may take.  The
 * caller waits for call_cgroup_empty first, so this only bounds how long
 * a forgotten call can hold up the loop. */
#define FREE_ATTEMPTS 5
#define FREE_WAIT_MS  10

/* How many names a new call tries when one is taken (an earlier server
 * with the same pid may have left its directory behind). */
#define NAME_TRIES 16

struct call_cgroup {
    const struct call_cgroup_probe *probe;
    char *name;            /* for messages */
    char *leaf;            /* execgate-PID-N */
    char *dirs[MAX_HIERS]; /* one per probe->h, in its order */
    int tasks[MAX_HIERS];  /* each v1 dirs[i]/tasks, O_WRONLY, in that order */
    int events;            /* dirs[0]/cgroup.events when v2, else -1 */
    /* join.into and join.procs: dirs[0] and its cgroup.procs when v2, else
     * -1; join.tasks is tasks */
    struct call_cgroup_join join;
    size_t n;
};

static atomic_ulong call_counter;

/* ---- a call's cgroup ---- */

/* Removes the directories cg still has; returns how many are left. */
static size_t
remove_dirs(struct call_cgroup *cg, bool quiet)
{
    size_t left = 0;
    for (size_t i = 0; i < cg->n; i++) {
        if (!cg->dirs[i])
            continue;
        if (rmdir(cg->dirs[i]) == 0 || errno == ENOENT) {
            free(cg->dirs[i]);
            cg->dirs[i] = NULL;
            continue;
        }
        if (!quiet && errno != EBUSY)
            log_warn("cgroups: rmdir %s: %s", cg->dirs[i], strerror(errno));
        left++;
    }
    return left;
}

/* Makes one directory per hierarchy, all named leaf.  -EEXIST when the
 * name is taken in any of them (nothing is left made then). */
static int
make_dirs_named(struct call_cgroup *cg, const char *leaf, char **why)
{
    const struct call_cgroup_probe *p = cg->probe;
    for (size_t i = 0; i < p->n; i++) {
        cg->dirs[i] = cgfs_path_join(p->h[i].base, leaf);
        if (!cg->dirs[i] || mkdir(cg->dirs[i], 0755) < 0) {
            int e = cg->dirs[i] ? errno : ENOMEM;
            if (e != EEXIST && e != ENOMEM)
                *why = strfmt("mkdir %s: %s", cg->dirs[i], strerror(e));
            free(cg->dirs[i]);
            cg->dirs[i] = NULL;
            remove_dirs(cg, false);
            return -e;
        }
    }
    return 0;
}

static int
make_dirs(struct call_cgroup *cg, char **why)
{
    for (int t = 0; t < NAME_TRIES; t++) {
        unsigned long n = atomic_fetch_add(&call_counter, 1) + 1;
        cg->leaf = strfmt("execgate-%d-%lu", (int)getpid(), n);
        if (!cg->leaf)
            return -1;
        int rc = make_dirs_named(cg, cg->leaf, why);
        if (rc != -EEXIST)
            return rc < 0 ? -1 : 0;
        free(cg->leaf);
        cg->leaf = NULL;
    }
    *why = strfmt("%d names in a row are taken in %s", NAME_TRIES, cg->probe->h[0].base);
    return -1;
}

static int
set_limit(const char *dir, const char *file, uint64_t value, const char *none, char **why)
{
    char text[24];
    if (value)
        snprintf(text, sizeof(text), "%" PRIu64, value);
    int rc = cgfs_write_at(dir, file, value ? text : none);
    if (rc < 0)
        *why = strfmt("%s/%s: %s", dir, file, strerror(-rc));
    return rc;
}

/* Bounds memory and, where the kernel accounts swap, swap with it: a
 * limit that swap could extend would not bound much. */
static int
set_memory(const struct hier *h, const char *dir, uint64_t bytes, char **why)
{
    if (h->v2) {
        if (set_limit(dir, "memory.max", bytes, "max", why) < 0)
            return -1;
        /* no swap for the call: memory.max alone then bounds what it holds */
        if (bytes && cgfs_exists_at(dir, "memory.swap.max"))
            return set_limit(dir, "memory.swap.max", 0, "0", why);
        return 0;
    }
    if (set_limit(dir, "memory.limit_in_bytes", bytes, "-1", why) < 0)
        return -1;
    if (bytes && cgfs_exists_at(dir, "memory.memsw.limit_in_bytes"))
        return set_limit(dir, "memory.memsw.limit_in_bytes", bytes, "-1", why);
    return 0;
}

static int
set_limits(struct call_cgroup *cg, uint64_t max_processes, uint64_t max_memory, char **why)
{
    for (size_t i = 0; i < cg->n; i++) {
        const struct hier *h = &cg->probe->h[i];
        if (h->pids && set_limit(cg->dirs[i], "pids.max", max_processes, "max", why) < 0)
            return -1;
        if (h->memory && set_memory(h, cg->dirs[i], max_memory, why) < 0)
            return -1;
    }
    return 0;
}

/* open_at, saying why not: -1 with *why (left NULL when out of memory). */
static int
open_why(const char *dir, const char *file, int flags, char **why)
{
    int fd = cgfs_open_at(dir, file, flags);
    if (fd >= 0 || fd == -ENOMEM)
        return fd < 0 ? -1 : fd;
    char *path = cgfs_path_join(dir, file);
    *why = path ? strfmt("%s: %s", path, strerror(-fd)) : NULL;
    free(path);
    return -1;
}

static int
open_fds(struct call_cgroup *cg, char **why)
{
    cg->join.n_tasks = 0;
    for (size_t i = 0; i < cg->n; i++) {
        if (!cg->probe->h[i].v2) {
            int fd = open_why(cg->dirs[i], "tasks", O_WRONLY, why);
            if (fd < 0)
                return -1;
            cg->tasks[cg->join.n_tasks++] = fd;
            continue;
        }
        if (!cg->probe->into_refused) {
            /* the v2 directory itself, for clone3's CLONE_INTO_CGROUP */
            cg->join.into = open_why(cg->dirs[i], "", O_RDONLY | O_DIRECTORY, why);
            if (cg->join.into < 0)
                return -1;
        }
        cg->join.procs = open_why(cg->dirs[i], "cgroup.procs", O_WRONLY, why);
        if (cg->join.procs < 0)
            return -1;
        cg->events = open_why(cg->dirs[i], "cgroup.events", O_RDONLY, why);
        if (cg->events < 0)
            return -1;
    }
    return 0;
}

static void
close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void
close_fds(struct call_cgroup *cg)
{
    for (size_t i = 0; i < MAX_HIERS; i++)
        close_fd(&cg->tasks[i]);
    cg->join.n_tasks = 0;
    close_fd(&cg->join.into);
    close_fd(&cg->join.procs);
    close_fd(&cg->events);
}

static void
release(struct call_cgroup *cg)
{
    close_fds(cg);
    for (size_t i = 0; i < cg->n; i++)
        free(cg->dirs[i]);
    free(cg->leaf);
    free(cg->name);
    free(cg);
}

static struct call_cgroup *
alloc_cg(const struct call_cgroup_probe *p, const char *name)
{
    struct call_cgroup *cg = calloc(1, sizeof(*cg));
    if (!cg)
        return NULL;
    cg->probe = p;
    cg->n = p->n;
    cg->events = -1;
    for (size_t i = 0; i < MAX_HIERS; i++)
        cg->tasks[i] = -1;
    cg->join = (struct call_cgroup_join){.into = -1, .procs = -1, .tasks = cg->tasks};
    cg->name = strdup(name);
    if (!cg->name) {
        free(cg);
        return NULL;
    }
    return cg;
}

struct call_cgroup *
call_cgroup_new(const struct call_cgroup_probe *p, const char *name, uint64_t max_processes,
                uint64_t max_memory_bytes, char **err)
{
    *err = NULL;
    if (p->mode == CALL_CGROUP_NONE) {
        *err = strfmt("cgroup for %s: %s", name, p->description);
        return NULL;
    }
    struct call_cgroup *cg = alloc_cg(p, name);
    if (!cg)
        return NULL;
    char *why = NULL;
    if (make_dirs(cg, &why) == 0 && set_limits(cg, max_processes, max_memory_bytes, &why) == 0 &&
        open_fds(cg, &why) == 0)
        return cg;
    *err = strfmt("cgroup for %s: %s", name, why ? why : "out of memory");
    free(why);
    close_fds(cg);
    remove_dirs(cg, false);
    release(cg);
    return NULL;
}

void
call_cgroup_park(struct call_cgroup *cg)
{
    close_fds(cg);
}

int
call_cgroup_unpark(struct call_cgroup *cg, char **err)
{
    char *why = NULL;
    *err = NULL;
    if (open_fds(cg, &why) == 0)
        return 0;
    *err = strfmt("cgroup for %s: %s", cg->name, why ? why : "out of memory");
    free(why);
    close_fds(cg);
    return -1;
}

const struct call_cgroup_join *
call_cgroup_join(const struct call_cgroup *cg)
{
    return &cg->join;
}

/* ---- killing ---- */

/* /proc/PID/cgroup's line for hierarchy h, or NULL. */
static const char *
line_for(char *text, const struct hier *h)
{
    char *line;
    struct cgfs_proc_line f;
    while ((line = cgfs_next_line(&text))) {
        if (!cgfs_proc_line(line, &f))
            continue;
        bool match = h->v2 ? strcmp(f.id, "0") == 0 && !*f.controllers
                           : cgfs_listed(f.controllers, call_cgroup_ctl_name(h->ctl), ",");
        if (match)
            return f.path;
    }
    return NULL;
}

/* Whether the process behind pid is in cg's directory i now. */
static bool
member(const struct call_cgroup *cg, size_t i, pid_t pid)
{
    const struct hier *h = &cg->probe->h[i];
    char proc[40];
    snprintf(proc, sizeof(proc), "/proc/%d/cgroup", (int)pid);
    char *text = NULL;
    if (cgfs_read_path(proc, &text) < 0)
        return false;
    char *want = cgfs_path_join(h->rel, cg->leaf);
    const char *have = line_for(text, h);
    bool yes = want && have && strcmp(have, want) == 0;
    free(want);
    free(text);
    return yes;
}

/*
 * SIGKILL to pid, a number read from cgroup.procs of directory i, only if
 * it is still that process: it may have died and the number gone to
 * someone else since.  The pidfd pins the process; the membership read
 * after it proves the pinned process is one of cg's.
 */
static void
kill_member(const struct call_cgroup *cg, size_t i, pid_t pid)
{
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        if (errno != ESRCH)
            log_warn("cgroups: %s: pidfd_open(%d): %s", cg->name, (int)pid, strerror(errno));
        return;
    }
    if (member(cg, i, pid) && syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 &&
        errno != ESRCH)
        log_warn("cgroups: %s: kill %d: %s", cg->name, (int)pid, strerror(errno));
    close(pidfd);
}

/* Sends SIGKILL to each process listed in cg's first directory that is
 * still there (call_cgroup_free may have removed some). */
static int
kill_listed(const struct call_cgroup *cg)
{
    size_t i = 0;
    while (i < cg->n && !cg->dirs[i])
        i++;
    if (i == cg->n)
        return 0;
    char *procs = NULL;
    int rc = cgfs_read_at(cg->dirs[i], "cgroup.procs", &procs);
    if (rc < 0)
        return rc;
    for (char *s = procs; *s;) {
        char *end;
        long pid = strtol(s, &end, 10);
        if (end == s)
            break;
        if (pid > 0)
            kill_member(cg, i, (pid_t)pid);
        s = end + strspn(end, "\n");
    }
    free(procs);
    return 0;
}

static const char *
freezer_dir(const struct call_cgroup *cg)
{
    for (size_t i = 0; i < cg->n; i++) {
        if (cg->probe->h[i].freezer)
            return cg->dirs[i];
    }
    return NULL;
}

/* Writes text to dir/file, when dir was not removed yet. */
static int
write_if(const char *dir, const char *file, const char *text)
{
    return dir ? cgfs_write_at(dir, file, text) : 0;
}

/*
 * The v1 freezer holds a frozen task even against SIGKILL until it is
 * thawed, so the pass is freeze, signal, thaw; the v2 freezer lets a
 * fatal signal through, so there the set stays frozen (no new forks)
 * until it is empty.
 */
int
call_cgroup_kill(struct call_cgroup *cg)
{
    enum kill_how how = cg->probe->kill;
    if (how == KILL_CGROUP_KILL && cg->dirs[0])
        return cgfs_write_at(cg->dirs[0], "cgroup.kill", "1");
    int frozen = 0;
    if (how == KILL_V2_FREEZE)
        frozen = write_if(cg->dirs[0], "cgroup.freeze", "1");
    else if (how == KILL_V1_FREEZER)
        frozen = write_if(freezer_dir(cg), "freezer.state", "FROZEN");
    int rc = kill_listed(cg);
    if (how == KILL_V1_FREEZER) {
        int thawed = write_if(freezer_dir(cg), "freezer.state", "THAWED");
        if (thawed < 0)
            log_warn("cgroups: %s: thawing: %s", cg->name, strerror(-thawed));
    }
    return frozen < 0 ? frozen : rc;
}

/* Whether a v2 cgroup.events text says "populated 0". */
static bool
unpopulated(const char *events)
{
    const char *p = strstr(events, "populated ");
    return p && (p == events || p[-1] == '\n') && p[strlen("populated ")] == '0';
}

int
call_cgroup_empty(const struct call_cgroup *cg)
{
    for (size_t i = 0; i < cg->n; i++) {
        if (!cg->dirs[i])
            continue; /* removed, so empty */
        bool v2 = cg->probe->h[i].v2;
        char *text = NULL;
        int rc =
            v2 ? cgfs_read_fd(cg->events, &text) : cgfs_read_at(cg->dirs[i], "cgroup.procs", &text);
        if (rc < 0)
            return rc;
        bool empty = v2 ? unpopulated(text) : text[0] == '\0';
        free(text);
        if (!empty)
            return 0;
    }
    return 1;
}

int
call_cgroup_events_fd(const struct call_cgroup *cg)
{
    return cg->events;
}

static int64_t
read_count(const struct call_cgroup *cg, const char *file)
{
    for (size_t i = 0; i < cg->n; i++) {
        if (!cg->probe->h[i].pids || !cg->dirs[i])
            continue;
        char *text = NULL;
        int rc = cgfs_read_at(cg->dirs[i], file, &text);
        if (rc < 0)
            return rc;
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        bool ok = errno == 0 && end != text && v >= 0;
        free(text);
        return ok ? (int64_t)v : -EINVAL;
    }
    return -ENOENT;
}

int64_t
call_cgroup_pids_current(const struct call_cgroup *cg)
{
    return read_count(cg, "pids.current");
}

int64_t
call_cgroup_pids_peak(const struct call_cgroup *cg)
{
    return read_count(cg, "pids.peak");
}

const char *const *
call_cgroup_dirs(const struct call_cgroup *cg, size_t *n)
{
    *n = cg->n;
    return (const char *const *)cg->dirs;
}

/*
 * Waits up to ms for cg to be empty: on the cgroup.events notification
 * where there is one, else by looking again every millisecond.
 */
static void
wait_empty(const struct call_cgroup *cg, int ms)
{
    int64_t end = cgfs_now_ms() + ms;
    for (;;) {
        int64_t left = end - cgfs_now_ms();
        if (call_cgroup_empty(cg) != 0 || left <= 0)
            return;
        struct pollfd pfd = {.fd = cg->events, .events = POLLPRI};
        if (cg->events < 0)
            poll(NULL, 0, 1);
        else if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
            return;
    }
}

void
call_cgroup_free(struct call_cgroup *cg)
{
    if (!cg)
        return;
    for (int attempt = 0; attempt < FREE_ATTEMPTS; attempt++) {
        if (call_cgroup_empty(cg) == 1 && remove_dirs(cg, true) == 0)
            break;
        call_cgroup_kill(cg);
        wait_empty(cg, FREE_WAIT_MS);
    }
    size_t left = remove_dirs(cg, false);
    for (size_t i = 0; i < cg->n && left > 0; i++) {
        if (!cg->dirs[i])
            continue;
        if (left > 1)
            log_warn("cgroups: %s: %s and %zu more directories named %s still hold processes "
                     "after %d kills; left in place",
                     cg->name, cg->dirs[i], left - 1, cg->leaf, FREE_ATTEMPTS);
        else
            log_warn("cgroups: %s: %s still holds processes after %d kills; left in place",
                     cg->name, cg->dirs[i], FREE_ATTEMPTS);
        break;
    }
    release(cg);
}

/* ---- what a server that died left ---- */

const char *const *
call_cgroup_probe_bases(const struct call_cgroup_probe *p, size_t *n)
{
    static const char *bases[MAX_HIERS];
    *n = 0;
    for (size_t i = 0; p && p->mode != CALL_CGROUP_NONE && i < p->n; i++)
        bases[(*n)++] = p->h[i].base;
    return bases;
}

/* Whether name is "execgate-SERVER-N" with N all digits. */
static bool
left_by(const char *name, pid_t server)
{
    char prefix[40];
    int len = snprintf(prefix, sizeof(prefix), "execgate-%d-", (int)server);
    if (strncmp(name, prefix, (size_t)len) != 0 || name[len] == '\0')
        return false;
    return strspn(name + len, "0123456789") == strlen(name + len);
}

/* SIGKILL to each process of dir/cgroup.procs that /proc still shows in a
 * cgroup named leaf once it is pinned by a pidfd (a pid reused meanwhile
 * is not hit).  Returns how many were signalled. */
static int
kill_left_listed(const char *dir, const char *leaf)
{
    char *procs = NULL;
    if (cgfs_read_at(dir, "cgroup.procs", &procs) < 0)
        return 0;
    int killed = 0;
    char *text = procs, *line;
    while ((line = cgfs_next_line(&text))) {
        pid_t pid = (pid_t)atoi(line);
        int pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
        if (pidfd < 0)
            continue;
        char proc[40];
        snprintf(proc, sizeof(proc), "/proc/%d/cgroup", (int)pid);
        char *where = NULL;
        if (cgfs_read_path(proc, &where) == 0 && strstr(where, leaf) &&
            syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0)
            killed++;
        free(where);
        close(pidfd);
    }
    free(procs);
    return killed;
}

/* Kills and removes one leftover call cgroup, leaf, in every base. */
static void
reap_leftover(const char *const *bases, size_t n, const char *leaf)
{
    for (int attempt = 0; attempt < 50; attempt++) {
        size_t left = 0;
        for (size_t i = 0; i < n; i++) {
            char *dir = cgfs_path_join(bases[i], leaf);
            if (!dir)
                continue;
            /* v2: one write takes the whole set; else a pass of signals */
            if (!cgfs_exists_at(dir, "cgroup.kill") || cgfs_write_at(dir, "cgroup.kill", "1") < 0)
                kill_left_listed(dir, leaf);
            if (rmdir(dir) < 0 && errno != ENOENT)
                left++;
            free(dir);
        }
        if (left == 0)
            return;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    log_warn("cgroups: %s still holds processes after 50 kills; left in place", leaf);
}

int
call_cgroup_reap_left(const char *const *bases, size_t n, pid_t server)
{
    if (n == 0)
        return 0;
    DIR *d = opendir(bases[0]);
    if (!d)
        return -errno;
    /* the names first: the directory shrinks while they are removed */
    char **leaves = NULL;
    size_t count = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!left_by(de->d_name, server))
            continue;
        char **grown = realloc(leaves, (count + 1) * sizeof(*leaves));
        char *copy = grown ? strdup(de->d_name) : NULL;
        if (grown)
            leaves = grown;
        if (!copy)
            break;
        leaves[count++] = copy;
    }
    closedir(d);
    for (size_t i = 0; i < count; i++) {
        reap_leftover(bases, n, leaves[i]);
        free(leaves[i]);
    }
    free(leaves);
    return (int)count;
}
