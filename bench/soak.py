#!/usr/bin/env python3
"""bench/soak.py: one execgate --listen server driven for a long while, with faults.

    bench/soak.py --execgate build-dev/server/execgate [--sessions 8] [--calls 5000]
        [--every 2] [--warmup 0.25] [--seed 1]

--sessions client threads, each with its own HTTP session, make --calls
calls in all.  Most are `echo hi`; the rest are faults, drawn at random
(--seed): a client killed mid-call (its connection closed while the call
runs), a connection reset mid-request (SO_LINGER 0), a stuck reader (a
call printing 200 KB of control bytes whose answer is never read; the
connection is dropped later), a malformed request, a cancel
(notifications/cancelled while the call runs), a timeout (timeout_ms
below the command's time), a login call, and a session that ends
(DELETE) and is made again.  The server runs with short
--session-idle-ms and --write-timeout-ms, so that what dead clients leave
is cleaned up while the soak runs.

Every --every seconds it prints the calls made, the server's resident
memory (VmRSS), its open fds, the processes below it and the cgroups
below its own; at the end, the slope of each after the first --warmup of
the calls (least squares, per 1,000 calls), and whether the server
exited 0 on SIGTERM (under ASan/LSan: no leak).  It prints figures for a
person to read and asserts nothing.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

FAULTS = [  # (name, weight); the rest of 100 is `echo hi`
    ("killed", 4), ("reset", 3), ("stuck", 2), ("malformed", 3), ("cancel", 4),
    ("timeout", 4), ("login", 4), ("reopen", 2),
]


class Server:
    def __init__(self, execgate, scratch):
        self.scratch = scratch
        rules = os.path.join(scratch, "rules")
        os.makedirs(rules)
        open(os.path.join(rules, "soak.rules"), "w").close()
        token_file = os.path.join(scratch, "token")
        self.log = open(os.path.join(scratch, "server.log"), "w+")
        argv = [execgate, "--listen", "127.0.0.1:0", "--token-file", token_file, "--rules", rules,
                "--session-idle-ms", "3000", "--max-calls", "32"]
        # an older build without the option runs without it
        help_text = subprocess.run([execgate, "--help"], capture_output=True, text=True).stdout
        if "--write-timeout-ms" in help_text:
            argv += ["--write-timeout-ms", "2000"]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 60
        while True:
            self.log.seek(0)
            text = self.log.read()
            if "listening on http://127.0.0.1:" in text:
                self.port = int(text.split("listening on http://127.0.0.1:")[1].split("/")[0])
                break
            if self.proc.poll() is not None or time.time() > deadline:
                sys.exit("the server did not start:\n" + text)
            time.sleep(0.05)
        self.token = open(token_file).read().strip()

    def headers(self, sid=None):
        h = {"Authorization": "Bearer " + self.token, "Content-Type": "application/json",
             "Accept": "application/json, text/event-stream"}
        if sid:
            h["Mcp-Session-Id"] = sid
        return h

    def raw(self, sid, body):
        """The request text of a POST of body (a dict or bytes)."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in self.headers(sid).items())
        return head.encode() + f"Content-Length: {len(data)}\r\n\r\n".encode() + data

    def stop(self):
        self.proc.terminate()
        try:
            rc = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        return rc


def answer(resp_body, id_):
    text = resp_body.decode(errors="replace")
    for line in text.splitlines():
        if line.startswith("data: "):
            j = json.loads(line[6:])
            if j.get("id") == id_:
                return j
    return json.loads(text) if text.strip().startswith("{") else None


class Client:
    def __init__(self, srv, wd, rng):
        self.srv, self.wd, self.rng = srv, wd, rng
        self.next_id = 10
        self.stuck = []  # (socket, when to drop it)
        self.open()

    def post(self, body, sid=None, timeout=120):
        c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=timeout)
        c.request("POST", "/mcp", json.dumps(body), self.srv.headers(sid))
        r = c.getresponse()
        data = r.read()
        c.close()
        return r, data

    def open(self):
        r, _ = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "soak", "version": "1"}}})
        self.sid = r.getheader("Mcp-Session-Id")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self.sid)

    def call_body(self, command, timeout_ms=None, login=False):
        self.next_id += 1
        args = {"command": command, "workdir": self.wd, "login": login}
        if timeout_ms:
            args["timeout_ms"] = timeout_ms
        return {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                "params": {"name": "shell", "arguments": args}}

    def call(self, command, **kw):
        body = self.call_body(command, **kw)
        r, data = self.post(body, self.sid)
        if r.status == 404:  # the session went idle meanwhile: a new one
            self.open()
            r, data = self.post(body, self.sid)
        return answer(data, body["id"])

    def sock(self):
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=30)
        return s

    def one(self):
        now = time.time()
        for s, when in [x for x in self.stuck if x[1] <= now]:
            s.close()
            self.stuck.remove((s, when))
        pick = self.rng.randrange(100)
        for name, weight in FAULTS:
            if pick < weight:
                return getattr(self, "fault_" + name)()
            pick -= weight
        a = self.call("echo hi")
        return "ok" if a and "result" in a else "error"

    def fault_killed(self):
        s = self.sock()
        s.sendall(self.srv.raw(self.sid, self.call_body("sleep 2")))
        time.sleep(0.1)
        s.close()
        return "killed"

    def fault_reset(self):
        s = self.sock()
        s.sendall(self.srv.raw(self.sid, self.call_body("echo never"))[:60])
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        return "reset"

    def fault_stuck(self):
        s = self.sock()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(self.srv.raw(self.sid, self.call_body(
            "head -c 200000 /dev/zero | tr '\\000' '\\001'")))
        self.stuck.append((s, time.time() + 5))
        return "stuck"

    def fault_malformed(self):
        s = self.sock()
        s.sendall(self.srv.raw(self.sid, b"{not json"))
        s.recv(65536)
        s.close()
        return "malformed"

    def fault_cancel(self):
        s = self.sock()
        body = self.call_body("sleep 2")
        s.sendall(self.srv.raw(self.sid, body))
        time.sleep(0.1)
        self.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": body["id"], "reason": "soak"}}, self.sid)
        s.close()
        return "cancel"

    def fault_timeout(self):
        a = self.call("sleep 2", timeout_ms=100)
        return "timeout" if a and "result" in a else "error"

    def fault_login(self):
        a = self.call("echo $HOME", login=True)
        return "login" if a and "result" in a else "error"

    def fault_reopen(self):
        c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=30)
        c.request("DELETE", "/mcp", headers=self.srv.headers(self.sid))
        c.getresponse().read()
        c.close()
        self.open()
        return "reopen"

    def close(self):
        for s, _ in self.stuck:
            s.close()
        self.stuck = []


def descendants(pid):
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(p))
            except OSError:
                pass
    n, todo = 0, [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            n += 1
            todo.append(k)
    return n


def cgroups_below(pid):
    """The cgroups the server made (named execgate-PID-..., call_cgroup.c), in
    every hierarchy mounted below /sys/fs/cgroup."""
    mark = f"execgate-{pid}-"
    n = 0
    for _, dirs, _ in os.walk("/sys/fs/cgroup"):
        n += sum(1 for d in dirs if d.startswith(mark))
    return n


def sample(pid):
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd")), descendants(pid), cgroups_below(pid)


def slope(xs, ys):
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--execgate", required=True)
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--every", type=float, default=2.0)
    ap.add_argument("--warmup", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="execgate-soak-")
    wd = os.path.join(scratch, "wd")
    os.makedirs(wd)
    srv = Server(args.execgate, scratch)
    done = [0]
    counts = {}
    lock = threading.Lock()

    def worker(k):
        cl = Client(srv, wd, random.Random(args.seed * 1000 + k))
        while True:
            with lock:
                if done[0] >= args.calls:
                    break
                done[0] += 1
            try:
                what = cl.one()
            except (OSError, http.client.HTTPException, ValueError) as e:
                what = "client error: " + type(e).__name__
            with lock:
                counts[what] = counts.get(what, 0) + 1
        cl.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(args.sessions)]
    start = time.time()
    for t in threads:
        t.start()
    rows = []
    print(f"{'s':>6} {'calls':>7} {'rss KiB':>8} {'fds':>5} {'procs':>5} {'cgroups':>7}")
    while any(t.is_alive() for t in threads):
        time.sleep(args.every)
        row = (time.time() - start, done[0]) + sample(srv.proc.pid)
        rows.append(row)
        print(f"{row[0]:6.0f} {row[1]:7d} {row[2]:8d} {row[3]:5d} {row[4]:5d} {row[5]:7d}",
              flush=True)
    for t in threads:
        t.join()
    time.sleep(5)  # idle sessions and stuck connections go
    row = (time.time() - start, done[0]) + sample(srv.proc.pid)
    rows.append(row)
    print(f"{row[0]:6.0f} {row[1]:7d} {row[2]:8d} {row[3]:5d} {row[4]:5d} {row[5]:7d} (settled)")
    warm = [r for r in rows if r[1] >= args.warmup * args.calls]
    xs = [r[1] / 1000 for r in warm]
    print(f"after warm-up ({len(warm)} samples): per 1,000 calls: "
          f"rss {slope(xs, [r[2] for r in warm]):+.1f} KiB, "
          f"fds {slope(xs, [r[3] for r in warm]):+.2f}, "
          f"processes {slope(xs, [r[4] for r in warm]):+.2f}, "
          f"cgroups {slope(xs, [r[5] for r in warm]):+.2f}")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    rc = srv.stop()
    print(f"server exit status on SIGTERM: {rc}; {time.time() - start:.0f} s")
    srv.log.seek(0)
    log = srv.log.read()
    if rc != 0:
        print(log[-4000:])
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
