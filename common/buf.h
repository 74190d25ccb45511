/*
 * buf: a growable byte buffer, always NUL-terminated past its length so
 * that text built in it can be handed on as a C string.
 *
 * Growth doubles the capacity (amortised O(1) appends) and every size
 * computation is checked for overflow: a length near SIZE_MAX fails with
 * ENOMEM instead of wrapping into a short allocation.  After a failed
 * append the buffer holds what it held before.
 */
#ifndef EXECGATE_COMMON_BUF_H
#define EXECGATE_COMMON_BUF_H

#include <stddef.h>

struct buf {
    char *data; /* NULL until the first byte; then len bytes and a NUL */
    size_t len, cap;
};

#define BUF_INIT                                                                                   \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Makes room for n more bytes (and the NUL).  0, or -1 (errno ENOMEM). */
int buf_reserve(struct buf *b, size_t n);

/* Appends data[0..n).  0, or -1 (errno ENOMEM). */
int buf_append(struct buf *b, const void *data, size_t n);

/* Hands over the bytes (NUL-terminated; an empty string for an empty
 * buffer, NULL when out of memory) and empties b.  Caller frees. */
char *buf_steal(struct buf *b, size_t *len);

/* Frees what b holds and empties it. */
void buf_free(struct buf *b);

#endif
