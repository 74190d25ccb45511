#include "rules/textbuf.h"

#include <stdlib.h>
#include <string.h>

void
textbuf_put(struct textbuf *b, const char *s, size_t n)
{
    if (!b->failed && buf_append(&b->buf, s, n) < 0)
        b->failed = true;
}

void
textbuf_puts(struct textbuf *b, const char *s)
{
    textbuf_put(b, s, strlen(s));
}
