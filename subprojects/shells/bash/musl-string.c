/*
 * strlen, strchr, strchrnul, strcpy and stpcpy 16 bytes at a time, and
 * memcpy without `rep movsq`, for the static musl Bash and sandbox helper.
 *
 * Bash measures and copies its strings over and over (every expansion
 * quotes and dequotes the whole value), and musl's versions of these
 * functions go 8 bytes per step in plain C where glibc's use the vector
 * unit: a string-building loop spent 600 million more instructions in them
 * than in glibc's (docs/building.md has the figures).  SSE2 is part of
 * every x86-64 processor, so these need no check at run time.
 *
 * Each block is read from a 16-byte-aligned address, so a read never
 * crosses into a page the string does not touch, even past its end.
 *
 * Built with EXECGATE_REPLACE_LIBC (as build-shell.sh builds it for the
 * musl Bash, and sandbox/meson.build for the musl helper), the file also
 * defines the C library's names; linked before libc.a, those are the ones
 * the program and musl get.  musl's strchrnul is a weak name for its own
 * __strchrnul, which its other functions keep calling; memcpy comes with
 * __memcpy_fwd, the other name in musl's object, which is then not linked;
 * nothing else of musl's is replaced.  Without the macro (the unit test), only the
 * execgate_ names exist.
 */
#include <emmintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "subprojects/shells/bash/musl-string.h"

/* The blocks read run past the string's end (never past its page), which
 * AddressSanitizer would report in the unit test's build. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WHOLE_BLOCKS __attribute__((no_sanitize_address))
#endif
#endif
#if !defined(WHOLE_BLOCKS) && defined(__SANITIZE_ADDRESS__)
#define WHOLE_BLOCKS __attribute__((no_sanitize_address))
#endif
#ifndef WHOLE_BLOCKS
#define WHOLE_BLOCKS
#endif

/*
 * A byte of block v that is zero, or equal to c, becomes zero:
 * min(v ^ c, v) is zero exactly there.  With c zero only the NULs do.
 */
static __m128i
stops(__m128i v, __m128i c)
{
    return _mm_min_epu8(_mm_xor_si128(v, c), v);
}

/* The bit mask of the bytes of the block at p that are NUL or c. */
WHOLE_BLOCKS static unsigned
block_mask(const char *p, __m128i c)
{
    __m128i v = _mm_load_si128((const __m128i *)(const void *)p);

    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(stops(v, c), _mm_setzero_si128()));
}

/*
 * The first byte at or after s that is NUL or c: the aligned block holding
 * s (its bytes before s masked off), then single blocks up to a 64-byte
 * boundary, then 64 bytes per step (such a group never straddles two
 * pages), then the block of the group that stopped it.
 */
WHOLE_BLOCKS static const char *
find_stop(const char *s, __m128i c)
{
    const char *p = (const char *)((uintptr_t)s & ~(uintptr_t)15);
    unsigned m = block_mask(p, c) >> (s - p) << (s - p);

    while (m == 0 && ((uintptr_t)(p + 16) & 63) != 0) {
        p += 16;
        m = block_mask(p, c);
    }
    if (m != 0)
        return p + __builtin_ctz(m);
    for (p += 16;; p += 64) {
        const __m128i *q = (const __m128i *)(const void *)p;
        __m128i a = stops(_mm_load_si128(q), c);
        __m128i b = stops(_mm_load_si128(q + 1), c);
        __m128i d = stops(_mm_load_si128(q + 2), c);
        __m128i e = stops(_mm_load_si128(q + 3), c);
        __m128i least = _mm_min_epu8(_mm_min_epu8(a, b), _mm_min_epu8(d, e));

        if (_mm_movemask_epi8(_mm_cmpeq_epi8(least, _mm_setzero_si128())) != 0)
            break;
    }
    for (;; p += 16) {
        m = block_mask(p, c);
        if (m != 0)
            return p + __builtin_ctz(m);
    }
}

size_t
execgate_strlen(const char *s)
{
    return (size_t)(find_stop(s, _mm_setzero_si128()) - s);
}

char *
execgate_strchrnul(const char *s, int c)
{
    return (char *)find_stop(s, _mm_set1_epi8((char)c));
}

char *
execgate_strchr(const char *s, int c)
{
    char *r = execgate_strchrnul(s, c);

    return *r == (char)c ? r : NULL;
}

char *
execgate_stpcpy(char *restrict dst, const char *restrict src)
{
    size_t n = execgate_strlen(src);

    memcpy(dst, src, n + 1);
    return dst + n;
}

/* Unaligned 8- and 4-byte words, and 16-byte blocks. */
typedef uint64_t word64 __attribute__((may_alias, aligned(1)));
typedef uint32_t word32 __attribute__((may_alias, aligned(1)));

static __m128i
load16(const unsigned char *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

static void
store16(unsigned char *p, __m128i v)
{
    _mm_storeu_si128((__m128i *)(void *)p, v);
}

/*
 * musl's memcpy is one `rep movsq`, whose start-up costs tens of cycles
 * on every call however few bytes it moves, and most copies are short
 * (JSON building copies a few bytes at a time, Bash its words): half of
 * the sandbox helper's own user time on a call went there.  Up to 32 bytes, two
 * overlapping words or blocks; beyond, 32 bytes per step, then one block
 * more where more than 16 are left, and the last 16 (loaded first).  Every step loads before it
 * stores and goes forward, so a copy to a lower address that overlaps its source is right too,
 * which musl's memmove relies on (it calls __memcpy_fwd for those). Not a loop the compiler could
 * turn back into a call to memcpy.
 */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void *
execgate_memcpy_forward(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;

    if (n <= 16) {
        if (n >= 8) {
            uint64_t a = *(const word64 *)s, b = *(const word64 *)(s + n - 8);
            *(word64 *)d = a;
            *(word64 *)(d + n - 8) = b;
        } else if (n >= 4) {
            uint32_t a = *(const word32 *)s, b = *(const word32 *)(s + n - 4);
            *(word32 *)d = a;
            *(word32 *)(d + n - 4) = b;
        } else if (n > 0) {
            unsigned char a = s[0], b = s[n / 2], c = s[n - 1];
            d[0] = a;
            d[n / 2] = b;
            d[n - 1] = c;
        }
        return dst;
    }
    __m128i last = load16(s + n - 16);
    if (n <= 32) {
        store16(d, load16(s));
        store16(d + n - 16, last);
        return dst;
    }
    size_t i = 0;
    for (; i + 32 < n; i += 32) {
        __m128i a = load16(s + i), b = load16(s + i + 16);
        store16(d + i, a);
        store16(d + i + 16, b);
    }
    if (n - i > 16)
        store16(d + i, load16(s + i));
    store16(d + n - 16, last);
    return dst;
}

void *
execgate_memcpy(void *restrict dst, const void *restrict src, size_t n)
{
    return execgate_memcpy_forward(dst, src, n);
}

#ifdef EXECGATE_REPLACE_LIBC
void *
memcpy(void *restrict dst, const void *restrict src, size_t n)
{
    return execgate_memcpy_forward(dst, src, n);
}

/* musl's memmove calls this for a copy that may go forward; it lives in
 * the same object as musl's memcpy, which is then not linked at all. */
void *__memcpy_fwd(void *dst, const void *src, size_t n);

void *
__memcpy_fwd(void *dst, const void *src, size_t n)
{
    return execgate_memcpy_forward(dst, src, n);
}

size_t
strlen(const char *s)
{
    return execgate_strlen(s);
}

char *
strchrnul(const char *s, int c)
{
    return execgate_strchrnul(s, c);
}

char *
strchr(const char *s, int c)
{
    return execgate_strchr(s, c);
}

char *
stpcpy(char *restrict dst, const char *restrict src)
{
    return execgate_stpcpy(dst, src);
}

char *
strcpy(char *restrict dst, const char *restrict src)
{
    execgate_stpcpy(dst, src);
    return dst;
}
#endif
