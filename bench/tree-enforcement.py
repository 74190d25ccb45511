#!/usr/bin/env python3
"""bench/tree-enforcement.py: what --exec-enforcement=tree costs, per call.

    bench/tree-enforcement.py --execgate build-bench/server/execgate \
        [--seq 200] [--calls 400]

Two execgate servers side by side, one with --exec-enforcement=shell (the
baseline), one with tree (the default), same rules (touch allowed, so
escalated), same workspace-write sandbox, same empty HOME.  Commands:
`echo x` (no exec: the listener hand-over alone), `/bin/true; /bin/true;
/bin/true; echo x` (three execs, each through the wrapper and then the
exec filter) and `touch a; ls; echo x` (touch escalated: through the
sandbox helper and its own listener in tree mode).  Sequential p50 and 8
calls in flight (calls/s), blocks alternating between the servers so that
machine load hits both.  Prints tree/shell ratios.  Then the issue's two
targets through the server: `sh -c` running 1 000 `/bin/true` (sh runs in
the sandbox: the shell mode sees one exec, tree mode all 1 001; the
difference / 1 000 is the cost per intercepted exec) and a 200-file
`make -j2` (one `cc -c` per file), --heavy rounds each, medians.  Uses
bench/server.py's client.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server as common  # noqa: E402
from escalation import block  # noqa: E402

RULES = 'prefix_rule(pattern=["touch"], decision="allow")\n'
WORK = [("echo x", "x\n"),
        ("/bin/true; /bin/true; /bin/true; echo x", "x\n"),
        ("touch a; ls; echo x", "x\n")]


def params(workdir, command):
    return {"name": "shell", "arguments": {"command": command, "workdir": workdir,
                                           "login": False}}


def seq(c, workdir, command, want, n):
    from escalation import check
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        check(c.wait(c.request("tools/call", params(workdir, command))), want)
        lat.append(time.perf_counter() - t)
    return lat


def timed(c, workdir, command, want, timeout_ms=600000):
    from escalation import check
    p = params(workdir, command)
    p["arguments"]["timeout_ms"] = timeout_ms
    t = time.perf_counter()
    check(c.wait(c.request("tools/call", p)), want)
    return time.perf_counter() - t


MAKE_SETUP = ("mkdir -p mk && cd mk && for i in $(seq 200); do "
              "echo \"int f$i(void) { return $i; }\" > f$i.c; done && "
              "printf 'SRC=$(wildcard *.c)\\nall: $(SRC:.c=.o)\\n%%.o: %%.c\\n\\tcc -c $< -o $@\\n'"
              " > Makefile && echo x")
# (find -delete, not rm -f: the shell's own `rm -f` is asked about by the
# forced-rm heuristic, and this client cannot answer)
MAKE = "cd mk && find . -name '*.o' -delete && make -s -j2 && echo x"
LOOP = "sh -c 'i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i+1)); done'; echo x"


def heavy(clients, workdir, rounds):
    res = {(m, k): [] for m in clients for k in ("loop", "make")}
    timed(clients["shell"], workdir, MAKE_SETUP, "x\n")
    for _ in range(rounds):
        for m, c in clients.items():
            res[(m, "loop")].append(timed(c, workdir, LOOP, "x\n"))
            res[(m, "make")].append(timed(c, workdir, MAKE, "x\n"))
    med = {k: sorted(v)[len(v) // 2] for k, v in res.items()}
    per = (med[("tree", "loop")] - med[("shell", "loop")]) / 1000 * 1e6
    print(f"sh -c 1000x /bin/true: shell {med[('shell', 'loop')] * 1000:.0f} ms, "
          f"tree {med[('tree', 'loop')] * 1000:.0f} ms "
          f"({med[('tree', 'loop')] / med[('shell', 'loop')]:.2f}x): {per:+.0f} us per "
          f"intercepted exec")
    print(f"make -j2, 200 files: shell {med[('shell', 'make')] * 1000:.0f} ms, "
          f"tree {med[('tree', 'make')] * 1000:.0f} ms "
          f"({med[('tree', 'make')] / med[('shell', 'make')]:.2f}x)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--execgate", required=True)
    ap.add_argument("--seq", type=int, default=200)
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--heavy", type=int, default=5, help="rounds of the loop and make (0: skip)")
    args = ap.parse_args()

    _, workdir, env, update = common.workspace("execgate-treebench-", RULES)
    modes = ["shell", "tree"]
    clients = {m: common.start([args.execgate, f"--exec-enforcement={m}"], env, update, m)
               for m in modes}
    for m, c in clients.items():  # warm-up
        for cmd, want in WORK:
            block(c, workdir, cmd, want, 16)
    lat = {(m, cmd): [] for m in modes for cmd, _ in WORK}
    rate = {(m, cmd): [0.0, 0] for m in modes for cmd, _ in WORK}
    rounds = 10
    for _ in range(rounds):
        for cmd, want in WORK:
            for m in modes:
                lat[(m, cmd)] += seq(clients[m], workdir, cmd, want, args.seq // rounds)
                t, ls = block(clients[m], workdir, cmd, want, args.calls // rounds)
                rate[(m, cmd)][0] += t
                rate[(m, cmd)][1] += len(ls)
    if args.heavy:
        heavy(clients, workdir, args.heavy)
    for c in clients.values():
        c.close()
    print(f"{'command':42} {'mode':6} {'p50 ms':>8} {'8x c/s':>8}")
    for cmd, _ in WORK:
        for m in modes:
            p50 = common.pct(lat[(m, cmd)], 0.5) * 1000
            cps = rate[(m, cmd)][1] / rate[(m, cmd)][0]
            print(f"{cmd:42} {m:6} {p50:8.2f} {cps:8.0f}")
        s50 = common.pct(lat[("shell", cmd)], 0.5)
        t50 = common.pct(lat[("tree", cmd)], 0.5)
        sr = rate[("shell", cmd)][1] / rate[("shell", cmd)][0]
        tr = rate[("tree", cmd)][1] / rate[("tree", cmd)][0]
        print(f"{'':42} tree/shell: p50 {t50 / s50:.2f}x ({(t50 - s50) * 1000:+.2f} ms), "
              f"calls/s {tr / sr:.2f}x")


if __name__ == "__main__":
    main()
