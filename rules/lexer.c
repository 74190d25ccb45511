#include "rules/lexer.h"

#include <stdbool.h>
#include <string.h>

#include "rules/vm.h"

struct indent {
    const char *ws; /* the line's leading whitespace */
    size_t len;
};

struct bracket {
    char open;
    uint32_t line, col;
};

struct lexer {
    struct star_vm *vm;
    const char *p, *end;
    uint32_t line;
    const char *line_start;
    uint32_t first_col; /* column of line_start (1, or more for f-string bodies) */
    const char *col_p;  /* column cache: col_c is the column of col_p */
    uint32_t col_c;

    struct star_token *toks;
    size_t n, cap;

    struct indent *indents;
    size_t n_indents, cap_indents;
    struct bracket brackets[STAR_MAX_BRACKETS];
    size_t depth;
    bool bol;      /* at the beginning of a line whose indentation is not yet measured */
    size_t window; /* > 0: stop at a top-level statement once this many tokens are out */
};

static uint32_t
col_of(struct lexer *lx, const char *p)
{
    if (lx->col_p == NULL || lx->col_p < lx->line_start || lx->col_p > p) {
        lx->col_p = lx->line_start;
        lx->col_c = lx->first_col;
    }
    for (const char *q = lx->col_p; q < p; q++)
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

static struct star_token *
push(struct lexer *lx, int kind, const char *start, const char *end)
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
    memset(t, 0, sizeof *t);
    t->kind = (uint8_t)kind;
    t->line = lx->line;
    t->col = col_of(lx, start);
    t->text = start;
    t->len = (size_t)(end - start);
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

/* Reports the first byte that is not well-formed UTF-8. */
static void
check_utf8(struct lexer *lx)
{
    const unsigned char *s = (const unsigned char *)lx->p, *e = (const unsigned char *)lx->end;
    while (s < e) {
        unsigned c = *s;
        size_t n;
        unsigned min;
        if (c < 0x80) {
            if (c == '\n')
                newline(lx, (const char *)s + 1);
            else if (c == 0)
                lex_fail(lx, (const char *)s, "NUL byte in source: is this a text file?");
            s++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            n = 1, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef)
            n = 2, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4)
            n = 3, min = 0x10000;
        else
            n = 0, min = 0;
        bool ok = n > 0 && (size_t)(e - s) > n;
        unsigned cp = c & (0x3fu >> n);
        for (size_t i = 1; ok && i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80)
                ok = false;
            cp = (cp << 6) | (s[i] & 0x3fu);
        }
        if (ok && (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)))
            ok = false;
        if (!ok) {
            char msg[96];
            snprintf(msg, sizeof msg, "invalid UTF-8 byte 0x%02x: files must be UTF-8 text", c);
            lex_fail(lx, (const char *)s, msg);
        }
        s += n + 1;
    }
}

static const struct {
    const char *word;
    int kind;
} keywords[] = {
    {"and", T_AND},
    {"break", T_BREAK},
    {"continue", T_CONTINUE},
    {"def", T_DEF},
    {"elif", T_ELIF},
    {"else", T_ELSE},
    {"for", T_FOR},
    {"if", T_IF},
    {"in", T_IN},
    {"lambda", T_LAMBDA},
    {"load", T_LOAD},
    {"not", T_NOT},
    {"or", T_OR},
    {"pass", T_PASS},
    {"return", T_RETURN},
    {"while", T_WHILE},
    {"as", T_RESERVED},
    {"assert", T_RESERVED},
    {"async", T_RESERVED},
    {"await", T_RESERVED},
    {"class", T_RESERVED},
    {"del", T_RESERVED},
    {"except", T_RESERVED},
    {"finally", T_RESERVED},
    {"from", T_RESERVED},
    {"global", T_RESERVED},
    {"import", T_RESERVED},
    {"is", T_RESERVED},
    {"nonlocal", T_RESERVED},
    {"raise", T_RESERVED},
    {"try", T_RESERVED},
    {"with", T_RESERVED},
    {"yield", T_RESERVED},
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

static void
lex_name(struct lexer *lx)
{
    const char *s = lx->p;
    while (lx->p < lx->end && (is_ident_start(*lx->p) || is_digit(*lx->p)))
        lx->p++;
    size_t len = (size_t)(lx->p - s);
    for (size_t i = 0; len >= 2 && len <= 8 && i < sizeof keywords / sizeof keywords[0]; i++) {
        if (keywords[i].word[0] == s[0] && strncmp(keywords[i].word, s, len) == 0 &&
            keywords[i].word[len] == '\0') {
            push(lx, keywords[i].kind, s, lx->p);
            return;
        }
    }
    struct star_token *t = push(lx, T_NAME, s, lx->p);
    t->sval = star_intern(lx->vm, s, len);
}

static int
digit_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return 99;
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
    const char *q = base == 10 ? s : s + 2;
    const char *digits = q;
    uint64_t v = 0;
    bool overflow = false;
    /* Digits of the literal; a letter after them starts the next token (0in[1]). */
    while (q < lx->end && (is_digit(*q) || (base == 16 && digit_value(*q) < 16))) {
        int d = digit_value(*q);
        if (d >= base) {
            lx->p = q;
            lex_fail(lx, s, "invalid digit in integer literal");
        }
        if (v > (UINT64_MAX - (unsigned)d) / (unsigned)base)
            overflow = true;
        else
            v = v * (unsigned)base + (unsigned)d;
        q++;
    }
    if (q < lx->end && (*q == '.' || *q == 'e' || *q == 'E') && base == 10) {
        lx->p = q;
        lex_fail(lx, s, "floating-point numbers are not supported");
    }
    if (q == digits)
        lex_fail(lx, s, "integer literal has no digits");
    if (base == 10 && *s == '0' && q - s > 1)
        lex_fail(lx, s, "integer literal with leading zero: write 0o755 for octal");
    if (overflow || v > (uint64_t)INT64_MAX)
        lex_fail(lx, s, "integer literal too large (the limit is 2^63-1)");
    lx->p = q;
    struct star_token *t = push(lx, T_INT, s, q);
    t->ival = (int64_t)v;
}

static void
add_utf8(struct lexer *lx, struct star_buf *b, uint32_t cp, const char *at)
{
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        lex_fail(lx, at, "invalid Unicode code point in escape");
    star_buf_add_utf8(lx->vm, b, cp);
}

/* Decodes the escape at lx->p (just after the backslash) into b. */
static void
lex_escape(struct lexer *lx, struct star_buf *b, const char *bs)
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
            if (lx->p >= lx->end || digit_value(*lx->p) >= 16)
                lex_fail(lx, bs,
                         c == 'x' ? "\\x escape needs two hex digits"
                                  : "truncated \\u or \\U escape");
            v = v * 16 + (uint32_t)digit_value(*lx->p++);
        }
        /* Like Codex, \x names a code point (\x80 is U+0080), not a byte. */
        add_utf8(lx, b, v, bs);
        return;
    }
    default:
        if (c >= '0' && c <= '7') {
            uint32_t v = (uint32_t)(c - '0');
            for (int i = 0; i < 2 && lx->p < lx->end && *lx->p >= '0' && *lx->p <= '7'; i++)
                v = v * 8 + (uint32_t)(*lx->p++ - '0');
            add_utf8(lx, b, v, bs); /* \777 is U+01FF, as in Codex */
            return;
        }
        /* Codex keeps an unknown escape as written, backslash included. */
        star_buf_addc(vm, b, '\\');
        star_buf_addc(vm, b, c);
        return;
    }
}

static void
lex_string(struct lexer *lx, const char *start, bool raw, bool fstr)
{
    char q = *lx->p;
    bool triple = lx->end - lx->p >= 3 && lx->p[1] == q && lx->p[2] == q;
    uint32_t line = lx->line, col = col_of(lx, start);
    lx->p += triple ? 3 : 1;
    struct star_buf b = {0};
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
                lex_escape(lx, &b, bs);
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
    struct star_token *t = push(lx, fstr ? T_FSTRING : T_STRING, start, lx->p);
    t->line = line;
    t->col = col;
    lx->line = end_line;
    lx->line_start = ls;
    lx->col_p = NULL;
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
    if (lx->depth == STAR_MAX_BRACKETS)
        star_fail_at(lx->vm, lx->line, col_of(lx, at),
                     "brackets nested too deeply (the limit is %d)", STAR_MAX_BRACKETS);
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
static void
lex_indent(struct lexer *lx, const char *ws, size_t len)
{
    const char *tab = memchr(ws, '\t', len);
    if (tab != NULL)
        lex_fail(lx, tab, "tabs are not allowed in indentation: indent with spaces");
    struct indent *top = &lx->indents[lx->n_indents - 1];
    if (len == top->len && memcmp(ws, top->ws, len) == 0)
        return;
    if (len > top->len && memcmp(ws, top->ws, top->len) == 0) {
        if (lx->n_indents > STAR_MAX_NESTING)
            lex_fail(lx, ws + len, "blocks nested too deeply");
        push_indent(lx, ws, len);
        push(lx, T_INDENT, ws + len, ws + len);
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
        lex_fail(lx, ws + len, "unindent does not match any outer indentation level");
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
        if (c == '#') {
            while (lx->p < lx->end && *lx->p != '\n') {
                /* Codex takes a comment-only line whole, \r and all. */
                if (*lx->p == '\r' && (lx->p + 1 == lx->end || lx->p[1] != '\n') &&
                    !at_line_start(lx))
                    lex_fail(lx, lx->p, LONE_CR);
                lx->p++;
            }
            continue;
        }
        if (c == '\n') {
            if (lx->depth == 0 && !at_line_start(lx))
                push(lx, T_NEWLINE, lx->p, lx->p);
            lx->p++;
            newline(lx, lx->p);
            lx->bol = true;
            continue;
        }
        /* Codex refuses a tab anywhere between tokens (indentation is
         * checked above; blank and comment-only lines may hold tabs), and
         * a carriage return that does not end a line. */
        if (c == '\t')
            lex_fail(lx, lx->p, "tabs are not allowed: use spaces");
        if (c == '\r' && (lx->p + 1 == lx->end || lx->p[1] != '\n'))
            lex_fail(lx, lx->p, LONE_CR);
        if (c == ' ' || c == '\r' || c == '\f') {
            lx->p++;
            continue;
        }
        if (c == '\\' && lx->p + 1 < lx->end &&
            (lx->p[1] == '\n' || (lx->p[1] == '\r' && lx->p + 2 < lx->end && lx->p[2] == '\n'))) {
            lx->p += lx->p[1] == '\n' ? 2 : 3;
            newline(lx, lx->p);
            continue;
        }
        const char *s = lx->p;
        if (c == '"' || c == '\'') {
            lex_string(lx, s, false, false);
            continue;
        }
        if (is_ident_start(c)) {
            /* String prefixes as Codex has them, lower case only: r, f,
             * fr, and b, rb, br (its bytes, read here as strings); any
             * other letters before a quote are a name, then a string. */
            const char *q = lx->p;
            bool raw = false, fstr = false;
            if (q < lx->end && (*q == 'f' || *q == 'b')) {
                fstr = *q == 'f';
                q++;
            }
            if (q < lx->end && *q == 'r') {
                raw = true;
                q++;
                if (q < lx->end && *q == 'b' && q - lx->p == 1)
                    q++;
            }
            if (q > lx->p && q < lx->end && (*q == '"' || *q == '\'')) {
                lx->p = q;
                lex_string(lx, s, raw, fstr);
                continue;
            }
            lex_name(lx);
            continue;
        }
        if (is_digit(c)) {
            lex_number(lx);
            continue;
        }
        if (c == '.' && lx->p + 1 < lx->end && is_digit(lx->p[1]))
            lex_fail(lx, s, "floating-point numbers are not supported");
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
static struct lexer *
lexer_new(struct star_vm *vm, const char *src, size_t len, uint32_t line, uint32_t col, size_t cap)
{
    struct lexer *lx = star_alloc(vm, sizeof *lx);
    memset(lx, 0, sizeof *lx);
    lx->vm = vm;
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
    push_indent(lx, src, 0);
    lx->bol = true;
    return lx;
}

struct star_token *
star_lex(struct star_vm *vm, const char *src, size_t len, uint32_t line, uint32_t col, size_t *n)
{
    /* Room for the tokens a typical text has (about one per 4 bytes). */
    struct lexer *lx = lexer_new(vm, src, len, line, col, len / 4 + 64);
    lex_all(lx);
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
    lex_all(lx);
    /* One more token past the end, so a look past the window's last
     * statement sees a newline, never stale memory. */
    push(lx, T_NEWLINE, lx->p, lx->p);
    *n = --lx->n;
    return lx->toks;
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
    };
    if (kind < 0 || (size_t)kind >= sizeof names / sizeof names[0] || names[kind] == NULL)
        return "token";
    return names[kind];
}
