#!/usr/bin/env python3
"""bench/escalation.py: the escalated path, execgate beside the reference.

    bench/escalation.py --execgate build-bench/server/execgate \
        [--reference /tmp/execgate-ref] [--previous OLD/server/execgate] \
        [--calls 800] [--rounds 15] [--loop 300]

Command `touch a; ls; echo x` with a rule `prefix_rule(["touch"], allow)`:
touch is escalated (run by the server, outside the sandbox), ls runs in
the sandbox after asking the server, echo is a builtin.  8 calls in flight,
calls/s and p99, blocks alternating between the servers so that machine
load hits both; also `echo x` alone (no exec) as the in-run baseline of
each server.  Same workspace-write update, same rules file, same empty
HOME for both.  Uses bench/server.py's client.

What one exec decided Run costs: calls of --loop execs of /bin/true each,
timed inside the shell ($EPOCHREALTIME), --rounds calls per variant,
alternating between servers and variants: through the wrapper and, for
execgate servers, with EXEC_WRAPPER empty (the patched Bash then starts no
wrapper): the same execs in the same sandbox without it. Also the CPU of
the whole server tree (/proc: utime + stime + cutime + cstime) per exec,
which load from elsewhere on the machine moves much less than wall time,
and the same loop in the patched Bash alone. Then, 8 in flight, the CPU per call of
commands that isolate the exec path (`ls` Run, `touch` escalated, each
with and without the wrapper).
--previous: another execgate build (an older commit), measured in the same
run as one more server, for before/after figures.
--shell-mode: the same execgate with --exec-enforcement=shell as one more
server, so that what tree enforcement costs is measured in the same run.
--zsh: the same execgate with --shell zsh (the patched zsh runs the
commands) as one more server, in the calls/s blocks only (the exec loops
and the CPU split time the Bash's $EPOCHREALTIME).
--scratch DIR: where the world (workdir, CODEX_HOME, HOME) is made; in /tmp
(the default) CODEX_HOME lies in a writable root and every call's sandbox
binds it read-only; /var/tmp is outside, as ~/.codex usually is.
The CPU lines also give the server process's own CPU per call (utime +
stime of the server alone) beside the whole tree's.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server as common  # noqa: E402

RULES = 'prefix_rule(pattern=["touch"], decision="allow")\n'
ZSH = "execgate zsh"


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


def loop_cmd(n, prefix=""):
    """n execs of /bin/true in one call, timed inside the shell."""
    return (f's=$EPOCHREALTIME; for i in {{1..{n}}}; do {prefix}/bin/true; done; '
            f'e=$EPOCHREALTIME; echo "$s $e"; echo x')


def loop_ms(output, n):
    s, e = output.split()[:2]
    return (float(e) - float(s)) / n * 1000


def run_exec_costs(clients, workdir, rounds, n):
    """Per server, per exec: wall time (median over rounds) and CPU of the
    whole server tree (mean) of one Run exec through the wrapper and, for
    execgate (EXEC_WRAPPER empty: the patched Bash starts no wrapper),
    without it in the same sandbox.  Rounds alternate between servers and
    variants so that machine load hits all alike."""
    variants = {name: [("wrapped", "")] + ([("unwrapped", "EXEC_WRAPPER= ")]
                                           if name.startswith("execgate") else [])
                for name in clients}
    wall = {name: {v: [] for v, _ in variants[name]} for name in clients}
    cpu = {name: {v: [] for v, _ in variants[name]} for name in clients}
    for r in range(rounds + 1):
        for name, c in clients.items():
            for v, prefix in variants[name]:
                before = tree_cpu_s(c.p.pid)
                a = c.wait(c.request("tools/call", params(workdir, loop_cmd(n, prefix))))
                after = tree_cpu_s(c.p.pid)
                check(a, "x\n")
                if r == 0:  # warm-up
                    continue
                out = json.loads(a["result"]["content"][0]["text"])["output"]
                wall[name][v].append(loop_ms(out, n))
                cpu[name][v].append((after - before) / n * 1000)
    return {name: {v: (statistics.median(wall[name][v]), statistics.mean(cpu[name][v]))
                   for v in wall[name]} for name in clients}


def tree_cpu_s(pid):
    """CPU seconds of a server and of every descendant it and they reaped
    (utime + stime + cutime + cstime): the server, the sandbox helpers, the
    Bashes, wrappers and programs, escalated ones included."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


CPU_CMDS = [
    ("echo x", "no exec"),
    ("ls; echo x", "ls, Run through the wrapper"),
    ("EXEC_WRAPPER= ls; echo x", "ls in the sandbox, no wrapper"),
    ("touch a; echo x", "touch, escalated"),
    ("EXEC_WRAPPER= touch a; echo x", "touch in the sandbox, no wrapper"),
]


def server_cpu_s(pid):
    """CPU seconds of the server process alone (utime + stime)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:13]) / os.sysconf("SC_CLK_TCK")


def cpu_split(clients, workdir, n):
    """CPU per call (whole server tree, and the server alone; 8 in flight)
    for commands that isolate the exec path; blocks alternate between
    servers."""
    cpu = {name: {cmd: 0.0 for cmd, _ in CPU_CMDS} for name in clients}
    own = {name: {cmd: 0.0 for cmd, _ in CPU_CMDS} for name in clients}
    calls = {name: {cmd: 0 for cmd, _ in CPU_CMDS} for name in clients}
    for _ in range(4):
        for cmd, _ in CPU_CMDS:
            for name, c in clients.items():
                before, before_own = tree_cpu_s(c.p.pid), server_cpu_s(c.p.pid)
                block(c, workdir, cmd, "x\n", n // 4)
                # the last calls' processes are reaped before their answers
                cpu[name][cmd] += tree_cpu_s(c.p.pid) - before
                own[name][cmd] += server_cpu_s(c.p.pid) - before_own
                calls[name][cmd] += n // 4
    return {name: {cmd: (1000 * cpu[name][cmd] / calls[name][cmd],
                         1000 * own[name][cmd] / calls[name][cmd]) for cmd, _ in CPU_CMDS}
            for name in clients}


def bare_loop(bash, rounds, n):
    """The same loop in the patched Bash alone: no server, no sandbox."""
    wall, cpu = [], []
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([bash, "-c", loop_cmd(n)], capture_output=True, check=True).stdout
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall.append(loop_ms(out.decode(), n))
        cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / n * 1000)
    return statistics.median(wall), statistics.mean(cpu)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--execgate", required=True)
    ap.add_argument("--reference")
    ap.add_argument("--previous", help="an older execgate build's server, measured alongside")
    ap.add_argument("--shell-mode", action="store_true",
                    help="also this execgate with --exec-enforcement=shell")
    ap.add_argument("--zsh", action="store_true",
                    help="also the same execgate with --shell zsh, in the calls/s blocks")
    ap.add_argument("--calls", type=int, default=800)
    ap.add_argument("--rounds", type=int, default=15, help="calls per Run-exec variant")
    ap.add_argument("--loop", type=int, default=300, help="execs per such call")
    ap.add_argument("--scratch", help="where the world is made (default /tmp: CODEX_HOME is then "
                    "in a writable root, which the server keeps read-only in each call's "
                    "sandbox; /var/tmp: outside, as ~/.codex usually is)")
    args = ap.parse_args()

    scratch, workdir, env, update = common.workspace("execgate-escbench-", RULES, args.scratch)
    servers = []
    if args.reference:
        ref_argv, ref_update = common.reference_server(args.reference, scratch, update)
        servers.append((common.REFERENCE, ref_argv, ref_update))
    if args.previous:
        servers.append(("execgate previous", [args.previous], update))
    if args.shell_mode:
        servers.append(("execgate shell-mode", [args.execgate, "--exec-enforcement=shell"],
                        update))
    if args.zsh:
        servers.append((ZSH, [args.execgate, "--shell", "zsh"], update))
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
    bash_clients = {k: v for k, v in clients.items() if k != ZSH}
    seq = run_exec_costs(bash_clients, workdir, args.rounds, args.loop)
    split = cpu_split({k: v for k, v in bash_clients.items() if k.startswith("execgate")},
                      workdir, args.calls // 2)
    for c in clients.values():
        c.close()
    bash = os.path.join(os.path.dirname(args.execgate), "..", "subprojects", "shells", "bash")
    bare_wall, bare_cpu = bare_loop(bash, args.rounds, args.loop)
    print(f"one Run exec of /bin/true, {args.loop} in a loop per call, {args.rounds} calls: "
          f"wall ms per exec (median) / CPU ms per exec (whole tree)")
    print(f"  {'patched bash alone':26} {bare_wall:.3f} / {bare_cpu:.3f}  (no server, no sandbox)")
    for name, d in seq.items():
        w, c = d["wrapped"]
        line = (f"  {name + ', wrapped':26} {w:.3f} / {c:.3f}  ({w - bare_wall:+.3f} / "
                f"{c - bare_cpu:+.3f} over bash alone)")
        if "unwrapped" in d:
            uw, uc = d["unwrapped"]
            line += (f"\n  {name + ', no wrapper':26} {uw:.3f} / {uc:.3f}  (same sandbox): "
                     f"the wrapper adds {w - uw:+.3f} / {c - uc:+.3f}")
        print(line)
    print("CPU per call, whole server tree (the server alone), 8 in flight (ms):")
    for name, per in split.items():
        print(f"  {name}: " + ", ".join(f"{cmd!r} {v:.2f} ({o:.2f})"
                                        for cmd, (v, o) in per.items()))
    print(f"{'server':18} {'command':22} {'8x c/s':>8} {'p99 ms':>8}")
    rate = {}
    for (name, cmd), (t, lat) in res.items():
        rate[(name, cmd)] = len(lat) / t
        print(f"{name:18} {cmd:22} {len(lat) / t:8.0f} {common.pct(lat, 0.99) * 1000:8.2f}")
    def ratios(label, a, b):
        for cmd, _ in work:
            print(f"ratio {label}, {cmd!r}: {rate[(a, cmd)] / rate[(b, cmd)]:.2f}")

    if args.reference:
        ratios("execgate/reference", "execgate", common.REFERENCE)
    if args.previous:
        ratios("execgate/previous", "execgate", "execgate previous")
        if args.reference:
            ratios("previous/reference", "execgate previous", common.REFERENCE)
    if args.shell_mode:
        ratios("execgate tree/shell mode", "execgate", "execgate shell-mode")
    if args.zsh:
        ratios("execgate zsh/bash", ZSH, "execgate")
        if args.reference:
            ratios("execgate zsh/reference", ZSH, common.REFERENCE)


if __name__ == "__main__":
    main()
