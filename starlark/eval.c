#include "starlark/eval.h"
#include "starlark/unicode.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "starlark/ast.h"
#include "starlark/bigint.h"
#include "starlark/builtins.h"
#include "starlark/float.h"
#include "starlark/lexer.h"
#include "starlark/parser.h"

#define INLINE_SLOTS 8
#define INLINE_ARGS  8

struct star_frame {
    struct star_frame *prev;
    struct star_value *slots;
    bool heap;
    struct star_value *cells;     /* in the arena: closures made here share them */
    struct star_value **captured; /* the cells of enclosing calls this function uses */
    struct star_value **globals;  /* the file's globals (a cell: streaming grows them) */
    struct star_value ret;
    struct star_value inline_slots[INLINE_SLOTS];
};

enum flow { FLOW_NORMAL, FLOW_BREAK, FLOW_CONTINUE, FLOW_RETURN };

/* The machine star_vm_new hands out (as &in->vm): the shared vm plus what
 * only evaluation uses. */
struct interp {
    struct star_vm vm;
    struct star_namemap universe_index; /* name -> index into universe */
    struct star_value *universe;
    size_t n_universe, cap_universe;
    struct star_frame *frames; /* innermost call first; freed on error */
    char *deferred_err;        /* streaming: a statement's error, while the rest is checked */
};

static struct interp *
interp_of(struct star_vm *vm)
{
    return (struct interp *)((char *)vm - offsetof(struct interp, vm));
}

/* Frees the slots of large frames, which live outside the arena, before an
 * error unwinds the C frames that would have freed them. */
static void
release_frames(struct star_vm *vm)
{
    struct interp *in = interp_of(vm);
    for (struct star_frame *f = in->frames; f != NULL; f = f->prev)
        if (f->heap) {
            free(f->slots);
            f->heap = false;
        }
    in->frames = NULL;
}

/* ---- machine ---- */

static int
install(struct star_vm *vm)
{
    jmp_buf jb;
    vm->on_error = &jb;
    if (setjmp(jb) != 0) {
        vm->on_error = NULL;
        return -1;
    }
    star_builtins_install(vm);
    vm->on_error = NULL;
    return 0;
}

struct star_vm *
star_vm_new(void)
{
    struct interp *in = calloc(1, sizeof *in);
    if (in == NULL)
        return NULL;
    star_vm_init(&in->vm);
    in->vm.on_unwind = release_frames;
    if (install(&in->vm) != 0) {
        star_vm_free(&in->vm);
        return NULL;
    }
    return &in->vm;
}

void
star_vm_free(struct star_vm *vm)
{
    if (vm == NULL)
        return;
    star_vm_fini(vm);
    free(interp_of(vm));
}

static void
define(struct star_vm *vm, const char *name, struct star_value v)
{
    struct interp *in = interp_of(vm);
    struct star_str *key = star_intern(vm, name, strlen(name));
    int idx = star_namemap_get(&in->universe_index, key);
    if (idx < 0) {
        if (in->n_universe == in->cap_universe) {
            size_t cap = in->cap_universe ? in->cap_universe * 2 : 64;
            struct star_value *u = star_alloc(vm, cap * sizeof *u);
            if (in->n_universe > 0)
                memcpy(u, in->universe, in->n_universe * sizeof *u);
            in->universe = u;
            in->cap_universe = cap;
        }
        idx = (int)in->n_universe++;
        star_namemap_put(vm, &in->universe_index, key, idx);
    }
    in->universe[idx] = v;
}

int
star_vm_define(struct star_vm *vm, const char *name, struct star_value v)
{
    jmp_buf jb, *saved = vm->on_error;
    vm->on_error = &jb;
    if (setjmp(jb) != 0) {
        vm->on_error = saved;
        return -1;
    }
    define(vm, name, v);
    vm->on_error = saved;
    return 0;
}

int
star_vm_define_builtin(struct star_vm *vm, const char *name, star_builtin_fn fn, void *data)
{
    jmp_buf jb, *saved = vm->on_error;
    vm->on_error = &jb;
    if (setjmp(jb) != 0) {
        vm->on_error = saved;
        return -1;
    }
    struct star_builtin *b = star_alloc(vm, sizeof *b);
    b->name = name;
    b->fn = fn;
    b->recv = star_none();
    b->data = data;
    struct star_value v = {.type = STAR_BUILTIN, .u.bi = b};
    define(vm, name, v);
    vm->on_error = saved;
    return 0;
}

const char *
star_function_name(const struct star_function *f)
{
    return f->def->name->data;
}

/* ---- evaluation ---- */

static struct star_value eval(struct star_vm *vm, struct star_frame *fr, struct ast_node *e);
static enum flow exec_block(struct star_vm *vm, struct star_frame *fr, struct ast_list *body);

static void
at(struct star_vm *vm, const struct ast_node *e)
{
    vm->line = e->line;
    vm->col = e->col;
}

static struct star_value
load_ident(struct star_vm *vm, struct star_frame *fr, struct ast_node *e)
{
    struct star_value v;
    switch (e->u.ident.scope) {
    case SCOPE_LOCAL:
        v = fr->slots[e->u.ident.index];
        if (v.type == STAR_UNBOUND)
            star_fail_at(vm, e->line, e->col, "local variable %s referenced before assignment",
                         e->u.ident.name->data);
        return v;
    case SCOPE_CELL:
        v = fr->cells[e->u.ident.index];
        break;
    case SCOPE_FREE:
        v = *fr->captured[e->u.ident.index];
        break;
    case SCOPE_GLOBAL:
        v = (*fr->globals)[e->u.ident.index];
        if (v.type == STAR_UNBOUND)
            star_fail_at(vm, e->line, e->col, "global variable %s referenced before assignment",
                         e->u.ident.name->data);
        return v;
    default:
        return interp_of(vm)->universe[e->u.ident.index];
    }
    /* A shared variable not yet assigned: Codex's words are those of a
     * local, wherever it is read. */
    if (v.type == STAR_UNBOUND)
        star_fail_at(vm, e->line, e->col, "local variable %s referenced before assignment",
                     e->u.ident.name->data);
    return v;
}

/*
 * Where a sequence operation takes an int (an index, a slice bound, a
 * repetition count), Codex takes a 32-bit one and refuses any other with
 * these words; so does execgate, so the two load the same files.
 */
static bool
too_big_for_i32(struct star_value v)
{
    return v.type == STAR_BIGINT ||
           (v.type == STAR_INT && (v.u.i < INT32_MIN || v.u.i > INT32_MAX));
}

static _Noreturn void
int_too_big(struct star_vm *vm, struct star_value v)
{
    struct star_buf b = {0};
    star_buf_value(vm, &b, v, false);
    star_fail(vm, "Integer value is too big to fit in i32: %s", b.data);
}

static struct star_value
concat(struct star_vm *vm, struct star_value a, struct star_value b)
{
    size_t n = a.u.l->len + b.u.l->len;
    struct star_value r = a.type == STAR_TUPLE ? star_tuple_new(vm, n) : star_list_new(vm, n);
    if (a.u.l->len)
        memcpy(r.u.l->items, a.u.l->items, a.u.l->len * sizeof(struct star_value));
    if (b.u.l->len)
        memcpy(r.u.l->items + a.u.l->len, b.u.l->items, b.u.l->len * sizeof(struct star_value));
    r.u.l->len = n;
    return r;
}

static struct star_value
repeat(struct star_vm *vm, struct star_value seq, int64_t times)
{
    if (times < 0)
        times = 0;
    if (seq.type == STAR_STRING || seq.type == STAR_BYTES) {
        size_t len = seq.u.s->len;
        if (len > 0 && (uint64_t)times > (vm->mem_limit / len))
            star_fail(vm, "out of memory: string repetition too large");
        struct star_str *s = star_str_new(vm, "", 0);
        if (len > 0 && times > 0) {
            s = star_alloc(vm, sizeof *s + len * (size_t)times + 1);
            s->len = len * (size_t)times;
            for (int64_t i = 0; i < times; i++)
                memcpy(s->data + (size_t)i * len, seq.u.s->data, len);
            s->data[s->len] = '\0';
        }
        return seq.type == STAR_BYTES ? star_bytes_of(s) : star_string_of(s);
    }
    size_t len = seq.u.l->len;
    if (len > 0 && (uint64_t)times > vm->mem_limit / 16 / len)
        star_fail(vm, "out of memory: repetition too large");
    size_t n = len * (size_t)times;
    struct star_value r = seq.type == STAR_TUPLE ? star_tuple_new(vm, n) : star_list_new(vm, n);
    for (int64_t i = 0; len > 0 && i < times; i++)
        memcpy(r.u.l->items + (size_t)i * len, seq.u.l->items, len * sizeof(struct star_value));
    r.u.l->len = n;
    return r;
}

static bool
contains(struct star_vm *vm, struct star_value x, struct star_value coll)
{
    switch (coll.type) {
    case STAR_LIST:
    case STAR_TUPLE:
        for (size_t i = 0; i < coll.u.l->len; i++)
            if (star_equal(vm, x, coll.u.l->items[i]))
                return true;
        return false;
    case STAR_DICT:
        return star_dict_get(vm, coll.u.d, x, NULL);
    case STAR_STRING:
        if (x.type != STAR_STRING)
            star_fail(vm, "'in <string>' requires string as left operand, not %s",
                      star_type_name(x));
        if (x.u.s->len == 0)
            return true;
        return memmem(coll.u.s->data, coll.u.s->len, x.u.s->data, x.u.s->len) != NULL;
    case STAR_BYTES:
        /* As in Codex: a byte (an int of 0..255) or a run of bytes. */
        if (x.type == STAR_INT && x.u.i >= INT32_MIN && x.u.i <= INT32_MAX) {
            if (x.u.i < 0 || x.u.i > 255)
                star_fail(vm, "byte value must be in range 0..=255, got %lld", (long long)x.u.i);
            return memchr(coll.u.s->data, (int)x.u.i, coll.u.s->len) != NULL;
        }
        if (x.type != STAR_BYTES)
            star_fail(vm, "argument to 'in bytes' must be an int or bytes, not '%s'",
                      star_type_name(x));
        return x.u.s->len == 0 ||
               memmem(coll.u.s->data, coll.u.s->len, x.u.s->data, x.u.s->len) != NULL;
    case STAR_RANGE: {
        /* A float is in a range when it is one of its ints (1.0 in range(3)). */
        if (x.type == STAR_FLOAT) {
            if (!(x.u.fl == trunc(x.u.fl) && fabs(x.u.fl) < 9223372036854775808.0))
                return false;
            x = star_float_to_int(vm, x.u.fl);
        }
        if (x.type != STAR_INT)
            return false;
        const struct star_range *r = coll.u.r;
        if (r->step > 0 ? (x.u.i < r->start || x.u.i >= r->stop)
                        : (x.u.i > r->start || x.u.i <= r->stop))
            return false;
        /* Codex's arithmetic: the distance wraps in 32 bits and is widened
         * with its sign, which matters when the span does not fit in 32
         * bits (both ends are 32-bit ints, so x is too). */
        uint32_t d = r->step > 0 ? (uint32_t)x.u.i - (uint32_t)r->start
                                 : (uint32_t)r->start - (uint32_t)x.u.i;
        uint32_t size = r->step > 0 ? (uint32_t)r->step : 0u - (uint32_t)r->step;
        return x.u.i == r->start ||
               (uint64_t)(int64_t)(int32_t)d % (uint64_t)(int64_t)(int32_t)size == 0;
    }
    default:
        star_fail(vm, "unknown binary op: %s in %s", star_type_name(x), star_type_name(coll));
    }
}

static int64_t
floor_div(struct star_vm *vm, int64_t a, int64_t b)
{
    if (b == 0)
        star_fail(vm, "integer division by zero");
    int64_t q = a / b; /* the caller keeps INT64_MIN // -1 away */
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static int64_t
floor_mod(struct star_vm *vm, int64_t a, int64_t b)
{
    if (b == 0)
        star_fail(vm, "integer modulo by zero");
    if (b == -1)
        return 0;
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0)))
        m += b;
    return m;
}

/* Codex refuses a left shift by more bits than this (its integers could
 * otherwise grow past any memory with one operator). */
#define STAR_MAX_SHIFT 100000

/*
 * Arithmetic on ints of any size, for what the int64 fast path below
 * cannot hold: the result takes the small form again when it fits.
 */
static struct star_value
big_binary(struct star_vm *vm, int op, struct star_value a, struct star_value b)
{
    struct bigint *x = star_int_to_big(vm, a), *y = star_int_to_big(vm, b), *r = NULL;
    switch (op) {
    case T_PLUS:
        r = bigint_add(vm, x, y);
        break;
    case T_MINUS:
        r = bigint_sub(vm, x, y);
        break;
    case T_STAR:
        r = bigint_mul(vm, x, y);
        break;
    case T_SLASHSLASH:
        if (!bigint_divmod(vm, x, y, &r, NULL))
            star_fail(vm, "integer division by zero");
        break;
    case T_PERCENT:
        if (!bigint_divmod(vm, x, y, NULL, &r))
            star_fail(vm, "integer modulo by zero");
        break;
    case T_PIPE:
        r = bigint_or(vm, x, y);
        break;
    case T_AMP:
        r = bigint_and(vm, x, y);
        break;
    case T_CARET:
        r = bigint_xor(vm, x, y);
        break;
    case T_LTLT:
    case T_GTGT: {
        struct star_buf buf = {0};
        if (bigint_sign(y) < 0) {
            star_buf_value(vm, &buf, b, false);
            star_fail(vm, "negative shift count: %s", buf.data);
        }
        if (bigint_sign(x) == 0 || bigint_sign(y) == 0)
            return a;
        if (op == T_GTGT) {
            if (b.type == STAR_BIGINT) /* past any number's bits */
                return star_int(bigint_sign(x) < 0 ? -1 : 0);
            r = bigint_shr(vm, x, (uint64_t)b.u.i);
            break;
        }
        if (b.type == STAR_BIGINT || b.u.i > STAR_MAX_SHIFT) {
            star_buf_value(vm, &buf, b, false);
            star_fail(vm,
                      "integer overflow computing left shift: shifting by %s bits "
                      "(the limit is %d, as Codex)",
                      buf.data, STAR_MAX_SHIFT);
        }
        r = bigint_shl(vm, x, (uint64_t)b.u.i);
        break;
    }
    case T_SLASH:
        star_fail(vm, "floating-point division is not supported: use // for integer division");
    default:
        star_fail(vm, "unknown binary op: int %s int", star_op_text(op));
    }
    return star_int_big(r);
}

static struct star_value
int_binary(struct star_vm *vm, int op, int64_t a, int64_t b)
{
    int64_t r = 0;
    switch (op) {
    case T_PLUS:
        if (__builtin_add_overflow(a, b, &r))
            break;
        return star_int(r);
    case T_MINUS:
        if (__builtin_sub_overflow(a, b, &r))
            break;
        return star_int(r);
    case T_STAR:
        if (__builtin_mul_overflow(a, b, &r))
            break;
        return star_int(r);
    case T_SLASHSLASH:
        if (a == INT64_MIN && b == -1)
            break;
        return star_int(floor_div(vm, a, b));
    case T_PERCENT:
        return star_int(floor_mod(vm, a, b));
    case T_PIPE:
        return star_int(a | b);
    case T_AMP:
        return star_int(a & b);
    case T_CARET:
        return star_int(a ^ b);
    case T_LTLT:
        if (b < 0)
            star_fail(vm, "negative shift count: %lld", (long long)b);
        if (a == 0)
            return star_int(0);
        /* Codex 0.169 shifts an int of 32 bits by fewer than 32 bits
         * within 32 bits, dropping what goes past them (1 << 31 is
         * -2147483648); a file's results must be the same here. */
        if (b < 32 && a >= INT32_MIN && a <= INT32_MAX)
            return star_int((int32_t)((uint32_t)a << b));
        if (b >= 63 || a > (INT64_MAX >> b) || a < (INT64_MIN >> b))
            break;
        return star_int((int64_t)((uint64_t)a << b));
    case T_GTGT:
        if (b < 0)
            star_fail(vm, "negative shift count: %lld", (long long)b);
        return star_int(b >= 63 ? (a < 0 ? -1 : 0) : a >> b);
    case T_STARSTAR: {
        if (b < 0)
            star_fail(vm, "negative exponent: %lld", (long long)b);
        int64_t acc = 1;
        for (int64_t i = 0; i < b; i++) {
            if (__builtin_mul_overflow(acc, a, &acc))
                star_fail(vm, "integer overflow: the result does not fit in 64 bits");
            if (acc == 0 || acc == 1)
                break;
        }
        if (acc == 1 && a == -1 && (b % 2) == 1)
            acc = -1;
        return star_int(acc);
    }
    case T_SLASH: /* a float even for ints */
        return star_num_binary(vm, op, star_int(a), star_int(b));
    default:
        star_fail(vm, "unknown binary op: int %s int", star_op_text(op));
    }
    /* The result does not fit in 64 bits. */
    return big_binary(vm, op, star_int(a), star_int(b));
}

static struct star_value
star_binary(struct star_vm *vm, int op, struct star_value a, struct star_value b)
{
    switch (op) {
    case T_EQ:
        return star_bool(star_equal(vm, a, b));
    case T_NE:
        return star_bool(!star_equal(vm, a, b));
    case T_LT:
        return star_bool(star_compare(vm, a, b) < 0);
    case T_GT:
        return star_bool(star_compare(vm, a, b) > 0);
    case T_LE:
        return star_bool(star_compare(vm, a, b) <= 0);
    case T_GE:
        return star_bool(star_compare(vm, a, b) >= 0);
    case T_IN:
        return star_bool(contains(vm, a, b));
    case T_NOT:
        return star_bool(!contains(vm, a, b));
    default:
        break;
    }
    if (a.type == STAR_INT && b.type == STAR_INT)
        return int_binary(vm, op, a.u.i, b.u.i);
    /* with a float, or true division (a float even for ints of any size) */
    if ((a.type == STAR_FLOAT || b.type == STAR_FLOAT || op == T_SLASH) && star_is_num(a) &&
        star_is_num(b))
        return star_num_binary(vm, op, a, b);
    if (star_is_int(a) && star_is_int(b))
        return big_binary(vm, op, a, b);
    switch (op) {
    case T_PLUS:
        if (a.type == STAR_STRING && b.type == STAR_STRING) {
            struct star_buf buf = {0};
            star_buf_add(vm, &buf, a.u.s->data, a.u.s->len);
            star_buf_add(vm, &buf, b.u.s->data, b.u.s->len);
            return star_buf_string(vm, &buf);
        }
        if ((a.type == STAR_LIST || a.type == STAR_TUPLE) && a.type == b.type)
            return concat(vm, a, b);
        if (a.type == STAR_BYTES && b.type == STAR_BYTES) {
            struct star_buf buf = {0};
            star_buf_add(vm, &buf, a.u.s->data, a.u.s->len);
            star_buf_add(vm, &buf, b.u.s->data, b.u.s->len);
            return star_bytes(vm, buf.data ? buf.data : "", buf.len);
        }
        break;
    case T_STAR:
        if (star_is_int(b) && (a.type == STAR_STRING || a.type == STAR_BYTES ||
                               a.type == STAR_LIST || a.type == STAR_TUPLE)) {
            if (too_big_for_i32(b))
                int_too_big(vm, b);
            return repeat(vm, a, b.u.i);
        }
        if (star_is_int(a) && (b.type == STAR_STRING || b.type == STAR_BYTES ||
                               b.type == STAR_LIST || b.type == STAR_TUPLE)) {
            if (too_big_for_i32(a))
                int_too_big(vm, a);
            return repeat(vm, b, a.u.i);
        }
        break;
    case T_PERCENT:
        if (a.type == STAR_STRING)
            return star_percent_format(vm, a.u.s, b);
        break;
    case T_PIPE:
        if (a.type == STAR_DICT && b.type == STAR_DICT) {
            struct star_value r = star_dict_new(vm);
            size_t pos = 0;
            struct star_value k, v;
            while (star_dict_next(a.u.d, &pos, &k, &v))
                star_dict_set(vm, r.u.d, k, v);
            pos = 0;
            while (star_dict_next(b.u.d, &pos, &k, &v))
                star_dict_set(vm, r.u.d, k, v);
            return r;
        }
        break;
    default:
        break;
    }
    star_fail(vm, "unknown binary op: %s %s %s", star_type_name(a), star_op_text(op),
              star_type_name(b));
}

static int64_t
seq_len(struct star_vm *vm, struct star_value v)
{
    switch (v.type) {
    case STAR_STRING: /* code points, as in Codex */
        return (int64_t)unicode_count(v.u.s->data, v.u.s->len);
    case STAR_BYTES:
        return (int64_t)v.u.s->len;
    case STAR_LIST:
    case STAR_TUPLE:
        return (int64_t)v.u.l->len;
    default:
        star_fail(vm, "unhandled index operation %s[int]", star_type_name(v));
    }
}

static struct star_value
star_index(struct star_vm *vm, struct star_value x, struct star_value i)
{
    if (x.type == STAR_DICT) {
        struct star_value v;
        if (!star_dict_get(vm, x.u.d, i, &v)) {
            struct star_buf b = {0};
            star_buf_value(vm, &b, i, true);
            star_fail(vm, "key %s not in dict", b.data);
        }
        return v;
    }
    if (x.type == STAR_RANGE) {
        if (too_big_for_i32(i))
            int_too_big(vm, i);
        if (i.type != STAR_INT)
            star_fail(vm, "range index: got %s, want int", star_type_name(i));
        const struct star_range *r = x.u.r;
        int64_t n = star_range_count(vm, r);
        int64_t k = i.u.i < 0 ? i.u.i + n : i.u.i;
        if (k < 0 || k >= n)
            star_fail(vm, "range index %lld out of range [%lld:%lld]", (long long)i.u.i,
                      (long long)-n, (long long)n - 1);
        /* In 32 bits, as Codex computes it: past the last element Codex
         * counts but the range does not yield, the value wraps. */
        return star_int((int32_t)((uint32_t)r->start + (uint32_t)k * (uint32_t)r->step));
    }
    int64_t n = seq_len(vm, x);
    if (too_big_for_i32(i))
        int_too_big(vm, i);
    if (i.type != STAR_INT)
        star_fail(vm, "%s index: got %s, want int", star_type_name(x), star_type_name(i));
    int64_t k = i.u.i < 0 ? i.u.i + n : i.u.i;
    if (k < 0 || k >= n)
        star_fail(vm, "index %lld out of range [%lld:%lld]", (long long)i.u.i, (long long)-n,
                  (long long)n - 1);
    if (x.type == STAR_STRING) { /* the code point at k */
        size_t at = unicode_offset(x.u.s->data, x.u.s->len, (size_t)k), end = at;
        unicode_next(x.u.s->data, x.u.s->len, &end);
        return star_string(vm, x.u.s->data + at, end - at);
    }
    if (x.type == STAR_BYTES) /* a byte is an int, as in Codex */
        return star_int((unsigned char)x.u.s->data[k]);
    return x.u.l->items[k];
}

static int64_t
slice_bound(struct star_vm *vm, struct star_value v, int64_t dflt, int64_t n, int64_t step,
            const char *which)
{
    if (v.type == STAR_UNBOUND || v.type == STAR_NONE)
        return dflt;
    if (v.type != STAR_INT) /* 32 bits at most: star_slice checked */
        star_fail(vm, "invalid %s index: got %s, want int", which, star_type_name(v));
    int64_t i = v.u.i;
    if (i < 0) {
        i += n;
        if (i < 0)
            i = step < 0 ? -1 : 0;
    } else if (i >= n) {
        i = step < 0 ? n - 1 : n;
    }
    return i;
}

static struct star_value
star_slice(struct star_vm *vm, struct star_value x, struct star_value lo, struct star_value hi,
           struct star_value st)
{
    /* Codex takes slice bounds and steps as 32-bit integers, and looks at
     * all three before anything else. */
    const struct star_value parts[] = {lo, hi, st};
    for (size_t k = 0; k < 3; k++)
        if (too_big_for_i32(parts[k]))
            int_too_big(vm, parts[k]);
    int64_t step = 1;
    if (st.type != STAR_UNBOUND && st.type != STAR_NONE) {
        if (st.type != STAR_INT)
            star_fail(vm, "invalid slice step: got %s, want int", star_type_name(st));
        step = st.u.i;
        if (step == 0)
            star_fail(vm, "zero is not a valid slice step");
    }
    int64_t n = x.type == STAR_RANGE ? star_range_count(vm, x.u.r) : seq_len(vm, x);
    int64_t start, stop;
    if (step > 0) {
        start = slice_bound(vm, lo, 0, n, step, "start");
        stop = slice_bound(vm, hi, n, n, step, "end");
    } else {
        start = slice_bound(vm, lo, n - 1, n, step, "start");
        stop = slice_bound(vm, hi, -1, n, step, "end");
    }
    if (x.type == STAR_RANGE) {
        /* A range, as in Codex: the elements at start, start + step, ... */
        const struct star_range *r = x.u.r;
        struct star_range *s = star_alloc(vm, sizeof *s);
        /* Codex's ranges are 32-bit, and each step of the arithmetic is
         * checked in 32 bits (the bounds are within Codex's count of the
         * range, which fits). */
        int32_t rs = (int32_t)r->start, rstep = (int32_t)r->step, off_start, off_stop, a, z, nstep;
        if (__builtin_mul_overflow((int32_t)start, rstep, &off_start) ||
            __builtin_add_overflow(rs, off_start, &a) ||
            __builtin_mul_overflow((int32_t)stop, rstep, &off_stop) ||
            __builtin_add_overflow(rs, off_stop, &z) ||
            __builtin_mul_overflow((int32_t)step, rstep, &nstep))
            star_fail(vm, "integer overflow: the sliced range does not fit in 32 bits");
        s->start = a;
        s->stop = z;
        s->step = nstep;
        return (struct star_value){.type = STAR_RANGE, .u.r = s};
    }
    if (x.type == STAR_STRING) {
        const char *d = x.u.s->data;
        size_t len = x.u.s->len;
        if (step == 1 && start >= stop)
            return star_string(vm, "", 0);
        if (step == 1 || unicode_is_ascii(d, len)) {
            if (step == 1) { /* one run of code points */
                size_t b = unicode_offset(d, len, (size_t)start);
                size_t e = b + unicode_offset(d + b, len - b, (size_t)(stop - start));
                return star_string(vm, d + b, e - b);
            }
            struct star_buf b = {0};
            star_buf_add(vm, &b, "", 0);
            for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
                star_buf_addc(vm, &b, d[i]);
            return star_buf_string(vm, &b);
        }
        /* Other steps over non-ASCII text: the start of every code point. */
        size_t *at = star_alloc(vm, ((size_t)n + 1) * sizeof *at);
        for (size_t i = 0, k = 0; k <= (size_t)n; k++) {
            at[k] = i;
            if (i < len)
                unicode_next(d, len, &i);
        }
        struct star_buf b = {0};
        star_buf_add(vm, &b, "", 0);
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
            star_buf_add(vm, &b, d + at[i], at[i + 1] - at[i]);
        return star_buf_string(vm, &b);
    }
    if (x.type == STAR_BYTES) {
        struct star_buf b = {0};
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
            star_buf_addc(vm, &b, x.u.s->data[i]);
        return star_bytes(vm, b.data ? b.data : "", b.len);
    }
    size_t cnt = 0;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
        cnt++;
    struct star_value r = x.type == STAR_TUPLE ? star_tuple_new(vm, cnt) : star_list_new(vm, cnt);
    size_t j = 0;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
        r.u.l->items[j++] = x.u.l->items[i];
    r.u.l->len = cnt;
    return r;
}

struct star_value *
star_iterable_items(struct star_vm *vm, struct star_value v, size_t *n)
{
    switch (v.type) {
    case STAR_LIST:
    case STAR_TUPLE:
    case STAR_ITERATOR: {
        /* A copy, so the caller may run code that mutates the list. */
        size_t len = v.u.l->len;
        struct star_value *items = star_alloc(vm, (len ? len : 1) * sizeof *items);
        if (len)
            memcpy(items, v.u.l->items, len * sizeof *items);
        *n = len;
        return items;
    }
    case STAR_DICT: {
        size_t len = star_dict_len(v.u.d), pos = 0, i = 0;
        struct star_value *items = star_alloc(vm, (len ? len : 1) * sizeof *items);
        while (star_dict_next(v.u.d, &pos, &items[i], NULL))
            i++;
        *n = i;
        return items;
    }
    case STAR_RANGE: {
        const struct star_range *r = v.u.r;
        uint64_t len = star_range_len(r);
        if (len > vm->mem_limit / sizeof(struct star_value))
            star_fail(vm, "out of memory: range of %llu elements is too large",
                      (unsigned long long)len);
        struct star_value *items = star_alloc(vm, (len ? len : 1) * sizeof *items);
        for (uint64_t i = 0; i < len; i++)
            items[i] = star_int(r->start + (int64_t)i * r->step);
        *n = (size_t)len;
        return items;
    }
    default:
        star_fail(vm, "got %s, want iterable: %s is not iterable", star_type_name(v),
                  star_type_name(v));
    }
}

/* ---- assignment ---- */

static void assign(struct star_vm *vm, struct star_frame *fr, struct ast_node *t,
                   struct star_value v);

static void
star_set_index(struct star_vm *vm, struct star_value x, struct star_value i, struct star_value v)
{
    if (x.type == STAR_DICT) {
        star_dict_set(vm, x.u.d, i, v);
        return;
    }
    if (x.type != STAR_LIST)
        star_fail(vm, "%s value does not support item assignment", star_type_name(x));
    if (x.u.l->frozen)
        star_fail(vm, "cannot assign to element of frozen list");
    if (x.u.l->iterating)
        star_fail(vm, "cannot assign to element of list during iteration");
    if (too_big_for_i32(i))
        int_too_big(vm, i);
    if (i.type != STAR_INT)
        star_fail(vm, "list index: got %s, want int", star_type_name(i));
    int64_t n = (int64_t)x.u.l->len;
    int64_t k = i.u.i < 0 ? i.u.i + n : i.u.i;
    if (k < 0 || k >= n)
        star_fail(vm, "index %lld out of range [%lld:%lld]", (long long)i.u.i, (long long)-n,
                  (long long)n - 1);
    x.u.l->items[k] = v;
}

static void
unpack(struct star_vm *vm, struct star_frame *fr, struct ast_node *t, struct star_value v)
{
    at(vm, t);
    star_stack_check(vm, t->line, t->col);
    if (v.type != STAR_LIST && v.type != STAR_TUPLE)
        star_fail(vm, "got %s in sequence assignment", star_type_name(v));
    size_t want = t->u.list.n, got = v.u.l->len;
    if (got != want)
        star_fail(vm, "too %s values to unpack (got %zu, want %zu)", got > want ? "many" : "few",
                  got, want);
    for (size_t i = 0; i < want; i++)
        assign(vm, fr, t->u.list.items[i], v.u.l->items[i]);
}

/* x.name = ...: the file may say it (Codex reads it), but no value of
 * the language has an attribute that can be set. */
static _Noreturn void
set_attr_fails(struct star_vm *vm, struct ast_node *t, struct star_value x)
{
    at(vm, t);
    star_fail(vm, "operation .%s= (setting an attribute) is not supported on %s",
              t->u.dot.name->data, star_type_name(x));
}

static void
assign(struct star_vm *vm, struct star_frame *fr, struct ast_node *t, struct star_value v)
{
    switch (t->kind) {
    case A_IDENT:
        if (t->u.ident.scope == SCOPE_LOCAL)
            fr->slots[t->u.ident.index] = v;
        else if (t->u.ident.scope == SCOPE_GLOBAL)
            (*fr->globals)[t->u.ident.index] = v;
        else
            fr->cells[t->u.ident.index] = v;
        return;
    case A_INDEX: {
        struct star_value x = eval(vm, fr, t->u.x.a);
        struct star_value i = eval(vm, fr, t->u.x.b);
        at(vm, t);
        star_set_index(vm, x, i, v);
        return;
    }
    case A_DOT:
        set_attr_fails(vm, t, eval(vm, fr, t->u.dot.obj));
    default:
        unpack(vm, fr, t, v);
    }
}

/* ---- calls ---- */

static struct star_value
make_function(struct star_vm *vm, struct star_frame *fr, struct ast_func *def)
{
    struct star_function *f = star_alloc(vm, sizeof *f);
    f->def = def;
    f->globals = fr->globals;
    f->defaults = star_alloc(vm, (def->nparams ? def->nparams : 1) * sizeof *f->defaults);
    for (size_t i = 0; i < def->nparams; i++)
        if (def->params[i].dflt != NULL)
            f->defaults[i] = eval(vm, fr, def->params[i].dflt);
    if (def->ncaptures > 0) {
        /* The variables themselves, not their values: an assignment after
         * this one is seen by both, as in Codex. */
        f->captured = star_alloc(vm, def->ncaptures * sizeof *f->captured);
        for (size_t i = 0; i < def->ncaptures; i++) {
            struct ast_capture *c = &def->captures[i];
            f->captured[i] = c->scope == SCOPE_CELL ? &fr->cells[c->index] : fr->captured[c->index];
        }
    }
    struct star_value v = {.type = STAR_FUNCTION, .u.f = f};
    return v;
}

static void
bind_params(struct star_vm *vm, struct star_function *fn, struct star_args *args,
            struct star_value *slots)
{
    struct ast_func *d = fn->def;
    const char *name = d->name->data;
    size_t named = d->npos + d->nkwonly;
    size_t npos = args->npos < d->npos ? args->npos : d->npos;
    for (size_t i = 0; i < npos; i++)
        slots[i] = args->pos[i];
    if (args->npos > d->npos) {
        if (d->varargs < 0)
            star_fail(vm, "function %s accepts %s%zu positional argument%s (%zu given)", name,
                      d->npos == named ? "" : "at most ", d->npos, d->npos == 1 ? "" : "s",
                      args->npos);
        size_t extra = args->npos - d->npos;
        struct star_value t = star_tuple_new(vm, extra);
        memcpy(t.u.l->items, args->pos + d->npos, extra * sizeof *args->pos);
        slots[d->varargs] = t;
    } else if (d->varargs >= 0) {
        slots[d->varargs] = star_tuple_new(vm, 0);
    }
    struct star_value kw = {.type = STAR_UNBOUND};
    if (d->kwargs >= 0) {
        kw = star_dict_new(vm);
        slots[d->kwargs] = kw;
    }
    for (size_t k = 0; k < args->nkw; k++) {
        struct star_str *key = args->kwnames[k];
        size_t j = 0;
        while (j < named && d->params[j].name != key)
            j++;
        if (j < named) {
            if (slots[j].type != STAR_UNBOUND)
                star_fail(vm, "function %s got multiple values for parameter %s", name, key->data);
            slots[j] = args->kwvals[k];
        } else if (kw.type == STAR_DICT) {
            if (star_dict_get(vm, kw.u.d, star_string_of(key), NULL))
                star_fail(vm, "function %s got multiple values for keyword argument %s", name,
                          key->data);
            star_dict_set(vm, kw.u.d, star_string_of(key), args->kwvals[k]);
        } else {
            star_fail(vm, "function %s got an unexpected keyword argument %s", name, key->data);
        }
    }
    for (size_t j = 0; j < named; j++) {
        if (slots[j].type != STAR_UNBOUND)
            continue;
        if (fn->defaults[j].type == STAR_UNBOUND)
            star_fail(vm, "function %s missing 1 argument (%s)", name, d->params[j].name->data);
        slots[j] = fn->defaults[j];
    }
}

/* Gives fr n new cells, all unassigned.  They live in the arena, as
 * long as a function made in the frame may. */
static void
frame_cells(struct star_vm *vm, struct star_frame *fr, size_t n)
{
    fr->cells = n > 0 ? star_alloc_array(vm, n, sizeof *fr->cells) : NULL;
}

/* Gives fr room for n locals: inline when they fit, else on the heap
 * (fr->heap tells the frame's owner to free them). */
static void
frame_slots(struct star_vm *vm, struct star_frame *fr, size_t n)
{
    if (n <= INLINE_SLOTS) {
        fr->slots = fr->inline_slots;
        return;
    }
    fr->slots = calloc(n, sizeof *fr->slots);
    if (fr->slots == NULL)
        star_fail(vm, "out of memory");
    fr->heap = true;
}

static void
call_depth_check(struct star_vm *vm)
{
    if (vm->call_depth >= STAR_MAX_CALL_DEPTH)
        star_fail(vm, "Starlark call stack overflow: more than %d nested calls",
                  STAR_MAX_CALL_DEPTH);
}

static struct star_value
call_function(struct star_vm *vm, struct star_function *fn, struct star_args *args)
{
    struct ast_func *d = fn->def;
    /* Recursion is allowed, as in Codex; the depth of calls is not. */
    call_depth_check(vm);
    star_step(vm);

    struct interp *in = interp_of(vm);
    struct star_frame fr = {.prev = in->frames, .captured = fn->captured, .globals = fn->globals};
    frame_slots(vm, &fr, d->nlocals);
    in->frames = &fr;
    bind_params(vm, fn, args, fr.slots);
    if (d->ncells > 0) {
        frame_cells(vm, &fr, d->ncells);
        for (uint32_t i = 0; i < d->ncells; i++) /* a parameter's value; else unassigned */
            fr.cells[i] = fr.slots[d->cell_slots[i]];
    }

    vm->call_depth++;
    struct star_value result = star_none();
    if (d->expr != NULL) {
        result = eval(vm, &fr, d->expr);
    } else if (exec_block(vm, &fr, &d->body) == FLOW_RETURN) {
        result = fr.ret;
    }
    vm->call_depth--;
    in->frames = fr.prev;
    if (fr.heap)
        free(fr.slots);
    return result;
}

struct star_value
star_call(struct star_vm *vm, struct star_value fn, struct star_args *args)
{
    if (fn.type == STAR_BUILTIN) {
        /* A built-in's call counts toward the depth, as in Codex. */
        call_depth_check(vm);
        star_step(vm);
        vm->call_depth++;
        struct star_value v = fn.u.bi->fn(vm, fn.u.bi, args);
        vm->call_depth--;
        return v;
    }
    if (fn.type == STAR_FUNCTION)
        return call_function(vm, fn.u.f, args);
    star_fail(vm, "invalid call of non-function (%s)", star_type_name(fn));
}

struct argbuf {
    struct star_args a;
    size_t cap_pos, cap_kw;
    struct star_value pos[INLINE_ARGS];
    struct star_str *kwnames[INLINE_ARGS];
    struct star_value kwvals[INLINE_ARGS];
};

static void
arg_pos(struct star_vm *vm, struct argbuf *ab, struct star_value v)
{
    if (ab->a.npos == ab->cap_pos) {
        size_t cap = ab->cap_pos * 2;
        struct star_value *p = star_alloc(vm, cap * sizeof *p);
        memcpy(p, ab->a.pos, ab->a.npos * sizeof *p);
        ab->a.pos = p;
        ab->cap_pos = cap;
    }
    ab->a.pos[ab->a.npos++] = v;
}

static void
arg_kw(struct star_vm *vm, struct argbuf *ab, struct star_str *name, struct star_value v)
{
    for (size_t i = 0; i < ab->a.nkw; i++)
        if (ab->a.kwnames[i] == name)
            star_fail(vm, "keyword argument %s given more than once", name->data);
    if (ab->a.nkw == ab->cap_kw) {
        size_t cap = ab->cap_kw * 2;
        struct star_str **n = star_alloc(vm, cap * sizeof *n);
        struct star_value *w = star_alloc(vm, cap * sizeof *w);
        memcpy(n, ab->a.kwnames, ab->a.nkw * sizeof *n);
        memcpy(w, ab->a.kwvals, ab->a.nkw * sizeof *w);
        ab->a.kwnames = n;
        ab->a.kwvals = w;
        ab->cap_kw = cap;
    }
    ab->a.kwnames[ab->a.nkw] = name;
    ab->a.kwvals[ab->a.nkw++] = v;
}

static void
eval_args(struct star_vm *vm, struct star_frame *fr, struct ast_node *call, struct argbuf *ab)
{
    ab->a.pos = ab->pos;
    ab->a.npos = 0;
    ab->a.nkw = 0;
    ab->a.kwnames = ab->kwnames;
    ab->a.kwvals = ab->kwvals;
    ab->cap_pos = ab->cap_kw = INLINE_ARGS;
    for (size_t i = 0; i < call->u.call.nargs; i++) {
        struct ast_arg *a = &call->u.call.args[i];
        struct star_value v = eval(vm, fr, a->value);
        switch (a->kind) {
        case ARG_POS:
            arg_pos(vm, ab, v);
            break;
        case ARG_KW:
            arg_kw(vm, ab, a->name, v);
            break;
        case ARG_STAR: {
            at(vm, a->value);
            if (!star_is_iterable(v))
                star_fail(vm, "argument after * must be iterable, not %s", star_type_name(v));
            size_t n;
            struct star_value *items = star_iterable_items(vm, v, &n);
            for (size_t j = 0; j < n; j++)
                arg_pos(vm, ab, items[j]);
            break;
        }
        case ARG_STARSTAR: {
            at(vm, a->value);
            if (v.type != STAR_DICT)
                star_fail(vm, "argument after ** must be a dict, not %s", star_type_name(v));
            size_t pos = 0;
            struct star_value k, val;
            while (star_dict_next(v.u.d, &pos, &k, &val)) {
                if (k.type != STAR_STRING)
                    star_fail(vm, "keywords must be strings, not %s", star_type_name(k));
                arg_kw(vm, ab, star_intern(vm, k.u.s->data, k.u.s->len), val);
            }
            break;
        }
        }
    }
}

static struct star_value
eval_call(struct star_vm *vm, struct star_frame *fr, struct ast_node *e)
{
    struct ast_node *fnode = e->u.call.fn;
    struct argbuf ab;
    if (fnode->kind == A_DOT) {
        /* obj.method(...): call the method without allocating a bound value. */
        struct star_value obj = eval(vm, fr, fnode->u.dot.obj);
        star_builtin_fn m = star_method(obj, fnode->u.dot.name);
        if (m == NULL) {
            at(vm, fnode);
            star_getattr(vm, obj, fnode->u.dot.name); /* fails with a suggestion */
        }
        eval_args(vm, fr, e, &ab);
        struct star_builtin bi = {.name = fnode->u.dot.name->data, .fn = m, .recv = obj};
        at(vm, e);
        star_step(vm);
        return m(vm, &bi, &ab.a);
    }
    struct star_value fn = eval(vm, fr, fnode);
    eval_args(vm, fr, e, &ab);
    at(vm, e);
    return star_call(vm, fn, &ab.a);
}

/* ---- comprehensions ---- */

/*
 * Whether Codex's compiler would know the value of e before running it:
 * literals, globals, built-ins, and operators, indexes, slices and
 * built-in calls over such values (it evaluates those while compiling).
 * It drops a loop over such a value when it counts it empty, so a range
 * it counts 0 elements of (star_range_codex_empty) is not walked there,
 * while the same range in a local variable is.  A global bound only
 * after a def's body was compiled is not known to Codex; it is here.
 */
static bool
codex_known(const struct ast_node *e)
{
    if (e == NULL)
        return true;
    switch (e->kind) {
    case A_INT:
    case A_FLOAT:
    case A_BIGINT:
    case A_STRING:
    case A_BYTES:
        return true;
    case A_IDENT:
        return e->u.ident.scope == SCOPE_GLOBAL || e->u.ident.scope == SCOPE_UNIVERSE;
    case A_LIST:
    case A_TUPLE:
        for (size_t i = 0; i < e->u.list.n; i++)
            if (!codex_known(e->u.list.items[i]))
                return false;
        return true;
    case A_CALL:
        if (e->u.call.fn->kind != A_IDENT || e->u.call.fn->u.ident.scope != SCOPE_UNIVERSE)
            return false;
        for (size_t i = 0; i < e->u.call.nargs; i++)
            if (!codex_known(e->u.call.args[i].value))
                return false;
        return true;
    case A_UNARY:
    case A_BINARY:
    case A_INDEX:
    case A_SLICE:
        return codex_known(e->u.x.a) && codex_known(e->u.x.b) && codex_known(e->u.x.c) &&
               codex_known(e->u.x.d);
    default:
        return false;
    }
}

/* Whether Codex drops a loop over it (see codex_known). */
static bool
codex_skips_loop(const struct ast_node *iter, struct star_value it)
{
    return it.type == STAR_RANGE && star_range_codex_empty(it.u.r) && codex_known(iter);
}

static void
comp_clause(struct star_vm *vm, struct star_frame *fr, struct ast_node *e, size_t k,
            struct star_value result)
{
    /* One frame per `for` clause; a run of `if` clauses is a loop (Codex
     * takes 100 000 of them). */
    star_stack_check(vm, e->line, e->col);
    for (; k < e->u.comp.nclauses && !e->u.comp.clauses[k].is_for; k++)
        if (!star_truth(eval(vm, fr, e->u.comp.clauses[k].expr)))
            return;
    if (k == e->u.comp.nclauses) {
        star_step(vm);
        if (e->u.comp.is_dict) {
            struct star_value key = eval(vm, fr, e->u.comp.body);
            struct star_value val = eval(vm, fr, e->u.comp.val);
            at(vm, e->u.comp.body);
            star_dict_set(vm, result.u.d, key, val);
        } else {
            star_list_append(vm, result, eval(vm, fr, e->u.comp.body));
        }
        return;
    }
    struct ast_clause *c = &e->u.comp.clauses[k];
    struct star_value it = eval(vm, fr, c->expr);
    at(vm, c->expr);
    /* As a for loop, the first clause may skip a range Codex counts 0
     * elements of (Codex's later clauses yield them all). */
    if (k == 0 && codex_skips_loop(c->expr, it))
        return;
    size_t n;
    struct star_value *items = star_iterable_items(vm, it, &n);
    /* Like a for loop, a comprehension locks what it walks. */
    if (it.type == STAR_LIST)
        it.u.l->iterating++;
    else if (it.type == STAR_DICT)
        star_dict_iter_begin(it.u.d);
    for (size_t i = 0; i < n; i++) {
        assign(vm, fr, c->target, items[i]);
        comp_clause(vm, fr, e, k + 1, result);
    }
    if (it.type == STAR_LIST)
        it.u.l->iterating--;
    else if (it.type == STAR_DICT)
        star_dict_iter_end(it.u.d);
}

/* ---- expressions ---- */

static struct star_value
eval_fstring(struct star_vm *vm, struct star_frame *fr, struct ast_node *e)
{
    struct star_buf b = {0};
    star_buf_add(vm, &b, "", 0);
    for (size_t i = 0; i < e->u.list.n; i++) {
        struct ast_node *p = e->u.list.items[i];
        if (p->kind == A_STRING) {
            star_buf_add(vm, &b, p->u.sval->data, p->u.sval->len);
        } else {
            struct star_value v = eval(vm, fr, p->u.x.a);
            star_buf_value(vm, &b, v, p->op == 'r');
        }
    }
    return star_buf_string(vm, &b);
}

static struct star_value
eval_unary(struct star_vm *vm, struct star_value v, int op)
{
    if (v.type == STAR_FLOAT && op != T_TILDE)
        return op == T_MINUS ? star_float(-v.u.fl) : v;
    if (v.type == STAR_BIGINT && op != T_PLUS)
        return star_int_big(op == T_MINUS ? bigint_neg(vm, v.u.big) : bigint_not(vm, v.u.big));
    if (!star_is_int(v))
        star_fail(vm, "unknown unary op: %s%s",
                  op == T_MINUS  ? "-"
                  : op == T_PLUS ? "+"
                                 : "~",
                  star_type_name(v));
    if (op == T_MINUS) {
        if (v.u.i == INT64_MIN) /* 2^63 */
            return star_int_big(bigint_neg(vm, bigint_from_i64(vm, v.u.i)));
        return star_int(-v.u.i);
    }
    if (op == T_TILDE)
        return star_int(~v.u.i);
    return v;
}

static struct star_value eval_node(struct star_vm *vm, struct star_frame *fr, struct ast_node *e);

/*
 * The parser bounds how deep one expression nests, and calls nest at most
 * STAR_MAX_CALL_DEPTH deep; nested expressions inside nested calls still
 * multiply, so the stack left is checked at every level.
 */
static struct star_value
eval(struct star_vm *vm, struct star_frame *fr, struct ast_node *e)
{
    star_stack_check(vm, e->line, e->col);
    return eval_node(vm, fr, e);
}

static struct star_value
eval_node(struct star_vm *vm, struct star_frame *fr, struct ast_node *e)
{
    switch (e->kind) {
    case A_IDENT:
        return load_ident(vm, fr, e);
    case A_INT:
        return star_int(e->u.ival);
    case A_FLOAT:
        return star_float(e->u.dval);
    case A_BIGINT:
        return star_int_big(e->u.big);
    case A_STRING:
        return star_string_of(e->u.sval);
    case A_BYTES:
        return star_bytes_of(e->u.sval);
    case A_FSTRING:
        return eval_fstring(vm, fr, e);
    case A_LIST:
    case A_TUPLE: {
        size_t n = e->u.list.n;
        struct star_value r = e->kind == A_TUPLE ? star_tuple_new(vm, n) : star_list_new(vm, n);
        for (size_t i = 0; i < n; i++)
            r.u.l->items[i] = eval(vm, fr, e->u.list.items[i]);
        r.u.l->len = n;
        return r;
    }
    case A_DICT: {
        struct star_value d = star_dict_new(vm);
        for (size_t i = 0; i < e->u.dict.keys.n; i++) {
            struct star_value k = eval(vm, fr, e->u.dict.keys.items[i]);
            struct star_value v = eval(vm, fr, e->u.dict.vals.items[i]);
            at(vm, e->u.dict.keys.items[i]);
            if (star_dict_get(vm, d.u.d, k, NULL)) {
                struct star_buf b = {0};
                star_buf_value(vm, &b, k, true);
                star_fail(vm, "duplicate key %s in dict literal", b.data);
            }
            star_dict_set(vm, d.u.d, k, v);
        }
        return d;
    }
    case A_COMP: {
        struct star_value r = e->u.comp.is_dict ? star_dict_new(vm) : star_list_new(vm, 0);
        comp_clause(vm, fr, e, 0, r);
        return r;
    }
    case A_UNARY: {
        struct star_value v = eval(vm, fr, e->u.x.a);
        at(vm, e);
        return eval_unary(vm, v, e->op);
    }
    case A_BINARY: {
        struct star_value a = eval(vm, fr, e->u.x.a);
        struct star_value b = eval(vm, fr, e->u.x.b);
        at(vm, e);
        return star_binary(vm, e->op, a, b);
    }
    case A_AND: {
        struct star_value a = eval(vm, fr, e->u.x.a);
        return star_truth(a) ? eval(vm, fr, e->u.x.b) : a;
    }
    case A_OR: {
        struct star_value a = eval(vm, fr, e->u.x.a);
        return star_truth(a) ? a : eval(vm, fr, e->u.x.b);
    }
    case A_NOT:
        return star_bool(!star_truth(eval(vm, fr, e->u.x.a)));
    case A_COND:
        return star_truth(eval(vm, fr, e->u.x.b)) ? eval(vm, fr, e->u.x.a) : eval(vm, fr, e->u.x.c);
    case A_INDEX: {
        struct star_value x = eval(vm, fr, e->u.x.a);
        struct star_value i = eval(vm, fr, e->u.x.b);
        at(vm, e);
        return star_index(vm, x, i);
    }
    case A_INDEX2: {
        struct star_value x = eval(vm, fr, e->u.x.a);
        eval(vm, fr, e->u.x.b);
        eval(vm, fr, e->u.x.c);
        at(vm, e);
        star_fail(vm, "operation [,] (two indexes) is not supported on %s", star_type_name(x));
    }
    case A_SLICE: {
        struct star_value x = eval(vm, fr, e->u.x.a);
        struct star_value none = {.type = STAR_UNBOUND};
        struct star_value lo = e->u.x.b ? eval(vm, fr, e->u.x.b) : none;
        struct star_value hi = e->u.x.c ? eval(vm, fr, e->u.x.c) : none;
        struct star_value st = e->u.x.d ? eval(vm, fr, e->u.x.d) : none;
        at(vm, e);
        return star_slice(vm, x, lo, hi, st);
    }
    case A_DOT: {
        struct star_value obj = eval(vm, fr, e->u.dot.obj);
        at(vm, e);
        return star_getattr(vm, obj, e->u.dot.name);
    }
    case A_CALL:
        return eval_call(vm, fr, e);
    case A_LAMBDA:
        return make_function(vm, fr, e->u.def.func);
    default:
        star_fail_at(vm, e->line, e->col, "internal error: not an expression");
    }
}

/* ---- statements ---- */

static enum flow
exec_for(struct star_vm *vm, struct star_frame *fr, struct ast_node *st)
{
    struct star_value it = eval(vm, fr, st->u.fors.iter);
    at(vm, st->u.fors.iter);
    if (it.type == STAR_RANGE) {
        /* Lazily, so a huge range costs steps, not memory.  Where Codex
         * drops the loop, so does this (codex_known). */
        const struct star_range *r = it.u.r;
        if (codex_skips_loop(st->u.fors.iter, it))
            return FLOW_NORMAL;
        for (int64_t i = r->start; r->step > 0 ? i < r->stop : i > r->stop;) {
            star_step(vm);
            assign(vm, fr, st->u.fors.target, star_int(i));
            enum flow f = exec_block(vm, fr, &st->u.fors.body);
            if (f == FLOW_BREAK)
                break;
            if (f == FLOW_RETURN)
                return f;
            if (__builtin_add_overflow(i, r->step, &i))
                break;
        }
        return FLOW_NORMAL;
    }
    if (it.type == STAR_LIST || it.type == STAR_TUPLE || it.type == STAR_DICT ||
        it.type == STAR_ITERATOR) {
        /* Lists and dicts are locked against mutation while the loop runs. */
        enum flow result = FLOW_NORMAL;
        if (it.type == STAR_DICT) {
            size_t n;
            struct star_value *keys = star_iterable_items(vm, it, &n);
            star_dict_iter_begin(it.u.d);
            for (size_t i = 0; i < n; i++) {
                star_step(vm);
                assign(vm, fr, st->u.fors.target, keys[i]);
                enum flow f = exec_block(vm, fr, &st->u.fors.body);
                if (f == FLOW_BREAK)
                    break;
                if (f == FLOW_RETURN) {
                    result = f;
                    break;
                }
            }
            star_dict_iter_end(it.u.d);
            return result;
        }
        struct star_list *l = it.u.l;
        l->iterating++;
        for (size_t i = 0; i < l->len; i++) {
            star_step(vm);
            assign(vm, fr, st->u.fors.target, l->items[i]);
            enum flow f = exec_block(vm, fr, &st->u.fors.body);
            if (f == FLOW_BREAK)
                break;
            if (f == FLOW_RETURN) {
                result = f;
                break;
            }
        }
        l->iterating--;
        return result;
    }
    at(vm, st); /* Codex reports a value it cannot walk at the 'for' */
    star_fail(vm, "got %s, want iterable: %s is not iterable", star_type_name(it),
              star_type_name(it));
}

static void
exec_augassign(struct star_vm *vm, struct star_frame *fr, struct ast_node *st)
{
    struct ast_node *t = st->u.x.a;
    if (t->kind == A_IDENT) {
        struct star_value old = load_ident(vm, fr, t);
        struct star_value rhs = eval(vm, fr, st->u.x.b);
        at(vm, st);
        if (st->op == T_PLUS && old.type == STAR_LIST) {
            /* list += iterable extends in place. */
            if (!star_is_iterable(rhs))
                star_fail(vm, "unknown binary op: list += %s", star_type_name(rhs));
            star_range_check_listable(vm, rhs, "list +=");
            size_t n;
            struct star_value *items = star_iterable_items(vm, rhs, &n);
            for (size_t i = 0; i < n; i++)
                star_list_append(vm, old, items[i]);
            return;
        }
        assign(vm, fr, t, star_binary(vm, st->op, old, rhs));
        return;
    }
    if (t->kind == A_DOT) {
        /* Reading it fails first, where the statement starts, as in
         * Codex; a method can be read, but not combined nor set. */
        struct star_value obj = eval(vm, fr, t->u.dot.obj);
        at(vm, st);
        struct star_value old = star_getattr(vm, obj, t->u.dot.name);
        struct star_value rhs = eval(vm, fr, st->u.x.b);
        at(vm, st);
        star_binary(vm, st->op, old, rhs);
        set_attr_fails(vm, t, obj);
    }
    struct star_value x = eval(vm, fr, t->u.x.a);
    struct star_value i = eval(vm, fr, t->u.x.b);
    at(vm, t);
    struct star_value old = star_index(vm, x, i);
    struct star_value rhs = eval(vm, fr, st->u.x.b);
    at(vm, st);
    if (st->op == T_PLUS && old.type == STAR_LIST) {
        star_range_check_listable(vm, rhs, "list +=");
        size_t n;
        struct star_value *items = star_iterable_items(vm, rhs, &n);
        for (size_t k = 0; k < n; k++)
            star_list_append(vm, old, items[k]);
        return;
    }
    star_set_index(vm, x, i, star_binary(vm, st->op, old, rhs));
}

static enum flow
exec_block(struct star_vm *vm, struct star_frame *fr, struct ast_list *body)
{
    if (body->n > 0)
        star_stack_check(vm, body->items[0]->line, body->items[0]->col);
    for (size_t i = 0; i < body->n; i++) {
        struct ast_node *st = body->items[i];
        star_step(vm);
        switch (st->kind) {
        case A_EXPR_STMT:
            eval(vm, fr, st->u.x.a);
            break;
        case A_ASSIGN: {
            struct star_value v = eval(vm, fr, st->u.x.b);
            assign(vm, fr, st->u.x.a, v);
            break;
        }
        case A_AUGASSIGN:
            exec_augassign(vm, fr, st);
            break;
        case A_DEF:
            assign(vm, fr, st->u.def.target, make_function(vm, fr, st->u.def.func));
            break;
        case A_RETURN:
            fr->ret = st->u.x.a ? eval(vm, fr, st->u.x.a) : star_none();
            return FLOW_RETURN;
        case A_IF: {
            bool c = star_truth(eval(vm, fr, st->u.ifs.cond));
            enum flow f = exec_block(vm, fr, c ? &st->u.ifs.then : &st->u.ifs.els);
            if (f != FLOW_NORMAL)
                return f;
            break;
        }
        case A_FOR: {
            enum flow f = exec_for(vm, fr, st);
            if (f == FLOW_RETURN)
                return f;
            break;
        }
        case A_BREAK:
            return FLOW_BREAK;
        case A_CONTINUE:
            return FLOW_CONTINUE;
        default:
            break;
        }
    }
    return FLOW_NORMAL;
}

/* ---- argument binding for built-ins ---- */

void
star_args_bind(struct star_vm *vm, const char *fname, struct star_args *args,
               const char *const *params, size_t nreq, size_t nparams, struct star_value *out)
{
    for (size_t i = 0; i < nparams; i++)
        out[i].type = STAR_UNBOUND;
    if (args->npos > nparams)
        star_fail(vm, "%s: got %zu arguments, want at most %zu", fname, args->npos, nparams);
    for (size_t i = 0; i < args->npos; i++)
        out[i] = args->pos[i];
    for (size_t k = 0; k < args->nkw; k++) {
        const char *key = args->kwnames[k]->data;
        size_t j = 0;
        while (j < nparams && strcmp(params[j], key) != 0)
            j++;
        if (j == nparams)
            star_fail(vm, "%s: unexpected keyword argument '%s'", fname, key);
        if (out[j].type != STAR_UNBOUND)
            star_fail(vm, "%s: got multiple values for argument '%s'", fname, key);
        out[j] = args->kwvals[k];
    }
    for (size_t i = 0; i < nreq; i++)
        if (out[i].type == STAR_UNBOUND)
            star_fail(vm, "%s: missing argument for %s", fname, params[i]);
}

/* ---- running a file ---- */

static void
run_module(struct star_vm *vm, const char *src, size_t len)
{
    struct interp *in = interp_of(vm);
    struct ast_module *m = star_parse(vm, &in->universe_index, src, len);
    struct star_frame fr = {.prev = in->frames};
    fr.globals = star_alloc(vm, sizeof *fr.globals);
    *fr.globals = star_alloc(vm, (m->nglobals ? m->nglobals : 1) * sizeof **fr.globals);
    frame_slots(vm, &fr, m->nlocals);
    frame_cells(vm, &fr, m->ncells);
    in->frames = &fr;
    exec_block(vm, &fr, &m->body);
    in->frames = fr.prev;
    if (fr.heap)
        free(fr.slots);
    /* Globals are frozen once the file has run. */
    for (uint32_t i = 0; i < m->nglobals; i++)
        star_freeze(vm, (*fr.globals)[i]);
}

/* A literal argument: nothing in it can be kept by the call. */
static bool
literal_arg(const struct ast_node *e)
{
    switch (e->kind) {
    case A_INT:
    case A_FLOAT:
    case A_BIGINT:
    case A_STRING:
        return true;
    case A_IDENT:
        return e->u.ident.scope == SCOPE_UNIVERSE;
    case A_LIST:
    case A_TUPLE:
        for (size_t i = 0; i < e->u.list.n; i++)
            if (!literal_arg(e->u.list.items[i]))
                return false;
        return true;
    default:
        return false;
    }
}

/* Statements that leave nothing behind in the arena once run: calls of
 * built-ins with literal arguments (what a literal rules file is).  A
 * built-in that keeps part of its arguments calls star_keep. */
static bool
transient_stmts(const struct ast_list *body)
{
    for (size_t i = 0; i < body->n; i++) {
        const struct ast_node *st = body->items[i];
        if (st->kind != A_EXPR_STMT)
            return false;
        const struct ast_node *e = st->u.x.a;
        if (e->kind != A_CALL || e->u.call.fn->kind != A_IDENT ||
            e->u.call.fn->u.ident.scope != SCOPE_UNIVERSE)
            return false;
        for (size_t k = 0; k < e->u.call.nargs; k++)
            if ((e->u.call.args[k].kind != ARG_POS && e->u.call.args[k].kind != ARG_KW) ||
                !literal_arg(e->u.call.args[k].value))
                return false;
    }
    return true;
}

/*
 * Runs each top-level statement as soon as it is parsed, so a file of many
 * statements is never held as one tree.  What a user sees stays what a
 * whole-file run shows: after a statement fails, the rest is still parsed
 * and resolved, and a syntax error or undefined name there is reported
 * instead (as a file is checked whole before it runs); the first failure
 * of a statement otherwise (returns -1 with vm->err set).  Returns 0 when
 * the file ran, 1 when a statement binds a built-in's
 * name an earlier one used (star_parse_rebinds_predeclared).
 */
static int
run_stream(struct star_vm *vm, const char *src, size_t len)
{
    struct interp *in = interp_of(vm);
    struct star_stream *st = star_parse_begin(vm, &in->universe_index, src, len);
    struct star_frame fr = {.prev = in->frames};
    fr.globals = star_alloc(vm, sizeof *fr.globals);
    uint32_t cap_globals = 64, cap_slots = INLINE_SLOTS;
    *fr.globals = star_alloc_array(vm, cap_globals, sizeof **fr.globals);
    fr.slots = fr.inline_slots;
    bool running = true;
    for (;;) {
        uint32_t nlocals, ncells;
        struct ast_list body = star_parse_next(st, &nlocals, &ncells);
        if (star_parse_rebinds_predeclared(st)) {
            if (fr.heap)
                free(fr.slots);
            free(in->deferred_err);
            in->deferred_err = NULL;
            return STAR_EXEC_WHOLE;
        }
        if (body.n == 0)
            break;
        if (star_parse_deferred(st))
            running = false; /* star_parse_end reports it */
        if (!running) {
            star_parse_ran(st, false);
            continue;
        }
        uint32_t ng = star_parse_nglobals(st);
        if (ng > cap_globals) {
            uint32_t cap = cap_globals;
            while (cap < ng)
                cap *= 2;
            struct star_value *g = star_alloc_array(vm, cap, sizeof *g);
            star_keep(vm);
            memcpy(g, *fr.globals, cap_globals * sizeof *g);
            *fr.globals = g;
            cap_globals = cap;
        }
        if (nlocals > cap_slots) {
            if (fr.heap)
                free(fr.slots);
            fr.heap = false;
            frame_slots(vm, &fr, nlocals);
            cap_slots = nlocals;
        } else if (nlocals > 0) {
            memset(fr.slots, 0, nlocals * sizeof *fr.slots);
        }
        frame_cells(vm, &fr, ncells); /* a statement's own: closures may keep them */
        in->frames = &fr;
        jmp_buf jb;
        jmp_buf *outer = vm->on_error;
        vm->on_error = &jb;
        if (setjmp(jb) == 0) {
            exec_block(vm, &fr, &body);
            star_parse_ran(st, transient_stmts(&body));
        } else {
            star_parse_ran(st, false);
            /* Kept while the rest is checked; release_frames freed the
             * frame's slots. */
            running = false;
            in->deferred_err = vm->err;
            vm->err = NULL;
        }
        vm->on_error = outer;
        in->frames = fr.prev;
    }
    star_parse_end(st);
    if (in->deferred_err != NULL) {
        free(vm->err);
        vm->err = in->deferred_err;
        in->deferred_err = NULL;
        return -1;
    }
    if (fr.heap)
        free(fr.slots);
    uint32_t ng = star_parse_nglobals(st);
    for (uint32_t i = 0; i < ng; i++)
        star_freeze(vm, (*fr.globals)[i]);
    return 0;
}

int
star_vm_exec_file(struct star_vm *vm, const char *name, const char *src, size_t len)
{
    jmp_buf jb;
    star_vm_begin(vm, name);
    interp_of(vm)->frames = NULL;
    vm->on_error = &jb;
    if (setjmp(jb) != 0) {
        vm->on_error = NULL;
        if (vm->err == NULL)
            vm->err = strdup("out of memory");
        return -1;
    }
    if (len > STAR_MAX_FILE_BYTES)
        star_fail_at(vm, 1, 1, "file is too large (%zu bytes; the limit is %u MiB)", len,
                     STAR_MAX_FILE_BYTES >> 20);
    run_module(vm, src, len);
    vm->on_error = NULL;
    return 0;
}

int
star_vm_exec_file_stream(struct star_vm *vm, const char *name, const char *src, size_t len)
{
    jmp_buf jb;
    struct interp *in = interp_of(vm);
    star_vm_begin(vm, name);
    in->frames = NULL;
    vm->on_error = &jb;
    if (setjmp(jb) != 0) {
        vm->on_error = NULL;
        free(in->deferred_err);
        in->deferred_err = NULL;
        if (vm->err == NULL)
            vm->err = strdup("out of memory");
        return -1;
    }
    if (len > STAR_MAX_FILE_BYTES)
        star_fail_at(vm, 1, 1, "file is too large (%zu bytes; the limit is %u MiB)", len,
                     STAR_MAX_FILE_BYTES >> 20);
    int rc = run_stream(vm, src, len);
    vm->on_error = NULL;
    if (rc < 0 && vm->err == NULL)
        vm->err = strdup("out of memory");
    return rc;
}
