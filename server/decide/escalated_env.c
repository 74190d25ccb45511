#include "server/decide/escalated_env.h"

#include "common/macros.h"
#include "common/strv.h"
#include "proto/esc_env.h"

#include "server/decide/exec_checks.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What the request may set: how text looks, in which language, time zone
 * and terminal size; no path, no program, nothing that is read as a file
 * name (LC_* is glibc's categories by name, so the set stays bounded). */
static const struct escalated_env_allowed allowed_env[] = {
    {"LANG", ESCALATED_ENV_CHECK_WORD},
    {"LANGUAGE", ESCALATED_ENV_CHECK_WORD},
    {"LC_ALL", ESCALATED_ENV_CHECK_WORD},
    {"LC_ADDRESS", ESCALATED_ENV_CHECK_WORD},
    {"LC_COLLATE", ESCALATED_ENV_CHECK_WORD},
    {"LC_CTYPE", ESCALATED_ENV_CHECK_WORD},
    {"LC_IDENTIFICATION", ESCALATED_ENV_CHECK_WORD},
    {"LC_MEASUREMENT", ESCALATED_ENV_CHECK_WORD},
    {"LC_MESSAGES", ESCALATED_ENV_CHECK_WORD},
    {"LC_MONETARY", ESCALATED_ENV_CHECK_WORD},
    {"LC_NAME", ESCALATED_ENV_CHECK_WORD},
    {"LC_NUMERIC", ESCALATED_ENV_CHECK_WORD},
    {"LC_PAPER", ESCALATED_ENV_CHECK_WORD},
    {"LC_TELEPHONE", ESCALATED_ENV_CHECK_WORD},
    {"LC_TIME", ESCALATED_ENV_CHECK_WORD},
    {"TZ", ESCALATED_ENV_CHECK_TZ},
    {"TERM", ESCALATED_ENV_CHECK_WORD},
    {"COLORTERM", ESCALATED_ENV_CHECK_WORD},
    {"COLUMNS", ESCALATED_ENV_CHECK_NUMBER},
    {"LINES", ESCALATED_ENV_CHECK_NUMBER},
    {"NO_COLOR", ESCALATED_ENV_CHECK_WORD},
    {"FORCE_COLOR", ESCALATED_ENV_CHECK_WORD},
    {"CLICOLOR", ESCALATED_ENV_CHECK_WORD},
    {"CLICOLOR_FORCE", ESCALATED_ENV_CHECK_WORD},
    {"CI", ESCALATED_ENV_CHECK_WORD},
};
#define N_ALLOWED ARRAY_SIZE(allowed_env)

/* Set (or removed) whatever the server's or the request's environment says:
 * an escalated program has no terminal and no person at it, so nothing may
 * page, open an editor or wait for a password.  Editors are "false" rather
 * than unset, since unset many programs fall back to vi. */
static const struct escalated_env_forced forced_env[] = {
    {"PAGER", "cat"},
    {"GIT_PAGER", "cat"},
    {"MANPAGER", "cat"},
    {"SYSTEMD_PAGER", "cat"},
    {"EDITOR", "false"},
    {"VISUAL", "false"},
    {"GIT_EDITOR", "false"},
    {"GIT_SEQUENCE_EDITOR", "false"},
    {"GIT_TERMINAL_PROMPT", "0"},
    {"GCM_INTERACTIVE", "never"},
    {"SSH_ASKPASS_REQUIRE", "never"},
    {"SSH_ASKPASS", NULL},
    {"GIT_ASKPASS", NULL},
    {"OLDPWD", NULL},
    /* git finds its repository where the decision looked, and no other:
     * no location from either side (the escalation sets
     * GIT_CEILING_DIRECTORIES above the repository it checked), and a
     * bare repository only when named explicitly (a directory laid out as
     * a git directory is not taken as one by walking into it) */
    {"GIT_DIR", NULL},
    {"GIT_WORK_TREE", NULL},
    {"GIT_COMMON_DIR", NULL},
    {"GIT_INDEX_FILE", NULL},
    {"GIT_OBJECT_DIRECTORY", NULL},
    {"GIT_ALTERNATE_OBJECT_DIRECTORIES", NULL},
    {"GIT_DISCOVERY_ACROSS_FILESYSTEM", NULL},
    {"GIT_CEILING_DIRECTORIES", NULL},
    {"GIT_TEMPLATE_DIR", NULL},
    {"GIT_CONFIG", NULL},
    {"GIT_CONFIG_COUNT", "1"},
    {"GIT_CONFIG_KEY_0", "safe.bareRepository"},
    {"GIT_CONFIG_VALUE_0", "explicit"},
    /* less runs no preprocessor and no shell command, and reads no
     * lesskey file the command could have named */
    {"LESSSECURE", "1"},
    {"LESSOPEN", NULL},
    {"LESSCLOSE", NULL},
    {"LESSKEY", NULL},
    {"LESSKEYIN", NULL},
    {"LESSKEY_CONTENT", NULL},
    {"LESSEDIT", NULL},
};
#define N_FORCED ARRAY_SIZE(forced_env)

/* execgate's own variables (the shell's escalation socket, wrapper and
 * hint): an escalated program has no escalation socket. */
static const char *const own_env[] = {
    ESC_ENV_ALL,
    "EXECGATE_*",
};
#define N_OWN ARRAY_SIZE(own_env)

#define ZONEINFO_DIR      "/usr/share/zoneinfo/"
#define MAX_NUMBER_DIGITS 5

const struct escalated_env_allowed *
escalated_env_allow_list(size_t *n)
{
    *n = N_ALLOWED;
    return allowed_env;
}

const struct escalated_env_forced *
escalated_env_forced_list(size_t *n)
{
    *n = N_FORCED;
    return forced_env;
}

const char *const *
escalated_env_own_list(size_t *n)
{
    *n = N_OWN;
    return own_env;
}

/* Whether entry's name (its first len bytes) is name. */
static bool
name_is(const char *entry, size_t len, const char *name)
{
    /* the first byte settles most names: this runs for every entry of
     * both environments against each table */
    return entry[0] == name[0] && strncmp(entry, name, len) == 0 && name[len] == '\0';
}

bool
escalated_env_is_own(const char *entry)
{
    size_t len = strcspn(entry, "=");
    for (size_t i = 0; i < N_OWN; i++) {
        size_t n = strlen(own_env[i]);
        if (own_env[i][n - 1] == '*') {
            if (len >= n - 1 && entry[0] == own_env[i][0] && strncmp(entry, own_env[i], n - 1) == 0)
                return true;
        } else if (name_is(entry, len, own_env[i])) {
            return true;
        }
    }
    return false;
}

static bool
is_name(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    for (s++; *s; s++) {
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    }
    return true;
}

/* The forced entry for the name entry[0..len), or NULL. */
static const struct escalated_env_forced *
forced_for(const char *entry, size_t len)
{
    for (size_t i = 0; i < N_FORCED; i++) {
        if (name_is(entry, len, forced_env[i].name))
            return &forced_env[i];
    }
    return NULL;
}

/* The allow-list index of the name entry[0..len), or -1. */
static int
allowed_index(const char *entry, size_t len)
{
    for (size_t i = 0; i < N_ALLOWED; i++) {
        if (name_is(entry, len, allowed_env[i].name))
            return (int)i;
    }
    return -1;
}

const char *
escalated_env_pass_name_problem(const char *name)
{
    if (!*name)
        return "is empty";
    if (strchr(name, '='))
        return "contains '=' (give a name, not NAME=value)";
    if (!is_name(name))
        return "is not a variable name (letters, digits and '_', not starting with a digit)";
    if (escalated_env_is_own(name))
        return "is one of execgate's own variables";
    if (exec_checks_env_dropped(name))
        return "is on the drop list of loader, shell and interpreter hooks "
               "(docs/escalation.md)";
    size_t len = strlen(name);
    if (forced_for(name, len) || name_is(name, len, "PWD"))
        return "is set by the server for every escalated program";
    return NULL;
}

static bool
printable_word(const char *s)
{
    for (; *s; s++) {
        if (*s <= ' ' || *s > '~')
            return false;
    }
    return true;
}

static bool
tz_ok(const char *v)
{
    if (!printable_word(v))
        return false;
    if (*v == ':')
        v++;
    if (*v == '/' && strncmp(v, ZONEINFO_DIR, strlen(ZONEINFO_DIR)) != 0)
        return false;
    for (const char *c = v; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return false;
        c += n;
        if (*c == '/')
            c++;
    }
    return true;
}

static bool
value_ok(const char *v, enum escalated_env_check check)
{
    switch (check) {
    case ESCALATED_ENV_CHECK_WORD:
        return printable_word(v) && !strpbrk(v, "/%");
    case ESCALATED_ENV_CHECK_NUMBER: {
        size_t n = strspn(v, "0123456789");
        return n > 0 && n <= MAX_NUMBER_DIGITS && v[n] == '\0';
    }
    case ESCALATED_ENV_CHECK_TZ:
        return tz_ok(v);
    }
    return false;
}

/* What the request says about the allow-list and the pass names: the first
 * entry of each name (value checked for the allow-list), NULL if none. */
struct from_request {
    const char *allowed[N_ALLOWED];
    bool allowed_seen[N_ALLOWED];
    const char **pass;    /* [n_pass] */
    bool *pass_usable;    /* [n_pass]: valid, and the first of its name */
    bool *allowed_passed; /* [N_ALLOWED]: also a usable pass name */
};

static void
read_request(struct from_request *r, char *const *request_env, const char *const *pass_names,
             size_t n_pass)
{
    for (size_t j = 0; j < n_pass; j++) {
        r->pass_usable[j] = escalated_env_pass_name_problem(pass_names[j]) == NULL;
        for (size_t k = 0; r->pass_usable[j] && k < j; k++) {
            if (r->pass_usable[k] && strcmp(pass_names[k], pass_names[j]) == 0)
                r->pass_usable[j] = false;
        }
        if (!r->pass_usable[j])
            continue;
        int a = allowed_index(pass_names[j], strlen(pass_names[j]));
        if (a >= 0)
            r->allowed_passed[a] = true;
    }
    for (size_t i = 0; request_env && request_env[i]; i++) {
        const char *e = request_env[i];
        const char *eq = strchr(e, '=');
        if (!eq)
            continue;
        size_t len = (size_t)(eq - e);
        int a = allowed_index(e, len);
        if (a >= 0 && !r->allowed_seen[a]) {
            r->allowed_seen[a] = true;
            if (value_ok(eq + 1, allowed_env[a].check))
                r->allowed[a] = e;
        }
        for (size_t j = 0; j < n_pass; j++) {
            if (r->pass_usable[j] && !r->pass[j] && name_is(e, len, pass_names[j]))
                r->pass[j] = e;
        }
    }
}

/* Whether the server's entry e (name e[0..len)) is left out. */
static bool
server_entry_replaced(const struct from_request *r, const char *e, size_t len,
                      const char *const *pass_names, size_t n_pass)
{
    if (len == 0 || escalated_env_is_own(e) || exec_checks_env_dropped(e) || forced_for(e, len) ||
        name_is(e, len, "PWD"))
        return true;
    int a = allowed_index(e, len);
    if (a >= 0 && !r->allowed_passed[a])
        return true; /* the request decides */
    for (size_t j = 0; j < n_pass; j++) {
        if (r->pass[j] && name_is(e, len, pass_names[j]))
            return true;
    }
    return false;
}

struct sorted_entry {
    const char *entry;
    size_t len;
    size_t index;
};

static int
sorted_entry_cmp(const void *pa, const void *pb)
{
    const struct sorted_entry *a = pa, *b = pb;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->entry, b->entry, n);
    if (c != 0)
        return c;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* dup[i] = server_env[i] is not the first entry of its name (or has no
 * '='), in O(n log n).  -1 out of memory. */
static int
mark_duplicates(char *const *server_env, size_t n, bool *dup)
{
    if (n == 0)
        return 0;
    struct sorted_entry *s = calloc(n, sizeof(*s));
    if (!s)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(server_env[i], '=');
        dup[i] = eq == NULL;
        s[i] = (struct sorted_entry){server_env[i], eq ? (size_t)(eq - server_env[i]) : 0, i};
    }
    qsort(s, n, sizeof(*s), sorted_entry_cmp);
    for (size_t i = 1; i < n; i++) {
        if (s[i].len == s[i - 1].len && memcmp(s[i].entry, s[i - 1].entry, s[i].len) == 0)
            dup[s[i].index] = true;
    }
    free(s);
    return 0;
}

static char *
join(const char *name, const char *value)
{
    size_t n = strlen(name), v = strlen(value);
    char *s = malloc(n + v + 2);
    if (!s)
        return NULL;
    memcpy(s, name, n);
    s[n] = '=';
    memcpy(s + n + 1, value, v + 1);
    return s;
}

/* Appends s, which out then owns, to out[*k]; false when s is NULL (out of
 * memory). */
static bool
push(char **out, size_t *k, char *s)
{
    if (!s)
        return false;
    out[(*k)++] = s;
    return true;
}

char **
escalated_env_build(char *const *server_env, char *const *request_env,
                    const char *const *pass_names, size_t n_pass, const char *workdir)
{
    size_t n_server = 0;
    while (server_env && server_env[n_server])
        n_server++;
    if (n_server > SIZE_MAX / 16 || n_pass > SIZE_MAX / 16)
        return NULL;
    size_t cap = n_server + N_ALLOWED + n_pass + N_FORCED + 2;
    char **out = calloc(cap, sizeof(char *));
    bool *dup = calloc(n_server + 1, sizeof(bool));
    struct from_request r = {0};
    r.pass = calloc(n_pass + 1, sizeof(char *));
    r.pass_usable = calloc(n_pass + 1, sizeof(bool));
    r.allowed_passed = calloc(N_ALLOWED, sizeof(bool));
    bool ok = out && dup && r.pass && r.pass_usable && r.allowed_passed &&
              mark_duplicates(server_env, n_server, dup) == 0;
    size_t k = 0;
    if (ok)
        read_request(&r, request_env, pass_names, n_pass);
    for (size_t i = 0; ok && i < n_server; i++) {
        const char *e = server_env[i];
        if (dup[i] || server_entry_replaced(&r, e, strcspn(e, "="), pass_names, n_pass))
            continue;
        ok = push(out, &k, strdup(e));
    }
    for (size_t a = 0; ok && a < N_ALLOWED; a++) {
        if (r.allowed[a] && !r.allowed_passed[a])
            ok = push(out, &k, strdup(r.allowed[a]));
    }
    for (size_t j = 0; ok && j < n_pass; j++) {
        if (r.pass[j])
            ok = push(out, &k, strdup(r.pass[j]));
    }
    for (size_t f = 0; ok && f < N_FORCED; f++) {
        if (forced_env[f].value)
            ok = push(out, &k, join(forced_env[f].name, forced_env[f].value));
    }
    if (ok && workdir)
        ok = push(out, &k, join("PWD", workdir));
    free(dup);
    free(r.pass);
    free(r.pass_usable);
    free(r.allowed_passed);
    if (!ok) {
        strv_free(out);
        return NULL;
    }
    return out;
}

int
escalated_env_add(char ***env, const char *name, const char *value)
{
    size_t n = strv_len(*env);
    char *entry = join(name, value);
    char **grown = entry ? realloc(*env, (n + 2) * sizeof(char *)) : NULL;
    if (!grown) {
        free(entry);
        return -1;
    }
    grown[n] = entry;
    grown[n + 1] = NULL;
    *env = grown;
    return 0;
}
