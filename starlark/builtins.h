/*
 * star builtins: the predeclared functions of the Starlark language (len,
 * str, sorted, fail, print, ...) and the methods of strings, lists and dicts.
 */
#ifndef EXECGATE_STARLARK_BUILTINS_H
#define EXECGATE_STARLARK_BUILTINS_H

#include "starlark/eval.h"
#include "starlark/value.h"

/* Predeclares None, True, False and every language built-in in vm.  Fails
 * the current run (longjmp) on OOM; star_vm_new calls it. */
void star_builtins_install(struct star_vm *vm);
/* Adds print() (to stderr), which Codex's rules files do not have: only
 * `execgate-rules eval` offers it, for debugging.  0, or -1 out of memory. */
int star_builtins_install_print(struct star_vm *vm);

/* The built-in method `name` of recv's type, or NULL when it has none. */
star_builtin_fn star_method(struct star_value recv, const struct star_str *name);

/* obj.name as a value (a bound method); fails when there is no such field. */
struct star_value star_getattr(struct star_vm *vm, struct star_value obj, struct star_str *name);

/* fmt % args (%s %r %d %i %x %X %o %% and %(key)s). */
struct star_value star_percent_format(struct star_vm *vm, struct star_str *fmt,
                                      struct star_value args);

#endif
