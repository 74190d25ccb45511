#!/usr/bin/env python3
"""bench/call_steps.py: where one `shell` call's time goes, step by step.

    bench/call_steps.py PATH/server/execgate [ARG...] [--calls 100] [--warmup 10]

Runs the server given (any build: its command line is the words before
the options), sends it `echo hi` calls one at a time under the same
workspace-write policy as bench/server.py, and records kernel events of
the server and everything it starts through a tracefs instance of its own
(no extra package: scheduler events and a few system calls' entries, on
the monotonic clock, the one Python's time.monotonic reads).  Each call
is cut into the steps between these marks, found in its time window:

    sent           the client writes the request
    fork           the server forks the call's child
    helper exec    that child execs the sandbox helper
    unshare        the helper's first unshare (namespaces)
    mounts         its first mount system call (the read-only world)
    chdir          the command process's chdir (mounts, init, /proc done)
    landlock       landlock_create_ruleset
    seccomp        the first seccomp of the helper's tree
    shell exec     the execve/execveat of the shell starts
    shell runs     the kernel has exec'd the shell
    shell exit     the shell's exit
    init exit      the exit of the shell's parent (the PID namespace's init)
    helper exit    the exit of the server's child
    answer         the server writes the answer (fd 1)
    received       the client has read it

and prints, for each step, its median over the calls in microseconds and
its share of the median total.  A mark a build does not have (a launcher
started once has no helper exec per call) leaves its step out: the time
goes to the next step found.  Needs root (tracefs); the machine's load
shifts the figures, so compare builds in one run of each, interleaved
where it matters, and read shares rather than absolute values.
"""
import argparse
import os
import re
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server import check, call_params, start, workspace  # noqa: E402

TRACEFS = "/sys/kernel/tracing"
EVENTS = [
    "sched/sched_process_fork", "sched/sched_process_exec", "sched/sched_process_exit",
    "syscalls/sys_enter_unshare", "syscalls/sys_enter_mount", "syscalls/sys_enter_open_tree",
    "syscalls/sys_enter_move_mount", "syscalls/sys_enter_chdir",
    "syscalls/sys_enter_landlock_create_ruleset", "syscalls/sys_enter_seccomp",
    "syscalls/sys_enter_execve", "syscalls/sys_enter_execveat",
    "syscalls/sys_enter_write", "syscalls/sys_enter_writev",
]
STEPS = ["sent", "fork", "helper exec", "unshare", "mounts", "chdir", "landlock", "seccomp",
         "shell exec", "shell runs", "shell exit", "init exit", "helper exit", "answer",
         "received"]
NAMES = {  # the step that ends at each mark
    "fork": "server request handling",
    "helper exec": "the child before the helper",
    "unshare": "helper start-up",
    "mounts": "namespaces",
    "chdir": "mounts, init, /proc",
    "landlock": "chdir, capabilities",
    "seccomp": "Landlock",
    "shell exec": "seccomp, listener hand-over",
    "shell runs": "the shell's exec",
    "shell exit": "the shell's run",
    "init exit": "exit to init exit",
    "helper exit": "helper release",
    "answer": "the server noticing, answering",
    "received": "the answer to the client",
}
# "comm-pid [cpu] flags time: event: details", or for a system call's
# entry "time: sys_NAME(args)"
LINE = re.compile(r"-(\d+)\s+\[\d+\].*?\s(\d+\.\d+):\s+(\w+)(:\s?|\()(.*)$")


class Trace:
    """A tracefs instance that follows one process and its descendants."""

    def __init__(self):
        self.dir = os.path.join(TRACEFS, "instances", f"call-steps-{os.getpid()}")
        os.mkdir(self.dir)
        self.put("trace_clock", "mono")
        self.put("buffer_size_kb", "16384")
        self.put("options/event-fork", "1")
        for e in EVENTS:
            self.put(f"events/{e}/enable", "1")
        self.put("events/syscalls/sys_enter_write/filter", "fd == 1")
        self.put("events/syscalls/sys_enter_writev/filter", "fd == 1")

    def put(self, name, value):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(value)

    def follow(self, pid):
        """pid and its children living now (a launcher the server started
        before the trace began); what they fork from now on follows."""
        pids = [str(pid)]
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                pids += f.read().split()
        except OSError:
            pass
        self.put("set_event_pid", " ".join(pids))
        self.put("tracing_on", "1")

    def lines(self):
        self.put("tracing_on", "0")
        with open(os.path.join(self.dir, "trace")) as f:
            return f.read().splitlines()

    def close(self):
        try:
            self.put("tracing_on", "0")
            for e in EVENTS:
                self.put(f"events/{e}/enable", "0")
        finally:
            os.rmdir(self.dir)


def parse(lines):
    """(time, pid, event, details) for each event line, in time order."""
    out = []
    for line in lines:
        m = LINE.search(line)
        if m:
            ev = m.group(3)
            if m.group(4) == "(" and ev.startswith("sys_"):
                ev = "sys_enter_" + ev[4:]
            out.append((float(m.group(2)), int(m.group(1)), ev, m.group(5)))
    out.sort(key=lambda e: e[0])
    return out


def field(details, name):
    m = re.search(rf"\b{name}(?:=|: )([^\s,)]+)", details)
    return m.group(1) if m else None


def marks(events, server, t_sent, t_recv):
    """The marks of one call: {mark: time}, from its events.  Every event
    but the server's is of the call (the instance follows the server's
    tree only); the call's top process is the first one forked in its
    window, by the server or, in a build with a launcher started once, by
    the launcher."""
    m = {"sent": t_sent, "received": t_recv}
    parent, top, shell = {}, None, None
    for t, pid, ev, d in events:
        if ev == "sched_process_fork":
            c = int(field(d, "child_pid"))
            parent[c] = int(field(d, "pid"))
            if top is None:
                top = c
                m["fork"] = t
            continue
        if ev == "sched_process_exec":
            epid = int(field(d, "pid"))
            name = field(d, "filename") or ""
            if epid == top and "execgate-sandbox" in name:
                m.setdefault("helper exec", t)
            elif epid != server and "seccomp" in m and shell is None:
                shell = epid
                m["shell runs"] = t
            continue
        if pid == server:
            if ev in ("sys_enter_write", "sys_enter_writev") and "helper exit" in m:
                m.setdefault("answer", t)
            continue
        if ev == "sys_enter_unshare":
            m.setdefault("unshare", t)
        elif ev in ("sys_enter_mount", "sys_enter_open_tree", "sys_enter_move_mount"):
            m.setdefault("mounts", t)
        elif ev == "sys_enter_chdir" and "mounts" in m:
            m.setdefault("chdir", t)
        elif ev == "sys_enter_landlock_create_ruleset":
            m.setdefault("landlock", t)
        elif ev == "sys_enter_seccomp":
            m.setdefault("seccomp", t)
        elif ev in ("sys_enter_execve", "sys_enter_execveat") and "seccomp" in m:
            m.setdefault("shell exec", t)
        elif ev == "sched_process_exit":
            xpid = int(field(d, "pid"))
            if shell is not None and xpid == shell:
                m.setdefault("shell exit", t)
            elif shell is not None and xpid == parent.get(shell) and xpid != top:
                m["init exit"] = t
            elif xpid == top:
                m.setdefault("helper exit", t)
    return m


def steps_of(m):
    """{step name: µs} for the marks found, each from the previous found."""
    out, prev = {}, None
    for mark in STEPS:
        if mark not in m:
            continue
        if prev is not None and m[mark] >= m[prev]:
            out[mark] = (m[mark] - m[prev]) * 1e6
        prev = mark
    return out


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip())
    ap.add_argument("server", nargs="+", help="the server's command line")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(TRACEFS, "instances")):
        sys.exit(f"call_steps: no tracefs at {TRACEFS} (root and a mounted tracefs are needed)")
    scratch, workdir, env, update = workspace("execgate-call-steps-")
    trace = Trace()
    c = None
    try:
        c = start(args.server, env, update, "server")
        for _ in range(args.warmup):
            check(c.wait(c.request("tools/call", call_params(workdir))))
        trace.follow(c.p.pid)
        windows = []
        for _ in range(args.calls):
            t0 = time.monotonic()
            check(c.wait(c.request("tools/call", call_params(workdir))))
            windows.append((t0, time.monotonic()))
        events = parse(trace.lines())
    finally:
        if c is not None:
            c.close()
        trace.close()
        shutil.rmtree(scratch, ignore_errors=True)
    per_step = {s: [] for s in STEPS}
    totals = []
    i = 0
    for t0, t1 in windows:
        while i < len(events) and events[i][0] < t0:
            i += 1
        j = i
        while j < len(events) and events[j][0] <= t1:
            j += 1
        for s, us in steps_of(marks(events[i:j], c.p.pid, t0, t1)).items():
            per_step[s].append(us)
        totals.append((t1 - t0) * 1e6)
        i = j
    total = statistics.median(totals)
    print(f"{' '.join(args.server)}: {len(windows)} calls, p50 {total:.0f} us per call")
    print(f"{'step':34} {'p50 us':>8} {'share':>6} {'calls':>6}")
    summed = 0.0
    for s in STEPS[1:]:
        v = per_step[s]
        if not v:
            continue
        med = statistics.median(v)
        summed += med
        print(f"{NAMES[s]:34} {med:8.0f} {100 * med / total:5.1f}% {len(v):6}")
    # medians do not add up to the median of the sums: the rest is in the
    # slow calls' tails, which a loaded machine makes long
    print(f"{'the steps medians, added':34} {summed:8.0f} {100 * summed / total:5.1f}%")


if __name__ == "__main__":
    main()
