/*
 * bench/wrapper_bench: what one intercepted exec decided Run costs.
 *
 * Times, alternately in the same run, posix_spawn + wait of a program
 * directly (the baseline) and of execgate-wrapper FILE ARGV... answered Run
 * by the fake escalation server, and prints the medians, their difference
 * and their ratio. The fake server answers from a thread per session, as
 * cheap as the real server's loop or cheaper, so the figure is the wrapper's
 * own cost plus the protocol's round trip.
 *
 * With --real (bench_real_server.c linked in), the server is execgate's own
 * session code (server/decide/escalation.c) on a libuv loop in a thread, with a
 * rules file and a workspace-write view, as in the MCP server: the
 * difference between the two figures is the server's share.
 *
 * Two more variants split the wrapper's cost: vfork + _exit + wait (no
 * exec at all) and `WRAPPER --version` with stdout on /dev/null (the
 * wrapper's static binary started and ended, no protocol). Then
 *   exec of PROGRAM      = direct - fork
 *   exec of the wrapper  = wrapper alone - fork
 *   ask and answer       = through wrapper - direct - exec of the wrapper
 * where "ask and answer" is the wrapper's own work after its start (getcwd,
 * encoding, socketpair), the round trip and the server's decision.
 *
 * usage: wrapper_bench [--real] WRAPPER [ITERATIONS] [PROGRAM]
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/timing.h"

#include "tests/support/fake_escalation_server.h"

/* bench_real_server.c, or NULL when only the fake server is built in:
 * starts execgate's session code on a loop thread and returns the
 * wrapper's end of the datagram socket (inheritable), or -1. */
int bench_real_server_start(void) __attribute__((weak));

extern char **environ;

/* vfork + _exit + wait: a process that never execs. */
static double
fork_wait(void)
{
    double t0 = now_ms();
    pid_t pid = vfork();
    if (pid == 0)
        _exit(0);
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) {
        perror("vfork");
        exit(1);
    }
    return now_ms() - t0;
}

static double
spawn_wait(const char *const argv[], const char *const envp[])
{
    static posix_spawn_file_actions_t quiet;
    static int quiet_ready;
    if (!quiet_ready) {
        posix_spawn_file_actions_init(&quiet);
        posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
        quiet_ready = 1;
    }
    double t0 = now_ms();
    pid_t pid;
    if (posix_spawn(&pid, argv[0], &quiet, NULL, (char *const *)argv, (char *const *)envp) != 0) {
        perror(argv[0]);
        exit(1);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "wrapper_bench: %s did not exit 0 (status %d)\n", argv[0], status);
        exit(1);
    }
    return now_ms() - t0;
}

int
main(int argc, char **argv)
{
    int real = argc > 1 && strcmp(argv[1], "--real") == 0;
    if (real) {
        argv++;
        argc--;
    }
    if (argc < 2 || (real && !bench_real_server_start)) {
        fprintf(stderr, "usage: wrapper_bench [--real] WRAPPER [ITERATIONS] [PROGRAM]\n");
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 500;
    const char *program = argc > 3 ? argv[3] : "/bin/true";
    if (n < 1)
        n = 1;
    int client = -1;
    struct fake_esc_server *srv = NULL;
    if (real)
        client = bench_real_server_start();
    else
        srv = fake_esc_server_start(NULL, 0, &client);
    if (client < 0)
        return 1;
    char sock_env[64];
    snprintf(sock_env, sizeof sock_env, "CODEX_ESCALATE_SOCKET=%d", client);
    const char *envp[] = {"PATH=/usr/bin:/bin", sock_env, NULL};
    const char *direct[] = {program, "true", NULL};
    const char *wrapped[] = {argv[1], program, "true", NULL};
    const char *alone[] = {argv[1], "--version", NULL};

    double *a = calloc((size_t)n, sizeof *a), *b = calloc((size_t)n, sizeof *b);
    double *f = calloc((size_t)n, sizeof *f), *w = calloc((size_t)n, sizeof *w);
    for (int i = 0; i < 20; i++) { /* warm caches */
        spawn_wait(direct, envp);
        spawn_wait(wrapped, envp);
        spawn_wait(alone, envp);
    }
    for (int i = 0; i < n; i++) {
        a[i] = spawn_wait(direct, envp);
        b[i] = spawn_wait(wrapped, envp);
        f[i] = fork_wait();
        w[i] = spawn_wait(alone, envp);
    }
    size_t sessions = srv ? fake_esc_server_count(srv) : (size_t)n + 20;
    fake_esc_server_stop(srv);
    if (sessions != (size_t)n + 20) {
        fprintf(stderr, "wrapper_bench: the server saw %zu sessions, expected %d\n", sessions,
                n + 20);
        return 1;
    }
    double ma = median(a, n), mb = median(b, n), mf = median(f, n), mw = median(w, n);
    printf("server:               %s\n", real ? "execgate's session code (--real)" : "fake");
    printf("program:              %s (%d runs each, alternating)\n", program, n);
    printf("direct spawn, median: %.3f ms\n", ma);
    printf("through wrapper, Run: %.3f ms\n", mb);
    printf("added per exec:       %.3f ms\n", mb - ma);
    printf("ratio:                %.2fx\n", mb / ma);
    printf("parts (medians): fork+exit %.3f, exec of %s %.3f, exec of the wrapper %.3f, "
           "ask and answer %.3f ms\n",
           mf, program, ma - mf, mw - mf, mb - ma - (mw - mf));
    free(a);
    free(b);
    free(f);
    free(w);
    return 0;
}
