/*
 * profile: Codex's permission profiles (the `permissionProfile` of a
 * sandbox state, docs/server.md) turned into the one policy model the
 * server and the helper share: a sandboxPolicy object (policy.h) with the
 * fields that only a profile needs (exclude_cwd, plain_writable_roots,
 * read_only_paths, deny_paths).
 *
 * A profile is resolved when a call is prepared: special paths become
 * paths, glob patterns are expanded against the file system as it is then,
 * and Codex's precedence (the entry with the most path components wins; on
 * a tie deny beats write beats read; a path no entry covers is denied) is
 * folded into writable roots, read-only carve-outs inside them, readable
 * roots and hidden paths.  Knows nothing of MCP or libuv.
 */
#ifndef EXECGATE_SANDBOX_PROFILE_H
#define EXECGATE_SANDBOX_PROFILE_H

#include <jansson.h>

/* How many directory levels below a glob pattern's literal prefix are
 * scanned when the profile does not say (glob_scan_max_depth), the most it
 * may say, how many paths one pattern may match, and how many directory
 * entries all of a profile's patterns may read, before the profile is
 * refused: a pattern cut short would have been expanded in part, and a
 * deny entry cut short hides too little; the scan runs on the server's
 * loop, so it must end soon. */
#define SANDBOX_PROFILE_GLOB_DEPTH     8
#define SANDBOX_PROFILE_GLOB_DEPTH_MAX 64
#define SANDBOX_PROFILE_GLOB_MATCHES   4096
#define SANDBOX_PROFILE_GLOB_SCAN      65536

/*
 * The sandboxCwd of a sandbox state: a file:// URL (host empty or
 * "localhost"; percent-encoded), or, as older clients send it, an
 * absolute path.  Returns the absolute path (malloc'd), or NULL with *err
 * set to a malloc'd message (a relative path, another scheme or host, a
 * bad or NUL escape).
 */
char *sandbox_profile_cwd(const char *text, char **err);

/*
 * The sandboxPolicy object (a new reference) that runs a command as
 * profile says, with cwd (absolute: what project_roots names) and tmpdir
 * (what the tmpdir special names; NULL or relative: nothing).  Borrows its
 * arguments.  NULL with *err set to a malloc'd message naming the field:
 * an unknown profile type, access or path type, a relative path, a glob
 * that matches too much, out of memory.
 */
json_t *sandbox_profile_to_policy(const json_t *profile, const char *cwd, const char *tmpdir,
                                  char **err);

#endif
