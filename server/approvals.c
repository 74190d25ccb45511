#include "approvals.h"

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
approvals_add(struct approvals *a, const char *program, const char *const *args, size_t n)
{
    if (approvals_contains(a, program, args, n))
        return 0;
    struct approval *p = calloc(1, sizeof(*p));
    if (!p)
        return -1;
    p->key = approvals_key(program, args, n, &p->len);
    if (!p->key) {
        free(p);
        return -1;
    }
    p->next = a->head;
    a->head = p;
    return 0;
}

bool
approvals_contains(const struct approvals *a, const char *program, const char *const *args,
                   size_t n)
{
    size_t len = 0;
    char *key = approvals_key(program, args, n, &len);
    if (!key)
        return false;
    bool found = false;
    for (const struct approval *p = a->head; p && !found; p = p->next)
        found = p->len == len && memcmp(p->key, key, len) == 0;
    free(key);
    return found;
}
