#!/usr/bin/env node
// `execgate-rules`: check, explain and lint .rules files (see run.js).
require('./run.js')('execgate-rules');
