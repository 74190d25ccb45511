/* exec_path: an exec's path walked one component at a time, every link
 * met written down, on a scratch tree built under a fresh directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "exec_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tmpdir.h"

/* The scratch tree's root, canonical (the tests compare canonical paths). */
static char *root;

static char *
at(const char *rel)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", root, rel) >= 0);
    return p;
}

static void
make_file(const char *rel)
{
    char *p = at(rel);
    tmpdir_write_file(p, "#!/bin/sh\n", 0755);
    free(p);
}

static void
make_dir(const char *rel)
{
    char *p = at(rel);
    assert_int_equal(mkdir(p, 0755), 0);
    free(p);
}

/* A link at rel to target (taken as is: relative targets stay relative). */
static void
make_link(const char *target, const char *rel)
{
    char *p = at(rel);
    assert_int_equal(symlink(target, p), 0);
    free(p);
}

/* A link at rel to root/target_rel (an absolute target). */
static void
make_abs_link(const char *target_rel, const char *rel)
{
    char *t = at(target_rel);
    make_link(t, rel);
    free(t);
}

static int
setup(void **state)
{
    char tmpl[] = "/tmp/execgate-exec-path-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    root = realpath(tmpl, NULL);
    assert_non_null(root);

    make_file("f");
    make_dir("d1");
    make_dir("d1/d2");
    make_file("d1/f");
    /* chain: a -> b (relative), b -> <root>/c (absolute), c a file */
    make_file("c");
    make_link("b", "a");
    make_abs_link("c", "b");
    /* a directory link in the middle: x/bin -> <root>/x/real */
    make_dir("x");
    make_dir("x/real");
    make_file("x/real/prog");
    make_abs_link("x/real", "x/bin");
    make_link("prog", "x/real/p2"); /* a program link inside the real dir */
    /* l -> d1/d2: l/.. is d1 physically, root lexically */
    make_link("d1/d2", "l");
    /* dangling, loop */
    make_abs_link("nowhere", "dang");
    make_link("loop2", "loop1");
    make_link("loop1", "loop2");
    /* a chain of exactly EXEC_PATH_MAX_LINKS links, and one longer */
    for (int i = 0; i < EXEC_PATH_MAX_LINKS + 1; i++) {
        char name[32], target[32];
        snprintf(name, sizeof(name), "n%d", i);
        if (i == 0)
            snprintf(target, sizeof(target), "f");
        else
            snprintf(target, sizeof(target), "n%d", i - 1);
        make_link(target, name);
    }
    (void)state;
    return 0;
}

static int
teardown(void **state)
{
    tmpdir_remove(root);
    free(root);
    root = NULL;
    (void)state;
    return 0;
}

/* Walks path from cwd; the test fails unless the walk itself succeeds. */
static void
walk(const char *path, const char *cwd, struct exec_path *p)
{
    assert_int_equal(exec_path_walk(path, cwd, p), 0);
}

static void
assert_link(const struct exec_path *p, size_t i, const char *rel, bool program)
{
    assert_true(i < p->n_links);
    char *want = rel[0] == '/' ? strdup(rel) : at(rel);
    assert_non_null(want);
    assert_string_equal(p->links[i].path, want);
    if (p->links[i].program != program)
        fail_msg("link %zu (%s): program is %d, expected %d", i, want, p->links[i].program,
                 program);
    free(want);
}

static void
assert_canonical(const struct exec_path *p, const char *rel)
{
    char *want = at(rel);
    assert_int_equal(p->error, 0);
    assert_non_null(p->canonical);
    assert_string_equal(p->canonical, want);
    free(want);
}

static void
test_plain_file(void **state)
{
    char *f = at("f");
    struct exec_path p;
    walk(f, "/", &p);
    assert_string_equal(p.absolute, f);
    assert_canonical(&p, "f");
    assert_int_equal(p.n_links, 0);
    assert_true(S_ISREG(p.st.st_mode));
    exec_path_release(&p);
    free(f);
    (void)state;
}

static void
test_relative(void **state)
{
    struct exec_path p;
    walk("f", root, &p);
    char *abs = at("f");
    assert_string_equal(p.absolute, abs);
    assert_canonical(&p, "f");
    assert_int_equal(p.n_links, 0);
    exec_path_release(&p);
    free(abs);

    /* absolute is the path made absolute, not normalised */
    walk("./d1/../f", root, &p);
    abs = at("./d1/../f");
    assert_string_equal(p.absolute, abs);
    assert_canonical(&p, "f");
    exec_path_release(&p);
    free(abs);

    /* a cwd with a trailing slash does not double it */
    char *cwd = NULL;
    assert_true(asprintf(&cwd, "%s/d1/", root) >= 0);
    walk("f", cwd, &p);
    abs = at("d1/f");
    assert_string_equal(p.absolute, abs);
    assert_canonical(&p, "d1/f");
    exec_path_release(&p);
    free(abs);
    free(cwd);

    /* an absolute path ignores cwd */
    abs = at("d1/f");
    walk(abs, "/nonexistent", &p);
    assert_string_equal(p.absolute, abs);
    assert_canonical(&p, "d1/f");
    exec_path_release(&p);
    free(abs);
    (void)state;
}

static void
test_link_chain(void **state)
{
    struct exec_path p;
    walk("a", root, &p);
    assert_int_equal(p.n_links, 2);
    assert_link(&p, 0, "a", true);
    assert_link(&p, 1, "b", true);
    assert_canonical(&p, "c");
    assert_true(S_ISREG(p.st.st_mode));
    exec_path_release(&p);
    (void)state;
}

static void
test_directory_link(void **state)
{
    struct exec_path p;
    char *path = at("x/bin/prog");
    walk(path, "/", &p);
    assert_int_equal(p.n_links, 1);
    assert_link(&p, 0, "x/bin", false);
    assert_canonical(&p, "x/real/prog");
    exec_path_release(&p);
    free(path);

    /* a program link after the directory link is recorded where it really
     * is (no link before it), and stands for the program */
    path = at("x/bin/p2");
    walk(path, "/", &p);
    assert_int_equal(p.n_links, 2);
    assert_link(&p, 0, "x/bin", false);
    assert_link(&p, 1, "x/real/p2", true);
    assert_canonical(&p, "x/real/prog");
    exec_path_release(&p);
    free(path);

    /* a program link whose target goes through a directory link: the
     * directory link met while following it is not the program */
    char *tmpl = at("via");
    char *target = at("x/bin/prog");
    assert_int_equal(symlink(target, tmpl), 0);
    walk(tmpl, "/", &p);
    assert_int_equal(p.n_links, 2);
    assert_link(&p, 0, "via", true);
    assert_link(&p, 1, "x/bin", false);
    assert_canonical(&p, "x/real/prog");
    exec_path_release(&p);
    assert_int_equal(unlink(tmpl), 0);
    free(tmpl);
    free(target);
    (void)state;
}

static void
test_dot_dot_after_link(void **state)
{
    struct exec_path p;
    /* l -> d1/d2, so l/.. is d1 (the kernel's answer), not root */
    walk("l/../f", root, &p);
    assert_int_equal(p.n_links, 1);
    assert_link(&p, 0, "l", false);
    assert_canonical(&p, "d1/f");
    exec_path_release(&p);

    walk("l/./.././f", root, &p);
    assert_canonical(&p, "d1/f");
    exec_path_release(&p);

    /* ".." at "/" stays at "/" */
    char *path = NULL;
    assert_true(asprintf(&path, "/../../..%s/f", root) >= 0);
    walk(path, "/", &p);
    assert_canonical(&p, "f");
    exec_path_release(&p);
    free(path);

    /* ".." as the last component: the directory itself */
    walk("l/..", root, &p);
    assert_canonical(&p, "d1");
    assert_true(S_ISDIR(p.st.st_mode));
    exec_path_release(&p);

    /* runs of slashes and "." components are nothing */
    walk(".//d1///./f", root, &p);
    assert_canonical(&p, "d1/f");
    exec_path_release(&p);
    (void)state;
}

static void
test_dangling(void **state)
{
    struct exec_path p;
    walk("dang", root, &p);
    assert_null(p.canonical);
    assert_int_equal(p.error, ENOENT);
    assert_int_equal(p.n_links, 1);
    assert_link(&p, 0, "dang", true);
    exec_path_release(&p);

    walk("missing", root, &p);
    assert_null(p.canonical);
    assert_int_equal(p.error, ENOENT);
    assert_int_equal(p.n_links, 0);
    assert_non_null(p.absolute);
    exec_path_release(&p);

    walk("missing/../f", root, &p);
    assert_null(p.canonical);
    assert_int_equal(p.error, ENOENT);
    exec_path_release(&p);
    (void)state;
}

static void
test_loop(void **state)
{
    struct exec_path p;
    walk("loop1", root, &p);
    assert_null(p.canonical);
    assert_int_equal(p.error, ELOOP);
    assert_int_equal(p.n_links, EXEC_PATH_MAX_LINKS);
    assert_link(&p, 0, "loop1", true);
    assert_link(&p, 1, "loop2", true);
    exec_path_release(&p);
    (void)state;
}

static void
test_link_limit(void **state)
{
    struct exec_path p;
    char name[32];
    /* n39 -> ... -> n0 -> f: exactly the kernel's 40 links */
    snprintf(name, sizeof(name), "n%d", EXEC_PATH_MAX_LINKS - 1);
    walk(name, root, &p);
    assert_canonical(&p, "f");
    assert_int_equal(p.n_links, EXEC_PATH_MAX_LINKS);
    assert_link(&p, 0, name, true);
    assert_link(&p, EXEC_PATH_MAX_LINKS - 1, "n0", true);
    exec_path_release(&p);

    /* one more is too many */
    snprintf(name, sizeof(name), "n%d", EXEC_PATH_MAX_LINKS);
    walk(name, root, &p);
    assert_null(p.canonical);
    assert_int_equal(p.error, ELOOP);
    exec_path_release(&p);
    (void)state;
}

static void
test_not_a_directory(void **state)
{
    struct exec_path p;
    walk("f/x", root, &p);
    assert_null(p.canonical);
    assert_int_equal(p.error, ENOTDIR);
    exec_path_release(&p);

    /* ".." does not climb out of a file */
    walk("f/../f", root, &p);
    assert_null(p.canonical);
    assert_int_equal(p.error, ENOTDIR);
    exec_path_release(&p);

    /* nor through a link to one */
    walk("a/x", root, &p);
    assert_null(p.canonical);
    assert_int_equal(p.error, ENOTDIR);
    assert_int_equal(p.n_links, 2);
    assert_link(&p, 0, "a", false);
    assert_link(&p, 1, "b", false);
    exec_path_release(&p);
    (void)state;
}

/* A trailing slash names a directory: execve("file/") fails with ENOTDIR,
 * and so should the walk (the kernel's answer). */
static void
test_trailing_slash(void **state)
{
    struct exec_path p;
    walk("f/", root, &p);
    char *f = at("f/");
    int fd = open(f, O_PATH | O_CLOEXEC);
    int kernel = fd < 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    free(f);
    assert_int_equal(kernel, ENOTDIR);
    if (p.canonical)
        fail_msg("\"f/\" resolved to %s; the kernel says ENOTDIR", p.canonical);
    assert_int_equal(p.error, ENOTDIR);
    exec_path_release(&p);

    walk("d1/", root, &p);
    assert_canonical(&p, "d1");
    exec_path_release(&p);

    /* a link to a file, with a trailing slash: the link is met, and what
     * it names is asked to be a directory */
    walk("a/", root, &p);
    assert_null(p.canonical);
    assert_int_equal(p.error, ENOTDIR);
    assert_int_equal(p.n_links, 2);
    exec_path_release(&p);

    /* a link whose target ends in a slash, to a file and to a directory */
    make_link("f/", "slash-f");
    walk("slash-f", root, &p);
    assert_null(p.canonical);
    assert_int_equal(p.error, ENOTDIR);
    exec_path_release(&p);
    make_link("d1/", "slash-d");
    walk("slash-d/f", root, &p);
    assert_canonical(&p, "d1/f");
    assert_int_equal(p.n_links, 1);
    assert_link(&p, 0, "slash-d", false);
    exec_path_release(&p);
    (void)state;
}

/* execve("") is ENOENT: an empty path names no file, not the cwd. */
static void
test_empty_path(void **state)
{
    struct exec_path p;
    walk("", root, &p);
    bool resolved = p.canonical != NULL;
    int error = p.error;
    exec_path_release(&p);
    if (resolved)
        fail_msg("\"\" resolved to the cwd %s; the kernel says ENOENT", root);
    assert_int_equal(error, ENOENT);
    (void)state;
}

static void
test_stat(void **state)
{
    struct exec_path p;
    walk("a", root, &p);
    char *c = at("c");
    struct stat st;
    assert_int_equal(stat(c, &st), 0);
    assert_non_null(p.canonical);
    assert_true(p.st.st_ino == st.st_ino);
    assert_true(p.st.st_dev == st.st_dev);
    assert_int_equal(p.st.st_mode, st.st_mode);
    exec_path_release(&p);
    free(c);

    /* a real system program, through whatever links the system has */
    walk("/bin/sh", "/", &p);
    char *real = realpath("/bin/sh", NULL);
    assert_non_null(real);
    assert_string_equal(p.canonical, real);
    assert_int_equal(stat("/bin/sh", &st), 0);
    assert_true(p.st.st_ino == st.st_ino);
    for (size_t i = 0; i < p.n_links; i++) {
        struct stat lst;
        assert_int_equal(lstat(p.links[i].path, &lst), 0);
        assert_true(S_ISLNK(lst.st_mode));
    }
    free(real);
    exec_path_release(&p);
    (void)state;
}

static void
test_release_zeroed(void **state)
{
    struct exec_path p;
    memset(&p, 0, sizeof(p));
    exec_path_release(&p);
    exec_path_release(&p);
    /* and twice after a walk: release leaves it zeroed */
    walk("a", root, &p);
    exec_path_release(&p);
    assert_null(p.absolute);
    assert_null(p.links);
    assert_int_equal(p.n_links, 0);
    assert_null(p.canonical);
    exec_path_release(&p);
    (void)state;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_file),
        cmocka_unit_test(test_relative),
        cmocka_unit_test(test_link_chain),
        cmocka_unit_test(test_directory_link),
        cmocka_unit_test(test_dot_dot_after_link),
        cmocka_unit_test(test_dangling),
        cmocka_unit_test(test_loop),
        cmocka_unit_test(test_link_limit),
        cmocka_unit_test(test_not_a_directory),
        cmocka_unit_test(test_trailing_slash),
        cmocka_unit_test(test_empty_path),
        cmocka_unit_test(test_stat),
        cmocka_unit_test(test_release_zeroed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
