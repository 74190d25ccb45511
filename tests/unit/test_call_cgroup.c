/*
 * call_cgroup: the probe's description on this machine and on layouts
 * written into files; the forced "unavailable" path; and, as root where the
 * machine has cgroups, a call cgroup that holds a fork bomb to its
 * pids.max whatever sessions it makes, kills all of it (each way of
 * killing the machine offers), holds memory to its limit, and leaves no
 * directory behind.  Waits on cgroup.events and waitpid, bounded by a
 * deadline; no sleep decides anything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/call/call_cgroup.h"
#include "server/call/call_cgroup_fs.h"
#include "server/call/spawn_child.h"
#include "server/call/spawn_filtered.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "tests/support/tmpdir.h"

#define TAIL "; calls are bounded by the PID namespace and RLIMIT_NPROC only"

#define BOMB_FORKS    100
#define BOMB_MAX_PIDS 20
#define KILL_DEADLINE 2000 /* ms for every process of a killed call to be gone */
#define MiB           (1024 * 1024)

/* ---- helpers ---- */

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A probe of mode NONE whose description is "cgroups: unavailable: " why
 * TAIL. */
static void
assert_unavailable(struct call_cgroup_probe *p, const char *why)
{
    assert_non_null(p);
    char *want = NULL;
    assert_true(asprintf(&want, "cgroups: unavailable: %s" TAIL, why) >= 0);
    assert_string_equal(call_cgroup_describe(p), want);
    assert_int_equal(call_cgroup_mode(p), CALL_CGROUP_NONE);
    free(want);
    call_cgroup_probe_free(p);
}

/* Probes the layout given as the texts of /proc/self/cgroup and
 * mountinfo (kept in dir). */
static struct call_cgroup_probe *
probe_texts(const char *dir, const char *cgroup, const char *mountinfo)
{
    char *c = tmpdir_path(dir, "cgroup");
    char *m = tmpdir_path(dir, "mountinfo");
    tmpdir_write_file(c, cgroup, 0644);
    tmpdir_write_file(m, mountinfo, 0644);
    struct call_cgroup_probe *p = call_cgroup_probe_at(c, m);
    free(c);
    free(m);
    return p;
}

/* This machine's probe, with the way of killing forced to kill (NULL: the
 * best); skips the test unless root and the machine has cgroups. */
static struct call_cgroup_probe *
root_probe(const char *kill)
{
    if (geteuid() != 0) {
        print_message("not root: skipped\n");
        skip();
    }
    if (kill)
        assert_int_equal(setenv("EXECGATE_TEST_CGROUP_KILL", kill, 1), 0);
    struct call_cgroup_probe *p = call_cgroup_probe();
    unsetenv("EXECGATE_TEST_CGROUP_KILL");
    assert_non_null(p);
    if (call_cgroup_mode(p) == CALL_CGROUP_NONE) {
        print_message("%s: skipped\n", call_cgroup_describe(p));
        call_cgroup_probe_free(p);
        skip();
    }
    return p;
}

static struct call_cgroup *
new_cgroup(const struct call_cgroup_probe *p, const char *name, uint64_t procs, uint64_t mem)
{
    char *err = NULL;
    struct call_cgroup *cg = call_cgroup_new(p, name, procs, mem, &err);
    if (!cg)
        fail_msg("call_cgroup_new: %s", err ? err : "out of memory");
    assert_null(err);
    return cg;
}

/* Copies of cg's directory paths, to look at after call_cgroup_free. */
static char **
copy_dirs(const struct call_cgroup *cg, size_t *n)
{
    const char *const *dirs = call_cgroup_dirs(cg, n);
    char **copy = calloc(*n + 1, sizeof(*copy));
    assert_non_null(copy);
    for (size_t i = 0; i < *n; i++) {
        copy[i] = strdup(dirs[i]);
        assert_non_null(copy[i]);
    }
    return copy;
}

/* Frees cg and checks every one of its directories went with it. */
static void
free_and_check_removed(struct call_cgroup *cg)
{
    size_t n;
    char **dirs = copy_dirs(cg, &n);
    call_cgroup_free(cg);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        errno = 0;
        if (stat(dirs[i], &st) == 0)
            fail_msg("%s is still there", dirs[i]);
        assert_int_equal(errno, ENOENT);
        free(dirs[i]);
    }
    free(dirs);
}

/* Whether file in some directory of cg reads want. */
static bool
some_dir_reads(const struct call_cgroup *cg, const char *file, const char *want)
{
    size_t n;
    const char *const *dirs = call_cgroup_dirs(cg, &n);
    for (size_t i = 0; i < n; i++) {
        char *path = tmpdir_path(dirs[i], file);
        char *text = tmpdir_read_file(path, NULL);
        free(path);
        bool same = text && strcmp(text, want) == 0;
        free(text);
        if (same)
            return true;
    }
    return false;
}

/* In a forked child (one thread): moves itself into a call cgroup
 * through its join, as the spawn path does where clone3 is refused, or
 * ends with 100. */
static void
join_or_die(const struct call_cgroup_join *j)
{
    if (j->procs >= 0 && write(j->procs, "0", 1) != 1)
        _exit(100);
    for (size_t i = 0; i < j->n_tasks; i++) {
        if (write(j->tasks[i], "0", 1) != 1)
            _exit(100);
    }
}

/* Whether fd is -1 or close-on-exec. */
static bool
none_or_cloexec(int fd)
{
    return fd == -1 || (fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
}

/*
 * Waits until cg is empty, at most KILL_DEADLINE ms, woken by its
 * cgroup.events.  Where one kill is not enough by contract (every way but
 * cgroup.kill), kills again on each turn.
 */
static void
wait_empty(struct call_cgroup *cg, bool kill_again)
{
    int64_t deadline = now_ms() + KILL_DEADLINE;
    int turns = 0;
    for (;;) {
        int empty = call_cgroup_empty(cg);
        assert_true(empty >= 0);
        if (empty)
            break;
        int64_t left = deadline - now_ms();
        if (left <= 0)
            fail_msg("the call's processes were not all gone within %d ms", KILL_DEADLINE);
        if (kill_again)
            assert_int_equal(call_cgroup_kill(cg), 0);
        int fd = call_cgroup_events_fd(cg);
        struct pollfd pfd = {.fd = fd, .events = POLLPRI};
        /* a pass of the other ways may leave a survivor, which no event
         * announces: then the next turn comes soon */
        int wait = kill_again && left > 20 ? 20 : (int)left;
        if (fd >= 0)
            assert_true(poll(&pfd, 1, wait) >= 0 || errno == EINTR);
        else
            poll(NULL, 0, 1);
        turns++;
    }
    print_message("empty after %d turn(s)\n", turns);
}

/* ---- layouts ---- */

static char *scratch;

static int
setup(void **state)
{
    scratch = tmpdir_new("cg");
    /* orphans of the processes under test come here to be reaped */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    unsetenv("EXECGATE_TEST_NO_CGROUP");
    unsetenv("EXECGATE_TEST_CGROUP_KILL");
    (void)state;
    return 0;
}

static int
teardown(void **state)
{
    tmpdir_remove(scratch);
    free(scratch);
    (void)state;
    return 0;
}

static void
test_forced_unavailable(void **state)
{
    assert_int_equal(setenv("EXECGATE_TEST_NO_CGROUP", "1", 1), 0);
    struct call_cgroup_probe *p = call_cgroup_probe();
    unsetenv("EXECGATE_TEST_NO_CGROUP");
    assert_non_null(p);
    assert_string_equal(call_cgroup_describe(p),
                        "cgroups: unavailable: EXECGATE_TEST_NO_CGROUP=1" TAIL);
    /* no call cgroup from it, and the reason says why */
    char *err = NULL;
    assert_null(call_cgroup_new(p, "call 1", 20, 64 * MiB, &err));
    assert_non_null(err);
    assert_string_equal(err, "cgroup for call 1: cgroups: unavailable: "
                             "EXECGATE_TEST_NO_CGROUP=1" TAIL);
    free(err);
    call_cgroup_probe_free(p);
    call_cgroup_probe_free(NULL);
    call_cgroup_free(NULL);
    (void)state;
}

static void
test_unreadable_files(void **state)
{
    assert_unavailable(call_cgroup_probe_at("/nonexistent-execgate/cgroup", "/proc/self/mountinfo"),
                       "/nonexistent-execgate/cgroup: No such file or directory");
    (void)state;
}

static void
test_no_cgroup_mounted(void **state)
{
    assert_unavailable(probe_texts(scratch, "0::/\n",
                                   "22 1 8:1 / / rw,relatime - ext4 /dev/vda rw\n"
                                   "23 22 0:5 / /proc rw - proc proc rw\n"),
                       "no cgroup filesystem is mounted");
    (void)state;
}

static void
test_read_only_v1(void **state)
{
    assert_unavailable(
        probe_texts(scratch, "8:pids:/\n4:memory:/m\n0::/\n",
                    "39 31 0:36 / /x/pids ro,relatime - cgroup cgroup rw,pids\n"
                    "35 31 0:32 / /x/memory rw,relatime - cgroup cgroup rw,memory\n"),
        "the v1 pids hierarchy at /x/pids is mounted read-only");
    (void)state;
}

static void
test_v2_without_controllers(void **state)
{
    /* a v2 tree without v1 hierarchies whose cgroup lacks pids */
    char *root = tmpdir_path(scratch, "v2a");
    char *own = tmpdir_path(root, "svc");
    char *ctrls = tmpdir_path(own, "cgroup.controllers");
    assert_int_equal(mkdir(root, 0755), 0);
    assert_int_equal(mkdir(own, 0755), 0);
    tmpdir_write_file(ctrls, "cpu io memory\n", 0644);
    char *mi = NULL, *why = NULL;
    assert_true(asprintf(&mi, "41 31 0:38 / %s rw,relatime - cgroup2 cgroup2 rw\n", root) >= 0);
    assert_true(asprintf(&why,
                         "no pids controller: no v1 pids hierarchy for the server, and pids is "
                         "not in %s/cgroup.controllers",
                         own) >= 0);
    assert_unavailable(probe_texts(scratch, "0::/svc\n", mi), why);
    free(mi);
    free(why);
    free(ctrls);
    free(own);
    free(root);
    (void)state;
}

/* A v2 mount point with a space (mountinfo writes \040), whose cgroup has
 * pids and memory enabled for children already: the probe goes on to make
 * a cgroup there, which in a plain directory has no control files. */
static void
test_v2_escaped_mount_point(void **state)
{
    char *root = tmpdir_path(scratch, "v2 b");
    assert_int_equal(mkdir(root, 0755), 0);
    char *f = tmpdir_path(root, "cgroup.controllers");
    tmpdir_write_file(f, "cpu memory pids\n", 0644);
    free(f);
    f = tmpdir_path(root, "cgroup.subtree_control");
    tmpdir_write_file(f, "memory pids\n", 0644);
    free(f);
    char *escaped = tmpdir_path(scratch, "v2\\040b");
    char *mi = NULL, *why = NULL;
    assert_true(asprintf(&mi, "41 31 0:38 / %s rw,relatime - cgroup2 cgroup2 rw\n", escaped) >= 0);
    assert_true(asprintf(&why, "a cgroup made in %s has no cgroup.procs", root) >= 0);
    assert_unavailable(probe_texts(scratch, "0::/\n", mi), why);
    /* the trial directory went again */
    char *trial = NULL;
    assert_true(asprintf(&trial, "%s/execgate-%d-probe", root, (int)getpid()) >= 0);
    assert_int_equal(access(trial, F_OK), -1);
    free(trial);
    free(mi);
    free(why);
    free(escaped);
    free(root);
    (void)state;
}

/* A hierarchy mounted from a part of the tree (a namespace's or a bind
 * mount's) that does not hold the server's cgroup. */
static void
test_own_cgroup_outside_mount(void **state)
{
    assert_unavailable(
        probe_texts(scratch, "8:pids:/other\n4:memory:/docker/x\n",
                    "39 31 0:36 /docker/x /x/pids rw - cgroup cgroup rw,pids\n"
                    "35 31 0:32 /docker/x /x/memory rw - cgroup cgroup rw,memory\n"),
        "the server's cgroup /other is outside the part (/docker/x) mounted at /x/pids");
    (void)state;
}

/* ---- this machine ---- */

static void
test_probe_describes_this_machine(void **state)
{
    struct call_cgroup_probe *p = call_cgroup_probe();
    assert_non_null(p);
    const char *d = call_cgroup_describe(p);
    print_message("%s\n", d);
    switch (call_cgroup_mode(p)) {
    case CALL_CGROUP_NONE:
        assert_true(strncmp(d, "cgroups: unavailable: ", 22) == 0);
        assert_non_null(strstr(d, TAIL));
        break;
    case CALL_CGROUP_UNIFIED:
        assert_true(strncmp(d, "cgroups: v2 (", 13) == 0);
        break;
    case CALL_CGROUP_HYBRID:
        assert_true(strncmp(d, "cgroups: hybrid (", 17) == 0);
        break;
    }
    assert_null(strchr(d, '\n'));
    call_cgroup_probe_free(p);
    (void)state;
}

static void
test_forced_kill_unknown(void **state)
{
    if (geteuid() != 0)
        skip();
    assert_int_equal(setenv("EXECGATE_TEST_CGROUP_KILL", "nuke", 1), 0);
    struct call_cgroup_probe *p = call_cgroup_probe();
    unsetenv("EXECGATE_TEST_CGROUP_KILL");
    if (strstr(call_cgroup_describe(p), "EXECGATE_TEST_CGROUP_KILL") == NULL) {
        /* unavailable for another reason first */
        print_message("%s: skipped\n", call_cgroup_describe(p));
        call_cgroup_probe_free(p);
        skip();
    }
    assert_unavailable(p, "EXECGATE_TEST_CGROUP_KILL=nuke: not cgroup.kill, cgroup.freeze, "
                          "freezer or signal");
    (void)state;
}

static void
test_new_and_free(void **state)
{
    struct call_cgroup_probe *p = root_probe(NULL);
    struct call_cgroup *cg = new_cgroup(p, "empty", BOMB_MAX_PIDS, 64 * MiB);
    size_t n;
    const char *const *dirs = call_cgroup_dirs(cg, &n);
    assert_true(n >= 1);
    for (size_t i = 0; i < n; i++) {
        char want[64];
        snprintf(want, sizeof(want), "/execgate-%d-", (int)getpid());
        assert_non_null(strstr(dirs[i], want));
        assert_int_equal(access(dirs[i], F_OK), 0);
    }
    /* one fd per v1 directory; the v2 one and its cgroup.procs where v2 */
    const struct call_cgroup_join *j = call_cgroup_join(cg);
    char *events = tmpdir_path(dirs[0], "cgroup.events"); /* v2 alone has it */
    bool v2 = access(events, F_OK) == 0;
    free(events);
    assert_int_equal(j->into >= 0, v2);
    assert_int_equal(j->procs >= 0, v2);
    assert_int_equal(j->n_tasks, n - (v2 ? 1 : 0));
    assert_true(none_or_cloexec(j->into) && none_or_cloexec(j->procs));
    for (size_t i = 0; i < j->n_tasks; i++)
        assert_true(none_or_cloexec(j->tasks[i]) && j->tasks[i] >= 0);
    assert_true(some_dir_reads(cg, "pids.max", "20\n"));
    assert_int_equal(call_cgroup_empty(cg), 1);
    assert_int_equal(call_cgroup_pids_current(cg), 0);
    /* a second call gets other directories */
    struct call_cgroup *other = new_cgroup(p, "other", 0, 0);
    assert_true(some_dir_reads(other, "pids.max", "max\n"));
    const char *const *other_dirs = call_cgroup_dirs(other, &n);
    assert_string_not_equal(other_dirs[0], dirs[0]);
    free_and_check_removed(other);
    free_and_check_removed(cg);
    call_cgroup_probe_free(p);
    (void)state;
}

/* What the bomb's first process reports once it has tried every fork. */
struct bomb_report {
    int started, eagain, other;
    pid_t pids[BOMB_FORKS];
};

/*
 * The call's first process: joins, leaves the server's session (a new
 * session and process group escape a kill by group, not a cgroup), then
 * tries BOMB_FORKS children, each in a session of its own, running
 * `sleep 30`.
 */
static void __attribute__((noreturn)) bomb(const struct call_cgroup_join *j, int out)
{
    join_or_die(j);
    if (setsid() < 0)
        _exit(101);
    struct bomb_report r;
    memset(&r, 0, sizeof(r));
    for (int i = 0; i < BOMB_FORKS; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            setsid();
            execl("/bin/sleep", "sleep", "30", (char *)NULL);
            _exit(127);
        }
        if (pid > 0)
            r.pids[r.started++] = pid;
        else if (errno == EAGAIN)
            r.eagain++;
        else
            r.other++;
    }
    if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(102);
    for (;;)
        pause();
}

static void
read_report(int fd, struct bomb_report *r)
{
    size_t got = 0;
    while (got < sizeof(*r)) {
        ssize_t n = read(fd, (char *)r + got, sizeof(*r) - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            fail_msg("the bomb ended before its report (read %zd: %s)", n, strerror(errno));
        got += (size_t)n;
    }
}

/* Every process of the bomb is dead and reaped here: the first one as our
 * child, the sleeps as orphans handed to this subreaper. */
static void
reap_bomb(pid_t first, const struct bomb_report *r)
{
    int st = 0;
    assert_int_equal(waitpid(first, &st, 0), first);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    for (int i = 0; i < r->started; i++) {
        assert_int_equal(waitpid(r->pids[i], &st, 0), r->pids[i]);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    }
}

/* The bomb in a call cgroup of p, killed with p's way of killing
 * (kill_again unless that is cgroup.kill, which needs one write). */
static void
run_bomb(struct call_cgroup_probe *p, bool kill_again)
{
    print_message("%s\n", call_cgroup_describe(p));
    struct call_cgroup *cg = new_cgroup(p, "bomb", BOMB_MAX_PIDS, 256 * MiB);
    int report[2];
    assert_int_equal(pipe2(report, O_CLOEXEC), 0);
    const struct call_cgroup_join *j = call_cgroup_join(cg);
    pid_t first = fork();
    assert_true(first >= 0);
    if (first == 0)
        bomb(j, report[1]);
    close(report[1]);
    struct bomb_report r;
    read_report(report[0], &r);
    close(report[0]);
    print_message("forks: %d started, %d EAGAIN, %d other; pids.current %lld, pids.peak %lld\n",
                  r.started, r.eagain, r.other, (long long)call_cgroup_pids_current(cg),
                  (long long)call_cgroup_pids_peak(cg));
    assert_int_equal(r.other, 0);
    assert_true(r.started >= 1 && r.started <= BOMB_MAX_PIDS - 1);
    assert_int_equal(r.started + r.eagain, BOMB_FORKS);
    assert_int_equal(getsid(first), first); /* a session of its own */
    assert_true(call_cgroup_pids_current(cg) <= BOMB_MAX_PIDS);
    int64_t peak = call_cgroup_pids_peak(cg);
    assert_true(peak == -ENOENT || (peak >= 1 && peak <= BOMB_MAX_PIDS));
    assert_int_equal(call_cgroup_kill(cg), 0);
    wait_empty(cg, kill_again);
    reap_bomb(first, &r);
    free_and_check_removed(cg);
    call_cgroup_probe_free(p);
}

static void
run_bomb_killed_by(const char *kill)
{
    /* the best way is cgroup.kill only where the kernel has it */
    run_bomb(root_probe(kill), kill == NULL || strcmp(kill, "cgroup.kill") != 0);
}

/* Copies path into dir/name without the lines that contain drop. */
static char *
copy_without(const char *path, const char *name, const char *drop)
{
    char *text = tmpdir_read_file(path, NULL);
    assert_non_null(text);
    char *out = calloc(strlen(text) + 1, 1);
    assert_non_null(out);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strstr(line, drop)) {
            strcat(out, line);
            strcat(out, "\n");
        }
    }
    char *copy = tmpdir_path(scratch, name);
    tmpdir_write_file(copy, out, 0644);
    free(out);
    free(text);
    return copy;
}

/* This machine seen without its v2 hierarchy: v1 alone, where no
 * cgroup.events tells when a call is empty. */
static void
test_bomb_v1_only(void **state)
{
    call_cgroup_probe_free(root_probe(NULL)); /* skips unless root with cgroups */
    char *cgroup = copy_without("/proc/self/cgroup", "cgroup-v1", "0::");
    char *mountinfo = copy_without("/proc/self/mountinfo", "mountinfo-v1", " - cgroup2 ");
    struct call_cgroup_probe *p = call_cgroup_probe_at(cgroup, mountinfo);
    free(cgroup);
    free(mountinfo);
    assert_non_null(p);
    if (call_cgroup_mode(p) != CALL_CGROUP_HYBRID) {
        print_message("%s: skipped\n", call_cgroup_describe(p));
        call_cgroup_probe_free(p);
        skip();
    }
    struct call_cgroup *cg = new_cgroup(p, "v1", 0, 0);
    assert_int_equal(call_cgroup_events_fd(cg), -1);
    call_cgroup_free(cg);
    run_bomb(p, true);
    (void)state;
}

static void
test_bomb_best_kill(void **state)
{
    run_bomb_killed_by(NULL);
    (void)state;
}

static void
test_bomb_cgroup_kill(void **state)
{
    run_bomb_killed_by("cgroup.kill");
    (void)state;
}

static void
test_bomb_cgroup_freeze(void **state)
{
    run_bomb_killed_by("cgroup.freeze");
    (void)state;
}

static void
test_bomb_v1_freezer(void **state)
{
    run_bomb_killed_by("freezer");
    (void)state;
}

static void
test_bomb_signal_only(void **state)
{
    run_bomb_killed_by("signal");
    (void)state;
}

/* A child of ours that joins cg and waits. */
static pid_t
start_joined(const struct call_cgroup *cg)
{
    const struct call_cgroup_join *j = call_cgroup_join(cg);
    int ready[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        join_or_die(j);
        if (write(ready[1], "j", 1) != 1)
            _exit(102);
        for (;;)
            pause();
    }
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    return child;
}

/* call_cgroup_free on a call whose process still runs: killed, and the
 * directories go. */
static void
test_free_kills_what_is_left(void **state)
{
    struct call_cgroup_probe *p = root_probe(NULL);
    struct call_cgroup *cg = new_cgroup(p, "left", BOMB_MAX_PIDS, 64 * MiB);
    pid_t child = start_joined(cg);
    assert_int_equal(call_cgroup_empty(cg), 0);
    free_and_check_removed(cg);
    int st = 0;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    call_cgroup_probe_free(p);
    (void)state;
}

/* The v1 freezer cgroup of this process, as a directory; NULL without
 * one. */
static char *
own_v1_freezer(void)
{
    char *text = tmpdir_read_file("/proc/self/cgroup", NULL);
    assert_non_null(text);
    char *line = strstr(text, ":freezer:");
    char *dir = NULL;
    if (line && access("/sys/fs/cgroup/freezer/cgroup.procs", F_OK) == 0) {
        line += strlen(":freezer:");
        line[strcspn(line, "\n")] = '\0';
        assert_true(asprintf(&dir, "/sys/fs/cgroup/freezer%s/execgate-test-%d",
                             strcmp(line, "/") == 0 ? "" : line, (int)getpid()) >= 0);
    }
    free(text);
    return dir;
}

static void
write_control(const char *dir, const char *file, const char *text)
{
    char *path = tmpdir_path(dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    free(path);
}

/*
 * A process nothing can kill for now (held by a v1 freezer the test owns,
 * which SIGKILL does not get through): call_cgroup_free gives up within
 * its bound, leaves the directories and logs it.
 */
static void
test_free_gives_up(void **state)
{
    struct call_cgroup_probe *p = root_probe("cgroup.kill");
    char *freezer = own_v1_freezer();
    if (!freezer) {
        call_cgroup_probe_free(p);
        skip();
    }
    assert_int_equal(mkdir(freezer, 0755), 0);
    struct call_cgroup *cg = new_cgroup(p, "stuck", BOMB_MAX_PIDS, 64 * MiB);
    pid_t child = start_joined(cg);
    char pid[24];
    snprintf(pid, sizeof(pid), "%d", (int)child);
    write_control(freezer, "cgroup.procs", pid);
    write_control(freezer, "freezer.state", "FROZEN");
    size_t n;
    char **dirs = copy_dirs(cg, &n);
    int64_t start = now_ms();
    call_cgroup_free(cg);
    int64_t took = now_ms() - start;
    print_message("free gave up after %lld ms\n", (long long)took);
    assert_true(took < 1000);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(access(dirs[i], F_OK), 0);
    /* thawed, the SIGKILL that is pending ends it; then it all goes */
    write_control(freezer, "freezer.state", "THAWED");
    int st = 0;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(rmdir(dirs[i]), 0);
        free(dirs[i]);
    }
    free(dirs);
    assert_int_equal(rmdir(freezer), 0);
    free(freezer);
    call_cgroup_probe_free(p);
    (void)state;
}

struct ended {
    bool done;
    int sig;
};

static void
on_spawned_exit(struct spawn_child *c, int64_t status, int sig)
{
    struct ended *e = spawn_data(c);
    e->done = true;
    e->sig = sig;
    spawn_close(c, NULL);
}

/* How many lines of /proc/pid/cgroup put it in a cgroup named leaf (one
 * per hierarchy it is in). */
static size_t
proc_in(pid_t pid, const char *leaf)
{
    char path[40];
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    char *text = tmpdir_read_file(path, NULL);
    assert_non_null(text);
    size_t count = 0, n = strlen(leaf);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        size_t len = strlen(line);
        count += len > n && line[len - n - 1] == '/' && strcmp(line + len - n, leaf) == 0;
    }
    free(text);
    return count;
}

/* Whether the probe found clone3 into a cgroup refused for a reason
 * other than the kernel's lacking it, forbidding it, or killing what it
 * creates: with Linux 5.7 or later, an EINVAL or E2BIG would be a bad
 * call of ours. */
static bool
refused_for_no_good_reason(const char *refused)
{
    struct utsname u;
    int major = 0, minor = 0;
    if (!refused || uname(&u) < 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
        return false;
    bool has = major > 5 || (major == 5 && minor >= 7);
    return has && !strstr(refused, strerror(ENOSYS)) && !strstr(refused, strerror(EPERM)) &&
           !strstr(refused, "killed at birth");
}

/*
 * spawn_start with a call cgroup of p as its join: the child is in every
 * directory of it when it runs (created in the v2 one by clone3 where
 * there is one, or, where p was probed with EXECGATE_TEST_NO_CLONE3=1,
 * moved there by its own write), and the cgroup's kill ends the whole
 * tree.
 */
static void
spawn_joined(struct call_cgroup_probe *p, bool clone3)
{
    struct call_cgroup *cg = new_cgroup(p, "spawn", BOMB_MAX_PIDS, 64 * MiB);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    static char sh[] = "/bin/sh", c[] = "-c", script[] = "sleep 30 & sleep 30 & wait";
    char *args[] = {sh, c, script, NULL};
    struct spawn_options o = {
        .file = sh, .argv = args, .new_session = true, .join = call_cgroup_join(cg)};
    struct ended e = {0};
    struct spawn_child *child = NULL;
    assert_int_equal(spawn_start(&loop, &o, on_spawned_exit, &e, &child), 0);
    const char *refused = call_cgroup_probe_into_refused(p);
    bool in_place = o.join->into >= 0 && spawn_filtered_creates_in_cgroup();
    print_message("%s: %s\n", call_cgroup_describe(p),
                  in_place             ? "created in its v2 cgroup by clone3"
                  : refused            ? refused
                  : o.join->procs >= 0 ? "no clone3 here: joined by its writes"
                                       : "no v2 directory: joined by its writes");
    if (clone3)
        assert_false(refused_for_no_good_reason(refused));
    else
        assert_string_equal(refused, "EXECGATE_TEST_NO_CLONE3=1");
    assert_int_equal(o.join->into >= 0, o.join->procs >= 0 && !refused);
    size_t n;
    const char *const *dirs = call_cgroup_dirs(cg, &n);
    assert_int_equal(proc_in(spawn_pid(child), strrchr(dirs[0], '/') + 1), n);
    assert_int_equal(call_cgroup_empty(cg), 0);
    assert_int_equal(call_cgroup_kill(cg), 0);
    wait_empty(cg, true);
    while (!e.done)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(e.sig, SIGKILL);
    /* the sleeps, orphaned, came to this subreaper */
    int st = 0;
    while (waitpid(-1, &st, 0) > 0)
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    assert_int_equal(errno, ECHILD);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    free_and_check_removed(cg);
}

static void
test_spawn_child_joins(void **state)
{
    struct call_cgroup_probe *p = root_probe(NULL);
    spawn_joined(p, true);
    call_cgroup_probe_free(p);
    (void)state;
}

static void
test_spawn_child_joins_without_clone3(void **state)
{
    assert_int_equal(setenv("EXECGATE_TEST_NO_CLONE3", "1", 1), 0);
    struct call_cgroup_probe *p = root_probe(NULL);
    unsetenv("EXECGATE_TEST_NO_CLONE3");
    spawn_joined(p, false);
    call_cgroup_probe_free(p);
    (void)state;
}

/* This machine seen as v1 alone (see test_bomb_v1_only): no v2 directory
 * to be created in, the tasks files alone. */
static void
test_spawn_child_joins_v1_only(void **state)
{
    call_cgroup_probe_free(root_probe(NULL)); /* skips unless root with cgroups */
    char *cgroup = copy_without("/proc/self/cgroup", "cgroup-v1", "0::");
    char *mountinfo = copy_without("/proc/self/mountinfo", "mountinfo-v1", " - cgroup2 ");
    struct call_cgroup_probe *p = call_cgroup_probe_at(cgroup, mountinfo);
    free(cgroup);
    free(mountinfo);
    if (call_cgroup_mode(p) == CALL_CGROUP_NONE) {
        print_message("%s: skipped\n", call_cgroup_describe(p));
        call_cgroup_probe_free(p);
        skip();
    }
    spawn_joined(p, true);
    call_cgroup_probe_free(p);
    (void)state;
}

/* A process that touches 200 MiB under a 64 MiB limit does not finish. */
static void
test_memory_limit(void **state)
{
    struct call_cgroup_probe *p = root_probe(NULL);
    struct call_cgroup *cg = new_cgroup(p, "memory", BOMB_MAX_PIDS, 64 * MiB);
    const struct call_cgroup_join *j = call_cgroup_join(cg);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        join_or_die(j);
        size_t size = 200 * MiB;
        volatile char *mem =
            mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
            _exit(3);
        for (size_t off = 0; off < size; off += 4096)
            mem[off] = 1;
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(child, &st, 0), child);
    if (WIFSIGNALED(st))
        print_message("the 200 MiB child: killed by signal %d\n", WTERMSIG(st));
    else
        print_message("the 200 MiB child: exit %d\n", WEXITSTATUS(st));
    assert_true((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) ||
                (WIFEXITED(st) && WEXITSTATUS(st) != 0));
    assert_true(some_dir_reads(cg, "memory.max", "67108864\n") ||
                some_dir_reads(cg, "memory.limit_in_bytes", "67108864\n"));
    assert_int_equal(call_cgroup_empty(cg), 1);
    free_and_check_removed(cg);
    call_cgroup_probe_free(p);
    (void)state;
}

/* /proc/PID/cgroup's lines, split in one place for the probe and the
 * kill's membership check. */
static void
test_proc_line(void **state)
{
    (void)state;
    struct cgfs_proc_line f;
    char v2[] = "0::/user.slice/a:b";
    assert_true(cgfs_proc_line(v2, &f));
    assert_string_equal(f.id, "0");
    assert_string_equal(f.controllers, "");
    assert_string_equal(f.path, "/user.slice/a:b"); /* a ':' in the path stays */
    char v1[] = "4:cpu,cpuacct:/x";
    assert_true(cgfs_proc_line(v1, &f));
    assert_string_equal(f.id, "4");
    assert_string_equal(f.controllers, "cpu,cpuacct");
    assert_string_equal(f.path, "/x");
    char bad[] = "4:cpu";
    assert_false(cgfs_proc_line(bad, &f));
    char empty[] = "";
    assert_false(cgfs_proc_line(empty, &f));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_line),
        cmocka_unit_test(test_forced_unavailable),
        cmocka_unit_test(test_unreadable_files),
        cmocka_unit_test(test_no_cgroup_mounted),
        cmocka_unit_test(test_read_only_v1),
        cmocka_unit_test(test_v2_without_controllers),
        cmocka_unit_test(test_v2_escaped_mount_point),
        cmocka_unit_test(test_own_cgroup_outside_mount),
        cmocka_unit_test(test_probe_describes_this_machine),
        cmocka_unit_test(test_forced_kill_unknown),
        cmocka_unit_test(test_new_and_free),
        cmocka_unit_test(test_bomb_best_kill),
        cmocka_unit_test(test_bomb_cgroup_kill),
        cmocka_unit_test(test_bomb_cgroup_freeze),
        cmocka_unit_test(test_bomb_v1_freezer),
        cmocka_unit_test(test_bomb_signal_only),
        cmocka_unit_test(test_bomb_v1_only),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_free_kills_what_is_left),
        cmocka_unit_test(test_free_gives_up),
        cmocka_unit_test(test_spawn_child_joins),
        cmocka_unit_test(test_spawn_child_joins_without_clone3),
        cmocka_unit_test(test_spawn_child_joins_v1_only),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
