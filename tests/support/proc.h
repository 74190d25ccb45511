/*
 * proc: run a program to completion and capture what it printed; find
 * processes by a marker in their command line.
 *
 * For tests only: it blocks, and it aborts the test on resource errors
 * rather than reporting them, because a test that cannot spawn cannot
 * say anything useful anyway.
 */
#ifndef EXECGATE_TESTS_PROC_H
#define EXECGATE_TESTS_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct proc_result {
    int status; /* raw wait status, as from waitpid() */
    char *out;  /* stdout, NUL-terminated (may contain NULs) */
    size_t out_len;
    char *err; /* stderr, NUL-terminated */
    size_t err_len;
};

struct proc_options {
    const char *const *envp; /* NULL: inherit this process's environment */
    const char *cwd;         /* NULL: this process's cwd */
    const char *input;       /* written to stdin, then closed; NULL: /dev/null */
};

/*
 * Runs argv[0] (a path; no PATH search) with argv and waits for it.
 * Returns 0 with *res filled (free with proc_result_free), or -errno when
 * the program could not be started at all.
 */
int proc_run(const char *const *argv, const struct proc_options *opts, struct proc_result *res);

/* Frees what proc_run stored in res; the struct itself is the caller's. */
void proc_result_free(struct proc_result *res);

/* Exit code of a normal exit, or 128+signal as a shell reports it. */
int proc_exit_code(const struct proc_result *res);

/* Whether any process's command line contains marker (/proc scan). */
bool proc_with_marker(const char *marker);

/* Waits up to about ms milliseconds until no process's command line
 * contains marker: killing a process tree completes asynchronously.
 * Returns whether they are gone. */
bool proc_gone(const char *marker, int ms);

/* How many processes run exactly `sleep ARG` (their whole command line). */
int proc_count_sleeps(const char *arg);

/* Polls until proc_count_sleeps(arg) is at least (more) or at most
 * (!more) want, for up to about ms milliseconds; returns the last count. */
int proc_wait_sleeps(const char *arg, bool more, int want, int ms);

/* Process pid's state letter from /proc/PID/stat ('R', 'S', 'Z'...; '?'
 * when it is gone or its stat cannot be read) and, when ppid is not NULL
 * and the letter is not '?', its parent's pid. */
char proc_state(pid_t pid, pid_t *ppid);

/* Process pid's resident memory (VmRSS), in KiB, or -1. */
long proc_rss_kib(pid_t pid);

#endif
