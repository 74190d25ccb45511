/*
 * Nothing a call started outlives the server: after `kill -9` of the
 * server, every sandboxed command, its background, nohup and setsid
 * children, and every escalated program are gone within 2 s.  Processes
 * are found by a marker no other process has (a sleep for an odd number
 * of seconds), never by timing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/server_suite.h"
#include "tests/support/test_user.h"
#include "tests/support/proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *server_path;
/* EXECGATE_TEST_UNPRIVILEGED=1 (started as root): the server runs as the
 * test user, so what holds without root is what is tested */
static bool unprivileged;
static struct test_user user;

static bool cgroups_available(void);

/* A world's options: the server as the test user when unprivileged. */
static struct mcp_world_options
lifetime_options(const char *policy, const char *extra)
{
    struct mcp_world_options o = {
        .server = server_path, .client_name = "lifetime-tests", .policy = policy, .extra = extra};
    server_suite_as_user(&o, unprivileged, &user);
    return o;
}

/* The keeper of a session network of the server's (a child of server
 * running execgate-sandbox --net-ns-keeper), or 0. */
static pid_t
keeper_of(pid_t server)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    pid_t found = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        pid_t pid = (pid_t)atoi(e->d_name), ppid = 0;
        if (pid <= 0 || proc_state(pid, &ppid) == '?' || ppid != server)
            continue;
        char path[64], cmd[4096];
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
        FILE *f = fopen(path, "re");
        size_t n = f ? fread(cmd, 1, sizeof cmd, f) : 0;
        if (f)
            fclose(f);
        if (memmem(cmd, n, "--net-ns-keeper", strlen("--net-ns-keeper")))
            found = pid;
    }
    closedir(d);
    return found;
}

/* Whether pid has ended (gone, or a zombie) within ms. */
static bool
pid_ends(pid_t pid, int ms)
{
    for (int waited = 0;; waited += 20) {
        char state = proc_state(pid, NULL);
        if (state == '?' || state == 'Z')
            return true;
        if (waited >= ms)
            return false;
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/* 8 calls, each with a background, a nohup and a setsid sleep beside its
 * own, and one escalated sleep; then the server is killed hard.  The
 * session's network keeper (its calls' network is off) ends with it. */
static void
killed_server_takes_its_calls(const char *policy)
{
    char inside[32], outside[32];
    snprintf(inside, sizeof(inside), "%d.%03d", 3000 + getpid() % 1000, 7);
    snprintf(outside, sizeof(outside), "%d.%03d", 3000 + getpid() % 1000, 9);
    char *rules =
        mcp_world_fmt("prefix_rule(pattern=[\"sleep\", \"%s\"], decision=\"allow\")\n", outside);
    struct mcp_world w;
    const struct mcp_world_options o = lifetime_options(policy, NULL);
    mcp_world_start(&w, rules, &o);
    char *cmd = mcp_world_fmt("sleep %s & nohup sleep %s >/dev/null 2>&1 & setsid sleep %s & "
                              "sleep %s",
                              inside, inside, inside, inside);
    for (int i = 0; i < 8; i++)
        mcp_client_send_request(w.c, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                          "command", cmd, "workdir", w.wd, "login", 0));
    char *esc = mcp_world_fmt("sleep %s", outside);
    mcp_client_send_request(w.c, "tools/call",
                            json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                      "command", esc, "workdir", w.wd, "login", 0));
    assert_int_equal(proc_wait_sleeps(inside, true, 32, 20000), 32);
    assert_int_equal(proc_wait_sleeps(outside, true, 1, 20000), 1);
    /* danger-full-access has the server's network: no keeper */
    bool network_off = strcmp(policy, "danger-full-access") != 0;
    pid_t keeper = keeper_of(mcp_client_pid(w.c));
    assert_int_equal(keeper > 0, network_off);
    assert_int_equal(kill(mcp_client_pid(w.c), SIGKILL), 0);
    int left_inside = proc_wait_sleeps(inside, false, 0, 2000);
    int left_outside = proc_wait_sleeps(outside, false, 0, 2000);
    if (left_inside || left_outside)
        fprintf(stderr, "%s: %d sandboxed and %d escalated sleeps left\n", policy, left_inside,
                left_outside);
    /* tidy up before asserting, so that a failure leaves nothing behind */
    char *pkill = mcp_world_fmt("pkill -KILL -f '^sleep (%s|%s)$'", inside, outside);
    if (left_inside || left_outside) {
        int ignored = system(pkill);
        (void)ignored;
    }
    assert_int_equal(left_inside, 0);
    assert_int_equal(left_outside, 0);
    assert_true(!network_off || pid_ends(keeper, 2000));
    mcp_world_abandon(&w);
    free(pkill);
    free(esc);
    free(cmd);
    free(rules);
}

static void
test_killed_server_workspace_write(void **state)
{
    killed_server_takes_its_calls("workspace-write");
}

static void
test_killed_server_read_only(void **state)
{
    killed_server_takes_its_calls("read-only");
}

#define MIB_OUTPUT "head -c 1000000 /dev/zero | tr '\\0' a"

/* The server as a client that may stop reading sees it: no sanitizer
 * quarantine (freed answers must leave the resident set). */
static struct mcp_client *
start_plain(const char *max_calls)
{
    /* no rules: the default directory may be unreadable for the test user */
    const char *plain[] = {server_path, "--max-calls", max_calls, "--rules", "/dev/null", NULL};
    const char *argv[12];
    size_t n = 0;
    for (size_t i = 0; unprivileged && user.prefix[i]; i++)
        argv[n++] = user.prefix[i];
    for (size_t i = 0; plain[i]; i++)
        argv[n++] = plain[i];
    argv[n] = NULL;
    const char *env[] = {"ASAN_OPTIONS=quarantine_size_mb=0:halt_on_error=1:abort_on_error=1",
                         NULL};
    struct mcp_client *c = mcp_client_start(argv, env);
    json_decref(mcp_client_initialize(c));
    return c;
}

/* 300 calls printing 1 MB each, and a client that reads nothing for 10 s:
 * the answers waiting for it stay near --max-pending-output (64 MiB) plus
 * one answer per running call; read again, every answer arrives whole. */
static void
test_stuck_client_bounds_memory(void **state)
{
    enum { CALLS = 300 };
    char *wd = mcp_world_fmt("/tmp");
    struct mcp_client *c = start_plain("8");
    pid_t pid = mcp_client_pid(c);
    long before = proc_rss_kib(pid);
    long long ids[CALLS];
    for (int i = 0; i < CALLS; i++)
        ids[i] = mcp_client_send_request(c, "tools/call",
                                         json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell",
                                                   "arguments", "command", MIB_OUTPUT, "workdir",
                                                   wd, "login", 0));
    long most = before;
    for (int i = 0; i < 20; i++) {
        struct timespec half = {0, 500 * 1000 * 1000};
        nanosleep(&half, NULL);
        long now = proc_rss_kib(pid);
        most = now > most ? now : most;
    }
    fprintf(stderr, "stuck client: rss %ld -> at most %ld KiB\n", before, most);
    /* 64 MiB of waiting answers, 8 running calls' answers (2 MB each: the
     * text and the structured copy), and slack for the allocator; without
     * the bound it grew by 507 MiB here */
    assert_true(most - before < 160 * 1024);
    for (int i = 0; i < CALLS; i++) {
        json_t *id = json_integer(ids[i]);
        json_t *a = mcp_client_response(c, id, 60000);
        assert_non_null(a);
        const char *out = json_string_value(json_object_get(
            json_object_get(json_object_get(a, "result"), "structuredContent"), "output"));
        assert_non_null(out);
        assert_int_equal(strlen(out), 1000000);
        assert_int_equal(strspn(out, "a"), 1000000);
        json_decref(a);
        json_decref(id);
    }
    mcp_client_close_stdin(c);
    int status = mcp_client_wait_exit(c, 30000);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    mcp_client_free(c);
    free(wd);
}

/* A client that closes its end without reading what waits for it: the
 * server notices although its input is paused, and exits within its kill
 * grace (2 s) and the time its running calls take. */
static void
test_client_gone_while_output_waits(void **state)
{
    char *wd = mcp_world_fmt("/tmp");
    struct mcp_client *c = start_plain("4");
    for (int i = 0; i < 50; i++)
        mcp_client_send_request(c, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                          "command", MIB_OUTPUT, "workdir", wd, "login", 0));
    /* enough answers wait that the input is paused (8 MiB) */
    struct timespec pause = {3, 0};
    nanosleep(&pause, NULL);
    mcp_client_close_stdin(c);
    /* its output is not read meanwhile: the process is watched, not its pipe */
    assert_true(pid_ends(mcp_client_pid(c), 10000));
    assert_int_not_equal(mcp_client_wait_exit(c, 10000), -1);
    mcp_client_free(c);
    free(wd);
}

/* The server's --doctor finding about cgroups, from "cgroups: " on
 * (malloc'd), when it can give each call a cgroup here, else NULL. */
static char *
cgroups_doctor(void)
{
    const char *argv[] = {server_path, "--doctor", NULL};
    struct proc_result res;
    int code = -1;
    if (unprivileged)
        code = test_user_run(&user, argv, &res);
    else if (proc_run(argv, NULL, &res) == 0)
        code = proc_exit_code(&res);
    /* the finding "  ok       cgroups: MODE" (the exit status also counts
     * the doctor's other findings, which do not matter here) */
    const char *found = code >= 0 ? strstr(res.out, "\n  ok       cgroups: ") : NULL;
    char *line = found ? strndup(found + 12, strcspn(found + 12, "\n")) : NULL;
    if (code >= 0)
        proc_result_free(&res);
    return line;
}

static bool
cgroups_available(void)
{
    char *line = cgroups_doctor();
    free(line);
    return line != NULL;
}

/* Under danger-full-access nothing confines the command's processes but
 * the call's cgroup: a setsid child of the command, and one of an
 * escalated program, are gone when the call ends. */
static void
test_setsid_children_end_with_the_call(void **state)
{
    if (!cgroups_available())
        skip();
    char inside[32], outside[32];
    snprintf(inside, sizeof(inside), "%d.%03d", 3000 + getpid() % 1000, 11);
    snprintf(outside, sizeof(outside), "%d.%03d", 3000 + getpid() % 1000, 13);
    struct mcp_world w;
    const struct mcp_world_options o = lifetime_options("danger-full-access", NULL);
    /* the escalated sh's setsid and its sleep need rules of their own */
    char *rules = mcp_world_fmt("prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n"
                                "prefix_rule(pattern=[\"setsid\", \"sleep\", \"%s\"], "
                                "decision=\"allow\")\n"
                                "prefix_rule(pattern=[\"sleep\", \"%s\"], decision=\"allow\")\n",
                                outside, outside);
    mcp_world_start(&w, rules, &o);
    free(rules);
    char *cmd = mcp_world_fmt("setsid sleep %s & sh -c 'setsid sleep %s &'; sleep 0.2; echo ok",
                              inside, outside);
    json_t *a = mcp_world_run(&w, cmd, NULL, 30000);
    mcp_world_assert_contains(mcp_world_output(a), "ok\n");
    json_decref(a);
    int left_inside = proc_wait_sleeps(inside, false, 0, 2000);
    int left_outside = proc_wait_sleeps(outside, false, 0, 2000);
    if (left_inside || left_outside) {
        char *pkill = mcp_world_fmt("pkill -KILL -f '^sleep (%s|%s)$'", inside, outside);
        int ignored = system(pkill);
        (void)ignored;
        free(pkill);
    }
    assert_int_equal(left_inside, 0);
    assert_int_equal(left_outside, 0);
    free(cmd);
    mcp_world_end(&w);
}

/* A command that tries to start 300 processes under --max-processes 50:
 * at most 50 of the call's exist at once, the rest fail to start, and the
 * call ends normally. */
static const char fork_py[] = "import subprocess, sys\n"
                              "kids, failed = [], 0\n"
                              "for i in range(300):\n"
                              "    try: kids.append(subprocess.Popen(['sleep', sys.argv[1]]))\n"
                              "    except OSError: failed += 1\n"
                              "print('started', len(kids), 'failed', failed)\n";

static void
test_max_processes_per_call(void **state)
{
    if (!cgroups_available())
        skip();
    char marker[32];
    snprintf(marker, sizeof(marker), "%d.%03d", 3000 + getpid() % 1000, 17);
    struct mcp_world w;
    const struct mcp_world_options o = lifetime_options("danger-full-access", "--max-processes=50");
    mcp_world_start(&w, "", &o);
    char *py = mcp_world_fmt("%s/fork.py", w.wd);
    FILE *f = fopen(py, "w");
    assert_non_null(f);
    fputs(fork_py, f);
    fclose(f);
    char *cmd = mcp_world_fmt("/usr/bin/python3 fork.py %s", marker);
    json_t *a = mcp_world_run(&w, cmd, NULL, 60000);
    const char *out = mcp_world_output(a);
    int started = -1, failed = -1;
    const char *at = strstr(out, "started ");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "started %d failed %d", &started, &failed), 2);
    fprintf(stderr, "max processes: %d started, %d failed\n", started, failed);
    /* the shell, python and the sleeps share the 50 */
    assert_true(started <= 50 && started >= 40);
    assert_int_equal(started + failed, 300);
    assert_int_equal(mcp_world_exit(a), 0);
    /* and they went with the call */
    assert_int_equal(proc_wait_sleeps(marker, false, 0, 2000), 0);
    json_decref(a);
    free(cmd);
    free(py);
    mcp_world_end(&w);
}

/* Whether word is one of the comma-separated items of list. */
static bool
listed(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *at = list; *at; at += strcspn(at, ",") + (at[strcspn(at, ",")] == ',')) {
        if (strncmp(at, word, n) == 0 && (at[n] == ',' || at[n] == '\0'))
            return true;
    }
    return false;
}

/*
 * Asserts that text, a call's /proc/self/cgroup, puts it in a cgroup
 * named execgate-SERVER-N in every hierarchy the server gives calls a
 * directory in (as its --doctor line names them), the same N in each;
 * returns N.
 */
static long
assert_in_call_cgroup(const char *doctor, const char *text, pid_t server)
{
    bool v2 = strstr(doctor, "v2 ") != NULL;
    bool v1_pids = strstr(doctor, "v1 pids") != NULL;
    bool v1_memory = strstr(doctor, "v1 pids and memory") || strstr(doctor, "v1 memory");
    char prefix[48];
    snprintf(prefix, sizeof(prefix), "/execgate-%d-", (int)server);
    char *copy = strdup(text);
    assert_non_null(copy);
    long n = -1;
    int seen = 0;
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        const char *ctrls = c1 + 1, *path = c2 + 1;
        bool used = (v2 && strcmp(line, "0") == 0 && !*ctrls) ||
                    (v1_pids && listed(ctrls, "pids")) || (v1_memory && listed(ctrls, "memory"));
        if (!used)
            continue;
        const char *leaf = strstr(path, prefix);
        if (!leaf)
            fail_msg("the call ran outside a call cgroup (%s:%s: %s):\n%s", line, ctrls, path,
                     text);
        long k = atol(leaf + strlen(prefix));
        assert_true(n < 0 || k == n);
        n = k;
        seen++;
    }
    assert_int_equal(seen, (int)v2 + (int)v1_pids + (int)v1_memory);
    free(copy);
    return n;
}

/*
 * Calls one after another, every second one leaving a setsid sleep that
 * the end of the call kills, with env (NAME=value) in the server's
 * environment: each call runs in a call cgroup, a clean call's is kept and
 * used again by the next, and a killed one is not (killed by
 * cgroup.freeze it stays frozen; and a process created in a cgroup by
 * clone3 is killed at birth, on this machine's Linux 6.18, when that
 * cgroup's cgroup.kill was written before).
 */
static void
calls_in_turn(const char *env)
{
    char *doctor = cgroups_doctor();
    if (!doctor)
        skip();
    char marker[32];
    snprintf(marker, sizeof(marker), "%d.%03d", 3000 + getpid() % 1000, 19);
    struct mcp_world w;
    struct mcp_world_options o = lifetime_options("danger-full-access", NULL);
    o.env = env;
    mcp_world_start(&w, "", &o);
    /* the sleep is in a session of its own when the command ends */
    char *leaving = mcp_world_fmt("setsid sleep %s & sleep 0.2; "
                                  "[ \"$(ps -o sid= -p $!)\" -eq $! ] && echo left; "
                                  "cat /proc/self/cgroup",
                                  marker);
    long previous = -1;
    for (int i = 0; i < 4; i++) {
        json_t *a = mcp_world_run(&w, i % 2 ? leaving : "cat /proc/self/cgroup", NULL, 30000);
        assert_int_equal(mcp_world_exit(a), 0);
        if (i % 2)
            mcp_world_assert_contains(mcp_world_output(a), "left\n");
        long n = assert_in_call_cgroup(doctor, mcp_world_output(a), mcp_client_pid(w.c));
        fprintf(stderr, "%s: call %d in execgate-PID-%ld\n", env ? env : "defaults", i, n);
        if (i == 1 || i == 3)
            assert_true(n == previous); /* kept after the clean call before */
        if (i == 2)
            assert_true(n != previous); /* not the one killed */
        assert_int_equal(proc_wait_sleeps(marker, false, 0, 2000), 0);
        previous = n;
        json_decref(a);
    }
    free(leaving);
    mcp_world_end(&w);
    free(doctor);
}

static void
test_calls_in_turn(void **state)
{
    calls_in_turn(NULL);
}

static void
test_calls_in_turn_frozen_kill(void **state)
{
    calls_in_turn("EXECGATE_TEST_CGROUP_KILL=cgroup.freeze");
}

/* Each call's first process moved into its cgroup by its own writes. */
static void
test_calls_in_turn_without_clone3(void **state)
{
    calls_in_turn("EXECGATE_TEST_NO_CLONE3=1");
}

/* --doctor's lines, with env (NAME=value) added to its environment. */
static char *
doctor_with(const char *env)
{
    size_t n = 0;
    while (environ[n])
        n++;
    const char **envp = calloc(n + 2, sizeof(*envp));
    assert_non_null(envp);
    for (size_t i = 0; i < n; i++)
        envp[i] = environ[i];
    envp[n] = env;
    const char *argv[] = {server_path, "--doctor", NULL};
    struct proc_options po = {.envp = envp};
    struct proc_result res;
    assert_int_equal(proc_run(argv, &po, &res), 0);
    assert_int_equal(proc_exit_code(&res), 0);
    char *out = strdup(res.out);
    assert_non_null(out);
    proc_result_free(&res);
    free(envp);
    return out;
}

/* --doctor says how a call's first process gets into its cgroup, and
 * where that is a write to cgroup.procs, what favordynmods would do. */
static void
test_doctor_says_how_calls_join(void **state)
{
    if (unprivileged || !cgroups_available())
        skip();
    char *out = doctor_with("EXECGATE_TEST_NO_CLONE3=0");
    fprintf(stderr, "%s", out);
    bool v2 = strstr(out, "cgroups: v2 (") || strstr(out, "hybrid (v2 ");
    mcp_world_assert_contains(out,
                              v2 ? "is created in its v2 cgroup (clone3 with CLONE_INTO_CGROUP)"
                                 : "moves its one thread into each cgroup of its call");
    mcp_world_assert_contains(out, "ms after 200 ms of quiet\n");
    free(out);
    if (!v2)
        return;
    out = doctor_with("EXECGATE_TEST_NO_CLONE3=1");
    fprintf(stderr, "%s", out);
    mcp_world_assert_contains(out, "joins its v2 cgroup by writing cgroup.procs "
                                   "(EXECGATE_TEST_NO_CLONE3=1): it started in ");
    mcp_world_assert_contains(out, "favordynmods");
    free(out);
}

/* Outside any PID namespace only the call's cgroup holds the background,
 * nohup and setsid children: the guard kills it when the server dies. */
static void
test_killed_server_danger_full_access(void **state)
{
    if (!cgroups_available())
        skip();
    killed_server_takes_its_calls("danger-full-access");
}

int
main(void)
{
    int rc = server_suite_begin(&server_path, &unprivileged, &user);
    if (rc != 0)
        return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed_server_workspace_write),
        cmocka_unit_test(test_killed_server_read_only),
        cmocka_unit_test(test_killed_server_danger_full_access),
        cmocka_unit_test(test_stuck_client_bounds_memory),
        cmocka_unit_test(test_client_gone_while_output_waits),
        cmocka_unit_test(test_setsid_children_end_with_the_call),
        cmocka_unit_test(test_max_processes_per_call),
        cmocka_unit_test(test_calls_in_turn),
        cmocka_unit_test(test_calls_in_turn_frozen_kill),
        cmocka_unit_test(test_calls_in_turn_without_clone3),
        cmocka_unit_test(test_doctor_says_how_calls_join),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    test_user_release(&user);
    return failed;
}
