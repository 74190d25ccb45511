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
machine load hits both.  Prints tree/shell ratios.  Uses bench/server.py's
client.
"""
import argparse
import os
import sys
import tempfile
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--execgate", required=True)
    ap.add_argument("--seq", type=int, default=200)
    ap.add_argument("--calls", type=int, default=400)
    args = ap.parse_args()

    scratch = tempfile.mkdtemp(prefix="execgate-treebench-")
    workdir = os.path.join(scratch, "work")
    os.mkdir(workdir)
    rules_dir = os.path.join(scratch, "codex-home", "rules")
    os.makedirs(rules_dir)
    with open(os.path.join(rules_dir, "bench.rules"), "w") as f:
        f.write(RULES)
    home = os.path.join(scratch, "home")
    os.mkdir(home)
    policy = {"type": "workspace-write", "writable_roots": [], "network_access": False,
              "exclude_tmpdir_env_var": False, "exclude_slash_tmp": False}
    update = {"sandboxPolicy": policy, "sandboxCwd": workdir}
    env = dict(os.environ, CODEX_HOME=os.path.join(scratch, "codex-home"), HOME=home)
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
