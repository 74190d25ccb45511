/*
 * execgate: the MCP server whose shell tool runs commands in a sandbox.
 *
 * Parses the command line, then runs one libuv loop until the client goes
 * away or a signal asks it to stop; exits 0 after a clean shutdown.
 */
#include "common/log.h"
#include "server/call/call_cgroup.h"
#include "server/doctor.h"
#include "server/mcp/mcp.h"
#include "server/mcp/mcp_http.h"
#include "server/options.h"

#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uv.h>

/*
 * execgate --cgroup-guard SERVER BASE...: started by the server (never by
 * a person) when calls get cgroups.  Waits for the server, its parent, to
 * end, then kills and removes the call cgroups it left under each BASE.
 * Terminal and shutdown signals are ignored: only the server's end ends it.
 */
static int
guard_main(int argc, char **argv)
{
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    pid_t server = (pid_t)atoi(argv[2]);
    int pidfd = (int)syscall(SYS_pidfd_open, server, 0);
    /* pinned first, then checked: a parent that is no longer the server
     * has died already */
    if (pidfd >= 0 && getppid() == server) {
        struct pollfd p = {pidfd, POLLIN, 0};
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
            ;
    }
    if (pidfd >= 0)
        close(pidfd);
    int n = call_cgroup_reap_left((const char *const *)argv + 3, (size_t)(argc - 3), server);
    if (n > 0)
        log_info("cgroup guard: the server %d ended with %d call cgroup(s) left: killed and "
                 "removed",
                 (int)server, n);
    return 0;
}

/*
 * A call that prints much leaves big buffers behind when it ends: its
 * output ring (up to --max-output-bytes) and its answer (a few MB).  glibc
 * raises its mmap threshold to the size of the largest mmapped block
 * freed, after which such buffers come from the heap and stay resident
 * (VmRSS after three calls printing 20 MB each: 6.0 MB, against 2.7 MB
 * with the threshold fixed).  A threshold set once stays where it is: big
 * buffers are mmapped, and given back when freed.
 */
static void
keep_mmap_threshold(void)
{
#ifdef M_MMAP_THRESHOLD
    if (mallopt(M_MMAP_THRESHOLD, 128 * 1024) != 1)
        log_debug("malloc's mmap threshold could not be fixed: memory freed after a call that "
                  "printed much may stay resident");
#endif
}

int
main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "--cgroup-guard") == 0)
        return guard_main(argc, argv);
    struct server_options o;
    char *err = NULL;
    switch (options_parse(argc, argv, &o, &err)) {
    case OPTIONS_EXIT:
        return 0;
    case OPTIONS_ERROR:
        fprintf(stderr, "execgate: %s\n", err ? err : "out of memory");
        free(err);
        return 2;
    case OPTIONS_RUN:
        break;
    }
    log_set_level(o.log_level);
    log_set_format(o.log_format);
    if (o.doctor) {
        /* what a server started here would use (it is not serving: stdout
         * is the person's) */
        int status = doctor_run(&o, stdout);
        options_release(&o);
        return status;
    }
    /* A client that goes away must not kill the server mid-answer; libuv
     * resets dispositions in the children it spawns. */
    signal(SIGPIPE, SIG_IGN);
    /* a file size limit makes a write short (EFBIG), not the server die */
    signal(SIGXFSZ, SIG_IGN);
    /* escalation hook: fds the server inherited beyond stdio reach none of
     * its children (an escalated program gets exactly the fds its wrapper
     * forwarded; a sandboxed command only what the call gives it) */
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        log_warn("cannot mark inherited fds close-on-exec: %s", strerror(errno));
    keep_mmap_threshold();

    uv_loop_t loop;
    int rc = uv_loop_init(&loop);
    if (rc < 0) {
        log_error("cannot start the event loop: %s", uv_strerror(rc));
        options_release(&o);
        return 1;
    }
    struct mcp_server *s = mcp_server_new(&loop, &o, &err);
    if (!s) {
        /* the configuration refused (a rules file, the audit log): said as
         * the option errors are, or as a record with --log-format json */
        if (o.log_format == LOG_FORMAT_JSON)
            log_error("%s", err ? err : "out of memory");
        else
            fprintf(stderr, "execgate: %s\n", err ? err : "out of memory");
        free(err);
        uv_loop_close(&loop);
        options_release(&o);
        return 2;
    }
    int status = 0;
    /* --listen: HTTP sessions instead of the stdio client */
    struct mcp_http *http = NULL;
    if (o.listen_count > 0 && !(http = mcp_http_new(&loop, s, &o, &err))) {
        fprintf(stderr, "execgate: %s\n", err ? err : "out of memory");
        free(err);
        mcp_server_shutdown(s, "startup failure");
        uv_run(&loop, UV_RUN_DEFAULT);
        mcp_server_free(s);
        uv_loop_close(&loop);
        options_release(&o);
        return 2;
    }
    rc = http ? mcp_server_start(s, -1, -1) : mcp_server_start(s, STDIN_FILENO, STDOUT_FILENO);
    if (rc < 0) {
        log_error("cannot serve on stdin/stdout: %s (they must be pipes, sockets or a terminal)",
                  uv_strerror(rc));
        status = 1;
        mcp_server_shutdown(s, "startup failure");
    } else if (http) {
        log_info("serving HTTP sessions (bash %s, sandbox helper %s)", o.bash_path,
                 o.sandbox_helper);
    } else {
        log_info("serving on stdio (%s %s, sandbox helper %s)", options_shell_name(o.shell),
                 o.shell_path, o.sandbox_helper);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    mcp_server_free(s);
    mcp_http_free(http);
    rc = uv_loop_close(&loop);
    if (rc < 0) {
        log_error("event loop closed with handles open: %s", uv_strerror(rc));
        status = 1;
    }
    options_release(&o);
    uv_library_shutdown();
    return status;
}
