#include "rules/parser.h"
#include "rules/unicode.h"

#include <string.h>

#include "rules/bigint.h"
#include "rules/vm.h"

struct parser {
    struct star_vm *vm;
    struct star_token *toks;
    size_t n, i;
    unsigned depth;
    bool in_func;
    unsigned in_loop;
};

/* ---- helpers ---- */

static struct star_token *
peek(struct parser *ps)
{
    return &ps->toks[ps->i];
}

static int
peek_kind(struct parser *ps)
{
    return ps->toks[ps->i].kind;
}

static struct star_token *
advance(struct parser *ps)
{
    struct star_token *t = &ps->toks[ps->i];
    if (t->kind != T_EOF)
        ps->i++;
    return t;
}

_Noreturn static void
fail_tok(struct parser *ps, struct star_token *t, const char *what)
{
    if (t->kind == T_NAME || t->kind == T_INT || t->kind == T_FLOAT || t->kind == T_RESERVED ||
        t->kind == T_CALL_LITERAL)
        star_fail_at(ps->vm, t->line, t->col, "syntax error: unexpected '%.*s', %s",
                     (int)(t->len > 40 ? 40 : t->len), t->text, what);
    star_fail_at(ps->vm, t->line, t->col, "syntax error: unexpected %s, %s", star_tok_name(t->kind),
                 what);
}

static struct star_token *
expect(struct parser *ps, int kind, const char *what)
{
    if (peek_kind(ps) != kind)
        fail_tok(ps, peek(ps), what);
    return advance(ps);
}

static bool
accept(struct parser *ps, int kind)
{
    if (peek_kind(ps) == kind) {
        advance(ps);
        return true;
    }
    return false;
}

static struct ast_node *
node(struct parser *ps, int kind, struct star_token *at)
{
    struct ast_node *n = star_alloc(ps->vm, sizeof *n);
    n->kind = (uint8_t)kind;
    n->line = at->line;
    n->col = at->col;
    return n;
}

/* A growable array of pointers, copied into the arena when done. */
struct vec {
    void **items;
    size_t n, cap;
};

static void
vec_push(struct star_vm *vm, struct vec *v, void *p)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        void **t = star_alloc(vm, cap * sizeof *t);
        if (v->n > 0)
            memcpy(t, v->items, v->n * sizeof *t);
        v->items = t;
        v->cap = cap;
    }
    v->items[v->n++] = p;
}

static struct ast_list
vec_list(struct vec *v)
{
    struct ast_list l = {(struct ast_node **)v->items, v->n};
    return l;
}

static void
enter(struct parser *ps, struct star_token *at)
{
    if (++ps->depth > STAR_MAX_NESTING * 2)
        star_fail_at(ps->vm, at->line, at->col, "expression nested too deeply (the limit is %d)",
                     STAR_MAX_NESTING * 2);
}

/* ---- expressions ---- */

static struct ast_node *parse_test(struct parser *ps);
static struct ast_node *parse_expr(struct parser *ps);
static struct ast_node *parse_or(struct parser *ps, struct ast_node *first);
static struct ast_node *parse_primary(struct parser *ps);
static struct ast_func *parse_params(struct parser *ps, int close);
static struct ast_node *parse_fstring(struct parser *ps, struct star_token *t);

static bool
starts_expr(int k)
{
    switch (k) {
    case T_NAME:
    case T_INT:
    case T_FLOAT:
    case T_STRING:
    case T_FSTRING:
    case T_LPAREN:
    case T_LBRACK:
    case T_LBRACE:
    case T_MINUS:
    case T_PLUS:
    case T_TILDE:
    case T_NOT:
    case T_LAMBDA:
        return true;
    default:
        return false;
    }
}

static struct ast_node *
parse_comp(struct parser *ps, struct star_token *open, struct ast_node *body, struct ast_node *val,
           int close)
{
    struct ast_node *n = node(ps, A_COMP, open);
    n->u.comp.is_dict = val != NULL;
    n->u.comp.body = body;
    n->u.comp.val = val;
    struct ast_clause *cl = NULL;
    size_t ncl = 0, cap = 0;
    while (peek_kind(ps) == T_FOR || peek_kind(ps) == T_IF) {
        if (ncl == cap) {
            cap = cap ? cap * 2 : 4;
            struct ast_clause *t = star_alloc(ps->vm, cap * sizeof *t);
            if (ncl > 0)
                memcpy(t, cl, ncl * sizeof *t);
            cl = t;
        }
        struct ast_clause *c = &cl[ncl++];
        if (accept(ps, T_FOR)) {
            c->is_for = true;
            struct star_token *at = peek(ps);
            struct ast_node *first = parse_primary(ps);
            if (peek_kind(ps) == T_COMMA) {
                struct vec v = {0};
                vec_push(ps->vm, &v, first);
                while (accept(ps, T_COMMA) && peek_kind(ps) != T_IN)
                    vec_push(ps->vm, &v, parse_primary(ps));
                first = node(ps, A_TUPLE, at);
                first->u.list = vec_list(&v);
            }
            c->target = first;
            expect(ps, T_IN, "expected 'in' in comprehension");
            c->expr = parse_or(ps, NULL);
        } else {
            advance(ps);
            c->expr = parse_or(ps, NULL);
        }
    }
    n->u.comp.clauses = cl;
    n->u.comp.nclauses = ncl;
    expect(ps, close, close == T_RBRACK ? "expected ']'" : "expected '}'");
    return n;
}

static struct ast_node *
parse_list_or_comp(struct parser *ps)
{
    struct star_token *open = advance(ps);
    struct vec v = {0};
    if (peek_kind(ps) != T_RBRACK) {
        struct ast_node *first = parse_test(ps);
        if (peek_kind(ps) == T_FOR)
            return parse_comp(ps, open, first, NULL, T_RBRACK);
        vec_push(ps->vm, &v, first);
        while (accept(ps, T_COMMA) && peek_kind(ps) != T_RBRACK)
            vec_push(ps->vm, &v, parse_test(ps));
    }
    expect(ps, T_RBRACK, "expected ',' or ']' in list");
    struct ast_node *n = node(ps, A_LIST, open);
    n->u.list = vec_list(&v);
    return n;
}

static struct ast_node *
parse_dict_or_comp(struct parser *ps)
{
    struct star_token *open = advance(ps);
    struct vec keys = {0}, vals = {0};
    if (peek_kind(ps) != T_RBRACE) {
        struct ast_node *k = parse_test(ps);
        expect(ps, T_COLON, "expected ':' after dict key");
        struct ast_node *val = parse_test(ps);
        if (peek_kind(ps) == T_FOR)
            return parse_comp(ps, open, k, val, T_RBRACE);
        vec_push(ps->vm, &keys, k);
        vec_push(ps->vm, &vals, val);
        while (accept(ps, T_COMMA) && peek_kind(ps) != T_RBRACE) {
            vec_push(ps->vm, &keys, parse_test(ps));
            expect(ps, T_COLON, "expected ':' after dict key");
            vec_push(ps->vm, &vals, parse_test(ps));
        }
    }
    expect(ps, T_RBRACE, "expected ',' or '}' in dict");
    struct ast_node *n = node(ps, A_DICT, open);
    n->u.dict.keys = vec_list(&keys);
    n->u.dict.vals = vec_list(&vals);
    return n;
}

/* The tree parse_primary makes of the tokens a T_CALL_LITERAL stands for
 * (the lexer's plain call statement): a call of the name, each keyword
 * argument a string or a list of strings, at the same positions. */
static struct ast_node *
literal_call(struct parser *ps, struct star_token *t)
{
    const struct star_lit_call *c = t->call;
    /* The nodes in one allocation: the name, the call, each list and
     * string. */
    size_t count = 2;
    for (size_t i = 0; i < c->nargs; i++)
        count += c->args[i].is_list + c->args[i].n;
    struct ast_node *pool = star_alloc_array(ps->vm, count, sizeof *pool);
    for (size_t i = 0; i < count; i++) {
        pool[i].line = t->line;
        pool[i].col = t->col;
    }
    struct ast_node *fn = pool++;
    fn->kind = A_IDENT;
    fn->u.ident.name = t->sval;
    struct ast_node *n = pool++;
    n->kind = A_CALL;
    n->u.call.fn = fn;
    n->u.call.args = star_alloc_array(ps->vm, c->nargs, sizeof *n->u.call.args);
    n->u.call.nargs = c->nargs;
    n->u.call.literal = true;
    for (size_t i = 0; i < c->nargs; i++) {
        const struct star_lit_arg *a = &c->args[i];
        struct ast_arg *arg = &n->u.call.args[i];
        arg->kind = ARG_KW;
        arg->name = a->name;
        struct ast_node **items = &arg->value;
        if (a->is_list) {
            struct ast_node *l = pool++;
            l->kind = A_LIST;
            l->col = a->col;
            l->u.list.items = star_alloc_array(ps->vm, a->n, sizeof *l->u.list.items);
            l->u.list.n = a->n;
            arg->value = l;
            items = l->u.list.items;
        }
        for (size_t k = 0; k < a->n; k++) {
            struct ast_node *str = pool++;
            str->kind = A_STRING;
            str->col = a->items[k].col;
            str->u.sval = a->items[k].s;
            items[k] = str;
        }
    }
    return n;
}

/*
 * Where the source of expression e starts: Codex reports a failing
 * operation at the start of its whole expression, and an operand's
 * expression starts at its own leftmost part (a parenthesised operand at
 * what is inside the parentheses).
 */
static void
set_start(struct ast_node *n, const struct ast_node *e)
{
    for (;;) {
        switch (e->kind) {
        case A_BINARY:
        case A_AND:
        case A_OR:
        case A_COND:
        case A_INDEX:
        case A_SLICE:
            e = e->u.x.a;
            continue;
        case A_DOT:
            e = e->u.dot.obj;
            continue;
        default:
            n->line = e->line;
            n->col = e->col;
            return;
        }
    }
}

static struct ast_node *
parse_operand(struct parser *ps)
{
    struct star_token *t = peek(ps);
    struct ast_node *n;
    switch (t->kind) {
    case T_NAME:
        advance(ps);
        n = node(ps, A_IDENT, t);
        n->u.ident.name = t->sval;
        return n;
    case T_INT:
        advance(ps);
        if (t->big) { /* the lexer checked the digits; the prefix gives the base */
            n = node(ps, A_BIGINT, t);
            unsigned base = 10;
            size_t skip = 0;
            if (t->len > 2 && t->text[0] == '0') {
                char c = (char)(t->text[1] | 0x20);
                base = c == 'x' ? 16 : c == 'o' ? 8 : 2;
                skip = 2;
            }
            n->u.big = bigint_parse(ps->vm, t->text + skip, t->len - skip, base, false);
            return n;
        }
        n = node(ps, A_INT, t);
        n->u.ival = t->ival;
        return n;
    case T_FLOAT:
        advance(ps);
        n = node(ps, A_FLOAT, t);
        n->u.dval = t->dval;
        return n;
    case T_STRING: {
        advance(ps);
        n = node(ps, A_STRING, t);
        n->u.sval = t->sval;
        /* Adjacent string literals are not concatenated in Starlark. */
        if (peek_kind(ps) == T_STRING)
            fail_tok(ps, peek(ps), "use + to join strings");
        return n;
    }
    case T_FSTRING:
        advance(ps);
        return parse_fstring(ps, t);
    case T_CALL_LITERAL:
        advance(ps);
        return literal_call(ps, t);
    case T_LBRACK:
        return parse_list_or_comp(ps);
    case T_LBRACE:
        return parse_dict_or_comp(ps);
    case T_LPAREN: {
        advance(ps);
        if (accept(ps, T_RPAREN)) {
            n = node(ps, A_TUPLE, t);
            return n;
        }
        struct ast_node *e = parse_test(ps);
        if (peek_kind(ps) == T_COMMA) {
            struct vec v = {0};
            vec_push(ps->vm, &v, e);
            while (accept(ps, T_COMMA) && peek_kind(ps) != T_RPAREN)
                vec_push(ps->vm, &v, parse_test(ps));
            e = node(ps, A_TUPLE, t);
            e->u.list = vec_list(&v);
            set_start(e, e->u.list.items[0]); /* Codex: inside the parentheses */
        }
        expect(ps, T_RPAREN, "expected ')'");
        return e;
    }
    case T_WHILE:
    case T_RESERVED:
        star_fail_at(ps->vm, t->line, t->col,
                     "syntax error: '%.*s' is reserved and not allowed in Starlark", (int)t->len,
                     t->text);
    default:
        fail_tok(ps, t, "expected an expression");
    }
}

static struct ast_node *
parse_call(struct parser *ps, struct ast_node *fn, struct star_token *open)
{
    struct ast_node *n = node(ps, A_CALL, open);
    n->line = fn->line;
    n->col = fn->col;
    n->u.call.fn = fn;
    struct ast_arg *args = NULL;
    size_t na = 0, cap = 0;
    while (peek_kind(ps) != T_RPAREN) {
        if (na == cap) {
            cap = cap ? cap * 2 : 4;
            struct ast_arg *t = star_alloc(ps->vm, cap * sizeof *t);
            if (na > 0)
                memcpy(t, args, na * sizeof *t);
            args = t;
        }
        struct ast_arg *a = &args[na++];
        struct star_token *first = peek(ps);
        /* Codex's order: *args at most once, before any **kwargs; **kwargs
         * at most once; no name=value after either. */
        bool star_seen = false, starstar_seen = false;
        for (size_t j = 0; j + 1 < na; j++) {
            star_seen = star_seen || args[j].kind == ARG_STAR;
            starstar_seen = starstar_seen || args[j].kind == ARG_STARSTAR;
        }
        if (accept(ps, T_STARSTAR)) {
            a->kind = ARG_STARSTAR;
            if (starstar_seen)
                star_fail_at(ps->vm, first->line, first->col,
                             "Multiple kwargs dictionary in arguments");
        } else if (accept(ps, T_STAR)) {
            a->kind = ARG_STAR;
            if (star_seen || starstar_seen)
                star_fail_at(ps->vm, first->line, first->col,
                             "Args array after another args or kwargs");
        } else if (peek_kind(ps) == T_NAME && ps->toks[ps->i + 1].kind == T_ASSIGN) {
            a->kind = ARG_KW;
            if (star_seen || starstar_seen)
                star_fail_at(ps->vm, first->line, first->col,
                             "named argument after *args or **kwargs");
            a->name = advance(ps)->sval;
            advance(ps);
            for (size_t j = 0; j + 1 < na; j++) {
                if (args[j].kind == ARG_KW && args[j].name == a->name) {
                    struct star_token *t = &ps->toks[ps->i - 2];
                    star_fail_at(ps->vm, t->line, t->col, "keyword argument '%s' given twice",
                                 a->name->data);
                }
            }
        } else {
            a->kind = ARG_POS;
            for (size_t j = 0; j + 1 < na; j++) {
                if (args[j].kind != ARG_POS) {
                    struct star_token *t = peek(ps);
                    star_fail_at(ps->vm, t->line, t->col,
                                 "positional argument after keyword or *args argument");
                }
            }
        }
        a->value = parse_test(ps);
        if (!accept(ps, T_COMMA))
            break;
    }
    expect(ps, T_RPAREN, "expected ',' or ')' in call");
    n->u.call.args = args;
    n->u.call.nargs = na;
    return n;
}

static struct ast_node *
parse_primary(struct parser *ps)
{
    struct ast_node *e = parse_operand(ps);
    for (;;) {
        struct star_token *t = peek(ps);
        if (t->kind == T_DOT) {
            advance(ps);
            struct star_token *name = expect(ps, T_NAME, "expected a name after '.'");
            struct ast_node *d = node(ps, A_DOT, name);
            d->u.dot.obj = e;
            d->u.dot.name = name->sval;
            set_start(d, e);
            e = d;
        } else if (t->kind == T_LPAREN) {
            advance(ps);
            e = parse_call(ps, e, t);
            /* A call is reported where its whole expression starts. */
            set_start(e, e->u.call.fn);
        } else if (t->kind == T_LBRACK) {
            advance(ps);
            struct ast_node *lo = NULL, *hi = NULL, *step = NULL;
            bool slice = false;
            if (peek_kind(ps) != T_COLON)
                lo = parse_expr(ps);
            if (accept(ps, T_COLON)) {
                slice = true;
                if (peek_kind(ps) != T_COLON && peek_kind(ps) != T_RBRACK)
                    hi = parse_test(ps);
                if (accept(ps, T_COLON) && peek_kind(ps) != T_RBRACK)
                    step = parse_test(ps);
            }
            expect(ps, T_RBRACK, "expected ']'");
            struct ast_node *x = node(ps, slice ? A_SLICE : A_INDEX, t);
            set_start(x, e);
            x->u.x.a = e;
            x->u.x.b = lo;
            x->u.x.c = hi;
            x->u.x.d = step;
            e = x;
        } else {
            return e;
        }
    }
}

static struct ast_node *
parse_unary(struct parser *ps)
{
    struct star_token *t = peek(ps);
    if (t->kind == T_MINUS || t->kind == T_PLUS || t->kind == T_TILDE) {
        enter(ps, t);
        advance(ps);
        struct ast_node *n = node(ps, A_UNARY, t);
        n->op = t->kind;
        n->u.x.a = parse_unary(ps);
        ps->depth--;
        return n;
    }
    /* No x ** y: Codex's Starlark has no power operator, so `**` after an
     * operand is a syntax error there and here. */
    return parse_primary(ps);
}

/* Binary precedence levels, loosest first (comparisons handled apart). */
static int
binary_prec(int k)
{
    switch (k) {
    case T_PIPE:
        return 1;
    case T_CARET:
        return 2;
    case T_AMP:
        return 3;
    case T_LTLT:
    case T_GTGT:
        return 4;
    case T_PLUS:
    case T_MINUS:
        return 5;
    case T_STAR:
    case T_SLASH:
    case T_SLASHSLASH:
    case T_PERCENT:
        return 6;
    default:
        return 0;
    }
}

/* Each level below takes the expression's first operand already parsed
 * (first, when not NULL: parse_test parses it to see whether an operator
 * follows at all) or parses it itself. */
static struct ast_node *
parse_binary(struct parser *ps, int min_prec, struct ast_node *first)
{
    struct ast_node *lhs = first != NULL ? first : parse_unary(ps);
    for (;;) {
        struct star_token *t = peek(ps);
        int p = binary_prec(t->kind);
        if (p == 0 || p < min_prec)
            return lhs;
        enter(ps, t);
        advance(ps);
        struct ast_node *n = node(ps, A_BINARY, t);
        set_start(n, lhs);
        n->op = t->kind;
        n->u.x.a = lhs;
        n->u.x.b = parse_binary(ps, p + 1, NULL);
        ps->depth--;
        lhs = n;
    }
}

static bool
is_comparison(struct parser *ps)
{
    int k = peek_kind(ps);
    if (k == T_NOT)
        return ps->toks[ps->i + 1].kind == T_IN;
    return k == T_EQ || k == T_NE || k == T_LT || k == T_GT || k == T_LE || k == T_GE || k == T_IN;
}

static struct ast_node *
parse_comparison(struct parser *ps, struct ast_node *first)
{
    struct ast_node *lhs = parse_binary(ps, 1, first);
    if (!is_comparison(ps))
        return lhs;
    struct star_token *t = advance(ps);
    int op = t->kind;
    if (op == T_NOT) {
        advance(ps);
        op = T_NOT; /* "not in" */
    }
    struct ast_node *n = node(ps, A_BINARY, t);
    set_start(n, lhs);
    n->op = (uint8_t)op;
    n->u.x.a = lhs;
    n->u.x.b = parse_binary(ps, 1, NULL);
    if (is_comparison(ps))
        fail_tok(ps, peek(ps), "comparisons do not chain: use 'and'");
    return n;
}

static struct ast_node *
parse_not(struct parser *ps, struct ast_node *first)
{
    struct star_token *t = peek(ps);
    if (first == NULL && t->kind == T_NOT) {
        enter(ps, t);
        advance(ps);
        struct ast_node *n = node(ps, A_NOT, t);
        n->u.x.a = parse_not(ps, NULL);
        ps->depth--;
        return n;
    }
    return parse_comparison(ps, first);
}

static struct ast_node *
parse_and(struct parser *ps, struct ast_node *first)
{
    struct ast_node *lhs = parse_not(ps, first);
    while (peek_kind(ps) == T_AND) {
        struct star_token *t = advance(ps);
        struct ast_node *n = node(ps, A_AND, t);
        n->u.x.a = lhs;
        n->u.x.b = parse_not(ps, NULL);
        lhs = n;
    }
    return lhs;
}

static struct ast_node *
parse_or(struct parser *ps, struct ast_node *first)
{
    struct ast_node *lhs = parse_and(ps, first);
    while (peek_kind(ps) == T_OR) {
        struct star_token *t = advance(ps);
        struct ast_node *n = node(ps, A_OR, t);
        n->u.x.a = lhs;
        n->u.x.b = parse_and(ps, NULL);
        lhs = n;
    }
    return lhs;
}

/* x if c else y, x parsed. */
static struct ast_node *
parse_conditional(struct parser *ps, struct ast_node *x)
{
    if (peek_kind(ps) != T_IF)
        return x;
    struct star_token *it = advance(ps);
    struct ast_node *n = node(ps, A_COND, it);
    n->u.x.a = x;
    n->u.x.b = parse_or(ps, NULL);
    expect(ps, T_ELSE, "expected 'else' in conditional expression");
    n->u.x.c = parse_test(ps);
    return n;
}

/* Whether a token after an operand ends the expression: no operator,
 * call, index, conditional or comprehension can follow. */
static bool
ends_operand(int k)
{
    return k == T_COMMA || k == T_RPAREN || k == T_RBRACK || k == T_RBRACE || k == T_NEWLINE;
}

static struct ast_node *
parse_test(struct parser *ps)
{
    struct star_token *t = peek(ps);
    enter(ps, t);
    struct ast_node *res;
    if (t->kind != T_LAMBDA && t->kind != T_NOT && t->kind != T_MINUS && t->kind != T_PLUS &&
        t->kind != T_TILDE) {
        /* The levels below would start with this primary expression; when
         * nothing follows it (a list item, an argument: most expressions
         * of a rules file), it is the whole expression. */
        res = parse_primary(ps);
        if (!ends_operand(peek_kind(ps))) {
            res = parse_or(ps, res);
            res = parse_conditional(ps, res);
        }
    } else if (t->kind == T_LAMBDA) {
        advance(ps);
        struct ast_node *n = node(ps, A_LAMBDA, t);
        struct ast_func *f = parse_params(ps, T_COLON);
        f->name = star_intern(ps->vm, "lambda", 6);
        expect(ps, T_COLON, "expected ':' after lambda parameters");
        f->expr = parse_test(ps);
        n->u.def.func = f;
        res = n;
    } else {
        res = parse_conditional(ps, parse_or(ps, NULL));
    }
    ps->depth--;
    return res;
}

/* Test {',' Test}: a bare tuple when there is a comma. */
static struct ast_node *
parse_expr(struct parser *ps)
{
    struct star_token *t = peek(ps);
    struct ast_node *e = parse_test(ps);
    if (peek_kind(ps) != T_COMMA)
        return e;
    struct vec v = {0};
    vec_push(ps->vm, &v, e);
    while (accept(ps, T_COMMA) && starts_expr(peek_kind(ps)))
        vec_push(ps->vm, &v, parse_test(ps));
    struct ast_node *tup = node(ps, A_TUPLE, t);
    tup->u.list = vec_list(&v);
    return tup;
}

/*
 * The column of the decoded f-string text's byte `off` in the source, as
 * Codex reports errors inside an f-string; the f-string's own column when
 * an escape or a line break before it makes the two texts differ.
 */
static uint32_t
fstring_col(const struct star_token *t, size_t off)
{
    const char *raw = t->text;
    size_t q = 0;
    while (q < t->len && raw[q] != '"' && raw[q] != '\'')
        q++;
    size_t start = q + (q + 2 < t->len && raw[q + 1] == raw[q] && raw[q + 2] == raw[q] ? 3 : 1);
    if (start + off > t->len)
        return t->col;
    bool is_raw = memchr(raw, 'r', q) != NULL; /* a raw backslash stays, but before a quote */
    for (size_t i = start; i < start + off; i++)
        if ((raw[i] == '\\' && (!is_raw || raw[i + 1] == '"' || raw[i + 1] == '\'')) ||
            raw[i] == '\n' || raw[i] == '\r')
            return t->col;
    return t->col + (uint32_t)unicode_count(raw, start + off);
}

/*
 * f"...{expr}...": the decoded text is split into literal parts and
 * expressions, each expression lexed and parsed on its own.  Positions
 * inside point where Codex points (see fstring_col).
 */
static struct ast_node *
parse_fstring(struct parser *ps, struct star_token *t)
{
    struct star_vm *vm = ps->vm;
    struct ast_node *n = node(ps, A_FSTRING, t);
    struct vec parts = {0};
    const char *s = t->sval->data, *end = s + t->sval->len;
    struct star_buf lit = {0};
    while (s < end) {
        if (*s == '{' && s + 1 < end && s[1] == '{') {
            star_buf_addc(vm, &lit, '{');
            s += 2;
        } else if (*s == '}' && s + 1 < end && s[1] == '}') {
            star_buf_addc(vm, &lit, '}');
            s += 2;
        } else if (*s == '}') {
            star_fail_at(vm, t->line, fstring_col(t, (size_t)(s - t->sval->data)),
                         "f-string: single '}' is not allowed: write '}}'");
        } else if (*s == '{') {
            const char *e = memchr(s, '}', (size_t)(end - s));
            if (e == NULL)
                star_fail_at(vm, t->line, fstring_col(t, (size_t)(s + 1 - t->sval->data)),
                             "f-string: '{' is never closed");
            if (lit.len > 0) {
                struct ast_node *l = node(ps, A_STRING, t);
                l->u.sval = star_str_new(vm, lit.data, lit.len);
                vec_push(vm, &parts, l);
                lit.len = 0;
            }
            const char *b = s + 1, *be = e;
            char conv = 's';
            if (be - b >= 2 && be[-2] == '!' && (be[-1] == 'r' || be[-1] == 's')) {
                conv = be[-1];
                be -= 2;
            }
            while (b < be && *b == ' ')
                b++;
            while (be > b && be[-1] == ' ')
                be--;
            const char *text = t->sval->data;
            if (b == be)
                star_fail_at(vm, t->line, fstring_col(t, (size_t)(e - text)),
                             "f-string: empty expression in {}");
            size_t ntok;
            struct star_token *toks = star_lex(vm, b, (size_t)(be - b), t->line,
                                               fstring_col(t, (size_t)(b - text)), &ntok);
            struct parser sub = {.vm = vm, .toks = toks, .n = ntok, .depth = ps->depth};
            struct ast_node *ex = parse_expr(&sub);
            accept(&sub, T_NEWLINE);
            if (peek_kind(&sub) != T_EOF)
                fail_tok(&sub, peek(&sub), "expected '}' in f-string");
            struct ast_node *p = node(ps, A_UNARY, t);
            p->op = (uint8_t)conv;
            p->u.x.a = ex;
            vec_push(vm, &parts, p);
            s = e + 1;
        } else {
            star_buf_addc(vm, &lit, *s++);
        }
    }
    if (lit.len > 0) {
        struct ast_node *l = node(ps, A_STRING, t);
        l->u.sval = star_str_new(vm, lit.data, lit.len);
        vec_push(vm, &parts, l);
    }
    n->u.list = vec_list(&parts);
    return n;
}

/* ---- statements ---- */

static struct ast_list parse_suite(struct parser *ps);
static void parse_stmt(struct parser *ps, struct vec *out);

static struct ast_func *
parse_params(struct parser *ps, int close)
{
    struct ast_func *f = star_alloc(ps->vm, sizeof *f);
    f->varargs = -1;
    f->kwargs = -1;
    struct ast_param *params = NULL;
    size_t n = 0, cap = 0;
    bool star_seen = false, dflt_seen = false;
    struct star_token *bare_star = NULL; /* a lone '*' not yet followed by a name */
    while (peek_kind(ps) != close) {
        struct star_token *t = peek(ps);
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            struct ast_param *tmp = star_alloc(ps->vm, cap * sizeof *tmp);
            if (n > 0)
                memcpy(tmp, params, n * sizeof *tmp);
            params = tmp;
        }
        if (f->kwargs >= 0)
            star_fail_at(ps->vm, t->line, t->col, "parameter after **kwargs");
        if (accept(ps, T_STARSTAR)) {
            if (bare_star)
                star_fail_at(ps->vm, t->line, t->col, "`*` must be followed by named parameter");
            struct ast_param *p = &params[n];
            p->kind = PARAM_STARSTAR;
            p->name = expect(ps, T_NAME, "expected a name after '**'")->sval;
            f->kwargs = (int)n++;
        } else if (accept(ps, T_STAR)) {
            if (star_seen)
                star_fail_at(ps->vm, t->line, t->col, "multiple * parameters");
            star_seen = true;
            if (peek_kind(ps) == T_NAME) {
                struct ast_param *p = &params[n];
                p->kind = PARAM_STAR;
                p->name = advance(ps)->sval;
                f->varargs = (int)n++;
            } else {
                bare_star = t;
            }
        } else {
            bare_star = NULL;
            struct ast_param *p = &params[n];
            p->kind = PARAM_NORMAL;
            p->name = expect(ps, T_NAME, "expected a parameter name")->sval;
            if (accept(ps, T_ASSIGN)) {
                p->dflt = parse_test(ps);
                dflt_seen = true;
            } else if (dflt_seen && !star_seen) {
                star_fail_at(ps->vm, t->line, t->col,
                             "required parameter '%s' follows an optional one", p->name->data);
            }
            n++;
            if (star_seen)
                f->nkwonly++;
            else
                f->npos++;
        }
        for (size_t j = 0; j + 1 < n; j++)
            if (params[j].name == params[n - 1].name)
                star_fail_at(ps->vm, t->line, t->col, "duplicate parameter '%s'",
                             params[n - 1].name->data);
        if (!accept(ps, T_COMMA))
            break;
    }
    if (bare_star) /* Codex: a lone '*' needs keyword-only parameters after it */
        star_fail_at(ps->vm, bare_star->line, bare_star->col, "`*` parameter must not be last");
    /* Keep normal parameters first: positional, keyword-only, then *args, **kwargs. */
    struct ast_param *ordered = star_alloc(ps->vm, (n ? n : 1) * sizeof *ordered);
    size_t k = 0;
    for (size_t j = 0; j < n; j++)
        if (params[j].kind == PARAM_NORMAL)
            ordered[k++] = params[j];
    int va = f->varargs, kw = f->kwargs;
    if (va >= 0) {
        f->varargs = (int)k;
        ordered[k++] = params[va];
    }
    if (kw >= 0) {
        f->kwargs = (int)k;
        ordered[k++] = params[kw];
    }
    f->params = ordered;
    f->nparams = n;
    return f;
}

static struct ast_node *
parse_def(struct parser *ps)
{
    struct star_token *t = advance(ps);
    struct star_token *name = expect(ps, T_NAME, "expected a function name after 'def'");
    expect(ps, T_LPAREN, "expected '(' after the function name");
    struct ast_func *f = parse_params(ps, T_RPAREN);
    f->name = name->sval;
    expect(ps, T_RPAREN, "expected ')' after the parameters");
    expect(ps, T_COLON, "expected ':' after the parameters");
    bool was = ps->in_func;
    unsigned loop = ps->in_loop;
    ps->in_func = true;
    ps->in_loop = 0;
    f->body = parse_suite(ps);
    ps->in_func = was;
    ps->in_loop = loop;
    struct ast_node *n = node(ps, A_DEF, t);
    struct ast_node *id = node(ps, A_IDENT, name);
    id->u.ident.name = name->sval;
    n->u.def.func = f;
    n->u.def.target = id;
    return n;
}

static struct ast_node *
parse_if(struct parser *ps)
{
    struct star_token *t = advance(ps);
    struct ast_node *n = node(ps, A_IF, t);
    n->u.ifs.cond = parse_test(ps);
    expect(ps, T_COLON, "expected ':' after the condition");
    n->u.ifs.then = parse_suite(ps);
    if (peek_kind(ps) == T_ELIF) {
        struct vec v = {0};
        vec_push(ps->vm, &v, parse_if(ps));
        n->u.ifs.els = vec_list(&v);
    } else if (accept(ps, T_ELSE)) {
        expect(ps, T_COLON, "expected ':' after 'else'");
        n->u.ifs.els = parse_suite(ps);
    }
    return n;
}

static struct ast_node *
parse_loop_vars(struct parser *ps)
{
    struct star_token *t = peek(ps);
    struct ast_node *first = parse_primary(ps);
    if (peek_kind(ps) != T_COMMA)
        return first;
    struct vec v = {0};
    vec_push(ps->vm, &v, first);
    while (accept(ps, T_COMMA) && peek_kind(ps) != T_IN)
        vec_push(ps->vm, &v, parse_primary(ps));
    struct ast_node *tup = node(ps, A_TUPLE, t);
    tup->u.list = vec_list(&v);
    return tup;
}

static struct ast_node *
parse_for(struct parser *ps)
{
    struct star_token *t = advance(ps);
    struct ast_node *n = node(ps, A_FOR, t);
    n->u.fors.target = parse_loop_vars(ps);
    expect(ps, T_IN, "expected 'in' after the loop variables");
    n->u.fors.iter = parse_expr(ps);
    expect(ps, T_COLON, "expected ':' after the loop");
    ps->in_loop++;
    n->u.fors.body = parse_suite(ps);
    ps->in_loop--;
    return n;
}

static void
check_target(struct parser *ps, struct ast_node *e)
{
    switch (e->kind) {
    case A_IDENT:
    case A_INDEX:
        return;
    case A_LIST:
    case A_TUPLE:
        if (e->u.list.n == 0)
            break;
        for (size_t i = 0; i < e->u.list.n; i++)
            check_target(ps, e->u.list.items[i]);
        return;
    default:
        break;
    }
    star_fail_at(ps->vm, e->line, e->col, "cannot assign to this expression");
}

static struct ast_node *
parse_small(struct parser *ps)
{
    struct star_token *t = peek(ps);
    struct ast_node *n;
    switch (t->kind) {
    case T_RETURN:
        advance(ps);
        if (!ps->in_func)
            star_fail_at(ps->vm, t->line, t->col, "'return' outside a function");
        n = node(ps, A_RETURN, t);
        if (peek_kind(ps) != T_NEWLINE && peek_kind(ps) != T_SEMI && peek_kind(ps) != T_EOF)
            n->u.x.a = parse_expr(ps);
        return n;
    case T_BREAK:
    case T_CONTINUE:
        advance(ps);
        if (ps->in_loop == 0)
            star_fail_at(ps->vm, t->line, t->col, "'%s' outside a loop",
                         t->kind == T_BREAK ? "break" : "continue");
        return node(ps, t->kind == T_BREAK ? A_BREAK : A_CONTINUE, t);
    case T_PASS:
        advance(ps);
        return node(ps, A_PASS, t);
    case T_LOAD:
        star_fail_at(ps->vm, t->line, t->col, "load() is not supported in .rules files");
    default:
        break;
    }
    struct ast_node *lhs = parse_expr(ps);
    struct star_token *op = peek(ps);
    if (op->kind == T_ASSIGN) {
        advance(ps);
        check_target(ps, lhs);
        n = node(ps, A_ASSIGN, op);
        n->u.x.a = lhs;
        n->u.x.b = parse_expr(ps);
        return n;
    }
    if (op->kind >= T_PLUS_EQ && op->kind <= T_GTGT_EQ) {
        advance(ps);
        if (lhs->kind != A_IDENT && lhs->kind != A_INDEX)
            star_fail_at(ps->vm, lhs->line, lhs->col,
                         "augmented assignment needs a name or an index");
        n = node(ps, A_AUGASSIGN, op);
        set_start(n, lhs); /* Codex reports the statement where it starts */
        static const uint8_t base[] = {T_PLUS, T_MINUS, T_STAR,  T_SLASH, T_SLASHSLASH, T_PERCENT,
                                       T_PIPE, T_AMP,   T_CARET, T_LTLT,  T_GTGT};
        n->op = base[op->kind - T_PLUS_EQ];
        n->u.x.a = lhs;
        n->u.x.b = parse_expr(ps);
        return n;
    }
    n = node(ps, A_EXPR_STMT, t);
    n->u.x.a = lhs;
    return n;
}

static void
parse_simple(struct parser *ps, struct vec *out)
{
    for (;;) {
        vec_push(ps->vm, out, parse_small(ps));
        if (!accept(ps, T_SEMI))
            break;
        if (peek_kind(ps) == T_NEWLINE || peek_kind(ps) == T_EOF)
            break;
    }
    if (peek_kind(ps) != T_EOF)
        expect(ps, T_NEWLINE, "expected a newline after the statement");
}

static void
parse_stmt(struct parser *ps, struct vec *out)
{
    struct star_token *t = peek(ps);
    switch (t->kind) {
    case T_DEF:
        vec_push(ps->vm, out, parse_def(ps));
        return;
    case T_IF:
        vec_push(ps->vm, out, parse_if(ps));
        return;
    case T_FOR:
        vec_push(ps->vm, out, parse_for(ps));
        return;
    case T_WHILE:
        star_fail_at(ps->vm, t->line, t->col,
                     "'while' loops are not allowed in Starlark: use 'for' over a range");
    case T_INDENT:
        star_fail_at(ps->vm, t->line, t->col, "unexpected indentation");
    case T_CALL_LITERAL: {
        /* What parse_simple makes of it: an expression statement, the
         * call, then the newline the lexer put after it. */
        advance(ps);
        struct ast_node *n = node(ps, A_EXPR_STMT, t);
        n->u.x.a = literal_call(ps, t);
        vec_push(ps->vm, out, n);
        expect(ps, T_NEWLINE, "expected a newline after the statement");
        return;
    }
    default:
        parse_simple(ps, out);
    }
}

static struct ast_list
parse_suite(struct parser *ps)
{
    struct vec v = {0};
    struct star_token *t = peek(ps);
    enter(ps, t);
    if (accept(ps, T_NEWLINE)) {
        expect(ps, T_INDENT, "expected an indented block");
        while (peek_kind(ps) != T_OUTDENT && peek_kind(ps) != T_EOF)
            parse_stmt(ps, &v);
        accept(ps, T_OUTDENT);
    } else {
        parse_simple(ps, &v);
    }
    ps->depth--;
    return vec_list(&v);
}

/* ---- resolution ---- */

struct block {
    struct block *parent;
    struct star_namemap names;
};

struct scope {
    struct scope *parent;
    struct ast_func *func; /* NULL for the file's top level */
    struct star_namemap locals, frees;
    uint32_t *nlocals;
    struct block *blocks;
    struct vec captures;
    /* Locals a nested function captures become cells: cell_slots[i] is
     * the slot of cell i, and cell_of_slot[slot] is i + 1 (0: a plain
     * local; slots from cap_of_slot on are all plain), so finding a cell
     * never walks a list, however many a hostile file makes.
     * Identifiers resolved as plain locals before their slot became a
     * cell are in local_refs, rewritten at the end. */
    uint32_t *cell_slots, *cell_of_slot;
    uint32_t ncells, cap_cells, cap_of_slot;
    struct vec local_refs;
};

/* A name a streamed statement used before any statement bound it: a
 * later one may still bind it (it is a global then), else the file fails
 * as undefined there. */
struct forward_use {
    struct star_str *name;
    uint32_t line, col;
    bool bound;
};

struct resolver {
    struct star_vm *vm;
    const struct star_namemap *predeclared;
    struct star_namemap globals;
    struct vec global_names;
    /* Streaming (star_parse_begin) only. */
    bool streaming;
    struct star_namemap used_predeclared; /* names resolved as built-ins so far */
    struct star_namemap forward;          /* name -> index in forward_uses */
    struct vec forward_uses;              /* struct forward_use *, in order of first use */
    bool rebinds_predeclared;
};

/* Binds name as a global of the file: when the statement binding it is
 * resolved (collect_target), or, streaming, when a statement uses it
 * before any bound it (used = true). */
static void
bind_global_use(struct resolver *r, struct star_str *name, bool used)
{
    if (r->streaming && !used) {
        if (star_namemap_get(&r->used_predeclared, name) >= 0)
            r->rebinds_predeclared = true;
        int f = star_namemap_get(&r->forward, name);
        if (f >= 0)
            ((struct forward_use *)r->forward_uses.items[f])->bound = true;
    }
    if (star_namemap_get(&r->globals, name) >= 0)
        return;
    star_namemap_put(r->vm, &r->globals, name, (int)r->global_names.n);
    vec_push(r->vm, &r->global_names, name);
}

static void
bind_global(struct resolver *r, struct star_str *name)
{
    bind_global_use(r, name, false);
}

/* Collects the names bound by target into the scope (local or global). */
static void
collect_target(struct resolver *r, struct scope *s, struct ast_node *t)
{
    if (t->kind == A_IDENT) {
        if (s->func == NULL)
            bind_global(r, t->u.ident.name);
        else if (star_namemap_get(&s->locals, t->u.ident.name) < 0)
            star_namemap_put(r->vm, &s->locals, t->u.ident.name, (int)(*s->nlocals)++);
    } else if (t->kind == A_LIST || t->kind == A_TUPLE) {
        for (size_t i = 0; i < t->u.list.n; i++)
            collect_target(r, s, t->u.list.items[i]);
    }
}

static void
collect_block(struct resolver *r, struct scope *s, struct ast_list *body)
{
    for (size_t i = 0; i < body->n; i++) {
        struct ast_node *st = body->items[i];
        switch (st->kind) {
        case A_ASSIGN:
        case A_AUGASSIGN:
            collect_target(r, s, st->u.x.a);
            break;
        case A_DEF:
            collect_target(r, s, st->u.def.target);
            break;
        case A_FOR:
            collect_target(r, s, st->u.fors.target);
            collect_block(r, s, &st->u.fors.body);
            break;
        case A_IF:
            collect_block(r, s, &st->u.ifs.then);
            collect_block(r, s, &st->u.ifs.els);
            break;
        default:
            break;
        }
    }
}

static void resolve_expr(struct resolver *r, struct scope *s, struct ast_node *e);
static void resolve_block(struct resolver *r, struct scope *s, struct ast_list *body);

/* The cell holding slot of s, or -1 while the slot is a plain local. */
static int
cell_of(const struct scope *s, uint32_t slot)
{
    return slot < s->cap_of_slot ? (int)s->cell_of_slot[slot] - 1 : -1;
}

/* Slot of s as a nested function captures it: a cell from now on. */
static uint32_t
make_cell(struct resolver *r, struct scope *s, uint32_t slot)
{
    int c = cell_of(s, slot);
    if (c >= 0)
        return (uint32_t)c;
    if (slot >= s->cap_of_slot) { /* zeroed by the arena: plain locals */
        uint32_t cap = s->cap_of_slot ? s->cap_of_slot : 8;
        while (cap <= slot)
            cap *= 2;
        uint32_t *t = star_alloc_array(r->vm, cap, sizeof *t);
        if (s->cap_of_slot > 0)
            memcpy(t, s->cell_of_slot, s->cap_of_slot * sizeof *t);
        s->cell_of_slot = t;
        s->cap_of_slot = cap;
    }
    s->cell_of_slot[slot] = s->ncells + 1;
    if (s->ncells == s->cap_cells) {
        uint32_t cap = s->cap_cells ? s->cap_cells * 2 : 4;
        uint32_t *t = star_alloc_array(r->vm, cap, sizeof *t);
        if (s->ncells > 0)
            memcpy(t, s->cell_slots, s->ncells * sizeof *t);
        s->cell_slots = t;
        s->cap_cells = cap;
    }
    s->cell_slots[s->ncells] = slot;
    return s->ncells++;
}

/* Slot v of s: its cell when it has one, else the plain local. */
static int
local_or_cell(const struct scope *s, int v, uint32_t *index)
{
    int c = s->ncells > 0 ? cell_of(s, (uint32_t)v) : -1;
    if (c >= 0) {
        *index = (uint32_t)c;
        return SCOPE_CELL;
    }
    *index = (uint32_t)v;
    return SCOPE_LOCAL;
}

/* Finds name as seen from scope s; returns the scope kind and sets *index. */
static int
lookup(struct resolver *r, struct scope *s, struct star_str *name, uint32_t *index)
{
    for (struct block *b = s->blocks; b != NULL; b = b->parent) {
        int v = star_namemap_get(&b->names, name);
        if (v >= 0)
            return local_or_cell(s, v, index);
    }
    if (s->func != NULL) {
        int v = star_namemap_get(&s->locals, name);
        if (v >= 0)
            return local_or_cell(s, v, index);
        v = star_namemap_get(&s->frees, name);
        if (v >= 0) {
            *index = (uint32_t)v;
            return SCOPE_FREE;
        }
        uint32_t pi;
        int ps = lookup(r, s->parent, name, &pi);
        if (ps == SCOPE_LOCAL) { /* shared with this function from now on */
            pi = make_cell(r, s->parent, pi);
            ps = SCOPE_CELL;
        }
        if (ps == SCOPE_CELL || ps == SCOPE_FREE) {
            struct ast_capture *c = star_alloc(r->vm, sizeof *c);
            c->scope = (uint8_t)ps;
            c->index = pi;
            *index = (uint32_t)s->captures.n;
            vec_push(r->vm, &s->captures, c);
            star_namemap_put(r->vm, &s->frees, name, (int)*index);
            return SCOPE_FREE;
        }
        *index = pi;
        return ps;
    }
    int v = star_namemap_get(&r->globals, name);
    if (v >= 0) {
        *index = (uint32_t)v;
        return SCOPE_GLOBAL;
    }
    v = star_namemap_get(r->predeclared, name);
    if (v >= 0) {
        if (r->streaming && star_namemap_get(&r->used_predeclared, name) < 0)
            star_namemap_put(r->vm, &r->used_predeclared, name, 1);
        *index = (uint32_t)v;
        return SCOPE_UNIVERSE;
    }
    return -1;
}

static void
resolve_ident(struct resolver *r, struct scope *s, struct ast_node *e)
{
    uint32_t idx = 0;
    int sc = lookup(r, s, e->u.ident.name, &idx);
    if (sc < 0 && r->streaming) {
        /* A later statement may bind it: a global not yet assigned. */
        struct forward_use *f = star_alloc(r->vm, sizeof *f);
        f->name = e->u.ident.name;
        f->line = e->line;
        f->col = e->col;
        star_namemap_put(r->vm, &r->forward, f->name, (int)r->forward_uses.n);
        vec_push(r->vm, &r->forward_uses, f);
        bind_global_use(r, f->name, true);
        sc = lookup(r, s, e->u.ident.name, &idx);
    }
    if (sc < 0)
        star_fail_at(r->vm, e->line, e->col, "undefined: %s is not defined", e->u.ident.name->data);
    e->u.ident.scope = (uint8_t)sc;
    e->u.ident.index = idx;
    if (sc == SCOPE_LOCAL)
        vec_push(r->vm, &s->local_refs, e);
}

/* At the end of a function (or top-level statement): its identifiers
 * resolved as plain locals before a nested function made their slot a
 * cell now name the cell. */
static void
finish_cells(struct scope *s)
{
    if (s->ncells == 0)
        return;
    for (size_t i = 0; i < s->local_refs.n; i++) {
        struct ast_node *e = s->local_refs.items[i];
        int c = cell_of(s, e->u.ident.index);
        if (c >= 0) {
            e->u.ident.scope = SCOPE_CELL;
            e->u.ident.index = (uint32_t)c;
        }
    }
}

static void
resolve_list(struct resolver *r, struct scope *s, struct ast_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        resolve_expr(r, s, l->items[i]);
}

/* Binds the comprehension's loop variables in a new block. */
static void
bind_block_target(struct resolver *r, struct scope *s, struct block *b, struct ast_node *t)
{
    if (t->kind == A_IDENT) {
        int v = star_namemap_get(&b->names, t->u.ident.name);
        if (v < 0) {
            v = (int)(*s->nlocals)++;
            star_namemap_put(r->vm, &b->names, t->u.ident.name, v);
        }
    } else if (t->kind == A_LIST || t->kind == A_TUPLE) {
        for (size_t i = 0; i < t->u.list.n; i++)
            bind_block_target(r, s, b, t->u.list.items[i]);
    } else {
        star_fail_at(r->vm, t->line, t->col, "a comprehension variable must be a name");
    }
}

/* A comprehension is one block holding the variables of all its for
 * clauses, as in Codex: only the first iterable is outside it (the
 * parser starts every comprehension with a for clause), so a later
 * clause, or an if before a for, reads the comprehension's variable of
 * that name even before that for assigns it. */
static void
resolve_comp(struct resolver *r, struct scope *s, struct ast_node *e)
{
    struct block *saved = s->blocks;
    resolve_expr(r, s, e->u.comp.clauses[0].expr);
    struct block *b = star_alloc(r->vm, sizeof *b);
    b->parent = s->blocks;
    for (size_t i = 0; i < e->u.comp.nclauses; i++)
        if (e->u.comp.clauses[i].is_for)
            bind_block_target(r, s, b, e->u.comp.clauses[i].target);
    s->blocks = b;
    for (size_t i = 0; i < e->u.comp.nclauses; i++) {
        struct ast_clause *c = &e->u.comp.clauses[i];
        if (i > 0)
            resolve_expr(r, s, c->expr);
        if (c->is_for)
            resolve_expr(r, s, c->target);
    }
    resolve_expr(r, s, e->u.comp.body);
    if (e->u.comp.val)
        resolve_expr(r, s, e->u.comp.val);
    s->blocks = saved;
}

static void
resolve_func(struct resolver *r, struct scope *s, struct ast_func *f)
{
    for (size_t i = 0; i < f->nparams; i++)
        if (f->params[i].dflt)
            resolve_expr(r, s, f->params[i].dflt);
    struct scope fs = {.parent = s, .func = f, .nlocals = &f->nlocals};
    for (size_t i = 0; i < f->nparams; i++) {
        f->params[i].slot = f->nlocals;
        star_namemap_put(r->vm, &fs.locals, f->params[i].name, (int)f->nlocals++);
    }
    if (f->expr != NULL) {
        resolve_expr(r, &fs, f->expr);
    } else {
        collect_block(r, &fs, &f->body);
        resolve_block(r, &fs, &f->body);
    }
    finish_cells(&fs);
    f->cell_slots = fs.cell_slots;
    f->ncells = fs.ncells;
    f->ncaptures = fs.captures.n;
    f->captures = star_alloc(r->vm, (fs.captures.n ? fs.captures.n : 1) * sizeof *f->captures);
    for (size_t i = 0; i < fs.captures.n; i++)
        f->captures[i] = *(struct ast_capture *)fs.captures.items[i];
}

static void
resolve_expr(struct resolver *r, struct scope *s, struct ast_node *e)
{
    if (e == NULL)
        return;
    switch (e->kind) {
    case A_IDENT:
        resolve_ident(r, s, e);
        break;
    case A_INT:
    case A_FLOAT:
    case A_BIGINT:
    case A_STRING:
        break;
    case A_FSTRING:
    case A_LIST:
    case A_TUPLE:
        resolve_list(r, s, &e->u.list);
        break;
    case A_DICT:
        resolve_list(r, s, &e->u.dict.keys);
        resolve_list(r, s, &e->u.dict.vals);
        break;
    case A_COMP:
        resolve_comp(r, s, e);
        break;
    case A_DOT:
        resolve_expr(r, s, e->u.dot.obj);
        break;
    case A_CALL:
        resolve_expr(r, s, e->u.call.fn);
        if (e->u.call.literal) /* strings only: the name is all there is */
            break;
        for (size_t i = 0; i < e->u.call.nargs; i++)
            resolve_expr(r, s, e->u.call.args[i].value);
        break;
    case A_LAMBDA:
        resolve_func(r, s, e->u.def.func);
        break;
    default: /* unary, binary, and, or, not, cond, index, slice */
        resolve_expr(r, s, e->u.x.a);
        resolve_expr(r, s, e->u.x.b);
        resolve_expr(r, s, e->u.x.c);
        resolve_expr(r, s, e->u.x.d);
        break;
    }
}

static void
resolve_block(struct resolver *r, struct scope *s, struct ast_list *body)
{
    for (size_t i = 0; i < body->n; i++) {
        struct ast_node *st = body->items[i];
        switch (st->kind) {
        case A_EXPR_STMT:
        case A_RETURN:
            resolve_expr(r, s, st->u.x.a);
            break;
        case A_ASSIGN:
        case A_AUGASSIGN:
            resolve_expr(r, s, st->u.x.b);
            resolve_expr(r, s, st->u.x.a);
            break;
        case A_DEF:
            resolve_func(r, s, st->u.def.func);
            resolve_expr(r, s, st->u.def.target);
            break;
        case A_IF:
            resolve_expr(r, s, st->u.ifs.cond);
            resolve_block(r, s, &st->u.ifs.then);
            resolve_block(r, s, &st->u.ifs.els);
            break;
        case A_FOR:
            resolve_expr(r, s, st->u.fors.iter);
            resolve_expr(r, s, st->u.fors.target);
            resolve_block(r, s, &st->u.fors.body);
            break;
        default:
            break;
        }
    }
}

struct ast_module *
star_parse(struct star_vm *vm, const struct star_namemap *predeclared, const char *src, size_t len)
{
    size_t ntok;
    struct star_lexer *lx = star_lex_begin(vm, src, len);
    struct star_token *toks = star_lex_next(lx, &ntok);
    struct parser ps = {.vm = vm, .toks = toks, .n = ntok};
    struct vec body = {0};
    for (;;) {
        /* Between top-level statements nothing points into the window. */
        if (ps.i >= ps.n) {
            ps.toks = star_lex_next(lx, &ps.n);
            ps.i = 0;
        }
        if (peek_kind(&ps) == T_EOF)
            break;
        if (accept(&ps, T_NEWLINE))
            continue;
        parse_stmt(&ps, &body);
    }
    struct ast_module *m = star_alloc(vm, sizeof *m);
    m->body = vec_list(&body);

    struct resolver r = {.vm = vm, .predeclared = predeclared};
    struct scope top = {.nlocals = &m->nlocals};
    collect_block(&r, &top, &m->body);
    resolve_block(&r, &top, &m->body);
    finish_cells(&top);
    m->ncells = top.ncells;
    m->nglobals = (uint32_t)r.global_names.n;
    m->global_names = (struct star_str **)r.global_names.items;
    return m;
}

/* ---- a statement at a time ---- */

struct star_stream {
    struct parser ps;
    struct star_lexer *lx;
    struct resolver r;
    /* The arena as it was before the current window was lexed, and
     * whether every statement of the window ran and left nothing behind
     * (star_parse_ran): then the window's tokens, trees and values go
     * before the next is lexed. */
    struct star_mark mark;
    bool transient;
};

/* Lexes the next window, first giving back the last one's memory when
 * nothing in it is still needed. */
static void
next_window(struct star_stream *st)
{
    if (st->transient)
        star_release(st->ps.vm, &st->mark);
    star_mark(st->ps.vm, &st->mark);
    st->transient = true;
    st->ps.toks = star_lex_next(st->lx, &st->ps.n);
    st->ps.i = 0;
}

struct star_stream *
star_parse_begin(struct star_vm *vm, const struct star_namemap *predeclared, const char *src,
                 size_t len)
{
    struct star_stream *st = star_alloc(vm, sizeof *st);
    st->lx = star_lex_begin(vm, src, len);
    st->ps.vm = vm;
    next_window(st);
    st->r.vm = vm;
    st->r.predeclared = predeclared;
    st->r.streaming = true;
    return st;
}

struct ast_list
star_parse_next(struct star_stream *st, uint32_t *nlocals, uint32_t *ncells)
{
    struct parser *ps = &st->ps;
    struct vec body = {0};
    for (;;) {
        /* Between top-level statements nothing points into the window. */
        if (ps->i >= ps->n)
            next_window(st);
        if (peek_kind(ps) == T_EOF)
            break;
        if (accept(ps, T_NEWLINE))
            continue;
        parse_stmt(ps, &body);
        break;
    }
    struct ast_list l = vec_list(&body);
    /* Top-level comprehension variables: slots of this statement only. */
    *nlocals = 0;
    struct scope top = {.nlocals = nlocals};
    collect_block(&st->r, &top, &l);
    resolve_block(&st->r, &top, &l);
    finish_cells(&top);
    *ncells = top.ncells;
    return l;
}

void
star_parse_ran(struct star_stream *st, bool transient)
{
    st->transient = st->transient && transient;
}

uint32_t
star_parse_nglobals(const struct star_stream *st)
{
    return (uint32_t)st->r.global_names.n;
}

bool
star_parse_rebinds_predeclared(const struct star_stream *st)
{
    return st->r.rebinds_predeclared;
}

void
star_parse_end(struct star_stream *st)
{
    for (size_t i = 0; i < st->r.forward_uses.n; i++) {
        struct forward_use *f = st->r.forward_uses.items[i];
        if (!f->bound)
            star_fail_at(st->r.vm, f->line, f->col, "undefined: %s is not defined", f->name->data);
    }
}
