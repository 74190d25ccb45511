/*
 * sandbox_harness: runs execgate-sandbox and captures what it reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/sandbox_harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const *run_prefix;

const char *
sbx_helper(void)
{
    const char *h = getenv("EXECGATE_TEST_SANDBOX");
    if (h == NULL) {
        fprintf(stderr, "EXECGATE_TEST_SANDBOX is not set\n");
        abort();
    }
    return h;
}

void
sbx_set_prefix(const char *const *prefix)
{
    run_prefix = prefix;
}

static size_t
count(const char *const *v)
{
    size_t n = 0;
    while (v != NULL && v[n] != NULL)
        n++;
    return n;
}

/* The report fd's lines: at most one report line (JSON) and, when the
 * program could not be started, a last line {"exec_error":ERRNO}. */
static void
read_report(int fd, struct sbx_result *r)
{
    char buf[8192];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    assert_true(n >= 0);
    buf[n] = '\0';
    for (char *line = buf; *line;) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl); /* every line ends */
        *nl = '\0';
        json_error_t jerr;
        json_t *j = json_loads(line, 0, &jerr);
        if (j == NULL)
            fail_msg("report is not JSON: %s (%s)", line, jerr.text);
        json_t *e = json_object_get(j, "exec_error");
        if (e) {
            assert_int_equal(r->exec_error, 0); /* once */
            assert_int_equal(nl[1], '\0');      /* last */
            assert_true(json_integer_value(e) > 0);
            r->exec_error = (int)json_integer_value(e);
            json_decref(j);
        } else {
            assert_null(r->report); /* one report line, first */
            r->report = j;
        }
        line = nl + 1;
    }
}

/* HELPER [extra...] --policy POLICY --cwd CWD --report-fd FDTEXT --
 * argv..., after the prefix (the array is malloc'd, its strings borrowed). */
static const char **
full_argv(const char *policy, const char *cwd, const char *const *extra, const char *const *argv,
          const char *fdtext)
{
    size_t n = count(run_prefix) + count(extra) + count(argv) + 10;
    const char **full = calloc(n, sizeof *full);
    assert_non_null(full);
    size_t i = 0;
    for (size_t k = 0; k < count(run_prefix); k++)
        full[i++] = run_prefix[k];
    full[i++] = sbx_helper();
    for (size_t k = 0; k < count(extra); k++)
        full[i++] = extra[k];
    full[i++] = "--policy";
    full[i++] = policy;
    full[i++] = "--cwd";
    full[i++] = cwd;
    full[i++] = "--report-fd";
    full[i++] = fdtext;
    full[i++] = "--";
    for (size_t k = 0; k < count(argv); k++)
        full[i++] = argv[k];
    full[i] = NULL;
    return full;
}

static const char *const default_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C",
                                          "HOME=/nonexistent", NULL};

void
sbx_run(const char *policy, const char *cwd, const char *const *extra, const char *const *argv,
        const char *const *envp, struct sbx_result *r)
{
    char path[] = "/tmp/sbx-report-XXXXXX";
    int fd = mkstemp(path); /* inherited on purpose: it is the report fd */
    assert_true(fd > 2);
    unlink(path);
    char fdtext[16];
    snprintf(fdtext, sizeof fdtext, "%d", fd);
    const char **full = full_argv(policy, cwd, extra, argv, fdtext);
    struct proc_options opts = {.envp = envp ? envp : default_env};
    memset(r, 0, sizeof *r);
    assert_int_equal(proc_run(full, &opts, &r->res), 0);
    free(full);
    r->code = proc_exit_code(&r->res);
    read_report(fd, r);
    r->report_fd = fd;
    close(fd);
}

/* An unlinked scratch file, close-on-exec. */
static int
scratch_file(void)
{
    char path[] = "/tmp/sbx-call-XXXXXX";
    int fd = mkostemp(path, O_CLOEXEC);
    assert_true(fd > 2);
    unlink(path);
    return fd;
}

void
sbx_start(const char *policy, const char *cwd, const char *const *extra, const char *const *argv,
          const char *const *envp, struct sbx_call *c)
{
    memset(c, 0, sizeof *c);
    int in[2], out[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    c->err = scratch_file();
    c->report = scratch_file();
    char fdtext[16];
    snprintf(fdtext, sizeof fdtext, "%d", c->report);
    const char **full = full_argv(policy, cwd, extra, argv, fdtext);
    const char *const *env = envp ? envp : default_env;
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        /* The report fd keeps its number and loses close-on-exec: it is
         * the one fd besides stdio the helper is given. */
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(c->err, 2) < 0 ||
            fcntl(c->report, F_SETFD, 0) != 0)
            _exit(126);
        execve(full[0], (char *const *)full, (char *const *)env);
        _exit(127);
    }
    free(full);
    close(in[0]);
    close(out[1]);
    c->in = in[1];
    c->out = out[0];
}

void
sbx_start_sh(const char *policy, const char *cwd, const char *script, struct sbx_call *c)
{
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    sbx_start(policy, cwd, NULL, argv, NULL, c);
}

/* Appends what one read of c's stdout gives; returns 0 at its end. */
static size_t
read_more(struct sbx_call *c)
{
    char chunk[4096];
    ssize_t n;
    do
        n = read(c->out, chunk, sizeof chunk);
    while (n < 0 && errno == EINTR);
    assert_true(n >= 0);
    char *grown = realloc(c->buf, c->len + (size_t)n + 1);
    assert_non_null(grown);
    c->buf = grown;
    memcpy(c->buf + c->len, chunk, (size_t)n);
    c->len += (size_t)n;
    c->buf[c->len] = '\0';
    return (size_t)n;
}

/* Removes the first n bytes of c's buffer. */
static void
consume(struct sbx_call *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n + 1);
    c->len -= n;
}

char *
sbx_read_until(struct sbx_call *c, const char *line)
{
    size_t want = strlen(line);
    for (;;) {
        /* The line at the start of the buffer or after a newline. */
        for (size_t at = 0; c->buf != NULL && at + want < c->len;) {
            if (memcmp(c->buf + at, line, want) == 0 && c->buf[at + want] == '\n') {
                char *before = strndup(c->buf, at);
                assert_non_null(before);
                consume(c, at + want + 1);
                return before;
            }
            char *nl = memchr(c->buf + at, '\n', c->len - at);
            if (nl == NULL)
                break;
            at = (size_t)(nl - c->buf) + 1;
        }
        if (read_more(c) == 0)
            fail_msg("the command's output ended without a line \"%s\": %s", line,
                     c->buf ? c->buf : "");
    }
}

void
sbx_finish(struct sbx_call *c, struct sbx_result *r)
{
    memset(r, 0, sizeof *r);
    if (c->in >= 0)
        close(c->in);
    c->in = -1;
    while (read_more(c) > 0)
        ;
    close(c->out);
    int st;
    pid_t w;
    do
        w = waitpid(c->pid, &st, 0);
    while (w < 0 && errno == EINTR);
    assert_int_equal(w, c->pid);
    r->res.status = st;
    r->res.out = c->buf ? c->buf : strdup("");
    assert_non_null(r->res.out);
    r->res.out_len = c->len;
    off_t size = lseek(c->err, 0, SEEK_END);
    assert_true(size >= 0);
    r->res.err = calloc(1, (size_t)size + 1);
    assert_non_null(r->res.err);
    assert_true(pread(c->err, r->res.err, (size_t)size, 0) == (ssize_t)size);
    r->res.err_len = (size_t)size;
    close(c->err);
    r->code = proc_exit_code(&r->res);
    read_report(c->report, r);
    r->report_fd = c->report;
    close(c->report);
    c->buf = NULL;
    c->len = 0;
}

void
sbx_sh(const char *policy, const char *cwd, const char *script, struct sbx_result *r)
{
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    sbx_run(policy, cwd, NULL, argv, NULL, r);
}

void
sbx_result_free(struct sbx_result *r)
{
    proc_result_free(&r->res);
    json_decref(r->report);
    r->report = NULL;
}

void
sbx_assert_code(const struct sbx_result *r, int want)
{
    if (r->code != want)
        fail_msg("exit code %d, wanted %d; stdout: %s; stderr: %s", r->code, want, r->res.out,
                 r->res.err);
}
