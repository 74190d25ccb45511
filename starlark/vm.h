/*
 * star vm: the machinery every stage of the interpreter shares.  The lexer,
 * the parser, the evaluator and the built-ins all work through one machine:
 *
 *   - the arena: every token, syntax node, value and string of a run is
 *     allocated from it and freed with it, within a memory budget;
 *   - interning: identical names share one star_str, so scopes compare
 *     pointers (star_namemap);
 *   - the error of a run: star_fail records "FILE:LINE:COL: message" and
 *     unwinds (longjmp) to whoever armed on_error;
 *   - the resource limits: the constants below, the budgets a run gets and
 *     the counters that hold it to them.
 *
 * The evaluator (eval.h) embeds a machine and adds what only it needs:
 * the predeclared names and the call frames.
 */
#ifndef EXECGATE_STARLARK_VM_H
#define EXECGATE_STARLARK_VM_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Resource limits of one file (documented in docs/rules-interpreter.md). */
#define STAR_MAX_FILE_BYTES (8u << 20)   /* source size */
#define STAR_MAX_MEMORY     (256u << 20) /* arena bytes: values, AST, tokens */
#define STAR_MAX_STEPS      20000000ull  /* statements, loop iterations, calls */
#define STAR_MAX_CALL_DEPTH 49           /* nested calls (functions and built-ins), as Codex */
#define STAR_MAX_INDENTS    4096         /* indentation levels (the lexer) */
#define STAR_MAX_BRACKETS   10867        /* brackets open at once: Codex's parentheses and () */
/*
 * How deep each construct may nest, alone: the deepest Codex 0.169 loads
 * before its stack overflows (measured at the top level of a file; a mix
 * is charged against one budget, each level 1/limit of it: parser.c).
 */
#define STAR_NEST_OPERATORS  7977  /* unary, binary, not, and, or, if-else, index, slice, `.` */
#define STAR_NEST_LISTS      5346  /* lists and tuples */
#define STAR_NEST_DICTS      4558  /* dicts */
#define STAR_NEST_CALLS      5737  /* calls in calls' arguments (a call of a call: an operator) */
#define STAR_NEST_LAMBDAS    2145  /* lambdas */
#define STAR_NEST_COMPS      4117  /* comprehensions (4116 in another's iterable, and a list) */
#define STAR_NEST_PARENS     10866 /* parentheses */
#define STAR_NEST_IFS        3571  /* if blocks and elif (for blocks: as deep as 8 MiB allows) */
#define STAR_NEST_DEFS       2934  /* def blocks */
#define STAR_NEST_COMP_FORS  31917 /* `for` clauses of one comprehension */
#define STAR_MAX_VALUE_DEPTH 3000  /* nesting of values compared, as in Codex */
/* The C stack a run may use: the process's RLIMIT_STACK less what is kept
 * back for the frames above the run and below the last check, at most
 * STAR_STACK_MAX (also the figure when the limit is unlimited). */
#define STAR_STACK_RESERVE (512u << 10)
#define STAR_STACK_MAX     (256u << 20)

struct star_str;
struct star_block;

struct star_vm {
    /* The current run and its error. */
    const char *file; /* name used in messages (borrowed) */
    jmp_buf *on_error;
    char *err; /* malloc'd error line after a failed run */
    uint32_t line, col;
    /* Called by star_fail before it unwinds, to free what the C frames it
     * abandons hold outside the arena; NULL when nothing does. */
    void (*on_unwind)(struct star_vm *vm);

    /* The arena. */
    struct star_block *blocks;
    size_t mem_used, mem_limit;
    uint64_t block_seq;       /* blocks made so far (each block carries its number) */
    uint64_t keeps;           /* allocations that must outlive any star_mark (star_keep) */
    struct star_block *spare; /* blocks star_release gave back, zeroed, for reuse */
    size_t n_spare;

    /* Limits: the budgets (star_vm_init sets the defaults; an embedder may
     * lower them) and what the current run has used. */
    uint64_t steps, max_steps;
    unsigned call_depth;
    unsigned value_depth; /* nesting of the value being compared, hashed or printed */
    /* The stack: where the run started (star_vm_begin) and how many bytes
     * below it the run may use (star_vm_init sets it from RLIMIT_STACK; an
     * embedder may lower it). */
    uintptr_t stack_base;
    size_t stack_limit;

    /* Interned names: open addressing on content hash. */
    struct star_str **intern;
    size_t intern_cap, intern_len;

    FILE *print_to; /* where the run's print() writes; stderr by default */
};

/* Sets up vm with the default limits, an empty arena, no error, and
 * print() writing to stderr.  Cannot fail. */
void star_vm_init(struct star_vm *vm);

/* Frees everything vm holds (the arena, the error); vm itself stays the
 * caller's.  NULL is a no-op. */
void star_vm_fini(struct star_vm *vm);

/* Starts a run of the file `name` (borrowed for the run): position 1:1,
 * no steps or depth used, no error.  The caller arms on_error. */
void star_vm_begin(struct star_vm *vm, const char *name);

/* ---- errors ---- */

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

/* ---- limits ---- */

/* Counts one step of work; fails the run past max_steps. */
static inline void
star_step(struct star_vm *vm)
{
    if (++vm->steps > vm->max_steps)
        star_fail(vm, "too many steps (limit %llu): is there an endless loop?",
                  (unsigned long long)vm->max_steps);
}

/* Fails the run with an error line made earlier ("FILE:LINE:COL: ..."):
 * a lexical error the parser reaches after the lexer has moved on (or
 * vm->err itself, raised again). */
_Noreturn void star_fail_again(struct star_vm *vm, const char *err_line);

/* Fails the run at line:col: the C stack is used up (star_stack_check). */
_Noreturn void star_stack_fail(struct star_vm *vm, uint32_t line, uint32_t col);

/*
 * The safety net under every recursion over syntax or values: whatever the
 * build (sanitizers make frames larger) and the stack the process got, a
 * nesting deep enough to exhaust the C stack fails the run with an error
 * at line:col instead of crashing the process that loads the file.
 */
static inline void
star_stack_check(struct star_vm *vm, uint32_t line, uint32_t col)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (here < vm->stack_base && vm->stack_base - here > vm->stack_limit)
        star_stack_fail(vm, line, col);
}

/* ---- arena ---- */

/* Allocates n bytes (zeroed) from vm's arena; fails the run (longjmp) with
 * a memory-limit error when the run's budget is exhausted.  Never NULL. */
void *star_alloc(struct star_vm *vm, size_t n);

/* Same for count elements of size, failing the run when the product
 * overflows. */
void *star_alloc_array(struct star_vm *vm, size_t count, size_t size);

/*
 * Marks and releases: a run that knows the memory allocated after a mark
 * is garbage (the syntax and values of statements that ran and left
 * nothing behind) gives it back.  Anything allocated after a mark that
 * must stay (an interned name, a map's table, a buffer kept for reuse, an
 * entry a built-in keeps) calls star_keep, which makes the release refuse.
 */
struct star_mark {
    struct star_block *head;
    size_t used;
    uint64_t seq, keeps;
};
void star_mark(struct star_vm *vm, struct star_mark *m);
/* Frees everything allocated since m (which is then void) unless
 * star_keep was called since; returns whether it did. */
bool star_release(struct star_vm *vm, const struct star_mark *m);
static inline void
star_keep(struct star_vm *vm)
{
    vm->keeps++;
}

/* ---- interning ---- */

/* The one star_str with these bytes (arena-owned, hash set). */
struct star_str *star_intern(struct star_vm *vm, const char *s, size_t len);

/* The hash of s's bytes, computed once and kept in s->hash.  Interned
 * names carry the same hash, so a name and an equal string hash alike. */
uint32_t star_str_hash(struct star_str *s);

/* Pointer-keyed map from interned names to ints (scopes, predeclared
 * names); zero-initialised it is empty, and its tables are arena-owned. */
struct star_namemap {
    struct star_str **keys;
    int *vals;
    size_t cap, len;
};
/* Returns the value for key, or -1 when absent. */
int star_namemap_get(const struct star_namemap *m, const struct star_str *key);
void star_namemap_put(struct star_vm *vm, struct star_namemap *m, struct star_str *key, int val);

#endif
