#include "starlark/builtins.h"
#include "starlark/bigint.h"
#include "starlark/unicode.h"
#include "starlark/float.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NPARAMS(p) (sizeof(p) / sizeof((p)[0]))

/*
 * Binds args to the parameters (the first nreq required) into a[].  As in
 * Codex, a built-in's parameters are positional-only but for the few that
 * BIND_NAMED lets be named: those from index npos on.
 */
#define BIND_NAMED(fname, nreq, npos, ...)                                                         \
    static const char *const params_[] = {__VA_ARGS__};                                            \
    struct star_value a[NPARAMS(params_)];                                                         \
    bind_args(vm, fname, args, params_, nreq, npos, NPARAMS(params_), a)
#define BIND(fname, nreq, ...) BIND_NAMED(fname, nreq, SIZE_MAX, __VA_ARGS__)

#define NO_ARGS(fname) star_args_bind(vm, fname, args, NULL, 0, 0, NULL)

static void
bind_args(struct star_vm *vm, const char *fname, struct star_args *args, const char *const *params,
          size_t nreq, size_t npos, size_t nparams, struct star_value *out)
{
    for (size_t k = 0; k < args->nkw; k++)
        for (size_t j = 0; j < npos && j < nparams; j++)
            if (strcmp(params[j], args->kwnames[k]->data) == 0)
                star_fail(vm, "%s: %s is positional-only: give it without a name", fname,
                          params[j]);
    star_args_bind(vm, fname, args, params, nreq, nparams, out);
}

static bool
given(struct star_value v)
{
    return v.type != STAR_UNBOUND;
}

static struct star_str *
want_str(struct star_vm *vm, const char *fname, struct star_value v, const char *what)
{
    if (v.type != STAR_STRING)
        star_fail(vm, "%s: for %s, got %s, want string", fname, what, star_type_name(v));
    return v.u.s;
}

/* An int argument of a built-in (an index, a count, a bound of range):
 * 32 bits at most, as Codex's built-ins take them (range(1 << 40) is
 * refused there, so it is here). */
static int64_t
want_int(struct star_vm *vm, const char *fname, struct star_value v, const char *what)
{
    if (v.type == STAR_BIGINT || (v.type == STAR_INT && (v.u.i < INT32_MIN || v.u.i > INT32_MAX))) {
        struct star_buf b = {0};
        star_buf_value(vm, &b, v, false);
        star_fail(vm, "%s: for %s, got %s, which does not fit in 32 bits", fname, what, b.data);
    }
    if (v.type != STAR_INT)
        star_fail(vm, "%s: for %s, got %s, want int", fname, what, star_type_name(v));
    return v.u.i;
}

static struct star_value
tuple2(struct star_vm *vm, struct star_value x, struct star_value y)
{
    struct star_value t = star_tuple_new(vm, 2);
    t.u.l->items[0] = x;
    t.u.l->items[1] = y;
    return t;
}

static struct star_value
list_of(struct star_vm *vm, struct star_value *items, size_t n)
{
    struct star_value l = star_list_new(vm, n);
    if (n)
        memcpy(l.u.l->items, items, n * sizeof *items);
    l.u.l->len = n;
    return l;
}

/* ---- language built-ins ---- */

static struct star_value
bi_len(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("len", 1, "x");
    struct star_value x = a[0];
    switch (x.type) {
    case STAR_STRING: /* code points, as in Codex */
        return star_int((int64_t)unicode_count(x.u.s->data, x.u.s->len));
    case STAR_BYTES:
        return star_int((int64_t)x.u.s->len);
    case STAR_LIST:
    case STAR_TUPLE:
        return star_int((int64_t)x.u.l->len);
    case STAR_DICT:
        return star_int((int64_t)star_dict_len(x.u.d));
    case STAR_RANGE:
        return star_int(star_range_count(vm, x.u.r)); /* Codex's count */
    default:
        star_fail(vm, "len: value of type %s has no len", star_type_name(x));
    }
}

static struct star_value
bi_list(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("list", 0, "x");
    if (!given(a[0]))
        return star_list_new(vm, 0);
    star_range_check_listable(vm, a[0], "list()");
    size_t n;
    struct star_value *items = star_iterable_items(vm, a[0], &n);
    return list_of(vm, items, n);
}

static struct star_value
bi_tuple(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("tuple", 0, "x");
    if (!given(a[0]))
        return star_tuple_new(vm, 0);
    if (a[0].type == STAR_TUPLE)
        return a[0];
    if (a[0].type == STAR_RANGE) {
        /* Codex makes a range's tuple of the size it counts: none when it
         * counts 0 (its span does not fit in 32 bits), and it aborts when
         * it counts more than the range yields. */
        if (star_range_codex_empty(a[0].u.r))
            return star_tuple_new(vm, 0);
        int64_t counted = star_range_codex_len(a[0].u.r); /* -1: Codex yields them all */
        if (counted > 0 && (uint64_t)counted > star_range_len(a[0].u.r)) {
            struct star_buf b = {0};
            star_buf_value(vm, &b, a[0], false);
            star_fail(vm,
                      "tuple() of %s: Codex 0.169 counts more elements in this range than it "
                      "yields (its span does not fit in 32 bits) and aborts",
                      b.data);
        }
    }
    size_t n;
    struct star_value *items = star_iterable_items(vm, a[0], &n);
    struct star_value t = star_tuple_new(vm, n);
    if (n)
        memcpy(t.u.l->items, items, n * sizeof *items);
    return t;
}

static void
dict_update(struct star_vm *vm, const char *fname, struct star_dict *d, struct star_value src,
            struct star_args *args)
{
    if (given(src)) {
        if (src.type == STAR_DICT) {
            size_t pos = 0;
            struct star_value k, v;
            while (star_dict_next(src.u.d, &pos, &k, &v))
                star_dict_set(vm, d, k, v);
        } else {
            size_t n;
            struct star_value *items = star_iterable_items(vm, src, &n);
            for (size_t i = 0; i < n; i++) {
                struct star_value p = items[i];
                if ((p.type != STAR_LIST && p.type != STAR_TUPLE) || p.u.l->len != 2)
                    star_fail(vm, "%s: non-pair element #%zu in the update sequence (got %s)",
                              fname, i, star_type_name(p));
                star_dict_set(vm, d, p.u.l->items[0], p.u.l->items[1]);
            }
        }
    }
    for (size_t k = 0; k < args->nkw; k++)
        star_dict_set(vm, d, star_string_of(args->kwnames[k]), args->kwvals[k]);
}

static struct star_value
bi_dict(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    if (args->npos > 1)
        star_fail(vm, "dict: got %zu positional arguments, want at most 1", args->npos);
    struct star_value d = star_dict_new(vm);
    struct star_value src = {.type = STAR_UNBOUND};
    if (args->npos == 1)
        src = args->pos[0];
    dict_update(vm, "dict", d.u.d, src, args);
    return d;
}

static struct star_value
bi_str(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("str", 1, "x");
    if (a[0].type == STAR_STRING)
        return a[0];
    struct star_buf b = {0};
    star_buf_value(vm, &b, a[0], false);
    return star_buf_string(vm, &b);
}

/* bytes(x), as Codex has it: bytes as they are, a string's UTF-8, or
 * the bytes an iterable's ints (each 0..255) name. */
static struct star_value
bi_bytes(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("bytes", 1, "x");
    struct star_value x = a[0];
    if (x.type == STAR_BYTES)
        return x;
    if (x.type == STAR_STRING)
        return star_bytes(vm, x.u.s->data, x.u.s->len);
    if (!star_is_iterable(x))
        star_fail(vm, "bytes() argument must be bytes, str, or iterable of int, not '%s'",
                  star_type_name(x));
    size_t n;
    struct star_value *items = star_iterable_items(vm, x, &n);
    struct star_buf out = {0};
    for (size_t i = 0; i < n; i++) {
        struct star_value v = items[i];
        if (v.type != STAR_INT || v.u.i < INT32_MIN || v.u.i > INT32_MAX)
            star_fail(vm, "bytes() iterable must contain integers, not '%s'", star_type_name(v));
        if (v.u.i < 0 || v.u.i > 255)
            star_fail(vm, "bytes() integer %lld is out of range 0..=255", (long long)v.u.i);
        star_buf_addc(vm, &out, (char)v.u.i);
    }
    return star_bytes(vm, out.data ? out.data : "", out.len);
}

static struct star_value
bi_repr(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("repr", 1, "x");
    struct star_buf b = {0};
    star_buf_value(vm, &b, a[0], true);
    return star_buf_string(vm, &b);
}

static struct star_value
bi_bool(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("bool", 0, "x");
    return star_bool(given(a[0]) && star_truth(a[0]));
}

/* The digits s[0..n) (underscores between them ignored) beyond int64. */
static bool
parse_big(struct star_vm *vm, const char *s, size_t n, unsigned base, bool neg,
          struct star_value *out)
{
    char *digits = star_alloc(vm, n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            digits[k++] = s[i];
    struct bigint *b = bigint_parse(vm, digits, k, base, neg);
    if (b == NULL)
        return false;
    *out = star_int_big(b);
    return true;
}

/* Parses s as an int of any size in base (0 = from the prefix); false
 * when invalid. */
static bool
parse_int(struct star_vm *vm, const char *s, size_t n, int64_t base, struct star_value *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (n - i >= 2 && s[i] == '0') {
        char p = (char)(s[i + 1] | 0x20);
        int64_t pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
        if (pb != 0 && (base == 0 || base == pb)) {
            base = pb;
            i += 2;
        }
    }
    /* As in Codex: no prefix is decimal, leading zeros included ("007"),
     * and the digits may hold underscores anywhere but first ("1_0",
     * "1__0" and "1_", not "_1" nor "0x_1"). */
    if (base == 0)
        base = 10;
    if (i == n || s[i] == '_')
        return false;
    size_t start = i;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] == '_')
            continue;
        int d = bigint_digit(s[i]);
        if (d >= base)
            return false;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return parse_big(vm, s + start, n - start, (unsigned)base, neg, out);
        v = v * (uint64_t)base + (uint64_t)d;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
        return parse_big(vm, s + start, n - start, (unsigned)base, neg, out);
    *out = star_int(neg ? (int64_t)(0 - v) : (int64_t)v);
    return true;
}

static struct star_value
bi_int(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND_NAMED("int", 1, 1, "x", "base");
    struct star_value x = a[0];
    if (x.type == STAR_STRING) {
        if (given(a[1]) && !star_is_int(a[1]))
            star_fail(vm, "int: base must be an integer, not %s", star_type_name(a[1]));
        int64_t base = given(a[1]) ? a[1].u.i : 10;
        if (a[1].type == STAR_BIGINT || (base != 0 && (base < 2 || base > 36)))
            star_fail(vm, "int: base must be an integer >= 2 && <= 36");
        struct star_value v;
        if (!parse_int(vm, x.u.s->data, x.u.s->len, base, &v)) {
            struct star_buf b = {0};
            star_buf_quote(vm, &b, x.u.s->data, x.u.s->len);
            star_fail(vm, "int: invalid literal with base %lld: %s", (long long)base, b.data);
        }
        return v;
    }
    if (given(a[1]))
        star_fail(vm, "int: can't convert non-string with explicit base");
    if (star_is_int(x))
        return x;
    if (x.type == STAR_BOOL)
        return star_int(x.u.b);
    if (x.type == STAR_FLOAT)
        return star_float_to_int(vm, x.u.fl);
    star_fail(vm, "int: got %s, want string, int, float or bool", star_type_name(x));
}

static struct star_value
bi_float(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    /* Positional only, as in Codex. */
    if (args->nkw > 0)
        star_fail(vm, "float: unexpected keyword argument '%s'", args->kwnames[0]->data);
    BIND("float", 0, "x");
    struct star_value x = a[0];
    if (!given(x))
        return star_float(0.0);
    if (star_is_num(x))
        return star_float(star_num_to_double(x));
    if (x.type == STAR_BOOL)
        return star_float(x.u.b ? 1.0 : 0.0);
    if (x.type != STAR_STRING)
        star_fail(vm, "float: got %s, want bool, float, int or string", star_type_name(x));
    double d;
    int r = star_float_parse(x.u.s->data, x.u.s->len, &d);
    if (r == -3)
        star_fail(vm, "float: out of memory");
    if (r == -2)
        star_fail(vm, "float() floating-point number too large: %s", x.u.s->data);
    if (r != 0) {
        struct star_buf b = {0};
        star_buf_quote(vm, &b, x.u.s->data, x.u.s->len);
        star_fail(vm, "%s is not a valid number", b.data);
    }
    return star_float(d);
}

static struct star_value
bi_range(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    if (args->nkw > 0)
        star_fail(vm, "range: unexpected keyword arguments");
    if (args->npos < 1 || args->npos > 3)
        star_fail(vm, "range: got %zu arguments, want 1 to 3", args->npos);
    int64_t v[3];
    for (size_t i = 0; i < args->npos; i++)
        v[i] = want_int(vm, "range", args->pos[i], "argument");
    struct star_range *r = star_alloc(vm, sizeof *r);
    r->step = 1;
    if (args->npos == 1) {
        r->stop = v[0];
    } else {
        r->start = v[0];
        r->stop = v[1];
        if (args->npos == 3)
            r->step = v[2];
    }
    if (r->step == 0)
        star_fail(vm, "range: step argument must not be zero");
    struct star_value res = {.type = STAR_RANGE, .u.r = r};
    return res;
}

static struct star_value
bi_enumerate(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND_NAMED("enumerate", 1, 1, "x", "start");
    int64_t start = given(a[1]) ? want_int(vm, "enumerate", a[1], "start") : 0;
    star_range_check_listable(vm, a[0], "enumerate()");
    size_t n;
    struct star_value *items = star_iterable_items(vm, a[0], &n);
    struct star_value l = star_list_new(vm, n);
    for (size_t i = 0; i < n; i++)
        l.u.l->items[i] = tuple2(vm, star_int(start + (int64_t)i), items[i]);
    l.u.l->len = n;
    return l;
}

static struct star_value
bi_zip(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    if (args->nkw > 0)
        star_fail(vm, "zip: unexpected keyword arguments");
    size_t k = args->npos, n = SIZE_MAX;
    struct star_value **cols = star_alloc(vm, (k ? k : 1) * sizeof *cols);
    for (size_t j = 0; j < k; j++) {
        size_t m;
        cols[j] = star_iterable_items(vm, args->pos[j], &m);
        if (m < n)
            n = m;
    }
    if (k == 0)
        n = 0;
    struct star_value l = star_list_new(vm, n);
    for (size_t i = 0; i < n; i++) {
        struct star_value t = star_tuple_new(vm, k);
        for (size_t j = 0; j < k; j++)
            t.u.l->items[j] = cols[j][i];
        l.u.l->items[i] = t;
    }
    l.u.l->len = n;
    return l;
}

/* Stable merge sort of items by keys (compared with star_compare). */
static void
merge_sort(struct star_vm *vm, struct star_value *items, struct star_value *keys, size_t n,
           struct star_value *tmp_i, struct star_value *tmp_k, bool reverse)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    merge_sort(vm, items, keys, h, tmp_i, tmp_k, reverse);
    merge_sort(vm, items + h, keys + h, n - h, tmp_i, tmp_k, reverse);
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n) {
        int c = star_compare(vm, keys[j], keys[i]);
        bool take_right = reverse ? c > 0 : c < 0;
        if (take_right) {
            tmp_i[o] = items[j];
            tmp_k[o++] = keys[j++];
        } else {
            tmp_i[o] = items[i];
            tmp_k[o++] = keys[i++];
        }
    }
    while (i < h) {
        tmp_i[o] = items[i];
        tmp_k[o++] = keys[i++];
    }
    while (j < n) {
        tmp_i[o] = items[j];
        tmp_k[o++] = keys[j++];
    }
    memcpy(items, tmp_i, n * sizeof *items);
    memcpy(keys, tmp_k, n * sizeof *keys);
}

static struct star_value
call1(struct star_vm *vm, struct star_value fn, struct star_value x)
{
    struct star_args ca = {.pos = &x, .npos = 1};
    return star_call(vm, fn, &ca);
}

static struct star_value *
keys_of(struct star_vm *vm, struct star_value key, struct star_value *items, size_t n)
{
    struct star_value *keys = star_alloc(vm, (n ? n : 1) * sizeof *keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = given(key) ? call1(vm, key, items[i]) : items[i];
    return keys;
}

static struct star_value
bi_sorted(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND_NAMED("sorted", 1, 1, "iterable", "key", "reverse");
    size_t n;
    struct star_value *items = star_iterable_items(vm, a[0], &n);
    struct star_value *keys = keys_of(vm, a[1], items, n);
    struct star_value *ti = star_alloc(vm, (n ? n : 1) * sizeof *ti);
    struct star_value *tk = star_alloc(vm, (n ? n : 1) * sizeof *tk);
    merge_sort(vm, items, keys, n, ti, tk, given(a[2]) && star_truth(a[2]));
    return list_of(vm, items, n);
}

static struct star_value
bi_reversed(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("reversed", 1, "sequence");
    size_t n;
    struct star_value *items = star_iterable_items(vm, a[0], &n);
    struct star_value l = star_list_new(vm, n);
    for (size_t i = 0; i < n; i++)
        l.u.l->items[i] = items[n - 1 - i];
    l.u.l->len = n;
    return l;
}

static struct star_value
bi_any_all(struct star_vm *vm, struct star_args *args, const char *name, bool want)
{
    static const char *const params[] = {"x"};
    struct star_value a[1];
    bind_args(vm, name, args, params, 1, 1, 1, a);
    size_t n;
    struct star_value *items = star_iterable_items(vm, a[0], &n);
    for (size_t i = 0; i < n; i++)
        if (star_truth(items[i]) == want)
            return star_bool(want);
    return star_bool(!want);
}

static struct star_value
bi_any(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return bi_any_all(vm, args, "any", true);
}

static struct star_value
bi_all(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return bi_any_all(vm, args, "all", false);
}

static struct star_value
min_max(struct star_vm *vm, struct star_args *args, const char *name, int sign)
{
    struct star_value key = {.type = STAR_UNBOUND};
    for (size_t k = 0; k < args->nkw; k++) {
        if (strcmp(args->kwnames[k]->data, "key") != 0)
            star_fail(vm, "%s: unexpected keyword argument '%s'", name, args->kwnames[k]->data);
        key = args->kwvals[k];
    }
    if (args->npos == 0)
        star_fail(vm, "%s: at least one positional argument required", name);
    size_t n;
    struct star_value *items;
    if (args->npos == 1) {
        items = star_iterable_items(vm, args->pos[0], &n);
    } else {
        items = args->pos;
        n = args->npos;
    }
    if (n == 0)
        star_fail(vm, "%s: argument is an empty sequence", name);
    struct star_value *keys = keys_of(vm, key, items, n);
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (star_compare(vm, keys[i], keys[best]) * sign > 0)
            best = i;
    return items[best];
}

static struct star_value
bi_min(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return min_max(vm, args, "min", -1);
}

static struct star_value
bi_max(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return min_max(vm, args, "max", 1);
}

static struct star_value
bi_type(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("type", 1, "x");
    const char *t = star_type_name(a[0]);
    return star_string(vm, t, strlen(t));
}

/* The str() of each positional argument joined by sep (default " "). */
static struct star_value
join_args(struct star_vm *vm, const char *fname, struct star_args *args)
{
    struct star_str *sep = NULL;
    for (size_t k = 0; k < args->nkw; k++) {
        if (strcmp(args->kwnames[k]->data, "sep") != 0)
            star_fail(vm, "%s: unexpected keyword argument '%s'", fname, args->kwnames[k]->data);
        sep = want_str(vm, fname, args->kwvals[k], "sep");
    }
    struct star_buf b = {0};
    star_buf_add(vm, &b, "", 0);
    for (size_t i = 0; i < args->npos; i++) {
        if (i > 0) {
            if (sep)
                star_buf_add(vm, &b, sep->data, sep->len);
            else
                star_buf_addc(vm, &b, ' ');
        }
        star_buf_value(vm, &b, args->pos[i], false);
    }
    return star_buf_string(vm, &b);
}

static struct star_value
bi_print(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    struct star_value s = join_args(vm, "print", args);
    fprintf(vm->print_to, "%s\n", s.u.s->data);
    return star_none();
}

static struct star_value
bi_fail(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    struct star_value s = join_args(vm, "fail", args);
    star_fail(vm, "fail: %s", s.u.s->data);
}

static struct star_value
bi_hasattr(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("hasattr", 2, "x", "name");
    struct star_str *name = want_str(vm, "hasattr", a[1], "name");
    return star_bool(star_method(a[0], name) != NULL);
}

static struct star_value
bi_getattr(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("getattr", 2, "x", "name", "default");
    struct star_str *name = want_str(vm, "getattr", a[1], "name");
    if (star_method(a[0], name) == NULL && given(a[2]))
        return a[2];
    return star_getattr(vm, a[0], star_intern(vm, name->data, name->len));
}

static struct star_value bi_dir(struct star_vm *vm, struct star_builtin *self,
                                struct star_args *args);

static struct star_value
bi_hash(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("hash", 1, "x");
    struct star_str *s = want_str(vm, "hash", a[0], "x");
    /* The same hash as Java's String.hashCode, as the spec requires. */
    int32_t h = 0;
    for (size_t i = 0; i < s->len; i++)
        h = (int32_t)((uint32_t)h * 31u + (unsigned char)s->data[i]);
    return star_int(h);
}

static struct star_value
bi_abs(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("abs", 1, "x");
    if (a[0].type == STAR_FLOAT)
        return star_float(fabs(a[0].u.fl));
    if (a[0].type == STAR_BIGINT)
        return star_int_big(bigint_abs(vm, a[0].u.big));
    if (a[0].type != STAR_INT)
        star_fail(vm, "abs: for x, got %s, want int", star_type_name(a[0]));
    int64_t x = a[0].u.i;
    if (x == INT64_MIN) /* 2^63 */
        return star_int_big(bigint_abs(vm, bigint_from_i64(vm, x)));
    return star_int(x < 0 ? -x : x);
}

static struct star_value
bi_chr(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("chr", 1, "i");
    int64_t cp = want_int(vm, "chr", a[0], "i");
    if (cp < 0 || cp > 0x10ffff)
        star_fail(vm, "chr: Unicode code point %lld out of range (>0x10FFFF)", (long long)cp);
    struct star_buf b = {0};
    star_buf_add_utf8(vm, &b, (uint32_t)cp);
    return star_buf_string(vm, &b);
}

static struct star_value
bi_ord(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("ord", 1, "s");
    if (a[0].type == STAR_BYTES) { /* the byte of a bytes of one, as in Codex */
        if (a[0].u.s->len != 1)
            star_fail(vm, "ord(): bytes argument must have length 1, not %zu", a[0].u.s->len);
        return star_int((unsigned char)a[0].u.s->data[0]);
    }
    struct star_str *s = want_str(vm, "ord", a[0], "s");
    size_t i = 0;
    uint32_t cp = s->len > 0 ? unicode_next(s->data, s->len, &i) : 0;
    if (s->len == 0 || i != s->len)
        star_fail(vm, "ord: string has %zu characters, want exactly one",
                  unicode_count(s->data, s->len));
    return star_int(cp);
}

/* ---- string methods ---- */

#define RECV_STR (self->recv.u.s)

/* One piece s[b..e) of a split, appended to out. */
static void
add_piece(struct star_vm *vm, struct star_value out, const char *d, size_t b, size_t e)
{
    star_list_append(vm, out, star_string(vm, d + b, e - b));
}

static void
reverse_list(struct star_list *l)
{
    for (size_t i = 0; i < l->len / 2; i++) {
        struct star_value t = l->items[i];
        l->items[i] = l->items[l->len - 1 - i];
        l->items[l->len - 1 - i] = t;
    }
}

/*
 * Whitespace split as Codex does it (Rust's char::is_whitespace): runs of
 * whitespace separate words; with at most `pieces` pieces (> 0), the last
 * piece is the rest of the string from its first non-space character on,
 * trailing whitespace included.  From the right for rsplit.
 */
static struct star_value
split_space(struct star_vm *vm, const char *d, size_t n, int64_t pieces, bool right)
{
    struct star_value out = star_list_new(vm, 0);
    int64_t split = 1;
    bool eat = true, have = false;
    size_t cb = 0, ce = 0;
    for (size_t i = right ? n : 0; right ? i > 0 : i < n;) {
        size_t at = i;
        uint32_t c = right ? unicode_prev(d, &i) : unicode_next(d, n, &i);
        size_t lo = right ? i : at, hi = right ? at : i;
        if (pieces > 0 && split >= pieces && !eat) {
            if (right)
                cb = lo;
            else
                ce = hi;
        } else if (unicode_is_whitespace(c)) {
            if (have) {
                add_piece(vm, out, d, cb, ce);
                have = false;
                split++;
                eat = true;
            }
        } else {
            eat = false;
            if (!have) {
                cb = lo;
                ce = hi;
                have = true;
            } else if (right) {
                cb = lo;
            } else {
                ce = hi;
            }
        }
    }
    if (have)
        add_piece(vm, out, d, cb, ce);
    if (right)
        reverse_list(out.u.l);
    return out;
}

/* The byte length of the code point at d[i] (i < n). */
static size_t
cp_width_at(const char *d, size_t n, size_t i)
{
    size_t j = i;
    unicode_next(d, n, &j);
    return j - i;
}

/* The byte length of the code point that ends at d[i - 1] (i > 0). */
static size_t
cp_width_before(const char *d, size_t i)
{
    size_t j = i;
    unicode_prev(d, &j);
    return i - j;
}

static struct star_value
split_impl(struct star_vm *vm, struct star_builtin *self, struct star_args *args, bool right)
{
    const char *fname = right ? "rsplit" : "split";
    BIND(fname, 0, "sep", "maxsplit");
    struct star_str *s = RECV_STR;
    int64_t max =
        given(a[1]) && a[1].type != STAR_NONE ? want_int(vm, fname, a[1], "maxsplit") : -1;
    /* Codex: a negative maxsplit means no limit; else maxsplit + 1 pieces. */
    int64_t pieces = max < 0 ? 0 : max + 1;
    const char *d = s->data;
    size_t n = s->len;
    if (!given(a[0]) || a[0].type == STAR_NONE)
        return split_space(vm, d, n, pieces, right);
    struct star_str *sep = want_str(vm, fname, a[0], "sep");
    struct star_value out = star_list_new(vm, 0);
    /*
     * Rust's split/splitn/rsplit/rsplitn: pieces between matches, found
     * left to right (or right to left); an empty sep matches at every
     * character boundary, so "ab".split("") is ["", "a", "b", ""].
     */
    size_t edge = right ? n : 0; /* where the next piece starts (ends) */
    size_t pos = edge;           /* where the next search starts (ends) */
    bool done = false;           /* an empty sep has matched at the far end */
    for (int64_t count = 1; pieces == 0 || count < pieces; count++) {
        size_t at = 0;
        if (done)
            break;
        if (sep->len == 0) {
            at = pos;
            if (right ? at == 0 : at == n)
                done = true;
            else
                pos = right ? at - cp_width_before(d, at) : at + cp_width_at(d, n, at);
        } else if (!right) {
            const char *h =
                pos + sep->len <= n ? memmem(d + pos, n - pos, sep->data, sep->len) : NULL;
            if (!h)
                break;
            at = (size_t)(h - d);
            pos = at + sep->len;
        } else {
            bool found = false;
            for (size_t k = pos + 1; k > sep->len && !found; k--) {
                if (memcmp(d + k - 1 - sep->len, sep->data, sep->len) == 0) {
                    at = k - 1 - sep->len;
                    found = true;
                }
            }
            if (!found)
                break;
            pos = at;
        }
        if (right) {
            add_piece(vm, out, d, at + sep->len, edge);
            edge = at;
        } else {
            add_piece(vm, out, d, edge, at);
            edge = at + sep->len;
        }
    }
    if (right) {
        add_piece(vm, out, d, 0, edge);
        reverse_list(out.u.l);
    } else {
        add_piece(vm, out, d, edge, n);
    }
    return out;
}

static struct star_value
m_split(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return split_impl(vm, self, args, false);
}

static struct star_value
m_rsplit(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return split_impl(vm, self, args, true);
}

static struct star_value
m_join(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("join", 1, "iterable");
    size_t n;
    struct star_value *items = star_iterable_items(vm, a[0], &n);
    struct star_buf b = {0};
    star_buf_add(vm, &b, "", 0);
    for (size_t i = 0; i < n; i++) {
        if (items[i].type != STAR_STRING)
            star_fail(vm, "join: in list, want string, got %s", star_type_name(items[i]));
        if (i > 0)
            star_buf_add(vm, &b, RECV_STR->data, RECV_STR->len);
        star_buf_add(vm, &b, items[i].u.s->data, items[i].u.s->len);
    }
    return star_buf_string(vm, &b);
}

static struct star_value
strip_impl(struct star_vm *vm, struct star_builtin *self, struct star_args *args, const char *fname,
           bool left, bool right)
{
    BIND(fname, 0, "chars");
    struct star_str *s = RECV_STR;
    struct star_str *chars = NULL;
    if (given(a[0])) /* Codex takes no None here */
        chars = want_str(vm, fname, a[0], "chars");
    /* By code point: Unicode whitespace, or any character of chars. */
    size_t b = 0, e = s->len;
    while (left && b < e) {
        size_t i = b;
        uint32_t c = unicode_next(s->data, e, &i);
        if (chars ? memmem(chars->data, chars->len, s->data + b, i - b) == NULL
                  : !unicode_is_whitespace(c))
            break;
        b = i;
    }
    while (right && e > b) {
        size_t i = e;
        uint32_t c = unicode_prev(s->data, &i);
        if (chars ? memmem(chars->data, chars->len, s->data + i, e - i) == NULL
                  : !unicode_is_whitespace(c))
            break;
        e = i;
    }
    return star_string(vm, s->data + b, e - b);
}

static struct star_value
m_strip(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return strip_impl(vm, self, args, "strip", true, true);
}

static struct star_value
m_lstrip(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return strip_impl(vm, self, args, "lstrip", true, false);
}

static struct star_value
m_rstrip(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return strip_impl(vm, self, args, "rstrip", false, true);
}

/* Resolves optional start/end arguments, counted in code points, to a
 * byte range of s; false when they select nothing (see below). */
static bool
str_range(struct star_vm *vm, const char *fname, struct star_str *s, struct star_value start,
          struct star_value end, size_t *b, size_t *e)
{
    bool ascii = unicode_is_ascii(s->data, s->len);
    int64_t n = ascii ? (int64_t)s->len : (int64_t)unicode_count(s->data, s->len), lo = 0, hi = n;
    if (given(start) && start.type != STAR_NONE) {
        lo = want_int(vm, fname, start, "start");
        if (lo < 0)
            lo = lo + n < 0 ? 0 : lo + n;
    }
    if (given(end) && end.type != STAR_NONE) {
        hi = want_int(vm, fname, end, "end");
        if (hi < 0)
            hi = hi + n < 0 ? 0 : hi + n;
    }
    /* As in Codex, a start past the end, or an end before the start,
     * selects nothing at all: even "" is not found there. */
    bool some = lo <= n;
    if (lo > n)
        lo = n;
    if (hi > n)
        hi = n;
    if (hi < lo) {
        hi = lo;
        some = false;
    }
    *b = ascii ? (size_t)lo : unicode_offset(s->data, s->len, (size_t)lo);
    *e = ascii ? (size_t)hi : unicode_offset(s->data, s->len, (size_t)hi);
    return some;
}

static bool
affix_match(struct star_vm *vm, const char *fname, struct star_str *s, size_t b, size_t e,
            struct star_value x, bool prefix)
{
    if (x.type == STAR_TUPLE) {
        /* Codex checks every element's type before it compares any. */
        for (size_t i = 0; i < x.u.l->len; i++)
            if (x.u.l->items[i].type != STAR_STRING)
                star_fail(vm, "%s: got %s, for element %zu, want string", fname,
                          star_type_name(x.u.l->items[i]), i);
        for (size_t i = 0; i < x.u.l->len; i++) {
            if (affix_match(vm, fname, s, b, e, x.u.l->items[i], prefix))
                return true;
        }
        return false;
    }
    if (x.type != STAR_STRING)
        star_fail(vm, "%s: got %s, want string or tuple of strings", fname, star_type_name(x));
    size_t n = x.u.s->len;
    if (n > e - b)
        return false;
    return memcmp(prefix ? s->data + b : s->data + e - n, x.u.s->data, n) == 0;
}

static struct star_value
m_startswith(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("startswith", 1, "prefix", "start", "end");
    size_t b, e;
    bool some = str_range(vm, "startswith", RECV_STR, a[1], a[2], &b, &e);
    return star_bool(affix_match(vm, "startswith", RECV_STR, b, e, a[0], true) && some);
}

static struct star_value
m_endswith(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("endswith", 1, "suffix", "start", "end");
    size_t b, e;
    bool some = str_range(vm, "endswith", RECV_STR, a[1], a[2], &b, &e);
    return star_bool(affix_match(vm, "endswith", RECV_STR, b, e, a[0], false) && some);
}

static struct star_value
m_replace(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("replace", 2, "old", "new", "count");
    struct star_str *s = RECV_STR;
    struct star_str *old = want_str(vm, "replace", a[0], "old");
    struct star_str *nw = want_str(vm, "replace", a[1], "new");
    int64_t count = given(a[2]) ? want_int(vm, "replace", a[2], "count") : -1;
    if (given(a[2]) && count < 0)
        star_fail(vm, "replace: count must not be negative (got %lld)", (long long)count);
    struct star_buf b = {0};
    star_buf_add(vm, &b, "", 0);
    size_t i = 0;
    int64_t done = 0;
    while (i <= s->len) {
        if (count >= 0 && done >= count)
            break;
        const char *hit;
        if (old->len == 0)
            hit = s->data + i;
        else
            hit = memmem(s->data + i, s->len - i, old->data, old->len);
        if (hit == NULL)
            break;
        size_t at = (size_t)(hit - s->data);
        star_buf_add(vm, &b, s->data + i, at - i);
        star_buf_add(vm, &b, nw->data, nw->len);
        done++;
        if (old->len == 0) {
            /* Between code points, not bytes: "é" has one inside. */
            size_t next = at + 1;
            if (at < s->len) {
                next = at;
                unicode_next(s->data, s->len, &next);
                star_buf_add(vm, &b, s->data + at, next - at);
            }
            i = next;
        } else {
            i = at + old->len;
        }
    }
    if (i < s->len)
        star_buf_add(vm, &b, s->data + i, s->len - i);
    return star_buf_string(vm, &b);
}

static void
add_mapped(struct star_vm *vm, struct star_buf *b, uint32_t cp, bool upper)
{
    uint32_t to[UNICODE_MAX_MAPPING];
    size_t n = upper ? unicode_to_upper(cp, to) : unicode_to_lower(cp, to);
    for (size_t i = 0; i < n; i++)
        star_buf_add_utf8(vm, b, to[i]);
}

/* Whether, skipping case-ignorable characters, the next character (or
 * the previous one, backward) is cased: Rust's test for a final sigma. */
static bool
cased_beyond(const char *d, size_t n, size_t i, bool backward)
{
    while (backward ? i > 0 : i < n) {
        uint32_t c = backward ? unicode_prev(d, &i) : unicode_next(d, n, &i);
        if (!unicode_is_case_ignorable(c))
            return unicode_is_cased(c);
    }
    return false;
}

#define CAPITAL_SIGMA 0x3a3
#define SMALL_SIGMA   0x3c3
#define FINAL_SIGMA   0x3c2

/*
 * Case mapping by code point, as Codex's interpreter does it: lower and
 * upper as Rust's str::to_lowercase / to_uppercase (full mappings: "ß"
 * becomes "SS", a capital sigma at the end of a word "ς"); capitalize and
 * title with each character's own mapping.
 */
static struct star_value
case_map(struct star_vm *vm, struct star_builtin *self, int mode)
{
    struct star_str *s = RECV_STR;
    const char *d = s->data;
    size_t n = s->len;
    struct star_buf b = {0};
    star_buf_add(vm, &b, "", 0);
    bool word_start = true;
    size_t k = 0;
    for (size_t i = 0; i < n; k++) {
        size_t at = i;
        uint32_t c = unicode_next(d, n, &i);
        switch (mode) {
        case 0:
            if (c == CAPITAL_SIGMA)
                star_buf_add_utf8(vm, &b,
                                  cased_beyond(d, n, at, true) && !cased_beyond(d, n, i, false)
                                      ? FINAL_SIGMA
                                      : SMALL_SIGMA);
            else
                add_mapped(vm, &b, c, false);
            break;
        case 1:
            add_mapped(vm, &b, c, true);
            break;
        case 2:
            add_mapped(vm, &b, c, k == 0);
            break;
        default:
            /* Upper case after anything not alphabetic, lower case after a
             * letter; the rest lower case. */
            if (!unicode_is_alphabetic(c)) {
                add_mapped(vm, &b, c, false);
                word_start = true;
            } else {
                add_mapped(vm, &b, c, word_start);
                word_start = false;
            }
            break;
        }
    }
    return star_buf_string(vm, &b);
}

static struct star_value
m_lower(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("lower");
    return case_map(vm, self, 0);
}

static struct star_value
m_upper(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("upper");
    return case_map(vm, self, 1);
}

static struct star_value
m_capitalize(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("capitalize");
    return case_map(vm, self, 2);
}

static struct star_value
m_title(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("title");
    return case_map(vm, self, 3);
}

/* The is... methods, by code point with Rust's char properties, as
 * Codex's interpreter has them. */
static struct star_value
predicate(struct star_vm *vm, struct star_builtin *self, struct star_args *args, int kind)
{
    NO_ARGS(self->name);
    struct star_str *s = RECV_STR;
    if (kind < 4 && s->len == 0)
        return star_bool(false);
    bool result = false, last_space = true;
    for (size_t i = 0; i < s->len;) {
        uint32_t c = unicode_next(s->data, s->len, &i);
        switch (kind) {
        case 0:
            if (!unicode_is_alphabetic(c) && !unicode_is_numeric(c))
                return star_bool(false);
            break;
        case 1:
            if (!unicode_is_alphabetic(c))
                return star_bool(false);
            break;
        case 2:
            if (!unicode_is_numeric(c))
                return star_bool(false);
            break;
        case 3:
            if (!unicode_is_whitespace(c))
                return star_bool(false);
            break;
        case 4: /* islower */
            if (unicode_is_uppercase(c))
                return star_bool(false);
            result = result || unicode_is_lowercase(c);
            break;
        case 5: /* isupper */
            if (unicode_is_lowercase(c))
                return star_bool(false);
            result = result || unicode_is_uppercase(c);
            break;
        default: /* istitle */
            if (!unicode_is_alphabetic(c)) {
                last_space = true;
                break;
            }
            if (last_space ? unicode_is_lowercase(c) : unicode_is_uppercase(c))
                return star_bool(false);
            result = true;
            last_space = false;
            break;
        }
    }
    return star_bool(kind < 4 ? true : result);
}

static struct star_value
m_isalnum(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return predicate(vm, self, args, 0);
}

static struct star_value
m_isalpha(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return predicate(vm, self, args, 1);
}

static struct star_value
m_isdigit(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return predicate(vm, self, args, 2);
}

static struct star_value
m_isspace(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return predicate(vm, self, args, 3);
}

static struct star_value
m_islower(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return predicate(vm, self, args, 4);
}

static struct star_value
m_isupper(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return predicate(vm, self, args, 5);
}

static struct star_value
m_istitle(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return predicate(vm, self, args, 6);
}

/* find / rfind / index / rindex / count */
static struct star_value
find_impl(struct star_vm *vm, struct star_builtin *self, struct star_args *args, bool right,
          bool must)
{
    const char *fname = self->name;
    BIND(fname, 1, "sub", "start", "end");
    struct star_str *s = RECV_STR;
    struct star_str *sub = want_str(vm, fname, a[0], "sub");
    size_t b, e;
    bool some = str_range(vm, fname, s, a[1], a[2], &b, &e);
    int64_t found = -1;
    if (some && sub->len <= e - b) {
        if (!right) {
            const char *h = memmem(s->data + b, e - b, sub->data, sub->len);
            if (h)
                found = h - s->data;
        } else {
            for (size_t k = e - sub->len + 1; k > b; k--) {
                if (memcmp(s->data + k - 1, sub->data, sub->len) == 0) {
                    found = (int64_t)(k - 1);
                    break;
                }
            }
        }
    }
    if (found < 0 && must)
        star_fail(vm, "%s: substring not found", fname);
    if (found > 0) /* a byte offset; the answer counts code points */
        found = (int64_t)unicode_count(s->data, (size_t)found);
    return star_int(found);
}

static struct star_value
m_find(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return find_impl(vm, self, args, false, false);
}

static struct star_value
m_rfind(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return find_impl(vm, self, args, true, false);
}

static struct star_value
m_sindex(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return find_impl(vm, self, args, false, true);
}

static struct star_value
m_rindex(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return find_impl(vm, self, args, true, true);
}

static struct star_value
m_count(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("count", 1, "sub", "start", "end");
    struct star_str *s = RECV_STR;
    struct star_str *sub = want_str(vm, "count", a[0], "sub");
    size_t b, e;
    if (!str_range(vm, "count", s, a[1], a[2], &b, &e))
        return star_int(0);
    if (sub->len == 0)
        return star_int((int64_t)unicode_count(s->data + b, e - b) + 1);
    int64_t n = 0;
    size_t i = b;
    while (i + sub->len <= e) {
        const char *h = memmem(s->data + i, e - i, sub->data, sub->len);
        if (!h)
            break;
        n++;
        i = (size_t)(h - s->data) + sub->len;
    }
    return star_int(n);
}

static struct star_value
partition_impl(struct star_vm *vm, struct star_builtin *self, struct star_args *args, bool right)
{
    const char *fname = right ? "rpartition" : "partition";
    BIND(fname, 1, "sep");
    struct star_str *s = RECV_STR;
    struct star_str *sep = want_str(vm, fname, a[0], "sep");
    if (sep->len == 0)
        star_fail(vm, "%s: empty separator", fname);
    const char *h = NULL;
    if (!right) {
        h = memmem(s->data, s->len, sep->data, sep->len);
    } else if (sep->len <= s->len) {
        for (size_t k = s->len - sep->len + 1; k > 0; k--)
            if (memcmp(s->data + k - 1, sep->data, sep->len) == 0) {
                h = s->data + k - 1;
                break;
            }
    }
    struct star_value t = star_tuple_new(vm, 3);
    struct star_value empty = star_string(vm, "", 0);
    if (h == NULL) {
        t.u.l->items[0] = right ? empty : star_string_of(s);
        t.u.l->items[1] = empty;
        t.u.l->items[2] = right ? star_string_of(s) : empty;
        return t;
    }
    size_t at = (size_t)(h - s->data);
    t.u.l->items[0] = star_string(vm, s->data, at);
    t.u.l->items[1] = star_string_of(sep);
    t.u.l->items[2] = star_string(vm, s->data + at + sep->len, s->len - at - sep->len);
    return t;
}

static struct star_value
m_partition(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return partition_impl(vm, self, args, false);
}

static struct star_value
m_rpartition(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    return partition_impl(vm, self, args, true);
}

static struct star_value
m_splitlines(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("splitlines", 0, "keepends");
    if (given(a[0]) && a[0].type != STAR_BOOL)
        star_fail(vm, "splitlines: for keepends, got %s, want bool", star_type_name(a[0]));
    bool keep = given(a[0]) && a[0].u.b;
    struct star_str *s = RECV_STR;
    struct star_value out = star_list_new(vm, 0);
    size_t i = 0;
    while (i < s->len) {
        size_t j = i;
        while (j < s->len && s->data[j] != '\n' && s->data[j] != '\r')
            j++;
        size_t end = j;
        if (j < s->len) {
            if (s->data[j] == '\r' && j + 1 < s->len && s->data[j + 1] == '\n')
                j += 2;
            else
                j++;
        }
        star_list_append(vm, out, star_string(vm, s->data + i, (keep ? j : end) - i));
        i = j;
    }
    return out;
}

static struct star_value
m_removeprefix(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("removeprefix", 1, "prefix");
    struct star_str *s = RECV_STR, *p = want_str(vm, "removeprefix", a[0], "prefix");
    if (p->len <= s->len && memcmp(s->data, p->data, p->len) == 0)
        return star_string(vm, s->data + p->len, s->len - p->len);
    return self->recv;
}

static struct star_value
m_removesuffix(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("removesuffix", 1, "suffix");
    struct star_str *s = RECV_STR, *p = want_str(vm, "removesuffix", a[0], "suffix");
    if (p->len <= s->len && memcmp(s->data + s->len - p->len, p->data, p->len) == 0)
        return star_string(vm, s->data, s->len - p->len);
    return self->recv;
}

static struct star_value
m_elems(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("elems");
    struct star_str *s = RECV_STR;
    struct star_value out = star_list_new(vm, 0);
    for (size_t i = 0; i < s->len;) {
        size_t at = i;
        unicode_next(s->data, s->len, &i);
        star_list_append(vm, out, star_string(vm, s->data + at, i - at));
    }
    return star_iterator_new(out.u.l);
}

/* A bytes value's bytes, each a bytes of one: a tuple, as in Codex. */
static struct star_value
m_belems(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("elems");
    struct star_str *s = RECV_STR;
    struct star_value out = star_tuple_new(vm, s->len);
    for (size_t i = 0; i < s->len; i++)
        out.u.l->items[i] = star_bytes(vm, s->data + i, 1);
    return out;
}

/* The code points as ints, an iterator as in Codex. */
static struct star_value
m_codepoints(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("codepoints");
    struct star_str *s = RECV_STR;
    struct star_value out = star_list_new(vm, 0);
    for (size_t i = 0; i < s->len;)
        star_list_append(vm, out, star_int(unicode_next(s->data, s->len, &i)));
    return star_iterator_new(out.u.l);
}

static struct star_value
m_format(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    struct star_str *s = RECV_STR;
    struct star_buf b = {0};
    star_buf_add(vm, &b, "", 0);
    size_t auto_idx = 0;
    bool used_auto = false, used_manual = false;
    for (size_t i = 0; i < s->len; i++) {
        char c = s->data[i];
        if (c == '}') {
            if (i + 1 < s->len && s->data[i + 1] == '}') {
                star_buf_addc(vm, &b, '}');
                i++;
                continue;
            }
            star_fail(vm, "format: single '}' in format");
        }
        if (c != '{') {
            star_buf_addc(vm, &b, c);
            continue;
        }
        if (i + 1 < s->len && s->data[i + 1] == '{') {
            star_buf_addc(vm, &b, '{');
            i++;
            continue;
        }
        const char *end = memchr(s->data + i, '}', s->len - i);
        if (end == NULL)
            star_fail(vm, "format: unmatched '{' in format");
        const char *f = s->data + i + 1;
        size_t flen = (size_t)(end - f);
        char conv = 's';
        const char *bang = memchr(f, '!', flen);
        if (bang != NULL) {
            if ((size_t)(end - bang) != 2 || (bang[1] != 's' && bang[1] != 'r'))
                star_fail(vm, "format: unknown conversion");
            conv = bang[1];
            flen = (size_t)(bang - f);
        }
        if (memchr(f, ':', flen) != NULL)
            star_fail(vm, "format: format specifications are not supported");
        if (memchr(f, '{', flen) != NULL)
            star_fail(vm, "format: nested replacement fields are not supported");
        if (memchr(f, '.', flen) != NULL)
            star_fail(vm, "format: field %.*s: attribute syntax x.y is not supported", (int)flen,
                      f);
        if (memchr(f, '[', flen) != NULL)
            star_fail(vm, "format: field %.*s: index syntax a[i] is not supported", (int)flen, f);
        bool numeric = flen > 0;
        for (size_t j = 0; j < flen; j++)
            numeric = numeric && f[j] >= '0' && f[j] <= '9';
        struct star_value v;
        if (flen == 0) {
            if (used_manual)
                star_fail(vm, "format: cannot switch from manual field specification to "
                              "automatic field numbering");
            used_auto = true;
            if (auto_idx >= args->npos)
                star_fail(vm, "format: tuple index out of range");
            v = args->pos[auto_idx++];
        } else if (numeric) {
            if (used_auto)
                star_fail(vm, "format: cannot switch from automatic field numbering to "
                              "manual field specification");
            used_manual = true;
            size_t k = 0;
            for (size_t j = 0; j < flen; j++) {
                if (f[j] < '0' || f[j] > '9')
                    star_fail(vm, "format: bad field index");
                k = k * 10 + (size_t)(f[j] - '0');
                if (k > args->npos)
                    break;
            }
            if (k >= args->npos)
                star_fail(vm, "format: tuple index out of range");
            v = args->pos[k];
        } else {
            size_t k = 0;
            while (k < args->nkw &&
                   !(args->kwnames[k]->len == flen && memcmp(args->kwnames[k]->data, f, flen) == 0))
                k++;
            if (k == args->nkw)
                star_fail(vm, "format: keyword %.*s not found", (int)flen, f);
            v = args->kwvals[k];
        }
        star_buf_value(vm, &b, v, conv == 'r');
        i = (size_t)(end - s->data);
    }
    return star_buf_string(vm, &b);
}

/* ---- list methods ---- */

#define RECV_LIST (self->recv.u.l)

static void
list_mutable(struct star_vm *vm, struct star_list *l, const char *what)
{
    static const struct {
        const char *method, *verb;
    } verbs[] = {{"append", "append to"}, {"extend", "extend"},      {"insert", "insert into"},
                 {"pop", "pop from"},     {"remove", "remove from"}, {"clear", "clear"}};
    const char *verb = "modify";
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (strcmp(verbs[i].method, what) == 0)
            verb = verbs[i].verb;
    if (l->frozen)
        star_fail(vm, "%s: cannot %s frozen list", what, verb);
    if (l->iterating)
        star_fail(vm, "%s: cannot %s list during iteration", what, verb);
}

static struct star_value
m_append(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("append", 1, "x");
    list_mutable(vm, RECV_LIST, "append");
    star_list_append(vm, self->recv, a[0]);
    return star_none();
}

static struct star_value
m_extend(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("extend", 1, "x");
    list_mutable(vm, RECV_LIST, "extend");
    star_range_check_listable(vm, a[0], "extend");
    size_t n;
    struct star_value *items = star_iterable_items(vm, a[0], &n);
    for (size_t i = 0; i < n; i++)
        star_list_append(vm, self->recv, items[i]);
    return star_none();
}

static struct star_value
m_insert(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("insert", 2, "index", "x");
    struct star_list *l = RECV_LIST;
    list_mutable(vm, l, "insert");
    int64_t i = want_int(vm, "insert", a[0], "index"), n = (int64_t)l->len;
    if (i < 0)
        i = i + n < 0 ? 0 : i + n;
    if (i > n)
        i = n;
    star_list_append(vm, self->recv, star_none());
    memmove(l->items + i + 1, l->items + i, (size_t)(n - i) * sizeof *l->items);
    l->items[i] = a[1];
    return star_none();
}

static struct star_value
m_pop(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("pop", 0, "i");
    struct star_list *l = RECV_LIST;
    list_mutable(vm, l, "pop");
    int64_t n = (int64_t)l->len;
    int64_t i = given(a[0]) ? want_int(vm, "pop", a[0], "i") : n - 1;
    int64_t k = i < 0 ? i + n : i;
    if (k < 0 || k >= n)
        star_fail(vm, "pop: index %lld out of range [%lld:%lld]", (long long)i, (long long)-n,
                  (long long)n - 1);
    struct star_value v = l->items[k];
    memmove(l->items + k, l->items + k + 1, (size_t)(n - k - 1) * sizeof *l->items);
    l->len--;
    return v;
}

static struct star_value
m_remove(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("remove", 1, "x");
    struct star_list *l = RECV_LIST;
    list_mutable(vm, l, "remove");
    for (size_t i = 0; i < l->len; i++) {
        if (star_equal(vm, l->items[i], a[0])) {
            memmove(l->items + i, l->items + i + 1, (l->len - i - 1) * sizeof *l->items);
            l->len--;
            return star_none();
        }
    }
    star_fail(vm, "remove: element not found");
}

static struct star_value
m_lindex(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("index", 1, "x", "start", "end");
    struct star_list *l = RECV_LIST;
    int64_t n = (int64_t)l->len, lo = 0, hi = n;
    if (given(a[1])) {
        lo = want_int(vm, "index", a[1], "start");
        if (lo < 0)
            lo = lo + n < 0 ? 0 : lo + n;
    }
    if (given(a[2])) {
        hi = want_int(vm, "index", a[2], "end");
        if (hi < 0)
            hi = hi + n < 0 ? 0 : hi + n;
        if (hi > n)
            hi = n;
    }
    for (int64_t i = lo; i < hi; i++)
        if (star_equal(vm, l->items[i], a[0]))
            return star_int(i);
    star_fail(vm, "index: value not in list");
}

static struct star_value
m_lclear(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("clear");
    list_mutable(vm, RECV_LIST, "clear");
    RECV_LIST->len = 0;
    return star_none();
}

/* ---- dict methods ---- */

#define RECV_DICT (self->recv.u.d)

static struct star_value
m_get(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("get", 1, "key", "default");
    struct star_value v;
    if (star_dict_get(vm, RECV_DICT, a[0], &v))
        return v;
    return given(a[1]) ? a[1] : star_none();
}

static struct star_value
m_keys(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("keys");
    size_t n;
    struct star_value *items = star_iterable_items(vm, self->recv, &n);
    return list_of(vm, items, n);
}

static struct star_value
m_values(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("values");
    struct star_value out = star_list_new(vm, star_dict_len(RECV_DICT));
    size_t pos = 0;
    struct star_value v;
    while (star_dict_next(RECV_DICT, &pos, NULL, &v))
        out.u.l->items[out.u.l->len++] = v;
    return out;
}

static struct star_value
m_items(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("items");
    struct star_value out = star_list_new(vm, star_dict_len(RECV_DICT));
    size_t pos = 0;
    struct star_value k, v;
    while (star_dict_next(RECV_DICT, &pos, &k, &v))
        out.u.l->items[out.u.l->len++] = tuple2(vm, k, v);
    return out;
}

static struct star_value
m_dpop(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("pop", 1, "key", "default");
    struct star_value v;
    if (star_dict_del(vm, RECV_DICT, a[0], &v))
        return v;
    if (given(a[1]))
        return a[1];
    struct star_buf b = {0};
    star_buf_value(vm, &b, a[0], true);
    star_fail(vm, "pop: missing key %s", b.data);
}

static struct star_value
m_popitem(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("popitem");
    size_t pos = 0;
    struct star_value k, v;
    star_dict_check_mutable(vm, RECV_DICT);
    if (!star_dict_next(RECV_DICT, &pos, &k, &v))
        star_fail(vm, "popitem: empty dict");
    star_dict_del(vm, RECV_DICT, k, NULL);
    return tuple2(vm, k, v);
}

static struct star_value
m_setdefault(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("setdefault", 1, "key", "default");
    struct star_value v;
    if (star_dict_get(vm, RECV_DICT, a[0], &v))
        return v;
    v = given(a[1]) ? a[1] : star_none();
    star_dict_set(vm, RECV_DICT, a[0], v);
    return v;
}

static struct star_value
m_update(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    if (args->npos > 1)
        star_fail(vm, "update: got %zu positional arguments, want at most 1", args->npos);
    star_dict_check_mutable(vm, RECV_DICT);
    struct star_value src = {.type = STAR_UNBOUND};
    if (args->npos == 1)
        src = args->pos[0];
    dict_update(vm, "update", RECV_DICT, src, args);
    return star_none();
}

static struct star_value
m_dclear(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    NO_ARGS("clear");
    star_dict_clear(vm, RECV_DICT);
    return star_none();
}

/* ---- method tables ---- */

struct method {
    uint8_t type;
    const char *name;
    star_builtin_fn fn;
};

/* Sorted by name within each type, as dir() lists them. */
static const struct method methods[] = {
    {STAR_DICT, "clear", m_dclear},
    {STAR_DICT, "get", m_get},
    {STAR_DICT, "items", m_items},
    {STAR_DICT, "keys", m_keys},
    {STAR_DICT, "pop", m_dpop},
    {STAR_DICT, "popitem", m_popitem},
    {STAR_DICT, "setdefault", m_setdefault},
    {STAR_DICT, "update", m_update},
    {STAR_DICT, "values", m_values},
    {STAR_LIST, "append", m_append},
    {STAR_LIST, "clear", m_lclear},
    {STAR_LIST, "extend", m_extend},
    {STAR_LIST, "index", m_lindex},
    {STAR_LIST, "insert", m_insert},
    {STAR_LIST, "pop", m_pop},
    {STAR_LIST, "remove", m_remove},
    {STAR_STRING, "capitalize", m_capitalize},
    {STAR_STRING, "codepoints", m_codepoints},
    {STAR_STRING, "count", m_count},
    {STAR_STRING, "elems", m_elems},
    {STAR_STRING, "endswith", m_endswith},
    {STAR_STRING, "find", m_find},
    {STAR_STRING, "format", m_format},
    {STAR_STRING, "index", m_sindex},
    {STAR_STRING, "isalnum", m_isalnum},
    {STAR_STRING, "isalpha", m_isalpha},
    {STAR_STRING, "isdigit", m_isdigit},
    {STAR_STRING, "islower", m_islower},
    {STAR_STRING, "isspace", m_isspace},
    {STAR_STRING, "istitle", m_istitle},
    {STAR_STRING, "isupper", m_isupper},
    {STAR_STRING, "join", m_join},
    {STAR_STRING, "lower", m_lower},
    {STAR_STRING, "lstrip", m_lstrip},
    {STAR_STRING, "partition", m_partition},
    {STAR_STRING, "removeprefix", m_removeprefix},
    {STAR_STRING, "removesuffix", m_removesuffix},
    {STAR_STRING, "replace", m_replace},
    {STAR_STRING, "rfind", m_rfind},
    {STAR_STRING, "rindex", m_rindex},
    {STAR_STRING, "rpartition", m_rpartition},
    {STAR_STRING, "rsplit", m_rsplit},
    {STAR_STRING, "rstrip", m_rstrip},
    {STAR_STRING, "split", m_split},
    {STAR_STRING, "splitlines", m_splitlines},
    {STAR_STRING, "startswith", m_startswith},
    {STAR_STRING, "strip", m_strip},
    {STAR_STRING, "title", m_title},
    {STAR_STRING, "upper", m_upper},
    {STAR_BYTES, "elems", m_belems},
};

static const struct method *
find_method(uint8_t type, const struct star_str *name)
{
    for (size_t i = 0; i < NPARAMS(methods); i++) {
        const struct method *m = &methods[i];
        if (m->type == type && m->name[0] == name->data[0] && strcmp(m->name, name->data) == 0)
            return m;
    }
    return NULL;
}

star_builtin_fn
star_method(struct star_value recv, const struct star_str *name)
{
    const struct method *m = find_method(recv.type, name);
    return m ? m->fn : NULL;
}

/* Edit distance, bounded: names are short. */
static size_t
distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 32 || lb > 32)
        return 99;
    size_t row[33];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t sub =
                prev + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            size_t best = sub < row[j] + 1 ? sub : row[j] + 1;
            row[j] = best < row[j - 1] + 1 ? best : row[j - 1] + 1;
            prev = cur;
        }
    }
    return row[lb];
}

/* The method of type closest to name, for "did you mean" hints; NULL if none is close. */
static const char *
closest_method(uint8_t type, const char *name)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < NPARAMS(methods); i++) {
        if (methods[i].type != type)
            continue;
        size_t d = distance(methods[i].name, name);
        if (d < best_d) {
            best_d = d;
            best = methods[i].name;
        }
    }
    return best;
}

struct star_value
star_getattr(struct star_vm *vm, struct star_value obj, struct star_str *name)
{
    const struct method *m = find_method(obj.type, name);
    if (m == NULL) {
        const char *hint = closest_method(obj.type, name->data);
        if (hint != NULL)
            star_fail(vm, "%s has no .%s field or method (did you mean .%s?)", star_type_name(obj),
                      name->data, hint);
        star_fail(vm, "%s has no .%s field or method", star_type_name(obj), name->data);
    }
    struct star_builtin *b = star_alloc(vm, sizeof *b);
    b->name = m->name;
    b->fn = m->fn;
    b->recv = obj;
    struct star_value v = {.type = STAR_BUILTIN, .u.bi = b};
    return v;
}

static struct star_value
bi_dir(struct star_vm *vm, struct star_builtin *self, struct star_args *args)
{
    BIND("dir", 1, "x");
    struct star_value out = star_list_new(vm, 0);
    for (size_t i = 0; i < NPARAMS(methods); i++)
        if (methods[i].type == a[0].type)
            star_list_append(vm, out, star_string(vm, methods[i].name, strlen(methods[i].name)));
    return out;
}

/* ---- % formatting ---- */

struct star_value
star_percent_format(struct star_vm *vm, struct star_str *fmt, struct star_value args)
{
    struct star_buf b = {0};
    star_buf_add(vm, &b, "", 0);
    size_t argi = 0, nargs = 1;
    struct star_value *argv = &args;
    if (args.type == STAR_TUPLE) {
        argv = args.u.l->items;
        nargs = args.u.l->len;
    }
    for (size_t i = 0; i < fmt->len; i++) {
        char c = fmt->data[i];
        if (c != '%') {
            star_buf_addc(vm, &b, c);
            continue;
        }
        if (++i >= fmt->len)
            star_fail(vm, "incomplete format");
        c = fmt->data[i];
        if (c == '%') {
            star_buf_addc(vm, &b, '%');
            continue;
        }
        /* Codex's conversions only: no %(key)s, no %i. */
        if (!strchr("srdxXoeEfgG", c) || c == '\0') {
            size_t w = 1;
            while (i + w < fmt->len && ((unsigned char)fmt->data[i + w] & 0xc0) == 0x80)
                w++;
            star_fail(vm, "Unsupported format character: '%.*s'", (int)w, fmt->data + i);
        }
        if (argi >= nargs)
            star_fail(vm, "not enough arguments for format string");
        struct star_value v = argv[argi++];
        switch (c) {
        case 's':
            /* Codex gives a non-string's repr for %s: bytes show as b"..." */
            star_buf_value(vm, &b, v, v.type == STAR_BYTES);
            break;
        case 'r':
            star_buf_value(vm, &b, v, true);
            break;
        case 'e':
        case 'E':
        case 'f':
        case 'g':
        case 'G':
            if (!star_is_num(v))
                star_fail(vm, "%%%c format requires a number: %s", c, star_type_name(v));
            star_float_buf(vm, &b, star_num_to_double(v), c == 'g' ? 'r' : c == 'G' ? 'R' : c);
            break;
        case 'd':
        case 'x':
        case 'X':
        case 'o': {
            /* Codex refuses a bool here, unlike Python. */
            /* %d truncates a float, and only to an int of 32 bits, as in Codex. */
            if (v.type == STAR_FLOAT && c == 'd') {
                double t = trunc(v.u.fl);
                if (!(t >= -2147483648.0 && t <= 2147483647.0))
                    star_fail(vm, "Operation `format(%%d)` not supported on type `float`");
                v = star_int((int64_t)t);
            }
            if (v.type == STAR_BIGINT) {
                size_t n;
                unsigned base = c == 'd' ? 10 : c == 'o' ? 8 : 16;
                const char *digits = bigint_to_string(vm, v.u.big, base, c == 'X', &n);
                star_buf_add(vm, &b, digits, n);
                break;
            }
            if (v.type != STAR_INT)
                star_fail(vm, "%%%c format requires integer: %s", c, star_type_name(v));
            int64_t x = v.u.i;
            uint64_t mag = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
            const char *sign = x < 0 ? "-" : "";
            if (c == 'x')
                star_buf_addf(vm, &b, "%s%llx", sign, (unsigned long long)mag);
            else if (c == 'X')
                star_buf_addf(vm, &b, "%s%llX", sign, (unsigned long long)mag);
            else if (c == 'o')
                star_buf_addf(vm, &b, "%s%llo", sign, (unsigned long long)mag);
            else
                star_buf_addf(vm, &b, "%lld", (long long)x);
            break;
        }
        default:
            star_fail(vm, "unknown conversion %%%c", c);
        }
    }
    if (argi < nargs)
        star_fail(vm, "too many arguments for format string");
    return star_buf_string(vm, &b);
}

/* ---- installation ---- */

static const struct {
    const char *name;
    star_builtin_fn fn;
} universe[] = {
    {"abs", bi_abs},         {"all", bi_all},           {"any", bi_any},
    {"bool", bi_bool},       {"bytes", bi_bytes},       {"chr", bi_chr},
    {"dict", bi_dict},       {"dir", bi_dir},           {"enumerate", bi_enumerate},
    {"fail", bi_fail},       {"getattr", bi_getattr},   {"float", bi_float},
    {"hasattr", bi_hasattr}, {"hash", bi_hash},         {"int", bi_int},
    {"len", bi_len},         {"list", bi_list},         {"max", bi_max},
    {"min", bi_min},         {"ord", bi_ord},           {"range", bi_range},
    {"repr", bi_repr},       {"reversed", bi_reversed}, {"sorted", bi_sorted},
    {"str", bi_str},         {"tuple", bi_tuple},       {"type", bi_type},
    {"zip", bi_zip},
};

void
star_builtins_install(struct star_vm *vm)
{
    if (star_vm_define(vm, "None", star_none()) != 0 ||
        star_vm_define(vm, "True", star_bool(true)) != 0 ||
        star_vm_define(vm, "False", star_bool(false)) != 0)
        star_fail(vm, "out of memory");
    for (size_t i = 0; i < NPARAMS(universe); i++)
        if (star_vm_define_builtin(vm, universe[i].name, universe[i].fn, NULL) != 0)
            star_fail(vm, "out of memory");
}

int
star_builtins_install_print(struct star_vm *vm)
{
    return star_vm_define_builtin(vm, "print", bi_print, NULL);
}
