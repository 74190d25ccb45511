// The official TypeScript SDK's Client over StdioClientTransport, against
// execgate: initialize, tools/list, a sandbox-state update, and calls.
// Exits non-zero with a message on the first mismatch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const server = process.argv[2];
function check(cond, what) {
  if (!cond) {
    console.error(`FAIL: ${what}`);
    process.exit(1);
  }
}

const workdir = mkdtempSync(join(tmpdir(), "execgate-sdk-"));
const transport = new StdioClientTransport({
  command: server,
  args: ["--sandbox", '{"type":"danger-full-access"}'],
  stderr: "inherit",
});
const client = new Client({ name: "execgate-sdk-test", version: "1.0.0" });
await client.connect(transport);

const info = client.getServerVersion();
check(info && info.name === "execgate", `serverInfo.name is execgate (got ${JSON.stringify(info)})`);
const caps = client.getServerCapabilities();
check(caps.tools !== undefined, "tools capability");
check(caps.experimental?.["codex/sandbox-state"]?.version === "1.0.0", "codex/sandbox-state 1.0.0");

const { tools } = await client.listTools();
check(tools.map((t) => t.name).join() === "shell,exec_command,write_stdin,list_processes,kill_process",
  `shell first, then the background processes' tools (got ${tools.map((t) => t.name)})`);
check(tools[0].inputSchema.required.includes("workdir"), "workdir required");

// The SDK validates structuredContent against outputSchema here.
const r = await client.callTool({
  name: "shell",
  arguments: { command: "echo hi; echo oops >&2; exit 4", workdir, login: false },
});
check(r.isError === false, "isError false");
check(r.structuredContent.output === "hi\noops\n", `output (got ${JSON.stringify(r.structuredContent)})`);
check(r.structuredContent.exit_code === 4, "exit code 4");
check(JSON.parse(r.content[0].text).exit_code === 4, "text content carries the same result");

// The custom request that Codex sends, through the SDK's generic request.
// zod comes with the SDK (its schemas are zod schemas).
const { z } = await import("zod");
{
  const ack = await client.request(
    {
      method: "codex/sandbox-state/update",
      params: { sandboxPolicy: { type: "danger-full-access" }, sandboxCwd: workdir, codexLinuxSandboxExe: null },
    },
    z.object({}).passthrough(),
  );
  check(ack && typeof ack === "object" && Object.keys(ack).length === 0, "update acknowledged with {}");
}

// Progress notifications reach the SDK's onprogress callback.
const progress = [];
const p = await client.callTool(
  { name: "shell", arguments: { command: "echo first; sleep 0.6; echo second", workdir, login: false } },
  undefined,
  { onprogress: (n) => progress.push(n.message) },
);
check(p.structuredContent.output === "first\nsecond\n", "progress call output");
check(progress.includes("first"), `progress carried the newest line (got ${JSON.stringify(progress)})`);

// A timeout is a result, with the output so far.
const t = await client.callTool({
  name: "shell",
  arguments: { command: "echo partial; sleep 30", workdir, timeout_ms: 1500, login: false },
});
check(t.isError === false && t.structuredContent.timed_out === true, "timeout is a result");
check(t.structuredContent.output === "partial\n", "timeout keeps the output so far");

// Invalid arguments are a JSON-RPC error naming the field.
let failed = null;
try {
  await client.callTool({ name: "shell", arguments: { command: "true", workdir: "relative" } });
} catch (e) {
  failed = e;
}
check(failed && failed.code === -32602 && /workdir/.test(failed.message), "relative workdir -> -32602");

await client.close();
rmSync(workdir, { recursive: true, force: true });
console.log("ok: TypeScript SDK client: initialize, tools/list, calls, progress, timeout, errors");
