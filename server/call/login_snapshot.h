/*
 * login_snapshot: what a login shell builds (its variables, functions,
 * aliases, options and umask), captured once and sourced before each login
 * call, so that `login: true` does not run the user's whole profile every
 * time (docs/server.md, "Login snapshots").
 *
 * A store holds one snapshot per key (the caller's: the policy, the
 * sandbox cwd, the workdir and the shell).  Each snapshot is kept in a
 * sealed memfd (no write, no resize: nobody can change it, whoever else
 * runs as this user), which a login call inherits at a fixed number and
 * sources by /proc/self/fd/N; no snapshot is ever a file another process
 * could write.  The store's private directory (mode 0700, in
 * $XDG_RUNTIME_DIR or the server's state directory: login_snapshot_parent)
 * holds only what zsh must find by name: the private ZDOTDIR its login
 * calls read ("zsh/", made with the first zsh snapshot).  The caller runs
 * the capture (the command login_snapshot_begin gives, as a login shell,
 * in the sandbox like any call) and hands its output back; this module
 * parses it, seals it, and says for each later login call whether it is
 * still good: not when a startup file the shell reads has changed (stat:
 * device, inode, size, mtime, ctime), nor after
 * LOGIN_SNAPSHOT_MAX_AGE_MS.  One capture runs at a time, server-wide; a
 * failed capture makes the calls for its key fall back to a real login
 * shell until a startup file changes or the age limit passes.
 *
 * Per shell kind (struct login_snapshot_kind): which startup files it reads,
 * how to capture, how a call then sources the capture (Bash: BASH_ENV;
 * zsh: a private ZDOTDIR in the store's directory).
 */
#ifndef EXECGATE_SERVER_LOGIN_SNAPSHOT_H
#define EXECGATE_SERVER_LOGIN_SNAPSHOT_H

#include "server/call/login_shells.h"  /* the shell kinds */
#include "server/call/login_startup.h" /* the startup files a kind reads */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A snapshot is retaken after this long even when no startup file changed
 * (the profile may read what no stat can see: the time, the network). */
#define LOGIN_SNAPSHOT_MAX_AGE_MS (30u * 60 * 1000)
/* Bytes of a capture's output kept: a larger capture fails (the calls then
 * run real login shells). */
#define LOGIN_SNAPSHOT_MAX_BYTES (8u * 1024 * 1024)
/* Snapshots kept at once (keys); the least recently used goes first. */
#define LOGIN_SNAPSHOT_MAX_KEPT 8
/* The profile's own output, logged at capture, is cut to this many bytes. */
#define LOGIN_SNAPSHOT_LOG_BYTES 2000

struct login_snapshot;

/*
 * Where the store's directory goes (malloc'd): $XDG_RUNTIME_DIR when it is
 * a directory of this user's that nobody else may write in; else the
 * server's state directory, $XDG_STATE_HOME/execgate or, without
 * XDG_STATE_HOME, ~/.local/state/execgate (made, mode 0700, when missing,
 * and refused unless private).  Never /tmp or $TMPDIR, where another
 * sandbox of the same user may write.  NULL with *err (malloc'd) when
 * there is none (no HOME either): login calls then run real login shells.
 */
char *login_snapshot_parent(char **err);

/*
 * A store in a new private directory below parent (made there by mkdtemp,
 * "execgate-login-XXXXXX", mode 0700, and locked with flock for the
 * store's life); login calls inherit a snapshot at fd number fd_at (> 2).
 * First removes the stores a server that was killed left below parent
 * (this user's, a minute old or more, whose lock is free).  NULL with
 * *err (malloc'd) on failure.
 */
struct login_snapshot *login_snapshot_new(const char *parent, int fd_at, char **err);

/* The store's directory (a sandbox must not change it: hide it, or bind
 * it read-only). */
const char *login_snapshot_dir(const struct login_snapshot *ls);

/* Removes the store's files and directory and frees it; what cannot be
 * removed (a foreign file keeps the directory) is logged.  NULL is a
 * no-op. */
void login_snapshot_free(struct login_snapshot *ls);

enum login_snapshot_state {
    LOGIN_SNAPSHOT_READY,    /* *fd is the snapshot to source */
    LOGIN_SNAPSHOT_CAPTURE,  /* none good: the caller should capture now */
    LOGIN_SNAPSHOT_WAIT,     /* a capture is running: wait for its end */
    LOGIN_SNAPSHOT_FALLBACK, /* the last capture for key failed: a real login shell */
};

/*
 * What a login call for key (the caller's, any text) and kind k, with HOME
 * home, can do now (now_ms: a monotonic clock in milliseconds).  For
 * READY, *fd is the sealed memfd to source (borrowed until the next call
 * into the store: the caller hands it to the call's spawn, at the store's
 * fd_at, right away); else -1.  Cannot fail: out of memory is FALLBACK.
 */
enum login_snapshot_state login_snapshot_get(struct login_snapshot *ls,
                                             const struct login_snapshot_kind *k, const char *key,
                                             const char *home, uint64_t now_ms, int *fd);

/*
 * Begins the capture for key: the startup files are looked at now (a change
 * during the capture makes the next call retake it).  Returns the command
 * (malloc'd) the caller runs as a login shell of kind k; its whole output
 * (stdout and stderr) goes to login_snapshot_done.  NULL when out of memory
 * or when a capture already runs.
 */
char *login_snapshot_begin(struct login_snapshot *ls, const struct login_snapshot_kind *k,
                           const char *key, const char *home, uint64_t now_ms);

/*
 * The capture's end: ran says whether it ran to its end (exit 0, not killed,
 * nothing cut); out (len bytes) is its output.  Seals the snapshot in a
 * memfd, or marks the key failed.  Returns 0, or -1 with *why (malloc'd, NULL: out of
 * memory) saying what went wrong, for one warning.  *noise (malloc'd, may be
 * NULL) is what the profile itself printed, cut to LOGIN_SNAPSHOT_LOG_BYTES,
 * for the log.
 */
int login_snapshot_done(struct login_snapshot *ls, bool ran, const char *out, size_t len,
                        char **noise, char **why);

/*
 * The capture was called off before its end, for a reason of its caller's
 * and none of the profile's (the client whose call it ran as went away):
 * it is forgotten, and the key is not marked failed, so the next login
 * call for it captures again.  Nothing happens when no capture runs.
 */
void login_snapshot_abandon(struct login_snapshot *ls);

/*
 * A login call's command line and environment, changed to source the
 * snapshot its spawn gives it at the store's fd_at (READY), for a shell of
 * kind k.  argv runs the shell as `SHELL -lc COMMAND` (argv's "-lc" found
 * from the end).  Bash: it becomes `SHELL --noprofile -lc COMMAND`, still a
 * login shell (shopt login_shell, ~/.bash_logout on exit), which reads no
 * startup file but BASH_ENV, set in env to /proc/self/fd/N (any earlier
 * BASH_ENV replaced; the snapshot restores the login shell's own before
 * the command runs).  zsh: argv stays; env gets ZDOTDIR naming the store's
 * private one, whose .zshenv turns GLOBAL_RCS off and whose .zlogin
 * sources /proc/self/fd/N, named by EXECGATE_LOGIN_SNAPSHOT (the snapshot
 * sets ZDOTDIR back and unsets that).  The snapshot's first line closes N,
 * so the command's programs do not inherit it.  Both arrays are
 * NULL-terminated and malloc'd and may be reallocated.  Returns 0, or -1
 * when out of memory or argv has no "-lc" (both then unchanged).
 */
int login_snapshot_use(const struct login_snapshot *ls, const struct login_snapshot_kind *k,
                       char ***argv, char ***env);

#endif
