/*
 * star lexer: Starlark source text to tokens, with line and column
 * (columns count characters, from 1) on every token.  Tracks indentation
 * (INDENT / OUTDENT), ignores newlines inside brackets, and reports
 * unterminated strings, unclosed brackets, bad indentation and invalid
 * UTF-8 as positioned errors through the vm.
 */
#ifndef EXECGATE_STARLARK_LEXER_H
#define EXECGATE_STARLARK_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "starlark/value.h"

enum star_tok {
    T_EOF = 0,
    T_NEWLINE,
    T_INDENT,
    T_OUTDENT,
    T_NAME,
    T_INT,
    T_STRING,
    T_FSTRING,
    /* keywords */
    T_AND,
    T_BREAK,
    T_CONTINUE,
    T_DEF,
    T_ELIF,
    T_ELSE,
    T_FOR,
    T_IF,
    T_IN,
    T_LAMBDA,
    T_LOAD,
    T_NOT,
    T_OR,
    T_PASS,
    T_RETURN,
    T_WHILE,
    T_RESERVED, /* a word Starlark reserves (class, import, try, ...) */
    /* punctuation */
    T_LPAREN,
    T_RPAREN,
    T_LBRACK,
    T_RBRACK,
    T_LBRACE,
    T_RBRACE,
    T_COMMA,
    T_COLON,
    T_SEMI,
    T_DOT,
    T_ASSIGN,
    T_PLUS,
    T_MINUS,
    T_STAR,
    T_STARSTAR,
    T_SLASH,
    T_SLASHSLASH,
    T_PERCENT,
    T_PIPE,
    T_AMP,
    T_CARET,
    T_TILDE,
    T_LTLT,
    T_GTGT,
    T_EQ,
    T_NE,
    T_LT,
    T_GT,
    T_LE,
    T_GE,
    T_PLUS_EQ,
    T_MINUS_EQ,
    T_STAR_EQ,
    T_SLASH_EQ,
    T_SLASHSLASH_EQ,
    T_PERCENT_EQ,
    T_PIPE_EQ,
    T_AMP_EQ,
    T_CARET_EQ,
    T_LTLT_EQ,
    T_GTGT_EQ,
    T_FLOAT,
    T_BYTES, /* b"...": sval holds its bytes (any, not necessarily UTF-8) */
    /* A lexical error, the last token: sval is its error line, which the
     * parser raises only when it reaches it (Codex reads tokens as it
     * parses, so a syntax error before a bad character is the one it
     * reports) */
    T_ERROR,
};

struct star_token {
    uint8_t kind;
    uint32_t line, col;
    const char *text; /* start of the token in the source */
    size_t len;
    union {
        int64_t ival; /* T_INT */
        double dval;  /* T_FLOAT */
    };
    bool big;              /* T_INT beyond int64: the parser reads its text */
    struct star_str *sval; /* T_NAME (interned), T_STRING, T_FSTRING, T_BYTES (decoded) */
};

/*
 * Tokenises src[0..len) (starting at line/col, for f-string bodies).  Returns
 * the arena-owned token array ending in T_EOF and sets *n.  Fails the load
 * (longjmp through vm) with a positioned error on bad input.
 */
struct star_token *star_lex(struct star_vm *vm, const char *src, size_t len, uint32_t line,
                            uint32_t col, size_t *n);

/*
 * Tokenising a file a window at a time, for the parser: the memory of one
 * window is reused for the next, so a large file of many short statements
 * is not held as tokens whole.  star_lex_begin checks the UTF-8 of
 * src[0..len) (failing the load like star_lex); each star_lex_next returns
 * the next window, at least STAR_LEX_WINDOW tokens (or up to T_EOF) ending
 * where a top-level statement ends, and ends the previous window's life.
 * A read one token past the window gives T_NEWLINE.
 */
#define STAR_LEX_WINDOW 1024
struct star_lexer;
struct star_lexer *star_lex_begin(struct star_vm *vm, const char *src, size_t len);
struct star_token *star_lex_next(struct star_lexer *lx, size_t *n);

/* A printable name for a token kind ("')'", "newline", "end of file"). */
const char *star_tok_name(int kind);
/* An operator token as an expression spells it ("+", "//", "not in" for
 * T_NOT), for messages; "?" for a token that is no operator. */
const char *star_op_text(int op);

#endif
