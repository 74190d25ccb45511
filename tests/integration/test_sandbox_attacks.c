/*
 * Attacks on execgate-sandbox, each shown to fail under read-only and
 * workspace-write, and what must keep working inside.
 *
 * Run as the invoking user; with EXECGATE_TEST_UNPRIVILEGED=1 and started
 * as root, the suite first creates an unprivileged user (useradd) and runs
 * every sandboxed command as that user through setpriv.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <sched.h>
#include <unistd.h>

#include "tests/support/sandbox_harness.h"
#include "tests/support/proc.h"
#include "tests/support/test_user.h"
#include "tests/support/tmpdir.h"

static struct {
    const char *attack; /* the attack program */
    char *ws;           /* the workspace: a git repository */
    char *out;          /* a directory outside every writable root */
    char *victim;       /* out/victim, a file the attacks try to change */
    pid_t victim_pid;   /* a process outside, with its cwd in out */
    int tcp, udp, abstract;
    char tcp_port[8], udp_port[8];
    char abstract_name[64];
    char *ro, *ws_write, *ws_write_notmp; /* policies */
    bool unprivileged;
    struct test_user user; /* the sandboxed commands' user, when unprivileged */
} g;

static void
must(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "setup: %s: %s\n", what, strerror(errno));
        abort();
    }
}

/* Runs argv (as the test user when unprivileged) outside any sandbox and
 * asserts it exits 0. */
static void
run_ok(const char *const *argv, const char *cwd)
{
    struct proc_result res;
    struct proc_options opts = {.cwd = cwd};
    assert_int_equal(proc_run(argv, &opts, &res), 0);
    if (proc_exit_code(&res) != 0)
        fail_msg("%s failed: %s", argv[0], res.err);
    proc_result_free(&res);
}

static int
listen_inet(int type, char *port, size_t len)
{
    int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    must(fd >= 0, "socket");
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    must(bind(fd, (struct sockaddr *)&a, sizeof a) == 0, "bind");
    if (type == SOCK_STREAM)
        must(listen(fd, 8) == 0, "listen");
    socklen_t alen = sizeof a;
    must(getsockname(fd, (struct sockaddr *)&a, &alen) == 0, "getsockname");
    snprintf(port, len, "%u", ntohs(a.sin_port));
    return fd;
}

static int
listen_abstract(const char *name)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    must(fd >= 0, "socket");
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path + 1, name, strlen(name));
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
    must(bind(fd, (struct sockaddr *)&a, len) == 0, "bind abstract");
    must(listen(fd, 8) == 0, "listen");
    return fd;
}

/* A process outside the sandbox (as the test user when unprivileged, so
 * that only the sandbox stands in the way), cwd in out. */
static pid_t
spawn_victim(void)
{
    pid_t pid = fork();
    must(pid >= 0, "fork");
    if (pid == 0) {
        if (chdir(g.out) != 0)
            _exit(126);
        if (g.unprivileged &&
            (setgroups(0, NULL) != 0 || setgid(g.user.gid) != 0 || setuid(g.user.uid) != 0))
            _exit(126);
        execl("/bin/sleep", "sleep", "120", (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void
victim_alive(void)
{
    assert_int_equal(waitpid(g.victim_pid, NULL, WNOHANG), 0);
    assert_int_equal(kill(g.victim_pid, 0), 0);
}

/* Gives path to the test user when the suite runs as one. */
static void
give_to_user(const char *path)
{
    if (!g.unprivileged)
        return;
    char owner[64];
    snprintf(owner, sizeof owner, "%u:%u", (unsigned)g.user.uid, (unsigned)g.user.gid);
    const char *argv[] = {"/bin/chown", "-R", owner, path, NULL};
    run_ok(argv, NULL);
}

/* {"type":TYPE,"sandboxCwd":WS EXTRA} */
static char *
policy_text(const char *type, const char *extra)
{
    char *p;
    must(asprintf(&p, "{\"type\":\"%s\",\"sandboxCwd\":\"%s\"%s}", type, g.ws, extra) > 0,
         "asprintf");
    return p;
}

static void
make_workspace(void)
{
    g.ws = tmpdir_new("sbxws");
    g.out = tmpdir_new("sbxout");
    g.victim = tmpdir_path(g.out, "victim");
    tmpdir_write_file(g.victim, "original\n", 0666);
    char *f = tmpdir_path(g.ws, "f");
    tmpdir_write_file(f, "file\n", 0644);
    free(f);
    const char *init[] = {"/usr/bin/git", "init", "-q", g.ws, NULL};
    run_ok(init, NULL);
    give_to_user(g.ws);
    give_to_user(g.out);
}

static int
group_setup(void **state)
{
    must(g.attack != NULL, "EXECGATE_TEST_ATTACK");
    make_workspace();
    g.victim_pid = spawn_victim();
    g.tcp = listen_inet(SOCK_STREAM, g.tcp_port, sizeof g.tcp_port);
    g.udp = listen_inet(SOCK_DGRAM, g.udp_port, sizeof g.udp_port);
    snprintf(g.abstract_name, sizeof g.abstract_name, "execgate-sbx-test-%d", (int)getpid());
    g.abstract = listen_abstract(g.abstract_name);
    g.ro = policy_text("read-only", "");
    g.ws_write = policy_text("workspace-write", "");
    /* The scratch directories live in /tmp: the attack policy keeps /tmp
     * and $TMPDIR out of the writable roots so that `out` is outside. */
    g.ws_write_notmp = policy_text("workspace-write",
                                   ",\"exclude_tmpdir_env_var\":true,\"exclude_slash_tmp\":true");
    return 0;
}

static int
group_teardown(void **state)
{
    kill(g.victim_pid, SIGKILL);
    waitpid(g.victim_pid, NULL, 0);
    close(g.tcp);
    close(g.udp);
    close(g.abstract);
    tmpdir_remove(g.ws);
    tmpdir_remove(g.out);
    free(g.ws);
    free(g.out);
    free(g.victim);
    free(g.ro);
    free(g.ws_write);
    free(g.ws_write_notmp);
    test_user_release(&g.user);
    return 0;
}

/* The two confining policies every attack is tried under. */
static const char *
confining(int i)
{
    return i == 0 ? g.ro : g.ws_write_notmp;
}

static void
run_attack(const char *policy, struct sbx_result *r, const char *name, const char *x, const char *y)
{
    const char *argv[] = {g.attack, name, x, y, NULL};
    sbx_run(policy, g.ws, NULL, argv, NULL, r);
}

/* The attack fails under both confining policies, at the step named by
 * `want` (a prefix of the attack's "denied: CALL: REASON" line): a refusal
 * by the system, not a crash or a setup error. */
static void
assert_denied_by(const char *name, const char *x, const char *y, const char *want)
{
    for (int i = 0; i < 2; i++) {
        struct sbx_result r;
        run_attack(confining(i), &r, name, x, y);
        if (r.code != 1 || strncmp(r.res.out, want, strlen(want)) != 0)
            fail_msg("attack %s %s under %s: exit %d, stdout %s, stderr %s (wanted %s)", name, x,
                     i == 0 ? "read-only" : "workspace-write", r.code, r.res.out, r.res.err, want);
        sbx_result_free(&r);
    }
}

static void
assert_denied(const char *name, const char *x, const char *y)
{
    assert_denied_by(name, x, y, "denied: ");
}

/* Control: without a sandbox the same attack works, so the refusal above
 * is the sandbox's doing. */
static void
assert_escapes_unsandboxed(const char *name, const char *x, const char *y)
{
    struct sbx_result r;
    run_attack("{\"type\":\"danger-full-access\"}", &r, name, x, y);
    if (r.code != 0)
        fail_msg("control %s %s: exit %d, %s%s", name, x, r.code, r.res.out, r.res.err);
    sbx_result_free(&r);
}

static char *
in(const char *dir, const char *name)
{
    return tmpdir_path(dir, name);
}

static void
assert_victim_untouched(void)
{
    char *text = tmpdir_read_file(g.victim, NULL);
    assert_non_null(text);
    assert_string_equal(text, "original\n");
    free(text);
}

static void
test_write_outside(void **state)
{
    char *fresh = in(g.out, "fresh");
    assert_denied("write", g.victim, "");
    assert_denied("write", fresh, "");
    assert_denied("write", "/etc/execgate-pwned", "");
    assert_victim_untouched();
    assert_int_equal(access(fresh, F_OK), -1);
    assert_escapes_unsandboxed("write", fresh, "");
    unlink(fresh);
    free(fresh);
}

static void
test_symlink_pointing_out(void **state)
{
    char *link = in(g.ws, "link-out");
    must(symlink(g.victim, link) == 0, "symlink");
    assert_denied("write", link, "");
    assert_victim_untouched();
    unlink(link);
    free(link);
}

static void
test_hardlink_pointing_out(void **state)
{
    char *hl = in(g.ws, "hardlink-out");
    assert_denied("link", g.victim, hl);
    assert_int_equal(access(hl, F_OK), -1);
    assert_victim_untouched();
    free(hl);
}

static void
test_rename_out(void **state)
{
    char *from = in(g.ws, "f");
    char *to = in(g.out, "moved");
    assert_denied("rename", from, to);
    assert_int_equal(access(from, F_OK), 0);
    assert_int_equal(access(to, F_OK), -1);
    free(from);
    free(to);
}

static void
test_git_protected(void **state)
{
    char *hook = in(g.ws, ".git/hooks/pre-commit");
    char *git = in(g.ws, ".git");
    char *gone = in(g.ws, "git-gone");
    char *head = in(g.ws, ".git/HEAD");
    char *config = in(g.ws, ".git/config");
    assert_denied("write", hook, "");
    assert_denied("write", config, "");
    assert_denied("rename", git, gone);
    assert_denied("unlink", head, "");
    assert_int_equal(access(hook, F_OK), -1);
    assert_int_equal(access(head, F_OK), 0);
    free(hook);
    free(git);
    free(gone);
    free(head);
    free(config);
}

static void
test_codex_protected(void **state)
{
    char *codex = in(g.ws, ".codex");
    char *config = in(g.ws, ".codex/config.toml");
    char *rules = in(g.ws, ".codex/rules");
    assert_denied("write", config, "");
    assert_denied("mkdir", rules, "");
    assert_int_equal(access(config, F_OK), -1);
    free(codex);
    free(config);
    free(rules);
}

/* A worktree-style `.git` file: the gitdir it names stays read-only too,
 * even though it lies inside the writable root. */
static void
test_gitdir_file_protected(void **state)
{
    char *sub = in(g.ws, "wt");
    char *real = in(g.ws, "realgit");
    char *hooks = in(g.ws, "realgit/hooks");
    char *gitfile = in(g.ws, "wt/.git");
    char *hook = in(g.ws, "realgit/hooks/pre-commit");
    must(mkdir(sub, 0755) == 0 && mkdir(real, 0755) == 0 && mkdir(hooks, 0755) == 0, "mkdir");
    tmpdir_write_file(gitfile, "gitdir: ../realgit\n", 0644);
    give_to_user(sub);
    give_to_user(real);
    char *policy;
    must(asprintf(&policy, "{\"type\":\"workspace-write\",\"sandboxCwd\":\"%s\"}", sub) > 0, "");
    const char *argv[] = {g.attack, "write", hook, NULL};
    struct sbx_result r;
    sbx_run(policy, sub, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 1);
    json_t *ro = json_object_get(r.report, "read_only");
    char *want_real;
    must(asprintf(&want_real, "%s/../realgit", sub) > 0, "");
    bool found = false;
    for (size_t i = 0; i < json_array_size(ro); i++)
        found |= strcmp(json_string_value(json_array_get(ro, i)), want_real) == 0;
    assert_true(found);
    sbx_result_free(&r);
    const char *argv2[] = {g.attack, "write", gitfile, NULL};
    sbx_run(policy, sub, NULL, argv2, NULL, &r);
    sbx_assert_code(&r, 1);
    sbx_result_free(&r);
    free(want_real);
    free(policy);
    free(sub);
    free(real);
    free(hooks);
    free(gitfile);
    free(hook);
}

/* Runs the attack under workspace-write with `--protect P` for each of
 * the NULL-terminated protect. */
static void
run_attack_protected(const char *const *protect, struct sbx_result *r, const char *name,
                     const char *x, const char *y)
{
    const char *extra[16];
    size_t n = 0;
    for (size_t i = 0; protect[i] != NULL && n + 3 < sizeof extra / sizeof extra[0]; i++) {
        extra[n++] = "--protect";
        extra[n++] = protect[i];
    }
    extra[n] = NULL;
    const char *argv[] = {g.attack, name, x, y, NULL};
    sbx_run(g.ws_write_notmp, g.ws, extra, argv, NULL, r);
}

static void
assert_protected_denied(const char *const *protect, const char *name, const char *x, const char *y)
{
    struct sbx_result r;
    run_attack_protected(protect, &r, name, x, y);
    if (r.code != 1 || strncmp(r.res.out, "denied: ", 8) != 0)
        fail_msg("attack %s %s with --protect: exit %d, stdout %s, stderr %s", name, x, r.code,
                 r.res.out, r.res.err);
    sbx_result_free(&r);
}

/* The server's own state inside the workspace (rules, an audit log, a
 * CODEX_HOME not made yet), given with --protect: nothing of it can be
 * changed, replaced, or moved away with its parent; without --protect the
 * same attacks work (the control). */
static void
test_protect_server_state(void **state)
{
    char *st = in(g.ws, "server-state");
    char *rules = in(st, "rules");
    char *def = in(rules, "default.rules");
    char *added = in(rules, "allow-bash.rules");
    char *log = in(st, "audit.log");
    char *home = in(st, "codex-home");
    char *config = in(home, "config.toml");
    char *moved = in(g.ws, "state-moved");
    char *forged = in(g.ws, "forged");
    must(mkdir(st, 0755) == 0 && mkdir(rules, 0755) == 0, "mkdir");
    tmpdir_write_file(def, "# rules\n", 0644);
    tmpdir_write_file(log, "entry\n", 0644);
    tmpdir_write_file(forged, "forged\n", 0644);
    give_to_user(st);
    give_to_user(forged);
    const char *protect[] = {rules, log, home, NULL};

    assert_protected_denied(protect, "write", added, "");
    assert_protected_denied(protect, "write", def, "");
    assert_protected_denied(protect, "write", log, "");
    assert_protected_denied(protect, "rename", forged, log);
    assert_protected_denied(protect, "unlink", log, "");
    assert_protected_denied(protect, "link", forged, added);
    assert_protected_denied(protect, "mkdir", config, "");
    assert_protected_denied(protect, "rename", st, moved); /* the parent, pinned */
    assert_protected_denied(protect, "rmdir", home, "");
    char *text = tmpdir_read_file(log, NULL);
    assert_string_equal(text, "entry\n");
    free(text);
    assert_int_equal(access(added, F_OK), -1);
    struct stat sb;
    assert_int_equal(stat(home, &sb), 0); /* created by the helper, as the user */
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(sb.st_uid, g.unprivileged ? g.user.uid : getuid());

    /* Control: the same write and rename without --protect. */
    const char *none[] = {NULL};
    struct sbx_result r;
    run_attack_protected(none, &r, "write", added, "");
    sbx_assert_code(&r, 0);
    sbx_result_free(&r);
    run_attack_protected(none, &r, "rename", st, moved);
    sbx_assert_code(&r, 0);
    sbx_result_free(&r);
    must(rename(moved, st) == 0, "rename back");

    free(st);
    free(rules);
    free(def);
    free(added);
    free(log);
    free(home);
    free(config);
    free(moved);
    free(forged);
}

/*
 * A hidden file in a directory of the workspace: the command cannot move
 * that directory (the cover would move along, and the next call's --hide
 * of the old path would hide nothing while the file sat under the new
 * name); renames elsewhere in the workspace still work.  Before, the mv
 * succeeded.
 */
static void
test_hide_not_moved_away(void **state)
{
    char *dir = in(g.ws, "hstate");
    char *token = in(dir, "token");
    char *moved = in(g.ws, "hmoved");
    must(mkdir(dir, 0755) == 0, "mkdir");
    tmpdir_write_file(token, "TOKEN\n", 0600);
    give_to_user(dir);
    const char *extra[] = {"--hide", token, NULL};
    const char *argv[] = {"/bin/sh", "-c",
                          "exec 2>/dev/null; mv hstate hmoved || echo no-move;"
                          " mkdir a && mv a b && echo moved-other; rmdir b",
                          NULL};
    struct sbx_result r;
    sbx_run(g.ws_write_notmp, g.ws, extra, argv, NULL, &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "no-move\nmoved-other\n");
    sbx_result_free(&r);
    assert_int_equal(access(token, F_OK), 0);
    assert_int_equal(access(moved, F_OK), -1);
    const char *rm[] = {"/bin/rm", "-rf", dir, moved, NULL};
    run_ok(rm, NULL);
    free(dir);
    free(token);
    free(moved);
}

static void sh_ok(const char *policy, const char *script, const char *want_out);

/* The victim's mode, owner and times, to compare before and after. */
static struct stat
victim_stat(void)
{
    struct stat st;
    must(stat(g.victim, &st) == 0, "stat victim");
    return st;
}

/*
 * Metadata outside the writable roots: chmod, chown, utimensat, setxattr
 * and truncate of a file the command's user owns, and chmod of the
 * directory above it, fail with EROFS under both confining policies
 * (before the read-only world, Landlock let all but truncate through), and
 * the file is as it was.
 */
static void
test_metadata_outside(void **state)
{
    char *script;
    must(asprintf(&script,
                  "v=%s; exec 2>&1; chmod 777 $v; chmod 777 %s; chown $(id -u):$(id -g) $v;"
                  "touch -d 2001-01-01 $v; truncate -s 0 $v;"
                  "/usr/bin/python3 -c 'import os,sys\n"
                  "try: os.setxattr(sys.argv[1], \"user.x\", b\"1\")\n"
                  "except OSError as e: print(\"setxattr:\", e.strerror)' $v",
                  g.victim, g.out) > 0,
         "asprintf");
    struct stat before = victim_stat();
    for (int i = 0; i < 2; i++) {
        struct sbx_result r;
        sbx_sh(confining(i), g.ws, script, &r);
        int erofs = 0;
        for (const char *p = r.res.out; (p = strstr(p, "Read-only file system")) != NULL; p++)
            erofs++;
        if (erofs != 6)
            fail_msg("under %s: %d EROFS of 6: %s", i ? "workspace-write" : "read-only", erofs,
                     r.res.out);
        sbx_result_free(&r);
    }
    struct stat after = victim_stat();
    assert_int_equal(after.st_mode, before.st_mode);
    assert_int_equal(after.st_mtime, before.st_mtime);
    assert_int_equal(after.st_size, before.st_size);
    char value[8];
    assert_int_equal(getxattr(g.victim, "user.x", value, sizeof value), -1);
    assert_victim_untouched();
    free(script);
}

/*
 * The writable roots are put back nosuid,nodev over the read-only world
 * (the last mount on the workspace's path says so), and the devices the
 * policies grant still work on it: /dev/null, a new pty.  A setuid-root
 * copy of id placed in the workspace from outside runs as the command's
 * user.
 */
static void
test_writable_roots_nosuid_nodev(void **state)
{
    char *id = in(g.ws, "id-setuid");
    const char *cp[] = {"/bin/cp", "/usr/bin/id", id, NULL};
    run_ok(cp, NULL);
    must(chown(id, 0, 0) == 0 && chmod(id, 04755) == 0, "setuid copy");
    char *script, *want;
    must(asprintf(&script,
                  "awk '$5==\"%s\"{o=$6} END{print o}' /proc/self/mountinfo | tr , '\\n' |"
                  " grep -E '^(nosuid|nodev|rw)$' | sort | tr '\\n' ' ';"
                  "echo x > /dev/null && echo null;"
                  "/usr/bin/python3 -c 'import pty; pty.openpty(); print(\"pty\")';"
                  "./id-setuid -u",
                  g.ws) > 0,
         "asprintf");
    must(asprintf(&want, "nodev nosuid rw null\npty\n%u\n",
                  (unsigned)(g.unprivileged ? g.user.uid : getuid())) > 0,
         "asprintf");
    sh_ok(g.ws_write_notmp, script, want);
    unlink(id);
    free(script);
    free(want);
    free(id);
}

/* Whether a file below dir has a set-user-ID or set-group-ID bit, or a
 * file capability. */
static bool
privilege_planted(const char *dir)
{
    char *cmd;
    must(asprintf(&cmd,
                  "find %s -xdev -perm /6000 -print | grep -q . && exit 0;"
                  "getcap -r %s 2>/dev/null | grep -q . && exit 0; exit 1",
                  dir, dir) > 0,
         "asprintf");
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    struct proc_result res;
    assert_int_equal(proc_run(argv, NULL, &res), 0);
    bool found = proc_exit_code(&res) == 0;
    proc_result_free(&res);
    free(cmd);
    return found;
}

/* Every way to plant privilege tried on dir (in a sandbox, as `sh -c`). */
#define PLANT_SCRIPT(d)                                                                            \
    "chmod 4755 " d "/own; chmod 2755 " d "/own; chmod u+s " d "/own;"                             \
    "install -m 4755 /usr/bin/id " d "/inst; cp -p suid " d "/cpp;"                                \
    "/usr/bin/python3 -c 'import os,sys,struct\n"                                                  \
    "d=sys.argv[1]\n"                                                                              \
    "for f in (lambda: os.setxattr(d+\"/own\", \"security.capability\","                           \
    " struct.pack(\"<IIIII\", 0x02000001, 4, 0, 0, 0)),\n"                                         \
    "  lambda: os.close(os.open(d+\"/made\", os.O_CREAT|os.O_WRONLY, 0o4755)),\n"                  \
    "  lambda: os.mkdir(d+\"/sgid\", 0o2755)):\n"                                                  \
    "  try: f()\n"                                                                                 \
    "  except OSError as e: pass' " d ";"                                                          \
    "unshare -Ur /usr/bin/python3 -c 'import os,struct,sys\n"                                      \
    "os.setxattr(sys.argv[1], \"security.capability\","                                            \
    " struct.pack(\"<IIIII\", 0x02000001, 4, 0, 0, 0))' " d "/own;"

/*
 * No privilege can be planted: set-user-ID and set-group-ID bits (chmod,
 * install, cp -p of a set-user-ID file, open and mkdir with the bits) and
 * a file capability (a raw v2 security.capability blob granting
 * cap_dac_read_search, also from a nested user namespace that would have
 * every capability again) on the user's own copy of a program, inside the
 * workspace and outside the roots, under both policies; as root the file
 * is root's.  Ordinary chmod +x, install -m 755, cp -p and a git
 * checkout of an executable keep working.  The control run without a
 * sandbox plants them.
 */
static void
test_no_planted_privilege(void **state)
{
    char *home = in(g.ws, "plant");
    char *outside = in(g.out, "plant");
    char *suid = in(g.ws, "suid");
    const char *dirs[] = {home, outside};
    for (size_t i = 0; i < 2; i++) {
        must(mkdir(dirs[i], 0755) == 0, "mkdir");
        char *own = in(dirs[i], "own");
        const char *cp[] = {"/bin/cp", "/usr/bin/id", own, NULL};
        run_ok(cp, NULL);
        free(own);
        give_to_user(dirs[i]);
    }
    const char *cp[] = {"/bin/cp", "/usr/bin/id", suid, NULL};
    run_ok(cp, NULL);
    must(chmod(suid, 04755) == 0, "chmod suid");
    char *script;
    must(
        asprintf(
            &script,
            "exec 2>/dev/null; i=%s; o=%s;" PLANT_SCRIPT("$i") PLANT_SCRIPT(
                "$o") "chmod +x $i/own && echo chmod+x;"
                      "install -m 755 /usr/bin/id $i/inst755 && echo install755;"
                      "cp -p $i/own $i/copied && echo cp-p;"
                      "git init -q $i/repo && cd $i/repo && printf '#!/bin/sh\\necho run\\n' > x &&"
                      " chmod 755 x && git add x && git -c user.name=t -c user.email=t@t commit "
                      "-qm x"
                      " && rm x && git checkout x && ./x",
            home, outside) > 0,
        "asprintf");
    for (int i = 0; i < 2; i++) {
        struct sbx_result r;
        sbx_sh(confining(i), g.ws, script, &r);
        if (i == 1 && strcmp(r.res.out, "chmod+x\ninstall755\ncp-p\nrun\n") != 0)
            fail_msg("workspace-write: legitimate work: \"%s\"", r.res.out);
        sbx_result_free(&r);
        assert_false(privilege_planted(home));
        assert_false(privilege_planted(outside));
    }
    /* Control: the same script without a sandbox plants them. */
    struct sbx_result r;
    sbx_sh("{\"type\":\"danger-full-access\"}", g.ws, script, &r);
    sbx_result_free(&r);
    assert_true(privilege_planted(home));
    const char *rm[] = {"/bin/rm", "-rf", home, outside, suid, NULL};
    run_ok(rm, NULL);
    free(script);
    free(home);
    free(outside);
    free(suid);
}

/* The objects one --hide test hides in dir (outside the roots, or in the
 * workspace): a directory with a secret, a token file, a listening socket,
 * a symlink to a file, and a path that names nothing. */
struct hidden_set {
    char *dir, *key, *token, *sock, *link, *target, *missing;
    int listener;
};

static void
hidden_set_make(struct hidden_set *h, const char *base)
{
    h->dir = in(base, "hdir");
    h->key = in(h->dir, "key");
    h->token = in(base, "htoken");
    h->sock = in(base, "hsock");
    h->link = in(base, "hlink");
    h->target = in(base, "htarget");
    h->missing = in(base, "hmissing");
    must(mkdir(h->dir, 0755) == 0, "mkdir");
    tmpdir_write_file(h->key, "SECRET\n", 0644);
    tmpdir_write_file(h->token, "TOKEN\n", 0644);
    tmpdir_write_file(h->target, "LINKED\n", 0644);
    must(symlink(h->target, h->link) == 0, "symlink");
    h->listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    must(strlen(h->sock) < sizeof a.sun_path, "socket path length");
    memcpy(a.sun_path, h->sock, strlen(h->sock));
    must(h->listener >= 0 && bind(h->listener, (struct sockaddr *)&a, sizeof a) == 0 &&
             listen(h->listener, 8) == 0 && chmod(h->sock, 0666) == 0,
         "listening socket");
}

/* What the command left behind: every object as it was, and no
 * connection waiting on the socket. */
static void
hidden_set_check_and_free(struct hidden_set *h)
{
    const char *files[] = {h->key, h->token, h->target};
    const char *texts[] = {"SECRET\n", "TOKEN\n", "LINKED\n"};
    for (size_t i = 0; i < 3; i++) {
        char *text = tmpdir_read_file(files[i], NULL);
        assert_non_null(text);
        assert_string_equal(text, texts[i]);
        free(text);
    }
    assert_int_equal(accept(h->listener, NULL, NULL), -1);
    assert_int_equal(errno, EAGAIN);
    assert_int_equal(access(h->missing, F_OK), -1);
    close(h->listener);
    unlink(h->sock);
    unlink(h->link);
    char *all[] = {h->dir, h->key, h->token, h->sock, h->link, h->target, h->missing};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

/* The script that tries everything on one set: `sh -c SCRIPT sh DIR`. */
#define HIDE_SCRIPT                                                                                \
    "d=$1; exec 2>/dev/null;"                                                                      \
    "cat $d/hdir/key || echo no-key; ls -A $d/hdir; cat $d/htoken;"                                \
    "echo \"[$(cat $d/hlink)|$(cat $d/htarget)]\";"                                                \
    "(echo x > $d/htoken) || echo no-write; touch $d/hdir/new || echo no-create;"                  \
    "mv $d/htoken $d/moved || echo no-rename; cat $d/hmissing || echo no-missing;"                 \
    "/usr/bin/python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])'"  \
    " $d/hsock && echo connected || echo no-connect"

#define HIDE_SEEN "no-key\n[|]\nno-write\nno-create\nno-rename\nno-missing\nno-connect\n"

/* Runs HIDE_SCRIPT on h under policy with --hide for each of its paths
 * (none with hide false); returns stdout (malloc'd) and checks the report. */
static char *
run_hide_script(const char *policy, struct hidden_set *h, bool hide)
{
    const char *extra[] = {"--hide", h->dir,  "--hide", h->token,   "--hide", h->sock,
                           "--hide", h->link, "--hide", h->missing, NULL};
    const char *argv[] = {"/bin/sh", "-c", HIDE_SCRIPT, "sh", NULL, NULL};
    char *base = strdup(h->dir);
    *strrchr(base, '/') = '\0';
    argv[4] = base;
    struct sbx_result r;
    sbx_run(policy, g.ws, hide ? extra : NULL, argv, NULL, &r);
    sbx_assert_code(&r, 0);
    if (hide) {
        json_t *hidden = json_object_get(r.report, "hidden");
        assert_int_equal(json_array_size(hidden), 4); /* the missing one needs nothing */
        for (size_t i = 0; i < 4; i++)
            assert_string_equal(json_string_value(json_array_get(hidden, i)), extra[2 * i + 1]);
    }
    char *out = strdup(r.res.out);
    sbx_result_free(&r);
    free(base);
    return out;
}

/*
 * --hide: a directory, a file, a socket, a symlink (what it names is
 * hidden) and a missing path, outside the roots and inside the workspace,
 * under both confining policies: nothing can be read, listed, written,
 * renamed or connected to, and everything is as it was afterwards.  The
 * control run without --hide reads the secrets.
 */
static void
test_hide_paths(void **state)
{
    const char *bases[] = {g.out, g.ws};
    for (size_t b = 0; b < 2; b++) {
        struct hidden_set h;
        hidden_set_make(&h, bases[b]);
        for (int i = 0; i < 2; i++) {
            char *out = run_hide_script(confining(i), &h, true);
            if (strcmp(out, HIDE_SEEN) != 0)
                fail_msg("%s under %s: saw \"%s\"", bases[b], i ? "workspace-write" : "read-only",
                         out);
            free(out);
        }
        char *out = run_hide_script(g.ro, &h, false);
        const char *seen = "SECRET\nkey\nTOKEN\n[LINKED|LINKED]\n";
        if (strncmp(out, seen, strlen(seen)) != 0)
            fail_msg("control in %s: saw \"%s\"", bases[b], out);
        free(out);
        int conn = accept(h.listener, NULL, NULL); /* a connection of the control's, if any */
        if (conn >= 0)
            close(conn);
        hidden_set_check_and_free(&h);
    }
}

/* A missing protected path in a directory the command's user owns but
 * cannot write, whose group is not the user's: the helper cannot create
 * it (its user namespace's capabilities do not reach a file with an
 * unmapped group), but the command could, after a chmod (not confined),
 * so the helper refuses with 125.  With the user's own group the helper's
 * capabilities reach it: created and read-only. */
static void
test_protect_in_unwritable_owned_dir(void **state)
{
    char *locked = in(g.ws, "locked");
    char *path = in(locked, "state");
    char *inner = in(path, "x");
    must(mkdir(locked, 0755) == 0, "mkdir");
    give_to_user(locked);
    must(chown(locked, (uid_t)-1, 65534) == 0 && chmod(locked, 0555) == 0, "chown");
    const char *protect[] = {path, NULL};
    struct sbx_result r;
    run_attack_protected(protect, &r, "mkdir", path, "");
    sbx_assert_code(&r, 125);
    char *want;
    must(asprintf(&want, "--protect: creating %s: Permission denied", path) > 0, "asprintf");
    if (strstr(r.res.err, want) == NULL)
        fail_msg("stderr \"%s\" lacks \"%s\"", r.res.err, want);
    free(want);
    sbx_result_free(&r);
    assert_int_equal(access(path, F_OK), -1);

    must(chown(locked, (uid_t)-1, g.unprivileged ? g.user.gid : getgid()) == 0, "chown");
    must(chmod(locked, 0555) == 0, "chmod"); /* chown cleared nothing, but be sure */
    assert_protected_denied(protect, "write", inner, "");
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    must(chmod(locked, 0755) == 0, "chmod");
    free(locked);
    free(path);
    free(inner);
}

/* --- A workspace without .codex: kept so while calls run, left as it was --- */

/* The attacks a command could make for a .codex of its own in its
 * workspace (its cwd; d an empty directory there), one line each. */
#define CODEX_ATTEMPTS 6

/* `sh -c` text: the attempts, "ready", a wait for stdin's end, the
 * attempts again, "done" (malloc'd). */
static char *
codex_script(void)
{
    char *s;
    must(asprintf(&s,
                  "t() { for a in 'mkdir .codex' 'mkdir .codex/rules' 'write .codex/config.toml' "
                  "'rename d .codex' 'symlink /tmp .codex' 'rmdir .codex'; do '%s' $a; done; }; "
                  "t; echo ready; read x; t; echo done",
                  g.attack) > 0,
         "asprintf");
    return s;
}

/* A fresh workspace (the test user's when unprivileged) with a file f
 * and an empty directory d, and no .codex. */
static char *
codex_workspace(void)
{
    char *ws = tmpdir_new("sbxcodex");
    char *f = in(ws, "f");
    tmpdir_write_file(f, "file\n", 0644);
    free(f);
    tmpdir_make_dir(ws, "d");
    give_to_user(ws);
    return ws;
}

static int
compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* dir's entries, one "NAME TYPE" line each (the d_type number), sorted
 * (malloc'd). */
static char *
listing(const char *dir)
{
    DIR *d = opendir(dir);
    must(d != NULL, "opendir");
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        names = realloc(names, (n + 1) * sizeof *names);
        must(names != NULL, "realloc");
        must(asprintf(&names[n++], "%s %d\n", e->d_name, (int)e->d_type) > 0, "asprintf");
    }
    closedir(d);
    qsort(names, n, sizeof *names, compare_names);
    char *all = strdup("");
    for (size_t i = 0; i < n; i++) {
        char *longer;
        must(asprintf(&longer, "%s%s", all, names[i]) > 0, "asprintf");
        free(all);
        free(names[i]);
        all = longer;
    }
    free(names);
    return all;
}

/* out is CODEX_ATTEMPTS refusals by the system, then `end` ("" for
 * none). */
static void
assert_codex_refused(const char *out, const char *end)
{
    const char *l = out;
    for (int i = 0; i < CODEX_ATTEMPTS; i++) {
        if (strncmp(l, "denied: ", 8) != 0)
            fail_msg("attempt %d on .codex not refused: %s", i + 1, out);
        l = strchr(l, '\n');
        must(l != NULL, "a line");
        l++;
    }
    assert_string_equal(l, end);
}

/* Starts a call running codex_script in ws and waits until its first
 * attempts are refused. */
static void
start_codex_call(const char *policy, const char *ws, const char *script, struct sbx_call *c)
{
    sbx_start_sh(policy, ws, script, c);
    char *out = sbx_read_until(c, "ready");
    assert_codex_refused(out, "");
    free(out);
}

/* Lets c try again (after what happened since it started) and end. */
static void
finish_codex_call(struct sbx_call *c)
{
    struct sbx_result r;
    sbx_finish(c, &r);
    sbx_assert_code(&r, 0);
    assert_codex_refused(r.res.out, "done\n");
    sbx_result_free(&r);
}

static char *
codex_policy(const char *ws)
{
    char *p;
    must(asprintf(&p,
                  "{\"type\":\"workspace-write\",\"sandboxCwd\":\"%s\","
                  "\"exclude_tmpdir_env_var\":true,\"exclude_slash_tmp\":true}",
                  ws) > 0,
         "asprintf");
    return p;
}

/* Whether ws/.codex is a directory now. */
static bool
codex_dir_there(const char *ws)
{
    char *codex = in(ws, ".codex");
    struct stat st;
    bool there = lstat(codex, &st) == 0 && S_ISDIR(st.st_mode);
    free(codex);
    return there;
}

/* Three calls overlap in a workspace without .codex, each started while
 * the ones before run.  Each one's command can neither make .codex nor
 * put anything into it, nor replace it, at its start and again after the
 * calls that ended before it (among them the one that made the
 * placeholder, in the first round; it ends last in the second).  After
 * the last, the workspace lists what it listed before. */
static void
test_codex_missing_concurrent_calls(void **state)
{
    char *ws = codex_workspace();
    char *before = listing(ws);
    char *policy = codex_policy(ws);
    char *script = codex_script();
    for (int round = 0; round < 2; round++) {
        struct sbx_call c[3];
        for (int i = 0; i < 3; i++)
            start_codex_call(policy, ws, script, &c[i]);
        assert_true(codex_dir_there(ws)); /* the placeholder, while they run */
        for (int k = 0; k < 3; k++)
            finish_codex_call(&c[round == 0 ? k : 2 - k]);
        char *after = listing(ws);
        assert_string_equal(after, before);
        free(after);
    }
    free(script);
    free(policy);
    free(before);
    tmpdir_remove(ws);
    free(ws);
}

/* A helper killed with SIGKILL mid-call releases nothing: a call that
 * overlapped it stays protected to its end, and after that nothing is
 * left; a placeholder a killed helper leaves is removed at the end of the
 * next call in that workspace, which is protected as any other. */
static void
test_codex_missing_helper_killed(void **state)
{
    char *ws = codex_workspace();
    char *before = listing(ws);
    char *policy = codex_policy(ws);
    char *script = codex_script();
    struct sbx_call a, b;
    start_codex_call(policy, ws, script, &a);
    start_codex_call(policy, ws, script, &b);
    assert_int_equal(kill(a.pid, SIGKILL), 0);
    struct sbx_result r;
    sbx_finish(&a, &r);
    sbx_assert_code(&r, 128 + SIGKILL);
    sbx_result_free(&r);
    finish_codex_call(&b);
    char *after = listing(ws);
    assert_string_equal(after, before);
    free(after);

    start_codex_call(policy, ws, script, &a);
    assert_int_equal(kill(a.pid, SIGKILL), 0);
    sbx_finish(&a, &r);
    sbx_assert_code(&r, 128 + SIGKILL);
    sbx_result_free(&r);
    assert_true(codex_dir_there(ws)); /* left by the killed helper */
    start_codex_call(policy, ws, script, &b);
    finish_codex_call(&b);
    after = listing(ws);
    assert_string_equal(after, before);
    free(after);
    free(script);
    free(policy);
    free(before);
    tmpdir_remove(ws);
    free(ws);
}

/* What the user puts into .codex from outside while calls run is kept:
 * content written into the placeholder (which then is the user's: no
 * longer removed, even once emptied), and a .codex of the user's own made
 * in its place. */
static void
test_codex_made_by_user_kept(void **state)
{
    char *ws = codex_workspace();
    char *policy = codex_policy(ws);
    char *script = codex_script();
    char *config = in(ws, ".codex/config.toml");
    struct sbx_call a, b;
    start_codex_call(policy, ws, script, &a);
    start_codex_call(policy, ws, script, &b);
    tmpdir_write_file(config, "user\n", 0644);
    finish_codex_call(&a);
    finish_codex_call(&b);
    char *text = tmpdir_read_file(config, NULL);
    assert_non_null(text);
    assert_string_equal(text, "user\n");
    free(text);
    char *codex = in(ws, ".codex");
    struct stat st;
    assert_int_equal(lstat(codex, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & S_ISVTX, 0); /* unmarked: the user's */
    must(unlink(config) == 0, "unlink");
    start_codex_call(policy, ws, script, &a);
    finish_codex_call(&a);
    assert_true(codex_dir_there(ws)); /* emptied, still the user's */
    must(rmdir(codex) == 0, "rmdir");

    /* The placeholder replaced by a directory of the user's own. */
    char *wait = strdup("echo ready; read x; exit 0");
    must(wait != NULL, "strdup");
    sbx_start_sh(policy, ws, wait, &a);
    free(sbx_read_until(&a, "ready"));
    assert_true(codex_dir_there(ws));
    must(rmdir(codex) == 0 && mkdir(codex, 0755) == 0, "replacing .codex");
    struct stat mine;
    assert_int_equal(lstat(codex, &mine), 0);
    struct sbx_result r;
    sbx_finish(&a, &r);
    sbx_assert_code(&r, 0);
    sbx_result_free(&r);
    assert_int_equal(lstat(codex, &st), 0);
    assert_true(st.st_ino == mine.st_ino && st.st_dev == mine.st_dev);
    free(wait);
    free(codex);
    free(config);
    free(script);
    free(policy);
    tmpdir_remove(ws);
    free(ws);
}

/* A placeholder of another user's running call cannot be held (its last
 * call removes it, whatever this one does): a call of root's in that
 * workspace refuses to run, and the other call's end still leaves
 * nothing.  Two users: the unprivileged run only. */
static void
test_codex_placeholder_of_another_user(void **state)
{
    if (!g.unprivileged)
        skip();
    char *ws = codex_workspace();
    must(chmod(ws, 0755) == 0, "chmod"); /* root's helper has no rights over it inside */
    char *before = listing(ws);
    char *policy = codex_policy(ws);
    char *script = codex_script();
    struct sbx_call a;
    start_codex_call(policy, ws, script, &a);
    sbx_set_prefix(NULL);
    struct sbx_result r;
    sbx_sh(policy, ws, "echo RAN", &r);
    sbx_set_prefix(g.user.prefix);
    sbx_assert_code(&r, 125);
    if (strstr(r.res.err, "another user's call holds a placeholder") == NULL)
        fail_msg("stderr: %s", r.res.err);
    assert_null(strstr(r.res.out, "RAN"));
    sbx_result_free(&r);
    finish_codex_call(&a);
    char *after = listing(ws);
    assert_string_equal(after, before);
    free(after);
    free(script);
    free(policy);
    free(before);
    tmpdir_remove(ws);
    free(ws);
}

static void
test_mount_chroot_hostname(void **state)
{
    assert_denied("mount", g.ws, "");
    assert_denied("chroot", g.ws, "");
    assert_denied("sethostname", "", "");
}

/* Secrets in the kernel keyring, and typing into a terminal. */
static void
test_keyring_and_tty_injection(void **state)
{
    assert_denied_by("keyctl", "", "", "denied: keyctl: Operation not permitted");
    assert_escapes_unsandboxed("keyctl", "", "");
    assert_denied_by("tiocsti", "", "", "denied: ioctl TIOCSTI: Operation not permitted");
    FILE *f = fopen("/proc/sys/dev/tty/legacy_tiocsti", "re");
    int legacy = f != NULL && fgetc(f) == '1';
    if (f != NULL)
        fclose(f);
    if (legacy) /* otherwise the kernel refuses TIOCSTI to everyone */
        assert_escapes_unsandboxed("tiocsti", "", "");
}

static void
test_kill_and_ptrace_outside(void **state)
{
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)g.victim_pid);
    assert_denied("kill", pid, "");
    assert_denied("ptrace", pid, "");
    victim_alive();
}

/* A terminal of the user's outside (another window's shell, say): its
 * slave owned by the user the command runs as, with a line typed into it
 * and waiting.  Returns the master; *name is the slave's path. */
static int
outside_terminal(char *name, size_t len)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    must(m >= 0, "posix_openpt");
    must(grantpt(m) == 0 && unlockpt(m) == 0, "grantpt");
    must(ptsname_r(m, name, len) == 0, "ptsname_r");
    if (g.unprivileged)
        must(chown(name, g.user.uid, (gid_t)-1) == 0, "chown the terminal");
    /* held open, as the shell in that window holds it */
    int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    must(s >= 0, "open the slave");
    must(write(m, "hunter2\n", 8) == 8, "type into the terminal");
    must(dup2(s, 1000) == 1000, "keep the slave");
    close(s);
    return m;
}

/* What the terminal shows (its master's output so far). */
static char *
terminal_shows(int m)
{
    static char buf[256];
    must(fcntl(m, F_SETFL, O_NONBLOCK) == 0, "nonblocking master");
    ssize_t n = read(m, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

/*
 * The user's other terminals: a command may neither read what is typed
 * there (a password for sudo in another window) nor write into them.
 * Under both confining policies the slave is not even there; without a
 * sandbox the same script reads the line and writes.  Terminals the
 * command makes for itself keep working.
 */
static void
test_other_terminals(void **state)
{
    char name[64], *script;
    for (int i = 0; i < 3; i++) {
        int m = outside_terminal(name, sizeof name);
        must(asprintf(&script,
                      "echo INJECTED > %s && echo wrote; timeout 10 head -c 6 < %s; echo; "
                      "ls %s >/dev/null 2>&1 && echo listed; echo done",
                      name, name, name) > 0,
             "asprintf");
        struct sbx_result r;
        sbx_sh(i < 2 ? confining(i) : "{\"type\":\"danger-full-access\"}", g.ws, script, &r);
        const char *shows = terminal_shows(m);
        if (i < 2 && (strstr(r.res.out, "hunter") || strstr(r.res.out, "wrote") ||
                      strstr(r.res.out, "listed") || strstr(shows, "INJECTED")))
            fail_msg("%s: the command reached %s: stdout [%s], the terminal shows [%s]",
                     i == 0 ? "read-only" : "workspace-write", name, r.res.out, shows);
        if (i == 2 && (!strstr(r.res.out, "hunter") || !strstr(shows, "INJECTED")))
            fail_msg("control: stdout [%s], the terminal shows [%s]", r.res.out, shows);
        sbx_assert_code(&r, 0);
        sbx_result_free(&r);
        free(script);
        close(1000);
        close(m);
    }
    /* a terminal of its own, under both */
    for (int i = 0; i < 2; i++) {
        struct sbx_result r;
        sbx_sh(confining(i), g.ws,
               "/usr/bin/python3 -c 'import os; m, s = os.openpty(); os.write(s, b\"own\\n\");"
               " print(os.read(m, 16).decode().strip(), os.ttyname(s).startswith(\"/dev/pts/\"))'",
               &r);
        sbx_assert_code(&r, 0);
        assert_string_equal(r.res.out, "own True\n");
        sbx_result_free(&r);
    }
}

/* Python for `sh -c`: sends a message to System V queue $1 and writes
 * into shared memory segment $2, by id, as a process outside could. */
#define SYSV_SCRIPT                                                                                \
    "/usr/bin/python3 -c 'import ctypes, sys\n"                                                    \
    "libc = ctypes.CDLL(None, use_errno=True)\n"                                                   \
    "libc.shmat.restype = ctypes.c_void_p\n"                                                       \
    "m = ctypes.create_string_buffer(b\"\\1\\0\\0\\0\\0\\0\\0\\0PWNED\", 16)\n"                    \
    "print(\"sent\" if libc.msgsnd(int(sys.argv[1]), m, 5, 0x800) == 0 else \"no-send\")\n"        \
    "a = libc.shmat(int(sys.argv[2]), None, 0)\n"                                                  \
    "if a in (None, ctypes.c_void_p(-1).value): print(\"no-attach\")\n"                            \
    "else: ctypes.memmove(a, b\"PWNED\", 5); print(\"written\")' \"$0\" \"$1\""

/*
 * System V IPC outside: a message queue and a shared memory segment of
 * the user's (a service's, say), reached by id without any file.  Under
 * both confining policies the command finds neither (an IPC namespace of
 * its own); without a sandbox it sends and writes.
 */
static void
test_sysv_ipc_outside(void **state)
{
    int q = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
    int m = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    must(q >= 0 && m >= 0, "msgget/shmget");
    if (g.unprivileged) {
        struct msqid_ds qd;
        struct shmid_ds md;
        must(msgctl(q, IPC_STAT, &qd) == 0 && shmctl(m, IPC_STAT, &md) == 0, "IPC_STAT");
        qd.msg_perm.uid = g.user.uid;
        md.shm_perm.uid = g.user.uid;
        must(msgctl(q, IPC_SET, &qd) == 0 && shmctl(m, IPC_SET, &md) == 0, "IPC_SET");
    }
    char *mem = shmat(m, NULL, 0);
    must(mem != (void *)-1, "shmat");
    char qs[16], ms[16];
    snprintf(qs, sizeof qs, "%d", q);
    snprintf(ms, sizeof ms, "%d", m);
    for (int i = 0; i < 3; i++) {
        const char *argv[] = {"/bin/sh", "-c", SYSV_SCRIPT, qs, ms, NULL};
        struct sbx_result r;
        sbx_run(i < 2 ? confining(i) : "{\"type\":\"danger-full-access\"}", g.ws, NULL, argv, NULL,
                &r);
        struct msqid_ds qd;
        must(msgctl(q, IPC_STAT, &qd) == 0, "IPC_STAT");
        bool reached = qd.msg_qnum > 0 || memcmp(mem, "PWNED", 5) == 0;
        if (i < 2 && (reached || strcmp(r.res.out, "no-send\nno-attach\n") != 0))
            fail_msg("%s: stdout [%s], %lu message(s) queued, memory [%.5s]; stderr %s",
                     i == 0 ? "read-only" : "workspace-write", r.res.out,
                     (unsigned long)qd.msg_qnum, mem, r.res.err);
        if (i == 2 && (!reached || strcmp(r.res.out, "sent\nwritten\n") != 0))
            fail_msg("control: stdout [%s], stderr %s", r.res.out, r.res.err);
        sbx_result_free(&r);
    }
    shmdt(mem);
    msgctl(q, IPC_RMID, NULL);
    shmctl(m, IPC_RMID, NULL);
}

/* `python3 -c FD_TRICKS WS OUT VICTIM`: ways to reach a file outside
 * through fds rather than its name (an O_TMPFILE linked out, an O_PATH fd
 * reopened, chmod or fchmodat2 through it, renameat2's exchange, a hard
 * link in); one line "NAME DONE" or "NAME denied ERRNO" each. */
static const char fd_tricks_py[] =
    "import os, sys, ctypes\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "ws, out, victim = sys.argv[1:4]\n"
    "def t(name, f):\n"
    "    try:\n"
    "        f(); print(name, \"DONE\")\n"
    "    except OSError as e:\n"
    "        print(name, \"denied\", e.errno)\n"
    "def tmpfile_link():\n"
    "    fd = os.open(ws, os.O_TMPFILE | os.O_WRONLY, 0o644)\n"
    "    os.write(fd, b\"x\")\n"
    "    os.link(\"/proc/self/fd/%d\" % fd, out + \"/tmplinked\", follow_symlinks=True)\n"
    "def tmpfile_linkat_empty():\n"
    "    fd = os.open(ws, os.O_TMPFILE | os.O_WRONLY, 0o644)\n"
    "    r = libc.linkat(fd, b\"\", -100, (out + \"/tmplinked2\").encode(), 0x1000)\n"
    "    if r != 0: raise OSError(ctypes.get_errno(), \"linkat\")\n"
    "def reopen_opath():\n"
    "    fd = os.open(victim, os.O_PATH)\n"
    "    w = os.open(\"/proc/self/fd/%d\" % fd, os.O_WRONLY | os.O_TRUNC)\n"
    "    os.write(w, b\"pwned\\n\")\n"
    "def exchange():\n"
    "    open(ws + \"/mine\", \"w\").write(\"mine\\n\")\n"
    "    r = libc.renameat2(-100, (ws + \"/mine\").encode(), -100, victim.encode(), 2)\n"
    "    if r != 0: raise OSError(ctypes.get_errno(), \"renameat2\")\n"
    "def link_victim_in():\n"
    "    os.link(victim, ws + \"/victimlink\")\n"
    "def chmod_via_proc():\n"
    "    fd = os.open(victim, os.O_PATH)\n"
    "    os.chmod(\"/proc/self/fd/%d\" % fd, 0o777)\n"
    "def truncate_opath():\n"
    "    os.truncate(victim, 0)\n"
    "def fchmodat_empty():\n"
    "    fd = os.open(victim, os.O_PATH)\n"
    "    r = libc.syscall(452, fd, b\"\", 0o777, 0x1000)\n"
    "    if r != 0: raise OSError(ctypes.get_errno(), \"fchmodat2\")\n"
    "for n, f in [(\"tmpfile_link\", tmpfile_link), (\"tmpfile_linkat_empty\", "
    "tmpfile_linkat_empty), (\"reopen_opath\", reopen_opath), (\"exchange\", exchange), "
    "(\"link_victim_in\", link_victim_in), (\"chmod_via_proc\", chmod_via_proc), (\"truncate\", "
    "truncate_opath), (\"fchmodat2_empty\", fchmodat_empty)]:\n"
    "    t(n, f)\n";

/* Every trick is refused under both policies, the victim unchanged and
 * nothing made outside; without a sandbox most of them work. */
static void
test_fd_tricks_outside(void **state)
{
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {"/usr/bin/python3", "-c", fd_tricks_py, g.ws, g.out, g.victim, NULL};
        struct sbx_result r;
        sbx_run(confining(i), g.ws, NULL, argv, NULL, &r);
        sbx_assert_code(&r, 0);
        if (strstr(r.res.out, "DONE") != NULL ||
            strstr(r.res.out, "fchmodat2_empty denied") == NULL)
            fail_msg("%s: %s", i == 0 ? "read-only" : "workspace-write", r.res.out);
        sbx_result_free(&r);
        assert_victim_untouched();
        char *linked = in(g.out, "tmplinked2");
        assert_int_equal(access(linked, F_OK), -1);
        free(linked);
        char *mine = in(g.ws, "mine");
        unlink(mine);
        free(mine);
    }
    /* control, on a scratch victim of its own */
    char *out = tmpdir_new("fdtricks");
    char *victim = in(out, "victim");
    tmpdir_write_file(victim, "original\n", 0666);
    give_to_user(out);
    give_to_user(victim);
    const char *argv[] = {"/usr/bin/python3", "-c", fd_tricks_py, g.ws, out, victim, NULL};
    struct sbx_result r;
    sbx_run("{\"type\":\"danger-full-access\"}", g.ws, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 0);
    if (strstr(r.res.out, "reopen_opath DONE") == NULL ||
        strstr(r.res.out, "exchange DONE") == NULL)
        fail_msg("control: %s", r.res.out);
    sbx_result_free(&r);
    char *mine = in(g.ws, "mine");
    unlink(mine);
    free(mine);
    tmpdir_remove(out);
    free(victim);
    free(out);
}

/* `python3 -c OWN_NS_PY HIDDEN OUT`: in a mount namespace of its own,
 * and in a user and mount namespace of its own (where it would hold every
 * capability again), takes the --hide cover off HIDDEN, remounts OUT
 * read-write, then reads what was hidden. */
static const char own_ns_py[] =
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "hid, out = sys.argv[1], sys.argv[2]\n"
    "for flags, name in ((0x00020000, \"mnt\"), (0x10000000 | 0x00020000, \"user+mnt\")):\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        r = libc.unshare(flags)\n"
    "        print(name, \"unshare\", r, ctypes.get_errno() if r else 0)\n"
    "        r = libc.umount2(hid.encode(), 2)\n"
    "        print(name, \"umount\", r, ctypes.get_errno() if r else 0)\n"
    "        r = libc.mount(None, out.encode(), None, 32 | 4096 | 16384, None)\n"
    "        print(name, \"remount-rw\", r, ctypes.get_errno() if r else 0)\n"
    "        try:\n"
    "            print(name, \"READ\", open(hid + \"/token\").read().strip())\n"
    "        except OSError as e:\n"
    "            print(name, \"read\", e.errno)\n"
    "        sys.stdout.flush()\n"
    "        os._exit(0)\n"
    "    os.waitpid(pid, 0)\n";

/* The command's own namespaces give it no mount call: the cover stays,
 * nothing is remounted, what was hidden stays unreadable. */
static void
test_hide_unmount_in_own_namespace(void **state)
{
    char *dir = in(g.out, "hidden-dir");
    char *key = in(dir, "token");
    must(mkdir(dir, 0755) == 0, "mkdir");
    tmpdir_write_file(key, "SECRET\n", 0644);
    give_to_user(dir);
    give_to_user(key);
    const char *extra[] = {"--hide", dir, NULL};
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {"/usr/bin/python3", "-c", own_ns_py, dir, g.out, NULL};
        struct sbx_result r;
        sbx_run(confining(i), g.ws, extra, argv, NULL, &r);
        sbx_assert_code(&r, 0);
        if (strstr(r.res.out, "SECRET") || !strstr(r.res.out, "mnt umount -1 1\n") ||
            !strstr(r.res.out, "user+mnt umount -1 1\n") ||
            !strstr(r.res.out, "user+mnt remount-rw -1 1\n"))
            fail_msg("%s: %s%s", i == 0 ? "read-only" : "workspace-write", r.res.out, r.res.err);
        sbx_result_free(&r);
    }
    assert_victim_untouched();
    unlink(key);
    rmdir(dir);
    free(key);
    free(dir);
}

/* The device nodes a confined command finds under /dev: the ones it
 * may use, no other. */
static const char *const usable_devices[] = {
    "/dev/full", "/dev/null", "/dev/random", "/dev/tty", "/dev/urandom", "/dev/zero",
};

static bool
usable_device(const char *path)
{
    for (size_t i = 0; i < sizeof usable_devices / sizeof usable_devices[0]; i++) {
        if (strcmp(path, usable_devices[i]) == 0)
            return true;
    }
    return strncmp(path, "/dev/pts/", 9) == 0; /* the sandbox's own instance */
}

/*
 * The host's other devices (consoles and their screens, disks, loop
 * devices, the kernel log, hardware...) are not there: a root server's
 * command could otherwise read a disk under every --hide cover, or a
 * console's screen.  The usual ones still work, and so do /dev/fd and
 * /dev/stdin.
 */
static void
test_other_devices(void **state)
{
    for (int i = 0; i < 2; i++) {
        struct sbx_result r;
        sbx_sh(confining(i), g.ws,
               "find /dev -xdev -mindepth 1 \\( -type c -o -type b \\) -print 2>/dev/null;"
               "find /dev/pts -mindepth 1 -print 2>/dev/null;"
               "echo x > /dev/null && head -c 1 /dev/urandom | wc -c | grep -q 1 &&"
               " echo in | cat /dev/stdin && echo fd | cat /dev/fd/0 && echo usual-ok",
               &r);
        char *text = strdup(r.res.out);
        must(text != NULL, "strdup");
        bool ok = strstr(text, "in\nfd\nusual-ok\n") != NULL;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            if (line[0] == '/' && !usable_device(line))
                fail_msg("%s: %s is there: [%s]", i == 0 ? "read-only" : "workspace-write", line,
                         r.res.out);
        }
        if (!ok)
            fail_msg("%s: the usual devices: [%s] %s", i == 0 ? "read-only" : "workspace-write",
                     r.res.out, r.res.err);
        free(text);
        sbx_result_free(&r);
    }
}

/* The listener saw nothing: no connection queued, no datagram. */
static void
assert_listeners_quiet(void)
{
    int c = accept(g.tcp, NULL, NULL);
    assert_int_equal(c, -1);
    assert_int_equal(errno, EAGAIN);
    char buf[16];
    assert_int_equal(recv(g.udp, buf, sizeof buf, MSG_DONTWAIT), -1);
    assert_int_equal(errno, EAGAIN);
}

static void
drain_listeners(void)
{
    int c;
    while ((c = accept(g.tcp, NULL, NULL)) >= 0)
        close(c);
    char buf[16];
    while (recv(g.udp, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
}

static void
test_network(void **state)
{
    assert_denied_by("tcp", g.tcp_port, "", "denied: socket: Operation not permitted");
    assert_denied("udp", g.udp_port, "");
    assert_denied("tcp6", "", "");
    assert_denied("raw", "", "");
    assert_denied("packet", "", "");
    assert_denied("netlink", "", "");
    assert_denied_by("io_uring", "", "", "denied: io_uring_setup: Operation not permitted");
    assert_listeners_quiet();
    assert_escapes_unsandboxed("tcp", g.tcp_port, "");
    assert_escapes_unsandboxed("udp", g.udp_port, "");
    assert_escapes_unsandboxed("io_uring", "", "");
    drain_listeners();
    /* What differs by user: root could open a raw socket without the
     * sandbox, an unprivileged user cannot anyway. */
    struct sbx_result r;
    run_attack("{\"type\":\"danger-full-access\"}", &r, "raw", "", "");
    sbx_assert_code(&r, getuid() == 0 && !g.unprivileged ? 0 : 1);
    sbx_result_free(&r);
}

static void
test_network_allowed_when_asked(void **state)
{
    char *policy = policy_text("workspace-write", ",\"network_access\":true");
    struct sbx_result r;
    run_attack(policy, &r, "tcp", g.tcp_port, "");
    sbx_assert_code(&r, 0);
    assert_true(json_is_true(json_object_get(r.report, "network")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r.report, "seccomp"), "sockets")), "any");
    sbx_result_free(&r);
    drain_listeners();
    free(policy);
}

static void
test_abstract_socket_outside(void **state)
{
    assert_denied("abstract", g.abstract_name, "");
    int c = accept(g.abstract, NULL, NULL);
    assert_int_equal(c, -1);
    assert_escapes_unsandboxed("abstract", g.abstract_name, "");
    while ((c = accept(g.abstract, NULL, NULL)) >= 0)
        close(c);
}

static void
test_proc_escapes(void **state)
{
    char *via_cwd, *via_root, *via_self;
    must(asprintf(&via_cwd, "/proc/%d/cwd/victim", (int)g.victim_pid) > 0, "");
    must(asprintf(&via_root, "/proc/%d/root%s", (int)g.victim_pid, g.victim) > 0, "");
    must(asprintf(&via_self, "/proc/self/root%s", g.victim) > 0, "");
    assert_denied("write", via_cwd, "");
    assert_denied("write", via_root, "");
    assert_denied("write", via_self, "");
    assert_victim_untouched();
    free(via_cwd);
    free(via_root);
    free(via_self);
}

/* Without the PID namespace (a kernel or distribution that refuses it, run
 * with --allow-degraded), the outside process is visible, and Landlock's
 * own scoping and ptrace rules must still stop the attacks on it. */
static void
test_outside_process_without_pid_namespace(void **state)
{
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)g.victim_pid);
    char *via_cwd;
    must(asprintf(&via_cwd, "/proc/%d/cwd/victim", (int)g.victim_pid) > 0, "");
    const char *attacks[][3] = {
        {"kill", pid, ""},
        {"ptrace", pid, ""},
        {"abstract", g.abstract_name, ""},
        {"write", via_cwd, ""},
    };
    const char *extra[] = {"--allow-degraded", NULL};
    const char *envp[] = {"PATH=/usr/bin:/bin", "EXECGATE_SANDBOX_NO_NAMESPACES=1", NULL};
    for (int i = 0; i < 2; i++) {
        for (size_t k = 0; k < sizeof attacks / sizeof attacks[0]; k++) {
            const char *argv[] = {g.attack, attacks[k][0], attacks[k][1], attacks[k][2], NULL};
            struct sbx_result r;
            sbx_run(confining(i), g.ws, extra, argv, envp, &r);
            if (r.code != 1 || strncmp(r.res.out, "denied: ", 8) != 0)
                fail_msg("attack %s without PID namespace: exit %d, %s%s", attacks[k][0], r.code,
                         r.res.out, r.res.err);
            assert_true(
                json_is_false(json_object_get(json_object_get(r.report, "namespaces"), "pid")));
            sbx_result_free(&r);
        }
    }
    victim_alive();
    assert_victim_untouched();
    int c = accept(g.abstract, NULL, NULL);
    assert_int_equal(c, -1);
    free(via_cwd);
}

/* --- what must keep working --- */

static void
sh_ok(const char *policy, const char *script, const char *want_out)
{
    struct sbx_result r;
    sbx_sh(policy, g.ws, script, &r);
    sbx_assert_code(&r, 0);
    if (want_out != NULL && strcmp(r.res.out, want_out) != 0)
        fail_msg("%s: stdout \"%s\", wanted \"%s\"; stderr %s", script, r.res.out, want_out,
                 r.res.err);
    sbx_result_free(&r);
}

static void
test_works_compiler(void **state)
{
    sh_ok(g.ws_write,
          "printf '#include <stdio.h>\\nint main(void){puts(\"built\");return 0;}\\n' > hello.c"
          " && gcc -o hello hello.c && ./hello && rm hello hello.c",
          "built\n");
}

static void
test_works_git_python_pipes(void **state)
{
    for (int i = 0; i < 2; i++) {
        const char *p = i == 0 ? g.ro : g.ws_write;
        sh_ok(p, "git status --porcelain --untracked-files=no >/dev/null && echo clean", "clean\n");
        sh_ok(p, "/usr/bin/python3 -c 'print(6*7)' | tr 4 X", "X2\n");
        sh_ok(p, "echo gone > /dev/null && head -c 4 /dev/zero | wc -c", "4\n");
    }
}

/* In a root without .git, `git init` works (nothing is made or kept
 * read-only for a missing .git), and what remains after the call is the
 * repository it made, and no .codex. */
static void
test_works_git_init_without_git(void **state)
{
    char *ws = codex_workspace();
    char *policy = codex_policy(ws);
    struct sbx_result r;
    sbx_sh(policy, ws, "git init -q . && test -d .git/hooks && echo made", &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "made\n");
    sbx_result_free(&r);
    char *after = listing(ws);
    assert_string_equal(after, ".git 4\nd 4\nf 8\n");
    free(after);
    free(policy);
    tmpdir_remove(ws);
    free(ws);
}

static void
test_works_unix_sockets_inside(void **state)
{
    char *sock = in(g.ws, "inside.sock");
    const char *argv[] = {g.attack, "unix-inside", sock, NULL};
    struct sbx_result r;
    sbx_run(g.ws_write_notmp, g.ws, NULL, argv, NULL, &r);
    sbx_assert_code(&r, 0);
    assert_string_equal(r.res.out, "ok: ping\n");
    sbx_result_free(&r);
    unlink(sock);
    free(sock);
}

static void
test_tmp_writes(void **state)
{
    char *script;
    must(asprintf(&script, "echo t > /tmp/execgate-sbx-%d && cat /tmp/execgate-sbx-%d",
                  (int)getpid(), (int)getpid()) > 0,
         "");
    sh_ok(g.ws_write, script, "t\n");
    char *file;
    must(asprintf(&file, "/tmp/execgate-sbx-%d-b", (int)getpid()) > 0, "");
    assert_denied("write", file, ""); /* read-only, and /tmp excluded */
    assert_int_equal(access(file, F_OK), -1);
    free(file);
    must(asprintf(&file, "/tmp/execgate-sbx-%d", (int)getpid()) > 0, "");
    unlink(file);
    free(file);
    free(script);
}

static void
test_sees_only_its_processes(void **state)
{
    /* /proc of the sandbox, listed by the shell itself (no child racing
     * the listing): its init and the shell, nothing of the host. */
    sh_ok(g.ws_write, "set -- /proc/[0-9]*; echo $# $*", "2 /proc/1 /proc/2\n");
}

static bool
array_has(const json_t *arr, const char *want)
{
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (strcmp(json_string_value(json_array_get(arr, i)), want) == 0)
            return true;
    return false;
}

static void
test_identity_and_report(void **state)
{
    struct sbx_result r;
    sbx_sh(g.ws_write, g.ws, "id -u", &r);
    sbx_assert_code(&r, 0);
    char want[32];
    snprintf(want, sizeof want, "%u\n", g.unprivileged ? (unsigned)g.user.uid : (unsigned)getuid());
    assert_string_equal(r.res.out, want);
    json_t *ns = json_object_get(r.report, "namespaces");
    assert_true(json_is_true(json_object_get(ns, "user")));
    assert_true(json_is_true(json_object_get(ns, "pid")));
    assert_true(json_is_true(json_object_get(ns, "proc")));
    json_t *ll = json_object_get(r.report, "landlock");
    assert_true(json_integer_value(json_object_get(ll, "abi")) >= 6);
    assert_int_equal(json_array_size(json_object_get(ll, "scoped")), 2);
    assert_int_equal(json_array_size(json_object_get(r.report, "degraded")), 0);
    assert_true(json_is_true(json_object_get(r.report, "no_new_privs")));
    assert_string_equal(json_string_value(json_object_get(r.report, "policy")), "workspace-write");
    assert_string_equal(json_string_value(json_object_get(r.report, "readable")), "all");
    char *git = in(g.ws, ".git");
    assert_true(array_has(json_object_get(r.report, "read_only"), git));
    assert_true(array_has(json_object_get(r.report, "writable"), g.ws));
    assert_true(array_has(json_object_get(r.report, "writable"), "/tmp"));
    assert_true(array_has(json_object_get(ll, "fs"), "truncate"));
    assert_true(array_has(json_object_get(ll, "net"), "connect_tcp"));
    json_t *sc = json_object_get(r.report, "seccomp");
    assert_string_equal(json_string_value(json_object_get(sc, "sockets")), "unix-only");
    assert_true(array_has(json_object_get(sc, "denied"), "io_uring_setup"));
    assert_true(array_has(json_object_get(sc, "denied"), "chroot"));
    assert_true(array_has(json_object_get(sc, "denied"), "chmod(S_ISUID|S_ISGID)"));
    assert_true(json_is_true(json_object_get(r.report, "read_only_world")));
    assert_true(array_has(json_object_get(r.report, "capabilities_dropped"), "setfcap"));
    free(git);
    sbx_result_free(&r);

    /* read-only: nothing writable but devices, and nothing to protect. */
    sbx_sh(g.ro, g.ws, "true", &r);
    sbx_assert_code(&r, 0);
    assert_int_equal(json_array_size(json_object_get(r.report, "writable")), 0);
    assert_int_equal(json_array_size(json_object_get(r.report, "read_only")), 0);
    assert_string_equal(json_string_value(json_object_get(r.report, "policy")), "read-only");
    assert_true(json_is_true(json_object_get(r.report, "read_only_world")));
    sbx_result_free(&r);
}

/* The build tree may sit where the test user cannot reach it (a checkout
 * under /root): run copies of the helper and the attack program from a
 * directory of their own in /tmp instead. */
static char *programs_dir;

static void
copy_programs_for_user(void)
{
    programs_dir = tmpdir_new("sbxbin");
    must(chmod(programs_dir, 0755) == 0, "chmod");
    char *helper = tmpdir_path(programs_dir, "execgate-sandbox");
    char *attack = tmpdir_path(programs_dir, "sandbox-attack");
    const char *cp_helper[] = {"/bin/cp", sbx_helper(), helper, NULL};
    const char *cp_attack[] = {"/bin/cp", g.attack, attack, NULL};
    run_ok(cp_helper, NULL);
    run_ok(cp_attack, NULL);
    must(chmod(helper, 0755) == 0 && chmod(attack, 0755) == 0, "chmod");
    must(setenv("EXECGATE_TEST_SANDBOX", helper, 1) == 0, "setenv");
    g.attack = attack; /* kept for the whole run; freed at exit */
    free(helper);
}

/* Some distributions refuse unprivileged user namespaces.  There the
 * helper must refuse too (exit 125, naming the namespace), never run less
 * confined; the attack suite then has nothing to attack for this user. */
static bool
userns_refused_for_user(void)
{
    struct sbx_result r;
    const char *argv[] = {"/bin/true", NULL};
    sbx_run("{\"type\":\"read-only\",\"sandboxCwd\":\"/\"}", "/", NULL, argv, NULL, &r);
    bool refused = r.code == 125 && strstr(r.res.err, "namespace") != NULL;
    if (!refused && r.code != 0) {
        fprintf(stderr, "probe: exit %d: %s\n", r.code, r.res.err);
        abort();
    }
    sbx_result_free(&r);
    return refused;
}

/* A network namespace made by this process's user (root, or the test
 * user's when unprivileged: not), open at fd 9 for the helper; -1 when
 * none can be made here. */
static int
foreign_netns_at_9(void)
{
    int ready[2];
    must(pipe2(ready, O_CLOEXEC) == 0, "pipe");
    pid_t pid = fork();
    must(pid >= 0, "fork");
    if (pid == 0) {
        char ok = unshare(CLONE_NEWNET) == 0 ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(ready[1]);
    char ok = 'n';
    int fd = -1;
    if (read(ready[0], &ok, 1) == 1 && ok == 'y') {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
        fd = open(path, O_RDONLY);
    }
    close(ready[0]);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (fd < 0)
        return -1;
    must(dup2(fd, 9) == 9, "dup2");
    close(fd);
    return 9;
}

/* --net-ns-fd with the network off: a namespace the helper cannot join
 * leaves the command no network at all (an IP socket refused), and the
 * report says so; one it may join gives it IP sockets there. */
static void
net_ns_case(const char *policy, bool joinable)
{
    const char *extra[] = {"--net-ns-fd", "9", NULL};
    const char *argv[] = {
        "/usr/bin/python3", "-c",
        "import socket\n"
        "try:\n"
        "    socket.socket(socket.AF_INET, socket.SOCK_STREAM); print(\"ip made\")\n"
        "except OSError as e: print(\"ip refused\", e.errno)",
        NULL};
    struct sbx_result r;
    sbx_run(policy, g.ws, extra, argv, NULL, &r);
    sbx_assert_code(&r, 0);
    json_t *joined = json_object_get(r.report, "session_network");
    if (!json_is_boolean(joined) || json_is_true(joined) != joinable ||
        strstr(r.res.out, joinable ? "ip made" : "ip refused 1") == NULL)
        fail_msg("--net-ns-fd (joinable %d): session_network %s, stdout %s, stderr %s", joinable,
                 joined ? (json_is_true(joined) ? "true" : "false") : "absent", r.res.out,
                 r.res.err);
    if (!joinable && strstr(r.res.err, "the command has no network") == NULL)
        fail_msg("--net-ns-fd: no reason on stderr: %s", r.res.err);
    sbx_result_free(&r);
}

/* A session's network namespace as the keeper makes it (a user namespace
 * of its own owns it, root mapped to root), open at fd 9, in whose user
 * namespace no further user namespace may be made: as when the user's
 * count of user namespaces has run out.  The helper joins it, then cannot
 * nest its own.  Returns 9, or -1 when none can be made here. */
static int
full_netns_at_9(void)
{
    int ready[2], go[2];
    must(pipe2(ready, O_CLOEXEC) == 0 && pipe2(go, O_CLOEXEC) == 0, "pipe");
    pid_t pid = fork();
    must(pid >= 0, "fork");
    if (pid == 0) {
        char ok = unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1 || read(go[0], &ok, 1) != 1)
            _exit(1);
        /* mapped now: root here, with every capability over this one */
        int fd = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
        ok = fd >= 0 && write(fd, "0", 1) == 1 ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    char ok = 'n';
    int fd = -1;
    if (read(ready[0], &ok, 1) == 1 && ok == 'y') {
        char path[64];
        for (int k = 0; k < 2 && ok == 'y'; k++) {
            snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, k ? "gid_map" : "uid_map");
            int m = open(path, O_WRONLY | O_CLOEXEC);
            ok = m >= 0 && write(m, "0 0 1", 5) == 5 ? 'y' : 'n';
            if (m >= 0)
                close(m);
        }
        must(write(go[1], &ok, 1) == 1, "go");
        if (ok == 'y' && read(ready[0], &ok, 1) == 1 && ok == 'y') {
            snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
            fd = open(path, O_RDONLY);
        }
    }
    close(ready[0]);
    close(go[1]);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (fd < 0)
        return -1;
    must(dup2(fd, 9) == 9, "dup2");
    close(fd);
    return 9;
}

/* The helper joins the session's network by entering the user namespace
 * that owns it, so that its own nests there and the command holds no
 * capability over the network every call of the session shares.  Where it
 * cannot nest one (no user namespace left to make), it went on without,
 * and a root command held all of them there: it could take the session's
 * loopback down.  It must refuse to run the command instead. */
static void
test_net_ns_without_nested_user_ns(void **state)
{
    (void)state;
    if (g.unprivileged || getuid() != 0) {
        printf("needs root to map root in a user namespace of its own: skipped\n");
        skip();
    }
    const char *extra[] = {"--net-ns-fd", "9", NULL};
    const char *argv[] = {
        "/usr/bin/python3", "-c",
        "import fcntl, socket, struct\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "f = struct.unpack('16sH14x', fcntl.ioctl(s, 0x8913, struct.pack('16sH14x', b'lo', "
        "0)))[1]\n"
        "try:\n"
        "    fcntl.ioctl(s, 0x8914, struct.pack('16sH14x', b'lo', f & ~1)); print('lo down')\n"
        "except OSError as e: print('lo refused', e.errno)",
        NULL};
    for (int i = 0; i < 2; i++) {
        if (full_netns_at_9() != 9) {
            printf("no user namespace here: skipped\n");
            skip();
        }
        struct sbx_result r;
        sbx_run(confining(i), g.ws, extra, argv, NULL, &r);
        close(9);
        if (strstr(r.res.out, "lo down") != NULL || r.code == 0)
            fail_msg("%s: the command ran in the session's network without a user namespace of "
                     "its own: code %d, stdout %s, stderr %s",
                     confining(i), r.code, r.res.out, r.res.err);
        if (strstr(r.res.err, "user namespace") == NULL)
            fail_msg("no reason on stderr: %s", r.res.err);
        sbx_result_free(&r);
    }
}

/* The PID namespace's init is outside the command's seccomp filter and
 * Landlock domain (it starts the command and loads neither), and it holds
 * every capability of the sandbox's user namespace, which the command
 * holds too: only Landlock's rule that a domain cannot trace out of itself
 * kept the command from attaching to it.  Without Landlock (a kernel that
 * has none, --allow-degraded), the command attached and could make the
 * init run any call, its filter not in the way.  The init must not be
 * traceable, with Landlock or without. */
static void
test_pid_ns_init_not_traceable(void **state)
{
    (void)state;
    const char *script = "import ctypes, os\n"
                         "libc = ctypes.CDLL(None, use_errno=True)\n"
                         "libc.ptrace.argtypes = [ctypes.c_long] * 2 + [ctypes.c_void_p] * 2\n"
                         "r = libc.ptrace(16, 1, None, None)\n"
                         "print('attach', r, ctypes.get_errno(), flush=True)\n"
                         "if r == 0:\n"
                         "    os.waitpid(1, 0x40000000)\n"
                         "    libc.ptrace(17, 1, None, None)\n"
                         "fd = os.pidfd_open(1) if hasattr(os, 'pidfd_open') else -1\n"
                         "libc.syscall.argtypes = [ctypes.c_long] * 4\n"
                         "g = libc.syscall(438, fd, 0, 0) if fd >= 0 else -1\n"
                         "print('getfd', g if g < 0 else 'ok')\n";
    const char *argv[] = {"/usr/bin/python3", "-c", script, NULL};
    const char *degrade[] = {"--allow-degraded", NULL};
    const char *no_landlock[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C",
                                 "EXECGATE_SANDBOX_MAX_ABI=0", NULL};
    for (int i = 0; i < 4; i++) {
        struct sbx_result r;
        sbx_run(confining(i % 2), g.ws, i < 2 ? NULL : degrade, argv, i < 2 ? NULL : no_landlock,
                &r);
        json_t *pidns = json_object_get(json_object_get(r.report, "namespaces"), "pid");
        if (!json_is_true(pidns)) {
            sbx_result_free(&r);
            continue; /* no init to attack */
        }
        sbx_assert_code(&r, 0);
        if (strstr(r.res.out, "attach -1 1\n") == NULL || strstr(r.res.out, "getfd -1\n") == NULL)
            fail_msg("%s%s: the init was traced or its fd taken: %s%s", confining(i % 2),
                     i < 2 ? "" : " without Landlock", r.res.out, r.res.err);
        sbx_result_free(&r);
    }
}

static void
test_net_ns_fd_fails_closed(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        /* not a namespace at all */
        int null = open("/dev/null", O_RDONLY);
        must(null >= 0 && dup2(null, 9) == 9, "dup2");
        close(null);
        net_ns_case(confining(i), false);
        /* a namespace of another user's (root's, for the test user): it
         * cannot enter the user namespace that owns it */
        close(9);
        if (foreign_netns_at_9() == 9)
            net_ns_case(confining(i), !g.unprivileged);
        close(9);
    }
}

int
main(void)
{
    sbx_helper();
    g.attack = getenv("EXECGATE_TEST_ATTACK");
    if (g.attack == NULL) {
        fprintf(stderr, "EXECGATE_TEST_ATTACK is not set\n");
        return 1;
    }
    const char *u = getenv("EXECGATE_TEST_UNPRIVILEGED");
    if (u != NULL && strcmp(u, "1") == 0) {
        if (getuid() != 0) {
            fprintf(stderr, "not root: the main run is already the unprivileged one\n");
            return 77; /* meson: skipped */
        }
        g.unprivileged = true;
        test_user_create(&g.user);
        sbx_set_prefix(g.user.prefix);
        copy_programs_for_user();
        if (userns_refused_for_user()) {
            printf("unprivileged user namespaces are refused here, and the helper refused "
                   "with 125 (fail-closed): no attack suite for this user\n");
            return 77; /* meson: skipped */
        }
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_outside),
        cmocka_unit_test(test_symlink_pointing_out),
        cmocka_unit_test(test_hardlink_pointing_out),
        cmocka_unit_test(test_rename_out),
        cmocka_unit_test(test_git_protected),
        cmocka_unit_test(test_codex_protected),
        cmocka_unit_test(test_gitdir_file_protected),
        cmocka_unit_test(test_codex_missing_concurrent_calls),
        cmocka_unit_test(test_codex_missing_helper_killed),
        cmocka_unit_test(test_codex_made_by_user_kept),
        cmocka_unit_test(test_codex_placeholder_of_another_user),
        cmocka_unit_test(test_protect_server_state),
        cmocka_unit_test(test_protect_in_unwritable_owned_dir),
        cmocka_unit_test(test_hide_paths),
        cmocka_unit_test(test_hide_not_moved_away),
        cmocka_unit_test(test_metadata_outside),
        cmocka_unit_test(test_writable_roots_nosuid_nodev),
        cmocka_unit_test(test_no_planted_privilege),
        cmocka_unit_test(test_mount_chroot_hostname),
        cmocka_unit_test(test_keyring_and_tty_injection),
        cmocka_unit_test(test_kill_and_ptrace_outside),
        cmocka_unit_test(test_other_terminals),
        cmocka_unit_test(test_other_devices),
        cmocka_unit_test(test_sysv_ipc_outside),
        cmocka_unit_test(test_fd_tricks_outside),
        cmocka_unit_test(test_hide_unmount_in_own_namespace),
        cmocka_unit_test(test_network),
        cmocka_unit_test(test_network_allowed_when_asked),
        cmocka_unit_test(test_abstract_socket_outside),
        cmocka_unit_test(test_proc_escapes),
        cmocka_unit_test(test_outside_process_without_pid_namespace),
        cmocka_unit_test(test_works_compiler),
        cmocka_unit_test(test_works_git_python_pipes),
        cmocka_unit_test(test_works_git_init_without_git),
        cmocka_unit_test(test_works_unix_sockets_inside),
        cmocka_unit_test(test_tmp_writes),
        cmocka_unit_test(test_sees_only_its_processes),
        cmocka_unit_test(test_identity_and_report),
        cmocka_unit_test(test_net_ns_fd_fails_closed),
        cmocka_unit_test(test_net_ns_without_nested_user_ns),
        cmocka_unit_test(test_pid_ns_init_not_traceable),
    };
    int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
    if (programs_dir != NULL) {
        tmpdir_remove(programs_dir);
        free(programs_dir);
        free((char *)g.attack);
    }
    return failed;
}
