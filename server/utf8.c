#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid sequence at s (n bytes left), or 0 when it is not
 * valid; *bad gets how many bytes one replacement character stands for. */
static size_t
valid_len(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned char c = s[0];
    *bad = 1;
    if (c < 0x80)
        return 1;
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F; /* beyond U+10FFFF */
    } else {
        return 0;
    }
    for (size_t i = 1; i < need; i++) {
        if (i >= n)
            return 0;
        unsigned char b = s[i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF))
            return 0;
        *bad = i + 1;
    }
    return need;
}

char *
utf8_lossy(const char *in, size_t n, size_t *out_len)
{
    const unsigned char *s = (const unsigned char *)in;
    /* fast path: already valid */
    size_t i = 0, bad = 0;
    while (i < n) {
        size_t v = valid_len(s + i, n - i, &bad);
        if (!v)
            break;
        i += v;
    }
    /* each bad byte becomes at most 3 bytes */
    size_t cap = i == n ? n + 1 : i + (n - i) * 3 + 1;
    if (cap < n)
        return NULL;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    memcpy(out, in, i);
    size_t o = i;
    while (i < n) {
        size_t v = valid_len(s + i, n - i, &bad);
        if (v) {
            memcpy(out + o, s + i, v);
            o += v;
            i += v;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += bad;
        }
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}
