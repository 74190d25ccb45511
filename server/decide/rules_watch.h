/*
 * rules_watch: the server's rules files and directories, watched so that
 * an edit takes effect without a restart.  Each path is watched through
 * its directory (uv_fs_event: inotify), since editors replace a file by
 * writing another and renaming it over; SIGHUP asks for a reload too, as
 * daemons do.  A burst of events (write, rename, chmod) brings one call of
 * the callback, RULES_WATCH_SETTLE_MS after the last of them; an idle
 * watch costs nothing.
 */
#ifndef EXECGATE_SERVER_RULES_WATCH_H
#define EXECGATE_SERVER_RULES_WATCH_H

#include <stddef.h>
#include <uv.h>

/* Quiet time after the last event before the callback runs. */
#define RULES_WATCH_SETTLE_MS 100

struct rules_watch;

/* Told that the rules may have changed (borrowed data). */
typedef void (*rules_watch_fn)(void *data);

/*
 * Watches paths[0..n) (rules files or directories of *.rules; one that
 * does not exist yet is watched through its parent, so that creating it
 * counts) and SIGHUP.  A path that cannot be watched is logged and left
 * out: SIGHUP still reloads.  Returns NULL when out of memory.
 */
struct rules_watch *rules_watch_new(uv_loop_t *loop, const char *const *paths, size_t n,
                                    rules_watch_fn changed, void *data);

/* Stops watching; w is freed once its handles have closed.  NULL is a
 * no-op. */
void rules_watch_close(struct rules_watch *w);

#endif
