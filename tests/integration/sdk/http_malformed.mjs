// Malformed HTTP against execgate --listen, while an SDK session is open:
// bad request lines, headers too large, a body larger than allowed, a
// chunked body cut off, a request cut off in its headers, and 10,000
// connections of garbage.  Each is refused or dropped on its own
// connection; the session keeps working, and the server exits 0 after
// SIGTERM with no sanitizer report (the test build runs under ASan, UBSan
// and LeakSanitizer: a leak makes the exit status non-zero).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { check, startServer, stopServer } from "./server.mjs";

const server = process.argv[2];
const garbageConnections = Number(process.env.EXECGATE_TEST_GARBAGE_CONNECTIONS ?? 10000);

const top = mkdtempSync(join(tmpdir(), "execgate-sdk-http-bad-"));
const tokenFile = join(top, "token");
const rules = join(top, "rules");
mkdirSync(rules);
const srv = await startServer(server, ["--listen", "127.0.0.1:0", "--token-file", tokenFile, "--max-message-bytes", "65536", "--rules", rules]);
const url = srv.url;
const port = Number(new URL(url).port);
const token = readFileSync(tokenFile, "utf8").trim();

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "bystander", version: "1.0.0" });
await client.connect(transport);
async function stillWorks(what) {
  const r = await client.callTool({ name: "shell", arguments: { command: "echo alive", workdir: top, login: false } });
  check(r.structuredContent.output === "alive\n", `the session works after ${what}`);
}

// Sends bytes on a connection of its own (ending the writing side when
// end is set); resolves with everything the server sent once it closes
// the connection or once idleMs pass without a byte (a partial request
// the server waits on: the test then hangs up itself).
function exchange(bytes, { end = false, idleMs = 300 } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    let got = "";
    let timer = null;
    const done = () => {
      clearTimeout(timer);
      s.destroy();
      resolve(got);
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(done, idleMs);
    };
    s.on("connect", () => {
      s.write(bytes);
      if (end) s.end();
      arm();
    });
    s.on("data", (d) => {
      got += d;
      arm();
    });
    s.on("error", () => {});
    s.on("close", done);
  });
}

const status = (text) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);

check(status(await exchange("GARBAGE\r\n\r\n")) === 400, "a bad request line: 400");
check(status(await exchange("GET /mcp HTTP/9.9.9\r\n\r\n")) === 400, "a bad version: 400");
check(status(await exchange("\x00\x01\x02\x03\r\n\r\n")) === 400, "binary: 400");
check(status(await exchange(`GET /mcp HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(100 * 1024)}\r\n\r\n`)) === 431,
  "100 KiB of headers: 431");
check(status(await exchange(`GET /mcp HTTP/1.1\r\n${"X-H: 1\r\n".repeat(200)}\r\n`)) === 431, "200 headers: 431");
check(status(await exchange(`POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n`)) === 413,
  "a body larger than --max-message-bytes: 413");
check(status(await exchange(`POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${("ffff\r\n" + "x".repeat(0xffff) + "\r\n").repeat(2)}`)) === 413,
  "a chunked body growing past --max-message-bytes: 413");
await stillWorks("bad requests");

// Cut off: a chunked body, headers, a body shorter than its length.
await exchange("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{\"jsonrpc\"", { end: true });
await exchange("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Le", { end: true });
await exchange("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{\"a\"", { end: true });
// ...and left hanging, then dropped by the client
await exchange("POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", { idleMs: 100 });
await stillWorks("requests cut off");

// A well-formed request with a body that is not JSON, and one that is a batch.
{
  const r = await fetch(url, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "Mcp-Session-Id": transport.sessionId }, body: "{not json" });
  check(r.status === 400 && (await r.json()).error.code === -32700, "a body that is not JSON: 400 with -32700");
  const b = await fetch(url, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "Mcp-Session-Id": transport.sessionId }, body: "[]" });
  check(b.status === 400, "a batch: 400");
  const o = await fetch(url, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "Mcp-Session-Id": transport.sessionId }, body: '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}' });
  check(o.status === 400, `an id that is an object: 400 (got ${o.status})`);
}

// Pipelined on one connection: a call, then the DELETE of its session.
// The DELETE is read only once the call's answer is out, never from
// inside the server's handling of the call's end.
{
  const auth = `Authorization: Bearer ${token}\r\n`;
  const init = await fetch(url, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "pipelined", version: "1" } } }),
  });
  const sid = init.headers.get("mcp-session-id");
  await init.text();
  const call = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call",
    params: { name: "shell", arguments: { command: "sleep 0.2; echo piped", workdir: top, login: false } } });
  const got = await exchange(
    `POST /mcp HTTP/1.1\r\nHost: x\r\n${auth}Mcp-Session-Id: ${sid}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(call)}\r\n\r\n${call}` +
    `DELETE /mcp HTTP/1.1\r\nHost: x\r\n${auth}Mcp-Session-Id: ${sid}\r\n\r\n`,
    { idleMs: 3000 });
  const statuses = [...got.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
  check(statuses.join(",") === "200,200" && /piped/.test(got), `a call and a DELETE pipelined: both answered (got ${got.slice(0, 400)})`);
  await stillWorks("a pipelined DELETE");
}

// 10,000 connections of garbage, 100 at a time.
{
  let seed = 12345;
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
  let answered = 0;
  for (let i = 0; i < garbageConnections; i += 100) {
    const batch = [];
    for (let k = 0; k < 100 && i + k < garbageConnections; k++) {
      const n = 1 + (rnd() % 600);
      const bytes = Buffer.alloc(n);
      for (let j = 0; j < n; j++) bytes[j] = rnd() & 0xff;
      // some look like a request first
      const prefix = rnd() % 3 === 0 ? "POST /mcp HTTP/1.1\r\n" : "";
      batch.push(exchange(Buffer.concat([Buffer.from(prefix), bytes]), { end: rnd() % 2 === 0, idleMs: 200 }));
    }
    for (const got of await Promise.all(batch)) if (got) answered++;
  }
  console.log(`${garbageConnections} garbage connections, ${answered} answered (400s and the like)`);
}
await stillWorks(`${garbageConnections} garbage connections`);

await client.close();
await stopServer(srv);
rmSync(top, { recursive: true, force: true });
console.log("ok: malformed HTTP is refused connection by connection; the session keeps working; LSan clean");
