// The official TypeScript SDK's Client answering execgate's elicitation
// requests: a prompt rule asks through elicitation/create (the SDK
// validates the request and our answer against the requested schema), an
// accept escalates the program (it writes where the sandbox cannot), a
// decline denies it.  Exits non-zero with a message on the first mismatch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const server = process.argv[2];
function check(cond, what) {
  if (!cond) {
    console.error(`FAIL: ${what}`);
    process.exit(1);
  }
}

const workdir = mkdtempSync(join(tmpdir(), "execgate-sdk-elicit-"));
const outside = mkdtempSync("/var/tmp/execgate-sdk-outside-");
const rules = join(workdir, ".rules-dir");
mkdirSync(rules);
writeFileSync(join(rules, "t.rules"),
  'prefix_rule(pattern=["sh", "-c"], decision="prompt")\n' +
  'prefix_rule(pattern=["git", "init"], decision="prompt")\n');
// EXECGATE_TEST_SHELL=zsh: the same through the patched zsh (--shell).
const shell = process.env.EXECGATE_TEST_SHELL ? ["--shell", process.env.EXECGATE_TEST_SHELL] : [];
const policy = { sandboxPolicy: { type: "workspace-write", network_access: false }, sandboxCwd: workdir };
const transport = new StdioClientTransport({
  command: server,
  args: ["--rules", rules, "--sandbox", JSON.stringify(policy), ...shell],
  stderr: "inherit",
});
const client = new Client(
  { name: "execgate-sdk-elicit", version: "1.0.0" },
  { capabilities: { elicitation: {} } },
);
const asked = [];
let answer = { action: "accept", content: { decision: "approved" } };
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params);
  return answer;
});
await client.connect(transport);

const cmd = `sh -c 'touch ${outside}/x'; echo "st=$?"`;
let r = await client.callTool({ name: "shell", arguments: { command: cmd, workdir, login: false } });
check(asked.length === 1, `asked once (got ${asked.length})`);
check(/^Allow agent to run `\/[^ ]+ -c 'touch .*\/x'` in `.*`\?$/.test(asked[0].message),
  `message format (got ${asked[0].message})`);
const props = asked[0].requestedSchema.properties;
check(props.decision && props.decision.enum.includes("approved_for_session"), "decision enum offered");
// titled choices, with enumNames (the SDK validated the request)
check(props.decision.enumNames.length === props.decision.enum.length &&
  props.decision.enumNames[0] === "Yes, run it this once",
  `titled choices (got ${JSON.stringify(props.decision)})`);
check(props.reason && props.reason.type === "string", "a reason field");
check(r.structuredContent.output === "st=0\n", `accepted: escalated (got ${JSON.stringify(r.structuredContent)})`);
check(existsSync(join(outside, "x")), "the escalated program wrote outside the sandbox");

answer = { action: "decline" };
r = await client.callTool({
  name: "shell",
  arguments: { command: `sh -c 'touch ${outside}/y'; echo "st=$?"`, workdir, login: false },
});
check(r.structuredContent.output === "Execution denied: User declined execution\nst=1\n",
  `declined (got ${JSON.stringify(r.structuredContent)})`);
check(!existsSync(join(outside, "y")), "declined program did not run");

// git init under the prompt rule: accepted, the repository is made;
// declined, denied and nothing is made.
answer = { action: "accept", content: { decision: "approved" } };
const repo = mkdtempSync(join(workdir, "repo-"));
r = await client.callTool({
  name: "shell",
  arguments: { command: "git init --quiet .", workdir: repo, login: false },
});
check(r.structuredContent.exit_code === 0 && existsSync(join(repo, ".git")),
  `git init accepted: .git made (got ${JSON.stringify(r.structuredContent)})`);
answer = { action: "decline" };
const repo2 = mkdtempSync(join(workdir, "repo-"));
r = await client.callTool({
  name: "shell",
  arguments: { command: "git init --quiet .", workdir: repo2, login: false },
});
check(r.structuredContent.exit_code !== 0 &&
  r.structuredContent.output.includes("Execution denied: User declined execution"),
  `git init declined: denied (got ${JSON.stringify(r.structuredContent)})`);
check(!existsSync(join(repo2, ".git")), "declined git init made nothing");

// the agent asks to leave the sandbox: the person is asked (the SDK
// validates that question and this answer too); approved, the command
// writes outside; refused with a reason, one line says so.
answer = { action: "accept", content: { decision: "approved" } };
asked.length = 0;
r = await client.callTool({
  name: "shell",
  arguments: { command: `echo left > ${outside}/left`, workdir, login: false,
    sandbox_permissions: "require_escalated", justification: "writes outside" },
});
check(asked.length === 1 && asked[0].message.startsWith("The agent asks to run `echo left > ") &&
  asked[0].message.includes('Its reason: "writes outside"'), `leave question (got ${JSON.stringify(asked)})`);
check(!r.isError && existsSync(join(outside, "left")), `left the sandbox (got ${JSON.stringify(r)})`);
answer = { action: "accept", content: { decision: "denied", reason: "not now" } };
r = await client.callTool({
  name: "shell",
  arguments: { command: `echo no > ${outside}/no`, workdir, login: false, with_escalated_permissions: true },
});
check(r.isError && r.content[0].text.startsWith("Not run: the person refused to run it outside the sandbox, saying: not now") &&
  !existsSync(join(outside, "no")), `refused (got ${JSON.stringify(r)})`);

await client.close();
rmSync(workdir, { recursive: true, force: true });
rmSync(outside, { recursive: true, force: true });
console.log(`ok: TypeScript SDK client answers elicitation (${process.env.EXECGATE_TEST_SHELL || "bash"}): accept escalates, decline denies`);
