#include "rules/load.h"
#include "starlark/errmsg.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "starlark/eval.h"
#include "rules/rule_builtins.h"
#include "starlark/source.h"

char *
rules_default_dir(void)
{
    const char *home = getenv("CODEX_HOME");
    char *dir = NULL;
    if (home != NULL && home[0] != '\0') {
        if (asprintf(&dir, "%s/rules", home) < 0)
            return NULL;
        return dir;
    }
    home = getenv("HOME");
    if (home == NULL || home[0] == '\0')
        return NULL;
    if (asprintf(&dir, "%s/.codex/rules", home) < 0)
        return NULL;
    return dir;
}

/* load_file's result when a file must be run whole (STAR_EXEC_WHOLE): its
 * first statements already added rules that meant something else, so the
 * caller starts the policy again with every file run whole. */
#define LOAD_AGAIN_WHOLE 1

/* How files are run: each whole (not a statement at a time), and as
 * Codex loads them (rules_load_as_codex). */
#define LOAD_WHOLE    1u
#define LOAD_AS_CODEX 2u

/* Runs one file into p, a statement at a time unless LOAD_WHOLE.  Returns
 * 0, LOAD_AGAIN_WHOLE, or -1 with *err set. */
static int
load_file(struct rules_policy *p, const char *path, unsigned how, char **err)
{
    size_t len = 0;
    char *src = star_source_read(path, &len, err);
    if (src == NULL) {
        if (*err == NULL)
            *err = star_errf("%s:1:1: out of memory", path);
        return -1;
    }
    struct star_vm *vm = star_vm_new();
    struct rules_builder *b = rules_builder_new(p, (how & LOAD_AS_CODEX) != 0);
    int rc = -1;
    if (vm == NULL || b == NULL || rules_builtins_install(vm, b) != 0) {
        *err = star_errf("%s:1:1: out of memory", path);
    } else if ((rc = (how & LOAD_WHOLE) ? star_vm_exec_file(vm, path, src, len)
                                        : star_vm_exec_file_stream(vm, path, src, len)) != 0) {
        if (rc < 0)
            *err = strdup(star_vm_error(vm));
    } else {
        rc = rules_builder_check_examples(b, vm, err);
    }
    if (*err != NULL)
        rules_show_nul_standins(*err);
    rules_builder_free(b);
    star_vm_free(vm);
    free(src);
    return rc;
}

static int
cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A rules file's name: NAME.rules, not hidden (an editor's or another
 * tool's scratch file). */
static bool
is_rules_name(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' && n > 6 && strcmp(name + n - 6, ".rules") == 0;
}

/* The sorted *.rules names of dir (missing dir: none).  Returns 0 or -1. */
static int
list_dir(const char *dir, char ***names, size_t *n, char **err)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (d == NULL) {
        if (errno == ENOENT)
            return 0;
        *err = star_errf("%s:1:1: cannot read the rules directory: %s", dir, strerror(errno));
        return -1;
    }
    size_t cap = 0;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d)) != NULL) {
        if (!is_rules_name(de->d_name) || de->d_type == DT_DIR)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **t = realloc(*names, cap * sizeof *t);
            if (t == NULL) {
                rc = -1;
                break;
            }
            *names = t;
        }
        char *name = strdup(de->d_name);
        if (name == NULL) {
            rc = -1;
            break;
        }
        (*names)[(*n)++] = name;
    }
    closedir(d);
    if (rc != 0) {
        *err = star_errf("%s:1:1: out of memory listing the directory", dir);
        return -1;
    }
    if (*n > 1)
        qsort(*names, *n, sizeof **names, cmp_names);
    return 0;
}

static void
free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static int
load_dir(struct rules_policy *p, const char *dir, unsigned how, char **err)
{
    char **names;
    size_t n;
    if (list_dir(dir, &names, &n, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, names[i]) < 0) {
            *err = star_errf("%s:1:1: out of memory", dir);
            rc = -1;
            break;
        }
        rc = load_file(p, path, how, err);
        free(path);
    }
    free_names(names, n);
    return rc;
}

/* Whether a load that asked to be made again whole (LOAD_AGAIN_WHOLE)
 * is to be: then *p is freed. */
static bool
load_again_whole(struct rules_policy **p, int rc, unsigned how)
{
    if (rc != LOAD_AGAIN_WHOLE || (how & LOAD_WHOLE))
        return false;
    rules_policy_free(*p);
    *p = NULL;
    return true;
}

/* What a load came to: p, or NULL (p freed) with *err set. */
static struct rules_policy *
load_end(struct rules_policy *p, int rc, char **err)
{
    if (rc == 0)
        return p;
    rules_policy_free(p);
    if (*err == NULL)
        *err = strdup("rules: out of memory");
    return NULL;
}

static struct rules_policy *
load_all(const char *dir, const char *const *extra, size_t n_extra, unsigned how, char **err)
{
    *err = NULL;
    struct rules_policy *p = rules_policy_new();
    if (p == NULL) {
        *err = strdup("rules: out of memory");
        return NULL;
    }
    int rc = 0;
    if (dir != NULL)
        rc = load_dir(p, dir, how, err);
    for (size_t i = 0; rc == 0 && i < n_extra; i++)
        rc = load_file(p, extra[i], how, err);
    if (load_again_whole(&p, rc, how))
        return load_all(dir, extra, n_extra, how | LOAD_WHOLE, err);
    return load_end(p, rc, err);
}

struct rules_policy *
rules_load(const char *dir, const char *const *extra, size_t n_extra, char **err)
{
    return load_all(dir, extra, n_extra, 0, err);
}

struct rules_policy *
rules_load_as_codex(const char *dir, const char *const *extra, size_t n_extra, char **err)
{
    return load_all(dir, extra, n_extra, LOAD_AS_CODEX, err);
}

int
rules_each_file(const char *const *paths, size_t n, const char *missing_ok,
                int (*fn)(void *arg, const char *file), void *arg, char **err)
{
    *err = NULL;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct stat st;
        int found = stat(paths[i], &st);
        if (found < 0 && errno == ENOENT && missing_ok && strcmp(paths[i], missing_ok) == 0)
            continue;
        if (found < 0 || !S_ISDIR(st.st_mode)) {
            rc = fn(arg, paths[i]); /* a missing file: fn finds out */
            continue;
        }
        char **names;
        size_t n_names;
        if (list_dir(paths[i], &names, &n_names, err) != 0)
            return -1;
        for (size_t k = 0; rc == 0 && k < n_names; k++) {
            char *path = NULL;
            if (asprintf(&path, "%s/%s", paths[i], names[k]) < 0) {
                *err = star_errf("%s:1:1: out of memory", paths[i]);
                rc = -1;
                break;
            }
            rc = fn(arg, path);
            free(path);
        }
        free_names(names, n_names);
    }
    return rc;
}

/* rules_each_file's step for rules_load_paths: one file into the policy. */
struct load_ctx {
    struct rules_policy *p;
    unsigned how;
    char **err;
};

static int
load_one(void *arg, const char *file)
{
    struct load_ctx *ctx = arg;
    return load_file(ctx->p, file, ctx->how, ctx->err);
}

static struct rules_policy *
load_paths(const char *const *paths, size_t n, const char *missing_ok, unsigned how, char **err)
{
    *err = NULL;
    struct rules_policy *p = rules_policy_new();
    if (p == NULL) {
        *err = strdup("rules: out of memory");
        return NULL;
    }
    struct load_ctx ctx = {p, how, err};
    int rc = rules_each_file(paths, n, missing_ok, load_one, &ctx, err);
    if (load_again_whole(&p, rc, how))
        return load_paths(paths, n, missing_ok, how | LOAD_WHOLE, err);
    return load_end(p, rc, err);
}

struct rules_policy *
rules_load_paths(const char *const *paths, size_t n, const char *missing_ok, char **err)
{
    return load_paths(paths, n, missing_ok, 0, err);
}
