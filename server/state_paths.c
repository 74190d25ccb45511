#include "server/state_paths.h"

#include "server/options.h"
#include "common/strv.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Components resolved through a missing tail before giving up. */
#define MAX_MISSING_DEPTH 64

static char *
absolute(const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    char *cwd = getcwd(NULL, 0);
    char *abs = NULL;
    if (cwd && asprintf(&abs, "%s/%s", cwd, path) < 0)
        abs = NULL;
    free(cwd);
    return abs;
}

/* realpath of the longest existing prefix of abs, then the rest. */
static char *
canonical_from(char *abs, int depth)
{
    char *real = realpath(abs, NULL);
    if (real || errno != ENOENT || depth >= MAX_MISSING_DEPTH)
        return real;
    char *slash = strrchr(abs, '/');
    if (!slash || slash == abs)
        return NULL;
    *slash = '\0';
    const char *last = slash + 1;
    char *parent = canonical_from(abs, depth + 1);
    *slash = '/';
    if (!parent)
        return NULL;
    char *joined = NULL;
    if (strcmp(last, ".") == 0 || last[0] == '\0') {
        joined = parent;
        parent = NULL;
    } else if (strcmp(last, "..") == 0) {
        /* Where the parent exists its ".." is what realpath says; where it
         * does not, its name stands as written (above), so its ".." is the
         * directory it would be made in. */
        char *up = NULL;
        int err = ENOMEM;
        if (asprintf(&up, "%s/..", parent) >= 0) {
            joined = realpath(up, NULL);
            err = joined ? 0 : errno;
        }
        free(up);
        if (!joined && err == ENOENT) {
            char *cut = strrchr(parent, '/');
            joined = strndup(parent, cut && cut != parent ? (size_t)(cut - parent) : 1);
        }
    } else if (asprintf(&joined, "%s%s%s", parent, strcmp(parent, "/") == 0 ? "" : "/", last) < 0) {
        joined = NULL;
    }
    free(parent);
    return joined;
}

char *
state_paths_canonical(const char *path)
{
    char *abs = absolute(path);
    char *c = abs ? canonical_from(abs, 0) : NULL;
    free(abs);
    return c;
}

static int
add(char ***list, size_t *n, const char *path)
{
    if (!path || !path[0])
        return 0;
    char *c = state_paths_canonical(path);
    if (!c)
        return errno == ENOMEM ? -1 : 0; /* nothing the helper could bind */
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*list)[i], c) == 0) {
            free(c);
            return 0;
        }
    }
    char **grown = realloc(*list, (*n + 2) * sizeof(char *));
    if (!grown) {
        free(c);
        return -1;
    }
    *list = grown;
    (*list)[(*n)++] = c;
    (*list)[*n] = NULL;
    return 0;
}

/* list, or NULL (freeing it) when rc says adding to it failed. */
static char **
finish(char **list, int rc)
{
    if (rc == 0)
        return list;
    strv_free(list);
    return NULL;
}

char **
state_paths_new(const struct server_options *o, size_t *n)
{
    char **list = calloc(1, sizeof(char *));
    *n = 0;
    if (!list)
        return NULL;
    char *codex_home = NULL;
    const char *env = getenv("CODEX_HOME");
    const char *home = getenv("HOME");
    if (env && env[0])
        codex_home = strdup(env);
    else if (home && home[0] && asprintf(&codex_home, "%s/.codex", home) < 0)
        codex_home = NULL;
    int rc = add(&list, n, codex_home);
    free(codex_home);
    for (size_t i = 0; rc == 0 && i < o->rules_count; i++)
        rc = add(&list, n, o->rules[i]);
    if (rc == 0)
        rc = add(&list, n, o->audit_log);
    return finish(list, rc);
}

char **
state_paths_hidden(const struct server_options *o, size_t *n)
{
    char **list = calloc(1, sizeof(char *));
    *n = 0;
    if (!list)
        return NULL;
    int rc = add(&list, n, o->token_file);
    for (size_t i = 0; rc == 0 && i < o->listen_count; i++) {
        if (strncmp(o->listen[i], "unix:", 5) == 0)
            rc = add(&list, n, o->listen[i] + 5);
    }
    if (rc == 0)
        rc = add(&list, n, o->audit_log);
    return finish(list, rc);
}
