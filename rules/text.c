/*
 * text: how the rules' strings are kept and shown: NUL bytes as U+2400
 * for people, as a stand-in inside the policy, and the UTF-8 check.
 */
#include "rules/text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NUL_SHOWN "\xe2\x90\x80" /* U+2400 SYMBOL FOR NULL */

char *
rules_text_shown(const char *s, size_t len)
{
    size_t nuls = 0;
    for (size_t i = 0; i < len; i++)
        nuls += s[i] == '\0';
    if (nuls > (SIZE_MAX - len - 1) / 2)
        return NULL;
    char *out = malloc(len + 2 * nuls + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\0') {
            memcpy(out + o, NUL_SHOWN, 3);
            o += 3;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return out;
}

bool
rules_has_nul_standin(const char *s)
{
    return strstr(s, RULES_NUL_STANDIN) != NULL;
}

void
rules_show_nul_standins(char *s)
{
    for (char *at = strstr(s, RULES_NUL_STANDIN); at; at = strstr(at + 2, RULES_NUL_STANDIN))
        memcpy(at, "\\0", 2);
}

size_t
rules_utf8_seq_len(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xbf;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        n = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        n = 3, lo = p[0] == 0xe0 ? 0xa0 : 0x80, hi = p[0] == 0xed ? 0x9f : 0xbf;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        n = 4, lo = p[0] == 0xf0 ? 0x90 : 0x80, hi = p[0] == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

bool
rules_text_is_utf8(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = rules_utf8_seq_len(p);
        if (n == 0)
            return false;
        p += n;
    }
    return true;
}
