/*
 * sandbox_ns_dev_template and sandbox_ns_dev_from_template: a /dev built
 * once in a user and mount namespace of its own and copied by sandboxes
 * in others.  A sandbox that clears the read-only flag of its copy (as a
 * command could, were it let call mount_setattr) still cannot change what
 * the template holds, nor remount its file system, so the next sandbox's
 * /dev is the same.  Each step runs in a child process (namespaces are a
 * process's for good), as the caller and, started as root, as an
 * unprivileged user too; a kernel or host that gives no user namespace
 * skips.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/ns.h"
#include "tests/support/test_user.h"

/* What a child found, as its exit status. */
enum {
    OK = 0,
    NO_NAMESPACE = 10, /* skip */
    NO_TEMPLATE,
    NO_COPY,
    PLANTED,     /* a file was made in the template through a copy */
    REMOUNTED,   /* the template's file system was made writable */
    NULL_BROKEN, /* /dev/null of a copy cannot be written */
    SEEN,        /* the next copy sees what an earlier one left */
    CHILD_DIED,
};

/* Runs fn(arg) in a child; returns its exit status. */
static int
in_child(int (*fn)(int), int arg)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(fn(arg));
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : CHILD_DIED;
}

struct ns_mount_attr {
    uint64_t attr_set, attr_clr, propagation, userns_fd;
};

/* A sandbox: its own namespaces, a copy of the template on /dev; then
 * the attack: the copy's read-only flag cleared, a file made, the file
 * system remounted read-write. */
static int
attacker(int tmpl)
{
    if (sandbox_ns_own_mounts() < 0)
        return NO_NAMESPACE;
    if (sandbox_ns_dev_from_template(tmpl) < 0)
        return NO_COPY;
    struct ns_mount_attr a = {.attr_clr = 0x1 /* MOUNT_ATTR_RDONLY */};
    (void)syscall(SYS_mount_setattr, AT_FDCWD, "/dev", 0, &a, sizeof a);
    int fd = open("/dev/planted", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
        close(fd);
        return PLANTED;
    }
    if (mount(NULL, "/dev", NULL, MS_REMOUNT, NULL) == 0)
        return REMOUNTED;
    if (mkdir("/dev/shm/planted", 0755) == 0)
        return PLANTED;
    return OK;
}

/* The next sandbox: its copy is as the template was made. */
static int
next_sandbox(int tmpl)
{
    if (sandbox_ns_own_mounts() < 0)
        return NO_NAMESPACE;
    if (sandbox_ns_dev_from_template(tmpl) < 0)
        return NO_COPY;
    struct stat st;
    if (lstat("/dev/planted", &st) == 0 || lstat("/dev/shm/planted", &st) == 0)
        return SEEN;
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "x", 1) != 1 || lstat("/dev/fd", &st) != 0 || !S_ISLNK(st.st_mode))
        return NULL_BROKEN;
    close(fd);
    return OK;
}

/* The builder: the template in namespaces of its own, then the two
 * sandboxes, each in namespaces nested below the builder's, as the
 * launcher's children are not (theirs are the server's): neither holds
 * a capability over the builder's namespace. */
static int
builder(int unused)
{
    (void)unused;
    if (sandbox_ns_own_mounts() < 0)
        return NO_NAMESPACE;
    int tmpl = sandbox_ns_dev_template();
    if (tmpl < 0)
        return NO_TEMPLATE;
    int rc = in_child(attacker, tmpl);
    if (rc == OK)
        rc = in_child(next_sandbox, tmpl);
    close(tmpl);
    return rc;
}

static void
test_template_cannot_be_changed_through_a_copy(void **state)
{
    (void)state;
    int rc = in_child(builder, 0);
    if (rc == NO_NAMESPACE)
        skip();
    assert_int_equal(rc, OK);
}

static struct test_user user;

/* The builder as the test's unprivileged user, as a server not run as
 * root builds it. */
static int
unprivileged_builder(int unused)
{
    /* dumpable again after the change of ids, or its /proc/self files
     * stay root's and it cannot write its id maps */
    if (setgroups(0, NULL) != 0 || setgid(user.gid) != 0 || setuid(user.uid) != 0 ||
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
        return CHILD_DIED;
    return builder(unused);
}

static void
test_template_unprivileged(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* the case above ran unprivileged already */
    test_user_create(&user);
    int rc = in_child(unprivileged_builder, 0);
    test_user_release(&user);
    if (rc == NO_NAMESPACE)
        skip();
    assert_int_equal(rc, OK);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_cannot_be_changed_through_a_copy),
        cmocka_unit_test(test_template_unprivileged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
