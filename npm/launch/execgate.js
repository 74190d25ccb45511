#!/usr/bin/env node
// `execgate`: the MCP server on stdin/stdout (see run.js).
require('./run.js')('execgate');
