/*
 * decide_repo: the repositories a call's sandbox could have planted code
 * in (a .git it could write, or one laid out where it could), which keep
 * git, and what reads a repository, from running outside (decide.h).
 */
#include "server/decide/decide_int.h"

#include "common/log.h"
#include "server/call/writable_history.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- repositories ---- */

/* The directory git uses for the .git entry at dotgit: the entry itself
 * (a directory, or a link to one) or what a "gitdir: " file names;
 * canonical, or NULL (*unreadable set when the entry is a file that could
 * not be read as one git writes). */
static char *
gitdir_of(const char *dotgit, bool *unreadable)
{
    *unreadable = false;
    struct stat st;
    if (stat(dotgit, &st) < 0 || !S_ISREG(st.st_mode))
        return realpath(dotgit, NULL);
    /* a FIFO swapped in since the stat must not block the loop */
    int fd = open(dotgit, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    char buf[4096];
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n < 8 || strncmp(buf, "gitdir: ", 8) != 0) {
        *unreadable = true;
        return NULL;
    }
    buf[n] = '\0';
    buf[8 + strcspn(buf + 8, "\r\n")] = '\0';
    char *dir = strdup(dotgit);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    char *target = NULL;
    if (slash) {
        *slash = '\0';
        if (asprintf(&target, "%s/%s", buf[8] == '/' ? "" : dir, buf + 8) < 0)
            target = NULL;
    }
    free(dir);
    char *real = target ? realpath(target, NULL) : NULL;
    free(target);
    return real;
}

/* The server's first sight of the repository at root, or NULL when it
 * has not looked there yet. */
static const struct seen_repo *
seen_repo_find(const struct decide_server *ds, const char *root)
{
    for (size_t i = 0; i < ds->n_repos; i++) {
        if (strcmp(ds->repos[i].root, root) == 0)
            return &ds->repos[i];
    }
    return NULL;
}

/* The server's first sight of the repository at root (added now if this
 * is it).  NULL when out of memory. */
static const struct seen_repo *
first_sight(struct decide_server *ds, const char *root, const struct stat *now, bool present)
{
    const struct seen_repo *seen = seen_repo_find(ds, root);
    if (seen)
        return seen;
    struct seen_repo *grown = realloc(ds->repos, (ds->n_repos + 1) * sizeof(*grown));
    char *copy = grown ? strdup(root) : NULL;
    if (grown)
        ds->repos = grown;
    if (!copy)
        return NULL;
    ds->repos[ds->n_repos] =
        (struct seen_repo){copy, present, present ? now->st_dev : 0, present ? now->st_ino : 0};
    return &ds->repos[ds->n_repos++];
}

/*
 * Notes the repositories the helper is about to keep read-only: the .git
 * at the top of each root (and the gitdir a .git file names), when it is
 * the one this server saw there first.  One the sandbox made where none
 * was is not trusted for the rest of the server's life, bound read-only
 * or not: it was made by the command (docs/escalation.md).
 */
void
note_kept_repos(struct decide_call *dc)
{
    for (size_t i = 0; i < dc->view.n_repo_roots; i++) {
        char *dotgit = NULL;
        if (asprintf(&dotgit, "%s/.git", dc->view.repo_roots[i]) < 0)
            return;
        bool unreadable = false;
        char *gitdir = gitdir_of(dotgit, &unreadable);
        struct stat st;
        bool present = gitdir && stat(gitdir, &st) == 0;
        const struct seen_repo *seen = first_sight(dc->ds, dc->view.repo_roots[i], &st, present);
        bool kept =
            present && seen && seen->present && seen->dev == st.st_dev && seen->ino == st.st_ino;
        struct kept_repo *grown =
            kept ? realloc(dc->kept, (dc->n_kept + 1) * sizeof(*grown)) : NULL;
        if (grown) {
            dc->kept = grown;
            dc->kept[dc->n_kept++] = (struct kept_repo){dotgit, gitdir, st.st_dev, st.st_ino};
            continue;
        }
        if (present && !kept)
            log_info("decide %s: %s was not there when this server first ran a command in %s: "
                     "escalations in it run in the sandbox",
                     dc->label, dotgit, dc->view.repo_roots[i]);
        free(dotgit);
        free(gitdir);
    }
}

static bool
is_kept(const struct decide_call *dc, const char *dotgit, const char *gitdir)
{
    struct stat st;
    for (size_t i = 0; i < dc->n_kept; i++) {
        const struct kept_repo *k = &dc->kept[i];
        if (strcmp(k->dotgit, dotgit) == 0 && gitdir && strcmp(k->gitdir, gitdir) == 0)
            return stat(gitdir, &st) == 0 && st.st_dev == k->dev && st.st_ino == k->ino;
    }
    return false;
}

/*
 * Whether the sandboxes of view v kept the repository at dotgit (whose
 * gitdir is gitdir) read-only: dotgit is the .git at the top of one of
 * v's repo roots, which the helper binds read-only with its gitdir, and
 * the gitdir is the one this server saw there before it ran any command
 * in that root (one made since was made by a command).
 */
static bool
view_keeps(const struct decide_server *ds, const struct writable_view *v, const char *dotgit,
           const char *gitdir)
{
    struct stat st;
    if (!gitdir || stat(gitdir, &st) < 0)
        return false;
    for (size_t i = 0; i < v->n_repo_roots; i++) {
        const char *root = v->repo_roots[i];
        size_t n = strlen(root);
        if (n == 1 && root[0] == '/')
            n = 0; /* "/.git" */
        if (strncmp(dotgit, root, n) != 0 || strcmp(dotgit + n, "/.git") != 0)
            continue;
        const struct seen_repo *seen = seen_repo_find(ds, root);
        return seen && seen->present && seen->dev == st.st_dev && seen->ino == st.st_ino;
    }
    return false;
}

/* Whether a sandbox of any call could have written the repository at
 * dotgit (gitdir: its gitdir, or NULL): some remembered view contains
 * either and did not keep it read-only. */
static bool
history_repo_writable(const struct decide_server *ds, const char *dotgit, const char *gitdir)
{
    if (writable_history_everything(ds->written))
        return true;
    size_t n = 0;
    const struct writable_view *views = writable_history_views(ds->written, &n);
    for (size_t i = 0; i < n; i++) {
        bool reaches = writable_view_contains(&views[i], dotgit) ||
                       (gitdir && writable_view_contains(&views[i], gitdir));
        if (reaches && !view_keeps(ds, &views[i], dotgit, gitdir))
            return true;
    }
    return false;
}

/* Whether dir is laid out as a git directory, which git takes as a
 * (bare) repository when it looks there: HEAD, objects/ and refs/. */
static bool
bare_layout(const char *dir)
{
    static const char *const parts[] = {"HEAD", "objects", "refs"};
    for (size_t i = 0; i < 3; i++) {
        char *p = NULL;
        struct stat st;
        if (asprintf(&p, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", parts[i]) < 0)
            return true; /* cannot tell: the cautious answer */
        bool there = lstat(p, &st) == 0 && (i == 0 || S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode));
        free(p);
        if (!there)
            return false;
    }
    return true;
}

/* Whether dir is the gitdir of a repository its call keeps read-only. */
static bool
is_kept_gitdir(const struct decide_call *dc, const char *dir)
{
    struct stat st;
    for (size_t i = 0; i < dc->n_kept; i++) {
        const struct kept_repo *k = &dc->kept[i];
        if (strcmp(k->gitdir, dir) == 0)
            return stat(dir, &st) == 0 && st.st_dev == k->dev && st.st_ino == k->ino;
    }
    return false;
}

/* The .git entry at dotgit stops an escalation: it, or the gitdir it
 * names, is where a sandbox could have written, and it is not one kept
 * read-only. */
static bool
dotgit_writable(const struct decide_call *dc, const char *dotgit)
{
    bool unreadable = false;
    char *gitdir = gitdir_of(dotgit, &unreadable);
    bool writable = writable_view_contains(&dc->view, dotgit) ||
                    (gitdir && writable_view_contains(&dc->view, gitdir));
    bool found =
        (writable && !is_kept(dc, dotgit, gitdir)) || history_repo_writable(dc->ds, dotgit, gitdir);
    free(gitdir);
    return found;
}

/* dir itself, laid out as a git directory (bare_layout), is one a
 * sandbox could have made: git takes a bare layout as a repository when
 * it finds one where it looks. */
static bool
bare_writable(const struct decide_call *dc, const char *dir)
{
    if (is_kept_gitdir(dc, dir))
        return false;
    return sandbox_could_write(dc, dir) || writable_history_contains(dc->ds->written, dir) ||
           writable_history_everything(dc->ds->written);
}

/* The directory above dir (malloc'd), "/" for "/"; NULL when out of memory. */
static char *
parent_of(const char *dir)
{
    char *up = strdup(dir);
    char *slash = up ? strrchr(up, '/') : NULL;
    if (slash == up)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    return up;
}

/*
 * Whether cwd lies in a git repository a sandbox could have written
 * (hooks, fsmonitor, filters, aliases: code that an escalated program
 * would run outside): from cwd up to "/", any .git entry that is in the
 * call's writable view, or names a gitdir there, and is not one its
 * sandbox keeps read-only, or that any call's sandbox could have written
 * so (history_repo_writable); or any directory laid out as a git
 * directory (a bare repository) that a sandbox could have written.
 * *which gets the entry (malloc'd) when so, NULL when cwd cannot be
 * resolved (which also answers yes).  Otherwise *ceiling gets the
 * directory above the first repository met (else above cwd): git run
 * there is to look no higher (GIT_CEILING_DIRECTORIES).
 */
bool
in_writable_repo(const struct decide_call *dc, const char *cwd, char **which, char **ceiling)
{
    *which = NULL;
    *ceiling = NULL;
    char *dir = realpath(cwd, NULL);
    if (!dir)
        return true; /* cannot tell: the cautious answer, *which NULL */
    /* the ceiling when no repository is met */
    char *above_cwd = parent_of(dir);
    bool found = false;
    for (;;) {
        char *dotgit = NULL;
        struct stat st;
        const char *sep = strcmp(dir, "/") == 0 ? "" : "/";
        if (asprintf(&dotgit, "%s%s.git", dir, sep) < 0) {
            found = true;
            break;
        }
        bool has_dotgit = lstat(dotgit, &st) == 0;
        if (has_dotgit && dotgit_writable(dc, dotgit)) {
            *which = dotgit;
            found = true;
            break;
        }
        free(dotgit);
        bool bare = bare_layout(dir);
        if (bare && bare_writable(dc, dir)) {
            found = true;
            *which = dir;
            dir = NULL;
            break;
        }
        if ((has_dotgit || bare) && !*ceiling)
            *ceiling = parent_of(dir);
        char *slash = strrchr(dir, '/');
        if (slash == dir && dir[1] == '\0')
            break;
        if (slash == dir)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
    if (!found && !*ceiling) {
        *ceiling = above_cwd;
        above_cwd = NULL;
        found = *ceiling == NULL;
    }
    free(above_cwd);
    if (found) {
        free(*ceiling);
        *ceiling = NULL;
    }
    free(dir);
    return found;
}

/* Whether the call's sandbox, or any other this server started, could
 * have written, replaced or repointed path. */
bool
sandbox_could_write(const struct decide_call *dc, const char *path)
{
    return writable_view_contains(&dc->view, path) ||
           writable_history_contains(dc->ds->written, path);
}
