/*
 * exec_notify_types: what exec_notify hands its callers for one exec (the
 * request, read by exec_target), the bounds of that reading, and the quick
 * decision's callback.  Kept apart from exec_notify.h so that exec_target,
 * which fills them, does not depend on exec_notify, which uses it.
 */
#ifndef EXECGATE_SUPERVISE_EXEC_NOTIFY_TYPES_H
#define EXECGATE_SUPERVISE_EXEC_NOTIFY_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bounds on what is read from a target (larger execs are refused E2BIG). */
#define EXEC_NOTIFY_MAX_PATH         4096
#define EXEC_NOTIFY_MAX_ARGC         65536
#define EXEC_NOTIFY_MAX_ARG_BYTES    (4u << 20)
#define EXEC_NOTIFY_MAX_INTERP_DEPTH 4

/* One exec, as the target asked for it.  Borrowed for the callback's
 * duration only. */
struct exec_notify_request {
    uint64_t id;
    pid_t pid;
    bool execveat;
    const char *path;                /* the path argument as the target passed it */
    const char *resolved;            /* made absolute against the cwd or the dirfd */
    const char *canonical;           /* symlinks followed; NULL when the file cannot be opened */
    const char *const *interpreters; /* #! interpreters, outermost first */
    size_t n_interpreters;
    const char *const *argv; /* argv[argc] is NULL */
    size_t argc;
    /* the environment the exec passes, NAME=value each (envp[envc] is
     * NULL); empty when only the path was read */
    const char *const *envp;
    size_t envc;
    const char *cwd; /* the target's cwd; "" when unreadable */
};

/*
 * A decision the caller can make from the file alone: called, once the
 * first exec is past, for an exec of an absolute path that opens, with its
 * canonical path (borrowed) and the pid (stopped in this exec: the
 * notification is re-validated after the call, before the answer).  True
 * continues the exec without reading its argv, cwd or #! lines and without
 * calling decide — the exec the caller expects, such as the patched Bash's
 * exec of the wrapper; false decides it as any other.  Strict mode applies
 * either way.
 */
typedef bool (*exec_notify_quick_fn)(void *arg, pid_t pid, const char *canonical);

#endif
