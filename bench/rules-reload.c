/*
 * Benchmark of the server's rules reload (decide_server_reload): what one
 * reload holds the loop for.  The same generated file as bench/rules-load
 * would be too much machinery here: N plain prefix rules (default 10 000)
 * in a directory, reloaded R times (default 9).  Prints each reload and the
 * best and median; the in-run baseline is the first load at start.  No
 * assertion: bench/rules-reload prints, a person reads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "bench/timing.h"

#include "server/decide/decide.h"
#include "common/log.h"

static void
generate(const char *path, int n)
{
    FILE *f = bench_create(path);
    static const char *const decisions[] = {"allow", "prompt", "forbidden"};
    for (int i = 0; i < n; i++)
        fprintf(f, "prefix_rule(pattern=[\"prog%d\", \"sub%d\"], decision=\"%s\")\n", i, i % 7,
                decisions[i % 3]);
    fclose(f);
}

int
main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench-rules-reload N RUNS DIR\n");
        return 2;
    }
    int n = atoi(argv[1]), runs = atoi(argv[2]);
    char *file = NULL;
    if (runs < 1 || runs > 1000 || asprintf(&file, "%s/bench.rules", argv[3]) < 0)
        return 2;
    if (mkdir(argv[3], 0700) < 0 && errno != EEXIST) { /* made when missing */
        perror(argv[3]);
        return 1;
    }
    generate(file, n);
    log_set_level(LOG_LEVEL_ERROR); /* the lint's warnings are not the point */
    const char *paths[] = {argv[3]};
    struct decide_config cfg = {.rules_paths = paths, .n_rules_paths = 1};
    char *err = NULL;
    double t0 = now_ms();
    struct decide_server *ds = decide_server_new(&cfg, &err);
    double first = now_ms() - t0;
    if (!ds) {
        fprintf(stderr, "%s\n", err ? err : "out of memory");
        return 1;
    }
    double *ms = calloc((size_t)runs, sizeof(double));
    for (int i = 0; ms && i < runs; i++) {
        t0 = now_ms();
        if (decide_server_reload(ds, &err) < 0) {
            fprintf(stderr, "%s\n", err ? err : "out of memory");
            return 1;
        }
        ms[i] = now_ms() - t0;
    }
    printf("decide_server_reload, %d rules, %d runs (ms):", n, runs);
    for (int i = 0; ms && i < runs; i++)
        printf(" %.1f", ms[i]);
    double mid = ms ? median(ms, runs) : 0; /* sorts ms: the best is first */
    printf("\n  best %.1f, median %.1f; the first load at start %.1f\n", ms ? ms[0] : 0, mid,
           first);
    printf("  target 50 ms: the median is %.0f%% of it\n", mid * 2);
    decide_server_free(ds);
    free(ms);
    free(file);
    return 0;
}
