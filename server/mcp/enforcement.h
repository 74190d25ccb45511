/*
 * enforcement: which execs the rules reach on this machine — every exec
 * of a command's tree (tree mode, seccomp user notification) or only the
 * shell's own (shell mode) — and whether sandboxed sockets and what
 * escalated programs start are supervised (docs/enforcement.md).
 */
#ifndef EXECGATE_SERVER_ENFORCEMENT_H
#define EXECGATE_SERVER_ENFORCEMENT_H

#include "server/mcp/call.h"

/*
 * Tree enforcement when cx->o asks for it and the kernel can; else shell,
 * said in the log.  Sets cx->tree, cx->watch_escalated and
 * cx->user_notif, and *instructions (malloc'd) to initialize's
 * instructions, which say which.  Blocks a few milliseconds (the probe):
 * call before the loop runs.  Returns 0, or -1 when out of memory.
 */
int enforcement_choose(struct call_context *cx, char **instructions);

#endif
