#!/usr/bin/env python3
"""bench/exec_command.py: a background process against a shell call, same run.

    bench/exec_command.py --execgate build-bench/server/execgate \
        [--rounds 200] [--idle 50]

Latency: `exec_command` of `echo hi` (it returns at the command's end, with
its output) against a `shell` call of the same command, alternated call by
call on one server (workspace-write, network off, login=false, as
bench/server.py's): p50 and p90 of each and the ratio exec/shell.  Then a
process that keeps running (`echo hi; exec sleep 1000`): the time until its
first output has been read (exec_command with yield_time_ms 0, then
write_stdin with yield_time_ms 0 until `hi` came) and until kill_process
answered.

Memory: the server's resident set (VmRSS, after a settling pause) with no
background process, then with --idle idle ones (`exec sleep 1000`, each
started and read once), each measured twice; printed: the difference per
process, which is what one idle process costs the server besides its ring
(the ring grows only with unread output, and these print nothing).
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server import Client, pct  # noqa: E402


def tool(c, name, args):
    a = c.wait(c.request("tools/call", {"name": name, "arguments": args}))
    r = a.get("result")
    if not r:
        raise RuntimeError(f"{name} failed: {a}")
    return r


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--execgate", required=True)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--idle", type=int, default=50)
    o = ap.parse_args()
    wd = tempfile.mkdtemp(prefix="execgate-bench-exec-")
    argv = [o.execgate, "--rules", "/dev/null", "--max-background", str(o.idle + 1)]
    c = Client(argv)
    c.initialize()
    c.wait(c.request("codex/sandbox-state/update", {
        "sandboxPolicy": {"type": "workspace-write", "network_access": False}, "sandboxCwd": wd}))

    shell, exe = [], []
    for i in range(o.rounds + 5):
        t = time.perf_counter()
        r = tool(c, "shell", {"command": "echo hi", "workdir": wd, "login": False})
        ts = time.perf_counter() - t
        assert r["structuredContent"]["output"] == "hi\n", r
        t = time.perf_counter()
        r = tool(c, "exec_command", {"cmd": "echo hi", "workdir": wd, "login": False})
        te = time.perf_counter() - t
        assert r["structuredContent"]["output"] == "hi\n" and r["structuredContent"]["exit_code"] == 0, r
        if i >= 5:  # warm-up left out
            shell.append(ts)
            exe.append(te)
    ms = lambda v: v * 1000  # noqa: E731
    print(f"shell 'echo hi'         p50 {ms(pct(shell, .5)):7.2f} ms  p90 {ms(pct(shell, .9)):7.2f} ms")
    print(f"exec_command 'echo hi'  p50 {ms(pct(exe, .5)):7.2f} ms  p90 {ms(pct(exe, .9)):7.2f} ms")
    print(f"ratio exec/shell        p50 {pct(exe, .5) / pct(shell, .5):.2f}  "
          f"p90 {pct(exe, .9) / pct(shell, .9):.2f}")

    first, kill = [], []
    for i in range(min(o.rounds, 50)):
        t = time.perf_counter()
        r = tool(c, "exec_command", {"cmd": "echo hi; exec sleep 1000", "workdir": wd,
                                     "login": False, "yield_time_ms": 0})
        sid = r["structuredContent"]["session_id"]
        out = r["structuredContent"]["output"]
        while "hi" not in out:
            out += tool(c, "write_stdin", {"session_id": sid, "yield_time_ms": 0})["structuredContent"]["output"]
        first.append(time.perf_counter() - t)
        t = time.perf_counter()
        tool(c, "kill_process", {"session_id": sid})
        kill.append(time.perf_counter() - t)
    print(f"running process, first output read  p50 {ms(statistics.median(first)):7.2f} ms "
          f"({pct(first, .5) / pct(shell, .5):.2f}x the shell call)")
    print(f"kill_process answered               p50 {ms(statistics.median(kill)):7.2f} ms")

    def settled_rss():
        time.sleep(1.0)
        return rss_kb(c.p.pid)

    base = [settled_rss(), settled_rss()]
    ids = []
    for i in range(o.idle):
        r = tool(c, "exec_command", {"cmd": "exec sleep 1000", "workdir": wd, "login": False,
                                     "yield_time_ms": 0})
        ids.append(r["structuredContent"]["session_id"])
    for sid in ids:  # each read once: nothing is waiting in it
        tool(c, "write_stdin", {"session_id": sid, "yield_time_ms": 0})
    loaded = [settled_rss(), settled_rss()]
    per = (min(loaded) - min(base)) / o.idle
    print(f"server RSS: {min(base)} KiB with no process, {min(loaded)} KiB with {o.idle} idle: "
          f"{per:.1f} KiB per idle process")
    for sid in ids:
        tool(c, "kill_process", {"session_id": sid})
    c.close()
    shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    main()
