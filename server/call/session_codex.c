#include "server/call/session_codex.h"

#include "common/log.h"
#include "sandbox/placeholder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CODEX ".codex"

struct held {
    char *root;
    int dirfd; /* the root as it was when held: the release looks there */
    struct sandbox_placeholder ph;
};

struct session_codex {
    struct held *v;
    unsigned n, cap;
};

static bool
holds(const struct session_codex *sc, const char *root)
{
    for (unsigned i = 0; i < sc->n; i++) {
        if (strcmp(sc->v[i].root, root) == 0)
            return true;
    }
    return false;
}

/* Whether dir is one only this server's user writes to: its own, no
 * group or other write, and not "/".  Anywhere else another user's
 * server may make its calls' placeholder too, and one held for the whole
 * session would refuse their calls for that long (a placeholder held for
 * one call keeps that to the call's setup). */
static bool
private_dir(int dirfd)
{
    struct stat st;
    if (fstat(dirfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 0022) != 0)
        return false;
    struct stat top;
    return stat("/", &top) == 0 && (top.st_dev != st.st_dev || top.st_ino != st.st_ino);
}

/* One root: 0 held (kept in sc), or -errno (nothing kept: -EPERM where
 * it is not private_dir). */
static int
hold_one(struct session_codex *sc, const char *root)
{
    if (sc->n == sc->cap) {
        unsigned cap = sc->cap ? sc->cap * 2 : 4;
        struct held *v = realloc(sc->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        sc->v = v;
        sc->cap = cap;
    }
    struct held h = {.root = strdup(root),
                     .dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
                     .ph = {.fd = -1}};
    int rc = !h.root ? -ENOMEM : h.dirfd < 0 ? -errno : 0;
    if (rc == 0 && !private_dir(h.dirfd))
        rc = -EPERM;
    if (rc == 0) {
        rc = sandbox_placeholder_hold(h.dirfd, CODEX, &h.ph);
        rc = rc == 1 ? 0 : rc == 0 ? -EEXIST : rc;
    }
    if (rc < 0) {
        free(h.root);
        if (h.dirfd >= 0)
            close(h.dirfd);
        return rc;
    }
    sc->v[sc->n++] = h;
    return 0;
}

void
session_codex_hold(struct session_codex **psc, const char *const *roots)
{
    if (!roots || !roots[0])
        return;
    if (!*psc && !(*psc = calloc(1, sizeof(**psc)))) {
        log_debug("session: out of memory keeping placeholders; each call makes its own");
        return;
    }
    struct session_codex *sc = *psc;
    for (size_t i = 0; roots[i]; i++) {
        if (holds(sc, roots[i]))
            continue;
        int rc = hold_one(sc, roots[i]);
        /* -EEXIST: the user's own .codex, which the helper binds as it is;
         * -EPERM: a shared directory, where each call holds its own */
        if (rc < 0 && rc != -EEXIST && rc != -EPERM)
            log_debug("session: no placeholder kept at %s/" CODEX ": %s; each call makes its own",
                      roots[i], strerror(-rc));
    }
}

unsigned
session_codex_count(const struct session_codex *sc)
{
    return sc ? sc->n : 0;
}

void
session_codex_release(struct session_codex **psc)
{
    struct session_codex *sc = *psc;
    if (!sc)
        return;
    for (unsigned i = 0; i < sc->n; i++) {
        struct held *h = &sc->v[i];
        int rc = sandbox_placeholder_release(h->dirfd, CODEX, &h->ph);
        if (rc < 0)
            log_warn("session: cannot remove the placeholder %s/" CODEX ": %s", h->root,
                     strerror(-rc));
        close(h->dirfd);
        free(h->root);
    }
    free(sc->v);
    free(sc);
    *psc = NULL;
}
