/*
 * strv: NULL-terminated string vectors (char **), as execve and getenv's
 * environ have them, each string and the vector malloc'd.
 */
#ifndef EXECGATE_COMMON_STRV_H
#define EXECGATE_COMMON_STRV_H

#include <stddef.h>

/* Frees each string of v, then v; NULL is a no-op. */
void strv_free(char **v);

/* Frees v[0..n), then v, for a vector that keeps its count rather than
 * a NULL (entries may be NULL); NULL is a no-op. */
void strv_free_n(char **v, size_t n);

/* The number of strings before v's NULL; 0 for a NULL v. */
size_t strv_len(char *const *v);

#endif
