// The limits of execgate --listen: --max-sessions (one more initialize
// gets 503), --session-idle-ms (a session without requests ends; one whose
// call runs does not), and MCP_HTTP_MAX_CONNECTIONS (connections beyond it
// are closed as they come, the others are served).  Exits non-zero with a
// message on the first mismatch.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { check, startServer, stopServer } from "./server.mjs";

const server = process.argv[2];
const MAX_CONNECTIONS = 512; // MCP_HTTP_MAX_CONNECTIONS

const top = mkdtempSync(join(tmpdir(), "execgate-sdk-http-limits-"));
const rules = join(top, "rules");
mkdirSync(rules);
const tokenFile = join(top, "token");
const srv = await startServer(server, ["--listen", "127.0.0.1:0", "--token-file", tokenFile, "--rules", rules,
  "--max-sessions", "2", "--session-idle-ms", "400", "--sandbox", '{"type":"danger-full-access"}']);
const url = srv.url;
const token = readFileSync(tokenFile, "utf8").trim();

async function rpc(body, sid) {
  const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  if (sid) headers["Mcp-Session-Id"] = sid;
  const r = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: r.status, sid: r.headers.get("mcp-session-id"), text: await r.text() };
}
const initialize = () => rpc({ jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "limits", version: "1" } } });
async function until(what, cond) {
  for (let i = 0; i < 400; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  check(false, `waited 20 s for: ${what}`);
}

// C runs a call that waits for a file: a session owed an answer is not idle.
const c = await initialize();
check(c.status === 200 && c.sid, "first session");
const go = join(top, "go");
const call = rpc({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "shell",
  arguments: { command: `while [ ! -e ${go} ]; do sleep 0.05; done; echo C-done`, workdir: top, login: false, timeout_ms: 600000 } } }, c.sid);
// D does nothing after its initialize.
const d = await initialize();
check(d.status === 200 && d.sid, "second session");
const e = await initialize();
check(e.status === 503, `a third session beyond --max-sessions 2: 503 (got ${e.status})`);

// D ends when idle: a new session fits again, and D's id is unknown.
let f = null;
await until("an idle session ends and a new one fits", async () => {
  f = await initialize();
  return f.status === 200;
});
const dGone = await rpc({ jsonrpc: "2.0", id: 3, method: "tools/list" }, d.sid);
check(dGone.status === 404, `the idle session is gone: 404 (got ${dGone.status})`);
writeFileSync(go, "");
const cr = await call;
check(cr.status === 200 && /C-done/.test(cr.text), `the session whose call ran was not ended (got ${cr.status} ${cr.text.slice(0, 200)})`);

// Connections: the ones beyond the limit are closed at once; the
// others stay served.
{
  const port = Number(new URL(url).port);
  const socks = [];
  let closedEarly = 0;
  for (let i = 0; i < MAX_CONNECTIONS + 20; i++) {
    const s = net.connect(port, "127.0.0.1");
    s.on("error", () => {});
    s.on("close", () => closedEarly++);
    socks.push(s);
    await new Promise((r) => s.once("connect", r).once("close", r));
  }
  await until("the connections beyond the limit are closed", () => closedEarly >= 20);
  // this test's own fetch connections (kept alive) count against the
  // limit too: a few more than 20 may be closed, never most
  const open = socks.filter((s) => !s.destroyed && s.readyState === "open").length;
  check(open >= MAX_CONNECTIONS - 16, `the connections within the limit stay open (${open} of ${socks.length}, ${closedEarly} closed)`);
  for (const s of socks) s.destroy();
  await until("the server serves again", async () => (await initialize()).status === 200);
}

await stopServer(srv);
rmSync(top, { recursive: true, force: true });
console.log("ok: --max-sessions, --session-idle-ms and the connection limit");
