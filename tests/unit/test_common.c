/* common/: the intrusive list, string vectors, the growable buffer,
 * container_of/ARRAY_SIZE, dot components, file identity, a socket
 * peer's credentials, /proc/PID/stat, opening without links, writing all
 * of a buffer and closing without losing errno. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/canon_path.h"
#include "common/close_keep_errno.h"
#include "common/file_id.h"
#include "common/list.h"
#include "common/macros.h"
#include "common/no_link.h"
#include "common/path_dot.h"
#include "common/peer_cred.h"
#include "common/proc_stat.h"
#include "common/strv.h"
#include "common/write_all.h"
#include "tests/support/alloc_fail.h"
#include "tests/support/tmpdir.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct item {
    int value;
    struct list node;
};

static void
test_container_of_and_array_size(void **state)
{
    struct item it = {.value = 7};
    assert_ptr_equal(container_of(&it.node, struct item, node), &it);
    int a[5];
    const char *s[] = {"a", "b", NULL};
    assert_int_equal(ARRAY_SIZE(a), 5);
    assert_int_equal(ARRAY_SIZE(s), 3);
}

/* The values of head's list, in order, into out; their count. */
static size_t
values(struct list *head, int *out, size_t max)
{
    size_t n = 0;
    struct list *pos;
    list_foreach(pos, head)
    {
        assert_true(n < max);
        out[n++] = list_entry(pos, struct item, node)->value;
    }
    return n;
}

static void
test_list_insert_and_unlink(void **state)
{
    struct list head;
    list_init(&head);
    assert_true(list_empty(&head));
    struct item it[4];
    for (int i = 0; i < 4; i++) {
        it[i].value = i;
        list_init(&it[i].node);
        assert_false(list_linked(&it[i].node));
    }
    list_insert_tail(&head, &it[1].node);
    list_insert_tail(&head, &it[2].node);
    list_insert_head(&head, &it[0].node);
    list_insert_tail(&head, &it[3].node);
    int v[8];
    assert_int_equal(values(&head, v, 8), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(v[i], i);
    assert_true(list_linked(&it[2].node));

    /* the middle, the head's first and its last */
    list_unlink(&it[2].node);
    assert_false(list_linked(&it[2].node));
    list_unlink(&it[2].node); /* twice: a no-op */
    list_unlink(&it[0].node);
    list_unlink(&it[3].node);
    assert_int_equal(values(&head, v, 8), 1);
    assert_int_equal(v[0], 1);
    list_unlink(&it[1].node);
    assert_true(list_empty(&head));
}

static void
test_list_foreach_safe_frees(void **state)
{
    struct list head;
    list_init(&head);
    for (int i = 0; i < 5; i++) {
        struct item *it = malloc(sizeof(*it));
        assert_non_null(it);
        it->value = i;
        list_insert_tail(&head, &it->node);
    }
    struct list *pos, *tmp;
    int seen = 0;
    list_foreach_safe(pos, tmp, &head)
    {
        struct item *it = list_entry(pos, struct item, node);
        assert_int_equal(it->value, seen++);
        list_unlink(pos);
        free(it); /* the loop must not read it again */
    }
    assert_int_equal(seen, 5);
    assert_true(list_empty(&head));
}

static void
test_strv(void **state)
{
    assert_int_equal(strv_len(NULL), 0);
    strv_free(NULL);
    char **v = calloc(4, sizeof(*v));
    assert_non_null(v);
    assert_int_equal(strv_len(v), 0);
    v[0] = strdup("one");
    v[1] = strdup("two");
    v[2] = strdup("three");
    assert_int_equal(strv_len(v), 3);
    strv_free(v); /* ASan's leak check sees each string freed */
}

static void
test_strv_free_n(void **state)
{
    (void)state;
    strv_free_n(NULL, 3);
    /* counted, not NULL-terminated: NULL entries in the middle are
     * skipped, the ones after them freed all the same */
    char **v = malloc(3 * sizeof(*v));
    assert_non_null(v);
    v[0] = strdup("one");
    v[1] = NULL;
    v[2] = strdup("three");
    strv_free_n(v, 3); /* ASan's leak check sees v[2] freed */
    strv_free_n(malloc(1), 0);
}

static void
test_buf_grows_and_terminates(void **state)
{
    struct buf b = BUF_INIT;
    size_t len = 99;
    char *empty = buf_steal(&b, &len);
    assert_string_equal(empty, "");
    assert_int_equal(len, 0);
    free(empty);

    /* past several doublings, with a NUL inside */
    char want[1000];
    for (size_t i = 0; i < sizeof(want); i++)
        want[i] = (char)(i % 7 == 0 ? '\0' : 'a' + i % 26);
    for (size_t i = 0; i < sizeof(want); i += 10)
        assert_int_equal(buf_append(&b, want + i, 10), 0);
    assert_int_equal(b.len, sizeof(want));
    assert_true(b.cap > b.len);
    assert_int_equal(b.data[b.len], '\0');
    assert_memory_equal(b.data, want, sizeof(want));
    assert_int_equal(buf_append(&b, "end", 3), 0);
    assert_string_equal(b.data + sizeof(want), "end");
    char *s = buf_steal(&b, &len);
    assert_int_equal(len, sizeof(want) + 3);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    free(s);
    buf_free(&b);
}

static void
test_buf_overflow_is_refused(void **state)
{
    struct buf b = BUF_INIT;
    assert_int_equal(buf_append(&b, "kept", 4), 0);
    errno = 0;
    assert_int_equal(buf_reserve(&b, SIZE_MAX - 2), -1);
    assert_int_equal(errno, ENOMEM);
    assert_int_equal(buf_append(&b, "x", SIZE_MAX), -1);
    assert_string_equal(b.data, "kept");
    assert_int_equal(b.len, 4);
    buf_free(&b);
}

/* One round of the allocation sweep: a failed append keeps what was there. */
static void
buf_round(void *arg)
{
    struct buf b = BUF_INIT;
    int rc = 0;
    for (int i = 0; i < 40 && rc == 0; i++)
        rc = buf_append(&b, "0123456789", 10);
    if (alloc_fail_injected()) {
        assert_int_equal(rc, -1);
        assert_int_equal(b.len % 10, 0);
        if (b.data)
            assert_int_equal(strlen(b.data), b.len);
    } else {
        assert_int_equal(rc, 0);
        assert_int_equal(b.len, 400);
    }
    buf_free(&b);
}

static void
test_buf_allocation_failures(void **state)
{
    assert_true(alloc_fail_sweep(buf_round, NULL) >= 2);
}

static void
test_path_dot(void **state)
{
    (void)state;
    assert_int_equal(path_dot(".", 1), PATH_DOT_SELF);
    assert_int_equal(path_dot("..", 2), PATH_DOT_PARENT);
    /* only the component's own bytes count: "./x" and "../x" start with one */
    assert_int_equal(path_dot("./x", 1), PATH_DOT_SELF);
    assert_int_equal(path_dot("../x", 2), PATH_DOT_PARENT);
    assert_int_equal(path_dot("...", 3), PATH_DOT_NONE);
    assert_int_equal(path_dot(".x", 2), PATH_DOT_NONE);
    assert_int_equal(path_dot("x.", 2), PATH_DOT_NONE);
    assert_int_equal(path_dot("..", 1), PATH_DOT_SELF);
    assert_int_equal(path_dot("", 0), PATH_DOT_NONE);
}

static void
test_file_id(void **state)
{
    (void)state;
    int a = open("/", O_PATH | O_CLOEXEC | O_DIRECTORY);
    int b = open("/", O_RDONLY | O_CLOEXEC | O_DIRECTORY);
    int other = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(a >= 0 && b >= 0 && other >= 0);
    assert_true(file_id_same_fd(a, b));
    assert_false(file_id_same_fd(a, other));
    struct stat sa, so;
    assert_int_equal(fstat(a, &sa), 0);
    assert_int_equal(fstat(other, &so), 0);
    assert_true(file_id_same(&sa, &sa));
    assert_false(file_id_same(&sa, &so));
    /* the same inode number on another device is another file */
    so.st_ino = sa.st_ino;
    assert_false(file_id_same(&sa, &so));
    close(other);
    /* a closed fd is the same as nothing */
    assert_false(file_id_same_fd(a, other));
    close(a);
    close(b);
}

static void
test_peer_cred(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    struct ucred c = {0, (uid_t)-1, (gid_t)-1};
    assert_int_equal(peer_cred(sv[0], &c), 0);
    assert_int_equal(c.pid, getpid());
    assert_int_equal(c.uid, geteuid());
    assert_int_equal(c.gid, getegid());
    close(sv[0]);
    close(sv[1]);
    /* not a socket: an error, and *out zeroed (nothing stale to read) */
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct ucred zeroed = {12345, 1, 2};
    assert_int_equal(peer_cred(fd, &zeroed), -ENOTSOCK);
    assert_int_equal(zeroed.pid, 0);
    assert_int_equal(zeroed.uid, 0);
    close(fd);
}

static void
test_proc_stat_parse(void **state)
{
    (void)state;
    struct proc_stat st = {0, 0};
    /* a name with ") " and digits in it: read from the last ')' */
    assert_int_equal(proc_stat_parse("42 (a) 1 2 (b) S 7 42 42 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 "
                                     "0 98765 1000 10",
                                     &st),
                     0);
    assert_int_equal(st.ppid, 7);
    assert_int_equal(st.start, 98765);
    struct proc_stat kept = {3, 4};
    assert_int_equal(proc_stat_parse("42 no parenthesis S 7", &kept), -EINVAL);
    assert_int_equal(proc_stat_parse("42 (x) S", &kept), -EINVAL);
    assert_int_equal(proc_stat_parse("42 (x) S 7 1 2", &kept), -EINVAL); /* no starttime */
    assert_int_equal(proc_stat_parse("42 (x) S -1 1 1 0 -1 0 1 2 3 4 5 6 7 8 20 0 1 0 9", &kept),
                     -EINVAL);
    assert_int_equal(kept.ppid, 3); /* untouched on failure */
    assert_int_equal(kept.start, 4);
}

static void
test_proc_stat_read(void **state)
{
    (void)state;
    struct proc_stat me, again;
    assert_int_equal(proc_stat_read(getpid(), &me), 0);
    assert_int_equal(me.ppid, getppid());
    assert_true(me.start > 0);
    assert_int_equal(proc_stat_read(getpid(), &again), 0);
    assert_true(again.start == me.start);
    /* a child started later has this process as parent and a start no
     * earlier */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    struct proc_stat c;
    assert_int_equal(proc_stat_read(child, &c), 0);
    assert_int_equal(c.ppid, getpid());
    assert_true(c.start >= me.start);
    kill(child, SIGKILL);
    assert_int_equal(waitpid(child, NULL, 0), child);
    assert_int_equal(proc_stat_read(child, &c), -ENOENT);
}

/* Whether fd holds the file at path (following links). */
static bool
holds(int fd, const char *path)
{
    struct stat a, b;
    return fd >= 0 && fstat(fd, &a) == 0 && stat(path, &b) == 0 && file_id_same(&a, &b);
}

static void
test_no_link(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/common-no-link-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    /* the walk starts at "/": the test's own directory without links */
    char *top = realpath(tmpl, NULL);
    assert_non_null(top);
    char path[PATH_MAX];
#define AT(sub) (snprintf(path, sizeof(path), "%s/%s", top, sub), path)
    assert_int_equal(mkdir(AT("a"), 0700), 0);
    assert_int_equal(mkdir(AT("a/b"), 0700), 0);
    assert_int_equal(symlink("a", AT("link")), 0);
    assert_int_equal(symlink("b", AT("a/last")), 0);
    int f = open(AT("a/file"), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    assert_true(f >= 0);
    close(f);

    int fd = no_link_open(AT("a/b"));
    assert_true(holds(fd, AT("a/b")));
    close(fd);
    snprintf(path, sizeof(path), "/%s//a///b", top);
    fd = no_link_open(path);
    assert_true(holds(fd, AT("a/b"))); /* repeated slashes are one */
    close(fd);
    /* a link on the way, or as the last component, is refused */
    assert_int_equal(no_link_open(AT("link/b")), -ELOOP);
    assert_int_equal(no_link_open(AT("link")), -ELOOP);
    assert_int_equal(no_link_open(AT("a/last")), -ELOOP);
    assert_int_equal(no_link_open(AT("a/missing")), -ENOENT);
    assert_int_equal(no_link_open(AT("a/file/x")), -ENOTDIR);

    int dir = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(dir >= 0);
    fd = no_link_step(dir, "a/b", 1, O_DIRECTORY); /* only n bytes count */
    assert_true(holds(fd, AT("a")));
    close(fd);
    assert_int_equal(no_link_step(dir, "link", 4, 0), -ELOOP);
    assert_int_equal(no_link_step(dir, "link", 4, O_DIRECTORY), -ENOTDIR);
    int a = no_link_step(dir, "a", 1, O_DIRECTORY);
    assert_true(a >= 0);
    assert_int_equal(no_link_step(a, "file", 4, O_DIRECTORY), -ENOTDIR);
    fd = no_link_step(a, "file", 4, 0);
    assert_true(holds(fd, AT("a/file")));
    close(fd);
    assert_int_equal(no_link_step(a, "", 0, 0), -ENOENT);
    char longname[NAME_MAX + 2];
    memset(longname, 'x', sizeof(longname));
    assert_int_equal(no_link_step(a, longname, sizeof(longname), 0), -ENAMETOOLONG);
    close(a);
    close(dir);
#undef AT
    /* clean up */
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
    assert_int_equal(system(cmd), 0);
    free(top);
}

static void
test_write_all(void **state)
{
    (void)state;
    /* more than a pipe holds at once: the writes come in parts, read by a
     * child as they come */
    static char data[256 * 1024];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (char)(i * 7);
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(p[1]);
        size_t got = 0;
        char chunk[4096];
        ssize_t n;
        while ((n = read(p[0], chunk, sizeof(chunk))) > 0) {
            for (ssize_t i = 0; i < n; i++)
                if (chunk[i] != data[got + (size_t)i])
                    _exit(2);
            got += (size_t)n;
        }
        _exit(got == sizeof(data) ? 0 : 1);
    }
    close(p[0]);
    assert_int_equal(write_all(p[1], data, sizeof(data)), 0);
    assert_int_equal(write_all(p[1], data, 0), 0);
    close(p[1]);
    int st;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* a failed write is its errno */
    assert_int_equal(write_all(p[1], "x", 1), -EBADF);
}

static void
test_close_keep_errno(void **state)
{
    (void)state;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    errno = E2BIG;
    close_keep_errno(fd);
    assert_int_equal(errno, E2BIG);
    assert_int_equal(fcntl(fd, F_GETFD), -1); /* closed */
    /* a close that fails (EBADF) leaves errno too */
    errno = ERANGE;
    close_keep_errno(fd);
    assert_int_equal(errno, ERANGE);
}

/* canon_path answers as realpath does: for canonical paths (its own
 * shortcut) and for those with a link, ".", "..", "//" or a trailing '/'
 * on the way, and for missing ones (NULL, the same errno). */
static void
test_canon_path_is_realpath(void **state)
{
    (void)state;
    char *dir = tmpdir_new("canon");
    char *real_dir = realpath(dir, NULL);
    assert_non_null(real_dir);
    tmpdir_make_dir(real_dir, "a");
    tmpdir_make_dir(real_dir, "a/b");
    tmpdir_make_link("a/b", real_dir, "link");
    const char *rels[] = {"",          "/a",      "/a/b",   "/link",    "/link/",       "/a/./b",
                          "/a/../a/b", "//a//b/", "/a/b/.", "/missing", "/link/missing"};
    for (size_t i = 0; i < ARRAY_SIZE(rels); i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s%s", real_dir, rels[i]);
        errno = 0;
        char *want = realpath(path, NULL);
        int want_errno = errno;
        errno = 0;
        char *got = canon_path(path);
        if (want == NULL) {
            assert_null(got);
            assert_int_equal(errno, want_errno);
        } else {
            assert_non_null(got);
            assert_string_equal(got, want);
        }
        free(want);
        free(got);
    }
    /* the link itself: realpath follows it, so does canon_path */
    char *link = tmpdir_path(real_dir, "link");
    char *got = canon_path(link);
    char *want = tmpdir_path(real_dir, "a/b");
    assert_string_equal(got, want);
    free(got);
    free(want);
    free(link);
    assert_true(canon_path_form("/"));
    assert_true(canon_path_form("/a/b"));
    assert_false(canon_path_form("a/b"));
    assert_false(canon_path_form("/a/"));
    assert_false(canon_path_form("/a//b"));
    assert_false(canon_path_form("/a/./b"));
    assert_false(canon_path_form("/a/.."));
    tmpdir_remove(dir);
    free(real_dir);
    free(dir);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_container_of_and_array_size),
        cmocka_unit_test(test_canon_path_is_realpath),
        cmocka_unit_test(test_list_insert_and_unlink),
        cmocka_unit_test(test_list_foreach_safe_frees),
        cmocka_unit_test(test_strv),
        cmocka_unit_test(test_strv_free_n),
        cmocka_unit_test(test_buf_grows_and_terminates),
        cmocka_unit_test(test_buf_overflow_is_refused),
        cmocka_unit_test(test_buf_allocation_failures),
        cmocka_unit_test(test_path_dot),
        cmocka_unit_test(test_file_id),
        cmocka_unit_test(test_peer_cred),
        cmocka_unit_test(test_proc_stat_parse),
        cmocka_unit_test(test_proc_stat_read),
        cmocka_unit_test(test_no_link),
        cmocka_unit_test(test_write_all),
        cmocka_unit_test(test_close_keep_errno),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
