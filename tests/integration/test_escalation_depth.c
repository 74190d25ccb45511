/*
 * What a program run outside the sandbox may start in turn, through the
 * whole product (the real server over stdio, the patched shell in the real
 * sandbox, the escalated programs under the exec filter): a child runs
 * only when a rule names it or a person approved it, at any depth; and
 * the names an exec goes by are read in the view of the process that
 * execs (/proc/self) and through the dynamic loader.
 *
 * Where something ran is proved by what it could write: the world's
 * "outside" directory (under /var/tmp) is writable only outside the
 * sandbox.  Each attack asserts that nothing appeared there, or that a
 * victim file survived, and says what the person or the program's stderr
 * was told, word for word where the text is the interface.
 *
 * Variants (tests/integration/meson.build): as the invoking user and, when
 * root, as an unprivileged test user running the server
 * (EXECGATE_TEST_UNPRIVILEGED=1); the patched zsh (EXECGATE_TEST_SHELL);
 * shell enforcement (EXECGATE_TEST_EXTRA=--exec-enforcement=shell), where
 * escalated programs still start under the exec filter.
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* examples/default.rules (EXECGATE_TEST_DEFAULT_RULES) */
static const char *default_rules;

#define MAKE_ALLOWED "prefix_rule(pattern=[\"make\"], decision=\"allow\")\n"
#define RM_FORBIDDEN                                                                               \
    "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", justification=\"rm is not for "         \
    "agents\")\n"

static struct mcp_world *
world_start_extra(const char *rules, bool elicitation, const char *extra)
{
    const struct mcp_world_options o = {.elicitation = elicitation, .extra = extra};
    return attack_world_start(rules, &o);
}

/* path with text, owned by the server's user. */
static void
write_owned(const char *dir, const char *name, const char *text)
{
    char *path = tmpdir_path(dir, name);
    tmpdir_write_file(path, text, 0644);
    attack_own(path);
    free(path);
}

/* A Makefile in the workdir (the command's to write) whose one recipe is
 * recipe; `make` is allowed by the rules, so it runs outside. */
static void
makefile(struct mcp_world *w, const char *recipe)
{
    char *text = mcp_world_fmt("all:\n\t%s\n", recipe);
    write_owned(w->wd, "Makefile", text);
    free(text);
}

/* ---- a child no rule names ---- */

/* The recipe is code the command planted: with a client that can be
 * asked, the person sees the real command, its parent and the parent's
 * rule; declined, nothing runs outside.  Before, it ran without a word. */
static void
test_unnamed_child_is_asked(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED, true);
    char *recipe = mcp_world_fmt("touch %s/made; false", w->outside);
    makefile(w, recipe);
    struct mcp_answers ans = {.action = "decline"};
    json_t *a = attack_run(w, "make; echo \"status=$?\"", &ans);
    attack_assert_not_outside(w, "made", a);
    assert_int_equal(ans.asked, 1);
    char *want = mcp_world_fmt("`make` (allowed by test.rules:1) wants to start `/usr/bin/dash -c "
                               "'%s'` outside the sandbox, in `%s`. Allow it?",
                               recipe, w->wd);
    assert_string_equal(ans.last_message, want);
    mcp_world_assert_contains(mcp_world_output(a), "status=2");
    free(want);
    free(ans.last_message);
    json_decref(a);
    free(recipe);
    attack_world_end(w);
}

/* The same without a client that can be asked: refused, and the child's
 * stderr gets one line naming it, its parent and the rule that would
 * allow it. */
static void
test_unnamed_child_is_refused_without_elicitation(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED, false);
    char *recipe = mcp_world_fmt("touch %s/made; false", w->outside);
    makefile(w, recipe);
    json_t *a = attack_run(w, "make; echo \"status=$?\"", NULL);
    attack_assert_not_outside(w, "made", a);
    char *want = mcp_world_fmt(
        "execgate: refused `sh -c %s`: started outside the sandbox by `make` (allowed by "
        "test.rules:1), and no rule names it; no person could be asked. This rule would allow "
        "it: prefix_rule(pattern=[\"sh\", \"-c\", \"%s\"], decision=\"allow\")\n",
        recipe, recipe);
    mcp_world_assert_contains(mcp_world_output(a), want);
    mcp_world_assert_contains(mcp_world_output(a), "status=2");
    free(want);
    json_decref(a);
    free(recipe);
    attack_world_end(w);
}

/* A recipe with a quote goes through /bin/sh; dash running one plain
 * command is let through, and the command it starts is what is refused. */
static void
test_plain_shell_passes_its_command_on(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED, false);
    char *recipe = mcp_world_fmt("touch '%s/made'", w->outside);
    makefile(w, recipe);
    json_t *a = attack_run(w, "make; echo \"status=$?\"", NULL);
    attack_assert_not_outside(w, "made", a);
    char *want = mcp_world_fmt("execgate: refused `touch %s/made`: started outside the sandbox by "
                               "`make` (allowed by test.rules:1), and no rule names it",
                               w->outside);
    mcp_world_assert_contains(mcp_world_output(a), want);
    free(want);
    json_decref(a);
    free(recipe);
    attack_world_end(w);
}

/* Shells that read startup files a planted environment can name (bash
 * reads $BASH_ENV), and dash scripts that are more than one plain command
 * (a builtin that runs code, a second command), are not let through. */
static void
test_other_shells_and_scripts_are_asked(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED, false);
    char *bash_mk = mcp_world_fmt("SHELL = /bin/bash\nexport BASH_ENV = %s/env.sh\n"
                                  "all:\n\ttrue 'x'\n",
                                  w->wd);
    write_owned(w->wd, "bash.mk", bash_mk);
    char *dash_mk = mcp_world_fmt("all:\n\t-eval 'touch %s/eval'\n\t-. ./dot.sh\n"
                                  "\t-true 'x'; touch %s/second\n",
                                  w->outside, w->outside);
    write_owned(w->wd, "dash.mk", dash_mk);
    char *env = mcp_world_fmt("echo planted > %s/env\n", w->outside);
    write_owned(w->wd, "env.sh", env);
    write_owned(w->wd, "dot.sh", env);
    json_t *a = attack_run(w, "make -f bash.mk; make -f dash.mk; echo \"status=$?\"", NULL);
    attack_assert_not_outside(w, "env", a);
    attack_assert_not_outside(w, "eval", a);
    attack_assert_not_outside(w, "second", a);
    mcp_world_assert_contains(mcp_world_output(a), "execgate: refused `bash -c true 'x'`");
    mcp_world_assert_contains(mcp_world_output(a), "execgate: refused `sh -c eval 'touch ");
    mcp_world_assert_contains(mcp_world_output(a), "execgate: refused `sh -c . ./dot.sh`");
    mcp_world_assert_contains(mcp_world_output(a), "execgate: refused `sh -c true 'x'; touch ");
    free(env);
    free(dash_mk);
    free(bash_mk);
    json_decref(a);
    attack_world_end(w);
}

/* dash takes its options before the script: `sh -c -- SCRIPT`, `sh -c +e
 * SCRIPT` and `sh -c -i SCRIPT` run the word after the options, not the
 * one after -c.  make splits .SHELLFLAGS into words, so a planted Makefile
 * puts an option where the plain script was looked for; the script's
 * redirection writes outside with no exec to decide. */
static void
test_dash_options_before_the_script(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED, false);
    const char *flags[] = {"-c --", "-c +e", "-c -e", "-c -i"};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        char *mk = mcp_world_fmt("SHELL = /bin/sh\n.SHELLFLAGS = %s\nall:\n"
                                 "\t-echo planted > %s/flags%zu\n",
                                 flags[i], w->outside, i);
        char *name = mcp_world_fmt("flags%zu.mk", i);
        write_owned(w->wd, name, mk);
        char *cmd = mcp_world_fmt("make -f %s; echo \"status=$?\"", name);
        json_t *a = attack_run(w, cmd, NULL);
        char *made = mcp_world_fmt("flags%zu", i);
        attack_assert_not_outside(w, made, a);
        mcp_world_assert_contains(mcp_world_output(a), "execgate: refused `sh -c ");
        free(made);
        json_decref(a);
        free(cmd);
        free(name);
        free(mk);
    }
    attack_world_end(w);
}

/* A file the command wrote, named dash, is not dash: the escalated make
 * given SHELL = ./dash must not run it outside as a plain shell. */
static void
test_planted_dash_is_not_a_plain_shell(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED, false);
    char *script = mcp_world_fmt("#!/bin/sh\necho planted > %s/dash\n", w->outside);
    char *path = tmpdir_path(w->wd, "dash");
    tmpdir_write_file(path, script, 0755);
    attack_own(path);
    write_owned(w->wd, "Makefile", "SHELL = ./dash\nall:\n\tls x\n");
    json_t *a = attack_run(w, "make; echo \"status=$?\"", NULL);
    attack_assert_not_outside(w, "dash", a);
    mcp_world_assert_contains(mcp_world_output(a),
                              "-c ls x`: started outside the sandbox by `make`");
    json_decref(a);
    free(path);
    free(script);
    attack_world_end(w);
}

/* A person who approved `touch X` for the session inside the sandbox (a
 * sandboxed shell's child, where X cannot be written) approved nothing outside: the same command
 * started by an escalated make, in the same workdir, is asked again. */
static void
test_session_approval_inside_is_not_for_outside(void **state)
{
    /* shell mode decides no exec of the sandboxed shell's children */
    if (attack_suite_extra() && strstr(attack_suite_extra(), "=shell"))
        skip();
    struct mcp_world *w =
        attack_world(MAKE_ALLOWED "prefix_rule(pattern=[\"touch\"], decision=\"prompt\")\n", true);
    /* sh's exec of touch is the tree's, inside the sandbox: approved
     * there, it runs in place */
    char *cmd = mcp_world_fmt("sh -c 'touch %s/sess 2>/dev/null; echo \"status=$?\"'", w->outside);
    struct mcp_answers ans = {.action = "accept", .decision = "approved_for_session"};
    json_t *a = attack_run(w, cmd, &ans);
    assert_int_equal(ans.asked, 1);
    attack_assert_not_outside(w, "sess", a);
    json_decref(a);
    free(ans.last_message);
    char *recipe = mcp_world_fmt("touch %s/sess", w->outside);
    makefile(w, recipe);
    struct mcp_answers no = {.action = "decline"};
    a = attack_run(w, "make; echo \"status=$?\"", &no);
    attack_assert_not_outside(w, "sess", a);
    assert_int_equal(no.asked, 1);
    free(no.last_message);
    json_decref(a);
    free(recipe);
    free(cmd);
    attack_world_end(w);
}

/* The same when the escalated program runs because a person approved it
 * (its tree is decided as in the sandbox, and `touch` still asks): the
 * approval from inside does not answer for the tree outside. */
static void
test_session_approval_inside_is_not_for_approved_tree(void **state)
{
    if (attack_suite_extra() && strstr(attack_suite_extra(), "=shell"))
        skip();
    struct mcp_world *w = attack_world("prefix_rule(pattern=[\"make\"], decision=\"prompt\")\n"
                                       "prefix_rule(pattern=[\"touch\"], decision=\"prompt\")\n",
                                       true);
    char *cmd = mcp_world_fmt("sh -c 'touch %s/sess 2>/dev/null; echo \"status=$?\"'", w->outside);
    struct mcp_answers ans = {.action = "accept", .decision = "approved_for_session"};
    json_t *a = attack_run(w, cmd, &ans);
    assert_int_equal(ans.asked, 1);
    attack_assert_not_outside(w, "sess", a);
    json_decref(a);
    free(ans.last_message);
    char *recipe = mcp_world_fmt("touch %s/sess", w->outside);
    makefile(w, recipe);
    static const char *const answers[] = {"accept", "decline", NULL};
    struct mcp_answers two = {.actions = answers, .decision = "approved"};
    a = attack_run(w, "make; echo \"status=$?\"", &two);
    attack_assert_not_outside(w, "sess", a);
    assert_int_equal(two.asked, 2);
    mcp_world_assert_contains(two.last_message, "(It runs outside the sandbox: a program you let "
                                                "out started it.)");
    free(two.last_message);
    json_decref(a);
    free(recipe);
    free(cmd);
    attack_world_end(w);
}

/* The escalated program's environment is reset, but what it exports to
 * its own children is its own: a planted make exports LD_PRELOAD naming a
 * library the command built, and the shell it starts for one plain
 * command (let through without a rule), or a program a rule allows, would
 * load it outside. */
static void
test_loader_variables_exported_to_children(void **state)
{
    struct mcp_world *w =
        attack_world(MAKE_ALLOWED "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n", false);
    char *lib = mcp_world_fmt("#include <fcntl.h>\n"
                              "__attribute__((constructor)) static void planted(void)\n"
                              "{ open(\"%s/preload\", O_WRONLY | O_CREAT | O_CLOEXEC, 0644); }\n",
                              w->outside);
    write_owned(w->wd, "planted.c", lib);
    char *mk =
        mcp_world_fmt("SHELL = /usr/bin/dash\nexport LD_PRELOAD = %s/planted.so\nall:\n\tcat x\n"
                      "allowed: SHELL = /bin/sh\nallowed:\n\tls\n",
                      w->wd);
    write_owned(w->wd, "Makefile", mk);
    json_t *a =
        attack_run(w, "cc -shared -fPIC -o planted.so planted.c && make; echo \"status=$?\"", NULL);
    attack_assert_not_outside(w, "preload", a);
    mcp_world_assert_contains(mcp_world_output(a),
                              "-c cat x`: started outside the sandbox by `make`");
    json_decref(a);
    /* a program a rule allows, under the same environment */
    a = attack_run(w, "make allowed; echo \"status=$?\"", NULL);
    attack_assert_not_outside(w, "preload", a);
    mcp_world_assert_contains(mcp_world_output(a),
                              "execgate: refused `ls`: started outside the sandbox by `make "
                              "allowed` (allowed by test.rules:1), and a rule allows it, but its "
                              "environment names code for it to run");
    json_decref(a);
    free(mk);
    free(lib);
    attack_world_end(w);
}

/* The same for what a shell reads before its script: `ldd` (allowed) is a
 * Bash script, and make exports BASH_ENV naming a file the command wrote;
 * Bash would source it outside. */
static void
test_shell_variables_exported_to_children(void **state)
{
    if (access("/usr/bin/ldd", X_OK) != 0)
        skip();
    struct mcp_world *w =
        attack_world(MAKE_ALLOWED "prefix_rule(pattern=[\"ldd\"], decision=\"allow\")\n", false);
    char *env = mcp_world_fmt("echo planted > %s/bashenv\n", w->outside);
    write_owned(w->wd, "env.sh", env);
    char *mk = mcp_world_fmt("export BASH_ENV = %s/env.sh\nall:\n\tldd /bin/true\n", w->wd);
    write_owned(w->wd, "Makefile", mk);
    json_t *a = attack_run(w, "make; echo \"status=$?\"", NULL);
    attack_assert_not_outside(w, "bashenv", a);
    mcp_world_assert_contains(mcp_world_output(a),
                              "execgate: refused `ldd /bin/true`: started outside the sandbox by "
                              "`make` (allowed by test.rules:1), and a rule allows it, but its "
                              "environment names code");
    json_decref(a);
    free(mk);
    free(env);
    attack_world_end(w);
}

/* Asked about a child whose environment loads code, the person is told:
 * approving `cat x` approves the library too. */
static void
test_loader_variables_shown_in_the_question(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED, true);
    char *mk = mcp_world_fmt("export LD_PRELOAD = %s/planted.so\nall:\n\tcat x\n", w->wd);
    write_owned(w->wd, "Makefile", mk);
    struct mcp_answers ans = {.action = "decline"};
    json_t *a = attack_run(w, "make; echo \"status=$?\"", &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(ans.last_message,
                              "wants to start `/usr/bin/cat x` outside the sandbox, in ");
    mcp_world_assert_contains(ans.last_message,
                              "(Note: its environment names code for the dynamic loader, a shell "
                              "or an interpreter to run (LD_*, GCONV_PATH, BASH_ENV, BASH_FUNC_*, "
                              "PYTHONPATH and the like).)");
    free(ans.last_message);
    json_decref(a);
    free(mk);
    attack_world_end(w);
}

/* The shell let through for one plain command finds it on the PATH make
 * exported: a planted bin/ls comes first, and is what is decided (a file
 * the sandbox wrote, no rule names it): refused. */
static void
test_plain_shell_with_planted_path(void **state)
{
    struct mcp_world *w =
        attack_world(MAKE_ALLOWED "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n", false);
    char *bin = tmpdir_path(w->wd, "bin");
    assert_int_equal(mkdir(bin, 0755), 0);
    attack_own(bin);
    char *ls = tmpdir_path(bin, "ls");
    char *script = mcp_world_fmt("#!/bin/sh\necho planted > %s/path\n", w->outside);
    tmpdir_write_file(ls, script, 0755);
    attack_own(ls);
    write_owned(w->wd, "Makefile",
                "SHELL = /usr/bin/dash\nexport PATH := $(CURDIR)/bin:$(PATH)\nall:\n\tls x\n");
    json_t *a = attack_run(w, "make; echo \"status=$?\"", NULL);
    attack_assert_not_outside(w, "path", a);
    mcp_world_assert_contains(mcp_world_output(a), "execgate: refused `ls x`: started outside the "
                                                   "sandbox by `make` (allowed by test.rules:1), "
                                                   "and a rule allows it, but it lies where the "
                                                   "sandbox can write");
    json_decref(a);
    free(script);
    free(ls);
    free(bin);
    attack_world_end(w);
}

/* A program in the workspace approved for the session as make's child is
 * that file: removed and written again (ext4 and tmpfs hand the freed
 * inode number to the next file), it is another program, asked about
 * again. */
static void
test_session_approval_of_a_replaced_file(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED, true);
    write_owned(w->wd, "Makefile", "all:\n\t./tool\n");
    char *tool = tmpdir_path(w->wd, "tool");
    tmpdir_write_file(tool, "#!/bin/sh\necho harmless\n", 0755);
    attack_own(tool);
    struct mcp_answers ans = {.action = "accept", .decision = "approved_for_session"};
    json_t *a = attack_run(w, "make", &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(mcp_world_output(a), "harmless\n");
    json_decref(a);
    char *cmd =
        mcp_world_fmt("ls -i tool; rm tool && printf '#!/bin/sh\\necho evil > %s/evil\\n' > "
                      "tool && chmod +x tool && ls -i tool && make",
                      w->outside);
    ans.action = "decline";
    ans.decision = NULL;
    a = attack_run(w, cmd, &ans);
    attack_assert_not_outside(w, "evil", a);
    assert_int_equal(ans.asked, 2);
    json_decref(a);
    free(cmd);
    free(ans.last_message);
    free(tool);
    attack_world_end(w);
}

/* Only `git status` is allowed; the command makes its workdir a bare
 * repository whose worktree is the workdir and whose core.fsmonitor is a
 * command (git takes a directory that is a git dir, not only a .git).
 * Whether git runs outside or not, the fsmonitor's shell must not run
 * outside unseen: with a client that can be asked, the person sees it
 * with git status and its rule named. */
static void
test_planted_fsmonitor_of_allowed_git(void **state)
{
    struct mcp_world *w =
        attack_world("prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n", true);
    char *cmd = mcp_world_fmt("git init -q --bare . && git config core.worktree \"$PWD\" && "
                              "git config core.bare false && "
                              "git config core.fsmonitor 'touch %s/fsm; false'",
                              w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    json_decref(a);
    struct mcp_answers ans = {.action = "decline"};
    a = attack_run(w, "git status >/dev/null; echo \"status=$?\"", &ans);
    attack_assert_not_outside(w, "fsm", a);
    if (ans.asked > 0)
        mcp_world_assert_contains(ans.last_message,
                                  "`git status` (allowed by test.rules:1) wants to start `");
    free(ans.last_message);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* A shell the rules let out, running a program no rule names: its exec
 * fails, the shell says 126, and the one line is on stderr, naming the
 * parent by the file that runs (dash, for sh). */
static void
test_refused_child_status_is_126(void **state)
{
    struct mcp_world *w =
        attack_world("prefix_rule(pattern=[\"sh\", \"-c\"], decision=\"allow\")\n", false);
    char *cmd = mcp_world_fmt("sh -c 'touch %s/x; echo st=$?'", w->outside);
    json_t *a = attack_run(w, cmd, NULL);
    attack_assert_not_outside(w, "x", a);
    char *want = mcp_world_fmt("execgate: refused `touch %s/x`: started outside the sandbox by "
                               "`dash -c 'touch %s/x; echo st=$?'` (allowed by test.rules:1), and "
                               "no rule names it; no person could be asked. This rule would "
                               "allow it: prefix_rule(pattern=[\"touch\", \"%s/x\"], "
                               "decision=\"allow\")\n",
                               w->outside, w->outside, w->outside);
    mcp_world_assert_contains(mcp_world_output(a), want);
    mcp_world_assert_contains(mcp_world_output(a), "st=126\n");
    free(want);
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

/* approved_for_session answers the same child's question in later calls. */
static void
test_unnamed_child_approved_for_session(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED, true);
    char *recipe = mcp_world_fmt("touch %s/made && echo made", w->outside);
    makefile(w, recipe);
    struct mcp_answers ans = {.action = "accept", .decision = "approved_for_session"};
    json_t *a = attack_run(w, "make", &ans);
    assert_int_equal(ans.asked, 1);
    assert_true(mcp_world_exists(w->outside, "made"));
    json_decref(a);
    char *made = tmpdir_path(w->outside, "made");
    assert_int_equal(unlink(made), 0);
    a = attack_run(w, "make", &ans);
    assert_int_equal(ans.asked, 1);
    if (!mcp_world_exists(w->outside, "made"))
        fail_msg("the approved recipe did not run again: [%s]", mcp_world_output(a));
    json_decref(a);
    free(made);
    free(ans.last_message);
    free(recipe);
    attack_world_end(w);
}

/* An allowed make whose recipe starts cc: one question (cc), and what the
 * person approved builds (cc's own children are cc's business). */
static void
test_make_building_with_cc_asks_once(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED, true);
    write_owned(w->wd, "Makefile", "hello: hello.c\n\tcc -o hello hello.c\n");
    write_owned(w->wd, "hello.c",
                "#include <stdio.h>\nint main(void) { puts(\"hello, world\"); return 0; }\n");
    struct mcp_answers ans = {.action = "accept", .decision = "approved_for_session"};
    json_t *a = attack_run(w, "make && ./hello", &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(ans.last_message, "wants to start `");
    mcp_world_assert_contains(ans.last_message, " -o hello hello.c` outside the sandbox");
    mcp_world_assert_contains(mcp_world_output(a), "hello, world\n");
    assert_int_equal(mcp_world_exit(a), 0);
    json_decref(a);
    a = attack_run(w, "rm hello && make && ./hello", &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(mcp_world_output(a), "hello, world\n");
    json_decref(a);
    free(ans.last_message);
    attack_world_end(w);
}

/* --escalated-children=inherit: the reference's behaviour, the recipe
 * runs outside without a question. */
static void
test_inherit_option_restores_the_old_behaviour(void **state)
{
    struct mcp_world *w = world_start_extra(MAKE_ALLOWED, false, "--escalated-children=inherit");
    char *recipe = mcp_world_fmt("touch %s/made", w->outside);
    makefile(w, recipe);
    json_t *a = attack_run(w, "make; echo \"status=$?\"", NULL);
    if (!mcp_world_exists(w->outside, "made"))
        fail_msg("with inherit the recipe should run outside: [%s]", mcp_world_output(a));
    mcp_world_assert_contains(mcp_world_output(a), "status=0");
    json_decref(a);
    free(recipe);
    attack_world_end(w);
}

/* A forbidden program stays forbidden under a person's approval. */
static void
test_forbidden_child_under_approval(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED RM_FORBIDDEN, true);
    write_owned(w->outside, "victim", "keep me\n");
    char *recipe = mcp_world_fmt("rm -f %s/victim; true", w->outside);
    makefile(w, recipe);
    struct mcp_answers ans = {.action = "accept"};
    json_t *a = attack_run(w, "make; echo \"status=$?\"", &ans);
    assert_int_equal(ans.asked, 1); /* the shell, not rm */
    if (!mcp_world_exists(w->outside, "victim"))
        fail_msg("the forbidden rm ran: [%s]", mcp_world_output(a));
    mcp_world_assert_contains(mcp_world_output(a), "rm is not for agents");
    json_decref(a);
    free(ans.last_message);
    free(recipe);
    attack_world_end(w);
}

/* ---- /proc/self is the process's own ---- */

/* `exec 7</usr/bin/rm; /proc/self/fd/7 -f FILE` in an approved recipe:
 * the file is the recipe shell's fd 7, rm, which is forbidden.  Before,
 * /proc/self was read as the server's own, and rm ran. */
static void
test_proc_self_fd_outside(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED RM_FORBIDDEN, true);
    write_owned(w->outside, "victim", "keep me\n");
    char *recipe = mcp_world_fmt("exec 7</usr/bin/rm; /proc/self/fd/7 -f %s/victim", w->outside);
    makefile(w, recipe);
    struct mcp_answers ans = {.action = "accept"};
    json_t *a = attack_run(w, "make; echo \"status=$?\"", &ans);
    if (!mcp_world_exists(w->outside, "victim"))
        fail_msg("rm ran through /proc/self/fd/7: [%s]", mcp_world_output(a));
    mcp_world_assert_contains(mcp_world_output(a), "rm is not for agents");
    json_decref(a);
    free(ans.last_message);
    free(recipe);
    attack_world_end(w);
}

/* The same inside the sandbox, from the shell's own child. */
static void
test_proc_self_fd_inside(void **state)
{
    struct mcp_world *w = attack_world(RM_FORBIDDEN, false);
    write_owned(w->wd, "victim", "keep me\n");
    json_t *a =
        attack_run(w, "exec 7</usr/bin/rm; /proc/self/fd/7 -f victim; echo \"status=$?\"", NULL);
    if (!mcp_world_exists(w->wd, "victim"))
        fail_msg("rm ran through /proc/self/fd/7: [%s]", mcp_world_output(a));
    mcp_world_assert_contains(mcp_world_output(a), "rm is not for agents");
    json_decref(a);
    /* the same through /dev/fd (a link to /proc/self/fd), /proc/thread-self
     * and a link the command made to /proc/self */
    a = attack_run(w,
                   "exec 7</usr/bin/rm; /dev/fd/7 -f victim; /proc/thread-self/fd/7 -f victim; "
                   "ln -s /proc/self me; ./me/fd/7 -f victim; echo \"status=$?\"",
                   NULL);
    if (!mcp_world_exists(w->wd, "victim"))
        fail_msg("rm ran through a link to /proc/self: [%s]", mcp_world_output(a));
    json_decref(a);
    attack_world_end(w);
}

/* Variants of the two above by other names of the same fd: /dev/fd/7,
 * /proc/thread-self/fd/7 and /proc/PID/fd/7 with the shell's own pid (the
 * host's in an escalated recipe, the sandbox's PID namespace's inside),
 * and /proc/self/cwd/../ back to rm's directory.  rm never runs, outside
 * or inside. */
static void
test_proc_fd_other_names(void **state)
{
    struct mcp_world *w = attack_world(MAKE_ALLOWED RM_FORBIDDEN, true);
    write_owned(w->outside, "victim", "keep me\n");
    char *recipe = mcp_world_fmt("exec 7</usr/bin/rm; /dev/fd/7 -f %s/victim; "
                                 "/proc/thread-self/fd/7 -f %s/victim; "
                                 "/proc/$$$$/fd/7 -f %s/victim; "
                                 "cd /usr/bin && /proc/self/cwd/../bin/rm -f %s/victim; true",
                                 w->outside, w->outside, w->outside, w->outside);
    makefile(w, recipe);
    struct mcp_answers ans = {.action = "accept"};
    json_t *a = attack_run(w, "make; echo \"status=$?\"", &ans);
    if (!mcp_world_exists(w->outside, "victim"))
        fail_msg("rm ran outside by another name of its fd: [%s]", mcp_world_output(a));
    mcp_world_assert_contains(mcp_world_output(a), "rm is not for agents");
    json_decref(a);
    write_owned(w->wd, "victim", "keep me\n");
    a = attack_run(
        w,
        "exec 7</usr/bin/rm; /proc/$$/fd/7 -f victim; "
        "cd /usr/bin && /proc/self/cwd/../bin/rm -f \"$OLDPWD/victim\"; echo \"status=$?\"",
        &ans);
    if (!mcp_world_exists(w->wd, "victim"))
        fail_msg("rm ran inside by another name of its fd: [%s]", mcp_world_output(a));
    mcp_world_assert_contains(mcp_world_output(a), "rm is not for agents");
    json_decref(a);
    free(ans.last_message);
    free(recipe);
    attack_world_end(w);
}

/* Legitimate execs through /proc/self run in the sandbox with no rules:
 * a path through the process's root, an fd it opened, a memfd-like
 * deleted file.  Before, each failed "required file not found". */
static void
test_proc_self_execs_work(void **state)
{
    struct mcp_world *w = attack_world("", false);
    json_t *a =
        attack_run(w,
                   "/proc/self/root/usr/bin/true && echo root-ok; "
                   "exec 8</usr/bin/true; /proc/self/fd/8 && echo fd-ok; "
                   "/proc/thread-self/root/usr/bin/true && echo thread-ok; "
                   "cp /usr/bin/true t && exec 9<t && rm t && /proc/self/fd/9 && echo deleted-ok",
                   NULL);
    mcp_world_assert_contains(mcp_world_output(a), "root-ok\nfd-ok\nthread-ok\ndeleted-ok\n");
    json_decref(a);
    attack_world_end(w);
}

/* ---- the loader is an interpreter ---- */

static const char *
loader(void)
{
    static const char *const known[] = {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1",
                                        NULL};
    for (size_t i = 0; known[i]; i++) {
        if (access(known[i], X_OK) == 0)
            return known[i];
    }
    return NULL;
}

static void
test_loader_running_forbidden_program_inside(void **state)
{
    if (!loader())
        skip();
    struct mcp_world *w = attack_world(RM_FORBIDDEN, false);
    write_owned(w->wd, "victim", "keep me\n");
    char *cmd = mcp_world_fmt("%s --argv0 x /usr/bin/rm -f victim; echo \"status=$?\"", loader());
    json_t *a = attack_run(w, cmd, NULL);
    if (!mcp_world_exists(w->wd, "victim"))
        fail_msg("rm ran through the loader: [%s]", mcp_world_output(a));
    mcp_world_assert_contains(mcp_world_output(a), "rm is not for agents");
    json_decref(a);
    free(cmd);
    /* a link to the loader, its other options, a loader running a loader */
    cmd = mcp_world_fmt("ln -s %s ld; ./ld --library-path /nowhere --preload '' -- /usr/bin/rm -f "
                        "victim; %s %s /usr/bin/rm -f victim; echo \"status=$?\"",
                        loader(), loader(), loader());
    a = attack_run(w, cmd, NULL);
    if (!mcp_world_exists(w->wd, "victim"))
        fail_msg("rm ran through the loader: [%s]", mcp_world_output(a));
    json_decref(a);
    free(cmd);
    attack_world_end(w);
}

static void
test_loader_running_forbidden_program_outside(void **state)
{
    if (!loader())
        skip();
    struct mcp_world *w = attack_world(MAKE_ALLOWED RM_FORBIDDEN, false);
    write_owned(w->outside, "victim", "keep me\n");
    char *recipe = mcp_world_fmt("%s /usr/bin/rm -f %s/victim", loader(), w->outside);
    makefile(w, recipe);
    json_t *a = attack_run(w, "make; echo \"status=$?\"", NULL);
    if (!mcp_world_exists(w->outside, "victim"))
        fail_msg("rm ran through the loader: [%s]", mcp_world_output(a));
    mcp_world_assert_contains(mcp_world_output(a), "rm is not for agents");
    json_decref(a);
    free(recipe);
    attack_world_end(w);
}

/* ---- ordinary work with examples/default.rules ---- */

/* A top-level repository with one commit, made outside the sandbox (which
 * keeps its .git read-only), and a bare remote in the outside directory. */
static char *
repo_and_remote(struct mcp_world *w)
{
    const char *init[] = {"/usr/bin/git", "-C", w->wd, "init", "-q", "-b", "main", NULL};
    attack_outside_run(init, NULL, NULL);
    const char *commit[] = {"/usr/bin/git",
                            "-C",
                            w->wd,
                            "-c",
                            "user.name=t",
                            "-c",
                            "user.email=t@execgate.invalid",
                            "commit",
                            "-q",
                            "--allow-empty",
                            "-m",
                            "first commit",
                            NULL};
    attack_outside_run(commit, NULL, NULL);
    char *remote = tmpdir_path(w->outside, "remote.git");
    const char *bare[] = {"/usr/bin/git", "init", "-q", "--bare", remote, NULL};
    attack_outside_run(bare, NULL, NULL);
    return remote;
}

/* git push (a prompt rule: the person approves it) to a local bare remote
 * outside the workspace: one question, and the remote has the commit. */
static void
test_git_push_with_default_rules(void **state)
{
    char *rules = tmpdir_read_file(default_rules, NULL);
    assert_non_null(rules);
    struct mcp_world *w = attack_world(rules, true);
    char *remote = repo_and_remote(w);
    struct mcp_answers ans = {.action = "accept"};
    char *cmd = mcp_world_fmt("git push -q %s main; echo \"status=$?\"", remote);
    json_t *a = attack_run(w, cmd, &ans);
    assert_int_equal(ans.asked, 1);
    mcp_world_assert_contains(mcp_world_output(a), "status=0");
    char *log = NULL;
    const char *show[] = {"/usr/bin/git", "--git-dir", remote, "log", "--format=%s", "main", NULL};
    attack_outside_run(show, NULL, &log);
    mcp_world_assert_contains(log, "first commit\n");
    free(log);
    json_decref(a);
    free(cmd);
    free(ans.last_message);
    free(remote);
    free(rules);
    attack_world_end(w);
}

/* An allowed git fetch from a local bare remote outside the workspace:
 * git's transport (dash starting git-upload-pack) and its own helpers run
 * under the rules of examples/default.rules, without a question. */
static void
test_git_fetch_allowed_with_default_rules(void **state)
{
    char *rules = tmpdir_read_file(default_rules, NULL);
    assert_non_null(rules);
    char *more =
        mcp_world_fmt("%s\nprefix_rule(pattern=[\"git\", \"fetch\"], decision=\"allow\")\n", rules);
    struct mcp_world *w = attack_world(more, false);
    char *remote = repo_and_remote(w);
    /* a commit the workspace does not have, so objects travel */
    char *other = tmpdir_path(w->outside, "other");
    const char *init[] = {"/usr/bin/git", "init", "-q", other, NULL};
    attack_outside_run(init, NULL, NULL);
    const char *commit[] = {"/usr/bin/git",
                            "-C",
                            other,
                            "-c",
                            "user.name=t",
                            "-c",
                            "user.email=t@execgate.invalid",
                            "commit",
                            "-q",
                            "--allow-empty",
                            "-m",
                            "from afar",
                            NULL};
    attack_outside_run(commit, NULL, NULL);
    const char *push[] = {"/usr/bin/git",        "-C", other, "push", "-q", remote,
                          "HEAD:refs/heads/far", NULL};
    attack_outside_run(push, NULL, NULL);
    char *cmd = mcp_world_fmt("git fetch -q %s far && git log -1 --format=%%s FETCH_HEAD && "
                              "echo fetched",
                              remote);
    json_t *a = attack_run(w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(a), "from afar\nfetched\n");
    json_decref(a);
    free(cmd);
    free(other);
    free(remote);
    free(more);
    free(rules);
    attack_world_end(w);
}

int
main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = attack_suite_begin("escalation-depth-tests", 60000);
    if (rc != 0)
        return rc;
    default_rules = getenv("EXECGATE_TEST_DEFAULT_RULES");
    if (!default_rules) {
        fprintf(stderr, "EXECGATE_TEST_DEFAULT_RULES is not set\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_unnamed_child_is_asked, attack_teardown),
        cmocka_unit_test_teardown(test_unnamed_child_is_refused_without_elicitation,
                                  attack_teardown),
        cmocka_unit_test_teardown(test_plain_shell_passes_its_command_on, attack_teardown),
        cmocka_unit_test_teardown(test_other_shells_and_scripts_are_asked, attack_teardown),
        cmocka_unit_test_teardown(test_dash_options_before_the_script, attack_teardown),
        cmocka_unit_test_teardown(test_planted_dash_is_not_a_plain_shell, attack_teardown),
        cmocka_unit_test_teardown(test_session_approval_inside_is_not_for_outside, attack_teardown),
        cmocka_unit_test_teardown(test_session_approval_inside_is_not_for_approved_tree,
                                  attack_teardown),
        cmocka_unit_test_teardown(test_loader_variables_exported_to_children, attack_teardown),
        cmocka_unit_test_teardown(test_loader_variables_shown_in_the_question, attack_teardown),
        cmocka_unit_test_teardown(test_shell_variables_exported_to_children, attack_teardown),
        cmocka_unit_test_teardown(test_plain_shell_with_planted_path, attack_teardown),
        cmocka_unit_test_teardown(test_session_approval_of_a_replaced_file, attack_teardown),
        cmocka_unit_test_teardown(test_planted_fsmonitor_of_allowed_git, attack_teardown),
        cmocka_unit_test_teardown(test_refused_child_status_is_126, attack_teardown),
        cmocka_unit_test_teardown(test_unnamed_child_approved_for_session, attack_teardown),
        cmocka_unit_test_teardown(test_make_building_with_cc_asks_once, attack_teardown),
        cmocka_unit_test_teardown(test_inherit_option_restores_the_old_behaviour, attack_teardown),
        cmocka_unit_test_teardown(test_forbidden_child_under_approval, attack_teardown),
        cmocka_unit_test_teardown(test_proc_self_fd_outside, attack_teardown),
        cmocka_unit_test_teardown(test_proc_self_fd_inside, attack_teardown),
        cmocka_unit_test_teardown(test_proc_fd_other_names, attack_teardown),
        cmocka_unit_test_teardown(test_proc_self_execs_work, attack_teardown),
        cmocka_unit_test_teardown(test_loader_running_forbidden_program_inside, attack_teardown),
        cmocka_unit_test_teardown(test_loader_running_forbidden_program_outside, attack_teardown),
        cmocka_unit_test_teardown(test_git_push_with_default_rules, attack_teardown),
        cmocka_unit_test_teardown(test_git_fetch_allowed_with_default_rules, attack_teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    attack_suite_end();
    if (failed) {
        fflush(stdout);
        fflush(stderr);
        _exit(failed);
    }
    return 0;
}
