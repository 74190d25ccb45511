/*
 * helper_run: what the parts of execgate-sandbox's setup share (private to
 * the helper; sandbox/helper.h is its interface).  helper.c runs the
 * sequence and confines the command (Landlock, the seccomp filter, the
 * report, execve); helper_mounts.c makes its mount namespace (the writable
 * roots, the read-only world, /dev, the kept-read-only and hidden paths,
 * the .codex placeholders); helper_pidns.c runs the PID namespace's init
 * and forwards signals to the command.
 */
#ifndef EXECGATE_SANDBOX_HELPER_RUN_H
#define EXECGATE_SANDBOX_HELPER_RUN_H

#include "sandbox/helper.h"
#include "sandbox/ns.h"
#include "sandbox/placeholder.h"
#include "sandbox/policy/policy.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdnoreturn.h>

/* A placeholder .codex held for the call, and its root's path as this
 * process sees it (getcwd there; NULL: unknown), below which the binds
 * over it are taken off at the end. */
struct codex_hold {
    struct sandbox_placeholder ph;
    char *root_path;
};

/* Everything the helper learns on the way, for the report line. */
struct run {
    struct sandbox_helper_options *o;
    const struct sandbox_policy *p;
    enum sandbox_kind kind;
    struct sandbox_writable *w; /* where the command may write; never freed: we exec */
    /* w's roots, opened once (open_roots; -1: nothing there to grant):
     * the .git/.codex binds and the Landlock rules act on these very
     * directories, whatever their paths name later */
    int *root_fds;
    bool roots_open;
    /* One per repo root: the placeholder .codex held there (fd -1: none),
     * released by the process outside the PID namespace when the command
     * has ended */
    struct codex_hold *codex;
    /* the supervisor offered to take the listener by number (read at
     * once: an offer left unread when the socket closes would reset the
     * connection, and the supervisor lose the hand-over) */
    bool take_offered;
    bool restrict_net;
    /* the network is a namespace the helper entered (the session's, or
     * its own for the proxy): the filter lets only the families through
     * that it holds (filter.h) */
    bool own_net;
    /* --net-ns-fd: 1 the session's network namespace joined, -1 it could
     * not be (the command has no network), 0 none was given */
    int session_net;
    /* joining it entered the user namespace that owns it (joined or not) */
    bool session_net_owner;
    json_t *report;
    json_t *degraded; /* borrowed from report */
    json_t *read_only;
    json_t *hidden;
    json_t *writable;
    struct sandbox_ns_state ns;
    bool own_proc;
    /* /dev is the sandbox's own (sandbox_ns_minimal_dev): only the
     * writable devices and its own /dev/pts lie beneath it */
    bool own_dev;
};

/* Closes the launcher's /dev template, if this process has one
 * (helper_mounts.c): nothing but the mount namespace's setup uses it. */
void helper_close_dev_template(void);

/* The report: a value set under key, a string appended to an array, a
 * new array; each dies on ENOMEM (helper.c). */
/* fd, given by option, made close-on-exec so that the program does not
 * inherit it; dies saying why when fd is not open or cannot be. */
void helper_fd_not_inherited(int fd, const char *option);

void helper_put(json_t *obj, const char *key, json_t *value);
void helper_append(json_t *arr, const char *text);
json_t *helper_new_array(void);

/* The policy asks for feature and the kernel cannot give it: refuse, or
 * with --allow-degraded say so and report it (helper.c). */
void helper_require(struct run *r, const char *feature, const char *why);

/* The namespaces' part of the report (helper.c). */
void helper_report_namespaces(struct run *r);

/* chdir, Landlock, the filter, the report and execve, in the process that
 * becomes the command (helper.c). */
noreturn void helper_finish_and_exec(struct run *r);

/* helper_mounts.c: opens the writable roots once (r->root_fds); the
 * namespaces and the whole mount setup; in the init, its copies of the
 * placeholder fds closed; outside, once the command has ended, the
 * placeholders released. */
void helper_open_roots(struct run *r);
void helper_enter_namespaces(struct run *r);
void helper_close_placeholder_copies(const struct run *r);
void helper_release_placeholders(struct run *r);

/* helper_tty.c: --tty-fd checked; then, in the process that becomes
 * the command, its terminal made from the sandbox's devpts, the master
 * sent to the server and the slave made stdio and the controlling
 * terminal.  Errors end the helper (125). */
void helper_check_tty_fd(const struct sandbox_helper_options *o);
void helper_take_terminal(struct sandbox_helper_options *o);

/* helper_pidns.c: the rest of the call in a PID namespace: this process
 * waits outside, its child is the init, which starts the command
 * (helper_finish_and_exec).  Does not return. */
noreturn void helper_run_in_pid_namespace(struct run *r);

#endif
