// The official TypeScript SDK's StreamableHTTPClientTransport against one
// execgate serving HTTP sessions (--listen 127.0.0.1:0 and a Unix
// socket): the token and Origin checks, tools/list, calls, progress,
// elicitation accepted and declined, cancellation, and two sessions at
// once with policies of their own whose questions and calls stay theirs:
// DELETE of one kills its running call and leaves the other's.  Exits
// non-zero with a message on the first mismatch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { check, startServer, stopServer } from "./server.mjs";

const server = process.argv[2];

const top = mkdtempSync(join(tmpdir(), "execgate-sdk-http-"));
chmodSync(top, 0o755); // another user may reach the socket: its own mode must stop them
const rules = join(top, "rules");
mkdirSync(rules);
writeFileSync(join(rules, "t.rules"), 'prefix_rule(pattern=["sh", "-c"], decision="prompt")\n');
const dirA = mkdtempSync(join(top, "a-"));
const dirB = mkdtempSync(join(top, "b-"));
const outside = mkdtempSync("/var/tmp/execgate-sdk-http-outside-");
const sock = join(top, "mcp.sock");
const tokenFile = join(top, "token");

// The server, and the URL it prints: both addresses, in the order given
// (the socket exists once its line is out).
const srv = await startServer(server, ["--listen", "127.0.0.1:0", "--listen", `unix:${sock}`, "--token-file", tokenFile, "--rules", rules], {
  echo: true,
  ready: (err) => err.includes(`execgate: listening on unix:${sock} `),
});
const url = srv.url;

// The token file: made, mode 0600, 32 random bytes in hex.
const token = readFileSync(tokenFile, "utf8").trim();
check(/^[0-9a-f]{64}$/.test(token), `token is 64 hex digits (got ${token.length} characters)`);
check((statSync(tokenFile).mode & 0o777) === 0o600, "token file mode 0600");
check((statSync(sock).mode & 0o777) === 0o600, "socket mode 0600");

// ---- refusals ----
const init = JSON.stringify({
  jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});
const post = (headers) =>
  fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers },
    body: init,
  });
check((await post({})).status === 401, "no token: 401");
check((await post({ Authorization: "Bearer " + "0".repeat(64) })).status === 401, "wrong token: 401");
check((await post({ Authorization: token })).status === 401, "token without Bearer: 401");
check((await post({ Authorization: `Bearer ${token}`, Origin: "http://evil.example" })).status === 403,
  "Origin http://evil.example: 403");
{
  const r = await post({ Authorization: `Bearer ${token}`, Origin: "http://127.0.0.1:1234" });
  check(r.status === 200 && r.headers.get("mcp-session-id"), "a loopback Origin with the token: a session");
  const del = await fetch(url, { method: "DELETE", headers: { Authorization: `Bearer ${token}`, "Mcp-Session-Id": r.headers.get("mcp-session-id") } });
  check(del.status === 200, `DELETE: 200 (got ${del.status})`);
}

// The Unix socket: with --token-file it asks for the token too; another
// user cannot connect at all (mode 0600).
function unixPost(body, sid, auth = `Bearer ${token}`) {
  return new Promise((resolve, reject) => {
    const headers = { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) };
    if (sid) headers["Mcp-Session-Id"] = sid;
    if (auth) headers.Authorization = auth;
    const req = http.request({ socketPath: sock, path: "/mcp", method: "POST", headers }, (res) => {
      let data = "";
      res.on("data", (d) => (data += d));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on("error", reject);
    req.end(body);
  });
}
{
  check((await unixPost(init, undefined, null)).status === 401, "the Unix socket without the token: 401");
  const r = await unixPost(init);
  check(r.status === 200 && JSON.parse(r.body).result.serverInfo.name === "execgate", "initialize over the Unix socket");
  const sid = r.headers["mcp-session-id"];
  const call = await unixPost(JSON.stringify({
    jsonrpc: "2.0", id: 2, method: "tools/call",
    params: { name: "shell", arguments: { command: "echo over-unix", workdir: dirA, login: false } },
  }), sid);
  check(JSON.parse(call.body).result.structuredContent.output === "over-unix\n", `a call over the Unix socket (got ${call.body})`);
  if (process.getuid() === 0) {
    const other = spawnSync(process.execPath, ["-e", `
      require("net").connect(${JSON.stringify(sock)})
        .on("connect", () => { console.log("connected"); process.exit(0); })
        .on("error", (e) => { console.log(e.code); process.exit(0); });`], { uid: 65534, gid: 65534, encoding: "utf8" });
    check(other.stdout.trim() === "EACCES", `another user connecting to the socket: EACCES (got ${other.stdout}${other.stderr})`);
  } else {
    console.log("note: not root: the other-user connection to the socket is not tried");
  }
}

// ---- two SDK sessions ----
const { z } = await import("zod");
async function connect(name, policy, cwd) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: "1.0.0" }, { capabilities: { elicitation: {} } });
  const asked = [];
  const state = { answer: { action: "decline" }, asked };
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return state.answer;
  });
  await client.connect(transport);
  check(transport.sessionId && /^[0-9a-f]{32}$/.test(transport.sessionId), `${name}: a session id`);
  await client.request(
    { method: "codex/sandbox-state/update", params: { sandboxPolicy: policy, sandboxCwd: cwd } },
    z.object({}).passthrough(),
  );
  return { client, transport, state };
}
const A = await connect("session-a", { type: "read-only" }, dirA);
const B = await connect("session-b", { type: "workspace-write", network_access: false }, dirB);
check(A.transport.sessionId !== B.transport.sessionId, "two sessions, two ids");

// (long calls get a timeout far beyond the test's waits: only what the
// test does may end them)
const shell = (who, command, dir, opts) =>
  who.client.callTool({ name: "shell", arguments: { command, workdir: dir, login: false, timeout_ms: 600000 } }, undefined,
    { timeout: 600000, ...opts });

{
  const { tools } = await A.client.listTools();
  check(tools[0].name === "shell" && tools.length === 5, "tools/list: shell and the background processes' tools");
}

// Each call runs under its own session's policy, at the same time.
{
  const write = (dir) => `touch ${dir}/made 2>/dev/null; echo "st=$?"`;
  const [ra, rb] = await Promise.all([shell(A, write(dirA), dirA), shell(B, write(dirB), dirB)]);
  check(ra.structuredContent.output === "st=1\n" && !existsSync(join(dirA, "made")),
    `A (read-only) cannot write (got ${JSON.stringify(ra.structuredContent)})`);
  check(rb.structuredContent.output === "st=0\n" && existsSync(join(dirB, "made")),
    `B (workspace-write) writes its cwd (got ${JSON.stringify(rb.structuredContent)})`);
}

// Progress reaches the SDK's onprogress (the answer then comes as SSE).
{
  const progress = [];
  const r = await shell(A, "echo first; sleep 0.5; echo second", dirA, { onprogress: (n) => progress.push(n.message) });
  check(r.structuredContent.output === "first\nsecond\n", "progress call output");
  check(progress.includes("first"), `progress notifications (got ${JSON.stringify(progress)})`);
}

// Elicitation: A's question goes to A alone; accept escalates, decline denies.
{
  A.state.answer = { action: "accept", content: { decision: "approved" } };
  let r = await shell(A, `sh -c 'touch ${outside}/x'; echo "st=$?"`, dirA);
  check(A.state.asked.length === 1, `A asked once (got ${A.state.asked.length})`);
  check(r.structuredContent.output === "st=0\n" && existsSync(join(outside, "x")),
    `accepted: escalated (got ${JSON.stringify(r.structuredContent)})`);
  A.state.answer = { action: "decline" };
  r = await shell(A, `sh -c 'touch ${outside}/y'; echo "st=$?"`, dirA);
  check(A.state.asked.length === 2, "A asked again");
  check(r.structuredContent.output === "Execution denied: User declined execution\nst=1\n" && !existsSync(join(outside, "y")),
    `declined: denied (got ${JSON.stringify(r.structuredContent)})`);
  check(B.state.asked.length === 0, `B saw none of A's questions (got ${B.state.asked.length})`);
  // what A approved for its session is A's: B is asked
  A.state.answer = { action: "accept", content: { decision: "approved_for_session" } };
  r = await shell(A, `sh -c 'echo once'`, dirA);
  check(r.structuredContent.output === "once\n" && A.state.asked.length === 3, "A approves for its session");
  r = await shell(A, `sh -c 'echo once'`, dirA);
  check(A.state.asked.length === 3, "A is not asked again");
  B.state.answer = { action: "decline" };
  r = await shell(B, `sh -c 'echo once'`, dirB);
  check(B.state.asked.length === 1 && /declined/.test(r.structuredContent.output),
    `B's session is asked: A's approval is A's (got ${JSON.stringify(r.structuredContent)})`);
}

// A process of a call, found by a marker in its argv (the sandbox has a
// PID namespace of its own: the marker, not a pid, names it from here).
function running(marker) {
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(marker)) return true;
    } catch {}
  }
  return false;
}
async function until(what, cond) {
  for (let i = 0; i < 400; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  check(false, `waited 20 s for: ${what}`);
}

// Cancellation: the SDK's abort sends notifications/cancelled; the call's
// processes die and the session goes on.
{
  const marker = `execgate-http-cancel-${process.pid}`;
  const ac = new AbortController();
  const p = shell(A, `exec -a ${marker} sleep 1000`, dirA, { signal: ac.signal }).then(
    () => "answered",
    (e) => "rejected",
  );
  await until("the call to cancel runs", () => running(marker));
  ac.abort("test cancels");
  check((await p) === "rejected", "the cancelled call's promise rejects");
  await until("the cancelled call's process is gone", () => !running(marker));
  const r = await shell(A, "echo still-here", dirA);
  check(r.structuredContent.output === "still-here\n", "the session works after a cancel");
}

// DELETE of A kills A's running call and leaves B's.
{
  const marker = `execgate-http-delete-${process.pid}`;
  const pa = shell(A, `exec -a ${marker} sleep 1000`, dirA).then(() => "answered", () => "rejected");
  const pb = shell(B, `touch started; while [ ! -e go ]; do sleep 0.05; done; echo B-done`, dirB);
  await until("A's and B's calls run", () => running(marker) && existsSync(join(dirB, "started")));
  await A.transport.terminateSession();
  await until("A's call is killed", () => !running(marker));
  writeFileSync(join(dirB, "go"), "");
  const rb = await pb;
  check(rb.structuredContent.output === "B-done\n", `B's call went on (got ${JSON.stringify(rb.structuredContent)})`);
  const gone = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}`, "Mcp-Session-Id": A.transport.sessionId ?? "x" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
  });
  check(gone.status === 404, `a request of the ended session: 404 (got ${gone.status})`);
  void pa;
}

await A.client.close();
await B.client.close();
await stopServer(srv);
check(!existsSync(sock), "the socket is removed at exit");
rmSync(top, { recursive: true, force: true });
rmSync(outside, { recursive: true, force: true });
console.log("ok: Streamable HTTP: token, Origin, Unix socket, SDK sessions with their own policies, progress, elicitation, cancel, DELETE");
