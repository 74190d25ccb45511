#!/usr/bin/env python3
"""Differential test: random rules files and commands, checked by both
`execgate-rules check` and Codex's `codex execpolicy check`.

usage: run.py EXECGATE_RULES [CASES [SEED [ints|bytes|ranges|closures]]]

Each case is a generated .rules file (literals, raw strings, escapes,
non-ASCII text, string methods, loops, examples, network rules, bytes
literals (escapes, raw, invalid UTF-8; their text, operations and bytes(),
and where a string is wanted), ranges whose span does not fit in 32 bits,
floats
(literals in every spelling, float(), arithmetic mixed with ints, NaN and
infinities, str/repr/%-formatting of the results), globals
used before a later statement binds them, built-ins' names rebound, assignment targets, trailing commas and
two indexes,
failures followed by later errors, integer arithmetic beyond 64 bits,
closures (def and lambda) over loop and comprehension variables and over
locals and parameters assigned again after the closure is made, some
called before what they read is assigned, and blocks of literal rules long enough
to span several of the lexer's windows) and a few
commands built from it.  For every command both programs must load the
file or both refuse it, and when both load, print byte-identical JSON.
The generator is seeded (default seed 1), so a failure names the seed and
case that reproduce it; the failing file is kept beside the report.
With `ints` (`bytes`, `ranges`, `closures`), every statement is one of
the integer (bytes, range, closure) ones.

Codex is looked for in $EXECGATE_CODEX, then as `codex` on PATH; it must
report version 0.169.0.  Without it the test is skipped (exit 77) with a
message saying how to run it: nothing is installed from npm here.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile

CODEX_VERSION = "0.169.0"
SKIP = 77


def find_codex():
    cands = [os.environ.get("EXECGATE_CODEX"), shutil.which("codex")]
    for c in cands:
        if not c or not os.access(c, os.X_OK):
            continue
        try:
            out = subprocess.run([c, "--version"], capture_output=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        if CODEX_VERSION.encode() in out:
            return c
    return None


# Words the generator draws from: ASCII, non-ASCII letters with unusual
# case mappings, Unicode spaces, quotes and backslashes.
WORDS = ["ls", "git", "push", "rm", "-rf", "--force", "a", "B", "x.y", "日本", "é", "ß", "İ",
         "ﬁ", "ΑΣ", "Ǆa", "\u00a0", "\u3000", "ok\u2009", "#c", "a b", "q'", 'd"', "\\q", "$x"]
ESCAPES = ["\\x80", "\\xe9", "\\777", "\\101", "\\q", "\\d", "\\u00df", "\\U0001F63F", "\\n",
           "\\t", "\\\\", "\\'", '\\"', "\\0"]
METHODS = [".upper()", ".lower()", ".strip()", ".lstrip()", ".rstrip()", ".capitalize()",
           ".title()", "[0]", "[-1]", "[1:]", "[::-1]", "[:2]", "[::2]", "[-2::-2]",
           ".replace(\"a\", \"\u00e9\")", ".replace(\"\", \"-\", 2)",
           ".removeprefix(\"\u65e5\")", ".strip(\"\u00e9a \")", ".lstrip(\"#\")",
           ".partition(\" \")[2]", ".rpartition(\"\u00e9\")[0]",
           ".split(\" \", 1)[-1]", ".rsplit(None, 1)[0]", ".rsplit(\"\", 2)[0]",
           ".splitlines()[0] if True else \"\"", "[1:].upper()", ".replace(\"\", \"|\")"]
# Expressions that give a string from a string, for justifications.
TO_STR = ["str(len({}))", "str({}.find(\"\u00e9\"))", "str({}.count(\"\"))",
          "str({}.isalpha())", "str({}.isupper())", "str({}.istitle())", "str({}.isspace())",
          "str({}.startswith(\"\u65e5\", 0, 1))", "str({}.endswith((\"b\", \"\u00df\")))",
          "\"-\".join({}.elems())", "str([c for c in {}.codepoints()][:2])",
          "\"{{}}!\".format({})", "f\"<{{{}}}>\"", "\"%r/%s\" % ({}, {})",
          "str({}.split(\"\"))", "str({}.rsplit(\"a\", 1))", "repr({}.title())",
          "str([{}.find(\"\", 9), {}.count(\"\", 2, 1), {}.startswith(\"\", 9)])",
          "{} + \"\\0\" + str(len)", "str(range(len({}))[1::2])", "{}.split(sep = \" \")[0]"]


def q(s):
    """s as a Starlark string literal (double quotes, escaped)."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def literal(r):
    """A string expression and, when known, its value (None: unknown)."""
    k = r.randrange(10)
    w = r.choice(WORDS)
    if k < 5:
        return q(w), w
    if k == 5:
        body = r.choice(["a\\\"b", "c\\'d", "e\\\\f", "\\d+", "g\\qh"])
        return "r" + r.choice(['"', "'"]) + body + ('"' if '"' in body[:0] else "") + "", None
    if k == 6:
        return '"' + "".join(r.choice(ESCAPES + ["a", "z"]) for _ in range(r.randint(1, 3))) + '"', None
    if k == 7:
        return q(w) + r.choice(METHODS), None
    if k == 8:
        return r.choice(TO_STR).replace("{}", q(w)), None
    return '" ".join(%s.split())' % q(w + r.choice([" ", "\u3000", "\u00a0"]) + r.choice(WORDS)), None


def raw_literal(r):
    body = r.choice(["a\\\"b", "c\\'d", "e\\\\f", "\\d+", "g\\qh", "ij"])
    quote = r.choice(['"', "'"])
    if quote in body.replace("\\" + quote, ""):
        quote = '"' if quote == "'" else "'"
    return "r" + quote + body + quote


def expr(r):
    e, _ = literal(r)
    if e.startswith("r"):
        e = raw_literal(r)
    return e


def text_expr(r):
    """expr(r) without a NUL: execgate refuses a NUL in a justification,
    the one difference it keeps (docs/rules.md)."""
    while True:
        e = expr(r)
        if "\\0" not in e:
            return e


# Float literals in the spellings Codex reads, and ints of any size to mix
# with them.
FLOAT_ATOMS = ["1.5", "0.1", "0.2", "2.0", "1e5", "1E5", "1e-7", ".5", "1.", "01.5", "1.e3",
               "1e16", "1e15", "123456789.123", "1e23", "5e-324", "1e-320", "1e400", "0.0",
               "1.7976931348623157e308", "999999.9999999999", "100000.5", "2.675", "3",
               "7", "0", "2", "1", "123456", "(1 << 70)", "-(1 << 64)", "9223372036854775807",
               "(1 << 1030)"]
FLOAT_CALLS = ['float("nan")', 'float("inf")', 'float("-inf")', 'float("-0")', 'float("1e3")',
               'float("Infinity")', 'float(".5")', 'float(True)', 'float()', 'float(7)',
               'abs(-2.5)', 'int(2.7)',
               'int(-2.7)', 'int(1e18)', 'int(1e20)', 'int(-1.5e300)', 'float(1 << 70)',
               'min(1, 0.5)', 'max([2, 2.5, float("nan")])']
FLOAT_OPS = ["+", "-", "*", "/", "//", "%"]
FLOAT_TEXT = ["str({})", "repr({})", "\"%s|%r\" % ({}, {})", "\"%e|%f|%g\" % ({}, {}, {})",
              "\"%E|%G\" % ({}, {})", "\"%d\" % ({})", "\"{{}}\".format({})", "str([{}, 1.0])",
              "str(sorted([{}, 1, float(\"nan\"), -2.5]))", "str({} == 1)", "str({} < 0.5)",
              "str({} in range(10))", "str({{1: 2}}.get({}))", "str(bool({}))", "str({} == 9007199254740992)"]


def random_double(r):
    """A random double as a literal Codex and Python read alike."""
    k = r.randrange(4)
    if k == 0:
        d = r.uniform(-1, 1) * 10.0 ** r.randint(-12, 12)
    elif k == 1:
        d = 10.0 ** r.randint(-320, 308) * (1 + r.choice([0, 2e-16, -1e-16]))
    elif k == 2:
        d = round(r.uniform(0, 1e7), r.randint(0, 6))
    else:
        d = 2.0 ** r.randint(-1074, 1023)
    return repr(abs(d)) if d == d and abs(d) != float("inf") else "1.0"


def float_expr(r, depth=0):
    """A numeric expression with at least one float in it, most of the time."""
    k = r.randrange(8)
    if depth > 2 or k < 3:
        return r.choice(FLOAT_ATOMS + [random_double(r)])
    if k == 3:
        return r.choice(FLOAT_CALLS)
    if k == 4:
        return "-" + float_expr(r, depth + 1)
    return "(%s %s %s)" % (float_expr(r, depth + 1), r.choice(FLOAT_OPS),
                           float_expr(r, depth + 1))


def float_rule(r):
    """A rule whose justification (or decision) is computed with floats."""
    e = float_expr(r)
    if r.random() < 0.2:
        return 'prefix_rule(pattern = ["tool"], decision = "allow" if %s > %s else "prompt")' % (
            e, float_expr(r))
    text = r.choice(FLOAT_TEXT).replace("{}", e)
    return 'prefix_rule(pattern = [%s], justification = %s)' % (q(r.choice(["tool", "ls"])), text)
# Integers around the edges of 32 and 64 bits and far beyond, for the
# arithmetic of ints of any size.
INTS = ["0", "1", "-1", "7", "-3", "255", "2147483647", "4294967296", "9223372036854775807",
        "-9223372036854775808", "9223372036854775808", "18446744073709551615",
        "99999999999999999999999", "0x7fffffffffffffffffff", "0o7777777777777777777777777",
        "0b" + "1" * 70, "(1 << 70)", "-(1 << 64)", "(1 << 200)", "~(1 << 100)"]
INT_OPS = ["+", "-", "*", "//", "%", "&", "|", "^"]


def int_expr(r, depth=0):
    """An int expression of any size (errors included: division by zero,
    negative or enormous shifts)."""
    k = r.randrange(10)
    if depth >= 3 or k < 3:
        return r.choice(INTS)
    if k < 6:
        return "(%s %s %s)" % (int_expr(r, depth + 1), r.choice(INT_OPS), int_expr(r, depth + 1))
    if k == 6:
        return "(%s %s %s)" % (int_expr(r, depth + 1), r.choice(["<<", ">>"]),
                               r.choice(["0", "1", "3", "31", "32", "63", "64", "65", "100",
                                         "1000", "-1", "100001", "(1 << 70)"]))
    if k == 7:
        return r.choice(["-", "~", "+"]) + int_expr(r, depth + 1)
    if k == 8:
        return r.choice(["abs(%s)", "int(%s)", "max(%s, 0)", "min(%s, -5)"]) % int_expr(
            r, depth + 1)
    digits = "".join(r.choice("0123456789abcdef") for _ in range(r.randint(1, 30)))
    base = r.choice([16, 0])
    return "int(%s, %d)" % (q(r.choice(["", "-", "+"]) + ("0x" if base == 0 else "") + digits),
                            base)


def int_statement(r):
    """Int results shown as justifications, so their text is compared."""
    shows = [
        "str(%s)" % int_expr(r),
        '"%%d %%o %%x %%X %%r" %% (%s, %s, %s, %s, %s)' % tuple(int_expr(r) for _ in range(5)),
        '"{} {}".format(%s, [%s])' % (int_expr(r), int_expr(r)),
        "str(sorted([%s, %s, %s]))" % (int_expr(r), int_expr(r), int_expr(r)),
        "str(%s %s %s)" % (int_expr(r), r.choice(["<", "<=", "==", "!=", ">"]), int_expr(r)),
        "str({%s: 1}.get(%s, 0))" % (int_expr(r), int_expr(r)),
        "str(%s in [%s, %s])" % (int_expr(r), int_expr(r), int_expr(r)),
        "str(%s in range(-5, 5))" % int_expr(r),
        'str([1, 2, 3][%s %% 3])' % int_expr(r),
        'str(type(%s))' % int_expr(r),
        'str(len(str(%s)))' % int_expr(r),
    ]
    return "prefix_rule(pattern = [%s], justification = %s)" % (
        q(r.choice(["ls", "git", "tool"])), r.choice(shows))


# Pieces of bytes literals: bytes named by escapes (any value, UTF-8 or
# not), text, and escapes a bytes literal takes or refuses.
BYTES_PIECES = ["a", "Z", " ", "~", "\\x00", "\\x7f", "\\x80", "\\xff", "\\xc3\\xa9", "\\xe2\\x82\\xac",
                "\\xf0\\x9f\\x98\\x80", "\\xe9\\x80", "\\xc3", "\\xed\\xa0\\x80", "\\xf4\\x90\\x80\\x80",
                "\\xc2\\xa0", "\\xe2\\x80\\xa8", "\\xd9\\xa0", "\\377", "\\0", "\\101", "\\n", "\\t",
                "\\r", "\\\"", "\\\\", "\\u00e9", "\\U0001F600", "\\q", "\u00e9", "\u65e5", "\\a\\v",
                "%", "'"]
BYTES_BAD = ["\\400", "\\x", "\\xg0", "\\ud800", "\\U00110000"]


def bytes_literal(r, bad=False):
    """A bytes literal: b"...", rb"..." or br"..."; with bad, perhaps one
    Codex refuses."""
    pieces = [r.choice(BYTES_PIECES) for _ in range(r.randint(0, 4))]
    if bad and r.random() < 0.3:
        pieces.insert(r.randrange(len(pieces) + 1), r.choice(BYTES_BAD))
    body = "".join(pieces)  # a quote only as \\", a backslash only in an escape
    prefix = r.choice(["b", "b", "b", "rb", "br"])
    return prefix + '"' + body + '"'


def bytes_expr(r, depth=0):
    k = r.randrange(10)
    if depth >= 2 or k < 4:
        return bytes_literal(r)
    if k == 4:
        return "(%s + %s)" % (bytes_expr(r, depth + 1), bytes_expr(r, depth + 1))
    if k == 5:
        return "(%s * %s)" % (bytes_expr(r, depth + 1), r.choice(["0", "2", "-1", "3"]))
    if k == 6:
        return "%s[%s]" % (bytes_expr(r, depth + 1), r.choice(
            ["1:", ":-1", "::-1", "::2", "1:3", "-2:", "5:1:-1", "10:"]))
    if k == 7:
        return "bytes(%s)" % r.choice(['"a\u00e9"', "[0, 97, 255]", "range(3)", "(200, 1)",
                                       "[256]", "[-1]", "[True]", "1", "None", "{65: 1}",
                                       '"x".elems()', "[b\"a\"]", "()"])
    if k == 8:
        return "bytes(%s)" % bytes_expr(r, depth + 1)
    return r.choice(["%s.elems()[0]", "%s.elems()[-1]"]) % bytes_expr(r, depth + 1)


def bytes_statement(r):
    """Bytes values shown as justifications (their repr, their str's repr:
    a NUL would stop the justification here), and bytes where a string or
    a tuple item is wanted."""
    a, b = bytes_expr(r), bytes_expr(r)
    shows = [
        "repr(%s)" % a, "repr(str(%s))" % a, "repr([%s, type(%s), len(%s)])" % (a, a, b),
        "repr(%s[%s])" % (a, r.choice(["0", "-1", "1", "5"])),
        "repr([%s == %s, %s < %s, %s != %s])" % (a, b, a, b, a, r.choice([b, q("a")])),
        "repr(%s in %s)" % (r.choice(["97", "0", "255", "256", "-1", b, q("a"), "None"]), a),
        "repr(sorted([%s, %s]))" % (a, b), "repr({%s: 1, %s: 2})" % (a, b),
        "repr(bool(%s))" % a, "repr(%s.elems())" % a, "repr(ord(%s))" % a,
        '"%%r|%%s" %% (%s, repr(%s))' % (a, a), '"{!r}".format(%s)' % a,
        '"%%s|%%d" %% (%s, 1)' % a, '"%%s" %% [%s]' % a, '"{}|{}".format(%s, [%s])' % (a, a),
        "repr(%s + %s)" % (a, r.choice([b, q("a"), "1"])),
        "repr(dir(%s))" % a, "repr(hash(%s))" % a, "repr(%s < %s)" % (a, q("a")),
        "repr(list(%s))" % a, "repr([x for x in %s])" % a, "repr(%s)" % bytes_literal(r, True),
    ]
    k = r.randrange(10)
    if k == 0:
        return "prefix_rule(pattern = [%s], justification = %s)" % (
            q("ls"), r.choice([a, "str(%s)" % a]))
    if k == 1:
        return "prefix_rule(pattern = [%s, %s])" % (q("ls"), r.choice([a, "[%s]" % a]))
    if k == 2:
        return r.choice(["t = (1, %s)", "t = (%s, 1)", "t = 1, %s", "t = [1, %s]",
                         "t = %s, 1", "t = (%s,)"]) % a
    return "prefix_rule(pattern = [%s], justification = %s)" % (
        q(r.choice(["ls", "git", "tool"])), r.choice(shows))


# Ranges whose span does not fit in 32 bits (Codex miscounts them), and
# ordinary ones, with what may be done with them.
SPAN_RANGES = ["range(-2147483648, 2147483647, 1073741824)",
               "range(-2147483648, 2147483647, 2147483647)", "range(-10, 2147483647, 536870912)",
               "range(2147483647, -2147483648, -2147483648)",
               "range(2147483647, -2147483648, -1073741824)",
               "range(-2147483648, 2147483647, 1000000007)", "range(10, -5, -3)", "range(4)"]
SPAN_USES = ["len({})", "{}[0]", "{}[-1]", "{}[2]", "{}[1:]", "{}[::-1]", "{}[:2]",
             "tuple({})", "sorted({})", "reversed({})", "[x for x in {}]",
             "[y for x in [1] for y in {}]", "walk({})", "{} == {}", "bool({})", "str({})",
             "[v in {} for v in [0, 1, -1, -2147483648, 2147483646, 1073741824, -3]]",
             "list({})", "list(enumerate({}))", "min({})", "max({})", "zip({}, [1, 2])"]


def range_statement(r):
    """A justification showing what Codex makes of a range; or a loop over
    one held in a global."""
    rng = r.choice(SPAN_RANGES)
    n = r.randrange(100000)  # names of its own: a file may hold several
    if r.random() < 0.2:
        return ("span_r%d = %s\nspan_out%d = []\nfor x in span_r%d:\n    span_out%d.append(x)\n"
                "prefix_rule(pattern = [\"ls\"], justification = str(span_out%d))" % (
                    n, rng, n, n, n, n))
    use = r.choice(SPAN_USES).replace("{}", rng).replace("walk(", "walk%d(" % n)
    return ("def walk%d(rr):\n    out = []\n    for x in rr:\n        out.append(x)\n"
            "    return out\nprefix_rule(pattern = [%s], justification = repr(%s))" % (
                n, q(r.choice(["ls", "git"])), use))


def pattern(r):
    toks = [q(r.choice(["ls", "git", "rm", "tool", "日本", "é"]))]
    for _ in range(r.randint(0, 3)):
        if r.random() < 0.2:
            toks.append("[" + ", ".join(expr(r) for _ in range(r.randint(1, 3))) + "]")
        else:
            toks.append(expr(r))
    return "[" + ", ".join(toks) + "]"


def example(r):
    parts = [r.choice(["ls", "git", "rm", "tool"])]
    for _ in range(r.randint(0, 3)):
        parts.append(r.choice(WORDS + ["# tail", "'x y'", '"a\\$b"', "c\\\nd", "\\#e"]))
    return q(" ".join(parts))


def rule(r):
    args = ["pattern = " + pattern(r)]
    if r.random() < 0.7:
        args.append("decision = " + q(r.choice(["allow", "prompt", "forbidden"])))
    if r.random() < 0.4:
        args.append("justification = " + r.choice(
            [text_expr(r), q("\u3000"), q(" \t"), q("why: ") + " + " + text_expr(r),
             '"%s and %d" % (' + text_expr(r) + ", 2)", '"%(k)s" % {"k": 1}',
             "str([%s, %s])" % (text_expr(r), text_expr(r)), "repr(%s)" % text_expr(r),
             q("a\u00a0b")]))
    if r.random() < 0.15:
        args.append("match = [" + example(r) + "]")
    if r.random() < 0.15:
        args.append("not_match = [" + example(r) + "]")
    r.shuffle(args)
    return "prefix_rule(" + ", ".join(args) + ")"


def filler(r):
    """Enough literal rules for several of the lexer's windows (about 1 024
    tokens each): files are run a statement at a time, and the memory of
    windows of literal calls is given back as they go."""
    return "\n".join('prefix_rule(pattern = [%s, "f%d"], decision = %s)' % (
        q(r.choice(["ls", "git", "rm", "tool", "len"])), i,
        q(r.choice(["allow", "prompt", "forbidden"]))) for i in range(r.randint(80, 200)))


# What closures read: the function's parameters (a, b), a local (c), the
# loop variable (i), a comprehension's variable (j).
CLOSURE_READS = ["a", "b", "c", "i", "(a, i)", "b * 10 + c", "a + i", "[c, b]", "str(a) + str(c)"]
CLOSURE_ITERS = ["range(3)", "[5, 6]", "range(2, 0, -1)", "[]", "[a, b]"]


def closure_read(r, comp=False):
    e = r.choice(CLOSURE_READS + (["j", "(j, i)", "j * 100 + a"] if comp else []))
    return e


def closure_lines(r, depth=0):
    """Statements of a function body that make closures into fs, change
    what they read, and call them (into out) along the way."""
    lines = []
    for _ in range(r.randint(1, 5)):
        k = r.randrange(11)
        if k == 0:
            lines.append("fs.append(lambda: %s)" % closure_read(r))
        elif k == 1:
            lines += ["def g():", "    return %s" % closure_read(r), "fs.append(g)"]
        elif k == 2:
            lines.append("%s = %s" % (r.choice(["a", "b", "c"]),
                                      r.choice(["1", "c + 1", "a * 2", "i", "7", "b - a"])))
        elif k == 3:
            lines.append("%s += %s" % (r.choice(["a", "b", "c"]), r.choice(["1", "10", "i"])))
        elif k == 4 and depth < 2:
            body = closure_lines(r, depth + 1)
            if r.random() < 0.3:
                body += ["if i == %d:" % r.randrange(3), "    break"]
            lines.append("for i in %s:" % r.choice(CLOSURE_ITERS))
            lines += ["    " + l for l in body]
        elif k == 5:
            lines.append("fs += [(lambda: %s) for j in %s]" % (
                closure_read(r, True), r.choice(CLOSURE_ITERS)))
        elif k == 6:
            # made in a later clause's iterable, inside the comprehension
            lines.append("fs += [g2 for j in %s for g2 in [lambda: %s]]" % (
                r.choice(CLOSURE_ITERS), closure_read(r, True)))
        elif k == 7:
            # two levels: the inner lambda reads through mk
            lines += ["def mk():", "    return lambda: %s" % closure_read(r), "fs.append(mk())"]
        elif k == 8:
            lines.append("d = {%s: (lambda: j) for j in %s}" % (
                r.choice(["j", "str(j)"]), r.choice(CLOSURE_ITERS)))
            lines.append("fs += d.values()")
        elif k == 9:
            lines.append("out.append([g() for g in fs])")
        else:
            lines.append("i = %s" % r.choice(["0", "a", "c * 3"]))
    return lines


def closure_statement(r):
    """A function making closures, called; or a top-level comprehension
    making them (one comprehension, or one inside another; at top level
    each statement runs on its own).  Results are shown in a
    justification."""
    name = "cl%d" % r.randrange(1000)
    k = r.randrange(5)
    show = "prefix_rule(pattern = [\"ls\"], justification = str(%s))"
    if k == 0:
        return "%s = [(lambda: %s) for j in %s]\n" % (
            name, r.choice(["j", "j * 2", "[j, j]"]),
            r.choice(["range(3)", "[1, 2]", "[[j] for j in range(2)]", "[]"])) + (
                show % ("[g() for g in %s]" % name))
    if k == 1:
        return "%s = [[(lambda: (i, j)) for j in range(i)] for i in range(%d)]\n" % (
            name, r.randint(1, 4)) + show % ("[[g() for g in l] for l in %s]" % name)
    # i and c are locals, often read (by a closure or not) before any
    # assignment: both must then refuse the file.
    first = ["c = %s" % r.choice(["0", "a + b"])] if r.random() < 0.7 else []
    body = (["fs = []", "out = []", "if a == -99:", "    i = -1", "    c = -1"] + first +
            closure_lines(r) + ["return out + [[g() for g in fs]]"])
    return "def %s(a, b = 2):\n%s\n" % (name, "\n".join("    " + l for l in body)) + (
        show % ("%s(%s)" % (name, r.choice(["1", "3, 4", "b = 5, a = 0"]))))


def target_statement(r):
    """Assignment targets, trailing commas and two indexes in assignments,
    augmented assignments, loops and comprehensions, run or only defined."""
    target = r.choice(["t", "tl[0]", "tl.a", "[]", "()", "(t, u)", "[t, [u]]", "t,", "t, u,",
                       "tl[0, 0]", "f()", "1", "(t)", "tl[0].a", "t, tl.a"])
    value = r.choice(["[1, 2]", "1, 2", "1, 2,", "[]", "(3,)", "\"ab\"", "tl[0, 1]",
                      "{(1, 2): 3}[1, 2]", "[[5, 6]]", "1"])
    form = r.randrange(5)
    if form == 0:
        body = "%s = %s" % (target, value)
    elif form == 1:
        body = "%s %s %s" % (target, r.choice(["+=", "-=", "|="]), value)
    elif form == 2:
        body = "for %s in %s:\n    pass" % (target, value)
    elif form == 3:
        body = "cv = [0 for %s in %s]" % (target, value)
    else:
        body = "cv = %s[%s]" % (r.choice(["tl", "\"abc\"", "{}", "None"]),
                                r.choice(["0, 0", "0,", "0, 0, 0", "(0, 0)", "0,:1"]))
    pre = "tl = [[7, 8]]\nt = 0\nu = 0\n"
    if r.random() < 0.4:
        # only defined: what fails when run is still read
        body = "def never():\n    " + body.replace("\n", "\n    ") + "\n    return 0"
    return pre + body + "\nprefix_rule(pattern = [\"tgt\"], justification = str([t, u, tl]))"


def statement(r):
    k = r.randrange(33)
    if k >= 31:
        return closure_statement(r)
    if k == 30:
        return target_statement(r)
    if k == 29:
        return range_statement(r)
    if k >= 27:
        return bytes_statement(r)
    if k >= 24:
        return float_rule(r)
    if k == 20:
        # a function body naming a global a later statement binds
        return ("def uses_later():\n    return later_v\n"
                "later_v = [%s, %s]\nprefix_rule(pattern = uses_later(), decision = %s)" % (
                    q(r.choice(["ls", "git", "tool"])), expr(r), q("prompt")))
    if k == 21:
        # a built-in's name bound as a global, after or without a use
        return r.choice(["n = len(\"ab\")\nlen = 3", "if False:\n    y = str\nstr = 1",
                         "def g():\n    return len\nlen = 2\n"
                         "prefix_rule(pattern = [\"len\"] * g())",
                         "prefix_rule = 1", "range = 4\nprefix_rule(pattern = [str(range)])"])
    if k == 22:
        # a failing statement; a later syntax error or undefined name
        return r.choice(["y = 1 + \"a\"", "z = not_bound_anywhere", "w = [1 2]",
                         "f = float(\" 1\")", "f = float(\"1_0\")", "f = float(\"1e400\")",
                         "f = 1.5 // 0", "f = float(x = 1)",
                         "prefix_rule(pattern = [\"ls\"], decision = \"maybe\")",
                         "u = later_u\nlater_u = 1"])
    if k == 23:
        return filler(r)
    if k < 12:
        return rule(r)
    if k == 12:
        return "for s in [%s, %s]:\n    prefix_rule(pattern = s.split(), decision = %s)" % (
            expr(r), q("ls " + r.choice(WORDS)), q(r.choice(["prompt", "forbidden"])))
    if k == 13:
        host = r.choice(["example.com", "Example.COM.:443", "[::1]:80", "[::1]x", "[::1", "a b",
                         "a\u00a0b", "\u3000h.io ", "*.x.org", "h:1:2", "x/y"])
        return "network_rule(host = %s, protocol = %s, decision = %s)" % (
            q(host), q(r.choice(["https", "http", "socks5_tcp"])), q("allow"))
    if k == 14:
        return r.choice(["x = 2 ** 3", "print(1)", "x = 1 << 3", "x = 7 // 2", "x = -7 % 3",
                         "x = sorted([2, 1], key = None)", "x = sorted([2, 1], reverse = True)",
                         "x = \"%s %s\" % (1,)", "x = \"%d\" % True", "x = [1,\t2]",
                         "x = 1\r", "x = 1  # a\rb", "x = \"abc\"[::2147483648]",
                         "def f(*a, **k):\n    return f(*a, b = 1)", "def f(a, *):\n    pass",
                         "x = (1, 2)[5]", "x = [].pop()",
                         "x = [1]\nx.append(x)\nprefix_rule(pattern = [\"cyc\"], "
                         "justification = str([x, {\"k\": x}]))",
                         "x = [1, {}] < [1, {}]", "x = [1, {}] < [2, {}]",
                         "x = sorted([(1, None), (0, None)])", "x = [None] < [None]"])
    if k == 15:
        return "def helper(p, d = %s):\n    prefix_rule(pattern = p, decision = d)\nhelper([%s, %s])" % (
            q("prompt"), q("git"), expr(r))
    if k == 16:
        return "v = [%s, %s]\nprefix_rule(pattern = [%s] + v, decision = %s)" % (
            expr(r), expr(r), q("tool"), q("forbidden"))
    if k == 17:
        return "prefix_rule(pattern = [%s, str(%s)], decision = %s)" % (
            q("len"), r.choice(['len("日本")', '"a,b".split("")', '" a b ".split(None, 1)',
                               '"日本語".find("語")', '"ab".rsplit("", 1)', 'ord("本")']),
            q("prompt"))
    if k == 18:
        return "prefix_rule(pattern = [%s], justification = %s)" % (q("ls"), text_expr(r))
    if k == 19:
        return int_statement(r)
    return "# " + r.choice(WORDS)


def commands(r, text):
    """A few commands likely to hit the file's rules."""
    pool = ["ls", "git", "rm", "tool", "len", "日本", "é"] + WORDS
    cmds = []
    for _ in range(3):
        n = r.randint(1, 4)
        cmds.append([r.choice(["ls", "git", "rm", "tool", "len", "日本", "é"])] +
                    [r.choice(pool + ["SS", "É", "i\u0307", "FI", "2", "a\"b", "e\\\\f",
                                      "f%d" % r.randrange(200)])
                     for _ in range(n - 1)])
    return cmds


def run(argv):
    try:
        p = subprocess.run(argv, capture_output=True, timeout=60,
                           env=dict(os.environ, RUST_BACKTRACE="0"))
    except subprocess.TimeoutExpired:
        return -1, b"", b"timeout"
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    rules_bin = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    mode = sys.argv[4] if len(sys.argv) > 4 else ""
    gen = {"ints": int_statement, "bytes": bytes_statement, "ranges": range_statement,
           "closures": closure_statement}.get(mode, statement)
    codex = find_codex()
    if codex is None:
        print("SKIP: Codex %s not found: set EXECGATE_CODEX to its binary "
              "(npm install @openai/codex@%s) to run this differential test"
              % (CODEX_VERSION, CODEX_VERSION))
        return SKIP
    r = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="execgate-diff-")
    comparisons = differ = loads = 0
    try:
        for case in range(cases):
            text = "\n".join(gen(r) for _ in range(r.randint(1, 6))) + "\n"
            path = os.path.join(tmp, "case.rules")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            for cmd in commands(r, text):
                ours = run([rules_bin, "check", "--rules", path, "--"] + cmd)
                theirs = run([codex, "execpolicy", "check", "--rules", path, "--"] + cmd)
                comparisons += 1
                same = (ours[0] == 0) == (theirs[0] == 0) and (
                    ours[0] != 0 or ours[1] == theirs[1])
                loads += ours[0] == 0 and theirs[0] == 0
                if not same:
                    differ += 1
                    keep = os.path.join(tmp, "differ-%d.rules" % case)
                    shutil.copy(path, keep)
                    print("DIFFER seed %d case %d: %s\n  command: %r\n  ours (%d): %s%s\n"
                          "  codex (%d): %s%s\n--- file:\n%s" % (
                              seed, case, keep, cmd, ours[0], ours[1].decode(errors="replace"),
                              ours[2].decode(errors="replace")[:300], theirs[0],
                              theirs[1].decode(errors="replace"),
                              theirs[2].decode(errors="replace")[:600], text))
                    break
    finally:
        if differ == 0:
            shutil.rmtree(tmp, ignore_errors=True)
    print("differential: seed %d, %d files, %d comparisons (%d where both load), %d differ"
          % (seed, cases, comparisons, loads, differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
