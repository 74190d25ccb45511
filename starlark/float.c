#include "starlark/float.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "starlark/bigint.h"
#include "starlark/lexer.h"
#include "starlark/vm.h"

/* Codex writes 6 digits after the point in %e and %f, and switches str()
 * to the %e form from an exponent of 6 (either way) on. */
#define FLOAT_PRECISION 6

struct star_value
star_float(double d)
{
    struct star_value v = {.type = STAR_FLOAT, .u.fl = d};
    return v;
}

double
star_num_to_double(struct star_value v)
{
    switch (v.type) {
    case STAR_FLOAT:
        return v.u.fl;
    case STAR_BIGINT:
        return bigint_to_double(v.u.big);
    default:
        return (double)v.u.i;
    }
}

struct star_value
star_float_to_int(struct star_vm *vm, double d)
{
    if (isnan(d) || isinf(d))
        star_fail(vm, "Float `%s` cannot be represented as exact integer",
                  isnan(d) ? "NaN"
                  : d > 0  ? "inf"
                           : "-inf");
    double t = trunc(d);
    /* 2^63 is the first double beyond int64; -2^63 itself fits. */
    if (t >= 9223372036854775808.0 || t < -9223372036854775808.0)
        return star_int_big(bigint_from_double(vm, t));
    return star_int((int64_t)t);
}

/* ---- text ---- */

struct out {
    char *p;
    size_t len;
};

static void
put(struct out *o, const char *s, size_t n)
{
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

static void
putc_(struct out *o, char c)
{
    put(o, &c, 1);
}

/* nan, +inf, -inf: what every formatter writes for them. */
static void
put_non_finite(struct out *o, double d)
{
    if (isnan(d))
        put(o, "nan", 3);
    else
        put(o, d > 0 ? "+inf" : "-inf", 4);
}

/*
 * The shortest digits that read back as |d| (finite, nonzero): digits[]
 * gets them (NUL-terminated) and the result is the decimal exponent of the
 * first, so |d| = 0.d1d2... * 10^(result + 1).  Of the candidates of one
 * length the correctly rounded one is the nearest, so the first length
 * whose rounding reads back is the answer, as in Rust's shortest display.
 */
static int
shortest_digits(double d, char digits[24])
{
    char tmp[40];
    double a = fabs(d);
    for (int prec = 0; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec, a);
        if (strtod(tmp, NULL) == a || prec == 16) {
            char *e = strchr(tmp, 'e');
            size_t n = 0;
            for (char *q = tmp; q < e; q++)
                if (*q != '.')
                    digits[n++] = *q;
            while (n > 1 && digits[n - 1] == '0')
                n--;
            digits[n] = '\0';
            return atoi(e + 1);
        }
    }
    return 0; /* not reached: 17 digits always read back */
}

/* Rust's `{}` of a finite double: the shortest digits, positional. */
static void
put_rust_display(struct out *o, double d)
{
    if (signbit(d))
        putc_(o, '-');
    if (d == 0) {
        putc_(o, '0');
        return;
    }
    char digits[24];
    int exp = shortest_digits(d, digits);
    int n = (int)strlen(digits);
    if (exp < 0) {
        put(o, "0.", 2);
        for (int i = -1; i > exp; i--)
            putc_(o, '0');
        put(o, digits, (size_t)n);
        return;
    }
    for (int i = 0; i <= exp || i < n; i++) {
        if (i == exp + 1)
            putc_(o, '.');
        putc_(o, i < n ? digits[i] : '0');
    }
}

/*
 * Codex's %e: the exponent is floor(log10(|d|)), the leading "digit" is
 * the integer part of |d| / 10^exponent as computed in doubles, and six
 * decimals are rounded from what is left.  Near powers of ten and below
 * the normal range this gives odd text (1e23 is "0e+23", 5e-324 is
 * "infe-324", 1e-320 is "10.019802e-321"); Codex prints it, so do we.
 */
static void
put_scientific(struct out *o, double d, char exp_char, bool strip_zeros)
{
    double a = fabs(d);
    int exponent = d == 0 ? 0 : (int)floor(log10(a));
    double normal = d == 0 ? 0.0 : a / pow(10.0, (double)exponent);
    if (signbit(d))
        putc_(o, '-');
    double lead = trunc(normal);
    if (isinf(lead)) {
        put(o, "inf", 3);
    } else {
        char tmp[16];
        int n = snprintf(tmp, sizeof tmp, "%.0f", lead);
        put(o, tmp, (size_t)n);
    }
    /* Rust's `as u64`: NaN (from inf - inf) is 0, and out-of-range saturates. */
    double scaled = round((normal - lead) * 1e6);
    uint64_t tail = isnan(scaled) || scaled <= 0 ? 0 : (uint64_t)scaled;
    char rev[FLOAT_PRECISION];
    int nrev = 0;
    bool removing = strip_zeros;
    for (int i = 0; i < FLOAT_PRECISION; i++) {
        int digit = (int)(tail % 10);
        if (digit != 0 || !removing) {
            removing = false;
            rev[nrev++] = (char)('0' + digit);
        }
        tail /= 10;
    }
    if (nrev > 0)
        putc_(o, '.');
    while (nrev > 0)
        putc_(o, rev[--nrev]);
    char tmp[16];
    int n = snprintf(tmp, sizeof tmp, "%c%+03d", exp_char, exponent);
    put(o, tmp, (size_t)n);
}

/* str() and repr(): %e form without trailing zeros from an exponent of 6
 * either way, else positional with at least one decimal. */
static void
put_compact(struct out *o, double d, char exp_char)
{
    int exponent = d == 0 ? 0 : (int)floor(log10(fabs(d)));
    if (abs(exponent) >= FLOAT_PRECISION) {
        put_scientific(o, d, exp_char, true);
    } else if (d == trunc(d)) {
        char tmp[16];
        int n = snprintf(tmp, sizeof tmp, "%.1f", d);
        put(o, tmp, (size_t)n);
    } else {
        put_rust_display(o, d);
    }
}

size_t
star_float_text(double d, char conv, char out[STAR_FLOAT_TEXT_MAX])
{
    struct out o = {out, 0};
    out[0] = '\0';
    if (!isfinite(d)) {
        if (conv == 'D') /* Rust's own spelling */
            put(&o, isnan(d) ? "NaN" : d > 0 ? "inf" : "-inf", isnan(d) ? 3 : d > 0 ? 3 : 4);
        else
            put_non_finite(&o, d);
        return o.len;
    }
    switch (conv) {
    case 'e':
    case 'E':
        put_scientific(&o, d, conv, false);
        break;
    case 'f':
        o.len = (size_t)snprintf(out, STAR_FLOAT_TEXT_MAX, "%.*f", FLOAT_PRECISION, d);
        break;
    case 'D':
        put_rust_display(&o, d);
        break;
    case 'R':
        put_compact(&o, d, 'E');
        break;
    default:
        put_compact(&o, d, 'e');
        break;
    }
    return o.len;
}

void
star_float_buf(struct star_vm *vm, struct star_buf *b, double d, char conv)
{
    char text[STAR_FLOAT_TEXT_MAX];
    size_t n = star_float_text(d, conv, text);
    star_buf_add(vm, b, text, n);
}

/* ---- parsing ---- */

static bool
ascii_ieq(const char *s, size_t n, const char *word)
{
    if (strlen(word) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((s[i] | 0x20) != word[i])
            return false;
    return true;
}

static bool
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Whether s[0..n) is digits [. digits] [e [sign] digits] with a digit
 * before the exponent: the decimal form Rust's parser reads. */
static bool
decimal_syntax(const char *s, size_t n)
{
    size_t i = 0, mant = 0;
    while (i < n && is_digit(s[i]))
        i++, mant++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && is_digit(s[i]))
            i++, mant++;
    }
    if (mant == 0)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t exp = 0;
        while (i < n && is_digit(s[i]))
            i++, exp++;
        if (exp == 0)
            return false;
    }
    return i == n;
}

int
star_float_parse(const char *s, size_t n, double *out)
{
    size_t i = 0;
    bool neg = false;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (ascii_ieq(s + i, n - i, "inf") || ascii_ieq(s + i, n - i, "infinity")) {
        *out = neg ? -INFINITY : INFINITY;
        return 0;
    }
    if (ascii_ieq(s + i, n - i, "nan")) {
        *out = neg ? -NAN : NAN;
        return 0;
    }
    if (!decimal_syntax(s + i, n - i))
        return -1;
    /* strtod needs a terminated copy; the syntax is checked, so it reads
     * exactly these bytes and rounds as Rust does (to nearest). */
    char *copy = malloc(n + 1);
    if (!copy)
        return -3;
    memcpy(copy, s, n);
    copy[n] = '\0';
    double d = strtod(copy, NULL);
    free(copy);
    if (isinf(d))
        return -2;
    *out = d;
    return 0;
}

/* ---- arithmetic ---- */

int
star_num_compare(struct star_value a, struct star_value b)
{
    double x = star_num_to_double(a), y = star_num_to_double(b);
    if (isnan(x) || isnan(y))
        return (int)isnan(x) - (int)isnan(y);
    return (x > y) - (x < y);
}

/*
 * Codex hashes an int of 32 bits and a float equal to it alike, and an int
 * beyond 32 bits (a big int there) by another function than any float: so
 * 2147483648 and 2147483648.0 are equal but two dict keys, in Codex and
 * here.
 */
#define INT_BEYOND_32_BITS_SALT 0x5bd1e995u

uint32_t
star_num_hash(struct star_value v)
{
    if (v.type == STAR_INT) {
        uint32_t h = star_int_hash(v.u.i);
        return v.u.i >= INT32_MIN && v.u.i <= INT32_MAX ? h : h ^ INT_BEYOND_32_BITS_SALT;
    }
    double d = v.u.fl;
    if (d == trunc(d) && d >= INT32_MIN && d <= INT32_MAX)
        return star_int_hash((int64_t)d);
    if (isnan(d))
        return 0x7ff80000u;
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return (uint32_t)(bits >> 32) ^ (uint32_t)bits;
}

/* Codex names the operands of a division by zero in Rust's plain text. */
static void
fail_div_zero(struct star_vm *vm, struct star_value a, struct star_value b)
{
    char x[STAR_FLOAT_TEXT_MAX], y[STAR_FLOAT_TEXT_MAX];
    if (a.type == STAR_INT)
        snprintf(x, sizeof x, "%lld", (long long)a.u.i);
    else
        star_float_text(a.u.fl, 'D', x);
    if (b.type == STAR_INT)
        snprintf(y, sizeof y, "%lld", (long long)b.u.i);
    else
        star_float_text(b.u.fl, 'D', y);
    star_fail(vm, "float division by zero: %s / %s", x, y);
}

struct star_value
star_num_binary(struct star_vm *vm, int op, struct star_value a, struct star_value b)
{
    double x = star_num_to_double(a), y = star_num_to_double(b);
    switch (op) {
    case T_PLUS:
        return star_float(x + y);
    case T_MINUS:
        return star_float(x - y);
    case T_STAR:
        return star_float(x * y);
    case T_SLASH:
        if (y == 0)
            fail_div_zero(vm, a, b);
        return star_float(x / y);
    case T_SLASHSLASH:
        if (y == 0)
            star_fail(vm, "Cannot divide by zero");
        return star_float(floor(x / y));
    case T_PERCENT: {
        if (y == 0)
            star_fail(vm, "Cannot divide by zero");
        double r = fmod(x, y);
        if (r == 0)
            return star_float(0.0);
        /* The result takes the divisor's sign, as in Python. */
        return star_float(signbit(r) != signbit(y) ? r + y : r);
    }
    default:
        star_fail(vm, "Operation `%s` not supported for types `%s` and `%s`", star_op_text(op),
                  star_type_name(a), star_type_name(b));
    }
}
