/*
 * Attacks in which a sandboxed command makes the server run programs
 * OUTSIDE the sandbox, beyond what the user's rules allowed, through the
 * whole product: the real server over stdio, the patched Bash in the real
 * sandbox (workspace-write on a scratch workdir under /tmp), the wrapper
 * and the escalated programs.  Where something ran is proved by what it
 * could write: the "outside" directory (under /var/tmp) is writable only
 * outside the sandbox, so a file appearing there means an escalated
 * program did the attacker's bidding.
 *
 * Each attack test asserts that nothing appeared outside (or that the
 * victim survived, or that the person was shown what really runs); the
 * "still works" tests show that what the rules do allow still escalates;
 * the last test states what the escalated environment is to be.
 *
 * Variants (tests/integration/meson.build): EXECGATE_TEST_EXTRA is one more
 * server argument (--exec-enforcement=shell); with
 * EXECGATE_TEST_UNPRIVILEGED=1 and started as root the suite creates a
 * test user and runs the server as that user (setpriv), with the world's
 * directories owned by it, so that only the sandbox stands between the
 * command and the user's files (skipped, 77, when not root or when the
 * user cannot make user namespaces).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/attack_suite.h"
#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/proc.h"
#include "tests/support/test_user.h"
#include "tests/support/tmpdir.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the world ---- */

static struct mcp_world *
world_start_opts(const char *rules, bool elicitation, bool no_rules, const char *env)
{
    const struct mcp_world_options o = {.elicitation = elicitation,
                                        .extra = attack_suite_extra(),
                                        .env = env,
                                        .no_rules = no_rules};
    struct mcp_world *w = attack_world_start(rules, &o);
    const struct test_user *u = attack_suite_user();
    if (u) { /* the server (setpriv exec'd it) runs as the test user */
        char *status = mcp_world_fmt("/proc/%d/status", (int)mcp_client_pid(w->c));
        char *text = tmpdir_read_file(status, NULL);
        assert_non_null(text);
        char *want = mcp_world_fmt("\nUid:\t%u\t%u\t", (unsigned)u->uid, (unsigned)u->uid);
        mcp_world_assert_contains(text, want);
        free(want);
        free(text);
        free(status);
    }
    return w;
}

static struct mcp_world *
world_start(const char *rules, bool elicitation)
{
    return world_start_opts(rules, elicitation, false, NULL);
}

/* A top-level repository in the workdir made outside the sandbox (so the
 * sandbox keeps its .git read-only), with one commit when asked, owned by
 * the server's user. */
static void
protected_repo(struct mcp_world *w, bool commit)
{
    const char *init[] = {"/usr/bin/git", "-C", w->wd, "init", "-q", NULL};
    attack_outside_run(init, NULL, NULL);
    if (commit) {
        const char *ci[] = {"/usr/bin/git",
                            "-C",
                            w->wd,
                            "-c",
                            "user.name=execgate test",
                            "-c",
                            "user.email=test@execgate.invalid",
                            "commit",
                            "-q",
                            "--allow-empty",
                            "-m",
                            "first commit",
                            NULL};
        attack_outside_run(ci, NULL, NULL);
    }
}

static char *
read_or_empty(const char *path)
{
    char *s = tmpdir_read_file(path, NULL);
    return s ? s : strdup("");
}

/* ---- a program's name is not what it is ---- */

/* Python for `python3 exec.py HOW SRC NAME ARGS...`: execs a copy of SRC
 * under the name NAME without a path the rules could read: from a memfd
 * (HOW memfd) or through an O_PATH fd of SRC (HOW opath). */
static const char fd_exec_py[] =
    "import os, sys\n"
    "how, src, name = sys.argv[1:4]\n"
    "if how == 'memfd':\n"
    "    fd = os.memfd_create(name, 0)\n"
    "    os.write(fd, open(src, 'rb').read())\n"
    "else:\n"
    "    fd = os.open(src, os.O_PATH)\n"
    "os.execve(fd, [os.path.basename(name)] + sys.argv[4:], dict(os.environ))\n";

/* `touch` is allowed; the command execs cp's code by fd, named touch (a
 * memfd called "touch" or ".../usr/bin/touch", an O_PATH fd of a copy
 * called touch in the workdir): whatever name the server reads, it is not
 * /usr/bin/touch's file, so cp must run inside, where it cannot write
 * outside. */
static void
test_fd_exec_named_as_allowed(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n", false);
    char *py = tmpdir_path(w->wd, "exec.py");
    tmpdir_write_file(py, fd_exec_py, 0644);
    attack_own(py);
    char *cmd = mcp_world_fmt(
        "cp /bin/cp ./touch; "
        "/usr/bin/python3 exec.py memfd /bin/cp touch /etc/hostname %s/memfd; "
        "/usr/bin/python3 exec.py memfd /bin/cp x/usr/bin/touch /etc/hostname %s/memfd-path; "
        "/usr/bin/python3 exec.py opath ./touch touch /etc/hostname %s/opath; "
        "touch %s/plain; echo \"status=$?\"",
        w->outside, w->outside, w->outside, w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "memfd", a);
    attack_assert_not_outside(w, "memfd-path", a);
    attack_assert_not_outside(w, "opath", a);
    /* control: the real touch, allowed, still runs outside */
    if (!mcp_world_exists(w->outside, "plain"))
        fail_msg("the allowed touch did not run outside: [%s]", mcp_world_output(a));
    json_decref(a);
    free(cmd);
    free(py);
    attack_world_end(w);
}

/* `cat` is allowed; ./cat is a link to /bin/sh in the writable workdir:
 * the rule named cat, the server escalated sh. */
static void
test_symlink_alias_of_allowed_program(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"cat\"], decision=\"allow\")\n", false);
    char *cmd = mcp_world_fmt(
        "ln -s /bin/sh cat; printf 'touch %s/alias\\n' > s; ./cat s; echo \"status=$?\"",
        w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "alias", a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* `git status` is allowed and rm forbidden; ./git is a link to rm: the
 * forbidden rule must win, since the program really is rm. */
static void
test_forbidden_program_through_allowed_alias(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n",
                    false);
    char *victim = tmpdir_path(w->outside, "victim");
    assert_int_equal(mkdir(victim, 0755), 0);
    char *file = tmpdir_path(victim, "file");
    tmpdir_write_file(file, "keep me\n", 0644);
    attack_own(victim);
    char *cmd = mcp_world_fmt("ln -s /bin/rm git; ./git status -rf %s; echo \"status=$?\"", victim);
    json_t *a = attack_run(w, cmd, NULL);
    if (!mcp_world_exists(victim, "file"))
        fail_msg("%s was removed by the escalated rm\noutput: [%s]", file, mcp_world_output(a));
    mcp_world_assert_contains(mcp_world_output(a),
                              "Execution denied: Execution forbidden by policy");
    json_decref(a);
    free(cmd);
    free(file);
    free(victim);
    attack_world_end(w);
}

/* A prompt for ./cat (a link to sh): the person must be shown sh, and a
 * link in the writable workdir is never escalated even when approved. */
static void
test_prompt_shows_what_really_runs(void **state)
{
    char real_sh[PATH_MAX];
    assert_non_null(realpath("/bin/sh", real_sh));
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"cat\"], decision=\"prompt\")\n", true);
    struct mcp_answers ans = {.action = "accept"};
    char *cmd = mcp_world_fmt("ln -s /bin/sh cat; printf 'touch %s/p\\n' > s; ./cat s; "
                              "echo \"status=$?\"",
                              w->outside);
    json_t *a = attack_run(w, cmd, &ans);
    assert_true(ans.asked >= 1);
    if (!strstr(ans.last_message, real_sh))
        fail_msg("the question does not name %s, the program that would run: [%s]", real_sh,
                 ans.last_message);
    attack_assert_not_outside(w, "p", a);
    json_decref(a);
    free(cmd);
    free(ans.last_message);
    attack_world_end(w);
}

/* `python3 malformed.py SEED N`: N sessions on the escalation socket,
 * each malformed one way (a random first datagram, a header lying about
 * its length, FDS before REQUEST with odd targets, two REQUESTs and an
 * FDS with too many targets, random frames of any type and version, a
 * SIGNAL with odd numbers and a frame cut short), from a fixed seed. */
static const char malformed_py[] =
    "import os, socket, struct, random, array, sys, time\n"
    "s = socket.socket(fileno=int(os.environ['CODEX_ESCALATE_SOCKET']))\n"
    "def frame(t, body=b'', ver=2, ln=None): return struct.pack('<IHH', len(body) if ln is None "
    "else ln, ver, t) + body\n"
    "def st(b): return struct.pack('<I', len(b)) + b\n"
    "random.seed(int(sys.argv[1]))\n"
    "valid_req = st(b'/bin/true') + struct.pack('<I', 1) + st(b'true') + st(os.getcwd().encode()) "
    "+ struct.pack('<I', 0)\n"
    "n_ok = 0\n"
    "for i in range(int(sys.argv[2])):\n"
    "    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)\n"
    "    kind = random.randrange(6)\n"
    "    try:\n"
    "        if kind == 0:   # first datagram a random REQUEST body\n"
    "            body = bytes(random.randrange(256) for _ in range(random.randrange(64)))\n"
    "            s.sendmsg([frame(2, body)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, "
    "array.array('i', [b.fileno()]))])\n"
    "        else:\n"
    "            s.sendmsg([frame(1)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', "
    "[b.fileno()]))])\n"
    "            b.close()\n"
    "            if kind == 1:  # header lies about length\n"
    "                a.sendall(frame(2, valid_req, ln=random.choice([0, 1, len(valid_req)-1, "
    "0xffffffff, 4*1024*1024+1])) + valid_req)\n"
    "            elif kind == 2:  # FDS before REQUEST, odd targets\n"
    "                a.sendmsg([frame(6, struct.pack('<I', 2) + struct.pack('<ii', -1, 99999))], "
    "[(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [0]))])\n"
    "            elif kind == 3:  # two REQUESTs, then FDS with too many targets\n"
    "                a.sendall(frame(2, valid_req) + frame(2, valid_req))\n"
    "                a.sendall(frame(6, struct.pack('<I', 200) + b'\\0' * 800))\n"
    "            elif kind == 4:  # random frames\n"
    "                for _ in range(5):\n"
    "                    t = random.randrange(12); body = os.urandom(random.randrange(40))\n"
    "                    a.sendall(frame(t, body, ver=random.choice([1, 2, 3])))\n"
    "            else:  # a REQUEST then signal and unknown msgs, then close mid-frame\n"
    "                a.sendall(frame(2, valid_req)); a.sendall(frame(7, struct.pack('<i', "
    "random.choice([1, 9, 15, 0, -5, 99]))))\n"
    "                a.sendall(struct.pack('<IHH', 100, 2, 6) + b'\\0' * 10)\n"
    "        a.settimeout(0.05)\n"
    "        try:\n"
    "            a.recv(4096)\n"
    "        except Exception:\n"
    "            pass\n"
    "        n_ok += 1\n"
    "    except Exception as e:\n"
    "        print('err', kind, e)\n"
    "    if kind != 0: pass\n"
    "    a.close()\n"
    "    try: b.close()\n"
    "    except Exception: pass\n"
    "print('sent', n_ok)\n";

/* The escalation socket fed malformed and replayed messages from inside
 * the sandbox: nothing runs outside, the server stays up (a later exec is
 * still decided) and ends cleanly, with no sanitizer report. */
static void
test_escalation_socket_malformed(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n", false);
    char *py = tmpdir_path(w->wd, "malformed.py");
    tmpdir_write_file(py, malformed_py, 0644);
    attack_own(py);
    char *cmd =
        mcp_world_fmt("/usr/bin/python3 malformed.py 7 40 2>&1 | tail -n 1; touch %s/after; "
                      "echo \"status=$?\"",
                      w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "status=0");
    if (!mcp_world_exists(w->outside, "after"))
        fail_msg("the allowed touch did not run outside after the malformed sessions: [%s]",
                 mcp_world_output(a));
    json_decref(a);
    free(cmd);
    free(py);
    attack_world_end(w); /* asserts a clean exit */
}

/* Allowed sort, find and git diff, with their file-writing options
 * spelled every way GNU getopt takes them: after the operands, clustered
 * with the value attached, abbreviated, the value as the next word, and
 * with POSIXLY_CORRECT set by the command (the server's environment is
 * what counts).  Each is asked about (declined here), and nothing is
 * written outside. */
static void
test_write_options_in_gnu_spellings(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"sort\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"find\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"git\", \"diff\"], decision=\"allow\")\n",
                    true);
    struct mcp_answers ans = {.action = "decline"};
    char *cmd = mcp_world_fmt("O=%s; echo b > in.txt; sort in.txt -o $O/s1; sort -ro$O/s2 in.txt;"
                              " sort --outp=$O/s3 in.txt; sort --output $O/s4 in.txt;"
                              " POSIXLY_CORRECT=1 sort in.txt -o $O/s5; find in.txt -fprint $O/f1;"
                              " find . -maxdepth 0 -fprintf $O/f2 x;"
                              " git diff --no-index --outp=$O/g1 in.txt /etc/hostname;"
                              " git diff --no-index --output $O/g2 in.txt /etc/hostname; echo end",
                              w->outside);
    json_t *a = attack_run(w, cmd, &ans);
    mcp_world_assert_contains(mcp_world_output(a), "end\n");
    const char *names[] = {"s1", "s2", "s3", "s4", "s5", "f1", "f2", "g1", "g2"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        attack_assert_not_outside(w, names[i], a);
    if (ans.asked != 9)
        fail_msg("%d questions for 9 writes outside: [%s]", ans.asked, mcp_world_output(a));
    json_decref(a);
    free(cmd);
    free(ans.last_message);
    attack_world_end(w);
}

/* The question cannot be dressed up: a workdir and arguments with
 * terminal escapes, a carriage return, a newline and a right-to-left
 * override (made in the sandbox) are shown escaped, so the person sees
 * the real command and directory, not text drawn over them. */
static void
test_question_escapes_what_it_shows(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"touch\"], decision=\"prompt\")\n", true);
    struct mcp_answers ans = {.action = "decline"};
    json_t *a = attack_run(w,
                           "d=$'x\\e[2K\\rin /home/u/safe\\n'; mkdir -p \"$d\" && cd \"$d\" && "
                           "touch $'\\e[1A\\rok' $'\\u202eevil'; echo \"status=$?\"",
                           &ans);
    assert_int_equal(ans.asked, 1);
    for (const char *c = ans.last_message; *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            fail_msg("the question holds control character 0x%02x: [%s]", (unsigned char)*c,
                     ans.last_message);
    }
    if (strstr(ans.last_message, "\xe2\x80\xae")) /* U+202E itself */
        fail_msg("the question holds a right-to-left override: [%s]", ans.last_message);
    mcp_world_assert_contains(ans.last_message, "\\x1b[2K\\rin /home/u/safe\\n");
    mcp_world_assert_contains(ans.last_message, "\\u{202E}evil");
    json_decref(a);
    free(ans.last_message);
    attack_world_end(w);
}

/* `./cat s` approved for the session while ./cat is cat; then the link is
 * pointed at sh and the same `./cat s` comes again. */
static void
test_session_approval_then_repoint(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"cat\"], decision=\"prompt\")\n", true);
    struct mcp_answers ans = {.action = "accept", .decision = "approved_for_session"};
    char *cmd =
        mcp_world_fmt("ln -s /bin/cat cat; printf 'touch %s/re\\n' > s; ./cat s", w->outside);
    json_t *a = attack_run(w, cmd, &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(mcp_world_output(a), "/re\n"); /* cat printed the script */
    json_decref(a);
    free(cmd);
    a = attack_run(w, "ln -sf /bin/sh cat; ./cat s; echo \"status=$?\"", &ans);
    attack_assert_not_outside(w, "re", a);
    json_decref(a);
    free(ans.last_message);
    attack_world_end(w);
}

/* ---- an allowed git reads what the sandbox wrote ---- */

/* A repository the sandbox made, with a hook command in its config. */
static void
test_nested_repository_made_in_sandbox(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", false);
    char *cmd = mcp_world_fmt("git init -q sub && git -C sub config core.fsmonitor 'touch %s/fsm; "
                              "false' && cd sub && git status; true",
                              w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "fsm", a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* The audit log is hidden in the call's sandbox (a cover, not only
 * read-only): the command reads nothing of it and cannot append to it;
 * the log keeps what it had.  Before, it printed the log. */
static void
test_audit_log_hidden(void **state)
{
    struct mcp_world *w = world_start("", false);
    if (!w->audit) {
        attack_world_end(w);
        skip(); /* EXECGATE_TEST_NO_AUDIT=1: no log to hide */
    }
    FILE *log = fopen(w->audit, "a");
    assert_non_null(log);
    assert_true(fputs("AUDIT-MARK\n", log) >= 0);
    assert_int_equal(fclose(log), 0);
    char *cmd = mcp_world_fmt("cat %s; echo forged >> %s; echo done", w->audit, w->audit);
    json_t *a = attack_run(w, cmd, NULL);
    const char *out = mcp_world_output(a);
    mcp_world_assert_contains(out, "done");
    if (strstr(out, "AUDIT-MARK"))
        fail_msg("the sandbox read the audit log: %s", out);
    char *text = tmpdir_read_file(w->audit, NULL);
    assert_non_null(text);
    mcp_world_assert_contains(text, "AUDIT-MARK\n");
    assert_null(strstr(text, "forged"));
    free(text);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* HOME (or XDG_CONFIG_HOME) pointing at a config the sandbox wrote, in a
 * protected top-level repository: the command is made from the two
 * halves around the outside directory. */
static void
home_config_attack(const char *before_outside, const char *after_outside, const char *proof)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", false);
    protected_repo(w, false);
    char *cmd = mcp_world_fmt("%s%s%s", before_outside, w->outside, after_outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, proof, a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

static void
test_home_gitconfig(void **state)
{
    home_config_attack("mkdir h; printf '[core]\\n\\tfsmonitor = touch ",
                       "/home\\n' > h/.gitconfig; HOME=$PWD/h git status; echo \"status=$?\"",
                       "home");
}

static void
test_xdg_config_home_gitconfig(void **state)
{
    home_config_attack("mkdir -p x/git; printf '[core]\\n\\tfsmonitor = touch ",
                       "/xdg\\n' > x/git/config; XDG_CONFIG_HOME=$PWD/x git status; "
                       "echo \"status=$?\"",
                       "xdg");
}

static void
test_git_dir_env(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", false);
    char *cmd = mcp_world_fmt("git init -q sub; git -C sub config core.fsmonitor 'touch %s/gd; "
                              "false'; GIT_DIR=$PWD/sub/.git git status; echo \"status=$?\"",
                              w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "gd", a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

static void
test_gitdir_file(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", false);
    char *cmd = mcp_world_fmt("git init -q g2; git -C g2 config core.fsmonitor 'touch %s/gf; "
                              "false'; mkdir w; echo \"gitdir: $PWD/g2/.git\" > w/.git; "
                              "cd w && git status; echo \"status=$?\"",
                              w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "gf", a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* git log on a terminal starts $PAGER.  The sandboxed python opens a pty
 * and runs the patched Bash on it (with the escalation socket, which
 * subprocess would otherwise close), so the escalated git's stdout is a
 * terminal. */
static void
test_pager_through_pty(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"log\"], decision=\"allow\")\n", false);
    protected_repo(w, true);
    char *cmd = mcp_world_fmt(
        "echo \"wrapper=${EXEC_WRAPPER:+set} socket=$CODEX_ESCALATE_SOCKET "
        "bash=${EXECGATE_BASH:+set}\"; "
        "PAGER='touch %s/pager; cat' GIT_PAGER='touch %s/pager; cat' /usr/bin/python3 -c '\n"
        "import os, pty, subprocess\n"
        "m, s = pty.openpty()\n"
        "fd = int(os.environ[\"CODEX_ESCALATE_SOCKET\"])\n"
        "r = subprocess.run([os.environ[\"EXECGATE_BASH\"], \"-c\", \"git log\"],\n"
        "                   stdin=s, stdout=s, stderr=s, pass_fds=(fd,))\n"
        "os.close(s)\n"
        "out = b\"\"\n"
        "while True:\n"
        "    try:\n"
        "        b = os.read(m, 65536)\n"
        "    except OSError:\n"
        "        break\n"
        "    if not b:\n"
        "        break\n"
        "    out += b\n"
        "print(\"inner status\", r.returncode, out)\n"
        "'; echo \"status=$?\"",
        w->outside, w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    const char *out = mcp_world_output(a);
    mcp_world_assert_contains(out, "wrapper=set socket=4 bash=set\n");
    /* python could open the pty and run the inner Bash */
    mcp_world_assert_contains(out, "inner status ");
    if (w->audit) { /* the inner Bash asked the server about git log */
        char *log = read_or_empty(w->audit);
        mcp_world_assert_contains(log, "\"argv\":[\"git\",\"log\"]");
        free(log);
    }
    /* whether git log may run outside on a terminal is the server's choice;
     * its pager must not */
    attack_assert_not_outside(w, "pager", a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

static void
test_git_trace(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", false);
    protected_repo(w, false);
    char *cmd = mcp_world_fmt("GIT_TRACE=%s/trace git status; echo \"status=$?\"", w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "trace", a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

static void
test_git_log_output_option(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"log\"], decision=\"allow\")\n", false);
    protected_repo(w, true);
    char *cmd = mcp_world_fmt("git log --output=%s/log; echo \"status=$?\"", w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "log", a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* The workspace had no repository when the server first ran a command in
 * it: one the command makes at the top (bound read-only from the next call
 * on, like any top-level .git) is still the command's, and its config
 * never runs outside. */
static void
test_top_level_repository_made_in_earlier_call(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", false);
    char *cmd = mcp_world_fmt("git init -q . && git config core.fsmonitor 'touch %s/top; false'",
                              w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    json_decref(a);
    free(cmd);
    a = attack_run(w, "git status; echo \"status=$?\"", NULL);
    attack_assert_not_outside(w, "top", a);
    json_decref(a);
    attack_world_end(w);
}

/* ---- what another call's sandbox wrote ---- */

/* codex/sandbox-state/update: policy (a sandboxPolicy object's JSON text)
 * with sandboxCwd cwd, for the calls that arrive from now on. */
static void
set_sandbox(struct mcp_world *w, const char *policy, const char *cwd)
{
    json_t *p = json_loads(policy, 0, NULL);
    assert_non_null(p);
    json_t *a = mcp_client_call(w->c, "codex/sandbox-state/update",
                                json_pack("{s:o, s:s}", "sandboxPolicy", p, "sandboxCwd", cwd));
    assert_non_null(a);
    if (!json_is_object(json_object_get(a, "result"))) {
        char *text = json_dumps(a, 0);
        fail_msg("codex/sandbox-state/update %s %s: %s", policy, cwd, text ? text : "?");
    }
    json_decref(a);
}

/* `tool` is allowed, and A/tool (A outside every root of the calls'
 * policies but one) escalates: the test wrote it.  Then a call whose
 * sandbox may write A (its sandbox cwd) replaces A/tool, and the next
 * call, back under a policy that cannot write A, runs A/tool: what that
 * other sandbox wrote must not run outside. */
static void
test_program_written_by_another_calls_sandbox(void **state)
{
    struct mcp_world *w = world_start("prefix_rule(pattern=[\"tool\"], decision=\"allow\")\n"
                                      "prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n",
                                      false);
    const char *ws = "{\"type\":\"workspace-write\",\"network_access\":false,"
                     "\"exclude_slash_tmp\":true,\"exclude_tmpdir_env_var\":true}";
    char *a_dir = attack_scratch("/var/tmp", "cross-call");
    char *tool = tmpdir_path(a_dir, "tool");
    char *text = mcp_world_fmt("#!/bin/sh\ntouch %s/before\n", w->outside);
    tmpdir_write_file(tool, text, 0755);
    attack_own(a_dir);
    /* not written by any sandbox: escalated */
    set_sandbox(w, ws, w->wd);
    char *cmd = mcp_world_fmt("%s; echo \"status=$?\"", tool);
    json_t *a = attack_run(w, cmd, NULL);
    if (!mcp_world_exists(w->outside, "before"))
        fail_msg("%s did not escalate before any sandbox could write it: [%s]", tool,
                 mcp_world_output(a));
    json_decref(a);
    /* a call whose sandbox cwd is A replaces the program */
    set_sandbox(w, ws, a_dir);
    char *replace = mcp_world_fmt("printf '#!/bin/sh\\ntouch %s/cross\\n' > %s.new && "
                                  "chmod +x %s.new && mv %s.new %s; echo \"status=$?\"",
                                  w->outside, tool, tool, tool, tool);
    a = attack_run(w, replace, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "status=0\n");
    json_decref(a);
    /* the next call cannot write A, and runs it */
    set_sandbox(w, ws, w->wd);
    a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "cross", a);
    json_decref(a);
    free(replace);
    free(cmd);
    free(text);
    free(tool);
    attack_world_end(w);
}

/* A call whose sandbox cwd is P makes a repository P/sub with a command in
 * its config; the next call's sandbox cwd is P/sub, whose .git the server
 * sees there at its first command in P/sub and its helper keeps
 * read-only: but P's sandbox made it, and git status must not run it
 * outside. */
static void
test_repository_made_by_another_calls_sandbox(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", false);
    const char *ws = "{\"type\":\"workspace-write\",\"network_access\":false,"
                     "\"exclude_slash_tmp\":true,\"exclude_tmpdir_env_var\":true}";
    char *p_dir = attack_scratch("/var/tmp", "cross-repo");
    attack_own(p_dir);
    set_sandbox(w, ws, p_dir);
    char *make = mcp_world_fmt("git init -q %s/sub && git -C %s/sub config core.fsmonitor "
                               "'touch %s/fsm; false'; echo \"status=$?\"",
                               p_dir, p_dir, w->outside);
    json_t *a = attack_run(w, make, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "status=0\n");
    json_decref(a);
    char *sub = tmpdir_path(p_dir, "sub");
    set_sandbox(w, ws, sub);
    char *status = mcp_world_fmt("cd %s && git status; echo \"status=$?\"", sub);
    a = attack_run(w, status, NULL);
    attack_assert_not_outside(w, "fsm", a);
    json_decref(a);
    free(status);
    free(sub);
    free(make);
    attack_world_end(w);
}

/* An allowed prefix with an option that writes any file: a person is
 * asked, told why; declined, nothing is written. */
static void
test_dangerous_option_is_asked(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"log\"], decision=\"allow\")\n", true);
    protected_repo(w, true);
    struct mcp_answers ans = {.action = "decline"};
    char *cmd = mcp_world_fmt("git log --output=%s/log; echo \"status=$?\"", w->outside);
    json_t *a = attack_run(w, cmd, &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(ans.last_message, "--output");
    mcp_world_assert_contains(ans.last_message, "An allow rule matched");
    mcp_world_assert_contains(mcp_world_output(a), "status=1");
    attack_assert_not_outside(w, "log", a);
    json_decref(a);
    free(cmd);
    /* the same prefix without the option escalates as allowed */
    a = attack_run(w, "git log --oneline; echo \"status=$?\"", &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(mcp_world_output(a), "first commit");
    json_decref(a);
    free(ans.last_message);
    attack_world_end(w);
}

/* ---- repositories, argv[0], the workdir, approvals ---- */

/* The workdir itself laid out as a git directory (HEAD, objects/, refs/)
 * with a config whose core.worktree is the workdir and whose fsmonitor
 * writes outside: git takes the directory as its repository. */
static void
test_bare_repository_in_workdir(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", false);
    char *cmd = mcp_world_fmt(
        "mkdir -p objects refs/heads && echo 'ref: refs/heads/main' > HEAD && "
        "printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = %%s\\n"
        "\\tfsmonitor = \"touch %s/bare; false\"\\n' \"$PWD\" > config && git status; "
        "echo \"status=$?\"",
        w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "bare", a);
    json_decref(a);
    free(cmd);
    /* the same from a directory below it: git walks up into it */
    cmd = mcp_world_fmt("mkdir -p objects/below && cd objects/below && git status; "
                        "echo \"status=$?\"; cd ../.. && rm -rf HEAD objects refs config");
    a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "bare", a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* git dispatches on an argv[0] of git-XXX: `exec -a git-clone git status
 * ...` made the escalated process a clone with --upload-pack. */
static void
test_argv0_chooses_git_command(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", false);
    char *cmd = mcp_world_fmt("git init -q --bare status; (exec -a git-clone git status dst "
                              "--no-local \"--upload-pack=touch %s/argv0; git-upload-pack\"); "
                              "echo \"status=$?\"",
                              w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "argv0", a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* A raw client asks for `sh -c 'touch swapped'` in $PWD/link (-> $PWD/a,
 * in the workspace), then, between ESCALATE and FDS, points the link at a
 * directory outside every writable root: the program must start in the
 * directory that was decided on. */
static const char swap_py[] =
    "import os, socket, struct, sys\n"
    "s = socket.socket(fileno=int(os.environ['CODEX_ESCALATE_SOCKET']))\n"
    "def frame(t, body=b''): return struct.pack('<IHH', len(body), 2, t) + body\n"
    "def st(b): return struct.pack('<I', len(b)) + b\n"
    "import array\n"
    "a, b = socket.socketpair()\n"
    "s.sendmsg([frame(1)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', "
    "[b.fileno()]))])\n"
    "b.close()\n"
    "wd = (os.getcwd() + '/link').encode()\n"
    "a.sendall(frame(2, st(b'/bin/sh') + struct.pack('<I', 3) + st(b'sh') + st(b'-c') + "
    "st(b'touch swapped') + st(wd) + struct.pack('<I', 0)))\n"
    "m = a.recv(8)\n"
    "os.unlink('link'); os.symlink(sys.argv[1], 'link')\n"
    "a.sendall(frame(6, struct.pack('<I', 0)))\n"
    "print('answer', m, 'exit', a.recv(100))\n";

static void
test_workdir_swapped_between_escalate_and_fds(void **state)
{
    /* touch: the escalated sh's child is decided too; allowed, it runs
     * where sh was started, which is what this test looks at */
    struct mcp_world *w = world_start("prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n"
                                      "prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n",
                                      false);
    char *victim = tmpdir_path(w->outside, "victim");
    assert_int_equal(mkdir(victim, 0777), 0);
    attack_own(victim);
    char *py = tmpdir_path(w->wd, "swap.py");
    tmpdir_write_file(py, swap_py, 0644);
    attack_own(py);
    char *cmd = mcp_world_fmt("mkdir a && ln -s a link && /usr/bin/python3 swap.py %s; "
                              "echo \"status=$?\"",
                              victim);
    json_t *a = attack_run(w, cmd, NULL);
    if (mcp_world_exists(victim, "swapped"))
        fail_msg("the escalated program ran in %s, where the link pointed after the decision\n"
                 "output: [%s]",
                 victim, mcp_world_output(a));
    mcp_world_assert_contains(mcp_world_output(a), "answer b'\\x00\\x00\\x00\\x00\\x02\\x00\\x04");
    char *decided = tmpdir_path(w->wd, "a");
    assert_true(mcp_world_exists(decided, "swapped"));
    free(decided);
    json_decref(a);
    free(cmd);
    free(py);
    free(victim);
    attack_world_end(w);
}

/* A variant: the decided workdir itself is moved aside (and a new one
 * made at its name) between ESCALATE and FDS.  The pinned directory is
 * still the one started in, but the surroundings the decision read by
 * its path are gone: the program is not started (exit 126). */
static const char move_py[] =
    "import os, socket, struct, array\n"
    "s = socket.socket(fileno=int(os.environ['CODEX_ESCALATE_SOCKET']))\n"
    "def frame(t, body=b''): return struct.pack('<IHH', len(body), 2, t) + body\n"
    "def st(b): return struct.pack('<I', len(b)) + b\n"
    "a, b = socket.socketpair()\n"
    "s.sendmsg([frame(1)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', "
    "[b.fileno()]))])\n"
    "b.close()\n"
    "wd = (os.getcwd() + '/d').encode()\n"
    "a.sendall(frame(2, st(b'/bin/sh') + struct.pack('<I', 3) + st(b'sh') + st(b'-c') + "
    "st(b'touch moved') + st(wd) + struct.pack('<I', 0)))\n"
    "m = a.recv(8)\n"
    "os.rename('d', 'd2'); os.mkdir('d')\n"
    "a.sendall(frame(6, struct.pack('<I', 0)))\n"
    "e = a.recv(100)\n"
    "print('answer', m, 'exit', struct.unpack('<IHHII', e)[3:] if len(e) == 16 else e)\n";

static void
test_workdir_moved_between_escalate_and_fds(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n", false);
    char *py = tmpdir_path(w->wd, "move.py");
    tmpdir_write_file(py, move_py, 0644);
    attack_own(py);
    json_t *a = attack_run(w, "mkdir d && /usr/bin/python3 move.py; echo \"status=$?\"", NULL);
    mcp_world_assert_contains(mcp_world_output(a), "exit (0, 126)");
    char *d = tmpdir_path(w->wd, "d"), *d2 = tmpdir_path(w->wd, "d2");
    if (mcp_world_exists(d, "moved") || mcp_world_exists(d2, "moved"))
        fail_msg("the program started after its workdir was moved\noutput: [%s]",
                 mcp_world_output(a));
    free(d);
    free(d2);
    json_decref(a);
    free(py);
    attack_world_end(w);
}

/* `rm -rf build` approved for the session in the workspace does not cover
 * the same words in another directory. */
static void
test_session_approval_remembers_the_workdir(void **state)
{
    struct mcp_world *w = world_start("prefix_rule(pattern=[\"rm\"], decision=\"prompt\")\n", true);
    char *victim = tmpdir_path(w->outside, "victim");
    assert_int_equal(mkdir(victim, 0755), 0);
    char *build = tmpdir_path(victim, "build");
    assert_int_equal(mkdir(build, 0755), 0);
    attack_own(victim);
    struct mcp_answers ans = {.action = "accept", .decision = "approved_for_session"};
    json_t *a = attack_run(w, "mkdir build && rm -rf build; echo \"status=$?\"", &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(mcp_world_output(a), "status=0");
    json_decref(a);
    free(ans.last_message);
    struct mcp_answers no = {.action = "decline"};
    char *cmd = mcp_world_fmt("cd %s && rm -rf build; echo \"status=$?\"", victim);
    a = attack_run(w, cmd, &no);
    if (!mcp_world_exists(victim, "build"))
        fail_msg("%s/build was removed without a question\noutput: [%s]", victim,
                 mcp_world_output(a));
    assert_int_equal(no.asked, 1);
    mcp_world_assert_contains(no.last_message, victim);
    json_decref(a);
    free(no.last_message);
    free(cmd);
    free(build);
    free(victim);
    attack_world_end(w);
}

/* Options that write files or run commands, asked about (nobody can be
 * asked here: refused). */
static void
test_option_gaps(void **state)
{
    struct mcp_world *w = world_start("prefix_rule(pattern=[\"sed\"], decision=\"allow\")\n"
                                      "prefix_rule(pattern=[\"awk\"], decision=\"allow\")\n"
                                      "prefix_rule(pattern=[\"tar\"], decision=\"allow\")\n",
                                      false);
    char *cmd =
        mcp_world_fmt("printf '1e touch %s/sed\\n' > ./--sandbox; echo x | sed -f --sandbox; "
                      "echo x | awk 'BEGIN{system(\"touch %s/awk\")}'; "
                      "mkdir -p t && echo x > t/f && tar cf t.tar t && "
                      "tar xf t.tar --one-top-level=%s/one; tar tf t.tar --index-file=%s/index; "
                      "echo \"status=$?\"",
                      w->outside, w->outside, w->outside, w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "sed", a);
    attack_assert_not_outside(w, "awk", a);
    /* each refusal says what was seen (golden) */
    mcp_world_assert_contains(
        mcp_world_output(a),
        "Execution denied: Approval was required: an allow rule matched, but sed -f SCRIPT (runs "
        "a script that can run commands and write files); the MCP client did not declare the "
        "elicitation capability, so it cannot be asked\n");
    mcp_world_assert_contains(
        mcp_world_output(a),
        "Execution denied: Approval was required: an allow rule matched, but awk 'PROGRAM' (a "
        "program that can run commands and write files); the MCP client did not declare the "
        "elicitation capability, so it cannot be asked\n");
    attack_assert_not_outside(w, "one", a);
    attack_assert_not_outside(w, "index", a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* tar xf through a link the command planted in the workdir: the archive's
 * t/f lands wherever ./t points. */
static void
test_tar_extract_through_planted_link(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"tar\", \"xf\"], decision=\"allow\")\n", false);
    char *cmd = mcp_world_fmt("mkdir -p t && echo x > t/planted && tar cf t.tar t/planted && "
                              "mv t t.orig && ln -s %s t && tar xf t.tar; echo \"status=$?\"",
                              w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "planted", a);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* Whenever a program a rule lets out runs inside instead, its stderr gets
 * one line from execgate saying which rule and why (golden), and a
 * refusal keeps the reference's line. */
static void
test_refusal_lines_golden(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n",
                    false);
    json_t *a = attack_run(
        w, "git init -q sub && cd sub && HOME=$PWD git status >/dev/null; rm -f x", NULL);
    char *want = mcp_world_fmt(
        "execgate: git is allowed by %s/test.rules:1, but runs inside the sandbox: the working "
        "directory is in a git repository at %s/sub/.git that the sandbox could have written, "
        "and the program reads repository configuration\n"
        "Execution denied: Execution forbidden by policy\n",
        w->rules, w->wd);
    assert_string_equal(mcp_world_output(a), want);
    free(want);
    json_decref(a);
    attack_world_end(w);
}

/* ---- what the person is shown ---- */

static size_t
count_char(const char *s, char c)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

/* The question must keep its form "Allow agent to run `PROGRAM ARGS` in
 * `WORKDIR`?": one line, four backticks.  A backslash does not escape a
 * backtick inside a Markdown code span (CommonMark), so "\`" counts too. */
static void
assert_question_unspoofed(const char *q)
{
    if (strchr(q, '\n'))
        fail_msg("the question has a raw newline: [%s]", q);
    if (count_char(q, '`') != 4)
        fail_msg("the question has %zu backticks, not the form's 4: [%s]", count_char(q, '`'), q);
}

/* The workdir, a path below the world's: a newline, backticks and a
 * second question, spread over directories (a name cannot hold '/'). */
#define SPOOF_TOP  "spoof`?\n\nAllow agent to run `"
#define SPOOF_PATH SPOOF_TOP "/usr/bin/true` in `/`?"

static void
test_prompt_workdir_spoof(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"cat\"], decision=\"prompt\")\n", true);
    char *dir = tmpdir_path(w->wd, SPOOF_PATH);
    size_t top = strlen(w->wd) + 1 + strlen(SPOOF_TOP);
    for (char *p = dir + top;; p = strchr(p + 1, '/')) { /* mkdir -p below the workdir */
        char c = p ? *p : '\0';
        if (p)
            *p = '\0';
        assert_int_equal(mkdir(dir, 0755), 0);
        if (!p)
            break;
        *p = c;
    }
    char *top_dir = tmpdir_path(w->wd, SPOOF_TOP);
    attack_own(top_dir);
    struct mcp_answers ans = {.action = "accept"};
    json_t *a = attack_run(w,
                           "cd $'spoof`?\\n\\nAllow agent to run `/usr/bin/true` in `/`?' && "
                           "cat /etc/hostname; echo \"status=$?\"",
                           &ans);
    assert_int_equal(ans.asked, 1);
    assert_question_unspoofed(ans.last_message);
    json_decref(a);
    free(top_dir);
    free(dir);
    free(ans.last_message);
    attack_world_end(w);
}

static void
test_prompt_argument_newline(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"cat\"], decision=\"prompt\")\n", true);
    struct mcp_answers ans = {.action = "accept"};
    json_t *a = attack_run(w, "cat $'a\\nb'; echo \"status=$?\"", &ans);
    assert_int_equal(ans.asked, 1);
    assert_question_unspoofed(ans.last_message);
    json_decref(a);
    free(ans.last_message);
    attack_world_end(w);
}

/* ---- the server's own files ---- */

#define EVIL_RULE "prefix_rule(pattern=[\"bash\"], decision=\"allow\")"

/* The world's rules directory is under /tmp, which the sandbox may write:
 * a rule added there holds from the server's next start. */
static void
test_rules_file_not_writable(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"true\"], decision=\"allow\")\n", false);
    char *path = tmpdir_path(w->rules, "test.rules");
    char *before = read_or_empty(path);
    char *cmd = mcp_world_fmt("echo '" EVIL_RULE "' >> %s; echo \"status=$?\"", path);
    json_t *a = attack_run(w, cmd, NULL);
    char *after = read_or_empty(path);
    if (strcmp(before, after) != 0)
        fail_msg("the sandbox changed %s:\n[%s]\noutput: [%s]", path, after, mcp_world_output(a));
    json_decref(a);
    free(cmd);
    free(after);
    free(before);
    free(path);
    attack_world_end(w);
}

static void
test_audit_log_not_writable(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"true\"], decision=\"allow\")\n", false);
    if (!w->audit) {
        attack_world_end(w);
        skip(); /* EXECGATE_TEST_NO_AUDIT: no audit log */
    }
    json_t *a = attack_run(w, "/bin/true; echo \"status=$?\"", NULL);
    json_decref(a);
    char *before = read_or_empty(w->audit);
    assert_true(strlen(before) > 0); /* the record of /bin/true */
    char *cmd = mcp_world_fmt(": > %s; echo \"status=$?\"; echo forged >> %s; echo \"status=$?\"",
                              w->audit, w->audit);
    a = attack_run(w, cmd, NULL);
    char *after = read_or_empty(w->audit);
    if (strncmp(after, before, strlen(before)) != 0 || strstr(after, "forged"))
        fail_msg("the sandbox rewrote the audit log:\n[%s]\noutput: [%s]", after,
                 mcp_world_output(a));
    json_decref(a);
    free(cmd);
    free(after);
    free(before);
    attack_world_end(w);
}

/* No --rules: the server reads $CODEX_HOME/rules, here under /tmp. */
static void
test_codex_home_not_writable(void **state)
{
    char *ch = attack_scratch(NULL, "codex-home");
    char *rules_dir = tmpdir_path(ch, "rules");
    assert_int_equal(mkdir(rules_dir, 0755), 0);
    char *def = tmpdir_path(rules_dir, "default.rules");
    tmpdir_write_file(def, "prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n", 0644);
    char *config = tmpdir_path(ch, "config.toml");
    tmpdir_write_file(config, "# the user's\n", 0644);
    attack_own(ch);
    char *env = mcp_world_fmt("CODEX_HOME=%s", ch);
    struct mcp_world *w = world_start_opts("", false, true, env);
    /* the server read its rules from there: touch is escalated */
    char *cmd = mcp_world_fmt("touch %s/rules-read", w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    if (!mcp_world_exists(w->outside, "rules-read"))
        fail_msg("the rules in $CODEX_HOME were not used: [%s]", mcp_world_output(a));
    json_decref(a);
    free(cmd);
    cmd = mcp_world_fmt("echo '" EVIL_RULE "' > %s/evil.rules; echo \"status=$?\"; "
                        "echo x > %s; echo \"status=$?\"",
                        rules_dir, config);
    a = attack_run(w, cmd, NULL);
    char *conf = read_or_empty(config);
    bool evil = mcp_world_exists(rules_dir, "evil.rules");
    if (evil || strcmp(conf, "# the user's\n") != 0)
        fail_msg("the sandbox wrote $CODEX_HOME: evil.rules %s, config.toml [%s]\noutput: [%s]",
                 evil ? "created" : "absent", conf, mcp_world_output(a));
    json_decref(a);
    free(conf);
    free(cmd);
    free(env);
    free(config);
    free(def);
    free(rules_dir);
    attack_world_end(w);
}

/* ---- still works ---- */

/* The sandbox alone cannot write .git/index of a protected repository:
 * "A  f" proves git add ran escalated. */
static void
test_works_allowed_git_in_protected_repo(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"add\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n",
                    false);
    protected_repo(w, false);
    json_t *a = attack_run(w, "echo x > f && git add f && git status --short", NULL);
    mcp_world_assert_contains(mcp_world_output(a), "A  f\n");
    assert_int_equal(mcp_world_exit(a), 0);
    json_decref(a);
    /* and in the next call, which the first call's sandbox (the same)
     * could not have prepared either */
    a = attack_run(w, "echo y > g && git add g && git status --short", NULL);
    mcp_world_assert_contains(mcp_world_output(a), "A  g\n");
    assert_int_equal(mcp_world_exit(a), 0);
    json_decref(a);
    attack_world_end(w);
}

/* A repository the command made stops only programs that read
 * repositories: an allowed touch still escalates after `git init`. */
static void
test_works_touch_after_git_init(void **state)
{
    struct mcp_world *w = world_start("prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n"
                                      "prefix_rule(pattern=[\"printenv\"], decision=\"allow\")\n",
                                      false);
    char *cmd = mcp_world_fmt("git init -q && touch %s/t; echo \"status=$?\"; "
                              "printenv GIT_DIR GIT_CONFIG_KEY_0 GIT_CONFIG_VALUE_0",
                              w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "status=0");
    assert_true(mcp_world_exists(w->outside, "t"));
    /* what it starts finds no repository, and git takes no bare one */
    mcp_world_assert_contains(mcp_world_output(a),
                              "status=0\n/dev/null\nsafe.bareRepository\nexplicit\n");
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* git status and git push to a local bare remote outside the workspace,
 * from the protected top-level repository.  What the allowed push starts
 * outside is decided too: the rules name the transport (git-receive-pack
 * through sh, and the git commands each side runs), as a user who allows
 * pushes would; git gc --auto, unnamed, is refused with a warning. */
static void
test_works_git_push_to_local_remote(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"git\", \"push\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"git-receive-pack\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"git\", \"pack-objects\", \"--all-progress-implied\", "
                    "\"--revs\", \"--stdout\"], decision=\"allow\")\n"
                    "prefix_rule(pattern=[\"git\", [\"rev-list\", \"unpack-objects\"]], "
                    "decision=\"allow\")\n",
                    false);
    protected_repo(w, true);
    char *remote = tmpdir_path(w->outside, "remote.git");
    const char *init[] = {"/usr/bin/git", "init", "-q", "--bare", remote, NULL};
    attack_outside_run(init, NULL, NULL);
    const char *add[] = {"/usr/bin/git", "-C", w->wd, "remote", "add", "origin", remote, NULL};
    attack_outside_run(add, NULL, NULL);
    json_t *a = attack_run(w,
                           "git status --short; git push -q origin HEAD:refs/heads/pushed; "
                           "echo \"status=$?\"",
                           NULL);
    mcp_world_assert_contains(mcp_world_output(a), "status=0");
    json_decref(a);
    const char *check[] = {"/usr/bin/git", "--git-dir",         remote, "rev-parse", "--verify",
                           "-q",           "refs/heads/pushed", NULL};
    attack_outside_run(check, NULL, NULL);
    free(remote);
    attack_world_end(w);
}

/* Debian's /usr/bin/python3 is a link to python3.X: a rule for python3
 * still escalates it. */
static void
test_works_python3_through_symlink(void **state)
{
    struct stat st;
    if (lstat("/usr/bin/python3", &st) != 0) {
        fprintf(stderr, "no /usr/bin/python3 here: skipped\n");
        skip();
    }
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlink("/usr/bin/python3", target, sizeof(target) - 1);
        assert_true(n > 0);
        target[n] = '\0';
        fprintf(stderr, "/usr/bin/python3 -> %s\n", target);
    } else {
        fprintf(stderr, "/usr/bin/python3 is not a symlink here\n");
    }
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"python3\"], decision=\"allow\")\n", false);
    char *cmd = mcp_world_fmt("/usr/bin/python3 -c 'open(\"%s/py\", \"w\").write(\"x\")'; "
                              "echo \"status=$?\"",
                              w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "status=0\n");
    assert_true(mcp_world_exists(w->outside, "py"));
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* An allowed #! script outside the writable view escalates (its
 * interpreter reopens it through the fd it was started from). */
static void
test_works_escalated_script(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"gunzip\"], decision=\"allow\")\n"
                    /* the script runs gzip -d: a program it starts needs a rule too */
                    "prefix_rule(pattern=[\"gzip\", \"-d\"], decision=\"allow\")\n",
                    false);
    char *f = mcp_world_fmt("%s/f", w->outside);
    tmpdir_write_file(f, "data\n", 0644);
    const char *gz[] = {"/bin/gzip", f, NULL};
    attack_outside_run(gz, NULL, NULL);
    char *cmd = mcp_world_fmt("gunzip -k %s/f.gz; echo \"status=$?\"", w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "status=0\n");
    assert_true(mcp_world_exists(w->outside, "f"));
    json_decref(a);
    free(cmd);
    free(f);
    attack_world_end(w);
}

/* A trusted script (outside the writable view) whose #! names an
 * interpreter the command can write: that interpreter is the command's,
 * so the script does not leave the sandbox. */
static void
test_script_with_writable_interpreter(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"tool\"], decision=\"allow\")\n", false);
    char *tool = mcp_world_fmt("%s/tool", w->outside);
    char *text = mcp_world_fmt("#!%s/interp\n", w->wd);
    tmpdir_write_file(tool, text, 0755);
    attack_own(tool);
    char *cmd = mcp_world_fmt("printf '#!/bin/sh\\ntouch %s/pwn\\n' > interp; chmod +x interp; "
                              "%s; echo \"status=$?\"",
                              w->outside, tool);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "pwn", a);
    json_decref(a);
    free(cmd);
    free(text);
    free(tool);
    attack_world_end(w);
}

/* ---- the escalated environment (the fix's promise) ---- */

/* An escalated program gets the server's HOME and PATH, not the
 * request's, and not the request's other variables; TZ and the locale
 * pass through. */
static void
test_escalated_env_is_the_servers(void **state)
{
    struct mcp_world *w =
        world_start("prefix_rule(pattern=[\"printenv\"], decision=\"allow\")\n", false);
    json_t *tz = attack_run(w, "TZ=UTC0 printenv TZ; echo \"status=$?\"", NULL);
    json_t *a = attack_run(w,
                           "export PATH=/bogus-dir:$PATH; HOME=/nonexistent-home FOO=bar "
                           "printenv HOME PATH FOO; echo \"status=$?\"",
                           NULL);
    mcp_world_assert_contains(mcp_world_output(tz), "UTC0\nstatus=0\n");
    const char *home = getenv("HOME");
    const char *path = getenv("PATH");
    assert_non_null(path);
    /* printenv prints the values of the names set, in order, and exits 1
     * when one is not */
    char *want = home ? mcp_world_fmt("%s\n%s\nstatus=1\n", home, path)
                      : mcp_world_fmt("%s\nstatus=1\n", path);
    if (strcmp(mcp_world_output(a), want) != 0)
        fail_msg("escalated printenv HOME PATH FOO:\n[%s]\nwanted the server's:\n[%s]",
                 mcp_world_output(a), want);
    json_decref(a);
    json_decref(tz);
    free(want);
    attack_world_end(w);
}

/* ---- setup ---- */

int
main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* the results between the failures' details */
    int rc = attack_suite_begin("escalation-attack-tests", 30000);
    if (rc != 0)
        return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_symlink_alias_of_allowed_program, attack_teardown),
        cmocka_unit_test_teardown(test_forbidden_program_through_allowed_alias, attack_teardown),
        cmocka_unit_test_teardown(test_prompt_shows_what_really_runs, attack_teardown),
        cmocka_unit_test_teardown(test_session_approval_then_repoint, attack_teardown),
        cmocka_unit_test_teardown(test_nested_repository_made_in_sandbox, attack_teardown),
        cmocka_unit_test_teardown(test_home_gitconfig, attack_teardown),
        cmocka_unit_test_teardown(test_xdg_config_home_gitconfig, attack_teardown),
        cmocka_unit_test_teardown(test_git_dir_env, attack_teardown),
        cmocka_unit_test_teardown(test_gitdir_file, attack_teardown),
        cmocka_unit_test_teardown(test_pager_through_pty, attack_teardown),
        cmocka_unit_test_teardown(test_git_trace, attack_teardown),
        cmocka_unit_test_teardown(test_git_log_output_option, attack_teardown),
        cmocka_unit_test_teardown(test_top_level_repository_made_in_earlier_call, attack_teardown),
        cmocka_unit_test_teardown(test_program_written_by_another_calls_sandbox, attack_teardown),
        cmocka_unit_test_teardown(test_repository_made_by_another_calls_sandbox, attack_teardown),
        cmocka_unit_test_teardown(test_dangerous_option_is_asked, attack_teardown),
        cmocka_unit_test_teardown(test_bare_repository_in_workdir, attack_teardown),
        cmocka_unit_test_teardown(test_argv0_chooses_git_command, attack_teardown),
        cmocka_unit_test_teardown(test_workdir_swapped_between_escalate_and_fds, attack_teardown),
        cmocka_unit_test_teardown(test_workdir_moved_between_escalate_and_fds, attack_teardown),
        cmocka_unit_test_teardown(test_session_approval_remembers_the_workdir, attack_teardown),
        cmocka_unit_test_teardown(test_option_gaps, attack_teardown),
        cmocka_unit_test_teardown(test_tar_extract_through_planted_link, attack_teardown),
        cmocka_unit_test_teardown(test_refusal_lines_golden, attack_teardown),
        cmocka_unit_test_teardown(test_works_touch_after_git_init, attack_teardown),
        cmocka_unit_test_teardown(test_works_git_push_to_local_remote, attack_teardown),
        cmocka_unit_test_teardown(test_prompt_workdir_spoof, attack_teardown),
        cmocka_unit_test_teardown(test_prompt_argument_newline, attack_teardown),
        cmocka_unit_test_teardown(test_rules_file_not_writable, attack_teardown),
        cmocka_unit_test_teardown(test_audit_log_not_writable, attack_teardown),
        cmocka_unit_test_teardown(test_codex_home_not_writable, attack_teardown),
        cmocka_unit_test_teardown(test_works_allowed_git_in_protected_repo, attack_teardown),
        cmocka_unit_test_teardown(test_works_python3_through_symlink, attack_teardown),
        cmocka_unit_test_teardown(test_works_escalated_script, attack_teardown),
        cmocka_unit_test_teardown(test_script_with_writable_interpreter, attack_teardown),
        cmocka_unit_test_teardown(test_escalated_env_is_the_servers, attack_teardown),
        cmocka_unit_test_teardown(test_audit_log_hidden, attack_teardown),
        cmocka_unit_test_teardown(test_fd_exec_named_as_allowed, attack_teardown),
        cmocka_unit_test_teardown(test_question_escapes_what_it_shows, attack_teardown),
        cmocka_unit_test_teardown(test_write_options_in_gnu_spellings, attack_teardown),
        cmocka_unit_test_teardown(test_escalation_socket_malformed, attack_teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    attack_suite_end();
    if (failed) {
        /* a failed assertion skipped its test's frees: leave without the
         * leak report, which would bury the failures */
        fflush(stdout);
        fflush(stderr);
        _exit(failed);
    }
    return 0;
}
