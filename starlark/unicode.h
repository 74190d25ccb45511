/*
 * unicode: the code-point view of the interpreter's strings (valid UTF-8
 * inside) and the Unicode properties and case mappings of Rust's `char`
 * methods, which Codex's interpreter uses: is_whitespace, is_alphabetic,
 * is_numeric, is_lowercase, is_uppercase, to_uppercase and to_lowercase
 * (a character can map to up to three), plus the Cased and Case_Ignorable
 * properties that decide a final sigma.  The tables are generated
 * (starlark/gen/unicode_tables.rs) from the Rust standard library.
 */
#ifndef EXECGATE_STARLARK_UNICODE_H
#define EXECGATE_STARLARK_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most code points one character's case mapping yields. */
#define UNICODE_MAX_MAPPING 3

/* The code point at s[*i] (s[0..len) is valid UTF-8, *i < len); moves *i
 * past it. */
uint32_t unicode_next(const char *s, size_t len, size_t *i);
/* The code point that ends at s[*i - 1] (*i > 0); moves *i back to its
 * first byte. */
uint32_t unicode_prev(const char *s, size_t *i);
/* How many code points s[0..len) holds. */
size_t unicode_count(const char *s, size_t len);
/* The byte offset of code point number n (len when n is past the end). */
size_t unicode_offset(const char *s, size_t len, size_t n);
/* Whether s[0..len) is ASCII only (then bytes are code points). */
bool unicode_is_ascii(const char *s, size_t len);
/* How many bytes of s[0..n) (n > 0, s[0] not ASCII) a UTF-8 sequence
 * takes before it goes wrong, and in *whole whether they make a character
 * (well-formed as Unicode's table 3-7 has it: no overlong form, no
 * surrogate, nothing past U+10FFFF). */
size_t unicode_sequence(const char *s, size_t n, bool *whole);

bool unicode_is_whitespace(uint32_t cp);
bool unicode_is_alphabetic(uint32_t cp);
bool unicode_is_numeric(uint32_t cp);
bool unicode_is_lowercase(uint32_t cp);
bool unicode_is_uppercase(uint32_t cp);
bool unicode_is_cased(uint32_t cp);
bool unicode_is_case_ignorable(uint32_t cp);

/* The full upper- or lower-case mapping of cp into out; returns how many
 * code points (1..UNICODE_MAX_MAPPING). */
size_t unicode_to_upper(uint32_t cp, uint32_t out[UNICODE_MAX_MAPPING]);
size_t unicode_to_lower(uint32_t cp, uint32_t out[UNICODE_MAX_MAPPING]);

#endif
