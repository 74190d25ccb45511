/*
 * helper: the setup sequence of execgate-sandbox.
 *
 * Order (as bubblewrap does it): signals reset, policy checks, then
 * no_new_privs, namespaces and mounts, chdir, Landlock, the report line, and
 * the seccomp filter as the very last step before execve, so that nothing
 * the helper itself does runs under the filter.
 */
#include "helper.h"
#include "policy.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

static void
vmessage(int errnum, const char *fmt, va_list ap)
{
    int saved = errnum;
    fputs("execgate-sandbox: ", stderr);
    vfprintf(stderr, fmt, ap);
    if (saved != 0)
        fprintf(stderr, ": %s", strerror(saved));
    fputc('\n', stderr);
}

noreturn void
helper_die(int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(errnum, fmt, ap);
    va_end(ap);
    exit(SANDBOX_EXIT_SETUP_FAILED);
}

noreturn void
helper_die_status(int status, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(errnum, fmt, ap);
    va_end(ap);
    exit(status);
}

void
helper_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("execgate-sandbox: warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The spawner may have left signals blocked or ignored; the program must
 * start from defaults whatever they were. */
static void
reset_signals(void)
{
    sigset_t all;
    sigemptyset(&all);
    if (sigprocmask(SIG_SETMASK, &all, NULL) != 0)
        helper_die(errno, "resetting the signal mask");
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int s = 1; s < NSIG; s++) {
        if (s == SIGKILL || s == SIGSTOP)
            continue;
        /* EINVAL for the signal numbers libc reserves: nothing to reset. */
        (void)sigaction(s, &dfl, NULL);
    }
}

/* The report fd must be open and must not leak into the program. */
static void
check_report_fd(int fd)
{
    if (fd < 0)
        return;
    if (fd <= 2)
        helper_die(0, "--report-fd %d: must not be stdin, stdout or stderr", fd);
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0)
        helper_die(errno, "--report-fd %d", fd);
    if (fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0)
        helper_die(errno, "--report-fd %d: setting close-on-exec", fd);
}

/* Writes all of text and a newline to fd. */
static void
write_line(int fd, const char *text)
{
    size_t len = strlen(text);
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            helper_die(errno, "writing the report to fd %d", fd);
        text += n;
        len -= (size_t)n;
    }
    while (write(fd, "\n", 1) < 0) {
        if (errno != EINTR)
            helper_die(errno, "writing the report to fd %d", fd);
    }
}

static void
send_report(int fd, json_t *report)
{
    if (fd < 0)
        return;
    char *text = json_dumps(report, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text == NULL)
        helper_die(ENOMEM, "encoding the report");
    write_line(fd, text);
    free(text);
}

static noreturn void
exec_program(char **argv)
{
    execvp(argv[0], argv);
    int e = errno;
    if (e == ENOENT || e == ENOTDIR)
        helper_die_status(127, e, "%s", argv[0]);
    helper_die_status(126, e, "%s", argv[0]);
}

static json_t *
report_new(const struct sandbox_policy *p)
{
    json_t *r = json_object();
    if (r == NULL ||
        json_object_set_new(r, "policy", json_string(sandbox_kind_name(sandbox_policy_kind(p)))) <
            0 ||
        json_object_set_new(r, "network", json_boolean(sandbox_policy_network_allowed(p))) < 0)
        helper_die(ENOMEM, "building the report");
    return r;
}

noreturn void
helper_run(struct helper_options *o)
{
    struct sandbox_policy *p = o->policy;
    reset_signals();
    check_report_fd(o->report_fd);
    json_t *report = report_new(p);

    if (sandbox_policy_kind(p) != SANDBOX_DANGER_FULL_ACCESS)
        helper_die(0, "policy %s: not supported by this build",
                   sandbox_kind_name(sandbox_policy_kind(p)));

    if (chdir(o->cwd) != 0)
        helper_die(errno, "--cwd %s", o->cwd);
    send_report(o->report_fd, report);
    json_decref(report);
    sandbox_policy_free(p);
    o->policy = NULL;
    exec_program(o->program_argv);
}
