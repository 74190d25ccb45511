/*
 * sandbox policy: what a sandboxed command may do, as a Codex client says it.
 *
 * Parses the `sandboxPolicy` object of `codex/sandbox-state/update` (with its
 * `sandboxCwd`), turns it back into one canonical JSON text for the helper's
 * --policy argument, describes it in one line for logs, and builds the
 * helper's command line.  Knows nothing of MCP or libuv.
 */
#ifndef EXECGATE_SANDBOX_POLICY_H
#define EXECGATE_SANDBOX_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum sandbox_kind {
    SANDBOX_DANGER_FULL_ACCESS,
    SANDBOX_READ_ONLY,
    SANDBOX_WORKSPACE_WRITE,
    SANDBOX_EXTERNAL,
};

/* Exit status of execgate-sandbox when it could not apply the policy and
 * therefore ran nothing. */
#define SANDBOX_EXIT_SETUP_FAILED 125

struct sandbox_policy;

/* Sets *err to a malloc'd message (left NULL when even that fails) and
 * returns -1, so callers can `return sandbox_fail(err, ...)`; shared by the
 * policy and profile parsers. */
__attribute__((format(printf, 2, 3))) int sandbox_fail(char **err, const char *fmt, ...);

/*
 * Parses `policy` (the sandboxPolicy object) with `sandbox_cwd` (absolute;
 * the root that workspace-write makes writable).  Unknown fields are
 * ignored; an unknown type, a wrong field type or a relative path is an
 * error.  Returns a new policy, or NULL with *err set to a malloc'd
 * one-line message naming the field (caller frees).  Borrows its arguments.
 */
struct sandbox_policy *sandbox_policy_from_json(const json_t *policy, const char *sandbox_cwd,
                                                char **err);

/* As sandbox_policy_from_json, from the canonical text made by
 * sandbox_policy_to_json (which carries the sandbox cwd inside it), and
 * with the canonical roots that text may carry
 * (sandbox_policy_set_canonical_roots), which sandbox_policy_from_json
 * ignores: they are the server's, never a client's. */
struct sandbox_policy *sandbox_policy_parse(const char *text, char **err);

/* Frees p; NULL is a no-op. */
void sandbox_policy_free(struct sandbox_policy *p);

/*
 * Gives workspace-write policy p the writable roots (and, among them, the
 * repo roots) as a server resolved them, in place of those its sandbox
 * cwd, writable_roots, $TMPDIR and /tmp name: its writable set
 * (sandbox_writable_new) is then exactly these, and its canonical text
 * carries them as "canonical_roots": {"roots": [...], "repo_roots":
 * [...]}, which the helper reaches without following any symbolic link
 * (docs/sandbox.md, "Roots resolved once").  Each path must be absolute
 * with no empty, "." or ".." component; each repo root must be a root.
 * Copies what it keeps.  Returns 0, or -1 with *err a malloc'd message
 * (another kind of policy, a bad path, out of memory); p is then
 * unchanged.
 */
int sandbox_policy_set_canonical_roots(struct sandbox_policy *p, const char *const *roots,
                                       size_t n_roots, const char *const *repo_roots,
                                       size_t n_repo_roots, char **err);

enum sandbox_kind sandbox_policy_kind(const struct sandbox_policy *p);
bool sandbox_policy_network_allowed(const struct sandbox_policy *p);

/* Canonical JSON text of p, sandbox cwd included; caller frees. NULL only
 * when out of memory. */
char *sandbox_policy_to_json(const struct sandbox_policy *p);

/* One line for logs, e.g. "workspace-write roots=/a,/tmp network=off";
 * caller frees. NULL only when out of memory. */
char *sandbox_policy_describe(const struct sandbox_policy *p);

/* --- Accessors for the helper and tests (borrowed results, cannot fail) --- */

/* The sandbox cwd (absolute), or NULL when the policy was given none. */
const char *sandbox_policy_cwd(const struct sandbox_policy *p);

/* Extra writable roots of workspace-write (absolute paths), in order. */
size_t sandbox_policy_writable_root_count(const struct sandbox_policy *p);
const char *sandbox_policy_writable_root(const struct sandbox_policy *p, size_t i);

/* Whether workspace-write also makes $TMPDIR / /tmp writable. */
bool sandbox_policy_tmpdir_writable(const struct sandbox_policy *p);
bool sandbox_policy_slash_tmp_writable(const struct sandbox_policy *p);

/* Whether reads are narrowed to readable roots (the `access` /
 * `read_only_access` "restricted" form); false means readable everywhere. */
bool sandbox_policy_reads_restricted(const struct sandbox_policy *p);
bool sandbox_policy_platform_defaults(const struct sandbox_policy *p);
size_t sandbox_policy_readable_root_count(const struct sandbox_policy *p);
const char *sandbox_policy_readable_root(const struct sandbox_policy *p, size_t i);

/* Whether the sandbox cwd is itself a root the policy grants (readable,
 * and writable under workspace-write): true for a sandboxPolicy a client
 * sent, false for one made from a permission profile (profile.h), whose
 * entries alone say what is granted. */
bool sandbox_policy_cwd_is_root(const struct sandbox_policy *p);

/* The paths a permission profile's deny entries hide from the command,
 * made unreadable by the mount namespace (docs/sandbox.md). */
size_t sandbox_policy_deny_count(const struct sandbox_policy *p);
const char *sandbox_policy_deny(const struct sandbox_policy *p, size_t i);

/*
 * Where a command under a policy may write: the one statement of it.  The
 * helper's Landlock rules and its --protect locations (helper.c,
 * protect.c) and the server's view of what a call's sandbox could have
 * changed (server/call/writable_view.c) are all made from it, so they cannot
 * disagree.  Paths are as the policy and tmpdir give them, not resolved:
 * Landlock follows symlinks when it adds a rule and grants nothing for a
 * path that does not exist, so whoever compares paths resolves each with
 * realpath and drops those that do not resolve.
 *
 *   danger-full-access,  everything: no filesystem confinement, whatever
 *   external-sandbox     the user may write; the lists are empty
 *   read-only            devices only
 *   workspace-write      devices; roots: the sandbox cwd (unless
 *                        exclude_cwd), each writable_roots and
 *                        plain_writable_roots entry, tmpdir unless
 *                        exclude_tmpdir_env_var, /tmp unless
 *                        exclude_slash_tmp; repo_roots: the sandbox cwd
 *                        (unless exclude_cwd) and the writable_roots
 *                        entries; or, with canonical roots, devices and
 *                        those roots; read_only: read_only_paths
 */
struct sandbox_writable {
    bool everything;
    /* The roots are canonical_roots, as the server resolved them: the
     * helper grants each only as reached without a symbolic link, and
     * refuses to run when a link lies on the way. */
    bool canonical;
    /* Beneath each: write, create, remove, rename, everything. */
    char **roots;
    size_t n_roots;
    /* Device nodes (and /dev/pts, beneath it) that may be opened for
     * reading and writing, truncated and ioctl'd; nothing can be created,
     * removed or renamed there.  The rest of /dev is not writable (unless
     * a root lies there). */
    char **devices;
    size_t n_devices;
    /* Roots (also in roots) whose .git, the gitdir a .git file names, and
     * .codex the helper keeps read-only (bound read-only in its mount
     * namespace; without one it refuses to run, unless --allow-degraded).
     * The --protect paths are kept read-only too, but come from the
     * helper's command line, not from the policy. */
    char **repo_roots;
    size_t n_repo_roots;
    /* Paths inside the roots that stay read-only when they exist (a
     * permission profile's read entries beneath its write entries): the
     * helper binds each read-only; a missing one is skipped, as Codex
     * skips it.  The server's view of what a call could change ignores
     * them (it may only ever count too much as writable, never too
     * little). */
    char **read_only;
    size_t n_read_only;
};

/*
 * The writable set of p.  tmpdir is $TMPDIR as the helper sees it (its
 * own environment; NULL when unset): only an absolute one counts (the
 * helper grants nothing for a relative one, which would name a different
 * place from each working directory).
 * Borrows its arguments and copies what it keeps.  Returns a new set to
 * free with sandbox_writable_free, or NULL when out of memory.
 */
struct sandbox_writable *sandbox_writable_new(const struct sandbox_policy *p, const char *tmpdir);

/* Frees w; NULL is a no-op. */
void sandbox_writable_free(struct sandbox_writable *w);

/* "danger-full-access", "read-only", "workspace-write" or "external-sandbox". */
const char *sandbox_kind_name(enum sandbox_kind kind);

#endif
