/*
 * strlen, strchr, strchrnul, strcpy and stpcpy 16 bytes at a time, for the
 * static musl Bash.
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
 * musl Bash), the file also defines the C library's names; linked before
 * libc.a, those are the ones Bash and musl get.  musl's strchrnul is a weak name for its own
 * __strchrnul, which its other functions keep calling; nothing else of
 * musl's is replaced.  Without the macro (the unit test), only the
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

#ifdef EXECGATE_REPLACE_LIBC
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
