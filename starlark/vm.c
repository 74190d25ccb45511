#include "starlark/vm.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "starlark/value.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

/* ---- the machine ---- */

static void arena_release(struct star_vm *vm);

/* The stack a run may use under the process's stack limit. */
static size_t
stack_limit(void)
{
    struct rlimit rl;
    size_t total = STAR_STACK_MAX;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)STAR_STACK_MAX)
        total = (size_t)rl.rlim_cur;
    /* A stack too small to keep the reserve back still gets half of it. */
    return total > 2 * (size_t)STAR_STACK_RESERVE ? total - STAR_STACK_RESERVE : total / 2;
}

void
star_vm_init(struct star_vm *vm)
{
    *vm = (struct star_vm){
        .mem_limit = STAR_MAX_MEMORY,
        .max_steps = STAR_MAX_STEPS,
        .print_to = stderr,
        .stack_limit = stack_limit(),
    };
}

void
star_vm_fini(struct star_vm *vm)
{
    if (vm == NULL)
        return;
    arena_release(vm);
    free(vm->err);
    vm->err = NULL;
}

void
star_vm_begin(struct star_vm *vm, const char *name)
{
    vm->file = name;
    vm->line = 1;
    vm->col = 1;
    vm->steps = 0;
    vm->call_depth = 0;
    vm->value_depth = 0;
    vm->stack_base = (uintptr_t)__builtin_frame_address(0);
    free(vm->err);
    vm->err = NULL;
}

/* ---- errors ---- */

static _Noreturn void fail_v(struct star_vm *vm, uint32_t line, uint32_t col, const char *fmt,
                             va_list ap) __attribute__((format(printf, 4, 0)));

static char *error_line(const char *file, uint32_t line, uint32_t col, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/*
 * "FILE:LINE:COL: message" in a malloc'd string as long as the message
 * needs: a message quotes the file's own text (names, strings, values),
 * which no fixed size bounds.  The heap, not the arena: the error may be
 * that the arena is full.  NULL when out of memory.
 */
static char *
error_line(const char *file, uint32_t line, uint32_t col, const char *fmt, va_list ap)
{
    char *msg;
    if (vasprintf(&msg, fmt, ap) < 0)
        return NULL;
    char *s;
    if (asprintf(&s, "%s:%u:%u: %s", file, line, col, msg) < 0)
        s = NULL;
    free(msg);
    return s;
}

static _Noreturn void
fail_v(struct star_vm *vm, uint32_t line, uint32_t col, const char *fmt, va_list ap)
{
    free(vm->err);
    vm->err = error_line(vm->file ? vm->file : "<input>", line, col, fmt, ap);
    if (vm->on_unwind != NULL)
        vm->on_unwind(vm);
    longjmp(*vm->on_error, 1);
}

_Noreturn void
star_fail(struct star_vm *vm, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_v(vm, vm->line, vm->col, fmt, ap);
}

_Noreturn void
star_fail_at(struct star_vm *vm, uint32_t line, uint32_t col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_v(vm, line, col, fmt, ap);
}

_Noreturn void
star_fail_again(struct star_vm *vm, const char *err_line)
{
    if (err_line != vm->err) {
        free(vm->err);
        vm->err = strdup(err_line); /* NULL: the caller reports "out of memory" */
    }
    if (vm->on_unwind != NULL)
        vm->on_unwind(vm);
    longjmp(*vm->on_error, 1);
}

void
star_stack_fail(struct star_vm *vm, uint32_t line, uint32_t col)
{
    star_fail_at(vm, line, col,
                 "nested too deeply: the %zu KiB of stack this process may use are exhausted "
                 "(ulimit -s)",
                 vm->stack_limit >> 10);
}

const char *
star_vm_error(const struct star_vm *vm)
{
    return vm->err;
}

/* ---- arena ---- */

struct star_block {
    struct star_block *next;
    size_t used, size;
    uint64_t seq; /* vm->block_seq when made: star_release frees the newer */
    _Alignas(16) char data[];
};

#define BLOCK_SIZE (64u * 1024u)
/* Blocks given back by star_release kept for reuse (see block_give_back). */
#define STAR_SPARE_BLOCKS 4
#define BIG_REQUEST       (BLOCK_SIZE / 4)

static struct star_block *
block_new(struct star_vm *vm, size_t size)
{
    if (size > vm->mem_limit || vm->mem_used > vm->mem_limit - size)
        star_fail(vm, "out of memory: the file needs more than %zu MiB", vm->mem_limit >> 20);
    struct star_block *b = vm->spare;
    if (size == BLOCK_SIZE && b != NULL) {
        /* A block star_release gave back, zeroed then (and poisoned under
         * AddressSanitizer until now). */
        vm->spare = b->next;
        vm->n_spare--;
#ifdef __SANITIZE_ADDRESS__
        ASAN_UNPOISON_MEMORY_REGION(b->data, BLOCK_SIZE);
#endif
        b->next = NULL;
    } else {
        b = calloc(1, sizeof *b + size);
        if (b == NULL)
            star_fail(vm, "out of memory");
        b->size = size;
    }
    vm->mem_used += size;
    b->seq = ++vm->block_seq;
    return b;
}

/* Gives back a block star_release no longer needs: a standard block is
 * zeroed where it was used and kept for block_new (up to STAR_SPARE_BLOCKS
 * of them), so a file run a window at a time reuses the same few blocks
 * instead of allocating and zeroing new ones; others are freed. */
static void
block_give_back(struct star_vm *vm, struct star_block *b)
{
    vm->mem_used -= b->size;
    if (b->size != BLOCK_SIZE || vm->n_spare >= STAR_SPARE_BLOCKS) {
        free(b);
        return;
    }
#ifdef __SANITIZE_ADDRESS__
    ASAN_UNPOISON_MEMORY_REGION(b->data, b->used);
#endif
    memset(b->data, 0, b->used);
    b->used = 0;
#ifdef __SANITIZE_ADDRESS__
    /* A pointer kept into given-back memory is still caught. */
    ASAN_POISON_MEMORY_REGION(b->data, BLOCK_SIZE);
#endif
    b->next = vm->spare;
    vm->spare = b;
    vm->n_spare++;
}

void
star_mark(struct star_vm *vm, struct star_mark *m)
{
    m->head = vm->blocks;
    m->used = vm->blocks ? vm->blocks->used : 0;
    m->seq = vm->block_seq;
    m->keeps = vm->keeps;
}

/*
 * The blocks made since the mark are all before the marked head in the
 * list, or right after it (large requests go second, see star_alloc):
 * both runs are freed, and the head's own tail is zeroed for reuse (under
 * AddressSanitizer it is poisoned and left unused instead, so a pointer
 * kept into released memory is caught).
 */
bool
star_release(struct star_vm *vm, const struct star_mark *m)
{
    if (vm->keeps != m->keeps)
        return false;
    struct star_block **pp = &vm->blocks, *b;
    while ((b = *pp) != NULL) {
        if (b->seq > m->seq) {
            *pp = b->next;
            block_give_back(vm, b);
            continue;
        }
        if (b != m->head)
            break;
        pp = &b->next;
    }
    if (m->head != NULL && m->head->used > m->used) {
#ifdef __SANITIZE_ADDRESS__
        ASAN_POISON_MEMORY_REGION(m->head->data + m->used, m->head->used - m->used);
#else
        memset(m->head->data + m->used, 0, m->head->used - m->used);
        m->head->used = m->used;
#endif
    }
    return true;
}

void *
star_alloc(struct star_vm *vm, size_t n)
{
    n = (n + 15u) & ~(size_t)15u;
    if (n == 0)
        n = 16;
    struct star_block *cur = vm->blocks;
    if (n >= BIG_REQUEST) {
        struct star_block *b = block_new(vm, n);
        b->used = n;
        /* Keep the current block first so small requests continue in it. */
        if (cur != NULL) {
            b->next = cur->next;
            cur->next = b;
        } else {
            vm->blocks = b;
        }
        return b->data;
    }
    if (cur == NULL || cur->size - cur->used < n) {
        cur = block_new(vm, BLOCK_SIZE);
        cur->next = vm->blocks;
        vm->blocks = cur;
    }
    void *p = cur->data + cur->used;
    cur->used += n;
    return p;
}

void *
star_alloc_array(struct star_vm *vm, size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / 2 / size)
        star_fail(vm, "out of memory: %zu elements are too many", count);
    return star_alloc(vm, count * size);
}

/* Frees every block of the arena; the arena stays usable. */
static void
arena_release(struct star_vm *vm)
{
    struct star_block *b = vm->blocks;
    while (b != NULL) {
        struct star_block *next = b->next;
        free(b);
        b = next;
    }
    vm->blocks = NULL;
    vm->mem_used = 0;
    while ((b = vm->spare) != NULL) {
        vm->spare = b->next;
#ifdef __SANITIZE_ADDRESS__
        ASAN_UNPOISON_MEMORY_REGION(b->data, BLOCK_SIZE);
#endif
        free(b);
    }
    vm->n_spare = 0;
}

/* ---- interning ---- */

/* A hash of n bytes, eight at a time (names and strings are hashed as
 * they are interned or used as keys, so this is on the path of every
 * name a file's lexer meets).  Never 0, which means "not computed". */
static uint32_t
hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    if (n > 0) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    uint32_t r = (uint32_t)(h >> 32) ^ (uint32_t)h;
    return r == 0 ? 1 : r;
}

uint32_t
star_str_hash(struct star_str *s)
{
    if (s->hash == 0)
        s->hash = hash_bytes(s->data, s->len);
    return s->hash;
}

static void
intern_grow(struct star_vm *vm)
{
    size_t cap = vm->intern_cap ? vm->intern_cap * 2 : 256;
    struct star_str **t = star_alloc_array(vm, cap, sizeof *t);
    star_keep(vm);
    for (size_t i = 0; i < vm->intern_cap; i++) {
        struct star_str *s = vm->intern[i];
        if (s == NULL)
            continue;
        size_t j = s->hash & (cap - 1);
        while (t[j] != NULL)
            j = (j + 1) & (cap - 1);
        t[j] = s;
    }
    vm->intern = t;
    vm->intern_cap = cap;
}

struct star_str *
star_intern(struct star_vm *vm, const char *s, size_t len)
{
    if (vm->intern_len * 2 >= vm->intern_cap)
        intern_grow(vm);
    uint32_t h = hash_bytes(s, len);
    size_t mask = vm->intern_cap - 1, i = h & mask;
    for (;;) {
        struct star_str *e = vm->intern[i];
        if (e == NULL)
            break;
        if (e->hash == h && e->len == len && memcmp(e->data, s, len) == 0)
            return e;
        i = (i + 1) & mask;
    }
    struct star_str *n = star_str_new(vm, s, len);
    star_keep(vm);
    n->hash = h;
    vm->intern[i] = n;
    vm->intern_len++;
    return n;
}

/* ---- name maps ---- */

static size_t
ptr_slot(const struct star_str *k, size_t cap)
{
    return ((uintptr_t)k >> 4) * 0x9e3779b1u & (cap - 1);
}

int
star_namemap_get(const struct star_namemap *m, const struct star_str *key)
{
    if (m->cap == 0)
        return -1;
    size_t i = ptr_slot(key, m->cap);
    while (m->keys[i] != NULL) {
        if (m->keys[i] == key)
            return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

void
star_namemap_put(struct star_vm *vm, struct star_namemap *m, struct star_str *key, int val)
{
    star_keep(vm);
    if ((m->len + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct star_str **keys = star_alloc_array(vm, cap, sizeof *keys);
        int *vals = star_alloc_array(vm, cap, sizeof *vals);
        for (size_t i = 0; i < m->cap; i++) {
            if (m->keys[i] == NULL)
                continue;
            size_t j = ptr_slot(m->keys[i], cap);
            while (keys[j] != NULL)
                j = (j + 1) & (cap - 1);
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t i = ptr_slot(key, m->cap);
    while (m->keys[i] != NULL && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (m->keys[i] == NULL)
        m->len++;
    m->keys[i] = key;
    m->vals[i] = val;
}
