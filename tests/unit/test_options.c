/* options: the server's command line: --pass-env, the numbers, and the
 * programs it runs (named on every command line as /bin/sh, so nothing is
 * looked for next to the test).  The exact message of every bad invocation
 * is checked through the binary, in tests/integration/test_server.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Parses execgate --bash /bin/sh --sandbox-helper /bin/sh --execve /bin/sh
 * ARGS...; *err is freed by the caller. */
static enum options_outcome
parse(struct server_options *o, char **err, const char *const *args, size_t n)
{
    char **argv = calloc(n + 8, sizeof(char *));
    assert_non_null(argv);
    size_t k = 0;
    argv[k++] = (char *)"execgate";
    argv[k++] = (char *)"--bash";
    argv[k++] = (char *)"/bin/sh";
    argv[k++] = (char *)"--sandbox-helper";
    argv[k++] = (char *)"/bin/sh";
    argv[k++] = (char *)"--execve";
    argv[k++] = (char *)"/bin/sh";
    for (size_t i = 0; i < n; i++)
        argv[k++] = (char *)args[i];
    enum options_outcome r = options_parse((int)k, argv, o, err);
    free(argv);
    return r;
}

#define PARSE(o, err, ...)                                                                         \
    parse(o, err, (const char *const[]){__VA_ARGS__},                                              \
          sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

static void
test_no_pass_env(void **state)
{
    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err, "--log-level", "warn"), OPTIONS_RUN);
    assert_null(err);
    assert_int_equal(o.pass_env_count, 0);
    assert_non_null(o.pass_env);
    assert_null(o.pass_env[0]);
    options_release(&o);
}

/* Login snapshots are on unless --no-login-snapshot; their capture's
 * timeout is a number of milliseconds from 1. */
static void
test_login_snapshot(void **state)
{
    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err, "--log-level", "warn"), OPTIONS_RUN);
    assert_true(o.login_snapshot);
    assert_int_equal(o.login_snapshot_timeout_ms, OPTIONS_DEFAULT_LOGIN_SNAPSHOT_TIMEOUT_MS);
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--no-login-snapshot", "--login-snapshot-timeout-ms=250"),
                     OPTIONS_RUN);
    assert_false(o.login_snapshot);
    assert_int_equal(o.login_snapshot_timeout_ms, 250);
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--login-snapshot-timeout-ms", "0"), OPTIONS_ERROR);
    assert_string_equal(err, "--login-snapshot-timeout-ms: '0' is not a number from 1 to "
                             "9007199254740992");
    free(err);
}

/* What escalated programs may start: ask (the default) or inherit. */
static void
test_escalated_children(void **state)
{
    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err, "--log-level", "warn"), OPTIONS_RUN);
    assert_false(o.escalated_children_inherit);
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--escalated-children=inherit"), OPTIONS_RUN);
    assert_true(o.escalated_children_inherit);
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--escalated-children", "ask"), OPTIONS_RUN);
    assert_false(o.escalated_children_inherit);
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--escalated-children", "all"), OPTIONS_ERROR);
    assert_string_equal(err, "--escalated-children: expected ask or inherit, got 'all'");
    free(err);
    (void)state;
}

static void
test_pass_env_repeatable(void **state)
{
    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err, "--pass-env", "VIRTUAL_ENV", "--pass-env=CARGO_HOME",
                           "--pass-env", "HOME", "--pass-env", "VIRTUAL_ENV", "--pass-env", "LANG"),
                     OPTIONS_RUN);
    assert_null(err);
    assert_int_equal(o.pass_env_count, 4); /* VIRTUAL_ENV once */
    assert_string_equal(o.pass_env[0], "VIRTUAL_ENV");
    assert_string_equal(o.pass_env[1], "CARGO_HOME");
    assert_string_equal(o.pass_env[2], "HOME");
    assert_string_equal(o.pass_env[3], "LANG");
    assert_null(o.pass_env[4]);
    options_release(&o);
    assert_null(o.pass_env);
    assert_int_equal(o.pass_env_count, 0);
}

/* --allow-unix-socket: a socket, by its inode, held open until release;
 * anything else refuses the start. */
static void
test_allow_unix_socket(void **state)
{
    char dir[] = "/tmp/execgate-options-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sock[sizeof dir + 16], file[sizeof dir + 16];
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    snprintf(file, sizeof file, "%s/plain", dir);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    struct stat st;
    assert_int_equal(stat(sock, &st), 0);

    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err, "--allow-unix-socket", sock), OPTIONS_RUN);
    assert_int_equal(o.allow_unix_count, 1);
    assert_true(o.allow_unix[0].dev == st.st_dev && o.allow_unix[0].ino == st.st_ino);
    struct stat pinned;
    assert_int_equal(fstat(o.allow_unix[0].pin, &pinned), 0);
    assert_true(pinned.st_ino == st.st_ino);
    options_release(&o);

    assert_int_equal(PARSE(&o, &err, "--allow-unix-socket", file), OPTIONS_ERROR);
    assert_non_null(strstr(err, "not a socket"));
    free(err);
    assert_int_equal(PARSE(&o, &err, "--allow-unix-socket", "/nonexistent/x.sock"), OPTIONS_ERROR);
    assert_non_null(strstr(err, "No such file or directory"));
    free(err);
    close(s);
    unlink(sock);
    unlink(file);
    rmdir(dir);
}

static void
expect_error(const char *name, const char *want)
{
    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err, "--pass-env", "OK", "--pass-env", name), OPTIONS_ERROR);
    assert_non_null(err);
    if (!strstr(err, want))
        fail_msg("--pass-env '%s': '%s' does not say '%s'", name, err, want);
    assert_null(strchr(err, '\n'));
    assert_null(o.pass_env); /* nothing to release */
    free(err);
}

static void
test_pass_env_refused(void **state)
{
    expect_error("", "--pass-env: '' is empty");
    expect_error("FOO=bar", "--pass-env: 'FOO=bar' contains '='");
    expect_error("=", "contains '='");
    expect_error("1ABC", "is not a variable name");
    expect_error("A B", "is not a variable name");
    expect_error("LD_PRELOAD", "--pass-env: 'LD_PRELOAD' is on the drop list");
    expect_error("LD_LIBRARY_PATH", "drop list");
    expect_error("BASH_ENV", "drop list");
    expect_error("GIT_CONFIG_GLOBAL", "drop list");
    expect_error("PYTHONPATH", "drop list");
    expect_error("EXEC_WRAPPER", "--pass-env: 'EXEC_WRAPPER' is one of execgate's own variables");
    expect_error("EXECGATE_WRAP_NAMES", "execgate's own");
    expect_error("EXECGATE_WRAP_IN_SHELL", "execgate's own");
    expect_error("EXECGATE_BASH", "execgate's own");
    expect_error("CODEX_ESCALATE_SOCKET", "execgate's own");
    expect_error("PAGER", "--pass-env: 'PAGER' is set by the server");
    expect_error("GIT_TERMINAL_PROMPT", "set by the server");
    expect_error("PWD", "set by the server");
}

static void
test_pass_env_needs_argument(void **state)
{
    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err, "--pass-env"), OPTIONS_ERROR);
    assert_non_null(err);
    assert_non_null(strstr(err, "--pass-env"));
    free(err);
}

static void
test_help_mentions_pass_env(void **state)
{
    struct server_options o;
    char *err = NULL;
    fflush(stdout);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    FILE *saved = stdout;
    stdout = mem;
    enum options_outcome r = PARSE(&o, &err, "--help");
    stdout = saved;
    fclose(mem);
    assert_int_equal(r, OPTIONS_EXIT);
    assert_non_null(strstr(text, "--pass-env NAME"));
    free(text);
}

static void
test_numbers(void **state)
{
    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err, "--max-calls", "4096", "--max-memory", "0",
                           "--default-timeout-ms=1", "--kill-grace-ms", "3600000"),
                     OPTIONS_RUN);
    assert_null(err);
    assert_int_equal(o.max_calls, 4096);
    assert_int_equal(o.max_memory, 0);
    assert_int_equal(o.default_timeout_ms, 1);
    assert_int_equal(o.kill_grace_ms, 3600000);
    options_release(&o);
    /* one past either end, and what is no number at all, name the option */
    const char *bad[][3] = {
        {"--max-calls", "4097", "--max-calls: '4097' is not a number from 1 to 4096"},
        {"--max-calls", "0", "--max-calls: '0' is not a number from 1 to 4096"},
        {"--kill-grace-ms", "3600001",
         "--kill-grace-ms: '3600001' is not a number from 0 to "
         "3600000"},
        {"--max-output-bytes", "63", "--max-output-bytes: '63' is not a number from 64 to "},
        {"--max-processes", "+1", "--max-processes: '+1' is not a number from 0 to 4194304"},
        {"--max-ask-ms", "1e3",
         "--max-ask-ms: '1e3' is not a number from 0 to "
         "9007199254740992"},
        {"--default-timeout-ms", "", "--default-timeout-ms: '' is not a number from 1 to "},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(PARSE(&o, &err, bad[i][0], bad[i][1]), OPTIONS_ERROR);
        if (strncmp(err, bad[i][2], strlen(bad[i][2])) != 0)
            fail_msg("%s '%s': '%s' is not '%s...'", bad[i][0], bad[i][1], err, bad[i][2]);
        free(err);
    }
}

/* --listen is repeatable and kept in order; the HTTP limits have their
 * defaults and their bounds. */
static void
test_listen(void **state)
{
    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err), OPTIONS_RUN);
    assert_int_equal(o.listen_count, 0);
    assert_null(o.listen[0]);
    assert_null(o.token_file);
    assert_int_equal(o.session_idle_ms, OPTIONS_DEFAULT_SESSION_IDLE_MS);
    assert_int_equal(o.session_idle_ms, 1800000);
    assert_int_equal(o.max_sessions, 64);
    assert_int_equal(o.header_timeout_ms, 10000);
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--listen", "unix:/run/a.sock", "--listen=127.0.0.1:0",
                           "--token-file", "/t", "--session-idle-ms", "5", "--max-sessions",
                           "65536", "--header-timeout-ms", "250"),
                     OPTIONS_RUN);
    assert_int_equal(o.header_timeout_ms, 250);
    assert_int_equal(o.listen_count, 2);
    assert_string_equal(o.listen[0], "unix:/run/a.sock");
    assert_string_equal(o.listen[1], "127.0.0.1:0");
    assert_null(o.listen[2]);
    assert_string_equal(o.token_file, "/t");
    assert_int_equal(o.session_idle_ms, 5);
    assert_int_equal(o.max_sessions, 65536);
    options_release(&o);
    const char *bad[][3] = {
        {"--max-sessions", "0", "--max-sessions: '0' is not a number from 1 to 65536"},
        {"--max-sessions", "65537", "--max-sessions: '65537' is not a number from 1 to 65536"},
        {"--session-idle-ms", "0", "--session-idle-ms: '0' is not a number from 1 to "},
        {"--header-timeout-ms", "0", "--header-timeout-ms: '0' is not a number from 1 to "},
        {"--header-timeout-ms", "x", "--header-timeout-ms: 'x' is not a number from 1 to "},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(PARSE(&o, &err, bad[i][0], bad[i][1]), OPTIONS_ERROR);
        if (strncmp(err, bad[i][2], strlen(bad[i][2])) != 0)
            fail_msg("%s '%s': '%s' is not '%s...'", bad[i][0], bad[i][1], err, bad[i][2]);
        free(err);
    }
    assert_int_equal(PARSE(&o, &err, "--listen"), OPTIONS_ERROR);
    assert_string_equal(err, "--listen: needs an argument");
    free(err);
}

/* Prepared calls for HTTP sessions: --max-prepared and
 * --prepared-idle-ms, their defaults and bounds. */
static void
test_max_prepared(void **state)
{
    (void)state;
    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err), OPTIONS_RUN);
    assert_true(o.prepare);
    assert_int_equal(o.max_prepared, 4);
    assert_int_equal(o.prepared_idle_ms, 60000);
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--max-prepared", "0", "--prepared-idle-ms=1"), OPTIONS_RUN);
    assert_int_equal(o.max_prepared, 0);
    assert_int_equal(o.prepared_idle_ms, 1);
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--max-prepared=4096"), OPTIONS_RUN);
    assert_int_equal(o.max_prepared, 4096);
    options_release(&o);
    const char *bad[][3] = {
        {"--max-prepared", "4097", "--max-prepared: '4097' is not a number from 0 to 4096"},
        {"--max-prepared", "-1", "--max-prepared: '-1' is not a number from 0 to 4096"},
        {"--prepared-idle-ms", "0", "--prepared-idle-ms: '0' is not a number from 1 to "},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(PARSE(&o, &err, bad[i][0], bad[i][1]), OPTIONS_ERROR);
        if (strncmp(err, bad[i][2], strlen(bad[i][2])) != 0)
            fail_msg("%s '%s': '%s' is not '%s...'", bad[i][0], bad[i][1], err, bad[i][2]);
        free(err);
    }
}

/* MCP tasks: --task-ttl-ms and --max-tasks, their defaults and bounds. */
static void
test_tasks(void **state)
{
    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err), OPTIONS_RUN);
    assert_int_equal(o.task_ttl_ms, 3600000);
    assert_int_equal(o.max_tasks, 16);
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--task-ttl-ms", "86400000", "--max-tasks=4096"), OPTIONS_RUN);
    assert_int_equal(o.task_ttl_ms, 86400000);
    assert_int_equal(o.max_tasks, 4096);
    options_release(&o);
    const char *bad[][3] = {
        {"--max-tasks", "0", "--max-tasks: '0' is not a number from 1 to 4096"},
        {"--max-tasks", "4097", "--max-tasks: '4097' is not a number from 1 to 4096"},
        {"--task-ttl-ms", "0", "--task-ttl-ms: '0' is not a number from 1 to 86400000"},
        {"--task-ttl-ms", "86400001", "--task-ttl-ms: '86400001' is not a number from 1 to "},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(PARSE(&o, &err, bad[i][0], bad[i][1]), OPTIONS_ERROR);
        if (strncmp(err, bad[i][2], strlen(bad[i][2])) != 0)
            fail_msg("%s '%s': '%s' is not '%s...'", bad[i][0], bad[i][1], err, bad[i][2]);
        free(err);
    }
}

/* A program that cannot run stops the start; --doctor keeps it to say so. */
static void
test_programs_checked(void **state)
{
    struct server_options o;
    char *err = NULL;
    assert_int_equal(PARSE(&o, &err, "--bash", "/nonexistent/bash"), OPTIONS_ERROR);
    assert_string_equal(err, "--bash: /nonexistent/bash: No such file or directory");
    free(err);
    assert_int_equal(PARSE(&o, &err, "--sandbox-helper", "/"), OPTIONS_ERROR);
    assert_string_equal(err, "--sandbox-helper: /: is a directory, not a program");
    free(err);
    assert_int_equal(PARSE(&o, &err, "--execve", "/dev/null"), OPTIONS_ERROR);
    assert_string_equal(err, "--execve: /dev/null: is not a regular file");
    free(err);
    assert_int_equal(PARSE(&o, &err, "--doctor", "--bash", "/nonexistent/bash"), OPTIONS_RUN);
    assert_null(err);
    assert_true(o.doctor);
    assert_string_equal(o.bash_path, "/nonexistent/bash");
    assert_string_equal(options_program_problem(o.bash_path), "No such file or directory");
    assert_null(options_program_problem(o.sandbox_helper));
    options_release(&o);
}

/* --shell: bash (the default) is the Bash; zsh is CODEX_ZSH_PATH here (the
 * test has no zsh next to it); a path is that program, zsh by its name. */
static void
test_shell(void **state)
{
    struct server_options o;
    char *err = NULL;
    assert_int_equal(unsetenv("CODEX_ZSH_PATH"), 0);
    assert_int_equal(PARSE(&o, &err, "--log-level", "warn"), OPTIONS_RUN);
    assert_int_equal(o.shell, OPTIONS_SHELL_BASH);
    assert_string_equal(o.shell_path, "/bin/sh");
    assert_string_equal(options_shell_name(o.shell), "Bash");
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--shell", "bash"), OPTIONS_RUN);
    assert_int_equal(o.shell, OPTIONS_SHELL_BASH);
    assert_string_equal(o.shell_path, "/bin/sh");
    options_release(&o);

    assert_int_equal(setenv("CODEX_ZSH_PATH", "/bin/true", 1), 0);
    assert_int_equal(PARSE(&o, &err, "--shell", "zsh"), OPTIONS_RUN);
    assert_int_equal(o.shell, OPTIONS_SHELL_ZSH);
    assert_string_equal(o.shell_path, "/bin/true");
    assert_string_equal(options_shell_name(o.shell), "zsh");
    assert_string_equal(o.bash_path, "/bin/sh"); /* still the Bash for scripts */
    options_release(&o);
    assert_int_equal(setenv("CODEX_ZSH_PATH", "/nonexistent/zsh", 1), 0);
    assert_int_equal(PARSE(&o, &err, "--shell", "zsh"), OPTIONS_ERROR);
    assert_string_equal(err, "CODEX_ZSH_PATH: /nonexistent/zsh: No such file or directory");
    free(err);
    /* only --shell zsh reads it */
    assert_int_equal(PARSE(&o, &err, "--log-level", "warn"), OPTIONS_RUN);
    assert_string_equal(o.shell_path, "/bin/sh");
    options_release(&o);
    assert_int_equal(unsetenv("CODEX_ZSH_PATH"), 0);

    assert_int_equal(PARSE(&o, &err, "--shell", "/bin/sh"), OPTIONS_RUN);
    assert_int_equal(o.shell, OPTIONS_SHELL_BASH);
    assert_string_equal(o.shell_path, "/bin/sh");
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--shell", "/nonexistent/zsh-5.9"), OPTIONS_ERROR);
    assert_string_equal(err, "--shell: /nonexistent/zsh-5.9: No such file or directory");
    free(err);
    assert_int_equal(PARSE(&o, &err, "--doctor", "--shell", "/nonexistent/zsh-5.9"), OPTIONS_RUN);
    assert_int_equal(o.shell, OPTIONS_SHELL_ZSH);
    assert_string_equal(o.shell_path, "/nonexistent/zsh-5.9");
    options_release(&o);
    assert_int_equal(PARSE(&o, &err, "--shell", "fish"), OPTIONS_ERROR);
    assert_string_equal(err, "--shell: must be bash, zsh or the path of a patched shell, not "
                             "\"fish\"");
    free(err);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_pass_env),
        cmocka_unit_test(test_pass_env_repeatable),
        cmocka_unit_test(test_pass_env_refused),
        cmocka_unit_test(test_pass_env_needs_argument),
        cmocka_unit_test(test_help_mentions_pass_env),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_login_snapshot),
        cmocka_unit_test(test_allow_unix_socket),
        cmocka_unit_test(test_listen),
        cmocka_unit_test(test_max_prepared),
        cmocka_unit_test(test_tasks),
        cmocka_unit_test(test_programs_checked),
        cmocka_unit_test(test_shell),
        cmocka_unit_test(test_escalated_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
