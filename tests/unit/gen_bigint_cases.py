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
