/*
 * unicode: lookups in the generated tables by binary search; ASCII, the
 * common case in rules files, is answered without one.
 */
#include "starlark/unicode.h"

struct unicode_range {
    uint32_t first, last;
};

struct unicode_mapping {
    uint32_t cp;
    uint8_t n;
    uint32_t to[UNICODE_MAX_MAPPING];
};

#include "starlark/unicode_tables.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool
in_ranges(const struct unicode_range *r, size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].first)
            hi = mid;
        else if (cp > r[mid].last)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

static size_t
map(const struct unicode_mapping *m, size_t n, uint32_t cp, uint32_t out[UNICODE_MAX_MAPPING])
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < m[mid].cp) {
            hi = mid;
        } else if (cp > m[mid].cp) {
            lo = mid + 1;
        } else {
            for (size_t i = 0; i < m[mid].n; i++)
                out[i] = m[mid].to[i];
            return m[mid].n;
        }
    }
    out[0] = cp;
    return 1;
}

uint32_t
unicode_next(const char *s, size_t len, size_t *i)
{
    const unsigned char *p = (const unsigned char *)s + *i;
    uint32_t c = p[0];
    size_t n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    if (*i + n > len) /* not reached for valid UTF-8; stay in bounds anyway */
        n = len - *i;
    if (n == 2)
        c = ((c & 0x1f) << 6) | (p[1] & 0x3f);
    else if (n == 3)
        c = ((c & 0x0f) << 12) | ((uint32_t)(p[1] & 0x3f) << 6) | (p[2] & 0x3f);
    else if (n == 4)
        c = ((c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3f) << 12) | ((uint32_t)(p[2] & 0x3f) << 6) |
            (p[3] & 0x3f);
    *i += n;
    return c;
}

uint32_t
unicode_prev(const char *s, size_t *i)
{
    size_t j = *i - 1;
    while (j > 0 && ((unsigned char)s[j] & 0xc0) == 0x80)
        j--;
    size_t k = j;
    uint32_t c = unicode_next(s, *i, &k);
    *i = j;
    return c;
}

size_t
unicode_count(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

size_t
unicode_offset(const char *s, size_t len, size_t n)
{
    size_t i = 0;
    for (; i < len && n > 0; n--) {
        i++;
        while (i < len && ((unsigned char)s[i] & 0xc0) == 0x80)
            i++;
    }
    return i;
}

bool
unicode_is_ascii(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= 0x80)
            return false;
    return true;
}

bool
unicode_is_whitespace(uint32_t cp)
{
    if (cp < 0x80)
        return cp == ' ' || (cp >= '\t' && cp <= '\r');
    return in_ranges(unicode_whitespace, COUNT(unicode_whitespace), cp);
}

bool
unicode_is_alphabetic(uint32_t cp)
{
    if (cp < 0x80)
        return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    return in_ranges(unicode_alphabetic, COUNT(unicode_alphabetic), cp);
}

bool
unicode_is_numeric(uint32_t cp)
{
    if (cp < 0x80)
        return cp >= '0' && cp <= '9';
    return in_ranges(unicode_numeric, COUNT(unicode_numeric), cp);
}

bool
unicode_is_lowercase(uint32_t cp)
{
    if (cp < 0x80)
        return cp >= 'a' && cp <= 'z';
    return in_ranges(unicode_lowercase, COUNT(unicode_lowercase), cp);
}

bool
unicode_is_uppercase(uint32_t cp)
{
    if (cp < 0x80)
        return cp >= 'A' && cp <= 'Z';
    return in_ranges(unicode_uppercase, COUNT(unicode_uppercase), cp);
}

bool
unicode_is_cased(uint32_t cp)
{
    return in_ranges(unicode_cased, COUNT(unicode_cased), cp);
}

bool
unicode_is_case_ignorable(uint32_t cp)
{
    return in_ranges(unicode_case_ignorable, COUNT(unicode_case_ignorable), cp);
}

size_t
unicode_to_upper(uint32_t cp, uint32_t out[UNICODE_MAX_MAPPING])
{
    if (cp < 0x80) {
        out[0] = cp >= 'a' && cp <= 'z' ? cp - 32 : cp;
        return 1;
    }
    return map(unicode_upper, COUNT(unicode_upper), cp, out);
}

size_t
unicode_to_lower(uint32_t cp, uint32_t out[UNICODE_MAX_MAPPING])
{
    if (cp < 0x80) {
        out[0] = cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
        return 1;
    }
    return map(unicode_lower, COUNT(unicode_lower), cp, out);
}

size_t
unicode_sequence(const char *str, size_t n, bool *whole)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t need;
    *whole = false;
    if (c >= 0xc2 && c <= 0xdf)
        need = 2;
    else if (c >= 0xe0 && c <= 0xef)
        need = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        need = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 1;
    size_t k = 1;
    for (; k < need && k < n; k++) {
        if (s[k] < lo || s[k] > hi)
            return k;
        lo = 0x80, hi = 0xbf; /* only the second byte has a narrower range */
    }
    *whole = k == need;
    return k;
}
