/*
 * star parser: tokens to a resolved syntax tree.
 */
#ifndef EXECGATE_STARLARK_PARSER_H
#define EXECGATE_STARLARK_PARSER_H

#include <stdbool.h>
#include <stddef.h>

#include "starlark/ast.h"
#include "starlark/lexer.h"

struct star_vm;
struct star_namemap;

/*
 * Parses and resolves a whole file.  Names not bound in the file are looked
 * up in predeclared (interned name -> the index SCOPE_UNIVERSE identifiers
 * carry; borrowed); an unknown name is an error, as are `while`, `load`,
 * reserved words and nesting deeper than Codex takes (STAR_NEST_*).  Returns the
 * arena-owned module; fails the run (longjmp) on error.
 */
struct ast_module *star_parse(struct star_vm *vm, const struct star_namemap *predeclared,
                              const char *src, size_t len);

/*
 * A file a top-level statement at a time, so each can run before the next
 * is parsed, and what ran and left nothing behind is freed.  A statement is resolved against the
 * globals bound so far: a name no statement bound yet becomes a global not yet assigned (a later
 * statement may bind it; star_parse_end fails on one none did, as
 * star_parse would).  The stream lives in the vm's arena.
 */
struct star_stream;
struct star_stream *star_parse_begin(struct star_vm *vm, const struct star_namemap *predeclared,
                                     const char *src, size_t len);
/* The next top-level statement (several for `a; b`), parsed and resolved;
 * an empty list at the end of the file.  *nlocals is the number of slots
 * its comprehension variables need, *ncells how many of them a lambda
 * captures (ast_module.ncells).  Fails the run (longjmp) on error. */
struct ast_list star_parse_next(struct star_stream *st, uint32_t *nlocals, uint32_t *ncells);
/* After the statement star_parse_next returned: transient says it ran and
 * nothing outlives it (no binding, nothing kept; see star_keep), so its
 * memory may be given back with the rest of its window before the next
 * window is lexed.  A statement not reported so is kept. */
void star_parse_ran(struct star_stream *st, bool transient);
/* The number of globals the statements so far bind or use. */
uint32_t star_parse_nglobals(const struct star_stream *st);
/* True once a statement binds a predeclared name that an earlier
 * statement (or function body) resolved to the built-in: what ran before
 * meant something else, and the file must be run whole (star_parse). */
bool star_parse_rebinds_predeclared(const struct star_stream *st);
/* True once a statement holds a mistake Codex reports only after reading
 * the whole file (a 'return' outside a function, a duplicate parameter,
 * arguments out of order, load()): it and what follows must not run;
 * star_parse_end reports it, unless a syntax error comes first. */
bool star_parse_deferred(const struct star_stream *st);
/* At the end of the file: fails (longjmp) at the first mistake
 * star_parse_deferred noted, else at the first use of a name no
 * statement bound. */
void star_parse_end(struct star_stream *st);

#endif
