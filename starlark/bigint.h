/*
 * bigint: integers of any size, for the interpreter's ints that do not fit
 * in 64 bits (Codex's Starlark has arbitrary-precision integers).
 *
 * A value is a sign and a magnitude of 32-bit limbs, least significant
 * first, with no leading zero limb (zero has none).  Values are immutable:
 * every operation returns a new one, allocated in the machine's arena
 * (vm.h), so they die with the run and an error that unwinds leaks
 * nothing.  A result larger than the run's memory budget fails the run
 * with the arena's out-of-memory error; the long operations
 * (multiplication, division, conversion to and from text) also count
 * their work against the run's step budget, so no file can keep the
 * interpreter busy for long with a few enormous numbers.  Multiplication,
 * division and conversion to and from text are the schoolbook ones
 * (quadratic): rules files do no such arithmetic, and the step budget
 * bounds what a hostile file can make them do.  Nothing else fails:
 * division by zero is the caller's to refuse.
 */
#ifndef EXECGATE_STARLARK_BIGINT_H
#define EXECGATE_STARLARK_BIGINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct star_vm;

struct bigint {
    bool neg;        /* never set for zero */
    uint32_t n;      /* limbs in use */
    uint32_t limb[]; /* the magnitude, least significant limb first */
};

/* ---- conversions ---- */

struct bigint *bigint_from_i64(struct star_vm *vm, int64_t v);
/* Whether a fits in int64; then sets *out. */
bool bigint_to_i64(const struct bigint *a, int64_t *out);

/*
 * a as the nearest double, ties to even (IEEE round-half-even), as
 * Python's float(int) gives; a beyond the largest finite double gives
 * +inf or -inf.  Needs no machine: it allocates nothing.
 */
double bigint_to_double(const struct bigint *a);

/*
 * The integer d exactly.  d must be finite and integral (d == trunc(d));
 * otherwise the result is NULL and nothing is allocated.
 */
struct bigint *bigint_from_double(struct star_vm *vm, double d);

/* The value of c as a digit in the bases up to 36 ('0'-'9', then letters
 * of either case as 10 to 35), or 99 when it is none. */
int bigint_digit(char c);

/*
 * The digits s[0..len) in base (2 to 36; letters of either case stand for
 * 10 to 35), negated when neg.  Returns NULL when len is 0 or a byte is
 * not a digit of the base: signs, prefixes, spaces and underscores are the
 * caller's to strip.
 */
struct bigint *bigint_parse(struct star_vm *vm, const char *s, size_t len, unsigned base, bool neg);

/*
 * The digits of a in base (2 to 36; letters lower case unless upper), with
 * a leading '-' when negative: an arena-owned, NUL-terminated string whose
 * length goes in *len (when len is not NULL).
 */
char *bigint_to_string(struct star_vm *vm, const struct bigint *a, unsigned base, bool upper,
                       size_t *len);

/* ---- arithmetic ---- */

int bigint_sign(const struct bigint *a); /* -1, 0 or 1 */
int bigint_cmp(const struct bigint *a, const struct bigint *b);
/* A hash of the value: equal values hash alike. */
uint32_t bigint_hash(const struct bigint *a);

struct bigint *bigint_neg(struct star_vm *vm, const struct bigint *a);
struct bigint *bigint_abs(struct star_vm *vm, const struct bigint *a);
struct bigint *bigint_add(struct star_vm *vm, const struct bigint *a, const struct bigint *b);
struct bigint *bigint_sub(struct star_vm *vm, const struct bigint *a, const struct bigint *b);
struct bigint *bigint_mul(struct star_vm *vm, const struct bigint *a, const struct bigint *b);
/*
 * Floor division: *q = floor(a / b) and *r = a - *q * b (r has b's sign),
 * as Starlark's // and %.  Either of q and r may be NULL.  Returns false,
 * computing nothing, when b is zero.
 */
bool bigint_divmod(struct star_vm *vm, const struct bigint *a, const struct bigint *b,
                   struct bigint **q, struct bigint **r);

/* a * 2^n and floor(a / 2^n); the caller bounds n. */
struct bigint *bigint_shl(struct star_vm *vm, const struct bigint *a, uint64_t n);
struct bigint *bigint_shr(struct star_vm *vm, const struct bigint *a, uint64_t n);

/* Bitwise operations on the infinite two's-complement forms of a and b
 * (a negative number has infinitely many leading one bits), as Python. */
struct bigint *bigint_and(struct star_vm *vm, const struct bigint *a, const struct bigint *b);
struct bigint *bigint_or(struct star_vm *vm, const struct bigint *a, const struct bigint *b);
struct bigint *bigint_xor(struct star_vm *vm, const struct bigint *a, const struct bigint *b);
struct bigint *bigint_not(struct star_vm *vm, const struct bigint *a); /* -a - 1 */

#endif
