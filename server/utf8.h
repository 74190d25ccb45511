/*
 * utf8: command output is bytes, JSON strings are UTF-8.
 */
#ifndef EXECGATE_SERVER_UTF8_H
#define EXECGATE_SERVER_UTF8_H

#include <stddef.h>

/*
 * Copies the n bytes at in into a new NUL-terminated UTF-8 string, each
 * invalid, overlong, surrogate or truncated sequence replaced by U+FFFD
 * (one replacement per maximal bad subpart, as the Unicode standard
 * recommends).  NUL bytes are kept; *out_len gets the length without the
 * terminator.  Returns NULL when out of memory.  Caller frees.
 */
char *utf8_lossy(const char *in, size_t n, size_t *out_len);

#endif
