/*
 * star float: Starlark's floating-point numbers as Codex's interpreter has
 * them: IEEE doubles, their arithmetic with ints, their ordering (every NaN
 * equal to every other and above everything else), their text (str, repr,
 * %e %f %g, float() of a string) byte for byte as Codex prints and reads
 * them, starlark-rust's quirks included (docs/rules-interpreter.md).
 *
 * An int meets a double only through star_num_to_double and
 * star_float_to_int, the two places that know how ints are stored.
 */
#ifndef EXECGATE_STARLARK_FLOAT_H
#define EXECGATE_STARLARK_FLOAT_H

#include <stdbool.h>
#include <stddef.h>

#include "starlark/value.h"

struct star_vm;

/*
 * The longest text any formatter here writes, its NUL included: %f of
 * -DBL_MAX is 309 digits, a sign, a point and 6 decimals.
 */
#define STAR_FLOAT_TEXT_MAX 330

struct star_value star_float(double d);

/* Whether v is an int (of any size) or a float (a bool is neither, as in
 * Codex). */
static inline bool
star_is_num(struct star_value v)
{
    return v.type == STAR_INT || v.type == STAR_BIGINT || v.type == STAR_FLOAT;
}

/* An int or a float as a double (an int rounds to the nearest double, one
 * too large for any is infinite). */
double star_num_to_double(struct star_value v);

/* int(d): d truncated toward zero (an int of any size), failing the load
 * when it is NaN or infinite. */
struct star_value star_float_to_int(struct star_vm *vm, double d);

/*
 * a OP b for numbers a and b of which at least one is a float; op is the
 * T_* token of + - * / // %.  Fails the load for any other operator, and
 * for division by zero with Codex's messages.  Also int / int, which is a
 * float in Starlark.
 */
struct star_value star_num_binary(struct star_vm *vm, int op, struct star_value a,
                                  struct star_value b);

/* <0, 0, >0 for numbers a and b, at least one a float; NaN sorts last. */
int star_num_compare(struct star_value a, struct star_value b);
/* The hash of a number: equal for an int of 32 bits and the float equal to
 * it (1 and 1.0 are one dict key), as in Codex. */
uint32_t star_num_hash(struct star_value v);

/*
 * Parses s[0..n) as float() does: an optional sign, then digits with an
 * optional point and exponent, or inf, infinity or nan in any case.
 * Returns 0 and sets *out, or -1 when s is not a number, -2 when it
 * overflows to infinity without spelling inf, -3 when memory ran out.
 */
int star_float_parse(const char *s, size_t n, double *out);

/*
 * Writes d into out[STAR_FLOAT_TEXT_MAX] as conv says and returns the
 * length: 'r' str() and repr() (also %g), 'R' the same with 'E' (%G),
 * 'e'/'E' %e and %E, 'f' %f, and 'D' Rust's plain display that Codex uses
 * in its division-by-zero message.
 */
size_t star_float_text(double d, char conv, char out[STAR_FLOAT_TEXT_MAX]);

/* Appends star_float_text(d, conv) to b. */
void star_float_buf(struct star_vm *vm, struct star_buf *b, double d, char conv);

#endif
