#!/usr/bin/env python3
"""bench/server.py: execgate beside the reference MCP server, same client, same run.

    bench/server.py --execgate build-bench/server/execgate \
        [--reference /tmp/execgate-ref] [--calls 10000] [--seq 300] [--big 20] \
        [--only-big] [--variant 'LABEL=[NAME=VALUE...] EXTRA ARGS'...] \
        [--previous OLD/server/execgate] [--spaced MS [--spaced-calls 60]] [--script N]

For each server: spawn-to-initialize time (median of 20), `echo hi` one call
at a time (p50/p99), 16 calls in flight (calls/s, p99), and the server's
peak RSS (VmHWM) after --calls calls.  The servers run side by side and
every measurement alternates between them (spawn by spawn, call by call,
block of calls by block), so load from elsewhere on the machine hits both.
--big adds calls that print 20 MB (`seq 1 3000000`), one at a time, to a
fresh server of each kind: p50/p99 and the server's peak RSS (VmHWM, reset
through /proc/PID/clear_refs before each call) during such a call;
--only-big runs just those.  --previous adds an older execgate build as
one more row (before/after in the same run); --variant adds the same
execgate with extra arguments, and with NAME=VALUE words before them in its
environment (`'no cgroups=EXECGATE_TEST_NO_CGROUP=1'`).
--spaced MS measures only calls that come after a pause, as an agent's do:
`echo hi` one call at a time, with MS ms in which the client sends nothing
before each call (the servers take turns, so each one's calls are further
apart still), --spaced-calls per server after 3 warm-up: p50/p99, and
`bash -c 'echo hi'` after the same pause as the baseline.
--script N measures only N calls per server of SCRIPT_COMMAND, a CPU-bound
shell loop (the shell's own speed), one at a time: p50/p99, with Debian's
/bin/bash running it without a server as the baseline.
The baselines `bash -c 'echo hi'` and `bash -c 'seq 1 3000000'`
(fork+exec+wait from this client, no server) are measured in the same run.
Both servers get the same `codex/sandbox-state/update` (workspace-write on
a scratch dir, network off) before any call; calls use login=false.

--reference is a directory where
`npm install @openai/codex-shell-tool-mcp@0.97.0 @openai/codex@0.97.0` ran.
The reference needs `codexLinuxSandboxExe`: a symlink named
codex-linux-sandbox to the Codex binary is made in a scratch dir.
"""
import argparse
import json
import os
import re
import shlex
import select
import statistics
import subprocess
import sys
import tempfile
import time


class Client:
    def __init__(self, argv, env=None, stderr=subprocess.DEVNULL):
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=stderr, env=env, bufsize=0)
        self.buf = b""
        self.next_id = 1
        self.kept = {}

    def send(self, obj):
        self.p.stdin.write((json.dumps(obj) + "\n").encode())

    def request(self, method, params=None):
        i = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return i

    def read_one(self):
        # Each chunk is searched once and the line joined once: appending
        # to one bytes object and searching it all after every read took
        # time quadratic in the answer's size.
        parts, before = [self.buf], 0
        nl = self.buf.find(b"\n")
        while nl < 0:
            r, _, _ = select.select([self.p.stdout], [], [], 60)
            if not r:
                raise TimeoutError("server silent for 60 s")
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
            if not chunk:
                raise EOFError("server closed stdout")
            before += len(parts[-1])
            parts.append(chunk)
            nl = chunk.find(b"\n")
            if nl >= 0:
                nl += before
        buf = b"".join(parts)
        line, self.buf = buf[:nl], buf[nl + 1:]
        return json.loads(line)

    def wait(self, i):
        while i not in self.kept:
            m = self.read_one()
            if "id" in m and "method" not in m:
                self.kept[m["id"]] = m
        return self.kept.pop(i)

    def any_answer(self):
        if self.kept:
            k = next(iter(self.kept))
            return self.kept.pop(k)
        while True:
            m = self.read_one()
            if "id" in m and "method" not in m:
                return m

    def initialize(self):
        i = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "bench", "version": "1"}})
        a = self.wait(i)
        t = time.perf_counter() - self.t0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return a, t

    def rss_peak_kb(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return -1

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def call_params(workdir):
    return {"name": "shell", "arguments": {"command": "echo hi", "workdir": workdir,
                                           "login": False}}


ODD = {"count": 0, "example": ""}


def check(answer):
    r = answer.get("result")
    if not r or r.get("isError"):
        raise RuntimeError(f"call failed: {json.dumps(answer)[:400]}")
    text = r["content"][0]["text"]
    out = json.loads(text)
    if not out["output"].startswith("hi\n"):
        raise RuntimeError(f"unexpected output: {text[:400]}")
    if out["output"] != "hi\n":
        # counted and reported, not hidden (seen: a pyenv hook's complaint)
        ODD["count"] += 1
        ODD["example"] = out["output"][:200]


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def start(argv, env, update, name):
    c = Client(argv, env)
    c.initialize()
    a = c.wait(c.request("codex/sandbox-state/update", update))
    if "result" not in a:
        raise RuntimeError(f"{name}: update refused: {a}")
    return c


def one_call(c, workdir):
    t = time.perf_counter()
    check(c.wait(c.request("tools/call", call_params(workdir))))
    return time.perf_counter() - t


def block_in_flight(c, workdir, n, inflight=16):
    """n calls kept `inflight` outstanding; returns (seconds, latencies)."""
    started = {}
    lat = []
    sent = done = 0
    t0 = time.perf_counter()
    while sent < min(inflight, n):
        started[c.request("tools/call", call_params(workdir))] = time.perf_counter()
        sent += 1
    while done < n:
        a = c.any_answer()
        check(a)
        lat.append(time.perf_counter() - started.pop(a["id"]))
        done += 1
        if sent < n:
            started[c.request("tools/call", call_params(workdir))] = time.perf_counter()
            sent += 1
    return time.perf_counter() - t0, lat


def bench_all(servers, workdir, seq, total):
    """servers: list of (name, argv, env, update).  Every measurement
    alternates between the servers (spawn by spawn, call by call, block by
    block), so that the load of a shared machine hits them alike."""
    res = {name: {"name": name, "init": [], "seq": [], "par_time": 0.0, "par_lat": []}
           for name, _, _, _ in servers}
    for _ in range(20):
        for name, argv, env, _ in servers:
            c = Client(argv, env)
            _, t = c.initialize()
            res[name]["init"].append(t)
            c.close()
    clients = {name: start(argv, env, update, name) for name, argv, env, update in servers}
    for _ in range(20):  # warm-up
        for name, c in clients.items():
            one_call(c, workdir)
    for _ in range(seq):
        for name, c in clients.items():
            res[name]["seq"].append(one_call(c, workdir))
    blocks = 10
    for i in range(blocks):
        for name, c in clients.items():
            n = total // blocks
            t, lat = block_in_flight(c, workdir, n)
            res[name]["par_time"] += t
            res[name]["par_lat"] += lat
    out = []
    for name, c in clients.items():
        r = res[name]
        out.append({
            "name": name,
            "init_ms": statistics.median(r["init"]) * 1000,
            "seq_p50_ms": pct(r["seq"], 0.5) * 1000,
            "seq_p99_ms": pct(r["seq"], 0.99) * 1000,
            "par_calls_per_s": len(r["par_lat"]) / r["par_time"],
            "par_p99_ms": pct(r["par_lat"], 0.99) * 1000,
            "rss_peak_kb": c.rss_peak_kb(),
            "calls": 20 + seq + len(r["par_lat"]),
        })
        if ODD["count"]:
            print(f"{ODD['count']} calls had extra output, e.g. {ODD['example']!r}", flush=True)
            ODD["count"] = 0
        c.close()
    return out


BIG_COMMAND = "seq 1 3000000"


def check_big(answer):
    """The answer to BIG_COMMAND: exit 0 and its first lines (the reference
    keeps the first 1.2 MB and no tail, execgate head and tail)."""
    r = answer.get("result")
    if not r or r.get("isError"):
        raise RuntimeError(f"big call failed: {json.dumps(answer)[:400]}")
    text = r["content"][0]["text"]
    if not text.startswith('{"exit_code":0,"output":"1\\n2\\n3\\n'):
        raise RuntimeError(f"unexpected big output: {text[:200]} ... {text[-200:]}")


def reset_peak_rss(c):
    # "5" resets VmHWM to the current RSS (proc(5), clear_refs)
    with open(f"/proc/{c.p.pid}/clear_refs", "w") as f:
        f.write("5")


def bench_big(servers, workdir, n):
    """n calls of BIG_COMMAND per server, one at a time, alternating
    between fresh servers; each call's peak RSS is the server's VmHWM after
    the answer, reset before the call."""
    clients = {name: start(argv, env, update, name) for name, argv, env, update in servers}
    lat = {name: [] for name in clients}
    rss = {name: [] for name in clients}
    params = {"name": "shell", "arguments": {"command": BIG_COMMAND, "workdir": workdir,
                                             "login": False}}
    for i in range(n + 2):  # the first two are a warm-up
        for name, c in clients.items():
            reset_peak_rss(c)
            t = time.perf_counter()
            check_big(c.wait(c.request("tools/call", params)))
            if i >= 2:
                lat[name].append(time.perf_counter() - t)
                rss[name].append(c.rss_peak_kb())
    out = []
    for name, c in clients.items():
        out.append({"name": name, "p50_ms": pct(lat[name], 0.5) * 1000,
                    "p99_ms": pct(lat[name], 0.99) * 1000,
                    "rss_peak_kb": max(rss[name])})
        c.close()
    return out


def baseline_big(n):
    """BIG_COMMAND from this client with no server: its output read whole."""
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(["bash", "-c", BIG_COMMAND], stdout=subprocess.PIPE, check=True)
        lat.append(time.perf_counter() - t)
    return pct(lat, 0.5) * 1000


# Shell code that runs no program but seq: the shell's own speed (its
# allocator, its string handling), which profiles and build scripts lean on.
SCRIPT_COMMAND = ('i=0; while [ $i -lt 25000 ]; do i=$((i+1)); done; '
                  's=; for k in $(seq 3000); do s="$s$k"; done; echo ${#s}')


def check_script(answer):
    r = answer.get("result")
    if not r or r.get("isError"):
        raise RuntimeError(f"script call failed: {json.dumps(answer)[:400]}")
    text = r["content"][0]["text"]
    if json.loads(text)["output"] != "10893\n":
        raise RuntimeError(f"unexpected script output: {text[:400]}")


def bench_script(servers, workdir, n):
    """n calls of SCRIPT_COMMAND per server, one at a time, the servers
    taking turns: p50/p99."""
    clients = {name: start(argv, env, update, name) for name, argv, env, update in servers}
    lat = {name: [] for name in clients}
    params = {"name": "shell", "arguments": {"command": SCRIPT_COMMAND, "workdir": workdir,
                                             "login": False}}
    for i in range(n + 2):  # the first two are a warm-up
        for name, c in clients.items():
            t = time.perf_counter()
            check_script(c.wait(c.request("tools/call", params)))
            if i >= 2:
                lat[name].append(time.perf_counter() - t)
    out = [{"name": name, "p50_ms": pct(lat[name], 0.5) * 1000,
            "p99_ms": pct(lat[name], 0.99) * 1000} for name in clients]
    for c in clients.values():
        c.close()
    return out


def baseline_script(n, bash):
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([bash, "-c", SCRIPT_COMMAND], stdout=subprocess.DEVNULL, check=True)
        lat.append(time.perf_counter() - t)
    return pct(lat, 0.5) * 1000


def report_script(results, base, reference):
    print(f"{'script':18} {'p50 ms':>8} {'p99 ms':>8}")
    for r in results:
        print(f"{r['name']:18} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f}")
    if reference:
        ref = results[0]
        for r in results[1:]:
            print(f"script ratios {r['name']}/reference: p50 {r['p50_ms'] / ref['p50_ms']:.2f}")
    print(f"script: execgate vs the bare command with Debian's /bin/bash: "
          f"p50 {results[-1]['p50_ms'] / base:.2f}x")


def report_big(results, base, reference):
    print(f"{'big output':18} {'p50 ms':>8} {'p99 ms':>8} {'peak RSS MB':>12}")
    for r in results:
        print(f"{r['name']:18} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} "
              f"{r['rss_peak_kb'] / 1024:12.2f}")
    if reference:
        ref = results[0]
        for me in results[1:]:
            print(f"big ratios {me['name']}/reference: p50 {me['p50_ms'] / ref['p50_ms']:.2f}, "
                  f"peak RSS {me['rss_peak_kb'] / ref['rss_peak_kb']:.2f}")
    me = results[-1]
    print(f"big: execgate vs the bare command: p50 {me['p50_ms'] / base:.2f}x")


def bench_spaced(servers, workdir, pause_ms, n):
    """n calls per server, one at a time, each after pause_ms of quiet
    (no request in flight anywhere); the servers take turns."""
    clients = {name: start(argv, env, update, name) for name, argv, env, update in servers}
    lat = {name: [] for name in clients}
    for i in range(n + 3):  # the first three are a warm-up
        for name, c in clients.items():
            time.sleep(pause_ms / 1000)
            t = one_call(c, workdir)
            if i >= 3:
                lat[name].append(t)
    out = []
    for name, c in clients.items():
        out.append({"name": name, "p50_ms": pct(lat[name], 0.5) * 1000,
                    "p99_ms": pct(lat[name], 0.99) * 1000})
        c.close()
    return out


def baseline_bash_spaced(n, pause_ms):
    lat = []
    for _ in range(n):
        time.sleep(pause_ms / 1000)
        t = time.perf_counter()
        subprocess.run(["bash", "-c", "echo hi"], stdout=subprocess.DEVNULL)
        lat.append(time.perf_counter() - t)
    return pct(lat, 0.5) * 1000


def report_spaced(results, base, pause_ms, reference, variants):
    print(f"{'spaced (' + str(pause_ms) + ' ms)':18} {'p50 ms':>8} {'p99 ms':>8}")
    for r in results:
        print(f"{r['name']:18} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f}")
    by_name = {r["name"]: r for r in results}
    me = results[-1]
    if reference:
        ref = results[0]
        for r in results[1:]:
            print(f"spaced ratios {r['name']}/reference: p50 {r['p50_ms'] / ref['p50_ms']:.2f}, "
                  f"p99 {r['p99_ms'] / ref['p99_ms']:.2f}")
    for label in variants + (["execgate previous"] if "execgate previous" in by_name else []):
        v = by_name[label]
        print(f"spaced ratios execgate/{label}: p50 {me['p50_ms'] / v['p50_ms']:.2f}, "
              f"p99 {me['p99_ms'] / v['p99_ms']:.2f}")
    print(f"spaced: execgate vs the bare command after the same pause: "
          f"p50 {me['p50_ms'] / base:.2f}x")


def variant_server(execgate, spec, env, update):
    """(label, argv, env, update) of --variant 'LABEL=[NAME=VALUE...] ARGS'."""
    label, _, rest = spec.partition("=")
    words = shlex.split(rest)
    venv = dict(env)
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        name, _, value = words.pop(0).partition("=")
        venv[name] = value
    return label, [execgate] + words, venv, update


def baseline_bash(n):
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(["bash", "-c", "echo hi"], stdout=subprocess.DEVNULL)
        lat.append(time.perf_counter() - t)
    return pct(lat, 0.5) * 1000


def workspace(prefix, rules=None, parent=None):
    """A scratch benchmark world, in parent (default: the temporary
    directory, /tmp, which the sandbox may write: the server then keeps
    CODEX_HOME read-only in every call's sandbox): a workdir, a CODEX_HOME whose rules/ holds
    bench.rules (when rules is given; the reference refuses to start
    without the directory), and an empty HOME for every server's shells: no
    ~/.bashrc or profile hooks (a pyenv hook in ~/.bashrc made every
    reference call 60 ms slower in one run).  Returns (scratch, workdir,
    env, update) with update a workspace-write codex/sandbox-state/update."""
    scratch = tempfile.mkdtemp(prefix=prefix, dir=parent)
    workdir = os.path.join(scratch, "work")
    os.mkdir(workdir)
    rules_dir = os.path.join(scratch, "codex-home", "rules")
    os.makedirs(rules_dir)
    if rules is not None:
        with open(os.path.join(rules_dir, "bench.rules"), "w") as f:
            f.write(rules)
    home = os.path.join(scratch, "home")
    os.mkdir(home)
    policy = {"type": "workspace-write", "writable_roots": [], "network_access": False,
              "exclude_tmpdir_env_var": False, "exclude_slash_tmp": False}
    update = {"sandboxPolicy": policy, "sandboxCwd": workdir, "codexLinuxSandboxExe": None}
    env = dict(os.environ, CODEX_HOME=os.path.join(scratch, "codex-home"), HOME=home)
    return scratch, workdir, env, update


REFERENCE = "reference 0.97.0"


def reference_server(install, scratch, update):
    """(argv, update) of the reference installed under install (npm prefix),
    with codex-linux-sandbox linked to the Codex binary in scratch."""
    vendor = os.path.join(install, "node_modules/@openai/codex-shell-tool-mcp/vendor/"
                          "x86_64-unknown-linux-musl")
    codex = os.path.join(install, "node_modules/@openai/codex/vendor/"
                         "x86_64-unknown-linux-musl/codex/codex")
    link = os.path.join(scratch, "codex-linux-sandbox")
    os.symlink(os.path.realpath(codex), link)
    argv = [os.path.join(vendor, "codex-exec-mcp-server"),
            "--bash", os.path.join(vendor, "bash/debian-12/bash")]
    return argv, dict(update, codexLinuxSandboxExe=link)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--execgate", required=True)
    ap.add_argument("--reference")
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--seq", type=int, default=300)
    ap.add_argument("--big", type=int, default=20,
                    help="calls printing 20 MB per server (0: none)")
    ap.add_argument("--only-big", action="store_true", help="only the 20 MB calls")
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=ARGS",
                    help="another execgate row, with extra arguments (shell words; "
                         "NAME=VALUE words first go to its environment), e.g. "
                         "'dynamic bash=--bash build/subprojects/shells/bash' or "
                         "'no cgroups=EXECGATE_TEST_NO_CGROUP=1'")
    ap.add_argument("--previous", help="an older execgate build's server, measured alongside")
    ap.add_argument("--spaced", type=int, metavar="MS",
                    help="only calls after MS ms of quiet each (an agent's pace)")
    ap.add_argument("--spaced-calls", type=int, default=60, help="spaced calls per server")
    ap.add_argument("--script", type=int, metavar="N",
                    help="only N calls per server of a CPU-bound shell script")
    args = ap.parse_args()

    scratch, workdir, env, update = workspace("execgate-bench-")

    servers = []
    if args.reference:
        ref_argv, ref_update = reference_server(args.reference, scratch, update)
        servers.append((REFERENCE, ref_argv, env, ref_update))
    if args.previous:
        servers.append(("execgate previous", [args.previous], env, update))
    for v in args.variant:
        servers.append(variant_server(args.execgate, v, env, update))
    servers.append(("execgate", [args.execgate], env, update))
    if args.spaced is not None:
        base = baseline_bash_spaced(20, args.spaced)
        print(f"baseline bash -c 'echo hi' after {args.spaced} ms (no server): p50 {base:.2f} ms",
              flush=True)
        report_spaced(bench_spaced(servers, workdir, args.spaced, args.spaced_calls), base,
                      args.spaced, args.reference, [s[0] for s in servers[:-1]
                                                    if s[0] not in (REFERENCE,
                                                                    "execgate previous")])
        return
    if args.script is not None:
        base = baseline_script(10, "/bin/bash")
        print(f"baseline /bin/bash -c SCRIPT (no server): p50 {base:.2f} ms", flush=True)
        report_script(bench_script(servers, workdir, args.script), base, args.reference)
        return
    if args.big > 0:
        base = baseline_big(10)
        print(f"baseline bash -c '{BIG_COMMAND}' (no server): p50 {base:.2f} ms", flush=True)
        report_big(bench_big(servers, workdir, args.big), base, args.reference)
        if args.only_big:
            return
    base = baseline_bash(200)
    print(f"baseline bash -c 'echo hi' (no server): p50 {base:.2f} ms", flush=True)
    results = bench_all(servers, workdir, args.seq, args.calls)
    base2 = baseline_bash(200)
    print(f"baseline again after the servers: p50 {base2:.2f} ms", flush=True)

    print(f"{'server':18} {'init ms':>8} {'seq p50':>8} {'seq p99':>8} {'16x c/s':>8} "
          f"{'16x p99':>8} {'RSS MB':>7} {'calls':>6}")
    for r in results:
        print(f"{r['name']:18} {r['init_ms']:8.2f} {r['seq_p50_ms']:8.2f} {r['seq_p99_ms']:8.2f} "
              f"{r['par_calls_per_s']:8.0f} {r['par_p99_ms']:8.2f} "
              f"{r['rss_peak_kb'] / 1024:7.2f} {r['calls']:6}")
    if args.reference:
        ref = results[0]
        for me in results[1:]:
            print(f"ratios {me['name']}/reference: "
                  f"seq p50 {me['seq_p50_ms'] / ref['seq_p50_ms']:.2f}, "
                  f"16x calls/s {me['par_calls_per_s'] / ref['par_calls_per_s']:.2f}, "
                  f"RSS {me['rss_peak_kb'] / ref['rss_peak_kb']:.2f}, "
                  f"init {me['init_ms'] / ref['init_ms']:.2f}")
    me = results[-1]
    print(f"execgate vs baseline bash: seq p50 {me['seq_p50_ms'] / base:.2f}x")


if __name__ == "__main__":
    main()
