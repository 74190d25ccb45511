/*
 * placeholder: made, joined, held and removed by the last holder, without
 * binds (each hold stands for one sandbox; the binds and the real helper
 * are tests/integration's).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/placeholder.h"
#include "tests/support/tmpdir.h"

struct fixture {
    char *dir;
    int dirfd;
};

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = tmpdir_new("placeholder");
    f->dirfd = open(f->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(f->dirfd >= 0);
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    close(f->dirfd);
    tmpdir_remove(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* The mode of dir/.codex, or -1 when there is nothing there. */
static int
codex_mode(const struct fixture *f)
{
    struct stat st;
    if (fstatat(f->dirfd, ".codex", &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    return (int)(st.st_mode & (S_IFMT | 07777));
}

static ino_t
codex_ino(const struct fixture *f)
{
    struct stat st;
    assert_int_equal(fstatat(f->dirfd, ".codex", &st, AT_SYMLINK_NOFOLLOW), 0);
    return st.st_ino;
}

/* Made when missing, with the mark whatever the umask (which is left as
 * it was), and removed by its only holder. */
static void
test_made_and_removed(void **state)
{
    struct fixture *f = *state;
    mode_t old = umask(0777);
    struct sandbox_placeholder ph;
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph), 1);
    assert_int_equal(umask(old), 0777);
    assert_true(ph.fd >= 0);
    assert_int_equal(codex_mode(f), S_IFDIR | SANDBOX_PLACEHOLDER_MODE);
    assert_int_equal(sandbox_placeholder_release(f->dirfd, ".codex", &ph), 1);
    assert_int_equal(ph.fd, -1);
    assert_int_equal(codex_mode(f), -1);
    /* Released twice: nothing held, nothing done. */
    assert_int_equal(sandbox_placeholder_release(f->dirfd, ".codex", &ph), 0);
}

/* Three holders of one placeholder (three sandboxes): only the last to
 * release it removes it, whatever the order. */
static void
test_last_holder_removes(void **state)
{
    struct fixture *f = *state;
    static const int orders[][3] = {{0, 1, 2}, {2, 1, 0}, {1, 0, 2}};
    for (size_t o = 0; o < sizeof orders / sizeof orders[0]; o++) {
        struct sandbox_placeholder ph[3];
        for (int i = 0; i < 3; i++)
            assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph[i]), 1);
        ino_t ino = codex_ino(f);
        for (int k = 0; k < 2; k++) {
            assert_int_equal(sandbox_placeholder_release(f->dirfd, ".codex", &ph[orders[o][k]]), 0);
            assert_int_equal(codex_ino(f), ino);
        }
        assert_int_equal(sandbox_placeholder_release(f->dirfd, ".codex", &ph[orders[o][2]]), 1);
        assert_int_equal(codex_mode(f), -1);
    }
}

/* A holder that ended without releasing (a helper killed with SIGKILL:
 * its lock went with it) leaves the placeholder; the next holder joins it
 * and, as the last, removes it. */
static void
test_left_by_a_killed_holder(void **state)
{
    struct fixture *f = *state;
    struct sandbox_placeholder killed, next;
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &killed), 1);
    ino_t ino = codex_ino(f);
    close(killed.fd);
    assert_int_equal(codex_mode(f), S_IFDIR | SANDBOX_PLACEHOLDER_MODE);
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &next), 1);
    assert_int_equal(codex_ino(f), ino);
    assert_int_equal(sandbox_placeholder_release(f->dirfd, ".codex", &next), 1);
    assert_int_equal(codex_mode(f), -1);
}

/* Something of the user's at the name is never held, followed or
 * removed: a directory (also an empty one), a file, a symlink. */
static void
test_the_users_left_alone(void **state)
{
    struct fixture *f = *state;
    struct sandbox_placeholder ph;
    assert_int_equal(mkdirat(f->dirfd, ".codex", 0755), 0);
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph), 0);
    assert_int_equal(ph.fd, -1);
    assert_int_equal(sandbox_placeholder_release(f->dirfd, ".codex", &ph), 0);
    assert_int_equal(codex_mode(f), S_IFDIR | 0755);
    /* The sticky bit alone is not the mark. */
    assert_int_equal(fchmodat(f->dirfd, ".codex", 01755, 0), 0);
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph), 0);
    assert_int_equal(unlinkat(f->dirfd, ".codex", AT_REMOVEDIR), 0);

    char *file = tmpdir_path(f->dir, ".codex");
    tmpdir_write_file(file, "x\n", 0600);
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph), 0);
    assert_int_equal(codex_mode(f), S_IFREG | 0600);
    assert_int_equal(unlink(file), 0);

    /* A symlink to a placeholder-looking directory elsewhere. */
    tmpdir_make_dir(f->dir, "elsewhere");
    char *elsewhere = tmpdir_path(f->dir, "elsewhere");
    assert_int_equal(chmod(elsewhere, SANDBOX_PLACEHOLDER_MODE), 0);
    tmpdir_make_link("elsewhere", f->dir, ".codex");
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph), 0);
    assert_int_equal(codex_mode(f) & S_IFMT, S_IFLNK);
    struct stat st;
    assert_int_equal(stat(elsewhere, &st), 0);
    free(elsewhere);
    free(file);
}

/* Something put into the placeholder makes it the user's: the last
 * holder keeps it and takes the mark off, and it is never held or removed
 * again, also once emptied. */
static void
test_content_makes_it_the_users(void **state)
{
    struct fixture *f = *state;
    struct sandbox_placeholder ph;
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph), 1);
    char *config = tmpdir_path(f->dir, ".codex/config.toml");
    tmpdir_write_file(config, "user\n", 0644);
    assert_int_equal(sandbox_placeholder_release(f->dirfd, ".codex", &ph), 0);
    assert_int_equal(codex_mode(f), S_IFDIR | 0700);
    assert_int_equal(unlink(config), 0);
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph), 0);
    assert_int_equal(codex_mode(f), S_IFDIR | 0700);
    free(config);
}

/* A placeholder removed and replaced while held (by the user) is not the
 * one held: the replacement is kept. */
static void
test_replaced_while_held(void **state)
{
    struct fixture *f = *state;
    struct sandbox_placeholder ph;
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph), 1);
    assert_int_equal(unlinkat(f->dirfd, ".codex", AT_REMOVEDIR), 0);
    assert_int_equal(mkdirat(f->dirfd, ".codex", SANDBOX_PLACEHOLDER_MODE), 0);
    ino_t replacement = codex_ino(f);
    assert_int_equal(sandbox_placeholder_release(f->dirfd, ".codex", &ph), 0);
    assert_int_equal(codex_ino(f), replacement);
}

/* A setgid bit inherited from the parent keeps the mark. */
static void
test_setgid_parent(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(chmod(f->dir, 02755), 0);
    struct sandbox_placeholder ph[2];
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph[0]), 1);
    assert_int_equal(codex_mode(f) & 07777, 02000 | SANDBOX_PLACEHOLDER_MODE);
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph[1]), 1);
    assert_int_equal(sandbox_placeholder_release(f->dirfd, ".codex", &ph[0]), 0);
    assert_int_equal(sandbox_placeholder_release(f->dirfd, ".codex", &ph[1]), 1);
    assert_int_equal(codex_mode(f), -1);
}

/* Another user's placeholder cannot be held (its user's last call
 * removes it whatever this one does): refused, left as it is. */
static void
test_another_users_refused(void **state)
{
    struct fixture *f = *state;
    if (geteuid() != 0)
        skip(); /* making a directory of another user's takes root */
    assert_int_equal(mkdirat(f->dirfd, ".codex", SANDBOX_PLACEHOLDER_MODE), 0);
    assert_int_equal(fchmodat(f->dirfd, ".codex", SANDBOX_PLACEHOLDER_MODE, 0), 0);
    assert_int_equal(fchownat(f->dirfd, ".codex", 65534, 65534, AT_SYMLINK_NOFOLLOW), 0);
    struct sandbox_placeholder ph;
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &ph), -EBUSY);
    assert_int_equal(ph.fd, -1);
    assert_int_equal(codex_mode(f), S_IFDIR | SANDBOX_PLACEHOLDER_MODE);
}

/* A failure on the way is the caller's, with nothing held. */
static void
test_errors(void **state)
{
    struct fixture *f = *state;
    char *file = tmpdir_path(f->dir, "f");
    tmpdir_write_file(file, "x\n", 0644);
    struct sandbox_placeholder ph;
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, "f/.codex", &ph), -ENOTDIR);
    assert_int_equal(ph.fd, -1);
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, "missing/.codex", &ph), -ENOENT);
    assert_int_equal(ph.fd, -1);
    free(file);
}

/* The sweep after killed holders: a placeholder nobody holds goes; one a
 * live sandbox holds stays (its holder removes it); the user's .codex, a
 * symlink and nothing at all are left alone. */
static void
test_swept_when_no_sandbox_holds_it(void **state)
{
    struct fixture *f = *state;
    struct sandbox_placeholder killed, live;
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &killed), 1);
    close(killed.fd); /* its helper was killed: its lock went with it */
    assert_int_equal(sandbox_placeholder_sweep(f->dirfd, ".codex"), 1);
    assert_int_equal(codex_mode(f), -1);
    assert_int_equal(sandbox_placeholder_sweep(f->dirfd, ".codex"), 0);

    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &killed), 1);
    assert_int_equal(sandbox_placeholder_hold(f->dirfd, ".codex", &live), 1);
    close(killed.fd);
    assert_int_equal(sandbox_placeholder_sweep(f->dirfd, ".codex"), 0);
    assert_int_equal(codex_mode(f), S_IFDIR | SANDBOX_PLACEHOLDER_MODE);
    assert_int_equal(sandbox_placeholder_release(f->dirfd, ".codex", &live), 1);

    assert_int_equal(mkdirat(f->dirfd, ".codex", 0700), 0);
    assert_int_equal(sandbox_placeholder_sweep(f->dirfd, ".codex"), 0);
    assert_int_equal(codex_mode(f), S_IFDIR | 0700);
    assert_int_equal(unlinkat(f->dirfd, ".codex", AT_REMOVEDIR), 0);
    assert_int_equal(mkdirat(f->dirfd, "elsewhere", 0700), 0);
    assert_int_equal(fchmodat(f->dirfd, "elsewhere", SANDBOX_PLACEHOLDER_MODE, 0), 0);
    assert_int_equal(symlinkat("elsewhere", f->dirfd, ".codex"), 0);
    assert_int_equal(sandbox_placeholder_sweep(f->dirfd, ".codex"), 0);
    assert_int_equal(codex_mode(f) & S_IFMT, S_IFLNK);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_made_and_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_holder_removes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_left_by_a_killed_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_users_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_content_makes_it_the_users, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replaced_while_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_setgid_parent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_another_users_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_swept_when_no_sandbox_holds_it, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
