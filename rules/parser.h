/*
 * star parser: tokens to a resolved syntax tree.
 */
#ifndef EXECGATE_RULES_PARSER_H
#define EXECGATE_RULES_PARSER_H

#include <stddef.h>

#include "rules/ast.h"
#include "rules/lexer.h"

struct star_vm;
struct star_namemap;

/*
 * Parses and resolves a whole file.  Names not bound in the file are looked
 * up in predeclared (interned name -> the index SCOPE_UNIVERSE identifiers
 * carry; borrowed); an unknown name is an error, as are `while`, `load`,
 * reserved words and nesting deeper than STAR_MAX_NESTING.  Returns the
 * arena-owned module; fails the run (longjmp) on error.
 */
struct ast_module *star_parse(struct star_vm *vm, const struct star_namemap *predeclared,
                              const char *src, size_t len);

#endif
