/*
 * Escalation through the whole product: the real server over stdio, the
 * real patched Bash in the real sandbox (workspace-write on a scratch
 * workdir), the real wrapper, real sockets.  Each test writes its own rules,
 * and proves where a program ran by what it could write: the "outside"
 * directory (under /var/tmp) is writable only outside the sandbox.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/proc.h"
#include "tests/support/server_suite.h"
#include "tests/support/tmpdir.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* sh -c escalated by its rule, and the programs the tests' scripts start
 * in its tree: a program an escalated one starts runs outside only when a
 * rule names it (docs/enforcement.md). */
#define SH_C_ONLY "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n"
#define SH_C_ALLOWED                                                                               \
    "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n"                                  \
    "prefix_rule(pattern=[[\"touch\", \"cat\", \"sleep\", \"ls\", \"tr\", \"env\"]], "             \
    "decision=\"allow\")\n"

static const char *server_path;

/* A world per test (tests/support/mcp_world.h): the "outside" directory
 * is writable only outside the sandbox. */
static void
world_start_with(struct mcp_world *w, const char *rules, bool elicitation, const char *extra)
{
    const struct mcp_world_options o = {.server = server_path,
                                        .client_name = "escalation-tests",
                                        .elicitation = elicitation,
                                        .extra = extra};
    mcp_world_start(w, rules, &o);
}

static void
world_start(struct mcp_world *w, const char *rules, bool elicitation)
{
    world_start_with(w, rules, elicitation, NULL);
}

static json_t *
run(struct mcp_world *w, const char *command, struct mcp_answers *a)
{
    return mcp_world_run(w, command, a, 30000);
}

/* ---- allow, forbidden, no rule ---- */

static void
test_allow_escalates_with_output_and_status(void **state)
{
    struct mcp_world w;
    /* the shell writes itself: the same touch at the top runs in the sandbox */
    world_start(&w, SH_C_ONLY, false);
    char *cmd = mcp_world_fmt(
        "sh -c 'echo out; echo err >&2; : > %s/esc; exit 42'; echo \"status=$?\"", w.outside);
    json_t *a = run(&w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "out\n");
    mcp_world_assert_contains(mcp_world_output(a), "err\n");
    mcp_world_assert_contains(mcp_world_output(a), "status=42\n");
    /* it ran outside the sandbox: it wrote where the sandbox cannot */
    assert_true(mcp_world_exists(w.outside, "esc"));
    json_decref(a);
    free(cmd);
    /* the same write without a rule runs inside, and is refused */
    cmd = mcp_world_fmt("touch %s/inside; echo \"status=$?\"", w.outside);
    a = run(&w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "status=1\n");
    assert_false(mcp_world_exists(w.outside, "inside"));
    json_decref(a);
    free(cmd);
    /* the audit log has one record per decision */
    if (w.audit) { /* EXECGATE_TEST_NO_AUDIT: none */
        char *log = tmpdir_read_file(w.audit, NULL);
        mcp_world_assert_contains(log, "\"decision\":\"escalate\"");
        mcp_world_assert_contains(log, "\"exit_code\":42");
        mcp_world_assert_contains(log, "\"decision\":\"run\"");
        free(log);
    }
    mcp_world_end(&w);
}

/* The server ignores SIGPIPE and SIGXFSZ and catches others; a program it
 * starts, escalated or in the sandbox, starts with every signal at its
 * default (a pipeline's writer must die of SIGPIPE as it would anywhere). */
static void
test_programs_start_with_default_signals(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"grep\", \"-H\"], decision=\"allow\")\n", false);
    json_t *a = run(&w,
                    "grep -H '^SigIgn:' /proc/self/status; grep '^SigIgn:' /proc/self/status; "
                    "echo \"status=$?\"",
                    NULL);
    /* grep -H escalated (it names its file), plain grep in the sandbox */
    mcp_world_assert_contains(mcp_world_output(a), "/proc/self/status:SigIgn:\t0000000000000000\n"
                                                   "SigIgn:\t0000000000000000\nstatus=0\n");
    json_decref(a);
    if (w.audit) {
        char *log = tmpdir_read_file(w.audit, NULL);
        mcp_world_assert_contains(log, "\"decision\":\"escalate\"");
        free(log);
    }
    mcp_world_end(&w);
}

/* The server has the patched Bash ask in its own process
 * (EXECGATE_WRAP_IN_SHELL=1); without that variable the Bash execs the
 * wrapper, which asks the same: the same decisions either way. */
static void
test_in_shell_and_wrapper_exec_decide_alike(void **state)
{
    struct mcp_world w;
    world_start(&w, SH_C_ONLY, false);
    char *cmd = mcp_world_fmt("echo \"in_shell=$EXECGATE_WRAP_IN_SHELL\";"
                              " sh -c ': > %s/a; exit 3'; echo \"s=$?\";"
                              " EXECGATE_WRAP_IN_SHELL= sh -c ': > %s/b; exit 4'; echo \"s=$?\";"
                              " touch %s/c; echo \"s=$?\"",
                              w.outside, w.outside, w.outside);
    json_t *a = run(&w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "in_shell=1\ns=3\ns=4\n");
    mcp_world_assert_contains(mcp_world_output(a), "Read-only file system\ns=1\n");
    assert_true(mcp_world_exists(w.outside, "a"));
    assert_true(mcp_world_exists(w.outside, "b"));
    assert_false(mcp_world_exists(w.outside, "c"));
    json_decref(a);
    free(cmd);
    mcp_world_end(&w);
}

static void
test_forbidden_denies(void **state)
{
    struct mcp_world w;
    world_start(&w,
                "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n"
                "prefix_rule(pattern=[\"shred\"], decision=\"forbidden\", justification=\"use "
                "the trash\")\n",
                false);
    char *f = tmpdir_path(w.wd, "keep");
    tmpdir_write_file(f, "data", 0644);
    json_t *a = run(&w, "rm -f keep; echo \"status=$?\"; shred keep; echo \"status=$?\"", NULL);
    mcp_world_assert_contains(mcp_world_output(a),
                              "Execution denied: Execution forbidden by policy\nstatus=1\n");
    mcp_world_assert_contains(
        mcp_world_output(a),
        "Execution denied: Execution forbidden by policy: use the trash\nstatus=1\n");
    assert_true(mcp_world_exists(w.wd, "keep"));
    json_decref(a);
    free(f);
    mcp_world_end(&w);
}

/* Every way a shell has to start a program reaches the rules: the
 * builtins that exec, a function, an alias, programs that exec others
 * (the tree's part), and zsh's own forms. */
static void
test_forbidden_through_shell_constructs(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n", false);
    const char *const common[] = {
        "command rm -f keep",
        "exec rm -f keep",
        "zap() { rm -f \"$@\"; }; zap keep",
        "env rm -f keep",
        "echo keep | xargs rm -f",
        "find . -name keep -exec rm {} +",
        "python3 -c 'import os; os.execv(\"/bin/rm\", [\"rm\", \"-f\", \"keep\"])'",
        NULL,
    };
    /* an alias takes effect in code read after it (eval); bash expands
     * aliases in a -c string only when told to */
    const char *const bash_only[] = {"shopt -s expand_aliases; alias zap='rm -f'; eval 'zap keep'",
                                     NULL};
    const char *const zsh_only[] = {
        "alias zap='rm -f'; eval 'zap keep'",
        "=rm -f keep",
        "noglob rm -f keep",
        "nocorrect rm -f keep",
        "(){ rm -f keep }",
        NULL,
    };
    const char *const *lists[] = {common, mcp_world_zsh() ? zsh_only : bash_only};
    char *f = tmpdir_path(w.wd, "keep");
    for (size_t l = 0; l < 2; l++)
        for (size_t i = 0; lists[l][i]; i++) {
            tmpdir_write_file(f, "data", 0644);
            json_t *a = run(&w, lists[l][i], NULL);
            const char *out = mcp_world_output(a);
            if (!mcp_world_exists(w.wd, "keep") ||
                (!strstr(out, "Execution denied: Execution forbidden by policy") &&
                 !strstr(out, "execgate: refused `")))
                fail_msg("not refused: %s\noutput: %s", lists[l][i], out);
            assert_int_not_equal(mcp_world_exit(a), 0);
            json_decref(a);
        }
    free(f);
    mcp_world_end(&w);
}

/* ---- prompt ---- */

static char *
which(const char *name)
{
    const char *path = getenv("PATH");
    char *copy = strdup(path ? path : "/usr/bin:/bin");
    char *found = NULL;
    for (char *dir = strtok(copy, ":"); dir && !found; dir = strtok(NULL, ":")) {
        char *p = mcp_world_fmt("%s/%s", dir, name);
        if (access(p, X_OK) == 0)
            found = p;
        else
            free(p);
    }
    free(copy);
    return found;
}

static void
test_prompt_accept_git_init(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", true);
    struct mcp_answers ans = {.action = "accept"};
    json_t *a = run(&w, "git init . >/dev/null && echo made", &ans);
    assert_int_equal(ans.asked, 1);
    char *git = which("git");
    char *expect = mcp_world_fmt("Allow agent to run `%s init .` in `%s`?", git, w.wd);
    assert_string_equal(ans.last_message, expect);
    mcp_world_assert_contains(mcp_world_output(a), "made");
    assert_int_equal(mcp_world_exit(a), 0);
    /* the sandbox keeps .git read-only: only the escalated git made it */
    assert_true(mcp_world_exists(w.wd, ".git/HEAD"));
    if (w.audit) { /* EXECGATE_TEST_NO_AUDIT: none */
        char *log = tmpdir_read_file(w.audit, NULL);
        mcp_world_assert_contains(log, "\"answered_by\":\"user\"");
        /* the rule, and where it was written */
        char *rule = mcp_world_fmt("\"matched_rules\":[{\"prefix\":[\"git\",\"init\"],"
                                   "\"decision\":\"prompt\",\"origin\":\"%s/test.rules:1:1\"}]",
                                   w.rules);
        mcp_world_assert_contains(log, rule);
        free(rule);
        free(log);
    }
    json_decref(a);
    free(git);
    free(expect);
    free(ans.last_message);
    mcp_world_end(&w);
}

static void
test_prompt_decline_and_cancel(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", true);
    struct mcp_answers ans = {.action = "decline"};
    json_t *a = run(&w, "git init .; echo \"status=$?\"", &ans);
    mcp_world_assert_contains(mcp_world_output(a),
                              "Execution denied: User declined execution\nstatus=1\n");
    json_decref(a);
    ans.action = "cancel";
    a = run(&w, "git init .; echo \"status=$?\"", &ans);
    mcp_world_assert_contains(mcp_world_output(a),
                              "Execution denied: User cancelled execution\nstatus=1\n");
    assert_int_equal(ans.asked, 2);
    assert_false(mcp_world_exists(w.wd, ".git/HEAD"));
    json_decref(a);
    /* bytes that are not UTF-8 reach the person as U+FFFD, quoted */
    ans.action = "decline";
    a = run(&w, "git init $'a\\xff'", &ans);
    mcp_world_assert_contains(ans.last_message, " init 'a\xef\xbf\xbd'` in `");
    mcp_world_assert_contains(mcp_world_output(a), "User declined execution");
    json_decref(a);
    free(ans.last_message);
    mcp_world_end(&w);
}

/* The question reads as a person expects: the rule's justification in
 * the text (escaped as the command is), and what the person types as a
 * reason reaches the agent with a refusal, an approval (person_said) and
 * an abort. */
static void
test_question_shows_justification_and_returns_reason(void **state)
{
    struct mcp_world w;
    world_start(&w,
                "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\", "
                "justification=\"a new repository `here`\")\n",
                true);
    struct mcp_answers ans = {
        .action = "accept", .decision = "denied", .reason = "use the existing one\nplease"};
    json_t *a = run(&w, "git init .; echo \"status=$?\"", &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(ans.last_message,
                              "? The rule that asks says: \"a new repository \\x60here\\x60\".");
    mcp_world_assert_contains(mcp_world_output(a),
                              "User denied execution, saying: use the existing one\\nplease");
    assert_false(mcp_world_exists(w.wd, ".git/HEAD"));
    json_decref(a);
    /* blank reasons add nothing */
    ans.reason = " \n";
    a = run(&w, "git init .; echo \"status=$?\"", &ans);
    mcp_world_assert_contains(mcp_world_output(a), "Execution denied: User denied execution\n");
    json_decref(a);
    /* approved with a reason: it runs, and the result says what was said */
    ans.decision = "approved";
    ans.reason = "only `here`\n";
    a = run(&w, "git init . >/dev/null; echo \"status=$?\"", &ans);
    mcp_world_assert_contains(mcp_world_output(a), "status=0\n");
    char *git = which("git");
    char *said = mcp_world_fmt("approved `%s init .`: only \\x60here\\x60\\n", git);
    assert_string_equal(json_string_value(json_object_get(mcp_world_structured(a), "person_said")),
                        said);
    free(said);
    free(git);
    json_decref(a);
    /* approved without one: nothing is added */
    ans.reason = NULL;
    a = run(&w, "git init . >/dev/null; echo \"status=$?\"", &ans);
    assert_null(json_object_get(mcp_world_structured(a), "person_said"));
    json_decref(a);
    ans.decision = "abort";
    ans.reason = "stop, wrong directory";
    a = run(&w, "git init .; echo not reached", &ans);
    assert_int_not_equal(mcp_world_exit(a), 0);
    mcp_world_assert_contains(
        json_string_value(json_object_get(mcp_world_structured(a), "aborted")),
        "User aborted the tool call, saying: stop, wrong directory");
    json_decref(a);
    free(ans.last_message);
    mcp_world_end(&w);
}

/* The answer to a tools/call with id id and arguments args (taken). */
static json_t *
call_with_id(struct mcp_world *w, json_int_t id, json_t *args)
{
    mcp_client_send(w->c, json_pack("{s:s, s:I, s:s, s:{s:s, s:o, s:{s:I}}}", "jsonrpc", "2.0",
                                    "id", id, "method", "tools/call", "params", "name", "shell",
                                    "arguments", args, "_meta", "progressToken", id));
    json_t *want = json_integer(id);
    json_t *a = mcp_client_response(w->c, want, MCP_CLIENT_WAIT_MS);
    json_decref(want);
    assert_non_null(a);
    return a;
}

/* ---- the agent asks to leave the sandbox ---- */

/* A call's arguments asking to leave the sandbox: perm is
 * sandbox_permissions (NULL: with_escalated_permissions true instead). */
static json_t *
leave_args(struct mcp_world *w, const char *command, const char *perm, const char *why)
{
    json_t *args = json_pack("{s:s, s:s, s:b, s:i}", "command", command, "workdir", w->wd, "login",
                             0, "timeout_ms", 30000);
    assert_non_null(args);
    if (perm)
        json_object_set_new(args, "sandbox_permissions", json_string(perm));
    else
        json_object_set_new(args, "with_escalated_permissions", json_true());
    if (why)
        json_object_set_new(args, "justification", json_string(why));
    return args;
}

/* The call's result is the one line text, an error of the tool call. */
static void
assert_not_run(const json_t *a, const char *text)
{
    const json_t *r = json_object_get(a, "result");
    assert_true(json_is_true(json_object_get(r, "isError")));
    const char *got = json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
    assert_non_null(got);
    mcp_world_assert_contains(got, text);
    assert_null(strchr(got, '\n'));
}

/* A login call (the default) runs the user's startup files outside
 * before the command: the question says so; a call with login false does
 * not. */
static void
test_leave_sandbox_question_says_login(void **state)
{
    struct mcp_world w;
    world_start(&w, "", true);
    struct mcp_answers ans = {.action = "decline"};
    json_t *args = leave_args(&w, "echo hi", "require_escalated", NULL);
    json_object_set_new(args, "login", json_true());
    json_t *a = mcp_world_run_args(&w, args, &ans);
    assert_int_equal(ans.asked_leave, 1);
    char *shown = mcp_world_fmt("The agent asks to run `echo hi` in `%s` outside the sandbox, in a "
                                "login shell (your shell's startup files, such as ~/.profile, run "
                                "first): with your access",
                                w.wd);
    mcp_world_assert_contains(ans.last_message, shown);
    json_decref(a);
    a = mcp_world_run_args(&w, leave_args(&w, "echo hi", "require_escalated", NULL), &ans);
    assert_int_equal(ans.asked_leave, 2);
    assert_null(strstr(ans.last_message, "login shell"));
    free(ans.last_message);
    json_decref(a);
    free(shown);
    mcp_world_end(&w);
}

/* HOME lies in /tmp, a writable root: a sandboxed command appends to
 * ~/.profile, then asks to run `true` outside in a login shell.  The
 * person approved `true`; the planted profile must not run outside. */
static void
test_leave_sandbox_login_with_planted_profile(void **state)
{
    char *home = tmpdir_new_in("/tmp", "planted-home");
    char *profile = tmpdir_path(home, ".profile");
    tmpdir_write_file(profile, "", 0644);
    /* the server's HOME (one entry: the server and the shell read the same) */
    const char *old_home = getenv("HOME");
    char *saved = old_home ? strdup(old_home) : NULL;
    assert_int_equal(setenv("HOME", home, 1), 0);
    struct mcp_world w;
    world_start(&w, "", true);
    if (saved)
        assert_int_equal(setenv("HOME", saved, 1), 0);
    free(saved);
    char *plant =
        mcp_world_fmt("echo 'echo planted > %s/login' >> ~/.profile && echo planted", w.outside);
    json_t *a = run(&w, plant, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "planted\n");
    json_decref(a);
    struct mcp_answers ans = {.action = "accept", .decision = "approved"};
    json_t *args = leave_args(&w, "true", "require_escalated", NULL);
    json_object_set_new(args, "login", json_true());
    a = mcp_world_run_args(&w, args, &ans);
    if (mcp_world_exists(w.outside, "login"))
        fail_msg("the planted ~/.profile ran outside: [%s]", json_dumps(a, 0));
    assert_int_equal(ans.asked_leave, 0);
    /* the first of them it would read or could be made to (~/.bash_profile
     * before ~/.profile): all lie in /tmp */
    char *said = mcp_world_fmt("Not run: a login shell outside the sandbox would first run the "
                               "startup file `%s/",
                               home);
    char *text = json_dumps(a, 0);
    mcp_world_assert_contains(text, said);
    mcp_world_assert_contains(text, "`, which a sandbox could have written; ask again with login "
                                    "false to leave the sandbox without it");
    free(text);
    free(said);
    json_decref(a);
    /* login false: asked, approved, and the profile is not read */
    args = leave_args(&w, "true", "require_escalated", NULL);
    a = mcp_world_run_args(&w, args, &ans);
    assert_int_equal(ans.asked_leave, 1);
    assert_false(mcp_world_exists(w.outside, "login"));
    json_decref(a);
    free(ans.last_message);
    mcp_world_end(&w);
    free(plant);
    free(profile);
    tmpdir_remove(home);
    free(home);
}

/* Approved, the command runs without the sandbox (it writes where the
 * sandbox cannot), and the exec rules still hold: forbidden refuses,
 * prompt asks.  The question shows the command and the justification. */
static void
test_leave_sandbox_approved_runs_outside_rules_still_hold(void **state)
{
    struct mcp_world w;
    world_start(&w,
                "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", justification=\"no rm\")\n"
                "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n",
                true);
    struct mcp_answers ans = {.action = "accept", .decision = "approved", .reason = "just this"};
    char *cmd = mcp_world_fmt("touch %s/x && echo made", w.outside);
    json_t *a = mcp_world_run_args(&w, leave_args(&w, cmd, "require_escalated", "write `x`"), &ans);
    assert_int_equal(ans.asked_leave, 1);
    char *shown = mcp_world_fmt("The agent asks to run `touch %s/x && echo made` in `%s` outside "
                                "the sandbox",
                                w.outside, w.wd);
    mcp_world_assert_contains(ans.last_message, shown);
    mcp_world_assert_contains(ans.last_message, "Its reason: \"write \\x60x\\x60\"");
    mcp_world_assert_contains(mcp_world_output(a), "made\n");
    assert_true(mcp_world_exists(w.outside, "x"));
    assert_string_equal(json_string_value(json_object_get(mcp_world_structured(a), "person_said")),
                        "approved running it outside the sandbox: just this");
    json_decref(a);
    ans.reason = NULL;
    /* forbidden still refuses, outside the sandbox too */
    free(cmd);
    cmd = mcp_world_fmt("rm -f %s/x; echo \"status=$?\"", w.outside);
    a = mcp_world_run_args(&w, leave_args(&w, cmd, NULL, NULL), &ans);
    assert_int_equal(ans.asked_leave, 2);
    mcp_world_assert_contains(ans.last_message, "It gave no reason.");
    mcp_world_assert_contains(mcp_world_output(a), "no rm");
    assert_true(mcp_world_exists(w.outside, "x"));
    json_decref(a);
    /* prompt still asks: a second question, declined */
    static const char *const answers[] = {"accept", "decline", NULL};
    struct mcp_answers two = {.actions = answers, .decision = "approved"};
    free(cmd);
    cmd = mcp_world_fmt("git init %s/r >/dev/null; echo \"status=$?\"", w.outside);
    a = mcp_world_run_args(&w, leave_args(&w, cmd, "require_escalated", NULL), &two);
    assert_int_equal(two.asked, 2);
    assert_int_equal(two.asked_leave, 1);
    mcp_world_assert_contains(mcp_world_output(a), "User declined execution");
    assert_false(mcp_world_exists(w.outside, "r/.git/HEAD"));
    json_decref(a);
    free(two.last_message);
    free(cmd);
    free(shown);
    free(ans.last_message);
    mcp_world_end(&w);
}

/* Declined, refused (with the person's reason) or unanswerable, nothing
 * runs and the result says so in one line; use_default asks nothing and
 * runs in the sandbox; a value not understood is an error. */
static void
test_leave_sandbox_declined_refused_unanswerable(void **state)
{
    struct mcp_world w;
    world_start(&w, "", true);
    char *cmd = mcp_world_fmt("touch %s/x", w.outside);
    struct mcp_answers ans = {.action = "decline"};
    json_t *a = mcp_world_run_args(&w, leave_args(&w, cmd, "require_escalated", "why"), &ans);
    assert_not_run(a, "Not run: the person declined to run it outside the sandbox; run it inside "
                      "the sandbox, or do without it");
    json_decref(a);
    ans.action = "accept";
    ans.decision = "denied";
    ans.reason = "not today";
    a = mcp_world_run_args(&w, leave_args(&w, cmd, NULL, NULL), &ans);
    assert_not_run(a, "Not run: the person refused to run it outside the sandbox, saying: not "
                      "today; run it inside");
    json_decref(a);
    /* accepted without a decision is no approval */
    ans.decision = NULL;
    ans.reason = NULL;
    a = mcp_world_run_args(&w, leave_args(&w, cmd, NULL, NULL), &ans);
    assert_not_run(a, "Not run: the person refused");
    json_decref(a);
    ans.action = "cancel";
    a = mcp_world_run_args(&w, leave_args(&w, cmd, "require_escalated", NULL), &ans);
    assert_not_run(a, "Not run: the question to run it outside the sandbox was cancelled");
    json_decref(a);
    assert_int_equal(ans.asked_leave, 4);
    assert_false(mcp_world_exists(w.outside, "x"));
    /* use_default: no question, and the sandbox holds */
    json_t *args = leave_args(&w, cmd, "use_default", NULL);
    a = mcp_world_run_args(&w, args, NULL);
    assert_int_not_equal(mcp_world_exit(a), 0);
    assert_false(mcp_world_exists(w.outside, "x"));
    json_decref(a);
    /* not understood: an error naming the argument */
    a = mcp_client_call(w.c, "tools/call",
                        json_pack("{s:s, s:o}", "name", "shell", "arguments",
                                  leave_args(&w, cmd, "with_additional_permissions", NULL)));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(a, "error"), "code")),
                     -32602);
    mcp_world_assert_contains(
        json_string_value(json_object_get(json_object_get(a, "error"), "message")),
        "sandbox_permissions");
    json_decref(a);
    assert_int_equal(ans.asked, 4);
    free(ans.last_message);
    mcp_world_end(&w);

    /* a client that cannot be asked: not run, in one line */
    world_start(&w, "", false);
    a = mcp_world_run_args(&w, leave_args(&w, cmd, "require_escalated", NULL), NULL);
    assert_not_run(a, "Not run: running outside the sandbox needs a person's approval");
    assert_false(mcp_world_exists(w.outside, "x"));
    json_decref(a);
    mcp_world_end(&w);
    free(cmd);
}

/* A call cancelled while the person is asked to let it leave the sandbox:
 * the question is closed in the client, a late answer runs nothing, and
 * the call's id is free again. */
static void
test_leave_sandbox_cancelled_while_asked(void **state)
{
    struct mcp_world w;
    world_start(&w, "", true);
    char *cmd = mcp_world_fmt("touch %s/x", w.outside);
    mcp_client_send(w.c, json_pack("{s:s, s:i, s:s, s:{s:s, s:o}}", "jsonrpc", "2.0", "id", 8008,
                                   "method", "tools/call", "params", "name", "shell", "arguments",
                                   leave_args(&w, cmd, "require_escalated", NULL)));
    json_t *q = mcp_client_next_named(w.c, "elicitation/create", MCP_CLIENT_WAIT_MS);
    assert_non_null(q);
    json_int_t qid = json_integer_value(json_object_get(q, "id"));
    /* its id is taken while the person is asked */
    json_t *dup = call_with_id(&w, 8008, json_pack("{s:i}", "command", 1));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(dup, "error"), "code")),
                     -32600);
    json_decref(dup);
    mcp_client_send(w.c, json_pack("{s:s, s:s, s:{s:i}}", "jsonrpc", "2.0", "method",
                                   "notifications/cancelled", "params", "requestId", 8008));
    json_t *closed = mcp_client_notification(w.c, "notifications/cancelled", MCP_CLIENT_WAIT_MS);
    assert_non_null(closed);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(closed, "params"), "requestId")), qid);
    json_decref(closed);
    /* answered all the same, late: nothing runs */
    mcp_client_send(w.c, json_pack("{s:s, s:O, s:{s:s, s:{s:s}}}", "jsonrpc", "2.0", "id",
                                   json_object_get(q, "id"), "result", "action", "accept",
                                   "content", "decision", "approved"));
    json_decref(q);
    json_t *a = call_with_id(&w, 8008, json_pack("{s:i}", "command", 1));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(a, "error"), "code")),
                     -32602);
    json_decref(a);
    assert_false(mcp_world_exists(w.outside, "x"));
    free(cmd);
    mcp_world_end(&w);
}

/* A command whose second program is declined: the call says so and
 * fails, although the first was accepted and ran. */
static void
test_subcommand_decline_marks_call_denied(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"true\"], decision=\"prompt\")\n", true);
    static const char *const answers[] = {"accept", "decline", NULL};
    struct mcp_answers ans = {.actions = answers};
    json_t *a = run(&w, "/usr/bin/true && /usr/bin/true", &ans);
    assert_int_equal(ans.asked, 2);
    mcp_world_assert_contains(mcp_world_output(a), "Execution denied: User declined execution");
    assert_int_not_equal(mcp_world_exit(a), 0);
    json_decref(a);
    free(ans.last_message);
    mcp_world_end(&w);
}

/* The shell the server was started with runs the commands, and the tool
 * says which. */
static void
test_the_chosen_shell_runs(void **state)
{
    struct mcp_world w;
    world_start(&w, "", false);
    json_t *a = run(&w, "echo \"zsh=${ZSH_VERSION:-} bash=${BASH_VERSION:-}\"", NULL);
    mcp_world_assert_contains(mcp_world_output(a),
                              mcp_world_zsh() ? "zsh=5.9 bash=\n" : "zsh= bash=5.2");
    json_decref(a);
    json_t *list = mcp_client_call(w.c, "tools/list", json_object());
    const json_t *tool =
        json_array_get(json_object_get(json_object_get(list, "result"), "tools"), 0);
    const char *desc = json_string_value(json_object_get(tool, "description"));
    assert_non_null(desc);
    if (mcp_world_zsh())
        mcp_world_assert_contains(desc, "with zsh");
    else
        assert_null(strstr(desc, "zsh"));
    json_decref(list);
    mcp_world_end(&w);
}

static void
test_prompt_without_elicitation_capability(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", false);
    json_t *a = run(&w, "git init .; echo \"status=$?\"", NULL);
    mcp_world_assert_contains(mcp_world_output(a), "Execution denied: Approval was required");
    mcp_world_assert_contains(mcp_world_output(a), "did not declare the elicitation capability");
    mcp_world_assert_contains(mcp_world_output(a), "status=1\n");
    assert_false(mcp_world_exists(w.wd, ".git/HEAD"));
    json_decref(a);
    mcp_world_end(&w);
}

static void
test_approved_for_session_asks_once(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"prompt\")\n", true);
    struct mcp_answers ans = {.action = "accept", .decision = "approved_for_session"};
    char *cmd = mcp_world_fmt("sh -c 'touch %s/one'", w.outside);
    json_t *a = run(&w, cmd, &ans);
    json_decref(a);
    a = run(&w, cmd, &ans);
    json_decref(a);
    assert_int_equal(ans.asked, 1);
    assert_true(mcp_world_exists(w.outside, "one"));
    free(cmd);
    /* other arguments are asked again */
    cmd = mcp_world_fmt("sh -c 'touch %s/two'", w.outside);
    ans.decision = NULL;
    a = run(&w, cmd, &ans);
    assert_int_equal(ans.asked, 2);
    assert_true(mcp_world_exists(w.outside, "two"));
    json_decref(a);
    free(cmd);
    free(ans.last_message);
    mcp_world_end(&w);
}

/* An accepted answer whose decision is none of those offered is a
 * refusal, not an approval: what a person did not choose does not run. */
static void
test_unknown_decision_is_refused(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", true);
    struct mcp_answers ans = {.action = "accept", .decision = "maybe"};
    json_t *a = run(&w, "git init .; echo \"status=$?\"", &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(mcp_world_output(a),
                              "Execution denied: User declined execution\nstatus=1\n");
    assert_false(mcp_world_exists(w.wd, ".git/HEAD"));
    json_decref(a);
    free(ans.last_message);
    mcp_world_end(&w);
}

static void
test_abort_stops_the_call(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", true);
    struct mcp_answers ans = {.action = "accept", .decision = "abort"};
    json_t *a = run(&w, "git init .; echo after > after.txt; sleep 20", &ans);
    const json_t *sc = mcp_world_structured(a);
    mcp_world_assert_contains(json_string_value(json_object_get(sc, "aborted")), "aborted");
    assert_true(json_is_true(json_object_get(json_object_get(a, "result"), "isError")));
    assert_false(mcp_world_exists(w.wd, "after.txt"));
    assert_false(mcp_world_exists(w.wd, ".git/HEAD"));
    json_decref(a);
    free(ans.last_message);
    mcp_world_end(&w);
}

static void
test_waiting_for_a_person_does_not_count_toward_the_timeout(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", true);
    struct mcp_answers ans = {.action = "accept", .delay_ms = 2500};
    json_t *a = mcp_world_run(&w, "git init . >/dev/null; echo done", &ans, 1500);
    assert_int_equal(ans.asked, 1);
    assert_false(json_is_true(json_object_get(mcp_world_structured(a), "timed_out")));
    mcp_world_assert_contains(mcp_world_output(a), "done\n");
    json_decref(a);
    /* and the clock runs again afterwards */
    ans.delay_ms = 0;
    a = mcp_world_run(&w, "git init . >/dev/null; sleep 5; echo late", &ans, 1500);
    assert_true(json_is_true(json_object_get(mcp_world_structured(a), "timed_out")));
    json_decref(a);
    free(ans.last_message);
    mcp_world_end(&w);
}

/* A question nobody answers holds the call --max-ask-ms at most: then the
 * timeout runs again, and the call times out with the question open. */
static void
test_unanswered_question_stops_the_clock_for_a_while_only(void **state)
{
    struct mcp_world w;
    world_start_with(&w, "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n", true,
                     "--max-ask-ms=300");
    struct mcp_answers ans = {.action = "accept", .delay_ms = 3000};
    json_t *a = mcp_world_run(&w, "git init . >/dev/null; echo done", &ans, 500);
    assert_int_equal(ans.asked, 1);
    const json_t *st = mcp_world_structured(a);
    assert_true(json_is_true(json_object_get(st, "timed_out")));
    /* timed out at about 500 + 300 ms, long before the answer came */
    json_int_t secs = json_integer_value(json_object_get(json_object_get(st, "duration"), "secs"));
    assert_true(secs < 3);
    assert_false(mcp_world_exists(w.wd, ".git/HEAD"));
    json_decref(a);
    free(ans.last_message);
    mcp_world_end(&w);
}

static void
test_forced_rm_without_rule_prompts_then_runs_inside(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"true\"], decision=\"allow\")\n", true);
    char *in = tmpdir_path(w.wd, "victim");
    tmpdir_write_file(in, "x", 0644);
    char *out = tmpdir_path(w.outside, "victim");
    tmpdir_write_file(out, "x", 0644);
    struct mcp_answers ans = {.action = "decline"};
    json_t *a = run(&w, "rm -rf victim; echo \"status=$?\"; rm victim2 2>/dev/null; true", &ans);
    assert_int_equal(ans.asked, 1); /* rm without force is not asked */
    mcp_world_assert_contains(mcp_world_output(a),
                              "Execution denied: User declined execution\nstatus=1\n");
    assert_true(mcp_world_exists(w.wd, "victim"));
    json_decref(a);
    ans.action = "accept";
    char *cmd = mcp_world_fmt(
        "bash -c 'rm -f victim'; echo \"in=$?\"; rm --force %s; echo \"out=$?\"", out);
    a = run(&w, cmd, &ans);
    /* bash -c 'rm -f ...' is asked (the system's bash then runs rm itself),
     * then rm --force */
    assert_int_equal(ans.asked, 3);
    mcp_world_assert_contains(mcp_world_output(a), "in=0\n");
    assert_false(mcp_world_exists(w.wd, "victim"));
    /* approved, but it ran in the sandbox: outside stays */
    mcp_world_assert_contains(mcp_world_output(a), "out=1\n");
    assert_true(mcp_world_exists(w.outside, "victim"));
    json_decref(a);
    free(cmd);
    free(in);
    free(out);
    free(ans.last_message);
    mcp_world_end(&w);
}

static void
test_timeout_kills_escalated_program(void **state)
{
    struct mcp_world w;
    world_start(&w, SH_C_ALLOWED, false);
    char *cmd = mcp_world_fmt("sh -c 'sleep 37.25; touch %s/late'", w.outside);
    json_t *a = mcp_world_run(&w, cmd, NULL, 1000);
    assert_true(json_is_true(json_object_get(mcp_world_structured(a), "timed_out")));
    assert_true(proc_gone("sleep 37.25", 5000));
    assert_false(mcp_world_exists(w.outside, "late"));
    json_decref(a);
    free(cmd);
    mcp_world_end(&w);
}

static void
test_signals_reach_escalated_program(void **state)
{
    struct mcp_world w;
    world_start(&w, SH_C_ALLOWED, false);
    /* SIGTERM to the wrapper (Bash's child) is forwarded to the escalated
     * program, whose trap answers; readiness is a file, not a delay */
    char *cmd =
        mcp_world_fmt("sh -c 'trap \"echo got-term; exit 3\" TERM; touch %s/x; : > ready; "
                      "while :; do sleep 0.05; done' & pid=$!; "
                      "until [ -e ready ]; do sleep 0.02; done; kill -TERM $pid; wait $pid; "
                      "echo \"st=$?\"; sh -c 'kill -KILL $$'; echo \"killed=$?\"",
                      w.outside);
    json_t *a = run(&w, cmd, NULL);
    assert_true(mcp_world_exists(w.outside, "x")); /* it was escalated */
    mcp_world_assert_contains(mcp_world_output(a), "got-term\nst=3\n");
    /* a program killed by a signal: the shell sees 128+n */
    mcp_world_assert_contains(mcp_world_output(a), "killed=137\n");
    json_decref(a);
    free(cmd);
    mcp_world_end(&w);
}

static void
test_host_executable_limits_fallback(void **state)
{
    char *sh = which("sh");
    char *rules =
        mcp_world_fmt(SH_C_ALLOWED "host_executable(name=\"sh\", paths=[\"/nonexistent/sh\"])\n");
    struct mcp_world w;
    world_start(&w, rules, false);
    char *cmd = mcp_world_fmt("sh -c 'touch %s/x'; echo \"st=$?\"", w.outside);
    json_t *a = run(&w, cmd, NULL);
    /* not a listed path: no rule applies, it runs inside and cannot write */
    mcp_world_assert_contains(mcp_world_output(a), "st=1\n");
    assert_false(mcp_world_exists(w.outside, "x"));
    json_decref(a);
    free(rules);
    /* listed: escalated (rules are read at start: a new server) */
    mcp_world_end(&w);
    rules = mcp_world_fmt(SH_C_ALLOWED "host_executable(name=\"sh\", paths=[\"%s\"])\n", sh);
    world_start(&w, rules, false);
    free(cmd);
    cmd = mcp_world_fmt("sh -c 'touch %s/x'; echo \"st=$?\"", w.outside);
    a = run(&w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "st=0\n");
    assert_true(mcp_world_exists(w.outside, "x"));
    json_decref(a);
    free(cmd);
    free(rules);
    free(sh);
    mcp_world_end(&w);
}

static void
test_bad_rules_refuse_start(void **state)
{
    char *dir = tmpdir_new("esc-bad");
    char *path = tmpdir_path(dir, "bad.rules");
    tmpdir_write_file(path, "prefix_rule(pattern=[\"rm\"], decision=\"maybe\")\n", 0644);
    const char *argv[] = {server_path, "--rules", dir, NULL};
    struct mcp_client *c = mcp_client_start(argv, NULL);
    int status = mcp_client_wait_exit(c, MCP_CLIENT_WAIT_MS);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
    mcp_client_free(c);
    /* the error a machine can read: --log-format json, one object a line */
    const char *argv_json[] = {server_path, "--log-format", "json", "--rules", dir, NULL};
    struct proc_result res;
    struct proc_options opts = {0};
    assert_int_equal(proc_run(argv_json, &opts, &res), 0);
    assert_int_equal(proc_exit_code(&res), 2);
    json_error_t jerr;
    json_t *line = json_loadb(res.err, strcspn(res.err, "\n"), 0, &jerr);
    if (!line)
        fail_msg("not a JSON line: [%s]", res.err);
    assert_string_equal(json_string_value(json_object_get(line, "level")), "error");
    assert_string_equal(json_string_value(json_object_get(line, "logger")), "execgate");
    assert_non_null(json_string_value(json_object_get(line, "time")));
    mcp_world_assert_contains(json_string_value(json_object_get(line, "message")),
                              "bad.rules:1:1:");
    json_decref(line);
    proc_result_free(&res);
    /* and as text, one line as a bad option is said */
    const char *argv_text[] = {server_path, "--rules", dir, NULL};
    assert_int_equal(proc_run(argv_text, &opts, &res), 0);
    assert_int_equal(proc_exit_code(&res), 2);
    char *want = mcp_world_fmt("execgate: %s:1:1: invalid decision: maybe (want allow, prompt or "
                               "forbidden)\n",
                               path);
    assert_string_equal(res.err, want);
    free(want);
    proc_result_free(&res);
    /* and a missing --rules path */
    const char *argv2[] = {server_path, "--rules", "/nonexistent/x.rules", NULL};
    c = mcp_client_start(argv2, NULL);
    status = mcp_client_wait_exit(c, MCP_CLIENT_WAIT_MS);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
    mcp_client_free(c);
    tmpdir_remove(dir);
    free(dir);
    free(path);
}

static void
test_cancel_kills_escalated_program(void **state)
{
    struct mcp_world w;
    world_start(&w, SH_C_ALLOWED, false);
    char *cmd =
        mcp_world_fmt("sh -c 'touch %s/ready; sleep 38.5; touch %s/late'", w.outside, w.outside);
    long long id =
        mcp_client_send_request(w.c, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                          "command", cmd, "workdir", w.wd, "login", 0));
    /* the escalated program has started once it made its file */
    bool ready = false;
    for (int i = 0; i < 3000 && !ready; i++) {
        ready = mcp_world_exists(w.outside, "ready");
        struct timespec ts = {0, 10 * 1000 * 1000};
        if (!ready)
            nanosleep(&ts, NULL);
    }
    assert_true(ready);
    assert_true(proc_with_marker("sleep 38.5"));
    mcp_client_send(w.c,
                    json_pack("{s:s, s:s, s:{s:I}}", "jsonrpc", "2.0", "method",
                              "notifications/cancelled", "params", "requestId", (json_int_t)id));
    assert_true(proc_gone("sleep 38.5", 10000));
    assert_false(mcp_world_exists(w.outside, "late"));
    free(cmd);
    mcp_world_end(&w);
}

/* A call the server kills (its timeout, a cancel) leaves no placeholder
 * .codex in the workspace: its helper, killed, cannot remove it, so the
 * server does, once no sandbox holds it: while the session lasts, the
 * session keeps it (docs/sandbox.md), so it is gone when the session has
 * ended. */
static void
test_killed_call_leaves_no_placeholder(void **state)
{
    struct mcp_world w;
    world_start(&w, "", false);
    assert_false(mcp_world_exists(w.wd, ".codex"));
    json_t *a = mcp_world_run(&w, "echo in > in.txt; sleep 30", NULL, 500);
    assert_true(json_is_true(json_object_get(mcp_world_structured(a), "timed_out")));
    assert_true(mcp_world_exists(w.wd, "in.txt")); /* it ran in the sandbox */
    json_decref(a);

    /* cancelled once it runs (its first line of output, as progress) */
    json_t *args = json_pack("{s:s, s:s, s:b}", "command", "echo started; sleep 30", "workdir",
                             w.wd, "login", 0);
    mcp_client_send(w.c, json_pack("{s:s, s:i, s:s, s:{s:s, s:o, s:{s:i}}}", "jsonrpc", "2.0", "id",
                                   7007, "method", "tools/call", "params", "name", "shell",
                                   "arguments", args, "_meta", "progressToken", 7007));
    json_t *progress = mcp_client_notification(w.c, "notifications/progress", MCP_CLIENT_WAIT_MS);
    assert_non_null(progress);
    json_decref(progress);
    mcp_client_send(w.c, json_pack("{s:s, s:s, s:{s:i}}", "jsonrpc", "2.0", "method",
                                   "notifications/cancelled", "params", "requestId", 7007));
    /* a cancelled call is not answered: its id is taken until it has ended
     * (and been cleaned up), then an invalid call with it is an error of
     * its own */
    for (;;) {
        a = call_with_id(&w, 7007, json_pack("{s:i}", "command", 1));
        json_int_t code = json_integer_value(json_object_get(json_object_get(a, "error"), "code"));
        json_decref(a);
        if (code == -32602)
            break;
        assert_int_equal(code, -32600);
    }
    mcp_world_assert_clean_exit(w.c);
    assert_true(mcp_world_exists(w.wd, "in.txt"));
    assert_false(mcp_world_exists(w.wd, ".codex"));
    mcp_world_end(&w);
}

static void
test_queued_calls_hold_no_sockets(void **state)
{
    char *wd = tmpdir_new("esc-q");
    const char *argv[] = {server_path, "--max-calls", "1", NULL};
    struct mcp_client *c = mcp_client_start(argv, NULL);
    json_decref(mcp_client_initialize(c));
    /* one call first: what the server keeps for its life or the
     * session's (the sandbox launcher, the session's network, its .codex
     * placeholder, an empty cgroup) is then counted in before */
    json_t *ping =
        mcp_client_call(c, "tools/call",
                        json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                  "command", "true", "workdir", wd, "login", 0));
    assert_int_equal(mcp_world_exit(ping), 0);
    json_decref(ping);
    int before = mcp_client_fd_count(c);
    char *marker = tmpdir_path(wd, "go");
    char *first = mcp_world_fmt("until [ -e %s ]; do sleep 0.02; done", marker);
    enum { QUEUED = 40 };
    long long ids[QUEUED + 1];
    ids[0] =
        mcp_client_send_request(c, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                          "command", first, "workdir", wd, "login", 0));
    for (int i = 1; i <= QUEUED; i++)
        ids[i] = mcp_client_send_request(c, "tools/call",
                                         json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell",
                                                   "arguments", "command", "echo q", "workdir", wd,
                                                   "login", 0));
    /* requests are handled in order: once ping is answered all are queued */
    ping = mcp_client_call(c, "ping", NULL);
    json_decref(ping);
    int during = mcp_client_fd_count(c);
    /* the running call holds a few (pipes, its sockets, its cgroup's
     * cgroup.procs and cgroup.events files); the 40 queued ones none */
    assert_true(during - before < 16);
    tmpdir_write_file(marker, "", 0644);
    for (int i = 0; i <= QUEUED; i++) {
        json_t *id = json_integer(ids[i]);
        json_t *a = mcp_client_response(c, id, MCP_CLIENT_WAIT_MS);
        json_decref(id);
        assert_int_equal(mcp_world_exit(a), 0);
        json_decref(a);
    }
    mcp_world_assert_clean_exit(c);
    mcp_client_free(c);
    tmpdir_remove(wd);
    free(wd);
    free(marker);
    free(first);
}

static void
test_preserve_program_paths(void **state)
{
    char *sh = which("sh");
    char *touch = which("touch");
    /* only full paths match: touch, which the escalated sh starts, too */
    char *rules =
        mcp_world_fmt(SH_C_ALLOWED "prefix_rule(pattern=[\"%s\", \"-ec\"], decision=\"allow\")\n"
                                   "prefix_rule(pattern=[\"%s\"], decision=\"allow\")\n",
                      sh, touch);
    free(touch);
    struct mcp_world w;
    world_start_with(&w, rules, false, "--preserve-program-paths");
    /* the basename rule no longer matches: runs inside, cannot write */
    char *cmd = mcp_world_fmt("sh -c 'touch %s/base'; echo \"st=$?\"; sh -ec 'touch %s/full'; "
                              "echo \"st=$?\"",
                              w.outside, w.outside);
    json_t *a = run(&w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "st=1\nst=0\n");
    assert_false(mcp_world_exists(w.outside, "base"));
    assert_true(mcp_world_exists(w.outside, "full"));
    json_decref(a);
    free(cmd);
    free(rules);
    free(sh);
    mcp_world_end(&w);
}

/* ---- fds and pipelines ---- */

static void
test_pipeline_mixes_escalated_and_sandboxed(void **state)
{
    struct mcp_world w;
    world_start(&w, SH_C_ALLOWED, false);
    char *cmd = mcp_world_fmt(
        "sh -c 'echo one; echo two' | tr a-z A-Z | sh -c 'cat > %s/piped; cat %s/piped'"
        " | cat; echo \"status=${%s[*]}\"",
        w.outside, w.outside, mcp_world_zsh() ? "pipestatus" : "PIPESTATUS");
    json_t *a = run(&w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "ONE\nTWO\nstatus=0 0 0 0\n");
    char *piped = tmpdir_path(w.outside, "piped");
    char *data = tmpdir_read_file(piped, NULL);
    assert_string_equal(data, "ONE\nTWO\n");
    free(data);
    free(piped);
    json_decref(a);
    free(cmd);
    mcp_world_end(&w);
}

static void
test_extra_fds_reach_escalated_program(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"diff\"], decision=\"allow\")\n" SH_C_ALLOWED, false);
    char *cmd =
        mcp_world_fmt("diff <(echo a) <(echo a); echo \"same=$?\"; diff <(echo a) <(echo b);"
                      " echo \"differ=$?\"; sh -c 'echo three >&3; touch %s/esc' 3>log; cat log",
                      w.outside);
    json_t *a = run(&w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "same=0\n");
    mcp_world_assert_contains(mcp_world_output(a), "< a\n---\n> b\ndiffer=1\n");
    mcp_world_assert_contains(mcp_world_output(a), "three\n");
    assert_true(mcp_world_exists(w.outside, "esc"));
    if (w.audit) { /* EXECGATE_TEST_NO_AUDIT: none */
        char *log = tmpdir_read_file(w.audit, NULL);
        /* each shell names the pipes its own way, both the fds the
         * escalated diff was given */
        mcp_world_assert_contains(log, mcp_world_zsh() ? "\"argv\":[\"diff\",\"/proc/self/fd/"
                                                       : "\"argv\":[\"diff\",\"/dev/fd/63\","
                                                         "\"/dev/fd/62\"]");
        free(log);
    }
    json_decref(a);
    free(cmd);
    mcp_world_end(&w);
}

/* ---- attacks ---- */

static void
test_fake_program_in_workdir_not_escalated(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"git\"], decision=\"allow\")\n", false);
    char *fake = tmpdir_path(w.wd, "git");
    char *script = mcp_world_fmt("#!/bin/sh\necho fake-ran\ntouch %s/pwned\n", w.outside);
    tmpdir_write_file(fake, script, 0755);
    json_t *a = run(&w, "PATH=$PWD:$PATH; git status", NULL);
    mcp_world_assert_contains(mcp_world_output(a), "fake-ran");
    assert_false(mcp_world_exists(w.outside, "pwned"));
    json_decref(a);
    free(fake);
    free(script);
    mcp_world_end(&w);
}

static void
test_escalated_program_gets_only_forwarded_fds(void **state)
{
    /* an fd the server inherits (not close-on-exec) must not reach it */
    int leak = dup2(STDERR_FILENO, 77);
    assert_int_equal(leak, 77);
    struct mcp_world w;
    world_start(&w, SH_C_ALLOWED, false);
    close(leak);
    char *cmd = mcp_world_fmt("sh -c 'touch %s/esc; ls /proc/$$/fd; true'; echo; "
                              "sh -c 'ls /proc/$$/fd; true' 5</dev/null",
                              w.outside);
    json_t *a = run(&w, cmd, NULL);
    assert_true(mcp_world_exists(w.outside, "esc"));
    assert_string_equal(mcp_world_output(a), "0\n1\n2\n\n0\n1\n2\n5\n");
    json_decref(a);
    free(cmd);
    mcp_world_end(&w);
}

/* An escalated program gets the server's environment, not the request's:
 * loader hooks and any other variable the command set stay behind, unless
 * the user passes the name with --pass-env. */
static void
test_loader_env_dropped(void **state)
{
    const char *extra[] = {NULL, "--pass-env=KEEP"};
    const char *want[] = {"[][][][]\n", "[][][][yes]\n"};
    for (int i = 0; i < 2; i++) {
        struct mcp_world w;
        world_start_with(&w, SH_C_ALLOWED, false, extra[i]);
        char *cmd = mcp_world_fmt(
            "LD_PRELOAD=/nonexistent.so LD_LIBRARY_PATH=/x BASH_ENV=/x KEEP=yes "
            "sh -c 'echo \"[$LD_PRELOAD][$LD_LIBRARY_PATH][$BASH_ENV][$KEEP]\"; touch "
            "%s/esc'",
            w.outside);
        json_t *a = run(&w, cmd, NULL);
        mcp_world_assert_contains(mcp_world_output(a), want[i]);
        assert_true(mcp_world_exists(w.outside, "esc"));
        json_decref(a);
        free(cmd);
        mcp_world_end(&w);
    }
}

/* ---- rules that change while the server runs ---- */

/* Runs `rm victim` until its output says whether it was denied or
 * want_denied is reached, at most tries times (the server reloads a
 * settling moment after the write); returns whether the last was denied. */
static bool
rm_denied(struct mcp_world *w, bool want_denied, int tries)
{
    char *victim = tmpdir_path(w->wd, "victim");
    bool denied = false;
    for (int i = 0; i < tries; i++) {
        tmpdir_write_file(victim, "x", 0644);
        json_t *a = run(w, "rm victim; echo \"status=$?\"", NULL);
        denied = strstr(mcp_world_output(a), "Execution denied") != NULL;
        assert_true(denied == mcp_world_exists(w->wd, "victim"));
        json_decref(a);
        if (denied == want_denied)
            break;
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    free(victim);
    return denied;
}

/* A forbidden rule written while the server runs is in force for the next
 * execs; a broken file leaves the rules in force as they were (even the
 * valid change written with it waits); SIGHUP reloads and does not end
 * the server. */
static void
test_rules_reload_while_serving(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n", false);
    assert_false(rm_denied(&w, false, 1));
    mcp_world_rules(&w, "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n");
    assert_true(rm_denied(&w, true, 50));
    /* a broken second file with a valid change to the first: nothing of it */
    char *broken = tmpdir_path(w.rules, "broken.rules");
    tmpdir_write_file(broken, "prefix_rule(pattern=[], decision=\"allow\")\n", 0644);
    mcp_world_rules(&w, "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n");
    for (int i = 0; i < 5; i++)
        assert_true(rm_denied(&w, true, 1));
    /* the broken file goes: the valid change is in force */
    assert_int_equal(unlink(broken), 0);
    assert_false(rm_denied(&w, false, 50));
    /* SIGHUP reloads (the same rules) and the server goes on */
    assert_int_equal(kill(mcp_client_pid(w.c), SIGHUP), 0);
    assert_false(rm_denied(&w, false, 1));
    free(broken);
    mcp_world_end(&w);
}

/* 16 calls in flight, each deciding 40 execs, while the rules are
 * rewritten and reloaded (file events and SIGHUP) between two whole sets:
 * every call runs to its end and is answered, and the server ends cleanly
 * (no crash, no leak under LeakSanitizer). */
static void
test_reloads_during_calls(void **state)
{
    static const char *const sets[] = {
        "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n"
        "prefix_rule(pattern=[\"shred\"], decision=\"forbidden\")\n",
        "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n",
    };
    struct mcp_world w;
    world_start(&w, sets[0], false);
    enum { CALLS = 16 };
    long long ids[CALLS];
    for (int i = 0; i < CALLS; i++) {
        char *cmd = mcp_world_fmt("for j in $(seq 20); do touch r%d_$j; rm r%d_$j 2>/dev/null; "
                                  "done; echo done",
                                  i, i);
        ids[i] = mcp_client_send_request(w.c, "tools/call",
                                         json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell",
                                                   "arguments", "command", cmd, "workdir", w.wd,
                                                   "login", 0));
        free(cmd);
    }
    for (int k = 0; k < 20; k++) {
        mcp_world_rules(&w, sets[k % 2]);
        if (k % 5 == 4)
            assert_int_equal(kill(mcp_client_pid(w.c), SIGHUP), 0);
        struct timespec pause = {0, 30 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    for (int i = 0; i < CALLS; i++) {
        json_t *id = json_integer(ids[i]);
        json_t *a = mcp_client_response(w.c, id, MCP_CLIENT_WAIT_MS);
        assert_non_null(a);
        mcp_world_assert_contains(mcp_world_output(a), "done\n");
        json_decref(a);
        json_decref(id);
    }
    mcp_world_end(&w);
}

/* ---- what the client is told (logging) ---- */

/* The first record in logs at level whose data.event is event, or NULL. */
static const json_t *
find_log(const json_t *logs, const char *level, const char *event)
{
    size_t i;
    const json_t *p;
    json_array_foreach(logs, i, p)
    {
        const json_t *data = json_object_get(p, "data");
        if (strcmp(json_string_value(json_object_get(p, "level")), level) == 0 &&
            strcmp(json_string_value(json_object_get(data, "event")), event) == 0)
            return p;
    }
    return NULL;
}

/* An allowed program kept in the sandbox is a warning record too, with
 * the reason, not a debug line. */
static void
test_client_log_kept_inside_is_a_warning(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", false);
    json_t *r = mcp_client_call(w.c, "logging/setLevel", json_pack("{s:s}", "level", "warning"));
    assert_non_null(json_object_get(r, "result"));
    json_decref(r);
    struct mcp_answers ans = {.logs = json_array()};
    json_t *a = run(&w, "git init -q sub && cd sub && git status >/dev/null", &ans);
    const json_t *rec = find_log(ans.logs, "warning", "exec");
    assert_non_null(rec);
    const json_t *data = json_object_get(rec, "data");
    assert_string_equal(json_string_value(json_object_get(data, "decision")), "run");
    mcp_world_assert_contains(json_string_value(json_object_get(data, "reason")),
                              "git repository at");
    json_decref(a);
    json_decref(ans.logs);
    mcp_world_end(&w);
    (void)state;
}

/* logging/setLevel info, then a forbidden exec: one warning record with
 * the call's request id, the program and the matched rule; an escalation
 * is an info record; a broken rules file an error record naming it. */
static void
test_client_log_records(void **state)
{
    struct mcp_world w;
    world_start(&w,
                "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n"
                "prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n",
                false);
    json_t *r = mcp_client_call(w.c, "logging/setLevel", json_pack("{s:s}", "level", "info"));
    assert_non_null(json_object_get(r, "result"));
    json_decref(r);
    r = mcp_client_call(w.c, "logging/setLevel", json_pack("{s:s}", "level", "loud"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "error"), "code")),
                     -32602);
    json_decref(r);
    struct mcp_answers ans = {.logs = json_array()};
    char *cmd = mcp_world_fmt("rm nothing; touch %s/t", w.outside);
    json_t *a = run(&w, cmd, &ans);
    const json_t *deny = find_log(ans.logs, "warning", "exec");
    assert_non_null(deny);
    const json_t *data = json_object_get(deny, "data");
    assert_true(json_equal(json_object_get(data, "requestId"), json_object_get(a, "id")));
    json_decref(a);
    mcp_world_assert_contains(json_string_value(json_object_get(data, "program")), "/rm");
    assert_string_equal(json_string_value(json_object_get(data, "decision")), "deny");
    assert_true(json_array_size(json_object_get(data, "matched_rules")) >= 1);
    assert_non_null(find_log(ans.logs, "info", "exec")); /* the escalated touch */
    assert_null(find_log(ans.logs, "debug", "exec"));    /* below the level asked for */
    /* a broken rules file: an error record naming it, whatever the level */
    char *broken = tmpdir_path(w.rules, "broken.rules");
    tmpdir_write_file(broken, "prefix_rule(pattern=[], decision=\"allow\")\n", 0644);
    json_t *note = mcp_client_notification(w.c, "notifications/message", MCP_CLIENT_WAIT_MS);
    assert_non_null(note);
    const json_t *params = json_object_get(note, "params");
    assert_string_equal(json_string_value(json_object_get(params, "level")), "error");
    mcp_world_assert_contains(
        json_string_value(json_object_get(json_object_get(params, "data"), "error")),
        "broken.rules:1:1:");
    json_decref(note);
    json_decref(ans.logs);
    free(broken);
    free(cmd);
    mcp_world_end(&w);
}

/* Raw clients on the call's socket (fd 4, inherited by everything in the
 * sandbox): garbage datagrams, a HELLO with a pipe, an oversized frame, fds
 * on a REQUEST, a bad workdir, a client that dies mid-handshake; REQUEST
 * datagrams without their fd, with a pipe, with two fds, above
 * ESC_MAX_DGRAM, followed by a second REQUEST.  The
 * server must go on serving the same call and the next. */
static const char attack_py[] =
    "import os, socket, struct, array\n"
    "s = socket.socket(fileno=int(os.environ['CODEX_ESCALATE_SOCKET']))\n"
    "def frame(t, body=b''): return struct.pack('<IHH', len(body), 2, t) + body\n"
    "def st(b): return struct.pack('<I', len(b)) + b\n"
    "def hello():\n"
    "    a, b = socket.socketpair()\n"
    "    s.sendmsg([frame(1)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', "
    "[b.fileno()]))])\n"
    "    b.close(); return a\n"
    "def req(wd=b'/'):\n"
    "    return frame(2, st(b'/bin/true') + struct.pack('<I', 1) + st(b'true') + st(wd) + "
    "struct.pack('<I', 0))\n"
    "s.send(b'garbage')\n"
    "s.send(frame(1))\n"
    "r, w = os.pipe()\n"
    "s.sendmsg([frame(1)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [r]))])\n"
    "a = hello(); a.sendall(struct.pack('<IHH', 0x7fffffff, 2, 2)); print('big', a.recv(100)); "
    "a.close()\n"
    "a = hello(); a.sendall(b'\\x01\\x02\\x03'); a.close()\n"
    "a = hello(); a.sendall(req(b'/no/such/dir')); m = a.recv(200); print('baddir', m[8:]); "
    "a.close()\n"
    "a = hello(); a.sendall(req()); print('run', a.recv(100)); a.close()\n"
    "a = hello(); a.sendmsg([req()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', "
    "[r]))]); print('fds', a.recv(100)); a.close()\n"
    "def esc_req(cmd):\n"
    "    return frame(2, st(b'/bin/sh') + struct.pack('<I', 3) + st(b'sh') + st(b'-c') + st(cmd) "
    "+ st(os.getcwd().encode()) + struct.pack('<I', 0))\n"
    "a = hello(); a.sendall(esc_req(os.environ['MARK'].encode())); m = a.recv(8); "
    "a.sendall(frame(6, struct.pack('<II', 1, 1))); print('esc', m, 'count', a.recv(100)); "
    "a.close()\n"
    "def open_req(fr, fds=None):\n"
    "    a, b = socket.socketpair()\n"
    "    fds = [b.fileno()] if fds is None else fds\n"
    "    s.sendmsg([fr], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', fds))] "
    "if fds else [])\n"
    "    b.close(); return a\n"
    "a = open_req(req(b'/no/such/dir')); print('dbaddir', a.recv(200)[8:]); a.close()\n"
    "a = open_req(req()); print('drun', a.recv(100)); a.close()\n"
    "open_req(req(), []); open_req(req(), [r])\n"
    "c, d = socket.socketpair(); a = open_req(req(), [d.fileno(), d.fileno()]); d.close(); "
    "print('dtwo', c.recv(100)); c.close()\n"
    "big = frame(2, st(b'/bin/true') + struct.pack('<I', 1) + st(b'true') + st(b'/') + "
    "struct.pack('<I', 1) + st(b'A=' + b'x' * 70000))\n"
    "a = open_req(big); print('dbig', a.recv(100)); a.close()\n"
    "a = open_req(esc_req(os.environ['MARK'].encode())); m = a.recv(8); "
    "a.sendall(frame(6, struct.pack('<II', 1, 1))); print('desc', m, 'count', a.recv(100)); "
    "a.close()\n"
    "a = open_req(esc_req(os.environ['MARK'].encode())); m = a.recv(8); a.sendall(req()); "
    "print('dagain', m, 'then', a.recv(100)); a.close()\n"
    "for i in range(20): hello()\n"
    "print('attacks done')\n";

static void
test_raw_clients_leave_server_serving(void **state)
{
    struct mcp_world w;
    world_start(&w, SH_C_ALLOWED, false);
    char *py = tmpdir_path(w.wd, "attack.py");
    tmpdir_write_file(py, attack_py, 0644);
    char *cmd =
        mcp_world_fmt("MARK='touch %s/mismatch' /usr/bin/python3 attack.py; sh -c 'touch %s/after';"
                      " echo \"status=$?\"",
                      w.outside, w.outside);
    json_t *a = run(&w, cmd, NULL);
    const char *out = mcp_world_output(a);
    mcp_world_assert_contains(out, "big b''");  /* oversized: session closed, no answer */
    mcp_world_assert_contains(out, "baddir b"); /* a missing workdir is denied */
    mcp_world_assert_contains(out, "not an existing directory");
    mcp_world_assert_contains(out, "run b'\\x00\\x00\\x00\\x00\\x02\\x00\\x03\\x00'"); /* RUN */
    mcp_world_assert_contains(out, "fds b''"); /* fds on a REQUEST end the session */
    /* ESCALATE, then an FDS frame announcing 1 fd with none attached */
    mcp_world_assert_contains(out, "esc b'\\x00\\x00\\x00\\x00\\x02\\x00\\x04\\x00' count b''");
    /* the same through REQUEST datagrams (protocol 2) */
    mcp_world_assert_contains(out, "dbaddir b\"2\\x00\\x00\\x00the request's workdir");
    mcp_world_assert_contains(out, "drun b'\\x00\\x00\\x00\\x00\\x02\\x00\\x03\\x00'");
    mcp_world_assert_contains(out, "dtwo b''"); /* two fds: dropped, never answered */
    mcp_world_assert_contains(out, "dbig b''"); /* above ESC_MAX_DGRAM: dropped */
    mcp_world_assert_contains(out, "desc b'\\x00\\x00\\x00\\x00\\x02\\x00\\x04\\x00' count b''");
    /* a second REQUEST on the stream after the datagram one ends the session */
    mcp_world_assert_contains(out, "dagain b'\\x00\\x00\\x00\\x00\\x02\\x00\\x04\\x00' then b''");
    assert_false(mcp_world_exists(w.outside, "mismatch"));
    mcp_world_assert_contains(out, "attacks done");
    mcp_world_assert_contains(out, "status=0\n");
    assert_true(mcp_world_exists(w.outside, "after"));
    json_decref(a);
    free(cmd);
    /* and the next call */
    cmd = mcp_world_fmt("sh -c 'touch %s/next'", w.outside);
    a = run(&w, cmd, NULL);
    assert_int_equal(mcp_world_exit(a), 0);
    assert_true(mcp_world_exists(w.outside, "next"));
    json_decref(a);
    free(cmd);
    free(py);
    mcp_world_end(&w);
}

/* A sandboxed command that opens 200 exec sessions, each declaring a
 * frame of almost ESC_MAX_BODY and sending 3 MiB of it, then waits. */
static const char flood_py[] =
    "import os, socket, struct, array, time\n"
    "s = socket.socket(fileno=int(os.environ['CODEX_ESCALATE_SOCKET']))\n"
    "def hello():\n"
    "    a, b = socket.socketpair()\n"
    "    s.sendmsg([struct.pack('<IHH', 0, 2, 1)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, "
    "array.array('i', [b.fileno()]))])\n"
    "    b.close(); return a\n"
    "held, cut = [], 0\n"
    "for i in range(200):\n"
    "    a = hello(); a.settimeout(5)\n"
    "    try: a.sendall(struct.pack('<IHH', 4 * 1024 * 1024 - 1, 2, 2) + b'x' * (3 << 20))\n"
    "    except OSError: cut += 1\n"
    "    held.append(a)\n"
    "open('flooded', 'w').write(str(cut))\n"
    "while not os.path.exists('done'): time.sleep(0.05)\n"
    "print('cut', cut)\n";

/* What a call's exec sessions may make the server buffer is bounded
 * (ESCALATION_MAX_BUFFERED), however many it opens: sessions past it are
 * ended, and the server's memory does not grow with them. */
static void
test_session_flood_is_bounded(void **state)
{
    struct mcp_world w;
    /* freed buffers must leave the resident set: no AddressSanitizer
     * quarantine for this server (leaks are still reported) */
    const struct mcp_world_options o = {
        .server = server_path,
        .client_name = "escalation-tests",
        .env = "ASAN_OPTIONS=quarantine_size_mb=0:halt_on_error=1:abort_on_error=1"};
    mcp_world_start(&w, "prefix_rule(pattern=[\"true\"], decision=\"allow\")\n", &o);
    char *py = tmpdir_path(w.wd, "flood.py");
    tmpdir_write_file(py, flood_py, 0644);
    long before = proc_rss_kib(mcp_client_pid(w.c));
    long long id = mcp_client_send_request(
        w.c, "tools/call",
        json_pack("{s:s, s:{s:s, s:s, s:b, s:i}}", "name", "shell", "arguments", "command",
                  "/usr/bin/python3 flood.py", "workdir", w.wd, "login", 0, "timeout_ms", 120000));
    bool flooded = false;
    for (int i = 0; i < 6000 && !flooded; i++) {
        flooded = mcp_world_exists(w.wd, "flooded");
        struct timespec ts = {0, 10 * 1000 * 1000};
        if (!flooded)
            nanosleep(&ts, NULL);
    }
    assert_true(flooded);
    long after = proc_rss_kib(mcp_client_pid(w.c));
    char *done = tmpdir_path(w.wd, "done");
    tmpdir_write_file(done, "", 0644);
    json_t *idj = json_integer(id);
    json_t *a = mcp_client_response(w.c, idj, MCP_CLIENT_WAIT_MS);
    assert_non_null(a);
    const char *out = mcp_world_output(a);
    int cut = 0;
    const char *at = strstr(out, "cut ");
    assert_non_null(at);
    cut = atoi(at + 4);
    fprintf(stderr, "rss %ld -> %ld KiB, %d of 200 sessions cut\n", before, after, cut);
    /* 200 x 3 MiB would be 600 MiB: at most the cap (and its slack) stays */
    assert_true(after - before < 96 * 1024);
    assert_true(cut >= 150);
    json_decref(a);
    json_decref(idj);
    free(done);
    free(py);
    mcp_world_end(&w);
}

/* ---- always allow ---- */

#define GIT_INIT_PROMPT "prefix_rule(pattern=[\"git\", \"init\"], decision=\"prompt\")\n"
/* what Codex writes for an accepted ["git", "init"] */
#define GIT_INIT_ALLOW "prefix_rule(pattern=[\"git\", \"init\"], decision=\"allow\")\n"

/* The rules directory's default.rules, or NULL when there is none. */
static char *
answers_file(const struct mcp_world *w)
{
    char *path = tmpdir_path(w->rules, "default.rules");
    char *text = access(path, F_OK) == 0 ? tmpdir_read_file(path, NULL) : NULL;
    free(path);
    return text;
}

/* Runs `git init OUTSIDE/name` (escalated, it can write there; in the
 * sandbox it cannot) and says whether the repository was made. */
static bool
git_init_outside(struct mcp_world *w, const char *name, struct mcp_answers *ans)
{
    char *cmd = mcp_world_fmt("git init %s/%s >/dev/null; echo \"status=$?\"", w->outside, name);
    json_t *a = run(w, cmd, ans);
    char *head = mcp_world_fmt("%s/.git/HEAD", name);
    bool made = mcp_world_exists(w->outside, head);
    if (made)
        mcp_world_assert_contains(mcp_world_output(a), "status=0\n");
    json_decref(a);
    free(cmd);
    free(head);
    return made;
}

/* Accepting "always": the exec runs escalated, default.rules gets the line
 * Codex writes, and neither this server nor a new one reading the same
 * rules asks about that prefix again. */
static void
test_always_allow_writes_the_rule_and_is_not_asked_again(void **state)
{
    struct mcp_world w;
    world_start(&w, GIT_INIT_PROMPT, true);
    struct mcp_answers ans = {.action = "accept", .decision = "approved_execpolicy_amendment"};
    assert_true(git_init_outside(&w, "r1", &ans));
    assert_int_equal(ans.asked, 1);
    assert_int_equal(ans.offered_always, 1);
    /* the prefix stops at the first argument that is a path */
    assert_string_equal(ans.proposed, "[\"git\",\"init\"]");
    assert_string_equal(ans.always_title,
                        "Yes, and always allow commands starting with `git init`");
    char *sentence = mcp_world_fmt("\"Yes, and always allow commands starting with `git init`\" "
                                   "adds an allow rule to %s/default.rules: such commands run from "
                                   "now on without asking.",
                                   w.rules);
    assert_string_equal(ans.last_always, sentence);
    char *text = answers_file(&w);
    assert_non_null(text);
    assert_string_equal(text, GIT_INIT_ALLOW);
    free(text);
    /* the same prefix again, other arguments: no question (NULL answers) */
    assert_true(git_init_outside(&w, "r2", NULL));
    assert_true(git_init_outside(&w, "r3", NULL));
    mcp_world_end(&w);
    free(ans.last_message);

    /* a new server reading the same rules does not ask either */
    const struct mcp_world_options o = {.server = server_path,
                                        .client_name = "escalation-tests",
                                        .elicitation = true,
                                        .default_rules = GIT_INIT_ALLOW};
    mcp_world_start(&w, GIT_INIT_PROMPT, &o);
    assert_true(git_init_outside(&w, "r4", NULL));
    mcp_world_end(&w);
    free(sentence);
}

/* Codex's own serialised answer is taken; a prefix that does not fit the
 * command, or is broader than the one proposed, is asked again (and
 * nothing is written for it). */
static void
test_always_allow_codex_answer_and_unfit_prefixes(void **state)
{
    struct mcp_world w;
    world_start(&w, GIT_INIT_PROMPT, true);
    /* not a prefix of the command: asked again, then approved this once */
    struct mcp_answers ans = {.action = "accept",
                              .decision = "approved",
                              .first_decision_json =
                                  "{\"approved_execpolicy_amendment\": "
                                  "{\"proposed_execpolicy_amendment\": [\"git\", \"clone\"]}}"};
    assert_true(git_init_outside(&w, "r1", &ans));
    assert_int_equal(ans.asked, 2);
    mcp_world_assert_contains(ans.last_message, "Asked again: the prefix the answer names is not "
                                                "a prefix of the command being approved. Allow");
    assert_null(answers_file(&w));
    free(ans.last_message);
    /* broader than proposed: asked again */
    struct mcp_answers broad = {.action = "accept",
                                .decision = "denied",
                                .first_decision_json =
                                    "{\"approved_execpolicy_amendment\": "
                                    "{\"proposed_execpolicy_amendment\": [\"git\"]}}"};
    assert_false(git_init_outside(&w, "r2", &broad));
    assert_int_equal(broad.asked, 2);
    mcp_world_assert_contains(broad.last_message, "is broader than the one proposed");
    assert_null(answers_file(&w));
    free(broad.last_message);
    /* Codex's form with the proposed prefix: written as Codex writes it */
    struct mcp_answers codex = {.action = "accept",
                                .first_decision_json =
                                    "{\"approved_execpolicy_amendment\": "
                                    "{\"proposed_execpolicy_amendment\": [\"git\", \"init\"]}}"};
    assert_true(git_init_outside(&w, "r4", &codex));
    assert_int_equal(codex.asked, 1);
    char *text = answers_file(&w);
    assert_non_null(text);
    assert_string_equal(text, GIT_INIT_ALLOW);
    free(text);
    free(codex.last_message);
    mcp_world_end(&w);
}

/* "Always allow" for rm covers the command line the person saw: the same
 * line again runs without a question, one that names more files is
 * asked about. */
static void
test_always_allow_rm_covers_only_its_line(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"rm\"], decision=\"prompt\")\n", true);
    struct mcp_answers ans = {.action = "accept", .decision = "approved_execpolicy_amendment"};
    json_t *a = run(&w, "mkdir b && rm -r ./b; echo \"status=$?\"", &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(mcp_world_output(a), "status=0");
    json_decref(a);
    free(ans.last_message);
    char *text = answers_file(&w);
    assert_non_null(text);
    mcp_world_assert_contains(text, "prefix_rule(pattern=[\"rm\", \"-r\", \"./b\"], "
                                    "decision=\"allow\")");
    free(text);
    /* the same line: no question (NULL answers) */
    a = run(&w, "mkdir b && rm -r ./b; echo \"status=$?\"", NULL);
    mcp_world_assert_contains(mcp_world_output(a), "status=0");
    json_decref(a);
    /* more files after it: asked, and declined, they stay */
    struct mcp_answers no = {.action = "decline"};
    char *keep = tmpdir_path(w.outside, "keep");
    assert_int_equal(mkdir(keep, 0755), 0);
    free(keep);
    char *cmd = mcp_world_fmt("mkdir b && rm -r ./b %s/keep; echo \"status=$?\"", w.outside);
    a = run(&w, cmd, &no);
    assert_int_equal(no.asked, 1);
    mcp_world_assert_contains(no.last_message, "always allow");
    assert_true(mcp_world_exists(w.outside, "keep"));
    json_decref(a);
    free(cmd);
    free(no.last_message);
    mcp_world_end(&w);
    (void)state;
}

/* For a program whose arguments name the files it changes, "always"
 * proposes the whole command line the person saw; for awk, whose program
 * text is code, nothing. */
static void
test_always_allow_proposals(void **state)
{
    struct mcp_world w;
    world_start(&w,
                "prefix_rule(pattern=[\"rm\"], decision=\"prompt\")\n"
                "prefix_rule(pattern=[\"awk\"], decision=\"prompt\")\n",
                true);
    struct mcp_answers ans = {.action = "accept", .decision = "approved"};
    json_t *a = run(&w, "mkdir b && rm -r ./b; echo \"status=$?\"", &ans);
    assert_int_equal(ans.asked, 1);
    assert_int_equal(ans.offered_always, 1);
    assert_string_equal(ans.proposed, "[\"rm\",\"-r\",\"./b\"]");
    mcp_world_assert_contains(ans.last_always, "always allow commands starting with `rm -r ./b`");
    mcp_world_assert_contains(mcp_world_output(a), "status=0");
    json_decref(a);
    free(ans.last_message);
    struct mcp_answers awk = {.action = "accept", .decision = "approved"};
    a = run(&w, "awk 'BEGIN{print 1}'; echo \"status=$?\"", &awk);
    assert_int_equal(awk.asked, 1);
    assert_int_equal(awk.offered_always, 0);
    assert_string_equal(awk.proposed, "");
    json_decref(a);
    free(awk.last_message);
    assert_null(answers_file(&w));
    mcp_world_end(&w);
    (void)state;
}

/* "Always" is offered only where an allow rule can settle the question
 * for good: not for a prefix that allows any code (sh -c), not when a
 * longer prompt rule would still ask; an "always" answer there is asked
 * again, and after three unfit answers the exec is declined. */
static void
test_always_allow_not_offered_where_it_cannot_settle(void **state)
{
    struct mcp_world w;
    world_start(&w,
                "prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"prompt\")\n"
                "prefix_rule(pattern=[\"git\", \"init\", \"-q\", \"sub/r\"], "
                "decision=\"prompt\")\n",
                true);
    struct mcp_answers ans = {.action = "accept", .decision = "approved_execpolicy_amendment"};
    char *cmd = mcp_world_fmt("sh -c 'touch %s/s'; echo \"status=$?\"", w.outside);
    json_t *a = run(&w, cmd, &ans);
    /* asked, then asked again twice (always is not offered), then declined */
    assert_int_equal(ans.asked, 3);
    assert_int_equal(ans.offered_always, 0);
    mcp_world_assert_contains(ans.last_message, "Asked again: always allowing is not offered");
    mcp_world_assert_contains(mcp_world_output(a),
                              "Execution denied: The answer could not be taken: always allowing "
                              "is not offered for this command");
    assert_false(mcp_world_exists(w.outside, "s"));
    assert_null(answers_file(&w));
    json_decref(a);
    free(cmd);
    free(ans.last_message);
    /* the rule is longer than the proposal (which stops at the path) */
    struct mcp_answers once = {.action = "accept", .decision = "approved"};
    a = run(&w, "git init -q sub/r; echo \"status=$?\"", &once);
    assert_int_equal(once.asked, 1);
    assert_int_equal(once.offered_always, 0);
    json_decref(a);
    free(once.last_message);
    mcp_world_end(&w);
}

/* A call cancelled while its question is open: the client is told to
 * close the question (notifications/cancelled naming the elicitation). */
static void
test_cancel_closes_the_question(void **state)
{
    struct mcp_world w;
    world_start(&w, GIT_INIT_PROMPT, true);
    long long id =
        mcp_client_send_request(w.c, "tools/call",
                                json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                          "command", "git init .", "workdir", w.wd, "login", 0));
    json_t *question = mcp_client_next_named(w.c, "elicitation/create", MCP_CLIENT_WAIT_MS);
    assert_non_null(question);
    json_int_t asked = json_integer_value(json_object_get(question, "id"));
    json_decref(question);
    mcp_client_send(w.c,
                    json_pack("{s:s, s:s, s:{s:I}}", "jsonrpc", "2.0", "method",
                              "notifications/cancelled", "params", "requestId", (json_int_t)id));
    json_t *closed = mcp_client_notification(w.c, "notifications/cancelled", MCP_CLIENT_WAIT_MS);
    assert_non_null(closed);
    const json_t *params = json_object_get(closed, "params");
    assert_int_equal(json_integer_value(json_object_get(params, "requestId")), asked);
    assert_non_null(json_string_value(json_object_get(params, "reason")));
    json_decref(closed);
    assert_false(mcp_world_exists(w.wd, ".git/HEAD"));
    mcp_world_end(&w);
}

/* Many execs asking at once: the client holds one question of the call
 * at a time; the next comes only once it is answered. */
static void
test_one_question_at_a_time(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"true\"], decision=\"prompt\")\n", true);
    long long id = mcp_client_send_request(
        w.c, "tools/call",
        json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments", "command",
                  "for i in $(seq 20); do /bin/true $i & done; wait; echo done", "workdir", w.wd,
                  "login", 0));
    int asked = 0;
    json_t *answer = NULL;
    while (!answer) {
        json_t *m = mcp_client_next(w.c, MCP_CLIENT_WAIT_MS);
        assert_non_null(m);
        const char *method = json_string_value(json_object_get(m, "method"));
        const json_t *mid = json_object_get(m, "id");
        if (!method && json_integer_value(mid) == id) {
            answer = m;
            continue;
        }
        if (!method || strcmp(method, "elicitation/create") != 0) {
            json_decref(m);
            continue;
        }
        asked++;
        /* nothing else is asked while this one is open */
        json_t *more = mcp_client_next(w.c, 200);
        if (more) {
            const char *other = json_string_value(json_object_get(more, "method"));
            assert_false(other && strcmp(other, "elicitation/create") == 0);
            json_decref(more);
        }
        mcp_client_send(w.c,
                        json_pack("{s:s, s:O, s:{s:s, s:{s:s}}}", "jsonrpc", "2.0", "id", mid,
                                  "result", "action", "accept", "content", "decision", "denied"));
        json_decref(m);
    }
    mcp_world_assert_contains(mcp_world_output(answer), "done\n");
    assert_int_equal(asked, 20);
    json_decref(answer);
    mcp_world_end(&w);
}

int
main(void)
{
    if (server_suite_server(&server_path) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allow_escalates_with_output_and_status),
        cmocka_unit_test(test_programs_start_with_default_signals),
        cmocka_unit_test(test_in_shell_and_wrapper_exec_decide_alike),
        cmocka_unit_test(test_forbidden_denies),
        cmocka_unit_test(test_forbidden_through_shell_constructs),
        cmocka_unit_test(test_subcommand_decline_marks_call_denied),
        cmocka_unit_test(test_the_chosen_shell_runs),
        cmocka_unit_test(test_prompt_accept_git_init),
        cmocka_unit_test(test_prompt_decline_and_cancel),
        cmocka_unit_test(test_question_shows_justification_and_returns_reason),
        cmocka_unit_test(test_leave_sandbox_question_says_login),
        cmocka_unit_test(test_leave_sandbox_login_with_planted_profile),
        cmocka_unit_test(test_leave_sandbox_approved_runs_outside_rules_still_hold),
        cmocka_unit_test(test_leave_sandbox_declined_refused_unanswerable),
        cmocka_unit_test(test_leave_sandbox_cancelled_while_asked),
        cmocka_unit_test(test_prompt_without_elicitation_capability),
        cmocka_unit_test(test_approved_for_session_asks_once),
        cmocka_unit_test(test_abort_stops_the_call),
        cmocka_unit_test(test_unknown_decision_is_refused),
        cmocka_unit_test(test_waiting_for_a_person_does_not_count_toward_the_timeout),
        cmocka_unit_test(test_forced_rm_without_rule_prompts_then_runs_inside),
        cmocka_unit_test(test_timeout_kills_escalated_program),
        cmocka_unit_test(test_signals_reach_escalated_program),
        cmocka_unit_test(test_host_executable_limits_fallback),
        cmocka_unit_test(test_bad_rules_refuse_start),
        cmocka_unit_test(test_cancel_kills_escalated_program),
        cmocka_unit_test(test_killed_call_leaves_no_placeholder),
        cmocka_unit_test(test_queued_calls_hold_no_sockets),
        cmocka_unit_test(test_preserve_program_paths),
        cmocka_unit_test(test_pipeline_mixes_escalated_and_sandboxed),
        cmocka_unit_test(test_extra_fds_reach_escalated_program),
        cmocka_unit_test(test_fake_program_in_workdir_not_escalated),
        cmocka_unit_test(test_escalated_program_gets_only_forwarded_fds),
        cmocka_unit_test(test_loader_env_dropped),
        cmocka_unit_test(test_raw_clients_leave_server_serving),
        cmocka_unit_test(test_session_flood_is_bounded),
        cmocka_unit_test(test_rules_reload_while_serving),
        cmocka_unit_test(test_client_log_records),
        cmocka_unit_test(test_reloads_during_calls),
        cmocka_unit_test(test_always_allow_writes_the_rule_and_is_not_asked_again),
        cmocka_unit_test(test_always_allow_codex_answer_and_unfit_prefixes),
        cmocka_unit_test(test_always_allow_proposals),
        cmocka_unit_test(test_client_log_kept_inside_is_a_warning),
        cmocka_unit_test(test_always_allow_rm_covers_only_its_line),
        cmocka_unit_test(test_always_allow_not_offered_where_it_cannot_settle),
        cmocka_unit_test(test_cancel_closes_the_question),
        cmocka_unit_test(test_one_question_at_a_time),
        cmocka_unit_test(test_unanswered_question_stops_the_clock_for_a_while_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
