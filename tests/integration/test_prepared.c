/*
 * Prepared calls, through the real server: when a session's call ends,
 * the sandbox of its next call is set up at once and waits for the
 * command (docs/server.md, "Prepared calls").
 *
 * A later call that fits runs there: the client's debug log says
 * "prepared", each such call still has a mount namespace of its own, and
 * what it prints, its exit status and its refusals are those of a server
 * without --prepare.  A call that does not fit discards it and runs as
 * any call: another workdir, a sandbox-state update, a rules reload, and
 * a writable root renamed away and replaced by another directory of the
 * same name (the command must see the new one, never the one the
 * prepared sandbox was set up with).  A prepared sandbox leaves no
 * process when its session ends or when the server is killed.  A login
 * call's next is a login call's sandbox, with the login snapshot in
 * force: it runs the next login call, and a new snapshot discards it;
 * without snapshots its real login shell reads the profile as it is when
 * the command comes.
 *
 * Over HTTP (--listen, a Unix socket): a session's next call runs
 * prepared too; --max-prepared N holds for N+1 sessions (the one that
 * called first loses its sandbox), 0 prepares none, and a waiting one
 * takes no --max-calls slot; a session idle for
 * --prepared-idle-ms loses its sandbox; DELETE and --session-idle-ms
 * leave none of its processes while the server runs on; a login call whose snapshot another
 * session renewed does not run in the sandbox set up with the old one.
 *
 * Variants (meson.build): as the invoking user and, with
 * EXECGATE_TEST_UNPRIVILEGED=1 and started as root, with the server run as
 * a test user (attack_suite.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/attack_suite.h"
#include "tests/support/http_session.h"
#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/proc.h"
#include "tests/support/tmpdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RM_FORBIDDEN                                                                               \
    "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", justification=\"prepared-test: keep "   \
    "files\")\n"
#define TOUCH_FORBIDDEN                                                                            \
    "prefix_rule(pattern=[\"touch\"], decision=\"forbidden\", justification=\"prepared-test: "     \
    "reloaded\")\n"

/* A safety limit for the waits below (a broken server must not hang the
 * suite); nothing is asserted about how long anything takes. */
#define WAIT_MS 20000

/* The most processes of a server's tree the tests below look at. */
#define PREP_PIDS 256

static void
nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void
set_level(struct mcp_world *w, const char *level)
{
    json_t *r = mcp_client_call(w->c, "logging/setLevel", json_pack("{s:s}", "level", level));
    assert_non_null(r);
    assert_non_null(json_object_get(r, "result"));
    json_decref(r);
}

/* What the server said of the call's prepared sandbox. */
struct prep_said {
    bool prepared;  /* it ran in the prepared sandbox */
    bool discarded; /* it discarded one */
    char reason[256];
};

static void
read_prep(const json_t *logs, struct prep_said *s)
{
    memset(s, 0, sizeof(*s));
    size_t i;
    const json_t *p;
    json_array_foreach(logs, i, p)
    {
        const json_t *data = json_object_get(p, "data");
        const char *ev = json_string_value(json_object_get(data, "event"));
        if (!ev)
            continue;
        if (strcmp(ev, "prepared") == 0)
            s->prepared = true;
        if (strcmp(ev, "prepared-discarded") == 0) {
            s->discarded = true;
            const char *why = json_string_value(json_object_get(data, "reason"));
            snprintf(s->reason, sizeof(s->reason), "%s", why ? why : "");
        }
    }
}

/* Runs command in workdir (NULL: the world's) with timeout_ms, a login
 * shell or not, with what the server said of a prepared sandbox in *s.
 * Returns the answer. */
static json_t *
run_args(struct mcp_world *w, const char *command, const char *workdir, int timeout_ms, bool login,
         struct prep_said *s)
{
    struct mcp_answers a = {.logs = json_array()};
    json_t *r = mcp_world_run_args(w,
                                   json_pack("{s:s, s:s, s:b, s:i}", "command", command, "workdir",
                                             workdir ? workdir : w->wd, "login", login,
                                             "timeout_ms", timeout_ms),
                                   &a);
    read_prep(a.logs, s);
    json_decref(a.logs);
    free(a.last_message);
    return r;
}

/* The same, login false. */
static json_t *
run_with(struct mcp_world *w, const char *command, const char *workdir, int timeout_ms,
         struct prep_said *s)
{
    return run_args(w, command, workdir, timeout_ms, false, s);
}

/* As run_with, with a timeout no call here comes near. */
static json_t *
run_in(struct mcp_world *w, const char *command, const char *workdir, struct prep_said *s)
{
    return run_with(w, command, workdir, 30000, s);
}

/* ---- the processes a server has ---- */

static pid_t
parent_of(pid_t pid)
{
    pid_t ppid = -1;
    return proc_state(pid, &ppid) == '?' ? -1 : ppid;
}

/* The descendants of root now, into pids (at most cap); returns how many. */
static size_t
descendants(pid_t root, pid_t *pids, size_t cap)
{
    size_t n = 0;
    bool grew = true;
    while (grew) {
        grew = false;
        DIR *d = opendir("/proc");
        assert_non_null(d);
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char *end;
            long pid = strtol(e->d_name, &end, 10);
            if (*end || pid <= 0)
                continue;
            bool known = false;
            for (size_t i = 0; i < n && !known; i++)
                known = pids[i] == (pid_t)pid;
            if (known)
                continue;
            pid_t pp = parent_of((pid_t)pid);
            bool under = pp == root;
            for (size_t i = 0; i < n && !under; i++)
                under = pids[i] == pp;
            if (under && n < cap) {
                pids[n++] = (pid_t)pid;
                grew = true;
            }
        }
        closedir(d);
    }
    return n;
}

/* Whether pid is the process of a prepared sandbox that waits for its
 * command: fd 10 (the command pipe) is a pipe and it sleeps reading a
 * pipe.  No other process of a call reads that pipe: the command's own
 * processes never have it (close-on-exec), the helper and its init never
 * read it. */
static bool
waiting_for_command(pid_t pid)
{
    char path[64], link[64] = "", wchan[64] = "";
    snprintf(path, sizeof(path), "/proc/%d/fd/10", (int)pid);
    if (readlink(path, link, sizeof(link) - 1) <= 0 || strncmp(link, "pipe:", 5) != 0)
        return false;
    snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    size_t n = fread(wchan, 1, sizeof(wchan) - 1, f);
    fclose(f);
    wchan[n] = '\0';
    return strstr(wchan, "pipe") != NULL;
}

/* Waits (WAIT_MS at most) until server has a sandbox prepared and
 * waiting for its command (no call running).  Fills pids with the
 * server's descendants then and *which with the waiting one; returns how
 * many. */
static size_t
await_prepared(pid_t server, pid_t *pids, size_t cap, pid_t *which)
{
    for (int waited = 0; waited < WAIT_MS; waited += 20) {
        size_t n = descendants(server, pids, cap);
        for (size_t i = 0; i < n; i++) {
            if (waiting_for_command(pids[i])) {
                if (which)
                    *which = pids[i];
                return n;
            }
        }
        nap_ms(20);
    }
    fail_msg("no prepared sandbox appeared after a call ended");
    return 0;
}

/* Whether pid is gone (or a zombie nobody reaps yet: it runs nothing). */
static bool
gone(pid_t pid)
{
    char state = proc_state(pid, NULL);
    return state == '?' || state == 'Z';
}

static void
assert_all_gone(const pid_t *pids, size_t n)
{
    for (int waited = 0; waited < WAIT_MS; waited += 20) {
        size_t left = 0;
        for (size_t i = 0; i < n; i++)
            left += !gone(pids[i]);
        if (left == 0)
            return;
        nap_ms(20);
    }
    for (size_t i = 0; i < n; i++) {
        if (!gone(pids[i]))
            fprintf(stderr, "process %d outlived its server\n", (int)pids[i]);
    }
    fail_msg("a prepared sandbox's processes outlived the server");
}

/* ---- the tests ---- */

/* The test's world (rm forbidden), the server run with prepared calls
 * (the default, said explicitly) or with --no-prepare. */
static struct mcp_world *
prep_world(bool prepare)
{
    static const char *const on[] = {"--prepare", NULL};
    static const char *const off[] = {"--no-prepare", NULL};
    const struct mcp_world_options o = {.extra = attack_suite_extra(), .more = prepare ? on : off};
    return attack_world_start(RM_FORBIDDEN, &o);
}

/* A world with prepared calls whose client gets the server's debug
 * records (what read_prep reads). */
static struct mcp_world *
debug_world(void)
{
    struct mcp_world *w = prep_world(true);
    set_level(w, "debug");
    return w;
}

static const char ns_cmd[] = "readlink /proc/self/ns/mnt";

/* Runs the session's first call: ns_cmd, then command (NULL: none); the
 * mount namespace it ran in into last ("mnt:[N]"). */
static void
first_call(struct mcp_world *w, const char *command, char *last, size_t size)
{
    struct prep_said s;
    char *cmd = mcp_world_fmt("%s%s%s", ns_cmd, command ? "; " : "", command ? command : "");
    json_t *r = run_in(w, cmd, NULL, &s);
    free(cmd);
    assert_false(s.prepared); /* nothing came before it */
    const char *out = mcp_world_output(r);
    size_t n = strcspn(out, "\n");
    assert_true(n > 0 && n < size);
    memcpy(last, out, n);
    last[n] = '\0';
    json_decref(r);
}

/* The session's first call (first_call, its namespace not kept), then
 * the sandbox it leaves prepared, waiting for its command: the server's
 * descendants then into pids (PREP_PIDS at most), the waiting one in
 * *which (NULL: not wanted); returns how many. */
static size_t
first_call_prepared(struct mcp_world *w, const char *command, pid_t *pids, pid_t *which)
{
    char last[128];
    first_call(w, command, last, sizeof(last));
    return await_prepared(mcp_client_pid(w->c), pids, PREP_PIDS, which);
}

/* The mount namespace of the sandbox prepared for server's next call:
 * held open in *fd (so that its number is given to no other
 * while the test looks), its name in ns ("mnt:[N]\n", as readlink prints
 * it). */
static void
hold_prepared_ns(pid_t server, int *fd, char *ns, size_t size)
{
    for (int tries = 0; tries < 100; tries++) {
        pid_t pids[PREP_PIDS], which = -1;
        await_prepared(server, pids, PREP_PIDS, &which);
        char path[64], self[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)which);
        *fd = open(path, O_RDONLY | O_CLOEXEC);
        if (*fd < 0)
            continue; /* gone meanwhile: look again */
        snprintf(self, sizeof(self), "/proc/self/fd/%d", *fd);
        ssize_t k = readlink(self, ns, size - 2);
        assert_true(k > 0);
        ns[k] = '\n';
        ns[k + 1] = '\0';
        return;
    }
    fail_msg("no process of the prepared sandbox");
}

/* Holds the namespace of w's prepared sandbox (hold_prepared_ns: *fd,
 * ns without its newline), then runs ns_cmd: the call runs prepared, in
 * that namespace. */
static void
run_in_held_ns(struct mcp_world *w, int *fd, char *ns, size_t size)
{
    hold_prepared_ns(mcp_client_pid(w->c), fd, ns, size);
    struct prep_said s;
    json_t *r = run_in(w, ns_cmd, NULL, &s);
    assert_true(s.prepared);
    assert_string_equal(mcp_world_output(r), ns);
    ns[strcspn(ns, "\n")] = '\0';
    json_decref(r);
}

/* A session's later calls run prepared: in the sandbox set up before
 * they came (its mount namespace, held by the test from then on), each
 * in one of its own. */
static void
test_next_call_prepared(void **state)
{
    (void)state;
    struct mcp_world *w = debug_world();
    char ns1[128];
    first_call(w, NULL, ns1, sizeof(ns1));
    int fd2, fd3;
    char ns2[128], ns3[128];
    run_in_held_ns(w, &fd2, ns2, sizeof(ns2));
    run_in_held_ns(w, &fd3, ns3, sizeof(ns3));
    assert_string_not_equal(ns2, ns3); /* both held: two namespaces */
    close(fd2);
    close(fd3);
    attack_world_end(w);
}

/* Commands whose result must not depend on where their sandbox was set
 * up: the shell's argv, quoting, exit status, a refusal, stdin, the
 * workdir, what may be written. */
static const char *const same_cmds[] = {
    "printf '[%s]' \"$0\" \"$#\" \"$-\"; echo",
    "printf '%s|' 'a  b' \"q\\\"x\" $'tab\\there'; echo",
    "echo out; echo err >&2; exit 7",
    "rm -f keep; echo \"status=$?\"; ls keep",
    "pwd; cat; echo \"stdin=$?\"",
    "touch made && ls made; touch /etc/nope 2>&1 | sed 's/.*: //'",
    "kill -9 $$",
};

/* text with each occurrence of dir replaced by "WD" (the worlds'
 * directories differ). */
static char *
without(const char *text, const char *dir)
{
    size_t len = strlen(dir);
    char *out = calloc(strlen(text) + 1, 1);
    assert_non_null(out);
    char *o = out;
    for (const char *t = text; *t;) {
        if (strncmp(t, dir, len) == 0) {
            memcpy(o, "WD", 2);
            o += 2;
            t += len;
        } else {
            *o++ = *t++;
        }
    }
    return out;
}

/* The results of same_cmds in a world, prepared or not (each after a
 * first call, so that a prepared one is there). */
static json_t *
results(bool prepare)
{
    struct mcp_world *w = prep_world(prepare);
    char *keep = tmpdir_path(w->wd, "keep");
    tmpdir_write_file(keep, "x", 0644);
    free(keep);
    attack_own(w->wd);
    set_level(w, "debug");
    struct prep_said s;
    json_decref(run_in(w, "true", NULL, &s));
    json_t *all = json_array();
    for (size_t i = 0; i < sizeof(same_cmds) / sizeof(same_cmds[0]); i++) {
        json_t *r = run_in(w, same_cmds[i], NULL, &s);
        assert_true(s.prepared == prepare);
        assert_false(s.discarded);
        char *out = without(mcp_world_output(r), w->wd);
        json_array_append_new(all,
                              json_pack("{s:i, s:s}", "exit", mcp_world_exit(r), "output", out));
        free(out);
        json_decref(r);
    }
    attack_world_end(w);
    return all;
}

static void
test_same_as_unprepared(void **state)
{
    (void)state;
    json_t *plain = results(false);
    json_t *prepared = results(true);
    size_t i;
    json_t *p;
    json_array_foreach(plain, i, p)
    {
        json_t *q = json_array_get(prepared, i);
        if (!json_equal(p, q)) {
            char *a = json_dumps(p, 0), *b = json_dumps(q, 0);
            fprintf(stderr, "%s\nunprepared: %s\nprepared:   %s\n", same_cmds[i], a, b);
            free(a);
            free(b);
        }
        assert_true(json_equal(p, q));
    }
    /* the refusal is the rule's, and the command ran as the shell's $0 */
    mcp_world_assert_contains(
        json_string_value(json_object_get(json_array_get(prepared, 3), "output")),
        "prepared-test: keep files");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(prepared, 2), "exit")), 7);
    json_decref(plain);
    json_decref(prepared);
}

/* A prepared call's clock starts when its command is sent, not when its
 * sandbox was set up: after the sandbox waited longer than the call's
 * whole timeout, the call still has all of it. */
static void
test_clock_starts_at_the_command(void **state)
{
    (void)state;
    struct mcp_world *w = debug_world();
    pid_t pids[PREP_PIDS];
    first_call_prepared(w, NULL, pids, NULL);
    nap_ms(4000); /* the sandbox waits past the next call's timeout (3 s) */
    struct prep_said s;
    json_t *r = run_with(w, "sleep 0.2; echo done", NULL, 3000, &s);
    assert_true(s.prepared);
    const json_t *sc = mcp_world_structured(r);
    assert_false(json_is_true(json_object_get(sc, "timed_out")));
    assert_string_equal(mcp_world_output(r), "done\n");
    json_decref(r);
    attack_world_end(w);
}

/* Another workdir: the prepared sandbox (the last call's workdir) goes. */
static void
test_other_workdir_discards(void **state)
{
    (void)state;
    struct mcp_world *w = debug_world();
    tmpdir_make_dir(w->wd, "sub");
    attack_own(w->wd);
    struct prep_said s;
    json_decref(run_in(w, "true", NULL, &s));
    char *sub = tmpdir_path(w->wd, "sub");
    json_t *r = run_in(w, "pwd", sub, &s);
    assert_false(s.prepared);
    assert_true(s.discarded);
    char *want = mcp_world_fmt("%s\n", sub);
    assert_string_equal(mcp_world_output(r), want);
    free(want);
    json_decref(r);
    /* the next call in sub runs in the sandbox prepared for sub */
    r = run_in(w, "pwd", sub, &s);
    assert_true(s.prepared);
    json_decref(r);
    free(sub);
    attack_world_end(w);
}

/* A sandbox-state update discards it at once: the next call finds none. */
static void
test_sandbox_update_discards(void **state)
{
    (void)state;
    struct mcp_world *w = debug_world();
    struct prep_said s;
    pid_t pids[PREP_PIDS];
    first_call_prepared(w, NULL, pids, NULL);
    json_t *a = mcp_client_call(
        w->c, "codex/sandbox-state/update",
        json_pack("{s:{s:s}, s:s}", "sandboxPolicy", "type", "read-only", "sandboxCwd", w->wd));
    assert_non_null(json_object_get(a, "result"));
    json_decref(a);
    json_t *r = run_in(w, "touch x 2>/dev/null; echo \"status=$?\"", NULL, &s);
    assert_false(s.prepared);
    mcp_world_assert_contains(mcp_world_output(r), "status=1\n"); /* read-only now */
    assert_false(mcp_world_exists(w->wd, "x"));
    json_decref(r);
    attack_world_end(w);
}

/* Waits for the record of a rules reload on the client's log. */
static void
await_reload(struct mcp_world *w)
{
    for (int i = 0; i < 1000; i++) {
        json_t *m = mcp_client_notification(w->c, "notifications/message", WAIT_MS);
        assert_non_null(m);
        const char *ev = json_string_value(
            json_object_get(json_object_get(json_object_get(m, "params"), "data"), "event"));
        bool reloaded = ev && strcmp(ev, "rules-reloaded") == 0;
        json_decref(m);
        if (reloaded)
            return;
    }
    fail_msg("no rules-reloaded record");
}

/* A rules reload: the prepared sandbox was made under the old rules; the
 * call runs under the new ones. */
static void
test_rules_reload_discards(void **state)
{
    (void)state;
    struct mcp_world *w = debug_world();
    struct prep_said s;
    json_decref(run_in(w, "touch before && echo made", NULL, &s));
    assert_true(mcp_world_exists(w->wd, "before"));
    mcp_world_rules(w, RM_FORBIDDEN TOUCH_FORBIDDEN);
    assert_int_equal(kill(mcp_client_pid(w->c), SIGHUP), 0);
    await_reload(w);
    json_t *r = run_in(w, "touch after; echo \"status=$?\"", NULL, &s);
    assert_false(s.prepared);
    assert_true(s.discarded);
    assert_string_equal(s.reason, "the rules were reloaded");
    mcp_world_assert_contains(mcp_world_output(r), "prepared-test: reloaded");
    assert_false(mcp_world_exists(w->wd, "after"));
    json_decref(r);
    attack_world_end(w);
}

/* The writable root renamed away and another directory put in its place
 * between two calls: the prepared sandbox was set up with the old one, the
 * call must run with the new one (what an unprepared call would get). */
static void
test_swapped_root_discards(void **state)
{
    (void)state;
    struct mcp_world *w = debug_world();
    struct prep_said s;
    pid_t pids[PREP_PIDS];
    first_call_prepared(w, "echo old > which", pids, NULL);
    char *old = mcp_world_fmt("%s.old", w->wd);
    assert_int_equal(rename(w->wd, old), 0);
    assert_int_equal(mkdir(w->wd, 0755), 0);
    char *which = tmpdir_path(w->wd, "which");
    tmpdir_write_file(which, "new\n", 0644);
    free(which);
    attack_own(w->wd);
    json_t *r = run_in(w, "cat which; echo written > out; echo \"status=$?\"", NULL, &s);
    assert_false(s.prepared);
    assert_true(s.discarded);
    mcp_world_assert_contains(s.reason, "names another file now");
    assert_string_equal(mcp_world_output(r), "new\nstatus=0\n");
    assert_true(mcp_world_exists(w->wd, "out"));
    assert_false(mcp_world_exists(old, "out"));
    json_decref(r);
    tmpdir_remove(old);
    free(old);
    attack_world_end(w);
}

/* The variant on a repo root's .git, which every sandbox keeps read-only:
 * replaced by another directory between two calls (the prepared sandbox
 * kept the old one read-only, the new one would be under a writable
 * root), or made where there was none.  Either way the call must find the
 * .git there now read-only, as an unprepared call would. */
static void
swap_git(bool existed)
{
    struct mcp_world *w = debug_world();
    if (existed)
        tmpdir_make_dir(w->wd, ".git");
    attack_own(w->wd);
    struct prep_said s;
    pid_t pids[PREP_PIDS];
    first_call_prepared(w, NULL, pids, NULL);
    char *git = tmpdir_path(w->wd, ".git");
    char *away = tmpdir_path(w->wd, "git.away");
    if (existed)
        assert_int_equal(rename(git, away), 0);
    assert_int_equal(mkdir(git, 0755), 0);
    attack_own(w->wd);
    json_t *r = run_in(w, "touch .git/planted 2>/dev/null; echo \"status=$?\"", NULL, &s);
    assert_false(s.prepared);
    assert_true(s.discarded);
    mcp_world_assert_contains(mcp_world_output(r), "status=1\n");
    assert_false(mcp_world_exists(git, "planted"));
    json_decref(r);
    free(git);
    free(away);
    attack_world_end(w);
}

static void
test_swapped_git_discards(void **state)
{
    (void)state;
    swap_git(true);
}

static void
test_new_git_discards(void **state)
{
    (void)state;
    swap_git(false);
}

/* The cgroup v2 directory pid is in ("0::" of /proc/PID/cgroup, under
 * the cgroup2 mount), malloc'd; NULL when there is none to read. */
static char *
cgroup_dir(pid_t pid)
{
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    FILE *f = fopen(path, "re");
    char *dir = NULL;
    while (f && !dir && fgets(line, sizeof(line), f)) {
        if (strncmp(line, "0::", 3) != 0)
            continue;
        line[strcspn(line, "\n")] = '\0';
        const char *const mounts[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
        for (size_t i = 0; i < 2 && !dir; i++) {
            char *d = mcp_world_fmt("%s%s", mounts[i], line + 3);
            struct stat st;
            if (stat(d, &st) == 0 && S_ISDIR(st.st_mode) && strcmp(line + 3, "/") != 0)
                dir = d;
            else
                free(d);
        }
    }
    if (f)
        fclose(f);
    return dir;
}

/* Whether the cgroup dir is gone or holds no process. */
static bool
cgroup_empty(const char *dir)
{
    char *procs = mcp_world_fmt("%s/cgroup.procs", dir);
    FILE *f = fopen(procs, "re");
    free(procs);
    if (!f)
        return true;
    int c = fgetc(f);
    fclose(f);
    return c == EOF;
}

/* A call's _meta sandbox state, as Codex 0.169 sends it: a managed
 * workspace-write profile in the world's workdir with one deny entry,
 * deny (absolute). */
static json_t *
deny_state(const struct mcp_world *w, const char *deny)
{
    json_t *entries = json_pack(
        "[{s:{s:s, s:{s:s}}, s:s}, {s:{s:s, s:s}, s:s}, {s:{s:s, s:s}, s:s}]", "path", "type",
        "special", "value", "kind", "root", "access", "read", "path", "type", "path", "path", w->wd,
        "access", "write", "path", "type", "path", "path", deny, "access", "deny");
    json_t *profile = json_pack("{s:s, s:{s:s, s:o}, s:s}", "type", "managed", "file_system",
                                "type", "restricted", "entries", entries, "network", "restricted");
    char *url = mcp_world_fmt("file://%s", w->wd);
    json_t *st = json_pack("{s:o, s:s, s:s}", "permissionProfile", profile, "codexLinuxSandboxExe",
                           "/usr/lib/node_modules/@openai/codex/bin/codex", "sandboxCwd", url);
    free(url);
    return st;
}

/* command under deny_state (debug records into *s). */
static json_t *
run_denying(struct mcp_world *w, const char *command, const char *deny, struct prep_said *s)
{
    json_t *meta = json_pack("{s:o}", "codex/sandbox-state", deny_state(w, deny));
    json_t *params =
        json_pack("{s:o, s:s, s:{s:s, s:s, s:b, s:i}}", "_meta", meta, "name", "shell", "arguments",
                  "command", command, "workdir", w->wd, "login", 0, "timeout_ms", 30000);
    struct mcp_answers a = {.logs = json_array()};
    long long id = mcp_client_send_request(w->c, "tools/call", params);
    json_t *jid = json_integer(id);
    json_t *r = NULL;
    while (!r) {
        json_t *m = mcp_client_next(w->c, MCP_CLIENT_WAIT_MS);
        assert_non_null(m);
        const char *method = json_string_value(json_object_get(m, "method"));
        if (method && strcmp(method, "notifications/message") == 0)
            json_array_append(a.logs, json_object_get(m, "params"));
        if (json_equal(json_object_get(m, "id"), jid))
            r = json_incref(m);
        json_decref(m);
    }
    json_decref(jid);
    read_prep(a.logs, s);
    json_decref(a.logs);
    return r;
}

/* A path the call's profile denies, replaced between two calls: the
 * prepared sandbox covered the file it named then; the call must not read
 * the file that bears the name now. */
static void
test_swapped_denied_file_discards(void **state)
{
    (void)state;
    struct mcp_world *w = debug_world();
    char *key = tmpdir_path(w->wd, "secret.key");
    char *old = tmpdir_path(w->wd, "old.key");
    tmpdir_write_file(key, "OLD-SECRET\n", 0644);
    attack_own(w->wd);
    struct prep_said s;
    json_t *r = run_denying(w, "cat secret.key 2>/dev/null; echo end", key, &s);
    mcp_world_assert_contains(mcp_world_output(r), "end\n");
    assert_null(strstr(mcp_world_output(r), "SECRET"));
    json_decref(r);
    pid_t pids[PREP_PIDS];
    await_prepared(mcp_client_pid(w->c), pids, PREP_PIDS, NULL);
    assert_int_equal(rename(key, old), 0);
    tmpdir_write_file(key, "NEW-SECRET\n", 0644);
    attack_own(w->wd);
    r = run_denying(w, "cat secret.key 2>/dev/null; echo end", key, &s);
    if (strstr(mcp_world_output(r), "SECRET"))
        fail_msg("the call read the denied file: %s", mcp_world_output(r));
    assert_false(s.prepared);
    assert_true(s.discarded);
    json_decref(r);
    free(key);
    free(old);
    attack_world_end(w);
}

/* The session ends (stdin's end) with a sandbox prepared: the server
 * exits cleanly, every process it had is gone, and the prepared
 * sandbox's cgroup (where the machine gives calls one of their own: not
 * the server's) holds nothing. */
static void
test_session_end_leaves_nothing(void **state)
{
    (void)state;
    struct mcp_world *w = prep_world(true);
    pid_t pids[PREP_PIDS], which = -1;
    size_t n = first_call_prepared(w, NULL, pids, &which);
    char *mine = cgroup_dir(mcp_client_pid(w->c));
    char *its = cgroup_dir(which);
    bool own = its && (!mine || strcmp(mine, its) != 0);
    if (own)
        assert_false(cgroup_empty(its));
    attack_world_end(w); /* asserts a clean exit */
    assert_all_gone(pids, n);
    if (own)
        assert_true(cgroup_empty(its));
    else
        fprintf(stderr, "no cgroup of the call's own here: its processes checked alone\n");
    free(mine);
    free(its);
}

/* The server killed outright with a sandbox prepared: nothing of it
 * stays. */
static void
test_server_killed_leaves_nothing(void **state)
{
    (void)state;
    struct mcp_world *w = prep_world(true);
    pid_t server = mcp_client_pid(w->c);
    pid_t pids[PREP_PIDS];
    size_t n = first_call_prepared(w, NULL, pids, NULL);
    assert_int_equal(kill(server, SIGKILL), 0);
    assert_true(mcp_client_wait_exit(w->c, WAIT_MS) != -1);
    assert_all_gone(pids, n);
    /* the teardown frees the world of the killed server */
}

/* ---- HTTP sessions (--listen) ---- */

/* The HTTP server of the running test (one at a time): its pid (0: none),
 * its directory (a scratch one: rules, the Unix socket, its log) and the
 * calls' workdir. */
static struct {
    pid_t pid;
    char *dir, *sock, *log, *wd;
} http;

static char *
read_text(const char *path)
{
    size_t len = 0;
    char *text = tmpdir_read_file(path, &len);
    return text ? text : strdup("");
}

/* Starts the server on a Unix socket with --log-level debug and more
 * (NULL-terminated), rm forbidden, HOME home (NULL: this one's); waits
 * until it listens. */
static void
http_start_home(const char *const *more, const char *home)
{
    http.dir = attack_scratch(NULL, "prepared-http");
    tmpdir_make_dir(http.dir, "rules");
    tmpdir_make_dir(http.dir, "wd");
    char *rules = tmpdir_path(http.dir, "rules");
    char *file = tmpdir_path(rules, "test.rules");
    tmpdir_write_file(file, RM_FORBIDDEN, 0644);
    free(file);
    http.wd = tmpdir_path(http.dir, "wd");
    http.sock = tmpdir_path(http.dir, "mcp.sock");
    http.log = tmpdir_path(http.dir, "server.log");
    attack_own(http.dir);
    char *listen = mcp_world_fmt("unix:%s", http.sock);
    const char *argv[32] = {attack_suite_server(), "--rules", rules, "--listen", listen,
                            "--log-level",         "debug"};
    size_t n = 7;
    if (attack_suite_extra())
        argv[n++] = attack_suite_extra();
    const char *shell = getenv("EXECGATE_TEST_SHELL");
    if (shell && *shell) {
        argv[n++] = "--shell";
        argv[n++] = shell;
    }
    for (size_t i = 0; more && more[i] && n < 30; i++)
        argv[n++] = more[i];
    argv[n] = NULL;
    const char *full[48];
    attack_as_server_user(full, 48, argv);
    http.pid = fork();
    assert_true(http.pid >= 0);
    if (http.pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        int log = open(http.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (null < 0 || log < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(log, 2) < 0 ||
            (home && setenv("HOME", home, 1) != 0))
            _exit(127);
        execv(full[0], (char *const *)full);
        _exit(127);
    }
    free(listen);
    free(rules);
    for (int waited = 0;; waited += 10) {
        char *text = read_text(http.log);
        bool ready = strstr(text, "listening on unix:") != NULL;
        int status;
        if (!ready && waitpid(http.pid, &status, WNOHANG) == http.pid) {
            http.pid = 0;
            fail_msg("the server exited before it listened: %s", text);
        }
        free(text);
        if (ready)
            return;
        if (waited > WAIT_MS)
            fail_msg("the server did not listen");
        nap_ms(10);
    }
}

static void
http_start(const char *const *more)
{
    http_start_home(more, NULL);
}

static void
http_free(void)
{
    free(http.sock);
    free(http.log);
    free(http.wd);
    memset(&http, 0, sizeof(http));
}

/* SIGTERM: the server must exit 0 (no leak, every prepared sandbox
 * ended). */
static void
http_stop(void)
{
    assert_int_equal(kill(http.pid, SIGTERM), 0);
    int status = 0;
    assert_int_equal(waitpid(http.pid, &status, 0), http.pid);
    http.pid = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char *log = read_text(http.log);
        fail_msg("the server's end: status %d; its log:\n%s", status, log);
    }
    http_free();
}

/* cmocka teardown: kills a server a failed assertion left running. */
static int
http_teardown(void **state)
{
    if (http.pid > 0) {
        kill(http.pid, SIGKILL);
        waitpid(http.pid, NULL, 0);
    }
    http_free();
    return attack_teardown(state);
}

/* How often needle is in the server's log. */
static int
log_count(const char *needle)
{
    char *text = read_text(http.log);
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    free(text);
    return n;
}

/* Waits (WAIT_MS at most) until needle is in the server's log n times:
 * the log line is written as the call's answer goes, not before it. */
static void
await_log_count(const char *needle, int n)
{
    int seen = 0;
    for (int waited = 0; waited < WAIT_MS; waited += 20) {
        seen = log_count(needle);
        if (seen >= n)
            break;
        nap_ms(20);
    }
    assert_int_equal(seen, n);
}

/* A session on a connection of its own: initialized, under
 * workspace-write in the workdir. */
static void
hsess_open(struct http_session *se)
{
    http_session_open(se, http_session_connect_unix(http.sock), NULL,
                      "{\"type\":\"workspace-write\",\"network_access\":false}", http.wd);
}

/* A shell call in the workdir (login as said); its output. */
static char *
hsess_shell(struct http_session *se, const char *command, bool login)
{
    const struct http_session_call call = {
        .command = command, .workdir = http.wd, .login = login, .timeout_ms = 30000};
    return http_session_call(se, &call);
}

/* The server's prepared sandboxes waiting for their command now: their
 * waiting processes into pids (at most cap); returns how many. */
static size_t
waiting_now(pid_t server, pid_t *pids, size_t cap)
{
    pid_t all[256];
    size_t n = descendants(server, all, 256), k = 0;
    for (size_t i = 0; i < n; i++) {
        if (waiting_for_command(all[i]) && k < cap)
            pids[k++] = all[i];
    }
    return k;
}

static bool
in(pid_t pid, const pid_t *pids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (pids[i] == pid)
            return true;
    }
    return false;
}

/* Waits (WAIT_MS at most) until the server's waiting sandboxes are
 * exactly want (n of them, in any order); fails saying what it saw. */
static void
await_waiting(const pid_t *want, size_t n)
{
    pid_t now[16];
    size_t k = 0;
    for (int waited = 0; waited < WAIT_MS; waited += 20) {
        k = waiting_now(http.pid, now, 16);
        bool same = k == n;
        for (size_t i = 0; i < n && same; i++)
            same = in(want[i], now, k);
        if (same)
            return;
        nap_ms(20);
    }
    fail_msg("%zu prepared sandbox(es) wait, %zu expected", k, n);
}

/* The waiting sandbox that came after those in before (nb of them): the
 * one a session's call prepared as it ended.  Waits WAIT_MS at most. */
static pid_t
await_new_waiting(const pid_t *before, size_t nb)
{
    for (int waited = 0; waited < WAIT_MS; waited += 20) {
        pid_t now[16];
        size_t k = waiting_now(http.pid, now, 16);
        for (size_t i = 0; i < k; i++) {
            if (!in(now[i], before, nb))
                return now[i];
        }
        nap_ms(20);
    }
    fail_msg("no new prepared sandbox appeared");
    return -1;
}

/* The mount namespace of pid, held open in the fd returned (so that its
 * number is given to no other namespace while the test compares it), its
 * name in ns ("mnt:[N]\n", as the command prints it). */
static int
hold_ns(pid_t pid, char *ns, size_t size)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t k = readlink(path, ns, size - 2);
    assert_true(k > 0);
    ns[k] = '\n';
    ns[k + 1] = '\0';
    return fd;
}

/* An HTTP session's next call runs in the sandbox prepared when its last
 * ended (its mount namespace), as a stdio session's does. */
static void
test_http_next_call_prepared(void **state)
{
    (void)state;
    http_start(NULL);
    struct http_session se;
    hsess_open(&se);
    free(hsess_shell(&se, "true", false));
    pid_t which = await_new_waiting(NULL, 0);
    char ns[128];
    int held = hold_ns(which, ns, sizeof(ns));
    char *out = hsess_shell(&se, ns_cmd, false);
    assert_string_equal(out, ns);
    free(out);
    close(held);
    assert_int_equal(log_count("runs in its prepared sandbox"), 1);
    http_session_close(&se);
    http_stop();
}

/* --max-prepared 2, three sessions calling one after the other: two
 * sandboxes wait, those of the first two sessions; the third's call end
 * sets up none (none is discarded to make room).  The third's next call
 * runs unprepared and still leaves none; the first's runs in its own and
 * sets up its next, the cap still held. */
static void
test_http_cap(void **state)
{
    (void)state;
    static const char *const more[] = {"--max-prepared", "2", NULL};
    static const char full[] = "HTTP sessions' wait already (--max-prepared)";
    http_start(more);
    struct http_session s[3];
    pid_t w[3];
    for (size_t i = 0; i < 2; i++) {
        hsess_open(&s[i]);
        free(hsess_shell(&s[i], "true", false));
        w[i] = await_new_waiting(w, i);
    }
    hsess_open(&s[2]);
    free(hsess_shell(&s[2], "true", false));
    await_log_count(full, 1);
    await_waiting(w, 2);
    /* the third session's call finds none of its own: it runs in a
     * namespace of its own, and the others' sandboxes stay */
    char ns0[128], ns1[128];
    int held0 = hold_ns(w[0], ns0, sizeof(ns0));
    int held1 = hold_ns(w[1], ns1, sizeof(ns1));
    char *out = hsess_shell(&s[2], ns_cmd, false);
    assert_string_not_equal(out, ns0);
    assert_string_not_equal(out, ns1);
    free(out);
    await_log_count(full, 2);
    await_waiting(w, 2);
    assert_int_equal(log_count("runs in its prepared sandbox"), 0);
    /* the first session's call runs in the sandbox it was given */
    out = hsess_shell(&s[0], ns_cmd, false);
    assert_string_equal(out, ns0);
    free(out);
    close(held0);
    close(held1);
    assert_int_equal(log_count("runs in its prepared sandbox"), 1);
    w[2] = await_new_waiting(w, 2);
    pid_t want[] = {w[1], w[2]};
    await_waiting(want, 2);
    for (size_t i = 0; i < 3; i++)
        http_session_close(&s[i]);
    http_stop();
}

/* A prepared sandbox takes no --max-calls slot: with --max-calls 1 and
 * one session's sandbox waiting, another session's call runs (it would
 * wait forever for a slot the sandbox held). */
static void
test_http_prepared_takes_no_slot(void **state)
{
    (void)state;
    static const char *const more[] = {"--max-calls", "1", NULL};
    http_start(more);
    struct http_session a, b;
    hsess_open(&a);
    hsess_open(&b);
    free(hsess_shell(&a, "true", false));
    pid_t wa = await_new_waiting(NULL, 0);
    char *out = hsess_shell(&b, "echo ran", false);
    assert_string_equal(out, "ran\n");
    free(out);
    pid_t want[] = {wa, await_new_waiting(&wa, 1)};
    await_waiting(want, 2);
    http_session_close(&a);
    http_session_close(&b);
    http_stop();
}

/* --max-prepared 0: no HTTP session gets one. */
static void
test_http_none(void **state)
{
    (void)state;
    static const char *const more[] = {"--max-prepared", "0", NULL};
    http_start(more);
    struct http_session se;
    hsess_open(&se);
    free(hsess_shell(&se, "true", false));
    free(hsess_shell(&se, "true", false));
    pid_t none[1];
    assert_int_equal(waiting_now(http.pid, none, 1), 0);
    assert_int_equal(log_count("runs in its prepared sandbox"), 0);
    http_session_close(&se);
    http_stop();
}

/* A session whose prepared sandbox nobody takes for --prepared-idle-ms
 * loses it: the server then holds none; the session still works. */
static void
test_http_idle_drops(void **state)
{
    (void)state;
    static const char *const more[] = {"--prepared-idle-ms", "300", NULL};
    http_start(more);
    struct http_session se;
    hsess_open(&se);
    free(hsess_shell(&se, "true", false));
    for (int waited = 0; log_count("(--prepared-idle-ms)") == 0; waited += 20) {
        if (waited > WAIT_MS)
            fail_msg("the idle session's prepared sandbox was never discarded");
        nap_ms(20);
    }
    await_waiting(NULL, 0);
    char *out = hsess_shell(&se, "echo still", false);
    assert_string_equal(out, "still\n");
    free(out);
    http_session_close(&se);
    http_stop();
}

/* The processes of the prepared sandbox whose waiting process is pid:
 * it and its ancestors below the server, into chain; returns how many. */
static size_t
sandbox_chain(pid_t server, pid_t pid, pid_t *chain, size_t cap)
{
    size_t n = 0;
    while (pid > 1 && pid != server && n < cap) {
        chain[n++] = pid;
        pid = parent_of(pid);
    }
    assert_int_equal(pid, server);
    return n;
}

/* A session ends with a sandbox prepared, by DELETE or, unused for
 * --session-idle-ms (the sandbox's own idle limit far longer), by the
 * server: every process of the sandbox goes, while the server runs on. */
static void
session_end_leaves_nothing(bool delete)
{
    static const char *const idle[] = {"--session-idle-ms", "2000", "--prepared-idle-ms", "3600000",
                                       NULL};
    http_start(delete ? NULL : idle);
    struct http_session se;
    hsess_open(&se);
    free(hsess_shell(&se, "true", false));
    pid_t which = await_new_waiting(NULL, 0);
    pid_t chain[8];
    size_t n = sandbox_chain(http.pid, which, chain, 8);
    assert_true(n >= 2); /* the helper, ..., the process that waits */
    if (delete)
        assert_int_equal(http_session_delete(&se), 200);
    assert_all_gone(chain, n);
    if (!delete)
        assert_true(log_count("idle (--session-idle-ms)") > 0);
    assert_true(kill(http.pid, 0) == 0);
    http_session_close(&se);
    http_stop();
}

static void
test_http_delete_leaves_nothing(void **state)
{
    (void)state;
    session_end_leaves_nothing(true);
}

static void
test_http_session_idle_leaves_nothing(void **state)
{
    (void)state;
    session_end_leaves_nothing(false);
}

/* Writes HOME's ~/.profile: it exports SNAP_VAR=value. */
static void
write_profile(const char *home, const char *value)
{
    char *profile = tmpdir_path(home, ".profile");
    char *text = mcp_world_fmt("export SNAP_VAR=%s\n", value);
    tmpdir_write_file(profile, text, 0644);
    attack_own(profile);
    free(text);
    free(profile);
}

/* A login call's snapshot changes between the sandbox prepared for a
 * session's next login call and that call: another session's login call
 * captured the changed profile.  The call sources the new snapshot; the
 * sandbox prepared with the old one must not run it (its shell would
 * source the old one: same command line, same environment, another
 * memfd). */
static void
test_http_login_new_snapshot(void **state)
{
    (void)state;
    char *home = attack_scratch(NULL, "prepared-home");
    write_profile(home, "one");
    attack_own(home);
    http_start_home(NULL, home);
    struct http_session a, b;
    hsess_open(&a);
    hsess_open(&b);
    char *out = hsess_shell(&a, "echo $SNAP_VAR", true);
    assert_string_equal(out, "one\n");
    free(out);
    pid_t wa = await_new_waiting(NULL, 0);
    char nsa[128];
    int held = hold_ns(wa, nsa, sizeof(nsa));
    write_profile(home, "two-and-longer");
    out = hsess_shell(&b, "echo $SNAP_VAR", true);
    assert_string_equal(out, "two-and-longer\n");
    free(out);
    out = hsess_shell(&a, "readlink /proc/self/ns/mnt; echo $SNAP_VAR", true);
    char *want_not = mcp_world_fmt("%sone\n", nsa);
    assert_string_not_equal(out, want_not);
    mcp_world_assert_contains(out, "\ntwo-and-longer\n");
    assert_null(strstr(out, nsa));
    free(want_not);
    free(out);
    close(held);
    assert_int_equal(log_count("its prepared sandbox is discarded: another login snapshot"), 1);
    http_session_close(&a);
    http_session_close(&b);
    http_stop();
}

/* A login call with login false or true as said, in the world's workdir
 * (debug records into *s). */
static json_t *
run_login(struct mcp_world *w, const char *command, struct prep_said *s)
{
    return run_args(w, command, NULL, 30000, true, s);
}

/* The test's world (rm forbidden) with HOME home and more server
 * arguments (NULL-terminated): HOME is the server's own (the one its
 * snapshot's startup files are found in), not one more variable after
 * it. */
static struct mcp_world *
home_world(const char *home, const char *const *more)
{
    char *saved = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    assert_int_equal(setenv("HOME", home, 1), 0);
    const struct mcp_world_options o = {.extra = attack_suite_extra(), .more = more};
    struct mcp_world *w = attack_world_start(RM_FORBIDDEN, &o);
    if (saved)
        setenv("HOME", saved, 1);
    else
        unsetenv("HOME");
    free(saved);
    return w;
}

/*
 * A login call's next is prepared as a login call sourcing the snapshot
 * in force: the next login call runs there (its mount namespace) and sees
 * what the profile set up.  A changed profile: the next login call's
 * capture discards it (set up with the old snapshot), the call sees the
 * new profile, and the call after it runs prepared with the new snapshot.
 * A call without login does not take a login call's sandbox.
 */
static void
test_login_prepared(void **state)
{
    (void)state;
    char *home = attack_scratch(NULL, "prepared-home");
    write_profile(home, "one");
    attack_own(home);
    static const char *const on[] = {"--prepare", NULL};
    struct mcp_world *w = home_world(home, on);
    pid_t server = mcp_client_pid(w->c);
    set_level(w, "debug");
    struct prep_said s;
    json_t *r = run_login(w, "echo $SNAP_VAR", &s);
    assert_string_equal(mcp_world_output(r), "one\n");
    assert_false(s.prepared);
    json_decref(r);
    int fd;
    char ns[128];
    hold_prepared_ns(server, &fd, ns, sizeof(ns));
    r = run_login(
        w, "readlink /proc/self/ns/mnt; echo $SNAP_VAR; shopt -q login_shell && echo login", &s);
    assert_true(s.prepared);
    char *want = mcp_world_fmt("%sone\nlogin\n", ns);
    assert_string_equal(mcp_world_output(r), want);
    free(want);
    close(fd);
    json_decref(r);

    pid_t pids[256];
    await_prepared(server, pids, 256, NULL);
    write_profile(home, "two-and-longer");
    r = run_login(w, "echo $SNAP_VAR", &s);
    assert_string_equal(mcp_world_output(r), "two-and-longer\n");
    assert_false(s.prepared);
    assert_true(s.discarded);
    assert_string_equal(s.reason, "a login snapshot's capture");
    json_decref(r);
    hold_prepared_ns(server, &fd, ns, sizeof(ns));
    r = run_login(w, "readlink /proc/self/ns/mnt; echo $SNAP_VAR", &s);
    assert_true(s.prepared);
    want = mcp_world_fmt("%stwo-and-longer\n", ns);
    assert_string_equal(mcp_world_output(r), want);
    free(want);
    close(fd);
    json_decref(r);

    await_prepared(server, pids, 256, NULL);
    r = run_in(w, "echo \"[$SNAP_VAR]\"", NULL, &s);
    assert_string_equal(mcp_world_output(r), "[]\n");
    assert_false(s.prepared);
    assert_true(s.discarded);
    mcp_world_assert_contains(s.reason, "a call without login");
    json_decref(r);
    attack_world_end(w);
}

/* Without snapshots (--no-login-snapshot) a login call's prepared
 * sandbox runs a real login shell, which reads the profile when the
 * command has come: a profile changed while the sandbox waited is the
 * one the call sees. */
static void
test_login_prepared_without_snapshots(void **state)
{
    (void)state;
    char *home = attack_scratch(NULL, "prepared-home");
    write_profile(home, "one");
    attack_own(home);
    static const char *const more[] = {"--prepare", "--no-login-snapshot", NULL};
    struct mcp_world *w = home_world(home, more);
    pid_t server = mcp_client_pid(w->c);
    set_level(w, "debug");
    struct prep_said s;
    json_t *r = run_login(w, "echo $SNAP_VAR", &s);
    assert_string_equal(mcp_world_output(r), "one\n");
    json_decref(r);
    int fd;
    char ns[128];
    hold_prepared_ns(server, &fd, ns, sizeof(ns));
    write_profile(home, "two-and-longer");
    r = run_login(w, "readlink /proc/self/ns/mnt; echo $SNAP_VAR", &s);
    assert_true(s.prepared);
    char *want = mcp_world_fmt("%stwo-and-longer\n", ns);
    assert_string_equal(mcp_world_output(r), want);
    free(want);
    close(fd);
    json_decref(r);
    attack_world_end(w);
}

int
main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = attack_suite_begin("prepared-tests", 30000);
    if (rc != 0)
        return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_next_call_prepared, attack_teardown),
        cmocka_unit_test_teardown(test_same_as_unprepared, attack_teardown),
        cmocka_unit_test_teardown(test_clock_starts_at_the_command, attack_teardown),
        cmocka_unit_test_teardown(test_other_workdir_discards, attack_teardown),
        cmocka_unit_test_teardown(test_sandbox_update_discards, attack_teardown),
        cmocka_unit_test_teardown(test_rules_reload_discards, attack_teardown),
        cmocka_unit_test_teardown(test_swapped_root_discards, attack_teardown),
        cmocka_unit_test_teardown(test_swapped_git_discards, attack_teardown),
        cmocka_unit_test_teardown(test_new_git_discards, attack_teardown),
        cmocka_unit_test_teardown(test_swapped_denied_file_discards, attack_teardown),
        cmocka_unit_test_teardown(test_session_end_leaves_nothing, attack_teardown),
        cmocka_unit_test_teardown(test_server_killed_leaves_nothing, attack_teardown),
        cmocka_unit_test_teardown(test_login_prepared, attack_teardown),
        cmocka_unit_test_teardown(test_login_prepared_without_snapshots, attack_teardown),
        cmocka_unit_test_teardown(test_http_next_call_prepared, http_teardown),
        cmocka_unit_test_teardown(test_http_cap, http_teardown),
        cmocka_unit_test_teardown(test_http_prepared_takes_no_slot, http_teardown),
        cmocka_unit_test_teardown(test_http_none, http_teardown),
        cmocka_unit_test_teardown(test_http_idle_drops, http_teardown),
        cmocka_unit_test_teardown(test_http_delete_leaves_nothing, http_teardown),
        cmocka_unit_test_teardown(test_http_session_idle_leaves_nothing, http_teardown),
        cmocka_unit_test_teardown(test_http_login_new_snapshot, http_teardown),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    attack_suite_end();
    return rc;
}
