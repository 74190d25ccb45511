/*
 * Attacks on what landed last, through the real server.
 *
 * The helper's exec of the shell by fd (docs/enforcement.md): its filter
 * once let execveat(K, ..., AT_EMPTY_PATH) pass unasked, trusting that no
 * process of the sandbox can hold fd K.  But the kernel ignores the fd of
 * an execveat whose path is absolute, open or not: any command could run
 * any program unseen by calling execveat(K, "/bin/rm", ...).  Here a
 * command does just that with rm forbidden, and with the fd one above and
 * one below K (the variant: nothing but K was ever let through); every
 * exec must be refused with the rule's line and the file must stay.
 *
 * And a TCP connect refused in the session's network namespace, which
 * the supervisor makes for the command, says so as the kernel would.
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
    "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", justification=\"abs-test: keep "        \
    "files\")\n"

/* argv[1] the fd, argv[2] an absolute path, argv[3...] its argv: an
 * execveat of the path "relative to" that fd, which the kernel ignores. */
static const char absexec_src[] =
    "#define _GNU_SOURCE\n"
    "#include <errno.h>\n#include <fcntl.h>\n#include <stdio.h>\n#include <string.h>\n"
    "#include <stdlib.h>\n#include <sys/syscall.h>\n#include <unistd.h>\n"
    "int main(int argc, char **argv) {\n"
    "    if (argc < 4) return 2;\n"
    "    int fd = atoi(argv[1]);\n"
    "    syscall(SYS_execveat, fd, argv[2], &argv[3], environ, AT_EMPTY_PATH);\n"
    "    printf(\"execveat_abs_%s=%s\\n\", argv[1], strerror(errno));\n"
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

/* K, where the helper would put the shell by fd: the server's hard limit
 * minus one (this process's: the server inherits it), or -1 where the
 * helper never takes that route. */
static long
fd_k(void)
{
    struct rlimit r;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &r), 0);
    if (r.rlim_max == RLIM_INFINITY || r.rlim_max > 65536 || r.rlim_max < 64)
        return -1;
    return (long)r.rlim_max - 1;
}

static void
test_execveat_absolute_path_at_fd_k(void **state)
{
    (void)state;
    if (access("/usr/bin/cc", X_OK) != 0) {
        fprintf(stderr, "cc is not installed: skipping\n");
        skip();
    }
    long k = fd_k();
    if (k < 0) {
        fprintf(stderr, "a hard RLIMIT_NOFILE out of the fd route's range: skipping\n");
        skip();
    }
    struct mcp_world *w = attack_world(RM_FORBIDDEN, false);
    char *src = tmpdir_path(w->wd, "absexec.c");
    char *bin = tmpdir_path(w->wd, "absexec");
    tmpdir_write_file(src, absexec_src, 0644);
    compile(src, bin);
    char *victim = tmpdir_path(w->wd, "f");
    tmpdir_write_file(victim, "keep me", 0644);
    attack_own(w->wd);
    const long fds[] = {k, k - 1, k + 1, k - 2};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        char *cmd = mcp_world_fmt("./absexec %ld /bin/rm rm -f f; echo \"status=$?\"", fds[i]);
        json_t *r = attack_run(w, cmd, NULL);
        free(cmd);
        const char *out = mcp_world_output(r);
        if (!mcp_world_exists(w->wd, "f"))
            fprintf(stderr, "execveat at fd %ld ran rm unasked:\n%s\n", fds[i], out);
        assert_true(mcp_world_exists(w->wd, "f"));
        char *want = mcp_world_fmt("execveat_abs_%ld=Permission denied\n", fds[i]);
        mcp_world_assert_contains(out, want);
        free(want);
        mcp_world_assert_contains(out, "abs-test: keep files");
        json_decref(r);
    }
    free(src);
    free(bin);
    free(victim);
    attack_world_end(w);
}

/* A TCP connect in the session's network namespace to a port nothing
 * listens on is refused as the kernel refuses it (ECONNREFUSED), not with
 * an error the server made up: a program that waits for a server to come
 * up retries on the first and gives up on others.  The supervisor makes
 * the connect on its copy of the command's socket and reads the outcome;
 * a blocking socket's waits on the server's loop. */
static void
test_refused_connect_says_refused(void **state)
{
    (void)state;
    struct mcp_world *w = attack_world("", false);
    json_t *r = attack_run(w,
                           "python3 -c 'import socket, errno\n"
                           "l = socket.socket(); l.bind((\"127.0.0.1\", 0)); "
                           "p = l.getsockname()[1]; l.close()\n"
                           "for blocking in (True, False):\n"
                           "    s = socket.socket(); s.setblocking(blocking)\n"
                           "    e = s.connect_ex((\"127.0.0.1\", p))\n"
                           "    if e == errno.EINPROGRESS:\n"
                           "        import select; select.select([], [s], [], 5)\n"
                           "        e = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)\n"
                           "    print(\"blocking=\" if blocking else \"non-blocking=\", "
                           "errno.errorcode.get(e, e), sep=\"\")\n'",
                           NULL);
    char *out = mcp_world_fmt("\n%s", mcp_world_output(r));
    mcp_world_assert_contains(out, "\nblocking=ECONNREFUSED\n");
    mcp_world_assert_contains(out, "non-blocking=ECONNREFUSED\n");
    free(out);
    json_decref(r);
    attack_world_end(w);
}

int
main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = attack_suite_begin("new-attacks-tests", 30000);
    if (rc != 0)
        return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_execveat_absolute_path_at_fd_k, attack_teardown),
        cmocka_unit_test_teardown(test_refused_connect_says_refused, attack_teardown),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    attack_suite_end();
    return rc;
}
