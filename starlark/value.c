#include "starlark/value.h"
#include "starlark/unicode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "starlark/ast.h"
#include "starlark/bigint.h"
#include "starlark/eval.h"
#include "starlark/float.h"
#include "starlark/lexer.h"
#include "starlark/vm.h"

/* ---- constructors ---- */

struct star_value
star_none(void)
{
    struct star_value v = {.type = STAR_NONE};
    return v;
}

struct star_value
star_bool(bool b)
{
    struct star_value v = {.type = STAR_BOOL, .u.b = b};
    return v;
}

struct star_value
star_int(int64_t i)
{
    struct star_value v = {.type = STAR_INT, .u.i = i};
    return v;
}

struct star_value
star_int_big(struct bigint *b)
{
    int64_t i;
    if (bigint_to_i64(b, &i))
        return star_int(i);
    struct star_value v = {.type = STAR_BIGINT, .u.big = b};
    return v;
}

struct bigint *
star_int_to_big(struct star_vm *vm, struct star_value v)
{
    return v.type == STAR_BIGINT ? v.u.big : bigint_from_i64(vm, v.u.i);
}

struct star_str *
star_str_new(struct star_vm *vm, const char *s, size_t len)
{
    if (len > SIZE_MAX / 2)
        star_fail(vm, "out of memory: string too long");
    struct star_str *str = star_alloc(vm, sizeof *str + len + 1);
    str->len = len;
    if (len > 0)
        memcpy(str->data, s, len);
    str->data[len] = '\0';
    return str;
}

struct star_value
star_string_of(struct star_str *s)
{
    struct star_value v = {.type = STAR_STRING, .u.s = s};
    return v;
}

struct star_value
star_string(struct star_vm *vm, const char *s, size_t len)
{
    return star_string_of(star_str_new(vm, s, len));
}

struct star_value
star_bytes_of(struct star_str *s)
{
    struct star_value v = {.type = STAR_BYTES, .u.s = s};
    return v;
}

struct star_value
star_bytes(struct star_vm *vm, const char *s, size_t len)
{
    return star_bytes_of(star_str_new(vm, s, len));
}

struct star_value
star_list_new(struct star_vm *vm, size_t cap)
{
    struct star_list *l = star_alloc(vm, sizeof *l);
    if (cap > 0)
        l->items = star_alloc_array(vm, cap, sizeof *l->items);
    l->cap = cap;
    struct star_value v = {.type = STAR_LIST, .u.l = l};
    return v;
}

struct star_value
star_tuple_new(struct star_vm *vm, size_t len)
{
    struct star_value v = star_list_new(vm, len);
    v.type = STAR_TUPLE;
    v.u.l->len = len;
    v.u.l->frozen = true;
    for (size_t i = 0; i < len; i++)
        v.u.l->items[i].type = STAR_NONE;
    return v;
}

void
star_list_append(struct star_vm *vm, struct star_value list, struct star_value v)
{
    struct star_list *l = list.u.l;
    if (l->frozen)
        star_fail(vm, "cannot append to a frozen list");
    if (l->iterating)
        star_fail(vm, "cannot append to a list during iteration");
    if (l->len == l->cap) {
        size_t cap = l->cap < 4 ? 4 : l->cap * 2;
        struct star_value *items = star_alloc_array(vm, cap, sizeof *items);
        if (l->len > 0)
            memcpy(items, l->items, l->len * sizeof *items);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->len++] = v;
}

/* ---- dicts: entries in insertion order plus an open-addressing index ---- */

struct star_dict_entry {
    struct star_value key, val;
    uint32_t hash;
    bool live;
};

struct star_dict {
    struct star_dict_entry *entries;
    size_t n_entries, cap_entries, len;
    int32_t *index; /* -1 empty; else entry position */
    size_t index_cap;
    uint32_t iterating;
    bool frozen;
    bool printing; /* being printed: met again inside itself, it prints as {...} */
};

struct star_value
star_iterator_new(struct star_list *items)
{
    items->frozen = true;
    items->deep_frozen = true;
    struct star_value v = {.type = STAR_ITERATOR, .u.l = items};
    return v;
}

struct star_value
star_dict_new(struct star_vm *vm)
{
    struct star_value v = {.type = STAR_DICT};
    v.u.d = star_alloc(vm, sizeof(struct star_dict));
    return v;
}

size_t
star_dict_len(const struct star_dict *d)
{
    return d->len;
}

void
star_dict_iter_begin(struct star_dict *d)
{
    d->iterating++;
}

void
star_dict_iter_end(struct star_dict *d)
{
    d->iterating--;
}

static void
dict_mutable(struct star_vm *vm, struct star_dict *d, const char *verb)
{
    if (d->frozen)
        star_fail(vm, "cannot %s frozen hash table", verb);
    if (d->iterating)
        star_fail(vm, "cannot %s hash table during iteration", verb);
}

void
star_dict_check_mutable(struct star_vm *vm, struct star_dict *d)
{
    dict_mutable(vm, d, "insert into");
}

/* Slot in the index for key: either the matching entry's slot or an empty one. */
static size_t
dict_probe(struct star_vm *vm, struct star_dict *d, struct star_value key, uint32_t h)
{
    size_t mask = d->index_cap - 1;
    size_t i = h & mask;
    for (;;) {
        int32_t e = d->index[i];
        if (e < 0)
            return i;
        struct star_dict_entry *en = &d->entries[e];
        if (en->live && en->hash == h && star_equal(vm, en->key, key))
            return i;
        i = (i + 1) & mask;
    }
}

static void
dict_rebuild(struct star_vm *vm, struct star_dict *d, size_t want)
{
    /* Compact dead entries, then rebuild the index at load <= 1/2. */
    size_t j = 0;
    for (size_t i = 0; i < d->n_entries; i++)
        if (d->entries[i].live)
            d->entries[j++] = d->entries[i];
    d->n_entries = j;
    size_t ecap = want < 8 ? 8 : want;
    if (ecap > d->cap_entries) {
        struct star_dict_entry *ne = star_alloc_array(vm, ecap, sizeof *ne);
        if (d->n_entries > 0)
            memcpy(ne, d->entries, d->n_entries * sizeof *ne);
        d->entries = ne;
        d->cap_entries = ecap;
    }
    size_t icap = 16;
    while (icap < d->cap_entries * 2)
        icap *= 2;
    d->index = star_alloc_array(vm, icap, sizeof *d->index);
    memset(d->index, 0xff, icap * sizeof *d->index);
    d->index_cap = icap;
    for (size_t i = 0; i < d->n_entries; i++) {
        size_t mask = icap - 1, s = d->entries[i].hash & mask;
        while (d->index[s] >= 0)
            s = (s + 1) & mask;
        d->index[s] = (int32_t)i;
    }
}

bool
star_dict_get(struct star_vm *vm, struct star_dict *d, struct star_value key,
              struct star_value *out)
{
    uint32_t h = star_hash(vm, key);
    if (d->len == 0)
        return false;
    size_t s = dict_probe(vm, d, key, h);
    if (d->index[s] < 0)
        return false;
    if (out != NULL)
        *out = d->entries[d->index[s]].val;
    return true;
}

void
star_dict_set(struct star_vm *vm, struct star_dict *d, struct star_value key, struct star_value v)
{
    uint32_t h = star_hash(vm, key);
    star_dict_check_mutable(vm, d);
    if (d->index_cap > 0) {
        size_t s = dict_probe(vm, d, key, h);
        if (d->index[s] >= 0) {
            d->entries[d->index[s]].val = v;
            return;
        }
    }
    if (d->n_entries == d->cap_entries) {
        if (d->len >= (size_t)INT32_MAX / 4)
            star_fail(vm, "dict too large");
        dict_rebuild(vm, d, d->len * 2 + 1);
    }
    size_t s = dict_probe(vm, d, key, h);
    struct star_dict_entry *en = &d->entries[d->n_entries];
    en->key = key;
    en->val = v;
    en->hash = h;
    en->live = true;
    d->index[s] = (int32_t)d->n_entries;
    d->n_entries++;
    d->len++;
}

bool
star_dict_del(struct star_vm *vm, struct star_dict *d, struct star_value key,
              struct star_value *out)
{
    uint32_t h = star_hash(vm, key);
    dict_mutable(vm, d, "delete from");
    if (d->len == 0)
        return false;
    size_t s = dict_probe(vm, d, key, h);
    if (d->index[s] < 0)
        return false;
    struct star_dict_entry *en = &d->entries[d->index[s]];
    if (out != NULL)
        *out = en->val;
    en->live = false;
    d->len--;
    /* Open addressing cannot simply empty a slot: rebuild the index. */
    dict_rebuild(vm, d, d->cap_entries);
    return true;
}

void
star_dict_clear(struct star_vm *vm, struct star_dict *d)
{
    dict_mutable(vm, d, "clear");
    d->n_entries = 0;
    d->len = 0;
    if (d->index_cap > 0)
        memset(d->index, 0xff, d->index_cap * sizeof *d->index);
}

bool
star_dict_next(const struct star_dict *d, size_t *pos, struct star_value *key,
               struct star_value *val)
{
    while (*pos < d->n_entries) {
        const struct star_dict_entry *en = &d->entries[(*pos)++];
        if (en->live) {
            if (key != NULL)
                *key = en->key;
            if (val != NULL)
                *val = en->val;
            return true;
        }
    }
    return false;
}

/* ---- generic operations ---- */

const char *
star_type_name(struct star_value v)
{
    switch (v.type) {
    case STAR_NONE:
        return "NoneType";
    case STAR_BOOL:
        return "bool";
    case STAR_INT:
    case STAR_BIGINT:
        return "int";
    case STAR_FLOAT:
        return "float";
    case STAR_STRING:
        return "string";
    case STAR_BYTES:
        return "bytes";
    case STAR_LIST:
        return "list";
    case STAR_TUPLE:
        return "tuple";
    case STAR_DICT:
        return "dict";
    case STAR_FUNCTION:
        return "function";
    case STAR_BUILTIN:
        return "function"; /* as Codex names a built-in's type */
    case STAR_RANGE:
        return "range";
    case STAR_ITERATOR:
        return "iterator";
    default:
        return "unbound";
    }
}

static int64_t
range_len(const struct star_range *r)
{
    if (r->step > 0 && r->start < r->stop)
        return (int64_t)(((uint64_t)r->stop - (uint64_t)r->start - 1) / (uint64_t)r->step + 1);
    if (r->step < 0 && r->start > r->stop)
        return (int64_t)(((uint64_t)r->start - (uint64_t)r->stop - 1) / (uint64_t)(-r->step) + 1);
    return 0;
}

bool
star_truth(struct star_value v)
{
    switch (v.type) {
    case STAR_NONE:
        return false;
    case STAR_BOOL:
        return v.u.b;
    case STAR_INT:
        return v.u.i != 0;
    case STAR_FLOAT:
        return v.u.fl != 0; /* NaN is true */
    case STAR_BIGINT:       /* never zero */
        return true;
    case STAR_STRING:
    case STAR_BYTES:
        return v.u.s->len != 0;
    case STAR_LIST:
    case STAR_TUPLE:
        return v.u.l->len != 0;
    case STAR_DICT:
        return v.u.d->len != 0;
    case STAR_RANGE:
        return range_len(v.u.r) != 0;
    default:
        return true;
    }
}

static void
depth_enter(struct star_vm *vm)
{
    if (++vm->value_depth > STAR_MAX_VALUE_DEPTH)
        star_fail(vm, "value nested too deeply (the limit is %d levels)", STAR_MAX_VALUE_DEPTH);
    star_stack_check(vm, vm->line, vm->col);
}

/* A tuple being hashed: its items so far folded into h. */
struct hash_frame {
    const struct star_list *t;
    size_t i;
    uint32_t h;
};

/*
 * Tuples in tuples are hashed with a stack of their own, not the C
 * stack: Codex hashes a tuple nested 200 000 deep, and so must we.
 */
static uint32_t
tuple_hash(struct star_vm *vm, struct star_value v)
{
    struct hash_frame inline_frames[8], *st = inline_frames;
    size_t n = 0, cap = sizeof inline_frames / sizeof *inline_frames;
    st[n++] = (struct hash_frame){v.u.l, 0, 0x345678u};
    for (;;) {
        struct hash_frame *f = &st[n - 1];
        if (f->i == f->t->len) {
            uint32_t h = f->h;
            if (--n == 0)
                return h;
            st[n - 1].h = (st[n - 1].h ^ h) * 1000003u;
            continue;
        }
        struct star_value item = f->t->items[f->i++];
        if (item.type != STAR_TUPLE) {
            f->h = (f->h ^ star_hash(vm, item)) * 1000003u;
            continue;
        }
        if (n == cap) {
            struct hash_frame *t = star_alloc_array(vm, cap * 2, sizeof *t);
            memcpy(t, st, n * sizeof *t);
            st = t;
            cap *= 2;
        }
        st[n++] = (struct hash_frame){item.u.l, 0, 0x345678u};
    }
}

uint32_t
star_hash(struct star_vm *vm, struct star_value v)
{
    switch (v.type) {
    case STAR_NONE:
        return 0x9e3779b9u;
    case STAR_BOOL:
        return v.u.b ? 1u : 0u; /* equal to the ints 1 and 0? Starlark keeps them distinct */
    case STAR_INT:
        if (v.u.i < INT32_MIN || v.u.i > INT32_MAX) /* see star_num_hash */
            return star_num_hash(v);
        return star_int_hash(v.u.i);
    case STAR_FLOAT:
        return star_num_hash(v);
    case STAR_BIGINT:
        return bigint_hash(v.u.big);
    case STAR_STRING:
    case STAR_BYTES: /* the same text as a string hashes the same, and differs by type */
        return star_str_hash(v.u.s);
    case STAR_TUPLE:
        return tuple_hash(vm, v);
    case STAR_FUNCTION:
    case STAR_BUILTIN:
        return (uint32_t)((uintptr_t)v.u.f >> 4);
    default:
        star_fail(vm, "unhashable type: %s", star_type_name(v));
    }
}

static bool
seq_equal(struct star_vm *vm, const struct star_list *a, const struct star_list *b)
{
    if (a->len != b->len)
        return false;
    depth_enter(vm);
    for (size_t i = 0; i < a->len; i++) {
        if (!star_equal(vm, a->items[i], b->items[i])) {
            vm->value_depth--;
            return false;
        }
    }
    vm->value_depth--;
    return true;
}

static bool
dict_equal_items(struct star_vm *vm, struct star_dict *a, struct star_dict *b)
{
    size_t pos = 0;
    struct star_value k, v, w;
    while (star_dict_next(a, &pos, &k, &v))
        if (!star_dict_get(vm, b, k, &w) || !star_equal(vm, v, w))
            return false;
    return true;
}

static bool
dict_equal(struct star_vm *vm, struct star_dict *a, struct star_dict *b)
{
    if (a->len != b->len)
        return false;
    depth_enter(vm);
    bool eq = dict_equal_items(vm, a, b);
    vm->value_depth--;
    return eq;
}

bool
star_equal(struct star_vm *vm, struct star_value a, struct star_value b)
{
    if (a.type != b.type) {
        /* an int64 and a big int never are: a big int lies beyond int64 */
        if (star_is_int(a) && star_is_int(b))
            return false;
        /* 1 == 1.0, compared as doubles as in Codex */
        return star_is_num(a) && star_is_num(b) && star_num_compare(a, b) == 0;
    }
    switch (a.type) {
    case STAR_NONE:
        return true;
    case STAR_BOOL:
        return a.u.b == b.u.b;
    case STAR_INT:
        return a.u.i == b.u.i;
    case STAR_FLOAT: /* NaN equals NaN in Codex */
        return star_num_compare(a, b) == 0;
    case STAR_BIGINT:
        return bigint_cmp(a.u.big, b.u.big) == 0;
    case STAR_STRING:
    case STAR_BYTES:
        return a.u.s == b.u.s ||
               (a.u.s->len == b.u.s->len && memcmp(a.u.s->data, b.u.s->data, a.u.s->len) == 0);
    case STAR_LIST:
    case STAR_TUPLE:
        return a.u.l == b.u.l || seq_equal(vm, a.u.l, b.u.l);
    case STAR_DICT:
        return a.u.d == b.u.d || dict_equal(vm, a.u.d, b.u.d);
    case STAR_ITERATOR:
        return a.u.l == b.u.l;
    case STAR_RANGE: { /* by Codex's count, even where it is wrong */
        int64_t la = star_range_count(vm, a.u.r), lb = star_range_count(vm, b.u.r);
        if (la != lb)
            return false;
        if (la == 0)
            return true;
        if (a.u.r->start != b.u.r->start)
            return false;
        return la == 1 || a.u.r->step == b.u.r->step;
    }
    default:
        return a.u.f == b.u.f;
    }
}

int
star_compare(struct star_vm *vm, struct star_value a, struct star_value b)
{
    if (a.type == b.type) {
        switch (a.type) {
        case STAR_INT:
            return (a.u.i > b.u.i) - (a.u.i < b.u.i);
        case STAR_FLOAT:
            return star_num_compare(a, b);
        case STAR_BIGINT:
            return bigint_cmp(a.u.big, b.u.big);
        case STAR_BOOL:
            return (int)a.u.b - (int)b.u.b;
        case STAR_STRING: /* UTF-8 orders as code points do */
        case STAR_BYTES: {
            size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
            int c = memcmp(a.u.s->data, b.u.s->data, n);
            if (c != 0)
                return c < 0 ? -1 : 1;
            return (a.u.s->len > b.u.s->len) - (a.u.s->len < b.u.s->len);
        }
        case STAR_LIST:
        case STAR_TUPLE: {
            /* Element by element, each ordered (not only tested for
             * equality) as in Codex: [{}] < [{}] fails, and so does a
             * list that holds itself, at the depth limit. */
            const struct star_list *x = a.u.l, *y = b.u.l;
            depth_enter(vm);
            int c = 0;
            for (size_t i = 0; c == 0 && i < x->len && i < y->len; i++)
                c = star_compare(vm, x->items[i], y->items[i]);
            if (c == 0)
                c = (x->len > y->len) - (x->len < y->len);
            vm->value_depth--;
            return c;
        }
        default:
            break;
        }
        star_fail(vm, "%s < %s not implemented", star_type_name(a), star_type_name(b));
    }
    /* A big int lies beyond every int64: its sign alone decides. */
    if (a.type == STAR_BIGINT && b.type == STAR_INT)
        return bigint_sign(a.u.big);
    if (a.type == STAR_INT && b.type == STAR_BIGINT)
        return -bigint_sign(b.u.big);
    if (star_is_num(a) && star_is_num(b))
        return star_num_compare(a, b);
    star_fail(vm, "%s < %s not implemented", star_type_name(a), star_type_name(b));
}

struct worklist {
    struct star_value *items;
    size_t n, cap;
};

static void
work_push(struct star_vm *vm, struct worklist *w, struct star_value v)
{
    if (v.type != STAR_LIST && v.type != STAR_TUPLE && v.type != STAR_DICT)
        return;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        struct star_value *t = star_alloc_array(vm, cap, sizeof *t);
        if (w->n > 0)
            memcpy(t, w->items, w->n * sizeof *t);
        w->items = t;
        w->cap = cap;
    }
    w->items[w->n++] = v;
}

void
star_freeze(struct star_vm *vm, struct star_value v)
{
    struct worklist w = {0};
    work_push(vm, &w, v);
    while (w.n > 0) {
        v = w.items[--w.n];
        if (v.type == STAR_DICT) {
            if (v.u.d->frozen)
                continue;
            v.u.d->frozen = true;
            size_t pos = 0;
            struct star_value k, val;
            while (star_dict_next(v.u.d, &pos, &k, &val)) {
                work_push(vm, &w, k);
                work_push(vm, &w, val);
            }
            continue;
        }
        /* Each list or tuple is walked once, so shared values cost nothing. */
        if (v.u.l->deep_frozen)
            continue;
        v.u.l->frozen = true;
        v.u.l->deep_frozen = true;
        for (size_t i = 0; i < v.u.l->len; i++)
            work_push(vm, &w, v.u.l->items[i]);
    }
}

/* ---- buffers and repr ---- */

void
star_buf_add(struct star_vm *vm, struct star_buf *b, const char *s, size_t n)
{
    if (n > SIZE_MAX / 4 || b->len > SIZE_MAX / 4 - n)
        star_fail(vm, "out of memory: string too long");
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap < 32 ? 32 : b->cap;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = star_alloc(vm, cap);
        if (b->len > 0)
            memcpy(d, b->data, b->len);
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void
star_buf_addc(struct star_vm *vm, struct star_buf *b, char c)
{
    star_buf_add(vm, b, &c, 1);
}

void
star_buf_add_utf8(struct star_vm *vm, struct star_buf *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    star_buf_add(vm, b, u, n);
}

void
star_buf_addf(struct star_vm *vm, struct star_buf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        star_fail(vm, "internal formatting error");
    if ((size_t)n < sizeof tmp) {
        star_buf_add(vm, b, tmp, (size_t)n);
        return;
    }
    char *big = star_alloc(vm, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    star_buf_add(vm, b, big, (size_t)n);
}

void
star_buf_quote(struct star_vm *vm, struct star_buf *b, const char *s, size_t n)
{
    /* As Codex's repr: controls, DEL, quote and backslash escaped, the
     * rest of Latin-1 as \xhh, and beyond it whatever is not a letter or
     * digit as \uhhhh or \Uhhhhhhhh. */
    star_buf_addc(vm, b, '"');
    for (size_t i = 0; i < n;) {
        size_t at = i;
        uint32_t c = unicode_next(s, n, &i);
        switch (c) {
        case '"':
            star_buf_add(vm, b, "\\\"", 2);
            break;
        case '\\':
            star_buf_add(vm, b, "\\\\", 2);
            break;
        case '\n':
            star_buf_add(vm, b, "\\n", 2);
            break;
        case '\t':
            star_buf_add(vm, b, "\\t", 2);
            break;
        case '\r':
            star_buf_add(vm, b, "\\r", 2);
            break;
        default:
            if (c < 0x20 || (c >= 0x7f && c <= 0xff))
                star_buf_addf(vm, b, "\\x%02x", (unsigned)c);
            else if (c < 0x7f || unicode_is_alphabetic(c) || unicode_is_numeric(c))
                star_buf_add(vm, b, s + at, i - at);
            else if (c < 0x10000)
                star_buf_addf(vm, b, "\\u%04x", (unsigned)c);
            else
                star_buf_addf(vm, b, "\\U%08x", (unsigned)c);
        }
    }
    star_buf_addc(vm, b, '"');
}

void
star_buf_add_lossy(struct star_vm *vm, struct star_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0, i = 0;
    while (i < n) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        bool whole;
        size_t k = unicode_sequence(s + i, n - i, &whole);
        if (!whole) {
            star_buf_add(vm, b, s + run, i - run);
            star_buf_add(vm, b, "\xef\xbf\xbd", 3); /* U+FFFD */
            run = i + k;
        }
        i += k;
    }
    star_buf_add(vm, b, s + run, n - run);
}

/* repr() of bytes as Codex writes it: b"...", printable ASCII as itself,
 * a character of valid UTF-8 as itself when a letter or digit and as
 * \uhhhh or \Uhhhhhhhh otherwise, and every other byte as \xhh. */
static void
buf_quote_bytes(struct star_vm *vm, struct star_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    star_buf_add(vm, b, "b\"", 2);
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        if (c < 0x80) {
            i++;
            if (c == '"')
                star_buf_add(vm, b, "\\\"", 2);
            else if (c == '\\')
                star_buf_add(vm, b, "\\\\", 2);
            else if (c == '\n')
                star_buf_add(vm, b, "\\n", 2);
            else if (c == '\r')
                star_buf_add(vm, b, "\\r", 2);
            else if (c == '\t')
                star_buf_add(vm, b, "\\t", 2);
            else if (c >= 0x20 && c < 0x7f)
                star_buf_addc(vm, b, (char)c);
            else
                star_buf_addf(vm, b, "\\x%02x", c);
            continue;
        }
        bool whole;
        (void)unicode_sequence(s + i, n - i, &whole);
        if (!whole) {
            star_buf_addf(vm, b, "\\x%02x", c);
            i++;
            continue;
        }
        size_t at = i;
        uint32_t cp = unicode_next(s, n, &i);
        if (unicode_is_alphabetic(cp) || unicode_is_numeric(cp))
            star_buf_add(vm, b, s + at, i - at);
        else if (cp < 0x10000)
            star_buf_addf(vm, b, "\\u%04x", (unsigned)cp);
        else
            star_buf_addf(vm, b, "\\U%08x", (unsigned)cp);
    }
    star_buf_addc(vm, b, '"');
}

/* Appends a value that holds no other (not a list, tuple or dict). */
static void
buf_scalar(struct star_vm *vm, struct star_buf *b, struct star_value v, bool quote_strings)
{
    switch (v.type) {
    case STAR_NONE:
        star_buf_add(vm, b, "None", 4);
        break;
    case STAR_BOOL:
        star_buf_add(vm, b, v.u.b ? "True" : "False", v.u.b ? 4 : 5);
        break;
    case STAR_INT:
        star_buf_addf(vm, b, "%lld", (long long)v.u.i);
        break;
    case STAR_FLOAT:
        star_float_buf(vm, b, v.u.fl, 'r');
        break;
    case STAR_BIGINT: {
        size_t n;
        const char *digits = bigint_to_string(vm, v.u.big, 10, false, &n);
        star_buf_add(vm, b, digits, n);
        break;
    }
    case STAR_STRING:
        if (quote_strings)
            star_buf_quote(vm, b, v.u.s->data, v.u.s->len);
        else
            star_buf_add(vm, b, v.u.s->data, v.u.s->len);
        break;
    case STAR_BYTES:
        if (quote_strings)
            buf_quote_bytes(vm, b, v.u.s->data, v.u.s->len);
        else
            star_buf_add_lossy(vm, b, v.u.s->data, v.u.s->len);
        break;
    case STAR_FUNCTION:
        /* Codex: the file's name as given, a dot, the function's. */
        star_buf_addf(vm, b, "%s.%s", vm->file ? vm->file : "", star_function_name(v.u.f));
        break;
    case STAR_ITERATOR:
        star_buf_add(vm, b, "iterator", 8);
        break;
    case STAR_BUILTIN:
        star_buf_add(vm, b, v.u.bi->name, strlen(v.u.bi->name)); /* as Codex */
        break;
    case STAR_RANGE:
        if (v.u.r->step != 1)
            star_buf_addf(vm, b, "range(%lld, %lld, %lld)", (long long)v.u.r->start,
                          (long long)v.u.r->stop, (long long)v.u.r->step);
        else if (v.u.r->start != 0)
            star_buf_addf(vm, b, "range(%lld, %lld)", (long long)v.u.r->start,
                          (long long)v.u.r->stop);
        else
            star_buf_addf(vm, b, "range(%lld)", (long long)v.u.r->stop);
        break;
    default:
        star_buf_add(vm, b, "<unbound>", 9);
    }
}

/* A list, tuple or dict being printed: where in it the printing is. */
struct print_frame {
    struct star_value v;
    size_t pos;                /* the next item (a dict: star_dict_next's position) */
    size_t done;               /* items printed */
    struct star_value pending; /* a dict's value, printed once its key is */
    bool has_pending;
};

static bool *
printing_mark(struct star_value v)
{
    return v.type == STAR_DICT ? &v.u.d->printing : &v.u.l->printing;
}

/* Opens container v: pushes it, or prints [...] / {...} when it is already
 * being printed (a list that holds itself), as Codex does. */
static void
print_open(struct star_vm *vm, struct star_buf *b, struct star_value v, struct print_frame **st,
           size_t *n, size_t *cap)
{
    bool *mark = printing_mark(v);
    if (*mark) {
        star_buf_add(vm, b,
                     v.type == STAR_DICT   ? "{...}"
                     : v.type == STAR_LIST ? "[...]"
                                           : "(...)",
                     5);
        return;
    }
    if (*n == *cap) {
        struct print_frame *t = star_alloc_array(vm, *cap * 2, sizeof *t);
        memcpy(t, *st, *n * sizeof *t);
        *st = t;
        *cap *= 2;
    }
    *mark = true;
    star_buf_addc(vm, b, v.type == STAR_DICT ? '{' : v.type == STAR_LIST ? '[' : '(');
    (*st)[(*n)++] = (struct print_frame){.v = v};
}

static bool
is_container(struct star_value v)
{
    return v.type == STAR_LIST || v.type == STAR_TUPLE || v.type == STAR_DICT;
}

/*
 * Containers are walked with a stack of their own, not the C stack: Codex
 * prints a list nested 200 000 deep, and so must we.  Should the run fail
 * in the middle (out of memory), the marks left set die with the run.
 */
void
star_buf_value(struct star_vm *vm, struct star_buf *b, struct star_value v, bool quote_strings)
{
    if (!is_container(v)) {
        buf_scalar(vm, b, v, quote_strings);
        return;
    }
    struct print_frame inline_frames[8], *st = inline_frames;
    size_t n = 0, cap = sizeof inline_frames / sizeof *inline_frames;
    print_open(vm, b, v, &st, &n, &cap);
    while (n > 0) {
        struct print_frame *f = &st[n - 1];
        struct star_value item;
        if (f->has_pending) {
            star_buf_add(vm, b, ": ", 2);
            item = f->pending;
            f->has_pending = false;
        } else if (f->v.type == STAR_DICT) {
            struct star_value k, val;
            if (!star_dict_next(f->v.u.d, &f->pos, &k, &val)) {
                star_buf_addc(vm, b, '}');
                f->v.u.d->printing = false;
                n--;
                continue;
            }
            if (f->done++ > 0)
                star_buf_add(vm, b, ", ", 2);
            item = k;
            f->pending = val;
            f->has_pending = true;
        } else {
            const struct star_list *l = f->v.u.l;
            bool tuple = f->v.type == STAR_TUPLE;
            if (f->pos == l->len) {
                if (tuple && l->len == 1)
                    star_buf_addc(vm, b, ',');
                star_buf_addc(vm, b, tuple ? ')' : ']');
                f->v.u.l->printing = false;
                n--;
                continue;
            }
            if (f->pos > 0)
                star_buf_add(vm, b, ", ", 2);
            item = l->items[f->pos++];
        }
        if (is_container(item))
            print_open(vm, b, item, &st, &n, &cap);
        else
            buf_scalar(vm, b, item, true);
    }
}

struct star_value
star_buf_string(struct star_vm *vm, struct star_buf *b)
{
    return star_string(vm, b->data ? b->data : "", b->len);
}

uint64_t
star_range_len(const struct star_range *r)
{
    /* Unsigned arithmetic: the distance between two int64_t values and
     * the size of INT64_MIN both fit a uint64_t. */
    if (r->step > 0 && r->start < r->stop)
        return ((uint64_t)r->stop - (uint64_t)r->start - 1) / (uint64_t)r->step + 1;
    if (r->step < 0 && r->start > r->stop)
        return ((uint64_t)r->start - (uint64_t)r->stop - 1) / (0 - (uint64_t)r->step) + 1;
    return 0;
}

int64_t
star_range_codex_len(const struct star_range *r)
{
    /* The bounds and the step fit in 32 bits (range() and slicing check). */
    int32_t start = (int32_t)r->start, stop = (int32_t)r->stop, step = (int32_t)r->step;
    if (start == stop || (stop >= start) != (step > 0))
        return 0;
    /* Codex's arithmetic: the span wraps in 32 bits and is then widened
     * with its sign to 64 bits unsigned, as is a negative step's size. */
    uint32_t span32 =
        step > 0 ? (uint32_t)stop - (uint32_t)start : (uint32_t)start - (uint32_t)stop;
    uint32_t size32 = step > 0 ? (uint32_t)step : 0u - (uint32_t)step;
    uint64_t dist = (uint64_t)(int64_t)(int32_t)span32;
    uint64_t size = (uint64_t)(int64_t)(int32_t)size32;
    uint64_t n = (dist - 1) / size + 1;
    int32_t len = (int32_t)(uint32_t)n;
    return len < 0 ? -1 : len;
}

int64_t
star_range_count(struct star_vm *vm, const struct star_range *r)
{
    int64_t n = star_range_codex_len(r);
    if (n < 0) {
        struct star_buf b = {0};
        star_buf_value(
            vm, &b, (struct star_value){.type = STAR_RANGE, .u.r = (struct star_range *)r}, false);
        star_fail(vm, "integer overflow: %s cannot be counted in 32 bits, as Codex counts it",
                  b.data);
    }
    return n;
}

bool
star_range_codex_empty(const struct star_range *r)
{
    return star_range_codex_len(r) == 0 && star_range_len(r) != 0;
}

/* The most values Codex 0.169 puts in one list: it aborts allocating
 * 536870909 (their size no longer fits in 32 bits). */
#define CODEX_MAX_LIST 536870908

void
star_range_check_listable(struct star_vm *vm, struct star_value v, const char *what)
{
    if (v.type != STAR_RANGE)
        return;
    int64_t counted = star_range_codex_len(v.u.r);
    bool empty = star_range_codex_empty(v.u.r);
    /* Codex makes room for the count first: too many aborts it, even
     * when the range yields far fewer. */
    if (!empty && !(counted > CODEX_MAX_LIST && (uint64_t)counted > star_range_len(v.u.r)))
        return;
    struct star_buf b = {0};
    star_buf_value(vm, &b, v, false);
    if (empty)
        star_fail(vm,
                  "%s of %s: Codex 0.169 counts 0 elements in this range (its span does not fit "
                  "in 32 bits) and aborts when it lists them",
                  what, b.data);
    star_fail(vm,
              "%s of %s: Codex 0.169 counts %lld elements in this range (its span does not fit in "
              "32 bits) and aborts making room for them",
              what, b.data, (long long)counted);
}

bool
star_is_iterable(struct star_value v)
{
    return v.type == STAR_LIST || v.type == STAR_TUPLE || v.type == STAR_DICT ||
           v.type == STAR_RANGE || v.type == STAR_ITERATOR;
}
