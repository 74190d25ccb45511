#include "server/call/writable_history.h"

#include <stdlib.h>

struct writable_history {
    struct writable_view *views;
    size_t n;
    size_t roots; /* over all views */
    bool everything;
};

struct writable_history *
writable_history_new(void)
{
    return calloc(1, sizeof(struct writable_history));
}

void
writable_history_free(struct writable_history *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        writable_view_release(&h->views[i]);
    free(h->views);
    free(h);
}

/* From now on every path counts as written; the views are no longer
 * needed.  Returns true (it became everything now) unless it was. */
static bool
become_everything(struct writable_history *h)
{
    bool now = !h->everything;
    for (size_t i = 0; i < h->n; i++)
        writable_view_release(&h->views[i]);
    free(h->views);
    h->views = NULL;
    h->n = 0;
    h->roots = 0;
    h->everything = true;
    return now;
}

bool
writable_history_add(struct writable_history *h, const struct writable_view *v)
{
    if (h->everything || v->kind == WRITABLE_VIEW_ALL)
        return false;
    for (size_t i = 0; i < h->n; i++) {
        if (writable_view_equal(&h->views[i], v))
            return false;
    }
    if (v->n > WRITABLE_HISTORY_MAX_ROOTS - h->roots)
        return become_everything(h);
    struct writable_view *grown = realloc(h->views, (h->n + 1) * sizeof(*grown));
    if (!grown)
        return become_everything(h);
    h->views = grown;
    if (writable_view_copy(&h->views[h->n], v) < 0)
        return become_everything(h);
    h->n++;
    h->roots += v->n;
    return false;
}

bool
writable_history_everything(const struct writable_history *h)
{
    return h->everything;
}

const struct writable_view *
writable_history_views(const struct writable_history *h, size_t *n)
{
    *n = h->n;
    return h->views;
}

size_t
writable_history_roots(const struct writable_history *h)
{
    return h->roots;
}

bool
writable_history_contains(const struct writable_history *h, const char *path)
{
    if (h->everything)
        return true;
    for (size_t i = 0; i < h->n; i++) {
        if (writable_view_contains(&h->views[i], path))
            return true;
    }
    return false;
}
