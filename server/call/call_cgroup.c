#include "server/call/call_cgroup.h"

#include "common/log.h"
#include "common/strfmt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/* The most hierarchies a call uses: v2, v1 pids, v1 memory, v1 freezer. */
#define MAX_HIERS 4

#define UNAVAILABLE_TAIL "; calls are bounded by the PID namespace and RLIMIT_NPROC only"

/* The v1 controllers this module uses, by index. */
enum ctl { CTL_PIDS, CTL_MEMORY, CTL_FREEZER, N_CTL };
static const char *const ctl_name[N_CTL] = {"pids", "memory", "freezer"};

enum kill_how { KILL_CGROUP_KILL, KILL_V2_FREEZE, KILL_V1_FREEZER, KILL_SIGNAL };
static const char *const kill_name[] = {"cgroup.kill", "cgroup.freeze", "freezer", "signal"};

/* One hierarchy the calls use: each call gets a directory under base. */
struct hier {
    bool v2;
    bool pids, memory, freezer; /* what its call directories carry */
    char *base;                 /* absolute, e.g. /sys/fs/cgroup/pids */
    char *rel;                  /* base as /proc/PID/cgroup names it, e.g. "/" */
    enum ctl ctl;               /* v1: the controller /proc/PID/cgroup lists it by */
};

struct call_cgroup_probe {
    enum call_cgroup_mode mode;
    enum kill_how kill;
    char *description;
    char *moved_to;           /* the leaf the server moved itself into, or NULL */
    char *into_refused;       /* why no process is created in a v2 cgroup, or NULL */
    bool favordynmods;        /* some cgroup hierarchy is mounted with it */
    struct hier h[MAX_HIERS]; /* the v2 one first, when there is one */
    size_t n;
};

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

/* What /proc/self/cgroup and mountinfo say about the controllers used. */
struct layout {
    char *own_v2;           /* the server's path in the v2 hierarchy */
    char *own_v1[N_CTL];    /* ... in each v1 controller's hierarchy */
    char *mnt_v2, *root_v2; /* where v2 is mounted, and which of its paths */
    bool ro_v2;
    char *mnt_v1[N_CTL], *root_v1[N_CTL];
    bool ro_v1[N_CTL];
    bool favordynmods; /* in the options of any cgroup mount */
};

static atomic_ulong call_counter;

/* ---- small helpers ---- */

/* dir/name, or dir itself when name is empty; NULL when out of memory. */
static char *
path_join(const char *dir, const char *name)
{
    if (!*name)
        return strdup(dir);
    size_t n = strlen(dir);
    bool slash = n > 0 && dir[n - 1] == '/';
    return strfmt("%s%s%s", dir, slash || name[0] == '/' ? "" : "/",
                  slash && name[0] == '/' ? name + 1 : name);
}

/* Reads fd from offset 0 to its end into *out (NUL-terminated).  Control
 * files are small but not of fixed size, so the buffer grows.  0 or
 * -errno. */
static int
read_fd(int fd, char **out)
{
    size_t cap = 256, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    for (;;) {
        if (len + 1 == cap) {
            char *more = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (!more) {
                free(buf);
                return -ENOMEM;
            }
            buf = more;
            cap *= 2;
        }
        ssize_t r = pread(fd, buf + len, cap - 1 - len, (off_t)len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            return -e;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    *out = buf;
    return 0;
}

/* dir/file opened with flags, close-on-exec: the fd, or -errno. */
static int
open_at(const char *dir, const char *file, int flags)
{
    char *path = path_join(dir, file);
    if (!path)
        return -ENOMEM;
    int fd = open(path, flags | O_CLOEXEC);
    int e = errno;
    free(path);
    return fd < 0 ? -e : fd;
}

/* Reads the whole file at fd into *out and closes fd.  0 or -errno. */
static int
read_closing(int fd, char **out)
{
    if (fd < 0)
        return fd;
    int rc = read_fd(fd, out);
    close(fd);
    return rc;
}

static int
read_path(const char *path, char **out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    return read_closing(fd < 0 ? -errno : fd, out);
}

static int
read_at(const char *dir, const char *file, char **out)
{
    return read_closing(open_at(dir, file, O_RDONLY), out);
}

/* One write(2) of text: a cgroup control file takes each write as one
 * request. */
static int
write_text(int fd, const char *text)
{
    size_t n = strlen(text);
    ssize_t w = write(fd, text, n);
    if (w < 0)
        return -errno;
    return (size_t)w == n ? 0 : -EIO;
}

static int
write_at(const char *dir, const char *file, const char *text)
{
    int fd = open_at(dir, file, O_WRONLY);
    if (fd < 0)
        return fd;
    int rc = write_text(fd, text);
    close(fd);
    return rc;
}

static bool
exists_at(const char *dir, const char *file)
{
    char *path = path_join(dir, file);
    bool yes = path && access(path, F_OK) == 0;
    free(path);
    return yes;
}

/* Whether word is one of the items of list, separated by any of seps. */
static bool
listed(const char *list, const char *word, const char *seps)
{
    size_t n = strlen(word);
    for (const char *s = list; *s;) {
        size_t len = strcspn(s, seps);
        if (len == n && strncmp(s, word, n) == 0)
            return true;
        s += len;
        s += strspn(s, seps);
    }
    return false;
}

/* The next line of *text, NUL-terminated in place; NULL at the end. */
static char *
next_line(char **text)
{
    char *line = *text;
    if (!*line)
        return NULL;
    char *nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *text = nl + 1;
    } else {
        *text = line + strlen(line);
    }
    return line;
}

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- what /proc says ---- */

static int
set_path(char **slot, const char *value)
{
    free(*slot);
    *slot = strdup(value);
    return *slot ? 0 : -ENOMEM;
}

/* /proc/self/cgroup: "ID:CONTROLLERS:PATH" per hierarchy; v2 is "0::PATH". */
static int
parse_proc_cgroup(struct layout *l, char *text)
{
    char *line;
    while ((line = next_line(&text))) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        const char *ctrls = c1 + 1, *path = c2 + 1;
        int rc = 0;
        if (strcmp(line, "0") == 0 && !*ctrls)
            rc = set_path(&l->own_v2, path);
        for (int c = 0; c < N_CTL && rc == 0; c++) {
            if (listed(ctrls, ctl_name[c], ","))
                rc = set_path(&l->own_v1[c], path);
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Undoes mountinfo's octal escapes (\040 for a space, ...) in place. */
static void
unescape(char *s)
{
    char *out = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        } else {
            *out++ = *s;
        }
    }
    *out = '\0';
}

/* Records a mount of one hierarchy unless one is known already; a
 * writable mount replaces a read-only one. */
static int
take_mount(char **mnt, char **root, bool *ro, const char *m, const char *r, bool m_ro)
{
    if (*mnt && (m_ro || !*ro))
        return 0;
    *ro = m_ro;
    if (set_path(mnt, m) < 0 || set_path(root, r) < 0)
        return -ENOMEM;
    return 0;
}

/* One mountinfo line: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] -
 * TYPE SOURCE SUPEROPTIONS". */
static int
parse_mount(struct layout *l, char *line)
{
    char *field[6] = {0}, *tail[3] = {0};
    int n = 0, n_tail = 0;
    bool dash = false;
    char *save = NULL;
    for (char *f = strtok_r(line, " ", &save); f && n_tail < 3; f = strtok_r(NULL, " ", &save)) {
        if (n < 6)
            field[n++] = f;
        else if (!dash)
            dash = strcmp(f, "-") == 0;
        else
            tail[n_tail++] = f;
    }
    if (n_tail < 3)
        return 0;
    const char *type = tail[0], *super = tail[2];
    unescape(field[3]);
    unescape(field[4]);
    bool ro = listed(field[5], "ro", ",") || listed(super, "ro", ",");
    if (strcmp(type, "cgroup2") == 0 || strcmp(type, "cgroup") == 0)
        l->favordynmods |= listed(super, "favordynmods", ",");
    if (strcmp(type, "cgroup2") == 0)
        return take_mount(&l->mnt_v2, &l->root_v2, &l->ro_v2, field[4], field[3], ro);
    if (strcmp(type, "cgroup") != 0)
        return 0;
    for (int c = 0; c < N_CTL; c++) {
        if (listed(super, ctl_name[c], ",") &&
            take_mount(&l->mnt_v1[c], &l->root_v1[c], &l->ro_v1[c], field[4], field[3], ro) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int
parse_mountinfo(struct layout *l, char *text)
{
    char *line;
    while ((line = next_line(&text))) {
        if (parse_mount(l, line) < 0)
            return -ENOMEM;
    }
    return 0;
}

static void
layout_release(struct layout *l)
{
    free(l->own_v2);
    free(l->mnt_v2);
    free(l->root_v2);
    for (int c = 0; c < N_CTL; c++) {
        free(l->own_v1[c]);
        free(l->mnt_v1[c]);
        free(l->root_v1[c]);
    }
}

static int
read_layout(struct layout *l, const char *proc_cgroup, const char *mountinfo, char **why)
{
    const char *files[2] = {proc_cgroup, mountinfo};
    for (int i = 0; i < 2; i++) {
        char *text = NULL;
        int rc = read_path(files[i], &text);
        if (rc < 0) {
            *why = strfmt("%s: %s", files[i], strerror(-rc));
            return -1;
        }
        rc = i == 0 ? parse_proc_cgroup(l, text) : parse_mountinfo(l, text);
        free(text);
        if (rc < 0) {
            *why = NULL;
            return -1;
        }
    }
    return 0;
}

/*
 * The directory of own (a path in a hierarchy, as /proc/self/cgroup gives
 * it) under a mount of that hierarchy whose root is root: mounts made in
 * a cgroup namespace or bind-mounted show a part of the tree only.  NULL
 * when own is outside that part (*why says so) or out of memory.
 */
static char *
own_dir(const char *mnt, const char *root, const char *own, char **why)
{
    size_t n = strcmp(root, "/") == 0 ? 0 : strlen(root);
    if (strncmp(own, root, n) != 0 || (own[n] != '/' && own[n] != '\0')) {
        *why =
            strfmt("the server's cgroup %s is outside the part (%s) mounted at %s", own, root, mnt);
        return NULL;
    }
    const char *below = strcmp(own + n, "/") == 0 ? "" : own + n;
    char *dir = path_join(mnt, below);
    if (!dir)
        *why = NULL;
    return dir;
}

/* ---- trying a hierarchy ---- */

/* The files a call directory must have to serve h. */
static int
check_files(const struct hier *h, const char *dir, char **why)
{
    const char *need[5];
    size_t n = 0;
    need[n++] = "cgroup.procs";
    if (!h->v2)
        need[n++] = "tasks";
    if (h->pids)
        need[n++] = "pids.max";
    if (h->memory)
        need[n++] = h->v2 ? "memory.max" : "memory.limit_in_bytes";
    if (h->freezer)
        need[n++] = "freezer.state";
    for (size_t i = 0; i < n; i++) {
        if (!exists_at(dir, need[i])) {
            *why = strfmt("a cgroup made in %s has no %s", h->base, need[i]);
            return -1;
        }
    }
    return 0;
}

/* Makes (or finds) the cgroup parent/execgate-PID-what of this process;
 * its malloc'd path, or NULL with *why set (NULL: out of memory). */
static char *
make_own(const char *parent, const char *what, char **why)
{
    char *name = strfmt("execgate-%d-%s", (int)getpid(), what);
    char *dir = name ? path_join(parent, name) : NULL;
    free(name);
    *why = NULL;
    if (dir && mkdir(dir, 0755) < 0 && errno != EEXIST) {
        *why = strfmt("cannot make a cgroup in %s: %s", parent, strerror(errno));
        free(dir);
        dir = NULL;
    }
    return dir;
}

/*
 * Makes and removes a directory under h->base, which shows whether calls
 * can have one there better than permission bits can (read-only mounts,
 * delegation, namespaces).  *has_kill and *has_freeze say whether it had
 * cgroup.kill and cgroup.freeze (v2).
 */
static int
try_hier(const struct hier *h, bool *has_kill, bool *has_freeze, char **why)
{
    char *dir = make_own(h->base, "probe", why);
    if (!dir)
        return -1;
    int rc = check_files(h, dir, why);
    *has_kill = exists_at(dir, "cgroup.kill");
    *has_freeze = exists_at(dir, "cgroup.freeze");
    if (rmdir(dir) < 0)
        log_warn("cgroups: rmdir %s: %s", dir, strerror(errno));
    free(dir);
    return rc;
}

static struct hier *
add_hier(struct call_cgroup_probe *p, bool v2, char *base, const char *rel, enum ctl c)
{
    struct hier *h = &p->h[p->n];
    *h = (struct hier){.v2 = v2, .base = base, .rel = strdup(rel), .ctl = c};
    if (!h->rel) {
        free(base);
        return NULL;
    }
    p->n++;
    return h;
}

static void
drop_last_hier(struct call_cgroup_probe *p)
{
    p->n--;
    free(p->h[p->n].base);
    free(p->h[p->n].rel);
}

/* ---- cgroup v2 controllers for the calls ---- */

/* Whether cgroup.procs text lists the server and nobody else. */
static bool
only_server(const char *procs)
{
    char self[24];
    snprintf(self, sizeof(self), "%d\n", (int)getpid());
    return strcmp(procs, self) == 0;
}

/*
 * The v2 rule: a cgroup other than the root that has processes cannot
 * enable a controller for its children (EBUSY).  When the server is the
 * only process in dir, it moves into a leaf of its own below it and
 * enables want there; it moves back when that fails too.
 */
static int
move_server_and_enable(struct call_cgroup_probe *p, const char *dir, const char *want, char **why)
{
    char *procs = NULL;
    int rc = read_at(dir, "cgroup.procs", &procs);
    if (rc < 0 || !only_server(procs)) {
        free(procs);
        *why = rc < 0 ? strfmt("%s/cgroup.procs: %s", dir, strerror(-rc))
                      : strfmt("%s holds processes besides the server, and cgroup v2 enables "
                               "controllers for child cgroups only in a cgroup without processes",
                               dir);
        return -1;
    }
    free(procs);
    char *leaf = make_own(dir, "server", why);
    if (!leaf)
        return -1;
    rc = write_at(leaf, "cgroup.procs", "0");
    if (rc == 0)
        rc = write_at(dir, "cgroup.subtree_control", want);
    if (rc == 0) {
        log_info("cgroups: the server moved itself into %s, so that %s can be enabled for the "
                 "cgroups of its calls",
                 leaf, want);
        p->moved_to = leaf;
        return 0;
    }
    *why = strfmt("cannot enable %s for the children of %s, even with the server moved to %s: %s",
                  want, dir, leaf, strerror(-rc));
    int back = write_at(dir, "cgroup.procs", "0");
    if (back < 0)
        log_warn("cgroups: moving the server back to %s: %s", dir, strerror(-back));
    else if (rmdir(leaf) < 0)
        log_warn("cgroups: rmdir %s: %s", leaf, strerror(errno));
    free(leaf);
    return -1;
}

/* Makes sure the children of dir (the server's v2 cgroup) get the pids
 * and/or memory controllers. */
static int
enable_v2(struct call_cgroup_probe *p, const char *dir, bool pids, bool memory, char **why)
{
    char *have = NULL;
    int rc = read_at(dir, "cgroup.subtree_control", &have);
    if (rc < 0) {
        *why = strfmt("%s/cgroup.subtree_control: %s", dir, strerror(-rc));
        return -1;
    }
    bool need_pids = pids && !listed(have, "pids", " \n");
    bool need_memory = memory && !listed(have, "memory", " \n");
    free(have);
    if (!need_pids && !need_memory)
        return 0;
    const char *want = need_pids && need_memory ? "+pids +memory" : need_pids ? "+pids" : "+memory";
    rc = write_at(dir, "cgroup.subtree_control", want);
    if (rc == 0)
        return 0;
    if (rc != -EBUSY) {
        *why = strfmt("cannot enable %s for the children of %s: %s", want, dir, strerror(-rc));
        return -1;
    }
    return move_server_and_enable(p, dir, want, why);
}

/* ---- creating a call's first process in its cgroup ---- */

/*
 * A child created by clone3 with CLONE_INTO_CGROUP in the cgroup dir
 * names, which exits at once with 0 (a fork-like clone3: the child goes
 * on in a copy of this process, on its own copy of this stack).  Returns
 * 0 when it did, else -1 with *why: clone3 refused (ENOSYS before Linux
 * 5.3 and under some containers' seccomp filters, E2BIG or EINVAL before
 * 5.7), or the child died otherwise (killed at birth: the kernel's
 * cgroup.kill count of the server's cgroup differs from the new
 * cgroup's, which some kernels take for a kill of the new process).
 */
static int
clone_into_trial(const char *dir, char **why)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        *why = strfmt("%s: %s", dir, strerror(errno));
        return -1;
    }
    struct clone_args args = {
        .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t)fd};
    long pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid == 0)
        _exit(0);
    int e = errno;
    close(fd);
    if (pid < 0) {
        *why = strfmt("clone3 with CLONE_INTO_CGROUP: %s", strerror(e));
        return -1;
    }
    int st = 0;
    while (waitpid((pid_t)pid, &st, __WALL) < 0) {
        if (errno != EINTR) {
            *why = strfmt("waitpid: %s", strerror(errno));
            return -1;
        }
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFSIGNALED(st))
        *why = strfmt("a process created in a cgroup by clone3 was killed at birth (signal %d)",
                      WTERMSIG(st));
    else
        *why = strfmt("a process created in a cgroup by clone3 ended at birth (status %d)",
                      WEXITSTATUS(st));
    return -1;
}

/*
 * Whether calls' first processes can be created in their v2 directories
 * (h, the v2 hierarchy), found by trying it in a directory made and
 * removed for the purpose.  NULL when they can, else why not (malloc'd;
 * NULL with *oom set when out of memory).
 */
static char *
try_into(const struct hier *h, bool *oom)
{
    *oom = false;
    const char *forced = getenv("EXECGATE_TEST_NO_CLONE3");
    char *why = NULL;
    if (forced && strcmp(forced, "1") == 0) {
        why = strdup("EXECGATE_TEST_NO_CLONE3=1");
        *oom = !why;
        return why;
    }
    char *dir = make_own(h->base, "probe", &why);
    if (dir && clone_into_trial(dir, &why) == 0)
        why = NULL;
    else if (!why)
        *oom = true;
    if (dir && rmdir(dir) < 0)
        log_warn("cgroups: rmdir %s: %s", dir, strerror(errno));
    free(dir);
    return why;
}

/* ---- choosing ---- */

/* Whether controller c is usable in the v2 hierarchy at dir (listed in
 * its cgroup.controllers). */
static bool
in_v2(const char *dir, enum ctl c)
{
    char *have = NULL;
    if (!dir || read_at(dir, "cgroup.controllers", &have) < 0)
        return false;
    bool yes = listed(have, ctl_name[c], " \n");
    free(have);
    return yes;
}

/* Adds the v1 hierarchy of controller c; NULL with *why when unusable. */
static struct hier *
add_v1(struct call_cgroup_probe *p, const struct layout *l, enum ctl c, char **why)
{
    if (l->ro_v1[c]) {
        *why = strfmt("the v1 %s hierarchy at %s is mounted read-only", ctl_name[c], l->mnt_v1[c]);
        return NULL;
    }
    char *base = own_dir(l->mnt_v1[c], l->root_v1[c], l->own_v1[c], why);
    struct hier *h = base ? add_hier(p, false, base, l->own_v1[c], c) : NULL;
    if (base && !h)
        *why = NULL;
    return h;
}

/*
 * The server's v2 directory, when the v2 hierarchy is mounted and the
 * server's place in it is visible there; NULL otherwise, with *why
 * saying why when v2 is mounted.
 */
static char *
v2_dir(const struct layout *l, char **why)
{
    *why = NULL;
    if (!l->mnt_v2 || !l->own_v2)
        return NULL;
    return own_dir(l->mnt_v2, l->root_v2, l->own_v2, why);
}

/*
 * Which of pids and memory come from v2 (else from v1); fails when one
 * is in neither.  v2 is the server's v2 directory, or NULL with v2_why
 * saying why there is none (NULL: v2 is not mounted).
 */
static int
place_controllers(const struct layout *l, const char *v2, const char *v2_why, bool from_v2[2],
                  char **why)
{
    for (int c = CTL_PIDS; c <= CTL_MEMORY; c++) {
        from_v2[c] = false;
        if (l->mnt_v1[c] && l->own_v1[c])
            continue;
        if (in_v2(v2, (enum ctl)c)) {
            from_v2[c] = true;
            continue;
        }
        const char *name = ctl_name[c];
        if (!l->mnt_v1[c] && !l->mnt_v2)
            *why = strfmt("no cgroup hierarchy with the %s controller is mounted", name);
        else if (!v2)
            *why = strfmt("no %s controller: no v1 %s hierarchy for the server, and cgroup v2 is "
                          "not usable: %s",
                          name, name, v2_why ? v2_why : "the server has no v2 cgroup");
        else
            *why = strfmt("no %s controller: no v1 %s hierarchy for the server, and %s is not in "
                          "%s/cgroup.controllers",
                          name, name, name, v2);
        return -1;
    }
    return 0;
}

/*
 * The v2 hierarchy: carries pids/memory where place_controllers put them,
 * else serves only for cgroup.kill and cgroup.events, and then is left out
 * quietly when it is not writable.
 */
static int
add_v2(struct call_cgroup_probe *p, const struct layout *l, char *dir, const bool from_v2[2],
       bool *has_kill, bool *has_freeze, char **why)
{
    bool carries = from_v2[CTL_PIDS] || from_v2[CTL_MEMORY];
    *has_kill = *has_freeze = false;
    if (l->ro_v2) {
        *why = carries ? strfmt("cgroup v2 at %s is mounted read-only", l->mnt_v2) : NULL;
        free(dir);
        return carries ? -1 : 0;
    }
    if (carries && enable_v2(p, dir, from_v2[CTL_PIDS], from_v2[CTL_MEMORY], why) < 0) {
        free(dir);
        return -1;
    }
    struct hier *h = add_hier(p, true, dir, l->own_v2, N_CTL);
    if (!h) {
        *why = NULL;
        return -1;
    }
    h->pids = from_v2[CTL_PIDS];
    h->memory = from_v2[CTL_MEMORY];
    if (try_hier(h, has_kill, has_freeze, why) == 0)
        return 0;
    drop_last_hier(p);
    if (carries)
        return -1;
    log_debug("cgroups: v2 left out: %s", *why ? *why : "out of memory");
    free(*why);
    *why = NULL;
    return 0;
}

static int
add_v1_controllers(struct call_cgroup_probe *p, const struct layout *l, const bool from_v2[2],
                   char **why)
{
    for (int c = CTL_PIDS; c <= CTL_MEMORY; c++) {
        if (from_v2[c])
            continue;
        struct hier *h = add_v1(p, l, (enum ctl)c, why);
        if (!h)
            return -1;
        h->pids = c == CTL_PIDS;
        h->memory = c == CTL_MEMORY;
        bool has_kill, has_freeze;
        if (try_hier(h, &has_kill, &has_freeze, why) < 0)
            return -1;
    }
    return 0;
}

static bool
has_v1_freezer(const struct layout *l)
{
    return l->mnt_v1[CTL_FREEZER] && l->own_v1[CTL_FREEZER] && !l->ro_v1[CTL_FREEZER];
}

static int
add_freezer(struct call_cgroup_probe *p, const struct layout *l, char **why)
{
    struct hier *h = add_v1(p, l, CTL_FREEZER, why);
    if (!h)
        return -1;
    h->freezer = true;
    bool has_kill, has_freeze;
    if (try_hier(h, &has_kill, &has_freeze, why) == 0)
        return 0;
    drop_last_hier(p);
    return -1;
}

/* The way to kill a test asks for, when the machine has it. */
static int
force_kill(struct call_cgroup_probe *p, const struct layout *l, const char *forced,
           const bool avail[], char **why)
{
    for (int k = 0; k <= KILL_SIGNAL; k++) {
        if (strcmp(forced, kill_name[k]) != 0)
            continue;
        if (!avail[k]) {
            *why = strfmt("EXECGATE_TEST_CGROUP_KILL=%s: not available here", forced);
            return -1;
        }
        p->kill = (enum kill_how)k;
        return p->kill == KILL_V1_FREEZER ? add_freezer(p, l, why) : 0;
    }
    *why = strfmt("EXECGATE_TEST_CGROUP_KILL=%s: not cgroup.kill, cgroup.freeze, freezer or signal",
                  forced);
    return -1;
}

/*
 * The way to kill: cgroup.kill (one write, forks racing it included), else
 * a freezer so that nothing forks while the processes are signalled one by
 * one, else the signals alone, which pids.max keeps a finite chase.
 */
static int
choose_kill(struct call_cgroup_probe *p, const struct layout *l, bool has_kill, bool has_freeze,
            char **why)
{
    bool v2 = p->n > 0 && p->h[0].v2;
    bool avail[] = {v2 && has_kill, v2 && has_freeze, has_v1_freezer(l), true};
    const char *forced = getenv("EXECGATE_TEST_CGROUP_KILL");
    if (forced)
        return force_kill(p, l, forced, avail, why);
    int k = 0;
    while (!avail[k])
        k++;
    p->kill = (enum kill_how)k;
    if (p->kill != KILL_V1_FREEZER || add_freezer(p, l, why) == 0)
        return 0;
    log_debug("cgroups: the v1 freezer is left out: %s", *why ? *why : "out of memory");
    free(*why);
    *why = NULL;
    p->kill = KILL_SIGNAL;
    return 0;
}

static int
choose(struct call_cgroup_probe *p, const struct layout *l, char **why)
{
    char *v2_why = NULL;
    char *dir = v2_dir(l, &v2_why);
    bool from_v2[2];
    bool has_kill = false, has_freeze = false;
    int rc = place_controllers(l, dir, v2_why, from_v2, why);
    free(v2_why);
    if (rc < 0) {
        free(dir);
        return -1;
    }
    if (dir && add_v2(p, l, dir, from_v2, &has_kill, &has_freeze, why) < 0)
        return -1;
    if (add_v1_controllers(p, l, from_v2, why) < 0)
        return -1;
    if (choose_kill(p, l, has_kill, has_freeze, why) < 0)
        return -1;
    bool oom = false;
    if (p->h[0].v2 && (p->into_refused = try_into(&p->h[0], &oom)) == NULL && oom) {
        *why = NULL;
        return -1;
    }
    p->favordynmods = l->favordynmods;
    p->mode = from_v2[CTL_PIDS] && from_v2[CTL_MEMORY] ? CALL_CGROUP_UNIFIED : CALL_CGROUP_HYBRID;
    return 0;
}

/* ---- the description ---- */

static const char *
kill_words(enum kill_how how)
{
    switch (how) {
    case KILL_CGROUP_KILL:
        return "cgroup.kill";
    case KILL_V2_FREEZE:
        return "cgroup.freeze and SIGKILL";
    case KILL_V1_FREEZER:
        return "the v1 freezer and SIGKILL";
    case KILL_SIGNAL:
        break;
    }
    return "SIGKILL to each process";
}

static char *
describe_unified(const struct call_cgroup_probe *p)
{
    if (p->moved_to)
        return strfmt("cgroups: v2 (%s: pids and memory, kill by %s; the server moved itself "
                      "into %s)",
                      p->h[0].base, kill_words(p->kill), p->moved_to);
    return strfmt("cgroups: v2 (%s: pids and memory, kill by %s)", p->h[0].base,
                  kill_words(p->kill));
}

static char *
describe_hybrid(const struct call_cgroup_probe *p)
{
    const struct hier *v2 = p->h[0].v2 ? &p->h[0] : NULL;
    const char *ctrls = !v2 || (!v2->pids && !v2->memory) ? "v1 pids and memory"
                        : v2->pids                        ? "v2 pids, v1 memory"
                                                          : "v1 pids, v2 memory";
    if (v2 && p->kill == KILL_CGROUP_KILL)
        return strfmt("cgroups: hybrid (v2 %s for kill, %s)", v2->base, ctrls);
    if (v2 && p->kill == KILL_V2_FREEZE)
        return strfmt("cgroups: hybrid (v2 %s for freeze and kill, %s)", v2->base, ctrls);
    return strfmt("cgroups: hybrid (%s, kill by %s)", ctrls, kill_words(p->kill));
}

/* ---- the probe ---- */

static int
probe(struct call_cgroup_probe *p, const char *proc_cgroup, const char *mountinfo, char **why)
{
    const char *no = getenv("EXECGATE_TEST_NO_CGROUP");
    if (no && strcmp(no, "1") == 0) {
        *why = strdup("EXECGATE_TEST_NO_CGROUP=1");
        return -1;
    }
    struct layout l = {0};
    int rc = read_layout(&l, proc_cgroup, mountinfo, why);
    if (rc == 0 && !l.mnt_v2 && !l.mnt_v1[CTL_PIDS] && !l.mnt_v1[CTL_MEMORY]) {
        *why = strdup("no cgroup filesystem is mounted");
        rc = -1;
    }
    if (rc == 0)
        rc = choose(p, &l, why);
    layout_release(&l);
    return rc;
}

static void
clear_hiers(struct call_cgroup_probe *p)
{
    while (p->n > 0)
        drop_last_hier(p);
}

struct call_cgroup_probe *
call_cgroup_probe_at(const char *proc_cgroup, const char *mountinfo)
{
    struct call_cgroup_probe *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    char *why = NULL;
    if (probe(p, proc_cgroup, mountinfo, &why) < 0) {
        clear_hiers(p);
        free(p->into_refused);
        p->into_refused = NULL;
        p->mode = CALL_CGROUP_NONE;
        p->description =
            strfmt("cgroups: unavailable: %s" UNAVAILABLE_TAIL, why ? why : "out of memory");
    } else {
        p->description = p->mode == CALL_CGROUP_UNIFIED ? describe_unified(p) : describe_hybrid(p);
    }
    free(why);
    if (!p->description) {
        call_cgroup_probe_free(p);
        return NULL;
    }
    return p;
}

struct call_cgroup_probe *
call_cgroup_probe(void)
{
    return call_cgroup_probe_at("/proc/self/cgroup", "/proc/self/mountinfo");
}

enum call_cgroup_mode
call_cgroup_mode(const struct call_cgroup_probe *p)
{
    return p->mode;
}

const char *
call_cgroup_probe_into_refused(const struct call_cgroup_probe *p)
{
    return p->mode != CALL_CGROUP_NONE && p->h[0].v2 ? p->into_refused : NULL;
}

bool
call_cgroup_probe_favordynmods(const struct call_cgroup_probe *p)
{
    return p->favordynmods;
}

const char *
call_cgroup_describe(const struct call_cgroup_probe *p)
{
    return p->description;
}

void
call_cgroup_probe_free(struct call_cgroup_probe *p)
{
    if (!p)
        return;
    clear_hiers(p);
    free(p->description);
    free(p->moved_to);
    free(p->into_refused);
    free(p);
}

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
        cg->dirs[i] = path_join(p->h[i].base, leaf);
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
    int rc = write_at(dir, file, value ? text : none);
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
        if (bytes && exists_at(dir, "memory.swap.max"))
            return set_limit(dir, "memory.swap.max", 0, "0", why);
        return 0;
    }
    if (set_limit(dir, "memory.limit_in_bytes", bytes, "-1", why) < 0)
        return -1;
    if (bytes && exists_at(dir, "memory.memsw.limit_in_bytes"))
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
    int fd = open_at(dir, file, flags);
    if (fd >= 0 || fd == -ENOMEM)
        return fd < 0 ? -1 : fd;
    char *path = path_join(dir, file);
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

int
call_cgroup_add(const struct call_cgroup *cg, pid_t pid)
{
    char text[24];
    snprintf(text, sizeof(text), "%d", (int)pid);
    for (size_t i = 0; i < cg->n; i++) {
        int rc = write_at(cg->dirs[i], "cgroup.procs", text);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- killing ---- */

/* /proc/PID/cgroup's line for hierarchy h, or NULL. */
static const char *
line_for(char *text, const struct hier *h)
{
    char *line;
    while ((line = next_line(&text))) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        bool match = h->v2 ? strcmp(line, "0:") == 0 : listed(c1 + 1, ctl_name[h->ctl], ",");
        if (match)
            return c2 + 1;
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
    if (read_path(proc, &text) < 0)
        return false;
    char *want = path_join(h->rel, cg->leaf);
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
    int rc = read_at(cg->dirs[i], "cgroup.procs", &procs);
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
    return dir ? write_at(dir, file, text) : 0;
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
        return write_at(cg->dirs[0], "cgroup.kill", "1");
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
        int rc = v2 ? read_fd(cg->events, &text) : read_at(cg->dirs[i], "cgroup.procs", &text);
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
        int rc = read_at(cg->dirs[i], file, &text);
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
    int64_t end = now_ms() + ms;
    for (;;) {
        int64_t left = end - now_ms();
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
    if (read_at(dir, "cgroup.procs", &procs) < 0)
        return 0;
    int killed = 0;
    char *text = procs, *line;
    while ((line = next_line(&text))) {
        pid_t pid = (pid_t)atoi(line);
        int pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
        if (pidfd < 0)
            continue;
        char proc[40];
        snprintf(proc, sizeof(proc), "/proc/%d/cgroup", (int)pid);
        char *where = NULL;
        if (read_path(proc, &where) == 0 && strstr(where, leaf) &&
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
            char *dir = path_join(bases[i], leaf);
            if (!dir)
                continue;
            /* v2: one write takes the whole set; else a pass of signals */
            if (!exists_at(dir, "cgroup.kill") || write_at(dir, "cgroup.kill", "1") < 0)
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
