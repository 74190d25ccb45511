#include "sandbox/policy/path_list.h"
#include "common/strv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
path_list_take(char ***list, size_t *n, char *path)
{
    char **grown = realloc(*list, (*n + 1) * sizeof *grown);
    if (grown == NULL) {
        free(path);
        return -ENOMEM;
    }
    grown[(*n)++] = path;
    *list = grown;
    return 0;
}

int
path_list_add(char ***list, size_t *n, const char *path)
{
    char *copy = strdup(path);
    if (copy == NULL)
        return -ENOMEM;
    return path_list_take(list, n, copy);
}

bool
path_list_has(char *const *list, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(list[i], path) == 0)
            return true;
    }
    return false;
}
