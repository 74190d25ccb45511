/*
 * sbrk(2) for Bash's own allocator in the static musl build.
 *
 * Bash's allocator (lib/malloc) is what makes shell code fast here: musl's
 * allocator maps and unmaps a fresh group of pages for most medium-sized
 * blocks, which costs a string-building loop three system calls per
 * assignment (docs/building.md has the figures).  Bash's allocator takes
 * its memory from sbrk, and musl's sbrk only answers sbrk(0).  Moving the
 * real break instead would not be safe: musl still links its own allocator
 * for its internal allocations, and that one moves the break to where it
 * last left it, which would cut off whatever Bash had been given above.
 *
 * So this sbrk, linked before libc.a and therefore the one Bash's allocator
 * gets, hands out a heap of its own: address space reserved once without
 * access, made readable and writable a megabyte at a time as the heap
 * grows.  It stays contiguous, as Bash's allocator needs (it returns the
 * top block by shrinking the break it tracks).  What Bash gives back is
 * kept for its next request, up to a few megabytes; beyond that the pages
 * are returned to the kernel.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* The address space reserved: the most, halved until the kernel grants it
 * (a `ulimit -v` counts reserved space), down to the least. */
#define HEAP_RESERVE_MOST  ((size_t)1 << 36) /* 64 GiB */
#define HEAP_RESERVE_LEAST ((size_t)1 << 26) /* 64 MiB */
/* How much becomes writable at once, and how much given-back memory is
 * kept writable for the next request before the rest is released. */
#define HEAP_STEP ((size_t)1 << 20)
#define HEAP_KEEP ((size_t)8 << 20)

static char *heap_base;     /* start of the reserved range */
static char *heap_limit;    /* its end */
static char *heap_break;    /* the break Bash sees */
static char *heap_writable; /* end of the readable, writable part */

static int
heap_reserve(void)
{
    size_t size;
    void *p;

    for (size = HEAP_RESERVE_MOST; size >= HEAP_RESERVE_LEAST; size /= 2) {
        p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            heap_base = heap_break = heap_writable = p;
            heap_limit = heap_base + size;
            return 0;
        }
    }
    return -1;
}

/* The first step boundary at or above p, within the reserved range. */
static char *
heap_step_above(char *p)
{
    size_t off = (size_t)(p - heap_base);
    size_t up = (off + HEAP_STEP - 1) & ~(HEAP_STEP - 1);

    return up < (size_t)(heap_limit - heap_base) ? heap_base + up : heap_limit;
}

static int
heap_grow(char *to)
{
    char *end = heap_step_above(to);

    if (mprotect(heap_writable, (size_t)(end - heap_writable), PROT_READ | PROT_WRITE) < 0)
        return -1;
    heap_writable = end;
    return 0;
}

/* Releases what lies more than HEAP_KEEP above the break.  A failure only
 * means the memory stays with the shell. */
static void
heap_trim(void)
{
    char *keep = heap_step_above(heap_break);

    if ((size_t)(heap_writable - keep) <= HEAP_KEEP)
        return;
    if (madvise(keep, (size_t)(heap_writable - keep), MADV_DONTNEED) < 0)
        return;
    if (mprotect(keep, (size_t)(heap_writable - keep), PROT_NONE) < 0)
        return;
    heap_writable = keep;
}

void *
sbrk(intptr_t increment)
{
    char *old;

    if (heap_base == NULL && heap_reserve() < 0) {
        errno = ENOMEM;
        return (void *)-1;
    }
    old = heap_break;
    if (increment < 0) {
        uintptr_t decrement = (uintptr_t)0 - (uintptr_t)increment;

        if (decrement > (uintptr_t)(heap_break - heap_base)) {
            errno = EINVAL;
            return (void *)-1;
        }
        heap_break -= decrement;
        heap_trim();
        return old;
    }
    if ((uintptr_t)increment > (uintptr_t)(heap_limit - heap_break)) {
        errno = ENOMEM;
        return (void *)-1;
    }
    if (heap_break + increment > heap_writable && heap_grow(heap_break + increment) < 0) {
        errno = ENOMEM;
        return (void *)-1;
    }
    heap_break += increment;
    return old;
}
