// What other features ask or share, in HTTP sessions (--listen): a
// network prompt goes to the client of the session whose call connects,
// and its "approved_for_session" holds for that session alone; a login
// snapshot's capture runs as a call of the session whose login call needed
// it (the profile's questions go to that client), and the snapshot serves
// the other sessions' login calls with the same key; a session that ends
// while its capture runs calls the capture off without failing it, and the
// login call another session had waiting for it gets a capture of its own.
// Exits non-zero with a message on the first mismatch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { check, startServer, stopServer } from "./server.mjs";

const server = process.argv[2];
async function until(what, cond) {
  for (let i = 0; i < 600; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  check(false, `waited 30 s for: ${what}`);
}

// HOME with a profile, the workdir, a directory the sandbox may write
// (where the profile counts its runs), the server's XDG_RUNTIME_DIR.
const top = mkdtempSync(join(tmpdir(), "execgate-sdk-http-sessions-"));
chmodSync(top, 0o755);
const home = join(top, "home"), wd = join(top, "wd"), count = join(top, "count"), run = join(top, "run");
for (const d of [home, wd, count, run]) mkdirSync(d);
const rules = join(top, "rules");
mkdirSync(rules);
writeFileSync(join(rules, "t.rules"),
  'network_rule(host="localhost", protocol="http", decision="prompt")\n' +
  'prefix_rule(pattern=["sh", "-c", "echo profile-asks"], decision="prompt")\n');
// The profile counts its runs, asks about one program, and, once `hold`
// exists, its first run from then on waits for `go` (the later ones do
// not wait: `held` says one did).
function writeProfile(value) {
  writeFileSync(join(home, ".profile"),
    `echo run >> ${count}/runs\n` +
    `export SNAP_VAR=${value}\n` +
    `sh -c 'echo profile-asks' >/dev/null\n` +
    `if [ -e ${count}/hold ] && mkdir ${count}/held 2>/dev/null; then\n` +
    `  while [ ! -e ${count}/go ]; do sleep 0.05; done\n` +
    `fi\n`);
}
const runs = () => (existsSync(join(count, "runs")) ? readFileSync(join(count, "runs"), "utf8").split("\n").length - 1 : 0);
writeProfile("one");

// A page server on the host's loopback.
const pages = http.createServer((req, res) => res.end(`page ${req.url}\n`));
await new Promise((r) => pages.listen(0, "127.0.0.1", r));
const port = pages.address().port;

const tokenFile = join(top, "token");
const srv = await startServer(server, ["--listen", "127.0.0.1:0", "--token-file", tokenFile, "--rules", rules], {
  env: { ...process.env, HOME: home, XDG_RUNTIME_DIR: run },
  echo: true,
});
const url = srv.url;
const token = readFileSync(tokenFile, "utf8").trim();
const times = (re) => (srv.stderr.match(re) || []).length;

// Sessions with the same policy: workspace-write, the network off (so
// through the proxy), only `count` writable beside the workdir.
const { z } = await import("zod");
const policy = {
  type: "workspace-write", writable_roots: [count], exclude_slash_tmp: true,
  exclude_tmpdir_env_var: true, network_access: false,
};
async function connect(name) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: "1.0.0" }, { capabilities: { elicitation: {} } });
  const state = { answer: { action: "decline" }, asked: [] };
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    state.asked.push(req.params.message);
    return state.answer;
  });
  await client.connect(transport);
  await client.request(
    { method: "codex/sandbox-state/update", params: { sandboxPolicy: policy, sandboxCwd: wd } },
    z.object({}).passthrough(),
  );
  return { client, transport, state };
}
const A = await connect("session-a");
const B = await connect("session-b");
const shell = (who, command, login) =>
  who.client.callTool({ name: "shell", arguments: { command, workdir: wd, login, timeout_ms: 600000 } }, undefined,
    { timeout: 600000 });
const out = (r) => r.structuredContent.output;

// ---- the network proxy's prompts ----
{
  const curl = `curl -sS http://localhost:${port}/a`;
  A.state.answer = { action: "accept", content: { decision: "approved_for_session" } };
  let r = await shell(A, curl, false);
  check(out(r) === "page /a\n", `A's call reaches the page once A approves (got ${JSON.stringify(r.structuredContent)})`);
  check(A.state.asked.length === 1 && A.state.asked[0].includes("Allow network access to `localhost:"),
    `A's client is asked (got ${JSON.stringify(A.state.asked)})`);
  check(B.state.asked.length === 0, `B is not asked about A's connection (got ${JSON.stringify(B.state.asked)})`);
  r = await shell(A, curl, false);
  check(out(r) === "page /a\n" && A.state.asked.length === 1, "A approved localhost for its session: not asked again");
  B.state.answer = { action: "decline" };
  r = await shell(B, curl, false);
  check(B.state.asked.length === 1 && A.state.asked.length === 1,
    `B's connection asks B, not A (A ${A.state.asked.length}, B ${B.state.asked.length})`);
  check(/declined/.test(out(r)) && !/page/.test(out(r)), `B declined: refused (got ${JSON.stringify(r.structuredContent)})`);
}

// ---- login snapshots ----
{
  A.state.asked.length = 0;
  B.state.asked.length = 0;
  A.state.answer = { action: "accept", content: { decision: "approved" } };
  B.state.answer = { action: "decline" };
  let r = await shell(A, "echo $SNAP_VAR", true);
  check(out(r) === "one\n", `A's login call sees the profile (got ${JSON.stringify(r.structuredContent)})`);
  check(runs() === 1, `one capture (runs ${runs()})`);
  await until("the capture's log line", () => times(/login snapshot: taken/g) === 1);
  check(A.state.asked.length === 1 && A.state.asked[0].includes("profile-asks"),
    `the capture's question goes to A, whose call needed it (got ${JSON.stringify(A.state.asked)})`);
  r = await shell(B, "echo $SNAP_VAR", true);
  check(out(r) === "one\n", `B's login call sees the profile (got ${JSON.stringify(r.structuredContent)})`);
  check(runs() === 1 && B.state.asked.length === 0, `B's login call uses the snapshot A's call took (runs ${runs()})`);
}

// ---- the session of a running capture ends ----
{
  A.state.asked.length = 0;
  B.state.asked.length = 0;
  B.state.answer = { action: "accept", content: { decision: "approved" } };
  writeFileSync(join(count, "hold"), "");
  writeProfile("second"); // a startup file changed: the next login call captures again
  const pa = shell(A, "echo $SNAP_VAR", true).then(() => "answered", () => "rejected");
  await until("A's capture runs (and waits)", () => existsSync(join(count, "held")));
  check(runs() === 2, `the capture for A's call runs (runs ${runs()})`);
  const pb = shell(B, "echo $SNAP_VAR", true);
  // B's login call waits for the capture; the other calls of the server go on
  const C = await connect("session-c");
  const rc = await shell(C, "echo not-held", false);
  check(out(rc) === "not-held\n", "another session's call runs while a capture runs");
  await A.transport.terminateSession();
  const rb = await pb;
  check(out(rb) === "second\n", `B's login call, after A ended, sees the profile (got ${JSON.stringify(rb.structuredContent)})`);
  check(runs() === 3, `B's call got a capture of its own (runs ${runs()})`);
  await until("A's capture called off, and B's taken", () =>
    times(/login snapshot: its capture was called off/g) === 1 && times(/login snapshot: taken/g) === 2);
  check(times(/login snapshot: not taken/g) === 0, "no capture failed");
  check(B.state.asked.length === 1 && B.state.asked[0].includes("profile-asks"),
    `B's capture asks B (got ${JSON.stringify(B.state.asked)})`);
  await C.client.close();
  void pa;
}

await B.client.close();
await stopServer(srv);
pages.close();
rmSync(top, { recursive: true, force: true });
console.log("ok: HTTP sessions: network prompts and login snapshot captures go to their own session");
