#!/usr/bin/env python3
"""bench/bigint.py: rules files that compute integers of millions of digits,
loaded by execgate-rules and by Codex in the same run.

    python3 bench/bigint.py --rules build-bench/rules/cli/execgate-rules \
        [--codex PATH/TO/codex] [--runs 3] [--only NAME...]

Each case is a small .rules file (made in a temporary directory) whose
integers are large: a number of 100 000 bits squared N times, int() of a string of a million digits, a division of 3.3 million
bits by 2.9 million.  The arithmetic is schoolbook (quadratic): larger
cases end with the step-limit error, as they should.  For each tool the
figure is the CPU time (user + system, from getrusage of the child) of
`check --rules FILE -- big`, the least of --runs runs; the runs of the two
tools alternate, so load from elsewhere on the machine hits both.  Both
outputs must be the same (a refusal shows as `refused`); the last column
is execgate's time over Codex's.
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile

SQUARE = """x = (1 << 100000) - 1
for i in range({n}):
    x = x * x
prefix_rule(pattern = ["big", str(x % 1000000007)], decision = "allow")
"""

CASES = {
    "square5": SQUARE.format(n=5),
    "square6": SQUARE.format(n=6),
    "int-1m-digits": """x = int("7" * 1000000)
prefix_rule(pattern = ["big", str(x % 1000000007)], decision = "allow")
""",
    "divide": """x = 3
for i in range(21):
    x = x * x
y = 7
for i in range(20):
    y = y * y
prefix_rule(pattern = ["big", str(x // y % 1000000007), str(x % y % 1000000007)],
            decision = "allow")
""",
}


def cpu(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, env=dict(os.environ, RUST_BACKTRACE="0"))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return t, p.stdout if p.returncode == 0 else b"refused"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", required=True, help="the execgate-rules binary")
    ap.add_argument("--codex", help="the codex binary (the baseline)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    names = args.only or list(CASES)
    with tempfile.TemporaryDirectory() as tmp:
        print("%-16s %12s %12s %8s" % ("case", "execgate", "codex", "ratio"))
        for name in names:
            path = os.path.join(tmp, name + ".rules")
            with open(path, "w") as f:
                f.write(CASES[name])
            best = {}
            out = {}
            for _ in range(args.runs):
                t, o = cpu([args.rules, "check", "--rules", path, "--", "big"])
                best["e"] = min(best.get("e", t), t)
                out["e"] = o
                if args.codex:
                    t, o = cpu([args.codex, "execpolicy", "check", "--rules", path, "big"])
                    best["c"] = min(best.get("c", t), t)
                    out["c"] = o
            line = "%-16s %10.3f s" % (name, best["e"])
            if args.codex:
                line += " %10.3f s %8.2f" % (best["c"], best["e"] / best["c"] if best["c"] else 0)
                if out["e"] != out["c"]:
                    line += "  DIFFERENT: %s / %s" % (out["e"][:60], out["c"][:60])
            elif out["e"] == b"refused":
                line += "  refused"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
