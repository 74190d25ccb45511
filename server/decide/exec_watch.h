/*
 * exec_watch: tree enforcement for one `shell` call (--exec-enforcement=tree,
 * docs/enforcement.md).  The sandboxed shell's helper (execgate-sandbox
 * --exec-notify-fd) and every program escalated outside the sandbox (the
 * server's filtered start) hand the server a seccomp listener; the watch
 * serves them all on the loop and has every execve/execveat of their
 * process trees decided by the call's decide_call, as the escalation path
 * has the shell's hand-overs decided: a refusal fails the exec (EACCES and
 * a line on the process's stderr), a question keeps it waiting for the
 * person's answer, anything else continues it in place.
 *
 * The same listeners carry the sandboxed command's connect and sendto
 * calls (unix_connect.h): a Unix socket answers only when its server runs
 * in the call's sandbox or was allowed (exec_watch_allow_unix).  With
 * shell enforcement the helper's listener carries those alone.
 *
 * A watch ends by exec_watch_release, when its call ends or if it never
 * started.
 */
#ifndef EXECGATE_SERVER_EXEC_WATCH_H
#define EXECGATE_SERVER_EXEC_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

struct decide_call;
struct exec_watch;
struct shell_call;

/*
 * Whether this kernel can intercept execs by seccomp user notification,
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE included: a forked child installs a
 * listener filter on getppid and the parent continues its call.  Blocks a
 * few milliseconds: call before the loop runs.  Returns 0, or -1 with *why
 * a malloc'd reason.  EXECGATE_TEST_NO_USER_NOTIF=1 in the environment
 * makes it report the lack (tests of the fallback).
 */
int exec_watch_probe(char **why);

/*
 * A watch for one call, decided by dc (a reference is taken).  wrapper is
 * execgate-wrapper's path, bash the patched Bash's and shell the path of
 * the shell that runs the command (the Bash's again, or the patched zsh):
 * these shells' execs of the wrapper continue (the escalation path decides
 * what the wrapper asks about), anyone else's are judged on the program
 * they name (docs/enforcement.md).  Copied.  NULL when out of memory.
 */
struct exec_watch *exec_watch_new(uv_loop_t *loop, struct decide_call *dc, const char *wrapper,
                                  const char *bash, const char *shell);

/* Strict mode for every listener of w (exec_notify_set_refuse_shared_memory:
 * the check-then-use window, docs/enforcement.md).  Cannot fail. */
void exec_watch_set_strict(struct exec_watch *w, bool on);

/* With on (tree mode: the helper's execs are notified), each hand-over
 * socket offers the helper to leave its listener for the server to take
 * (exec_notify_offer_take), which saves it a courier process. */
void exec_watch_set_take_listener(struct exec_watch *w, bool on);

/*
 * The socket files a sandboxed command of w may connect to although their
 * server runs outside (--allow-unix-socket; borrowed: they must outlive
 * w).  Without this call only the sandbox's own sockets answer
 * (unix_connect.h).  Cannot fail.
 */
struct unix_connect_inode;
void exec_watch_allow_unix(struct exec_watch *w, const struct unix_connect_inode *allowed,
                           size_t n);

/* The sandbox runs in the network namespace ns describes (copied), not
 * the server's: the tree's abstract Unix names and datagram sockets are
 * looked up there (unix_connect.h). */
struct unix_connect_netns;
void exec_watch_set_netns(struct exec_watch *w, const struct unix_connect_netns *ns);

/*
 * A hand-over socket for one child about to be spawned with
 * --exec-notify-fd: returns the child's end (close-on-exec; the spawn makes
 * its copy inheritable), the server's end is watched from now on.  Returns
 * a negative errno on failure.  Close the returned fd with
 * exec_watch_spawned right after the spawn (failed or not).
 */
int exec_watch_open(struct exec_watch *w);
void exec_watch_spawned(struct exec_watch *w, int child_fd);

/*
 * Watches listener, the exec filter's listener of a program the server
 * started itself with the filter (spawn_child's exec_listener) whose first
 * exec it already continued: every notification is decided.  The program
 * is e, run outside the sandbox as r decided (borrowed for this call).
 * Unless a person approved it (by_person) or exec_watch_set_inherit, every
 * exec of its tree runs only when a rule allows it; others are asked
 * about, naming e and r's rule, or refused when nobody can be asked.  What
 * a person approves runs with its tree decided as the sandbox's is:
 * forbidden and prompt rules hold, the rest runs (docs/enforcement.md).  Takes
 * listener, even on failure.  Returns 0 or a negative errno (the listener
 * is then closed: the program's execs fail with ENOSYS).
 */
struct decide_exec;
struct decide_result;
int exec_watch_adopt(struct exec_watch *w, int listener, const struct decide_exec *e,
                     const struct decide_result *r, bool by_person);

/* --escalated-children=inherit: the trees of escalated programs are
 * decided as the sandbox's (a program no rule names runs outside without
 * a question), as the reference does.  Cannot fail. */
void exec_watch_set_inherit(struct exec_watch *w, bool on);

/*
 * Ends the watch with its call: withdraws open questions, closes every
 * listener (execs still waiting fail) and socket; frees once its handles
 * have closed.  NULL is a no-op.
 */
void exec_watch_release(struct exec_watch *w);

#endif
