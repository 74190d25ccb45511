/*
 * placeholder: an empty directory made where a protected name (a repo
 * root's .codex) is missing, so that a read-only bind has something to sit
 * on, and removed again when the last sandbox that relies on it has ended.
 *
 * A bind needs an existing directory, and a sandbox whose bind sits on a
 * placeholder loses it the moment the placeholder is removed from anywhere
 * (the kernel detaches mounts on a removed directory in every mount
 * namespace): the command could then make the name itself.  So each
 * sandbox holds the placeholder from before its bind until its command has
 * ended, and only the last holder removes it.
 *
 * The placeholder marks itself: permission bits 01700 exactly (the sticky
 * bit, which nobody gives an own .codex, and owner-only access, so that
 * other users cannot open it; a setgid bit inherited from the parent does
 * not count), owned by the caller, set by the mkdir itself.  The
 * holds are shared flock(2) locks on the placeholder, one per sandbox, on
 * the directory itself: no file is made anywhere, a lock dies with its
 * process (a helper killed with SIGKILL holds nothing), and a command
 * cannot swap the lock's inode for another (it is bound read-only in
 * every sandbox that holds it).  Removing takes the exclusive lock without
 * waiting: it is granted only when no other sandbox holds the placeholder.
 * A placeholder that outlives its helpers (one was killed) carries the
 * mark, so the next sandbox in that root holds it as its own and removes
 * it at its end.  Only an empty, still marked placeholder is removed: once
 * someone has put something in it, it loses the mark and is the user's.
 * See docs/sandbox.md.
 */
#ifndef EXECGATE_SANDBOX_PLACEHOLDER_H
#define EXECGATE_SANDBOX_PLACEHOLDER_H

/* The permission bits (of 01777) that mark a placeholder, with the owner
 * being the caller. */
#define SANDBOX_PLACEHOLDER_MODE 01700

/* How often a placeholder that went away between being found and being
 * held (another sandbox's end removed it) is looked for again before
 * sandbox_placeholder_hold gives up with -EAGAIN. */
#define SANDBOX_PLACEHOLDER_TRIES 64

struct sandbox_placeholder {
    int fd; /* the placeholder, O_RDONLY, holding the shared lock; -1: none held */
};

/*
 * Makes sure something the caller can bind over is at dirfd/name (not
 * following a final symlink): when nothing is there, creates a
 * placeholder; when a placeholder is there (of another sandbox, running or
 * killed), joins it.  Either way holds it (ph->fd) from before it is
 * checked to be still at name until sandbox_placeholder_release.  Blocks
 * while another sandbox is removing it (an instant), or while any process
 * holds an exclusive lock on it.
 * Returns 1 with ph holding the placeholder now at name; 0 with nothing
 * held (ph->fd -1) when something else is at name (the user's: bind it as
 * it is), also a directory this call made on a file system that keeps no
 * sticky bit (it cannot be marked, so it is left as the user's); or -errno
 * with nothing held: the mkdir's own error (-EACCES, -EPERM, -EROFS: the
 * name cannot be made here), -EBUSY when the name is another user's
 * placeholder (which the caller can neither open to hold nor trust to stay:
 * that user's last call removes it), -EAGAIN when the name kept changing,
 * or another failure.
 */
int sandbox_placeholder_hold(int dirfd, const char *name, struct sandbox_placeholder *ph);

/*
 * Whether ph is the last hold on its placeholder: takes the exclusive
 * lock without waiting.  Returns 1 with ph holding it exclusively (the
 * placeholder cannot be joined until sandbox_placeholder_release), 0 when
 * another sandbox holds it too: ph's hold has then ended (asking gave up
 * the shared lock), ph->fd is closed and -1, and there is nothing to
 * unbind for a removal that will not come; or -errno, ph as it was.  A ph
 * holding nothing gives 0.
 */
int sandbox_placeholder_last(struct sandbox_placeholder *ph);

/*
 * Ends ph's hold (call it after the caller's binds over the placeholder are
 * gone: a mount point cannot be removed).  When no other sandbox holds it
 * and the placeholder is still at dirfd/name, still marked, it is removed
 * if empty, and loses its mark (mode 0700) if not.  Closes ph->fd and sets
 * it to -1; a ph holding nothing is a no-op.
 * Returns 1 when it was removed, 0 when it was left (held by another, gone
 * or replaced, or not empty), or -errno when a step failed (the hold has
 * ended all the same).
 */
int sandbox_placeholder_release(int dirfd, const char *name, struct sandbox_placeholder *ph);

/*
 * For whoever killed sandboxes (the server, after a timeout or a cancel:
 * a helper killed with SIGKILL cannot release what it held): removes the
 * placeholder at dirfd/name when no sandbox holds it any more, as its
 * last holder would have.  Looks without following a final symlink; a
 * name that is not a placeholder of the caller's is left alone, as is one
 * still held (its holder removes it at its end).  Nothing is bound over it
 * in the caller's mount namespace (the killed sandboxes' binds went with
 * their namespaces).
 * Returns 1 when it was removed, 0 when it was left, or -errno.
 */
int sandbox_placeholder_sweep(int dirfd, const char *name);

#endif
