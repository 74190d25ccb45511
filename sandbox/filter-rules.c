/*
 * filter-rules: the sandbox's seccomp rules, built with libseccomp.
 */
#include "sandbox/filter-rules.h"

#include <errno.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

/* Calls that change the mount table or the root (Landlock already stops
 * mounts for a restricted domain; chroot it does not), and the kernel
 * keyrings, which hold the user's secrets outside any file Landlock sees. */
static const char *const always_denied[] = {
    "chroot", "mount",      "umount2",   "pivot_root",    "fsopen", "fsconfig", "fsmount",
    "fspick", "move_mount", "open_tree", "mount_setattr", "keyctl", "add_key",  "request_key",
};

static const char *const io_uring_calls[] = {
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
};

/* Adds an EPERM rule for the named call; calls this libseccomp does not
 * know are skipped (nothing to deny). */
static int
deny(scmp_filter_ctx ctx, const char *name, sandbox_filter_note_fn note, void *arg)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
        return 0;
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    return rc < 0 ? rc : note(arg, name);
}

static int
deny_ip_sockets(scmp_filter_ctx ctx)
{
    /* Spelled out rather than with SCMP_A0, whose expansion leaves a field
     * uninitialised and trips clang's -Wmissing-field-initializers. */
    const struct scmp_arg_cmp not_unix = {
        .arg = 0, .op = SCMP_CMP_NE, .datum_a = AF_UNIX, .datum_b = 0};
    int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1, &not_unix);
    if (rc == 0)
        rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 1, &not_unix);
    return rc;
}

/* TIOCSTI and TIOCLINUX push input into a terminal: on a terminal the
 * command shares with its user, that is typing commands outside the
 * sandbox.  The kernel only looks at the low 32 bits of the request. */
static int
deny_tty_injection(scmp_filter_ctx ctx, sandbox_filter_note_fn note, void *arg)
{
    static const unsigned long requests[] = {TIOCSTI, TIOCLINUX};
    static const char *const names[] = {"ioctl(TIOCSTI)", "ioctl(TIOCLINUX)"};
    for (size_t i = 0; i < 2; i++) {
        const struct scmp_arg_cmp req = {
            .arg = 1, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffu, .datum_b = requests[i]};
        int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1, &req);
        if (rc == 0)
            rc = note(arg, names[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* exec-notify: every execve and execveat waits for the supervisor. */
static int
notify_execs(scmp_filter_ctx ctx)
{
    int rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(execve), 0);
    return rc == 0 ? seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(execveat), 0) : rc;
}

/*
 * Unix sockets (unix_connect.h): connect, and sendto with a destination
 * address, wait for the supervisor, which connects or sends on the
 * target's behalf to what it decided on.  sendto without an address (every
 * send(2)) is not notified: seccomp sees that argument.  sendmsg's address
 * is inside its msghdr, which seccomp cannot read, and notifying every
 * sendmsg would stop the helper's own hand-over of the listener (a
 * sendmsg made before the supervisor holds the listener): not notified
 * (docs/enforcement.md says what that leaves).
 */
static int
notify_sockets(scmp_filter_ctx ctx)
{
    const struct scmp_arg_cmp has_address = {
        .arg = 4, .op = SCMP_CMP_NE, .datum_a = 0, .datum_b = 0};
    int rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(connect), 0);
    return rc == 0 ? seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(sendto), 1, &has_address)
                   : rc;
}

static int
add_rules(scmp_filter_ctx ctx, bool confine, bool restrict_network, unsigned notify,
          sandbox_filter_note_fn note, void *arg)
{
    int rc = notify & SANDBOX_NOTIFY_EXECS ? notify_execs(ctx) : 0;
    if (rc == 0 && (notify & SANDBOX_NOTIFY_SOCKETS))
        rc = notify_sockets(ctx);
    for (size_t i = 0; confine && rc == 0 && i < sizeof always_denied / sizeof always_denied[0];
         i++)
        rc = deny(ctx, always_denied[i], note, arg);
    if (confine && rc == 0)
        rc = deny_tty_injection(ctx, note, arg);
    /* io_uring's requests (connect, sendmsg...) bypass seccomp: denied
     * where the network is off, and where sockets are supervised */
    bool uring = restrict_network || (notify & SANDBOX_NOTIFY_SOCKETS);
    for (size_t i = 0; uring && rc == 0 && i < sizeof io_uring_calls / sizeof io_uring_calls[0];
         i++)
        rc = deny(ctx, io_uring_calls[i], note, arg);
    if (!restrict_network)
        return rc;
    if (rc == 0)
        rc = deny_ip_sockets(ctx);
    return rc;
}

scmp_filter_ctx
sandbox_filter_rules_new(bool confine, bool restrict_network, unsigned notify,
                         sandbox_filter_note_fn note, void *arg, int *rc)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL) {
        *rc = -ENOMEM;
        return NULL;
    }
    /* Foreign-architecture calls would dodge the argument checks. */
    *rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    /*
     * A binary search on the call number rather than a chain of
     * comparisons.  Not for the calls' sake (the kernel caches which
     * numbers a filter always allows and skips it for them) but for the
     * load's: to build that cache, seccomp(2) runs the program once per
     * call number, so its cost grows with the path an allowed call takes.
     * Measured: 92 -> 71 us per load (bench/seccomp-load.c).
     */
    if (*rc == 0)
        *rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (*rc == 0)
        *rc = add_rules(ctx, confine, restrict_network, notify, note, arg);
    if (*rc != 0) {
        seccomp_release(ctx);
        return NULL;
    }
    return ctx;
}
