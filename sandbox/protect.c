/*
 * protect: resolving, creating, pinning and binding the --protect paths.
 */
#include "sandbox/protect.h"
#include "sandbox/ns.h"
#include "common/strv.h"
#include "sandbox/policy/path_list.h"
#include "sandbox/policy/policy.h"
#include "common/canon_path.h"
#include "common/no_link.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sandbox_protect {
    char **loc; /* canonical writable locations */
    size_t n_loc;
    char **bound; /* paths bound read-only through this set */
    size_t n_bound;
    char **pinned; /* directories pinned through this set */
    size_t n_pinned;
};

bool
sandbox_path_within(const char *path, const char *root)
{
    size_t len = strlen(root);
    if (len == 1 && root[0] == '/')
        return path[0] == '/';
    return strncmp(path, root, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

/* Adds the canonical form of path to sp's locations.  A location that
 * does not exist is left out (Landlock grants nothing there); one that
 * cannot be resolved otherwise is kept as given (Landlock then refuses
 * it, which ends the helper). */
static int
add_location(struct sandbox_protect *sp, const char *path)
{
    char *canon = canon_path(path);
    if (canon == NULL && errno == ENOMEM)
        return -ENOMEM;
    if (canon == NULL && (errno == ENOENT || errno == ENOTDIR))
        return 0;
    int rc = path_list_add(&sp->loc, &sp->n_loc, canon ? canon : path);
    free(canon);
    return rc;
}

struct sandbox_protect *
sandbox_protect_new(const struct sandbox_writable *w)
{
    struct sandbox_protect *sp = calloc(1, sizeof *sp);
    if (sp == NULL)
        return NULL;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < w->n_roots; i++)
        rc = add_location(sp, w->roots[i]);
    if (rc < 0) {
        sandbox_protect_free(sp);
        return NULL;
    }
    return sp;
}

void
sandbox_protect_free(struct sandbox_protect *sp)
{
    if (sp == NULL)
        return;
    strv_free_n(sp->loc, sp->n_loc);
    strv_free_n(sp->bound, sp->n_bound);
    strv_free_n(sp->pinned, sp->n_pinned);
    free(sp);
}

size_t
sandbox_protect_location_count(const struct sandbox_protect *sp)
{
    return sp->n_loc;
}

const char *
sandbox_protect_location(const struct sandbox_protect *sp, size_t i)
{
    return i < sp->n_loc ? sp->loc[i] : NULL;
}

/* Whether path lies within one of sp's locations (strictly: beneath it,
 * not equal to it). */
static bool
within_any(const struct sandbox_protect *sp, const char *path, bool strictly)
{
    for (size_t i = 0; i < sp->n_loc; i++)
        if (sandbox_path_within(path, sp->loc[i]) && !(strictly && strcmp(path, sp->loc[i]) == 0))
            return true;
    return false;
}

/* Sets *err to "WHAT PATH" (malloc'd; NULL when out of memory) and
 * returns rc. */
static int
failf(char **err, int rc, const char *what, const char *path)
{
    if (asprintf(err, "%s %s", what, path) < 0)
        *err = NULL;
    return rc;
}

/* Cuts the last component off the absolute path p, in place ("/a//b/" ->
 * "/a", "/a" -> "/"). */
static void
strip_last(char *p)
{
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/')
        len--;
    while (len > 0 && p[len - 1] != '/')
        len--;
    while (len > 1 && p[len - 1] == '/')
        len--;
    p[len > 0 ? len : 1] = '\0';
}

/* base followed by the components of tail, "/"-separated, without empty
 * components; NULL when out of memory. */
static char *
join(const char *base, const char *tail)
{
    size_t blen = strlen(base);
    char *out = malloc(blen + strlen(tail) + 2);
    if (out == NULL)
        return NULL;
    memcpy(out, base, blen + 1);
    if (blen == 1) /* "/" */
        blen = 0;
    for (const char *c = tail; *c != '\0';) {
        c += strspn(c, "/");
        size_t len = strcspn(c, "/");
        if (len > 0) {
            out[blen++] = '/';
            memcpy(out + blen, c, len);
            blen += len;
            out[blen] = '\0';
        }
        c += len;
    }
    return out;
}

int
sandbox_protect_resolve(const struct sandbox_protect *sp, const char *path, char **resolved,
                        size_t *missing, char **err)
{
    *resolved = NULL;
    *missing = 0;
    *err = NULL;
    char *prefix = strdup(path);
    if (prefix == NULL)
        return -ENOMEM;
    int first = 0; /* why path itself did not resolve */
    size_t n = 0;
    char *base;
    while ((base = canon_path(prefix)) == NULL) {
        int e = errno;
        if (e == ENOMEM || strcmp(prefix, "/") == 0) {
            free(prefix);
            return failf(err, -e, "cannot resolve", path);
        }
        if (first == 0)
            first = e;
        strip_last(prefix);
        n++;
    }
    char *full = join(base, path + strlen(prefix));
    free(prefix);
    if (full == NULL) {
        free(base);
        return -ENOMEM;
    }
    bool inside = within_any(sp, first == 0 || first == ENOENT ? full : base, false);
    free(base);
    if (first != 0 && first != ENOENT && inside) {
        /* A command could have made it so (a file or a symlink loop in
         * place of a directory, a directory it then chmods): refuse
         * rather than guess what it will name later. */
        free(full);
        return failf(err, -first, "cannot resolve", path);
    }
    *resolved = full;
    *missing = first == ENOENT ? n : 0;
    return inside ? 1 : 0;
}

/* The part of the canonical path that exists: path without its last
 * `missing` components (malloc'd; NULL when out of memory). */
static char *
existing_part(const char *path, size_t missing)
{
    char *p = strdup(path);
    for (size_t i = 0; p != NULL && i < missing; i++)
        strip_last(p);
    return p;
}

/*
 * Creates the last *missing components of the canonical path as
 * directories (0700), each with mkdirat in the directory opened before it
 * and opened without following symlinks, so that what is created is where
 * the path says, whatever a concurrent command does; *missing counts down
 * as they are made.  A creation refused with EROFS, or with EACCES/EPERM
 * in a directory the caller does not own, ends the creation without an
 * error: the command, with the same ids, less access and no capabilities
 * beyond the helper's, cannot do it either.  In a directory the caller
 * owns it could, after a chmod (allowed inside a writable location), so
 * that is refused.  (Inside its user namespace the helper's capabilities
 * override the mode of files whose owner and group are both mapped, so
 * this happens with a directory of the user's whose group is not the
 * user's.)
 */
static int
create_missing(const char *path, size_t *missing, char **err)
{
    char *dir = existing_part(path, *missing);
    if (dir == NULL)
        return -ENOMEM;
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int rc = fd < 0 ? failf(err, -errno, "opening", dir) : 0;
    const char *c = path + strlen(dir);
    while (rc == 0 && *missing > 0) {
        c += strspn(c, "/");
        size_t len = strcspn(c, "/");
        char *name = strndup(c, len);
        char *next = name ? join(dir, name) : NULL;
        if (next == NULL) {
            free(name);
            rc = -ENOMEM;
            break;
        }
        c += len;
        free(dir);
        dir = next;
        if (mkdirat(fd, name, 0700) != 0 && errno != EEXIST) {
            int e = errno;
            struct stat st;
            bool owned = fstat(fd, &st) != 0 || st.st_uid == geteuid();
            free(name);
            if (e != EROFS && !((e == EACCES || e == EPERM) && !owned))
                rc = failf(err, -e, "creating", dir);
            break;
        }
        int sub = no_link_step(fd, name, len, O_DIRECTORY);
        free(name);
        if (sub < 0) {
            /* A symlink or a file where a directory was to be created. */
            rc = sub;
            if (asprintf(err, "creating %s: %s is in the way", path, dir) < 0)
                *err = NULL;
            break;
        }
        close(fd);
        fd = sub;
        (*missing)--;
    }
    if (fd >= 0)
        close(fd);
    free(dir);
    return rc;
}

/* Pins the ancestors of the canonical path that lie strictly inside a
 * location, outermost first, up to (and not including) its part that
 * does not exist; path itself is pinned only when it does not fully
 * exist (its deepest existing part is then the last ancestor). */
static int
pin_ancestors(struct sandbox_protect *sp, const char *path, size_t missing, char **err)
{
    char *exist = existing_part(path, missing);
    if (exist == NULL)
        return -ENOMEM;
    size_t end = strlen(exist);
    bool include_last = missing > 0;
    int rc = 0;
    for (size_t i = 1; rc == 0 && i <= end; i++) {
        if (i < end && exist[i] != '/')
            continue;
        if (i == end && !include_last)
            break;
        char saved = exist[i];
        exist[i] = '\0';
        /* Already a mount point (pinned, or bound read-only): nothing to
         * add. */
        if (within_any(sp, exist, true) && !path_list_has(sp->pinned, sp->n_pinned, exist) &&
            !path_list_has(sp->bound, sp->n_bound, exist)) {
            rc = sandbox_ns_pin(exist);
            if (rc < 0)
                failf(err, rc, "pinning", exist);
            else
                rc = path_list_add(&sp->pinned, &sp->n_pinned, exist);
        }
        exist[i] = saved;
    }
    free(exist);
    return rc;
}

int
sandbox_protect_apply(struct sandbox_protect *sp, const char *path, json_t *ro, char **err)
{
    char *resolved = NULL;
    size_t missing = 0;
    int rc = sandbox_protect_resolve(sp, path, &resolved, &missing, err);
    if (rc <= 0) {
        free(resolved);
        return rc;
    }
    rc = 0;
    if (missing > 0) {
        rc = create_missing(resolved, &missing, err);
        if (rc == 0 && missing == 0) {
            /* Only this helper's own directories lie between: the path
             * must name what was created. */
            char *again = canon_path(path);
            if (again == NULL || strcmp(again, resolved) != 0)
                rc = failf(err, again ? -EAGAIN : -errno, "changed while being created:", path);
            free(again);
        }
    }
    if (rc == 0)
        rc = pin_ancestors(sp, resolved, missing, err);
    /* Pinned before as another path's ancestor: bound read-only now all
     * the same (over the pin). */
    if (rc == 0 && missing == 0 && !path_list_has(sp->bound, sp->n_bound, resolved)) {
        rc = sandbox_ns_bind_ro(resolved, ro);
        if (rc < 0)
            failf(err, rc, "binding read-only", resolved);
        else
            rc = path_list_add(&sp->bound, &sp->n_bound, resolved);
    }
    free(resolved);
    return rc < 0 ? rc : 1;
}

int
sandbox_protect_pin_ancestors(struct sandbox_protect *sp, const char *path, char **err)
{
    char *resolved = NULL, *why = NULL;
    size_t missing = 0;
    *err = NULL;
    int rc = sandbox_protect_resolve(sp, path, &resolved, &missing, &why);
    free(why); /* unresolvable: nothing there by that name to hide */
    if (rc == -ENOMEM)
        return rc;
    rc = rc == 1 && missing == 0 ? pin_ancestors(sp, resolved, 0, err) : 0;
    free(resolved);
    return rc;
}
