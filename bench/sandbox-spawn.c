/*
 * sandbox-spawn: what execgate-sandbox adds to one spawn.
 *
 *   sandbox-spawn HELPER WORKSPACE N [REFERENCE_HELPER|-] [PREVIOUS [PREVIOUS2]]
 *
 * WORKSPACE, with .git and .codex in it, is made when missing.
 * PREVIOUS (and PREVIOUS2), other builds of execgate-sandbox (an older commit),
 * add their workspace-write runs, so that a change is measured before and
 * after in the same run.
 * Spawns `/bin/true` alone and under each policy, N times each, the
 * variants interleaved round by round so that machine noise hits all of
 * them alike; prints the median wall time per spawn (fork to reaped exit),
 * the difference to /bin/true alone and the ratio, all from this one run.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/timing.h"

extern char **environ;

struct variant {
    const char *name;
    const char *argv[16];
    double *samples;
    const char *const *envp; /* NULL: this process's environment */
};

static double
spawn_once(const char *const *argv, const char *const *envp)
{
    double t0 = now_ms();
    pid_t pid;
    /* The degraded variant warns on every spawn: keep stderr for errors of
     * the others. */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (envp != NULL)
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv,
                         envp ? (char *const *)envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        perror(argv[0]);
        exit(1);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "%s did not exit 0 (status %d)\n", argv[0], st);
        exit(1);
    }
    return now_ms() - t0;
}

static char *policy(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
policy(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p;
    int rc = vasprintf(&p, fmt, ap);
    va_end(ap);
    if (rc < 0)
        exit(1);
    return p;
}

int
main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: sandbox-spawn HELPER WORKSPACE N [REFERENCE_HELPER|-] "
                        "[PREVIOUS [PREVIOUS2]]\n");
        return 2;
    }
    char *helper = argv[1], *ws = argv[2];
    char *ref = argc > 4 && strcmp(argv[4], "-") != 0 ? argv[4] : NULL;
    char *prev = argc > 5 ? argv[5] : NULL;
    char *prev2 = argc > 6 ? argv[6] : NULL;
    int n = atoi(argv[3]);
    /* The workspace as a project has it: made here when missing. */
    const char *sub[] = {"", "/.git", "/.codex"};
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        char *path;
        if (asprintf(&path, "%s%s", ws, sub[i]) < 0)
            return 1;
        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
            perror(path);
            return 1;
        }
        free(path);
    }
    char *ww = policy("{\"type\":\"workspace-write\",\"sandboxCwd\":\"%s\"}", ws);
    char *ro = policy("{\"type\":\"read-only\",\"sandboxCwd\":\"%s\"}", ws);
    const char *da = "{\"type\":\"danger-full-access\"}";
    char *refp = policy("{\"type\":\"workspace-write\",\"writable_roots\":[\"%s\"],"
                        "\"network_access\":false,\"exclude_tmpdir_env_var\":false,"
                        "\"exclude_slash_tmp\":false}",
                        ws);
    static const char *const no_ns_env[] = {"EXECGATE_SANDBOX_NO_NAMESPACES=1",
                                            "PATH=/usr/bin:/bin", NULL};
    struct variant v[9] = {
        {.name = "/bin/true alone", .argv = {"/bin/true", NULL}},
        {.name = "previous workspace-write",
         .argv = {prev, "--policy", ww, "--cwd", ws, "--", "/bin/true", NULL}},
        {.name = "previous #2 workspace-write",
         .argv = {prev2, "--policy", ww, "--cwd", ws, "--", "/bin/true", NULL}},
        {.name = "danger-full-access",
         .argv = {helper, "--policy", da, "--cwd", ws, "--", "/bin/true", NULL}},
        {.name = "read-only",
         .argv = {helper, "--policy", ro, "--cwd", ws, "--", "/bin/true", NULL}},
        {.name = "workspace-write",
         .argv = {helper, "--policy", ww, "--cwd", ws, "--", "/bin/true", NULL}},
        /* The same without namespaces: what Landlock, seccomp and the
         * helper's own exec cost, apart from the namespaces. */
        {.name = "ws-write, no namespaces",
         .argv = {helper, "--allow-degraded", "--policy", ww, "--cwd", ws, "--", "/bin/true", NULL},
         .envp = no_ns_env},
        {.name = "reference workspace-write",
         .argv = {ref, "--sandbox-policy-cwd", ws, "--sandbox-policy", refp, "--", "/bin/true",
                  NULL}},
    };
    int nv = 8;
    /* Drop the variants not asked for, keeping the order. */
    for (int k = 0; k < nv;) {
        if (v[k].argv[0] == NULL) {
            memmove(&v[k], &v[k + 1], sizeof v[0] * (size_t)(nv - k - 1));
            nv--;
        } else {
            k++;
        }
    }
    for (int k = 0; k < nv; k++) {
        v[k].samples = calloc((size_t)n, sizeof(double));
        spawn_once(v[k].argv, v[k].envp); /* warm the page cache */
    }
    /* An untimed /bin/true after each timed spawn absorbs part of the work
     * the kernel defers after a spawn (the reference's namespace teardown
     * above all), so that less of it is charged to the next variant; the
     * machine stays as busy as without it (a sleep would let the CPUs idle
     * and measure wake-up latency instead). */
    const char *absorb[] = {"/bin/true", NULL};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nv; k++) {
            v[k].samples[i] = spawn_once(v[k].argv, v[k].envp);
            spawn_once(absorb, NULL);
        }
    double base = median(v[0].samples, n);
    printf("%-28s %10s %12s %8s %8s   (N=%d, interleaved)\n", "variant", "median ms", "+ms vs true",
           "ratio", "p90 ms", n);
    for (int k = 0; k < nv; k++) {
        double m = median(v[k].samples, n); /* sorts the samples */
        printf("%-28s %10.3f %12.3f %8.2f %8.3f\n", v[k].name, m, m - base, m / base,
               v[k].samples[n * 9 / 10]);
    }
    for (int k = 0; k < nv; k++)
        free(v[k].samples);
    free(refp);
    free(ro);
    free(ww);
    return 0;
}
