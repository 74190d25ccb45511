/*
 * rules lint: the warnings about allow rules that leave open what the
 * table (lint_table.c) says is dangerous outside the sandbox, and the
 * check of one command about to be escalated; sed scripts and awk
 * programs are read by lint_script.c.  The warnings and
 * rules_lint_dangerous_use read the same entries.
 */
#include "rules/lint.h"
#include "rules/lint_script.h"
#include "rules/lint_table.h"
#include "rules/textbuf.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- matching ---- */

/* The last component of a path (the whole name when it has no '/'). */
static const char *
base_name(const char *prog)
{
    const char *slash = strrchr(prog, '/');
    return slash ? slash + 1 : prog;
}

/* name + digits and dots, starting with a digit: python3, python3.12. */
static bool
versioned_match(const char *base, const char *name)
{
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0)
        return false;
    const char *v = name + n;
    if (*v < '0' || *v > '9')
        return false;
    for (; *v; v++)
        if ((*v < '0' || *v > '9') && *v != '.')
            return false;
    return true;
}

static bool
entry_names(const struct lint_entry *e, const char *name)
{
    for (const char *const *p = e->programs; *p; p++)
        if (strcmp(*p, name) == 0 || ((e->flags & LINT_VERSIONED) && versioned_match(*p, name)))
            return true;
    return false;
}

static bool
in_words(const char *const *words, const char *w)
{
    for (; words && *words; words++)
        if (strcmp(*words, w) == 0)
            return true;
    return false;
}

/* The program's LINT_LEADING entry, which says which options before its
 * subcommand take a value; NULL when it has none. */
static const struct lint_entry *
leading_entry(const char *name)
{
    for (size_t i = 0; i < lint_table_len; i++)
        if ((lint_table[i].flags & LINT_LEADING) && entry_names(&lint_table[i], name))
            return &lint_table[i];
    return NULL;
}

/* A long option spec "--out[put]" against key (an argument up to its '='):
 * key must be a prefix of "--output" at least as long as "--out". */
bool
lint_long_matches(const char *spec, const char *key, size_t key_len)
{
    const char *open = strchr(spec, '[');
    size_t min = open ? (size_t)(open - spec) : strlen(spec);
    if (key_len < min || strncmp(key, spec, min) != 0)
        return false;
    if (!open)
        return key_len == min;
    const char *tail = open + 1;
    size_t tail_len = strcspn(tail, "]");
    size_t rest = key_len - min;
    return rest <= tail_len && strncmp(key + min, tail, rest) == 0;
}

/* A value that writes nowhere: standard output or /dev/null. */
static bool
harmless_output(const char *value)
{
    return value && (strcmp(value, "-") == 0 || strcmp(value, "/dev/null") == 0);
}

/*
 * Whether the word `arg` uses option o (LONG, SHORT or WORD); next is the
 * word after it (the value of an option given as "-o FILE"), or NULL.
 * cluster: arg is a cluster of short options even without a "-" (tar's
 * first word).
 */
static bool
option_used(const struct lint_option *o, const char *arg, const char *next, bool cluster)
{
    const char *value = NULL;
    switch (o->form) {
    case LINT_LONG: {
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
            return false;
        const char *eq = strchr(arg, '=');
        size_t key_len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (!lint_long_matches(o->name, arg, key_len))
            return false;
        value = eq ? eq + 1 : next;
        break;
    }
    case LINT_SHORT: {
        const char *letters = NULL;
        if (arg[0] == '-' && arg[1] != '-' && arg[1] != '\0')
            letters = arg + 1;
        else if (cluster)
            letters = arg;
        const char *at = letters ? strchr(letters, o->name[1]) : NULL;
        if (!at)
            return false;
        value = at[1] ? at + 1 : next;
        break;
    }
    case LINT_WORD:
        return strcmp(arg, o->name) == 0;
    default:
        return false;
    }
    return !((o->flags & LINT_OUT) && harmless_output(value));
}

/* Whether the word before a "--" may have taken it as its value: an
 * option, other than "--name=value", could have. */
static bool
may_take_value(const char *word, bool cluster)
{
    if (cluster)
        return true;
    if (word[0] != '-' || strcmp(word, "-") == 0)
        return false;
    return !(word[1] == '-' && strchr(word, '='));
}

/* ---- the check of one command ---- */

/* The index of the subcommand of argv (the first word that is neither an
 * option nor an option's value), or argc. */
static size_t
subcommand_index(const struct lint_entry *lead, const char *const *argv, size_t argc)
{
    size_t i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || strcmp(a, "-") == 0)
            break;
        if (lead && in_words(lead->takes_value, a))
            i++;
    }
    return i;
}

/* The first option of e that argv[start..argc) uses, scanning as the
 * entry says; NULL when none.  Does not look at LINT_ANY. */
static const struct lint_option *
scan_options(const struct lint_entry *e, const char *const *argv, size_t start, size_t argc)
{
    bool dashdash_ends = !(e->flags & LINT_NO_DASHDASH);
    bool sed = false, awk = false;
    for (const struct lint_option *o = e->options; o->form; o++) {
        sed = sed || o->form == LINT_SED_SCRIPT;
        awk = awk || o->form == LINT_AWK_PROGRAM;
    }
    bool sandboxed = sed && lint_sed_sandboxed(argv, start, argc);
    for (size_t i = start; i < argc; i++) {
        const char *a = argv[i];
        bool cluster = (e->flags & LINT_OLD_CLUSTER) && i == start && a[0] != '-';
        const char *prev = i > start ? argv[i - 1] : NULL;
        bool prev_cluster =
            (e->flags & LINT_OLD_CLUSTER) && prev && i - 1 == start && prev[0] != '-';
        if (dashdash_ends && strcmp(a, "--") == 0 && !(prev && may_take_value(prev, prev_cluster)))
            break;
        for (const struct lint_option *o = e->options; o->form; o++)
            if (option_used(o, a, i + 1 < argc ? argv[i + 1] : NULL, cluster) &&
                !(sandboxed && (o->flags & LINT_SANDBOXABLE)))
                return o;
    }
    unsigned fx = 0;
    if (sed)
        fx = lint_sed_effects(argv, start, argc); /* sed's own "--" handling */
    bool awk_fx = awk && lint_awk_dangerous(argv, start, argc);
    for (const struct lint_option *o = e->options; o->form; o++) {
        if (o->form == LINT_SED_SCRIPT &&
            (fx & (strcmp(o->name, "e") == 0 ? LINT_SED_RUNS : LINT_SED_WRITES)))
            return o;
        if (o->form == LINT_AWK_PROGRAM && awk_fx)
            return o;
    }
    return NULL;
}

/* Which option of e argv uses; NULL when none (or e does not apply). */
static const struct lint_option *
entry_use(const struct lint_entry *e, const char *const *argv, size_t argc)
{
    if (!e->options)
        return NULL;
    if (e->flags & LINT_LEADING) {
        for (size_t i = 1; i < argc; i++) {
            const char *a = argv[i];
            if (a[0] != '-' || strcmp(a, "-") == 0 || strcmp(a, "--") == 0)
                break;
            for (const struct lint_option *o = e->options; o->form; o++)
                if (option_used(o, a, i + 1 < argc ? argv[i + 1] : NULL, false))
                    return o;
            if (in_words(e->takes_value, a))
                i++;
        }
        return NULL;
    }
    size_t start = 1;
    if (e->subs) {
        size_t s = subcommand_index(leading_entry(base_name(argv[0])), argv, argc);
        if (s >= argc || !in_words(e->subs, argv[s]))
            return NULL;
        start = s + 1;
    }
    const struct lint_option *o = scan_options(e, argv, start, argc);
    if (o)
        return o;
    for (o = e->options; o->form; o++)
        if (o->form == LINT_ANY)
            return o;
    return NULL;
}

const char *
rules_lint_dangerous_use(const char *const *argv, size_t argc)
{
    if (!argv || argc == 0 || !argv[0])
        return NULL;
    for (size_t i = 1; i < argc; i++)
        if (!argv[i])
            argc = i; /* as exec would: the command ends at a NULL */
    const char *name = base_name(argv[0]);
    for (size_t i = 0; i < lint_table_len; i++) {
        if (!entry_names(&lint_table[i], name))
            continue;
        const struct lint_option *o = entry_use(&lint_table[i], argv, argc);
        /* a program whose every use writes where it is told (cp, tee) was
         * allowed for that very use: only a subcommand's counts */
        if (o &&
            (o->form != LINT_ANY || lint_table[i].subs || (lint_table[i].flags & LINT_EVERY_USE)))
            return o->use;
    }
    return NULL;
}

bool
rules_lint_reads_repository(const char *program)
{
    if (!program)
        return true;
    const char *name = base_name(program);
    if (strcmp(name, "git") == 0 || strncmp(name, "git-", 4) == 0)
        return true;
    for (size_t i = 0; i < lint_table_len; i++) {
        if (lint_table[i].runs && entry_names(&lint_table[i], name))
            return true;
    }
    return false;
}

bool
rules_lint_too_broad(const char *const *prefix, size_t n)
{
    if (!prefix || n == 0 || !prefix[0])
        return true;
    const char *name = base_name(prefix[0]);
    for (size_t i = 0; i < lint_table_len; i++) {
        if (!entry_names(&lint_table[i], name))
            continue;
        if ((lint_table[i].flags & LINT_RUNS_GIVEN) || (n == 1 && lint_table[i].runs))
            return true;
    }
    return false;
}

/* ---- the warnings about a policy ---- */

/* A word from a rule, kept on one line and inside the quotes around it:
 * '"' and '\' get a backslash, control characters become \n, \t, \xNN. */
static void
lb_word(struct textbuf *b, const char *w)
{
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)w; *p; p++) {
        char esc[5] = {'\\', (char)*p, 0, 0, 0};
        if (*p == '"' || *p == '\\')
            textbuf_put(b, esc, 2);
        else if (*p == '\n')
            textbuf_put(b, "\\n", 2);
        else if (*p == '\t')
            textbuf_put(b, "\\t", 2);
        else if (*p < 0x20 || *p == 0x7f) {
            esc[1] = 'x';
            esc[2] = hex[*p >> 4];
            esc[3] = hex[*p & 15];
            textbuf_put(b, esc, 4);
        } else {
            textbuf_put(b, (const char *)p, 1);
        }
    }
}

/* "FILE:LINE:COL: warning: " for the rule. */
static void
lb_position(struct textbuf *b, const struct rules_prefix_rule *r)
{
    if (r->origin.file) {
        char num[32];
        lb_word(b, r->origin.file);
        snprintf(num, sizeof num, ":%u:%u: ", (unsigned)r->origin.line, (unsigned)r->origin.col);
        textbuf_puts(b, num);
    }
    textbuf_puts(b, "warning: ");
}

/* The rule as words, alternatives joined by '|': git log|diff. */
static void
lb_rule(struct textbuf *b, const struct rules_prefix_rule *r)
{
    lb_word(b, r->program);
    for (size_t i = 0; i < r->n_rest; i++) {
        textbuf_put(b, " ", 1);
        for (size_t j = 0; j < r->rest[i].n_alts; j++) {
            if (j)
                textbuf_put(b, "|", 1);
            lb_word(b, r->rest[i].alts[j]);
        }
    }
}

/* An open addressing set of the lines given, so that a rule made in a loop
 * warns once. */
struct seen {
    char **slots;
    size_t n_slots, n_used;
};

static char **
seen_slot(char **slots, size_t n_slots, const char *line)
{
    size_t mask = n_slots - 1;
    for (size_t i = rules_str_hash(line) & mask;; i = (i + 1) & mask)
        if (!slots[i] || strcmp(slots[i], line) == 0)
            return &slots[i];
}

/* 1 when line is new (and now kept), 0 when it was seen, -1 on OOM. */
static int
seen_add(struct seen *s, const char *line)
{
    if ((s->n_used + 1) * 2 > s->n_slots) {
        size_t n = s->n_slots ? s->n_slots * 2 : 16;
        char **slots = calloc(n, sizeof *slots);
        if (!slots)
            return -1;
        for (size_t i = 0; i < s->n_slots; i++)
            if (s->slots[i])
                *seen_slot(slots, n, s->slots[i]) = s->slots[i];
        free(s->slots);
        s->slots = slots;
        s->n_slots = n;
    }
    char **slot = seen_slot(s->slots, s->n_slots, line);
    if (*slot)
        return 0;
    *slot = strdup(line);
    if (!*slot)
        return -1;
    s->n_used++;
    return 1;
}

static void
seen_free(struct seen *s)
{
    for (size_t i = 0; i < s->n_slots; i++)
        free(s->slots[i]);
    free(s->slots);
}

struct lint_run {
    void (*warn)(void *arg, const char *line);
    void *arg;
    struct seen seen;
    size_t count;
    bool oom;
};

/* Gives b's line unless it was given before; takes care of b. */
static void
emit(struct lint_run *run, struct textbuf *b)
{
    int added = b->failed ? -1 : seen_add(&run->seen, b->buf.data);
    if (added < 0) {
        run->oom = true;
    } else if (added > 0) {
        run->warn(run->arg, b->buf.data);
        run->count++;
    }
    buf_free(&b->buf);
    *b = (struct textbuf){0};
}

/* Whether some alternative of token t is, by itself, one of e's options. */
static bool
token_uses_option(const struct lint_entry *e, const struct rules_token *t)
{
    for (size_t j = 0; j < t->n_alts; j++)
        for (const struct lint_option *o = e->options; o->form; o++)
            if (option_used(o, t->alts[j], NULL, false))
                return true;
    return false;
}

static bool
token_all_options(const struct rules_token *t)
{
    for (size_t j = 0; j < t->n_alts; j++)
        if (t->alts[j][0] != '-' || strcmp(t->alts[j], "-") == 0 || strcmp(t->alts[j], "--") == 0)
            return false;
    return true;
}

static bool
token_is(const struct rules_token *t, const char *w)
{
    return t->n_alts == 1 && strcmp(t->alts[0], w) == 0;
}

static bool
token_may_take_value(const struct rules_token *t, bool cluster)
{
    for (size_t j = 0; j < t->n_alts; j++)
        if (may_take_value(t->alts[j], cluster))
            return true;
    return false;
}

/* Where the options of e go in a command the rule allows. */
struct opening {
    size_t n_words;  /* rule tokens the example keeps */
    size_t sub_at;   /* the token that is the subcommand, or SIZE_MAX */
    const char *sub; /* its alternative that is e's, or the subcommand to add */
    bool closed;     /* a "--" ends the options (LINT_ANY stays open) */
    bool sandboxed;  /* sed --sandbox: no e or w */
};

/*
 * Whether rule r (for one of e's programs) leaves e's options open, and
 * where (*at).  A prefix rule allows every command that starts with it, so
 * an option can always be added after the rule's words: unless the words
 * fix another subcommand, or end the options with "--".
 */
static bool
entry_open(const struct lint_entry *e, const struct rules_prefix_rule *r, struct opening *at)
{
    *at = (struct opening){.n_words = r->n_rest, .sub_at = SIZE_MAX};
    size_t i = 0;
    if (e->flags & LINT_LEADING) {
        for (; i < r->n_rest; i++) {
            const struct rules_token *t = &r->rest[i];
            if (token_uses_option(e, t))
                break;
            if (!token_all_options(t))
                return false;
            if (t->n_alts == 1 && in_words(e->takes_value, t->alts[0]))
                i++;
        }
        at->n_words = i < r->n_rest ? i : r->n_rest;
        return true;
    }
    if (e->subs) {
        const struct lint_entry *lead = leading_entry(base_name(r->program));
        for (; i < r->n_rest; i++) {
            const struct rules_token *t = &r->rest[i];
            for (size_t j = 0; j < t->n_alts && !at->sub; j++)
                if (in_words(e->subs, t->alts[j]))
                    at->sub = t->alts[j];
            if (at->sub) {
                at->sub_at = i++;
                break;
            }
            if (!token_all_options(t))
                return false;
            if (lead && t->n_alts == 1 && in_words(lead->takes_value, t->alts[0]))
                i++;
        }
        if (!at->sub)
            at->sub = e->subs[0];
    }
    size_t start = i;
    for (; i < r->n_rest; i++) {
        const struct rules_token *t = &r->rest[i];
        if (token_is(t, "--sandbox"))
            at->sandboxed = true;
        if (token_uses_option(e, t))
            break;
        bool prev_cluster = (e->flags & LINT_OLD_CLUSTER) && i > start && i - 1 == start &&
                            r->rest[i - 1].alts[0][0] != '-';
        if (!(e->flags & LINT_NO_DASHDASH) && token_is(t, "--") &&
            !(i > start && token_may_take_value(&r->rest[i - 1], prev_cluster))) {
            at->closed = true;
            break;
        }
    }
    return true;
}

static bool
option_open(const struct lint_option *o, const struct opening *at)
{
    if (o->form == LINT_ANY)
        return true;
    if (at->closed)
        return false;
    return !(at->sandboxed && (o->form == LINT_SED_SCRIPT || (o->flags & LINT_SANDBOXABLE)));
}

/* One word of the example: the alternative that is the subcommand there,
 * else the first. */
static const char *
example_word(const struct rules_prefix_rule *r, const struct opening *at, size_t i)
{
    return i == at->sub_at ? at->sub : r->rest[i].alts[0];
}

/* `allow rule "git log" also allows "git log --output=FILE" (writes any
 * file), ...`: the options of e that r leaves open, those with the same
 * effect together. */
static void
warn_options(struct lint_run *run, const struct lint_entry *e, const struct rules_prefix_rule *r)
{
    struct opening at;
    if (!entry_open(e, r, &at))
        return;
    bool any = false, all_any = true;
    for (const struct lint_option *o = e->options; o->form; o++)
        if (option_open(o, &at)) {
            any = true;
            all_any = all_any && o->form == LINT_ANY;
        }
    if (!any)
        return;
    struct textbuf b = {0};
    lb_position(&b, r);
    textbuf_puts(&b, "allow rule \"");
    lb_rule(&b, r);
    textbuf_puts(&b, all_any ? "\" allows " : "\" also allows ");
    bool first = true;
    for (const struct lint_option *o = e->options; o->form; o++) {
        if (!option_open(o, &at))
            continue;
        if (!first)
            textbuf_puts(&b, ", ");
        first = false;
        textbuf_put(&b, "\"", 1);
        lb_word(&b, r->program);
        for (size_t i = 0; i < at.n_words; i++) {
            textbuf_put(&b, " ", 1);
            lb_word(&b, example_word(r, &at, i));
        }
        if (at.sub && at.sub_at == SIZE_MAX) {
            textbuf_put(&b, " ", 1);
            lb_word(&b, at.sub);
        } else if (at.n_words > 0 && at.n_words - 1 != at.sub_at &&
                   may_take_value(example_word(r, &at, at.n_words - 1),
                                  (e->flags & LINT_OLD_CLUSTER) && at.n_words == 1)) {
            textbuf_puts(&b, " ..."); /* the rule's last word may take the next as its value */
        }
        textbuf_put(&b, " ", 1);
        textbuf_puts(&b, o->shown);
        textbuf_put(&b, "\"", 1);
        const struct lint_option *next = o + 1;
        while (next->form && !option_open(next, &at))
            next++;
        if (!next->form || strcmp(next->effect, o->effect) != 0) {
            textbuf_puts(&b, " (");
            textbuf_puts(&b, o->effect);
            textbuf_put(&b, ")", 1);
        }
    }
    textbuf_puts(&b, LINT_USE_PROMPT);
    emit(run, &b);
}

static int
lint_rule(void *arg, const struct rules_prefix_rule *r)
{
    struct lint_run *run = arg;
    if (r->decision != RULES_DECISION_ALLOW)
        return 0;
    const char *name = base_name(r->program);
    for (size_t i = 0; i < lint_table_len && !run->oom; i++) {
        const struct lint_entry *e = &lint_table[i];
        if (!entry_names(e, name))
            continue;
        if (e->runs) {
            struct textbuf b = {0};
            lb_position(&b, r);
            textbuf_puts(&b, "allow rule for \"");
            lb_word(&b, r->program);
            textbuf_puts(&b, "\" ");
            textbuf_puts(&b, e->runs);
            emit(run, &b);
        }
        if (e->options && !run->oom)
            warn_options(run, e, r);
    }
    return run->oom ? -1 : 0;
}

int
rules_lint_policy(const struct rules_policy *p, void (*warn)(void *arg, const char *line),
                  void *arg)
{
    struct lint_run run = {.warn = warn, .arg = arg};
    int rc = rules_policy_each_rule(p, lint_rule, &run);
    seen_free(&run.seen);
    if (rc != 0 || run.oom)
        return -1;
    return run.count > INT_MAX ? INT_MAX : (int)run.count;
}
