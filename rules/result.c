/*
 * result: what one check found (the rules that matched and the decision),
 * combined, settled by standing answers, and written as the JSON
 * `codex execpolicy check` prints.
 */
#include "rules/result.h"

#include "common/macros.h"
#include "common/utf8.h"
#include <stdlib.h>
#include <string.h>

#include "rules/text.h"
#include "rules/textbuf.h"

static const char *const decision_names[] = {NULL, "allow", "prompt", "forbidden"};

const char *
rules_decision_name(enum rules_decision d)
{
    if ((unsigned)d >= ARRAY_SIZE(decision_names))
        return NULL;
    return decision_names[d];
}

int
rules_decision_parse(const char *name, enum rules_decision *out)
{
    for (size_t i = 1; i < ARRAY_SIZE(decision_names); i++) {
        if (name && strcmp(name, decision_names[i]) == 0) {
            *out = (enum rules_decision)i;
            return 0;
        }
    }
    return -1;
}

/* FNV-1a: short keys, no adversary gains anything by colliding them. */
void
rules_result_free(struct rules_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_matches; i++)
        free(r->matches[i].matched_prefix);
    free(r->matches);
    memset(r, 0, sizeof *r);
}

int
rules_result_append(struct rules_result *dst, struct rules_result *src)
{
    if (src->n_matches == 0)
        return 0;
    struct rules_match *ms = realloc(dst->matches, (dst->n_matches + src->n_matches) * sizeof(*ms));
    if (!ms)
        return -1;
    memcpy(ms + dst->n_matches, src->matches, src->n_matches * sizeof(*ms));
    dst->matches = ms;
    dst->n_matches += src->n_matches;
    if (src->decision > dst->decision)
        dst->decision = src->decision;
    free(src->matches);
    memset(src, 0, sizeof(*src));
    return 0;
}

const struct rules_match *
rules_result_settle(struct rules_result *r, const char *answers_file)
{
    if (!answers_file || r->decision != RULES_DECISION_PROMPT)
        return NULL;
    size_t longest_prompt = 0;
    for (size_t i = 0; i < r->n_matches; i++) {
        if (r->matches[i].decision == RULES_DECISION_PROMPT &&
            r->matches[i].n_prefix > longest_prompt)
            longest_prompt = r->matches[i].n_prefix;
    }
    for (size_t i = 0; i < r->n_matches; i++) {
        const struct rules_match *m = &r->matches[i];
        if (m->decision == RULES_DECISION_ALLOW && m->origin.file &&
            strcmp(m->origin.file, answers_file) == 0 && m->n_prefix >= longest_prompt) {
            r->decision = RULES_DECISION_ALLOW;
            return m;
        }
    }
    return NULL;
}

/* Escapes as serde_json does: quote, backslash and control characters
 * only (short forms where JSON has them, else \u00xx in lower case);
 * everything else, including non-ASCII UTF-8, is copied.  Bytes that are
 * not UTF-8 (Codex refuses such input) become \ufffd so that the output
 * is always valid JSON. */
static void
jb_string_n(struct textbuf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    textbuf_put(b, "\"", 1);
    const char *run = s;
    const unsigned char *end = (const unsigned char *)s + len;
    for (const unsigned char *p = (const unsigned char *)s; p < end; p++) {
        char esc[7];
        const char *e = NULL;
        if (*p >= 0x80) {
            size_t n = utf8_seq_len((const char *)p, (size_t)(end - p));
            if (n > 0) {
                p += n - 1;
                continue;
            }
            e = "\\ufffd";
        }
        switch (*p) {
        case '"':
            e = "\\\"";
            break;
        case '\\':
            e = "\\\\";
            break;
        case '\n':
            e = "\\n";
            break;
        case '\r':
            e = "\\r";
            break;
        case '\t':
            e = "\\t";
            break;
        case '\b':
            e = "\\b";
            break;
        case '\f':
            e = "\\f";
            break;
        default:
            if (!e && *p < 0x20) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[*p >> 4];
                esc[5] = hex[*p & 15];
                esc[6] = '\0';
                e = esc;
            }
        }
        if (!e)
            continue;
        textbuf_put(b, run, (size_t)((const char *)p - run));
        textbuf_puts(b, e);
        run = (const char *)p + 1;
    }
    textbuf_put(b, run, (size_t)(s + len - run));
    textbuf_put(b, "\"", 1);
}

static void
jb_string(struct textbuf *b, const char *s)
{
    jb_string_n(b, s, strlen(s));
}

/* Newline plus indentation in pretty mode (two spaces a level, as
 * serde_json's pretty printer), nothing in compact mode. */
static void
jb_nl(struct textbuf *b, bool pretty, int level)
{
    if (!pretty)
        return;
    textbuf_put(b, "\n", 1);
    for (int i = 0; i < level; i++)
        textbuf_put(b, "  ", 2);
}

static void
jb_key(struct textbuf *b, bool pretty, int level, const char *key, bool first)
{
    if (!first)
        textbuf_put(b, ",", 1);
    jb_nl(b, pretty, level);
    jb_string(b, key);
    textbuf_puts(b, pretty ? ": " : ":");
}

static void
jb_match(struct textbuf *b, const struct rules_match *m, bool pretty, int level)
{
    textbuf_put(b, "{", 1);
    jb_key(b, pretty, level + 1, "prefixRuleMatch", true);
    textbuf_put(b, "{", 1);
    int in = level + 2;
    jb_key(b, pretty, in, "matchedPrefix", true);
    textbuf_put(b, "[", 1);
    for (size_t i = 0; i < m->n_prefix; i++) {
        if (i)
            textbuf_put(b, ",", 1);
        jb_nl(b, pretty, in + 1);
        jb_string(b, m->matched_prefix[i]);
    }
    if (m->n_prefix)
        jb_nl(b, pretty, in);
    textbuf_put(b, "]", 1);
    jb_key(b, pretty, in, "decision", false);
    jb_string(b, rules_decision_name(m->decision));
    if (m->resolved_program) {
        jb_key(b, pretty, in, "resolvedProgram", false);
        jb_string(b, m->resolved_program);
    }
    if (m->justification) {
        jb_key(b, pretty, in, "justification", false);
        jb_string_n(b, m->justification_text, m->justification_len);
    }
    jb_nl(b, pretty, level + 1);
    textbuf_put(b, "}", 1);
    jb_nl(b, pretty, level);
    textbuf_put(b, "}", 1);
}

char *
rules_result_to_json(const struct rules_result *r, bool pretty)
{
    struct textbuf b = {0};
    textbuf_put(&b, "{", 1);
    jb_key(&b, pretty, 1, "matchedRules", true);
    textbuf_put(&b, "[", 1);
    for (size_t i = 0; i < r->n_matches; i++) {
        if (i)
            textbuf_put(&b, ",", 1);
        jb_nl(&b, pretty, 2);
        jb_match(&b, &r->matches[i], pretty, 2);
    }
    if (r->n_matches)
        jb_nl(&b, pretty, 1);
    textbuf_put(&b, "]", 1);
    if (r->decision != RULES_DECISION_NONE) {
        jb_key(&b, pretty, 1, "decision", false);
        jb_string(&b, rules_decision_name(r->decision));
    }
    jb_nl(&b, pretty, 0);
    textbuf_put(&b, "}", 1);
    if (b.failed) {
        buf_free(&b.buf);
        return NULL;
    }
    return b.buf.data;
}
