/*
 * exec_target: what one exec notification names, read from the target
 * (exec_notify.c's reading half): the path, argv, environment and cwd
 * from its memory and /proc, the file the exec names opened (O_PATH) as
 * the target itself would open it, and the interpreters its "#!" lines
 * name; and whether another thread could change the memory those were
 * read from (strict mode); and a pidfd for the thread that asked.
 */
#ifndef EXECGATE_SUPERVISE_EXEC_TARGET_H
#define EXECGATE_SUPERVISE_EXEC_TARGET_H

#include "supervise/exec_notify_types.h"

#include <linux/seccomp.h>
#include <stdbool.h>
#include <sys/types.h>

/* Everything read for one notification. */
struct exec_target {
    struct exec_notify_request req;
    char *path, *resolved, *canonical, *cwd;
    char **argv;
    size_t argc;
    char **envp;
    size_t envc;
    char *interp[EXEC_NOTIFY_MAX_INTERP_DEPTH];
    int file;     /* O_PATH of the file the exec names, -1 when unopened */
    int open_err; /* why file is -1 */
    bool quick;   /* the quick callback continues it: argv, cwd, #! unread */
};

/* How to read one. */
struct exec_target_how {
    int listener; /* the notification's: its id is checked once the
                     target's memory is open (the pid may be reused) */
    bool first;   /* the helper's own exec: judged on its path alone */
    bool read_env;
    /* may continue an absolute path on its canonical file without argv,
     * cwd or "#!" lines being read (exec_notify_set_quick); or NULL */
    exec_notify_quick_fn quick;
    void *arg;
};

/*
 * Reads the exec sn notifies into t (zeroed, t->file -1, by the caller),
 * t->req pointing into t.  Returns 0, or -errno: -ESRCH when the target
 * has gone, -E2BIG/-ENAMETOOLONG past the bounds of exec_notify.h,
 * -EFAULT, -EACCES, -ENOMEM.  exec_target_free(t) either way.
 */
int exec_target_read(const struct exec_target_how *how, const struct seccomp_notif *sn,
                     struct exec_target *t);

void exec_target_free(struct exec_target *t);

/* A pidfd (O_CLOEXEC) for the thread tid that made a notification
 * (sn->pid is the calling thread's id): a thread other than its process's
 * first has a pidfd only as a thread (PIDFD_THREAD, Linux 6.9), where a
 * plain pidfd_open of its id fails EINVAL or ENOENT.  -1 with errno. */
int exec_target_pidfd(pid_t tid);

/* Whether another running thread may write pid's memory: its own threads,
 * or a parent it shares memory with that has threads besides the one
 * waiting in vfork.  Unreadable counts as shared (fail closed). */
bool exec_target_shares_memory(pid_t pid);

#endif
