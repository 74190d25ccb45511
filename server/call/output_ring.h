/*
 * output_ring: what a call keeps of its output.
 *
 * Up to max bytes, all of it.  Past max, the first max/2 bytes stay (the
 * head) and the rest of the max bytes hold the newest output (the tail, a
 * ring); what falls out between them is counted, not kept.  One buffer of
 * at most max bytes holds both: it grows as output arrives, so a call that
 * prints little costs little, and nothing is moved when the ring starts.
 *
 * The text a person reads is the head, then output_ring_marker's line, then
 * the tail; the marker's first and last bytes are newlines, so each of the
 * three pieces can be checked as UTF-8 on its own with the same result as
 * their concatenation.
 */
#ifndef EXECGATE_SERVER_OUTPUT_RING_H
#define EXECGATE_SERVER_OUTPUT_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct output_ring {
    size_t max;         /* bytes kept at most (> 0) */
    char *buf;          /* the head, then (once cut) the ring up to buf + max */
    size_t cap;         /* bytes allocated at buf */
    size_t len;         /* bytes in buf */
    bool cut;           /* output went past max: buf[head_len, max) is the ring */
    size_t head_len;    /* once cut: max / 2 */
    size_t ring_oldest; /* once cut: the ring's oldest byte (and next write), from its start */
    uint64_t total;     /* bytes appended */
    uint64_t omitted;   /* bytes appended and not kept */
};

/* What was kept, in order: head, then (when cut) the marker and the tail. */
struct output_ring_text {
    const char *head;
    size_t head_len;
    const char *tail; /* "" unless cut */
    size_t tail_len;
    bool cut;
    uint64_t omitted; /* bytes left out (also out of memory while not cut) */
};

/* Longest marker line, with its NUL. */
#define OUTPUT_RING_MARKER_MAX 64

/* An empty ring keeping at most max (> 0) bytes.  Cannot fail. */
void output_ring_init(struct output_ring *r, size_t max);

/*
 * Keeps what it must of the n bytes at p.  Returns 0, or -1 when the buffer
 * could not grow (only before the ring starts): those n bytes are then
 * counted as omitted and the ring is as before.
 */
int output_ring_append(struct output_ring *r, const char *p, size_t n);

/*
 * Once the ring started: where the next read may put its bytes directly
 * (over the ring's oldest bytes, which they replace), and in *n how many
 * fit there in one run.  NULL before: append a copy then.  Saves a copy of
 * all output past max.  Cannot fail.
 */
char *output_ring_space(struct output_ring *r, size_t *n);

/* n bytes (at most what output_ring_space gave) were written where it said:
 * keeps them as output_ring_append would have.  Cannot fail. */
void output_ring_wrote(struct output_ring *r, size_t n);

/*
 * The kept text in *t, borrowed from r until the next change to r.  The
 * ring is first turned in place so that the tail is one run of bytes.
 * Cannot fail.
 */
void output_ring_text(struct output_ring *r, struct output_ring_text *t);

/*
 * The line between head and tail ("\n[execgate: N bytes of output
 * omitted]\n") into buf (OUTPUT_RING_MARKER_MAX bytes), NUL-terminated.
 * Returns its length.  Cannot fail.
 */
size_t output_ring_marker(uint64_t omitted, char *buf);

/* Frees the buffer; r is empty again (same max).  Safe on an empty ring. */
void output_ring_release(struct output_ring *r);

#endif
