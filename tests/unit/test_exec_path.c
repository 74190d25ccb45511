/* exec_path: an exec's path walked one component at a time, every link
 * met written down; a command name searched through $PATH; a script's #!
 * interpreters followed; all on a scratch tree built under a fresh
 * directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rules/exec_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/tmpdir.h"

/* The scratch tree's root, canonical (the tests compare canonical paths). */
static char *root;

static char *
at(const char *rel)
{
    return tmpdir_path(root, rel);
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
    tmpdir_make_dir(root, rel);
}

/* A link at rel to target (taken as is: relative targets stay relative). */
static void
make_link(const char *target, const char *rel)
{
    tmpdir_make_link(target, root, rel);
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
    *state = root; /* removed by tmpdir_teardown */
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

/* ---- exec_path_search: a command name through $PATH ---- */

/* A file at rel with mode, whatever it holds. */
static void
make_file_mode(const char *rel, int mode)
{
    char *p = at(rel);
    tmpdir_write_file(p, "#!/bin/sh\n", mode);
    free(p);
}

static void
set_path(const char *value)
{
    assert_int_equal(setenv("PATH", value, 1), 0);
}

static void
assert_search(const char *name, const char *want)
{
    char *got = exec_path_search(name);
    if (want == NULL) {
        if (got != NULL)
            fail_msg("search(%s): %s, expected none", name, got);
        return;
    }
    if (got == NULL || strcmp(got, want) != 0)
        fail_msg("search(%s): %s, expected %s", name, got ? got : "NULL", want);
    free(got);
}

static void
test_search(void **state)
{
    make_dir("p1");
    make_dir("p2");
    make_dir("p3");
    make_file_mode("p1/tool", 0644); /* not executable: passed over */
    make_file_mode("p2/tool", 0755);
    make_file_mode("p3/tool", 0755);
    make_dir("p1/dirtool"); /* a directory of that name: passed over */
    make_file_mode("p3/dirtool", 0755);
    char *p1 = at("p1"), *p2 = at("p2"), *p3 = at("p3");
    char *path = NULL;
    assert_true(asprintf(&path, "%s:%s:%s", p1, p2, p3) >= 0);
    char *saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;

    set_path(path);
    char *want = at("p2/tool");
    assert_search("tool", want); /* the first executable one, in order */
    free(want);
    want = at("p3/dirtool");
    assert_search("dirtool", want);
    free(want);
    assert_search("no-such-tool", NULL);

    /* A directory written with a trailing slash. */
    free(path);
    assert_true(asprintf(&path, "%s/", p3) >= 0);
    set_path(path);
    want = at("p3//tool");
    assert_search("tool", want);
    free(want);

    /* An empty entry (leading, inside, trailing) is the current
     * directory, and names the file relative to it, as a shell does. */
    char *old = getcwd(NULL, 0);
    assert_non_null(old);
    assert_int_equal(chdir(p3), 0);
    const char *const empties[] = {"", ":", "/nonexistent:", ":/nonexistent",
                                   "/nonexistent::/nonexistent"};
    for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
        set_path(empties[i]);
        assert_search("tool", "tool");
    }
    set_path("/nonexistent");
    assert_search("tool", NULL);
    assert_int_equal(chdir(old), 0);
    free(old);

    /* PATH unset: /usr/local/bin:/usr/bin:/bin. */
    assert_int_equal(unsetenv("PATH"), 0);
    assert_search("tool", NULL);
    char *sh = exec_path_search("sh");
    assert_non_null(sh);
    assert_true(strcmp(sh, "/usr/local/bin/sh") == 0 || strcmp(sh, "/usr/bin/sh") == 0 ||
                strcmp(sh, "/bin/sh") == 0);
    free(sh);

    if (saved)
        set_path(saved);
    free(saved);
    free(path);
    free(p3);
    free(p2);
    free(p1);
    (void)state;
}

/* ---- exec_path_interpreters: the names a script also goes by ---- */

static void
write_at(const char *rel, const char *text, int mode)
{
    char *p = at(rel);
    tmpdir_write_file(p, text, mode);
    free(p);
}

/* Walks rel from root and reads its interpreters into *in. */
static void
interpreters(const char *rel, struct exec_path *w, struct exec_interpreters *in)
{
    char *p = at(rel);
    walk(p, root, w);
    free(p);
    assert_int_equal(exec_path_interpreters(w, root, in), 0);
}

static void
test_interpreters(void **state)
{
    char *sh = realpath("/bin/sh", NULL);
    assert_non_null(sh);
    make_dir("i");
    write_at("i/plain", "echo not a script\n", 0755);
    write_at("i/bare", "#!\n", 0755);
    write_at("i/sh", "#!/bin/sh\n", 0755);
    write_at("i/args", "#!  \t/bin/sh -e -u\n", 0755);
    char *text = NULL;
    assert_true(asprintf(&text, "#!%s/i/sh\n", root) >= 0);
    write_at("i/chain", text, 0755); /* chain -> i/sh -> /bin/sh */
    free(text);
    write_at("i/rel", "#!x/bin/prog\n", 0755); /* from cwd: through the x/bin link */
    write_at("i/missing", "#!/nonexistent/interp\n", 0755);
    assert_true(asprintf(&text, "#!%s/i/loop2\n", root) >= 0);
    write_at("i/loop1", text, 0755);
    free(text);
    assert_true(asprintf(&text, "#!%s/i/loop1\n", root) >= 0);
    write_at("i/loop2", text, 0755);
    free(text);

    struct exec_path w;
    struct exec_interpreters in;

    interpreters("i/plain", &w, &in);
    assert_false(in.script);
    assert_int_equal(in.n, 0);
    exec_interpreters_release(&in);
    exec_path_release(&w);

    interpreters("i/bare", &w, &in); /* a script naming no interpreter */
    assert_true(in.script);
    assert_int_equal(in.n, 0);
    exec_interpreters_release(&in);
    exec_path_release(&w);

    interpreters("i/sh", &w, &in);
    assert_true(in.script);
    assert_int_equal(in.n, 1);
    assert_string_equal(in.names[0], sh);
    exec_interpreters_release(&in);
    exec_path_release(&w);

    interpreters("i/args", &w, &in); /* blanks before, arguments after */
    assert_int_equal(in.n, 1);
    assert_string_equal(in.names[0], sh);
    exec_interpreters_release(&in);
    exec_path_release(&w);

    interpreters("i/chain", &w, &in);
    assert_int_equal(in.n, 2);
    char *want = at("i/sh");
    assert_string_equal(in.names[0], want);
    free(want);
    assert_string_equal(in.names[1], sh);
    exec_interpreters_release(&in);
    exec_path_release(&w);

    interpreters("i/rel", &w, &in); /* x/real/prog is a /bin/sh script */
    assert_int_equal(in.n, 2);
    want = at("x/real/prog");
    assert_string_equal(in.names[0], want); /* canonical: the link resolved */
    free(want);
    assert_int_equal(in.walks[0].n_links, 1);
    assert_string_equal(in.names[1], sh);
    exec_interpreters_release(&in);
    exec_path_release(&w);

    interpreters("i/missing", &w, &in); /* named as written, absolute */
    assert_int_equal(in.n, 1);
    assert_string_equal(in.names[0], "/nonexistent/interp");
    assert_null(in.walks[0].canonical);
    exec_interpreters_release(&in);
    exec_path_release(&w);

    interpreters("i/loop1", &w, &in); /* followed as deep as the kernel */
    assert_int_equal(in.n, EXEC_PATH_MAX_INTERPRETERS);
    exec_interpreters_release(&in);
    exec_path_release(&w);

    /* A FIFO is never opened: reading its #! line would block. */
    char *fifo = at("i/fifo");
    assert_int_equal(mkfifo(fifo, 0755), 0);
    free(fifo);
    interpreters("i/fifo", &w, &in);
    assert_false(in.script);
    assert_int_equal(in.n, 0);
    exec_interpreters_release(&in);
    exec_path_release(&w);

    /* A walk that did not resolve has no interpreters. */
    interpreters("dang", &w, &in);
    assert_int_equal(in.n, 0);
    exec_interpreters_release(&in);
    exec_interpreters_release(&in); /* released twice: zeroed */
    exec_path_release(&w);
    free(sh);
    (void)state;
}

/* The loader known by its last component, and its program argument past
 * its own options. */
static void
test_loader(void **state)
{
    assert_true(exec_path_is_loader("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"));
    assert_true(exec_path_is_loader("/lib/ld-musl-x86_64.so.1"));
    assert_true(exec_path_is_loader("/lib64/ld64.so.2"));
    assert_true(exec_path_is_loader("/lib/ld-2.31.so"));
    assert_true(exec_path_is_loader("ld.so"));
    assert_false(exec_path_is_loader("/usr/bin/ld"));
    assert_false(exec_path_is_loader("/usr/bin/ld.gold"));
    assert_false(exec_path_is_loader("/usr/lib/libld-x.so"));
    assert_false(exec_path_is_loader(NULL));

    const char *plain[] = {"ld.so", "/usr/bin/rm", "-f", "x"};
    assert_int_equal(exec_path_loader_program(plain, 4), 1);
    const char *opts[] = {"ld.so", "--library-path", "/l", "--inhibit-cache", "--preload",
                          "p.so",  "--argv0",        "a",  "--audit",         "au.so",
                          "--",    "--odd-name",     "-f"};
    assert_int_equal(exec_path_loader_program(opts, 13), 11);
    const char *hwcaps[] = {"ld.so", "--glibc-hwcaps-mask", "x", "--glibc-hwcaps-prepend",
                            "y",     "--inhibit-rpath",     "z", "prog"};
    assert_int_equal(exec_path_loader_program(hwcaps, 8), 7);
    const char *none[] = {"ld.so", "--list", "--library-path"};
    assert_int_equal(exec_path_loader_program(none, 3), 0);
    const char *dashdash[] = {"ld.so", "--"};
    assert_int_equal(exec_path_loader_program(dashdash, 2), 0);
    assert_int_equal(exec_path_loader_program(plain, 1), 0);
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
        cmocka_unit_test(test_search),
        cmocka_unit_test(test_interpreters),
        cmocka_unit_test(test_loader),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
