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
 * process when its session ends or when the server is killed.
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
#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/proc.h"
#include "tests/support/tmpdir.h"

#include <dirent.h>
#include <errno.h>
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

/* Runs command in workdir (NULL: the world's) with timeout_ms, with what
 * the server said of a prepared sandbox in *s.  Returns the answer. */
static json_t *
run_with(struct mcp_world *w, const char *command, const char *workdir, int timeout_ms,
         struct prep_said *s)
{
    struct mcp_answers a = {.logs = json_array()};
    json_t *r = mcp_world_run_args(w,
                                   json_pack("{s:s, s:s, s:b, s:i}", "command", command, "workdir",
                                             workdir ? workdir : w->wd, "login", 0, "timeout_ms",
                                             timeout_ms),
                                   &a);
    read_prep(a.logs, s);
    json_decref(a.logs);
    free(a.last_message);
    return r;
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
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    attack_suite_end();
    return rc;
}
