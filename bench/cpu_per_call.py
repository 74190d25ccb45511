#!/usr/bin/env python3
"""bench/cpu_per_call.py: CPU time per `shell` call, builds side by side.

    bench/cpu_per_call.py 'LABEL=PATH/server/execgate [ARG...]' [LABEL=...]... \
        [--rounds 8] [--seq 100] [--par 320]

Each server runs in a cgroup of its own (cgroup v1 cpuacct, or a v2 cgroup
beside this process), which also holds everything it starts: helpers,
shells, the commands.  The servers get the same workspace-write policy as
bench/server.py's (network off) and answer `echo hi`.  Each round, each
server in turn (the order rotated every round) answers --seq calls one at
a time and then --par calls with 16 in flight; the cgroup's CPU time
across each block, divided by its calls, is the CPU cost of one call,
which the load of other programs on a shared machine changes far less
than it changes wall-clock time.  Printed per server: seq p50 (ms), calls/s
with 16 in flight, and CPU us per call in each block kind (median of the
rounds), then each of them as a ratio against the first server.
"""
import argparse
import os
import shlex
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server import block_in_flight, one_call, pct, start, workspace  # noqa: E402


class CpuGroup:
    """A cgroup to put one server in, and its CPU time so far (us)."""

    def __init__(self, name):
        v1 = "/sys/fs/cgroup/cpuacct"
        if os.path.exists(os.path.join(v1, "cpuacct.usage")):
            self.path = os.path.join(v1, name)
            self.usage = self._v1_usage
        else:
            with open("/proc/self/cgroup") as f:
                own = [l.split(":", 2)[2].strip() for l in f if l.startswith("0::")][0]
            self.path = os.path.join("/sys/fs/cgroup" + own, name)
            self.usage = self._v2_usage
        os.mkdir(self.path)
        self.procs = os.path.join(self.path, "cgroup.procs")

    def _v1_usage(self):
        with open(os.path.join(self.path, "cpuacct.usage")) as f:
            return int(f.read()) / 1000.0

    def _v2_usage(self):
        with open(os.path.join(self.path, "cpu.stat")) as f:
            for line in f:
                if line.startswith("usage_usec "):
                    return float(line.split()[1])
        raise RuntimeError("no usage_usec in cpu.stat")

    def argv(self, server):
        # the server joins the cgroup before it execs: all it starts is counted
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', self.procs] + server

    def remove(self):
        # the last processes may still be on their way out
        for _ in range(50):
            with open(self.procs) as f:
                if not f.read().strip():
                    break
            time.sleep(0.05)
        # the server's own directories below (v2) go first
        for root, dirs, _ in os.walk(self.path, topdown=False):
            for d in dirs:
                try:
                    os.rmdir(os.path.join(root, d))
                except OSError:
                    pass
        try:
            os.rmdir(self.path)
        except OSError as e:
            print(f"leaving {self.path}: {e}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("servers", nargs="+", metavar="LABEL=EXECGATE")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seq", type=int, default=100, help="calls one at a time per block")
    ap.add_argument("--par", type=int, default=320, help="calls 16 in flight per block")
    args = ap.parse_args()

    scratch, workdir, env, update = workspace("execgate-cpu-")
    groups, clients, res = {}, {}, {}
    try:
        for spec in args.servers:
            label, _, words = spec.partition("=")
            g = CpuGroup(f"execgate-cpu-{os.getpid()}-{len(groups)}")
            groups[label] = g
            clients[label] = start(g.argv(shlex.split(words)), env, update, label)
            res[label] = {"seq": [], "seq_cpu": [], "par_n": 0, "par_t": 0.0, "par_cpu": []}
        for _ in range(20):  # warm-up
            for c in clients.values():
                one_call(c, workdir)
        labels = list(clients)
        for r in range(args.rounds):
            order = labels[r % len(labels):] + labels[:r % len(labels)]
            for label in order:
                c, g, out = clients[label], groups[label], res[label]
                u0 = g.usage()
                out["seq"] += [one_call(c, workdir) for _ in range(args.seq)]
                u1 = g.usage()
                t, lat = block_in_flight(c, workdir, args.par)
                u2 = g.usage()
                out["seq_cpu"].append((u1 - u0) / args.seq)
                out["par_cpu"].append((u2 - u1) / args.par)
                out["par_n"] += len(lat)
                out["par_t"] += t
        rows = []
        for label in labels:
            out = res[label]
            rows.append((label, pct(out["seq"], 0.5) * 1000, out["par_n"] / out["par_t"],
                         statistics.median(out["seq_cpu"]), statistics.median(out["par_cpu"])))
        print(f"{'server':24} {'seq p50 ms':>10} {'calls/s':>8} {'cpu us seq':>10} "
              f"{'cpu us par':>10}")
        for row in rows:
            print(f"{row[0]:24} {row[1]:10.2f} {row[2]:8.0f} {row[3]:10.0f} {row[4]:10.0f}")
        base = rows[0]
        for row in rows[1:]:
            print(f"{row[0]} vs {base[0]}: seq p50 {row[1] - base[1]:+.2f} ms, "
                  f"calls/s {row[2] / base[2]:.2f}x, cpu/call seq {row[3] / base[3]:.2f}x "
                  f"({row[3] - base[3]:+.0f} us), par {row[4] / base[4]:.2f}x "
                  f"({row[4] - base[4]:+.0f} us)")
        sys.stdout.flush()
    finally:
        for c in clients.values():
            c.close()
        for g in groups.values():
            g.remove()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
