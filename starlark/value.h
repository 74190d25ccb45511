/*
 * star value: the values of the Starlark interpreter.  Every value, string
 * and AST node of one load lives in the machine's arena (vm.h) and dies
 * with it, so nothing is reference-counted and an error can unwind
 * (longjmp) from anywhere without leaking.
 */
#ifndef EXECGATE_STARLARK_VALUE_H
#define EXECGATE_STARLARK_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct star_vm;

enum star_type {
    STAR_UNBOUND = 0, /* a variable not yet assigned; never visible to programs */
    STAR_NONE,
    STAR_BOOL,
    STAR_INT,
    STAR_FLOAT, /* a double: starlark/float.h */
    STAR_STRING,
    STAR_LIST,
    STAR_TUPLE,
    STAR_DICT,
    STAR_FUNCTION,
    STAR_BUILTIN,
    STAR_RANGE,
    STAR_ITERATOR, /* what elems() and codepoints() return: iterable only, as in Codex */
    STAR_BIGINT,   /* an int outside int64 (type() says "int"); one inside is always STAR_INT */
    STAR_BYTES,    /* b"...": any bytes (u.s; its data need not be UTF-8), as in Codex */
};

struct star_str {
    size_t len;
    uint32_t hash; /* 0 until computed */
    char data[];   /* NUL-terminated */
};

/* Lists and tuples share a representation; a tuple is always frozen. */
struct star_list {
    struct star_value *items;
    size_t len, cap;
    uint32_t iterating; /* > 0 while a loop walks it: mutation is refused */
    bool frozen;
    bool deep_frozen; /* everything reachable is frozen too (tuples start frozen) */
    bool printing;    /* being printed: met again inside itself, it prints as [...] */
};

struct star_dict;
struct star_function;
struct star_builtin;
struct bigint;

struct star_range {
    int64_t start, stop, step;
};

struct star_value {
    uint8_t type;
    union {
        bool b;
        int64_t i;
        double fl;
        struct star_str *s; /* STAR_STRING (valid UTF-8) and STAR_BYTES */
        struct star_list *l;
        struct star_dict *d;
        struct star_function *f;
        struct star_builtin *bi;
        struct star_range *r;
        struct bigint *big; /* STAR_BIGINT: never fits in int64 */
    } u;
};

/* ---- constructors (arena-owned results; never NULL) ---- */
struct star_value star_none(void);
struct star_value star_bool(bool b);
struct star_value star_int(int64_t i);
/* The int b: the small form (STAR_INT) when it fits in int64, so each
 * value has one form and equality, hashing and dict keys need no more. */
struct star_value star_int_big(struct bigint *b);
/* The int v (either form) as a bigint. */
struct bigint *star_int_to_big(struct star_vm *vm, struct star_value v);
static inline bool
star_is_int(struct star_value v)
{
    return v.type == STAR_INT || v.type == STAR_BIGINT;
}
struct star_str *star_str_new(struct star_vm *vm, const char *s, size_t len);
struct star_value star_string(struct star_vm *vm, const char *s, size_t len);
struct star_value star_string_of(struct star_str *s);
/* A bytes value: s holds any bytes, not necessarily UTF-8. */
struct star_value star_bytes(struct star_vm *vm, const char *s, size_t len);
struct star_value star_bytes_of(struct star_str *s);
struct star_value star_list_new(struct star_vm *vm, size_t cap);
struct star_value star_tuple_new(struct star_vm *vm, size_t len); /* items all None */
struct star_value star_dict_new(struct star_vm *vm);
/* An iterator over the items of list (which it takes): it can be iterated
 * (for, list(), sorted(), ...) but not indexed, measured or searched; str()
 * gives "iterator" and it equals only itself. */
struct star_value star_iterator_new(struct star_list *items);

/* Appends to a list (fails the load if frozen or iterating). */
void star_list_append(struct star_vm *vm, struct star_value list, struct star_value v);

/* ---- dicts (insertion-ordered) ---- */
size_t star_dict_len(const struct star_dict *d);
/* Returns true and sets *out when key is present.  Fails if key is unhashable. */
bool star_dict_get(struct star_vm *vm, struct star_dict *d, struct star_value key,
                   struct star_value *out);
void star_dict_set(struct star_vm *vm, struct star_dict *d, struct star_value key,
                   struct star_value v);
/* Removes key; returns true and sets *out (may be NULL) when it was present. */
bool star_dict_del(struct star_vm *vm, struct star_dict *d, struct star_value key,
                   struct star_value *out);
void star_dict_clear(struct star_vm *vm, struct star_dict *d);
/* Iteration by position: *pos starts at 0; returns false at the end. */
bool star_dict_next(const struct star_dict *d, size_t *pos, struct star_value *key,
                    struct star_value *val);
void star_dict_check_mutable(struct star_vm *vm, struct star_dict *d);
void star_dict_iter_begin(struct star_dict *d);
void star_dict_iter_end(struct star_dict *d);

/* ---- operations on any value ---- */

/* "string", "list", "NoneType", ... as Starlark's type() returns. */
const char *star_type_name(struct star_value v);

/* How many integers a range yields (step is never 0). */
uint64_t star_range_len(const struct star_range *r);
/*
 * How many elements Codex 0.169 says a range has, for len(), indexing,
 * slicing and ==: it counts in 32-bit arithmetic, which goes wrong when the
 * span (stop - start) does not fit in 32 bits: range(-2147483648,
 * 2147483647, 1073741824) yields 4 ints but counts 0, and some such ranges
 * count more than they yield.  Returns -1 where Codex fails with "Integer
 * overflow" instead; star_range_len otherwise.
 */
int64_t star_range_codex_len(const struct star_range *r);
/* star_range_codex_len, failing the load where Codex fails. */
int64_t star_range_count(struct star_vm *vm, const struct star_range *r);
/* Whether Codex counts 0 elements in r although it yields ints: Codex
 * then drops a loop over it where it knows the range before running
 * (eval.c), makes an empty tuple of it and aborts making a list of it. */
bool star_range_codex_empty(const struct star_range *r);
/* Fails the load when v is such a range and Codex aborts where it would
 * be made a list (list(), enumerate(), extend, +=; what names that). */
void star_range_check_listable(struct star_vm *vm, struct star_value v, const char *what);

/* Whether v is one of the iterables (list, tuple, dict, range) that
 * star_iterable_items takes: strings are not iterable in Starlark. */
bool star_is_iterable(struct star_value v);
bool star_truth(struct star_value v);
/* The hash of an int (a float equal to an int hashes the same). */
static inline uint32_t
star_int_hash(int64_t i)
{
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(x >> 32) ^ (uint32_t)x;
}
/* Hash (fails the load for unhashable values); a string's is star_str_hash. */
uint32_t star_hash(struct star_vm *vm, struct star_value v);
bool star_equal(struct star_vm *vm, struct star_value a, struct star_value b);
/* <0, 0, >0; fails the load when the values are not ordered. */
int star_compare(struct star_vm *vm, struct star_value a, struct star_value b);
/* Freezes v and everything reachable from it (iteratively: depth cannot
 * exhaust the C stack). */
void star_freeze(struct star_vm *vm, struct star_value v);

/* Growable byte buffer in the arena, for repr/str/format. */
struct star_buf {
    char *data;
    size_t len, cap;
};
void star_buf_add(struct star_vm *vm, struct star_buf *b, const char *s, size_t n);
void star_buf_addc(struct star_vm *vm, struct star_buf *b, char c);
/* Appends the UTF-8 encoding of cp, a code point the caller has checked
 * (at most 0x10FFFF). */
void star_buf_add_utf8(struct star_vm *vm, struct star_buf *b, uint32_t cp);
void star_buf_addf(struct star_vm *vm, struct star_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends repr(v) (quote_strings) or str(v). */
void star_buf_value(struct star_vm *vm, struct star_buf *b, struct star_value v,
                    bool quote_strings);
void star_buf_quote(struct star_vm *vm, struct star_buf *b, const char *s, size_t n);
/* Appends any bytes as UTF-8: each ill-formed sequence (its longest
 * start that could still become a character) becomes U+FFFD, as Codex's
 * str() of bytes. */
void star_buf_add_lossy(struct star_vm *vm, struct star_buf *b, const char *s, size_t n);
struct star_value star_buf_string(struct star_vm *vm, struct star_buf *b);

#endif
