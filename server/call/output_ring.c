#include "server/call/output_ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The buffer's first size; it doubles from there, up to max. */
#define FIRST_CAP 4096u

void
output_ring_init(struct output_ring *r, size_t max)
{
    *r = (struct output_ring){.max = max};
}

void
output_ring_release(struct output_ring *r)
{
    free(r->buf);
    output_ring_init(r, r->max);
}

/* Room for need (<= max) bytes in the buffer. */
static int
reserve(struct output_ring *r, size_t need)
{
    if (need <= r->cap)
        return 0;
    size_t cap = r->cap ? r->cap : FIRST_CAP;
    while (cap < need)
        cap = cap > r->max / 2 ? r->max : cap * 2;
    if (cap > r->max)
        cap = r->max;
    char *grown = realloc(r->buf, cap);
    if (!grown)
        return -1;
    r->buf = grown;
    r->cap = cap;
    return 0;
}

/* Once cut, the ring is always full: each byte written replaces the oldest,
 * which is where the next write goes. */
static void
put_ring(struct output_ring *r, const char *p, size_t n)
{
    char *ring = r->buf + r->head_len;
    size_t size = r->max - r->head_len;
    r->omitted += n;
    if (n >= size) {
        memcpy(ring, p + (n - size), size);
        r->ring_oldest = 0;
        return;
    }
    size_t first = size - r->ring_oldest;
    if (first > n)
        first = n;
    memcpy(ring + r->ring_oldest, p, first);
    memcpy(ring, p + first, n - first);
    r->ring_oldest = (r->ring_oldest + n) % size;
}

int
output_ring_append(struct output_ring *r, const char *p, size_t n)
{
    r->total += n;
    if (!r->cut) {
        size_t room = r->max - r->len;
        size_t now = n < room ? n : room;
        if (reserve(r, r->len + now) < 0) {
            r->omitted += n;
            return -1;
        }
        if (now > 0)
            memcpy(r->buf + r->len, p, now);
        r->len += now;
        if (now == n)
            return 0;
        /* One byte over: the first half stays, the second half becomes the
         * ring, full, with its oldest byte at its start. */
        r->cut = true;
        r->head_len = r->max / 2;
        r->ring_oldest = 0;
        p += now;
        n -= now;
    }
    put_ring(r, p, n);
    return 0;
}

char *
output_ring_space(struct output_ring *r, size_t *n)
{
    if (!r->cut)
        return NULL;
    *n = r->max - r->head_len - r->ring_oldest;
    return r->buf + r->head_len + r->ring_oldest;
}

void
output_ring_wrote(struct output_ring *r, size_t n)
{
    r->total += n;
    r->omitted += n;
    r->ring_oldest = (r->ring_oldest + n) % (r->max - r->head_len);
}

static void
reverse(char *p, size_t n)
{
    for (size_t i = 0, j = n; i + 1 < j; i++, j--) {
        char t = p[i];
        p[i] = p[j - 1];
        p[j - 1] = t;
    }
}

void
output_ring_text(struct output_ring *r, struct output_ring_text *t)
{
    if (r->cut && r->ring_oldest > 0) {
        /* turned left by ring_oldest, in place: three reversals */
        char *ring = r->buf + r->head_len;
        size_t size = r->max - r->head_len;
        reverse(ring, r->ring_oldest);
        reverse(ring + r->ring_oldest, size - r->ring_oldest);
        reverse(ring, size);
        r->ring_oldest = 0;
    }
    t->head = r->buf ? r->buf : "";
    t->head_len = r->cut ? r->head_len : r->len;
    t->tail = r->cut ? r->buf + r->head_len : "";
    t->tail_len = r->cut ? r->max - r->head_len : 0;
    t->cut = r->cut;
    t->omitted = r->omitted;
}

size_t
output_ring_marker(uint64_t omitted, char *buf)
{
    int n = snprintf(buf, OUTPUT_RING_MARKER_MAX, "\n[execgate: %llu bytes of output omitted]\n",
                     (unsigned long long)omitted);
    return n > 0 ? (size_t)n : 0;
}
