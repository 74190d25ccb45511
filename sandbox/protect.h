/*
 * protect: the paths given with the helper's --protect option (the
 * server's own state: its rules, CODEX_HOME, its audit log) kept read-only
 * inside a workspace-write sandbox when they lie in a location the policy
 * makes writable.
 *
 * Each path is resolved with realpath (it may be a symlink planted by a
 * command, since commands control the writable locations); what is bound
 * read-only, and what decides whether anything is needed, is the resolved
 * path.  A missing path is created as a directory (mode 0700, with its
 * missing parents) so that the bind has something to sit on.  Its
 * ancestors that lie strictly inside a writable location are "pinned"
 * (bound over themselves, still writable) so that they cannot be renamed
 * away and replaced.  See docs/sandbox.md.
 */
#ifndef EXECGATE_SANDBOX_PROTECT_H
#define EXECGATE_SANDBOX_PROTECT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sandbox/protect_arg.h" /* sandbox_protect_arg_error */

struct sandbox_protect;
struct sandbox_writable;

/*
 * The writable locations of w (sandbox_writable_new), canonical
 * (realpath): its roots, which only workspace-write has (its devices
 * hold nothing a path could be created in).  Locations that do not exist
 * are left out, as Landlock leaves them out.  Borrows w.  Returns a new
 * set to free with sandbox_protect_free, or NULL when out of memory.
 */
struct sandbox_protect *sandbox_protect_new(const struct sandbox_writable *w);

/* Frees sp; NULL is a no-op. */
void sandbox_protect_free(struct sandbox_protect *sp);

/* The canonical writable locations of sp (borrowed). */
size_t sandbox_protect_location_count(const struct sandbox_protect *sp);
const char *sandbox_protect_location(const struct sandbox_protect *sp, size_t i);

/* Whether the canonical path lies within the canonical root: equal to it
 * or beneath it ("/a/bc" is not within "/a/b"; everything is within "/"). */
bool sandbox_path_within(const char *path, const char *root);

/*
 * Resolves path (accepted by sandbox_protect_arg_error) and decides
 * whether it lies within one of sp's locations.  *resolved is set to a
 * malloc'd canonical path: realpath(path), or when path does not exist,
 * realpath of its deepest existing ancestor followed by the missing
 * components (*missing of them; 0 when path exists).
 * Returns 1 when the resolved path lies within a location, 0 when it lies
 * outside all of them (nothing to protect; *resolved is still set), or
 * -errno with *err set to a malloc'd message (NULL when out of memory) and
 * *resolved NULL: out of memory, or path cannot be resolved (not a
 * directory on the way, a symlink loop, no search permission) and its
 * deepest resolvable ancestor lies within a location, so a command could
 * change what it names.
 */
int sandbox_protect_resolve(const struct sandbox_protect *sp, const char *path, char **resolved,
                            size_t *missing, char **err);

/*
 * Protects path, inside a private mount namespace of the calling process:
 * when it resolves within a location, creates it if missing (a directory,
 * mode 0700, with its missing parents; a creation refused with EROFS, or
 * with EACCES/EPERM in a directory the caller does not own, is left out:
 * the command cannot create it either), pins its ancestors strictly inside
 * a location, and binds the resolved path read-only, appending it to ro
 * (a JSON array).  A path bound before through sp is not bound again.
 * Returns 1 when path resolved within a location (and was handled as
 * above), 0 when it lies outside all of them (nothing done), or -errno
 * with *err set to a malloc'd message (NULL when out of memory).
 */
int sandbox_protect_apply(struct sandbox_protect *sp, const char *path, json_t *ro, char **err);

/*
 * Pins the ancestors of path (resolved as sandbox_protect_resolve does)
 * that lie strictly inside one of sp's locations, when path exists there,
 * so that a directory above it cannot be renamed away (EBUSY): for a
 * --hide path, whose cover would move along, leaving the object under
 * another name for later calls.  A path outside every location, missing,
 * or that cannot be resolved needs nothing.  Returns 0, or -errno with
 * *err set to a malloc'd message (NULL when out of memory).
 */
int sandbox_protect_pin_ancestors(struct sandbox_protect *sp, const char *path, char **err);

#endif
