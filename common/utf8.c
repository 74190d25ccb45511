#include "common/utf8.h"

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

size_t
utf8_seq_len(const char *s, size_t n)
{
    size_t bad;
    return valid_len((const unsigned char *)s, n, &bad);
}

bool
utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t bad;
    for (size_t i = 0; i < n;) {
        size_t v = valid_len(p + i, n - i, &bad);
        if (v == 0)
            return false;
        i += v;
    }
    return true;
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

/* Where escaped text goes. */
struct sink {
    char *out;
    size_t len;
};

static void
put(struct sink *s, const char *p, size_t n)
{
    memcpy(s->out + s->len, p, n);
    s->len += n;
}

/* Bytes that JSON text carries as they are (UTF-8 from 0x80 is checked
 * apart). */
static int
plain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* The ASCII byte c escaped depth times: its escape, each byte of which is
 * escaped depth - 1 times. */
static void
put_escaped(struct sink *s, unsigned char c, unsigned depth)
{
    if (depth == 0 || plain(c)) {
        put(s, (const char *)&c, 1);
        return;
    }
    static const char hex[] = "0123456789ABCDEF";
    char e[6] = {'\\', (char)c};
    size_t n = 2;
    switch (c) {
    case '\b':
        e[1] = 'b';
        break;
    case '\f':
        e[1] = 'f';
        break;
    case '\n':
        e[1] = 'n';
        break;
    case '\r':
        e[1] = 'r';
        break;
    case '\t':
        e[1] = 't';
        break;
    case '"':
    case '\\':
        break;
    default: /* another control: \u00XX, as jansson writes it */
        memcpy(e + 1, "u00", 3);
        e[4] = hex[c >> 4];
        e[5] = hex[c & 0xF];
        n = 6;
    }
    for (size_t i = 0; i < n; i++)
        put_escaped(s, (unsigned char)e[i], depth - 1);
}

/* What each ASCII byte becomes, escaped depth (1 or 2) times: itself (one
 * byte) or its escape, the longest of which (a control escaped twice,
 * \\u001F) takes 7 bytes. */
struct escapes {
    unsigned char len[0x80];
    char text[0x80][8];
};

static void
escapes_init(struct escapes *e, unsigned depth)
{
    memset(e, 0, sizeof(*e)); /* escape8 copies all 8 bytes of each */
    for (unsigned c = 0; c < 0x80; c++) {
        struct sink k = {e->text[c], 0};
        put_escaped(&k, (unsigned char)c, depth);
        e->len[c] = (unsigned char)k.len;
    }
}

#define FFFD      "\xEF\xBF\xBD"
#define HIGH_BITS 0x8080808080808080u

/* Whether the 8 bytes at s are all ASCII. */
static int
ascii8(const unsigned char *s)
{
    uint64_t w;
    memcpy(&w, s, sizeof(w));
    return (w & HIGH_BITS) == 0;
}

#define ONES 0x0101010101010101u

/*
 * Of the 8 ASCII bytes at s, those that need an escape (below 0x20, '"',
 * '\\'): the high bit of each such byte.  Exact byte by byte: every sum
 * stays below 0x100 in each byte, so nothing carries into the next.
 */
static uint64_t
specials(const unsigned char *s)
{
    uint64_t w, q, b;
    memcpy(&w, s, sizeof(w));
    q = w ^ (ONES * '"');
    b = w ^ (ONES * '\\');
    /* w + 0x60 reaches 0x80 from 0x20 up; q + 0x7F from 1 up */
    return ~((w + ONES * 0x60) & (q + ONES * 0x7F) & (b + ONES * 0x7F)) & HIGH_BITS;
}

/* The index of the first byte whose bit is in mask (specials' order: the
 * byte at the lowest address is the lowest in w on a little-endian
 * machine). */
static size_t
first_byte(uint64_t mask)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (size_t)__builtin_ctzll(mask) / 8;
#else
    return (size_t)__builtin_clzll(mask) / 8;
#endif
}

/* Clears the bit of the first byte in mask. */
static uint64_t
next_byte(uint64_t mask)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return mask & (mask - 1);
#else
    return mask & ~(0x8000000000000000u >> (8 * first_byte(mask)));
#endif
}

/* The UTF-8 sequence at s, or its replacement: its length, and in *text
 * what to write; *used gets the input bytes it stands for. */
static size_t
non_ascii(const unsigned char *s, size_t n, const char **text, size_t *used)
{
    size_t bad, v = valid_len(s, n, &bad);
    *text = v ? (const char *)s : FFFD;
    *used = v ? v : bad;
    return v ? v : 3;
}

static size_t
escaped_len(const unsigned char *s, size_t n, const struct escapes *e)
{
    size_t len = 0, i = 0, used;
    const char *text;
    while (i < n) {
        if (n - i >= 8 && ascii8(s + i)) {
            len += 8;
            for (uint64_t m = specials(s + i); m; m = next_byte(m))
                len += e->len[s[i + first_byte(m)]] - 1u;
            i += 8;
        } else if (s[i] < 0x80) {
            len += e->len[s[i++]];
        } else {
            len += non_ascii(s + i, n - i, &text, &used);
            i += used;
        }
    }
    return len;
}

/*
 * The 8 ASCII bytes at s, escaped where mask (specials) says.  Copies 8
 * bytes at a time, of which only those up to the next byte to escape count:
 * it writes up to 8 bytes past its own output and reads up to 8 past the
 * 8 at s, so the caller leaves room for both.
 */
static size_t
escape8(char *out, const unsigned char *s, uint64_t mask, const struct escapes *e)
{
    size_t o = 0, i = 0;
    for (; mask; mask = next_byte(mask)) {
        size_t k = first_byte(mask);
        memcpy(out + o, s + i, 8);
        o += k - i;
        memcpy(out + o, e->text[s[k]], 8);
        o += e->len[s[k]];
        i = k + 1;
    }
    memcpy(out + o, s + i, 8);
    return o + 8 - i;
}

static size_t
escape(char *out, const unsigned char *s, size_t n, const struct escapes *e)
{
    size_t o = 0, i = 0, used;
    const char *text;
    while (i < n) {
        /* Every input byte makes at least one output byte, so with 16
         * input bytes left escape8 has the room it needs on both sides. */
        if (n - i >= 16 && ascii8(s + i)) {
            o += escape8(out + o, s + i, specials(s + i), e);
            i += 8;
        } else if (s[i] < 0x80) {
            memcpy(out + o, e->text[s[i]], e->len[s[i]]);
            o += e->len[s[i++]];
        } else {
            size_t len = non_ascii(s + i, n - i, &text, &used);
            memcpy(out + o, text, len);
            o += len;
            i += used;
        }
    }
    return o;
}

size_t
utf8_json_escape(char *out, const char *in, size_t n, unsigned depth)
{
    struct escapes e;
    escapes_init(&e, depth > 1 ? 2 : 1);
    const unsigned char *s = (const unsigned char *)in;
    return out ? escape(out, s, n, &e) : escaped_len(s, n, &e);
}
