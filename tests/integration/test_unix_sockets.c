/*
 * No outside Unix socket answers a sandboxed command: the real server
 * over stdio, the real helper, a workspace-write sandbox with the network
 * off.  An "outside" server (an ssh-agent, D-Bus or docker stand-in:
 * sock-client serve) runs as the server's user and creates a file when a
 * client sends it "PWNED", so a file appearing means the sandbox reached
 * it; the banner it sends ("SECRET") in a command's output means the same.
 *
 * The attacks: the socket outside the writable roots and in /tmp (a
 * writable root); reached through a symlink, /proc/self/root, a relative
 * path, a hard link; a thread rewriting the address and a process renaming
 * a symlink between an inside and the outside socket while the command
 * connects; a datagram socket, with sendto, sendmsg and sendmmsg (a
 * thread flipping the message's address too); another execgate's MCP listener (the
 * session escape: danger-full-access asked for over curl).  What must keep
 * working: a server the command starts in its workspace, and a socket
 * named by --allow-unix-socket (that one alone).
 *
 * Variants (tests/integration/meson.build): EXECGATE_TEST_EXTRA (shell
 * enforcement) and EXECGATE_TEST_UNPRIVILEGED=1 (the server, and the
 * outside servers, run as a test user; skipped, 77, when not root).
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

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REFUSED_LINE "execgate: refused `connect "

static struct {
    const char *client; /* sock-client */
    char *scratch;      /* under $TMPDIR or /tmp: a writable root (attack_scratch) */
    pid_t servers[4];   /* outside servers, killed by the teardown */
} g;

/* ---- the world ---- */

/* The server with more arguments (NULL-terminated; NULL: none). */
static struct mcp_world *
world_with(const char *const *more)
{
    const struct mcp_world_options o = {.extra = attack_suite_extra(), .more = more};
    return attack_world_start("", &o);
}

/* The server with one --allow-unix-socket=PATH per entry of allow
 * (NULL-terminated; NULL: none). */
static struct mcp_world *
world_start(const char *const *allow)
{
    char *opts[4] = {NULL};
    for (size_t i = 0; allow && allow[i]; i++) {
        assert_true(i < 3);
        opts[i] = mcp_world_fmt("--allow-unix-socket=%s", allow[i]);
    }
    struct mcp_world *w = world_with((const char *const *)opts);
    for (size_t i = 0; opts[i]; i++)
        free(opts[i]);
    return w;
}

/* A directory in /tmp (or $TMPDIR) the server's user and its sandbox
 * can enter: the "in a writable root" case. */
static const char *
scratch(void)
{
    if (!g.scratch) {
        g.scratch = attack_scratch(NULL, "unix-sockets");
        /* the outside servers run as the server's user */
        assert_int_equal(chmod(g.scratch, 0777), 0);
    }
    return g.scratch;
}

/* Starts argv (after the test user's prefix in the unprivileged run) in
 * the background and waits for its "ready" line; killed by the teardown. */
static void
start_server(const char *const *argv)
{
    const char *full[16];
    attack_as_server_user(full, sizeof(full) / sizeof(full[0]), argv);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        setsid();
        execv(full[0], (char *const *)full);
        _exit(127);
    }
    close(p[1]);
    char buf[16] = {0};
    ssize_t n = read(p[0], buf, 6);
    close(p[0]);
    for (size_t i = 0; i < sizeof g.servers / sizeof g.servers[0]; i++) {
        if (g.servers[i] == 0) {
            g.servers[i] = pid;
            break;
        }
    }
    if (n != 6 || strncmp(buf, "ready\n", 6) != 0)
        fail_msg("%s %s did not start", argv[0], argv[1]);
}

/* An outside stream server at path: MARK (mark) on "PWNED". */
static void
outside_server(const char *path, const char *mark)
{
    const char *argv[] = {g.client, "serve", path, mark, "SECRET\n", NULL};
    start_server(argv);
}

static int
teardown(void **state)
{
    for (size_t i = 0; i < sizeof g.servers / sizeof g.servers[0]; i++) {
        if (g.servers[i] > 0) {
            kill(-g.servers[i], SIGKILL);
            kill(g.servers[i], SIGKILL);
            waitpid(g.servers[i], NULL, 0);
        }
        g.servers[i] = 0;
    }
    g.scratch = NULL; /* removed by attack_teardown, with the world */
    return attack_teardown(state);
}

/* The attack's proof: the outside server was not reached. */
static void
assert_unreached(const char *mark, const json_t *a)
{
    const char *out = mcp_world_output(a);
    if (access(mark, F_OK) == 0 || strstr(out, "SECRET"))
        fail_msg("the outside socket answered the sandbox\noutput: [%s]", out);
}

/* ---- attacks ---- */

/* A socket outside the writable roots, connected by path: refused, with
 * the line saying which socket and how to allow it. */
static void
test_outside_roots_refused(void **state)
{
    (void)state;
    struct mcp_world *w = world_start(NULL);
    char *sock = tmpdir_path(w->outside, "agent.sock");
    char *mark = tmpdir_path(w->outside, "pwned");
    outside_server(sock, mark);
    char *cmd = mcp_world_fmt("%s connect %s", g.client, sock);
    json_t *a = attack_run(w, cmd, NULL);
    assert_unreached(mark, a);
    mcp_world_assert_contains(mcp_world_output(a), "connect: Connection refused");
    mcp_world_assert_contains(mcp_world_output(a), REFUSED_LINE);
    mcp_world_assert_contains(mcp_world_output(a), "--allow-unix-socket");
    assert_int_not_equal(mcp_world_exit(a), 0);
    json_decref(a);
    free(cmd);
    free(mark);
    free(sock);
    attack_world_end(w);
}

/* The same refusal from a thread other than the process's first: the
 * refusal line still reaches the command's stderr (the supervisor reaches
 * the thread that called, by its thread id). */
static void
test_refused_from_second_thread_says_why(void **state)
{
    (void)state;
    struct mcp_world *w = world_start(NULL);
    char *sock = tmpdir_path(w->outside, "agent.sock");
    char *mark = tmpdir_path(w->outside, "pwned");
    outside_server(sock, mark);
    char *cmd = mcp_world_fmt("%s connect-thread %s", g.client, sock);
    json_t *a = attack_run(w, cmd, NULL);
    assert_unreached(mark, a);
    mcp_world_assert_contains(mcp_world_output(a), "connect: Connection refused");
    mcp_world_assert_contains(mcp_world_output(a), REFUSED_LINE);
    mcp_world_assert_contains(mcp_world_output(a), "--allow-unix-socket");
    json_decref(a);
    free(cmd);
    free(mark);
    free(sock);
    attack_world_end(w);
}

/* The variant for execs (tree enforcement): a program a rule forbids,
 * exec'd from a second thread, is refused with its line on stderr. */
static void
test_exec_refused_from_second_thread_says_why(void **state)
{
    (void)state;
    const char *extra = getenv("EXECGATE_TEST_EXTRA");
    if (extra && strstr(extra, "--exec-enforcement=shell"))
        skip(); /* shell enforcement does not see a program's own execs */
    const struct mcp_world_options o = {.extra = attack_suite_extra()};
    struct mcp_world *w =
        attack_world_start("prefix_rule(pattern=[\"touch\"], decision=\"forbidden\")\n", &o);
    char *mark = tmpdir_path(w->outside, "touched");
    char *cmd = mcp_world_fmt("%s exec-thread /usr/bin/touch %s", g.client, mark);
    json_t *a = attack_run(w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "exec: Permission denied");
    mcp_world_assert_contains(mcp_world_output(a), "execgate: refused `touch ");
    assert_int_not_equal(access(mark, F_OK), 0);
    json_decref(a);
    free(cmd);
    free(mark);
    attack_world_end(w);
}

/* The same socket in /tmp, a writable root: "inside a writable root" is
 * not the test.  Also through a symlink and a hard link the command makes,
 * /proc/self/root, and a relative path. */
static void
test_tmp_and_path_variants_refused(void **state)
{
    (void)state;
    struct mcp_world *w = world_start(NULL);
    char *sock = tmpdir_path(scratch(), "agent.sock");
    char *mark = tmpdir_path(w->outside, "pwned");
    outside_server(sock, mark);
    char *cmd = mcp_world_fmt("C=%s; S=%s; D=%s\n"
                              "$C connect $S\n"
                              "ln -s $S link.sock && $C connect link.sock\n"
                              "ln $S hard.sock && $C connect hard.sock\n"
                              "$C connect /proc/self/root$S\n"
                              "(cd $D && $C connect agent.sock)\n"
                              "$C connect $PWD/../$(basename $D)/agent.sock\n",
                              g.client, sock, scratch());
    json_t *a = attack_run(w, cmd, NULL);
    assert_unreached(mark, a);
    mcp_world_assert_contains(mcp_world_output(a), REFUSED_LINE);
    assert_null(strstr(mcp_world_output(a), "reply:"));
    json_decref(a);
    free(cmd);
    free(mark);
    free(sock);
    attack_world_end(w);
}

/* A thread rewrites the address between an inside and the outside socket
 * while the command connects, and a process swaps a symlink between the
 * two by rename: the inside one answers, the outside one never. */
static void
test_races_refused(void **state)
{
    (void)state;
    struct mcp_world *w = world_start(NULL);
    char *sock = tmpdir_path(scratch(), "agent.sock");
    char *mark = tmpdir_path(w->outside, "pwned");
    outside_server(sock, mark);
    char *cmd =
        mcp_world_fmt("C=%s\n"
                      "$C serve $PWD/in.sock - INSIDE > ready.txt &\n"
                      "while ! grep -q ready ready.txt 2>/dev/null; do kill -0 $! || break; done\n"
                      "$C race $PWD/in.sock %s 400\n"
                      "$C race-rename $PWD/swap.sock $PWD/in.sock %s 400\n"
                      "kill %%1\n",
                      g.client, sock, sock);
    json_t *a = attack_run(w, cmd, NULL);
    const char *out = mcp_world_output(a);
    assert_unreached(mark, a);
    /* both races ran: the outside socket never answered, the inside one did */
    const char *p = out;
    for (int race = 0; race < 2; race++) {
        p = strstr(p, "banners: ");
        if (!p)
            fail_msg("race %d did not run\noutput: [%s]", race, out);
        int inside = -1, outside = -1, n = -1;
        assert_int_equal(sscanf(p, "banners: %d inside, %d outside (of %d)", &inside, &outside, &n),
                         3);
        if (outside != 0)
            fail_msg("race %d: the outside socket answered %d of %d connects\noutput: [%s]", race,
                     outside, n, out);
        if (inside <= 0)
            fail_msg("race %d: the inside socket never answered\noutput: [%s]", race, out);
        p++;
    }
    json_decref(a);
    free(cmd);
    free(mark);
    free(sock);
    attack_world_end(w);
}

/* With IP sockets allowed (the network proxy's namespace), a thread swaps
 * a Unix and a TCP socket onto the fd number being connected to the
 * outside socket: the check is made on the socket object, so whichever it
 * took, the outside server never answers. */
static void
test_fd_swap_race_refused(void **state)
{
    (void)state;
    const char *proxy[] = {"--network-proxy=on", NULL};
    struct mcp_world *w = world_with(proxy);
    char *sock = tmpdir_path(scratch(), "agent.sock");
    char *mark = tmpdir_path(w->outside, "pwned");
    outside_server(sock, mark);
    char *cmd = mcp_world_fmt("%s race-fd %s 300", g.client, sock);
    json_t *a = attack_run(w, cmd, NULL);
    const char *out = mcp_world_output(a);
    assert_unreached(mark, a);
    mcp_world_assert_contains(out, "outside: 0 of 300");
    json_decref(a);
    free(cmd);
    free(mark);
    free(sock);
    attack_world_end(w);
}

/* The server's epoll registrations that no longer match the fd they
 * name (a file registered through an fd since closed): each is reported
 * ready for as long as its file lives, and the loop spins. */
static int
stale_epoll_entries(pid_t server, char *why, size_t cap)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)server);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int stale = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[512], link[64];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n <= 0 || (link[n] = '\0', strcmp(link, "anon_inode:[eventpoll]") != 0))
            continue;
        snprintf(path, sizeof path, "/proc/%d/fdinfo/%s", (int)server, e->d_name);
        FILE *f = fopen(path, "re");
        char line[256];
        while (f && fgets(line, sizeof line, f)) {
            int tfd;
            unsigned long ino;
            const char *at = strstr(line, "ino:");
            if (sscanf(line, "tfd: %d", &tfd) != 1 || !at || sscanf(at, "ino:%lx", &ino) != 1)
                continue;
            char target[64];
            struct stat st;
            snprintf(target, sizeof target, "/proc/%d/fd/%d", (int)server, tfd);
            if (stat(target, &st) != 0 || st.st_ino != ino) {
                snprintf(why, cap, "tfd %d registered for inode %lu", tfd, ino);
                stale++;
            }
        }
        if (f)
            fclose(f);
    }
    closedir(d);
    return stale;
}

/* A blocking TCP connect (IP sockets allowed: the network proxy's
 * namespace) waits on the server's loop for the socket to be writable;
 * once answered, the server's epoll holds nothing on the socket, which the
 * command keeps open (a registration left on it spun the loop). */
static void
test_blocking_connect_leaves_no_registration(void **state)
{
    (void)state;
    const char *proxy[] = {"--network-proxy=on", NULL};
    struct mcp_world *w = world_with(proxy);
    const char *cmd = "/usr/bin/python3 -c '\n"
                      "import socket, os, urllib.parse\n"
                      "u = urllib.parse.urlparse(os.environ[\"HTTP_PROXY\"])\n"
                      "s = socket.socket(); s.connect((u.hostname, u.port))\n"
                      "open(\"connected\", \"w\").close()\n"
                      "while not os.path.exists(\"release\"): pass\n'";
    long long id = mcp_client_send_request(
        w->c, "tools/call",
        json_pack("{s:s, s:{s:s, s:s, s:b, s:i}}", "name", "shell", "arguments", "command", cmd,
                  "workdir", w->wd, "login", 0, "timeout_ms", 60000));
    char *connected = tmpdir_path(w->wd, "connected");
    char *release = tmpdir_path(w->wd, "release");
    while (access(connected, F_OK) != 0) {
        const struct timespec tick = {0, 10 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
    char why[128] = "";
    int stale = stale_epoll_entries(mcp_client_pid(w->c), why, sizeof why);
    FILE *f = fopen(release, "w");
    assert_non_null(f);
    fclose(f);
    json_t *jid = json_integer(id);
    json_t *a = mcp_client_response(w->c, jid, 60000);
    assert_non_null(a);
    if (stale)
        fail_msg("the server's epoll has %d stale entries (%s)", stale, why);
    assert_int_equal(mcp_world_exit(a), 0);
    json_decref(a);
    json_decref(jid);
    free(connected);
    free(release);
    attack_world_end(w);
}

/* A datagram socket outside: neither sendto with its address nor a
 * connect and send delivers. */
static void
test_datagram_outside_refused(void **state)
{
    (void)state;
    struct mcp_world *w = world_start(NULL);
    char *sock = tmpdir_path(scratch(), "log.sock");
    char *mark = tmpdir_path(w->outside, "pwned");
    const char *argv[] = {g.client, "serve-dgram", sock, mark, NULL};
    start_server(argv);
    char *cmd = mcp_world_fmt("%s dgram %s", g.client, sock);
    json_t *a = attack_run(w, cmd, NULL);
    const char *out = mcp_world_output(a);
    if (access(mark, F_OK) == 0)
        fail_msg("the outside datagram socket got the sandbox's message\noutput: [%s]", out);
    mcp_world_assert_contains(out, "sendto: Connection refused");
    mcp_world_assert_contains(out, "connect: Connection refused");
    mcp_world_assert_contains(out, "execgate: refused `sendto ");
    json_decref(a);
    free(cmd);
    free(mark);
    free(sock);
    attack_world_end(w);
}

/* The same outside datagram socket (a /dev/log stand-in) with sendmsg and
 * sendmmsg, whose address seccomp cannot see: refused, and refused still
 * while a thread flips the msghdr between no address and the outside one
 * (a look at the message, then the kernel's own read, would let the
 * address through). */
static void
test_datagram_sendmsg_outside_refused(void **state)
{
    (void)state;
    struct mcp_world *w = world_start(NULL);
    char *sock = tmpdir_path(scratch(), "log.sock");
    char *mark = tmpdir_path(w->outside, "pwned");
    const char *argv[] = {g.client, "serve-dgram", sock, mark, NULL};
    start_server(argv);
    char *cmd =
        mcp_world_fmt("C=%s\n$C msg %s\n$C msg-race %s 100 2>/dev/null\n", g.client, sock, sock);
    json_t *a = attack_run(w, cmd, NULL);
    const char *out = mcp_world_output(a);
    if (access(mark, F_OK) == 0)
        fail_msg("the outside datagram socket got the sandbox's message\noutput: [%s]", out);
    mcp_world_assert_contains(out, "sendmsg: Connection refused");
    mcp_world_assert_contains(out, "sendmmsg: Connection refused");
    mcp_world_assert_contains(out, "execgate: refused `sendmsg ");
    mcp_world_assert_contains(out, "execgate: refused `sendmmsg ");
    const char *race = strstr(out, "msg-race: ");
    int sent = -1, total = -1, refused = -1;
    if (!race || sscanf(race, "msg-race: %d of %d sent (%d refused", &sent, &total, &refused) != 3)
        fail_msg("the race did not run\noutput: [%s]", out);
    if (sent != 0 || refused <= 0)
        fail_msg("racing sendmsg: %d of %d sent, %d refused\noutput: [%s]", sent, total, refused,
                 out);
    json_decref(a);
    free(cmd);
    free(mark);
    free(sock);
    attack_world_end(w);
}

/* An abstract socket outside (no file at all) stays unreachable, while
 * one the command serves itself answers. */
static void
test_abstract_sockets(void **state)
{
    (void)state;
    struct mcp_world *w = world_start(NULL);
    char *mark = tmpdir_path(w->outside, "pwned");
    char *name = mcp_world_fmt("@execgate-test-agent-%d", (int)getpid());
    outside_server(name, mark);
    /* abstract names are shared by every sandbox of the network namespace:
     * this test's pid keeps the variants running at once apart */
    char *cmd =
        mcp_world_fmt("C=%s\n"
                      "$C connect %s\n"
                      "$C serve @execgate-test-inside-%d - INSIDE > ready.txt &\n"
                      "while ! grep -q ready ready.txt 2>/dev/null; do kill -0 $! || break; done\n"
                      "$C connect @execgate-test-inside-%d\n"
                      "kill %%1\n",
                      g.client, name, (int)getpid(), (int)getpid());
    json_t *a = attack_run(w, cmd, NULL);
    const char *out = mcp_world_output(a);
    assert_unreached(mark, a);
    mcp_world_assert_contains(out, "reply: INSIDE");
    json_decref(a);
    free(cmd);
    free(name);
    free(mark);
    attack_world_end(w);
}

/* Another execgate's MCP listener (--listen unix:PATH), which would run a
 * command with danger-full-access for any client: the sandbox cannot reach
 * it, while the same request from outside is answered. */
static void
test_mcp_listener_session_escape(void **state)
{
    (void)state;
    struct mcp_world *w = world_start(NULL);
    char *sock = tmpdir_path(scratch(), "mcp.sock");
    char *listen = mcp_world_fmt("unix:%s", sock);
    const char *argv[] = {"/bin/sh",
                          "-c",
                          "\"$0\" \"$@\" & while [ ! -S \"$S\" ]; do sleep 0.01; "
                          "done; echo ready; wait",
                          attack_suite_server(),
                          "--listen",
                          listen,
                          "--rules",
                          w->rules,
                          NULL};
    setenv("S", sock, 1);
    start_server(argv);
    unsetenv("S");
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"attack\",\"version\":\"1\"}}}";
    char *curl = mcp_world_fmt("/usr/bin/curl -s --unix-socket %s -H 'Content-Type: "
                               "application/json' -H 'Accept: application/json, "
                               "text/event-stream' -d '%s' http://localhost/mcp",
                               sock, init);
    /* control: from outside, as the server's user, it answers */
    const char *outside[] = {"/bin/sh", "-c", curl, NULL};
    const char *full[16];
    attack_as_server_user(full, sizeof(full) / sizeof(full[0]), outside);
    struct proc_result res;
    assert_int_equal(proc_run(full, NULL, &res), 0);
    mcp_world_assert_contains(res.out, "protocolVersion");
    proc_result_free(&res);
    char *cmd = mcp_world_fmt("%s; echo \"curl=$?\"", curl);
    json_t *a = attack_run(w, cmd, NULL);
    const char *out = mcp_world_output(a);
    assert_null(strstr(out, "protocolVersion"));
    mcp_world_assert_contains(out, "curl=7");
    mcp_world_assert_contains(out, REFUSED_LINE);
    json_decref(a);
    free(cmd);
    free(curl);
    free(listen);
    free(sock);
    attack_world_end(w);
}

/* The same escape from a call of the listening server itself: a client
 * of `execgate --listen unix:PATH` runs a command that curls PATH, and
 * LINK, a hard link to the socket the user made outside.  The server
 * hides PATH in its sandboxes (--hide), so there the command finds the
 * cover, not a socket; --hide hides one name only, and LINK is another:
 * the connect supervision must refuse it, saying so.  The steps are curl
 * from outside (as the server's user): initialize, the initialized
 * notification, then tools/call. */
static void
test_own_listener_from_its_call(void **state)
{
    (void)state;
    char *sock = tmpdir_path(scratch(), "own.sock");
    char *link = tmpdir_path(scratch(), "own-link.sock");
    char *wd = tmpdir_path(scratch(), "wd");
    char *rules = tmpdir_path(scratch(), "rules");
    assert_int_equal(mkdir(wd, 0777), 0);
    assert_int_equal(mkdir(rules, 0777), 0);
    char *listen = mcp_world_fmt("unix:%s", sock);
    char *policy = mcp_world_fmt("{\"sandboxPolicy\":{\"type\":\"workspace-write\","
                                 "\"network_access\":false},\"sandboxCwd\":\"%s\"}",
                                 wd);
    const char *argv[] = {"/bin/sh",
                          "-c",
                          "\"$0\" \"$@\" 2>/dev/null & while [ ! -S \"$S\" ]; do sleep 0.01; "
                          "done; echo ready; wait",
                          attack_suite_server(),
                          "--listen",
                          listen,
                          "--rules",
                          rules,
                          "--sandbox",
                          policy,
                          NULL};
    setenv("S", sock, 1);
    start_server(argv);
    unsetenv("S");
    /* the client, outside: curl keeps the session id in $ID */
    const char *script =
        "H='-H Content-Type:application/json -H Accept:application/json,text/event-stream'\n"
        "post() { curl -s --unix-socket \"$S\" $H ${ID:+-H \"Mcp-Session-Id: $ID\"} \"$@\" "
        "http://localhost/mcp; }\n"
        "ID=$(post -D - -o /dev/null -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
        "\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
        "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}' | tr -d '\\r' | "
        "sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')\n"
        "[ -n \"$ID\" ] || { echo no-session; exit 1; }\n"
        "post -d '{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}'\n"
        "ln \"$S\" \"$L\" || { echo no-link; exit 1; }\n"
        "C='-s -H Content-Type:application/json -H Accept:application/json,text/event-stream "
        "-d {} http://localhost/mcp'\n"
        "INNER=\"test -S $S || echo path-hidden; curl --unix-socket $S $C; echo path=\\$?; "
        "curl --unix-socket $L $C; echo link=\\$?\"\n"
        "post -d \"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":2,\\\"method\\\":\\\"tools/call\\\","
        "\\\"params\\\":{\\\"name\\\":\\\"shell\\\",\\\"arguments\\\":{\\\"command\\\":"
        "\\\"$INNER\\\",\\\"workdir\\\":\\\"$W\\\",\\\"login\\\":false}}}\"\n";
    setenv("S", sock, 1);
    setenv("L", link, 1);
    setenv("W", wd, 1);
    const char *client[] = {"/bin/sh", "-c", script, NULL};
    const char *full[16];
    attack_as_server_user(full, sizeof(full) / sizeof(full[0]), client);
    struct proc_result res;
    assert_int_equal(proc_run(full, NULL, &res), 0);
    unsetenv("S");
    unsetenv("L");
    unsetenv("W");
    /* the call ran (its answer came): PATH is the cover, no socket, and
     * curl could not connect there; LINK is the socket itself, and the
     * supervisor refused its connect, telling the command */
    char *refused = mcp_world_fmt("refused `connect %s`", link);
    if (!strstr(res.out, "path-hidden") || !strstr(res.out, "path=7") ||
        !strstr(res.out, "link=7") || !strstr(res.out, refused))
        fail_msg("the command of the listening server's own call: [%s] [%s]", res.out, res.err);
    free(refused);
    proc_result_free(&res);
    free(policy);
    free(listen);
    free(rules);
    free(wd);
    free(link);
    free(sock);
}

/* ---- what keeps working ---- */

/* A server the command starts in its workspace answers it, by path,
 * relative path and symlink; so does a datagram socket it serves, with
 * sendto, connect and send, sendmsg and sendmmsg.  An fd passes with
 * sendmsg (SCM_RIGHTS) through a socketpair and to the command's own
 * datagram socket.  A blocking stream socket's sendmsg waits for room, as
 * the kernel's would, rather than fail when the queue is full.  A control
 * header longer than its buffer is refused as the kernel refuses it. */
static void
test_workspace_server_reachable(void **state)
{
    (void)state;
    struct mcp_world *w = world_start(NULL);
    char *cmd = mcp_world_fmt(
        "C=%s\n"
        "$C serve $PWD/in.sock - INSIDE > ready.txt &\n"
        "while ! grep -q ready ready.txt 2>/dev/null; do kill -0 $! || break; done\n"
        "$C connect $PWD/in.sock\n"
        "$C connect in.sock\n"
        "ln -s in.sock alias.sock && $C connect alias.sock\n"
        "/usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); "
        "s.connect(\"in.sock\"); print(\"python:\", s.recv(16))'\n"
        "$C serve-dgram $PWD/d.sock $PWD/got-dgram > ready-d.txt &\n"
        "while ! grep -q ready ready-d.txt 2>/dev/null; do kill -0 $! || break; done\n"
        "$C dgram d.sock\n"
        "$C msg d.sock\n"
        "$C pass-fd $PWD\n"
        "$C msg-stream 8\n"
        "$C msg-bad-cmsg\n"
        "kill %%1 %%2\n",
        g.client);
    json_t *a = attack_run(w, cmd, NULL);
    const char *out = mcp_world_output(a);
    const char *p = out;
    int replies = 0;
    while ((p = strstr(p, "reply: INSIDE")) != NULL) {
        replies++;
        p++;
    }
    if (replies != 3)
        fail_msg("%d of 3 connects reached the workspace's server\noutput: [%s]", replies, out);
    mcp_world_assert_contains(out, "python: b'INSIDE'");
    mcp_world_assert_contains(out, "sendto: sent");
    mcp_world_assert_contains(out, "connect: sent");
    mcp_world_assert_contains(out, "sendmsg: sent");
    mcp_world_assert_contains(out, "sendmmsg: 2 sent (5 bytes)");
    mcp_world_assert_contains(out, "socketpair: fd passed");
    mcp_world_assert_contains(out, "own socket: fd passed");
    mcp_world_assert_contains(out, "msg-stream: 8388608 read");
    mcp_world_assert_contains(out, "msg-stream: 8388608 of 8388608 bytes sent");
    /* as the kernel answers it, the server reading no further */
    mcp_world_assert_contains(out, "bad cmsg: Invalid argument");
    assert_null(strstr(out, "execgate: refused"));
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* --allow-unix-socket lets exactly the named sockets through (stream and
 * datagram); another outside socket stays refused. */
static void
test_allow_option(void **state)
{
    (void)state;
    char *sock = tmpdir_path(scratch(), "agent.sock");
    char *other = tmpdir_path(scratch(), "other.sock");
    char *dgram = tmpdir_path(scratch(), "dgram.sock");
    char *mark = tmpdir_path(scratch(), "allowed");
    char *mark2 = tmpdir_path(scratch(), "other");
    char *mark3 = tmpdir_path(scratch(), "dgram");
    outside_server(sock, mark);
    outside_server(other, mark2);
    const char *argv[] = {g.client, "serve-dgram", dgram, mark3, NULL};
    start_server(argv);
    const char *allow[] = {sock, dgram, NULL};
    struct mcp_world *w = world_start(allow);
    char *cmd = mcp_world_fmt("C=%s\n$C connect %s\n$C connect %s\n$C dgram %s\n", g.client, sock,
                              other, dgram);
    json_t *a = attack_run(w, cmd, NULL);
    const char *out = mcp_world_output(a);
    mcp_world_assert_contains(out, "reply: SECRET");
    assert_int_equal(access(mark, F_OK), 0);
    if (access(mark2, F_OK) == 0)
        fail_msg("a socket not named by --allow-unix-socket answered\noutput: [%s]", out);
    mcp_world_assert_contains(out, "connect: Connection refused");
    mcp_world_assert_contains(out, "sendto: sent");
    mcp_world_assert_contains(out, "connect: sent");
    assert_int_equal(access(mark3, F_OK), 0);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
    free(mark);
    free(mark2);
    free(mark3);
    free(sock);
    free(other);
    free(dgram);
}

/* The allowed path replaced by another server's socket after the server
 * started: the inode allowed is gone, the new one is refused. */
static void
test_allow_is_the_inode(void **state)
{
    (void)state;
    char *sock = tmpdir_path(scratch(), "agent.sock");
    char *mark = tmpdir_path(scratch(), "pwned");
    outside_server(sock, "-");
    const char *allow[] = {sock, NULL};
    struct mcp_world *w = world_start(allow);
    kill(-g.servers[0], SIGKILL);
    kill(g.servers[0], SIGKILL);
    waitpid(g.servers[0], NULL, 0);
    g.servers[0] = 0;
    outside_server(sock, mark); /* unlinks and binds anew: another inode */
    char *cmd = mcp_world_fmt("%s connect %s", g.client, sock);
    json_t *a = attack_run(w, cmd, NULL);
    assert_unreached(mark, a);
    mcp_world_assert_contains(mcp_world_output(a), REFUSED_LINE);
    json_decref(a);
    free(cmd);
    free(mark);
    free(sock);
    attack_world_end(w);
}

int
main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = attack_suite_begin("unix-socket-tests", 60000);
    if (rc != 0)
        return rc;
    g.client = getenv("EXECGATE_TEST_SOCK_CLIENT");
    if (!g.client) {
        fprintf(stderr, "EXECGATE_TEST_SOCK_CLIENT is not set\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_outside_roots_refused, teardown),
        cmocka_unit_test_teardown(test_refused_from_second_thread_says_why, teardown),
        cmocka_unit_test_teardown(test_exec_refused_from_second_thread_says_why, teardown),
        cmocka_unit_test_teardown(test_tmp_and_path_variants_refused, teardown),
        cmocka_unit_test_teardown(test_races_refused, teardown),
        cmocka_unit_test_teardown(test_fd_swap_race_refused, teardown),
        cmocka_unit_test_teardown(test_blocking_connect_leaves_no_registration, teardown),
        cmocka_unit_test_teardown(test_datagram_outside_refused, teardown),
        cmocka_unit_test_teardown(test_datagram_sendmsg_outside_refused, teardown),
        cmocka_unit_test_teardown(test_abstract_sockets, teardown),
        cmocka_unit_test_teardown(test_mcp_listener_session_escape, teardown),
        cmocka_unit_test_teardown(test_own_listener_from_its_call, teardown),
        cmocka_unit_test_teardown(test_workspace_server_reachable, teardown),
        cmocka_unit_test_teardown(test_allow_option, teardown),
        cmocka_unit_test_teardown(test_allow_is_the_inode, teardown),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    attack_suite_end();
    return rc;
}
