/*
 * timing: the clock, the median and the scratch files the C benchmarks
 * share (header only; bench/meson.build builds each benchmark as one
 * program).
 */
#ifndef EXECGATE_BENCH_TIMING_H
#define EXECGATE_BENCH_TIMING_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* clock c in milliseconds */
static inline double
clock_ms(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline double
now_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

static inline int
timing_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v[0..n) in place and returns its median. */
static inline double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, timing_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* path, created (or emptied) for writing; exits the benchmark when it
 * cannot be. */
static inline FILE *
bench_create(const char *path)
{
    FILE *f = fopen(path, "we");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    return f;
}

#endif
