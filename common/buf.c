#include "common/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The first capacity: most of what is built here is a line or two. */
#define BUF_MIN_CAP 64

int
buf_reserve(struct buf *b, size_t n)
{
    if (n > SIZE_MAX - 1 - b->len) {
        errno = ENOMEM;
        return -1;
    }
    size_t need = b->len + n + 1; /* and the NUL */
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : BUF_MIN_CAP;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

int
buf_append(struct buf *b, const void *data, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

char *
buf_steal(struct buf *b, size_t *len)
{
    char *p = b->data ? b->data : strdup("");
    if (len)
        *len = b->data ? b->len : 0;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

void
buf_free(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
