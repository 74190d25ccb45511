/*
 * profile: a Codex permission profile resolved into a sandboxPolicy
 * object.  The entries are gathered as paths (globs expanded, specials
 * named), merged by path, and each is then judged by the entry nearest
 * above it: that is all Codex's "most specific entry wins" needs, since
 * between two entries nothing else decides.
 */
#include "sandbox/policy/profile.h"

#include "sandbox/policy/policy.h"
#include "common/path_dot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Ordered so that the greater wins a tie (Codex: deny > write > read). */
enum access { ACC_READ = 1, ACC_WRITE, ACC_DENY };

struct entry {
    char *path; /* absolute, lexically canonical */
    enum access acc;
    bool scratch; /* tmpdir or slash_tmp only: no .git/.codex kept there */
};

struct entries {
    struct entry *items;
    size_t n, cap;
    bool minimal;   /* the `minimal` special: the platform's own paths readable */
    size_t scanned; /* directory entries the glob patterns read so far */
};

static void
entries_clear(struct entries *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->items[i].path);
    free(e->items);
}

/* path made absolute-canonical in form without touching the file system:
 * no empty, "." or ".." component and no trailing '/' ("/.." is "/").
 * Malloc'd; NULL when out of memory. */
static char *
lexical_path(const char *path)
{
    size_t len = strlen(path);
    char *out = malloc(len + 2);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (const char *c = path; *c != '\0';) {
        size_t n = strcspn(c, "/");
        enum path_dot dot = path_dot(c, n);
        if (dot == PATH_DOT_PARENT) {
            while (o > 0 && out[--o] != '/')
                ;
        } else if (n > 0 && dot == PATH_DOT_NONE) {
            out[o++] = '/';
            memcpy(out + o, c, n);
            o += n;
        }
        c += n;
        c += *c == '/';
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    return out;
}

/* Adds path (absolute) with acc; entries_merge folds repeated paths. */
static int
entries_add(struct entries *e, const char *path, enum access acc, bool scratch, char **err)
{
    char *p = lexical_path(path);
    if (p == NULL)
        return sandbox_fail(err, "permissionProfile: out of memory");
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 16;
        struct entry *n = realloc(e->items, cap * sizeof *n);
        if (n == NULL) {
            free(p);
            return sandbox_fail(err, "permissionProfile: out of memory");
        }
        e->items = n;
        e->cap = cap;
    }
    e->items[e->n++] = (struct entry){.path = p, .acc = acc, .scratch = scratch};
    return 0;
}

static int
by_path(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

/* Sorts the entries by path and makes each path one entry: the greater
 * access (the tie rule), a scratch root only when every mention is.
 * Sorted, a path is found by bisection (find), which keeps a profile of
 * thousands of glob matches cheap to resolve. */
static void
entries_merge(struct entries *e)
{
    if (e->n == 0)
        return;
    qsort(e->items, e->n, sizeof *e->items, by_path);
    size_t out = 0;
    for (size_t i = 1; i < e->n; i++) {
        struct entry *last = &e->items[out];
        if (strcmp(last->path, e->items[i].path) == 0) {
            if (e->items[i].acc > last->acc)
                last->acc = e->items[i].acc;
            last->scratch = last->scratch && e->items[i].scratch;
            free(e->items[i].path);
        } else {
            e->items[++out] = e->items[i];
        }
    }
    e->n = out + 1;
}

/* ---- glob patterns ---- */

struct glob_walk {
    char **comps; /* the pattern's components after its literal prefix */
    size_t n;
    int max_depth;
    size_t matches;
    size_t *scanned; /* directory entries read, for all the profile's patterns */
    struct entries *out;
    enum access acc;
    const char *pattern;
    char **err;
};

static bool
is_pattern(const char *comp)
{
    return strpbrk(comp, "*?[\\") != NULL;
}

static char *
join(const char *dir, const char *name)
{
    char *p;
    if (asprintf(&p, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name) < 0)
        return NULL;
    return p;
}

static int walk(struct glob_walk *g, const char *dir, size_t ci, int depth);

static int
add_match(struct glob_walk *g, const char *path)
{
    if (++g->matches > SANDBOX_PROFILE_GLOB_MATCHES)
        return sandbox_fail(g->err,
                            "permissionProfile: glob_pattern \"%s\" matches more than %d paths",
                            g->pattern, SANDBOX_PROFILE_GLOB_MATCHES);
    return entries_add(g->out, path, g->acc, false, g->err);
}

/* Whether path is a directory, not reached through a final symbolic link
 * (a walk never follows one: it could lead anywhere, or round). */
static bool
plain_dir(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A directory the walk could not read (errno e): nothing to match for a
 * read or write entry, which then grants less; but a deny entry would
 * hide less than it says (a name in a directory that cannot be listed may
 * still be opened), so the profile is refused. */
static int
unreadable(struct glob_walk *g, const char *dir, int e)
{
    if (g->acc != ACC_DENY || e == ENOENT || e == ENOTDIR || e == ELOOP)
        return 0;
    return sandbox_fail(
        g->err,
        "permissionProfile: glob_pattern \"%s\" (deny): cannot read %s (%s), so what it "
        "matches there cannot be hidden",
        g->pattern, dir, strerror(e));
}

/* The entries of dir one level down, matched against component ci.  The
 * literal prefix (depth 0) is opened as named, symbolic links and all;
 * below it the walk follows none. */
static int
walk_children(struct glob_walk *g, const char *dir, size_t ci, int depth, bool any_depth)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (depth > 0 ? O_NOFOLLOW : 0));
    if (fd < 0)
        return unreadable(g, dir, errno);
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return sandbox_fail(g->err, "permissionProfile: %s: %s", dir, strerror(errno));
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (errno = 0, de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (++*g->scanned > SANDBOX_PROFILE_GLOB_SCAN) {
            rc = sandbox_fail(
                g->err,
                "permissionProfile: glob_pattern \"%s\": more than %d directory entries to "
                "scan (a narrower pattern, or a smaller glob_scan_max_depth)",
                g->pattern, SANDBOX_PROFILE_GLOB_SCAN);
            break;
        }
        if (!any_depth && fnmatch(g->comps[ci], de->d_name, 0) != 0)
            continue;
        char *child = join(dir, de->d_name);
        if (child == NULL) {
            rc = sandbox_fail(g->err, "permissionProfile: out of memory");
            break;
        }
        if (any_depth && plain_dir(child)) /* "**" goes one level deeper, stays on ci */
            rc = walk(g, child, ci, depth + 1);
        else if (any_depth) /* a file: matched by a final "**" alone */
            rc = ci + 1 == g->n ? add_match(g, child) : 0;
        else if (ci + 1 == g->n)
            rc = add_match(g, child);
        else if (plain_dir(child))
            rc = walk(g, child, ci + 1, depth + 1);
        free(child);
    }
    if (rc == 0 && de == NULL && errno != 0) /* the listing ended early */
        rc = unreadable(g, dir, errno);
    closedir(d);
    return rc;
}

/* Matches components ci.. below dir, which lies depth levels below the
 * literal prefix. */
static int
walk(struct glob_walk *g, const char *dir, size_t ci, int depth)
{
    if (ci == g->n)
        return add_match(g, dir);
    if (strcmp(g->comps[ci], "**") == 0) {
        int rc = walk(g, dir, ci + 1, depth); /* no directory at all */
        if (rc == 0 && depth < g->max_depth)
            rc = walk_children(g, dir, ci, depth, true);
        return rc;
    }
    if (depth >= g->max_depth)
        return 0;
    if (!is_pattern(g->comps[ci])) {
        char *child = join(dir, g->comps[ci]);
        if (child == NULL)
            return sandbox_fail(g->err, "permissionProfile: out of memory");
        struct stat st;
        int rc = 0;
        if (ci + 1 == g->n)
            rc = lstat(child, &st) == 0 ? add_match(g, child) : 0;
        else if (plain_dir(child))
            rc = walk(g, child, ci + 1, depth + 1);
        free(child);
        return rc;
    }
    return walk_children(g, dir, ci, depth, false);
}

/* Splits the pattern into its literal prefix (returned, malloc'd) and the
 * components after it (into g). */
static char *
split_pattern(struct glob_walk *g, char *copy)
{
    char *prefix = strdup("/");
    size_t cap = 8;
    g->comps = malloc(cap * sizeof *g->comps);
    if (prefix == NULL || g->comps == NULL) {
        free(prefix);
        return NULL;
    }
    bool literal = true;
    for (char *save = NULL, *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (literal && !is_pattern(c) && strcmp(c, "..") != 0) {
            char *longer = join(prefix, c);
            free(prefix);
            if ((prefix = longer) == NULL)
                return NULL;
            continue;
        }
        literal = false;
        if (g->n == cap) {
            char **n = realloc(g->comps, (cap *= 2) * sizeof *n);
            if (n == NULL) {
                free(prefix);
                return NULL;
            }
            g->comps = n;
        }
        g->comps[g->n++] = c;
    }
    return prefix;
}

static int
expand_glob(struct entries *e, const char *pattern, enum access acc, int max_depth, char **err)
{
    if (pattern[0] != '/')
        return sandbox_fail(err, "permissionProfile: glob_pattern \"%s\" is not absolute", pattern);
    char *copy = strdup(pattern);
    struct glob_walk g = {.max_depth = max_depth,
                          .scanned = &e->scanned,
                          .out = e,
                          .acc = acc,
                          .pattern = pattern,
                          .err = err};
    char *prefix = copy ? split_pattern(&g, copy) : NULL;
    int rc = prefix == NULL ? sandbox_fail(err, "permissionProfile: out of memory") : 0;
    if (rc == 0 && g.n == 0) /* no pattern in it: a path */
        rc = entries_add(e, prefix, acc, false, err);
    else if (rc == 0)
        rc = walk(&g, prefix, 0, 0);
    free(prefix);
    free(g.comps);
    free(copy);
    return rc;
}

/* ---- entries ---- */

static int
parse_access(const json_t *entry, size_t i, enum access *acc, char **err)
{
    const char *a = json_string_value(json_object_get(entry, "access"));
    if (a != NULL && strcmp(a, "read") == 0)
        *acc = ACC_READ;
    else if (a != NULL && strcmp(a, "write") == 0)
        *acc = ACC_WRITE;
    else if (a != NULL && (strcmp(a, "deny") == 0 || strcmp(a, "none") == 0))
        *acc = ACC_DENY;
    else
        return sandbox_fail(
            err, "permissionProfile: entries[%zu].access must be read, write or deny", i);
    const json_t *m = json_object_get(entry, "missing_path_behavior");
    if (m != NULL && !json_is_null(m) && !json_is_string(m))
        return sandbox_fail(
            err, "permissionProfile: entries[%zu].missing_path_behavior must be a string", i);
    return 0;
}

/* A string field that must be an absolute path without NUL. */
static const char *
abs_field(const json_t *obj, const char *key, size_t i, char **err)
{
    const json_t *v = json_object_get(obj, key);
    const char *s = json_string_value(v);
    if (s == NULL || strlen(s) != json_string_length(v) || s[0] != '/') {
        sandbox_fail(err, "permissionProfile: entries[%zu].path.%s must be an absolute path", i,
                     key);
        return NULL;
    }
    return s;
}

/* project_roots: the sandbox cwd, with the optional relative subpath. */
static int
add_project_root(struct entries *e, const json_t *value, const char *cwd, enum access acc, size_t i,
                 char **err)
{
    const json_t *sub = json_object_get(value, "subpath");
    if (sub == NULL || json_is_null(sub))
        return entries_add(e, cwd, acc, false, err);
    const char *s = json_string_value(sub);
    if (s == NULL || strlen(s) != json_string_length(sub) || s[0] == '/')
        return sandbox_fail(
            err, "permissionProfile: entries[%zu].path.value.subpath must be relative", i);
    char *p = join(cwd, s);
    if (p == NULL)
        return sandbox_fail(err, "permissionProfile: out of memory");
    int rc = entries_add(e, p, acc, false, err);
    free(p);
    return rc;
}

static int
add_special(struct entries *e, const json_t *path, const char *cwd, const char *tmpdir,
            enum access acc, size_t i, char **err)
{
    const json_t *value = json_object_get(path, "value");
    const char *kind = json_string_value(json_object_get(value, "kind"));
    if (kind == NULL)
        return sandbox_fail(err, "permissionProfile: entries[%zu].path.value.kind must be a string",
                            i);
    if (strcmp(kind, "root") == 0)
        return entries_add(e, "/", acc, false, err);
    if (strcmp(kind, "minimal") == 0) {
        e->minimal = e->minimal || acc != ACC_DENY;
        return 0;
    }
    if (strcmp(kind, "project_roots") == 0 || strcmp(kind, "current_working_directory") == 0)
        return add_project_root(e, value, cwd, acc, i, err);
    if (strcmp(kind, "tmpdir") == 0)
        return tmpdir != NULL && tmpdir[0] == '/' ? entries_add(e, tmpdir, acc, true, err) : 0;
    if (strcmp(kind, "slash_tmp") == 0)
        return entries_add(e, "/tmp", acc, true, err);
    return 0; /* a kind from a later Codex: Codex itself ignores what it does not know */
}

static int
add_entry(struct entries *e, const json_t *entry, size_t i, const char *cwd, const char *tmpdir,
          int depth, char **err)
{
    enum access acc = ACC_DENY;
    if (!json_is_object(entry))
        return sandbox_fail(err, "permissionProfile: entries[%zu] must be an object", i);
    if (parse_access(entry, i, &acc, err) < 0)
        return -1;
    const json_t *path = json_object_get(entry, "path");
    const char *type = json_string_value(json_object_get(path, "type"));
    if (type == NULL)
        return sandbox_fail(err, "permissionProfile: entries[%zu].path.type must be a string", i);
    if (strcmp(type, "path") == 0) {
        const char *p = abs_field(path, "path", i, err);
        return p ? entries_add(e, p, acc, false, err) : -1;
    }
    if (strcmp(type, "glob_pattern") == 0) {
        const char *p = abs_field(path, "pattern", i, err);
        return p ? expand_glob(e, p, acc, depth, err) : -1;
    }
    if (strcmp(type, "special") == 0)
        return add_special(e, path, cwd, tmpdir, acc, i, err);
    return sandbox_fail(err,
                        "permissionProfile: entries[%zu].path.type \"%s\" is not one of path, "
                        "glob_pattern, special",
                        i, type);
}

static int
scan_depth(const json_t *fs, int *depth, char **err)
{
    const json_t *d = json_object_get(fs, "glob_scan_max_depth");
    *depth = SANDBOX_PROFILE_GLOB_DEPTH;
    if (d == NULL || json_is_null(d))
        return 0;
    if (!json_is_integer(d) || json_integer_value(d) < 0)
        return sandbox_fail(err, "permissionProfile: glob_scan_max_depth must be a whole number");
    json_int_t v = json_integer_value(d);
    *depth = v > SANDBOX_PROFILE_GLOB_DEPTH_MAX ? SANDBOX_PROFILE_GLOB_DEPTH_MAX : (int)v;
    return 0;
}

static int
gather(struct entries *e, const json_t *fs, const char *cwd, const char *tmpdir, char **err)
{
    const json_t *list = json_object_get(fs, "entries");
    int depth;
    if (scan_depth(fs, &depth, err) < 0)
        return -1;
    if (list != NULL && !json_is_null(list) && !json_is_array(list))
        return sandbox_fail(err, "permissionProfile: file_system.entries must be an array");
    for (size_t i = 0; i < json_array_size(list); i++) {
        if (add_entry(e, json_array_get(list, i), i, cwd, tmpdir, depth, err) < 0)
            return -1;
    }
    return 0;
}

/* ---- folding into a sandboxPolicy ---- */

/* The entry for path (the entries merged, hence sorted), or NULL. */
static const struct entry *
find(const struct entries *e, const char *path)
{
    const struct entry key = {.path = (char *)path};
    return e->n ? bsearch(&key, e->items, e->n, sizeof *e->items, by_path) : NULL;
}

/* The entry nearest above path (its longest ancestor that has one), or
 * NULL: each ancestor looked up, the longest first.  *oom is set when the
 * copy could not be made. */
static const struct entry *
parent(const struct entries *e, const char *path, bool *oom)
{
    if (strcmp(path, "/") == 0)
        return NULL;
    char *up = strdup(path);
    if (up == NULL) {
        *oom = true;
        return NULL;
    }
    const struct entry *found = NULL;
    while (found == NULL) {
        char *slash = strrchr(up, '/');
        if (slash == up) {
            found = find(e, "/");
            break;
        }
        *slash = '\0';
        found = find(e, up);
    }
    free(up);
    return found;
}

struct folded {
    json_t *repo, *plain, *read_only, *deny, *readable;
};

/* Appends path: each path reaches a list once (the entries are merged,
 * and a carve-out is made only for a path no entry names). */
static int
push(json_t *arr, const char *path)
{
    return json_array_append_new(arr, json_string(path));
}

/* root/name read-only inside writable root, unless an entry names it
 * (then that entry decides). */
static int
carve(const struct entries *e, json_t *read_only, const char *root, const char *name)
{
    char *p = join(root, name);
    int rc = p == NULL ? -1 : find(e, p) != NULL ? 0 : push(read_only, p);
    free(p);
    return rc;
}

/* Whether an entry gives root/name write explicitly. */
static bool
written(const struct entries *e, const char *root, const char *name)
{
    char *p = join(root, name);
    const struct entry *x = p ? find(e, p) : NULL;
    free(p);
    return x != NULL && x->acc == ACC_WRITE;
}

/*
 * A writable root: its .git, .codex and .agents stay read-only unless an
 * entry gives them write.  A root whose .git and .codex no entry writes is
 * a repo root (the helper keeps its .git, the gitdir a .git file names and
 * .codex read-only, as for workspace-write); otherwise it is a plain root,
 * and the names no entry writes become read-only carve-outs.  Scratch
 * roots ($TMPDIR, /tmp) are plain with no carve-outs, as workspace-write
 * has them, and so is a .git, .codex or .agents an entry makes writable.
 */
/* Whether path ends in one of the names kept read-only in writable
 * roots: a root given as one of those holds no such names of its own. */
static bool
protected_name(const char *path)
{
    const char *base = strrchr(path, '/') + 1;
    return strcmp(base, ".git") == 0 || strcmp(base, ".codex") == 0 || strcmp(base, ".agents") == 0;
}

static int
fold_write(const struct entries *e, const struct entry *w, struct folded *f)
{
    if (w->scratch || protected_name(w->path))
        return push(f->plain, w->path);
    int rc = 0;
    if (written(e, w->path, ".git") || written(e, w->path, ".codex")) {
        rc |= push(f->plain, w->path);
        rc |= carve(e, f->read_only, w->path, ".git");
        rc |= carve(e, f->read_only, w->path, ".codex");
    } else {
        rc |= push(f->repo, w->path);
    }
    rc |= carve(e, f->read_only, w->path, ".agents");
    return rc;
}

/*
 * Each entry as the one nearest above it leaves it: a write is a writable
 * root; a read beneath a write is a read-only carve-out; a deny beneath a
 * read or a write is hidden (beneath nothing or a deny, nothing can read it
 * already).  Every read or write is a readable root when reads are
 * narrowed.
 */
static int
fold(const struct entries *e, struct folded *f)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < e->n; i++) {
        const struct entry *x = &e->items[i];
        bool oom = false;
        const struct entry *up = parent(e, x->path, &oom);
        if (oom)
            return -1;
        if (x->acc != ACC_DENY)
            rc |= push(f->readable, x->path);
        if (x->acc == ACC_WRITE)
            rc |= fold_write(e, x, f);
        else if (x->acc == ACC_READ && up != NULL && up->acc == ACC_WRITE)
            rc |= push(f->read_only, x->path);
        else if (x->acc == ACC_DENY && up != NULL && up->acc != ACC_DENY)
            rc |= push(f->deny, x->path);
    }
    return rc;
}

static void
folded_free(struct folded *f)
{
    json_decref(f->repo);
    json_decref(f->plain);
    json_decref(f->read_only);
    json_decref(f->deny);
    json_decref(f->readable);
}

/* The read access object: everything when "/" is read or written, else
 * the readable roots (with the platform's paths for `minimal`). */
static json_t *
read_access(const struct entries *e, struct folded *f)
{
    const struct entry *root = find(e, "/");
    if (root != NULL && root->acc != ACC_DENY)
        return json_pack("{s:s}", "type", "full-access");
    return json_pack("{s:s, s:b, s:O}", "type", "restricted", "include_platform_defaults",
                     e->minimal, "readable_roots", f->readable);
}

static json_t *
managed_policy(const struct entries *e, bool network, char **err)
{
    struct folded f = {json_array(), json_array(), json_array(), json_array(), json_array()};
    json_t *policy = NULL;
    if (f.repo && f.plain && f.read_only && f.deny && f.readable && fold(e, &f) == 0) {
        bool writes = json_array_size(f.repo) + json_array_size(f.plain) > 0;
        json_t *reads = read_access(e, &f);
        policy =
            reads ? json_pack("{s:s, s:b, s:b, s:o, s:O, s:O, s:O, s:O}", "type",
                              writes ? "workspace-write" : "read-only", "network_access", network,
                              "exclude_cwd", true, writes ? "read_only_access" : "access", reads,
                              "writable_roots", f.repo, "plain_writable_roots", f.plain,
                              "read_only_paths", f.read_only, "deny_paths", f.deny)
                  : NULL;
        /* $TMPDIR and /tmp are writable only as entries say (plain roots) */
        if (policy && writes &&
            (json_object_set_new(policy, "exclude_tmpdir_env_var", json_true()) < 0 ||
             json_object_set_new(policy, "exclude_slash_tmp", json_true()) < 0)) {
            json_decref(policy);
            policy = NULL;
        }
    }
    folded_free(&f);
    if (policy == NULL)
        sandbox_fail(err, "permissionProfile: out of memory");
    return policy;
}

/* network: "restricted" (the default) or "enabled". */
static int
parse_network(const json_t *profile, bool *on, char **err)
{
    const json_t *n = json_object_get(profile, "network");
    *on = false;
    if (n == NULL || json_is_null(n))
        return 0;
    const char *s = json_string_value(n);
    if (s != NULL && strcmp(s, "enabled") == 0)
        *on = true;
    else if (s == NULL || strcmp(s, "restricted") != 0)
        return sandbox_fail(err,
                            "permissionProfile: network must be \"restricted\" or \"enabled\"");
    return 0;
}

static json_t *
managed(const json_t *profile, const char *cwd, const char *tmpdir, bool network, char **err)
{
    const json_t *fs = json_object_get(profile, "file_system");
    const char *type = json_string_value(json_object_get(fs, "type"));
    if (type != NULL && strcmp(type, "unrestricted") == 0) /* the network alone is confined */
        return json_pack("{s:s, s:s}", "type", "external-sandbox", "network_access",
                         network ? "enabled" : "restricted");
    if (type == NULL || strcmp(type, "restricted") != 0) {
        sandbox_fail(err, "permissionProfile: file_system.type must be \"restricted\" or "
                          "\"unrestricted\"");
        return NULL;
    }
    struct entries e = {0};
    json_t *policy = NULL;
    if (gather(&e, fs, cwd, tmpdir, err) == 0) {
        entries_merge(&e);
        policy = managed_policy(&e, network, err);
    }
    entries_clear(&e);
    return policy;
}

json_t *
sandbox_profile_to_policy(const json_t *profile, const char *cwd, const char *tmpdir, char **err)
{
    *err = NULL;
    const char *type = json_string_value(json_object_get(profile, "type"));
    bool network;
    if (!json_is_object(profile) || type == NULL) {
        sandbox_fail(err, "permissionProfile: must be an object with a type");
        return NULL;
    }
    if (cwd == NULL || cwd[0] != '/') {
        sandbox_fail(err, "permissionProfile: needs an absolute sandbox cwd");
        return NULL;
    }
    if (strcmp(type, "disabled") == 0)
        return json_pack("{s:s}", "type", "danger-full-access");
    if (parse_network(profile, &network, err) < 0)
        return NULL;
    if (strcmp(type, "external") == 0)
        return json_pack("{s:s, s:s}", "type", "external-sandbox", "network_access",
                         network ? "enabled" : "restricted");
    if (strcmp(type, "managed") == 0)
        return managed(profile, cwd, tmpdir, network, err);
    sandbox_fail(err,
                 "permissionProfile: unknown type \"%s\" (expected managed, disabled or external)",
                 type);
    return NULL;
}

/* ---- sandboxCwd ---- */

static int
hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The percent-decoded path of a file URL's path part. */
static char *
decode_url_path(const char *s, char **err)
{
    char *out = malloc(strlen(s) + 1);
    if (out == NULL) {
        sandbox_fail(err, "sandboxCwd: out of memory");
        return NULL;
    }
    size_t o = 0;
    for (; *s != '\0' && *s != '?' && *s != '#'; s++) {
        if (*s != '%') {
            out[o++] = *s;
            continue;
        }
        int hi = hex(s[1]), lo = hi < 0 ? -1 : hex(s[2]);
        if (lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            sandbox_fail(err, "sandboxCwd: bad percent-escape in the file URL");
            return NULL;
        }
        out[o++] = (char)(hi * 16 + lo);
        s += 2;
    }
    out[o] = '\0';
    return out;
}

char *
sandbox_profile_cwd(const char *text, char **err)
{
    *err = NULL;
    if (text[0] == '/') {
        char *p = strdup(text);
        if (p == NULL)
            sandbox_fail(err, "sandboxCwd: out of memory");
        return p;
    }
    if (strncasecmp(text, "file://", 7) != 0) {
        sandbox_fail(err, "sandboxCwd: \"%s\" is neither a file:// URL nor an absolute path", text);
        return NULL;
    }
    const char *host = text + 7, *path = strchr(host, '/');
    size_t host_len = path ? (size_t)(path - host) : strlen(host);
    if (path == NULL ||
        (host_len != 0 && !(host_len == 9 && strncasecmp(host, "localhost", 9) == 0))) {
        sandbox_fail(err, "sandboxCwd: \"%s\" is not a local file URL", text);
        return NULL;
    }
    return decode_url_path(path, err);
}
