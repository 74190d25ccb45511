#include "starlark/parser.h"
#include "starlark/unicode.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "starlark/bigint.h"
#include "starlark/vm.h"

struct parser {
    struct star_vm *vm;
    struct star_token *toks;
    size_t n, i;
    uint64_t nest;   /* the nesting budget expressions used (nest_enter) */
    uint64_t blocks; /* the budget nested blocks used */
    bool in_func;
    unsigned in_loop;
    /* The first mistake Codex finds only once the whole file is read
     * (defer_error), raised when parsing is done; NULL when none. */
    const char *deferred;
    uint32_t deferred_line, deferred_col;
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

/*
 * Notes a mistake that Codex reports only after reading the whole file
 * (a 'return' outside a function, a duplicate parameter, arguments out of
 * order, load()): parsing goes on, so that a syntax error anywhere in the
 * file is reported before it, as in Codex; the first is raised at the end
 * (raise_deferred).
 */
__attribute__((format(printf, 4, 5))) static void
defer_error(struct parser *ps, uint32_t line, uint32_t col, const char *fmt, ...)
{
    if (ps->deferred != NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *msg = star_alloc(ps->vm, (size_t)(n > 0 ? n : 0) + 1);
    star_keep(ps->vm); /* the window's memory may be given back */
    va_start(ap, fmt);
    vsnprintf(msg, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
    va_end(ap);
    ps->deferred = msg;
    ps->deferred_line = line;
    ps->deferred_col = col;
}

static void
raise_deferred(struct parser *ps)
{
    if (ps->deferred != NULL)
        star_fail_at(ps->vm, ps->deferred_line, ps->deferred_col, "%s", ps->deferred);
}

/* A syntax error at t; at a lexical error (T_ERROR), that error: as in
 * Codex, a bad token is reported when the parser cannot go on at it,
 * and a decision made by looking at it comes first (x = 1, $ is a
 * trailing comma). */
_Noreturn static void
fail_tok(struct parser *ps, struct star_token *t, const char *what)
{
    if (t->kind == T_ERROR)
        star_fail_again(ps->vm, t->sval->data);
    if (t->kind == T_NAME || t->kind == T_INT || t->kind == T_FLOAT || t->kind == T_RESERVED)
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

/*
 * How deep code may nest: as deep as Codex 0.169 takes it.  Its stack
 * overflows at a different depth for each construct (the STAR_NEST_*
 * limits, each measured alone); a mix is charged against one budget, each
 * level of a construct 1/limit of it, as an approximation of the stack
 * Codex uses.  The parser charges what it nests while parsing (brackets,
 * prefix operators, conditionals, lambdas), the resolver the tree that
 * was built (where a left-deep chain like 1+1+... nests every operator),
 * each against its own budget; nested blocks have a budget of their own
 * (an expression in a def body may nest as deep as one outside).
 */
enum nest_kind {
    NEST_NONE,
    NEST_OPERATOR,
    NEST_LIST,
    NEST_DICT,
    NEST_CALL_ARGS,
    NEST_LAMBDA,
    NEST_COMP,
    NEST_PAREN,
    NEST_IF,
    NEST_DEF,
};

/* Large enough that budget / limit * (limit + 1) exceeds it for any limit
 * up to its square root: each construct alone stops exactly past its limit. */
#define NEST_BUDGET 1000000000u

static const struct {
    uint32_t cost;
    unsigned limit;
    const char *what;
} nest_kinds[] = {
    [NEST_NONE] = {0, 0, ""},
    [NEST_OPERATOR] = {NEST_BUDGET / STAR_NEST_OPERATORS, STAR_NEST_OPERATORS,
                       "operators, indexes and attributes"},
    [NEST_LIST] = {NEST_BUDGET / STAR_NEST_LISTS, STAR_NEST_LISTS, "lists or tuples"},
    [NEST_DICT] = {NEST_BUDGET / STAR_NEST_DICTS, STAR_NEST_DICTS, "dicts"},
    /* A call is an operator on what it calls, and its arguments nest
     * deeper: the two together cost 1/STAR_NEST_CALLS. */
    [NEST_CALL_ARGS] = {NEST_BUDGET / STAR_NEST_CALLS - NEST_BUDGET / STAR_NEST_OPERATORS,
                        STAR_NEST_CALLS, "calls"},
    [NEST_LAMBDA] = {NEST_BUDGET / STAR_NEST_LAMBDAS, STAR_NEST_LAMBDAS, "lambdas"},
    [NEST_COMP] = {NEST_BUDGET / STAR_NEST_COMPS, STAR_NEST_COMPS, "comprehensions"},
    [NEST_PAREN] = {NEST_BUDGET / STAR_NEST_PARENS, STAR_NEST_PARENS, "parentheses"},
    [NEST_IF] = {NEST_BUDGET / STAR_NEST_IFS, STAR_NEST_IFS, "if blocks"},
    [NEST_DEF] = {NEST_BUDGET / STAR_NEST_DEFS, STAR_NEST_DEFS, "def blocks"},
};

/* Charges one level of k against *nest; fails at line:col past the
 * budget.  nest_leave gives it back. */
static void
nest_enter(struct star_vm *vm, uint64_t *nest, enum nest_kind k, uint32_t line, uint32_t col)
{
    star_stack_check(vm, line, col);
    uint32_t c = nest_kinds[k].cost;
    if (*nest + c > NEST_BUDGET)
        star_fail_at(vm, line, col,
                     "nested too deeply: Codex crashes on more than %u nested %s "
                     "(fewer mixed with other nesting)",
                     nest_kinds[k].limit, nest_kinds[k].what);
    *nest += c;
}

static void
nest_leave(uint64_t *nest, enum nest_kind k)
{
    *nest -= nest_kinds[k].cost;
}

static void
enter(struct parser *ps, struct star_token *at, enum nest_kind k)
{
    nest_enter(ps->vm, &ps->nest, k, at->line, at->col);
}

static void
leave(struct parser *ps, enum nest_kind k)
{
    nest_leave(&ps->nest, k);
}

/* ---- expressions ---- */

static struct ast_node *parse_test(struct parser *ps);
static struct ast_node *parse_expr(struct parser *ps);
static struct ast_node *parse_or(struct parser *ps, struct ast_node *first);
static struct ast_node *parse_primary(struct parser *ps);
static struct ast_func *parse_params(struct parser *ps, int close);
static struct ast_node *parse_fstring(struct parser *ps, struct star_token *t);

/* Codex refuses a tuple without parentheses that ends in a comma (x = 1,
 * and for a, in ...), where it starts. */
static _Noreturn void
trailing_comma(struct parser *ps, const struct star_token *start)
{
    star_fail_at(ps->vm, start->line, start->col,
                 "unparenthesized tuple with trailing comma: write (x,) for a tuple of one");
}

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

/*
 * What may be assigned to, as Codex checks it when it reads the file: a
 * name, an attribute, an index, or a list or tuple of those (empty ones
 * too).  An attribute fails only when it is assigned (no value has one to
 * set), so a function that would do it can still be defined.
 */
static void
check_target(struct parser *ps, struct ast_node *e)
{
    star_stack_check(ps->vm, e->line, e->col);
    switch (e->kind) {
    case A_IDENT:
    case A_INDEX:
    case A_DOT:
        return;
    case A_LIST:
    case A_TUPLE:
        for (size_t i = 0; i < e->u.list.n; i++)
            check_target(ps, e->u.list.items[i]);
        return;
    default:
        star_fail_at(ps->vm, e->line, e->col,
                     "left-hand-side of assignment must take the form `a`, `a.b` or `a[b]`");
    }
}

/* The variables of a for loop or a comprehension's for clause; the
 * caller checks them (check_target) once the loop or clause is read, as
 * Codex does. */
static struct ast_node *
parse_loop_vars(struct parser *ps)
{
    struct star_token *t = peek(ps);
    struct ast_node *e = parse_primary(ps);
    if (peek_kind(ps) == T_COMMA) {
        struct vec v = {0};
        vec_push(ps->vm, &v, e);
        while (accept(ps, T_COMMA)) {
            if (!starts_expr(peek_kind(ps)))
                trailing_comma(ps, t);
            vec_push(ps->vm, &v, parse_primary(ps));
        }
        e = node(ps, A_TUPLE, t);
        e->u.list = vec_list(&v);
    }
    return e;
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
    size_t ncl = 0, cap = 0, nfor = 0;
    while (peek_kind(ps) == T_FOR || peek_kind(ps) == T_IF) {
        if (ncl == cap) {
            cap = cap ? cap * 2 : 4;
            struct ast_clause *t = star_alloc(ps->vm, cap * sizeof *t);
            if (ncl > 0)
                memcpy(t, cl, ncl * sizeof *t);
            cl = t;
        }
        struct ast_clause *c = &cl[ncl++];
        if (peek_kind(ps) == T_FOR && ++nfor > STAR_NEST_COMP_FORS) {
            struct star_token *t = peek(ps);
            star_fail_at(ps->vm, t->line, t->col,
                         "nested too deeply: Codex crashes on more than %d `for` clauses in a "
                         "comprehension",
                         STAR_NEST_COMP_FORS);
        }
        if (accept(ps, T_FOR)) {
            c->is_for = true;
            c->target = parse_loop_vars(ps);
            expect(ps, T_IN, "expected 'in' in comprehension");
            c->expr = parse_or(ps, NULL);
            check_target(ps, c->target);
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
    struct ast_node *n;
    enter(ps, open, NEST_LIST);
    if (peek_kind(ps) != T_RBRACK) {
        struct ast_node *first = parse_test(ps);
        if (peek_kind(ps) == T_FOR) {
            n = parse_comp(ps, open, first, NULL, T_RBRACK);
            leave(ps, NEST_LIST);
            return n;
        }
        vec_push(ps->vm, &v, first);
        while (accept(ps, T_COMMA) && peek_kind(ps) != T_RBRACK)
            vec_push(ps->vm, &v, parse_test(ps));
    }
    expect(ps, T_RBRACK, "expected ',' or ']' in list");
    leave(ps, NEST_LIST);
    n = node(ps, A_LIST, open);
    n->u.list = vec_list(&v);
    return n;
}

static struct ast_node *
parse_dict_or_comp(struct parser *ps)
{
    struct star_token *open = advance(ps);
    struct vec keys = {0}, vals = {0};
    struct ast_node *n;
    enter(ps, open, NEST_DICT);
    if (peek_kind(ps) != T_RBRACE) {
        struct ast_node *k = parse_test(ps);
        expect(ps, T_COLON, "expected ':' after dict key");
        struct ast_node *val = parse_test(ps);
        if (peek_kind(ps) == T_FOR) {
            n = parse_comp(ps, open, k, val, T_RBRACE);
            leave(ps, NEST_DICT);
            return n;
        }
        vec_push(ps->vm, &keys, k);
        vec_push(ps->vm, &vals, val);
        while (accept(ps, T_COMMA) && peek_kind(ps) != T_RBRACE) {
            vec_push(ps->vm, &keys, parse_test(ps));
            expect(ps, T_COLON, "expected ':' after dict key");
            vec_push(ps->vm, &vals, parse_test(ps));
        }
    }
    expect(ps, T_RBRACE, "expected ',' or '}' in dict");
    leave(ps, NEST_DICT);
    n = node(ps, A_DICT, open);
    n->u.dict.keys = vec_list(&keys);
    n->u.dict.vals = vec_list(&vals);
    return n;
}

/*
 * Where the source of expression e starts: Codex reports a failing
 * operation at the start of its whole expression, and an operand's
 * expression starts at its own leftmost part (a parenthesised operand at
 * what is inside the parentheses).  A binary operation, an index, a slice,
 * a call and an attribute already carry their start (set here when they
 * were made), so a chain of them costs one step, not a walk down the
 * chain: `1+1+...` stays linear.
 */
static void
set_start(struct ast_node *n, const struct ast_node *e)
{
    for (;;) {
        switch (e->kind) {
        case A_AND:
        case A_OR:
        case A_COND:
            e = e->u.x.a;
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
    case T_BYTES:
        advance(ps);
        n = node(ps, A_BYTES, t);
        n->u.sval = t->sval;
        return n;
    case T_FSTRING:
        advance(ps);
        return parse_fstring(ps, t);
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
        enter(ps, t, NEST_PAREN);
        struct ast_node *e = parse_test(ps);
        if (peek_kind(ps) == T_COMMA) {
            struct vec v = {0};
            vec_push(ps->vm, &v, e);
            /* After a comma, Codex's parser takes a bytes literal for
             * the token after a trailing comma, so (1, b"a") is refused
             * at the b"a" while [1, b"a"] and (b"a", 1) are not. */
            while (accept(ps, T_COMMA) && peek_kind(ps) != T_RPAREN && peek_kind(ps) != T_BYTES)
                vec_push(ps->vm, &v, parse_test(ps));
            e = node(ps, A_TUPLE, t);
            e->u.list = vec_list(&v);
            set_start(e, e->u.list.items[0]); /* Codex: inside the parentheses */
        }
        expect(ps, T_RPAREN, "expected ')'");
        leave(ps, NEST_PAREN);
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
                defer_error(ps, first->line, first->col, "Multiple kwargs dictionary in arguments");
        } else if (accept(ps, T_STAR)) {
            a->kind = ARG_STAR;
            if (star_seen || starstar_seen)
                defer_error(ps, first->line, first->col, "Args array after another args or kwargs");
        } else if (peek_kind(ps) == T_NAME && ps->toks[ps->i + 1].kind == T_ASSIGN) {
            a->kind = ARG_KW;
            if (star_seen || starstar_seen)
                defer_error(ps, first->line, first->col, "named argument after *args or **kwargs");
            a->name = advance(ps)->sval;
            advance(ps);
            for (size_t j = 0; j + 1 < na; j++) {
                if (args[j].kind == ARG_KW && args[j].name == a->name) {
                    struct star_token *t = &ps->toks[ps->i - 2];
                    defer_error(ps, t->line, t->col, "keyword argument '%s' given twice",
                                a->name->data);
                }
            }
        } else {
            a->kind = ARG_POS;
            for (size_t j = 0; j + 1 < na; j++) {
                if (args[j].kind != ARG_POS) {
                    struct star_token *t = peek(ps);
                    defer_error(ps, t->line, t->col,
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
                lo = parse_test(ps);
            if (lo != NULL && accept(ps, T_COMMA)) {
                /* x[a, b], two indexes, as Codex reads it (not a tuple) */
                struct ast_node *x = node(ps, A_INDEX2, t);
                set_start(x, e);
                x->u.x.a = e;
                x->u.x.b = lo;
                x->u.x.c = parse_test(ps);
                expect(ps, T_RBRACK, "expected ']'");
                e = x;
                continue;
            }
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
        enter(ps, t, NEST_OPERATOR);
        advance(ps);
        struct ast_node *n = node(ps, A_UNARY, t);
        n->op = t->kind;
        n->u.x.a = parse_unary(ps);
        leave(ps, NEST_OPERATOR);
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
        /* The right operand nests at most one level per precedence (deeper
         * is through brackets); the resolver charges the tree. */
        star_stack_check(ps->vm, t->line, t->col);
        advance(ps);
        struct ast_node *n = node(ps, A_BINARY, t);
        set_start(n, lhs);
        n->op = t->kind;
        n->u.x.a = lhs;
        n->u.x.b = parse_binary(ps, p + 1, NULL);
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
        enter(ps, t, NEST_OPERATOR);
        advance(ps);
        struct ast_node *n = node(ps, A_NOT, t);
        n->u.x.a = parse_not(ps, NULL);
        leave(ps, NEST_OPERATOR);
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
    enter(ps, it, NEST_OPERATOR);
    struct ast_node *n = node(ps, A_COND, it);
    n->u.x.a = x;
    n->u.x.b = parse_or(ps, NULL);
    expect(ps, T_ELSE, "expected 'else' in conditional expression");
    n->u.x.c = parse_test(ps);
    leave(ps, NEST_OPERATOR);
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
    star_stack_check(ps->vm, t->line, t->col);
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
        enter(ps, t, NEST_LAMBDA);
        advance(ps);
        struct ast_node *n = node(ps, A_LAMBDA, t);
        struct ast_func *f = parse_params(ps, T_COLON);
        f->name = star_intern(ps->vm, "lambda", 6);
        expect(ps, T_COLON, "expected ':' after lambda parameters");
        f->expr = parse_test(ps);
        n->u.def.func = f;
        res = n;
        leave(ps, NEST_LAMBDA);
    } else {
        res = parse_conditional(ps, parse_or(ps, NULL));
    }
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
    /* A bytes literal does not start an item here: Codex's parser reads
     * the comma before one as a trailing comma (x = 1, b"a" is refused as
     * such). */
    while (accept(ps, T_COMMA)) {
        if (!starts_expr(peek_kind(ps)))
            trailing_comma(ps, t);
        vec_push(ps->vm, &v, parse_test(ps));
    }
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

/* The '!' of a conversion in the f-string expression b..e ("{x!r}"),
 * or NULL: a '!' outside quotes and not before '='. */
static const char *
fstring_bang(const char *b, const char *e)
{
    char quote = 0;
    for (const char *p = b; p < e; p++) {
        if (quote != 0) {
            if (*p == '\\' && p + 1 < e)
                p++;
            else if (*p == quote)
                quote = 0;
        } else if (*p == '"' || *p == '\'') {
            quote = *p;
        } else if (*p == '!' && (p + 1 == e || p[1] != '=')) {
            return p;
        }
    }
    return NULL;
}

/*
 * The conversion of the f-string expression b..e: 'r' or 's' after a '!'
 * ("{x!r}", spaces allowed after the '!' and before the '}'), or 0 when
 * there is none.  As in Codex, the '!' must follow the expression with
 * no space between, and the letter must be alone.
 */
static char
fstring_conversion(struct parser *ps, struct star_token *t, const char *b, const char *e)
{
    const char *bang = fstring_bang(b, e);
    if (bang == NULL)
        return 0;
    const char *text = t->sval->data;
    uint32_t col = fstring_col(t, (size_t)(bang - text));
    if (bang > b && bang[-1] == ' ')
        star_fail_at(ps->vm, t->line, col, "syntax error: invalid input '!' in f-string");
    const char *before = b;
    while (before < bang && *before == ' ')
        before++;
    if (before == bang)
        star_fail_at(ps->vm, t->line, col,
                     "syntax error: unexpected '!' in f-string, expected an expression");
    const char *p = bang + 1;
    while (p < e && *p == ' ')
        p++;
    const char *word = p;
    while (p < e && (isalnum((unsigned char)*p) || *p == '_'))
        p++;
    if (p - word != 1 || (*word != 'r' && *word != 's'))
        star_fail_at(ps->vm, t->line, col,
                     "invalid f-string conversion specifier, expected 's' or 'r'");
    char conv = *word;
    while (p < e && *p == ' ')
        p++;
    if (p < e)
        star_fail_at(ps->vm, t->line, fstring_col(t, (size_t)(p - text)),
                     "syntax error: unexpected '%c' after the conversion, expected '}' in f-string",
                     *p);
    return conv;
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
            char conv = fstring_conversion(ps, t, s + 1, e);
            const char *b = s + 1, *be = e;
            if (conv != 0)
                be = fstring_bang(b, e);
            else
                conv = 's';
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
            struct parser sub = {.vm = vm, .toks = toks, .n = ntok, .nest = ps->nest};
            /* one expression, not a tuple, as in Codex */
            struct ast_node *ex = parse_test(&sub);
            accept(&sub, T_NEWLINE);
            if (peek_kind(&sub) != T_EOF)
                fail_tok(&sub, peek(&sub), "expected '}' in f-string");
            if (sub.deferred != NULL)
                defer_error(ps, sub.deferred_line, sub.deferred_col, "%s", sub.deferred);
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

static struct ast_list parse_suite(struct parser *ps, enum nest_kind k);
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
            defer_error(ps, t->line, t->col, "parameter after **kwargs");
        if (accept(ps, T_STARSTAR)) {
            if (bare_star)
                defer_error(ps, t->line, t->col, "`*` must be followed by named parameter");
            struct ast_param *p = &params[n];
            p->kind = PARAM_STARSTAR;
            p->name = expect(ps, T_NAME, "expected a name after '**'")->sval;
            f->kwargs = (int)n++;
        } else if (accept(ps, T_STAR)) {
            if (star_seen)
                defer_error(ps, t->line, t->col, "multiple * parameters");
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
                defer_error(ps, t->line, t->col, "required parameter '%s' follows an optional one",
                            p->name->data);
            }
            n++;
            if (star_seen)
                f->nkwonly++;
            else
                f->npos++;
        }
        for (size_t j = 0; j + 1 < n; j++)
            if (params[j].name == params[n - 1].name)
                defer_error(ps, t->line, t->col, "duplicate parameter '%s'",
                            params[n - 1].name->data);
        if (!accept(ps, T_COMMA))
            break;
    }
    if (bare_star) /* Codex: a lone '*' needs keyword-only parameters after it */
        defer_error(ps, bare_star->line, bare_star->col, "`*` parameter must not be last");
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
    f->body = parse_suite(ps, NEST_DEF);
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
    n->u.ifs.then = parse_suite(ps, NEST_IF);
    if (peek_kind(ps) == T_ELIF) {
        /* An elif is an if nested in the else. */
        struct vec v = {0};
        nest_enter(ps->vm, &ps->blocks, NEST_IF, peek(ps)->line, peek(ps)->col);
        vec_push(ps->vm, &v, parse_if(ps));
        nest_leave(&ps->blocks, NEST_IF);
        n->u.ifs.els = vec_list(&v);
    } else if (accept(ps, T_ELSE)) {
        expect(ps, T_COLON, "expected ':' after 'else'");
        n->u.ifs.els = parse_suite(ps, NEST_IF);
    }
    return n;
}

static struct ast_node *
parse_for(struct parser *ps)
{
    struct star_token *t = advance(ps);
    struct ast_node *n = node(ps, A_FOR, t);
    n->u.fors.target = parse_loop_vars(ps);
    expect(ps, T_IN, "expected 'in' after the loop variables");
    n->u.fors.iter = parse_test(ps); /* a tuple must be in parentheses, as in Codex */
    expect(ps, T_COLON, "expected ':' after the loop");
    ps->in_loop++;
    n->u.fors.body = parse_suite(ps, NEST_NONE);
    ps->in_loop--;
    check_target(ps, n->u.fors.target);
    return n;
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
            defer_error(ps, t->line, t->col, "'return' outside a function");
        n = node(ps, A_RETURN, t);
        if (peek_kind(ps) != T_NEWLINE && peek_kind(ps) != T_SEMI && peek_kind(ps) != T_EOF)
            n->u.x.a = parse_expr(ps);
        return n;
    case T_BREAK:
    case T_CONTINUE:
        advance(ps);
        if (ps->in_loop == 0)
            defer_error(ps, t->line, t->col, "'%s' outside a loop",
                        t->kind == T_BREAK ? "break" : "continue");
        return node(ps, t->kind == T_BREAK ? A_BREAK : A_CONTINUE, t);
    case T_PASS:
        advance(ps);
        return node(ps, A_PASS, t);
    case T_LOAD:
        /* load("module", "name", alias = "name", ...): read as Codex reads
         * it, then refused (there are no modules to load) */
        advance(ps);
        expect(ps, T_LPAREN, "expected '(' after load");
        struct star_token *module = expect(ps, T_STRING, "expected the module's name, a string");
        size_t symbols = 0;
        while (accept(ps, T_COMMA) && peek_kind(ps) != T_RPAREN) {
            if (peek_kind(ps) == T_NAME && ps->toks[ps->i + 1].kind == T_ASSIGN) {
                advance(ps);
                advance(ps);
            }
            expect(ps, T_STRING, "expected a name to load, a string");
            symbols++;
        }
        expect(ps, T_RPAREN, "expected ',' or ')' in load");
        if (symbols == 0)
            defer_error(ps, module->line, module->col,
                        "`load` statement requires at least two arguments");
        defer_error(ps, t->line, t->col, "load() is not supported in .rules files");
        return node(ps, A_PASS, t);
    default:
        break;
    }
    struct ast_node *lhs = parse_expr(ps);
    struct star_token *op = peek(ps);
    /* The target is checked once the value is read, as in Codex (whose
     * errors in the value come first). */
    if (op->kind == T_ASSIGN) {
        advance(ps);
        n = node(ps, A_ASSIGN, op);
        n->u.x.a = lhs;
        n->u.x.b = parse_expr(ps);
        check_target(ps, lhs);
        return n;
    }
    if (op->kind >= T_PLUS_EQ && op->kind <= T_GTGT_EQ) {
        advance(ps);
        /* Codex reports the statement where it starts (at a '(' before
         * the target too) */
        n = node(ps, A_AUGASSIGN, t);
        static const uint8_t base[] = {T_PLUS, T_MINUS, T_STAR,  T_SLASH, T_SLASHSLASH, T_PERCENT,
                                       T_PIPE, T_AMP,   T_CARET, T_LTLT,  T_GTGT};
        n->op = base[op->kind - T_PLUS_EQ];
        n->u.x.a = lhs;
        n->u.x.b = parse_expr(ps);
        if (lhs->kind == A_LIST || lhs->kind == A_TUPLE)
            star_fail_at(ps->vm, lhs->line, lhs->col,
                         "left-hand-side of modifying assignment cannot be a list or tuple");
        check_target(ps, lhs);
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
    default:
        parse_simple(ps, out);
    }
}

static struct ast_list
parse_suite(struct parser *ps, enum nest_kind k)
{
    struct vec v = {0};
    struct star_token *t = peek(ps);
    nest_enter(ps->vm, &ps->blocks, k, t->line, t->col);
    if (accept(ps, T_NEWLINE)) {
        expect(ps, T_INDENT, "expected an indented block");
        while (peek_kind(ps) != T_OUTDENT && peek_kind(ps) != T_EOF)
            parse_stmt(ps, &v);
        accept(ps, T_OUTDENT);
    } else {
        parse_simple(ps, &v);
    }
    nest_leave(&ps->blocks, k);
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
    uint64_t nest; /* the nesting budget used (nest_enter) */
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
    star_stack_check(r->vm, t->line, t->col);
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
    if (body->n > 0)
        star_stack_check(r->vm, body->items[0]->line, body->items[0]->col);
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
    /* Once per enclosing function: lambdas nest as deep as expressions. */
    star_stack_check(r->vm, r->vm->line, r->vm->col);
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
    star_stack_check(r->vm, t->line, t->col);
    if (t->kind == A_IDENT) {
        int v = star_namemap_get(&b->names, t->u.ident.name);
        if (v < 0) {
            v = (int)(*s->nlocals)++;
            star_namemap_put(r->vm, &b->names, t->u.ident.name, v);
        }
    } else if (t->kind == A_LIST || t->kind == A_TUPLE) {
        for (size_t i = 0; i < t->u.list.n; i++)
            bind_block_target(r, s, b, t->u.list.items[i]);
    }
    /* An index or attribute binds no name: resolve_comp resolves it as
     * an expression. */
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

/* What a node of the tree charges against the resolver's budget; a leaf
 * (a name, a literal) nothing, and it needs no stack check either. */
static const uint8_t resolve_nest_kind[] = {
    [A_UNARY] = NEST_OPERATOR, [A_BINARY] = NEST_OPERATOR, [A_AND] = NEST_OPERATOR,
    [A_OR] = NEST_OPERATOR,    [A_NOT] = NEST_OPERATOR,    [A_COND] = NEST_OPERATOR,
    [A_INDEX] = NEST_OPERATOR, [A_SLICE] = NEST_OPERATOR,  [A_DOT] = NEST_OPERATOR,
    [A_CALL] = NEST_OPERATOR,  [A_LIST] = NEST_LIST,       [A_TUPLE] = NEST_LIST,
    [A_DICT] = NEST_DICT,      [A_LAMBDA] = NEST_LAMBDA,   [A_COMP] = NEST_COMP,
    [A_FSTRING] = NEST_NONE,   [A_PASS] = NEST_NONE,
};

static void
resolve_expr(struct resolver *r, struct scope *s, struct ast_node *e)
{
    if (e == NULL)
        return;
    enum nest_kind k = resolve_nest_kind[e->kind];
    if (k != NEST_NONE)
        nest_enter(r->vm, &r->nest, k, e->line, e->col);
    else if (e->kind == A_FSTRING)
        star_stack_check(r->vm, e->line, e->col);
    switch (e->kind) {
    case A_IDENT:
        resolve_ident(r, s, e);
        break;
    case A_INT:
    case A_FLOAT:
    case A_BIGINT:
    case A_STRING:
    case A_BYTES:
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
        nest_enter(r->vm, &r->nest, NEST_CALL_ARGS, e->line, e->col);
        for (size_t i = 0; i < e->u.call.nargs; i++)
            resolve_expr(r, s, e->u.call.args[i].value);
        nest_leave(&r->nest, NEST_CALL_ARGS);
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
    nest_leave(&r->nest, k); /* NEST_NONE costs nothing */
}

static void
resolve_block(struct resolver *r, struct scope *s, struct ast_list *body)
{
    if (body->n > 0)
        star_stack_check(r->vm, body->items[0]->line, body->items[0]->col);
    for (size_t i = 0; i < body->n; i++) {
        struct ast_node *st = body->items[i];
        switch (st->kind) {
        case A_EXPR_STMT:
            resolve_expr(r, s, st->u.x.a);
            break;
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
    raise_deferred(&ps);
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

bool
star_parse_deferred(const struct star_stream *st)
{
    return st->ps.deferred != NULL;
}

void
star_parse_end(struct star_stream *st)
{
    raise_deferred(&st->ps);
    for (size_t i = 0; i < st->r.forward_uses.n; i++) {
        struct forward_use *f = st->r.forward_uses.items[i];
        if (!f->bound)
            star_fail_at(st->r.vm, f->line, f->col, "undefined: %s is not defined", f->name->data);
    }
}
