#include "starlark/lexer.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "starlark/bigint.h"
#include "starlark/unicode.h"
#include "starlark/vm.h"

struct indent {
    const char *ws; /* the line's leading whitespace */
    size_t len;
};

struct bracket {
    char open;
    uint32_t line, col;
};

#define LEX_NAME_CACHE      64 /* a power of two */
#define LEX_INLINE_BRACKETS 32

struct lexer {
    struct star_vm *vm;
    const char *src, *p, *end;
    uint32_t line;
    const char *line_start;
    uint32_t first_col; /* column of line_start (1, or more for f-string bodies) */
    const char *col_p;  /* column cache: col_c is the column of col_p */
    uint32_t col_c;

    struct star_token *toks;
    size_t n, cap;

    struct indent *indents;
    size_t n_indents, cap_indents;
    /* The brackets open, innermost last: the inline ones, then (deeper
     * than any ordinary file goes) an arena copy that grows. */
    struct bracket *brackets;
    size_t depth, cap_brackets;
    struct bracket inline_brackets[LEX_INLINE_BRACKETS];
    bool bol; /* at the beginning of a line whose indentation is not yet measured */
    /* The names met last, by a hash of their length and ends: a file
     * repeats a few names (prefix_rule, pattern, decision) on every line,
     * and a name found here needs no hashing and probing of the vm's
     * table.  Interned names live as long as the vm. */
    struct star_str *names[LEX_NAME_CACHE];
    size_t window; /* > 0: stop at a top-level statement once this many tokens are out */
    /* The error being raised is a nesting limit, not a syntax error: it
     * is raised at once (lex_until_error), before the parser recurses as
     * deep as the file asks. */
    bool limit_hit;
};

/* The top bit of each of a word's eight bytes. */
#define HIGH_BITS 0x8080808080808080ull
#define LOW_BITS  0x0101010101010101ull

/* Whether the first n (< 8) of the 8 readable bytes at q are ASCII. */
static bool
ascii_prefix(const char *q, size_t n)
{
    uint64_t w;
    memcpy(&w, q, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t first = (1ull << (8 * n)) - 1; /* the low bytes come first */
#else
    uint64_t first = ~(~0ull >> (8 * n));
#endif
    return (w & first & HIGH_BITS) == 0;
}

static uint32_t
col_of(struct lexer *lx, const char *p)
{
    if (lx->col_p == NULL || lx->col_p < lx->line_start || lx->col_p > p) {
        lx->col_p = lx->line_start;
        lx->col_c = lx->first_col;
    }
    const char *q = lx->col_p;
    /* A column counts every byte that does not continue a character:
     * ASCII text (most of it) is counted eight bytes at a time, and the
     * few bytes between two tokens by one look at eight readable bytes. */
    for (uint64_t w; p - q >= 8 && (memcpy(&w, q, 8), (w & HIGH_BITS) == 0); q += 8)
        lx->col_c += 8;
    if (p > q && p - q < 8 && lx->end - q >= 8 && ascii_prefix(q, (size_t)(p - q))) {
        lx->col_c += (uint32_t)(p - q);
        q = p;
    }
    for (; q < p; q++)
        if (((unsigned char)*q & 0xc0) != 0x80)
            lx->col_c++;
    lx->col_p = p;
    return lx->col_c;
}

_Noreturn static void
lex_fail(struct lexer *lx, const char *at, const char *msg)
{
    star_fail_at(lx->vm, lx->line, col_of(lx, at), "%s", msg);
}

static inline struct star_token *push_at(struct lexer *lx, int kind, const char *start,
                                         const char *end, uint32_t col);

static inline struct star_token *
push(struct lexer *lx, int kind, const char *start, const char *end)
{
    return push_at(lx, kind, start, end, col_of(lx, start));
}

/* A token whose column is known. */
static inline struct star_token *
push_at(struct lexer *lx, int kind, const char *start, const char *end, uint32_t col)
{
    if (lx->n == lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 256;
        struct star_token *t = star_alloc(lx->vm, cap * sizeof *t);
        star_keep(lx->vm); /* the window's memory, reused */
        if (lx->n > 0)
            memcpy(t, lx->toks, lx->n * sizeof *t);
        lx->toks = t;
        lx->cap = cap;
    }
    struct star_token *t = &lx->toks[lx->n++];
    *t = (struct star_token){
        .kind = (uint8_t)kind,
        .line = lx->line,
        .col = col,
        .text = start,
        .len = (size_t)(end - start),
    };
    return t;
}

static void
newline(struct lexer *lx, const char *after)
{
    lx->line++;
    lx->line_start = after;
    lx->first_col = 1;
    lx->col_p = NULL;
}

/* Fails at the byte at, from the start of the text: its line is found
 * only now, so checking the text needs no line bookkeeping. */
_Noreturn static void
check_fail(struct lexer *lx, const unsigned char *at, const char *msg)
{
    const char *q = lx->p, *nl;
    while ((nl = memchr(q, '\n', (size_t)((const char *)at - q))) != NULL) {
        newline(lx, nl + 1);
        q = nl + 1;
    }
    lex_fail(lx, (const char *)at, msg);
}

/* Reports the first byte that is not well-formed UTF-8, or a NUL byte. */
static void
check_utf8(struct lexer *lx)
{
    const unsigned char *s = (const unsigned char *)lx->p, *e = (const unsigned char *)lx->end;
    while (s < e) {
        /* Thirty-two bytes at a time while they are ASCII and none is NUL
         * (a NUL byte sets its high bit in (w - LOW_BITS) & ~w), then
         * eight. */
        while (e - s >= 32) {
            uint64_t w[4], bad = 0;
            memcpy(w, s, 32);
            for (int i = 0; i < 4; i++)
                bad |= (w[i] | ((w[i] - LOW_BITS) & ~w[i])) & HIGH_BITS;
            if (bad != 0)
                break;
            s += 32;
        }
        if (s == e)
            break;
        uint64_t w;
        if (e - s >= 8 && (memcpy(&w, s, 8), (w & HIGH_BITS) == 0) &&
            ((w - LOW_BITS) & ~w & HIGH_BITS) == 0) {
            s += 8;
            continue;
        }
        unsigned c = *s;
        if (c < 0x80) {
            if (c == 0)
                check_fail(lx, s, "NUL byte in source: is this a text file?");
            s++;
            continue;
        }
        bool whole;
        size_t n = unicode_sequence((const char *)s, (size_t)(e - s), &whole);
        if (!whole) {
            char msg[96];
            snprintf(msg, sizeof msg, "invalid UTF-8 byte 0x%02x: files must be UTF-8 text", c);
            check_fail(lx, s, msg);
        }
        s += n;
    }
}

/* The keywords and reserved words, grouped by length: the words of
 * length n are keywords[keyword_at[n]] to keywords[keyword_at[n + 1]]. */
#define KEYWORD_MIN 2
#define KEYWORD_MAX 8
static const struct {
    const char *word;
    int kind;
} keywords[] = {
    /* 2 */
    {"as", T_RESERVED},
    {"if", T_IF},
    {"in", T_IN},
    {"is", T_RESERVED},
    {"or", T_OR},
    /* 3 */
    {"and", T_AND},
    {"def", T_DEF},
    {"del", T_RESERVED},
    {"for", T_FOR},
    {"not", T_NOT},
    {"try", T_RESERVED},
    /* 4 */
    {"elif", T_ELIF},
    {"else", T_ELSE},
    {"from", T_RESERVED},
    {"load", T_LOAD},
    {"pass", T_PASS},
    {"with", T_RESERVED},
    /* 5 */
    {"async", T_RESERVED},
    {"await", T_RESERVED},
    {"break", T_BREAK},
    {"class", T_RESERVED},
    {"raise", T_RESERVED},
    {"while", T_WHILE},
    {"yield", T_RESERVED},
    /* 6 */
    {"assert", T_RESERVED},
    {"except", T_RESERVED},
    {"global", T_RESERVED},
    {"import", T_RESERVED},
    {"lambda", T_LAMBDA},
    {"return", T_RETURN},
    /* 7 */
    {"finally", T_RESERVED},
    /* 8 */
    {"continue", T_CONTINUE},
    {"nonlocal", T_RESERVED},
};
static const unsigned char keyword_at[KEYWORD_MAX + 2] = {
    [KEYWORD_MIN] = 0, 5, 11, 17, 24, 30, 31, 33,
};

static bool
is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The bytes a name continues with: letters, digits and '_'. */
static const bool name_byte[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['_'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1,
    ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1,
    ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1,
    ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1,
    ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1,
    ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1,
    ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
};

/* The interned name s[0..len), through the lexer's cache. */
static struct star_str *
lex_intern(struct lexer *lx, const char *s, size_t len)
{
    size_t slot =
        (len * 7 + (unsigned char)s[0] * 3 + (unsigned char)s[len - 1]) & (LEX_NAME_CACHE - 1);
    struct star_str *name = lx->names[slot];
    if (name == NULL || name->len != len || memcmp(name->data, s, len) != 0)
        name = lx->names[slot] = star_intern(lx->vm, s, len);
    return name;
}

static void
lex_name(struct lexer *lx)
{
    const char *s = lx->p;
    while (lx->p < lx->end && name_byte[(unsigned char)*lx->p])
        lx->p++;
    size_t len = (size_t)(lx->p - s);
    if (len >= KEYWORD_MIN && len <= KEYWORD_MAX) {
        for (size_t i = keyword_at[len]; i < keyword_at[len + 1]; i++) {
            if (keywords[i].word[0] == s[0] && memcmp(keywords[i].word, s, len) == 0) {
                push(lx, keywords[i].kind, s, lx->p);
                return;
            }
        }
    }
    struct star_token *t = push(lx, T_NAME, s, lx->p);
    t->sval = lex_intern(lx, s, len);
}

/*
 * Where a float literal that has its digits before q ends: after a point
 * and its digits, then an exponent if a whole one follows (1.5e is 1.5
 * then e, as in Codex); q itself when neither a point nor a whole exponent
 * follows (an int).
 */
static const char *
float_rest(const struct lexer *lx, const char *q)
{
    if (q < lx->end && *q == '.') {
        q++;
        while (q < lx->end && is_digit(*q))
            q++;
    }
    if (q < lx->end && (*q == 'e' || *q == 'E')) {
        const char *e = q + 1;
        if (e < lx->end && (*e == '+' || *e == '-'))
            e++;
        if (e < lx->end && is_digit(*e)) {
            while (e < lx->end && is_digit(*e))
                e++;
            q = e;
        }
    }
    return q;
}

/*
 * A float literal at s: digits then the rest (float_rest), or a point and
 * digits then an optional exponent.  Leading zeros are allowed (01.5 is
 * 1.5) and a value too large is inf, as in Codex.
 */
static void
lex_float(struct lexer *lx, const char *s)
{
    const char *q = s;
    while (q < lx->end && is_digit(*q))
        q++;
    q = float_rest(lx, q);
    size_t n = (size_t)(q - s);
    char *text = star_alloc(lx->vm, n + 1);
    memcpy(text, s, n);
    text[n] = '\0';
    struct star_token *t = push(lx, T_FLOAT, s, q);
    t->dval = strtod(text, NULL); /* the syntax is checked: strtod reads all of it */
    lx->p = q;
}

static bool
is_digit_of(char c, int base)
{
    return bigint_digit(c) < base;
}

static void
lex_number(struct lexer *lx)
{
    const char *s = lx->p;
    int base = 10;
    if (*s == '0' && lx->end - s > 1) {
        char c = (char)(s[1] | 0x20);
        if (c == 'x')
            base = 16;
        else if (c == 'o')
            base = 8;
        else if (c == 'b')
            base = 2;
    }
    /* A prefix without a digit of its base after it is not one: as in
     * Codex, 0x is 0 then the name x, and 0b12 is 0b1 then 2 (whatever
     * follows is then a syntax error). */
    if (base != 10 && (lx->end - s < 3 || !is_digit_of(s[2], base)))
        base = 10;
    const char *q = base == 10 ? s : s + 2;
    const char *digits = q;
    uint64_t v = 0;
    bool overflow = false;
    /* Digits of the literal; a letter after them starts the next token (0in[1]). */
    while (q < lx->end && is_digit_of(*q, base)) {
        int d = bigint_digit(*q);
        if (v > (UINT64_MAX - (unsigned)d) / (unsigned)base)
            overflow = true;
        else
            v = v * (unsigned)base + (unsigned)d;
        q++;
    }
    if (base == 10 && q > digits && float_rest(lx, q) != q) {
        lex_float(lx, s);
        return;
    }
    if (base == 10 && *s == '0' && q - s > 1)
        lex_fail(lx, s, "integer literal with leading zero: write 0o755 for octal");
    lx->p = q;
    struct star_token *t = push(lx, T_INT, s, q);
    t->ival = (int64_t)v;
    t->big = overflow || v > (uint64_t)INT64_MAX;
}

static void
add_utf8(struct lexer *lx, struct star_buf *b, uint32_t cp, const char *at)
{
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        lex_fail(lx, at, "invalid Unicode code point in escape");
    star_buf_add_utf8(lx->vm, b, cp);
}

/* Decodes the escape at lx->p (just after the backslash) into b.  In a
 * bytes literal (bytes), \x and octal escapes name a byte, not a code
 * point, as in Codex: \377 is the byte 0xff, and \400 is refused. */
static void
lex_escape(struct lexer *lx, struct star_buf *b, const char *bs, bool bytes)
{
    struct star_vm *vm = lx->vm;
    char c = *lx->p++;
    switch (c) {
    case '\n':
        newline(lx, lx->p);
        return;
    case '\r':
        /* A backslash before CRLF continues the line, as before LF. */
        if (lx->p >= lx->end || *lx->p != '\n') {
            lx->p = bs;
            lex_fail(lx, bs, "invalid escape sequence: a backslash before a lone carriage return");
        }
        newline(lx, ++lx->p);
        return;
    case 'n':
        star_buf_addc(vm, b, '\n');
        return;
    case 't':
        star_buf_addc(vm, b, '\t');
        return;
    case 'r':
        star_buf_addc(vm, b, '\r');
        return;
    case 'a':
        star_buf_addc(vm, b, '\a');
        return;
    case 'b':
        star_buf_addc(vm, b, '\b');
        return;
    case 'f':
        star_buf_addc(vm, b, '\f');
        return;
    case 'v':
        star_buf_addc(vm, b, '\v');
        return;
    case '\\':
    case '\'':
    case '"':
        star_buf_addc(vm, b, c);
        return;
    case 'x':
    case 'u':
    case 'U': {
        int n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        uint32_t v = 0;
        for (int i = 0; i < n; i++) {
            if (lx->p >= lx->end || bigint_digit(*lx->p) >= 16)
                lex_fail(lx, bs,
                         c == 'x' ? "\\x escape needs two hex digits"
                                  : "truncated \\u or \\U escape");
            v = v * 16 + (uint32_t)bigint_digit(*lx->p++);
        }
        /* Like Codex, \x names a code point (\x80 is U+0080) in a
         * string, a byte in bytes. */
        if (bytes && c == 'x')
            star_buf_addc(vm, b, (char)v);
        else
            add_utf8(lx, b, v, bs);
        return;
    }
    default:
        if (c >= '0' && c <= '7') {
            uint32_t v = (uint32_t)(c - '0');
            for (int i = 0; i < 2 && lx->p < lx->end && *lx->p >= '0' && *lx->p <= '7'; i++)
                v = v * 8 + (uint32_t)(*lx->p++ - '0');
            if (!bytes) {
                add_utf8(lx, b, v, bs); /* \777 is U+01FF, as in Codex */
            } else if (v > 0xff) {
                lex_fail(lx, bs, "invalid escape sequence: a byte's octal escape is at most \\377");
            } else {
                star_buf_addc(vm, b, (char)v);
            }
            return;
        }
        /* Codex keeps an unknown escape as written, backslash included. */
        star_buf_addc(vm, b, '\\');
        star_buf_addc(vm, b, c);
        return;
    }
}

/* The bytes that end a run of a string's plain text, by quote: its own
 * quote, a backslash, a line end. */
enum { STOP_DQ = 1, STOP_SQ = 2 };
static const unsigned char string_stop[256] = {
    ['"'] = STOP_DQ,
    ['\''] = STOP_SQ,
    ['\\'] = STOP_DQ | STOP_SQ,
    ['\n'] = STOP_DQ | STOP_SQ,
    ['\r'] = STOP_DQ | STOP_SQ,
};

/* A string literal, an f-string's (fstr) or a bytes literal's (bytes):
 * the same quotes and escapes, but a token of its own kind. */
static void
lex_string(struct lexer *lx, const char *start, bool raw, bool fstr, bool bytes)
{
    int kind = bytes ? T_BYTES : fstr ? T_FSTRING : T_STRING;
    char q = *lx->p;
    bool triple = lx->end - lx->p >= 3 && lx->p[1] == q && lx->p[2] == q;
    uint32_t line = lx->line, col = col_of(lx, start);
    lx->p += triple ? 3 : 1;
    struct star_buf b = {0};
    if (!triple) {
        /* Most strings hold no escape: their text is the source's. */
        const char *r = lx->p;
        unsigned char quote = q == '"' ? STOP_DQ : STOP_SQ;
        while (r < lx->end && (string_stop[(unsigned char)*r] & quote) == 0)
            r++;
        if (r < lx->end && *r == q) {
            struct star_token *t = push(lx, kind, start, r + 1);
            t->line = line;
            t->col = col;
            t->sval = star_str_new(lx->vm, lx->p, (size_t)(r - lx->p));
            lx->p = r + 1;
            /* The column cache stays at the string's start (same line). */
            lx->col_p = start;
            lx->col_c = col;
            return;
        }
    }
    for (;;) {
        if (lx->p >= lx->end || (!triple && *lx->p == '\n')) {
            star_fail_at(lx->vm, line, col, "unterminated string: missing closing %s",
                         triple ? (q == '"' ? "\"\"\"" : "'''") : (q == '"' ? "\"" : "'"));
        }
        char c = *lx->p;
        if (c == q && (!triple || (lx->end - lx->p >= 3 && lx->p[1] == q && lx->p[2] == q))) {
            lx->p += triple ? 3 : 1;
            break;
        }
        if (c == '\\' && lx->p + 1 < lx->end) {
            const char *bs = lx->p++;
            if (raw) {
                /* A raw string keeps the backslash, except before a quote
                 * (either kind): Codex reads r"a\"b" as a"b. */
                if (*lx->p != '"' && *lx->p != '\'')
                    star_buf_addc(lx->vm, &b, '\\');
                if (*lx->p == '\n')
                    newline(lx, lx->p + 1);
                star_buf_addc(lx->vm, &b, *lx->p++);
            } else {
                lex_escape(lx, &b, bs, bytes);
            }
            continue;
        }
        if (c == '\n') {
            newline(lx, lx->p + 1);
            star_buf_addc(lx->vm, &b, c);
            lx->p++;
            continue;
        }
        if (c == '\r') {
            /* Codex drops carriage returns inside strings (CRLF files). */
            lx->p++;
            continue;
        }
        /* Copy a run of ordinary characters at once. */
        const char *run = lx->p++; /* at least one: a lone quote inside a triple-quoted string */
        while (lx->p < lx->end && *lx->p != q && *lx->p != '\\' && *lx->p != '\n' && *lx->p != '\r')
            lx->p++;
        star_buf_add(lx->vm, &b, run, (size_t)(lx->p - run));
    }
    /* Restore the token's own position: the string may span lines. */
    uint32_t end_line = lx->line;
    const char *ls = lx->line_start;
    struct star_token *t = push(lx, kind, start, lx->p);
    t->line = line;
    t->col = col;
    lx->line = end_line;
    lx->line_start = ls;
    /* On one line, the column cache may stay at the string's start, so
     * the next token's column is counted from there, not from the start
     * of the line (a line of strings would be counted over and over). */
    if (end_line == line) {
        lx->col_p = start;
        lx->col_c = col;
    } else {
        lx->col_p = NULL;
    }
    t->sval = star_str_new(lx->vm, b.data ? b.data : "", b.len);
}

static const struct {
    const char *text;
    int kind;
} puncts[] = {
    {"**", T_STARSTAR},   {"//=", T_SLASHSLASH_EQ},
    {"<<=", T_LTLT_EQ},   {">>=", T_GTGT_EQ},
    {"//", T_SLASHSLASH}, {"<<", T_LTLT},
    {">>", T_GTGT},       {"==", T_EQ},
    {"!=", T_NE},         {"<=", T_LE},
    {">=", T_GE},         {"+=", T_PLUS_EQ},
    {"-=", T_MINUS_EQ},   {"*=", T_STAR_EQ},
    {"/=", T_SLASH_EQ},   {"%=", T_PERCENT_EQ},
    {"|=", T_PIPE_EQ},    {"&=", T_AMP_EQ},
    {"^=", T_CARET_EQ},   {"(", T_LPAREN},
    {")", T_RPAREN},      {"[", T_LBRACK},
    {"]", T_RBRACK},      {"{", T_LBRACE},
    {"}", T_RBRACE},      {",", T_COMMA},
    {":", T_COLON},       {";", T_SEMI},
    {".", T_DOT},         {"=", T_ASSIGN},
    {"+", T_PLUS},        {"-", T_MINUS},
    {"*", T_STAR},        {"/", T_SLASH},
    {"%", T_PERCENT},     {"|", T_PIPE},
    {"&", T_AMP},         {"^", T_CARET},
    {"~", T_TILDE},       {"<", T_LT},
    {">", T_GT},
};

static void
open_bracket(struct lexer *lx, char c, const char *at)
{
    if (lx->depth == STAR_MAX_BRACKETS) {
        lx->limit_hit = true;
        star_fail_at(lx->vm, lx->line, col_of(lx, at),
                     "brackets nested too deeply (the limit is %d)", STAR_MAX_BRACKETS);
    }
    if (lx->depth == lx->cap_brackets) {
        size_t cap = lx->cap_brackets * 2;
        struct bracket *t = star_alloc_array(lx->vm, cap, sizeof *t);
        star_keep(lx->vm);
        memcpy(t, lx->brackets, lx->depth * sizeof *t);
        lx->brackets = t;
        lx->cap_brackets = cap;
    }
    struct bracket *b = &lx->brackets[lx->depth++];
    b->open = c;
    b->line = lx->line;
    b->col = col_of(lx, at);
}

static void
close_bracket(struct lexer *lx, char c, const char *at)
{
    char want = c == ')' ? '(' : c == ']' ? '[' : '{';
    if (lx->depth == 0)
        star_fail_at(lx->vm, lx->line, col_of(lx, at), "unexpected '%c': nothing to close", c);
    struct bracket *b = &lx->brackets[lx->depth - 1];
    if (b->open != want)
        star_fail_at(lx->vm, lx->line, col_of(lx, at),
                     "'%c' does not match the '%c' opened at %u:%u", c, b->open, b->line, b->col);
    lx->depth--;
}

static bool
lex_punct(struct lexer *lx)
{
    char first = *lx->p;
    /* Brackets, commas and the like start no longer operator: taken
     * without searching the table (they are most of a rules file's
     * punctuation). */
    int single = -1;
    switch (first) {
    case '(':
        single = T_LPAREN;
        break;
    case ')':
        single = T_RPAREN;
        break;
    case '[':
        single = T_LBRACK;
        break;
    case ']':
        single = T_RBRACK;
        break;
    case '{':
        single = T_LBRACE;
        break;
    case '}':
        single = T_RBRACE;
        break;
    case ',':
        single = T_COMMA;
        break;
    case ':':
        single = T_COLON;
        break;
    case ';':
        single = T_SEMI;
        break;
    case '.':
        single = T_DOT;
        break;
    case '~':
        single = T_TILDE;
        break;
    case '=':
        /* Keyword arguments' '=': not '==' */
        if (lx->end - lx->p < 2 || lx->p[1] != '=')
            single = T_ASSIGN;
        break;
    default:
        break;
    }
    if (single >= 0) {
        const char *s = lx->p;
        if (first == '(' || first == '[' || first == '{')
            open_bracket(lx, first, s);
        else if (first == ')' || first == ']' || first == '}')
            close_bracket(lx, first, s);
        lx->p++;
        push(lx, single, s, lx->p);
        return true;
    }
    size_t avail = (size_t)(lx->end - lx->p);
    /* Longest match first: the table lists longer operators before their prefixes. */
    for (size_t i = 0; i < sizeof puncts / sizeof puncts[0]; i++) {
        if (puncts[i].text[0] != first)
            continue;
        size_t n = puncts[i].text[1] == '\0' ? 1 : puncts[i].text[2] == '\0' ? 2 : 3;
        if (avail >= n && memcmp(lx->p, puncts[i].text, n) == 0) {
            const char *s = lx->p;
            char c = *s;
            if (c == '(' || c == '[' || c == '{')
                open_bracket(lx, c, s);
            else if (c == ')' || c == ']' || c == '}')
                close_bracket(lx, c, s);
            lx->p += n;
            push(lx, puncts[i].kind, s, lx->p);
            return true;
        }
    }
    return false;
}

static void
push_indent(struct lexer *lx, const char *ws, size_t len)
{
    if (lx->n_indents == lx->cap_indents) {
        size_t cap = lx->cap_indents ? lx->cap_indents * 2 : 16;
        struct indent *t = star_alloc(lx->vm, cap * sizeof *t);
        star_keep(lx->vm);
        if (lx->n_indents > 0)
            memcpy(t, lx->indents, lx->n_indents * sizeof *t);
        lx->indents = t;
        lx->cap_indents = cap;
    }
    lx->indents[lx->n_indents].ws = ws;
    lx->indents[lx->n_indents].len = len;
    lx->n_indents++;
}

/*
 * At the start of a logical line: measures its indentation and emits
 * INDENT / OUTDENT.  Indentation is compared as text, so a line is deeper
 * only when it starts with the enclosing block's exact whitespace; any
 * other mix of tabs and spaces is an error rather than a guess.
 */
/* Fails at the newline that ends the line before this one, where Codex
 * reports a line indented to no enclosing level. */
_Noreturn static void
fail_before_line(struct lexer *lx, const char *msg)
{
    if (lx->line_start == lx->src) /* a first line is never indented to a level */
        lex_fail(lx, lx->line_start, msg);
    const char *nl = lx->line_start - 1, *start = nl;
    while (start > lx->src && start[-1] != '\n')
        start--;
    uint32_t col = 1;
    for (const char *q = start; q < nl; q++)
        if (((unsigned char)*q & 0xc0) != 0x80)
            col++;
    star_fail_at(lx->vm, lx->line - 1, col, "%s", msg);
}

static void
lex_indent(struct lexer *lx, const char *ws, size_t len)
{
    struct indent *top = &lx->indents[lx->n_indents - 1];
    if (len == 0 && top->len == 0)
        return; /* a top-level line at the top level: most lines of a rules file */
    const char *tab = memchr(ws, '\t', len);
    if (tab != NULL)
        lex_fail(lx, tab, "tabs are not allowed in indentation: indent with spaces");
    if (len == top->len && memcmp(ws, top->ws, len) == 0)
        return;
    if (len > top->len && memcmp(ws, top->ws, top->len) == 0) {
        if (lx->n_indents > STAR_MAX_INDENTS) {
            lx->limit_hit = true;
            star_fail_at(lx->vm, lx->line, col_of(lx, ws + len),
                         "blocks nested too deeply (the limit is %d)", STAR_MAX_INDENTS);
        }
        push_indent(lx, ws, len);
        /* at the line's start, where Codex reports an indentation it did
         * not expect */
        push(lx, T_INDENT, ws, ws + len);
        return;
    }
    while (lx->n_indents > 1) {
        top = &lx->indents[lx->n_indents - 1];
        if (len >= top->len)
            break;
        if (memcmp(ws, top->ws, len) != 0)
            lex_fail(lx, ws, "inconsistent use of tabs and spaces in indentation");
        lx->n_indents--;
        push(lx, T_OUTDENT, ws + len, ws + len);
    }
    top = &lx->indents[lx->n_indents - 1];
    if (len != top->len || memcmp(ws, top->ws, len) != 0) {
        if (memchr(ws, '\t', len) != NULL || memchr(top->ws, '\t', top->len) != NULL)
            lex_fail(lx, ws + len, "inconsistent use of tabs and spaces in indentation");
        fail_before_line(lx, "unindent does not match any outer indentation level");
    }
}

#define LONE_CR "a carriage return must be followed by a newline (\\r\\n)"

static bool
at_line_start(struct lexer *lx)
{
    return lx->n == 0 || lx->toks[lx->n - 1].kind == T_NEWLINE;
}

static void
lex_all(struct lexer *lx)
{
    while (lx->p < lx->end) {
        char c = *lx->p;
        if (lx->bol && lx->depth == 0) {
            lx->bol = false;
            /* Codex lets carriage returns start a line (not counted as
             * indentation); elsewhere one must end the line. */
            while (lx->p < lx->end && *lx->p == '\r')
                lx->p++;
            const char *ws = lx->p;
            while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t'))
                lx->p++;
            if (lx->p >= lx->end)
                break;
            c = *lx->p;
            /* Blank and comment-only lines do not count, nor do continuation lines. */
            if (c != '\n' && c != '#' && c != '\r' && at_line_start(lx)) {
                lex_indent(lx, ws, (size_t)(lx->p - ws));
                /* A window ends where a top-level statement starts (not an
                 * else/elif, which the statement before still needs). */
                if (lx->window > 0 && lx->n >= lx->window && lx->n_indents == 1 &&
                    !(lx->end - lx->p >= 2 && lx->p[0] == 'e' && lx->p[1] == 'l'))
                    return;
            }
        }
        switch (c) {
        case ' ':
        case '\f':
            lx->p++;
            continue;
        case '\t':
            /* Codex refuses a tab anywhere between tokens (indentation is
             * checked above; blank and comment-only lines may hold tabs) */
            lex_fail(lx, lx->p, "tabs are not allowed: use spaces");
        case '\r':
            /* ... and a carriage return that does not end a line */
            if (lx->p + 1 == lx->end || lx->p[1] != '\n')
                lex_fail(lx, lx->p, LONE_CR);
            lx->p++;
            continue;
        case '#':
            while (lx->p < lx->end && *lx->p != '\n') {
                /* Codex takes a comment-only line whole, \r and all. */
                if (*lx->p == '\r' && (lx->p + 1 == lx->end || lx->p[1] != '\n') &&
                    !at_line_start(lx))
                    lex_fail(lx, lx->p, LONE_CR);
                lx->p++;
            }
            continue;
        case '\n':
            if (lx->depth == 0 && !at_line_start(lx))
                push(lx, T_NEWLINE, lx->p, lx->p);
            lx->p++;
            newline(lx, lx->p);
            lx->bol = true;
            continue;
        case '"':
        case '\'':
            lex_string(lx, lx->p, false, false, false);
            continue;
        case '\\':
            if (lx->p + 1 < lx->end &&
                (lx->p[1] == '\n' ||
                 (lx->p[1] == '\r' && lx->p + 2 < lx->end && lx->p[2] == '\n'))) {
                lx->p += lx->p[1] == '\n' ? 2 : 3;
                newline(lx, lx->p);
                continue;
            }
            break;
        default:
            break;
        }
        const char *s = lx->p;
        if (is_ident_start(c)) {
            /* String prefixes as Codex has them, lower case only: r, f,
             * fr, and b, rb, br for bytes; any other letters before a
             * quote are a name, then a string. */
            const char *q = lx->p;
            bool raw = false, fstr = false, bytes = false;
            if (q < lx->end && (*q == 'f' || *q == 'b')) {
                fstr = *q == 'f';
                bytes = *q == 'b';
                q++;
            }
            if (q < lx->end && *q == 'r') {
                raw = true;
                q++;
                if (q < lx->end && *q == 'b' && q - lx->p == 1) {
                    bytes = true;
                    q++;
                }
            }
            if (q > lx->p && q < lx->end && (*q == '"' || *q == '\'')) {
                lx->p = q;
                lex_string(lx, s, raw, fstr, bytes);
                continue;
            }
            lex_name(lx);
            continue;
        }
        if (is_digit(c)) {
            lex_number(lx);
            continue;
        }
        if (c == '.' && lx->p + 1 < lx->end && is_digit(lx->p[1])) {
            lex_float(lx, s);
            continue;
        }
        if (lex_punct(lx))
            continue;
        if ((unsigned char)c >= 0x80)
            lex_fail(lx, s, "unexpected non-ASCII character outside a string or comment");
        char msg[48];
        snprintf(msg, sizeof msg, "unexpected character '%c'", c);
        lex_fail(lx, s, msg);
    }
    if (lx->depth > 0) {
        struct bracket *b = &lx->brackets[lx->depth - 1];
        star_fail_at(lx->vm, b->line, b->col, "'%c' is never closed", b->open);
    }
    if (!at_line_start(lx))
        push(lx, T_NEWLINE, lx->p, lx->p);
    while (lx->n_indents > 1) {
        lx->n_indents--;
        push(lx, T_OUTDENT, lx->p, lx->p);
    }
    push(lx, T_EOF, lx->p, lx->p);
}

/* A lexer over src[0..len), its UTF-8 checked, with room for cap tokens. */
/*
 * lex_all, with a lexical error made into a last T_ERROR token that holds
 * it rather than raised here: the parser raises it if it gets there
 * (a syntax error before it is reported first, as in Codex).  A nesting
 * limit is raised at once (Codex crashes there anyway).  Nothing is
 * unwound meanwhile (on_unwind is for the evaluator's frames, which the
 * lexer does not touch).
 */
static void
lex_until_error(struct lexer *lx)
{
    struct star_vm *vm = lx->vm;
    jmp_buf jb, *outer = vm->on_error;
    void (*outer_unwind)(struct star_vm *) = vm->on_unwind;
    vm->on_error = &jb;
    vm->on_unwind = NULL;
    bool failed = setjmp(jb) != 0;
    if (!failed)
        lex_all(lx);
    vm->on_error = outer;
    vm->on_unwind = outer_unwind;
    if (!failed)
        return;
    if (lx->limit_hit)
        star_fail_again(vm, vm->err);
    /* vm->err stays set while the token is made, so running out of
     * memory here frees it as it reports that instead. */
    struct star_str *line = star_str_new(vm, vm->err, strlen(vm->err));
    struct star_token *t = push_at(lx, T_ERROR, lx->p, lx->p, 0);
    t->sval = line;
    free(vm->err);
    vm->err = NULL;
    lx->p = lx->end; /* nothing after it is read */
    lx->depth = 0;
}

static struct lexer *
lexer_new(struct star_vm *vm, const char *src, size_t len, uint32_t line, uint32_t col, size_t cap)
{
    struct lexer *lx = star_alloc(vm, sizeof *lx);
    memset(lx, 0, sizeof *lx);
    lx->vm = vm;
    lx->src = src;
    lx->p = src;
    lx->end = src + len;
    lx->line = line;
    lx->line_start = src;
    lx->first_col = col;
    check_utf8(lx);
    lx->line = line;
    lx->line_start = src;
    lx->first_col = col;
    lx->col_p = NULL;
    lx->cap = cap;
    lx->toks = star_alloc_array(vm, lx->cap, sizeof *lx->toks);
    lx->brackets = lx->inline_brackets;
    lx->cap_brackets = LEX_INLINE_BRACKETS;
    push_indent(lx, src, 0);
    lx->bol = true;
    return lx;
}

struct star_token *
star_lex(struct star_vm *vm, const char *src, size_t len, uint32_t line, uint32_t col, size_t *n)
{
    /* Room for the tokens a typical text has (about one per 4 bytes). */
    struct lexer *lx = lexer_new(vm, src, len, line, col, len / 4 + 64);
    lex_until_error(lx);
    *n = lx->n;
    return lx->toks;
}

struct star_lexer *
star_lex_begin(struct star_vm *vm, const char *src, size_t len)
{
    struct lexer *lx = lexer_new(vm, src, len, 1, 1, 2 * STAR_LEX_WINDOW);
    lx->window = STAR_LEX_WINDOW;
    return (struct star_lexer *)lx;
}

struct star_token *
star_lex_next(struct star_lexer *l, size_t *n)
{
    struct lexer *lx = (struct lexer *)l;
    lx->n = 0; /* the caller is done with the last window: reuse its memory */
    lex_until_error(lx);
    /* One more token past the end, so a look past the window's last
     * statement sees a newline, never stale memory. */
    push(lx, T_NEWLINE, lx->p, lx->p);
    *n = --lx->n;
    return lx->toks;
}

const char *
star_op_text(int op)
{
    switch (op) {
    case T_PLUS:
        return "+";
    case T_MINUS:
        return "-";
    case T_STAR:
        return "*";
    case T_SLASH:
        return "/";
    case T_SLASHSLASH:
        return "//";
    case T_PERCENT:
        return "%";
    case T_PIPE:
        return "|";
    case T_AMP:
        return "&";
    case T_CARET:
        return "^";
    case T_LTLT:
        return "<<";
    case T_GTGT:
        return ">>";
    case T_STARSTAR:
        return "**";
    case T_LT:
        return "<";
    case T_GT:
        return ">";
    case T_LE:
        return "<=";
    case T_GE:
        return ">=";
    case T_IN:
        return "in";
    case T_NOT:
        return "not in";
    default:
        return "?";
    }
}

const char *
star_tok_name(int kind)
{
    static const char *const names[] = {
        [T_EOF] = "end of file",
        [T_NEWLINE] = "newline",
        [T_INDENT] = "indentation",
        [T_OUTDENT] = "unindent",
        [T_NAME] = "name",
        [T_INT] = "integer",
        [T_STRING] = "string",
        [T_FSTRING] = "f-string",
        [T_BYTES] = "bytes literal",
        [T_AND] = "'and'",
        [T_BREAK] = "'break'",
        [T_CONTINUE] = "'continue'",
        [T_DEF] = "'def'",
        [T_ELIF] = "'elif'",
        [T_ELSE] = "'else'",
        [T_FOR] = "'for'",
        [T_IF] = "'if'",
        [T_IN] = "'in'",
        [T_LAMBDA] = "'lambda'",
        [T_LOAD] = "'load'",
        [T_NOT] = "'not'",
        [T_OR] = "'or'",
        [T_PASS] = "'pass'",
        [T_RETURN] = "'return'",
        [T_WHILE] = "'while'",
        [T_RESERVED] = "reserved word",
        [T_LPAREN] = "'('",
        [T_RPAREN] = "')'",
        [T_LBRACK] = "'['",
        [T_RBRACK] = "']'",
        [T_LBRACE] = "'{'",
        [T_RBRACE] = "'}'",
        [T_COMMA] = "','",
        [T_COLON] = "':'",
        [T_SEMI] = "';'",
        [T_DOT] = "'.'",
        [T_ASSIGN] = "'='",
        [T_PLUS] = "'+'",
        [T_MINUS] = "'-'",
        [T_STAR] = "'*'",
        [T_STARSTAR] = "'**'",
        [T_SLASH] = "'/'",
        [T_SLASHSLASH] = "'//'",
        [T_PERCENT] = "'%'",
        [T_PIPE] = "'|'",
        [T_AMP] = "'&'",
        [T_CARET] = "'^'",
        [T_TILDE] = "'~'",
        [T_LTLT] = "'<<'",
        [T_GTGT] = "'>>'",
        [T_EQ] = "'=='",
        [T_NE] = "'!='",
        [T_LT] = "'<'",
        [T_GT] = "'>'",
        [T_LE] = "'<='",
        [T_GE] = "'>='",
        [T_PLUS_EQ] = "'+='",
        [T_MINUS_EQ] = "'-='",
        [T_STAR_EQ] = "'*='",
        [T_SLASH_EQ] = "'/='",
        [T_SLASHSLASH_EQ] = "'//='",
        [T_PERCENT_EQ] = "'%='",
        [T_PIPE_EQ] = "'|='",
        [T_AMP_EQ] = "'&='",
        [T_CARET_EQ] = "'^='",
        [T_LTLT_EQ] = "'<<='",
        [T_GTGT_EQ] = "'>>='",
        [T_FLOAT] = "float",
        [T_ERROR] = "a bad token",
    };
    if (kind < 0 || (size_t)kind >= sizeof names / sizeof names[0] || names[kind] == NULL)
        return "token";
    return names[kind];
}
