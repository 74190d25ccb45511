/*
 * What a call skips to be fast, attacked and checked through the real
 * server.
 *
 * The helper's own exec of the shell by fd, which the server is not asked
 * about (docs/enforcement.md): the helper opens the shell at fd K, the
 * highest number its hard RLIMIT_NOFILE allows, and its hand-over socket
 * at K - 1, lowers that limit to K - 1 and lets its filter pass
 * execveat(K, "", ..., AT_EMPTY_PATH) and sendmsg(K - 1, ...) alone.
 * These attacks, from a command of a call through the real server, try to
 * use those passes afterwards: raise the limit back, put a program at fd K
 * (by dup2 and by F_DUPFD) or anything at K - 1, execveat fd K, sendmsg
 * on K - 1, and execveat the highest fd the command may hold.  rm is forbidden: the victim file
 * must stay and every exec must have been refused with the rule's line.
 *
 * The placeholder .codex kept for the session (docs/sandbox.md): made by
 * the session's first call, the same directory in the next call, the
 * command still unable to write there, and gone once the session ends.
 *
 * Variants (meson.build): as the invoking user and, with
 * EXECGATE_TEST_UNPRIVILEGED=1 and started as root, with the server run as
 * a test user (attack_suite.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/attack_suite.h"
#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define RM_FORBIDDEN                                                                               \
    "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", justification=\"fd-test: keep "         \
    "files\")\n"

/* argv[1] K, argv[2] the program, argv[3...] its argv: every way to fd
 * K, then an execveat of the highest fd the command may hold.  Prints
 * what each attempt gave. */
static const char attack_src[] =
    "#define _GNU_SOURCE\n"
    "#include <errno.h>\n#include <fcntl.h>\n#include <stdio.h>\n#include <string.h>\n"
    "#include <stdlib.h>\n#include <sys/resource.h>\n#include <sys/socket.h>\n"
    "#include <sys/syscall.h>\n"
    "#include <unistd.h>\n"
    "static void say(const char *what, int ok) {\n"
    "    printf(\"%s=%s\\n\", what, ok ? \"ok\" : strerror(errno)); fflush(stdout);\n}\n"
    "int main(int argc, char **argv) {\n"
    "    struct rlimit r;\n"
    "    if (argc < 4 || getrlimit(RLIMIT_NOFILE, &r) != 0) return 2;\n"
    "    int k = atoi(argv[1]);\n"
    "    printf(\"hard=%d\\n\", (int)r.rlim_max);\n"
    "    struct rlimit up = {r.rlim_cur, r.rlim_max + 1};\n"
    "    say(\"raise\", setrlimit(RLIMIT_NOFILE, &up) == 0);\n"
    "    struct rlimit all = {r.rlim_max, r.rlim_max};\n"
    "    say(\"soft_to_hard\", setrlimit(RLIMIT_NOFILE, &all) == 0);\n"
    "    int fd = open(argv[2], O_RDONLY | O_CLOEXEC);\n"
    "    say(\"open\", fd >= 0);\n"
    "    say(\"dup2_top\", dup2(fd, k) == k);\n"
    "    say(\"dupfd_top\", fcntl(fd, F_DUPFD_CLOEXEC, k) >= 0);\n"
    "    say(\"dup2_sock\", dup2(fd, k - 1) == k - 1);\n"
    "    struct msghdr mh = {0};\n"
    "    say(\"sendmsg_sock\", sendmsg(k - 1, &mh, 0) >= 0);\n"
    "    syscall(SYS_execveat, k, \"\", &argv[3], environ, AT_EMPTY_PATH);\n"
    "    say(\"execveat_top\", 0);\n"
    "    int low = dup3(fd, k - 2, O_CLOEXEC);\n"
    "    say(\"dup_below\", low == k - 2);\n"
    "    syscall(SYS_execveat, low, \"\", &argv[3], environ, AT_EMPTY_PATH);\n"
    "    say(\"execveat_below\", 0);\n"
    "    return 0;\n"
    "}\n";

static void
compile(const char *src, const char *bin)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/usr/bin/cc", "cc", "-O1", "-o", bin, src, (char *)NULL);
        _exit(127);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The limit the sandbox's command must see: the server's own hard limit
 * (this process's: the server inherits it) minus the two fds, where the
 * helper takes the fd route (a hard limit of at most 65536). */
static long
expected_hard(void)
{
    struct rlimit r;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &r), 0);
    if (r.rlim_max == RLIM_INFINITY || r.rlim_max > 65536 || r.rlim_max < 64)
        return -1; /* no fd route: nothing to attack */
    return (long)r.rlim_max - 2;
}

static void
test_fd_k_out_of_reach(void **state)
{
    (void)state;
    if (access("/usr/bin/cc", X_OK) != 0) {
        fprintf(stderr, "cc is not installed: skipping\n");
        skip();
    }
    const char *extra = attack_suite_extra();
    long hard = expected_hard();
    if ((extra && strstr(extra, "shell")) || hard < 0) {
        fprintf(stderr, "no first exec by fd in this variant: skipping\n");
        skip();
    }
    struct mcp_world *w = attack_world(RM_FORBIDDEN, false);
    char *src = tmpdir_path(w->wd, "fdtop.c");
    char *bin = tmpdir_path(w->wd, "fdtop");
    char *victim = tmpdir_path(w->wd, "f");
    tmpdir_write_file(src, attack_src, 0644);
    compile(src, bin);
    tmpdir_write_file(victim, "keep me", 0644);
    attack_own(w->wd);
    /* K, where the helper put the shell: the command's hard limit + 1 */
    char *cmd = mcp_world_fmt("./fdtop %ld /bin/rm rm -f f; echo \"status=$?\"", hard + 1);
    json_t *r = attack_run(w, cmd, NULL);
    free(cmd);
    const char *out = mcp_world_output(r);
    if (!mcp_world_exists(w->wd, "f"))
        fprintf(stderr, "the attack deleted the file:\n%s\n", out);
    assert_true(mcp_world_exists(w->wd, "f"));
    char *want = mcp_world_fmt("hard=%ld\n", hard);
    mcp_world_assert_contains(out, want); /* the fd route was taken */
    free(want);
    mcp_world_assert_contains(out, "raise=Operation not permitted\n");
    mcp_world_assert_contains(out, "soft_to_hard=ok\n");
    mcp_world_assert_contains(out, "open=ok\n");
    mcp_world_assert_contains(out, "dup2_top=Bad file descriptor\n");
    mcp_world_assert_contains(out, "dupfd_top=Invalid argument\n");
    mcp_world_assert_contains(out, "dup2_sock=Bad file descriptor\n");
    mcp_world_assert_contains(out, "sendmsg_sock=Bad file descriptor\n");
    mcp_world_assert_contains(out, "execveat_top=Bad file descriptor\n");
    mcp_world_assert_contains(out, "dup_below=ok\n");
    /* the one the command can make is notified, and refused by the rule */
    mcp_world_assert_contains(out, "execveat_below=Permission denied\n");
    mcp_world_assert_contains(out, "execgate: refused `");
    mcp_world_assert_contains(out, "fd-test: keep files");
    mcp_world_assert_contains(out, "status=0\n");
    assert_true(mcp_world_exists(w->wd, "f"));
    json_decref(r);
    /* a plain exec of anything is still decided: the shell's child */
    r = attack_run(w, "rm -f f; echo \"status=$?\"", NULL);
    mcp_world_assert_contains(mcp_world_output(r), "fd-test: keep files");
    assert_true(mcp_world_exists(w->wd, "f"));
    json_decref(r);
    free(src);
    free(bin);
    free(victim);
    attack_world_end(w);
}

/* The shell still starts as itself, and a second call as well: the
 * server decided nothing for it, and the shell's own children run. */
static void
test_shell_runs_commands(void **state)
{
    (void)state;
    struct mcp_world *w = attack_world(RM_FORBIDDEN, false);
    for (int i = 0; i < 2; i++) {
        json_t *r = attack_run(w, "ls -d . && echo \"shell=$0\"", NULL);
        mcp_world_assert_contains(mcp_world_output(r), ".\nshell=");
        json_decref(r);
    }
    attack_world_end(w);
}

static bool
same_inode_lines(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

static void
test_session_keeps_placeholder(void **state)
{
    (void)state;
    struct mcp_world *w = attack_world(RM_FORBIDDEN, false);
    assert_false(mcp_world_exists(w->wd, ".codex"));
    const char *cmd = "stat -c 'inode=%i mode=%a' .codex; mkdir .codex/x 2>/dev/null || echo "
                      "refused; rmdir .codex 2>/dev/null || echo kept";
    json_t *first = attack_run(w, cmd, NULL);
    const char *out1 = mcp_world_output(first);
    mcp_world_assert_contains(out1, "mode=1700\n");
    mcp_world_assert_contains(out1, "refused\nkept\n");
    /* between the calls the session holds it: still there */
    assert_true(mcp_world_exists(w->wd, ".codex"));
    json_t *second = attack_run(w, cmd, NULL);
    const char *out2 = mcp_world_output(second);
    if (!same_inode_lines(out1, out2))
        fprintf(stderr, "first call:\n%s\nsecond call:\n%s\n", out1, out2);
    assert_true(same_inode_lines(out1, out2)); /* the same directory, made once */
    json_decref(first);
    json_decref(second);
    /* the session ends (stdin's end), the directories stay until the
     * world goes: the server's end removed it */
    mcp_client_close_stdin(w->c);
    int status = mcp_client_wait_exit(w->c, 30000);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(mcp_world_exists(w->wd, "."));
    assert_false(mcp_world_exists(w->wd, ".codex"));
    attack_world_end(w);
}

int
main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = attack_suite_begin("call-floor-tests", 30000);
    if (rc != 0)
        return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fd_k_out_of_reach, attack_teardown),
        cmocka_unit_test_teardown(test_shell_runs_commands, attack_teardown),
        cmocka_unit_test_teardown(test_session_keeps_placeholder, attack_teardown),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    attack_suite_end();
    return rc;
}
