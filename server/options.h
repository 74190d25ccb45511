/*
 * options: the server's command line and environment.
 *
 * The reference's flags (--bash, --execve, --preserve-program-paths, -h, -V),
 * CODEX_BASH_PATH and CODEX_HOME, and execgate's own (--shell and
 * CODEX_ZSH_PATH among them).  Helper programs and the patched shells are
 * found next to the server binary, in the build tree and in the installed
 * layout, unless a flag names them.
 */
#ifndef EXECGATE_SERVER_OPTIONS_H
#define EXECGATE_SERVER_OPTIONS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "supervise/unix_connect.h"
#include "common/log.h"

#define OPTIONS_DEFAULT_TIMEOUT_MS    10000u
#define OPTIONS_DEFAULT_MAX_OUTPUT    (1024u * 1024)
#define OPTIONS_DEFAULT_MAX_CALLS     64u
#define OPTIONS_DEFAULT_MAX_MESSAGE   (16u * 1024 * 1024)
#define OPTIONS_DEFAULT_KILL_GRACE_MS 2000u
#define OPTIONS_DEFAULT_MAX_ASK_MS    600000u
#define OPTIONS_DEFAULT_MAX_PENDING   (64u * 1024 * 1024)
#define OPTIONS_DEFAULT_MAX_PROCESSES 1024u
#define OPTIONS_DEFAULT_MAX_MEMORY    (UINT64_C(2) * 1024 * 1024 * 1024)
/* background processes (exec_command): per session, at once, and the
 * bytes of their unread output, shared out evenly among them */
#define OPTIONS_DEFAULT_MAX_BACKGROUND        8u
#define OPTIONS_DEFAULT_MAX_BACKGROUND_OUTPUT (4u * 1024 * 1024)
/* a login snapshot's capture (login_snapshot.h) */
#define OPTIONS_DEFAULT_LOGIN_SNAPSHOT_TIMEOUT_MS 10000u
/* HTTP (--listen): an unused session ends after 30 minutes; 64 at once */
#define OPTIONS_DEFAULT_SESSION_IDLE_MS (30u * 60 * 1000)
#define OPTIONS_DEFAULT_MAX_SESSIONS    64u
/* HTTP: sandboxes set up ahead for 4 sessions at most, each kept a
 * minute unused (stdio's one is kept as long as its session) */
#define OPTIONS_DEFAULT_MAX_PREPARED     4u
#define OPTIONS_DEFAULT_PREPARED_IDLE_MS 60000u
/* HTTP: a request's headers must arrive within 10 s */
#define OPTIONS_DEFAULT_HEADER_TIMEOUT_MS 10000u
/* The longest a call may run (timeout_ms, --default-timeout-ms): a day.
 * A command that prints forever must end some time. */
#define OPTIONS_MAX_TIMEOUT_MS (24u * 60 * 60 * 1000)
/* HTTP: a client that takes none of what waits for it for 60 s is gone */
#define OPTIONS_DEFAULT_WRITE_TIMEOUT_MS 60000u
/* MCP tasks (tasks.h): kept an hour after they end; 16 per session */
#define OPTIONS_DEFAULT_TASK_TTL_MS (60u * 60 * 1000)
#define OPTIONS_DEFAULT_MAX_TASKS   16u

enum options_exec_enforcement {
    OPTIONS_EXEC_ENFORCEMENT_TREE = 0, /* every exec of the tree (exec_watch) */
    OPTIONS_EXEC_ENFORCEMENT_SHELL,    /* the shell's own execs only */
};

/* The kind of shell that runs commands (--shell): its name in the tool's
 * description. Both are started as SHELL -c or -lc COMMAND. */
enum options_shell {
    OPTIONS_SHELL_BASH = 0,
    OPTIONS_SHELL_ZSH,
};

/* --network-proxy: when a call's sandbox reaches the network through the
 * proxy (docs/network.md). */
enum options_network_proxy {
    OPTIONS_NETWORK_PROXY_AUTO = 0, /* when the rules hold a network_rule */
    OPTIONS_NETWORK_PROXY_ON,       /* always (network off in the policy) */
    OPTIONS_NETWORK_PROXY_OFF,      /* never: network off means none */
};

struct server_options {
    char *bash_path;  /* the patched Bash */
    char *shell_path; /* the shell that runs commands (--shell): the Bash's path or a zsh */
    enum options_shell shell;
    char *execve_wrapper; /* execgate-wrapper (used by escalation) */
    char *sandbox_helper; /* execgate-sandbox */
    bool preserve_program_paths;
    char **rules; /* NULL-terminated rules files or directories */
    size_t rules_count;
    bool rules_default; /* rules[0] is the default directory (none was given) */
    char *audit_log;    /* --audit-log, or NULL */
    json_t *sandbox;    /* --sandbox: a sandboxPolicy object, or NULL */
    char *sandbox_cwd;  /* --sandbox's sandboxCwd when given, else NULL */
    uint64_t default_timeout_ms;
    size_t max_output_bytes;
    unsigned max_calls;
    size_t max_pending_output;    /* no waiting call starts while this much output waits */
    unsigned max_background;      /* a session's background processes at once */
    size_t max_background_output; /* a session's unread background output, in all */
    uint64_t max_processes;       /* per call, in its cgroup (0: no limit) */
    uint64_t max_memory;          /* per call, bytes, in its cgroup (0: no limit) */
    bool doctor;                  /* --doctor: say what this machine offers, and exit */
    size_t max_message_bytes;
    uint64_t kill_grace_ms;
    uint64_t max_ask_ms; /* a call's timeout stops at most this long while a person is asked */
    enum log_level log_level;
    enum log_format log_format;
    enum options_exec_enforcement exec_enforcement;
    bool exec_strict; /* tree: exec_notify_set_refuse_shared_memory */
    /* --escalated-children=inherit: escalated programs' children are not
     * asked about (exec_watch_set_inherit) */
    bool escalated_children_inherit;
    enum options_network_proxy network_proxy;
    /* --pass-env: names an escalated program takes from the request's
     * environment (escalated_env_build), each once, NULL-terminated */
    char **pass_env;
    size_t pass_env_count;
    /* login calls source a snapshot of the login environment
     * (login_snapshot.h); off: --no-login-snapshot */
    bool login_snapshot;
    /* on unless --no-prepare: when a session's call ends, its next call's
     * sandbox is set up before it comes (call_prepare_next) */
    bool prepare;
    /* --max-prepared: HTTP sessions' prepared calls held at once, server
     * wide (0: none); --prepared-idle-ms: one unused this long goes */
    unsigned max_prepared;
    uint64_t prepared_idle_ms;
    uint64_t login_snapshot_timeout_ms; /* its capture is killed after this long */
    /* --listen: HTTP addresses (unix:PATH or HOST:PORT) as given,
     * NULL-terminated; none: stdio */
    char **listen;
    size_t listen_count;
    char *token_file; /* --token-file, or NULL */
    /* --allow-unix-socket: the socket files a sandboxed command may
     * connect to although their server runs outside, by the inode each
     * path named when the options were read */
    struct unix_connect_inode *allow_unix;
    size_t allow_unix_count;
    uint64_t session_idle_ms;
    unsigned max_sessions;
    /* --header-timeout-ms: a request's headers must arrive within this
     * long (from the connection's start, or its last answer, until it
     * authenticates; from the request's first byte after that) */
    uint64_t header_timeout_ms;
    /* --write-timeout-ms: a connection whose peer takes none of the bytes
     * waiting for it this long closes (http_conn.h) */
    uint64_t write_timeout_ms;
    /* --task-ttl-ms: an ended task is kept this long (and a client asks
     * for no longer); --max-tasks: a session's tasks at once (tasks.h) */
    uint64_t task_ttl_ms;
    unsigned max_tasks;
};

enum options_outcome {
    OPTIONS_RUN,   /* serve with the parsed options */
    OPTIONS_EXIT,  /* help or version was printed on stdout: exit 0 */
    OPTIONS_ERROR, /* *err says why: exit 2 */
};

/*
 * Parses argv (and the environment) into *o, which the caller then releases
 * with options_release.  On OPTIONS_ERROR, *err is a malloc'd one-line
 * message that starts with what it is about (an option, a variable, an
 * argument) and carries no program name (caller frees; main prints it
 * after "execgate: "), and *o holds nothing to release.  The patched Bash,
 * the sandbox helper and the wrapper must each be a program that can be
 * run: one that cannot be found is an error naming the flag that would
 * name it, one named that cannot run an error naming its flag, path and
 * reason.  With --doctor neither is an error (a NULL path: not found);
 * the doctor says so itself.
 */
enum options_outcome options_parse(int argc, char **argv, struct server_options *o, char **err);

/* Why path cannot be run as a program ("No such file or directory", "is a
 * directory, not a program", "is not executable"...: a static string), or
 * NULL when it can (an executable regular file, symlinks followed). */
const char *options_program_problem(const char *path);

/* The shell's name as people read it: "Bash" or "zsh". */
const char *options_shell_name(enum options_shell shell);

/* Frees what options_parse stored in o. Cannot fail. */
void options_release(struct server_options *o);

#endif
