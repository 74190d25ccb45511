#!/usr/bin/env python3
"""bench/escalation.py: the escalated path, execgate beside the reference.

    bench/escalation.py --execgate build-bench/server/execgate \
        [--reference /tmp/execgate-ref] [--previous OLD/server/execgate] \
        [--calls 800] [--seq 200]

Command `touch a; ls; echo x` with a rule `prefix_rule(["touch"], allow)`:
touch is escalated (run by the server, outside the sandbox), ls runs in
the sandbox after asking the server, echo is a builtin.  8 calls in flight,
calls/s and p99, blocks alternating between the servers so that machine
load hits both; also `echo x` alone (no exec) as the in-run baseline of
each server.  Same workspace-write update, same rules file, same empty
HOME for both.  Uses bench/server.py's client.

What one exec decided Run costs, one call at a time, rounds alternating
between the servers and commands (the median over all rounds):
  - `echo x` (no exec), `/bin/true x4; echo x` (four Run execs, through
    the wrapper), and for execgate servers `EXEC_WRAPPER= /bin/true x4;
    echo x`: the same four execs in the same sandbox without the wrapper
    (the patched Bash starts no wrapper when EXEC_WRAPPER is empty).  Per
    exec: (four execs - echo) / 4; the wrapper's share: through the wrapper
    minus without it, in the same sandbox and the same run;
  - the patched Bash alone outside any sandbox, as before.
--previous: another execgate build (an older commit), measured in the same
run as one more server, for before/after figures.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server as common  # noqa: E402

RULES = 'prefix_rule(pattern=["touch"], decision="allow")\n'


def params(workdir, command):
    return {"name": "shell", "arguments": {"command": command, "workdir": workdir,
                                           "login": False}}


def check(answer, want_tail):
    r = answer.get("result")
    if not r or r.get("isError"):
        raise RuntimeError(f"call failed: {json.dumps(answer)[:400]}")
    out = json.loads(r["content"][0]["text"])
    if not out["output"].endswith(want_tail) or out["exit_code"] != 0:
        raise RuntimeError(f"unexpected result: {json.dumps(out)[:400]}")


def block(c, workdir, command, want, n, inflight=8):
    started, lat = {}, []
    sent = done = 0
    t0 = time.perf_counter()
    while sent < min(inflight, n):
        started[c.request("tools/call", params(workdir, command))] = time.perf_counter()
        sent += 1
    while done < n:
        a = c.any_answer()
        check(a, want)
        lat.append(time.perf_counter() - started.pop(a["id"]))
        done += 1
        if sent < n:
            started[c.request("tools/call", params(workdir, command))] = time.perf_counter()
            sent += 1
    return time.perf_counter() - t0, lat


def seq_p50(c, workdir, command, n):
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        check(c.wait(c.request("tools/call", params(workdir, command))), "x\n")
        lat.append(time.perf_counter() - t)
    return common.pct(lat, 0.5) * 1000


FOUR_RUNS = "/bin/true; /bin/true; /bin/true; /bin/true; echo x"
FOUR_BARE = ("EXEC_WRAPPER= /bin/true; EXEC_WRAPPER= /bin/true; EXEC_WRAPPER= /bin/true; "
             "EXEC_WRAPPER= /bin/true; echo x")


def run_exec_costs(clients, workdir, n):
    """Per server: the median cost of one Run exec through the wrapper and,
    for execgate, without it in the same sandbox.  Rounds alternate between
    servers and commands so that machine load hits all alike."""
    cmds = {name: ["echo x", FOUR_RUNS] + ([FOUR_BARE] if name.startswith("execgate") else [])
            for name in clients}
    lat = {name: {cmd: [] for cmd in cmds[name]} for name in clients}
    for r in range(n + 5):
        for name, c in clients.items():
            for cmd in cmds[name]:
                t = time.perf_counter()
                check(c.wait(c.request("tools/call", params(workdir, cmd))), "x\n")
                if r >= 5:  # warm-up rounds
                    lat[name][cmd].append(time.perf_counter() - t)
    out = {}
    for name in clients:
        med = {cmd: common.pct(v, 0.5) * 1000 for cmd, v in lat[name].items()}
        out[name] = {"wrapped": (med[FOUR_RUNS] - med["echo x"]) / 4}
        if FOUR_BARE in med:
            out[name]["unwrapped"] = (med[FOUR_BARE] - med["echo x"]) / 4
    return out


def bare_p50(bash, command, n):
    """The same command in the patched Bash alone: no server, no wrapper."""
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([bash, "-c", command], stdout=subprocess.DEVNULL, check=True)
        lat.append(time.perf_counter() - t)
    return common.pct(lat, 0.5) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--execgate", required=True)
    ap.add_argument("--reference")
    ap.add_argument("--previous", help="an older execgate build's server, measured alongside")
    ap.add_argument("--calls", type=int, default=800)
    ap.add_argument("--seq", type=int, default=200)
    args = ap.parse_args()

    scratch = tempfile.mkdtemp(prefix="execgate-escbench-")
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
    update = {"sandboxPolicy": policy, "sandboxCwd": workdir, "codexLinuxSandboxExe": None}
    env = dict(os.environ, CODEX_HOME=os.path.join(scratch, "codex-home"), HOME=home)

    servers = []
    if args.reference:
        vendor = os.path.join(args.reference, "node_modules/@openai/codex-shell-tool-mcp/vendor/"
                              "x86_64-unknown-linux-musl")
        codex = os.path.join(args.reference, "node_modules/@openai/codex/vendor/"
                             "x86_64-unknown-linux-musl/codex/codex")
        link = os.path.join(scratch, "codex-linux-sandbox")
        os.symlink(os.path.realpath(codex), link)
        servers.append(("reference 0.97.0",
                        [os.path.join(vendor, "codex-exec-mcp-server"),
                         "--bash", os.path.join(vendor, "bash/debian-12/bash")],
                        dict(update, codexLinuxSandboxExe=link)))
    if args.previous:
        servers.append(("execgate previous", [args.previous], update))
    servers.append(("execgate", [args.execgate], update))
    clients = {name: common.start(argv, env, upd, name) for name, argv, upd in servers}
    work = [("touch a; ls; echo x", "x\n"), ("echo x", "x\n")]
    res = {(name, cmd): [0.0, []] for name in clients for cmd, _ in work}
    for name, c in clients.items():  # warm-up
        for cmd, want in work:
            block(c, workdir, cmd, want, 16)
    blocks = 8
    for _ in range(blocks):
        for cmd, want in work:
            for name, c in clients.items():
                t, lat = block(c, workdir, cmd, want, args.calls // blocks)
                res[(name, cmd)][0] += t
                res[(name, cmd)][1] += lat
    # Run execs, one call at a time: what the wrapper adds per exec
    seq = run_exec_costs(clients, workdir, args.seq)
    for c in clients.values():
        c.close()
    bash = os.path.join(os.path.dirname(args.execgate), "..", "subprojects", "bash", "bash")
    bare = (bare_p50(bash, FOUR_RUNS, args.seq) - bare_p50(bash, "echo x", args.seq)) / 4
    print(f"one Run exec (/bin/true), p50 of sequential calls (4 execs each) minus `echo x`, "
          f"per exec: bare patched bash outside the sandbox (no server, no wrapper) "
          f"{bare:.3f} ms")
    for name, d in seq.items():
        line = f"  {name:18} {d['wrapped']:.3f} ms, {d['wrapped'] - bare:+.3f} ms over the bare exec"
        if "unwrapped" in d:
            line += (f"; in its sandbox without the wrapper {d['unwrapped']:.3f} ms: "
                     f"the wrapper adds {d['wrapped'] - d['unwrapped']:+.3f} ms")
        print(line)
    print(f"{'server':18} {'command':22} {'8x c/s':>8} {'p99 ms':>8}")
    rate = {}
    for (name, cmd), (t, lat) in res.items():
        rate[(name, cmd)] = len(lat) / t
        print(f"{name:18} {cmd:22} {len(lat) / t:8.0f} {common.pct(lat, 0.99) * 1000:8.2f}")
    if args.reference:
        for cmd, _ in work:
            print(f"ratio execgate/reference, {cmd!r}: "
                  f"{rate[('execgate', cmd)] / rate[('reference 0.97.0', cmd)]:.2f}")
    if args.previous:
        for cmd, _ in work:
            print(f"ratio execgate/previous, {cmd!r}: "
                  f"{rate[('execgate', cmd)] / rate[('execgate previous', cmd)]:.2f}")


if __name__ == "__main__":
    main()
