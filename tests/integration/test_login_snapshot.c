/*
 * Login snapshots through the real server, with a HOME of its own: a login
 * call sees what the profile sets up (a variable, PATH, a function, an
 * alias, an option) without its noise and without running it again; a
 * changed ~/.bashrc is seen by the next call; the profile runs under the
 * exec rules; a profile that exits or hangs still gives bash -lc's result; two policies get two
 * snapshots; the profile stays in the sandbox (its marker outside is never written, and nothing
 * lands in the workspace); the snapshot cannot be changed from the sandbox even when it lies in a
 * writable root; --no-login-snapshot runs the profile each time.  The server runs under ASan/LSan:
 * exit 0 means no leak, and its snapshot directory is gone when it has ended.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/server_suite.h"
#include "tests/support/test_user.h"
#include "tests/support/tmpdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

static const char *server_path;
/* EXECGATE_TEST_UNPRIVILEGED=1 (started as root): the servers run as the
 * test user, whose the world is */
static bool unprivileged;
static struct test_user user;

/* A server's command line: argv (NULL-terminated, at most 8 entries)
 * after the setpriv prefix when unprivileged.  Static storage. */
static const char *const *
server_argv(const char *const *argv)
{
    static const char *all[16];
    size_t n = 0;
    for (size_t i = 0; unprivileged && user.prefix[i]; i++)
        all[n++] = user.prefix[i];
    for (size_t i = 0; argv[i] && n < 15; i++)
        all[n++] = argv[i];
    all[n] = NULL;
    return all;
}

/* The world's directories become the test user's when unprivileged. */
static void
own_world(const char *const *dirs)
{
    for (size_t i = 0; unprivileged && dirs[i]; i++)
        assert_int_equal(lchown(dirs[i], user.uid, user.gid), 0);
}

/* One test's world: HOME, the workdir, a writable directory where the
 * profile counts its runs, and the server's XDG_RUNTIME_DIR (where it
 * keeps its snapshots). */
struct world {
    char *root, *home, *wd, *count, *run;
    struct mcp_client *c;
};

/* The world, with run (relative to root) as XDG_RUNTIME_DIR. */
static void
world_new(struct world *w, const char *run)
{
    w->root = tmpdir_new("login-snapshot");
    tmpdir_make_dir(w->root, "home");
    tmpdir_make_dir(w->root, "wd");
    tmpdir_make_dir(w->root, "count");
    tmpdir_make_dir(w->root, run);
    w->home = tmpdir_path(w->root, "home");
    w->wd = tmpdir_path(w->root, "wd");
    w->count = tmpdir_path(w->root, "count");
    w->run = tmpdir_path(w->root, run);
    w->c = NULL;
    const char *mine[] = {w->root, w->home, w->wd, w->count, w->run, NULL};
    own_world(mine);
}

static void
write_home(struct world *w, const char *rel, const char *text)
{
    char *p = tmpdir_path(w->home, rel);
    tmpdir_write_file(p, text, 0644);
    free(p);
}

/* The policy: workspace-write with only the workdir and the count
 * directory writable (no /tmp, no $TMPDIR: HOME lies in /tmp). */
static char *
workspace_policy(struct world *w)
{
    return mcp_world_fmt("{\"type\":\"workspace-write\",\"writable_roots\":[\"%s\"],"
                         "\"exclude_slash_tmp\":true,\"exclude_tmpdir_env_var\":true,"
                         "\"network_access\":false}",
                         w->count);
}

static void
set_policy(struct world *w, const char *policy_json)
{
    json_t *policy = json_loads(policy_json, 0, NULL);
    assert_non_null(policy);
    json_t *a =
        mcp_client_call(w->c, "codex/sandbox-state/update",
                        json_pack("{s:o, s:s}", "sandboxPolicy", policy, "sandboxCwd", w->wd));
    assert_non_null(json_object_get(a, "result"));
    json_decref(a);
}

/* Starts the server (argv: its arguments from server_path on) with HOME
 * of w, under the workspace policy. */
static void
world_launch(struct world *w, const char *const *argv)
{
    setenv("HOME", w->home, 1);
    w->c = mcp_client_start(server_argv(argv), NULL);
    json_t *init = mcp_client_initialize(w->c);
    assert_non_null(json_object_get(init, "result"));
    json_decref(init);
    char *p = workspace_policy(w);
    set_policy(w, p);
    free(p);
}

/* Starts the server (extra: one more argument or NULL, and two others) with
 * HOME and XDG_RUNTIME_DIR of w, under the workspace policy. */
static void
world_start3(struct world *w, const char *extra, const char *extra2, const char *extra3)
{
    setenv("XDG_RUNTIME_DIR", w->run, 1);
    const char *argv[] = {server_path, extra, extra2, extra3, NULL};
    world_launch(w, argv);
}

static void
world_start(struct world *w, const char *extra, const char *extra2)
{
    world_start3(w, extra, extra2, NULL);
}

/* A shell call (login: the default), its answer's structured content. */
static json_t *
shell(struct world *w, const char *command)
{
    json_t *a = mcp_client_call(w->c, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s}}", "name", "shell", "arguments",
                                          "command", command, "workdir", w->wd));
    json_t *sc = json_object_get(json_object_get(a, "result"), "structuredContent");
    if (!sc)
        fail_msg("not a result: %s", json_dumps(a, 0));
    json_incref(sc);
    json_decref(a);
    return sc;
}

static const char *
output(const json_t *sc)
{
    return json_string_value(json_object_get(sc, "output"));
}

static int
exit_code(const json_t *sc)
{
    return (int)json_integer_value(json_object_get(sc, "exit_code"));
}

/* How often the profile ran (one line each in count/runs). */
static int
profile_runs(struct world *w)
{
    char *p = tmpdir_path(w->count, "runs");
    size_t len = 0;
    char *text = tmpdir_read_file(p, &len);
    free(p);
    int n = 0;
    for (size_t i = 0; text && i < len; i++)
        n += text[i] == '\n';
    free(text);
    return n;
}

/* Entries of dir, "." and ".." aside; with suffix only those ending so. */
static int
entries(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (suffix && (l < strlen(suffix) || strcmp(e->d_name + l - strlen(suffix), suffix) != 0))
            continue;
        n++;
    }
    closedir(d);
    return n;
}

/* Entries of the workspace dir but the placeholder .codex the session
 * keeps until it ends (docs/sandbox.md): a directory of mode 01700. */
static int
workspace_entries(const char *dir)
{
    char *codex = mcp_world_fmt("%s/.codex", dir);
    struct stat st;
    bool placeholder =
        lstat(codex, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 01700;
    free(codex);
    int n = entries(dir, NULL);
    return placeholder && n > 0 ? n - 1 : n;
}

/* The server's snapshot directory (in run), or NULL. */
static char *
snapshot_dir(struct world *w)
{
    DIR *d = opendir(w->run);
    assert_non_null(d);
    char *found = NULL;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "execgate-login-", 15) == 0)
            found = tmpdir_path(w->run, e->d_name);
    }
    closedir(d);
    return found;
}

/* Ends the server (exit 0: no leak) and asserts its snapshots are gone. */
static void
world_stop(struct world *w)
{
    mcp_client_close_stdin(w->c);
    int status = mcp_client_wait_exit(w->c, MCP_CLIENT_WAIT_MS);
    assert_int_not_equal(status, -1);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    mcp_client_free(w->c);
    w->c = NULL;
    char *left = snapshot_dir(w);
    if (left)
        fail_msg("%s is left after the server ended", left);
}

static void
world_end(struct world *w)
{
    if (w->c)
        world_stop(w);
    tmpdir_remove(w->root);
    free(w->root);
    free(w->home);
    free(w->wd);
    free(w->count);
    free(w->run);
}

/* The profile of the tests: ~/.profile sources ~/.bashrc, which sets
 * things up, is noisy, takes about 100 ms, counts its runs and tries to
 * write outside the sandbox. */
static void
write_profile(struct world *w, const char *value)
{
    write_home(w, ".profile", "if [ -f \"$HOME/.bashrc\" ]; then . \"$HOME/.bashrc\"; fi\n");
    char *rc = mcp_world_fmt("echo run >> %s/runs\n"
                             "export SNAP_VAR=%s\n"
                             "PATH=\"$HOME/snapbin:$PATH\"\n"
                             "snapfn() { echo \"fn:$1\"; }\n"
                             "alias snapal='echo alias-ran'\n"
                             "shopt -s expand_aliases\n"
                             "set -o noclobber\n"
                             "echo noise-on-stderr >&2\n"
                             "echo noise-on-stdout\n"
                             "sleep 0.1\n"
                             "echo escaped > \"$HOME/marker\"\n",
                             w->count, value);
    write_home(w, ".bashrc", rc);
    free(rc);
}

#define PROBE                                                                                      \
    "echo \"$SNAP_VAR|${PATH%%:*}\"; snapfn a; snapal; case $- in *C*) echo noclobber;; esac"

/* Runs an attack script in a call: it prints a word for each step that
 * worked, and none may appear. */
static void
attack_fails(struct world *w, const char *attack)
{
    static const char *const worked[] = {"APPENDED", "REMOVED", "CREATED", "MOVED", "CHMOD"};
    json_t *sc = shell(w, attack);
    for (size_t i = 0; i < sizeof(worked) / sizeof(worked[0]); i++) {
        if (strstr(output(sc), worked[i]) != NULL)
            fail_msg("the sandbox could do this to the snapshot: %s", worked[i]);
    }
    json_decref(sc);
}

/* A call sees SNAP_VAR (as the login profile set it) print want. */
static void
assert_snap_var(struct world *w, const char *want)
{
    json_t *sc = shell(w, "echo $SNAP_VAR");
    assert_string_equal(output(sc), want);
    json_decref(sc);
}

static void
test_profile_once(void **state)
{
    struct world w;
    world_new(&w, "run");
    write_profile(&w, "one");
    world_start(&w, NULL, NULL);
    char *want = mcp_world_fmt("one|%s/snapbin\nfn:a\nalias-ran\nnoclobber\n", w.home);
    for (int i = 0; i < 3; i++) {
        json_t *sc = shell(&w, PROBE);
        assert_string_equal(output(sc), want);
        assert_int_equal(exit_code(sc), 0);
        json_decref(sc);
    }
    /* the profile ran once, at capture, in the sandbox */
    assert_int_equal(profile_runs(&w), 1);
    char *marker = tmpdir_path(w.home, "marker");
    assert_true(access(marker, F_OK) < 0);
    free(marker);
    /* a login shell still: $0, login_shell, the exit status */
    json_t *sc =
        shell(&w, "shopt -q login_shell && echo login; echo \"$0\" | grep -c bash; exit 7");
    assert_string_equal(output(sc), "login\n1\n");
    assert_int_equal(exit_code(sc), 7);
    json_decref(sc);
    /* the capture left nothing in the workspace (the session keeps its
     * placeholder .codex) */
    assert_int_equal(workspace_entries(w.wd), 0);
    free(want);

    /* ~/.bashrc changes: the next call sees it */
    write_profile(&w, "two-and-longer");
    assert_snap_var(&w, "two-and-longer\n");
    assert_int_equal(profile_runs(&w), 2);
    /* login false: no profile at all */
    json_t *a =
        mcp_client_call(w.c, "tools/call",
                        json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                  "command", "echo \"[$SNAP_VAR]\"", "workdir", w.wd, "login", 0));
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(a, "result"), "structuredContent"), "output")),
        "[]\n");
    json_decref(a);
    world_end(&w);
}

static void
test_no_login_snapshot(void **state)
{
    struct world w;
    world_new(&w, "run");
    write_profile(&w, "one");
    world_start(&w, "--no-login-snapshot", NULL);
    for (int i = 0; i < 2; i++) {
        json_t *sc = shell(&w, "echo $SNAP_VAR");
        /* bash -lc: the profile's noise (and its refused write) every time */
        assert_non_null(strstr(output(sc), "noise-on-stderr\n"));
        assert_non_null(strstr(output(sc), "noise-on-stdout\n"));
        assert_non_null(strstr(output(sc), "one\n"));
        json_decref(sc);
    }
    assert_int_equal(profile_runs(&w), 2);
    assert_null(snapshot_dir(&w));
    world_end(&w);
}

/* The zsh profile of the tests: every startup file sets something up
 * (~/.zshrc is an interactive shell's: zsh -lc does not read it);
 * ~/.zprofile is noisy, takes about 100 ms, counts its runs and tries to
 * write outside the sandbox. */
static void
write_zsh_profile(struct world *w, const char *value)
{
    write_home(w, ".zshenv", "export ZENV=from-zshenv\n");
    char *p = mcp_world_fmt("echo run >> %s/runs\n"
                            "export SNAP_VAR=%s\n"
                            "path=(\"$HOME/snapbin\" $path)\n"
                            "snapfn() { echo \"fn:$1\"; }\n"
                            "alias snapal='echo alias-ran'\n"
                            "alias -g SNAPG='| tr a-z A-Z'\n"
                            "setopt noclobber\n"
                            "echo noise-on-stderr >&2\n"
                            "echo noise-on-stdout\n"
                            "sleep 0.1\n"
                            "echo escaped > \"$HOME/marker\"\n",
                            w->count, value);
    write_home(w, ".zprofile", p);
    free(p);
    write_home(w, ".zlogin",
               "export ZLOGIN_VAR=from-zlogin\nalias -s snapx=snapfn\necho zlogin-noise\n");
    write_home(w, ".zshrc", "export RCVAR=from-zshrc\necho zshrc-noise\n");
}

#define ZSH_PROBE                                                                                  \
    "echo \"$SNAP_VAR|$path[1]|${PATH%%:*}|$ZENV|$ZLOGIN_VAR|${RCVAR-unset}\"; snapfn a; snapal; " \
    "echo abc SNAPG; f.snapx; [[ -o noclobber ]] && echo noclobber"

/* --shell zsh: the same as with Bash, the profile run once */
static void
test_zsh_profile_once(void **state)
{
    struct world w;
    world_new(&w, "run");
    write_zsh_profile(&w, "one");
    world_start(&w, "--shell", "zsh");
    char *want = mcp_world_fmt("one|%s/snapbin|%s/snapbin|from-zshenv|from-zlogin|unset\n"
                               "fn:a\nalias-ran\nABC\nfn:f.snapx\nnoclobber\n",
                               w.home, w.home);
    for (int i = 0; i < 3; i++) {
        json_t *sc = shell(&w, ZSH_PROBE);
        assert_string_equal(output(sc), want);
        assert_int_equal(exit_code(sc), 0);
        json_decref(sc);
    }
    /* the profile ran once, at capture, in the sandbox */
    assert_int_equal(profile_runs(&w), 1);
    char *marker = tmpdir_path(w.home, "marker");
    assert_true(access(marker, F_OK) < 0);
    free(marker);
    /* a login shell still: $0, the login option, the exit status */
    json_t *sc = shell(&w, "[[ -o login ]] && echo login; echo \"$0\" | grep -c zsh; exit 7");
    assert_string_equal(output(sc), "login\n1\n");
    assert_int_equal(exit_code(sc), 7);
    json_decref(sc);
    /* the capture left nothing in the workspace (the session keeps its
     * placeholder .codex) */
    assert_int_equal(workspace_entries(w.wd), 0);
    free(want);

    /* ~/.zprofile changes: the next call sees it */
    write_zsh_profile(&w, "two-and-longer");
    assert_snap_var(&w, "two-and-longer\n");
    assert_int_equal(profile_runs(&w), 2);
    /* login false: zsh -c, ~/.zshenv alone */
    json_t *a = mcp_client_call(w.c, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                          "command", "echo \"[$SNAP_VAR|$ZENV]\"", "workdir", w.wd,
                                          "login", 0));
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(a, "result"), "structuredContent"), "output")),
        "[|from-zshenv]\n");
    json_decref(a);
    world_end(&w);
}

/* --shell zsh --no-login-snapshot: zsh -lc, the profile each time */
static void
test_zsh_no_login_snapshot(void **state)
{
    struct world w;
    world_new(&w, "run");
    write_zsh_profile(&w, "one");
    world_start3(&w, "--shell", "zsh", "--no-login-snapshot");
    for (int i = 0; i < 2; i++) {
        json_t *sc = shell(&w, "echo $SNAP_VAR");
        assert_non_null(strstr(output(sc), "noise-on-stdout\n"));
        assert_non_null(strstr(output(sc), "zlogin-noise\n"));
        assert_non_null(strstr(output(sc), "one\n"));
        json_decref(sc);
    }
    assert_int_equal(profile_runs(&w), 2);
    assert_null(snapshot_dir(&w));
    world_end(&w);
}

/* zsh: a profile that exits gives what zsh -lc gives, each time, with
 * no capture per call; once it is fixed, snapshots again.  One that hangs
 * is killed at the timeout, and the call runs a real zsh -lc. */
static void
test_zsh_profile_fails(void **state)
{
    struct world w;
    world_new(&w, "run");
    char *p = mcp_world_fmt("echo run >> %s/runs\necho before-exit\nexit 3\n", w.count);
    write_home(&w, ".zprofile", p);
    free(p);
    world_start3(&w, "--shell", "zsh", "--login-snapshot-timeout-ms=300");
    for (int i = 0; i < 2; i++) {
        json_t *sc = shell(&w, "echo hi");
        assert_string_equal(output(sc), "before-exit\n");
        assert_int_equal(exit_code(sc), 3);
        json_decref(sc);
    }
    assert_int_equal(profile_runs(&w), 3);
    p = mcp_world_fmt("echo run >> %s/runs\n"
                      "if mkdir %s/once 2>/dev/null; then sleep 600; fi\nexport FIXED=yes\n",
                      w.count, w.count);
    write_home(&w, ".zprofile", p);
    free(p);
    /* the capture hangs and is killed: a real zsh -lc */
    json_t *sc = shell(&w, "echo $FIXED");
    assert_string_equal(output(sc), "yes\n");
    json_decref(sc);
    assert_int_equal(profile_runs(&w), 5);
    /* fixed (it no longer hangs): snapshots again, the profile runs once more */
    p = mcp_world_fmt("echo run >> %s/runs\nexport FIXED=again\n", w.count);
    write_home(&w, ".zprofile", p);
    free(p);
    for (int i = 0; i < 2; i++) {
        sc = shell(&w, "echo $FIXED");
        assert_string_equal(output(sc), "again\n");
        json_decref(sc);
    }
    assert_int_equal(profile_runs(&w), 6);
    world_end(&w);
}

/* Through the network proxy each call has a proxy of its own, on a port
 * of its own, named by the proxy variables the sandbox sets: a login call
 * has its own, not those of the capture's call (a connection to the port
 * they name is taken; to the capture's, long closed, it would be refused). */
static void
proxy_vars_win(const char *shell_name, const char *probe)
{
    struct world w;
    world_new(&w, "run");
    write_home(&w, shell_name[0] == 'z' ? ".zprofile" : ".profile", "export PROFILE_RAN=yes\n");
    world_start3(&w, "--shell", shell_name, "--network-proxy=on");
    for (int i = 0; i < 2; i++) {
        json_t *sc = shell(&w, probe);
        assert_string_equal(output(sc), "yes open\n");
        json_decref(sc);
    }
    world_end(&w);
}

static void
test_proxy_vars_win_bash(void **state)
{
    proxy_vars_win("bash",
                   "p=${HTTP_PROXY##*:}; if (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; "
                   "then echo \"$PROFILE_RAN open\"; else echo \"$PROFILE_RAN $p closed\"; fi");
}

static void
test_proxy_vars_win_zsh(void **state)
{
    proxy_vars_win("zsh", "zmodload zsh/net/tcp; p=${HTTP_PROXY##*:}; if ztcp 127.0.0.1 $p "
                          "2>/dev/null; then ztcp -c; echo \"$PROFILE_RAN open\"; "
                          "else echo \"$PROFILE_RAN $p closed\"; fi");
}

/* The capture runs under the exec rules: a program they forbid is refused
 * to the profile, and the snapshot holds what the profile did about it. */
static void
test_profile_under_rules(void **state)
{
    struct world w;
    world_new(&w, "run");
    tmpdir_make_dir(w.root, "rules");
    char *rules = tmpdir_path(w.root, "rules");
    char *file = tmpdir_path(rules, "test.rules");
    tmpdir_write_file(file, "prefix_rule(pattern=[\"touch\"], decision=\"forbidden\")\n", 0644);
    char *p = mcp_world_fmt(
        "if touch %s/touched; then export TOUCHED=yes; else export TOUCHED=no; fi\n", w.count);
    write_home(&w, ".profile", p);
    free(p);
    world_start(&w, "--rules", rules);
    for (int i = 0; i < 2; i++) {
        json_t *sc = shell(&w, "echo $TOUCHED");
        assert_string_equal(output(sc), "no\n");
        json_decref(sc);
    }
    char *touched = tmpdir_path(w.count, "touched");
    assert_true(access(touched, F_OK) < 0);
    free(touched);
    free(file);
    free(rules);
    world_end(&w);
}

/* A profile that exits: the call gives what bash -lc gives, each time;
 * once the profile is fixed, snapshots again. */
static void
test_profile_exits(void **state)
{
    struct world w;
    world_new(&w, "run");
    char *p = mcp_world_fmt("echo run >> %s/runs\necho before-exit\nexit 3\n", w.count);
    write_home(&w, ".profile", p);
    free(p);
    world_start(&w, NULL, NULL);
    for (int i = 0; i < 2; i++) {
        json_t *sc = shell(&w, "echo hi");
        assert_string_equal(output(sc), "before-exit\n");
        assert_int_equal(exit_code(sc), 3);
        json_decref(sc);
    }
    /* a capture and two real login shells: no capture again while the
     * profile stays as it is */
    assert_int_equal(profile_runs(&w), 3);
    p = mcp_world_fmt("echo run >> %s/runs\nexport FIXED=yes\n", w.count);
    write_home(&w, ".profile", p);
    free(p);
    for (int i = 0; i < 2; i++) {
        json_t *sc = shell(&w, "echo $FIXED");
        assert_string_equal(output(sc), "yes\n");
        json_decref(sc);
    }
    assert_int_equal(profile_runs(&w), 4);
    world_end(&w);
}

/* A profile that hangs the first time: the capture is killed at its
 * timeout and the call runs a real login shell (which does not hang). */
static void
test_profile_hangs(void **state)
{
    struct world w;
    world_new(&w, "run");
    char *p = mcp_world_fmt("if mkdir %s/once 2>/dev/null; then sleep 600; fi\nexport AFTER=yes\n",
                            w.count);
    write_home(&w, ".profile", p);
    free(p);
    world_start(&w, "--login-snapshot-timeout-ms", "300");
    json_t *sc = shell(&w, "echo $AFTER");
    assert_string_equal(output(sc), "yes\n");
    assert_int_equal(exit_code(sc), 0);
    json_decref(sc);
    world_end(&w);
}

/* Two policies, two snapshots, each under its own sandbox. */
static void
test_two_policies(void **state)
{
    struct world w;
    world_new(&w, "run");
    write_profile(&w, "one");
    world_start(&w, NULL, NULL);
    json_t *sc = shell(&w, "echo $SNAP_VAR; echo x > in-workspace && echo wrote");
    assert_string_equal(output(sc), "one\nwrote\n");
    json_decref(sc);
    set_policy(&w, "{\"type\":\"read-only\"}");
    sc = shell(&w, "echo $SNAP_VAR; echo x > in-workspace-2 && echo wrote");
    assert_non_null(strstr(output(sc), "one\n"));
    assert_null(strstr(output(sc), "wrote"));
    assert_null(strstr(output(sc), "noise"));
    json_decref(sc);
    /* read-only: the capture's own profile run could not count itself */
    assert_int_equal(profile_runs(&w), 1);
    /* the first policy's snapshot is still kept beside the second */
    char *p = workspace_policy(&w);
    set_policy(&w, p);
    free(p);
    assert_snap_var(&w, "one\n");
    assert_int_equal(profile_runs(&w), 1);
    world_end(&w);
}

/* The snapshot lies in the workspace (XDG_RUNTIME_DIR below the workdir):
 * a command can neither change it nor put a file beside it, nor move
 * the directory away and make another in its place. */
static void
test_snapshot_protected(void **state)
{
    struct world w;
    world_new(&w, "wd/run");
    write_profile(&w, "one");
    world_start(&w, NULL, NULL);
    assert_snap_var(&w, "one\n");
    char *dir = snapshot_dir(&w);
    assert_non_null(dir);
    char *attack = mcp_world_fmt(
        "d=%s; for f in $d/*.sh; do echo 'export SNAP_VAR=forged' >> $f && echo APPENDED; "
        "rm -f $f && echo REMOVED; done; echo 'export SNAP_VAR=forged' > $d/new.sh && echo "
        "CREATED; mv $d $d.moved && echo MOVED; chmod 777 $d && echo CHMOD; true",
        dir);
    attack_fails(&w, attack);
    assert_snap_var(&w, "one\n");
    assert_int_equal(entries(dir, NULL), 0); /* the snapshot is no file */
    free(attack);
    free(dir);
    world_end(&w);
}

/* zsh: the snapshot and the private ZDOTDIR beside it lie in the
 * workspace; a command can change neither, nor add the .zprofile every
 * later login call would read, nor move the directory away. */
static void
test_zsh_snapshot_protected(void **state)
{
    struct world w;
    world_new(&w, "wd/run");
    write_zsh_profile(&w, "one");
    world_start(&w, "--shell", "zsh");
    assert_snap_var(&w, "one\n");
    char *dir = snapshot_dir(&w);
    assert_non_null(dir);
    char *zdot = tmpdir_path(dir, "zsh");
    assert_int_equal(entries(zdot, NULL), 2);
    char *attack = mcp_world_fmt(
        "d=%s; for f in $d/*.sh $d/zsh/.zshenv $d/zsh/.zlogin; do "
        "echo 'export SNAP_VAR=forged' >> $f && echo APPENDED; rm -f $f && echo REMOVED; done; "
        "echo 'export SNAP_VAR=forged' > $d/zsh/.zprofile && echo CREATED; "
        "mv $d/zsh $d/zsh.moved && echo MOVED; chmod 777 $d/zsh && echo CHMOD; true",
        dir);
    attack_fails(&w, attack);
    assert_snap_var(&w, "one\n");
    assert_int_equal(entries(zdot, NULL), 2);
    assert_int_equal(profile_runs(&w), 1);
    free(attack);
    free(zdot);
    free(dir);
    world_end(&w);
}

/* A second server of the same user (running Bash), started as w's was
 * (same HOME and environment) but with its own workspace-write policy
 * whose writable roots are tmp (its $TMPDIR) and its workdir: another
 * editor window. */
static struct mcp_client *
other_server(const char *tmp, const char *also)
{
    const char *argv[] = {server_path, NULL};
    struct mcp_client *c = mcp_client_start(server_argv(argv), NULL);
    json_t *init = mcp_client_initialize(c);
    assert_non_null(json_object_get(init, "result"));
    json_decref(init);
    char *policy = mcp_world_fmt("{\"type\":\"workspace-write\",\"writable_roots\":[\"%s\"%s%s%s],"
                                 "\"exclude_slash_tmp\":true,\"exclude_tmpdir_env_var\":false,"
                                 "\"network_access\":false}",
                                 tmp, also ? ",\"" : "", also ? also : "", also ? "\"" : "");
    json_t *a = mcp_client_call(
        c, "codex/sandbox-state/update",
        json_pack("{s:o, s:s}", "sandboxPolicy", json_loads(policy, 0, NULL), "sandboxCwd", tmp));
    assert_non_null(json_object_get(a, "result"));
    json_decref(a);
    free(policy);
    return c;
}

static void
other_server_end(struct mcp_client *c)
{
    mcp_client_close_stdin(c);
    int status = mcp_client_wait_exit(c, MCP_CLIENT_WAIT_MS);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    mcp_client_free(c);
}

/* Runs command (not a login call) in tmp through another server (as
 * other_server makes it), ends that server, and returns the command's
 * output (malloc'd). */
static char *
other_server_run(const char *tmp, const char *also, const char *command)
{
    struct mcp_client *other = other_server(tmp, also);
    json_t *a = mcp_client_call(other, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                          "command", command, "workdir", tmp, "login", 0));
    const char *out = json_string_value(json_object_get(
        json_object_get(json_object_get(a, "result"), "structuredContent"), "output"));
    assert_non_null(out);
    char *copy = strdup(out);
    assert_non_null(copy);
    json_decref(a);
    other_server_end(other);
    return copy;
}

/* Gives w a $TMPDIR of its own, root/tmp (returned, malloc'd), and no
 * XDG_STATE_HOME, so that the state directory is HOME's. */
static char *
world_tmpdir(struct world *w)
{
    tmpdir_make_dir(w->root, "tmp");
    char *tmp = tmpdir_path(w->root, "tmp");
    const char *mine[] = {tmp, NULL};
    own_world(mine);
    setenv("TMPDIR", tmp, 1);
    unsetenv("XDG_STATE_HOME");
    return tmp;
}

/* A world with a $TMPDIR of its own (world_tmpdir: returned) and the
 * profile ("one") of shell_name (NULL: Bash, the default); its server
 * (with --shell shell_name unless NULL) started without XDG_RUNTIME_DIR,
 * and a login call seen to get what the profile set. */
static char *
world_start_no_runtime_dir(struct world *w, const char *shell_name)
{
    world_new(w, "run");
    char *tmp = world_tmpdir(w);
    if (shell_name && strcmp(shell_name, "zsh") == 0)
        write_zsh_profile(w, "one");
    else
        write_profile(w, "one");
    unsetenv("XDG_RUNTIME_DIR");
    const char *argv[] = {server_path, shell_name ? "--shell" : NULL, shell_name, NULL};
    world_launch(w, argv);
    assert_snap_var(w, "one\n");
    return tmp;
}

/* The next login call sees what the capture produced, and the profile
 * did not run again. */
static void
assert_capture_kept(struct world *w)
{
    assert_snap_var(w, "one\n");
    assert_int_equal(profile_runs(w), 1);
}

/* Ends w and what world_tmpdir gave it. */
static void
world_end_tmpdir(struct world *w, char *tmp)
{
    world_end(w);
    unsetenv("TMPDIR");
    free(tmp);
}

/*
 * Without XDG_RUNTIME_DIR, a second server of the same user whose
 * sandbox may write its $TMPDIR (the default) appends to every file of
 * this server's snapshot store it can find there, and at the new place
 * (the state directory); this server's next login call sources exactly
 * what its capture produced all the same.
 */
static void
poisoned_by_other_server(const char *shell_name)
{
    struct world w;
    char *tmp = world_start_no_runtime_dir(&w, shell_name);
    char *attack = mcp_world_fmt(
        "for f in %s/execgate-login-*/* %s/execgate-login-*/zsh/.z* "
        "%s/.local/state/execgate/execgate-login-*/* "
        "%s/.local/state/execgate/execgate-login-*/zsh/.z*; do "
        "[ -f \"$f\" ] && echo 'export SNAP_VAR=forged' >> \"$f\" && echo \"APPENDED $f\"; done; "
        "true",
        tmp, tmp, w.home, w.home);
    char *out = other_server_run(tmp, NULL, attack);
    if (strstr(out, "APPENDED"))
        fail_msg("another server's sandbox changed this server's snapshot store: %s", out);
    free(out);
    free(attack);
    assert_capture_kept(&w);
    world_end_tmpdir(&w, tmp);
}

static void
test_poisoned_by_other_server(void **state)
{
    poisoned_by_other_server("bash");
}

static void
test_zsh_poisoned_by_other_server(void **state)
{
    poisoned_by_other_server("zsh");
}

/*
 * The same, with the other server's sandbox able to write HOME (so the
 * store's directory too): it puts snapshot-like files there, and this
 * server's next Bash login call still sources what its capture produced
 * (the snapshot is a sealed memfd, never a file).
 */
static void
test_store_writable_by_other_server(void **state)
{
    struct world w;
    char *tmp = world_start_no_runtime_dir(&w, NULL);
    char *attack = mcp_world_fmt(
        "n=0; for d in %s/.local/state/execgate/execgate-login-*; do "
        /* its own server's store is read-only to it */
        "[ -w \"$d\" ] || continue; for f in 1 2 3 4 5 6 7 8 9; "
        "do echo 'export SNAP_VAR=forged' > \"$d/$f.sh\" && n=$((n+1)); done; "
        "mkdir -p \"$d/zsh\"; echo 'export SNAP_VAR=forged' > \"$d/zsh/.zlogin\"; done; "
        "echo \"wrote $n\"",
        w.home);
    char *out = other_server_run(tmp, w.home, attack);
    assert_string_equal(out, "wrote 9\n"); /* the other sandbox could write there */
    free(out);
    free(attack);
    assert_capture_kept(&w);
    world_end_tmpdir(&w, tmp);
}

/* Mode of path's permission bits, or -1. */
static int
mode_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/*
 * Where the store goes: never $TMPDIR; without XDG_RUNTIME_DIR (or with
 * one others may write in) the state directory, ~/.local/state/execgate,
 * made private; the store's own directory is 0700.  The sealed snapshot is
 * not inherited by what the command runs.
 */
static void
test_store_location(void **state)
{
    struct world w;
    world_new(&w, "run");
    char *tmp = world_tmpdir(&w);
    write_profile(&w, "one");
    /* an XDG_RUNTIME_DIR anyone may write in is not used */
    assert_int_equal(chmod(w.run, 0777), 0);
    world_start(&w, NULL, NULL);
    json_t *sc = shell(&w, "echo $SNAP_VAR; [ -e /proc/$$/fd/7 ] && echo fd-7-open; true");
    assert_string_equal(output(sc), "one\n");
    json_decref(sc);
    assert_int_equal(entries(tmp, NULL), 0);
    assert_int_equal(entries(w.run, NULL), 0);
    char *state_dir = tmpdir_path(w.home, ".local/state/execgate");
    assert_int_equal(mode_of(state_dir), 0700);
    DIR *d = opendir(state_dir);
    assert_non_null(d);
    char *store = NULL;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "execgate-login-", 15) == 0)
            store = tmpdir_path(state_dir, e->d_name);
    }
    closedir(d);
    assert_non_null(store);
    assert_int_equal(mode_of(store), 0700);
    /* no snapshot is a file anyone could write */
    assert_int_equal(entries(store, ".sh"), 0);
    world_stop(&w);
    assert_true(access(store, F_OK) < 0);
    world_end_tmpdir(&w, tmp);
    free(store);
    free(state_dir);
}

/* Whether a file below dir (any depth) holds needle. */
static bool
tree_holds(const char *dir, const char *needle)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *p = tmpdir_path(dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            found = tree_holds(p, needle);
        } else if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            size_t len = 0;
            char *text = tmpdir_read_file(p, &len);
            found = text && memmem(text, len, needle, strlen(needle)) != NULL;
            free(text);
        }
        free(p);
    }
    closedir(d);
    return found;
}

/*
 * A server killed with SIGKILL after a login snapshot was taken leaves no
 * copy of the login environment on disk (the snapshots are memfds): not
 * in its XDG_RUNTIME_DIR, not in HOME; and the next server removes the
 * store directory it left, once that is old enough.  For Bash and for zsh
 * (whose store holds a private ZDOTDIR).
 */
static void
sigkill_leaves_nothing(const char *shell_name)
{
    struct world w;
    world_new(&w, "run");
    static const char secret[] = "s3cr3t-from-the-profile";
    bool zsh = strcmp(shell_name, "zsh") == 0;
    if (zsh) {
        write_zsh_profile(&w, secret);
        world_start(&w, "--shell", "zsh");
    } else {
        write_profile(&w, secret);
        world_start(&w, NULL, NULL);
    }
    json_t *sc = shell(&w, "echo $SNAP_VAR");
    assert_string_equal(output(sc), "s3cr3t-from-the-profile\n");
    json_decref(sc);
    assert_int_equal(profile_runs(&w), 1);
    pid_t pid = mcp_client_pid(w.c);
    assert_int_equal(kill(pid, SIGKILL), 0);
    mcp_client_wait_exit(w.c, MCP_CLIENT_WAIT_MS);
    mcp_client_free(w.c);
    w.c = NULL;
    if (tree_holds(w.run, secret))
        fail_msg("the login environment is on disk in %s after a SIGKILL", w.run);
    /* the profile itself is in HOME: only what the server wrote counts */
    char *left = snapshot_dir(&w);
    if (left) {
        /* an hour old: the next server takes it for a killed server's */
        struct timespec t[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
        assert_int_equal(utimensat(AT_FDCWD, left, t, 0), 0);
        if (zsh)
            world_start(&w, "--shell", "zsh");
        else
            world_start(&w, NULL, NULL);
        assert_true(access(left, F_OK) < 0);
        world_stop(&w);
        free(left);
    }
    world_end(&w);
}

static void
test_sigkill_leaves_nothing(void **state)
{
    sigkill_leaves_nothing("bash");
}

static void
test_zsh_sigkill_leaves_nothing(void **state)
{
    sigkill_leaves_nothing("zsh");
}

int
main(void)
{
    int rc = server_suite_begin(&server_path, &unprivileged, &user);
    if (rc != 0)
        return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_once),
        cmocka_unit_test(test_profile_under_rules),
        cmocka_unit_test(test_no_login_snapshot),
        cmocka_unit_test(test_zsh_profile_once),
        cmocka_unit_test(test_sigkill_leaves_nothing),
        cmocka_unit_test(test_zsh_sigkill_leaves_nothing),
        cmocka_unit_test(test_zsh_no_login_snapshot),
        cmocka_unit_test(test_proxy_vars_win_bash),
        cmocka_unit_test(test_proxy_vars_win_zsh),
        cmocka_unit_test(test_profile_exits),
        cmocka_unit_test(test_profile_hangs),
        cmocka_unit_test(test_two_policies),
        cmocka_unit_test(test_snapshot_protected),
        cmocka_unit_test(test_zsh_snapshot_protected),
        cmocka_unit_test(test_zsh_profile_fails),
        cmocka_unit_test(test_poisoned_by_other_server),
        cmocka_unit_test(test_zsh_poisoned_by_other_server),
        cmocka_unit_test(test_store_location),
        cmocka_unit_test(test_store_writable_by_other_server),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (unprivileged)
        test_user_release(&user);
    return failed;
}
