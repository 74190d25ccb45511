/*
 * sandbox policy: the sandboxPolicy JSON of Codex clients, parsed into a
 * small immutable struct, and turned back into one canonical text.
 */
#include "sandbox/policy/policy.h"

#include "common/macros.h"
#include "common/path_dot.h"
#include "common/strv.h"
#include "sandbox/policy/path_list.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct path_list {
    char **items;
    size_t count;
};

struct sandbox_policy {
    enum sandbox_kind kind;
    bool network;
    char *cwd; /* NULL when none was given */
    struct path_list writable;
    bool exclude_tmpdir;
    bool exclude_slash_tmp;
    bool reads_restricted;
    bool platform_defaults;
    struct path_list readable;
    /* From a permission profile (profile.h): the sandbox cwd is only where
     * commands start, not a root; writable roots whose .git and .codex
     * are not kept read-only; paths kept read-only inside the writable
     * roots when they exist; paths hidden from the command. */
    bool exclude_cwd;
    struct path_list plain_writable;
    struct path_list read_only;
    struct path_list deny;
    /* workspace-write: the writable roots as the server resolved them,
     * in place of the ones the fields above give (canonical_roots) */
    bool canonical;
    struct path_list canonical_roots;
    struct path_list canonical_repo_roots;
};

static const char *const kind_names[] = {
    [SANDBOX_DANGER_FULL_ACCESS] = "danger-full-access",
    [SANDBOX_READ_ONLY] = "read-only",
    [SANDBOX_WORKSPACE_WRITE] = "workspace-write",
    [SANDBOX_EXTERNAL] = "external-sandbox",
};

const char *
sandbox_kind_name(enum sandbox_kind kind)
{
    if ((size_t)kind >= ARRAY_SIZE(kind_names))
        return "unknown";
    return kind_names[kind];
}

int
sandbox_fail(char **err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(err, fmt, ap) < 0)
        *err = NULL;
    va_end(ap);
    return -1;
}

static void
path_list_clear(struct path_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

/* Checks that s (of json length len) is a usable absolute path. */
static int
check_abs_path(const char *field, const char *s, size_t len, char **err)
{
    if (len == 0)
        return sandbox_fail(err, "sandbox policy: %s: empty path", field);
    if (strlen(s) != len)
        return sandbox_fail(err, "sandbox policy: %s: path contains a NUL byte", field);
    if (s[0] != '/')
        return sandbox_fail(err, "sandbox policy: %s: \"%s\" is not an absolute path", field, s);
    return 0;
}

static int
get_path(const json_t *v, const char *field, char **out, char **err)
{
    if (!json_is_string(v))
        return sandbox_fail(err, "sandbox policy: %s must be a string", field);
    const char *s = json_string_value(v);
    if (check_abs_path(field, s, json_string_length(v), err) < 0)
        return -1;
    *out = strdup(s);
    if (*out == NULL)
        return sandbox_fail(err, "sandbox policy: out of memory");
    return 0;
}

/* The array of absolute paths at obj.key into out; messages name it
 * field. */
static int
get_path_list_named(const json_t *obj, const char *key, const char *field, struct path_list *out,
                    char **err)
{
    const json_t *arr = json_object_get(obj, key);
    if (arr == NULL || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return sandbox_fail(err, "sandbox policy: %s must be an array of absolute paths", field);
    size_t n = json_array_size(arr);
    if (n == 0)
        return 0;
    out->items = calloc(n, sizeof *out->items);
    if (out->items == NULL)
        return sandbox_fail(err, "sandbox policy: out of memory");
    for (size_t i = 0; i < n; i++) {
        char name[64 + 24];
        snprintf(name, sizeof name, "%.64s[%zu]", field, i);
        if (get_path(json_array_get(arr, i), name, &out->items[i], err) < 0)
            return -1;
        out->count++;
    }
    return 0;
}

static int
get_path_list(const json_t *obj, const char *field, struct path_list *out, char **err)
{
    return get_path_list_named(obj, field, field, out, err);
}

/* Whether path is absolute and canonical in form: no empty, "." or ".."
 * component and no trailing '/' (but "/" itself). */
static bool
canonical_form(const char *path)
{
    if (path[0] != '/')
        return false;
    if (path[1] == '\0')
        return true;
    for (const char *c = path + 1;;) {
        size_t n = strcspn(c, "/");
        if (n == 0 || path_dot(c, n) != PATH_DOT_NONE)
            return false;
        if (c[n] == '\0')
            return true;
        c += n + 1;
    }
}

/* The canonical roots are canonical in form, and each repo root is one of
 * the roots. */
static int
check_canonical(const struct path_list *roots, const struct path_list *repo, char **err)
{
    for (size_t i = 0; i < roots->count; i++) {
        if (!canonical_form(roots->items[i]))
            return sandbox_fail(
                err, "sandbox policy: canonical_roots.roots[%zu]: \"%s\" is not a canonical path",
                i, roots->items[i]);
    }
    for (size_t i = 0; i < repo->count; i++) {
        bool found = false;
        for (size_t k = 0; !found && k < roots->count; k++)
            found = strcmp(repo->items[i], roots->items[k]) == 0;
        if (!found)
            return sandbox_fail(
                err,
                "sandbox policy: canonical_roots.repo_roots[%zu]: \"%s\" is not one of the "
                "roots",
                i, repo->items[i]);
    }
    return 0;
}

/* workspace-write's optional canonical_roots object: {"roots": [...],
 * "repo_roots": [...]}. */
static int
parse_canonical(struct sandbox_policy *p, const json_t *obj, char **err)
{
    const json_t *c = json_object_get(obj, "canonical_roots");
    if (c == NULL || json_is_null(c))
        return 0;
    if (!json_is_object(c))
        return sandbox_fail(err, "sandbox policy: canonical_roots must be an object");
    p->canonical = true;
    if (get_path_list_named(c, "roots", "canonical_roots.roots", &p->canonical_roots, err) < 0 ||
        get_path_list_named(c, "repo_roots", "canonical_roots.repo_roots", &p->canonical_repo_roots,
                            err) < 0)
        return -1;
    return check_canonical(&p->canonical_roots, &p->canonical_repo_roots, err);
}

/* Optional boolean field; absent or null keeps *out. */
static int
get_bool(const json_t *obj, const char *field, bool *out, char **err)
{
    const json_t *v = json_object_get(obj, field);
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return sandbox_fail(err, "sandbox policy: %s must be true or false", field);
    *out = json_is_true(v);
    return 0;
}

/* The `access` / `read_only_access` object: full-access or restricted. */
static int
parse_read_access(struct sandbox_policy *p, const json_t *obj, const char *field, char **err)
{
    const json_t *a = json_object_get(obj, field);
    if (a == NULL || json_is_null(a))
        return 0;
    if (!json_is_object(a))
        return sandbox_fail(err, "sandbox policy: %s must be an object", field);
    const char *type = json_string_value(json_object_get(a, "type"));
    if (type == NULL)
        return sandbox_fail(err, "sandbox policy: %s.type must be a string", field);
    if (strcmp(type, "full-access") == 0)
        return 0;
    if (strcmp(type, "restricted") != 0)
        return sandbox_fail(err,
                            "sandbox policy: %s.type \"%s\" is not one of full-access, restricted",
                            field, type);
    p->reads_restricted = true;
    p->platform_defaults = true;
    if (get_bool(a, "include_platform_defaults", &p->platform_defaults, err) < 0)
        return -1;
    return get_path_list(a, "readable_roots", &p->readable, err);
}

static int
parse_external_network(struct sandbox_policy *p, const json_t *obj, char **err)
{
    const json_t *v = json_object_get(obj, "network_access");
    if (v == NULL || json_is_null(v))
        return 0;
    const char *s = json_string_value(v);
    if (s != NULL && strcmp(s, "restricted") == 0)
        p->network = false;
    else if (s != NULL && strcmp(s, "enabled") == 0)
        p->network = true;
    else
        return sandbox_fail(err,
                            "sandbox policy: network_access must be \"restricted\" or \"enabled\"");
    return 0;
}

static int
parse_kind(const json_t *policy, enum sandbox_kind *kind, char **err)
{
    const json_t *t = json_object_get(policy, "type");
    if (!json_is_string(t))
        return sandbox_fail(err, "sandbox policy: type must be a string");
    const char *s = json_string_value(t);
    for (size_t i = 0; i < ARRAY_SIZE(kind_names); i++) {
        if (strcmp(s, kind_names[i]) == 0) {
            *kind = (enum sandbox_kind)i;
            return 0;
        }
    }
    return sandbox_fail(
        err,
        "sandbox policy: unknown type \"%s\" (expected danger-full-access, read-only, "
        "workspace-write or external-sandbox)",
        s);
}

/* The fields a permission profile adds (profile.h); writable ones only
 * under workspace-write. */
static int
parse_profile_fields(struct sandbox_policy *p, const json_t *policy, bool writes, char **err)
{
    if (get_bool(policy, "exclude_cwd", &p->exclude_cwd, err) < 0 ||
        get_path_list(policy, "deny_paths", &p->deny, err) < 0)
        return -1;
    if (!writes)
        return 0;
    if (get_path_list(policy, "plain_writable_roots", &p->plain_writable, err) < 0)
        return -1;
    return get_path_list(policy, "read_only_paths", &p->read_only, err);
}

static int
parse_fields(struct sandbox_policy *p, const json_t *policy, char **err)
{
    switch (p->kind) {
    case SANDBOX_DANGER_FULL_ACCESS:
        return 0;
    case SANDBOX_EXTERNAL:
        return parse_external_network(p, policy, err);
    case SANDBOX_READ_ONLY:
        if (get_bool(policy, "network_access", &p->network, err) < 0)
            return -1;
        if (parse_profile_fields(p, policy, false, err) < 0)
            return -1;
        return parse_read_access(p, policy, "access", err);
    case SANDBOX_WORKSPACE_WRITE:
        if (p->cwd == NULL)
            return sandbox_fail(err, "sandbox policy: workspace-write needs sandboxCwd");
        if (get_bool(policy, "network_access", &p->network, err) < 0 ||
            get_bool(policy, "exclude_tmpdir_env_var", &p->exclude_tmpdir, err) < 0 ||
            get_bool(policy, "exclude_slash_tmp", &p->exclude_slash_tmp, err) < 0 ||
            get_path_list(policy, "writable_roots", &p->writable, err) < 0 ||
            parse_profile_fields(p, policy, true, err) < 0)
            return -1;
        return parse_read_access(p, policy, "read_only_access", err);
    }
    return sandbox_fail(err, "sandbox policy: internal error: bad kind");
}

struct sandbox_policy *
sandbox_policy_from_json(const json_t *policy, const char *sandbox_cwd, char **err)
{
    *err = NULL;
    if (!json_is_object(policy)) {
        sandbox_fail(err, "sandbox policy: sandboxPolicy must be an object");
        return NULL;
    }
    struct sandbox_policy *p = calloc(1, sizeof *p);
    if (p == NULL) {
        sandbox_fail(err, "sandbox policy: out of memory");
        return NULL;
    }
    int rc = parse_kind(policy, &p->kind, err);
    if (rc == 0 && sandbox_cwd != NULL) {
        rc = check_abs_path("sandboxCwd", sandbox_cwd, strlen(sandbox_cwd), err);
        if (rc == 0 && (p->cwd = strdup(sandbox_cwd)) == NULL)
            rc = sandbox_fail(err, "sandbox policy: out of memory");
    }
    if (rc == 0)
        rc = parse_fields(p, policy, err);
    if (rc < 0) {
        sandbox_policy_free(p);
        return NULL;
    }
    return p;
}

struct sandbox_policy *
sandbox_policy_parse(const char *text, char **err)
{
    json_error_t jerr;
    *err = NULL;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        sandbox_fail(err, "sandbox policy: invalid JSON at line %d column %d: %s", jerr.line,
                     jerr.column, jerr.text);
        return NULL;
    }
    struct sandbox_policy *p = NULL;
    const json_t *cwd = json_object_get(root, "sandboxCwd");
    if (json_is_object(root) && cwd != NULL && !json_is_null(cwd) && !json_is_string(cwd))
        sandbox_fail(err, "sandbox policy: sandboxCwd must be a string");
    else if (cwd != NULL && json_is_string(cwd) &&
             strlen(json_string_value(cwd)) != json_string_length(cwd))
        sandbox_fail(err, "sandbox policy: sandboxCwd: path contains a NUL byte");
    else
        p = sandbox_policy_from_json(root, json_string_value(cwd), err);
    /* the server's own field: in the text it hands the helper, never taken
     * from a client's sandboxPolicy */
    if (p != NULL && p->kind == SANDBOX_WORKSPACE_WRITE && parse_canonical(p, root, err) < 0) {
        sandbox_policy_free(p);
        p = NULL;
    }
    json_decref(root);
    return p;
}

void
sandbox_policy_free(struct sandbox_policy *p)
{
    if (p == NULL)
        return;
    free(p->cwd);
    path_list_clear(&p->writable);
    path_list_clear(&p->readable);
    path_list_clear(&p->plain_writable);
    path_list_clear(&p->read_only);
    path_list_clear(&p->deny);
    path_list_clear(&p->canonical_roots);
    path_list_clear(&p->canonical_repo_roots);
    free(p);
}

/* Copies the n paths into out (empty first).  -1 when out of memory. */
static int
path_list_copy(struct path_list *out, const char *const *paths, size_t n)
{
    out->items = n ? calloc(n, sizeof *out->items) : NULL;
    out->count = 0;
    if (n && out->items == NULL)
        return -1;
    for (; out->count < n; out->count++) {
        if ((out->items[out->count] = strdup(paths[out->count])) == NULL)
            return -1;
    }
    return 0;
}

int
sandbox_policy_set_canonical_roots(struct sandbox_policy *p, const char *const *roots,
                                   size_t n_roots, const char *const *repo_roots,
                                   size_t n_repo_roots, char **err)
{
    *err = NULL;
    if (p->kind != SANDBOX_WORKSPACE_WRITE)
        return sandbox_fail(err,
                            "sandbox policy: only workspace-write has writable roots to resolve");
    struct path_list r = {0}, repo = {0};
    int rc = path_list_copy(&r, roots, n_roots) < 0 ||
                     path_list_copy(&repo, repo_roots, n_repo_roots) < 0
                 ? sandbox_fail(err, "sandbox policy: out of memory")
                 : check_canonical(&r, &repo, err);
    if (rc < 0) {
        path_list_clear(&r);
        path_list_clear(&repo);
        return -1;
    }
    path_list_clear(&p->canonical_roots);
    path_list_clear(&p->canonical_repo_roots);
    p->canonical_roots = r;
    p->canonical_repo_roots = repo;
    p->canonical = true;
    return 0;
}

enum sandbox_kind
sandbox_policy_kind(const struct sandbox_policy *p)
{
    return p->kind;
}

bool
sandbox_policy_network_allowed(const struct sandbox_policy *p)
{
    return p->kind == SANDBOX_DANGER_FULL_ACCESS || p->network;
}

const char *
sandbox_policy_cwd(const struct sandbox_policy *p)
{
    return p->cwd;
}

size_t
sandbox_policy_writable_root_count(const struct sandbox_policy *p)
{
    return p->writable.count;
}

const char *
sandbox_policy_writable_root(const struct sandbox_policy *p, size_t i)
{
    return i < p->writable.count ? p->writable.items[i] : NULL;
}

bool
sandbox_policy_tmpdir_writable(const struct sandbox_policy *p)
{
    return p->kind == SANDBOX_WORKSPACE_WRITE && !p->exclude_tmpdir;
}

bool
sandbox_policy_slash_tmp_writable(const struct sandbox_policy *p)
{
    return p->kind == SANDBOX_WORKSPACE_WRITE && !p->exclude_slash_tmp;
}

bool
sandbox_policy_reads_restricted(const struct sandbox_policy *p)
{
    return p->reads_restricted;
}

bool
sandbox_policy_platform_defaults(const struct sandbox_policy *p)
{
    return p->platform_defaults;
}

size_t
sandbox_policy_readable_root_count(const struct sandbox_policy *p)
{
    return p->readable.count;
}

const char *
sandbox_policy_readable_root(const struct sandbox_policy *p, size_t i)
{
    return i < p->readable.count ? p->readable.items[i] : NULL;
}

bool
sandbox_policy_cwd_is_root(const struct sandbox_policy *p)
{
    return p->cwd != NULL && !p->exclude_cwd;
}

size_t
sandbox_policy_deny_count(const struct sandbox_policy *p)
{
    return p->deny.count;
}

const char *
sandbox_policy_deny(const struct sandbox_policy *p, size_t i)
{
    return i < p->deny.count ? p->deny.items[i] : NULL;
}

/* The device nodes every confined command may write: the ones programs
 * open as a matter of course, and the terminals (/dev/pts) a command on a
 * terminal writes to.  The rest of /dev (/dev/shm, /dev/mqueue, new files)
 * is not writable. */
static const char *const writable_devices[] = {
    "/dev/null",    "/dev/zero", "/dev/full", "/dev/random",
    "/dev/urandom", "/dev/tty",  "/dev/ptmx", "/dev/pts",
};

/* A root whose .git and .codex stay read-only: in both lists. */
static int
push_repo_root(struct sandbox_writable *w, const char *path)
{
    if (path_list_add(&w->roots, &w->n_roots, path) < 0)
        return -1;
    return path_list_add(&w->repo_roots, &w->n_repo_roots, path);
}

/* workspace-write's roots, in the order the helper adds its rules. */
static int
add_workspace_roots(struct sandbox_writable *w, const struct sandbox_policy *p, const char *tmpdir)
{
    int rc = sandbox_policy_cwd_is_root(p) ? push_repo_root(w, p->cwd) : 0;
    for (size_t i = 0; rc == 0 && i < p->writable.count; i++)
        rc = push_repo_root(w, p->writable.items[i]);
    for (size_t i = 0; rc == 0 && i < p->plain_writable.count; i++)
        rc = path_list_add(&w->roots, &w->n_roots, p->plain_writable.items[i]);
    if (rc == 0 && !p->exclude_tmpdir && tmpdir != NULL && tmpdir[0] == '/')
        rc = path_list_add(&w->roots, &w->n_roots, tmpdir);
    if (rc == 0 && !p->exclude_slash_tmp)
        rc = path_list_add(&w->roots, &w->n_roots, "/tmp");
    return rc;
}

/* A server's resolved roots, given in place of the policy's own. */
static int
add_canonical_roots(struct sandbox_writable *w, const struct sandbox_policy *p)
{
    w->canonical = true;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < p->canonical_roots.count; i++)
        rc = path_list_add(&w->roots, &w->n_roots, p->canonical_roots.items[i]);
    for (size_t i = 0; rc == 0 && i < p->canonical_repo_roots.count; i++)
        rc = path_list_add(&w->repo_roots, &w->n_repo_roots, p->canonical_repo_roots.items[i]);
    return rc;
}

static int
add_devices(struct sandbox_writable *w)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(writable_devices); i++)
        rc = path_list_add(&w->devices, &w->n_devices, writable_devices[i]);
    return rc;
}

struct sandbox_writable *
sandbox_writable_new(const struct sandbox_policy *p, const char *tmpdir)
{
    struct sandbox_writable *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    int rc = 0;
    switch (p->kind) {
    case SANDBOX_DANGER_FULL_ACCESS:
    case SANDBOX_EXTERNAL:
        w->everything = true;
        break;
    case SANDBOX_READ_ONLY:
        rc = add_devices(w);
        break;
    case SANDBOX_WORKSPACE_WRITE:
        rc = add_devices(w);
        if (rc == 0 && p->canonical)
            rc = add_canonical_roots(w, p);
        else if (rc == 0)
            rc = add_workspace_roots(w, p, tmpdir);
        for (size_t i = 0; rc == 0 && i < p->read_only.count; i++)
            rc = path_list_add(&w->read_only, &w->n_read_only, p->read_only.items[i]);
        break;
    }
    if (rc < 0) {
        sandbox_writable_free(w);
        return NULL;
    }
    return w;
}

void
sandbox_writable_free(struct sandbox_writable *w)
{
    if (w == NULL)
        return;
    strv_free_n(w->roots, w->n_roots);
    strv_free_n(w->devices, w->n_devices);
    strv_free_n(w->repo_roots, w->n_repo_roots);
    strv_free_n(w->read_only, w->n_read_only);
    free(w);
}

/* Adds key -> value to obj, taking value; returns -1 when anything failed. */
static int
put(json_t *obj, const char *key, json_t *value)
{
    return value == NULL ? -1 : json_object_set_new(obj, key, value);
}

static json_t *
path_array(const struct path_list *l)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < l->count; i++) {
        if (json_array_append_new(arr, json_string(l->items[i])) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *
read_access_json(const struct sandbox_policy *p)
{
    json_t *a = json_object();
    if (a == NULL)
        return NULL;
    int rc;
    if (!p->reads_restricted) {
        rc = put(a, "type", json_string("full-access"));
    } else {
        rc = put(a, "type", json_string("restricted"));
        rc |= put(a, "include_platform_defaults", json_boolean(p->platform_defaults));
        rc |= put(a, "readable_roots", path_array(&p->readable));
    }
    if (rc != 0) {
        json_decref(a);
        return NULL;
    }
    return a;
}

static json_t *
canonical_json(const struct sandbox_policy *p)
{
    json_t *c = json_object();
    if (c == NULL)
        return NULL;
    if (put(c, "roots", path_array(&p->canonical_roots)) != 0 ||
        put(c, "repo_roots", path_array(&p->canonical_repo_roots)) != 0) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* A profile's own fields, only when they say something: the text of a
 * sandboxPolicy a client sent stays as it was. */
static int
fill_profile_fields(const struct sandbox_policy *p, json_t *o)
{
    int rc = 0;
    if (p->exclude_cwd)
        rc |= put(o, "exclude_cwd", json_true());
    if (p->plain_writable.count)
        rc |= put(o, "plain_writable_roots", path_array(&p->plain_writable));
    if (p->read_only.count)
        rc |= put(o, "read_only_paths", path_array(&p->read_only));
    if (p->deny.count)
        rc |= put(o, "deny_paths", path_array(&p->deny));
    return rc;
}

static int
fill_canonical(const struct sandbox_policy *p, json_t *o)
{
    int rc = put(o, "type", json_string(sandbox_kind_name(p->kind)));
    if (p->cwd != NULL)
        rc |= put(o, "sandboxCwd", json_string(p->cwd));
    switch (p->kind) {
    case SANDBOX_DANGER_FULL_ACCESS:
        break;
    case SANDBOX_EXTERNAL:
        rc |= put(o, "network_access", json_string(p->network ? "enabled" : "restricted"));
        break;
    case SANDBOX_READ_ONLY:
        rc |= put(o, "network_access", json_boolean(p->network));
        rc |= put(o, "access", read_access_json(p));
        rc |= fill_profile_fields(p, o);
        break;
    case SANDBOX_WORKSPACE_WRITE:
        rc |= put(o, "writable_roots", path_array(&p->writable));
        rc |= put(o, "network_access", json_boolean(p->network));
        rc |= put(o, "exclude_tmpdir_env_var", json_boolean(p->exclude_tmpdir));
        rc |= put(o, "exclude_slash_tmp", json_boolean(p->exclude_slash_tmp));
        rc |= put(o, "read_only_access", read_access_json(p));
        rc |= fill_profile_fields(p, o);
        if (p->canonical)
            rc |= put(o, "canonical_roots", canonical_json(p));
        break;
    }
    return rc;
}

char *
sandbox_policy_to_json(const struct sandbox_policy *p)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    char *text = NULL;
    if (fill_canonical(p, o) == 0)
        text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return text;
}

/* A growing string for describe(); on allocation failure it remembers the
 * failure and later appends do nothing. */
struct strbuf {
    char *data;
    size_t len, cap;
    bool failed;
};

static void
sb_putc(struct strbuf *b, char c)
{
    if (b->failed)
        return;
    if (b->len + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        char *n = realloc(b->data, cap);
        if (n == NULL) {
            b->failed = true;
            return;
        }
        b->data = n;
        b->cap = cap;
    }
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

static void
sb_puts(struct strbuf *b, const char *s)
{
    while (*s != '\0')
        sb_putc(b, *s++);
}

/* Paths come from outside: keep the log line one line by escaping
 * control bytes, the separator and backslash. */
static void
sb_put_path(struct strbuf *b, const char *s)
{
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f || c == ',' || c == '\\' || c == ' ') {
            char esc[5];
            snprintf(esc, sizeof esc, "\\x%02x", c);
            sb_puts(b, esc);
        } else {
            sb_putc(b, (char)c);
        }
    }
}

static void
sb_put_list_item(struct strbuf *b, bool *first, const char *s, bool raw)
{
    if (!*first)
        sb_putc(b, ',');
    *first = false;
    if (raw)
        sb_puts(b, s);
    else
        sb_put_path(b, s);
}

static void
describe_writable(const struct sandbox_policy *p, struct strbuf *b)
{
    bool first = true;
    sb_puts(b, " roots=");
    if (sandbox_policy_cwd_is_root(p))
        sb_put_list_item(b, &first, p->cwd, false);
    for (size_t i = 0; i < p->writable.count; i++)
        sb_put_list_item(b, &first, p->writable.items[i], false);
    for (size_t i = 0; i < p->plain_writable.count; i++)
        sb_put_list_item(b, &first, p->plain_writable.items[i], false);
    if (!p->exclude_tmpdir)
        sb_put_list_item(b, &first, "$TMPDIR", true);
    if (!p->exclude_slash_tmp)
        sb_put_list_item(b, &first, "/tmp", true);
}

static void
describe_reads(const struct sandbox_policy *p, struct strbuf *b)
{
    if (!p->reads_restricted)
        return;
    bool first = true;
    sb_puts(b, " reads=");
    for (size_t i = 0; i < p->readable.count; i++)
        sb_put_list_item(b, &first, p->readable.items[i], false);
    if (p->platform_defaults)
        sb_put_list_item(b, &first, "+platform", true);
    if (first)
        sb_puts(b, "none");
}

/* " NAME=a,b" for a non-empty list. */
static void
describe_list(struct strbuf *b, const char *name, const struct path_list *l)
{
    bool first = true;
    if (l->count)
        sb_puts(b, name);
    for (size_t i = 0; i < l->count; i++)
        sb_put_list_item(b, &first, l->items[i], false);
}

char *
sandbox_policy_describe(const struct sandbox_policy *p)
{
    struct strbuf b = {0};
    sb_puts(&b, sandbox_kind_name(p->kind));
    if (p->kind != SANDBOX_DANGER_FULL_ACCESS) {
        if (p->kind == SANDBOX_WORKSPACE_WRITE)
            describe_writable(p, &b);
        describe_list(&b, " read-only=", &p->read_only);
        describe_reads(p, &b);
        describe_list(&b, " hidden=", &p->deny);
        sb_puts(&b, p->network ? " network=on" : " network=off");
    }
    if (b.failed) {
        free(b.data);
        return NULL;
    }
    return b.data;
}
