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
