/*
 * alloc_fail: the tests' one way to make allocations fail.
 *
 * A test that sweeps allocation failures links alloc_fail_dep
 * (tests/support/meson.build). Its linker options (-Wl,--wrap=malloc and
 * the others below) send every call to malloc, calloc, realloc, free,
 * strdup, strndup, asprintf and vasprintf made by the objects linked
 * statically into the test (the test itself and the tree's static
 * libraries) through this module, so the code under test needs no hooks
 * and no test-only build. Shared libraries keep their own allocator:
 * jansson's allocations reach this module only after
 * json_set_alloc_funcs(malloc, free) in the test (the linker wraps those
 * references too); libc's internal ones (getline, realpath) never do.
 *
 * The sweep (alloc_fail_sweep) makes the first allocation of an operation
 * fail, then the second, and so on, until the operation runs through
 * without meeting the failure: every out-of-memory path it has is taken
 * once, and after each round nothing it allocated may still be held.
 *
 * Not thread-safe: the state is plain globals, for one thread at a time.
 */
#ifndef EXECGATE_TESTS_ALLOC_FAIL_H
#define EXECGATE_TESTS_ALLOC_FAIL_H

#include <stdbool.h>

/* Makes the n-th allocation from now fail (0: the next one), and only
 * that one, and starts following the blocks allocated from now on. */
void alloc_fail_arm(long n);

/* No allocation fails any more; the blocks allocated while armed are still
 * followed until they are freed. */
void alloc_fail_disarm(void);

/* Whether the failure armed last has happened. */
bool alloc_fail_injected(void);

/* Blocks allocated since alloc_fail_arm and not freed yet. */
long alloc_fail_live(void);

/*
 * Runs round(arg) with the n-th allocation failing, for n = 0, 1, 2, ...
 * until a round meets no failure, and asserts (cmocka) after every round
 * that it freed all it allocated. round reports its own result and asserts
 * what a failed round must look like (alloc_fail_injected() says whether
 * this one had a failure). Returns the number of rounds that had one: the
 * allocations the operation makes.
 */
long alloc_fail_sweep(void (*round)(void *arg), void *arg);

#endif
