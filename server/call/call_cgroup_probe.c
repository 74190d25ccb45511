#include "server/call/call_cgroup_probe.h"
#include "server/call/call_cgroup_probe_int.h"

#include "common/log.h"
#include "common/strfmt.h"
#include "server/call/call_cgroup_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UNAVAILABLE_TAIL "; calls are bounded by the PID namespace and RLIMIT_NPROC only"

static const char *const ctl_name[N_CTL] = {"pids", "memory", "freezer"};
static const char *const kill_name[] = {"cgroup.kill", "cgroup.freeze", "freezer", "signal"};

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

const char *
call_cgroup_ctl_name(enum ctl c)
{
    return ctl_name[c];
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
    struct cgfs_proc_line f;
    while ((line = cgfs_next_line(&text))) {
        if (!cgfs_proc_line(line, &f))
            continue;
        const char *ctrls = f.controllers, *path = f.path;
        int rc = 0;
        if (strcmp(f.id, "0") == 0 && !*ctrls)
            rc = set_path(&l->own_v2, path);
        for (int c = 0; c < N_CTL && rc == 0; c++) {
            if (cgfs_listed(ctrls, ctl_name[c], ","))
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
    bool ro = cgfs_listed(field[5], "ro", ",") || cgfs_listed(super, "ro", ",");
    if (strcmp(type, "cgroup2") == 0 || strcmp(type, "cgroup") == 0)
        l->favordynmods |= cgfs_listed(super, "favordynmods", ",");
    if (strcmp(type, "cgroup2") == 0)
        return take_mount(&l->mnt_v2, &l->root_v2, &l->ro_v2, field[4], field[3], ro);
    if (strcmp(type, "cgroup") != 0)
        return 0;
    for (int c = 0; c < N_CTL; c++) {
        if (cgfs_listed(super, ctl_name[c], ",") &&
            take_mount(&l->mnt_v1[c], &l->root_v1[c], &l->ro_v1[c], field[4], field[3], ro) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int
parse_mountinfo(struct layout *l, char *text)
{
    char *line;
    while ((line = cgfs_next_line(&text))) {
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
        int rc = cgfs_read_path(files[i], &text);
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
    char *dir = cgfs_path_join(mnt, below);
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
        if (!cgfs_exists_at(dir, need[i])) {
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
    char *dir = name ? cgfs_path_join(parent, name) : NULL;
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
    *has_kill = cgfs_exists_at(dir, "cgroup.kill");
    *has_freeze = cgfs_exists_at(dir, "cgroup.freeze");
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
    int rc = cgfs_read_at(dir, "cgroup.procs", &procs);
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
    rc = cgfs_write_at(leaf, "cgroup.procs", "0");
    if (rc == 0)
        rc = cgfs_write_at(dir, "cgroup.subtree_control", want);
    if (rc == 0) {
        log_info("cgroups: the server moved itself into %s, so that %s can be enabled for the "
                 "cgroups of its calls",
                 leaf, want);
        p->moved_to = leaf;
        return 0;
    }
    *why = strfmt("cannot enable %s for the children of %s, even with the server moved to %s: %s",
                  want, dir, leaf, strerror(-rc));
    int back = cgfs_write_at(dir, "cgroup.procs", "0");
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
    int rc = cgfs_read_at(dir, "cgroup.subtree_control", &have);
    if (rc < 0) {
        *why = strfmt("%s/cgroup.subtree_control: %s", dir, strerror(-rc));
        return -1;
    }
    bool need_pids = pids && !cgfs_listed(have, "pids", " \n");
    bool need_memory = memory && !cgfs_listed(have, "memory", " \n");
    free(have);
    if (!need_pids && !need_memory)
        return 0;
    const char *want = need_pids && need_memory ? "+pids +memory" : need_pids ? "+pids" : "+memory";
    rc = cgfs_write_at(dir, "cgroup.subtree_control", want);
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
    if (!dir || cgfs_read_at(dir, "cgroup.controllers", &have) < 0)
        return false;
    bool yes = cgfs_listed(have, ctl_name[c], " \n");
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
