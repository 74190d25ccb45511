#include "tests/support/alloc_fail.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The allocator itself, as the linker's --wrap names it. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_vasprintf(char **out, const char *fmt, va_list ap);

/* What the wrapped calls land on. */
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_vasprintf(char **out, const char *fmt, va_list ap);
int __wrap_asprintf(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool armed;
static long countdown; /* allocations left before the failing one */
static bool injected;

/* The blocks allocated while armed and not freed yet: a list searched
 * from the end (a sweep's operations hold a few hundred at most). */
static void **live;
static size_t n_live, cap_live;
static bool following; /* from alloc_fail_arm on */

static bool
should_fail(void)
{
    if (!armed)
        return false;
    if (countdown-- == 0) {
        injected = true;
        return true;
    }
    return false;
}

static void
follow(void *p)
{
    if (p == NULL || !following)
        return;
    if (n_live == cap_live) {
        size_t cap = cap_live ? cap_live * 2 : 256;
        void **grown = __real_realloc(live, cap * sizeof *grown);
        if (grown == NULL) {
            fprintf(stderr, "alloc_fail: out of memory following blocks\n");
            abort();
        }
        live = grown;
        cap_live = cap;
    }
    live[n_live++] = p;
}

static void
forget(void *p)
{
    for (size_t i = n_live; p != NULL && i-- > 0;) {
        if (live[i] == p) {
            live[i] = live[--n_live];
            return;
        }
    }
}

void
alloc_fail_arm(long n)
{
    countdown = n;
    injected = false;
    n_live = 0;
    following = true;
    armed = true;
}

void
alloc_fail_disarm(void)
{
    armed = false;
}

bool
alloc_fail_injected(void)
{
    return injected;
}

long
alloc_fail_live(void)
{
    return (long)n_live;
}

long
alloc_fail_sweep(void (*round)(void *arg), void *arg)
{
    for (long n = 0;; n++) {
        alloc_fail_arm(n);
        round(arg);
        alloc_fail_disarm();
        if (alloc_fail_live() != 0)
            fail_msg("allocation %ld failing: %ld block(s) still held after the round", n,
                     alloc_fail_live());
        if (!alloc_fail_injected()) {
            following = false;
            return n;
        }
        if (n >= 100000)
            fail_msg("allocation %ld failing: the operation never completes", n);
    }
}

void *
__wrap_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    void *p = __real_malloc(n);
    follow(p);
    return p;
}

void *
__wrap_calloc(size_t n, size_t size)
{
    if (should_fail())
        return NULL;
    void *p = __real_calloc(n, size);
    follow(p);
    return p;
}

void *
__wrap_realloc(void *old, size_t n)
{
    if (should_fail())
        return NULL; /* old stays allocated, as realloc leaves it */
    void *p = __real_realloc(old, n);
    if (p != NULL) {
        forget(old);
        follow(p);
    }
    return p;
}

void
__wrap_free(void *p)
{
    forget(p);
    __real_free(p);
}

char *
__wrap_strdup(const char *s)
{
    if (should_fail())
        return NULL;
    char *p = __real_strdup(s);
    follow(p);
    return p;
}

char *
__wrap_strndup(const char *s, size_t n)
{
    if (should_fail())
        return NULL;
    char *p = __real_strndup(s, n);
    follow(p);
    return p;
}

int
__wrap_vasprintf(char **out, const char *fmt, va_list ap)
{
    if (should_fail())
        return -1;
    int rc = __real_vasprintf(out, fmt, ap);
    if (rc >= 0)
        follow(*out);
    return rc;
}

int
__wrap_asprintf(char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = __wrap_vasprintf(out, fmt, ap);
    va_end(ap);
    return rc;
}
