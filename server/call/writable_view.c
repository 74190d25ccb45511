#include "server/call/writable_view.h"

#include "common/canon_path.h"
#include "common/strv.h"
#include "sandbox/policy/path_list.h"
#include "sandbox/policy/policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool path_under(const char *path, const char *root);

/* Where a link may have been planted: this policy's roots (resolved) and
 * whatever the caller says other sandboxes could write. */
struct planted_where {
    char *const *locs;
    size_t n;
    writable_view_written_fn written; /* may be NULL */
    void *arg;
};

/* Whether the directory dir (a prefix of a path, "" for "/") resolves
 * into a place pw names; out of memory answers yes. */
static bool
dir_in(const char *dir, const struct planted_where *pw)
{
    char *real = canon_path(*dir ? dir : "/");
    if (!real)
        return errno == ENOMEM; /* gone: nothing on the way resolves either */
    bool in = pw->written && pw->written(pw->arg, real);
    for (size_t i = 0; !in && i < pw->n; i++)
        in = path_under(real, pw->locs[i]);
    free(real);
    return in;
}

/*
 * Whether resolving path follows a symbolic link that lies in one of the
 * n writable locations (resolved).  A sandboxed command may have made
 * that link in an earlier call, at the name of a root that did not exist
 * yet or of a directory on its way, to choose what a later call may
 * write: such a root grants nothing.  A link outside every writable
 * location (the user's own) is followed as before.  Out of memory
 * answers yes.
 */
static bool
through_planted_link(const char *path, const struct planted_where *pw)
{
    char *p = strdup(path);
    if (!p)
        return true;
    bool planted = false;
    size_t len = strlen(p);
    for (size_t i = 1; !planted && i <= len; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char saved = p[i];
        p[i] = '\0';
        struct stat st;
        bool ok = lstat(p, &st) == 0;
        if (ok && S_ISLNK(st.st_mode)) {
            char *slash = strrchr(p, '/');
            *slash = '\0';
            planted = dir_in(p, pw);
            *slash = '/';
        }
        p[i] = saved;
        if (!ok)
            break; /* the rest does not resolve: realpath leaves it out */
    }
    free(p);
    return planted;
}

/* One fill's resolutions: a path is resolved (and checked for a planted
 * link) once, however many of the lists name it (a writable root is most
 * often a repo root too, and the roots are resolved first as the places
 * links could be planted in). */
struct memo {
    const char *path; /* borrowed from the writable set */
    char *real;       /* NULL: it does not resolve */
    int planted;      /* -1: not checked yet */
};

struct memos {
    struct memo *v;
    size_t n, cap;
};

/* The memo of path, resolved now if it is new; NULL when out of memory. */
static struct memo *
memo_of(struct memos *ms, const char *path)
{
    for (size_t i = 0; i < ms->n; i++) {
        if (strcmp(ms->v[i].path, path) == 0)
            return &ms->v[i];
    }
    if (ms->n == ms->cap) {
        size_t cap = ms->cap ? ms->cap * 2 : 8;
        struct memo *v = realloc(ms->v, cap * sizeof(*v));
        if (!v)
            return NULL;
        ms->v = v;
        ms->cap = cap;
    }
    struct memo *m = &ms->v[ms->n];
    *m = (struct memo){.path = path, .real = canon_path(path), .planted = -1};
    if (!m->real && errno == ENOMEM)
        return NULL;
    ms->n++;
    return m;
}

static void
memos_free(struct memos *ms)
{
    for (size_t i = 0; i < ms->n; i++)
        free(ms->v[i].real);
    free(ms->v);
}

/* Appends the resolved form of each of the n paths to list, except those
 * that do not resolve (Landlock grants nothing there) and those reached
 * through a link a sandbox could have planted among the locs. */
static int
append_all_real(struct memos *ms, char ***list, size_t *n, char *const *paths, size_t n_paths,
                const struct planted_where *pw)
{
    for (size_t i = 0; i < n_paths; i++) {
        struct memo *m = memo_of(ms, paths[i]);
        if (!m)
            return -1;
        if (!m->real)
            continue;
        if (pw && m->planted < 0)
            m->planted = through_planted_link(paths[i], pw);
        if (pw && m->planted)
            continue;
        if (path_list_add(list, n, m->real) < 0)
            return -1;
    }
    return 0;
}

static int
fill(struct writable_view *v, const struct sandbox_writable *w, writable_view_written_fn written,
     void *arg)
{
    v->kind = w->everything ? WRITABLE_VIEW_ALL : WRITABLE_VIEW_SOME;
    struct memos ms = {0};
    /* first every root as it resolves: where a sandbox of this policy
     * could have made a link */
    struct planted_where pw = {.written = written, .arg = arg};
    char **locs = NULL;
    int rc = append_all_real(&ms, &locs, &pw.n, w->roots, w->n_roots, NULL);
    pw.locs = locs;
    if (rc == 0)
        rc = append_all_real(&ms, &v->roots, &v->n, w->roots, w->n_roots, &pw);
    if (rc == 0)
        rc = append_all_real(&ms, &v->devices, &v->n_devices, w->devices, w->n_devices, NULL);
    /* a repo root that does not resolve is no root: the helper skips it */
    if (rc == 0)
        rc = append_all_real(&ms, &v->repo_roots, &v->n_repo_roots, w->repo_roots, w->n_repo_roots,
                             &pw);
    strv_free_n(locs, pw.n);
    memos_free(&ms);
    return rc;
}

int
writable_view_init_after(struct writable_view *v, const struct sandbox_policy *p,
                         writable_view_written_fn written, void *arg, char **err)
{
    memset(v, 0, sizeof(*v));
    *err = NULL;
    /* The helper reads $TMPDIR from its environment, which is the server's
     * (escalation_shell_env copies it, setting only the protocol's
     * variables). */
    struct sandbox_writable *w = sandbox_writable_new(p, getenv("TMPDIR"));
    int rc = w ? fill(v, w, written, arg) : -1;
    sandbox_writable_free(w);
    if (rc < 0) {
        writable_view_release(v);
        *err = strdup("out of memory");
    }
    return rc;
}

int
writable_view_pin(const struct writable_view *v, struct sandbox_policy *p, char **err)
{
    *err = NULL;
    if (sandbox_policy_kind(p) != SANDBOX_WORKSPACE_WRITE)
        return 0;
    return sandbox_policy_set_canonical_roots(p, (const char *const *)v->roots, v->n,
                                              (const char *const *)v->repo_roots, v->n_repo_roots,
                                              err);
}

void
writable_view_release(struct writable_view *v)
{
    strv_free_n(v->roots, v->n);
    strv_free_n(v->devices, v->n_devices);
    strv_free_n(v->repo_roots, v->n_repo_roots);
    memset(v, 0, sizeof(*v));
}

/* Copies the n strings of from into *to.  Returns -1 when out of memory
 * (what was copied stays in *to, counted in *n_to, for the caller to free). */
static int
copy_list(char ***to, size_t *n_to, char *const *from, size_t n)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = path_list_add(to, n_to, from[i]);
    return rc;
}

int
writable_view_copy(struct writable_view *dst, const struct writable_view *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->kind = src->kind;
    if (copy_list(&dst->roots, &dst->n, src->roots, src->n) < 0 ||
        copy_list(&dst->devices, &dst->n_devices, src->devices, src->n_devices) < 0 ||
        copy_list(&dst->repo_roots, &dst->n_repo_roots, src->repo_roots, src->n_repo_roots) < 0) {
        writable_view_release(dst);
        return -1;
    }
    return 0;
}

static bool
same_list(char *const *a, size_t n_a, char *const *b, size_t n_b)
{
    if (n_a != n_b)
        return false;
    for (size_t i = 0; i < n_a; i++) {
        if (strcmp(a[i], b[i]) != 0)
            return false;
    }
    return true;
}

bool
writable_view_equal(const struct writable_view *a, const struct writable_view *b)
{
    return a->kind == b->kind && same_list(a->roots, a->n, b->roots, b->n) &&
           same_list(a->devices, a->n_devices, b->devices, b->n_devices) &&
           same_list(a->repo_roots, a->n_repo_roots, b->repo_roots, b->n_repo_roots);
}

static bool
path_under(const char *path, const char *root)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return true;
    return strncmp(path, root, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

bool
writable_view_contains(const struct writable_view *v, const char *path)
{
    if (v->kind == WRITABLE_VIEW_ALL) {
        char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash)
            *(slash == dir ? slash + 1 : slash) = '\0';
        bool w = !dir || access(path, W_OK) == 0 || access(dir, W_OK) == 0;
        free(dir);
        return w;
    }
    for (size_t i = 0; i < v->n; i++) {
        if (path_under(path, v->roots[i]))
            return true;
    }
    /* beneath: /dev/pts is a directory of terminals */
    for (size_t i = 0; i < v->n_devices; i++) {
        if (path_under(path, v->devices[i]))
            return true;
    }
    return false;
}
