/*
 * utf8: command output is bytes, JSON strings are UTF-8.
 */
#ifndef EXECGATE_COMMON_UTF8_H
#define EXECGATE_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Whether the n bytes at s are well-formed UTF-8: no overlong form, no
 * surrogate, nothing above U+10FFFF, no truncated sequence (NUL bytes are
 * valid).  The one validator of the project: the escalation protocol's
 * text and the repair below read bytes the same way.
 */
bool utf8_valid(const char *s, size_t n);

/* The length (1 to 4) of the well-formed sequence at s, n > 0 bytes left,
 * or 0 when the bytes there are not one: what utf8_valid checks, one
 * character at a time (for a caller that repairs or escapes as it goes). */
size_t utf8_seq_len(const char *s, size_t n);

/*
 * Copies the n bytes at in into a new NUL-terminated UTF-8 string, each
 * invalid, overlong, surrogate or truncated sequence replaced by U+FFFD
 * (one replacement per maximal bad subpart, as the Unicode standard
 * recommends).  NUL bytes are kept; *out_len gets the length without the
 * terminator.  Returns NULL when out of memory.  Caller frees.
 */
char *utf8_lossy(const char *in, size_t n, size_t *out_len);

/*
 * The n bytes at in as the inside of a JSON string (no quotes): repaired as
 * utf8_lossy repairs them, then escaped as jansson's json_dumps escapes
 * (\" \\ \b \f \n \r \t, the other bytes below 0x20 as \u00XX, nothing
 * else), depth (1 or 2) times over: depth 2 is that string's text put in a
 * JSON string again.  Writes to out unless it is NULL, and returns the
 * length either way: call with NULL first to size out.  Cannot fail.
 */
size_t utf8_json_escape(char *out, const char *in, size_t n, unsigned depth);

#endif
