#include "server/mcp/enforcement.h"

#include "server/decide/exec_watch.h"
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>

#define INSTRUCTIONS                                                                               \
    "This server provides a tool to execute shell commands and return their output."
#define INSTRUCTIONS_TREE " Exec rules apply to every program a command starts, at any depth."
#define INSTRUCTIONS_SHELL                                                                         \
    " Exec rules apply to the programs the shell itself starts, not to programs those start."

int
enforcement_choose(struct call_context *cx, char **instructions)
{
    char *why = NULL;
    const char *mode = INSTRUCTIONS_SHELL;
    char *fallback = NULL;
    if (cx->o->exec_enforcement == OPTIONS_EXEC_ENFORCEMENT_TREE) {
        cx->tree = exec_watch_probe(&why) == 0;
        if (cx->tree) {
            mode = INSTRUCTIONS_TREE;
            log_info("exec enforcement: tree (every exec of each command's process tree)");
        } else {
            log_warn("exec enforcement: tree is not available (%s); using shell: rules apply "
                     "only to the programs the shell starts",
                     why ? why : "out of memory");
            if (asprintf(&fallback,
                         " Exec interception for the whole process tree is not available on "
                         "this system (%s), so exec rules apply only to the programs the shell "
                         "itself starts, not to programs those start.",
                         why ? why : "unknown reason") < 0)
                fallback = NULL;
            free(why);
            if (!fallback)
                return -1;
            mode = fallback;
        }
    } else {
        log_info("exec enforcement: shell (--exec-enforcement=shell: only the shell's own execs)");
        /* but what an escalated program starts is still decided, when the
         * kernel can tell: it runs outside the sandbox */
        cx->watch_escalated = !cx->o->escalated_children_inherit && exec_watch_probe(&why) == 0;
        if (cx->watch_escalated)
            log_info("exec enforcement: programs run outside the sandbox start under the exec "
                     "filter: what they start is decided by the rules");
        else if (!cx->o->escalated_children_inherit)
            log_warn("exec enforcement: %s: what a program run outside the sandbox starts is "
                     "not decided",
                     why ? why : "out of memory");
        free(why);
        why = NULL;
    }
    /* sandboxed sockets are supervised in either mode (exec_watch.h) */
    cx->user_notif = cx->tree || exec_watch_probe(&why) == 0;
    if (!cx->user_notif) {
        log_warn("no seccomp user notification (%s): sandboxed commands can connect to any "
                 "Unix socket",
                 why ? why : "out of memory");
        free(why);
    }
    if (asprintf(instructions, "%s%s", INSTRUCTIONS, mode) < 0)
        *instructions = NULL;
    free(fallback);
    return *instructions ? 0 : -1;
}
