/*
 * login_snapshot: the shell kinds, the startup files a login shell reads
 * (and those they source by a literal path), the store's states (capture,
 * wait, ready, fallback; retaken when a startup file changes or the
 * snapshot is too old), the capture's output taken apart (noise, markers,
 * garbage), the file's mode, a call's command line and environment, and
 * the capture run by a real Bash: what a login call sourcing the snapshot
 * sees is what `bash -lc` sees.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/call/login_snapshot.h"
#include "common/strv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/tmpdir.h"

static char *root; /* scratch, canonical */
static char *home; /* root/home */

static int
setup(void **state)
{
    root = tmpdir_new("login-snapshot");
    tmpdir_make_dir(root, "home");
    tmpdir_make_dir(root, "store");
    home = tmpdir_path(root, "home");
    return 0;
}

static int
teardown(void **state)
{
    tmpdir_remove(root);
    free(root);
    free(home);
    return 0;
}

static char *
in_home(const char *rel)
{
    return tmpdir_path(home, rel);
}

static void
write_home(const char *rel, const char *text)
{
    char *p = in_home(rel);
    tmpdir_write_file(p, text, 0644);
    free(p);
}

static bool
has(char **v, const char *s)
{
    for (size_t i = 0; v[i]; i++) {
        if (strcmp(v[i], s) == 0)
            return true;
    }
    return false;
}

static void
test_kinds(void **state)
{
    const struct login_snapshot_kind *b = login_snapshot_kind_find("bash");
    assert_non_null(b);
    assert_ptr_equal(login_snapshot_kind_find("/usr/libexec/execgate/bash"), b);
    assert_string_equal(login_snapshot_kind_name(b), "bash");
    assert_true(login_snapshot_kind_captures(b));
    const struct login_snapshot_kind *z = login_snapshot_kind_find("/bin/zsh");
    assert_non_null(z);
    assert_ptr_not_equal(z, b);
    assert_string_equal(login_snapshot_kind_name(z), "zsh");
    assert_true(login_snapshot_kind_captures(z));
    assert_null(login_snapshot_kind_find("fish"));
    assert_null(login_snapshot_kind_find("bash5"));
}

static void
test_startup_files(void **state)
{
    write_home(".profile", "# a comment . ~/not-this\n"
                           "if [ -f \"$HOME/.bashrc\" ]; then . \"$HOME/.bashrc\"; fi\n"
                           "[ -f ~/.more ] && source ~/.more\n"
                           "for i in ~/.d/*.sh; do . $i; done\n"
                           "echo foo. bar; . relative.sh\n");
    write_home(".bashrc", "source \"$HOME\"/.cargo-env\n. ${HOME}/.third # and more\n");
    write_home(".more", "true\n");
    char **f = login_snapshot_startup_files(login_snapshot_kind_find("bash"), home);
    assert_non_null(f);
    assert_true(has(f, "/etc/profile"));
    assert_true(has(f, "/etc/bash.bashrc"));
    char *p;
    const char *want[] = {".bash_profile", ".bash_login", ".profile", ".bashrc",
                          ".more",         ".cargo-env",  ".third"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        p = in_home(want[i]);
        if (!has(f, p))
            fail_msg("%s is not among the startup files", p);
        free(p);
    }
    p = in_home("not-this");
    assert_true(has(f, p)); /* a comment is not parsed: one stat too many, not one too few */
    free(p);
    for (size_t i = 0; f[i]; i++) {
        assert_true(f[i][0] == '/');
        assert_null(strstr(f[i], "$"));
        assert_null(strstr(f[i], "relative.sh"));
        for (size_t j = i + 1; f[j]; j++)
            assert_string_not_equal(f[i], f[j]);
    }
    strv_free(f);
    /* without HOME only the system's */
    f = login_snapshot_startup_files(login_snapshot_kind_find("bash"), NULL);
    assert_non_null(f);
    assert_true(has(f, "/etc/profile"));
    for (size_t i = 0; f[i]; i++)
        assert_null(strstr(f[i], home));
    strv_free(f);
}

/* zsh's: the zsh files, and with ZDOTDIR in the environment its personal
 * files there too (and what they source) */
static void
test_zsh_startup_files(void **state)
{
    tmpdir_make_dir(root, "zd");
    char *zd = tmpdir_path(root, "zd");
    char *zprofile = tmpdir_path(zd, ".zprofile");
    tmpdir_write_file(zprofile, "source ~/.zsh-more\n", 0644);
    const struct login_snapshot_kind *k = login_snapshot_kind_find("zsh");
    unsetenv("ZDOTDIR");
    char **f = login_snapshot_startup_files(k, home);
    assert_non_null(f);
    assert_true(has(f, "/etc/zsh/zshenv"));
    assert_true(has(f, "/etc/zsh/zlogin"));
    const char *want[] = {".zshenv", ".zprofile", ".zshrc", ".zlogin"};
    for (size_t i = 0; i < 4; i++) {
        char *p = in_home(want[i]);
        assert_true(has(f, p));
        free(p);
    }
    assert_false(has(f, zprofile));
    strv_free(f);
    setenv("ZDOTDIR", zd, 1);
    f = login_snapshot_startup_files(k, home);
    unsetenv("ZDOTDIR");
    assert_non_null(f);
    assert_true(has(f, zprofile));
    char *more = in_home(".zsh-more");
    assert_true(has(f, more));
    free(more);
    strv_free(f);
    free(zprofile);
    free(zd);
}

/* The fd number login calls inherit a snapshot at, as the server's. */
#define SNAP_AT 7

/* The snapshot fd holds, read as a login call reads it (by
 * /proc/self/fd/N: its own file, from the start), without the first line
 * (which must close SNAP_AT); and it must be sealed, nothing written. */
static char *
snapshot_text(int fd)
{
    assert_true(fd > 2);
    int seals = fcntl(fd, F_GET_SEALS);
    int want = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;
    assert_int_equal(seals & want, want);
    assert_int_equal(pwrite(fd, "x", 1, 0), -1);
    assert_int_equal(errno, EPERM);
    char *name = NULL;
    assert_true(asprintf(&name, "/proc/self/fd/%d", fd) > 0);
    size_t len = 0;
    char *text = tmpdir_read_file(name, &len);
    assert_non_null(text);
    free(name);
    const char *head = "exec 7<&-\n";
    assert_memory_equal(text, head, strlen(head));
    memmove(text, text + strlen(head), len - strlen(head) + 1);
    return text;
}

/* The inode of fd, or 0 when it is closed. */
static ino_t
fd_inode(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

static struct login_snapshot *
new_store(void)
{
    char *parent = tmpdir_path(root, "store");
    char *err = NULL;
    struct login_snapshot *ls = login_snapshot_new(parent, SNAP_AT, &err);
    if (!ls)
        fail_msg("login_snapshot_new: %s", err);
    assert_non_null(strstr(login_snapshot_dir(ls), parent));
    struct stat st;
    assert_int_equal(stat(login_snapshot_dir(ls), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    free(parent);
    return ls;
}

/* The nonce of a capture command: what follows the begin marker's name. */
static char *
nonce_of(const char *cmd)
{
    const char *m = strstr(cmd, "EXECGATE-LOGIN-SNAPSHOT-BEGIN-");
    assert_non_null(m);
    m += strlen("EXECGATE-LOGIN-SNAPSHOT-BEGIN-");
    return strndup(m, strspn(m, "0123456789abcdef"));
}

/* The output of a capture that printed noise, then body. */
static char *
capture_output(const char *cmd, const char *noise, const char *body)
{
    char *n = nonce_of(cmd);
    char *out = NULL;
    assert_true(asprintf(&out,
                         "%s\nEXECGATE-LOGIN-SNAPSHOT-BEGIN-%s\n%sEXECGATE-LOGIN-SNAPSHOT-END-%s\n",
                         noise, n, body, n) > 0);
    free(n);
    return out;
}

static void
test_store_states(void **state)
{
    const struct login_snapshot_kind *k = login_snapshot_kind_find("bash");
    write_home(".profile", ". ~/.bashrc\n");
    write_home(".bashrc", "export A=1\n");
    struct login_snapshot *ls = new_store();
    int snap = -1;
    assert_int_equal(login_snapshot_get(ls, k, "key1", home, 1000, &snap), LOGIN_SNAPSHOT_CAPTURE);
    char *cmd = login_snapshot_begin(ls, k, "key1", home, 1000);
    assert_non_null(cmd);
    /* one capture at a time, for any key */
    assert_null(login_snapshot_begin(ls, k, "key2", home, 1000));
    assert_int_equal(login_snapshot_get(ls, k, "key1", home, 1001, &snap), LOGIN_SNAPSHOT_WAIT);
    assert_int_equal(login_snapshot_get(ls, k, "key2", home, 1001, &snap), LOGIN_SNAPSHOT_WAIT);

    char *out = capture_output(cmd, "profile says hi", "export A=1\n");
    char *noise = NULL, *why = NULL;
    assert_int_equal(login_snapshot_done(ls, true, out, strlen(out), &noise, &why), 0);
    assert_null(why);
    assert_string_equal(noise, "profile says hi");
    free(noise);
    free(out);
    free(cmd);

    assert_int_equal(login_snapshot_get(ls, k, "key1", home, 2000, &snap), LOGIN_SNAPSHOT_READY);
    char *text = snapshot_text(snap);
    assert_string_equal(text, "export A=1\n");
    free(text);
    int first = snap;
    ino_t first_ino = fd_inode(first);
    /* no file of it in the store's directory */
    DIR *d = opendir(login_snapshot_dir(ls));
    assert_non_null(d);
    for (struct dirent *de; (de = readdir(d));)
        assert_true(strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0);
    closedir(d);

    /* another key (another policy): its own capture */
    assert_int_equal(login_snapshot_get(ls, k, "key2", home, 2000, &snap), LOGIN_SNAPSHOT_CAPTURE);

    /* a sourced file changes: retaken */
    write_home(".bashrc", "export A=22\n");
    assert_int_equal(login_snapshot_get(ls, k, "key1", home, 2001, &snap), LOGIN_SNAPSHOT_CAPTURE);
    cmd = login_snapshot_begin(ls, k, "key1", home, 2001);
    out = capture_output(cmd, "", "export A=22\n");
    assert_int_equal(login_snapshot_done(ls, true, out, strlen(out), &noise, &why), 0);
    assert_true(fd_inode(first) != first_ino); /* the old snapshot went */
    assert_null(noise);
    free(out);
    free(cmd);
    assert_int_equal(login_snapshot_get(ls, k, "key1", home, 2002, &snap), LOGIN_SNAPSHOT_READY);
    text = snapshot_text(snap);
    assert_string_equal(text, "export A=22\n");
    free(text);

    /* too old: retaken */
    assert_int_equal(
        login_snapshot_get(ls, k, "key1", home, 2001 + LOGIN_SNAPSHOT_MAX_AGE_MS - 1, &snap),
        LOGIN_SNAPSHOT_READY);
    assert_int_equal(
        login_snapshot_get(ls, k, "key1", home, 2001 + LOGIN_SNAPSHOT_MAX_AGE_MS, &snap),
        LOGIN_SNAPSHOT_CAPTURE);

    /* a new startup file (~/.bash_profile now shadows ~/.profile): retaken */
    uint64_t now = 2001 + LOGIN_SNAPSHOT_MAX_AGE_MS;
    cmd = login_snapshot_begin(ls, k, "key1", home, now);
    out = capture_output(cmd, "", "x\n");
    assert_int_equal(login_snapshot_done(ls, true, out, strlen(out), &noise, &why), 0);
    free(out);
    free(cmd);
    assert_int_equal(login_snapshot_get(ls, k, "key1", home, now, &snap), LOGIN_SNAPSHOT_READY);
    write_home(".bash_profile", "true\n");
    assert_int_equal(login_snapshot_get(ls, k, "key1", home, now, &snap), LOGIN_SNAPSHOT_CAPTURE);
    char *bp = in_home(".bash_profile");
    unlink(bp);
    free(bp);

    char *dir = strdup(login_snapshot_dir(ls));
    login_snapshot_free(ls);
    assert_true(access(dir, F_OK) < 0); /* nothing left behind */
    free(dir);
}

static void
test_failures(void **state)
{
    const struct login_snapshot_kind *k = login_snapshot_kind_find("bash");
    write_home(".profile", "exit 3\n");
    struct login_snapshot *ls = new_store();
    int snap = -1;
    char *noise = NULL, *why = NULL;

    /* did not run to its end (exit 3, timed out, killed) */
    char *cmd = login_snapshot_begin(ls, k, "k", home, 10);
    assert_int_equal(login_snapshot_done(ls, false, "bye\n", 4, &noise, &why), -1);
    assert_non_null(why);
    assert_string_equal(noise, "bye\n");
    free(noise);
    free(why);
    free(cmd);
    /* until a startup file changes: a real login shell, no new capture */
    assert_int_equal(login_snapshot_get(ls, k, "k", home, 20, &snap), LOGIN_SNAPSHOT_FALLBACK);
    assert_int_equal(snap, -1);
    write_home(".profile", "exit 4\n");
    assert_int_equal(login_snapshot_get(ls, k, "k", home, 30, &snap), LOGIN_SNAPSHOT_CAPTURE);

    /* garbage: no markers, a wrong nonce, a missing end, something after the end */
    for (int i = 0; i < 5; i++) {
        cmd = login_snapshot_begin(ls, k, "k", home, 40);
        assert_non_null(cmd);
        char *out = capture_output(cmd, "noise", "A=1\n");
        size_t len = strlen(out);
        if (i == 0) {
            len = 0;
        } else if (i == 1) {
            strcpy(out, "just text\n");
            len = strlen(out);
        } else if (i == 2) {
            strstr(out, "BEGIN-")[6] ^= 1; /* another nonce */
        } else if (i == 3) {
            len -= 5;
        } else {
            out = realloc(out, len + 6);
            strcpy(out + len, "more\n");
            len += 5;
        }
        assert_int_equal(login_snapshot_done(ls, true, out, len, &noise, &why), -1);
        assert_non_null(why);
        free(noise);
        free(why);
        free(out);
        free(cmd);
        assert_int_equal(login_snapshot_get(ls, k, "k", home, 50, &snap), LOGIN_SNAPSHOT_FALLBACK);
        write_home(".profile", i % 2 ? "exit 5\n" : "exit 66\n");
    }
    /* done without a capture running: nothing happens */
    assert_int_equal(login_snapshot_done(ls, true, "x", 1, &noise, &why), 0);
    /* called off (its session ended): not a failure, the next call captures */
    cmd = login_snapshot_begin(ls, k, "k", home, 70);
    assert_non_null(cmd);
    free(cmd);
    assert_int_equal(login_snapshot_get(ls, k, "k", home, 71, &snap), LOGIN_SNAPSHOT_WAIT);
    login_snapshot_abandon(ls);
    login_snapshot_abandon(ls); /* none runs now: nothing happens */
    assert_int_equal(login_snapshot_get(ls, k, "k", home, 72, &snap), LOGIN_SNAPSHOT_CAPTURE);
    cmd = login_snapshot_begin(ls, k, "k", home, 73);
    assert_non_null(cmd);
    char *good = capture_output(cmd, "", "A=1\n");
    assert_int_equal(login_snapshot_done(ls, true, good, strlen(good), &noise, &why), 0);
    free(good);
    free(cmd);
    assert_int_equal(login_snapshot_get(ls, k, "k", home, 74, &snap), LOGIN_SNAPSHOT_READY);
    /* zsh: a key of its own, captured like Bash's */
    assert_int_equal(login_snapshot_get(ls, login_snapshot_kind_find("zsh"), "k", home, 75, &snap),
                     LOGIN_SNAPSHOT_CAPTURE);
    login_snapshot_free(ls);
    login_snapshot_free(NULL);
}

/* LOGIN_SNAPSHOT_MAX_KEPT keys are kept; one more takes the place of the
 * least recently used, whose file goes. */
static void
test_kept(void **state)
{
    const struct login_snapshot_kind *k = login_snapshot_kind_find("bash");
    struct login_snapshot *ls = new_store();
    int fds[LOGIN_SNAPSHOT_MAX_KEPT + 1];
    ino_t inodes[LOGIN_SNAPSHOT_MAX_KEPT + 1];
    int snap = -1;
    char *noise = NULL, *why = NULL;
    for (int i = 0; i <= LOGIN_SNAPSHOT_MAX_KEPT; i++) {
        char key[16];
        snprintf(key, sizeof(key), "key%d", i);
        /* key0 is used last of all the kept ones but key1: key1 goes */
        if (i == LOGIN_SNAPSHOT_MAX_KEPT)
            assert_int_equal(login_snapshot_get(ls, k, "key0", home, 100 + i, &snap),
                             LOGIN_SNAPSHOT_READY);
        char *cmd = login_snapshot_begin(ls, k, key, home, 100 + i);
        assert_non_null(cmd);
        char *out = capture_output(cmd, "", "true\n");
        assert_int_equal(login_snapshot_done(ls, true, out, strlen(out), &noise, &why), 0);
        free(out);
        free(cmd);
        assert_int_equal(login_snapshot_get(ls, k, key, home, 100 + i, &snap),
                         LOGIN_SNAPSHOT_READY);
        fds[i] = snap;
        inodes[i] = fd_inode(snap);
        assert_true(inodes[i] != 0);
    }
    assert_true(fd_inode(fds[1]) != inodes[1]);
    assert_int_equal(login_snapshot_get(ls, k, "key1", home, 200, &snap), LOGIN_SNAPSHOT_CAPTURE);
    for (int i = 0; i <= LOGIN_SNAPSHOT_MAX_KEPT; i++) {
        if (i != 1) {
            assert_true(fd_inode(fds[i]) == inodes[i]);
            char key[16];
            snprintf(key, sizeof(key), "key%d", i);
            assert_int_equal(login_snapshot_get(ls, k, key, home, 200, &snap),
                             LOGIN_SNAPSHOT_READY);
        }
    }
    login_snapshot_free(ls);
}

static char **
strv(const char *const *in)
{
    size_t n = 0;
    while (in[n])
        n++;
    char **v = calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        v[i] = strdup(in[i]);
    return v;
}

static void
test_use(void **state)
{
    struct login_snapshot *ls = new_store();
    const struct login_snapshot_kind *k = login_snapshot_kind_find("bash");
    const char *const a[] = {"/h/sandbox", "--cwd", "/w", "--", "/b/bash", "-lc", "echo hi", NULL};
    const char *const e[] = {"HOME=/h", "BASH_ENV=/theirs", "X=1", NULL};
    char **argv = strv(a), **env = strv(e);
    assert_int_equal(login_snapshot_use(ls, k, &argv, &env), 0);
    const char *const want_a[] = {"/h/sandbox",  "--cwd", "/w",      "--", "/b/bash",
                                  "--noprofile", "-lc",   "echo hi", NULL};
    for (size_t i = 0; want_a[i]; i++)
        assert_string_equal(argv[i], want_a[i]);
    assert_null(argv[8]);
    assert_string_equal(env[0], "HOME=/h");
    assert_string_equal(env[1], "BASH_ENV=/proc/self/fd/7");
    assert_string_equal(env[2], "X=1");
    assert_null(env[3]);
    strv_free(argv);
    strv_free(env);

    const char *const e2[] = {"HOME=/h", NULL};
    argv = strv(a);
    env = strv(e2);
    assert_int_equal(login_snapshot_use(ls, k, &argv, &env), 0);
    assert_string_equal(env[1], "BASH_ENV=/proc/self/fd/7");
    assert_null(env[2]);
    strv_free(argv);
    strv_free(env);

    /* not a login command line: unchanged */
    const char *const c[] = {"/b/bash", "-c", "echo hi", NULL};
    argv = strv(c);
    env = strv(e2);
    assert_int_equal(login_snapshot_use(ls, k, &argv, &env), -1);
    assert_string_equal(argv[1], "-c");
    assert_null(env[1]);
    assert_int_equal(login_snapshot_use(ls, login_snapshot_kind_find("zsh"), &argv, &env), -1);
    assert_null(env[1]);
    strv_free(argv);
    strv_free(env);

    /* zsh: the command line stays; ZDOTDIR (theirs replaced) names the
     * store's private one, and a variable the snapshot */
    k = login_snapshot_kind_find("zsh");
    const char *const z[] = {"/h/sandbox", "--", "/b/zsh", "-lc", "echo hi", NULL};
    const char *const ze[] = {"HOME=/h", "ZDOTDIR=/theirs", "X=1", NULL};
    argv = strv(z);
    env = strv(ze);
    assert_int_equal(login_snapshot_use(ls, k, &argv, &env), 0);
    for (size_t i = 0; z[i]; i++)
        assert_string_equal(argv[i], z[i]);
    assert_null(argv[5]);
    char *zdot = NULL;
    assert_true(asprintf(&zdot, "ZDOTDIR=%s/zsh", login_snapshot_dir(ls)) > 0);
    assert_string_equal(env[0], "HOME=/h");
    assert_string_equal(env[1], zdot);
    assert_string_equal(env[2], "X=1");
    assert_string_equal(env[3], "EXECGATE_LOGIN_SNAPSHOT=/proc/self/fd/7");
    assert_null(env[4]);
    free(zdot);
    strv_free(argv);
    strv_free(env);
    login_snapshot_free(ls);
}

/* ---- a real Bash ---- */

static const char *bash;

/* The snapshot a login call of run() inherits at SNAP_AT, or -1. */
static int snap_fd = -1;

/* Runs argv with our environment, HOME=home and extra (NAME=value
 * entries, NULL-terminated; may be NULL) in home; returns stdout and
 * stderr together; *status the exit status. */
static char *
run(const char *const *argv, char *const *extra, int *status)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        if (snap_fd >= 0 && dup2(snap_fd, SNAP_AT) < 0)
            _exit(127);
        /* the environment the store's capture says was inherited: ours */
        if (setenv("HOME", home, 1) < 0 || chdir(home) < 0)
            _exit(127);
        for (size_t i = 0; extra && extra[i]; i++) {
            if (putenv(extra[i]) < 0)
                _exit(127);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    char *out = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = (len + 4096 + 1) * 2;
            out = realloc(out, cap);
        }
        ssize_t n = read(p[0], out + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    out[len] = '\0';
    close(p[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    return out;
}

#define PROBE                                                                                      \
    "echo \"A=$A P=$PATH R=$RO N=$NOEXP ARR=${ARR[1]} AS=${AS[k]} I=$I\"; fn one; "                \
    "bash -c 'xfn two; echo child BASH_ENV=${BASH_ENV-unset}'; al; shopt -p extglob "              \
    "expand_aliases login_shell; echo \"$- $(umask) $0\"; set -o | grep -E 'noclobber|pipefail'; " \
    "declare -p RO I 2>&1; echo \"[$(type -t al)]\"; echo \"G=${SNAP_GONE-unset} "                 \
    "U=$SNAP_UNEXP REF=$REF E=[$E]\"; bash -c 'echo child U=${SNAP_UNEXP-unset}'; "                \
    "declare -p REF E; echo \"K=$SNAP_KEPT\"; exit 7"

static void
test_capture_by_bash(void **state)
{
    if (!bash || access(bash, X_OK) < 0)
        skip();
    setenv("SNAP_GONE", "inherited", 1);
    setenv("SNAP_UNEXP", "inherited-exported", 1);
    setenv("SNAP_KEPT", "it's inherited, unchanged", 1);
    write_home(".bash_profile",
               "echo noise on stderr >&2\n"
               "export A='quoted \"one\" $x `y` \n two'\n"
               "PATH=/opt/snap/bin:$PATH\n"
               "readonly RO=fixed\n"
               "NOEXP=plain\n"
               "ARR=(a 'b c') ; declare -A AS=([k]=v)\n"
               "declare -i I=6*7\n"
               "fn() { echo \"fn $1 ${#A}\"; }\n"
               "xfn() { echo \"xfn $1\"; }; export -f xfn\n"
               "alias al='echo alias ran'\n"
               "shopt -s expand_aliases extglob\n"
               "set -o noclobber -o pipefail\n"
               "umask 027\n"
               "unset SNAP_GONE; export -n SNAP_UNEXP; declare -n REF=NOEXP; E=\n");
    const char *real[] = {bash, "-lc", PROBE, NULL};
    int real_status = 0;
    char *want = run(real, NULL, &real_status);
    assert_int_equal(real_status, 7);
    assert_non_null(strstr(want, "noise on stderr"));

    const struct login_snapshot_kind *k = login_snapshot_kind_find("bash");
    struct login_snapshot *ls = new_store();
    char *cmd = login_snapshot_begin(ls, k, "k", home, 1);
    const char *cap[] = {bash, "-lc", cmd, NULL};
    int status = 0;
    char *out = run(cap, NULL, &status);
    assert_int_equal(status, 0);
    char *noise = NULL, *why = NULL;
    if (login_snapshot_done(ls, true, out, strlen(out), &noise, &why) < 0)
        fail_msg("capture: %s\n%s", why, out);
    assert_non_null(strstr(noise, "noise on stderr"));
    int snap = -1;
    assert_int_equal(login_snapshot_get(ls, k, "k", home, 2, &snap), LOGIN_SNAPSHOT_READY);
    /* what the shell inherits unchanged is not set again: each line costs
     * every login call */
    char *text = snapshot_text(snap);
    assert_null(strstr(text, "SNAP_KEPT"));
    assert_non_null(strstr(text, "SNAP_UNEXP"));
    free(text);
    char *env = strdup("BASH_ENV=/proc/self/fd/7");
    const char *use[] = {bash, "--noprofile", "-lc", PROBE, NULL};
    char *const extra[] = {env, NULL};
    snap_fd = snap;
    char *got = run(use, extra, &status);
    snap_fd = -1;
    /* the profile's noise is not in it; the rest is the same */
    const char *w = strstr(want, "noise on stderr\n");
    assert_non_null(w);
    w += strlen("noise on stderr\n");
    if (strcmp(got, w) != 0)
        fail_msg("bash -lc gave\n%s\nthe snapshot gave\n%s", w, got);
    assert_int_equal(status, 7);
    free(env);
    free(got);
    free(noise);
    free(out);
    free(cmd);
    free(want);
    login_snapshot_free(ls);
}

/* ---- a real zsh ---- */

static const char *zsh;

/* The command line and environment login_snapshot_use makes of
 * `zsh -lc command` (the caller frees both). */
static void
zsh_login_call(const struct login_snapshot *ls, const struct login_snapshot_kind *k,
               const char *command, char ***argv, char ***env)
{
    *argv = calloc(4, sizeof(char *));
    *env = calloc(1, sizeof(char *));
    assert_non_null(*argv);
    assert_non_null(*env);
    (*argv)[0] = strdup(zsh);
    (*argv)[1] = strdup("-lc");
    (*argv)[2] = strdup(command);
    assert_int_equal(login_snapshot_use(ls, k, argv, env), 0);
}

/* What a login zsh sets up, looked at from every side (a child zsh shows
 * what is exported and that ZDOTDIR is the user's again). */
static char *
zsh_probe(void)
{
    char *p = NULL;
    assert_true(
        asprintf(&p,
                 "echo \"A=$A P=$path[1] PATH=${PATH%%%%:*} R=$RO N=$NOEXP ARR=$ARR[2] AS=$AS[k] "
                 "I=$I E=$ENVV L=$ZL\"; fn one; al; echo abc GG; x.snap; "
                 "[[ -o login ]] && echo login; setopt; umask; echo \"$0 $LINENO\"; "
                 "echo \"G=${SNAP_GONE-unset} U=$SNAP_UNEXP K=$SNAP_KEPT Z=${ZDOTDIR-unset} "
                 "S=${EXECGATE_LOGIN_SNAPSHOT-unset} RC=${RCVAR-unset}\"; "
                 "typeset -p RO I ARR AS NOEXP SNAP_UNEXP; alias -L; alias -sL; functions; "
                 "%s -c 'echo child A=$A U=${SNAP_UNEXP-unset} N=${NOEXP-unset} "
                 "Z=${ZDOTDIR-unset} E=$ENVV'; exit 7",
                 zsh) > 0);
    return p;
}

static void
test_capture_by_zsh(void **state)
{
    if (!zsh || access(zsh, X_OK) < 0)
        skip();
    setenv("SNAP_GONE", "inherited", 1);
    setenv("SNAP_UNEXP", "inherited-exported", 1);
    setenv("SNAP_KEPT", "it's inherited, unchanged", 1);
    unsetenv("ZDOTDIR");
    write_home(".zshenv", "export ENVV=from-zshenv\n");
    write_home(".zprofile", "echo noise on stderr >&2\n"
                            "export A='quoted \"one\" $x `y` \n two'\n"
                            "path=(/opt/snap/bin $path)\n"
                            "readonly RO=fixed\n"
                            "NOEXP=plain\n"
                            "typeset -a ARR=(a 'b c'); typeset -A AS=(k v)\n"
                            "typeset -i I=6*7\n"
                            "fn() { echo \"fn $1 ${#A}\"; }\n"
                            "alias al='echo alias ran'\n"
                            "alias -g GG='| tr a-z A-Z'\n"
                            "alias -s snap=fn\n"
                            "alias -- -='echo dash' q=\"echo it's\"; alias -g NL=$'\\n'\n"
                            "setopt noclobber extendedglob\n"
                            "unsetopt nomatch\n"
                            "umask 027\n"
                            "unset SNAP_GONE; typeset +x SNAP_UNEXP\n"
                            "TRAPZERR() { echo zerr-trap; }\n");
    write_home(".zlogin", "echo zlogin noise\nexport ZL=from-zlogin\n");
    write_home(".zshrc", "export RCVAR=interactive-only\n");
    char *probe = zsh_probe();
    const char *real[] = {zsh, "-lc", probe, NULL};
    int real_status = 0;
    char *want = run(real, NULL, &real_status);
    assert_int_equal(real_status, 7);
    assert_non_null(strstr(want, "noise on stderr\nzlogin noise\n"));

    const struct login_snapshot_kind *k = login_snapshot_kind_find("zsh");
    struct login_snapshot *ls = new_store();
    char *cmd = login_snapshot_begin(ls, k, "k", home, 1);
    assert_non_null(cmd);
    const char *cap[] = {zsh, "-lc", cmd, NULL};
    int status = 0;
    char *out = run(cap, NULL, &status);
    assert_int_equal(status, 0);
    char *noise = NULL, *why = NULL;
    if (login_snapshot_done(ls, true, out, strlen(out), &noise, &why) < 0)
        fail_msg("capture: %s\n%s", why, out);
    assert_non_null(strstr(noise, "noise on stderr"));
    int snap = -1;
    assert_int_equal(login_snapshot_get(ls, k, "k", home, 2, &snap), LOGIN_SNAPSHOT_READY);
    /* what the shell inherits unchanged is not set again */
    char *text = snapshot_text(snap);
    assert_null(strstr(text, "SNAP_KEPT"));
    assert_non_null(strstr(text, "SNAP_UNEXP"));
    assert_null(strstr(text, "\nzerr-trap\n")); /* the trap did not print into it */
    free(text);
    /* a login call: the command line and environment login_snapshot_use
     * makes */
    char **argv, **env;
    zsh_login_call(ls, k, probe, &argv, &env);
    snap_fd = snap;
    char *got = run((const char *const *)argv, env, &status);
    /* the profile's noise is not in it; the rest is the same */
    const char *w = strstr(want, "zlogin noise\n");
    w += strlen("zlogin noise\n");
    if (strcmp(got, w) != 0)
        fail_msg("zsh -lc gave\n%s\nthe snapshot gave\n%s", w, got);
    assert_int_equal(status, 7);
    /* a syntax error, exit and a trap in the command: as zsh -lc */
    free(argv[2]);
    argv[2] = strdup("trap 'echo bye' EXIT; echo $LINENO; false; if");
    got = (free(got), run((const char *const *)argv, env, &status));
    real[2] = argv[2];
    free(want);
    want = run(real, NULL, &real_status);
    w = strstr(want, "zlogin noise\n") + strlen("zlogin noise\n");
    snap_fd = -1;
    assert_string_equal(got, w);
    assert_int_equal(status, real_status);
    for (size_t i = 0; env[i]; i++)
        free(env[i]);
    free(env);
    for (size_t i = 0; argv[i]; i++)
        free(argv[i]);
    free(argv);
    free(got);
    free(noise);
    free(out);
    free(cmd);
    free(want);
    free(probe);
    char *dir = strdup(login_snapshot_dir(ls));
    login_snapshot_free(ls);
    assert_true(access(dir, F_OK) < 0); /* the private ZDOTDIR went too */
    free(dir);
}

/* What probe prints (and *status) in a login zsh that sources a snapshot
 * of the profile in home, captured now by the patched zsh. */
static char *
zsh_with_snapshot(const char *probe, int *status)
{
    const struct login_snapshot_kind *k = login_snapshot_kind_find("zsh");
    struct login_snapshot *ls = new_store();
    char *cmd = login_snapshot_begin(ls, k, "k", home, 1);
    assert_non_null(cmd);
    const char *cap[] = {zsh, "-lc", cmd, NULL};
    char *out = run(cap, NULL, status);
    assert_int_equal(*status, 0);
    char *noise = NULL, *why = NULL;
    if (login_snapshot_done(ls, true, out, strlen(out), &noise, &why) < 0)
        fail_msg("capture: %s\n%s", why, out);
    int snap = -1;
    assert_int_equal(login_snapshot_get(ls, k, "k", home, 2, &snap), LOGIN_SNAPSHOT_READY);
    char **argv, **env;
    zsh_login_call(ls, k, probe, &argv, &env);
    snap_fd = snap;
    char *got = run((const char *const *)argv, env, status);
    snap_fd = -1;
    strv_free(argv);
    strv_free(env);
    free(noise);
    free(out);
    free(cmd);
    login_snapshot_free(ls);
    return got;
}

/* A profile whose aliases (global ones on the capture's own words) and
 * options (ksh_arrays, sh_word_split, rc_quotes, err_exit, no_unset)
 * would change the capture's text if it were parsed with them. */
static void
test_capture_by_zsh_hostile(void **state)
{
    if (!zsh || access(zsh, X_OK) < 0)
        skip();
    unsetenv("ZDOTDIR");
    write_home(".zprofile", "export HV='a b' EMPTY=\n"
                            "typeset -a ARR=(x 'y z')\n"
                            "alias builtin=false for=false\n"
                            "alias -g builtin=false typeset=false print=false eval=false "
                            "'-L'=x '-a'=x alias=x do=x done=x\n"
                            "setopt ksh_arrays sh_word_split rc_quotes err_exit no_unset "
                            "no_glob posix_builtins\n");
    const char *probe = "echo \"$HV|$EMPTY|${ARR[1]}\"; \\setopt; \\alias -L; \\umask; \\echo done";
    const char *real[] = {zsh, "-lc", probe, NULL};
    int real_status = 0, status = 0;
    char *want = run(real, NULL, &real_status);
    char *got = zsh_with_snapshot(probe, &status);
    if (strcmp(got, want) != 0)
        fail_msg("zsh -lc gave\n%s\nthe snapshot gave\n%s", want, got);
    assert_int_equal(status, real_status);
    assert_non_null(strstr(got, "a b||y z\n"));
    free(want);
    free(got);
}

/* A store as a server leaves it on disk (name below root/store, with the
 * private ZDOTDIR's two files), an hour old when old. */
static char *
fake_store(const char *name, bool old)
{
    char *store = tmpdir_path(root, "store");
    char *dir = tmpdir_path(store, name);
    assert_int_equal(mkdir(dir, 0700), 0);
    tmpdir_make_dir(dir, "zsh");
    char *zdir = tmpdir_path(dir, "zsh");
    char *env = tmpdir_path(zdir, ".zshenv");
    char *login = tmpdir_path(zdir, ".zlogin");
    tmpdir_write_file(env, "builtin setopt no_global_rcs\n", 0600);
    tmpdir_write_file(login, "builtin . \"$EXECGATE_LOGIN_SNAPSHOT\"\n", 0600);
    if (old) {
        struct timespec t[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
        assert_int_equal(utimensat(AT_FDCWD, dir, t, 0), 0);
    }
    free(env);
    free(login);
    free(zdir);
    free(store);
    return dir;
}

static bool
exists(const char *dir, const char *rel)
{
    char *p = rel ? tmpdir_path(dir, rel) : strdup(dir);
    struct stat st;
    bool there = lstat(p, &st) == 0;
    free(p);
    return there;
}

/*
 * A new store removes what killed servers left: an old store whose lock
 * is free goes; one with a foreign file loses the server's files and
 * keeps the foreign one; one whose lock is held (its server lives) and a
 * young one (its server may be about to lock it) stay whole.
 */
static void
test_stale_stores(void **state)
{
    char *dead = fake_store("execgate-login-dead01", true);
    char *foreign = fake_store("execgate-login-frgn01", true);
    char *notes = tmpdir_path(foreign, "notes");
    tmpdir_write_file(notes, "not the server's\n", 0600);
    struct timespec t[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
    assert_int_equal(utimensat(AT_FDCWD, foreign, t, 0), 0);
    char *live = fake_store("execgate-login-live01", true);
    int lock = open(live, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(lock >= 0);
    assert_int_equal(flock(lock, LOCK_EX | LOCK_NB), 0);
    char *young = fake_store("execgate-login-yng001", false);

    struct login_snapshot *ls = new_store();
    assert_false(exists(dead, NULL));
    assert_true(exists(foreign, "notes"));
    assert_false(exists(foreign, "zsh"));
    assert_true(exists(live, "zsh/.zlogin"));
    assert_true(exists(young, "zsh/.zlogin"));
    /* the new store's own lock: a second store does not take it for stale */
    char *mine = strdup(login_snapshot_dir(ls));
    struct timespec old[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
    assert_int_equal(utimensat(AT_FDCWD, mine, old, 0), 0);
    struct login_snapshot *second = new_store();
    assert_true(exists(mine, NULL));
    login_snapshot_free(second);
    /* a foreign file in a store does not keep the clean end from removing
     * the rest (here, nothing else): it says so and goes on */
    char *stray = tmpdir_path(mine, "stray");
    tmpdir_write_file(stray, "x\n", 0600);
    login_snapshot_free(ls);
    assert_true(exists(mine, "stray"));
    close(lock);
    free(stray);
    free(mine);
    free(notes);
    free(dead);
    free(foreign);
    free(live);
    free(young);
}

int
main(void)
{
    bash = getenv("EXECGATE_TEST_BASH");
    zsh = getenv("EXECGATE_TEST_ZSH");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test_setup_teardown(test_startup_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zsh_startup_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_states, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capture_by_bash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capture_by_zsh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capture_by_zsh_hostile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_stores, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
