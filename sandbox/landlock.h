/*
 * landlock: a Landlock ruleset built from the ABI the running kernel has.
 *
 * The caller says what it wants (filesystem restriction, TCP restriction,
 * scoping) and which paths get which access; this module translates that to
 * the rights that the kernel's ABI knows, and says what it could not cover.
 */
#ifndef EXECGATE_SANDBOX_LANDLOCK_H
#define EXECGATE_SANDBOX_LANDLOCK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* What a path may be used for, beneath it. */
enum sandbox_ll_access {
    SANDBOX_LL_READ,   /* read files, list directories, execute */
    SANDBOX_LL_WRITE,  /* everything Landlock knows (read, write, create, remove, rename) */
    SANDBOX_LL_DEVICE, /* read, write, truncate and ioctl on a device node or /dev/pts */
};

struct sandbox_ll;

/*
 * The Landlock ABI version of the running kernel, at most
 * $EXECGATE_SANDBOX_MAX_ABI when that is set (a test knob that can only
 * lower it).  Returns 0 when Landlock is absent or disabled.
 */
int sandbox_ll_abi(void);

/*
 * Creates a ruleset for `abi` (>= 1 when fs or tcp is asked): fs restricts
 * the filesystem, tcp denies TCP bind/connect (ABI 4+), scope isolates
 * signals and abstract Unix sockets (ABI 6+).  Parts the ABI lacks are left
 * out; sandbox_ll_report says which.  Returns NULL with errno set on failure.
 */
struct sandbox_ll *sandbox_ll_new(int abi, bool fs, bool tcp, bool scope);

/*
 * Allows `access` beneath path (a directory, or a single file).  Returns 0,
 * -ENOENT when the path does not exist (nothing added), or another -errno.
 */
int sandbox_ll_allow(struct sandbox_ll *ll, const char *path, enum sandbox_ll_access access);

/* As sandbox_ll_allow, for the file fd is open on (O_PATH will do; fd
 * stays the caller's): the rule is for that very file, whatever its path
 * names by now.  Returns 0 or -errno. */
int sandbox_ll_allow_fd(struct sandbox_ll *ll, int fd, enum sandbox_ll_access access);

/*
 * Enforces the ruleset on the calling thread (no_new_privs must be set) and
 * adds a "landlock" object to report describing what is in force.  Returns
 * 0 or -errno.  Frees nothing: call sandbox_ll_free after.
 */
int sandbox_ll_enforce(struct sandbox_ll *ll, json_t *report);

/* The i-th thing that was asked but that the ABI cannot restrict
 * ("landlock-truncate", "landlock-tcp", "landlock-scope"), or NULL after the
 * last; borrowed. */
const char *sandbox_ll_missing(const struct sandbox_ll *ll, size_t i);

/* Frees ll (closing its fd); NULL is a no-op. */
void sandbox_ll_free(struct sandbox_ll *ll);

#endif
