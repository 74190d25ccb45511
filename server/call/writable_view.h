/*
 * writable_view: where a call's sandbox can write, as the server sees it:
 * the writable set the helper applies (sandbox_writable_new,
 * sandbox/policy/policy.h), each path resolved.  Anything there is the sandboxed
 * command's to make, replace or repoint, so nothing found there may vouch
 * for what runs outside the sandbox.  A permission profile's read-only
 * paths and hidden paths inside the roots are not taken out: the view may
 * count too much as writable, never too little.
 */
#ifndef EXECGATE_SERVER_WRITABLE_VIEW_H
#define EXECGATE_SERVER_WRITABLE_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct writable_view {
    enum { WRITABLE_VIEW_SOME, WRITABLE_VIEW_ALL } kind;
    char **roots; /* SOME: the writable roots, canonical */
    size_t n;
    char **devices; /* SOME: the device nodes (and /dev/pts) it may write, canonical */
    size_t n_devices;
    /* the roots whose .git and .codex the helper keeps read-only (the
     * sandbox cwd and the explicit writable roots; canonical) */
    char **repo_roots;
    size_t n_repo_roots;
};

/* Whether some sandbox other than this call's could have written dir
 * (canonical); told by the caller, who knows the other calls. */
typedef bool (*writable_view_written_fn)(void *arg, const char *dir);

struct sandbox_policy;

/*
 * The view of p (parsed once by the caller, who builds the helper's
 * command line from the same p) with the server's $TMPDIR, which is the
 * helper's (the call's environment is the server's own):
 * sandbox_writable_new's set (sandbox/policy/policy.h says what each kind
 * of policy yields), each path resolved, those that do not resolve left
 * out (they grant nothing), and so are those reached through a symbolic
 * link lying in one of the policy's roots (a sandboxed command may have
 * planted it) or where written says some earlier sandbox could write:
 * that link may have been planted to choose what this call writes.
 * written may be NULL.  ALL when it is everything.  Returns 0, or -1 with
 * *err a malloc'd message (out of memory); *v is then empty.  Release
 * with writable_view_release.
 */
int writable_view_init_after(struct writable_view *v, const struct sandbox_policy *p,
                             writable_view_written_fn written, void *arg, char **err);

/* Frees what v holds; safe on a zeroed view. */
void writable_view_release(struct writable_view *v);

/*
 * Gives p, the policy v was made from (workspace-write; any other kind is
 * left as it is), v's roots as its canonical roots
 * (sandbox_policy_set_canonical_roots): the helper then grants exactly
 * the directories v names, reached without a symbolic link, rather than
 * resolving the policy's paths again when the call starts, by which time
 * a link on the way may name another place.  Returns 0, or -1 with *err a
 * malloc'd message.
 */
int writable_view_pin(const struct writable_view *v, struct sandbox_policy *p, char **err);

/* Makes *dst a copy of src (all its lists).  Returns 0, or -1 when out of
 * memory (*dst is then empty). */
int writable_view_copy(struct writable_view *dst, const struct writable_view *src);

/* Whether a and b are the same set: same kind and the same roots, devices
 * and repo roots, in the same order.  Cannot fail. */
bool writable_view_equal(const struct writable_view *a, const struct writable_view *b);

/*
 * Whether the sandbox could have written, replaced or repointed path
 * (absolute; compared as given, so pass canonical paths where links may
 * lie before it): whether it is, or lies beneath, a root or a device.
 * With ALL: whether the server's user may write it or its directory.
 * Cannot fail (out of memory answers yes).
 */
bool writable_view_contains(const struct writable_view *v, const char *path);

#endif
