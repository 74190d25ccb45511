'use strict';
// The npm package's launcher: runs one of the package's programs
// (bin/NAME, a static linux-x64 executable that finds its helpers in
// ../libexec/execgate by itself) with this process's arguments,
// environment and stdio.  node stays as its parent: the signals a client
// or a terminal sends node are passed on, and node ends as the program
// did, with its exit status or killed by the same signal.
const path = require('path');
const { spawn } = require('child_process');
const { signals } = require('os').constants;

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2', 'SIGWINCH'];

module.exports = function run(name) {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    console.error(`${name}: this package holds programs for linux-x64, ` +
      `not ${process.platform}-${process.arch}`);
    process.exit(1);
  }
  const program = path.join(__dirname, '..', 'bin', name);
  const child = spawn(program, process.argv.slice(2), { stdio: 'inherit' });
  const forward = new Map(FORWARDED.map((sig) => [sig, () => child.kill(sig)]));
  for (const [sig, handler] of forward) {
    process.on(sig, handler);
  }
  child.on('error', (err) => {
    console.error(`${name}: cannot run ${program}: ${err.message}`);
    process.exit(err.code === 'ENOENT' ? 127 : 126);
  });
  child.on('exit', (code, signal) => {
    for (const [sig, handler] of forward) {
      process.removeListener(sig, handler);
    }
    if (signal) {
      // Killed by a signal: the same signal ends node, with its default
      // action.  One node ignores (SIGPIPE) gives the shell's 128 + n.
      process.kill(process.pid, signal);
      process.exit(128 + (signals[signal] || 0));
    }
    process.exit(code);
  });
};
