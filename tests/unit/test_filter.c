/*
 * filter: the BPF programs embedded at build time are exactly what
 * libseccomp builds from filter-rules.c now, for every policy combination
 * with and without exec notification, with the same denied names; and a
 * loaded program refuses what it must and, with exec notification, hands
 * an execve to its listener (in a forked child, so the test process itself
 * stays unfiltered).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/macros.h"
#include "sandbox/filter-rules.h"
#include "sandbox/filter.h"

struct names {
    char *list[64];
    size_t n;
};

static int
collect(void *arg, const char *name)
{
    struct names *ns = arg;
    if (ns->n >= sizeof ns->list / sizeof ns->list[0])
        return -ENOSPC;
    ns->list[ns->n] = strdup(name);
    return ns->list[ns->n++] != NULL ? 0 : -ENOMEM;
}

/* What libseccomp exports for this combination, read back from a file. */
static void *
runtime_program(bool confine, int net, unsigned notify, struct names *ns, size_t *bytes)
{
    int rc = 0;
    scmp_filter_ctx ctx = sandbox_filter_rules_new(confine, net, notify, collect, ns, &rc);
    assert_non_null(ctx);
    assert_int_equal(rc, 0);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    assert_int_equal(seccomp_export_bpf(ctx, fileno(tmp)), 0);
    seccomp_release(ctx);
    long size = ftell(tmp) >= 0 && fseek(tmp, 0, SEEK_END) == 0 ? ftell(tmp) : -1;
    assert_true(size > 0);
    rewind(tmp);
    void *buf = malloc((size_t)size);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)size, tmp), (size_t)size);
    fclose(tmp);
    *bytes = (size_t)size;
    return buf;
}

static void
check_combination(bool confine, int net, unsigned notify)
{
    struct names ns = {0};
    size_t bytes;
    void *expected = runtime_program(confine, net, notify, &ns, &bytes);
    size_t len;
    const char *const *names;
    const struct sock_filter *prog = sandbox_filter_program(confine, net, notify, &len, &names);
    assert_non_null(prog);
    assert_int_equal(len * sizeof *prog, bytes);
    assert_memory_equal(prog, expected, bytes);
    size_t i = 0;
    for (; names[i] != NULL; i++) {
        assert_true(i < ns.n);
        assert_string_equal(names[i], ns.list[i]);
    }
    assert_int_equal(i, ns.n);
    for (i = 0; i < ns.n; i++)
        free(ns.list[i]);
    free(expected);
}

static void
test_generated_equals_runtime(void **state)
{
    (void)state;
    for (int notify = 0; notify <= 1; notify++) {
        check_combination(true, true, notify);  /* read-only, workspace-write, network off */
        check_combination(true, false, notify); /* the same with network on */
        check_combination(false, true, notify); /* external-sandbox, network off */
        check_combination(true, SANDBOX_FILTER_NET_OWN, notify); /* its own namespace */
    }
    /* a confining sandbox's sockets, with and without its execs */
    for (unsigned execs = 0; execs <= SANDBOX_FILTER_NOTIFY_EXECS; execs++) {
        check_combination(true, true, execs | SANDBOX_FILTER_NOTIFY_SOCKETS);
        check_combination(true, false, execs | SANDBOX_FILTER_NOTIFY_SOCKETS);
        check_combination(true, SANDBOX_FILTER_NET_OWN, execs | SANDBOX_FILTER_NOTIFY_SOCKETS);
    }
}

static void
test_no_filter_without_need(void **state)
{
    (void)state;
    size_t len = 99;
    const char *const *names = NULL;
    assert_null(sandbox_filter_program(false, false, false, &len, &names));
    assert_int_equal(len, 0);
    /* exec notification alone is exec_filter.c's program */
    assert_null(sandbox_filter_program(false, false, true, &len, &names));
    assert_int_equal(sandbox_filter_apply_notify(false, false, SANDBOX_FILTER_NOTIFY_EXECS, NULL),
                     -EINVAL);
    /* sockets are notified only where the sandbox confines */
    assert_null(sandbox_filter_program(false, true, SANDBOX_FILTER_NOTIFY_SOCKETS, &len, &names));
}

static void
test_names_cover_policy(void **state)
{
    (void)state;
    size_t len;
    const char *const *names;
    assert_non_null(sandbox_filter_program(true, true, false, &len, &names));
    bool mount_seen = false, uring_seen = false, tiocsti_seen = false;
    for (size_t i = 0; names[i] != NULL; i++) {
        mount_seen |= strcmp(names[i], "mount") == 0;
        uring_seen |= strcmp(names[i], "io_uring_setup") == 0;
        tiocsti_seen |= strcmp(names[i], "ioctl(TIOCSTI)") == 0;
    }
    assert_true(mount_seen && uring_seen && tiocsti_seen);
    assert_non_null(sandbox_filter_program(false, true, false, &len, &names));
    for (size_t i = 0; names[i] != NULL; i++)
        assert_string_not_equal(names[i], "mount");
}

/* Under a filter with execs notified: a child's execve of /bin/true
 * reaches listener as an execve of that child, and runs once continued.
 * Returns 8 when it did. */
static int
probe_exec_notified(int listener)
{
    pid_t pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    struct seccomp_notif req;
    struct seccomp_notif_resp resp;
    memset(&req, 0, sizeof req);
    memset(&resp, 0, sizeof resp);
    bool seen = ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0 && req.pid == (__u32)pid &&
                req.data.nr == SYS_execve;
    resp.id = req.id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0)
        seen = false;
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        seen = false;
    return seen ? 8 : 0;
}

/* Child: loads the filter for (confine, net, notify), then reports by exit
 * status which probes were refused with EPERM (bit set) or allowed, and
 * with notify whether an exec was notified. */
static int
probe_child(bool confine, bool net, bool notify)
{
    json_t *report = json_object();
    if (report == NULL || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return 255;
    int listener =
        notify ? sandbox_filter_apply_notify(confine, net, SANDBOX_FILTER_NOTIFY_EXECS, report)
               : sandbox_filter_apply(confine, net, report);
    if (listener < 0)
        return 255;
    json_t *sc = json_object_get(report, "seccomp");
    const char *sockets = json_string_value(json_object_get(sc, "sockets"));
    if (sockets == NULL || strcmp(sockets, net ? "unix-only" : "any") != 0)
        return 254;
    json_decref(report);
    int bits = notify ? probe_exec_notified(listener) : 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 && errno == EPERM)
        bits |= 1;
    if (fd >= 0)
        close(fd);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0) {
        bits |= 2; /* Unix sockets stay allowed */
        close(fd);
    }
    if (chroot("/") != 0 && errno == EPERM)
        bits |= 4;
    return bits;
}

static int
run_probe(bool confine, bool net, bool notify)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(probe_child(confine, net, notify));
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void
test_loaded_filter_refuses(void **state)
{
    (void)state;
    assert_int_equal(run_probe(true, true, false), 1 | 2 | 4);
    assert_int_equal(run_probe(false, true, false), 1 | 2);
    /* Network on: IP sockets open; chroot still refused. */
    assert_int_equal(run_probe(true, false, false), 2 | 4);
}

/* One program does both: the same refusals, and execs notified. */
static void
test_notify_variant_refuses_and_notifies(void **state)
{
    (void)state;
    assert_int_equal(run_probe(true, true, true), 1 | 2 | 4 | 8);
    assert_int_equal(run_probe(false, true, true), 1 | 2 | 8);
    assert_int_equal(run_probe(true, false, true), 2 | 4 | 8);
}

/* Child: under the filter of a sandbox in a network namespace of its own,
 * which families socket(2) makes: 0 when each probe answered as it
 * should, else 10 + the first probe that did not. */
static int
own_namespace_child(void)
{
    json_t *report = json_object();
    if (report == NULL || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        sandbox_filter_apply(true, SANDBOX_FILTER_NET_OWN, report) != 0)
        return 255;
    const char *sockets =
        json_string_value(json_object_get(json_object_get(report, "seccomp"), "sockets"));
    if (sockets == NULL || strcmp(sockets, "unix-ip-netlink") != 0)
        return 254;
    json_decref(report);
    static const struct {
        long family;
        int type;
        bool made;
    } probes[] = {
        {AF_UNIX, SOCK_STREAM, true},
        {AF_INET, SOCK_STREAM, true},
        {AF_INET6, SOCK_DGRAM, true},
        {AF_NETLINK, SOCK_DGRAM, true},
        {AF_VSOCK, SOCK_STREAM, false},
        {AF_PACKET, SOCK_DGRAM, false},
        {AF_BLUETOOTH, SOCK_STREAM, false},
        {0, SOCK_STREAM, false},
        {0x100000000L | AF_INET, SOCK_STREAM, false},
    };
    for (size_t i = 0; i < ARRAY_SIZE(probes); i++) {
        long fd = syscall(SYS_socket, probes[i].family, probes[i].type, 0);
        int e = errno;
        if (fd >= 0)
            close((int)fd);
        bool ok = probes[i].made ? fd >= 0 : fd < 0 && e == EAFNOSUPPORT;
        if (!ok)
            return 10 + (int)i;
    }
    return 0;
}

/* In a network namespace of its own a sandbox has Unix, IP and netlink
 * sockets, and none of the families that reach past the namespace. */
static void
test_own_namespace_variant(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(own_namespace_child());
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generated_equals_runtime),
        cmocka_unit_test(test_no_filter_without_need),
        cmocka_unit_test(test_names_cover_policy),
        cmocka_unit_test(test_loaded_filter_refuses),
        cmocka_unit_test(test_notify_variant_refuses_and_notifies),
        cmocka_unit_test(test_own_namespace_variant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
