#!/usr/bin/env python3
"""bench/login.py: login calls with a profile that takes about 100 ms, same run.

    bench/login.py --execgate build-bench/server/execgate \
        [--reference /tmp/execgate-ref] [--calls 60] [--profile-ms 100] [--shell zsh]

Every server gets the same HOME: ~/.profile sources ~/.bashrc, which
exports a variable, puts a directory in front of PATH, defines a function
and an alias, prints a line on stderr, and then waits --profile-ms (a
`sleep`, as a profile waits for the tools it asks: `pyenv init`, say).
With --shell zsh the execgate servers run `--shell zsh` and the same lines
are ~/.zprofile; the reference (Bash only) is not run then, and the
baseline is the patched zsh's `zsh -lc` (beside the server in its build
tree, else `zsh` on PATH).
Rows, measured call by call in turn, in a new random order each round (so
load from elsewhere, and the idle machine after a profile's sleep, hit all
alike), `echo "$SNAP_VAR"` one call at a time, p50/p99:

  execgate login         `login` left to its default (true): the snapshot
  execgate login:false   the same server, `login: false`
  execgate no snapshot   `--no-login-snapshot`: `bash -lc` (`zsh -lc`) every call
  reference login        the reference, default login (when --reference)
  reference login:false

The ratios printed: execgate login / execgate login:false, and execgate
login / reference login.  The baseline `bash -lc` (`zsh -lc`) of the same
profile from this client (no server) is measured in the same run.  Each login answer of
execgate is checked to be the variable's value alone (the profile ran, and
its noise is not in the output).  Both servers get the same
codex/sandbox-state/update (workspace-write on a scratch dir) first.
"""
import argparse
import json
import os
import random
import subprocess
import time

from server import REFERENCE, pct, reference_server, start, workspace

PROFILE = """if [ -f "$HOME/.bashrc" ]; then . "$HOME/.bashrc"; fi
"""

BASHRC = """export SNAP_VAR=from-profile
PATH="$HOME/.local/bench-bin:$PATH"
bench_fn() {{ echo "fn $1"; }}
alias ll='ls -l'
echo "bench profile: loading" >&2
sleep {secs}
"""

COMMAND = 'echo "$SNAP_VAR"'


def write_profile(home, ms, shell):
    text = BASHRC.format(secs=f"{ms / 1000:.3f}")
    if shell == "zsh":
        with open(os.path.join(home, ".zprofile"), "w") as f:
            f.write(text)
        return
    with open(os.path.join(home, ".profile"), "w") as f:
        f.write(PROFILE)
    with open(os.path.join(home, ".bashrc"), "w") as f:
        f.write(text)


def zsh_path(execgate):
    """The patched zsh of execgate's build tree, else zsh on PATH."""
    built = os.path.join(os.path.dirname(os.path.abspath(execgate)), "..", "subprojects", "shells",
                         "zsh")
    return os.path.normpath(built) if os.access(built, os.X_OK) else "zsh"


def call(c, workdir, login, strict):
    args = {"command": COMMAND, "workdir": workdir}
    if login is not None:
        args["login"] = login
    t = time.perf_counter()
    a = c.wait(c.request("tools/call", {"name": "shell", "arguments": args}))
    dt = time.perf_counter() - t
    r = a.get("result")
    if not r or r.get("isError"):
        raise RuntimeError(f"call failed: {json.dumps(a)[:400]}")
    out = json.loads(r["content"][0]["text"])["output"]
    want = "from-profile\n" if login is not False else "\n"
    if strict and out != want:
        raise RuntimeError(f"unexpected output {out!r}, wanted {want!r}")
    if want.strip() not in out:
        raise RuntimeError(f"unexpected output {out!r}")
    return dt


def baseline(env, n, shell):
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([shell, "-lc", COMMAND], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        lat.append(time.perf_counter() - t)
    return pct(lat, 0.5) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--execgate", required=True)
    ap.add_argument("--reference")
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--profile-ms", type=int, default=100)
    ap.add_argument("--shell", choices=["bash", "zsh"], default="bash")
    args = ap.parse_args()
    if args.shell == "zsh" and args.reference:
        print("--shell zsh: the reference runs Bash only, and is left out")
        args.reference = None

    scratch, workdir, env, update = workspace("execgate-bench-login-")
    home = env["HOME"]
    write_profile(home, args.profile_ms, args.shell)

    # (label, server, login, strict: the output is the value alone)
    rows = []
    shell_args = ["--shell", "zsh"] if args.shell == "zsh" else []
    servers = {"execgate": start([args.execgate] + shell_args, env, update, "execgate"),
               "execgate no snapshot": start([args.execgate] + shell_args +
                                             ["--no-login-snapshot"], env, update,
                                             "execgate no snapshot")}
    rows += [("execgate login", "execgate", None, True),
             ("execgate login:false", "execgate", False, True),
             ("execgate no snapshot", "execgate no snapshot", None, False)]
    if args.reference:
        ref_argv, ref_update = reference_server(args.reference, scratch, update)
        servers[REFERENCE] = start(ref_argv, env, ref_update, REFERENCE)
        rows += [("reference login", REFERENCE, None, False),
                 ("reference login:false", REFERENCE, False, False)]

    shell = zsh_path(args.execgate) if args.shell == "zsh" else "bash"
    base = baseline(env, 10, shell)
    print(f"baseline {os.path.basename(shell)} -lc with the profile (no server): "
          f"p50 {base:.2f} ms", flush=True)
    lat = {label: [] for label, _, _, _ in rows}
    # Each round in a new order: a call that follows a profile's 100 ms
    # sleep finds an idle machine (slower to wake), and no row should
    # always be the one that does.
    rng = random.Random(1)
    for i in range(args.calls + 3):  # the first three are a warm-up (and the capture)
        order = list(rows)
        rng.shuffle(order)
        for label, server, login, strict in order:
            t = call(servers[server], workdir, login, strict)
            if i >= 3:
                lat[label].append(t)
    for c in servers.values():
        c.close()

    p50 = {label: pct(v, 0.5) * 1000 for label, v in lat.items()}
    print(f"{'login calls':22} {'p50 ms':>8} {'p99 ms':>8}")
    for label, _, _, _ in rows:
        print(f"{label:22} {p50[label]:8.2f} {pct(lat[label], 0.99) * 1000:8.2f}")
    print(f"execgate login / execgate login:false: p50 "
          f"{p50['execgate login'] / p50['execgate login:false']:.2f}")
    print(f"execgate login / execgate no snapshot: p50 "
          f"{p50['execgate login'] / p50['execgate no snapshot']:.2f}")
    if args.reference:
        print(f"execgate login / reference login: p50 "
              f"{p50['execgate login'] / p50['reference login']:.2f}")


if __name__ == "__main__":
    main()
