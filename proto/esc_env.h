/*
 * esc_env: the environment variables of the escalation protocol, named
 * once.  The server sets them for the sandboxed shell (and strips any the
 * shell would otherwise inherit), the patched Bash and the wrapper read
 * them, and an escalated program never gets them (it has no escalation
 * socket).  The patched shells are compiled with this header too
 * (subprojects/shells/build-shell.sh copies it into each shell's tree), so
 * the names they read are these.
 *
 * Plain string-literal macros only: Bash's own sources include it.
 */
#ifndef EXECGATE_ESC_ENV_H
#define EXECGATE_ESC_ENV_H

/* The program the patched Bash hands each exec to (Bash's own name). */
#define ESC_ENV_WRAPPER "EXEC_WRAPPER"
/* The older name of the same, which the patched Bash still honours: the
 * server strips it too, so only the wrapper it sets can count. */
#define ESC_ENV_WRAPPER_LEGACY "BASH_EXEC_WRAPPER"
/* The fd number of the call's escalation socket, in the shell. */
#define ESC_ENV_SOCKET "CODEX_ESCALATE_SOCKET"
/* The programs the shell hands over ("name:name:..."); the rest run. */
#define ESC_ENV_WRAP_NAMES "EXECGATE_WRAP_NAMES"
/* "1": the patched Bash asks in its own process instead of exec'ing the
 * wrapper. */
#define ESC_ENV_WRAP_IN_SHELL "EXECGATE_WRAP_IN_SHELL"
/* The patched Bash, for the wrapper's `sh -c` of a RUN answer. */
#define ESC_ENV_BASH "EXECGATE_BASH"

/* All of them, as an array initializer. */
#define ESC_ENV_ALL                                                                                \
    ESC_ENV_WRAPPER, ESC_ENV_WRAPPER_LEGACY, ESC_ENV_SOCKET, ESC_ENV_WRAP_NAMES,                   \
        ESC_ENV_WRAP_IN_SHELL, ESC_ENV_BASH

#endif
