/*
 * strfmt: printf into a string of its own size, for the server's messages.
 */
#ifndef EXECGATE_COMMON_STRFMT_H
#define EXECGATE_COMMON_STRFMT_H

#include <stdarg.h>

/* The formatted text in a new buffer the caller frees, or NULL when out of
 * memory (callers say "out of memory" then, never treat NULL as success). */
char *strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* strfmt with the arguments as a va_list (which it consumes). */
char *vstrfmt(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
