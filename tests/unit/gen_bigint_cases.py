#!/usr/bin/env python3
"""Prints the table of tests/unit/test_bigint.c: operations on integers of
many sizes with the results Python computes (its int has the semantics
Starlark's has: floor division, two's-complement bitwise operations)."""
import random
import sys

rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 169)


def num():
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice([0, 1, -1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, -2**63,
                           2**63, 2**64 - 1, 2**64, -2**64, 2**96 - 1])
    bits = rng.choice([8, 31, 32, 33, 63, 64, 65, 96, 128, 200, 640])
    v = rng.getrandbits(bits)
    if kind == 1:  # long runs of one or zero bits hit the carries
        v = (1 << bits) - 1 if rng.random() < 0.5 else 1 << bits
        v += rng.randrange(-2, 3)
    return -v if rng.random() < 0.5 else v


def c(s):
    return '"%s"' % s


rows = []
for _ in range(400):
    a, b = num(), num()
    op = rng.choice("+-*/%&|^~<>")
    if op in "/%" and b == 0:
        b = 7
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op == "/":
        r = a // b
    elif op == "%":
        r = a % b
    elif op == "&":
        r = a & b
    elif op == "|":
        r = a | b
    elif op == "^":
        r = a ^ b
    elif op == "~":
        b, r = 0, ~a
    else:
        b = rng.choice([0, 1, 31, 32, 33, 63, 64, 65, 100, 700])
        r = a << b if op == "<" else a >> b
    rows.append("    {'%s', %s, %s, %s}," % (op, c(a), c(b), c(r)))
print("static const struct op_case op_cases[] = {")
print("\n".join(rows))
print("};")

rows = []
for _ in range(60):
    a = num()
    base = rng.choice([2, 8, 16, 36])
    digits = ""
    m = abs(a)
    while True:
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[m % base] + digits
        m //= base
        if m == 0:
            break
    rows.append("    {%s, %d, %s}," % (c(a), base, c(("-" if a < 0 else "") + digits)))
print("static const struct base_case base_cases[] = {")
print("\n".join(rows))
print("};")

rows = []
specials = [2**53, 2**53 + 1, 2**53 + 2, 2**53 + 3, 2**54 + 2, 2**54 + 6, 2**64 - 1,
            2**64 + 2**11, 2**64 + 2**11 + 1, 2**64 + 3 * 2**11, (2**53 - 1) << 971,
            ((2**54 - 1) << 970), 2**1024, -(2**1024), 2**1023 * 3, 2**2000]
for a in specials + [num() for _ in range(40)]:
    try:
        d = float(a).hex()
    except OverflowError:
        d = "INFINITY" if a > 0 else "-INFINITY"
    rows.append("    {%s, %s}," % (c(a), d))
print("static const struct double_case double_cases[] = {")
print("\n".join(rows))
print("};")

# Numbers of thousands of limbs, long enough for Karatsuba and for the
# divide-and-conquer conversions: made from a splitmix64 stream (the test
# makes the same), with the FNV-1a hash of each result's decimal text.
M64 = (1 << 64) - 1


def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def limbs(seed, n, kind):
    """n 32-bit limbs: random (kind 0) or all ones (kind 1), top limb set."""
    if kind == 1:
        return (1 << (32 * n)) - 1
    v, state = 0, seed
    for i in range(n):
        state, z = splitmix(state)
        v |= (z & 0xFFFFFFFF) << (32 * i)
    return v | (1 << (32 * n - 1))


def fnv(s):
    h = 0xCBF29CE484222325
    for ch in s.encode():
        h = ((h ^ ch) * 0x100000001B3) & M64
    return h


sys.set_int_max_str_digits(0)
rows = []
for seed, an, ak, bn, bk, neg in [(1, 3000, 0, 3000, 0, 0), (2, 5000, 0, 1700, 0, 1),
                                  (3, 4097, 0, 63, 0, 0), (4, 2500, 1, 2499, 1, 0),
                                  (5, 6000, 0, 2999, 1, 1), (6, 40, 0, 39, 0, 0),
                                  (7, 1100, 1, 1100, 0, 0)]:
    a, b = limbs(seed, an, ak), limbs(seed + 100, bn, bk)
    if neg:
        a = -a
    p, q, r = a * b, a // b, a % b
    rows.append("    {%d, %d, %d, %d, %d, %d, %d, 0x%016xull, 0x%016xull, 0x%016xull, 0x%016xull}," % (
        seed, an, ak, bn, bk, neg, len(str(p)), fnv(str(p)), fnv(str(q)), fnv(str(r)),
        fnv(format(p, "x"))))
print("static const struct big_case big_cases[] = {")
print("\n".join(rows))
print("};")
