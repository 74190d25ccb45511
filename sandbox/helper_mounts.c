/*
 * helper_mounts: the helper's mount namespace.  The writable roots opened
 * once, the read-only world with the roots put back on top, the sandbox's
 * own /dev and devpts, .git and .codex of the repo roots and the --protect
 * and read-only paths bound read-only, the --hide paths covered; and the
 * .codex placeholders held for the call and released after it.
 */
#include "sandbox/helper_run.h"
#include "common/no_link.h"
#include "sandbox/protect.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Opens each writable root once, after the namespaces are made (the binds
 * through these fds must be in the helper's own mount namespace).  A root
 * that is not there grants nothing, as Landlock grants nothing there.
 * Canonical roots (the server's, resolved when the call arrived) are
 * reached without following any link: one on the way now means a
 * directory was replaced since the server looked, and the command would be
 * let write a place the server never saw, so the helper refuses to run it.
 */
void
helper_open_roots(struct run *r)
{
    if (r->roots_open)
        return;
    r->roots_open = true;
    r->root_fds = calloc(r->w->n_roots ? r->w->n_roots : 1, sizeof *r->root_fds);
    if (r->root_fds == NULL)
        sandbox_helper_die(ENOMEM, "the writable roots");
    for (size_t i = 0; i < r->w->n_roots; i++) {
        const char *root = r->w->roots[i];
        int fd = r->w->canonical ? no_link_open(root) : open(root, O_PATH | O_CLOEXEC);
        if (fd < 0 && !r->w->canonical)
            fd = -errno;
        if (fd == -ELOOP && r->w->canonical)
            sandbox_helper_die(0,
                               "writable root %s: a symbolic link lies on its path now, though "
                               "the server resolved it to this path, without one, when the call "
                               "arrived (a directory on the way was replaced since); refusing to "
                               "run the command rather than let it write where the server never "
                               "looked",
                               root);
        if (fd < 0 && fd != -ENOENT && fd != -ENOTDIR)
            sandbox_helper_die(-fd, "opening the writable root %s", root);
        r->root_fds[i] = fd;
    }
}

/* sandbox_ns_reopen_fn: root i as its path leads now, reached as
 * open_roots reached it. */
static int
reopen_root(void *arg, size_t i)
{
    struct run *r = arg;
    const char *root = r->w->roots[i];
    if (r->w->canonical)
        return no_link_open(root);
    int fd = open(root, O_PATH | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/*
 * The read-only world: every mount read-only, the writable roots put back
 * on top, nosuid and nodev (sandbox_ns_read_only_world); their fds then
 * hold the copies the command sees, on which the .git/.codex binds and the
 * Landlock rules are made.  A kernel without the calls is refused, or
 * with --allow-degraded reported.
 */
static void
make_world_read_only(struct run *r)
{
    char *err = NULL;
    int rc =
        sandbox_ns_read_only_world(r->root_fds, r->w->roots, r->w->n_roots, reopen_root, r, &err);
    if (rc == -ENOSYS) {
        helper_require(r, "read-only-world",
                       "the kernel lacks open_tree, move_mount or mount_setattr, so chmod, chown, "
                       "utimensat, setxattr and truncate outside the writable roots would not be "
                       "stopped");
    } else if (rc == -EAGAIN) {
        sandbox_helper_die(0,
                           "%s: it was replaced while the helper set up the sandbox; refusing "
                           "to run the command rather than let it write a directory nobody "
                           "checked",
                           err ? err : "a writable root");
    } else if (rc < 0) {
        sandbox_helper_die(-rc, "the read-only world: %s", err ? err : "out of memory");
    }
    free(err);
    helper_put(r->report, "read_only_world", json_boolean(rc == 0));
}

/* The fd of the root named root (a repo root is one of the roots), or -1. */
static int
root_fd(const struct run *r, const char *root)
{
    for (size_t i = 0; i < r->w->n_roots; i++) {
        if (strcmp(r->w->roots[i], root) == 0)
            return r->root_fds[i];
    }
    return -1;
}

/* The paths sandbox_ns_protect appended to ro from index from on, named
 * relative to the root ("./.git"), named from the root's path instead. */
static void
name_from_root(json_t *ro, size_t from, const char *root)
{
    for (size_t i = from; i < json_array_size(ro); i++) {
        const char *path = json_string_value(json_array_get(ro, i));
        if (path == NULL || strncmp(path, "./", 2) != 0)
            continue;
        char *named = NULL;
        if (asprintf(&named, "%s%s%s", root, strcmp(root, "/") == 0 ? "" : "/", path + 2) < 0 ||
            json_array_set_new(ro, i, json_string(named)) != 0)
            sandbox_helper_die(ENOMEM, "building the report");
        free(named);
    }
}

/* The .git and .codex of the writable set's repo roots, read-only: found
 * from the root's fd (the helper's working directory for the while), so
 * that they are those of the directory the rules are for. */
static void
protect_paths(struct run *r)
{
    int here = open(".", O_PATH | O_CLOEXEC | O_DIRECTORY);
    if (here < 0)
        sandbox_helper_die(errno, "opening the working directory");
    r->codex = calloc(r->w->n_repo_roots ? r->w->n_repo_roots : 1, sizeof *r->codex);
    if (r->codex == NULL)
        sandbox_helper_die(ENOMEM, "the repo roots");
    for (size_t i = 0; i < r->w->n_repo_roots; i++)
        r->codex[i].ph.fd = -1;
    for (size_t i = 0; i < r->w->n_repo_roots; i++) {
        const char *root = r->w->repo_roots[i];
        int fd = root_fd(r, root);
        char *err = NULL;
        if (fd < 0)
            continue;
        if (fchdir(fd) != 0)
            sandbox_helper_die(errno, "keeping .git and .codex read-only in %s", root);
        size_t from = json_array_size(r->read_only);
        int rc = sandbox_ns_protect(".", &r->codex[i].ph, r->read_only, &err);
        if (rc < 0)
            sandbox_helper_die(-rc, "keeping .git and .codex read-only in %s: %s", root,
                               err ? err : "out of memory");
        if (r->codex[i].ph.fd >= 0)
            r->codex[i].root_path = getcwd(NULL, 0);
        free(err);
        name_from_root(r->read_only, from, root);
    }
    if (fchdir(here) != 0)
        sandbox_helper_die(errno, "returning to the working directory");
    close(here);
}

static struct sandbox_protect *
protect_new(struct run *r)
{
    struct sandbox_protect *sp = sandbox_protect_new(r->w);
    if (sp == NULL)
        sandbox_helper_die(ENOMEM, "--protect");
    return sp;
}

/* The --protect paths: each that resolves within a writable location is
 * bound read-only (created first when missing), its ancestors inside one
 * pinned; the others need nothing, Landlock keeps them read-only. */
static void
protect_extra(struct run *r)
{
    if (r->o->n_protect == 0)
        return;
    struct sandbox_protect *sp = protect_new(r);
    for (size_t i = 0; i < r->o->n_protect; i++) {
        const char *path = r->o->protect[i];
        char *err = NULL;
        int rc = sandbox_protect_apply(sp, path, r->read_only, &err);
        if (rc < 0)
            sandbox_helper_die(-rc, "--protect: %s", err ? err : path);
        free(err);
    }
    sandbox_protect_free(sp);
}

/* The writable set's read-only paths (a permission profile's read entries
 * beneath its write entries): each that exists is bound read-only, its
 * ancestors inside a writable location pinned; one that does not exist is
 * skipped, as Codex skips it (creating it would change the workspace). */
static void
protect_read_only(struct run *r)
{
    if (r->w->n_read_only == 0)
        return;
    struct sandbox_protect *sp = protect_new(r);
    for (size_t i = 0; i < r->w->n_read_only; i++) {
        const char *path = r->w->read_only[i];
        char *resolved = NULL, *err = NULL;
        size_t missing = 0;
        int rc = sandbox_protect_resolve(sp, path, &resolved, &missing, &err);
        free(resolved);
        if (rc == -ENOMEM)
            sandbox_helper_die(ENOMEM, "read-only path %s", path);
        if (rc == 1 && missing == 0) {
            free(err);
            err = NULL;
            rc = sandbox_protect_apply(sp, path, r->read_only, &err);
            if (rc < 0)
                sandbox_helper_die(-rc, "keeping %s read-only: %s", path,
                                   err ? err : "out of memory");
        }
        free(err);
    }
    sandbox_protect_free(sp);
}

/* The --protect paths that a command could change without the mount
 * namespace, ", " separated after ", and the --protect paths " (malloc'd;
 * "" when none).  A path that cannot be resolved counts. */
static char *
protect_exposed(struct run *r)
{
    char *list = strdup("");
    if (list == NULL)
        sandbox_helper_die(ENOMEM, "--protect");
    if (r->o->n_protect == 0)
        return list;
    struct sandbox_protect *sp = protect_new(r);
    for (size_t i = 0; i < r->o->n_protect; i++) {
        char *resolved = NULL, *err = NULL;
        size_t missing;
        int rc = sandbox_protect_resolve(sp, r->o->protect[i], &resolved, &missing, &err);
        free(resolved);
        free(err);
        if (rc == 0)
            continue;
        char *longer;
        if (asprintf(&longer, "%s%s%s", list, list[0] ? ", " : ", and the --protect paths ",
                     r->o->protect[i]) < 0)
            sandbox_helper_die(ENOMEM, "--protect");
        free(list);
        list = longer;
    }
    sandbox_protect_free(sp);
    return list;
}

/* The --hide paths, covered last, over every other mount; under
 * workspace-write their ancestors in writable locations pinned first. */
static void
hide_paths(struct run *r)
{
    char *err = NULL;
    if (r->kind == SANDBOX_WORKSPACE_WRITE && r->o->n_hide > 0) {
        struct sandbox_protect *sp = protect_new(r);
        for (size_t i = 0; i < r->o->n_hide; i++) {
            int rc = sandbox_protect_pin_ancestors(sp, r->o->hide[i], &err);
            if (rc < 0)
                sandbox_helper_die(-rc, "--hide: %s", err ? err : r->o->hide[i]);
        }
        sandbox_protect_free(sp);
    }
    int rc = sandbox_ns_hide(r->o->hide, r->o->n_hide, r->hidden, &err);
    if (rc < 0)
        sandbox_helper_die(-rc, "--hide: %s", err ? err : "out of memory");
}

/* The --hide paths that name something now, ", " separated (malloc'd;
 * "" when none): what a command could see without the mount namespace. */
static char *
hide_exposed(struct run *r)
{
    char *list = strdup("");
    for (size_t i = 0; list != NULL && i < r->o->n_hide; i++) {
        struct stat st;
        if (stat(r->o->hide[i], &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
            continue;
        char *longer = NULL;
        if (asprintf(&longer, "%s%s%s", list, list[0] ? ", " : "", r->o->hide[i]) < 0)
            longer = NULL;
        free(list);
        list = longer;
    }
    if (list == NULL)
        sandbox_helper_die(ENOMEM, "--hide");
    return list;
}

/* Why running without a mount namespace would be less than the policy
 * asks (malloc'd). */
static char *
without_mount_namespace(struct run *r)
{
    char *hidden = hide_exposed(r);
    char *exposed = r->kind == SANDBOX_WORKSPACE_WRITE ? protect_exposed(r) : NULL;
    char *why = NULL;
    int n;
    if (exposed != NULL)
        n = asprintf(&why,
                     "cannot create a mount namespace, so .git and .codex inside the writable "
                     "roots%s would stay writable%s%s%s, and chmod, chown, utimensat and setxattr "
                     "outside the writable roots would not be stopped",
                     exposed, hidden[0] ? ", the --hide paths " : "", hidden,
                     hidden[0] ? " visible" : "");
    else
        n = asprintf(&why,
                     "cannot create a mount namespace, so %s%s%schmod, chown, utimensat and "
                     "setxattr outside the writable roots would not be stopped",
                     hidden[0] ? "the --hide paths " : "", hidden,
                     hidden[0] ? " would stay visible, and " : "");
    if (n < 0)
        sandbox_helper_die(ENOMEM, "building a message");
    free(hidden);
    free(exposed);
    return why;
}

/* The launcher's /dev template (sandbox_helper_set_dev_template), -1:
 * none.  A copy of the launcher's memory holds the number. */
static int dev_template = -1;

void
sandbox_helper_set_dev_template(int fd)
{
    dev_template = fd;
}

void
helper_close_dev_template(void)
{
    if (dev_template >= 0)
        close(dev_template);
    dev_template = -1;
}

/* The sandbox's /dev: a copy of the launcher's template when there is one
 * and the kernel copies it, else made here (sandbox_ns_minimal_dev); only
 * the usual devices either way. */
static int
make_dev(struct run *r)
{
    int rc = dev_template >= 0 ? sandbox_ns_dev_from_template(dev_template) : -1;
    helper_put(r->report, "dev_template", json_boolean(rc == 0));
    return rc == 0 ? 0 : sandbox_ns_minimal_dev();
}

/* The sandbox's /dev (make_dev), unless a writable root lies under /dev
 * (the policy asked for that part of the host's /dev; the rest of it then
 * stays, read-only). */
static void
minimal_dev(struct run *r)
{
    bool under_dev = false;
    for (size_t i = 0; i < r->w->n_roots; i++) {
        const char *root = r->w->roots[i];
        under_dev |=
            strcmp(root, "/") == 0 || strcmp(root, "/dev") == 0 || strncmp(root, "/dev/", 5) == 0;
    }
    int rc = under_dev ? 0 : make_dev(r);
    helper_close_dev_template();
    if (rc == -ENOSYS)
        helper_require(r, "minimal-dev",
                       "the kernel lacks fsopen, so the host's devices under /dev could be opened");
    else if (rc < 0)
        sandbox_helper_die(-rc, "making the sandbox's /dev");
    r->own_dev = !under_dev && rc == 0;
    helper_put(r->report, "minimal_dev", json_boolean(r->own_dev));
}

/* The sandbox's own /dev/pts (sandbox_ns_own_terminals), before the
 * Landlock rules that grant it are made: the user's other terminals are
 * not there to read or write.  A kernel without fsopen is refused, or
 * with --allow-degraded reported. */
static void
own_terminals(struct run *r)
{
    int rc = sandbox_ns_own_terminals();
    if (rc == -ENOSYS)
        helper_require(
            r, "own-terminals",
            "the kernel lacks fsopen, so the user's other terminals under /dev/pts could be "
            "read and written");
    else if (rc < 0)
        sandbox_helper_die(-rc, "mounting the sandbox's own /dev/pts");
    helper_put(r->report, "own_terminals", json_boolean(rc == 0));
}

void
helper_enter_namespaces(struct run *r)
{
    int rc = sandbox_ns_unshare(&r->ns);
    if (rc < 0) {
        helper_close_dev_template();
        sandbox_helper_warn("namespaces: %s", strerror(-rc));
        char *why = without_mount_namespace(r);
        helper_require(r, "mount-namespace", why);
        free(why);
        helper_put(r->report, "read_only_world", json_false());
        helper_require(r, "pid-namespace",
                       "cannot create a PID namespace, so the command would see every process");
        return;
    }
    helper_open_roots(r);
    make_world_read_only(r);
    minimal_dev(r);
    own_terminals(r);
    if (r->kind == SANDBOX_WORKSPACE_WRITE) {
        protect_paths(r);
        protect_extra(r);
        protect_read_only(r);
    }
    hide_paths(r);
}

/*
 * The init's copies of the placeholder fds, closed (the fds only; the
 * memory it shares with the process outside stays as it is): that process
 * alone holds the placeholders, so that when it is killed its holds end
 * with it, not only when the init follows it, and the command's process,
 * started from the init, has no copies either.
 */
void
helper_close_placeholder_copies(const struct run *r)
{
    for (size_t i = 0; r->codex != NULL && i < r->w->n_repo_roots; i++) {
        if (r->codex[i].ph.fd >= 0)
            close(r->codex[i].ph.fd);
    }
}

/*
 * Once the command has ended (the init is reaped, and with it everything
 * in the PID namespace, so this process is alone in the mount namespace):
 * each placeholder this call held is unbound here and released, and
 * removed by the last sandbox that held it (sandbox/placeholder.h).  Its
 * bind may also have been copied by a recursive bind made after it over a
 * directory above it (a pin for --protect, a read-only gitdir): what is
 * mounted above it comes off first, and whatever is left on it through the
 * root's fd.  A failure is reported and leaves the command's status as it
 * is.  A placeholder another sandbox still holds is not removed, so
 * nothing is unbound for it.
 */
void
helper_release_placeholders(struct run *r)
{
    for (size_t i = 0; r->codex != NULL && i < r->w->n_repo_roots; i++) {
        struct codex_hold *h = &r->codex[i];
        const char *root = r->w->repo_roots[i];
        /* held by another sandbox too (a session's own hold, another
         * call): it stays, so nothing need come off it; the mount
         * namespace goes with this process.  Unmounting is dear: each
         * umount that takes something off waits for an RCU grace period */
        if (sandbox_placeholder_last(&h->ph) == 0)
            continue;
        int fd = root_fd(r, root);
        char *codex = NULL;
        const char *dir = h->root_path ? h->root_path : root;
        int rc = asprintf(&codex, "%s/.codex", strcmp(dir, "/") == 0 ? "" : dir) < 0
                     ? -ENOMEM
                     : sandbox_ns_unbind_above(codex);
        free(codex);
        if (rc >= 0)
            rc = fchdir(fd) == 0 ? sandbox_ns_unbind(".codex") : -errno;
        int released = sandbox_placeholder_release(fd, ".codex", &h->ph);
        if (rc >= 0)
            rc = released;
        if (rc < 0)
            sandbox_helper_warn("removing the placeholder %s/.codex: %s", root, strerror(-rc));
    }
}
