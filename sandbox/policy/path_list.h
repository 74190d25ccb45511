/*
 * path_list: a growable array of malloc'd paths (char **list, size_t n),
 * the shape the policy's writable set, the --protect locations and the
 * server's writable view keep their paths in.  An empty list is NULL, 0;
 * a list is freed with strv_free_n (common/strv.h).
 */
#ifndef EXECGATE_SANDBOX_PATH_LIST_H
#define EXECGATE_SANDBOX_PATH_LIST_H

#include <stdbool.h>
#include <stddef.h>

/* Appends a copy of path.  Returns 0, or -ENOMEM with the list as it was. */
int path_list_add(char ***list, size_t *n, const char *path);

/* Appends path itself (malloc'd), taking it: on failure (-ENOMEM) it is
 * freed and the list is as it was. */
int path_list_take(char ***list, size_t *n, char *path);

/* Whether path is in the list (same bytes). */
bool path_list_has(char *const *list, size_t n, const char *path);

#endif
