/*
 * star eval: the virtual machine that runs one Starlark file.  It owns the
 * arena, the predeclared names, the resource limits and the error of a run.
 * Errors unwind with longjmp to star_vm_exec_file, which turns them into one
 * "FILE:LINE:COL: message" line.
 */
#ifndef EXECGATE_RULES_EVAL_H
#define EXECGATE_RULES_EVAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "value.h"

/* Resource limits of one file (documented in docs/rules.md). */
#define STAR_MAX_FILE_BYTES (8u << 20)   /* source size */
#define STAR_MAX_MEMORY     (256u << 20) /* arena bytes: values, AST, tokens */
#define STAR_MAX_STEPS      20000000ull  /* statements, loop iterations, calls */
#define STAR_MAX_CALL_DEPTH 100          /* nested function calls */
#define STAR_MAX_NESTING    100          /* brackets, nested blocks and expressions */

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

struct star_block;
struct star_frame;
struct ast_node;
struct ast_func;

/* A function defined by def or lambda. */
struct star_function {
    struct ast_func *def;
    struct star_value *defaults; /* one per parameter; STAR_UNBOUND when required */
    struct star_value *captured; /* values of the enclosing function's variables */
    struct star_value *globals;  /* the defining file's globals */
};

/* The name a function was defined with ("lambda" for lambdas). */
const char *star_function_name(const struct star_function *f);

struct star_vm {
    const char *file; /* name used in messages (borrowed) */
    jmp_buf *on_error;
    char *err; /* malloc'd error line after a failed run */
    uint32_t line, col;

    struct star_block *blocks; /* arena */
    size_t mem_used, mem_limit;

    uint64_t steps, max_steps;
    unsigned call_depth;

    struct star_str **intern; /* open addressing on content hash */
    size_t intern_cap, intern_len;

    struct star_namemap universe_index; /* name -> index into universe */
    struct star_value *universe;
    size_t n_universe, cap_universe;

    struct star_frame *frames; /* innermost call first; freed on error */

    FILE *print_to; /* where print() writes; stderr by default */
};

/* A new machine with the language's built-ins predeclared, or NULL on OOM. */
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

/* The last error line ("FILE:LINE:COL: message"), or NULL; owned by vm. */
const char *star_vm_error(const struct star_vm *vm);

/* Sets the position reported by the next error of the current run. */
static inline void
star_vm_at(struct star_vm *vm, uint32_t line, uint32_t col)
{
    vm->line = line;
    vm->col = col;
}

/* Fails the current run with a message at the current position (longjmp). */
_Noreturn void star_fail(struct star_vm *vm, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Same, at an explicit position. */
_Noreturn void star_fail_at(struct star_vm *vm, uint32_t line, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Counts one step of work; fails the run past STAR_MAX_STEPS. */
static inline void
star_step(struct star_vm *vm)
{
    if (++vm->steps > vm->max_steps)
        star_fail(vm, "too many steps (limit %llu): is there an endless loop?",
                  (unsigned long long)vm->max_steps);
}

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
