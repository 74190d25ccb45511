/*
 * filter-rules: the sandbox's seccomp rules, built with libseccomp.
 */
#include "sandbox/filter-rules.h"
#include "common/macros.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
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

/* In a network namespace of the sandbox's own, IP is the namespace's to
 * limit, but not every family is namespaced: vsock reaches the
 * hypervisor's host, Bluetooth the radios around.  Allowed: Unix, IPv4,
 * IPv6 and netlink (the namespace's own routes and addresses, which
 * getaddrinfo reads); every other family fails with EAFNOSUPPORT, as
 * where the kernel lacks it. */
static int
deny_foreign_sockets(scmp_filter_ctx ctx)
{
    static const int allowed[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
    static const int calls[] = {SCMP_SYS(socket), SCMP_SYS(socketpair)};
    int rc = 0;
    for (size_t c = 0; rc == 0 && c < ARRAY_SIZE(calls); c++) {
        for (int family = 0; rc == 0 && family <= AF_NETLINK; family++) {
            bool ok = false;
            for (size_t i = 0; i < ARRAY_SIZE(allowed); i++)
                ok |= family == allowed[i];
            const struct scmp_arg_cmp is = {
                .arg = 0, .op = SCMP_CMP_EQ, .datum_a = (scmp_datum_t)family, .datum_b = 0};
            if (!ok)
                rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[c], 1, &is);
        }
        /* above netlink, and any value with high bits set: refused too */
        const struct scmp_arg_cmp gt = {
            .arg = 0, .op = SCMP_CMP_GT, .datum_a = AF_NETLINK, .datum_b = 0};
        if (rc == 0)
            rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[c], 1, &gt);
    }
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

/*
 * No privilege planted: a set-user-ID or set-group-ID bit cannot be set on
 * any file, writable roots included (outside the sandbox nosuid does not
 * apply, and a root server's files are root's).  For each call, the
 * argument holding the mode (and, for open and openat, the flags, since
 * the mode only counts when creating: other callers may leave anything
 * there).  openat2 and fchmodat2 keep their mode in a struct or are too
 * new for every libseccomp: ENOSYS, after which libc uses openat and
 * fchmodat.  io_uring could create files around all of this, so it is
 * refused under every confining policy.  And open_by_handle_at, which
 * would reach what --hide covers.
 */
struct mode_call {
    const char *name;
    unsigned mode_arg;
    int flags_arg; /* -1: the call always creates or changes the mode */
};

static const struct mode_call mode_calls[] = {
    {"chmod", 1, -1},   {"fchmod", 1, -1}, {"fchmodat", 2, -1}, {"creat", 1, -1}, {"mkdir", 1, -1},
    {"mkdirat", 2, -1}, {"mknod", 1, -1},  {"mknodat", 2, -1},  {"open", 2, 1},   {"openat", 3, 2},
};

/* EPERM for call when its mode has bit (and its flags create: flag). */
static int
deny_mode_bit(scmp_filter_ctx ctx, const struct mode_call *c, int nr, unsigned bit, unsigned flag)
{
    struct scmp_arg_cmp cmp[2] = {
        {.arg = c->mode_arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = bit, .datum_b = bit},
        {.arg = (unsigned)c->flags_arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = flag, .datum_b = flag},
    };
    return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, c->flags_arg < 0 ? 1 : 2, cmp);
}

static int
deny_privilege_bits(scmp_filter_ctx ctx, sandbox_filter_note_fn note, void *arg)
{
    static const unsigned bits[] = {S_ISUID, S_ISGID};
    static const unsigned creating[] = {O_CREAT, O_TMPFILE & ~O_DIRECTORY};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(mode_calls); i++) {
        const struct mode_call *c = &mode_calls[i];
        int nr = seccomp_syscall_resolve_name(c->name);
        if (nr == __NR_SCMP_ERROR)
            continue; /* not a call of this architecture */
        for (size_t b = 0; rc == 0 && b < 2; b++) {
            for (size_t f = 0; rc == 0 && f < (c->flags_arg < 0 ? 1u : 2u); f++)
                rc = deny_mode_bit(ctx, c, nr, bits[b], creating[f]);
        }
        char label[64];
        snprintf(label, sizeof label, "%s(S_ISUID|S_ISGID)", c->name);
        if (rc == 0)
            rc = note(arg, label);
    }
    /* A file handle reaches an inode past every mount on its name, a
     * --hide cover included (root without a user namespace holds the
     * CAP_DAC_READ_SEARCH it needs). */
    if (rc == 0)
        rc = deny(ctx, "open_by_handle_at", note, arg);
    /* By number where libseccomp does not know the name yet (x86_64). */
    static const struct {
        const char *name;
        int nr;
    } too_new[] = {{"openat2", 437}, {"fchmodat2", 452}};
    for (size_t i = 0; rc == 0 && i < 2; i++) {
        int nr = seccomp_syscall_resolve_name(too_new[i].name);
#if defined(__x86_64__)
        if (nr == __NR_SCMP_ERROR)
            nr = too_new[i].nr;
#endif
        if (nr == __NR_SCMP_ERROR)
            continue;
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
        if (rc == 0)
            rc = note(arg, too_new[i].name);
    }
    return rc;
}

/* exec-notify: every execve and execveat waits for the supervisor. */
static int
notify_execs(scmp_filter_ctx ctx)
{
    int rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(execve), 0);
    return rc == 0 ? seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(execveat), 0) : rc;
}

/*
 * Unix sockets (unix_connect.h): connect, sendto with a destination
 * address, and every sendmsg and sendmmsg wait for the supervisor, which
 * connects or sends on the target's behalf to what it decided on.  sendto
 * without an address (every send(2)) is not notified: seccomp sees that
 * argument.  sendmsg's address is inside its msghdr, which seccomp cannot
 * read, so each one is notified, with an address or without (another
 * thread could add one after a look).  The helper's own sendmsg of the
 * listener is made by a process this filter does not cover (exec_filter.h,
 * the courier).
 */
static int
notify_sockets(scmp_filter_ctx ctx)
{
    const struct scmp_arg_cmp has_address = {
        .arg = 4, .op = SCMP_CMP_NE, .datum_a = 0, .datum_b = 0};
    int rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(connect), 0);
    if (rc == 0)
        rc = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(sendto), 1, &has_address);
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(sendmsg), 0);
    return rc == 0 ? seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(sendmmsg), 0) : rc;
}

static int
add_rules(scmp_filter_ctx ctx, bool confine, int net, unsigned notify, sandbox_filter_note_fn note,
          void *arg)
{
    int rc = notify & SANDBOX_NOTIFY_EXECS ? notify_execs(ctx) : 0;
    if (rc == 0 && (notify & SANDBOX_NOTIFY_SOCKETS))
        rc = notify_sockets(ctx);
    for (size_t i = 0; confine && rc == 0 && i < ARRAY_SIZE(always_denied); i++)
        rc = deny(ctx, always_denied[i], note, arg);
    if (confine && rc == 0)
        rc = deny_tty_injection(ctx, note, arg);
    if (confine && rc == 0)
        rc = deny_privilege_bits(ctx, note, arg);
    /* io_uring's requests (connect, sendmsg, openat, ...) bypass seccomp:
     * denied in every confining policy, where the network is off, and
     * where sockets are supervised */
    bool uring = confine || net == SANDBOX_NET_UNIX || (notify & SANDBOX_NOTIFY_SOCKETS);
    for (size_t i = 0; uring && rc == 0 && i < ARRAY_SIZE(io_uring_calls); i++)
        rc = deny(ctx, io_uring_calls[i], note, arg);
    if (rc == 0 && net == SANDBOX_NET_UNIX)
        rc = deny_ip_sockets(ctx);
    if (rc == 0 && net == SANDBOX_NET_OWN)
        rc = deny_foreign_sockets(ctx);
    return rc;
}

scmp_filter_ctx
sandbox_filter_rules_new(bool confine, int net, unsigned notify, sandbox_filter_note_fn note,
                         void *arg, int *rc)
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
        *rc = add_rules(ctx, confine, net, notify, note, arg);
    if (*rc != 0) {
        seccomp_release(ctx);
        return NULL;
    }
    return ctx;
}
