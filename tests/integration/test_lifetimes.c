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

#include "mcp_client.h"
#include "mcp_world.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *server_path;

/* How many processes run `sleep ARG` (their whole command line). */
static int
count_sleeps(const char *arg)
{
    char want[64];
    int wlen = snprintf(want, sizeof(want), "sleep%c%s%c", 0, arg, 0);
    DIR *d = opendir("/proc");
    assert_non_null(d);
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char path[300], buf[128];
        snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof(buf));
        close(fd);
        if (n == wlen && memcmp(buf, want, (size_t)n) == 0)
            count++;
    }
    closedir(d);
    return count;
}

static long
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Polls until count_sleeps(arg) is at least (more) or at most (!more)
 * want, for up to ms; returns the last count. */
static int
wait_sleeps(const char *arg, bool more, int want, int ms)
{
    long end = now_ms() + ms;
    int n;
    for (;;) {
        n = count_sleeps(arg);
        if ((more && n >= want) || (!more && n <= want) || now_ms() > end)
            return n;
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/* 8 calls, each with a background, a nohup and a setsid sleep beside its
 * own, and one escalated sleep; then the server is killed hard. */
static void
killed_server_takes_its_calls(const char *policy)
{
    char inside[32], outside[32];
    snprintf(inside, sizeof(inside), "%d.%03d", 3000 + getpid() % 1000, 7);
    snprintf(outside, sizeof(outside), "%d.%03d", 3000 + getpid() % 1000, 9);
    char *rules =
        mcp_world_fmt("prefix_rule(pattern=[\"sleep\", \"%s\"], decision=\"allow\")\n", outside);
    struct mcp_world w;
    const struct mcp_world_options o = {
        .server = server_path, .client_name = "lifetime-tests", .policy = policy};
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
    assert_int_equal(wait_sleeps(inside, true, 32, 20000), 32);
    assert_int_equal(wait_sleeps(outside, true, 1, 20000), 1);
    assert_int_equal(kill(mcp_client_pid(w.c), SIGKILL), 0);
    int left_inside = wait_sleeps(inside, false, 0, 2000);
    int left_outside = wait_sleeps(outside, false, 0, 2000);
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

int
main(void)
{
    server_path = getenv("EXECGATE_TEST_SERVER");
    if (!server_path) {
        fprintf(stderr, "EXECGATE_TEST_SERVER is not set\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed_server_workspace_write),
        cmocka_unit_test(test_killed_server_read_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
