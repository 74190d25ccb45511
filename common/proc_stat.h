/*
 * proc_stat: a process's parent and start time, from /proc/PID/stat.
 *
 * The second field is the command's name in parentheses, which the
 * process chooses and which may hold ')' and blanks: every field after it
 * is read from the last ')' on, never by counting from the start.  A
 * process is told from a later one that took its pid by its start time.
 */
#ifndef EXECGATE_COMMON_PROC_STAT_H
#define EXECGATE_COMMON_PROC_STAT_H

#include <sys/types.h>

struct proc_stat {
    pid_t ppid;               /* the fourth field */
    unsigned long long start; /* the 22nd: clock ticks after boot */
};

/* Reads the text of a /proc/PID/stat file (NUL-terminated) into *out.
 * Returns 0, or -EINVAL when it is not in that form. */
int proc_stat_parse(const char *text, struct proc_stat *out);

/* Reads /proc/PID/stat of pid into *out.  Returns 0, or -errno (ENOENT:
 * pid is gone; EINVAL: the file is not in its form). */
int proc_stat_read(pid_t pid, struct proc_stat *out);

#endif
