// MCP tasks with the official TypeScript SDK's task API
// (client.experimental.tasks), over stdio and over Streamable HTTP: a
// task-augmented shell call streamed to the result a plain call gives; a
// prompt rule makes the task input_required and the SDK answers the
// question, which names the task, through tasks/result; tasks/result
// waits for the end; tasks/cancel kills the command; an unknown task is
// the spec's error; over HTTP another session can neither see, get, fetch
// nor cancel a session's task, and ending a session kills its running
// task.  Exits non-zero with a message on the first mismatch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { check, startServer, stopServer } from "./server.mjs";

const server = process.argv[2];
const RELATED = "io.modelcontextprotocol/related-task";

const top = mkdtempSync(join(tmpdir(), "execgate-sdk-tasks-"));
const wd = join(top, "wd");
mkdirSync(wd);
const rules = join(top, "rules");
mkdirSync(rules);
writeFileSync(join(rules, "t.rules"), 'prefix_rule(pattern=["sh", "-c"], decision="prompt")\n');
const policy = { sandboxPolicy: { type: "workspace-write", network_access: false }, sandboxCwd: wd };
const shell = process.env.EXECGATE_TEST_SHELL ? ["--shell", process.env.EXECGATE_TEST_SHELL] : [];

// Whether a process's command line holds marker (/proc).
function running(marker) {
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker)) return true;
    } catch {
      // it ended meanwhile
    }
  }
  return false;
}
// Waits for cond, each look an event of the system's: no timer decides.
async function until(what, cond) {
  for (let i = 0; i < 1200; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  check(false, `waited 60 s for: ${what}`);
}
async function rejects(p) {
  try {
    await p;
  } catch (e) {
    return e;
  }
  return null;
}
const args = (command) => ({ command, workdir: wd, login: false });
// A result without what differs from run to run.
function comparable(r) {
  const sc = { ...r.structuredContent };
  delete sc.duration;
  const text = JSON.parse(r.content[0].text);
  delete text.duration;
  return JSON.stringify({ sc, text, isError: r.isError });
}

function newClient(name, state) {
  const client = new Client({ name, version: "1.0.0" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    state.asked.push(req.params);
    // while the question is out (it is until this answers), the task it
    // names is input_required
    const t = req.params._meta?.[RELATED]?.taskId;
    state.statusWhileAsked = t ? (await client.experimental.tasks.getTask(t)).status : null;
    return { action: "accept", content: { decision: "approved" } };
  });
  return client;
}

// A task-augmented shell call, through the SDK's stream: its messages.
async function stream(client, command) {
  const seen = [];
  for await (const m of client.experimental.tasks.callToolStream({ name: "shell", arguments: args(command) },
    CallToolResultSchema, { task: { ttl: 600000 }, timeout: 600000 })) seen.push(m);
  return seen;
}
// A task-augmented call, answered with the task alone.
async function createTask(client, command) {
  const r = await client.request({ method: "tools/call", params: { name: "shell", arguments: args(command), task: {} } },
    CreateTaskResultSchema);
  check(r.task && r.task.status === "working" && /^[0-9a-f]{32}$/.test(r.task.taskId),
    `a task, working (got ${JSON.stringify(r)})`);
  return r.task.taskId;
}

// What every transport must do, for a client of one session.
async function common(client, state, how) {
  // streamed to its result, which equals a plain call's
  const cmd = "echo task-out; echo task-err >&2; exit 4";
  const seen = await stream(client, cmd);
  const created = seen.find((m) => m.type === "taskCreated");
  const result = seen.find((m) => m.type === "result");
  check(created && result, `${how}: task created and its result (got ${JSON.stringify(seen)})`);
  check(result.result._meta?.[RELATED]?.taskId === created.task.taskId,
    `${how}: the result names its task (got ${JSON.stringify(result.result._meta)})`);
  const plain = await client.callTool({ name: "shell", arguments: args(cmd) });
  check(comparable(result.result) === comparable(plain),
    `${how}: the task's result is the plain call's (${comparable(result.result)} vs ${comparable(plain)})`);

  // a prompt rule: input_required, the question names the task, the
  // SDK answers it through tasks/result
  state.asked.length = 0;
  const asked = await stream(client, "sh -c 'echo asked-and-ran'");
  const t = asked.find((m) => m.type === "taskCreated").task.taskId;
  check(state.statusWhileAsked === "input_required",
    `${how}: input_required while asked (got ${state.statusWhileAsked})`);
  check(state.asked.length === 1 && state.asked[0]._meta?.[RELATED]?.taskId === t,
    `${how}: one question, naming the task (got ${JSON.stringify(state.asked)})`);
  const r = asked.find((m) => m.type === "result");
  check(r && r.result.structuredContent.output === "asked-and-ran\n", `${how}: approved, it ran (got ${JSON.stringify(r)})`);
  const after = await client.experimental.tasks.getTask(t);
  check(after.status === "completed", `${how}: completed after the answer (got ${after.status})`);

  // tasks/result waits for the end
  const go = join(wd, `go-${how}`);
  const waiting = await createTask(client, `while [ ! -e ${go} ]; do sleep 0.02; done; echo released`);
  let settled = false;
  const pending = client.experimental.tasks.getTaskResult(waiting, CallToolResultSchema, { timeout: 600000 })
    .finally(() => { settled = true; });
  const g = await client.experimental.tasks.getTask(waiting);
  check(g.status === "working" && !settled, `${how}: tasks/result waits while it works (${g.status}, ${settled})`);
  writeFileSync(go, "");
  const released = await pending;
  check(released.structuredContent.output === "released\n", `${how}: tasks/result returns at the end (got ${JSON.stringify(released)})`);

  // tasks/cancel kills the command
  const marker = `execgate-sdk-task-${how}-5821`;
  const victim = await createTask(client, `exec -a ${marker} sleep 300`);
  await until(`${how}: the command runs`, () => running(marker));
  const c = await client.experimental.tasks.cancelTask(victim);
  check(c.status === "cancelled", `${how}: cancelled (got ${JSON.stringify(c)})`);
  await until(`${how}: the cancelled command is gone`, () => !running(marker));
  check((await client.experimental.tasks.getTask(victim)).status === "cancelled", `${how}: stays cancelled`);

  // an unknown task: invalid params
  const e = await rejects(client.experimental.tasks.getTask("0".repeat(32)));
  check(e && e.code === -32602, `${how}: an unknown task is -32602 (got ${e})`);
  const listed = await client.experimental.tasks.listTasks();
  check(listed.tasks.some((x) => x.taskId === victim), `${how}: tasks/list shows the session's tasks`);
}

// A client that never opens the GET stream (MCP lets it): the question a
// task's call asks waits for a stream, and goes out on the client's next
// request's (a tasks/get while it polls, or its tasks/result), before that
// request's answer; the answer to the question lets the task end.
async function noGetStream(url, token) {
  let sid = null;
  const post = (msg) => fetch(url, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${token}`, "Content-Type": "application/json",
      Accept: "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25",
      ...(sid ? { "Mcp-Session-Id": sid } : {}),
    },
    body: JSON.stringify({ jsonrpc: "2.0", ...msg }),
  });
  const questions = [];
  // The answer to request msg, as JSON or at the end of a stream; a
  // question on the way is kept and approved.
  const exchange = async (msg) => {
    const r = await post(msg);
    if (!r.headers.get("content-type").startsWith("text/event-stream")) return r.json();
    const reader = r.body.getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      check(!done, `raw: the stream of ${msg.method} ended before its answer (${buf})`);
      buf += new TextDecoder().decode(value);
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.startsWith("data: ")) continue;
        const m = JSON.parse(line.slice(6));
        check(m.method !== "notifications/tasks/status",
          "raw: no status notifications over HTTP (they would crowd the backlog)");
        if (m.method === "elicitation/create") {
          questions.push(m);
          await (await post({ id: m.id, result: { action: "accept", content: { decision: "approved" } } })).text();
        } else if (m.id === msg.id) {
          reader.cancel();
          return m;
        }
      }
    }
  };
  let r = await post({ id: 1, method: "initialize", params: {
    protocolVersion: "2025-11-25", capabilities: { elicitation: {} }, clientInfo: { name: "raw", version: "1" } } });
  sid = r.headers.get("mcp-session-id");
  await r.text();
  await (await post({ method: "notifications/initialized" })).text();
  r = await post({ id: 2, method: "tools/call", params: { name: "shell", arguments: args("sh -c 'echo raw-ran'"), task: {} } });
  const t = (await r.json()).result.task.taskId;
  let seen = null;
  await until("raw: input_required, or the question answered", async () => {
    seen = (await exchange({ id: 3, method: "tasks/get", params: { taskId: t } })).result.status;
    return seen === "input_required" || questions.length > 0;
  });
  const result = await exchange({ id: 4, method: "tasks/result", params: { taskId: t } });
  check(questions.length === 1, `raw: the question came once, on a request's stream (got ${questions.length})`);
  check(questions[0].params._meta?.[RELATED]?.taskId === t, "raw: the question names the task");
  check(result.result?.structuredContent?.output === "raw-ran\n", `raw: the result after the answer (got ${JSON.stringify(result)})`);
  await fetch(url, { method: "DELETE", headers: { Authorization: `Bearer ${token}`, "Mcp-Session-Id": sid } });
}

// ---- stdio ----
{
  const state = { asked: [] };
  const client = newClient("execgate-sdk-tasks", state);
  const transport = new StdioClientTransport({
    command: server,
    args: ["--rules", rules, "--sandbox", JSON.stringify(policy), ...shell],
    stderr: "inherit",
  });
  await client.connect(transport);
  check(client.getServerCapabilities().tasks?.requests?.tools?.call, "stdio: the tasks capability");
  const tools = await client.listTools();
  check(tools.tools[0].execution?.taskSupport === "optional", "stdio: shell may run as a task");
  await common(client, state, "stdio");
  await client.close();
}

// ---- Streamable HTTP: two sessions ----
{
  const tokenFile = join(top, "token");
  const srv = await startServer(server, ["--listen", "127.0.0.1:0", "--token-file", tokenFile, "--rules", rules,
    "--sandbox", JSON.stringify(policy), ...shell], { echo: true });
  const token = readFileSync(tokenFile, "utf8").trim();
  async function connect(name) {
    const state = { asked: [] };
    const client = newClient(name, state);
    const transport = new StreamableHTTPClientTransport(new URL(srv.url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    await client.connect(transport);
    return { client, transport, state };
  }
  await noGetStream(srv.url, token);
  const A = await connect("session-a"), B = await connect("session-b");
  await common(A.client, A.state, "http");

  // another session: nothing of A's
  const marker = "execgate-sdk-task-http-session-5822";
  const t = await createTask(A.client, `exec -a ${marker} sleep 300`);
  await until("A's task runs", () => running(marker));
  for (const [what, p] of [
    ["tasks/get", B.client.experimental.tasks.getTask(t)],
    ["tasks/result", B.client.experimental.tasks.getTaskResult(t, CallToolResultSchema)],
    ["tasks/cancel", B.client.experimental.tasks.cancelTask(t)],
  ]) {
    const e = await rejects(p);
    check(e && e.code === -32602, `B's ${what} of A's task is -32602 (got ${e})`);
  }
  const bl = await B.client.experimental.tasks.listTasks();
  check(!bl.tasks.some((x) => x.taskId === t), `B's tasks/list shows none of A's (got ${JSON.stringify(bl)})`);
  check(running(marker) && (await A.client.experimental.tasks.getTask(t)).status === "working",
    "A's task still runs after B's attempts");

  // A's session ends (DELETE): its running task's command is killed
  await A.transport.terminateSession();
  await until("the ended session's task is gone", () => !running(marker));
  await A.client.close();
  await B.client.close();
  await stopServer(srv);
}

rmSync(top, { recursive: true, force: true });
console.log("ok: tasks over stdio and Streamable HTTP");
