#include "server/decide/approvals.h"

#include <stdlib.h>
#include <string.h>

/* One approved command: its strings packed into key, each followed by a NUL
 * (so "a b" and "a" "b" differ, and no separator can be forged). */
struct approval {
    char *key;
    size_t len;
    struct approval *next;
};

struct approvals {
    struct approval *head;
};

struct approvals *
approvals_new(void)
{
    return calloc(1, sizeof(struct approvals));
}

void
approvals_free(struct approvals *a)
{
    if (!a)
        return;
    for (struct approval *p = a->head, *next; p; p = next) {
        next = p->next;
        free(p->key);
        free(p);
    }
    free(a);
}

char *
approvals_key(const char *program, const char *const *args, size_t n, size_t *len)
{
    size_t total = strlen(program) + 1;
    for (size_t i = 0; i < n; i++)
        total += strlen(args[i]) + 1;
    char *key = malloc(total);
    if (!key)
        return NULL;
    size_t at = 0;
    size_t l = strlen(program) + 1;
    memcpy(key, program, l);
    at += l;
    for (size_t i = 0; i < n; i++) {
        l = strlen(args[i]) + 1;
        memcpy(key + at, args[i], l);
        at += l;
    }
    *len = total;
    return key;
}

int
approvals_add(struct approvals *a, const char *key, size_t len)
{
    if (approvals_contains(a, key, len))
        return 0;
    struct approval *p = calloc(1, sizeof(*p));
    char *copy = p && len > 0 ? malloc(len) : NULL;
    if (!copy) {
        free(p);
        return -1;
    }
    memcpy(copy, key, len);
    p->key = copy;
    p->len = len;
    p->next = a->head;
    a->head = p;
    return 0;
}

bool
approvals_contains(const struct approvals *a, const char *key, size_t len)
{
    for (const struct approval *p = a->head; p; p = p->next) {
        if (p->len == len && memcmp(p->key, key, len) == 0)
            return true;
    }
    return false;
}
