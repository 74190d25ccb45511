#!/usr/bin/env python3
"""The real Codex CLI driving execgate end to end.

e2e.py EXECGATE CODEX

For each sandbox mode, runs `codex exec -s MODE` in a fresh CODEX_HOME whose
config.toml registers EXECGATE as an MCP server (the README's settings:
Codex's own shell tool off, execgate's tools approved by default) and points
the model provider at mock_responses.py on loopback.  The mock answers with
calls of execgate's shell tool, in the form Codex 0.169 expects (the function
call names the tool's namespace, mcp__execgate, and the plain tool name), one
per model request, then a final message; it records every request, so the
checks read exactly what the model received for each call (Codex's
function_call_output).  Prints one line per check; exits 0 when all passed.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXECGATE, CODEX = sys.argv[1:3]
FAILED = []


def check(ok, what, seen=""):
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok or not seen else "\n  saw: " + seen))
    if not ok:
        FAILED.append(what)


def toml_str(s):
    return json.dumps(s)  # a TOML basic string is a JSON string here


def wait_for_file(path, proc):
    """Waits for proc to write path (the mock's port), or to die."""
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise RuntimeError("the mock Responses server exited before listening")
        time.sleep(0.02)


def start_http_server(args, log_path):
    """execgate --listen 127.0.0.1:0 with args; returns (process, URL, log
    file) once it says where it listens."""
    log = open(log_path, "w", encoding="utf-8")
    proc = subprocess.Popen([EXECGATE, "--listen", "127.0.0.1:0"] + args,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    url = None
    for line in proc.stderr:
        log.write(line)
        if line.startswith("execgate: listening on http://"):
            url = line.split()[-1]
            break
    if url is None:
        proc.wait()
        log.close()
        raise RuntimeError("execgate --listen did not start; see " + log_path)

    def drain():  # the rest of its log, so that it never blocks on stderr
        for rest in proc.stderr:
            log.write(rest)
        log.close()
    threading.Thread(target=drain, daemon=True).start()
    return proc, url


def outside_base():
    """A directory for files no sandbox but full access may write: /var/tmp,
    unless $TMPDIR holds it (then the current directory, the build tree's)."""
    tmpdir = os.path.realpath(os.environ.get("TMPDIR") or "/tmp")
    for base in ("/var/tmp", os.getcwd()):
        real = os.path.realpath(base)
        if not (real + "/").startswith(tmpdir + "/") and not (real + "/").startswith("/tmp/"):
            return base
    raise RuntimeError("no directory outside /tmp and $TMPDIR to write to")


def tool_arguments(args, ws, outside):
    """A call's arguments for its tool (args["tool"], default shell): the
    workdir is ws, {outside} in a command the directory outside it."""
    args = {k: v for k, v in args.items() if k != "tool"}
    for key in ("command", "cmd"):
        if key in args:
            args[key] = args[key].replace("{outside}", outside)
    if "command" in args or "cmd" in args:
        args["workdir"] = ws
    return args


def session(mode, calls, rules="", http=False):
    """Runs codex exec under mode with the mock making calls (each a dict of
    the shell tool's arguments) in turn, with execgate on stdio, or (http)
    as a Streamable HTTP server started first.  Returns a dict: Codex's
    exit status and stderr, {index: text the model received}, the tools
    offered, the directories."""
    top = tempfile.mkdtemp(prefix="execgate-codex-")
    home, ws = (os.path.join(top, d) for d in ("codex-home", "ws"))
    for d in (home, os.path.join(home, "rules"), ws):
        os.makedirs(d)
    # Codex 0.169's workspace-write lets a command write /tmp and $TMPDIR
    # too: "outside" is outside both
    outside = tempfile.mkdtemp(prefix="execgate-codex-outside-", dir=outside_base())
    with open(os.path.join(ws, "keep"), "w", encoding="utf-8") as f:
        f.write("a file of the workspace's\n")
    with open(os.path.join(home, "rules", "test.rules"), "w", encoding="utf-8") as f:
        f.write(rules)
    # {outside} in a command is the directory outside the workspace
    script = [[{"type": "function_call", "id": "fc_%d" % i, "call_id": "call_%d" % i,
                "namespace": "mcp__execgate", "name": args.get("tool", "shell"),
                "arguments": json.dumps(tool_arguments(args, ws, outside))}]
              for i, args in enumerate(calls)]
    with open(os.path.join(top, "script.json"), "w", encoding="utf-8") as f:
        json.dump(script, f)
    port_file, record = os.path.join(top, "port"), os.path.join(top, "requests.jsonl")
    log = open(os.path.join(top, "mock.log"), "w", encoding="utf-8")
    mock = subprocess.Popen([sys.executable, os.path.join(HERE, "mock_responses.py"), port_file,
                             record, os.path.join(top, "script.json")], stderr=log)
    server, server_status = None, None
    env = dict(os.environ, CODEX_HOME=home)
    try:
        wait_for_file(port_file, mock)
        with open(port_file, encoding="utf-8") as f:
            port = int(f.read())
        args = ["--rules", os.path.join(home, "rules")]
        if http:
            token = os.path.join(top, "token")
            server, url = start_http_server(args + ["--token-file", token],
                                            os.path.join(top, "execgate.log"))
            with open(token, encoding="utf-8") as f:
                env["EXECGATE_TOKEN"] = f.readline().strip()
            how = 'url = %s\nbearer_token_env_var = "EXECGATE_TOKEN"\n' % toml_str(url)
        else:
            how = "command = %s\nargs = [%s]\n" % (
                toml_str(EXECGATE), ", ".join(toml_str(a) for a in args))
        with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
            f.write('model = "mock-model"\nmodel_provider = "mock"\n\n'
                    '[features]\nshell_tool = false\n\n'
                    '[model_providers.mock]\nname = "mock"\n'
                    'base_url = "http://127.0.0.1:%d/v1"\nwire_api = "responses"\n\n'
                    '[mcp_servers.execgate]\n%sdefault_tools_approval_mode = "approve"\n'
                    % (port, how))
        run = subprocess.run([CODEX, "exec", "--skip-git-repo-check", "-s", mode, "-C", ws,
                              "run the commands"], env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=300)
    finally:
        mock.kill()
        mock.wait()
        log.close()
        if server:
            server.terminate()
            server_status = server.wait(timeout=60)
    requests = []
    if os.path.exists(record):
        with open(record, encoding="utf-8") as f:
            requests = [json.loads(line)["body"] for line in f]
    outputs, tools = {}, []
    for body in requests:
        for item in body.get("input", []):
            if item.get("type") == "function_call_output":
                out = item.get("output")
                if isinstance(out, list):  # content items: their texts
                    out = "\n".join(x.get("text", "") for x in out if isinstance(x, dict))
                outputs[int(item["call_id"].split("_")[1])] = out
        for t in body.get("tools", []):
            if t.get("type") == "namespace":
                tools += [t["name"] + "/" + x.get("name", "") for x in t.get("tools", [])]
    return {"status": run.returncode, "stderr": run.stderr, "outputs": outputs, "tools": tools,
            "server_status": server_status,
            "top": top, "ws": ws, "outside": outside}


def result_of(text):
    """The shell tool's structured result in what the model received (Codex
    puts "Wall time: ...\\nOutput:\\n" before the server's text), else None."""
    _, _, rest = (text or "").partition("Output:\n")
    try:
        return json.loads(rest)
    except ValueError:
        return None


def finish(s):
    shutil.rmtree(s["top"], ignore_errors=True)
    shutil.rmtree(s["outside"], ignore_errors=True)


def workspace_write(http):
    """The workspace-write session's checks, over stdio or HTTP."""
    via = " (Streamable HTTP)" if http else ""
    rules = ('prefix_rule(pattern=["rm"], decision="forbidden", justification="rm is not for '
             'agents here")\nprefix_rule(pattern=["touch", "asked"], decision="prompt")\n')
    s = session("workspace-write", [
        {"command": "mkdir sub && echo made > sub/f && cat sub/f", "login": False},
        {"command": "touch {outside}/x; echo st=$?", "login": False},
        {"command": "rm -f keep; echo st=$?", "login": False},
        {"command": "touch asked; echo st=$?", "login": False},
        {"command": "echo out; exit 3", "login": False},
        {"command": "sleep 30", "login": False, "timeout_ms": 500},
        {"command": "touch {outside}/y", "login": False, "sandbox_permissions": "require_escalated",
         "justification": "to write outside"},
    ], rules, http)
    o = s["outputs"]
    check(s["status"] == 0, "workspace-write: codex exec exits 0" + via, s["stderr"][-2000:])
    check("mcp__execgate/shell" in s["tools"], "the model is offered mcp__execgate's shell" + via,
          repr(s["tools"]))
    r = result_of(o.get(0))
    check(r is not None and r["exit_code"] == 0 and r["output"] == "made\n" and
          os.path.exists(os.path.join(s["ws"], "sub", "f")),
          "workspace-write: writes in the workspace" + via, repr(o.get(0)))
    r = result_of(o.get(1))
    check(r is not None and "st=0" not in r["output"] and
          not os.path.exists(os.path.join(s["outside"], "x")),
          "workspace-write: not outside the workspace" + via, repr(o.get(1)))
    r = result_of(o.get(2))
    check(r is not None and "rm is not for agents here" in r["output"] and
          os.path.exists(os.path.join(s["ws"], "keep")),
          "a forbidden rule refuses, with its justification" + via, repr(o.get(2)))
    r = result_of(o.get(3))
    check(r is not None and "User declined execution" in r["output"] and
          not os.path.exists(os.path.join(s["ws"], "asked")),
          "a prompt rule: codex exec declines, nothing runs" + via, repr(o.get(3)))
    r = result_of(o.get(4))
    check(r is not None and r["exit_code"] == 3 and r["output"] == "out\n",
          "the exit code and output reach the model" + via, repr(o.get(4)))
    r = result_of(o.get(5))
    check(r is not None and r["timed_out"] is True, "a timeout reaches the model" + via,
          repr(o.get(5)))
    check("Not run: the person declined to run it outside the sandbox" in (o.get(6) or "") and
          not os.path.exists(os.path.join(s["outside"], "y")),
          "require_escalated: codex exec declines, one line says so" + via, repr(o.get(6)))
    check(not os.path.exists(os.path.join(s["ws"], ".codex")),
          "no placeholder .codex is left in the workspace" + via)
    if http:  # under the sanitizers a leak or an error makes this non-zero
        check(s["server_status"] == 0, "execgate --listen exits 0 on SIGTERM",
              str(s["server_status"]))
    finish(s)


def app_server_questions():
    """Codex's TUI is built on `codex app-server`: driven as the TUI drives
    it, the questions reach the client as Codex will show them, and the
    answers go back.  A prompted touch is denied with a reason, which the
    model must receive; a command asking to leave the sandbox is approved,
    and must write outside."""
    top = tempfile.mkdtemp(prefix="execgate-codex-as-")
    home, ws = os.path.join(top, "codex-home"), os.path.join(top, "ws")
    outside = tempfile.mkdtemp(prefix="execgate-codex-outside-", dir=outside_base())
    for d in (home, os.path.join(home, "rules"), ws):
        os.makedirs(d)
    with open(os.path.join(home, "rules", "t.rules"), "w", encoding="utf-8") as f:
        f.write('prefix_rule(pattern=["touch", "asked"], decision="prompt", '
                'justification="asked files need a yes")\n')
    calls = [{"command": "touch asked; echo st=$?", "login": False, "workdir": ws},
             {"command": "touch %s/left" % outside, "login": False, "workdir": ws,
              "sandbox_permissions": "require_escalated", "justification": "to write there"}]
    script = [[{"type": "function_call", "id": "fc_%d" % i, "call_id": "call_%d" % i,
                "namespace": "mcp__execgate", "name": "shell", "arguments": json.dumps(c)}]
              for i, c in enumerate(calls)]
    with open(os.path.join(top, "script.json"), "w", encoding="utf-8") as f:
        json.dump(script, f)
    port_file, record = os.path.join(top, "port"), os.path.join(top, "requests.jsonl")
    mock = subprocess.Popen([sys.executable, os.path.join(HERE, "mock_responses.py"), port_file,
                             record, os.path.join(top, "script.json")],
                            stderr=subprocess.DEVNULL)
    questions = []
    try:
        wait_for_file(port_file, mock)
        with open(port_file, encoding="utf-8") as f:
            port = int(f.read())
        with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
            f.write('model = "mock-model"\nmodel_provider = "mock"\n\n'
                    '[features]\nshell_tool = false\n\n'
                    '[model_providers.mock]\nname = "mock"\n'
                    'base_url = "http://127.0.0.1:%d/v1"\nwire_api = "responses"\n\n'
                    '[mcp_servers.execgate]\ncommand = %s\nargs = ["--rules", %s]\n'
                    'default_tools_approval_mode = "approve"\nrequired = true\n'
                    % (port, toml_str(EXECGATE), toml_str(os.path.join(home, "rules"))))
        questions = drive_app_server(home, ws)
    finally:
        mock.kill()
        mock.wait()
    outputs = {}
    with open(record, encoding="utf-8") as f:
        for line in f:
            for item in json.loads(line)["body"].get("input", []):
                if item.get("type") == "function_call_output":
                    outputs[item["call_id"]] = str(item.get("output"))
    exec_q = next((q for q in questions if q["message"].startswith("Allow agent")), None)
    leave_q = next((q for q in questions if q["message"].startswith("The agent asks")), None)
    names = ((exec_q or {}).get("requestedSchema", {}).get("properties", {})
             .get("decision", {}).get("enumNames", []))
    check(exec_q is not None and "Yes, run it this once" in names and
          'The rule that asks says: "asked files need a yes".' in exec_q["message"],
          "app-server: the question reaches the client with titled choices and the "
          "justification", json.dumps(questions)[:2000])
    check("User denied execution, saying: not this one" in outputs.get("call_0", "") and
          not os.path.exists(os.path.join(ws, "asked")),
          "app-server: the reason typed reaches the model", outputs.get("call_0", ""))
    check(leave_q is not None and 'Its reason: "to write there"' in leave_q["message"] and
          os.path.exists(os.path.join(outside, "left")),
          "app-server: require_escalated asks, and approved, writes outside",
          json.dumps(leave_q) + outputs.get("call_1", ""))
    shutil.rmtree(top, ignore_errors=True)
    shutil.rmtree(outside, ignore_errors=True)


def drive_app_server(home, ws):
    """One turn of `codex app-server` in ws; answers each question (denies
    an exec with a reason, approves leaving the sandbox).  Returns the
    questions as the client got them."""
    proc = subprocess.Popen([CODEX, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, CODEX_HOME=home))

    def send(m):
        proc.stdin.write(json.dumps(m) + "\n")
        proc.stdin.flush()
    timer = threading.Timer(240, proc.kill)  # a hung app-server fails the checks, not the suite
    timer.start()
    questions = []
    try:
        send({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "e2e",
                                                                         "version": "1"}}})
        send({"method": "initialized"})
        send({"id": 2, "method": "thread/start", "params": {
            "cwd": ws, "approvalPolicy": "on-request", "sandbox": "workspace-write"}})
        for line in proc.stdout:
            m = json.loads(line)
            if m.get("id") == 2 and "result" in m:
                send({"id": 3, "method": "turn/start", "params": {
                    "threadId": m["result"]["thread"]["id"],
                    "input": [{"type": "text", "text": "run the commands"}]}})
            elif m.get("id") in (2, 3) and "error" in m:
                print("app-server: " + json.dumps(m["error"]))
                break
            elif m.get("method") == "mcpServer/elicitation/request":
                q = m["params"]
                questions.append(q)
                leave = q["message"].startswith("The agent asks")
                send({"id": m["id"], "result": {"action": "accept", "content": {
                    "decision": "approved" if leave else "denied",
                    "reason": "" if leave else "not this one"}}})
            elif m.get("method") == "turn/completed":
                break
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()
    return questions


def background(http):
    """exec_command and write_stdin through Codex: the model is offered the
    four tools and reads each result as execgate wrote it."""
    via = " (Streamable HTTP)" if http else ""
    s = session("workspace-write", [
        {"tool": "exec_command", "cmd": 'echo ready; read x; echo "got $x"', "login": False,
         "yield_time_ms": 1000},
        {"tool": "write_stdin", "session_id": 1, "chars": "hi\n", "yield_time_ms": 5000},
        {"tool": "exec_command", "cmd": "python3 -i -q", "login": False, "tty": True,
         "yield_time_ms": 1000},
        {"tool": "write_stdin", "session_id": 2, "chars": "print(6*7)\n", "yield_time_ms": 1000},
        {"tool": "kill_process", "session_id": 2},
    ], "", http)
    o = s["outputs"]
    check(s["status"] == 0, "background: codex exec exits 0" + via, s["stderr"][-2000:])
    check(all("mcp__execgate/" + t in s["tools"] for t in
              ("exec_command", "write_stdin", "list_processes", "kill_process")),
          "the model is offered the background processes' tools" + via, repr(s["tools"]))
    # Codex shows the model structuredContent, after its own "Wall time"
    r = result_of(o.get(0))
    check(r is not None and r.get("session_id") == 1 and r["output"] == "ready\n",
          "exec_command: the model reads the first output and the session id" + via,
          repr(o.get(0)))
    r = result_of(o.get(1))
    check(r is not None and r.get("exit_code") == 0 and r["output"] == "got hi\n",
          "write_stdin: the model reads the answer and the exit code" + via, repr(o.get(1)))
    r = result_of(o.get(3))
    check(r is not None and "42\r\n" in r["output"], "python3 -i on a terminal answers 42" + via,
          repr(o.get(3)))
    r = result_of(o.get(4))
    check(r is not None and r.get("exit_code") == 137, "kill_process ends it" + via,
          repr(o.get(4)))
    finish(s)


def main():
    workspace_write(False)
    workspace_write(True)
    background(False)
    background(True)
    app_server_questions()
    s = session("read-only", [{"command": "touch made; echo st=$?", "login": False}])
    r = result_of(s["outputs"].get(0))
    check(s["status"] == 0 and r is not None and "st=0" not in r["output"] and
          not os.path.exists(os.path.join(s["ws"], "made")),
          "read-only: the workspace is not written", repr(s["outputs"].get(0)))
    finish(s)

    s = session("danger-full-access", [{"command": "touch {outside}/z && echo st=$?",
                                        "login": False}])
    r = result_of(s["outputs"].get(0))
    check(r is not None and "st=0" in r["output"] and
          os.path.exists(os.path.join(s["outside"], "z")),
          "danger-full-access: writes outside the workspace", repr(s["outputs"].get(0)))
    finish(s)
    if FAILED:
        print("%d check(s) failed" % len(FAILED))
        return 1
    print("ok: Codex 0.169 end to end")
    return 0


sys.exit(main())
