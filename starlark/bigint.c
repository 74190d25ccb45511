#include "starlark/bigint.h"

#include <math.h>
#include <string.h>

#include "starlark/vm.h"

/*
 * The long operations count their work against the run's step budget:
 * one step for every BIGINT_WORK_PER_STEP units, a unit being one product
 * of 64-bit limbs with its additions (0.4 to 0.5 ns here, measured on
 * each operation) or what costs as much (a 32-bit limb divided by a
 * variable: 4 units; a 128-bit division: 32).  The whole budget spent on
 * integers is thus about ten seconds of work, about what Codex spends on
 * a number of 100 million bits, so a file whose numbers grow without
 * bound ends with the step-limit error, as an endless loop does, while
 * one that Codex loads in a few seconds loads here too.
 */
#define BIGINT_WORK_PER_STEP 1024u

static void
charge(struct star_vm *vm, uint64_t work)
{
    /* Rounded up: a short operation done many times (a chunk of text
     * off a small number) would otherwise cost nothing. */
    vm->steps += (work + BIGINT_WORK_PER_STEP - 1) / BIGINT_WORK_PER_STEP;
    if (vm->steps > vm->max_steps)
        star_fail(vm, "too many steps (limit %llu): integers this large cost too much to compute",
                  (unsigned long long)vm->max_steps);
}

/* A zeroed value of n limbs (the caller trims it). */
static struct bigint *
alloc(struct star_vm *vm, size_t n)
{
    if (n > UINT32_MAX || n > (SIZE_MAX - sizeof(struct bigint)) / sizeof(uint32_t))
        star_fail(vm, "out of memory: an integer of %zu bits is too large", n);
    struct bigint *r = star_alloc(vm, sizeof *r + n * sizeof(uint32_t));
    r->n = (uint32_t)n;
    return r;
}

/* Drops leading zero limbs; zero is never negative. */
static struct bigint *
trim(struct bigint *r)
{
    while (r->n > 0 && r->limb[r->n - 1] == 0)
        r->n--;
    if (r->n == 0)
        r->neg = false;
    return r;
}

static struct bigint *
copy(struct star_vm *vm, const struct bigint *a, bool neg)
{
    struct bigint *r = alloc(vm, a->n);
    if (a->n > 0)
        memcpy(r->limb, a->limb, a->n * sizeof(uint32_t));
    r->neg = neg;
    return trim(r);
}

/* ---- magnitudes ---- */

static int
mag_cmp(const uint32_t *a, uint32_t an, const uint32_t *b, uint32_t bn)
{
    if (an != bn)
        return an < bn ? -1 : 1;
    for (uint32_t i = an; i-- > 0;)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* |a| + |b| with the given sign. */
static struct bigint *
mag_add(struct star_vm *vm, const struct bigint *a, const struct bigint *b, bool neg)
{
    if (a->n < b->n) {
        const struct bigint *t = a;
        a = b;
        b = t;
    }
    struct bigint *r = alloc(vm, (size_t)a->n + 1);
    uint64_t carry = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        carry += (uint64_t)a->limb[i] + (i < b->n ? b->limb[i] : 0);
        r->limb[i] = (uint32_t)carry;
        carry >>= 32;
    }
    r->limb[a->n] = (uint32_t)carry;
    r->neg = neg;
    return trim(r);
}

/* |a| - |b| (|a| >= |b|) with the given sign. */
static struct bigint *
mag_sub(struct star_vm *vm, const struct bigint *a, const struct bigint *b, bool neg)
{
    struct bigint *r = alloc(vm, a->n);
    int64_t borrow = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        int64_t d = (int64_t)a->limb[i] - (i < b->n ? b->limb[i] : 0) - borrow;
        borrow = d < 0;
        r->limb[i] = (uint32_t)(d + (borrow ? ((int64_t)1 << 32) : 0));
    }
    r->neg = neg;
    return trim(r);
}

/* |a| + 1 with the given sign. */
static struct bigint *
mag_inc(struct star_vm *vm, const struct bigint *a, bool neg)
{
    struct bigint *r = alloc(vm, (size_t)a->n + 1);
    uint64_t carry = 1;
    for (uint32_t i = 0; i < a->n; i++) {
        carry += a->limb[i];
        r->limb[i] = (uint32_t)carry;
        carry >>= 32;
    }
    r->limb[a->n] = (uint32_t)carry;
    r->neg = neg;
    return trim(r);
}

/* |a| - 1 (a is not zero), not negative. */
static struct bigint *
mag_dec(struct star_vm *vm, const struct bigint *a)
{
    struct bigint *r = copy(vm, a, false);
    for (uint32_t i = 0; r->limb[i]-- == 0; i++)
        ;
    return trim(r);
}

/* Divides a[0..n) in place by 10^9, the chunk of decimal digits: a
 * constant divisor the compiler turns into a multiplication, several
 * times faster than mag_div_small on the numbers str() prints. */
static uint32_t
mag_div_1e9(uint32_t *a, uint32_t n)
{
    uint64_t rem = 0;
    for (uint32_t i = n; i-- > 0;) {
        uint64_t cur = (rem << 32) | a[i];
        a[i] = (uint32_t)(cur / 1000000000u);
        rem = cur % 1000000000u;
    }
    return (uint32_t)rem;
}

/* Divides a[0..n) in place by d (> 0); returns the remainder. */
static uint32_t
mag_div_small(uint32_t *a, uint32_t n, uint32_t d)
{
    uint64_t rem = 0;
    for (uint32_t i = n; i-- > 0;) {
        uint64_t cur = (rem << 32) | a[i];
        a[i] = (uint32_t)(cur / d);
        rem = cur % d;
    }
    return (uint32_t)rem;
}

/*
 * Schoolbook long division (Knuth, TAOCP vol. 2, 4.3.1, algorithm D) of
 * u[0..m) by v[0..n), n >= 2, m >= n: the quotient into q[0..m-n], the
 * remainder into r[0..n).
 */
static void
mag_divmod(struct star_vm *vm, const uint32_t *u, uint32_t m, const uint32_t *v, uint32_t n,
           uint32_t *q, uint32_t *r)
{
    charge(vm, (uint64_t)(m - n + 1) * n / 4);
    int s = __builtin_clz(v[n - 1]);
    uint32_t *vn = star_alloc_array(vm, n, sizeof *vn);
    uint32_t *un = star_alloc_array(vm, (size_t)m + 1, sizeof *un);
    for (uint32_t i = n - 1; i > 0; i--)
        vn[i] = (v[i] << s) | (s ? v[i - 1] >> (32 - s) : 0);
    vn[0] = v[0] << s;
    un[m] = s ? u[m - 1] >> (32 - s) : 0;
    for (uint32_t i = m - 1; i > 0; i--)
        un[i] = (u[i] << s) | (s ? u[i - 1] >> (32 - s) : 0);
    un[0] = u[0] << s;
    const uint64_t base = (uint64_t)1 << 32;
    for (uint32_t j = m - n + 1; j-- > 0;) {
        uint64_t num = ((uint64_t)un[j + n] << 32) | un[j + n - 1];
        uint64_t qhat = num / vn[n - 1], rhat = num % vn[n - 1];
        while (qhat >= base || qhat * vn[n - 2] > ((rhat << 32) | un[j + n - 2])) {
            qhat--;
            rhat += vn[n - 1];
            if (rhat >= base)
                break;
        }
        /* un[j..j+n] -= qhat * vn */
        uint64_t carry = 0;
        int64_t borrow = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t p = qhat * vn[i] + carry;
            carry = p >> 32;
            int64_t t = (int64_t)un[i + j] - (int64_t)(uint32_t)p - borrow;
            borrow = t < 0;
            un[i + j] = (uint32_t)t;
        }
        int64_t t = (int64_t)un[j + n] - (int64_t)carry - borrow;
        un[j + n] = (uint32_t)t;
        if (t < 0) { /* qhat was one too large: add vn back */
            qhat--;
            uint64_t c = 0;
            for (uint32_t i = 0; i < n; i++) {
                c += (uint64_t)un[i + j] + vn[i];
                un[i + j] = (uint32_t)c;
                c >>= 32;
            }
            un[j + n] += (uint32_t)c;
        }
        q[j] = (uint32_t)qhat;
    }
    for (uint32_t i = 0; i < n; i++)
        r[i] = (un[i] >> s) | (s ? un[i + 1] << (32 - s) : 0);
}

/* ---- conversions ---- */

struct bigint *
bigint_from_i64(struct star_vm *vm, int64_t v)
{
    struct bigint *r = alloc(vm, 2);
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    r->limb[0] = (uint32_t)mag;
    r->limb[1] = (uint32_t)(mag >> 32);
    r->neg = v < 0;
    return trim(r);
}

bool
bigint_to_i64(const struct bigint *a, int64_t *out)
{
    if (a->n > 2)
        return false;
    uint64_t mag = 0;
    for (uint32_t i = a->n; i-- > 0;)
        mag = (mag << 32) | a->limb[i];
    if (a->neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
        return false;
    *out = a->neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return true;
}

/* How many bits the magnitude has. */
static uint64_t
bit_length(const struct bigint *a)
{
    if (a->n == 0)
        return 0;
    return (uint64_t)(a->n - 1) * 32 + (uint64_t)(32 - __builtin_clz(a->limb[a->n - 1]));
}

/* Bit i of the magnitude. */
static uint32_t
bit_at(const struct bigint *a, uint64_t i)
{
    uint64_t w = i / 32;
    return w < a->n ? (a->limb[w] >> (i % 32)) & 1u : 0;
}

/*
 * The top 64 bits of the magnitude, with every bit below them folded
 * into the lowest one: the double has 53, so the lowest bit is only a
 * sticky bit there and the hardware's conversion rounds the folded value
 * exactly as it would round the whole number (half to even).
 */
double
bigint_to_double(const struct bigint *a)
{
    uint64_t len = bit_length(a);
    uint64_t top = 0;
    int64_t shift = 0;
    if (len <= 64) {
        for (uint32_t i = a->n; i-- > 0;)
            top = (top << 32) | a->limb[i];
    } else {
        shift = (int64_t)(len - 64);
        for (uint64_t i = len; i-- > (uint64_t)shift;)
            top = (top << 1) | bit_at(a, i);
        bool sticky = false;
        uint64_t whole = (uint64_t)shift / 32;
        for (uint64_t i = 0; i < whole && !sticky; i++)
            sticky = a->limb[i] != 0;
        for (uint64_t i = whole * 32; i < (uint64_t)shift && !sticky; i++)
            sticky = bit_at(a, i) != 0;
        top |= sticky;
    }
    /* Past the exponent range ldexp gives inf; keep the argument an int. */
    double d = ldexp((double)top, shift > 4096 ? 4096 : (int)shift);
    return a->neg ? -d : d;
}

struct bigint *
bigint_from_double(struct star_vm *vm, double d)
{
    if (!isfinite(d) || d != trunc(d))
        return NULL;
    if (fabs(d) < 9007199254740992.0) /* 2^53: exact in int64 */
        return bigint_from_i64(vm, (int64_t)d);
    int e;
    double f = frexp(fabs(d), &e); /* fabs(d) = f * 2^e, 0.5 <= f < 1 */
    uint64_t mant = (uint64_t)ldexp(f, 53);
    struct bigint *m = bigint_from_i64(vm, (int64_t)mant);
    m->neg = d < 0;
    return bigint_shl(vm, m, (uint64_t)(e - 53));
}

int
bigint_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 10;
    return 99;
}

/* The largest power of base that fits in 32 bits, and its exponent. */
static uint32_t
chunk_of(unsigned base, unsigned *digits)
{
    uint64_t p = base;
    unsigned k = 1;
    while (p * base <= UINT32_MAX) {
        p *= base;
        k++;
    }
    *digits = k;
    return (uint32_t)p;
}

/* ---- 64-bit magnitudes ----
 *
 * Multiplication and long division work on copies of the magnitudes in
 * 64-bit limbs, whose products the compiler computes in one instruction
 * (unsigned __int128): a quarter as many limb products as with 32-bit
 * limbs.  A magnitude here is an array and a length, least significant
 * limb first; leading zero limbs are allowed unless said otherwise.
 */

typedef unsigned __int128 u128;

/* A 64-bit copy of a's magnitude, with at least `pad` limbs. */
static uint64_t *
to64(struct star_vm *vm, const struct bigint *a, size_t *n)
{
    size_t n64 = ((size_t)a->n + 1) / 2;
    uint64_t *r = star_alloc_array(vm, n64 ? n64 : 1, sizeof *r);
    if (a->n > 0)
        memcpy(r, a->limb, a->n * sizeof(uint32_t)); /* little-endian limbs pair up */
    *n = n64;
    return r;
}

static size_t
trim64(const uint64_t *a, size_t n)
{
    while (n > 0 && a[n - 1] == 0)
        n--;
    return n;
}

/* A bigint of x[0..n) with the given sign. */
static struct bigint *
from64(struct star_vm *vm, const uint64_t *x, size_t n, bool neg)
{
    n = trim64(x, n);
    struct bigint *r = alloc(vm, n * 2);
    if (n > 0)
        memcpy(r->limb, x, n * sizeof *x);
    r->neg = neg;
    return trim(r);
}

/* r[0..n) += a[0..an) (an <= n); returns the carry out of r[n-1]. */
static uint64_t
add64_to(uint64_t *r, size_t n, const uint64_t *a, size_t an)
{
    uint64_t c = 0;
    size_t i = 0;
    for (; i < an; i++) {
        u128 t = (u128)r[i] + a[i] + c;
        r[i] = (uint64_t)t;
        c = (uint64_t)(t >> 64);
    }
    for (; c && i < n; i++)
        c = ++r[i] == 0;
    return c;
}

/* r[0..an+bn) = a * b, schoolbook. */
static void
mul64_base(uint64_t *r, const uint64_t *a, size_t an, const uint64_t *b, size_t bn)
{
    memset(r, 0, (an + bn) * sizeof *r);
    for (size_t i = 0; i < an; i++) {
        uint64_t x = a[i], c = 0;
        if (x == 0)
            continue;
        uint64_t *ri = r + i;
        for (size_t j = 0; j < bn; j++) {
            u128 t = (u128)x * b[j] + ri[j] + c;
            ri[j] = (uint64_t)t;
            c = (uint64_t)(t >> 64);
        }
        ri[bn] = c;
    }
}

/*
 * The dividend u[0..m) and divisor v[0..n) (n >= 2) shifted left until
 * the divisor's top bit is set, as long division wants them: new arrays in
 * the arena, *un with one limb more than u.  Returns the shift.
 */
static int
normalize(struct star_vm *vm, const uint64_t *u, size_t m, const uint64_t *v, size_t n,
          uint64_t **un_out, uint64_t **vn_out)
{
    int s = __builtin_clzll(v[n - 1]);
    uint64_t *vn = star_alloc_array(vm, n, sizeof *vn);
    uint64_t *un = star_alloc_array(vm, m + 1, sizeof *un);
    for (size_t i = n - 1; i > 0; i--)
        vn[i] = (v[i] << s) | (s ? v[i - 1] >> (64 - s) : 0);
    vn[0] = v[0] << s;
    un[m] = s ? u[m - 1] >> (64 - s) : 0;
    for (size_t i = m - 1; i > 0; i--)
        un[i] = (u[i] << s) | (s ? u[i - 1] >> (64 - s) : 0);
    un[0] = u[0] << s;
    *un_out = un;
    *vn_out = vn;
    return s;
}

/*
 * Long division (Knuth, TAOCP vol. 2, 4.3.1, algorithm D) in 64-bit limbs
 * of u[0..m) by v[0..n), n >= 2, v[n-1] != 0, m >= n: the quotient into
 * q[0..m-n], the remainder into r[0..n).
 */
static void
div64(struct star_vm *vm, const uint64_t *u, size_t m, const uint64_t *v, size_t n, uint64_t *q,
      uint64_t *r)
{
    charge(vm, (uint64_t)(m - n + 1) * (n + 32)); /* and a 128-bit division per limb */
    struct star_mark mk;
    star_mark(vm, &mk);
    uint64_t *vn, *un;
    int s = normalize(vm, u, m, v, n, &un, &vn);
    uint64_t top = vn[n - 1], next = vn[n - 2];
    for (size_t j = m - n + 1; j-- > 0;) {
        u128 num = ((u128)un[j + n] << 64) | un[j + n - 1];
        u128 qhat = num / top, rhat = num % top;
        while ((qhat >> 64) != 0 || qhat * next > ((rhat << 64) | un[j + n - 2])) {
            qhat--;
            rhat += top;
            if ((rhat >> 64) != 0)
                break;
        }
        /* un[j..j+n] -= qhat * vn */
        uint64_t qh = (uint64_t)qhat, carry = 0, borrow = 0;
        for (size_t i = 0; i < n; i++) {
            u128 p = (u128)qh * vn[i] + carry;
            carry = (uint64_t)(p >> 64);
            uint64_t x = un[i + j], y = (uint64_t)p;
            un[i + j] = x - y - borrow;
            borrow = (x < y) | ((x == y) & borrow);
        }
        uint64_t x = un[j + n];
        un[j + n] = x - carry - borrow;
        if (x < carry || (x == carry && borrow)) { /* qhat was one too large */
            qh--;
            add64_to(un + j, n + 1, vn, n);
        }
        q[j] = qh;
    }
    for (size_t i = 0; i < n; i++)
        r[i] = (un[i] >> s) | (s ? un[i + 1] << (64 - s) : 0);
    star_release(vm, &mk);
}

/*
 * Writes the w digits of a's magnitude (a < base^w, zero-padded on the
 * left) so that the last one is just before end, by repeated division by
 * the largest power of the base that fits 32 bits.
 */
static void
text_base(struct star_vm *vm, const struct bigint *a, unsigned base, char *end, size_t w,
          const char *digits)
{
    uint32_t tn = a->n;
    uint32_t *t = star_alloc_array(vm, tn ? tn : 1, sizeof *t);
    if (tn > 0)
        memcpy(t, a->limb, tn * sizeof *t);
    unsigned k;
    uint32_t chunk = chunk_of(base, &k);
    char *p = end;
    while (tn > 0) {
        /* each limb divided by the chunk, waiting on the last remainder:
         * 8 units a limb (measured: str() of a 3.2-million-bit number
         * costs what this charges) */
        charge(vm, 8 * (uint64_t)tn);
        uint32_t rem = chunk == 1000000000u ? mag_div_1e9(t, tn) : mag_div_small(t, tn, chunk);
        while (tn > 0 && t[tn - 1] == 0)
            tn--;
        for (unsigned j = 0; j < k && p > end - w; j++) {
            *--p = digits[rem % base];
            rem /= base;
        }
    }
    while (p > end - w)
        *--p = '0';
}

/*
 * Parses the (checked) digits s[0..len) chunk by chunk into out, which
 * has room for len / 5 + 2 limbs; returns the limbs used.
 */
static uint32_t
parse_base(struct star_vm *vm, const char *s, size_t len, unsigned base, uint32_t *out)
{
    unsigned k;
    (void)chunk_of(base, &k);
    uint32_t used = 0;
    for (size_t i = 0; i < len;) {
        uint32_t mul = 1, add = 0;
        for (unsigned j = 0; j < k && i < len; j++, i++) {
            mul *= base;
            add = add * base + (uint32_t)bigint_digit(s[i]);
        }
        uint64_t carry = add;
        for (uint32_t j = 0; j < used; j++) {
            carry += (uint64_t)out[j] * mul;
            out[j] = (uint32_t)carry;
            carry >>= 32;
        }
        if (carry != 0)
            out[used++] = (uint32_t)carry;
        /* a 32-bit multiply-add a limb: 1.5 units (measured, as above) */
        charge(vm, 3 * (uint64_t)used / 2);
    }
    return used;
}

struct bigint *
bigint_parse(struct star_vm *vm, const char *s, size_t len, unsigned base, bool neg)
{
    if (len == 0 || base < 2 || base > 36)
        return NULL;
    for (size_t i = 0; i < len; i++)
        if (bigint_digit(s[i]) >= (int)base)
            return NULL;
    /* Each digit needs at most log2(36) < 6 bits. */
    struct bigint *r = alloc(vm, len / 5 + 2);
    r->n = parse_base(vm, s, len, base, r->limb);
    r->neg = neg;
    return trim(r);
}

/* The digits of a in base 2^bits, straight from its bits: linear. */
static char *
text_pow2(struct star_vm *vm, const struct bigint *a, unsigned bits, const char *digits,
          size_t *len)
{
    uint64_t nbits = bit_length(a);
    size_t nd = nbits ? (size_t)((nbits + bits - 1) / bits) : 1;
    char *out = star_alloc(vm, nd + 2);
    char *p = out + nd + 1;
    *p = '\0';
    for (size_t d = 0; d < nd; d++) {
        uint64_t at = (uint64_t)d * bits;
        uint64_t w = at / 32;
        unsigned off = (unsigned)(at % 32);
        uint64_t v = a->n > w ? a->limb[w] >> off : 0;
        if (off + bits > 32 && w + 1 < a->n)
            v |= (uint64_t)a->limb[w + 1] << (32 - off);
        *--p = digits[v & ((1u << bits) - 1)];
    }
    if (a->neg)
        *--p = '-';
    if (len != NULL)
        *len = (size_t)(out + nd + 1 - p);
    return p;
}

/* The text of a written right-aligned to end in out[1..end) (out[0]
 * spare for the sign): without its leading zeros, with its sign, and its
 * length in *len when len is not NULL. */
static char *
text_trim(const struct bigint *a, char *out, char *end, size_t *len)
{
    char *p = out + 1;
    while (p < end - 1 && *p == '0')
        p++;
    if (a->neg)
        *--p = '-';
    if (len != NULL)
        *len = (size_t)(end - p);
    return p;
}

char *
bigint_to_string(struct star_vm *vm, const struct bigint *a, unsigned base, bool upper, size_t *len)
{
    const char *digits =
        upper ? "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ" : "0123456789abcdefghijklmnopqrstuvwxyz";
    if ((base & (base - 1)) == 0)
        return text_pow2(vm, a, (unsigned)__builtin_ctz(base), digits, len);
    /* At least one bit per digit, plus the sign and the NUL. */
    size_t w = (size_t)bit_length(a) + 1;
    char *out = star_alloc(vm, w + 2);
    char *end = out + 1 + w;
    text_base(vm, a, base, end, w, digits);
    return text_trim(a, out, end, len);
}

/* ---- arithmetic ---- */

int
bigint_sign(const struct bigint *a)
{
    return a->n == 0 ? 0 : a->neg ? -1 : 1;
}

int
bigint_cmp(const struct bigint *a, const struct bigint *b)
{
    if (a->neg != b->neg)
        return a->neg ? -1 : 1;
    int c = mag_cmp(a->limb, a->n, b->limb, b->n);
    return a->neg ? -c : c;
}

uint32_t
bigint_hash(const struct bigint *a)
{
    uint32_t h = a->neg ? 0x9e3779b9u : 2166136261u;
    for (uint32_t i = 0; i < a->n; i++) {
        h ^= a->limb[i];
        h *= 16777619u;
    }
    return h;
}

struct bigint *
bigint_neg(struct star_vm *vm, const struct bigint *a)
{
    return copy(vm, a, !a->neg);
}

struct bigint *
bigint_abs(struct star_vm *vm, const struct bigint *a)
{
    return copy(vm, a, false);
}

/* a + b, with b's sign flipped when negate_b. */
static struct bigint *
add_signed(struct star_vm *vm, const struct bigint *a, const struct bigint *b, bool negate_b)
{
    bool bneg = b->neg != negate_b;
    if (a->neg == bneg)
        return mag_add(vm, a, b, a->neg);
    if (mag_cmp(a->limb, a->n, b->limb, b->n) >= 0)
        return mag_sub(vm, a, b, a->neg);
    return mag_sub(vm, b, a, bneg);
}

struct bigint *
bigint_add(struct star_vm *vm, const struct bigint *a, const struct bigint *b)
{
    return add_signed(vm, a, b, false);
}

struct bigint *
bigint_sub(struct star_vm *vm, const struct bigint *a, const struct bigint *b)
{
    return add_signed(vm, a, b, true);
}

/* Below this many 32-bit limbs in either factor, the product is computed
 * in place, without the copies to 64-bit limbs. */
#define MUL_SMALL_LIMBS 8u

struct bigint *
bigint_mul(struct star_vm *vm, const struct bigint *a, const struct bigint *b)
{
    if (a->n >= MUL_SMALL_LIMBS && b->n >= MUL_SMALL_LIMBS) {
        size_t an, bn;
        uint64_t *a64 = to64(vm, a, &an), *b64 = to64(vm, b, &bn);
        uint64_t *r = star_alloc_array(vm, an + bn, sizeof *r);
        charge(vm, (uint64_t)an * bn);
        mul64_base(r, a64, an, b64, bn);
        return from64(vm, r, an + bn, a->neg != b->neg);
    }
    struct bigint *r = alloc(vm, (size_t)a->n + b->n);
    charge(vm, (uint64_t)a->n * b->n / 4);
    for (uint32_t i = 0; i < a->n; i++) {
        uint64_t carry = 0;
        uint64_t x = a->limb[i];
        if (x == 0)
            continue;
        for (uint32_t j = 0; j < b->n; j++) {
            carry += x * b->limb[j] + r->limb[i + j];
            r->limb[i + j] = (uint32_t)carry;
            carry >>= 32;
        }
        r->limb[i + b->n] = (uint32_t)carry;
    }
    r->neg = a->neg != b->neg;
    return trim(r);
}

bool
bigint_divmod(struct star_vm *vm, const struct bigint *a, const struct bigint *b, struct bigint **q,
              struct bigint **r)
{
    if (b->n == 0)
        return false;
    struct bigint *qm, *rm;
    if (mag_cmp(a->limb, a->n, b->limb, b->n) < 0) {
        qm = alloc(vm, 0);
        rm = copy(vm, a, false);
    } else if (b->n == 1) {
        qm = copy(vm, a, false);
        rm = alloc(vm, 1);
        charge(vm, 4 * (uint64_t)qm->n); /* a hardware division per limb */
        rm->limb[0] = mag_div_small(qm->limb, qm->n, b->limb[0]);
    } else if (b->n == 2) {
        qm = alloc(vm, (size_t)a->n - b->n + 1);
        rm = alloc(vm, b->n);
        mag_divmod(vm, a->limb, a->n, b->limb, b->n, qm->limb, rm->limb);
    } else {
        size_t an, bn;
        uint64_t *a64 = to64(vm, a, &an), *b64 = to64(vm, b, &bn);
        uint64_t *q64 = star_alloc_array(vm, an - bn + 1, sizeof *q64);
        uint64_t *r64 = star_alloc_array(vm, bn, sizeof *r64);
        div64(vm, a64, an, b64, bn, q64, r64);
        qm = from64(vm, q64, an - bn + 1, false);
        rm = from64(vm, r64, bn, false);
    }
    trim(qm);
    trim(rm);
    /* Truncated to floored: when the signs differ and something remains,
     * the quotient goes one further from zero and the remainder takes
     * b's sign. */
    bool differ = a->neg != b->neg;
    if (differ && rm->n > 0) {
        qm = mag_inc(vm, qm, true);
        rm = mag_sub(vm, b, rm, b->neg);
    } else {
        qm->neg = differ && qm->n > 0;
        rm->neg = a->neg && rm->n > 0;
    }
    if (q != NULL)
        *q = qm;
    if (r != NULL)
        *r = rm;
    return true;
}

struct bigint *
bigint_shl(struct star_vm *vm, const struct bigint *a, uint64_t n)
{
    if (a->n == 0)
        return alloc(vm, 0);
    uint64_t w = n / 32;
    unsigned s = (unsigned)(n % 32);
    if (w > UINT32_MAX)
        star_fail(vm, "out of memory: an integer shifted by %llu bits is too large",
                  (unsigned long long)n);
    struct bigint *r = alloc(vm, (size_t)a->n + (size_t)w + 1);
    for (uint32_t i = 0; i < a->n; i++) {
        uint64_t x = (uint64_t)a->limb[i] << s;
        r->limb[i + w] |= (uint32_t)x;
        r->limb[i + w + 1] = (uint32_t)(x >> 32);
    }
    r->neg = a->neg;
    return trim(r);
}

struct bigint *
bigint_shr(struct star_vm *vm, const struct bigint *a, uint64_t n)
{
    uint64_t w = n / 32;
    unsigned s = (unsigned)(n % 32);
    bool lost = false; /* a one bit shifted out */
    struct bigint *r;
    if (w >= a->n) {
        r = alloc(vm, 0);
        lost = a->n > 0;
    } else {
        r = alloc(vm, a->n - w);
        for (uint32_t i = 0; i < w; i++)
            lost |= a->limb[i] != 0;
        lost |= s > 0 && (a->limb[w] & ((1u << s) - 1)) != 0;
        for (uint32_t i = 0; i < r->n; i++) {
            uint64_t x = a->limb[i + w];
            if (i + w + 1 < a->n)
                x |= (uint64_t)a->limb[i + w + 1] << 32;
            r->limb[i] = (uint32_t)(x >> s);
        }
        trim(r);
    }
    /* Rounding towards minus infinity: a negative number that lost bits
     * is one further from zero. */
    if (a->neg && lost)
        return mag_inc(vm, r, true);
    r->neg = a->neg && r->n > 0;
    return r;
}

/* Limb i of a's two's-complement form (sign-extended beyond its limbs). */
static uint32_t
twos_limb(const struct bigint *a, uint32_t i, bool *borrow)
{
    uint32_t x = i < a->n ? a->limb[i] : 0;
    if (!a->neg)
        return x;
    /* -m = ~m + 1, carried limb by limb from the least significant. */
    uint32_t y = ~x + (*borrow ? 1u : 0u);
    *borrow = *borrow && y == 0;
    return y;
}

static struct bigint *
bitwise(struct star_vm *vm, const struct bigint *a, const struct bigint *b, char op)
{
    size_t n = (a->n > b->n ? a->n : b->n) + 1;
    struct bigint *r = alloc(vm, n);
    bool ca = true, cb = true;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = twos_limb(a, i, &ca), y = twos_limb(b, i, &cb);
        r->limb[i] = op == '&' ? (x & y) : op == '|' ? (x | y) : (x ^ y);
    }
    /* The sign is the top bit; a negative result back to sign and magnitude. */
    if (r->limb[n - 1] >> 31) {
        bool carry = true;
        for (uint32_t i = 0; i < n; i++) {
            r->limb[i] = ~r->limb[i] + (carry ? 1u : 0u);
            carry = carry && r->limb[i] == 0;
        }
        r->neg = true;
    }
    return trim(r);
}

struct bigint *
bigint_and(struct star_vm *vm, const struct bigint *a, const struct bigint *b)
{
    return bitwise(vm, a, b, '&');
}

struct bigint *
bigint_or(struct star_vm *vm, const struct bigint *a, const struct bigint *b)
{
    return bitwise(vm, a, b, '|');
}

struct bigint *
bigint_xor(struct star_vm *vm, const struct bigint *a, const struct bigint *b)
{
    return bitwise(vm, a, b, '^');
}

struct bigint *
bigint_not(struct star_vm *vm, const struct bigint *a)
{
    /* ~a = -a - 1: for a >= 0 that is -(a + 1); for a < 0 it is |a| - 1. */
    if (!a->neg)
        return mag_inc(vm, a, true);
    return mag_dec(vm, a);
}
