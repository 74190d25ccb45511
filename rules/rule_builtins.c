#include "rules/rule_builtins.h"

#include "common/strv.h"

#include "common/macros.h"
#include "starlark/errmsg.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/shlex.h"
#include "starlark/unicode.h"

/* A prefix_rule call whose examples are checked when the file is done. */
struct pending {
    struct pending *next;
    uint32_t line, col;
    struct rules_token *pattern;
    size_t n;
    enum rules_decision decision;
    const struct star_str *justification; /* NULL: none */
    const char *const **matches;          /* each a NULL-terminated argv */
    size_t *match_lens, n_matches;
    const char *const **not_matches;
    size_t *not_match_lens, n_not_matches;
};

struct rules_builder {
    struct rules_policy *policy;
    struct pending *first, *last; /* arena-owned; valid while the file's vm lives */
    bool as_codex;                /* ~/ paths refused (rules_builder_new) */
};

struct rules_builder *
rules_builder_new(struct rules_policy *p, bool as_codex)
{
    struct rules_builder *b = calloc(1, sizeof *b);
    if (b != NULL) {
        b->policy = p;
        b->as_codex = as_codex;
    }
    return b;
}

void
rules_builder_free(struct rules_builder *b)
{
    free(b);
}

static struct rules_builder *
builder_of(struct star_builtin *self)
{
    return self->data;
}

/* A string argument as a C string; NUL bytes would silently cut it short. */
static const char *
c_string(struct star_vm *vm, struct star_value v, const char *what)
{
    if (v.type != STAR_STRING)
        star_fail(vm, "%s must be a string, not %s", what, star_type_name(v));
    if (memchr(v.u.s->data, '\0', v.u.s->len) != NULL)
        star_fail(vm, "%s must not contain a NUL byte", what);
    return v.u.s->data;
}

/*
 * A string argument as a C string with each NUL written as
 * RULES_NUL_STANDIN (Codex accepts NUL bytes in names, paths, hosts,
 * pattern tokens and examples; policy.h says why the stand-in is safe).
 */
static const char *
standin_string(struct star_vm *vm, struct star_value v, const char *what)
{
    if (v.type != STAR_STRING)
        star_fail(vm, "%s must be a string, not %s", what, star_type_name(v));
    const struct star_str *str = v.u.s;
    if (memchr(str->data, '\0', str->len) == NULL)
        return str->data;
    struct star_buf buf = {0};
    for (size_t i = 0; i < str->len; i++) {
        if (str->data[i] == '\0')
            star_buf_add(vm, &buf, RULES_NUL_STANDIN, strlen(RULES_NUL_STANDIN));
        else
            star_buf_add(vm, &buf, str->data + i, 1);
    }
    star_buf_add(vm, &buf, "", 0);
    return buf.data;
}

static bool
given(struct star_value v)
{
    return v.type != STAR_UNBOUND;
}

/* Whether s is empty or only whitespace, by Rust's (Unicode's) measure,
 * as Codex's "justification cannot be empty" check uses. */
static bool
blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len;)
        if (!unicode_is_whitespace(unicode_next(s, len, &i)))
            return false;
    return true;
}

/* The justification as written (it may hold NUL bytes, as in Codex). */
static const struct star_str *
justification_arg(struct star_vm *vm, const char *fname, struct star_value v)
{
    if (!given(v))
        return NULL;
    if (v.type != STAR_STRING)
        star_fail(vm, "%s: justification must be a string, not %s", fname, star_type_name(v));
    if (blank(v.u.s->data, v.u.s->len))
        star_fail(vm, "invalid rule: justification cannot be empty");
    return v.u.s;
}

static bool
has_nul(struct star_value v)
{
    return memchr(v.u.s->data, '\0', v.u.s->len) != NULL;
}

/*
 * The pattern with NUL bytes as RULES_NUL_STANDIN (*full, to check the
 * rule's examples, which may hold the same NULs) and the pattern the
 * policy keeps (returned): a token with a NUL can never equal a command's
 * word, so such alternatives are left out, and a token with no
 * alternative left never matches.
 */
static struct rules_token *
parse_pattern(struct star_vm *vm, struct star_value v, size_t *n, struct rules_token **full)
{
    if (v.type != STAR_LIST)
        star_fail(vm, "prefix_rule: pattern must be a list, not %s", star_type_name(v));
    struct star_list *l = v.u.l;
    if (l->len == 0)
        star_fail(vm, "invalid pattern element: pattern cannot be empty");
    struct rules_token *toks = star_alloc(vm, l->len * sizeof *toks);
    struct rules_token *all = star_alloc(vm, l->len * sizeof *all);
    for (size_t i = 0; i < l->len; i++) {
        struct star_value e = l->items[i];
        if (e.type == STAR_STRING) {
            const char **alt = star_alloc(vm, sizeof *alt);
            const char **every = star_alloc(vm, sizeof *every);
            toks[i].alts = alt;
            all[i].alts = every;
            every[0] = standin_string(vm, e, "a pattern token");
            all[i].n_alts = 1;
            if (!has_nul(e)) {
                alt[0] = every[0];
                toks[i].n_alts = 1;
            }
        } else if (e.type == STAR_LIST) {
            struct star_list *al = e.u.l;
            const char **alts = star_alloc(vm, (al->len ? al->len : 1) * sizeof *alts);
            const char **every = star_alloc(vm, (al->len ? al->len : 1) * sizeof *every);
            size_t k = 0;
            for (size_t j = 0; j < al->len; j++) {
                if (al->items[j].type != STAR_STRING)
                    star_fail(vm,
                              "invalid pattern element: pattern alternative must be a string "
                              "(got %s)",
                              star_type_name(al->items[j]));
                every[j] = standin_string(vm, al->items[j], "a pattern alternative");
                if (!has_nul(al->items[j]))
                    alts[k++] = every[j];
            }
            if (al->len == 0)
                star_fail(vm, "invalid pattern element: pattern alternatives cannot be empty");
            toks[i].alts = alts;
            toks[i].n_alts = k;
            all[i].alts = every;
            all[i].n_alts = al->len;
        } else {
            star_fail(vm,
                      "invalid pattern element: pattern element must be a string or list of "
                      "strings (got %s)",
                      star_type_name(e));
        }
    }
    *n = l->len;
    *full = all;
    return toks;
}

/* One example as an arena-owned NULL-terminated argv. */
static const char *const *
parse_example(struct star_vm *vm, struct star_value e, size_t *argc)
{
    if (e.type == STAR_STRING) {
        const char *s = standin_string(vm, e, "an example");
        size_t len = strlen(s);
        /*
         * Reserve the arena memory first: shlex_split's words are malloc'd,
         * and an arena failure (a longjmp) while they are held would leak
         * them.  A split never yields more than len + 1 words or len bytes.
         */
        if (len > SIZE_MAX / 16)
            star_fail(vm, "out of memory");
        const char **argv = star_alloc(vm, (len + 2) * sizeof *argv);
        char *text = star_alloc(vm, 2 * len + 2);
        char **words = NULL;
        size_t n = 0;
        const char *why = NULL;
        int rc = shlex_split(s, len, &words, &n, &why);
        if (rc == -ENOMEM)
            star_fail(vm, "out of memory");
        if (rc != 0)
            star_fail(vm, "invalid example: example string has invalid shell syntax (%s)",
                      why ? why : "bad quoting");
        if (n == 0) {
            strv_free(words);
            star_fail(vm, "invalid example: example cannot be an empty string");
        }
        for (size_t i = 0; i < n; i++) {
            size_t wl = strlen(words[i]);
            memcpy(text, words[i], wl + 1);
            argv[i] = text;
            text += wl + 1;
        }
        argv[n] = NULL;
        strv_free(words);
        *argc = n;
        return argv;
    }
    if (e.type != STAR_LIST)
        star_fail(vm, "invalid example: example must be a string or list of strings (got %s)",
                  star_type_name(e));
    struct star_list *l = e.u.l;
    for (size_t i = 0; i < l->len; i++)
        if (l->items[i].type != STAR_STRING)
            star_fail(vm, "invalid example: example tokens must be strings (got %s)",
                      star_type_name(l->items[i]));
    if (l->len == 0)
        star_fail(vm, "invalid example: example cannot be an empty list");
    const char **argv = star_alloc(vm, (l->len + 1) * sizeof *argv);
    for (size_t i = 0; i < l->len; i++)
        argv[i] = standin_string(vm, l->items[i], "an example token");
    *argc = l->len;
    return argv;
}

static void
parse_examples(struct star_vm *vm, const char *what, struct star_value v, const char *const ***out,
               size_t **lens, size_t *n)
{
    *n = 0;
    if (!given(v))
        return;
    if (v.type != STAR_LIST)
        star_fail(vm, "prefix_rule: %s must be a list, not %s", what, star_type_name(v));
    size_t cnt = v.u.l->len;
    *out = star_alloc(vm, (cnt ? cnt : 1) * sizeof **out);
    *lens = star_alloc(vm, (cnt ? cnt : 1) * sizeof **lens);
    for (size_t i = 0; i < cnt; i++)
        (*out)[i] = parse_example(vm, v.u.l->items[i], &(*lens)[i]);
    *n = cnt;
}

static struct star_value
bi_prefix_rule(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    static const char *const params[] = {"pattern", "decision", "match", "not_match",
                                         "justification"};
    struct star_value a[5];
    star_args_bind(vm, "prefix_rule", args, params, 1, 5, a);
    uint32_t line = vm->line, col = vm->col;

    enum rules_decision decision = RULES_DECISION_ALLOW;
    if (given(a[1])) {
        if (a[1].type != STAR_STRING)
            star_fail(vm, "prefix_rule: decision must be a string, not %s", star_type_name(a[1]));
        const char *d = c_string(vm, a[1], "decision");
        if (rules_decision_parse(d, &decision) != 0)
            star_fail(vm, "invalid decision: %s (want allow, prompt or forbidden)", d);
    }
    const struct star_str *justification = justification_arg(vm, "prefix_rule", a[4]);
    size_t n;
    struct rules_token *full;
    struct rules_token *pattern = parse_pattern(vm, a[0], &n, &full);

    struct pending *p = star_alloc(vm, sizeof *p);
    parse_examples(vm, "match", a[2], &p->matches, &p->match_lens, &p->n_matches);
    parse_examples(vm, "not_match", a[3], &p->not_matches, &p->not_match_lens, &p->n_not_matches);

    struct rules_builder *b = builder_of(self);
    const struct rules_origin origin = {.file = vm->file, .line = line, .col = col};
    /* A rule whose program token cannot match (see parse_pattern) is
     * checked but never kept. */
    if (pattern[0].n_alts > 0 &&
        rules_policy_add_prefix_rule_text(b->policy, pattern, n, decision,
                                          justification ? justification->data : NULL,
                                          justification ? justification->len : 0, &origin) != 0)
        star_fail(vm, "out of memory");
    if (p->n_matches + p->n_not_matches > 0) {
        star_keep(vm); /* checked once the file has run */
        p->line = line;
        p->col = col;
        p->pattern = full;
        p->n = n;
        p->decision = decision;
        p->justification = justification;
        if (b->last)
            b->last->next = p;
        else
            b->first = p;
        b->last = p;
    }
    return star_none();
}

/* Lexical basename: after the last '/', ignoring trailing slashes and
 * "." components ("/bin/ls/." names ls), as Rust's Path::file_name. */
static void
basename_of(const char *path, const char **start, size_t *len)
{
    size_t end = strlen(path);
    for (;;) {
        while (end > 1 && path[end - 1] == '/')
            end--;
        if (end > 1 && path[end - 1] == '.' && path[end - 2] == '/')
            end -= 2;
        else
            break;
    }
    size_t b = end;
    while (b > 0 && path[b - 1] != '/')
        b--;
    *start = path + b;
    *len = end - b;
}

static struct star_value
bi_host_executable(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    static const char *const params[] = {"name", "paths"};
    struct star_value a[2];
    star_args_bind(vm, "host_executable", args, params, 2, 2, a);
    if (a[0].type != STAR_STRING)
        star_fail(vm, "host_executable: name must be a string, not %s", star_type_name(a[0]));
    const char *name = standin_string(vm, a[0], "name");
    if (name[0] == '\0')
        star_fail(vm, "invalid rule: host_executable name cannot be empty");
    if (strchr(name, '/') != NULL || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        star_fail(vm, "invalid rule: host_executable name must be a bare executable name (got %s)",
                  name);
    if (a[1].type != STAR_LIST)
        star_fail(vm, "host_executable: paths must be a list, not %s", star_type_name(a[1]));
    struct star_list *l = a[1].u.l;
    const char **paths = star_alloc(vm, (l->len ? l->len : 1) * sizeof *paths);
    size_t n = 0;
    const char *home = getenv("HOME");
    for (size_t i = 0; i < l->len; i++) {
        if (l->items[i].type != STAR_STRING)
            star_fail(vm, "invalid rule: host_executable paths must be strings (got %s)",
                      star_type_name(l->items[i]));
        const char *raw = standin_string(vm, l->items[i], "a host_executable path");
        const char *path = raw;
        if (strncmp(raw, "~/", 2) == 0 && !builder_of(self)->as_codex) {
            if (home == NULL || home[0] != '/')
                star_fail(vm, "invalid rule: host_executable path %s needs $HOME to be set", raw);
            struct star_buf buf = {0};
            star_buf_add(vm, &buf, home, strlen(home));
            star_buf_add(vm, &buf, raw + 1, strlen(raw + 1));
            path = buf.data;
        } else if (raw[0] != '/') {
            star_fail(vm, "invalid rule: host_executable paths must be absolute (got %s)", raw);
        }
        const char *base;
        size_t blen;
        basename_of(path, &base, &blen);
        if (blen != strlen(name) || memcmp(base, name, blen) != 0)
            star_fail(vm, "invalid rule: host_executable path `%s` must have basename `%s`", raw,
                      name);
        bool dup = false;
        for (size_t j = 0; j < n; j++)
            dup = dup || strcmp(paths[j], path) == 0;
        if (!dup)
            paths[n++] = path;
    }
    if (rules_policy_add_host_executable(builder_of(self)->policy, name, paths, n) != 0)
        star_fail(vm, "out of memory");
    return star_none();
}

/* s[*b..*e) without the Unicode whitespace at both ends (Rust's trim). */
static void
trim_space(const char *s, size_t *b, size_t *e)
{
    while (*b < *e) {
        size_t i = *b;
        if (!unicode_is_whitespace(unicode_next(s, *e, &i)))
            break;
        *b = i;
    }
    while (*e > *b) {
        size_t i = *e;
        if (!unicode_is_whitespace(unicode_prev(s, &i)))
            break;
        *e = i;
    }
}

static bool
all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return n > 0;
}

/*
 * Codex's host checks and normalization, in its order: trimmed, a hostname
 * or IP literal (no scheme, path or wildcard), an optional :PORT dropped
 * ("[v6]:PORT" or "name:PORT"), trailing dots dropped, ASCII lower case,
 * no whitespace (Unicode's) inside.
 */
static const char *
network_host(struct star_vm *vm, const char *raw)
{
    size_t b = 0, e = strlen(raw);
    trim_space(raw, &b, &e);
    if (b == e)
        star_fail(vm, "invalid rule: network_rule host cannot be empty");
    struct star_str *h = star_str_new(vm, raw + b, e - b);
    if (strstr(h->data, "://") || strpbrk(h->data, "/?#"))
        star_fail(vm, "invalid rule: network_rule host must be a hostname or IP literal (without "
                      "scheme or path)");
    const char *s = h->data;
    size_t len = h->len;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close)
            star_fail(vm, "invalid rule: network_rule host has an invalid bracketed IPv6 literal");
        const char *rest = close + 1;
        size_t rest_len = (size_t)(s + len - rest);
        if (rest_len > 0 && !(rest[0] == ':' && all_digits(rest + 1, rest_len - 1)))
            star_fail(vm, "invalid rule: network_rule host contains an unsupported suffix: %s",
                      raw);
        s++;
        len = (size_t)(close - s);
    } else {
        const char *colon = strchr(s, ':');
        if (colon && !strchr(colon + 1, ':') && colon > s &&
            all_digits(colon + 1, (size_t)(s + len - colon - 1)))
            len = (size_t)(colon - s);
    }
    while (len > 0 && s[len - 1] == '.')
        len--;
    b = 0;
    e = len;
    trim_space(s, &b, &e);
    struct star_str *n = star_str_new(vm, s + b, e - b);
    if (n->len == 0)
        star_fail(vm, "invalid rule: network_rule host cannot be empty");
    if (strchr(n->data, '*'))
        star_fail(vm, "invalid rule: network_rule host must be a specific host; wildcards are "
                      "not allowed");
    for (size_t i = 0; i < n->len;) {
        if (unicode_is_whitespace(unicode_next(n->data, n->len, &i)))
            star_fail(vm, "invalid rule: network_rule host cannot contain whitespace");
    }
    for (size_t i = 0; i < n->len; i++)
        if (n->data[i] >= 'A' && n->data[i] <= 'Z')
            n->data[i] = (char)(n->data[i] - 'A' + 'a');
    return n->data;
}

static struct star_value
bi_network_rule(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    static const char *const params[] = {"host", "protocol", "decision", "justification"};
    struct star_value a[4];
    star_args_bind(vm, "network_rule", args, params, 3, 4, a);
    for (int i = 0; i < 3; i++)
        if (a[i].type != STAR_STRING)
            star_fail(vm, "network_rule: %s must be a string, not %s", params[i],
                      star_type_name(a[i]));
    const char *protocol = c_string(vm, a[1], "protocol");
    static const struct {
        const char *in, *out;
    } protocols[] = {
        {"http", "http"},          {"https", "https"},           {"https_connect", "https"},
        {"http-connect", "https"}, {"socks5_tcp", "socks5_tcp"}, {"socks5_udp", "socks5_udp"}};
    const char *proto = NULL;
    for (size_t i = 0; i < ARRAY_SIZE(protocols); i++)
        if (strcmp(protocol, protocols[i].in) == 0)
            proto = protocols[i].out;
    if (proto == NULL)
        star_fail(vm,
                  "invalid rule: network_rule protocol must be one of http, https, socks5_tcp, "
                  "socks5_udp (got %s)",
                  protocol);
    const char *d = c_string(vm, a[2], "decision");
    enum rules_decision decision;
    if (strcmp(d, "deny") == 0)
        decision = RULES_DECISION_FORBIDDEN;
    else if (rules_decision_parse(d, &decision) != 0)
        star_fail(vm, "invalid decision: %s (want allow, prompt, forbidden or deny)", d);
    const struct star_str *j = justification_arg(vm, "network_rule", a[3]);
    const char *host = network_host(vm, standin_string(vm, a[0], "host"));
    /* Only the server reads a network rule's justification: as shown. */
    char *shown = j ? rules_text_shown(j->data, j->len) : NULL;
    if ((j && !shown) || rules_policy_add_network_rule(builder_of(self)->policy, host, proto,
                                                       decision, shown) != 0) {
        free(shown);
        star_fail(vm, "out of memory");
    }
    free(shown);
    return star_none();
}

int
rules_builtins_install(struct star_vm *vm, struct rules_builder *b)
{
    if (star_vm_define_builtin(vm, "prefix_rule", bi_prefix_rule, b) != 0 ||
        star_vm_define_builtin(vm, "host_executable", bi_host_executable, b) != 0 ||
        star_vm_define_builtin(vm, "network_rule", bi_network_rule, b) != 0)
        return -1;
    return 0;
}

/* ---- examples ---- */

/* 1 when the example matches, 0 when not, -1 on OOM. */
static int
example_matches(const struct rules_policy *p, const char *const *argv, size_t argc)
{
    struct rules_result r;
    if (rules_policy_check(p, argv, argc,
                           RULES_CHECK_RESOLVE_HOST_EXECUTABLES | RULES_CHECK_EXAMPLE, &r) != 0)
        return -1;
    int m = r.n_matches > 0;
    rules_result_free(&r);
    return m;
}

static char *
pattern_text(const struct pending *pd)
{
    /* A readable form of the rule for messages: ["git", ["push", "fetch"]]. */
    size_t cap = 64;
    for (size_t i = 0; i < pd->n; i++)
        for (size_t j = 0; j < pd->pattern[i].n_alts; j++)
            cap += strlen(pd->pattern[i].alts[j]) * 2 + 8;
    char *s = malloc(cap);
    if (s == NULL)
        return NULL;
    size_t o = 0;
    s[o++] = '[';
    for (size_t i = 0; i < pd->n; i++) {
        const struct rules_token *t = &pd->pattern[i];
        if (i > 0)
            o += (size_t)snprintf(s + o, cap - o, ", ");
        if (t->n_alts > 1)
            s[o++] = '[';
        for (size_t j = 0; j < t->n_alts; j++)
            o += (size_t)snprintf(s + o, cap - o, "%s\"%s\"", j ? ", " : "", t->alts[j]);
        if (t->n_alts > 1)
            s[o++] = ']';
    }
    s[o++] = ']';
    s[o] = '\0';
    return s;
}

static char *
example_error(struct star_vm *vm, const struct pending *pd, const char *what,
              const char *const *argv, size_t argc)
{
    char *ex = shlex_join(argv, argc);
    char *pat = pattern_text(pd);
    char *e = star_errf("%s:%u:%u: %s: rule pattern %s, example: %s", vm->file, pd->line, pd->col,
                        what, pat ? pat : "?", ex ? ex : "?");
    free(ex);
    free(pat);
    return e;
}

static int
check_one(struct rules_builder *b, struct star_vm *vm, const struct pending *pd, char **err)
{
    struct rules_policy *p = rules_policy_new();
    if (p == NULL ||
        (pd->pattern[0].n_alts > 0 &&
         rules_policy_add_prefix_rule_text(p, pd->pattern, pd->n, pd->decision,
                                           pd->justification ? pd->justification->data : NULL,
                                           pd->justification ? pd->justification->len : 0,
                                           NULL) != 0) ||
        rules_policy_copy_host_executables(p, b->policy) != 0) {
        rules_policy_free(p);
        *err = star_errf("%s:%u:%u: out of memory", vm->file, pd->line, pd->col);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < pd->n_not_matches; i++) {
        int m = example_matches(p, pd->not_matches[i], pd->not_match_lens[i]);
        if (m != 0) {
            *err = m < 0 ? NULL
                         : example_error(vm, pd, "a not_match example matches the rule",
                                         pd->not_matches[i], pd->not_match_lens[i]);
            rc = -1;
        }
    }
    for (size_t i = 0; rc == 0 && i < pd->n_matches; i++) {
        int m = example_matches(p, pd->matches[i], pd->match_lens[i]);
        if (m != 1) {
            *err = m < 0 ? NULL
                         : example_error(vm, pd, "a match example does not match the rule",
                                         pd->matches[i], pd->match_lens[i]);
            rc = -1;
        }
    }
    rules_policy_free(p);
    return rc;
}

int
rules_builder_check_examples(struct rules_builder *b, struct star_vm *vm, char **err)
{
    *err = NULL;
    int rc = 0;
    for (struct pending *pd = b->first; pd != NULL && rc == 0; pd = pd->next)
        rc = check_one(b, vm, pd, err);
    if (rc != 0 && *err == NULL)
        *err = strdup("out of memory checking examples");
    b->first = b->last = NULL;
    return rc;
}
