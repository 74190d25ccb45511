/*
 * musl-string: the string functions the static musl Bash gets in place of
 * musl's (musl-string.c says why), under names of their own for the tests.
 * They behave as the C library's functions of the same name without the
 * prefix.
 */
#ifndef EXECGATE_BASH_MUSL_STRING_H
#define EXECGATE_BASH_MUSL_STRING_H

#include <stddef.h>

size_t execgate_strlen(const char *s);
char *execgate_strchrnul(const char *s, int c);
char *execgate_strchr(const char *s, int c);
char *execgate_stpcpy(char *restrict dst, const char *restrict src);
void *execgate_memcpy(void *restrict dst, const void *restrict src, size_t n);
/* As memmove where dst is below src or the two do not overlap (musl's
 * memmove calls it, as __memcpy_fwd, for those). */
void *execgate_memcpy_forward(void *dst, const void *src, size_t n);

#endif
