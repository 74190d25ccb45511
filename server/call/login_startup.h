/*
 * login_startup: the fingerprint of a shell's startup files (device, inode,
 * size, mtime and ctime of each file it reads, and of each file those
 * source), taken with a snapshot and compared before each use: a snapshot
 * is good while its fingerprint holds.  login_snapshot.h includes this
 * header, for login_snapshot_startup_files.
 */
#ifndef EXECGATE_SERVER_LOGIN_STARTUP_H
#define EXECGATE_SERVER_LOGIN_STARTUP_H

#include "server/call/login_shells.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

/* Startup files followed (the standard set, /etc/profile.d's scripts and
 * the files they source by a literal path), and the bytes of each read to
 * find what it sources. */
#define LOGIN_SNAPSHOT_MAX_FILES  64
#define LOGIN_SNAPSHOT_SCAN_BYTES (1024u * 1024)

/*
 * The startup files a login shell of kind k reads with HOME home (NULL:
 * none of the personal ones), and those they source by a literal path
 * (`. ~/.bashrc`, `source "$HOME/.cargo/env"`), as far as they exist;
 * at most LOGIN_SNAPSHOT_MAX_FILES.  A NULL-terminated array of malloc'd
 * absolute paths (free with strv_free), or NULL when out of
 * memory.
 */
char **login_snapshot_startup_files(const struct login_snapshot_kind *k, const char *home);

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
