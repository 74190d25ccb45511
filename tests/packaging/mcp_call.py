#!/usr/bin/env python3
"""tests/packaging/mcp_call.py: one installed server, driven on stdio.

    mcp_call.py --under DIR --scratch DIR [--launcher] -- SERVER_ARGV...

Starts SERVER_ARGV (an installed server, or a launcher of one), runs
`initialize` and a `tools/call shell` of `echo hi`, and checks the answer;
a second call prints $BASH, which must be the package's own patched Bash,
DIR/.../libexec/execgate/bash, found by the server next to itself.  Then it closes stdin and
expects exit status 0.  The same again with --shell zsh: the call runs the
package's patched zsh, DIR/.../libexec/execgate/zsh.  With --launcher, SERVER_ARGV starts the server as
its child: a SIGTERM to the launcher must reach the server (which says so
in its log and exits 0), and a server killed by SIGKILL must end the
launcher by SIGKILL too.  The client is bench/server.py's.  Exits 1 on the
first failure, printing the server's logs (DIR/NAME.log).
"""
import argparse
import importlib.util
import json
import os
import signal
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "bench_server", os.path.join(here, "..", "..", "bench", "server.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


class Failed(Exception):
    pass


def start(argv, scratch, name):
    env = dict(os.environ, HOME=scratch, CODEX_HOME=os.path.join(scratch, "codex"))
    log = open(os.path.join(scratch, name + ".log"), "w+b")
    c = bench.Client(argv, env, stderr=log)
    c.log = log
    answer, _ = c.initialize()
    info = answer.get("result", {}).get("serverInfo", {})
    if info.get("name") != "execgate":
        raise Failed(f"initialize: unexpected answer {json.dumps(answer)[:400]}")
    return c


def shell(c, command, workdir):
    answer = c.wait(c.request("tools/call", {"name": "shell", "arguments": {
        "command": command, "workdir": workdir, "login": False}}))
    result = answer.get("result")
    if not result or result.get("isError"):
        raise Failed(f"{command!r}: the call failed: {json.dumps(answer)[:400]}")
    return json.loads(result["content"][0]["text"])["output"]


def log_of(c):
    c.log.seek(0)
    return c.log.read().decode(errors="replace")


def server_pid(pid):
    """The first process under pid (pid included) running a bin/execgate."""
    todo = [pid]
    while todo:
        p = todo.pop(0)
        if os.readlink(f"/proc/{p}/exe").endswith("/bin/execgate"):
            return p
        with open(f"/proc/{p}/task/{p}/children") as f:
            todo += [int(c) for c in f.read().split()]
    raise Failed(f"no server process under the launcher (pid {pid})")


def check_calls(argv, scratch, under):
    c = start(argv, scratch, "calls")
    out = shell(c, "echo hi", scratch)
    if out != "hi\n":
        raise Failed(f"echo hi printed {out!r}")
    out = shell(c, 'printf %s "$BASH"', scratch)
    under = os.path.realpath(under) + "/"
    if not (out.startswith(under) and out.endswith("/libexec/execgate/bash")):
        raise Failed(f"the call ran {out!r}, not the package's Bash in {under}")
    c.p.stdin.close()
    status = c.p.wait(timeout=60)
    if status != 0:
        raise Failed(f"exit status {status} after stdin closed, not 0")
    # The package's patched zsh, chosen with --shell zsh.
    c = start(argv + ["--shell", "zsh"], scratch, "calls-zsh")
    out = shell(c, 'printf "%s %s" "$ZSH_VERSION" "$(readlink /proc/$$/exe)"', scratch)
    if not (out.startswith("5.9 " + under) and out.endswith("/libexec/execgate/zsh")):
        raise Failed(f"--shell zsh: the call ran {out!r}, not the package's zsh in {under}")
    c.p.stdin.close()
    status = c.p.wait(timeout=60)
    if status != 0:
        raise Failed(f"--shell zsh: exit status {status} after stdin closed, not 0")


def check_signals(argv, scratch):
    # SIGTERM to the launcher reaches the server, which shuts down cleanly.
    c = start(argv, scratch, "sigterm")
    c.p.send_signal(signal.SIGTERM)
    status = c.p.wait(timeout=60)
    if status != 0 or "shutting down (SIGTERM)" not in log_of(c):
        raise Failed(f"SIGTERM to the launcher: status {status}, or no shutdown in sigterm.log")
    # The server killed: the launcher ends by the same signal.
    c = start(argv, scratch, "sigkill")
    os.kill(server_pid(c.p.pid), signal.SIGKILL)
    status = c.p.wait(timeout=60)
    if status != -signal.SIGKILL:
        raise Failed(f"the server killed by SIGKILL: the launcher's status is {status}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--under", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--launcher", action="store_true")
    ap.add_argument("argv", nargs="+")
    a = ap.parse_args()
    try:
        check_calls(a.argv, a.scratch, a.under)
        if a.launcher:
            check_signals(a.argv, a.scratch)
    except (Failed, OSError, EOFError, TimeoutError) as e:
        print(f"FAIL: {' '.join(a.argv)}: {e}", file=sys.stderr)
        for name in ("calls", "calls-zsh", "sigterm", "sigkill"):
            log = os.path.join(a.scratch, name + ".log")
            if os.path.exists(log):
                with open(log, errors="replace") as f:
                    print(f"--- {name}.log:\n{f.read()}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
