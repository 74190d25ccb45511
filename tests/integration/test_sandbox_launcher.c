/*
 * The sandbox launcher (execgate-sandbox --launcher, sandbox/launcher.h),
 * driven two ways: over its control socket by hand, as a server would, and
 * through the server's own client (server/call/launcher_client.h).  What
 * must hold: a call sees no fd of another call's; the child is its
 * requester's child (this test's), which gets its exit status; a malformed
 * request is refused and the launcher serves on, holding no fd of it; a
 * launcher killed or wedged between calls costs no call and no fd; a
 * helper that is no launcher sends calls the other way.
 *
 * EXECGATE_TEST_SANDBOX names the helper; with EXECGATE_TEST_UNPRIVILEGED=1
 * (started as root) the whole test runs as the test user.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fd_pass.h"
#include "sandbox/launcher.h"
#include "server/call/launcher_client.h"
#include "server/call/spawn_options.h"
#include "tests/support/fds.h"
#include "tests/support/mcp_client.h"
#include "tests/support/test_user.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define DANGER    "{\"type\":\"danger-full-access\"}"
#define READ_ONLY "{\"type\":\"read-only\",\"sandboxCwd\":\"/\"}"
/* the shell's own fds, by a glob of /proc/self/fd (its directory fd is the
 * lowest free number while it reads), and its parent */
#define LIST_FDS "cd /proc/self/fd && echo *; echo ppid=$PPID"

static const char *helper;

static void
must(bool ok, const char *what)
{
    if (!ok)
        fail_msg("%s: %s", what, strerror(errno));
}

/* ---- the launcher by hand ---- */

struct raw {
    pid_t pid;
    int sock;
};

/* Starts helper --launcher as this process's child and reads its word
 * that it is ready. */
static void
raw_start(struct raw *r)
{
    int sv[2];
    must(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
    r->pid = fork();
    must(r->pid >= 0, "fork");
    if (r->pid == 0) {
        if (dup2(sv[1], SANDBOX_LAUNCHER_FD) < 0)
            _exit(126);
        execl(helper, helper, SANDBOX_LAUNCHER_OPT, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    r->sock = sv[0];
    struct sandbox_launcher_reply hello;
    size_t nfds = 0;
    ssize_t n = fd_pass_recv(r->sock, &hello, sizeof hello, NULL, 0, &nfds, NULL);
    assert_int_equal(n, sizeof hello);
    assert_int_equal(hello.magic, SANDBOX_LAUNCHER_MAGIC);
    assert_int_equal(hello.id, 0);
    assert_int_equal(hello.err, 0);
    assert_int_equal(hello.pid, r->pid);
}

/* Closes the socket: the launcher ends at EOF, with status 0. */
static void
raw_stop(struct raw *r)
{
    close(r->sock);
    int status = 0;
    must(waitpid(r->pid, &status, 0) == r->pid, "waitpid launcher");
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* The launcher's open fds, from /proc. */
static int
raw_fd_count(const struct raw *r)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls /proc/%d/fd | wc -l", (int)r->pid);
    FILE *f = popen(cmd, "r");
    must(f != NULL, "popen");
    int n = -1;
    if (fscanf(f, "%d", &n) != 1)
        n = -1;
    pclose(f);
    assert_true(n > 0);
    return n;
}

/* Sends bytes with n fds; returns the reply's err, *pid and *pidfd. */
static int
raw_send(struct raw *r, const void *buf, size_t len, const int *fds, size_t n, uint64_t id,
         pid_t *pid, int *pidfd)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    assert_true(fd_pass_send(r->sock, &iov, 1, fds, n) == (ssize_t)len);
    struct sandbox_launcher_reply rep;
    int fd = -1;
    size_t nfds = 0;
    ssize_t got = fd_pass_recv(r->sock, &rep, sizeof rep, &fd, 1, &nfds, NULL);
    assert_int_equal(got, sizeof rep);
    assert_int_equal(rep.magic, SANDBOX_LAUNCHER_MAGIC);
    assert_int_equal(rep.id, id);
    if (rep.err != 0) {
        assert_int_equal(nfds, 0); /* a refusal starts nothing */
        return rep.err;
    }
    assert_int_equal(nfds, 1);
    *pid = rep.pid;
    *pidfd = fd;
    return 0;
}

/* A request of argv (policy, then sh -c script) with fds at their
 * numbers, in a new buffer of *len bytes. */
static char *
request_for(uint64_t id, const char *policy, const char *script, const int32_t *at, size_t n,
            size_t *len)
{
    const char *argv[] = {helper, "--policy", policy, "--cwd", "/", "--", "/bin/sh", "-c", script};
    const char *env[] = {"PATH=/usr/bin:/bin"};
    struct sandbox_launcher_req h = {.magic = SANDBOX_LAUNCHER_MAGIC,
                                     .version = SANDBOX_LAUNCHER_VERSION,
                                     .id = id,
                                     .n_fds = (uint32_t)n,
                                     .n_argv = 9,
                                     .n_env = 1};
    memcpy(h.at, at, n * sizeof *at);
    size_t total = sizeof h;
    for (size_t i = 0; i < 9; i++)
        total += strlen(argv[i]) + 1;
    total += strlen(env[0]) + 1;
    char *buf = malloc(total);
    assert_non_null(buf);
    memcpy(buf, &h, sizeof h);
    char *p = buf + sizeof h;
    for (size_t i = 0; i < 9; i++)
        p = stpcpy(p, argv[i]) + 1;
    p = stpcpy(p, env[0]) + 1;
    *len = total;
    return buf;
}

/* Everything on fd until EOF, as a string (to free). */
static char *
read_all(int fd)
{
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    for (;;) {
        ssize_t n = read(fd, s + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        must(n >= 0, "read");
        if (n == 0)
            break;
        len += (size_t)n;
        if (len + 1 == cap) {
            cap *= 2;
            s = realloc(s, cap);
            assert_non_null(s);
        }
    }
    s[len] = '\0';
    return s;
}

/* The exit status of the child pidfd names (this process's child): its
 * exit code, or 128 + the signal that killed it. */
static int
wait_pidfd(int pidfd)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    must(waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED) == 0, "waitid(P_PIDFD)");
    close(pidfd);
    return info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
}

/* One call through r: script under policy, with extra (may be -1) at
 * extra_at besides the output pipe at 1 and 2.  Returns the exit status,
 * the output in *out (to free). */
static int
raw_call(struct raw *r, uint64_t id, const char *policy, const char *script, int extra,
         int extra_at, char **out)
{
    int p[2];
    must(pipe2(p, O_CLOEXEC) == 0, "pipe");
    int fds[3] = {p[1], p[1], extra};
    int32_t at[3] = {1, 2, extra_at};
    size_t n = extra >= 0 ? 3 : 2;
    size_t len = 0;
    char *req = request_for(id, policy, script, at, n, &len);
    pid_t pid = -1;
    int pidfd = -1;
    int err = raw_send(r, req, len, fds, n, id, &pid, &pidfd);
    free(req);
    close(p[1]);
    assert_int_equal(err, 0);
    assert_true(pid > 0);
    *out = read_all(p[0]);
    close(p[0]);
    return wait_pidfd(pidfd);
}

/* Two calls one after the other: the fd the first was given (at 9) is not
 * in the second, nor anything of the launcher's; both are this process's
 * children, and each exit status arrives. */
static void
test_calls_see_no_other_calls_fds(void **state)
{
    (void)state;
    struct raw r;
    raw_start(&r);
    int marker[2];
    must(pipe2(marker, O_CLOEXEC) == 0, "pipe");
    char *first = NULL, *second = NULL;
    assert_int_equal(raw_call(&r, 1, DANGER, LIST_FDS, marker[0], 9, &first), 0);
    assert_int_equal(raw_call(&r, 2, DANGER, LIST_FDS "; exit 7", -1, -1, &second), 7);
    char want_first[64], want_second[64];
    snprintf(want_first, sizeof want_first, "0 1 2 3 9\nppid=%d\n", (int)getpid());
    snprintf(want_second, sizeof want_second, "0 1 2 3\nppid=%d\n", (int)getpid());
    assert_string_equal(first, want_first);
    assert_string_equal(second, want_second);
    free(first);
    free(second);
    close(marker[0]);
    close(marker[1]);
    raw_stop(&r);
}

/* A confined call: its own PID namespace (this process is not in it),
 * its status back to this process. */
static void
test_confined_call(void **state)
{
    (void)state;
    struct raw r;
    raw_start(&r);
    char script[160];
    snprintf(script, sizeof script,
             "kill -0 %d 2>/dev/null && echo visible || echo hidden; echo x > /tmp/never-%d; "
             "exit 3",
             (int)getpid(), (int)getpid());
    char *out = NULL;
    assert_int_equal(raw_call(&r, 1, READ_ONLY, script, -1, -1, &out), 3);
    assert_non_null(strstr(out, "hidden\n"));
    assert_null(strstr(out, "visible"));
    char never[64];
    snprintf(never, sizeof never, "/tmp/never-%d", (int)getpid());
    assert_int_equal(access(never, F_OK), -1); /* read-only: nothing written */
    free(out);
    raw_stop(&r);
}

/* Two confined calls: each /dev is a copy of the launcher's one template
 * (the same file system: its root changed when the template was made,
 * where a /dev made per call is a new tmpfs, changed at that call), with
 * the usual devices working; what the first tries to leave there (a file,
 * a directory under shm, a remount) fails and the second does not see it. */
static void
test_calls_copy_one_read_only_dev(void **state)
{
    (void)state;
    struct raw r;
    raw_start(&r);
    const char *look = "stat -c '%d:%i %z' /dev; ls -a /dev | tr '\\n' ' '; echo; "
                       "echo x > /dev/null && echo null-ok; ";
    char script[512];
    snprintf(script, sizeof script,
             "%stouch /dev/planted 2>/dev/null && echo PLANTED; "
             "mkdir /dev/shm/planted 2>/dev/null && echo PLANTED; "
             "mount -o remount,rw /dev 2>/dev/null && echo REMOUNTED; exit 0",
             look);
    char *first = NULL, *second = NULL;
    assert_int_equal(raw_call(&r, 1, READ_ONLY, script, -1, -1, &first), 0);
    assert_int_equal(raw_call(&r, 2, READ_ONLY, look, -1, -1, &second), 0);
    assert_null(strstr(first, "PLANTED"));
    assert_null(strstr(first, "REMOUNTED"));
    assert_non_null(strstr(first, " null "));
    assert_non_null(strstr(first, "null-ok\n"));
    /* the first's look (its first lines) is the second's whole output */
    assert_memory_equal(first, second, strlen(second));
    free(first);
    free(second);
    raw_stop(&r);
}

/* Whether process pid or a descendant holds an fd open on (dev, ino);
 * fails when one of their fd tables cannot be read. */
static bool
tree_holds(pid_t pid, dev_t dev, ino_t ino)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL && errno == ENOENT)
        return false; /* gone meanwhile */
    must(d != NULL, path);
    bool held = false;
    struct dirent *e;
    while (!held && (e = readdir(d)) != NULL) {
        struct stat st;
        char fd_path[96 + 256];
        snprintf(fd_path, sizeof fd_path, "%s/%s", path, e->d_name);
        if (e->d_name[0] != '.' && stat(fd_path, &st) == 0)
            held = st.st_dev == dev && st.st_ino == ino;
    }
    closedir(d);
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "re");
    long child;
    while (!held && f && fscanf(f, "%ld", &child) == 1)
        held = tree_holds((pid_t)child, dev, ino);
    if (f)
        fclose(f);
    return held;
}

/* A confined call's processes outside and inside its PID namespace (the
 * helper, the init, the command) hold nothing of the launcher's: not its
 * control socket, which none of them execs away. */
static void
test_call_holds_no_launcher_fd(void **state)
{
    (void)state;
    struct raw r;
    raw_start(&r);
    char ctl_path[64];
    snprintf(ctl_path, sizeof ctl_path, "/proc/%d/fd/%d", (int)r.pid, SANDBOX_LAUNCHER_FD);
    struct stat ctl;
    must(stat(ctl_path, &ctl) == 0, "stat the launcher's control socket");
    int out[2], gate[2];
    must(pipe2(out, O_CLOEXEC) == 0 && pipe2(gate, O_CLOEXEC) == 0, "pipe");
    int fds[3] = {out[1], out[1], gate[0]};
    int32_t at[3] = {1, 2, 8};
    size_t len = 0;
    char *req = request_for(1, READ_ONLY, "echo ready; read x <&8; echo done", at, 3, &len);
    pid_t pid = -1;
    int pidfd = -1;
    assert_int_equal(raw_send(&r, req, len, fds, 3, 1, &pid, &pidfd), 0);
    free(req);
    close(out[1]);
    close(gate[0]);
    char ready[6] = "";
    assert_int_equal(read(out[0], ready, sizeof ready), 6);
    assert_memory_equal(ready, "ready\n", 6);
    /* the whole tree is up: the command runs inside the init */
    assert_false(tree_holds(pid, ctl.st_dev, ctl.st_ino));
    assert_true(tree_holds(r.pid, ctl.st_dev, ctl.st_ino)); /* the check can see it */
    assert_int_equal(write(gate[1], "go\n", 3), 3);
    close(gate[1]);
    char *rest = read_all(out[0]);
    close(out[0]);
    assert_string_equal(rest, "done\n");
    free(rest);
    assert_int_equal(wait_pidfd(pidfd), 0);
    raw_stop(&r);
}

/* Each malformed request gets its errno and starts nothing; the fds it
 * carried are closed in the launcher; a good request after them runs. */
static void
test_malformed_requests_are_refused(void **state)
{
    (void)state;
    struct raw r;
    raw_start(&r);
    int before = raw_fd_count(&r);
    int p[2];
    must(pipe2(p, O_CLOEXEC) == 0, "pipe");
    int fds[2] = {p[0], p[1]};
    pid_t pid;
    int pidfd;

    /* shorter than a head */
    assert_int_equal(raw_send(&r, "garbage", 7, fds, 2, 0, &pid, &pidfd), EMSGSIZE);

    int32_t at[2] = {1, 2};
    size_t len = 0;
    char *req = request_for(5, DANGER, "echo bad", at, 2, &len);
    struct sandbox_launcher_req *h = (void *)req;

    h->magic ^= 1; /* not ours */
    assert_int_equal(raw_send(&r, req, len, fds, 2, 5, &pid, &pidfd), EPROTO);
    h->magic ^= 1;
    /* more fds said than came */
    assert_int_equal(raw_send(&r, req, len, fds, 1, 5, &pid, &pidfd), EBADF);
    /* a number out of range, then one twice */
    h->at[1] = SANDBOX_LAUNCHER_MAX_AT + 1;
    assert_int_equal(raw_send(&r, req, len, fds, 2, 5, &pid, &pidfd), EBADF);
    h->at[1] = 1;
    assert_int_equal(raw_send(&r, req, len, fds, 2, 5, &pid, &pidfd), EPROTO);
    h->at[1] = 2;
    /* more strings said than sent, then the last not terminated */
    h->n_env = 2;
    assert_int_equal(raw_send(&r, req, len, fds, 2, 5, &pid, &pidfd), EPROTO);
    h->n_env = 1;
    assert_int_equal(raw_send(&r, req, len - 1, fds, 2, 5, &pid, &pidfd), EPROTO);
    /* no program */
    h->n_argv = 0;
    h->n_env = 10;
    assert_int_equal(raw_send(&r, req, len, fds, 2, 5, &pid, &pidfd), E2BIG);
    free(req);
    close(p[0]);
    close(p[1]);
    assert_int_equal(raw_fd_count(&r), before);

    char *out = NULL;
    assert_int_equal(raw_call(&r, 6, DANGER, "echo still serving", -1, -1, &out), 0);
    assert_string_equal(out, "still serving\n");
    free(out);
    /* one more round trip: the launcher is done with the call before it
     * (it closes the pidfd it sent after sending it) */
    assert_int_equal(raw_send(&r, "garbage", 7, NULL, 0, 0, &pid, &pidfd), EMSGSIZE);
    assert_int_equal(raw_fd_count(&r), before);
    raw_stop(&r);
}

/* ---- through the server's client ---- */

/* One call through launcher_client_spawn; returns its result (0, 1, or
 * -errno), and with 0 the output in *out and the status in *status. */
static int
client_call(const char *file, const char *script, char **out, int *status)
{
    int p[2];
    must(pipe2(p, O_CLOEXEC) == 0, "pipe");
    const char *args[] = {file, "--policy", DANGER, "--cwd", "/",
                          "--", "/bin/sh",  "-c",   script,  NULL};
    char **argv = (char **)args;
    struct spawn_fd fds[] = {{p[1], 1}, {p[1], 2}};
    struct spawn_options o = {.file = file,
                              .argv = argv,
                              .fds = fds,
                              .n_fds = 2,
                              .new_session = true,
                              .die_with_server = true,
                              .via_launcher = true};
    pid_t pid = -1;
    int pidfd = -1;
    int rc = launcher_client_spawn(&o, &pid, &pidfd);
    close(p[1]);
    if (rc == 0) {
        *out = read_all(p[0]);
        *status = wait_pidfd(pidfd);
    }
    close(p[0]);
    return rc;
}

/* The launcher killed between calls: the next call starts a new one and
 * runs; wedged (stopped): the call that finds it so fails after the
 * reply's time limit, the launcher is killed, and the next call runs on a
 * new one; no fd is left behind. */
static void
test_killed_launcher_restarts(void **state)
{
    (void)state;
    int fds_before = fds_open_count();
    char *out = NULL;
    int status = -1;
    assert_int_equal(client_call(helper, "echo $$ one", &out, &status), 0);
    assert_int_equal(status, 0);
    assert_non_null(strstr(out, " one\n"));
    free(out);
    pid_t first = launcher_client_pid();
    assert_true(first > 0);

    must(kill(first, SIGKILL) == 0, "kill");
    must(waitpid(first, NULL, 0) == first, "waitpid");
    assert_int_equal(client_call(helper, "echo two", &out, &status), 0);
    assert_string_equal(out, "two\n");
    assert_int_equal(status, 0);
    free(out);
    pid_t second = launcher_client_pid();
    assert_true(second > 0 && second != first);

    must(kill(second, SIGSTOP) == 0, "kill");
    /* no cgroup to kill what it may have started: the call fails */
    assert_true(client_call(helper, "echo three", &out, &status) < 0);
    assert_int_equal(launcher_client_pid(), 0);
    assert_int_equal(client_call(helper, "echo four; exit 4", &out, &status), 0);
    assert_string_equal(out, "four\n");
    assert_int_equal(status, 4);
    free(out);
    pid_t third = launcher_client_pid();
    assert_true(third > 0 && third != second);

    launcher_client_stop();
    must(waitpid(third, &status, 0) == third, "waitpid");
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(fds_open_count(), fds_before);
}

/* A call too long for one request is started the other way, alone: the
 * next call goes through the launcher again. */
static void
test_oversized_call_alone_falls_back(void **state)
{
    (void)state;
    size_t big = SANDBOX_LAUNCHER_REQ_MAX + 1;
    char *script = malloc(big + 16);
    assert_non_null(script);
    strcpy(script, "echo big; : ");
    memset(script + strlen(script), 'x', big);
    script[big + 15] = '\0';
    char *out = NULL;
    int status = -1;
    assert_int_equal(client_call(helper, script, &out, &status), 1);
    free(script);
    assert_int_equal(client_call(helper, "echo small", &out, &status), 0);
    assert_string_equal(out, "small\n");
    assert_int_equal(status, 0);
    free(out);
    pid_t l = launcher_client_pid();
    assert_true(l > 0);
    launcher_client_stop();
    must(waitpid(l, &status, 0) == l, "waitpid");
}

/* ---- through the server ---- */

/* The server's child whose command line holds --launcher, or 0. */
static pid_t
launcher_of(pid_t server)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)server, (int)server);
    FILE *f = fopen(path, "re");
    must(f != NULL, path);
    long child;
    pid_t found = 0;
    while (found == 0 && fscanf(f, "%ld", &child) == 1) {
        char cmd[64], line[256] = "";
        snprintf(cmd, sizeof cmd, "/proc/%ld/cmdline", child);
        FILE *c = fopen(cmd, "re");
        size_t n = c ? fread(line, 1, sizeof line - 1, c) : 0;
        if (c)
            fclose(c);
        for (size_t i = 0; i < n; i++)
            line[i] = line[i] ? line[i] : ' ';
        if (strstr(line, " " SANDBOX_LAUNCHER_OPT))
            found = (pid_t)child;
    }
    fclose(f);
    return found;
}

/* Whether pid is gone, reaped (no zombie left). */
static bool
reaped(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    return access(path, F_OK) != 0;
}

/* One shell call's output through the server; asserts exit code 0. */
static char *
server_call(struct mcp_client *c, const char *command)
{
    json_t *a = mcp_client_shell(c, command, "/");
    const json_t *r = json_object_get(json_object_get(a, "result"), "structuredContent");
    assert_non_null(r);
    if (json_integer_value(json_object_get(r, "exit_code")) != 0) {
        char *text = json_dumps(r, 0);
        fail_msg("%s: %s", command, text ? text : "(no text)");
    }
    char *out = strdup(json_string_value(json_object_get(r, "output")));
    assert_non_null(out);
    json_decref(a);
    return out;
}

/* The real server: its first call starts a launcher (its child); that
 * launcher killed, the next call starts another and runs, the dead one is
 * reaped, and the server holds as many fds as before. */
static void
test_server_replaces_a_killed_launcher(void **state)
{
    (void)state;
    const char *server = getenv("EXECGATE_TEST_SERVER");
    const char *bash = getenv("EXECGATE_TEST_BASH");
    const char *unpriv = getenv("EXECGATE_TEST_UNPRIVILEGED");
    /* the server as the test user: the server suites' own variants */
    if (server == NULL || bash == NULL || (unpriv && strcmp(unpriv, "1") == 0))
        skip();
    /* --no-prepare: the fds are counted between calls, where a sandbox
     * set up ahead of the next call comes and goes */
    const char *argv[] = {server, "--bash", bash, "--sandbox-helper", helper, "--no-prepare", NULL};
    struct mcp_client *c = mcp_client_start(argv, NULL);
    json_decref(mcp_client_initialize(c));
    char *out = server_call(c, "echo one");
    assert_string_equal(out, "one\n");
    free(out);
    pid_t first = launcher_of(mcp_client_pid(c));
    assert_true(first > 0);
    /* settled: the first call's login snapshot capture may still be
     * releasing its fds as the answer comes */
    int fds = mcp_client_fd_count_settled(c);
    must(kill(first, SIGKILL) == 0, "kill the launcher");
    out = server_call(c, "echo two");
    assert_string_equal(out, "two\n");
    free(out);
    pid_t second = launcher_of(mcp_client_pid(c));
    assert_true(second > 0 && second != first);
    assert_int_equal(mcp_client_fd_count_settled(c), fds);
    /* the server reaps the killed one (its subreaper): waits on the state,
     * up to 10 s, for the signal to be handled */
    for (int i = 0; i < 200 && !reaped(first); i++) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(reaped(first));
    mcp_client_close_stdin(c);
    assert_int_equal(mcp_client_wait_exit(c, 30000), 0);
    mcp_client_free(c);
}

/* A helper that is no launcher (it says nothing on the socket): the call
 * is left to the other start, and so is every later one. */
static void
test_no_launcher_falls_back(void **state)
{
    (void)state;
    char *out = NULL;
    int status = -1;
    int fds_before = fds_open_count();
    assert_int_equal(client_call("/bin/true", "echo never", &out, &status), 1);
    assert_int_equal(launcher_client_pid(), 0);
    assert_int_equal(client_call(helper, "echo never", &out, &status), 1);
    assert_int_equal(fds_open_count(), fds_before);
}

/* As the test user, when asked to and started as root. */
static void
maybe_drop_privileges(void)
{
    const char *u = getenv("EXECGATE_TEST_UNPRIVILEGED");
    if (u == NULL || strcmp(u, "1") != 0 || getuid() != 0)
        return;
    struct test_user user;
    test_user_create(&user);
    /* the helper readable and runnable by the user, user namespaces */
    if (test_user_can_serve(&user, helper) != 0)
        exit(77);
    must(setgroups(0, NULL) == 0 && setgid(user.gid) == 0 && setuid(user.uid) == 0,
         "becoming the test user");
    test_user_release(&user);
}

int
main(void)
{
    helper = getenv("EXECGATE_TEST_SANDBOX");
    if (helper == NULL) {
        fprintf(stderr, "EXECGATE_TEST_SANDBOX is not set\n");
        return 1;
    }
    maybe_drop_privileges();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_see_no_other_calls_fds),
        cmocka_unit_test(test_confined_call),
        cmocka_unit_test(test_calls_copy_one_read_only_dev),
        cmocka_unit_test(test_call_holds_no_launcher_fd),
        cmocka_unit_test(test_malformed_requests_are_refused),
        cmocka_unit_test(test_killed_launcher_restarts),
        cmocka_unit_test(test_oversized_call_alone_falls_back),
        cmocka_unit_test(test_server_replaces_a_killed_launcher),
        /* last: it turns the launcher off for this process */
        cmocka_unit_test(test_no_launcher_falls_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
