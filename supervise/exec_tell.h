/*
 * exec_tell: one line on a process's stderr from the supervisor, for an
 * exec or a socket call refused (exec_notify and unix_connect both use
 * it).
 */
#ifndef EXECGATE_SUPERVISE_EXEC_TELL_H
#define EXECGATE_SUPERVISE_EXEC_TELL_H

#include <sys/types.h>

/*
 * One line on pid's stderr, "execgate: refused `DISPLAY`: REASON", written
 * as a refused exec's is (through the target's own fd 2; skipped where it
 * could block).  Best effort.
 */
void exec_notify_tell(pid_t pid, const char *display, const char *reason);

#endif
