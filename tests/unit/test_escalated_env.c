/* escalated_env: the environment of a program run outside the sandbox is
 * the server's, plus a checked allow-list and the --pass-env names from the
 * request, plus the forced non-interactive values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/decide/escalated_env.h"
#include "server/decide/exec_checks.h"
#include "common/strv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A NULL-terminated environment of string literals. */
#define ENV(...) ((char *const *)(const char *const[]){__VA_ARGS__, NULL})
#define NAMES(...)                                                                                 \
    (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)

/* The value of name in env, or NULL; fails the test when name occurs twice. */
static const char *
get(char *const *env, const char *name)
{
    size_t len = strlen(name);
    const char *found = NULL;
    for (size_t i = 0; env[i]; i++) {
        if (strncmp(env[i], name, len) == 0 && env[i][len] == '=') {
            if (found)
                fail_msg("%s occurs twice", name);
            found = env[i] + len + 1;
        }
    }
    return found;
}

static void
assert_value(char *const *env, const char *name, const char *want)
{
    const char *got = get(env, name);
    if (!want && got)
        fail_msg("%s: expected unset, got '%s'", name, got);
    if (want && !got)
        fail_msg("%s: expected '%s', unset", name, want);
    if (want)
        assert_string_equal(got, want);
}

/* Every entry has '=' and a non-empty name, and no name occurs twice. */
static void
assert_well_formed(char *const *env)
{
    for (size_t i = 0; env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        assert_non_null(eq);
        assert_true(eq > env[i]);
        for (size_t j = 0; j < i; j++) {
            size_t len = (size_t)(eq - env[i]);
            if (strncmp(env[j], env[i], len + 1) == 0)
                fail_msg("duplicate %.*s", (int)len, env[i]);
        }
    }
}

static char **
build(char *const *server, char *const *request, const char *const *pass, size_t n_pass,
      const char *workdir)
{
    char **env = escalated_env_build(server, request, pass, n_pass, workdir);
    assert_non_null(env);
    assert_well_formed(env);
    return env;
}

static char *const server_env_fixture[] = {
    (char *)"HOME=/home/user",
    (char *)"PATH=/usr/local/bin:/usr/bin:/bin",
    (char *)"XDG_CONFIG_HOME=/home/user/.config",
    (char *)"USER=user",
    (char *)"LANG=en_US.UTF-8",
    (char *)"TZ=Europe/Paris",
    (char *)"TERM=xterm",
    (char *)"PAGER=less",
    (char *)"EDITOR=vim",
    (char *)"PWD=/srv/server-cwd",
    (char *)"OLDPWD=/srv",
    NULL,
};

static void
test_request_paths_and_programs_never_pass(void **state)
{
    char **env = build(server_env_fixture,
                       ENV("HOME=/tmp/evil", "PATH=/tmp/evil/bin", "XDG_CONFIG_HOME=/tmp/evil",
                           "GIT_DIR=/tmp/evil/.git", "GIT_TRACE=/tmp/evil/trace", "PAGER=/tmp/x",
                           "FOO=bar", "GIT_CONFIG_GLOBAL=/tmp/evil/gitconfig",
                           "LD_PRELOAD=/tmp/evil.so", "BASH_ENV=/tmp/evil.sh", "TERMINFO=/tmp/ti",
                           "LOCPATH=/tmp/loc", "SSH_AUTH_SOCK=/tmp/agent"),
                       NULL, 0, "/work");
    assert_value(env, "HOME", "/home/user");
    assert_value(env, "PATH", "/usr/local/bin:/usr/bin:/bin");
    assert_value(env, "XDG_CONFIG_HOME", "/home/user/.config");
    assert_value(env, "USER", "user");
    assert_value(env, "GIT_DIR", NULL);
    assert_value(env, "GIT_TRACE", NULL);
    assert_value(env, "PAGER", "cat");
    assert_value(env, "FOO", NULL);
    assert_value(env, "GIT_CONFIG_GLOBAL", NULL);
    assert_value(env, "LD_PRELOAD", NULL);
    assert_value(env, "BASH_ENV", NULL);
    assert_value(env, "TERMINFO", NULL);
    assert_value(env, "LOCPATH", NULL);
    assert_value(env, "SSH_AUTH_SOCK", NULL);
    strv_free(env);
}

static void
test_allow_list_overrides_server(void **state)
{
    char **env = build(server_env_fixture,
                       ENV("LANG=de_DE.UTF-8", "LC_ALL=C", "TZ=:America/New_York", "TERM=dumb",
                           "COLUMNS=132", "LINES=40", "NO_COLOR=1", "FORCE_COLOR=0", "CLICOLOR=0",
                           "CLICOLOR_FORCE=1", "CI=true", "COLORTERM=truecolor", "LANGUAGE=de:en",
                           "LC_MESSAGES=fr_FR@euro", "LC_TIME="),
                       NULL, 0, "/work");
    assert_value(env, "LANG", "de_DE.UTF-8");
    assert_value(env, "LC_ALL", "C");
    assert_value(env, "TZ", ":America/New_York");
    assert_value(env, "TERM", "dumb");
    assert_value(env, "COLUMNS", "132");
    assert_value(env, "LINES", "40");
    assert_value(env, "NO_COLOR", "1");
    assert_value(env, "FORCE_COLOR", "0");
    assert_value(env, "CLICOLOR", "0");
    assert_value(env, "CLICOLOR_FORCE", "1");
    assert_value(env, "CI", "true");
    assert_value(env, "COLORTERM", "truecolor");
    assert_value(env, "LANGUAGE", "de:en");
    assert_value(env, "LC_MESSAGES", "fr_FR@euro");
    assert_value(env, "LC_TIME", "");
    strv_free(env);
}

/* For the allow-list the request decides: a name it unset stays unset. */
static void
test_allow_list_absent_in_request_is_unset(void **state)
{
    char **env = build(server_env_fixture, ENV("FOO=1"), NULL, 0, "/work");
    assert_value(env, "LANG", NULL);
    assert_value(env, "TZ", NULL);
    assert_value(env, "TERM", NULL);
    assert_value(env, "HOME", "/home/user");
    strv_free(env);
    env = build(server_env_fixture, NULL, NULL, 0, "/work");
    assert_value(env, "LANG", NULL);
    assert_value(env, "HOME", "/home/user");
    strv_free(env);
}

static void
test_allow_list_values_checked(void **state)
{
    char **env = build(server_env_fixture,
                       ENV("LANG=/tmp/evil/locale", "LC_ALL=%n%n", "LC_CTYPE=C UTF-8",
                           "TERM=../../tmp/ti", "TZ=/tmp/evil/zone", "COLUMNS=80x",
                           "LINES=", "LC_TIME=C\x01", "LANGUAGE=d\xc3\xa9", "CI=a/b"),
                       NULL, 0, "/work");
    static const char *const unset[] = {"LANG",    "LC_ALL", "LC_CTYPE", "TERM",     "TZ",
                                        "COLUMNS", "LINES",  "LC_TIME",  "LANGUAGE", "CI"};
    for (size_t i = 0; i < sizeof(unset) / sizeof(unset[0]); i++)
        assert_value(env, unset[i], NULL);
    strv_free(env);

    /* time zones: relative names, POSIX rules, the zoneinfo directory */
    static const char *const good_tz[] = {
        "TZ=UTC",
        "TZ=Europe/Paris",
        "TZ=:Europe/Paris",
        "TZ=EST5EDT,M3.2.0,M11.1.0",
        "TZ=<+03>-3",
        "TZ=/usr/share/zoneinfo/Asia/Tokyo",
        "TZ=:/usr/share/zoneinfo/UTC",
        "TZ=",
    };
    for (size_t i = 0; i < sizeof(good_tz) / sizeof(good_tz[0]); i++) {
        env = build(NULL, ENV(good_tz[i]), NULL, 0, NULL);
        assert_value(env, "TZ", good_tz[i] + 3);
        strv_free(env);
    }
    static const char *const bad_tz[] = {
        "TZ=/etc/localtime",
        "TZ=:/tmp/zone",
        "TZ=../../../tmp/zone",
        "TZ=Europe/../../../tmp/zone",
        "TZ=/usr/share/zoneinfo/../../../tmp/zone",
        "TZ=..",
        "TZ=Europe/Paris ",
        "TZ=/usr/share/zoneinfo",
    };
    for (size_t i = 0; i < sizeof(bad_tz) / sizeof(bad_tz[0]); i++) {
        env = build(NULL, ENV(bad_tz[i]), NULL, 0, NULL);
        if (get(env, "TZ"))
            fail_msg("%s was taken", bad_tz[i]);
        strv_free(env);
    }
    env = build(NULL, ENV("COLUMNS=123456", "LINES=99999"), NULL, 0, NULL);
    assert_value(env, "COLUMNS", NULL);
    assert_value(env, "LINES", "99999");
    strv_free(env);
}

static void
test_pass_names(void **state)
{
    char **env = build(
        server_env_fixture,
        ENV("VIRTUAL_ENV=/work/.venv", "CARGO_TARGET_DIR=/work/target", "FOO=no", "NPM_TOKEN=x"),
        NAMES("VIRTUAL_ENV", "CARGO_TARGET_DIR", "NPM_TOKEN"), "/work");
    assert_value(env, "VIRTUAL_ENV", "/work/.venv");
    assert_value(env, "CARGO_TARGET_DIR", "/work/target");
    assert_value(env, "NPM_TOKEN", "x");
    assert_value(env, "FOO", NULL);
    strv_free(env);
}

/* A pass name the request lacks keeps the server's value, or none. */
static void
test_pass_name_absent_in_request(void **state)
{
    char **env = build(ENV("HOME=/home/user", "VIRTUAL_ENV=/home/user/venv"), ENV("A=1"),
                       NAMES("VIRTUAL_ENV", "GOPATH"), "/work");
    assert_value(env, "VIRTUAL_ENV", "/home/user/venv");
    assert_value(env, "GOPATH", NULL);
    strv_free(env);
    /* present in the request: the request's replaces the server's */
    env = build(ENV("VIRTUAL_ENV=/home/user/venv"), ENV("VIRTUAL_ENV=/work/.venv"),
                NAMES("VIRTUAL_ENV"), "/work");
    assert_value(env, "VIRTUAL_ENV", "/work/.venv");
    strv_free(env);
}

/* Passing HOME is the user's choice; the value then is taken as is, also
 * for an allow-listed name (whose absence then keeps the server's). */
static void
test_pass_name_overrides_allow_list_check(void **state)
{
    char **env = build(server_env_fixture, ENV("HOME=/work/home", "TZ=/etc/localtime"),
                       NAMES("HOME", "TZ", "LANG"), "/work");
    assert_value(env, "HOME", "/work/home");
    assert_value(env, "TZ", "/etc/localtime");
    assert_value(env, "LANG", "en_US.UTF-8");
    strv_free(env);
}

/* Pass names that --pass-env would refuse are ignored here too. */
static void
test_refused_pass_names_ignored(void **state)
{
    char **env =
        build(ENV("LD_PRELOAD=/server.so", "PAGER=less"),
              ENV("LD_PRELOAD=/x.so", "PAGER=vim", "EXEC_WRAPPER=/x", "PWD=/x", "OLDPWD=/y",
                  "EXECGATE_WRAP_IN_SHELL=1", "GIT_SSH_COMMAND=evil", "A=B=C"),
              NAMES("LD_PRELOAD", "PAGER", "EXEC_WRAPPER", "PWD", "OLDPWD",
                    "EXECGATE_WRAP_IN_SHELL", "GIT_SSH_COMMAND", "A=B", "", "1X"),
              "/work");
    assert_value(env, "LD_PRELOAD", NULL);
    assert_value(env, "PAGER", "cat");
    assert_value(env, "EXEC_WRAPPER", NULL);
    assert_value(env, "PWD", "/work");
    assert_value(env, "OLDPWD", NULL);
    assert_value(env, "EXECGATE_WRAP_IN_SHELL", NULL);
    assert_value(env, "GIT_SSH_COMMAND", NULL);
    assert_value(env, "A", NULL);
    strv_free(env);
}

static void
test_forced_values_win(void **state)
{
    char **env =
        build(ENV("PAGER=less", "GIT_PAGER=less", "MANPAGER=most", "EDITOR=vim", "VISUAL=emacs",
                  "GIT_EDITOR=nano", "GIT_TERMINAL_PROMPT=1", "SSH_ASKPASS=/usr/bin/ksshaskpass",
                  "GIT_ASKPASS=/usr/bin/x", "SSH_ASKPASS_REQUIRE=force", "OLDPWD=/srv"),
              ENV("PAGER=more", "GIT_PAGER=more", "EDITOR=ed", "GIT_TERMINAL_PROMPT=1",
                  "SSH_ASKPASS=/tmp/x", "OLDPWD=/tmp"),
              NAMES("GIT_TERMINAL_PROMPT", "SSH_ASKPASS"), "/work");
    assert_value(env, "PAGER", "cat");
    assert_value(env, "GIT_PAGER", "cat");
    assert_value(env, "MANPAGER", "cat");
    assert_value(env, "SYSTEMD_PAGER", "cat");
    assert_value(env, "EDITOR", "false");
    assert_value(env, "VISUAL", "false");
    assert_value(env, "GIT_EDITOR", "false");
    assert_value(env, "GIT_SEQUENCE_EDITOR", "false");
    assert_value(env, "GIT_TERMINAL_PROMPT", "0");
    assert_value(env, "GCM_INTERACTIVE", "never");
    assert_value(env, "SSH_ASKPASS_REQUIRE", "never");
    assert_value(env, "SSH_ASKPASS", NULL);
    assert_value(env, "GIT_ASKPASS", NULL);
    assert_value(env, "OLDPWD", NULL);

    /* every forced entry, as the table says, in any case */
    size_t n = 0;
    const struct escalated_env_forced *forced = escalated_env_forced_list(&n);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++)
        assert_value(env, forced[i].name, forced[i].value);
    strv_free(env);
}

static void
test_server_drop_list_still_applies(void **state)
{
    char **env = build(ENV("LD_PRELOAD=/server.so", "LD_LIBRARY_PATH=/opt/lib", "BASH_ENV=/x",
                           "GIT_CONFIG_COUNT=1", "PYTHONPATH=/p", "BASH_FUNC_f%%=() { :; }",
                           "HOME=/home/user"),
                       NULL, NULL, 0, "/work");
    assert_value(env, "LD_PRELOAD", NULL);
    assert_value(env, "LD_LIBRARY_PATH", NULL);
    assert_value(env, "BASH_ENV", NULL);
    /* forced: git takes a bare repository only when named explicitly */
    assert_value(env, "GIT_CONFIG_COUNT", "1");
    assert_value(env, "GIT_CONFIG_KEY_0", "safe.bareRepository");
    assert_value(env, "GIT_CONFIG_VALUE_0", "explicit");
    assert_value(env, "PYTHONPATH", NULL);
    assert_value(env, "HOME", "/home/user");
    for (size_t i = 0; env[i]; i++) {
        if (exec_checks_env_dropped(env[i]) && strncmp(env[i], "GIT_PAGER=", 10) != 0 &&
            strncmp(env[i], "GIT_CONFIG_", 11) != 0)
            fail_msg("dropped entry %s kept", env[i]);
    }
    strv_free(env);
}

/* Where git finds its repository is the decision's: no location from
 * either side, and GIT_CEILING_DIRECTORIES only as the escalation adds
 * it. */
static void
test_git_location_never_passes(void **state)
{
    char **env = build(ENV("GIT_DIR=/server/.git", "GIT_WORK_TREE=/w", "GIT_CONFIG=/c",
                           "GIT_CEILING_DIRECTORIES=/", "LESSOPEN=|sh %s", "HOME=/home/user"),
                       ENV("GIT_DIR=/tmp/planted", "GIT_COMMON_DIR=/tmp/c", "GIT_INDEX_FILE=/i",
                           "GIT_OBJECT_DIRECTORY=/o", "GIT_CONFIG_COUNT=2", "LESSKEYIN=/k"),
                       NAMES("GIT_DIR", "GIT_WORK_TREE"), "/work");
    assert_value(env, "GIT_DIR", NULL);
    assert_value(env, "GIT_WORK_TREE", NULL);
    assert_value(env, "GIT_CONFIG", NULL);
    assert_value(env, "GIT_COMMON_DIR", NULL);
    assert_value(env, "GIT_INDEX_FILE", NULL);
    assert_value(env, "GIT_OBJECT_DIRECTORY", NULL);
    assert_value(env, "GIT_CEILING_DIRECTORIES", NULL);
    assert_value(env, "GIT_CONFIG_COUNT", "1");
    assert_value(env, "LESSOPEN", NULL);
    assert_value(env, "LESSKEYIN", NULL);
    assert_value(env, "LESSSECURE", "1");
    assert_int_equal(escalated_env_add(&env, "GIT_CEILING_DIRECTORIES", "/home/user"), 0);
    assert_value(env, "GIT_CEILING_DIRECTORIES", "/home/user");
    assert_value(env, "HOME", "/home/user");
    strv_free(env);
}

static void
test_own_variables_never_appear(void **state)
{
    char *const *own = ENV("EXEC_WRAPPER=/w", "BASH_EXEC_WRAPPER=/w", "EXECGATE_WRAP_NAMES=git:rm",
                           "EXECGATE_WRAP_IN_SHELL=1", "CODEX_ESCALATE_SOCKET=4",
                           "EXECGATE_BASH=/b", "EXECGATE_FUTURE=1");
    char **env = build(own, own, NULL, 0, "/work");
    for (size_t i = 0; env[i]; i++) {
        assert_false(escalated_env_is_own(env[i]));
        assert_null(strstr(env[i], "EXEC"));
        assert_null(strstr(env[i], "CODEX_ESCALATE"));
    }
    strv_free(env);
    assert_true(escalated_env_is_own("EXECGATE_WRAP_IN_SHELL=1"));
    assert_true(escalated_env_is_own("CODEX_ESCALATE_SOCKET"));
    assert_true(escalated_env_is_own("BASH_EXEC_WRAPPER=/w"));
    assert_false(escalated_env_is_own("EXEC_WRAPPERX=1"));
    assert_false(escalated_env_is_own("CODEX_HOME=/h"));
}

static void
test_duplicates(void **state)
{
    /* the first entry of a name counts, on both sides */
    char **env = build(ENV("HOME=/home/first", "A=1", "HOME=/home/second", "A=2", "B=", "B=x"),
                       ENV("LANG=C", "LANG=/tmp/evil", "TZ=/tmp/evil", "TZ=UTC", "V=1", "V=2"),
                       NAMES("V", "V"), "/work");
    assert_value(env, "HOME", "/home/first");
    assert_value(env, "A", "1");
    assert_value(env, "B", "");
    assert_value(env, "LANG", "C");
    assert_value(env, "TZ", NULL);
    assert_value(env, "V", "1");
    strv_free(env);
}

static void
test_malformed_entries(void **state)
{
    char **env = build(ENV("NOEQUALS", "=empty", "HOME=/h", "X=a=b"),
                       ENV("LANG", "TZ", "=x", "LANG=C", "V"), NAMES("V"), "/work");
    assert_value(env, "HOME", "/h");
    assert_value(env, "X", "a=b");
    assert_value(env, "LANG", "C"); /* a bare LANG is not an entry */
    assert_value(env, "TZ", NULL);
    assert_value(env, "V", NULL);
    for (size_t i = 0; env[i]; i++) {
        assert_string_not_equal(env[i], "NOEQUALS");
        assert_true(env[i][0] != '=');
    }
    strv_free(env);
}

static void
test_pwd(void **state)
{
    char **env = build(ENV("PWD=/srv/server", "OLDPWD=/srv"), ENV("PWD=/tmp/x", "OLDPWD=/tmp"),
                       NULL, 0, "/home/user/project dir");
    assert_value(env, "PWD", "/home/user/project dir");
    assert_value(env, "OLDPWD", NULL);
    strv_free(env);
    env = build(ENV("PWD=/srv/server"), NULL, NULL, 0, NULL);
    assert_value(env, "PWD", NULL);
    strv_free(env);
}

static void
test_empty_inputs(void **state)
{
    char **env = build(NULL, NULL, NULL, 0, NULL);
    size_t n_forced = 0, n_set = 0;
    const struct escalated_env_forced *forced = escalated_env_forced_list(&n_forced);
    for (size_t i = 0; i < n_forced; i++)
        n_set += forced[i].value != NULL;
    size_t n = 0;
    while (env[n])
        n++;
    assert_int_equal(n, n_set);
    strv_free(env);
    strv_free(NULL);
}

/* The inputs are read only: the result owns copies. */
static void
test_result_owns_copies(void **state)
{
    char home[] = "HOME=/home/user";
    char lang[] = "LANG=C";
    char *server[] = {home, NULL};
    char *request[] = {lang, NULL};
    char **env = build(server, request, NULL, 0, "/w");
    for (size_t i = 0; env[i]; i++) {
        assert_ptr_not_equal(env[i], home);
        assert_ptr_not_equal(env[i], lang);
    }
    home[5] = 'X';
    lang[5] = 'X';
    assert_string_equal(home, "HOME=Xhome/user");
    assert_value(env, "HOME", "/home/user");
    assert_value(env, "LANG", "C");
    strv_free(env);
}

/* A large request (the protocol allows 32768 entries) is handled. */
static void
test_large_request(void **state)
{
    size_t n = 32768;
    char **request = calloc(n + 1, sizeof(char *));
    assert_non_null(request);
    for (size_t i = 0; i < n; i++) {
        assert_true(asprintf(&request[i], "%s%zu=v", i % 2 ? "LC_X" : "V", i) > 0);
    }
    char **env = build(server_env_fixture, request, NAMES("V0", "V32766", "V1"), "/w");
    assert_value(env, "V0", "v");
    assert_value(env, "V32766", "v");
    assert_value(env, "V1", NULL);
    assert_value(env, "LC_X1", NULL); /* not a glibc category */
    strv_free(env);
    for (size_t i = 0; i < n; i++)
        free(request[i]);
    free(request);
}

static void
test_pass_name_problem(void **state)
{
    assert_null(escalated_env_pass_name_problem("VIRTUAL_ENV"));
    assert_null(escalated_env_pass_name_problem("_x1"));
    assert_null(escalated_env_pass_name_problem("HOME"));
    assert_null(escalated_env_pass_name_problem("LANG"));
    assert_string_equal(escalated_env_pass_name_problem(""), "is empty");
    assert_non_null(strstr(escalated_env_pass_name_problem("A=B"), "'='"));
    assert_non_null(strstr(escalated_env_pass_name_problem("1X"), "not a variable name"));
    assert_non_null(strstr(escalated_env_pass_name_problem("A-B"), "not a variable name"));
    assert_non_null(strstr(escalated_env_pass_name_problem("LD_PRELOAD"), "drop list"));
    assert_non_null(strstr(escalated_env_pass_name_problem("GIT_CONFIG_GLOBAL"), "drop list"));
    assert_non_null(strstr(escalated_env_pass_name_problem("EXEC_WRAPPER"), "execgate's own"));
    assert_non_null(
        strstr(escalated_env_pass_name_problem("EXECGATE_WRAP_IN_SHELL"), "execgate's own"));
    assert_non_null(
        strstr(escalated_env_pass_name_problem("CODEX_ESCALATE_SOCKET"), "execgate's own"));
    assert_non_null(strstr(escalated_env_pass_name_problem("PAGER"), "set by the server"));
    assert_non_null(strstr(escalated_env_pass_name_problem("SSH_ASKPASS"), "set by the server"));
    assert_non_null(strstr(escalated_env_pass_name_problem("PWD"), "set by the server"));
    assert_non_null(strstr(escalated_env_pass_name_problem("OLDPWD"), "set by the server"));
}

/* The tables agree with each other and with the drop list. */
static void
test_tables(void **state)
{
    size_t n_allow = 0, n_forced = 0, n_own = 0;
    const struct escalated_env_allowed *allow = escalated_env_allow_list(&n_allow);
    const struct escalated_env_forced *forced = escalated_env_forced_list(&n_forced);
    const char *const *own = escalated_env_own_list(&n_own);
    assert_true(n_allow >= 20);
    assert_true(n_own >= 3);
    for (size_t i = 0; i < n_allow; i++) {
        assert_false(exec_checks_env_dropped(allow[i].name));
        assert_false(escalated_env_is_own(allow[i].name));
        assert_null(escalated_env_pass_name_problem(allow[i].name));
        for (size_t f = 0; f < n_forced; f++)
            assert_string_not_equal(allow[i].name, forced[f].name);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(allow[i].name, allow[j].name);
    }
    for (size_t f = 0; f < n_forced; f++)
        assert_non_null(escalated_env_pass_name_problem(forced[f].name));
    /* the names the brief of this module asks for */
    static const char *const required[] = {
        "LANG",     "LANGUAGE",    "LC_ALL",   "LC_CTYPE",       "TZ", "TERM", "COLUMNS", "LINES",
        "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "CI"};
    for (size_t r = 0; r < sizeof(required) / sizeof(required[0]); r++) {
        bool found = false;
        for (size_t i = 0; i < n_allow; i++)
            found = found || strcmp(allow[i].name, required[r]) == 0;
        if (!found)
            fail_msg("%s is not allow-listed", required[r]);
    }
    (void)own;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_paths_and_programs_never_pass),
        cmocka_unit_test(test_allow_list_overrides_server),
        cmocka_unit_test(test_allow_list_absent_in_request_is_unset),
        cmocka_unit_test(test_allow_list_values_checked),
        cmocka_unit_test(test_pass_names),
        cmocka_unit_test(test_pass_name_absent_in_request),
        cmocka_unit_test(test_pass_name_overrides_allow_list_check),
        cmocka_unit_test(test_refused_pass_names_ignored),
        cmocka_unit_test(test_forced_values_win),
        cmocka_unit_test(test_server_drop_list_still_applies),
        cmocka_unit_test(test_git_location_never_passes),
        cmocka_unit_test(test_own_variables_never_appear),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_malformed_entries),
        cmocka_unit_test(test_pwd),
        cmocka_unit_test(test_empty_inputs),
        cmocka_unit_test(test_result_owns_copies),
        cmocka_unit_test(test_large_request),
        cmocka_unit_test(test_pass_name_problem),
        cmocka_unit_test(test_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
