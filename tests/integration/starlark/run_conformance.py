#!/usr/bin/env python3
"""Runs the Starlark conformance chunks through `execgate-rules eval`.

Each testdata/*/*.star file is split on lines that are exactly `---`; each
chunk runs on its own after a prelude that defines assert_eq, assert_ne and
assert_ with fail().  A chunk with a `### text` comment must fail with an
error containing `text` (case-insensitive, as a substring or a regular
expression); any other chunk must succeed.  `### go:` / `### java:` /
`### rust:` expectations follow the Go implementation's (only the wording of
some errors differs from the Rust implementation's; strings here are
sequences of code points, as in the Rust implementation Codex uses, and the
upstream files keep their byte-string chunks commented out).  Chunks that use floating point are
counted apart: their expectations are other implementations' (the one such chunk wants `1 / 1`
refused, which Codex 0.169 evaluates to 1.0); floats are checked against Codex itself by the
rules-check golden cases and the differential test.

usage: run_conformance.py EXECGATE_RULES TESTDATA_DIR MIN_PASS_PERCENT [-v]
Exits 1 when the pass rate (float chunks excluded) is below the minimum.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

PRELUDE = '''\
def assert_eq(x, y):
    if x != y:
        fail("%r != %r" % (x, y))

def assert_ne(x, y):
    if x == y:
        fail("%r == %r" % (x, y))

def assert_(cond, msg = "assertion failed"):
    if not cond:
        fail(msg)
'''

IMPL = "go"
EXPECT = re.compile(r"### *((go|java|rust):)? *(.*)")
FLOAT = re.compile(r"(\b\d+\.\d*|\B\.\d+|\b\d+[eE][-+]?\d+\b|\bfloat\(|\d\s*/\s*\d)")


def chunks(path):
    code, expected, start = [], [], 1
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if line.strip() == "---":
                yield code, expected, start
                code, expected, start = [], [], no + 1
                continue
            m = EXPECT.search(line)
            if m and (m.group(2) is None or m.group(2) == IMPL):
                expected.append(m.group(3).strip())
            code.append(line)
    yield code, expected, start


STRING = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")


def uses_floats(code):
    text = "".join(STRING.sub('""', l).split("#", 1)[0] for l in code)
    return FLOAT.search(text) is not None


def run(binary, code):
    with tempfile.NamedTemporaryFile("w", suffix=".star", delete=False, encoding="utf-8") as t:
        t.write(PRELUDE + "".join(code))
        name = t.name
    try:
        p = subprocess.run([binary, "eval", name], capture_output=True, timeout=20)
        return p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return -1, "timeout"
    finally:
        os.unlink(name)


SANITIZER = re.compile(r"runtime error:|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer")


def verdict(rc, out, expected):
    if SANITIZER.search(out):
        return False, "sanitizer report: %s" % out.strip()
    if rc not in (0, 1):
        return False, "crashed or timed out (status %d): %s" % (rc, out.strip())
    if not expected:
        return rc == 0, out.strip()
    if rc == 0:
        return False, "expected an error matching %r, got success" % expected[0]
    low = out.lower()
    for exp in expected:
        e = exp.lower()
        try:
            ok = e in low or re.search(e, low) is not None
        except re.error:
            ok = e in low
        if not ok:
            return False, "error %r does not match %r" % (out.strip(), exp)
    return True, ""


def main():
    binary, data, minimum = sys.argv[1], sys.argv[2], float(sys.argv[3])
    verbose = "-v" in sys.argv[4:]
    files = sorted(glob.glob(os.path.join(data, "*", "*.star")))
    passed = total = floats = float_passed = crashes = 0
    for path in files:
        fp = ft = 0
        for code, expected, line in chunks(path):
            if not "".join(code).strip():
                continue
            rc, out = run(binary, code)
            ok, why = verdict(rc, out, expected)
            if rc not in (0, 1) or SANITIZER.search(out):
                crashes += 1
            if uses_floats(code):
                floats += 1
                float_passed += ok
                continue
            total += 1
            ft += 1
            passed += ok
            fp += ok
            if not ok and verbose:
                print("FAIL %s:%d: %s" % (os.path.relpath(path, data), line, why))
        print("%-40s %3d/%3d" % (os.path.relpath(path, data), fp, ft))
    rate = 100.0 * passed / total if total else 0.0
    print("conformance: %d of %d chunks pass (%.1f%%); %d chunks need floats (%d pass anyway); "
          "%d crashed or timed out" % (passed, total, rate, floats, float_passed, crashes))
    if crashes:
        print("FAIL: a chunk crashed or timed out")
        return 1
    if rate < minimum:
        print("FAIL: pass rate %.1f%% is below the required %.1f%%" % (rate, minimum))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
