/*
 * helper: the straight line that execgate-sandbox runs once its command line
 * is parsed.  One-shot: errors end the process with status 125.
 */
#ifndef EXECGATE_SANDBOX_HELPER_H
#define EXECGATE_SANDBOX_HELPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdnoreturn.h>

struct sandbox_policy;

struct sandbox_helper_options {
    const char *policy_text;
    struct sandbox_policy *policy; /* owned by the helper from sandbox_helper_run on */
    const char *cwd;
    int report_fd;        /* -1: no report */
    int exec_notify_fd;   /* -1: none; else a socket for the exec filter's listener */
    bool sockets_only;    /* that listener notifies socket calls, not execs */
    int net_proxy_fd;     /* -1: none; else a socket for the network namespace's listener */
    int net_ns_fd;        /* -1: none; else the session's network namespace, to join */
    int tty_fd;           /* -1: none; else a socket for the master of the command's terminal */
    int command_fd;       /* -1: none; else where the program's last argument comes, last */
    bool allow_degraded;  /* run with less confinement than asked, and say so */
    char **program_argv;  /* NULL-terminated, at least one entry */
    const char *argv0;    /* NULL, or argv[0] for the program in place of program_argv[0] */
    const char **protect; /* --protect paths (absolute), n_protect of them */
    size_t n_protect;
    const char **hide; /* --hide paths (absolute), n_hide of them */
    size_t n_hide;
};

/*
 * Applies o->policy to this process (and, when it sets up a PID namespace,
 * to the child it forks), then executes the program.  Never returns: ends
 * in execve, in the program's propagated exit status, or in exit 125/126/127.
 */
noreturn void sandbox_helper_run(struct sandbox_helper_options *o);

/*
 * For a process whose children run sandbox_helper_run as copies of it,
 * without an exec (the launcher), called once before the first: every
 * signal back to its default and none blocked, and the JSON library's hash
 * seed drawn, here; the children, which inherit both, then skip resetting
 * signals and opening /dev/urandom on every call.
 */
void sandbox_helper_prepare_parent(void);

/*
 * For the same parent: fd is a /dev template (sandbox_ns_dev_template,
 * close-on-exec) that its children copy onto their /dev instead of
 * making one; each closes its copy of fd once its /dev is up.
 */
void sandbox_helper_set_dev_template(int fd);

/*
 * Prints "execgate-sandbox: MESSAGE[: strerror(errnum)]" to stderr and exits
 * with SANDBOX_EXIT_SETUP_FAILED.  errnum 0 leaves out the reason.
 */
noreturn void sandbox_helper_die(int errnum, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* As sandbox_helper_die, with the given exit status. */
noreturn void sandbox_helper_die_status(int status, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prints a warning line to stderr; never fails. */
void sandbox_helper_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
