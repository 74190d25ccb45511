/*
 * star ast: the syntax tree of a Starlark file, allocated in the vm's arena.
 * After parsing, every identifier is resolved: it names a local slot of the
 * enclosing function, a cell of it (a local that a nested function
 * captures, shared with it), a captured (free) variable, a global slot of
 * the file, or a predeclared built-in.
 */
#ifndef EXECGATE_STARLARK_AST_H
#define EXECGATE_STARLARK_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "starlark/value.h"

enum ast_kind {
    /* expressions */
    A_IDENT,
    A_INT,
    A_FLOAT,
    A_BIGINT, /* an integer literal beyond int64 */
    A_STRING,
    A_BYTES, /* u.sval: the literal's bytes */
    A_FSTRING,
    A_LIST,
    A_TUPLE,
    A_DICT,
    A_COMP,
    A_UNARY,
    A_BINARY,
    A_AND,
    A_OR,
    A_NOT,
    A_COND,
    A_INDEX,
    A_SLICE,
    A_INDEX2, /* x[a, b]: Codex parses it, and no value of the language takes it */
    A_DOT,
    A_CALL,
    A_LAMBDA,
    /* statements */
    A_EXPR_STMT,
    A_ASSIGN,
    A_AUGASSIGN,
    A_DEF,
    A_RETURN,
    A_IF,
    A_FOR,
    A_BREAK,
    A_CONTINUE,
    A_PASS,
};

enum ast_scope {
    SCOPE_LOCAL, /* index: the slot in the frame */
    SCOPE_CELL,  /* index: the cell of the frame (a local some nested function captures) */
    SCOPE_FREE,  /* index: the function's captures */
    SCOPE_GLOBAL,
    SCOPE_UNIVERSE,
};

struct ast_list {
    struct ast_node **items;
    size_t n;
};

enum ast_arg_kind { ARG_POS, ARG_KW, ARG_STAR, ARG_STARSTAR };

struct ast_arg {
    uint8_t kind;
    struct star_str *name; /* ARG_KW */
    struct ast_node *value;
};

enum ast_param_kind { PARAM_NORMAL, PARAM_STAR, PARAM_STARSTAR };

struct ast_param {
    uint8_t kind;
    struct star_str *name;
    struct ast_node *dflt; /* NULL when required */
    uint32_t slot;
};

/* What a function made by def or lambda shares with the function that
 * makes it: one of that function's cells, or one of its own captures. */
struct ast_capture {
    uint8_t scope; /* SCOPE_CELL or SCOPE_FREE of the enclosing function */
    uint32_t index;
};

struct ast_func {
    struct star_str *name; /* "lambda" for lambdas */
    struct ast_param *params;
    size_t nparams;
    size_t npos;           /* named parameters before any * or *args */
    size_t nkwonly;        /* named parameters after * or *args */
    int varargs;           /* index in params of *args, or -1 */
    int kwargs;            /* index in params of **kwargs, or -1 */
    struct ast_list body;  /* def */
    struct ast_node *expr; /* lambda */
    uint32_t nlocals;
    struct ast_capture *captures;
    size_t ncaptures;
    /* The slot of each cell: a parameter's value moves there on a call. */
    uint32_t *cell_slots;
    uint32_t ncells;
};

struct ast_clause {
    bool is_for;
    struct ast_node *target; /* for */
    struct ast_node *expr;   /* the iterable, or the if condition */
};

struct ast_node {
    uint8_t kind;
    uint8_t op; /* a T_* token kind for unary, binary and augmented assignment */
    uint32_t line, col;
    union {
        struct {
            struct star_str *name;
            uint8_t scope;
            uint32_t index;
        } ident;
        int64_t ival;
        double dval;
        struct bigint *big; /* A_BIGINT */
        struct star_str *sval;
        struct ast_list list; /* A_LIST, A_TUPLE, A_FSTRING parts, A_IF/A_FOR bodies use below */
        struct {
            struct ast_list keys, vals;
        } dict;
        struct {
            bool is_dict;
            struct ast_node *body, *val; /* val: dict comprehensions */
            struct ast_clause *clauses;
            size_t nclauses;
        } comp;
        struct {
            struct ast_node *a, *b, *c, *d;
        } x; /* unary a; binary/and/or a b; cond a if b else c; index a[b]; index2 a[b, c]; slice
                a[b:c:d]; assign a = b; return a; expr stmt a; fstring part a (op 'r' or 's') */
        struct {
            struct ast_node *obj;
            struct star_str *name;
        } dot;
        struct {
            struct ast_node *fn;
            struct ast_arg *args;
            size_t nargs;
        } call;
        struct {
            struct ast_func *func;
            struct ast_node *target; /* A_IDENT the def binds; NULL for lambda */
        } def;
        struct {
            struct ast_node *cond;
            struct ast_list then, els;
        } ifs;
        struct {
            struct ast_node *target, *iter;
            struct ast_list body;
        } fors;
    } u;
};

struct ast_module {
    struct ast_list body;
    uint32_t nglobals;
    struct star_str **global_names;
    uint32_t nlocals; /* slots of top-level comprehension variables */
    uint32_t ncells;  /* how many of them a lambda in the comprehension captures */
};

#endif
