/*
 * The static musl Bash's string functions (subprojects/shells/bash/musl-string.c)
 * against the C library's, at every alignment and length up to a few
 * blocks, and with strings that end on the last byte before an unmapped
 * page, where a read past the block holding the end would fault; its
 * memcpy against memmove, overlapping downwards too, and between guard
 * pages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "subprojects/shells/bash/musl-string.h"

#define MAX_LEN 80

static char buf[MAX_LEN + 64] __attribute__((aligned(64)));

/* Fills buf from offset with len bytes ending in NUL, none of them NUL or
 * 'x' except where a test puts them, high bytes included. */
static char *
fill(size_t offset, size_t len)
{
    char *s = buf + offset;

    memset(buf, 'y', sizeof buf);
    for (size_t i = 0; i < len; i++)
        s[i] = (char)(0x80 + (i * 7) % 0x70);
    s[len] = '\0';
    return s;
}

static void
test_strlen_every_alignment_and_length(void **state)
{
    (void)state;
    for (size_t off = 0; off < 32; off++)
        for (size_t len = 0; len <= MAX_LEN; len++)
            assert_int_equal(execgate_strlen(fill(off, len)), len);
}

static void
test_strchr_finds_first_match_or_end(void **state)
{
    (void)state;
    for (size_t off = 0; off < 32; off++)
        for (size_t len = 0; len <= MAX_LEN; len++) {
            char *s = fill(off, len);

            /* absent: strchrnul is the end, strchr NULL */
            assert_ptr_equal(execgate_strchrnul(s, 'x'), s + len);
            assert_null(execgate_strchr(s, 'x'));
            /* NUL itself is found at the end */
            assert_ptr_equal(execgate_strchr(s, '\0'), s + len);
            assert_ptr_equal(execgate_strchrnul(s, '\0'), s + len);
            for (size_t at = 0; at < len; at += 5) {
                s[at] = 'x';
                if (at + 3 < len)
                    s[at + 3] = 'x';
                assert_ptr_equal(execgate_strchr(s, 'x'), strchr(s, 'x'));
                assert_ptr_equal(execgate_strchrnul(s, 'x'), s + at);
                s[at] = (char)0x81;
                if (at + 3 < len)
                    s[at + 3] = (char)0x81;
            }
        }
}

static void
test_strchr_matches_before_start_are_ignored(void **state)
{
    (void)state;
    /* 'x' in the same aligned block but before s, then none in s */
    for (size_t off = 1; off < 16; off++) {
        char *s = fill(off, 20);

        buf[0] = 'x';
        assert_null(execgate_strchr(s, 'x'));
        buf[0] = '\0';
        assert_int_equal(execgate_strlen(s), 20);
    }
}

static void
test_strchr_high_byte_as_int(void **state)
{
    (void)state;
    char *s = fill(3, 40);

    /* an int beyond a char's range is converted, as strchr(3) says */
    assert_ptr_equal(execgate_strchr(s, s[17] & 0xff), strchr(s, s[17] & 0xff));
    assert_ptr_equal(execgate_strchr(s, (signed char)s[17]), strchr(s, (signed char)s[17]));
}

static void
test_stpcpy_copies_and_points_at_nul(void **state)
{
    (void)state;
    char dst[MAX_LEN + 32];

    for (size_t off = 0; off < 32; off++)
        for (size_t len = 0; len <= MAX_LEN; len++) {
            char *s = fill(off, len);

            memset(dst, 'z', sizeof dst);
            char *end = execgate_stpcpy(dst + (off & 7), s);
            assert_ptr_equal(end, dst + (off & 7) + len);
            assert_memory_equal(dst + (off & 7), s, len + 1);
            assert_int_equal(dst[(off & 7) + len + 1], 'z');
        }
}

static void
test_no_read_into_the_next_page(void **state)
{
    (void)state;
    long page = sysconf(_SC_PAGESIZE);
    char *map =
        mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + page, (size_t)page, PROT_NONE), 0);
    for (size_t len = 0; len < 40; len++) {
        char *s = map + page - 1 - len;

        memset(s, 'a', len);
        s[len] = '\0';
        assert_int_equal(execgate_strlen(s), len);
        assert_ptr_equal(execgate_strchrnul(s, 'q'), s + len);
        assert_null(execgate_strchr(s, 'q'));
    }
    assert_int_equal(munmap(map, (size_t)page * 2), 0);
}

/* A pattern no two nearby bytes share: a byte copied from the wrong
 * place or left out shows. */
static void
pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 31 + (i >> 8));
}

#define COPY_MAX 300

static void
test_memcpy_every_alignment_and_length(void **state)
{
    (void)state;
    static unsigned char src[COPY_MAX + 64], dst[COPY_MAX + 64 + 32], want[sizeof dst];

    pattern(src, sizeof src, 7);
    for (size_t so = 0; so < 16; so++)
        for (size_t dof = 0; dof < 16; dof++)
            for (size_t n = 0; n <= COPY_MAX; n++) {
                memset(dst, 0xee, sizeof dst);
                memset(want, 0xee, sizeof want);
                memmove(want + dof, src + so, n);
                assert_ptr_equal(execgate_memcpy(dst + dof, src + so, n), dst + dof);
                /* the bytes before and after are untouched too */
                assert_memory_equal(dst, want, sizeof dst);
            }
}

static void
test_memcpy_forward_overlapping_downwards(void **state)
{
    (void)state;
    static unsigned char buf2[COPY_MAX + 64], want[sizeof buf2];

    /* dst below src, overlapping by every amount: memmove's answer */
    for (size_t gap = 1; gap < 40; gap++)
        for (size_t n = 0; n + gap <= COPY_MAX; n++) {
            pattern(buf2, sizeof buf2, (unsigned)(gap + n));
            memcpy(want, buf2, sizeof want);
            memmove(want + 3, want + 3 + gap, n);
            assert_ptr_equal(execgate_memcpy_forward(buf2 + 3, buf2 + 3 + gap, n), buf2 + 3);
            assert_memory_equal(buf2, want, sizeof buf2);
        }
}

static void
test_memcpy_stays_within_its_pages(void **state)
{
    (void)state;
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *map =
        mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    assert_true(map != MAP_FAILED);
    /* a guard page on each side of the one the copies use */
    assert_int_equal(mprotect(map, (size_t)page, PROT_NONE), 0);
    assert_int_equal(mprotect(map + 2 * page, (size_t)page, PROT_NONE), 0);
    unsigned char *lo = map + page, *hi = map + 2 * page;
    for (size_t n = 0; n <= 100; n++) {
        pattern(lo, n, (unsigned)n);
        /* from the page's start to its end, and back */
        execgate_memcpy(hi - n, lo, n);
        assert_memory_equal(hi - n, lo, n);
        pattern(hi - n, n, (unsigned)n + 1);
        execgate_memcpy(lo, hi - n, n);
        assert_memory_equal(lo, hi - n, n);
    }
    assert_int_equal(munmap(map, (size_t)page * 3), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strlen_every_alignment_and_length),
        cmocka_unit_test(test_strchr_finds_first_match_or_end),
        cmocka_unit_test(test_strchr_matches_before_start_are_ignored),
        cmocka_unit_test(test_strchr_high_byte_as_int),
        cmocka_unit_test(test_stpcpy_copies_and_points_at_nul),
        cmocka_unit_test(test_no_read_into_the_next_page),
        cmocka_unit_test(test_memcpy_every_alignment_and_length),
        cmocka_unit_test(test_memcpy_forward_overlapping_downwards),
        cmocka_unit_test(test_memcpy_stays_within_its_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
