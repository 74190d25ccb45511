#include "writable_view.h"

/* rules/ and sandbox/ both have a policy.h: named by its directory */
#include "../sandbox/policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
append_real(char ***list, size_t *n, const char *path)
{
    char *real = realpath(path, NULL);
    if (!real)
        return errno == ENOMEM ? -1 : 0; /* a root that does not exist grants nothing */
    char **grown = realloc(*list, (*n + 1) * sizeof(char *));
    if (!grown) {
        free(real);
        return -1;
    }
    *list = grown;
    (*list)[(*n)++] = real;
    return 0;
}

static int
add_root(struct writable_view *v, const char *path)
{
    return append_real(&v->roots, &v->n, path);
}

/* A root whose .git and .codex stay read-only (sandbox/helper.c
 * protect_paths): writable, and remembered as such. */
static int
add_repo_root(struct writable_view *v, const char *path)
{
    int rc = add_root(v, path);
    return rc == 0 ? append_real(&v->repo_roots, &v->n_repo_roots, path) : rc;
}

static int
add_workspace_roots(struct writable_view *v, const struct sandbox_policy *p)
{
    int rc = add_root(v, "/dev");
    if (rc == 0 && sandbox_policy_cwd(p))
        rc = add_repo_root(v, sandbox_policy_cwd(p));
    for (size_t i = 0; rc == 0 && i < sandbox_policy_writable_root_count(p); i++)
        rc = add_repo_root(v, sandbox_policy_writable_root(p, i));
    if (rc == 0 && sandbox_policy_slash_tmp_writable(p))
        rc = add_root(v, "/tmp");
    const char *tmpdir = getenv("TMPDIR");
    /* a relative $TMPDIR names nothing the helper makes writable */
    if (rc == 0 && sandbox_policy_tmpdir_writable(p) && tmpdir && tmpdir[0] == '/')
        rc = add_root(v, tmpdir);
    return rc;
}

int
writable_view_init(struct writable_view *v, const json_t *policy, const char *sandbox_cwd,
                   char **err)
{
    memset(v, 0, sizeof(*v));
    struct sandbox_policy *p = sandbox_policy_from_json(policy, sandbox_cwd, err);
    if (!p)
        return -1;
    int rc = 0;
    switch (sandbox_policy_kind(p)) {
    case SANDBOX_DANGER_FULL_ACCESS:
    case SANDBOX_EXTERNAL:
        v->kind = WRITABLE_VIEW_ALL;
        break;
    case SANDBOX_READ_ONLY:
        rc = add_root(v, "/dev");
        break;
    case SANDBOX_WORKSPACE_WRITE:
        rc = add_workspace_roots(v, p);
        break;
    }
    sandbox_policy_free(p);
    if (rc < 0) {
        writable_view_release(v);
        *err = strdup("out of memory");
    }
    return rc;
}

void
writable_view_release(struct writable_view *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->roots[i]);
    free(v->roots);
    for (size_t i = 0; i < v->n_repo_roots; i++)
        free(v->repo_roots[i]);
    free(v->repo_roots);
    memset(v, 0, sizeof(*v));
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
    return false;
}
