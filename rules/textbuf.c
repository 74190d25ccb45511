#include "rules/textbuf.h"

#include <stdlib.h>
#include <string.h>

void
textbuf_put(struct textbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void
textbuf_puts(struct textbuf *b, const char *s)
{
    textbuf_put(b, s, strlen(s));
}
