#!/usr/bin/env python3
"""bench/unix-connect.py: what supervising a sandbox's Unix connects costs.

    bench/unix-connect.py --execgate NEW/server/execgate --previous OLD/server/execgate \
        --client SOCK_CLIENT [--rounds 15] [--connects 2000] [--sendmsg]

SOCK_CLIENT is tests/integration/unix-sockets/sock-client.c built without
sanitizers (`cc -O2 -D_GNU_SOURCE -pthread -o sock-client sock-client.c`).
Each call (workspace-write, network off) starts a stream server in its
workspace and connects to it --connects times, reading its banner each time
(`sock-client loop`): the command prints the time per connect, measured
inside the sandbox.  The two servers take turns, call by call, so load from
elsewhere hits both; the median per connect of each is printed with the
ratio against the previous build, and the median of the whole call.

With --sendmsg the calls send instead (`sock-client msg-loop`): --connects
sendmsg on a socketpair (no address, each read back), then as many to a
datagram server in the workspace (an address); each is timed the same way.
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server import Client  # noqa: E402


def start(server, wd):
    policy = json.dumps({"sandboxPolicy": {"type": "workspace-write", "network_access": False},
                         "sandboxCwd": wd})
    c = Client([server, "--sandbox", policy, "--log-level", "error"])
    c.initialize()
    return c


def one_call(c, wd, command, pattern):
    t0 = time.perf_counter()
    i = c.request("tools/call", {"name": "shell", "arguments": {
        "command": command, "workdir": wd, "login": False, "timeout_ms": 120000}})
    a = c.wait(i)
    elapsed = (time.perf_counter() - t0) * 1000
    text = json.dumps(a)
    m = re.findall(pattern, text)
    if not m:
        raise RuntimeError(f"no timing in the answer: {text[:400]}")
    return [float(x) for x in m], elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--execgate", required=True)
    ap.add_argument("--previous", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--connects", type=int, default=2000)
    ap.add_argument("--sendmsg", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-unix-connect-") as wd:
        if a.sendmsg:
            command = (f"C={a.client}; $C serve-dgram $PWD/d.sock - > ready.txt & "
                       f"while ! grep -q ready ready.txt 2>/dev/null; do :; done; "
                       f"$C msg-loop $PWD/d.sock {a.connects}; kill %1")
            pattern = r"per sendmsg [^:]*: ([0-9.]+) us"
            what = ["us/sendmsg pair", "us/sendmsg addr"]
        else:
            command = (f"C={a.client}; $C serve $PWD/b.sock - banner > ready.txt & "
                       f"while ! grep -q ready ready.txt 2>/dev/null; do :; done; "
                       f"$C loop $PWD/b.sock {a.connects}; kill %1")
            pattern = r"per connect: ([0-9.]+) us"
            what = ["us/connect"]
        servers = [("execgate previous", a.previous), ("execgate", a.execgate)]
        clients = [start(path, wd) for _, path in servers]
        per = [[[] for _ in what], [[] for _ in what]]
        calls = [[], []]
        for r in range(a.rounds + 1):
            for k, c in enumerate(clients):
                us, ms = one_call(c, wd, command, pattern)
                if r > 0:  # the first round warms up
                    for j, v in enumerate(us[: len(what)]):
                        per[k][j].append(v)
                    calls[k].append(ms)
        for c in clients:
            c.close()
    print(f"{a.connects} {'sends of each kind' if a.sendmsg else 'connects'} per call, "
          f"{a.rounds} calls each (median)")
    for j, label_j in enumerate(what):
        base = statistics.median(per[0][j])
        print(f"{'server':<20}{label_j:>17}{'call ms':>10}{'vs previous':>13}")
        for k, (label, _) in enumerate(servers):
            m = statistics.median(per[k][j])
            print(f"{label:<20}{m:>17.2f}{statistics.median(calls[k]):>10.1f}"
                  f"{m / base:>12.2f}x")


if __name__ == "__main__":
    main()
