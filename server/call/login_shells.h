/*
 * login_shells: the shells login snapshots know, one kind per shell
 * (struct login_snapshot_kind, opaque here; its body, shared by the
 * login_* files, is login_shells_int.h).  login_snapshot.h includes this
 * header: everyone else sees the kinds through it.
 */
#ifndef EXECGATE_SERVER_LOGIN_SHELLS_H
#define EXECGATE_SERVER_LOGIN_SHELLS_H

#include <stdbool.h>

struct login_snapshot_kind;

/* The kind for a shell named name ("bash", "zsh": the basename of the
 * shell's path is enough), or NULL when it has none. */
const struct login_snapshot_kind *login_snapshot_kind_find(const char *name);

/* The kind's name ("bash"). */
const char *login_snapshot_kind_name(const struct login_snapshot_kind *k);

/* Whether the kind can capture at all (both do). */
bool login_snapshot_kind_captures(const struct login_snapshot_kind *k);

#endif
