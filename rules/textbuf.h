/*
 * textbuf: a growable NUL-terminated text (a common/buf), for the lines
 * the rules code builds (the check command's JSON, the lint's warnings).
 * Appending never fails loudly: the first allocation failure sticks in `failed`, later
 * appends do nothing, and the caller looks once at the end.
 */
#ifndef EXECGATE_RULES_TEXTBUF_H
#define EXECGATE_RULES_TEXTBUF_H

#include "common/buf.h"

#include <stdbool.h>
#include <stddef.h>

struct textbuf {
    struct buf buf; /* its data NUL-terminated once anything was appended */
    bool failed;
};

/* Appends s[0..n) (may hold NUL bytes). */
void textbuf_put(struct textbuf *b, const char *s, size_t n);

/* Appends the string s. */
void textbuf_puts(struct textbuf *b, const char *s);

#endif
