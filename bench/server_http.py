#!/usr/bin/env python3
"""bench/server_http.py: execgate over Streamable HTTP beside stdio servers, same run.

    bench/server_http.py --execgate build-bench/server/execgate \
        [--reference /tmp/execgate-ref] [--calls 2000] [--sessions 64] [--seq N]

`echo hi` with 16 calls in flight from one client: through one HTTP
session of `execgate --listen 127.0.0.1:0` (16 keep-alive connections, one
request each at a time, as an HTTP client sends concurrent requests),
through execgate on stdio, and through the reference MCP server on stdio
(--reference, as for bench/server.py).  Blocks of calls alternate between
the servers so that load from elsewhere on the machine hits all of them;
the figures are calls per second, and the ratio to the reference's.

Then the memory of idle sessions: the HTTP server's resident set (VmRSS)
before and after --sessions sessions each did initialize, the
sandbox-state update and one call, and then sit idle.

With --seq N, nothing of the above: N `echo hi` calls one at a time
through one HTTP session of each of two servers, one with prepared calls
(the default) and one with `--max-prepared 0`, alternating call by call,
each sent as soon as the last answer was read: p50 and p99 of each, and
their ratio.

Every server gets the same workspace-write update on a scratch dir and an
empty HOME (bench/server.py's workspace()).  It prints figures for a
person to read and asserts nothing.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server as stdio_bench  # noqa: E402  (bench/server.py)


class HttpServer:
    def __init__(self, execgate, env, scratch, sessions, extra=(), name="token"):
        self.token_file = os.path.join(scratch, name)
        self.p = subprocess.Popen(
            [execgate, "--listen", "127.0.0.1:0", "--token-file", self.token_file,
             "--log-level", "warn", "--max-sessions", str(sessions), *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        line = b""
        while True:
            chunk = self.p.stderr.readline()
            if not chunk:
                raise RuntimeError("execgate --listen ended before listening")
            m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)/mcp", chunk)
            if m:
                self.port = int(m.group(1))
                break
            line += chunk
        # the rest of its stderr is drained, so that it never blocks on it
        threading.Thread(target=self.p.stderr.read, daemon=True).start()
        with open(self.token_file) as f:
            self.token = f.read().strip()

    def rss_kb(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    def close(self):
        self.p.terminate()
        self.p.wait(timeout=30)


class Session:
    """One MCP session; each connection() is one keep-alive HTTP connection."""

    def __init__(self, srv, update):
        self.srv = srv
        self.sid = None
        c = self.connection()
        r = self.post(c, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "bench", "version": "1"}}})
        if "result" not in r:
            raise RuntimeError(f"initialize: {r}")
        self.post(c, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        r = self.post(c, {"jsonrpc": "2.0", "id": 2, "method": "codex/sandbox-state/update",
                          "params": update})
        if "result" not in r:
            raise RuntimeError(f"update: {r}")
        c.close()

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=60)

    def post(self, conn, msg):
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "Authorization": f"Bearer {self.srv.token}"}
        if self.sid:
            headers["Mcp-Session-Id"] = self.sid
        conn.request("POST", "/mcp", body=json.dumps(msg), headers=headers)
        r = conn.getresponse()
        body = r.read()
        if not self.sid:
            self.sid = r.getheader("Mcp-Session-Id")
        if r.status == 202:
            return None
        if r.status != 200:
            raise RuntimeError(f"HTTP {r.status}: {body[:300]!r}")
        if r.getheader("Content-Type", "").startswith("text/event-stream"):
            # the answer is the stream's last event
            events = [l[6:] for l in body.decode().split("\n") if l.startswith("data: ")]
            return json.loads(events[-1])
        return json.loads(body)


def http_block(session, workdir, n, inflight=16):
    """n `echo hi` calls with `inflight` outstanding; returns seconds."""
    lock = threading.Lock()
    left = [n]
    errors = []

    def worker(k):
        conn = session.connection()
        i = 0
        while True:
            with lock:
                if left[0] == 0 or errors:
                    break
                left[0] -= 1
            i += 1
            try:
                a = session.post(conn, {"jsonrpc": "2.0", "id": f"{k}-{i}", "method": "tools/call",
                                        "params": stdio_bench.call_params(workdir)})
                stdio_bench.check(a)
            except Exception as e:  # reported below
                errors.append(e)
        conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(inflight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - t0


def http_seq(execgate, env, scratch, update, workdir, n):
    """--seq: one call at a time over HTTP, prepared calls on and off."""
    kinds = [("HTTP, prepared calls", ()), ("HTTP, --max-prepared 0", ("--max-prepared", "0"))]
    servers, lat = [], {name: [] for name, _ in kinds}
    try:
        for i, (name, extra) in enumerate(kinds):
            srv = HttpServer(execgate, env, scratch, 1, extra, f"token-{i}")
            servers.append(srv)
        sessions = [Session(srv, update) for srv in servers]
        conns = [s.connection() for s in sessions]
        for k in range(n + 10):  # the first 10 are warm-up
            for (name, _), s, c in zip(kinds, sessions, conns):
                t = time.perf_counter()
                stdio_bench.check(s.post(c, {"jsonrpc": "2.0", "id": k + 10, "method": "tools/call",
                                             "params": stdio_bench.call_params(workdir)}))
                if k >= 10:
                    lat[name].append(time.perf_counter() - t)
        for c in conns:
            c.close()
    finally:
        for srv in servers:
            srv.close()
    print(f"`echo hi` one call at a time over one HTTP session, {n} calls each "
          f"(alternating):")
    p50 = {}
    for name, v in lat.items():
        p50[name] = stdio_bench.pct(v, 0.5) * 1000
        print(f"  {name:24s} p50 {p50[name]:6.2f} ms  p99 {stdio_bench.pct(v, 0.99) * 1000:6.2f} ms")
    a, b = (name for name, _ in kinds)
    print(f"  prepared / --max-prepared 0: p50 {p50[a] / p50[b]:.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--execgate", required=True)
    ap.add_argument("--reference")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--seq", type=int, metavar="N",
                    help="only N calls one at a time, prepared calls on and off")
    args = ap.parse_args()

    scratch, workdir, env, update = stdio_bench.workspace("execgate-bench-http-")
    if args.seq:
        try:
            http_seq(args.execgate, env, scratch, update, workdir, args.seq)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    srv = None
    try:
        # the measuring session and the idle ones
        srv = HttpServer(args.execgate, env, scratch, args.sessions + 1)
        session = Session(srv, update)
        stdio = [("execgate stdio", [args.execgate], env, update)]
        if args.reference:
            argv, ref_update = stdio_bench.reference_server(args.reference, scratch, update)
            stdio.append((stdio_bench.REFERENCE, argv, env, ref_update))
        clients = {name: stdio_bench.start(argv, e, u, name) for name, argv, e, u in stdio}
        # warm-up
        http_block(session, workdir, 32)
        for c in clients.values():
            stdio_bench.block_in_flight(c, workdir, 32)
        blocks = 10
        per = max(16, args.calls // blocks)
        times = {"execgate HTTP": 0.0, **{name: 0.0 for name in clients}}
        for _ in range(blocks):
            times["execgate HTTP"] += http_block(session, workdir, per)
            for name, c in clients.items():
                t, _ = stdio_bench.block_in_flight(c, workdir, per)
                times[name] += t
        for c in clients.values():
            c.close()
        rate = {name: blocks * per / t for name, t in times.items()}
        ref = rate.get(stdio_bench.REFERENCE)
        print(f"`echo hi`, 16 in flight from one client, {blocks * per} calls each "
              f"(blocks alternating):")
        for name, r in rate.items():
            ratio = f"  {r / ref:.2f}x the reference" if ref else ""
            print(f"  {name:18s} {r:8.1f} calls/s{ratio}")

        before = srv.rss_kb()
        idle = []
        for _ in range(args.sessions):
            s = Session(srv, update)
            c = s.connection()
            stdio_bench.check(s.post(c, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                         "params": stdio_bench.call_params(workdir)}))
            c.close()
            idle.append(s)
        time.sleep(0.5)
        after = srv.rss_kb()
        print(f"{args.sessions} idle sessions (each: initialize, update, one call): VmRSS "
              f"{before} kB -> {after} kB, +{after - before} kB "
              f"({(after - before) / args.sessions:.1f} kB a session)")
    finally:
        if srv:
            srv.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
