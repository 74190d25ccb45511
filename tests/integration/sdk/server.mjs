// What the HTTP SDK tests (http*.mjs) share: check(), and execgate started
// with --listen, its stderr collected, the URL it prints awaited, stopped
// with SIGTERM at the end, and killed however else the test ends.
import { spawn } from "node:child_process";

let proc = null;
// however the test ends (an exception too), the server does not outlive it
process.on("exit", () => proc?.kill("SIGKILL"));
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(1));

// Fails the test (and kills the server) unless cond holds.
export function check(cond, what) {
  if (!cond) {
    console.error(`FAIL: ${what}`);
    if (proc) proc.kill("SIGKILL");
    process.exit(1);
  }
}

// Starts `server ...args` (env: its environment, default ours; echo: copy
// its stderr to ours) and waits until it prints its HTTP URL and
// ready(stderr) holds.  Returns { proc, url, exited, stderr }: stderr grows
// as the server writes, exited resolves to { code, signal }.
export async function startServer(server, args, { env, echo = false, ready = () => true } = {}) {
  proc = spawn(server, args, { stdio: ["ignore", "inherit", "pipe"], ...(env ? { env } : {}) });
  const s = { proc, stderr: "" };
  s.url = await new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => {
      s.stderr += d;
      if (echo) process.stderr.write(d);
      const m = /execgate: listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(s.stderr);
      if (m && ready(s.stderr)) resolve(m[1]);
    });
    proc.on("exit", (code) => reject(new Error(`server exited (${code}) before listening${echo ? "" : `: ${s.stderr}`}`)));
  });
  s.exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  return s;
}

// SIGTERM to the server: it must exit 0 without a sanitizer report.
export async function stopServer(s) {
  s.proc.kill("SIGTERM");
  const end = await s.exited;
  check(end.code === 0, `the server exits 0 after SIGTERM (got ${JSON.stringify(end)}; stderr ends: ${s.stderr.slice(-2000)})`);
  check(!/Sanitizer|runtime error/.test(s.stderr), `no sanitizer report (${s.stderr.slice(-2000)})`);
}
