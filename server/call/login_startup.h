/*
 * login_startup: the fingerprint of a shell's startup files (device, inode,
 * size, mtime and ctime of each file it reads, and of each file those
 * source), taken with a snapshot and compared before each use: a snapshot
 * is good while its fingerprint holds.  The list of files is
 * login_snapshot_startup_files (login_snapshot.h).
 */
#ifndef EXECGATE_SERVER_LOGIN_STARTUP_H
#define EXECGATE_SERVER_LOGIN_STARTUP_H

#include "server/call/login_snapshot.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

/* What stat says of one startup file; all zero when it is missing. */
struct file_mark {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
};

struct fingerprint {
    char **files;
    struct file_mark *marks;
    size_t n;
};

/* Lists k's startup files under home and marks each; 0, or -1 when out of
 * memory (f is then empty). */
int login_fingerprint_take(struct fingerprint *f, const struct login_snapshot_kind *k,
                           const char *home);

/* Whether every file f watched is as it was. */
bool login_fingerprint_holds(const struct fingerprint *f);

/* Frees what f holds and zeroes it; an empty f is a no-op. */
void login_fingerprint_release(struct fingerprint *f);

#endif
