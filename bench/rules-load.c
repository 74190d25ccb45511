/*
 * Benchmark of rules_load: a generated file of N prefix rules (default
 * 10 000) shaped like real files (plain calls, alternatives, justifications,
 * a helper function, a comprehension, some match examples), loaded several
 * times; prints the best and median wall-clock and CPU times.  Baseline in
 * the same run: reading the same file into memory.  Then the same N rules
 * written two ways, N literal prefix_rule lines and a for loop of N
 * iterations, each loaded the same number of times: the loop is the
 * baseline for the literal file.  No assertion.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/timing.h"

#include "rules/load.h"
#include "starlark/source.h"

static void
generate(const char *path, int n)
{
    FILE *f = bench_create(path);
    fprintf(f,
            "# generated: %d rules\n"
            "def deny(*tokens, why = \"generated\"):\n"
            "    prefix_rule(pattern = list(tokens), decision = \"forbidden\", "
            "justification = why)\n\n",
            n);
    for (int i = 0; i < n; i++) {
        switch (i % 10) {
        case 0:
            fprintf(f, "deny(\"tool%d\", \"rm\", \"-rf\")\n", i);
            break;
        case 1:
            fprintf(f,
                    "prefix_rule(pattern = [\"tool%d\", [\"push\", \"fetch\"], \"--force\"], "
                    "decision = \"prompt\", justification = \"rewrites history\")\n",
                    i);
            break;
        case 2:
            fprintf(f,
                    "prefix_rule(\n    pattern = [\"tool%d\", \"status\"],\n    match = "
                    "[\"tool%d status -s\", [\"tool%d\", \"status\"]],\n    not_match = "
                    "[\"tool%d log\"],\n)\n",
                    i, i, i, i);
            break;
        default:
            fprintf(f, "prefix_rule(pattern = [\"tool%d\", \"sub%d\"], decision = \"allow\")\n", i,
                    i % 7);
        }
    }
    fclose(f);
}

/* N literal lines, or one loop that makes the same N rules. */
static void
generate_plain(const char *path, int n, bool loop)
{
    FILE *f = bench_create(path);
    if (loop)
        fprintf(f,
                "for i in range(%d):\n"
                "    prefix_rule(pattern = [\"tool\" + str(i), \"sub\"], decision = \"allow\")\n",
                n);
    else
        for (int i = 0; i < n; i++)
            fprintf(f, "prefix_rule(pattern = [\"tool%d\", \"sub\"], decision = \"allow\")\n", i);
    fclose(f);
}

/* The median wall-clock and CPU (thread clock) milliseconds of loading
 * path, runs times. */
static void
median_load_ms(const char *path, int runs, double *wall_ms, double *cpu_ms)
{
    double *wall = calloc((size_t)runs, sizeof *wall), *cpu = calloc((size_t)runs, sizeof *cpu);
    if (wall == NULL || cpu == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int r = 0; r < runs; r++) {
        double c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID), w0 = clock_ms(CLOCK_MONOTONIC);
        char *err = NULL;
        const char *extra[] = {path};
        struct rules_policy *p = rules_load(NULL, extra, 1, &err);
        wall[r] = clock_ms(CLOCK_MONOTONIC) - w0;
        cpu[r] = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
        if (p == NULL) {
            fprintf(stderr, "load failed: %s\n", err);
            exit(1);
        }
        rules_policy_free(p);
    }
    qsort(wall, (size_t)runs, sizeof *wall, timing_cmp);
    qsort(cpu, (size_t)runs, sizeof *cpu, timing_cmp);
    *wall_ms = wall[runs / 2];
    *cpu_ms = cpu[runs / 2];
    free(wall);
    free(cpu);
}

int
main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    int runs = argc > 2 ? atoi(argv[2]) : 15;
    const char *path = argc > 3 ? argv[3] : "/tmp/execgate-bench-load.rules";
    generate(path, n);

    double *wall = calloc((size_t)runs, sizeof *wall), *cpu = calloc((size_t)runs, sizeof *cpu);
    double *base = calloc((size_t)runs, sizeof *base);
    size_t rules = 0;
    for (int r = 0; r < runs; r++) {
        double c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID), w0 = clock_ms(CLOCK_MONOTONIC);
        char *err = NULL;
        const char *extra[] = {path};
        struct rules_policy *p = rules_load(NULL, extra, 1, &err);
        wall[r] = clock_ms(CLOCK_MONOTONIC) - w0;
        cpu[r] = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
        if (p == NULL) {
            fprintf(stderr, "load failed: %s\n", err);
            return 1;
        }
        rules = rules_policy_rule_count(p);
        rules_policy_free(p);

        w0 = clock_ms(CLOCK_MONOTONIC);
        size_t len;
        char *src = star_source_read(path, &len, &err);
        base[r] = clock_ms(CLOCK_MONOTONIC) - w0;
        free(src);
    }
    qsort(wall, (size_t)runs, sizeof *wall, timing_cmp);
    qsort(cpu, (size_t)runs, sizeof *cpu, timing_cmp);
    qsort(base, (size_t)runs, sizeof *base, timing_cmp);
    printf("rules_load, %d-rule file (%zu rules after expansion), %d runs:\n", n, rules, runs);
    printf("  wall: best %.2f ms, median %.2f ms; CPU: best %.2f ms, median %.2f ms\n", wall[0],
           wall[runs / 2], cpu[0], cpu[runs / 2]);
    printf("  baseline, reading the file: median %.3f ms (load = %.0fx reading)\n", base[runs / 2],
           wall[runs / 2] / (base[runs / 2] > 0 ? base[runs / 2] : 1e-9));
    printf("  target 50 ms: median is %.1f%% of it\n", 100.0 * wall[runs / 2] / 50.0);
    free(wall);
    free(cpu);
    free(base);

    /* Literal lines against the loop that builds the same rules. */
    size_t plen = strlen(path);
    char *lit = malloc(plen + 10), *loop = malloc(plen + 10);
    if (lit == NULL || loop == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    snprintf(lit, plen + 10, "%s.literal", path);
    snprintf(loop, plen + 10, "%s.loop", path);
    generate_plain(lit, n, false);
    generate_plain(loop, n, true);
    double lit_ms, lit_cpu, loop_ms, loop_cpu;
    median_load_ms(lit, runs, &lit_ms, &lit_cpu);
    median_load_ms(loop, runs, &loop_ms, &loop_cpu);
    printf("%d literal prefix_rule lines: median wall %.2f ms, CPU %.2f ms; the same rules from "
           "a %d-iteration loop (baseline): wall %.2f ms, CPU %.2f ms; literal = %.2fx loop "
           "(wall), %.2fx (CPU)\n",
           n, lit_ms, lit_cpu, n, loop_ms, loop_cpu, lit_ms / (loop_ms > 0 ? loop_ms : 1e-9),
           lit_cpu / (loop_cpu > 0 ? loop_cpu : 1e-9));
    printf("  target 25 ms for the literal file: median wall is %.1f%% of it\n",
           100.0 * lit_ms / 25.0);
    unlink(lit);
    unlink(loop);
    free(lit);
    free(loop);
    return 0;
}
