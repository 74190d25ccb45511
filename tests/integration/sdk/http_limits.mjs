// The limits of execgate --listen: --max-sessions (one more initialize
// gets 503), --session-idle-ms (a session without requests ends; one whose
// call runs does not), MCP_HTTP_MAX_UNAUTHENTICATED_PER_PEER (connections
// that never authenticate make way for new ones, and a client with the
// token is served beside them), and --max-pending-output
// (a client that reads none of its answers holds its calls back, so the
// server's memory stays bounded).  Exits non-zero with a message on the
// first mismatch.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { check, startServer, stopServer } from "./server.mjs";

const server = process.argv[2];
const MAX_CONNECTIONS = 512; // MCP_HTTP_MAX_CONNECTIONS
const MAX_UNAUTHENTICATED_PER_PEER = 16; // MCP_HTTP_MAX_UNAUTHENTICATED_PER_PEER

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

// Connections that never send a request (never authenticate): one user
// holds at most MAX_UNAUTHENTICATED_PER_PEER of them, each new one taking
// the place of the oldest, and a client with the token is served all the
// while.
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
  // Served: the server reads the request and answers it.  Session C may
  // have ended by now (--session-idle-ms 400, and the connections above
  // take a while on a loaded machine), and then the answer is its 404;
  // a client locked out gets no answer at all.
  const ping = await rpc({ jsonrpc: "2.0", id: 9, method: "ping" }, c.sid);
  check(ping.status === 200 || ping.status === 404,
    `a client with the token is served beside them (got ${ping.status})`);
  // The server drops the oldest as each new one comes; the client hears
  // of each close a little later, so wait for all but the per-user share
  // (a server that keeps more never gets there, and the wait fails).
  await until(`all but ${MAX_UNAUTHENTICATED_PER_PEER} of them are closed`,
    () => closedEarly >= socks.length - MAX_UNAUTHENTICATED_PER_PEER);
  const open = socks.filter((s) => !s.destroyed && s.readyState === "open").length;
  check(open <= MAX_UNAUTHENTICATED_PER_PEER, `at most ${MAX_UNAUTHENTICATED_PER_PEER} stay open (${open} of ${socks.length})`);
  for (const s of socks) s.destroy();
  await until("the server serves again", async () => (await initialize()).status === 200);
}

await stopServer(srv);

// A session that sends CALLS calls printing 8 MB each, each on a
// connection of its own, and reads none of the answers for a while: with
// --max-pending-output 4 MiB, calls wait once 4 MiB of its answers are
// held, so the server's memory grows by about the answers of the calls
// that were running then (2 of them, 16 MB each: the text and the
// structured copy), not by every answer.  (Answers of 8 MB: the kernel's
// socket buffers take a few MB of each.)  Read again, every answer
// arrives whole.
{
  const CALLS = 20;
  const OUTPUT = 8000000;
  const held = await startServer(server, ["--listen", "127.0.0.1:0", "--token-file", tokenFile, "--rules", rules,
    "--max-calls", "2", "--max-output-bytes", String(2 * OUTPUT), "--max-pending-output", String(4 << 20), "--sandbox", '{"type":"danger-full-access"}'],
    // freed memory is given back at once, so the RSS measures what is held
    { env: { ...process.env, ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ""}:quarantine_size_mb=0` } });
  const hurl = new URL(held.url);
  const htoken = readFileSync(tokenFile, "utf8").trim();
  const init = await fetch(held.url, { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "stuck", version: "1" } } }),
    headers: { Authorization: `Bearer ${htoken}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" } });
  const sid = init.headers.get("mcp-session-id");
  check(init.status === 200 && sid, "the stuck client's session");
  await init.text();
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${held.proc.pid}/status`, "utf8"))[1]);
  const before = rss();
  const socks = [];
  for (let i = 0; i < CALLS; i++) {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 10 + i, method: "tools/call", params: { name: "shell",
      arguments: { command: `head -c ${OUTPUT} /dev/zero | tr '\\0' a`, workdir: top, login: false } } });
    const s = net.connect(Number(hurl.port), "127.0.0.1");
    s.pause(); // nothing is read until the end
    s.on("error", () => {});
    const chunks = [];
    s.on("data", (d) => chunks.push(d));
    s.write(`POST ${hurl.pathname} HTTP/1.1\r\nHost: ${hurl.host}\r\nAuthorization: Bearer ${htoken}\r\n` +
      `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: ${sid}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    socks.push({ s, chunks });
  }
  let most = before;
  for (let i = 0; i < 16; i++) {
    await new Promise((r) => setTimeout(r, 500));
    most = Math.max(most, rss());
  }
  console.log(`stuck HTTP client: server rss ${before} -> at most ${most} KiB`);
  // 2 or 3 answers held, allocator slack; without the bound, every answer
  check(most - before < 100 * 1024, `the held answers stay bounded (rss grew by ${most - before} KiB)`);
  for (const { s, chunks } of socks) {
    s.resume();
    await until("an answer arrives whole", () => {
      const text = Buffer.concat(chunks).toString();
      const at = text.indexOf("\r\n\r\n");
      const len = /content-length: (\d+)/i.exec(text);
      return at > 0 && len && Buffer.byteLength(text) >= at + 4 + Number(len[1]);
    });
    const text = Buffer.concat(chunks).toString();
    const answer = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4));
    const out = answer.result?.structuredContent?.output ?? "";
    check(out.length === OUTPUT && /^a+$/.test(out), `a held answer arrives whole (${out.length} bytes)`);
    s.destroy();
  }
  await stopServer(held);
}

rmSync(top, { recursive: true, force: true });
console.log("ok: --max-sessions, --session-idle-ms, the connection limit and --max-pending-output");
