/*
 * ns: namespaces and mounts for the helper.
 *
 * A new user namespace (when the kernel lets an unprivileged process have
 * one; root uses it too, so that the command's capabilities stop at the
 * sandbox), with a private mount namespace where every mount is read-only
 * but the writable roots, with read-only binds over the protected paths
 * and empty covers over the hidden ones, and a new PID namespace whose
 * first child gets its own /proc.
 */
#ifndef EXECGATE_SANDBOX_NS_H
#define EXECGATE_SANDBOX_NS_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct sandbox_placeholder;

struct sandbox_ns_state {
    bool user;  /* a new user namespace (uid/gid mapped to themselves) */
    bool mount; /* a new mount namespace, private: propagation cut both ways */
    bool pid;   /* a new PID namespace for the next child */
    bool ipc;   /* a new IPC namespace: no System V object or POSIX queue of
                 * the host's is reachable by id or name */
};

/*
 * Unshares user (when possible), mount, PID and IPC namespaces for the
 * calling single-threaded process.  Without a user namespace it still
 * tries plain mount+PID+IPC namespaces (enough for root).  $EXECGATE_SANDBOX_NO_NAMESPACES=1
 * makes it fail as a kernel without them would (a test knob).  Returns 0
 * with *st filled, or -errno with nothing changed.
 */
int sandbox_ns_unshare(struct sandbox_ns_state *st);

/*
 * In a user namespace the caller has just made: uid and gid map to
 * themselves (one id each: from inside, a process may map only its own),
 * and setgroups is denied (the kernel's condition for the gid map).
 * Returns 0 or -errno.
 */
int sandbox_ns_write_id_maps(uid_t uid, gid_t gid);

/*
 * Keeps root/.git (the directory, or a .git file and the gitdir it names)
 * and root/.codex read-only by binding them read-only over themselves.
 * With codex non-NULL a missing .codex is a placeholder
 * (sandbox_placeholder_hold), bound read-only like the rest; *codex then
 * holds it (fd -1 when nothing is held), for the caller to release once
 * the command has ended: its binds taken off (sandbox_ns_unbind_above,
 * sandbox_ns_unbind), then sandbox_placeholder_release.  Without codex,
 * or when the placeholder cannot be made for lack of rights or on a
 * read-only tree (the command cannot make .codex either), a missing
 * .codex is left out; another user's placeholder there is a failure
 * (-EBUSY).  Appends each path made read-only to ro (a JSON array).
 * Returns 0, or -errno with *err set to a malloc'd message and nothing
 * held.
 */
int sandbox_ns_protect(const char *root, struct sandbox_placeholder *codex, json_t *ro, char **err);

/*
 * Binds path (a directory or any other file; symlinks followed) read-only
 * over itself, recursively, keeping the mount flags the kernel locks in a
 * user namespace (nosuid, nodev, noexec, atime flags).  A bind mount point
 * cannot be renamed or removed (EBUSY) and nothing beneath it can be
 * written (EROFS).  Appends path to ro (a JSON array).  Returns 0 or
 * -errno (-ENOMEM when the append failed).
 */
int sandbox_ns_bind_ro(const char *path, json_t *ro);

/*
 * Binds the directory dir over itself, recursively, without changing
 * anything else: it stays as writable as it was, but being a mount point
 * it can no longer be renamed or removed (EBUSY), and renames or hard
 * links across its edge fail with EXDEV.  Returns 0 or -errno.
 */
int sandbox_ns_pin(const char *dir);

/*
 * Unmounts everything mounted at path (a final symlink not followed) in
 * the caller's mount namespace, topmost first: the binds made over it.
 * Returns how many were unmounted, or -errno.
 */
int sandbox_ns_unbind(const char *path);

/* The most mounts sandbox_ns_unbind_above takes off one directory. */
#define SANDBOX_NS_UNBIND_MAX 64

/*
 * Unmounts, in the caller's mount namespace, what is mounted on the
 * absolute path and on each directory above it, outermost first ("/",
 * "/a", "/a/b", ...), each until nothing more comes off there (what the
 * kernel keeps, such as the mounts a user namespace inherited locked,
 * stays): a recursive bind of a directory above path made after path's
 * own bind holds a copy of that bind, which goes with it.  For the end of
 * a call, when nothing else runs in the namespace.  Returns how many were
 * unmounted, or -ENOMEM.
 */
int sandbox_ns_unbind_above(const char *path);

/* Opens writable root i again, as its path now leads (O_PATH); returns the
 * fd or -errno.  For sandbox_ns_read_only_world. */
typedef int (*sandbox_ns_reopen_fn)(void *arg, size_t i);

/*
 * The read-only world: every mount of the caller's mount namespace made
 * read-only, recursively, and the n writable roots put back on top of it,
 * as writable as they were and nosuid, nodev.  fds[i] is root i (named
 * names[i] in messages) opened
 * (O_PATH) before, or -1 (skipped).  Each root's copy is taken from that
 * fd (open_tree, with every mount beneath it) before anything is made
 * read-only, and moved onto the root where its path leads afterwards
 * (reopen), which must be the same directory (device and inode) or
 * nothing more is done (-EAGAIN: it was replaced meanwhile).  On success
 * each fds[i] >= 0 is replaced by the root as the command will see it (the
 * copy, or a copy of an enclosing root), for the binds made through it
 * later.  A root that is the namespace's root leaves nothing outside:
 * nothing is done.  Returns 0, or -errno with *err set to a malloc'd
 * message (NULL when out of memory); -ENOSYS: the kernel lacks
 * open_tree, move_mount (Linux 5.2) or mount_setattr (5.12).
 */
int sandbox_ns_read_only_world(int *fds, char *const *names, size_t n, sandbox_ns_reopen_fn reopen,
                               void *arg, char **err);

/*
 * Why path cannot be a --hide argument, or NULL when it can: as for
 * --protect (sandbox_protect_arg_error), and not "/" itself.  Returns a
 * static string.
 */
const char *sandbox_ns_hide_arg_error(const char *path);

/*
 * Hides each of paths[0..n) from everything started after it in the
 * caller's mount namespace: the object a path names now (symlinks
 * followed, opened once) gets an empty read-only mount on top, a directory
 * an empty directory, anything else (a file, a socket, a FIFO, a device)
 * an empty file, both of mode 0 on a private tmpfs (nosuid, nodev,
 * noexec).  A path that names nothing (ENOENT, ENOTDIR, ELOOP) needs
 * nothing.  Appends each path hidden to hidden (a JSON array).  Returns 0,
 * or -errno with *err set to a malloc'd message (NULL when out of memory):
 * a path that cannot be looked at (EACCES...) is a failure, since the
 * command might reach what the helper could not.
 */
int sandbox_ns_hide(const char *const *paths, size_t n, json_t *hidden, char **err);

/*
 * Replaces /dev with a read-only tmpfs holding only the device nodes
 * programs open as a matter of course (null, zero, full, random, urandom,
 * tty: bound from the host's, those missing there left out), the
 * directories pts (for sandbox_ns_own_terminals) and shm, and the links
 * fd, stdin, stdout, stderr and ptmx (to pts/ptmx): the host's other devices (consoles and
 * their screens, disks, loop devices, the kernel log, hardware) are not
 * there to open.  Call after the read-only world, and only when no
 * writable root lies under /dev.  Returns 0 or -errno.
 */
int sandbox_ns_minimal_dev(void);

/*
 * A user and mount namespace of the caller's own, its ids mapped to
 * themselves (a mount namespace alone where no user namespace can be
 * made), nothing mounted there seen outside: where a process that may
 * not mount in the server's namespace builds a /dev template.
 * Returns 0 or -errno.
 */
int sandbox_ns_own_mounts(void);

/*
 * The same /dev built once, detached, to be copied by each sandbox
 * instead of made: a read-only tmpfs (read-only as a file system too, so
 * that no sandbox can make it writable and change what the others see)
 * with the devices bound in.  Call where the caller may mount (its own
 * mount namespace).  Returns the tree's fd (close-on-exec) or -errno.
 */
int sandbox_ns_dev_template(void);

/*
 * Puts a copy of the template tmpl (sandbox_ns_dev_template) on /dev, as
 * sandbox_ns_minimal_dev would make it: the copy's mounts are this
 * namespace's own, the files are the template's, which nobody can change.
 * Returns 0 or -errno (a kernel that will not copy a tree made in another
 * mount namespace: the caller makes its own).
 */
int sandbox_ns_dev_from_template(int tmpl);

/*
 * Puts a devpts instance of the sandbox's own on /dev/pts (nosuid,
 * noexec; mode 0620, ptmx 0666): the terminals of the user's other
 * sessions are not there to open, read (what is typed into them) or write
 * (what they show), while /dev/ptmx, which takes the instance mounted
 * beside it, and /dev/pts/ptmx give the command terminals of its own.  A
 * terminal the command inherited still works through its fd and /dev/tty,
 * but has no name under /dev/pts.  Returns 0 or -errno (-ENOSYS: no
 * fsopen, Linux 5.2).
 */
int sandbox_ns_own_terminals(void);

/* Mounts a fresh /proc; call in the first process of the new PID
 * namespace.  Returns 0 or -errno. */
int sandbox_ns_mount_proc(void);

#endif
