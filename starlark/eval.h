/*
 * star eval: the evaluator that runs one Starlark file on a machine (vm.h).
 * A machine made by star_vm_new also holds the predeclared names (the
 * language's built-ins and the embedder's) and the call frames of a run.
 * Errors unwind with longjmp to star_vm_exec_file, which turns them into
 * one "FILE:LINE:COL: message" line (star_vm_error).
 */
#ifndef EXECGATE_STARLARK_EVAL_H
#define EXECGATE_STARLARK_EVAL_H

#include <stddef.h>

#include "starlark/value.h"
#include "starlark/vm.h"

struct star_args {
    struct star_value *pos;
    size_t npos;
    struct star_str **kwnames;
    struct star_value *kwvals;
    size_t nkw;
};

struct star_builtin;
typedef struct star_value (*star_builtin_fn)(struct star_vm *vm, struct star_builtin *self,
                                             struct star_args *args);

struct star_builtin {
    const char *name;
    star_builtin_fn fn;
    struct star_value recv; /* bound receiver of a method; None for functions */
    void *data;             /* the embedder's state for this built-in */
};

struct ast_func;

/* A function defined by def or lambda. */
struct star_function {
    struct ast_func *def;
    struct star_value *defaults;  /* one per parameter; STAR_UNBOUND when required */
    struct star_value **captured; /* the enclosing calls' variables it uses (shared cells) */
    struct star_value **globals;  /* the defining file's globals (a cell, as they grow) */
};

/* The name a function was defined with ("lambda" for lambdas). */
const char *star_function_name(const struct star_function *f);

/* A new machine with the language's built-ins predeclared, or NULL on OOM.
 * Every function of this header takes a machine made here. */
struct star_vm *star_vm_new(void);

/* Frees the machine and everything its runs allocated; NULL is a no-op. */
void star_vm_free(struct star_vm *vm);

/* Predeclares `name` as a built-in function for files run afterwards.
 * Returns 0, or -1 on OOM. */
int star_vm_define_builtin(struct star_vm *vm, const char *name, star_builtin_fn fn, void *data);

/* Predeclares `name` as a value (True, None, ...).  Returns 0, or -1 on OOM. */
int star_vm_define(struct star_vm *vm, const char *name, struct star_value v);

/*
 * Parses and runs src[0..len) as the file `name`.  Returns 0 when it
 * completes; -1 with star_vm_error() set otherwise.  Globals are frozen at
 * the end.  The vm may run further files afterwards.
 */
int star_vm_exec_file(struct star_vm *vm, const char *name, const char *src, size_t len);

/*
 * Same, running each top-level statement as soon as it is parsed (a large
 * file is never held whole as a tree), with the same result and error
 * line as star_vm_exec_file.  Returns 0, -1 with star_vm_error() set, or
 * STAR_EXEC_WHOLE when a statement binds a built-in's name that an earlier
 * statement used: the statements run so far meant something else there,
 * so the caller discards their effects and runs the file with
 * star_vm_exec_file on a new machine.
 */
#define STAR_EXEC_WHOLE 1
int star_vm_exec_file_stream(struct star_vm *vm, const char *name, const char *src, size_t len);

/* Calls a function or built-in value with args.  Built-ins must not keep
 * pointers into args after they return. */
struct star_value star_call(struct star_vm *vm, struct star_value fn, struct star_args *args);

/*
 * Binds args to the parameter names of a built-in: the first nreq are
 * required, the rest optional (left STAR_UNBOUND when absent).  Fails with
 * "NAME: ..." on a missing, extra or unknown argument.
 */
void star_args_bind(struct star_vm *vm, const char *fname, struct star_args *args,
                    const char *const *params, size_t nreq, size_t nparams, struct star_value *out);

/* The elements of an iterable (list, tuple, dict keys, range) as an array
 * that stays valid until the run ends; fails for non-iterables. */
struct star_value *star_iterable_items(struct star_vm *vm, struct star_value v, size_t *n);

#endif
