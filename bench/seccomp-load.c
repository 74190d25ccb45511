/*
 * seccomp-load: what loading the sandbox's seccomp programs costs.
 *
 *   seccomp-load N
 *
 * seccomp(2) compiles each program and, to cache which call numbers it
 * always allows, runs it once per number: the cost grows with the path an
 * allowed call takes through the program, not only with its length.  Loads
 * each set below N times, each time in a fresh child (a filter cannot be
 * removed), rounds interleaved so that machine noise hits all alike, and
 * prints the median time of the seccomp(2) calls per set:
 *   - the workspace-write program (network off) as libseccomp lays it out
 *     by default, a chain of comparisons, built here from filter-rules.c;
 *   - the same as embedded (a binary search on the call number);
 *   - the embedded one with the exec filter stacked on it (two loads, as
 *     the helper did with exec-notify);
 *   - the embedded one with execs notified (one load);
 *   - the embedded one with execs and sockets notified (one load, as it
 *     does now under read-only and workspace-write).
 */
#include "sandbox/exec_filter.h"
#include "sandbox/filter-rules.h"
#include "sandbox/filter.h"
#include "bench/timing.h"

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum set { CHAIN, EMBEDDED, STACKED, MERGED, SOCKETS, NSETS };

static const char *const set_names[NSETS] = {
    "workspace-write program, comparison chain (libseccomp default)",
    "workspace-write program, embedded (binary search)",
    "embedded + exec filter stacked (two loads)",
    "embedded with execs notified (one load)",
    "embedded with execs and sockets notified (one load)",
};

/* The programs of the sets, by set (STACKED loads EMBEDDED's). */
static struct sock_fprog programs[NSETS];

static int
ignore_name(void *arg, const char *name)
{
    (void)arg;
    (void)name;
    return 0;
}

/* The workspace-write program in libseccomp's default layout. */
static struct sock_fprog
chain_program(void)
{
    int rc = 0;
    scmp_filter_ctx ctx = sandbox_filter_rules_new(true, true, false, ignore_name, NULL, &rc);
    FILE *tmp = tmpfile();
    if (ctx == NULL || tmp == NULL || seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 1) != 0 ||
        seccomp_export_bpf(ctx, fileno(tmp)) != 0) {
        fprintf(stderr, "seccomp-load: building the chain program failed\n");
        exit(1);
    }
    seccomp_release(ctx);
    long size = ftell(tmp);
    struct sock_filter *insns = malloc((size_t)size);
    rewind(tmp);
    if (size <= 0 || insns == NULL || fread(insns, 1, (size_t)size, tmp) != (size_t)size) {
        fprintf(stderr, "seccomp-load: reading the chain program failed\n");
        exit(1);
    }
    fclose(tmp);
    return (struct sock_fprog){.len = (unsigned short)(size / sizeof *insns), .filter = insns};
}

static long
load(const struct sock_fprog *prog, unsigned flags)
{
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, prog);
}

/* In the child: the loads of one set, timed; ms, or a negative on failure. */
static double
time_set(enum set s)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    double t0 = now_ms();
    long rc;
    switch (s) {
    case CHAIN:
    case EMBEDDED:
        rc = load(&programs[s], 0);
        break;
    case STACKED:
        rc = load(&programs[EMBEDDED], 0);
        if (rc == 0)
            rc = sandbox_exec_filter_load();
        break;
    default:
        rc = load(&programs[s], SECCOMP_FILTER_FLAG_NEW_LISTENER);
        break;
    }
    double t = now_ms() - t0;
    return rc < 0 ? -1 : t;
}

static double
run_child(enum set s)
{
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(1);
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        double t = time_set(s);
        _exit(write(fds[1], &t, sizeof t) == sizeof t ? 0 : 1);
    }
    close(fds[1]);
    double t = -1;
    if (read(fds[0], &t, sizeof t) != sizeof t || t < 0) {
        fprintf(stderr, "seccomp-load: %s: the load failed\n", set_names[s]);
        exit(1);
    }
    close(fds[0]);
    waitpid(pid, NULL, 0);
    return t;
}

static struct sock_fprog
embedded_program(unsigned notify)
{
    size_t len;
    const char *const *names;
    const struct sock_filter *insns = sandbox_filter_program(true, true, notify, &len, &names);
    return (struct sock_fprog){.len = (unsigned short)len, .filter = (struct sock_filter *)insns};
}

int
main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 300;
    if (n <= 0) {
        fprintf(stderr, "usage: seccomp-load N\n");
        return 2;
    }
    programs[CHAIN] = chain_program();
    programs[EMBEDDED] = embedded_program(0);
    programs[MERGED] = embedded_program(SANDBOX_FILTER_NOTIFY_EXECS);
    programs[SOCKETS] =
        embedded_program(SANDBOX_FILTER_NOTIFY_EXECS | SANDBOX_FILTER_NOTIFY_SOCKETS);
    double *samples[NSETS];
    for (int s = 0; s < NSETS; s++) {
        samples[s] = calloc((size_t)n, sizeof(double));
        if (samples[s] == NULL)
            return 1;
    }
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < NSETS; s++)
            samples[s][i] = run_child(s);
    }
    printf("%d loads each; program lengths: chain %u, embedded %u, with execs notified %u, "
           "with sockets too %u\n",
           n, programs[CHAIN].len, programs[EMBEDDED].len, programs[MERGED].len,
           programs[SOCKETS].len);
    double base = median(samples[CHAIN], n);
    for (int s = 0; s < NSETS; s++) {
        double m = median(samples[s], n);
        printf("%-64s %7.1f us  %.2fx the chain\n", set_names[s], m * 1000, m / base);
    }
    for (int s = 0; s < NSETS; s++)
        free(samples[s]);
    free(programs[CHAIN].filter);
    return 0;
}
