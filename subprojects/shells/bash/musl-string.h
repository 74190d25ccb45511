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

#endif
