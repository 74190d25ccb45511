#include "server/decide/rules_watch.h"

#include "common/log.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One watched directory, and the name in it that matters (NULL: any
 * *.rules file). */
struct watched_dir {
    uv_fs_event_t event;
    char *name;
    struct rules_watch *w;
};

struct rules_watch {
    uv_loop_t *loop;
    rules_watch_fn changed;
    void *data;
    uv_timer_t settle;
    uv_signal_t hup;
    struct watched_dir *dirs;
    size_t n_dirs;
    int handles_open;
    bool closing;
};

static bool
is_rules_name(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' && n > 6 && strcmp(name + n - 6, ".rules") == 0;
}

static void
on_settled(uv_timer_t *t)
{
    struct rules_watch *w = t->data;
    if (!w->closing)
        w->changed(w->data);
}

static void
on_event(uv_fs_event_t *h, const char *filename, int events, int status)
{
    struct watched_dir *d = h->data;
    struct rules_watch *w = d->w;
    if (w->closing)
        return;
    if (status < 0) {
        log_warn("rules: watching for changes: %s", uv_strerror(status));
        return;
    }
    /* without a name the kernel lost track (an overflow): look again */
    bool ours = !filename || (d->name ? strcmp(filename, d->name) == 0 : is_rules_name(filename));
    if (ours)
        uv_timer_start(&w->settle, on_settled, RULES_WATCH_SETTLE_MS, 0);
}

static void
on_hup(uv_signal_t *h, int signum)
{
    struct rules_watch *w = h->data;
    log_info("rules: SIGHUP: reloading");
    if (!w->closing)
        w->changed(w->data);
}

/* The directory to watch for path and the name in it, or for a directory
 * path itself no name; both malloc'd.  -1 when out of memory. */
static int
target_of(const char *path, char **dir, char **name)
{
    struct stat st;
    *dir = *name = NULL;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        *dir = strdup(path);
        return *dir ? 0 : -1;
    }
    const char *slash = strrchr(path, '/');
    *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    *name = strdup(slash ? slash + 1 : path);
    return *dir && *name ? 0 : -1;
}

static void
watch_one(struct rules_watch *w, const char *path)
{
    struct watched_dir *d = &w->dirs[w->n_dirs];
    char *dir = NULL;
    if (target_of(path, &dir, &d->name) < 0) {
        log_warn("rules: out of memory watching %s", path);
        free(dir);
        free(d->name);
        return;
    }
    d->w = w;
    int rc = uv_fs_event_init(w->loop, &d->event);
    if (rc == 0) {
        d->event.data = d;
        w->handles_open++;
        w->n_dirs++;
        rc = uv_fs_event_start(&d->event, on_event, dir, 0);
    }
    /* no such directory is the usual case of a user without rules: said,
     * not warned about */
    if (rc < 0)
        log_msg(rc == UV_ENOENT ? LOG_LEVEL_INFO : LOG_LEVEL_WARN,
                "rules: cannot watch %s for changes (%s): send SIGHUP to reload", dir,
                uv_strerror(rc));
    free(dir);
}

static void
on_closed(uv_handle_t *h)
{
    struct rules_watch *w = h->data;
    if (h->type == UV_FS_EVENT)
        w = ((struct watched_dir *)h->data)->w;
    if (--w->handles_open > 0)
        return;
    for (size_t i = 0; i < w->n_dirs; i++)
        free(w->dirs[i].name);
    free(w->dirs);
    free(w);
}

struct rules_watch *
rules_watch_new(uv_loop_t *loop, const char *const *paths, size_t n, rules_watch_fn changed,
                void *data)
{
    struct rules_watch *w = calloc(1, sizeof(*w));
    struct watched_dir *dirs = w ? calloc(n + 1, sizeof(*dirs)) : NULL;
    if (!dirs) {
        free(w);
        return NULL;
    }
    *w = (struct rules_watch){.loop = loop, .changed = changed, .data = data, .dirs = dirs};
    uv_timer_init(loop, &w->settle);
    uv_signal_init(loop, &w->hup);
    w->settle.data = w->hup.data = w;
    w->handles_open = 2;
    if (uv_signal_start(&w->hup, on_hup, SIGHUP) < 0)
        log_warn("rules: cannot handle SIGHUP");
    for (size_t i = 0; i < n; i++)
        watch_one(w, paths[i]);
    return w;
}

void
rules_watch_close(struct rules_watch *w)
{
    if (!w || w->closing)
        return;
    w->closing = true;
    uv_close((uv_handle_t *)&w->settle, on_closed);
    uv_close((uv_handle_t *)&w->hup, on_closed);
    for (size_t i = 0; i < w->n_dirs; i++)
        uv_close((uv_handle_t *)&w->dirs[i].event, on_closed);
}
