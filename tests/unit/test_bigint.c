/*
 * bigint: every operation on integers of many sizes (around the limb and
 * int64 boundaries, negative, zero, hundreds of digits), checked against
 * the results Python computes (tables made by gen_bigint_cases.py, whose
 * int has the semantics Starlark's has), plus the conversions to and from
 * double, the int64 edges and the limits of a run.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "starlark/bigint.h"
#include "starlark/vm.h"

struct op_case {
    char op; /* + - * / (floor) % & | ^ ~ < (shift left) > (shift right) */
    const char *a, *b, *want;
};
struct base_case {
    const char *dec;
    unsigned base;
    const char *digits;
};
struct double_case {
    const char *dec;
    double want;
};
/* Operands of an, bn 32-bit limbs (kind 0: from the splitmix64 stream of
 * seed, 1: all ones), a negated when neg; the length of a * b's text and the
 * FNV-1a hashes of the decimal text of a * b, a // b and a % b and of the
 * hexadecimal text of a * b. */
struct big_case {
    uint64_t seed;
    uint32_t an, ak, bn, bk, neg;
    size_t digits;
    uint64_t mul, quot, rem, hex;
};

#include "tests/unit/test_bigint_cases.h"

struct fixture {
    struct star_vm vm;
    jmp_buf jb;
};

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    star_vm_init(&f->vm);
    star_vm_begin(&f->vm, "t");
    f->vm.on_error = &f->jb;
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    star_vm_fini(&f->vm);
    free(f);
    return 0;
}

/* The decimal string s as a bigint (through bigint_parse). */
static struct bigint *
dec(struct star_vm *vm, const char *s)
{
    bool neg = s[0] == '-';
    struct bigint *r = bigint_parse(vm, s + neg, strlen(s + neg), 10, neg);
    assert_non_null(r);
    return r;
}

static const char *
str(struct star_vm *vm, const struct bigint *a)
{
    return bigint_to_string(vm, a, 10, false, NULL);
}

static void
test_ops(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    if (setjmp(f->jb))
        fail_msg("failed: %s", star_vm_error(vm));
    for (size_t i = 0; i < sizeof op_cases / sizeof op_cases[0]; i++) {
        const struct op_case *c = &op_cases[i];
        struct bigint *a = dec(vm, c->a), *b = dec(vm, c->b), *r = NULL;
        int64_t sh;
        switch (c->op) {
        case '+':
            r = bigint_add(vm, a, b);
            break;
        case '-':
            r = bigint_sub(vm, a, b);
            break;
        case '*':
            r = bigint_mul(vm, a, b);
            break;
        case '/':
            assert_true(bigint_divmod(vm, a, b, &r, NULL));
            break;
        case '%':
            assert_true(bigint_divmod(vm, a, b, NULL, &r));
            break;
        case '&':
            r = bigint_and(vm, a, b);
            break;
        case '|':
            r = bigint_or(vm, a, b);
            break;
        case '^':
            r = bigint_xor(vm, a, b);
            break;
        case '~':
            r = bigint_not(vm, a);
            break;
        case '<':
        case '>':
            assert_true(bigint_to_i64(b, &sh));
            r = c->op == '<' ? bigint_shl(vm, a, (uint64_t)sh) : bigint_shr(vm, a, (uint64_t)sh);
            break;
        default:
            fail();
        }
        const char *got = str(vm, r);
        if (strcmp(got, c->want) != 0)
            fail_msg("%s %c %s\n  got:  %s\n  want: %s", c->a, c->op, c->b, got, c->want);
        /* One form for each value: no leading zero limb, zero not negative. */
        assert_true(r->n == 0 || r->limb[r->n - 1] != 0);
        assert_false(r->n == 0 && r->neg);
    }
}

/* Both results of one division, and the identity that ties them. */
static void
test_divmod_identity(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    if (setjmp(f->jb))
        fail_msg("failed: %s", star_vm_error(vm));
    for (size_t i = 0; i < sizeof op_cases / sizeof op_cases[0]; i++) {
        struct bigint *a = dec(vm, op_cases[i].a), *b = dec(vm, op_cases[i].b), *q, *r;
        if (bigint_sign(b) == 0) {
            assert_false(bigint_divmod(vm, a, b, &q, &r));
            continue;
        }
        assert_true(bigint_divmod(vm, a, b, &q, &r));
        assert_int_equal(bigint_cmp(bigint_add(vm, bigint_mul(vm, q, b), r), a), 0);
        /* The remainder has b's sign and is smaller than b. */
        assert_true(bigint_sign(r) == 0 || bigint_sign(r) == bigint_sign(b));
        assert_true(bigint_cmp(bigint_abs(vm, r), bigint_abs(vm, b)) < 0);
    }
}

static void
test_bases(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    if (setjmp(f->jb))
        fail_msg("failed: %s", star_vm_error(vm));
    for (size_t i = 0; i < sizeof base_cases / sizeof base_cases[0]; i++) {
        const struct base_case *c = &base_cases[i];
        struct bigint *a = dec(vm, c->dec);
        size_t len;
        const char *got = bigint_to_string(vm, a, c->base, false, &len);
        assert_string_equal(got, c->digits);
        assert_int_equal(len, strlen(c->digits));
        bool neg = c->digits[0] == '-';
        struct bigint *back =
            bigint_parse(vm, c->digits + neg, strlen(c->digits + neg), c->base, neg);
        assert_non_null(back);
        assert_int_equal(bigint_cmp(back, a), 0);
    }
    /* Upper-case letters out, either case in. */
    struct bigint *x = dec(vm, "1180591620717411303424");
    assert_string_equal(bigint_to_string(vm, bigint_add(vm, x, dec(vm, "3054")), 16, true, NULL),
                        "400000000000000BEE");
    assert_string_equal(str(vm, bigint_parse(vm, "400000000000000bEe", 18, 16, false)),
                        "1180591620717411306478");
    assert_string_equal(str(vm, bigint_parse(vm, "zz", 2, 36, true)), "-1295");
}

static void
test_parse_refuses(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    if (setjmp(f->jb))
        fail_msg("failed: %s", star_vm_error(vm));
    assert_null(bigint_parse(vm, "", 0, 10, false));
    assert_null(bigint_parse(vm, "12a", 3, 10, false));
    assert_null(bigint_parse(vm, "102", 3, 2, false));
    assert_null(bigint_parse(vm, "1_000", 5, 10, false));
    assert_null(bigint_parse(vm, "-5", 2, 10, false));
    assert_null(bigint_parse(vm, " 5", 2, 10, false));
    assert_null(bigint_parse(vm, "5", 1, 37, false));
    assert_null(bigint_parse(vm, "5", 1, 1, false));
    /* Zero has one form, whatever the sign asked for. */
    struct bigint *z = bigint_parse(vm, "000", 3, 10, true);
    assert_non_null(z);
    assert_int_equal(bigint_sign(z), 0);
    assert_false(z->neg);
    assert_string_equal(str(vm, z), "0");
}

static void
test_int64_edges(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    if (setjmp(f->jb))
        fail_msg("failed: %s", star_vm_error(vm));
    const int64_t fits[] = {0,          1,         -1,        INT32_MAX,    INT32_MIN,
                            UINT32_MAX, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    for (size_t i = 0; i < sizeof fits / sizeof fits[0]; i++) {
        int64_t back = 42;
        assert_true(bigint_to_i64(bigint_from_i64(vm, fits[i]), &back));
        assert_true(back == fits[i]);
    }
    assert_string_equal(str(vm, bigint_from_i64(vm, INT64_MIN)), "-9223372036854775808");
    int64_t out;
    assert_false(bigint_to_i64(dec(vm, "9223372036854775808"), &out));
    assert_false(bigint_to_i64(dec(vm, "-9223372036854775809"), &out));
    assert_false(bigint_to_i64(dec(vm, "18446744073709551616"), &out));
    assert_true(bigint_to_i64(dec(vm, "-9223372036854775808"), &out));
    assert_true(out == INT64_MIN);
    assert_int_equal(
        bigint_hash(dec(vm, "123456789012345678901")),
        bigint_hash(bigint_add(vm, dec(vm, "123456789012345678900"), bigint_from_i64(vm, 1))));
}

static void
test_to_double(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    if (setjmp(f->jb))
        fail_msg("failed: %s", star_vm_error(vm));
    for (size_t i = 0; i < sizeof double_cases / sizeof double_cases[0]; i++) {
        double got = bigint_to_double(dec(vm, double_cases[i].dec));
        if (memcmp(&got, &double_cases[i].want, sizeof got) != 0)
            fail_msg("%s: got %a, want %a", double_cases[i].dec, got, double_cases[i].want);
    }
}

static void
test_from_double(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    if (setjmp(f->jb))
        fail_msg("failed: %s", star_vm_error(vm));
    /* Every finite integral double of the table comes back exactly. */
    for (size_t i = 0; i < sizeof double_cases / sizeof double_cases[0]; i++) {
        double d = double_cases[i].want;
        if (!isfinite(d))
            continue;
        struct bigint *b = bigint_from_double(vm, d);
        assert_non_null(b);
        double back = bigint_to_double(b);
        assert_memory_equal(&back, &d, sizeof d);
    }
    assert_string_equal(str(vm, bigint_from_double(vm, 0x1p70)), "1180591620717411303424");
    assert_string_equal(str(vm, bigint_from_double(vm, -0x1.8p64)), "-27670116110564327424");
    assert_string_equal(str(vm, bigint_from_double(vm, 0x1.fffffffffffffp+1023)),
                        "1797693134862315708145274237317043567980705675258449965989174768031572"
                        "6078002853876058955863276687817154045895351438246423432132688946418276"
                        "8467546703537516986049910576551282076245490090389328944075868508455133"
                        "9423045832369032229481658085593321233482747978262041447231687381771809"
                        "19299881250404026184124858368");
    assert_string_equal(str(vm, bigint_from_double(vm, -0.0)), "0");
    assert_string_equal(str(vm, bigint_from_double(vm, 12345.0)), "12345");
    assert_null(bigint_from_double(vm, 0.5));
    assert_null(bigint_from_double(vm, -1e300 / 1e300 * 0.25));
    assert_null(bigint_from_double(vm, INFINITY));
    assert_null(bigint_from_double(vm, -INFINITY));
    assert_null(bigint_from_double(vm, NAN));
}

/* The number big_cases makes with gen_bigint_cases.py's limbs(). */
static struct bigint *
big(struct star_vm *vm, uint64_t seed, uint32_t n, uint32_t kind)
{
    struct bigint *r = star_alloc(vm, sizeof *r + n * sizeof(uint32_t));
    r->n = n;
    uint64_t state = seed;
    for (uint32_t i = 0; i < n; i++) {
        if (kind == 1) {
            r->limb[i] = UINT32_MAX;
            continue;
        }
        state += 0x9E3779B97F4A7C15ull;
        uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        r->limb[i] = (uint32_t)(z ^ (z >> 31));
    }
    r->limb[n - 1] |= 1u << 31;
    return r;
}

static uint64_t
fnv(const char *s)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
    return h;
}

/*
 * Products, quotients and remainders of numbers of thousands of limbs
 * (in 64-bit limbs) against Python's, and the identities that tie them.
 */
static void
test_big_operands(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    if (setjmp(f->jb))
        fail_msg("failed: %s", star_vm_error(vm));
    for (size_t i = 0; i < sizeof big_cases / sizeof big_cases[0]; i++) {
        const struct big_case *c = &big_cases[i];
        struct bigint *a = big(vm, c->seed, c->an, c->ak),
                      *b = big(vm, c->seed + 100, c->bn, c->bk);
        if (c->neg)
            a->neg = true;
        struct bigint *p = bigint_mul(vm, a, b), *q, *r;
        assert_true(bigint_divmod(vm, a, b, &q, &r));
        size_t len;
        const char *ps = bigint_to_string(vm, p, 10, false, &len);
        assert_int_equal(len, c->digits);
        assert_int_equal(strlen(ps), len);
        assert_true(fnv(ps) == c->mul);
        assert_true(fnv(str(vm, q)) == c->quot);
        assert_true(fnv(str(vm, r)) == c->rem);
        assert_true(fnv(bigint_to_string(vm, p, 16, false, NULL)) == c->hex);
        /* (a * b) // b == a, (a * b) % b == 0, q * b + r == a */
        struct bigint *pq, *pr;
        assert_true(bigint_divmod(vm, p, b, &pq, &pr));
        assert_int_equal(bigint_cmp(pq, a), 0);
        assert_int_equal(bigint_sign(pr), 0);
        assert_int_equal(bigint_cmp(bigint_add(vm, bigint_mul(vm, q, b), r), a), 0);
        /* The decimal text parses back, signed or not. */
        bool neg = ps[0] == '-';
        struct bigint *back = bigint_parse(vm, ps + neg, len - neg, 10, neg);
        assert_non_null(back);
        assert_int_equal(bigint_cmp(back, p), 0);
        assert_true(back->n == p->n && back->limb[back->n - 1] != 0);
    }
}

/* Powers of ten of many lengths: 10^k - 1, 10^k and 10^k + 1 print as
 * k nines, one and k zeros, and so on, and parse back. */
static void
test_big_powers_of_ten(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    if (setjmp(f->jb))
        fail_msg("failed: %s", star_vm_error(vm));
    const size_t ks[] = {575, 576, 577, 600, 601, 1151, 1152, 1153, 4608, 9217, 20000};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        size_t k = ks[i];
        char *s = star_alloc(vm, k + 2);
        s[0] = '1';
        memset(s + 1, '0', k);
        struct bigint *p = bigint_parse(vm, s, k + 1, 10, false); /* 10^k */
        assert_non_null(p);
        assert_string_equal(str(vm, p), s);
        struct bigint *one = bigint_from_i64(vm, 1);
        memset(s, '9', k);
        s[k] = '\0';
        struct bigint *nines = bigint_sub(vm, p, one);
        assert_string_equal(str(vm, nines), s);
        assert_int_equal(bigint_cmp(bigint_parse(vm, s, k, 10, false), nines), 0);
        const char *above = str(vm, bigint_add(vm, p, one));
        assert_int_equal(strlen(above), k + 1);
        assert_true(above[0] == '1' && above[k] == '1');
        assert_true(strspn(above + 1, "0") == k - 1);
    }
}

/* A number past the memory budget fails the run with an error, no abort. */
static void
test_memory_limit(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    vm->mem_limit = 1u << 20;
    struct bigint *one = bigint_from_i64(vm, 1);
    if (setjmp(f->jb) == 0) {
        bigint_shl(vm, one, 64u << 20); /* 8 MiB of bits */
        fail_msg("no error");
    }
    assert_non_null(strstr(star_vm_error(vm), "out of memory"));
    if (setjmp(f->jb) == 0) {
        bigint_shl(vm, one, UINT64_MAX);
        fail_msg("no error");
    }
    assert_non_null(strstr(star_vm_error(vm), "out of memory"));
}

/* Steps the conversion of x to decimal text and back, and its square,
 * count. */
static uint64_t
steps_of_text_and_square(struct star_vm *vm, struct bigint *x)
{
    uint64_t before = vm->steps;
    size_t len;
    const char *s = bigint_to_string(vm, x, 10, false, &len);
    struct bigint *back = bigint_parse(vm, s, len, 10, false);
    assert_non_null(back);
    assert_int_equal(bigint_cmp(back, x), 0);
    (void)bigint_mul(vm, x, back);
    return vm->steps - before;
}

/* The work of the long operations is counted at what it costs: it is
 * quadratic, and so is the count (twice the digits, four times the
 * steps), so a file whose numbers grow meets the step budget as the work
 * grows; and a number of 100 000 bits squared twice (400 000 bits,
 * 120 412 digits) is printed, parsed and squared within a small part of
 * the budget. */
static void
test_step_cost(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    if (setjmp(f->jb))
        fail_msg("failed: %s", star_vm_error(vm));
    struct bigint *one = bigint_from_i64(vm, 1);
    struct bigint *x = bigint_sub(vm, bigint_shl(vm, one, 100000), one);
    x = bigint_mul(vm, x, x);
    uint64_t half = steps_of_text_and_square(vm, x);
    x = bigint_mul(vm, x, x);
    assert_int_equal(strlen(bigint_to_string(vm, x, 10, false, NULL)), 120412);
    uint64_t whole = steps_of_text_and_square(vm, x);
    if (whole < 3 * half || whole > 5 * half)
        fail_msg("%llu steps, %llu for half the digits", (unsigned long long)whole,
                 (unsigned long long)half);
    if (whole > STAR_MAX_STEPS / 20)
        fail_msg("%llu steps", (unsigned long long)whole);
}

/* Long work counts against the step budget. */
static void
test_step_limit(void **state)
{
    struct fixture *f = *state;
    struct star_vm *vm = &f->vm;
    struct bigint *x = NULL;
    if (setjmp(f->jb) == 0) {
        x = bigint_shl(vm, bigint_from_i64(vm, 3), 100000);
        vm->max_steps = vm->steps + 1000;
        for (int i = 0; i < 4; i++)
            x = bigint_mul(vm, x, x);
        fail_msg("no error");
    }
    assert_non_null(strstr(star_vm_error(vm), "too many steps"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_divmod_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parse_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_int64_edges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_to_double, setup, teardown),
        cmocka_unit_test_setup_teardown(test_from_double, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_operands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_powers_of_ten, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_cost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_limit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
