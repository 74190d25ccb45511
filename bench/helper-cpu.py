#!/usr/bin/env python3
"""bench/helper-cpu.py: CPU time of one helper spawn, helper builds side by side.

    bench/helper-cpu.py [--rounds 15] [--runs 20] LABEL=PATH/execgate-sandbox...

Each round, each helper in turn (the order rotated every round) runs
`/bin/true` --runs times under bench/server.py's workspace-write policy
(network off, a scratch directory as sandbox cwd), counted by `perf stat -e
task-clock` (the helper, its init and the command, from the helper's start
to its exit: the namespaces' teardown included).  Printed per helper: the
median over the rounds of the mean per spawn, in ms, and its ratio against
the first.  On a machine shared with other jobs the rounds interleave the
builds, so a change of load moves them alike; a build's own change shows
within a few percent.  Needs perf(1) and kernel.perf_event_paranoid <= 2.
"""
import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile


def spawn_ms(helper, policy, cwd, runs):
    """Mean task-clock (ms) of runs spawns, from perf stat's CSV line."""
    argv = ["perf", "stat", "-x,", "-e", "task-clock", "-r", str(runs), helper,
            "--policy", policy, "--cwd", cwd, "--", "/bin/true"]
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"{helper}: exit {done.returncode}: {done.stderr.strip()}")
    for line in done.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2] == "task-clock":
            return float(fields[0])
    sys.exit(f"{helper}: no task-clock in perf's output: {done.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("helpers", nargs="+", metavar="LABEL=EXECGATE_SANDBOX")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--runs", type=int, default=20, help="spawns per perf stat")
    args = ap.parse_args()
    if shutil.which("perf") is None:
        sys.exit("perf is not installed")
    helpers = [h.partition("=")[::2] for h in args.helpers]
    scratch = tempfile.mkdtemp(prefix="execgate-helper-cpu-")
    try:
        policy = json.dumps({"type": "workspace-write", "writable_roots": [],
                             "network_access": False, "exclude_tmpdir_env_var": False,
                             "exclude_slash_tmp": False, "sandboxCwd": scratch})
        res = {label: [] for label, _ in helpers}
        for r in range(args.rounds):
            order = helpers[r % len(helpers):] + helpers[:r % len(helpers)]
            for label, path in order:
                res[label].append(spawn_ms(path, policy, scratch, args.runs))
        base = statistics.median(res[helpers[0][0]])
        print(f"{'helper':24} {'ms/spawn':>9} {'ratio':>6}")
        for label, _ in helpers:
            med = statistics.median(res[label])
            print(f"{label:24} {med:9.3f} {med / base:6.3f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
