/*
 * login_shells_int: the body of a shell kind (struct
 * login_snapshot_kind): which startup files each reads, the command that
 * captures what its login shell builds, and how a login call sources the
 * capture.  Shared by the store (login_snapshot.c), the startup files
 * (login_startup.c) and the captures (login_shells.c); everyone else sees
 * login_shells.h through login_snapshot.h.
 */
#ifndef EXECGATE_SERVER_LOGIN_SHELLS_INT_H
#define EXECGATE_SERVER_LOGIN_SHELLS_INT_H

#include "server/call/login_shells.h"

/* How a login call sources its snapshot (login_snapshot_use). */
enum use_how {
    USE_BASH_ENV, /* bash --noprofile -lc, BASH_ENV naming the file */
    USE_ZDOTDIR,  /* zsh -lc with the store's private ZDOTDIR (ZSH_ZDOTDIR) */
};

struct login_snapshot_kind {
    const char *name;
    /* what a login shell reads: absolute, or "~/" for HOME (and, for zsh,
     * for $ZDOTDIR too); a directory ending in "/" stands for its *.sh
     * scripts (and itself: its mtime says when one is added or removed) */
    const char *const *startup;
    /* the capture's command text for marker nonce; NULL: no capture */
    char *(*capture)(const char *nonce);
    enum use_how use;
};

/* The lines a capture prints around the snapshot, each followed by the
 * capture's nonce: the store takes what lies between them. */
#define MARK_BEGIN "EXECGATE-LOGIN-SNAPSHOT-BEGIN-"
#define MARK_END   "EXECGATE-LOGIN-SNAPSHOT-END-"

/* zsh: the private ZDOTDIR (in the store's directory) of login calls that
 * source a snapshot, and the variable naming the snapshot for its .zlogin.
 * zsh reads /etc/zsh/zshenv, then ZSH_ZDOTDIR/.zshenv, which turns
 * GLOBAL_RCS off (the snapshot holds what /etc/zsh/zprofile and
 * /etc/zsh/zlogin did); there is no .zprofile; ZSH_ZDOTDIR/.zlogin, the
 * last startup file, sources the snapshot, which sets ZDOTDIR back to the
 * login shell's (or unsets it), unsets ZSH_SNAPSHOT_VAR and ends with the
 * login shell's options (GLOBAL_RCS among them, for /etc/zsh/zlogout). */
#define ZSH_ZDOTDIR      "zsh"
#define ZSH_SNAPSHOT_VAR "EXECGATE_LOGIN_SNAPSHOT"

#endif
