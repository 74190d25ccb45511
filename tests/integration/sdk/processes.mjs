// The official TypeScript SDK driving execgate's background processes
// (exec_command, write_stdin, list_processes, kill_process), over stdio
// and over Streamable HTTP: python3 -i on a terminal answers 42, Ctrl-C
// stops a sleep, a forbidden program is refused inside a process, a
// prompt rule hit by a process is asked while no tool call is in flight
// (over HTTP on the session's GET stream), output past the ring is marked
// as dropped, kill_process leaves nothing, and the end of a session
// (stdio EOF, HTTP DELETE, idle expiry) leaves none of its processes while
// another session's runs on.  A client that never opens a GET stream gets
// its process's question with its next request.  Processes are found by a marker (a sleep
// for an odd number of seconds).  Exits non-zero on the first mismatch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { check, startServer, stopServer } from "./server.mjs";

const server = process.argv[2];
const top = mkdtempSync(join(tmpdir(), "execgate-sdk-procs-"));
const rules = join(top, "rules");
mkdirSync(rules);
writeFileSync(join(rules, "t.rules"),
  'prefix_rule(pattern=["touch", "asked"], decision="prompt")\n' +
  'prefix_rule(pattern=["touch", "made"], decision="forbidden", justification="sdk-test: not that one")\n');
const base = 3000 + (process.pid % 1000);
const mark = (n) => `${base}.${String(n).padStart(3, "0")}`;

// ---- processes by marker ----
function countSleeps(m) {
  const want = `sleep\0${m}\0`;
  let n = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "latin1") === want) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}
async function waitSleeps(m, ok, ms) {
  const end = Date.now() + ms;
  let n = countSleeps(m);
  while (!ok(n) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
    n = countSleeps(m);
  }
  return n;
}

// ---- a client, and the tools through it ----
function makeClient(name) {
  const client = new Client({ name, version: "1.0.0" }, { capabilities: { elicitation: {} } });
  const s = { client, inflight: 0, asked: [], answer: { action: "accept", content: { decision: "approved" } } };
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    s.asked.push({ params: req.params, inflight: s.inflight });
    if (s.onAsk) s.onAsk();
    return s.answer;
  });
  return s;
}
async function tool(s, name, args) {
  s.inflight++;
  try {
    return await s.client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  } finally {
    s.inflight--;
  }
}
const start = (s, cmd, dir, tty = false, yieldMs = 0) =>
  tool(s, "exec_command", { cmd, workdir: dir, login: false, tty, yield_time_ms: yieldMs });
function sessionId(r) {
  check(Number.isInteger(r.structuredContent?.session_id), `a running process (got ${JSON.stringify(r)})`);
  return r.structuredContent.session_id;
}
// Polls the process (writing chars first) until its output holds want or
// it has ended.
async function readUntil(s, id, chars, want) {
  let all = "";
  for (let i = 0; i < 60; i++) {
    const r = await tool(s, "write_stdin", { session_id: id, chars: i === 0 ? chars : "", yield_time_ms: 1000 });
    all += r.structuredContent.output;
    if (r.structuredContent.exit_code !== undefined) return { all, exit: r.structuredContent.exit_code };
    if (want && all.includes(want)) return { all, exit: undefined };
  }
  return { all, exit: undefined };
}

// The tests every transport runs: dir is the session's workdir.
async function common(s, dir, what) {
  // python3 -i on a terminal
  let id = sessionId(await start(s, "python3 -i -q", dir, true));
  let got = await readUntil(s, id, "print(6*7)\n", "42\r\n");
  check(got.all.includes("42\r\n") && got.exit === undefined, `${what}: python3 -i answers 42 (got ${JSON.stringify(got)})`);
  got = await readUntil(s, id, "exit()\n", null);
  check(got.exit === 0, `${what}: python3 exits 0 (got ${JSON.stringify(got)})`);

  // Ctrl-C stops a sleep
  const m1 = mark(31);
  id = sessionId(await start(s, `sleep ${m1}`, dir, true));
  check((await waitSleeps(m1, (n) => n === 1, 20000)) === 1, `${what}: the sleep runs`);
  got = await readUntil(s, id, "\u0003", null);
  check(got.exit === 130, `${what}: Ctrl-C ends the sleep with SIGINT (got ${JSON.stringify(got)})`);
  check((await waitSleeps(m1, (n) => n === 0, 2000)) === 0, `${what}: no sleep left after Ctrl-C`);

  // a forbidden program inside a process
  id = sessionId(await start(s, 'read x; touch made; echo "after $?"', dir));
  got = await readUntil(s, id, "go\n", null);
  check(got.all.includes("sdk-test: not that one") && !got.all.includes("after 0") && !existsSync(join(dir, "made")),
    `${what}: the forbidden touch is refused and says why (got ${JSON.stringify(got)})`);

  // a prompt while no call is in flight
  s.asked.length = 0;
  const asked = new Promise((resolve) => (s.onAsk = resolve));
  id = sessionId(await start(s, "read x; sleep 1; touch asked && echo done", dir));
  sessionId(await tool(s, "write_stdin", { session_id: id, chars: "go\n", yield_time_ms: 0 }));
  await asked;
  s.onAsk = null;
  check(s.asked.length === 1 && s.asked[0].inflight === 0,
    `${what}: asked once, with no call in flight (got ${JSON.stringify(s.asked)})`);
  check(/touch asked/.test(s.asked[0].params.message), `${what}: the question names the command (got ${s.asked[0].params.message})`);
  got = await readUntil(s, id, "", "done");
  check(got.all.includes("done\n") && existsSync(join(dir, "asked")), `${what}: approved, it ran (got ${JSON.stringify(got)})`);

  // output past the ring (8 KiB a process here)
  const r = await start(s, "seq 1 100000", dir, false, 30000);
  check(r.structuredContent.exit_code === 0 && r.structuredContent.output_dropped === 588895 - 8192 &&
    r.structuredContent.output.includes("[execgate: 580703 bytes of output omitted]") &&
    r.structuredContent.output.endsWith("\n99999\n100000\n"),
    `${what}: output past the ring is marked (got ${JSON.stringify(r.structuredContent).slice(0, 400)})`);

  // kill_process: it is gone, and so is what it started
  const m2 = mark(33);
  id = sessionId(await start(s, `sleep ${m2} & sleep ${m2}`, dir));
  check((await waitSleeps(m2, (n) => n === 2, 20000)) === 2, `${what}: both sleeps run`);
  const k = await tool(s, "kill_process", { session_id: id });
  check(k.structuredContent.exit_code === 137, `${what}: killed (got ${JSON.stringify(k.structuredContent)})`);
  check((await waitSleeps(m2, (n) => n === 0, 2000)) === 0, `${what}: no sleep left after kill_process`);
  const l = await tool(s, "list_processes", {});
  check(l.structuredContent.processes.length === 0, `${what}: none listed (got ${JSON.stringify(l.structuredContent)})`);
}

const limits = ["--max-background", "2", "--max-background-output", "16384"];

// ---- stdio ----
{
  const dir = mkdtempSync(join(top, "stdio-"));
  const policy = { sandboxPolicy: { type: "workspace-write", network_access: false }, sandboxCwd: dir };
  const transport = new StdioClientTransport({
    command: server,
    args: ["--rules", rules, "--sandbox", JSON.stringify(policy), ...limits],
    stderr: "inherit",
  });
  const s = makeClient("sdk-processes-stdio");
  await s.client.connect(transport);
  await common(s, dir, "stdio");
  // the end of input ends the session's processes
  const m = mark(35);
  sessionId(await start(s, `sleep ${m}`, dir, true));
  sessionId(await start(s, `setsid sleep ${m} & sleep ${m}`, dir));
  check((await waitSleeps(m, (n) => n === 3, 20000)) === 3, "stdio: three sleeps run");
  await s.client.close();
  check((await waitSleeps(m, (n) => n === 0, 5000)) === 0, "stdio: none left after the end of input");
  console.log("ok: stdio");
}

// ---- Streamable HTTP ----
{
  const tokenFile = join(top, "token");
  const srv = await startServer(server, ["--listen", "127.0.0.1:0", "--token-file", tokenFile, "--rules", rules,
    "--session-idle-ms", "3000", ...limits], { echo: true });
  const token = readFileSync(tokenFile, "utf8").trim();
  async function connect(name, dir) {
    const transport = new StreamableHTTPClientTransport(new URL(srv.url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    const s = makeClient(name);
    await s.client.connect(transport);
    await s.client.request(
      { method: "codex/sandbox-state/update",
        params: { sandboxPolicy: { type: "workspace-write", network_access: false }, sandboxCwd: dir } },
      (await import("zod")).z.object({}).passthrough(),
    );
    s.transport = transport;
    return s;
  }
  const dirA = mkdtempSync(join(top, "http-a-"));
  const dirB = mkdtempSync(join(top, "http-b-"));
  const A = await connect("sdk-processes-a", dirA);
  const B = await connect("sdk-processes-b", dirB);
  await common(A, dirA, "http");

  // a server a process of A started is reached by A's later shell call over
  // loopback, and not by B's: each session has its own network namespace
  {
    const web = sessionId(await start(A, "echo served > page.txt; exec python3 -m http.server 18643", dirA));
    const curl = (s, dir) => s.client.callTool({ name: "shell",
      arguments: { command: "curl -s -m 2 http://127.0.0.1:18643/page.txt; echo \" st=$?\"", workdir: dir, login: false } });
    let seen = "";
    for (let i = 0; i < 50 && !seen.startsWith("served"); i++) {
      seen = (await curl(A, dirA)).structuredContent.output;
      if (!seen.startsWith("served")) await new Promise((r) => setTimeout(r, 100));
    }
    check(seen === "served\n st=0\n", `http: A's later call reaches A's server (got ${seen})`);
    const fromB = (await curl(B, dirB)).structuredContent.output;
    check(!fromB.includes("served"), `http: B's call does not reach A's server (got ${fromB})`);
    await tool(A, "kill_process", { session_id: web });
  }

  // DELETE of one session ends its processes; the other's runs on, and
  // its process ids are its own
  const ma = mark(37), mb = mark(39);
  const idA = sessionId(await start(A, `sleep ${ma}`, dirA, true));
  const idB = sessionId(await start(B, `sleep ${mb}`, dirB));
  check((await waitSleeps(ma, (n) => n === 1, 20000)) === 1 && (await waitSleeps(mb, (n) => n === 1, 20000)) === 1,
    "http: a sleep in each session");
  const other = await tool(B, "write_stdin", { session_id: idA === idB ? idA + 1000 : idA, chars: "", yield_time_ms: 0 });
  check(other.isError && /No process with session_id/.test(other.content[0].text),
    `http: another session's process is not this one's (got ${JSON.stringify(other)})`);
  await A.transport.terminateSession();
  await A.client.close();
  check((await waitSleeps(ma, (n) => n === 0, 5000)) === 0, "http: none left after DELETE");
  check(countSleeps(mb) === 1, "http: the other session's process runs on");
  const still = await tool(B, "write_stdin", { session_id: idB, chars: "", yield_time_ms: 0 });
  check(still.structuredContent.session_id === idB, `http: and is still B's (got ${JSON.stringify(still)})`);

  // a client that never opens a GET stream: the question of its process
  // waits, and goes out on the stream of its next request
  {
    const dirC = mkdtempSync(join(top, "http-c-"));
    const headers = (sid) => ({ "Content-Type": "application/json", Accept: "application/json, text/event-stream",
      Authorization: `Bearer ${token}`, ...(sid ? { "Mcp-Session-Id": sid } : {}) });
    let next = 1;
    const rawPost = async (sid, method, params) => {
      const r = await fetch(srv.url, { method: "POST", headers: headers(sid),
        body: JSON.stringify({ jsonrpc: "2.0", id: next++, method, params }) });
      const text = await r.text();
      const msgs = (r.headers.get("content-type") || "").startsWith("text/event-stream")
        ? text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)))
        : [JSON.parse(text)];
      return { sid: r.headers.get("mcp-session-id"), msgs };
    };
    const init = await rawPost(null, "initialize",
      { protocolVersion: "2025-06-18", capabilities: { elicitation: {} }, clientInfo: { name: "raw", version: "1" } });
    const sid = init.sid;
    await fetch(srv.url, { method: "POST", headers: headers(sid),
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
    await rawPost(sid, "codex/sandbox-state/update",
      { sandboxPolicy: { type: "workspace-write", network_access: false }, sandboxCwd: dirC });
    const callTool = async (name, args) => {
      const r = await rawPost(sid, "tools/call", { name, arguments: args });
      return { result: r.msgs.find((m) => m.result)?.result, asks: r.msgs.filter((m) => m.method === "elicitation/create") };
    };
    const started = await callTool("exec_command",
      { cmd: "read x; touch asked && echo done", workdir: dirC, login: false, yield_time_ms: 0 });
    const id = started.result.structuredContent.session_id;
    await callTool("write_stdin", { session_id: id, chars: "go\n", yield_time_ms: 0 });
    // list_processes is answered at once: the question rides on one of them
    let ask = null;
    for (let i = 0; i < 100 && !ask; i++) {
      const l = await callTool("list_processes", {});
      ask = l.asks[0] || null;
      if (!ask) await new Promise((r) => setTimeout(r, 100));
    }
    check(ask && /touch asked/.test(ask.params.message), `http without a GET stream: the question comes with a later request (got ${JSON.stringify(ask)})`);
    await fetch(srv.url, { method: "POST", headers: headers(sid),
      body: JSON.stringify({ jsonrpc: "2.0", id: ask.id, result: { action: "accept", content: { decision: "approved" } } }) });
    let out = "";
    for (let i = 0; i < 30 && !out.includes("done"); i++) {
      const r = await callTool("write_stdin", { session_id: id, chars: "", yield_time_ms: 1000 });
      out += r.result.structuredContent.output;
    }
    check(out.includes("done\n") && existsSync(join(dirC, "asked")), `http without a GET stream: approved, it ran (got ${out})`);
    const del = await fetch(srv.url, { method: "DELETE", headers: headers(sid) });
    check(del.status === 200, `http without a GET stream: DELETE (got ${del.status})`);
  }

  // idle expiry: B says nothing more; its session and its process end
  await B.client.close(); // closes the GET stream, sends no DELETE
  check((await waitSleeps(mb, (n) => n === 0, 20000)) === 0, "http: none left after idle expiry");
  await stopServer(srv);
  console.log("ok: Streamable HTTP");
}
rmSync(top, { recursive: true, force: true });
console.log("ok: TypeScript SDK: background processes over stdio and Streamable HTTP");
