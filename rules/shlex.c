/*
 * shlex: a small state machine over bytes, splitting as Codex's splitter
 * (the Rust shlex crate) does.  Multi-byte UTF-8 passes
 * through untouched because every special character is ASCII.
 */
#include "rules/shlex.h"

#include "common/strv.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct strbuf {
    char *data;
    size_t len, cap;
};

static int
sb_putc(struct strbuf *b, char c)
{
    if (b->len + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        char *d = realloc(b->data, cap);
        if (!d)
            return -1;
        b->data = d;
        b->cap = cap;
    }
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
    return 0;
}

struct wordlist {
    char **words;
    size_t n, cap;
};

/* Takes the buffer's text as a new word (an empty buffer gives ""). */
static int
wl_take(struct wordlist *wl, struct strbuf *b)
{
    if (wl->n + 2 > wl->cap) {
        size_t cap = wl->cap ? wl->cap * 2 : 8;
        char **w = realloc(wl->words, cap * sizeof *w);
        if (!w)
            return -1;
        wl->words = w;
        wl->cap = cap;
    }
    char *word = b->data ? b->data : strdup("");
    if (!word)
        return -1;
    wl->words[wl->n++] = word;
    wl->words[wl->n] = NULL;
    b->data = NULL;
    b->len = b->cap = 0;
    return 0;
}

/* Word separators: Codex's splitter (the shlex crate) knows only these
 * three, so a carriage return is part of a word. */
static bool
is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n';
}

enum state { ST_BLANK, ST_COMMENT, ST_WORD, ST_SQUOTE, ST_DQUOTE };

int
shlex_split(const char *s, size_t len, char ***words, size_t *n_words, const char **err)
{
    struct wordlist wl = {0};
    struct strbuf cur = {0};
    enum state st = ST_BLANK;
    int rc = -ENOMEM;
    *err = NULL;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '\0') {
            *err = "NUL byte in command";
            rc = -EINVAL;
            goto fail;
        }
        if (st == ST_COMMENT) {
            if (c == '\n')
                st = ST_BLANK;
            continue;
        }
        if (st == ST_SQUOTE) {
            if (c == '\'')
                st = ST_WORD;
            else if (sb_putc(&cur, c) < 0)
                goto fail;
            continue;
        }
        if (st == ST_DQUOTE) {
            if (c == '"') {
                st = ST_WORD;
                continue;
            }
            if (c == '\\') {
                if (i + 1 == len) {
                    *err = "No escaped character";
                    rc = -EINVAL;
                    goto fail;
                }
                char e = s[i + 1];
                if (e == '\n') { /* a continuation: both go */
                    i++;
                    continue;
                }
                /* Only $ ` " \ are escaped; before anything else the
                 * backslash stays. */
                if (e == '$' || e == '`' || e == '"' || e == '\\')
                    c = s[++i];
            }
            if (sb_putc(&cur, c) < 0)
                goto fail;
            continue;
        }
        if (is_blank(c)) {
            if (st == ST_WORD && wl_take(&wl, &cur) < 0)
                goto fail;
            st = ST_BLANK;
            continue;
        }
        if (st == ST_BLANK && c == '#') {
            /* A # that starts a word starts a comment, to the line's end. */
            st = ST_COMMENT;
            continue;
        }
        st = ST_WORD;
        if (c == '\'') {
            st = ST_SQUOTE;
        } else if (c == '"') {
            st = ST_DQUOTE;
        } else if (c == '\\') {
            if (i + 1 == len) {
                *err = "No escaped character";
                rc = -EINVAL;
                goto fail;
            }
            if (s[i + 1] == '\0')
                continue; /* reported as a NUL byte on the next turn */
            /* Backslash-newline continues the word; anything else is
             * taken literally. */
            if (s[++i] != '\n' && sb_putc(&cur, s[i]) < 0)
                goto fail;
        } else if (sb_putc(&cur, c) < 0) {
            goto fail;
        }
    }
    if (st == ST_SQUOTE || st == ST_DQUOTE) {
        *err = "No closing quotation";
        rc = -EINVAL;
        goto fail;
    }
    if (st == ST_WORD && wl_take(&wl, &cur) < 0)
        goto fail;
    if (!wl.words) {
        wl.words = calloc(1, sizeof *wl.words);
        if (!wl.words)
            goto fail;
    }
    *words = wl.words;
    *n_words = wl.n;
    return 0;
fail:
    free(cur.data);
    for (size_t i = 0; i < wl.n; i++)
        free(wl.words[i]);
    free(wl.words);
    *words = NULL;
    *n_words = 0;
    return rc;
}

static bool
is_safe(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("@%+=:,./-_", c) != NULL;
}

/* Bytes shlex_quote(s) writes, without the NUL. */
static size_t
quoted_len(const char *s)
{
    size_t n = 0;
    bool safe = *s != '\0';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        safe = safe && is_safe(*p);
        n += *p == '\'' ? 5 : 1;
    }
    return safe ? n : n + 2;
}

/* Writes shlex_quote(s) at out; returns the end. */
static char *
quote_into(char *out, const char *s)
{
    size_t len = strlen(s);
    bool safe = len > 0;
    for (size_t i = 0; i < len && safe; i++)
        safe = is_safe((unsigned char)s[i]);
    if (safe) {
        memcpy(out, s, len);
        return out + len;
    }
    *out++ = '\'';
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\'') {
            memcpy(out, "'\"'\"'", 5);
            out += 5;
        } else {
            *out++ = s[i];
        }
    }
    *out++ = '\'';
    return out;
}

char *
shlex_quote(const char *s)
{
    char *out = malloc(quoted_len(s) + 1);
    if (!out)
        return NULL;
    *quote_into(out, s) = '\0';
    return out;
}

char *
shlex_join(const char *const *words, size_t n)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++)
        total += quoted_len(words[i]) + 1;
    char *out = malloc(total);
    if (!out)
        return NULL;
    char *p = out;
    for (size_t i = 0; i < n; i++) {
        if (i)
            *p++ = ' ';
        p = quote_into(p, words[i]);
    }
    *p = '\0';
    return out;
}
