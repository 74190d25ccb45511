/*
 * rules policy: prefix rules indexed by their program (first token), host
 * executables, network rules, and the evaluation of a command.
 *
 * Rules live in one table per program name so that a check only looks at
 * the rules that can possibly match its argv[0]: the cost of a check does
 * not grow with the size of the policy.
 */
#include "rules/policy.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The strings a rule points to are its own (copied in, freed with it). */
struct prefix_rule {
    char *program;            /* the first token (one alternative of it) */
    struct rules_token *rest; /* tokens after the first */
    size_t n_rest;
    enum rules_decision decision;
    char *justification; /* as written: justification_len bytes, then a NUL */
    size_t justification_len;
    char *justification_shown;  /* rules_text_shown's, or justification itself */
    struct rules_origin origin; /* .file points into rules_policy.files */
};

/* A growable list of pointers under one string key. */
struct bucket {
    char *key;
    uint64_t hash;
    void **items;
    size_t n, cap;
};

/* Open-addressing hash table of buckets; `slots` is a power of two. */
struct strmap {
    struct bucket *slots;
    size_t n_slots;
    size_t n_used;
};

struct network_rule {
    char *host;
    char *protocol;
    enum rules_decision decision;
    char *justification;
};

struct rules_policy {
    struct strmap by_program;   /* program -> struct prefix_rule * */
    struct strmap host_execs;   /* name -> char * (normalised paths) */
    struct prefix_rule **rules; /* every rule in insertion order (owner) */
    size_t n_rules, cap_rules;
    struct network_rule *net;
    size_t n_net, cap_net;
    char **files; /* the file names rule origins point to (owner) */
    size_t n_files, cap_files;
};

uint64_t
rules_str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    return h;
}

static struct bucket *
strmap_find(const struct strmap *m, const char *key)
{
    if (m->n_slots == 0)
        return NULL;
    uint64_t h = rules_str_hash(key);
    size_t mask = m->n_slots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct bucket *b = &m->slots[i];
        if (!b->key)
            return NULL;
        if (b->hash == h && strcmp(b->key, key) == 0)
            return b;
    }
}

static int
strmap_grow(struct strmap *m)
{
    size_t n = m->n_slots ? m->n_slots * 2 : 16;
    struct bucket *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < m->n_slots; i++) {
        struct bucket *b = &m->slots[i];
        if (!b->key)
            continue;
        size_t j = b->hash & (n - 1);
        while (slots[j].key)
            j = (j + 1) & (n - 1);
        slots[j] = *b;
    }
    free(m->slots);
    m->slots = slots;
    m->n_slots = n;
    return 0;
}

/* The bucket for key, created empty when missing; NULL on OOM. */
static struct bucket *
strmap_get_or_add(struct strmap *m, const char *key)
{
    struct bucket *b = strmap_find(m, key);
    if (b)
        return b;
    if ((m->n_used + 1) * 4 > m->n_slots * 3 && strmap_grow(m) < 0)
        return NULL;
    char *k = strdup(key);
    if (!k)
        return NULL;
    uint64_t h = rules_str_hash(key);
    size_t mask = m->n_slots - 1;
    size_t i = h & mask;
    while (m->slots[i].key)
        i = (i + 1) & mask;
    b = &m->slots[i];
    b->key = k;
    b->hash = h;
    m->n_used++;
    return b;
}

static int
bucket_push(struct bucket *b, void *item)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 2;
        void **items = realloc(b->items, cap * sizeof *items);
        if (!items)
            return -1;
        b->items = items;
        b->cap = cap;
    }
    b->items[b->n++] = item;
    return 0;
}

static void
strmap_free(struct strmap *m, void (*free_item)(void *))
{
    for (size_t i = 0; i < m->n_slots; i++) {
        struct bucket *b = &m->slots[i];
        if (!b->key)
            continue;
        if (free_item)
            for (size_t j = 0; j < b->n; j++)
                free_item(b->items[j]);
        free(b->items);
        free(b->key);
    }
    free(m->slots);
}

struct rules_policy *
rules_policy_new(void)
{
    return calloc(1, sizeof(struct rules_policy));
}

/* The token arrays and strings were allocated by copy_tokens: the const
 * is only the view the rest of the code gets. */
static void
rule_tokens_free(struct rules_token *toks, size_t n)
{
    for (size_t i = 0; toks && i < n; i++) {
        for (size_t j = 0; j < toks[i].n_alts; j++)
            free((char *)toks[i].alts[j]);
        free((void *)toks[i].alts);
    }
    free(toks);
}

static void
prefix_rule_free(struct prefix_rule *r)
{
    if (!r)
        return;
    free(r->program);
    rule_tokens_free(r->rest, r->n_rest);
    if (r->justification_shown != r->justification)
        free(r->justification_shown);
    free(r->justification);
    free(r);
}

void
rules_policy_free(struct rules_policy *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_rules; i++)
        prefix_rule_free(p->rules[i]);
    free(p->rules);
    strmap_free(&p->by_program, NULL);
    strmap_free(&p->host_execs, free);
    for (size_t i = 0; i < p->n_net; i++) {
        free(p->net[i].host);
        free(p->net[i].protocol);
        free(p->net[i].justification);
    }
    free(p->net);
    for (size_t i = 0; i < p->n_files; i++)
        free(p->files[i]);
    free(p->files);
    free(p);
}

static bool
token_matches(const char *const *alts, size_t n_alts, const char *arg)
{
    for (size_t i = 0; i < n_alts; i++)
        if (strcmp(alts[i], arg) == 0)
            return true;
    return false;
}

bool
rules_pattern_matches(const struct rules_token *pattern, size_t n, const char *const *argv,
                      size_t argc)
{
    if (n == 0 || argc < n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!token_matches(pattern[i].alts, pattern[i].n_alts, argv[i]))
            return false;
    return true;
}

static struct rules_token *
copy_tokens(const struct rules_token *src, size_t n)
{
    struct rules_token *toks = calloc(n ? n : 1, sizeof *toks);
    if (!toks)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char **alts = calloc(src[i].n_alts ? src[i].n_alts : 1, sizeof *alts);
        if (!alts)
            goto oom;
        toks[i].alts = (const char *const *)alts;
        for (size_t j = 0; j < src[i].n_alts; j++) {
            alts[j] = strdup(src[i].alts[j]);
            if (!alts[j])
                goto oom;
            toks[i].n_alts = j + 1;
        }
    }
    return toks;
oom:
    rule_tokens_free(toks, n);
    return NULL;
}

/* A copy of s[0..len) with a NUL after it, or NULL on OOM. */
static char *
copy_bytes(const char *s, size_t len)
{
    char *c = malloc(len + 1);
    if (c) {
        memcpy(c, s, len);
        c[len] = '\0';
    }
    return c;
}

static struct prefix_rule *
prefix_rule_new(const char *program, const struct rules_token *rest, size_t n_rest,
                enum rules_decision decision, const char *justification, size_t justification_len,
                struct rules_origin origin)
{
    struct prefix_rule *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->decision = decision;
    r->origin = origin;
    r->program = strdup(program);
    r->rest = copy_tokens(rest, n_rest);
    r->n_rest = n_rest;
    if (justification) {
        r->justification = copy_bytes(justification, justification_len);
        r->justification_len = justification_len;
        r->justification_shown = r->justification && memchr(justification, '\0', justification_len)
                                     ? rules_text_shown(justification, justification_len)
                                     : r->justification;
    }
    if (!r->program || !r->rest || (justification && !r->justification_shown)) {
        prefix_rule_free(r);
        return NULL;
    }
    return r;
}

static int
policy_reserve_rules(struct rules_policy *p, size_t extra)
{
    if (p->n_rules + extra <= p->cap_rules)
        return 0;
    size_t cap = p->cap_rules ? p->cap_rules : 16;
    while (cap < p->n_rules + extra)
        cap *= 2;
    struct prefix_rule **rules = realloc(p->rules, cap * sizeof *rules);
    if (!rules)
        return -1;
    p->rules = rules;
    p->cap_rules = cap;
    return 0;
}

/*
 * The policy's copy of a file name, for rule origins.  Rules of one file
 * arrive together, so the last name is the one to compare with; a name
 * seen before that is stored again, which costs a little memory and
 * nothing else.  NULL on OOM.
 */
static const char *
policy_file_name(struct rules_policy *p, const char *file)
{
    if (p->n_files > 0 && strcmp(p->files[p->n_files - 1], file) == 0)
        return p->files[p->n_files - 1];
    if (p->n_files == p->cap_files) {
        size_t cap = p->cap_files ? p->cap_files * 2 : 4;
        char **files = realloc(p->files, cap * sizeof *files);
        if (!files)
            return NULL;
        p->files = files;
        p->cap_files = cap;
    }
    char *copy = strdup(file);
    if (!copy)
        return NULL;
    p->files[p->n_files++] = copy;
    return copy;
}

int
rules_policy_add_prefix_rule(struct rules_policy *p, const struct rules_token *pattern, size_t n,
                             enum rules_decision decision, const char *justification)
{
    return rules_policy_add_prefix_rule_at(p, pattern, n, decision, justification, NULL);
}

/*
 * Builds every rule first and indexes them afterwards, so that an OOM half
 * way leaves the policy as it was (but for a file name kept for origins,
 * which nothing sees).  Indexing can still fail on a bucket push; the rules
 * already pushed then are popped again.
 */
int
rules_policy_add_prefix_rule_at(struct rules_policy *p, const struct rules_token *pattern, size_t n,
                                enum rules_decision decision, const char *justification,
                                const struct rules_origin *origin)
{
    return rules_policy_add_prefix_rule_text(p, pattern, n, decision, justification,
                                             justification ? strlen(justification) : 0, origin);
}

int
rules_policy_add_prefix_rule_text(struct rules_policy *p, const struct rules_token *pattern,
                                  size_t n, enum rules_decision decision, const char *justification,
                                  size_t justification_len, const struct rules_origin *origin)
{
    if (!p || !pattern || n == 0 || pattern[0].n_alts == 0)
        return -1;
    size_t n_first = pattern[0].n_alts;
    struct rules_origin where = {0};
    if (origin && origin->file) {
        where = *origin;
        where.file = policy_file_name(p, origin->file);
        if (!where.file)
            return -1;
    }
    if (policy_reserve_rules(p, n_first) < 0)
        return -1;
    struct prefix_rule **fresh = calloc(n_first, sizeof *fresh);
    struct bucket **buckets = calloc(n_first, sizeof *buckets);
    if (!fresh || !buckets)
        goto oom;
    for (size_t i = 0; i < n_first; i++) {
        fresh[i] = prefix_rule_new(pattern[0].alts[i], pattern + 1, n - 1, decision, justification,
                                   justification_len, where);
        if (!fresh[i])
            goto oom;
    }
    for (size_t i = 0; i < n_first; i++) {
        /* Buckets may move while the table grows: look them up again below. */
        if (!strmap_get_or_add(&p->by_program, fresh[i]->program))
            goto oom;
    }
    size_t pushed = 0;
    for (; pushed < n_first; pushed++) {
        buckets[pushed] = strmap_find(&p->by_program, fresh[pushed]->program);
        if (bucket_push(buckets[pushed], fresh[pushed]) < 0)
            break;
    }
    if (pushed < n_first) {
        while (pushed-- > 0)
            buckets[pushed]->n--;
        goto oom;
    }
    for (size_t i = 0; i < n_first; i++)
        p->rules[p->n_rules++] = fresh[i];
    free(fresh);
    free(buckets);
    return 0;
oom:
    for (size_t i = 0; fresh && i < n_first; i++)
        prefix_rule_free(fresh[i]);
    free(fresh);
    free(buckets);
    return -1;
}

/*
 * Lexical normal form of an absolute path, as Codex compares them: empty
 * and "." components dropped, ".." removes the component before it (and
 * stays at "/"), no trailing slash.  The file system is not consulted.
 */
static char *
normalize_abs_path(const char *path)
{
    size_t len = strlen(path);
    char *out = malloc(len + 2);
    if (!out)
        return NULL;
    size_t o = 0;
    const char *s = path;
    while (*s) {
        while (*s == '/')
            s++;
        const char *e = s;
        while (*e && *e != '/')
            e++;
        size_t n = (size_t)(e - s);
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--; /* the slash before the dropped component */
        } else if (n > 0 && !(n == 1 && s[0] == '.')) {
            out[o++] = '/';
            memcpy(out + o, s, n);
            o += n;
        }
        s = e;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    return out;
}

/*
 * argv[0] made absolute the way Codex does before the basename fallback:
 * "~" and "~/..." start at $HOME, any other relative name at the current
 * directory; then normalised.  NULL on OOM or when $HOME or the current
 * directory cannot be known.
 */
static char *
absolute_program(const char *prog)
{
    if (prog[0] == '/')
        return normalize_abs_path(prog);
    char *base = NULL;
    const char *rest = prog;
    if (prog[0] == '~' && (prog[1] == '\0' || prog[1] == '/')) {
        const char *home = getenv("HOME");
        base = home && home[0] == '/' ? strdup(home) : NULL;
        rest = prog + 1;
    } else {
        base = getcwd(NULL, 0);
    }
    if (!base)
        return NULL;
    char *joined = malloc(strlen(base) + strlen(rest) + 2);
    char *norm = NULL;
    if (joined) {
        strcpy(joined, base);
        strcat(joined, "/");
        strcat(joined, rest);
        norm = normalize_abs_path(joined);
    }
    free(joined);
    free(base);
    return norm;
}

int
rules_policy_add_host_executable(struct rules_policy *p, const char *name, const char *const *paths,
                                 size_t n)
{
    if (!p || !name)
        return -1;
    char **copies = calloc(n ? n : 1, sizeof *copies);
    if (!copies)
        return -1;
    for (size_t i = 0; i < n; i++) {
        copies[i] = normalize_abs_path(paths[i]);
        if (!copies[i])
            goto oom;
    }
    /* Allocated before the bucket so that an OOM leaves no empty entry. */
    void **items = calloc(n ? n : 1, sizeof *items);
    if (!items)
        goto oom;
    struct bucket *b = strmap_get_or_add(&p->host_execs, name);
    if (!b) {
        free(items);
        goto oom;
    }
    /* A later host_executable for the same name replaces the earlier list. */
    for (size_t i = 0; i < b->n; i++)
        free(b->items[i]);
    free(b->items);
    for (size_t i = 0; i < n; i++)
        items[i] = copies[i];
    b->items = items;
    b->n = b->cap = n;
    free(copies);
    return 0;
oom:
    for (size_t i = 0; i < n; i++)
        free(copies[i]);
    free(copies);
    return -1;
}

int
rules_policy_copy_host_executables(struct rules_policy *dst, const struct rules_policy *src)
{
    for (size_t i = 0; i < src->host_execs.n_slots; i++) {
        const struct bucket *b = &src->host_execs.slots[i];
        if (b->key &&
            rules_policy_add_host_executable(dst, b->key, (const char *const *)b->items, b->n) < 0)
            return -1;
    }
    return 0;
}

int
rules_policy_add_network_rule(struct rules_policy *p, const char *host, const char *protocol,
                              enum rules_decision decision, const char *justification)
{
    if (!p || !host || !protocol)
        return -1;
    if (p->n_net == p->cap_net) {
        size_t cap = p->cap_net ? p->cap_net * 2 : 4;
        struct network_rule *net = realloc(p->net, cap * sizeof *net);
        if (!net)
            return -1;
        p->net = net;
        p->cap_net = cap;
    }
    struct network_rule r = {
        .host = strdup(host),
        .protocol = strdup(protocol),
        .decision = decision,
        .justification = justification ? strdup(justification) : NULL,
    };
    if (!r.host || !r.protocol || (justification && !r.justification)) {
        free(r.host);
        free(r.protocol);
        free(r.justification);
        return -1;
    }
    p->net[p->n_net++] = r;
    return 0;
}

size_t
rules_policy_rule_count(const struct rules_policy *p)
{
    return p ? p->n_rules : 0;
}

int
rules_policy_each_program(const struct rules_policy *p, int (*fn)(void *arg, const char *name),
                          void *arg)
{
    for (size_t i = 0; p && i < p->by_program.n_slots; i++) {
        const struct bucket *b = &p->by_program.slots[i];
        int rc = b->key && b->n > 0 ? fn(arg, b->key) : 0;
        if (rc != 0)
            return rc;
    }
    return 0;
}

int
rules_policy_each_rule(const struct rules_policy *p,
                       int (*fn)(void *arg, const struct rules_prefix_rule *rule), void *arg)
{
    for (size_t i = 0; p && i < p->n_rules; i++) {
        const struct prefix_rule *r = p->rules[i];
        const struct rules_prefix_rule view = {
            .program = r->program,
            .rest = r->rest,
            .n_rest = r->n_rest,
            .decision = r->decision,
            .justification = r->justification_shown,
            .justification_text = r->justification,
            .justification_len = r->justification_len,
            .origin = r->origin,
        };
        int rc = fn(arg, &view);
        if (rc != 0)
            return rc;
    }
    return 0;
}

size_t
rules_policy_network_rule_count(const struct rules_policy *p)
{
    return p ? p->n_net : 0;
}

struct rules_network_result
rules_policy_network_check(const struct rules_policy *p, const char *host, const char *protocol)
{
    struct rules_network_result r = {RULES_DECISION_NONE, NULL};
    /* A rule's host with a NUL (kept as the stand-in) names no real host. */
    if (host && rules_has_nul_standin(host))
        return r;
    for (size_t i = 0; p && host && protocol && i < p->n_net; i++) {
        const struct network_rule *n = &p->net[i];
        if (strcmp(n->host, host) != 0 || strcmp(n->protocol, protocol) != 0 ||
            n->decision <= r.decision)
            continue;
        r.decision = n->decision;
        r.justification = n->justification;
    }
    return r;
}

bool
rules_policy_host_executable_allows(const struct rules_policy *p, const char *name,
                                    const char *path, bool *known)
{
    struct bucket *b = strmap_find(&p->host_execs, name);
    *known = b != NULL;
    if (!b)
        return false;
    char *norm = normalize_abs_path(path);
    bool found = false;
    for (size_t i = 0; norm && i < b->n && !found; i++)
        found = strcmp(b->items[i], norm) == 0;
    free(norm);
    return found;
}

static bool
rule_matches_rest(const struct prefix_rule *r, const char *const *argv, size_t argc)
{
    if (argc < r->n_rest + 1)
        return false;
    for (size_t i = 0; i < r->n_rest; i++)
        if (!token_matches(r->rest[i].alts, r->rest[i].n_alts, argv[i + 1]))
            return false;
    return true;
}

/*
 * One allocation per match: the prefix pointer array first, then the
 * strings it points to, the justification and the resolved program.
 * rules_result_free therefore frees matched_prefix alone.
 */
static int
match_fill(struct rules_match *m, const struct prefix_rule *r, const char *program,
           const char *const *argv, const char *resolved)
{
    size_t n = r->n_rest + 1;
    size_t size = n * sizeof(char *) + strlen(program) + 1;
    for (size_t i = 1; i < n; i++)
        size += strlen(argv[i]) + 1;
    size_t shown_len = r->justification ? strlen(r->justification_shown) : 0;
    if (r->justification)
        size += shown_len + 1 + r->justification_len + 1;
    if (resolved)
        size += strlen(resolved) + 1;
    char **block = malloc(size);
    if (!block)
        return -1;
    char *s = (char *)(block + n);
    for (size_t i = 0; i < n; i++) {
        const char *src = i == 0 ? program : argv[i];
        size_t len = strlen(src) + 1;
        memcpy(s, src, len);
        block[i] = s;
        s += len;
    }
    m->matched_prefix = block;
    m->n_prefix = n;
    m->decision = r->decision;
    m->justification = NULL;
    m->justification_text = NULL;
    m->justification_len = 0;
    m->resolved_program = NULL;
    m->origin = r->origin;
    if (r->justification) {
        memcpy(s, r->justification_shown, shown_len + 1);
        m->justification = s;
        s += shown_len + 1;
        memcpy(s, r->justification, r->justification_len + 1);
        m->justification_text = s;
        m->justification_len = r->justification_len;
        s += r->justification_len + 1;
    }
    if (resolved) {
        memcpy(s, resolved, strlen(resolved) + 1);
        m->resolved_program = s;
    }
    return 0;
}

/* Appends every rule of bucket b matching argv (with argv[0] read as
 * `program`) to out.  Returns 0, or -1 on OOM. */
static int
collect_matches(const struct bucket *b, const char *program, const char *const *argv, size_t argc,
                const char *resolved, struct rules_result *out)
{
    size_t cap = out->n_matches;
    for (size_t i = 0; i < b->n; i++) {
        const struct prefix_rule *r = b->items[i];
        if (!rule_matches_rest(r, argv, argc))
            continue;
        if (out->n_matches == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            struct rules_match *ms = realloc(out->matches, ncap * sizeof *ms);
            if (!ms)
                return -1;
            out->matches = ms;
            cap = ncap;
        }
        if (match_fill(&out->matches[out->n_matches], r, program, argv, resolved) < 0)
            return -1;
        out->n_matches++;
        if (r->decision > out->decision)
            out->decision = r->decision;
    }
    return 0;
}

/* The file name of a normalised absolute path; NULL for "/". */
static const char *
path_file_name(const char *norm)
{
    const char *name = strrchr(norm, '/') + 1;
    return *name ? name : NULL;
}

static int
check_host_fallback(const struct rules_policy *p, const char *const *argv, size_t argc,
                    unsigned flags, struct rules_result *out)
{
    /* A bare name resolves to itself: its rules were already tried, so
     * skip the getcwd() a resolution would cost. */
    const char *prog = argv[0];
    if (!strchr(prog, '/') && prog[0] != '\0' && strcmp(prog, ".") != 0 &&
        strcmp(prog, "..") != 0 && strcmp(prog, "~") != 0)
        return 0;
    errno = 0;
    char *norm = absolute_program(prog);
    if (!norm)
        return errno == ENOMEM ? -1 : 0;
    int rc = 0;
    const char *name = path_file_name(norm);
    struct bucket *b = name ? strmap_find(&p->by_program, name) : NULL;
    if (b) {
        bool known = false;
        bool listed = rules_policy_host_executable_allows(p, name, norm, &known);
        /* A listed path with a NUL names no file a command can run. */
        if (listed && !(flags & RULES_CHECK_EXAMPLE) && rules_has_nul_standin(norm))
            listed = false;
        if (!known || listed)
            rc = collect_matches(b, name, argv, argc, norm, out);
    }
    free(norm);
    return rc;
}

int
rules_policy_check(const struct rules_policy *p, const char *const *argv, size_t argc,
                   unsigned flags, struct rules_result *out)
{
    memset(out, 0, sizeof *out);
    if (!p || argc == 0)
        return 0;
    struct bucket *b = strmap_find(&p->by_program, argv[0]);
    int rc = 0;
    if (b)
        rc = collect_matches(b, argv[0], argv, argc, NULL, out);
    if (rc == 0 && out->n_matches == 0 && (flags & RULES_CHECK_RESOLVE_HOST_EXECUTABLES))
        rc = check_host_fallback(p, argv, argc, flags, out);
    if (rc < 0) {
        rules_result_free(out);
        return -1;
    }
    return 0;
}
