/*
 * Tree enforcement through the whole product (--exec-enforcement=tree, the
 * default): the real server over stdio, the patched Bash in the sandbox,
 * the wrapper, escalated programs, and the seccomp listeners the server
 * watches.  Every attack must leave its victim file in place and put the
 * refusal line in the call's output; the shell-mode test shows the same
 * attack succeeding without tree enforcement, so the switch is real.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/mcp_client.h"
#include "tests/support/mcp_world.h"
#include "tests/support/proc.h"
#include "tests/support/tmpdir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *server_path;
static const char *wrapper_path;

#define RM_FORBIDDEN                                                                               \
    "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\", justification=\"tree-test: keep "       \
    "files\")\n"
/* sh escalated by its rule, and the programs the tests' scripts start in
 * its tree: a program an escalated one starts runs outside only when a
 * rule names it (docs/enforcement.md). */
#define SH_ALLOWED                                                                                 \
    "prefix_rule(pattern=[\"sh\"], decision=\"allow\")\n"                                          \
    "prefix_rule(pattern=[[\"tr\", \"ls\", \"sleep\", \"true\", \"env\"]], decision=\"allow\")\n"
#define REFUSAL       "execgate: refused `"
#define JUSTIFICATION "tree-test: keep files"

/* policy: the sandboxPolicy type; extra: one more server argument or NULL;
 * env: one more "NAME=value" for the server or NULL
 * (tests/support/mcp_world.h). */
static void
world_start_full(struct mcp_world *w, const char *rules, bool elicitation, const char *policy,
                 const char *extra, const char *env)
{
    const struct mcp_world_options o = {.server = server_path,
                                        .client_name = "tree-tests",
                                        .policy = policy,
                                        .elicitation = elicitation,
                                        .extra = extra,
                                        .env = env};
    mcp_world_start(w, rules, &o);
}

static void
world_start(struct mcp_world *w, const char *rules, bool elicitation)
{
    world_start_full(w, rules, elicitation, "workspace-write", NULL, NULL);
}

static json_t *
run(struct mcp_world *w, const char *command, struct mcp_answers *a)
{
    return mcp_world_run(w, command, a, 60000);
}

static void
victim(struct mcp_world *w)
{
    char *p = tmpdir_path(w->wd, "f");
    tmpdir_write_file(p, "keep me", 0644);
    free(p);
}

/* Runs an attack on wd/f: the file stays and the output has the refusal
 * with the rule's justification. */
static void
attack(struct mcp_world *w, const char *command, struct mcp_answers *a)
{
    victim(w);
    json_t *r = run(w, command, a);
    const char *out = mcp_world_output(r);
    if (!mcp_world_exists(w->wd, "f"))
        fprintf(stderr, "attack deleted the file: %s\noutput: %s\n", command, out);
    assert_true(mcp_world_exists(w->wd, "f"));
    mcp_world_assert_contains(out, REFUSAL);
    mcp_world_assert_contains(out, JUSTIFICATION);
    json_decref(r);
}

static bool
have(const char *path)
{
    return access(path, X_OK) == 0;
}

/* ---- attacks with rm forbidden ---- */

static void
test_interpreters_and_exec_helpers(void **state)
{
    struct mcp_world w;
    world_start(&w, RM_FORBIDDEN, false);
    mcp_world_assert_contains(w.instructions, "every program a command starts");
    attack(&w, "python3 -c 'import os; os.execv(\"/bin/rm\", [\"rm\",\"-f\",\"f\"])'", NULL);
    attack(&w, "env rm -f f", NULL);
    attack(&w, "echo f | xargs rm -f", NULL);
    attack(&w, "find . -name f -exec rm {} +", NULL);
    /* a relative path after cd, and a symlink under another name */
    attack(&w,
           "mkdir -p sub && cd sub && ln -sf /bin/rm zap && python3 -c 'import os; "
           "os.execv(\"./zap\", [\"zap\",\"-f\",\"../f\"])'",
           NULL);
    /* each refusal is in the audit log, marked as the tree's */
    if (w.audit) { /* EXECGATE_TEST_NO_AUDIT: none */
        char *log = tmpdir_read_file(w.audit, NULL);
        mcp_world_assert_contains(log, "\"source\":\"tree\"");
        mcp_world_assert_contains(log, "\"decision\":\"refuse\"");
        mcp_world_assert_contains(log, "\"reason\":\"tree-test: keep files\"");
        mcp_world_assert_contains(log, "\"argv\":[\"rm\",\"-f\",\"f\"]");
        free(log);
    }
    mcp_world_end(&w);
}

/* --preserve-program-paths: the tree matches rules on full paths, as the
 * escalation path does; a basename rule no longer applies. */
static void
test_preserve_program_paths(void **state)
{
    struct mcp_world w;
    world_start_full(&w,
                     "prefix_rule(pattern=[\"/usr/bin/rm\"], decision=\"forbidden\", "
                     "justification=\"tree-test: keep files\")\n"
                     "prefix_rule(pattern=[\"touch\"], decision=\"forbidden\")\n",
                     false, "workspace-write", "--preserve-program-paths", NULL);
    attack(&w, "env rm -f f", NULL);
    json_t *r = run(&w, "env touch made-by-basename", NULL);
    assert_true(mcp_world_exists(w.wd, "made-by-basename"));
    json_decref(r);
    mcp_world_end(&w);
}

static void
test_make_recipe(void **state)
{
    if (!have("/usr/bin/make")) {
        fprintf(stderr, "make is not installed: skipping the Makefile attack\n");
        skip();
    }
    struct mcp_world w;
    world_start(&w, RM_FORBIDDEN, false);
    char *mk = tmpdir_path(w.wd, "Makefile");
    tmpdir_write_file(mk, "all:\n\trm -f f\n", 0644);
    attack(&w, "make", NULL);
    free(mk);
    mcp_world_end(&w);
}

static void
test_git_hook(void **state)
{
    if (!have("/usr/bin/git")) {
        fprintf(stderr, "git is not installed: skipping the hook attack\n");
        skip();
    }
    struct mcp_world w;
    world_start(&w, RM_FORBIDDEN, false);
    /* the workdir's own .git is read-only in the sandbox: a repository
     * one level down */
    json_t *r = run(&w,
                    "mkdir repo && cd repo && git init -q . && "
                    "printf '#!/bin/sh\\nrm -f ../f\\n' > .git/hooks/pre-commit && "
                    "chmod +x .git/hooks/pre-commit && echo ready",
                    NULL);
    mcp_world_assert_contains(mcp_world_output(r), "ready");
    json_decref(r);
    attack(&w, "cd repo && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x",
           NULL);
    mcp_world_end(&w);
}

/* Compiles src into bin with cc, static when the libc allows it. */
static void
compile(const char *src, const char *bin)
{
    int st = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        pid_t pid = fork();
        if (pid == 0) {
            if (attempt == 0)
                execl("/usr/bin/cc", "cc", "-static", "-o", bin, src, (char *)NULL);
            else
                execl("/usr/bin/cc", "cc", "-o", bin, src, (char *)NULL);
            _exit(127);
        }
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            return;
    }
    fail_msg("cc could not compile %s", src);
}

/* The C program calls execve by the raw system call: no libc wrapper. */
static void
test_raw_execve_from_c(void **state)
{
    if (!have("/usr/bin/cc")) {
        fprintf(stderr, "cc is not installed: skipping the raw execve attack\n");
        skip();
    }
    struct mcp_world w;
    world_start(&w, RM_FORBIDDEN, false);
    char *src = tmpdir_path(w.wd, "raw.c");
    tmpdir_write_file(src,
                      "#include <sys/syscall.h>\n#include <unistd.h>\n"
                      "int main(void) {\n"
                      "    char *argv[] = {\"rm\", \"-f\", \"f\", 0};\n"
                      "    char *envp[] = {0};\n"
                      "    syscall(SYS_execve, \"/bin/rm\", argv, envp);\n"
                      "    return 9;\n}\n",
                      0644);
    char *bin = tmpdir_path(w.wd, "raw");
    compile(src, bin);
    attack(&w, "./raw; echo \"raw=$?\"", NULL);
    free(src);
    free(bin);
    /* execveat with a directory fd, and with AT_EMPTY_PATH on an open fd */
    const char *attack_src = getenv("EXECGATE_TEST_RAW_EXEC_SRC");
    if (attack_src) {
        bin = tmpdir_path(w.wd, "raw-exec");
        compile(attack_src, bin);
        attack(&w, "./raw-exec execveat /bin rm rm -f f", NULL);
        attack(&w, "./raw-exec emptypath /bin/rm rm -f f", NULL);
        free(bin);
    }
    mcp_world_end(&w);
}

/* A direct exec of the wrapper (not from the shell) naming rm is judged on
 * rm, whether or not the wrapper could reach the server. */
static void
test_forged_wrapper_exec(void **state)
{
    struct mcp_world w;
    world_start(&w, RM_FORBIDDEN, false);
    char *cmd =
        mcp_world_fmt("python3 -c 'import os; os.execv(\"%s\", [\"%s\", \"/bin/rm\", \"rm\", "
                      "\"-f\", \"f\"])'",
                      wrapper_path, wrapper_path);
    attack(&w, cmd, NULL);
    free(cmd);
    cmd = mcp_world_fmt("python3 -c 'import os; os.closerange(3, 64); os.execv(\"%s\", [\"%s\", "
                        "\"/bin/rm\", \"rm\", \"-f\", \"f\"])'",
                        wrapper_path, wrapper_path);
    attack(&w, cmd, NULL);
    free(cmd);
    mcp_world_end(&w);
}

/* Runs `program OUTSIDE/name` (stdin from /dev/null): it must fail with
 * status 1 and leave no name there, the sandbox having stopped it. */
static void
fails_outside(struct mcp_world *w, const char *program, const char *name)
{
    char *cmd = mcp_world_fmt("%s %s/%s </dev/null; echo \"status=$?\"", program, w->outside, name);
    json_t *r = run(w, cmd, NULL);
    mcp_world_assert_contains(mcp_world_output(r), "status=1");
    assert_false(mcp_world_exists(w->outside, name));
    json_decref(r);
    free(cmd);
}

/*
 * The wrapper hint (no audit log): the shell hands the wrapper only what the
 * rules name or the forced-rm heuristic reads; the rest is judged by the
 * tree watch alone.  Emptying the hint cannot get a forbidden program run
 * or a named one escalated: it only skips the wrapper.
 */
static void
test_wrap_hint(void **state)
{
    struct mcp_world w;
    const struct mcp_world_options o = {
        .server = server_path, .client_name = "tree-tests", .no_audit = true};
    mcp_world_start(&w, RM_FORBIDDEN "prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n", &o);
    json_t *r = run(&w, "printf '%s\\n' \"$EXECGATE_WRAP_NAMES\" | tr : '\\n' | sort -u", NULL);
    const char *names = mcp_world_output(r);
    mcp_world_assert_contains(names, "\ntouch\n");
    mcp_world_assert_contains(names, "\nrm\n");
    mcp_world_assert_contains(names, "\nsudo\n");
    assert_null(strstr(names, "\nls\n"));
    json_decref(r);
    /* named: escalated through the wrapper */
    char *cmd = mcp_world_fmt("touch %s/esc && ls %s", w.outside, w.outside);
    r = run(&w, cmd, NULL);
    free(cmd);
    mcp_world_assert_contains(mcp_world_output(r), "esc");
    assert_true(mcp_world_exists(w.outside, "esc"));
    json_decref(r);
    /* without the hint's help: refused by the tree, or run in the sandbox */
    attack(&w, "EXECGATE_WRAP_NAMES= rm -f f; EXECGATE_WRAP_NAMES=ls rm -f f", NULL);
    fails_outside(&w, "EXECGATE_WRAP_NAMES= touch", "not");
    /* an unnamed program runs in the sandbox */
    fails_outside(&w, "/usr/bin/tee", "tee");
    mcp_world_end(&w);
}

/* sh allowed: escalated outside the sandbox, still under interception. */
static void
test_escalated_shell_allowed(void **state)
{
    struct mcp_world w;
    world_start(&w, RM_FORBIDDEN "prefix_rule(pattern=[\"sh\"], decision=\"allow\")\n", false);
    attack(&w, "sh -c 'rm -f f'; echo \"sh=$?\"", NULL);
    /* the escalated shell ran: it can do what rm was refused */
    victim(&w);
    json_t *r = run(&w, "sh -c 'echo escalated-ran; : > g'", NULL);
    mcp_world_assert_contains(mcp_world_output(r), "escalated-ran");
    assert_true(mcp_world_exists(w.wd, "g"));
    json_decref(r);
    mcp_world_end(&w);
}

/* An escalated program started through the helper keeps what it had
 * before: argv[0] (the name its rule matched), the forwarded fds at their
 * numbers, cwd and exit status. */
static void
test_escalated_program_keeps_argv0_fds_cwd(void **state)
{
    struct mcp_world w;
    world_start(&w, SH_ALLOWED, false);
    json_t *r = run(&w,
                    "mkdir -p sub && cd sub && (exec sh -c "
                    "'tr \"\\0\" \" \" < /proc/$$/cmdline; echo; pwd; echo to-three >&3; "
                    "ls -l /proc/$$/fd; exit 5' 3>three.txt); "
                    "echo \"st=$?\"; cat three.txt",
                    NULL);
    const char *out = mcp_world_output(r);
    mcp_world_assert_contains(out, "sh -c ");
    char *sub = mcp_world_fmt("%s/sub\n", w.wd);
    mcp_world_assert_contains(out, sub);
    free(sub);
    /* its fds: the forwarded ones (fd 3 at its number), no socket (the
     * hand-over socket is closed by the helper; the protocol's sockets are
     * not forwarded).  (ls lists the shell's fds: no pipeline, so the
     * shell holds no pipe of its own meanwhile.) */
    mcp_world_assert_contains(out, "three.txt");
    mcp_world_assert_contains(out, " 3 -> ");
    assert_null(strstr(out, "socket:"));
    mcp_world_assert_contains(out, "st=5");
    mcp_world_assert_contains(out, "to-three");
    json_decref(r);
    mcp_world_end(&w);
}

/* sh approved by a person through a prompt rule: the same. */
static void
test_escalated_shell_approved(void **state)
{
    struct mcp_world w;
    world_start(&w, RM_FORBIDDEN "prefix_rule(pattern=[\"sh\"], decision=\"prompt\")\n", true);
    struct mcp_answers a = {.action = "accept"};
    attack(&w, "sh -c 'rm -f f'", &a);
    assert_int_equal(a.asked, 1);
    mcp_world_assert_contains(a.last_message, "rm -f f");
    free(a.last_message);
    mcp_world_end(&w);
}

/* ---- prompts in the tree ---- */

static void
test_prompt_for_program_started_by_env(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"touch\"], decision=\"prompt\")\n", true);
    struct mcp_answers a = {.action = "accept"};
    json_t *r = run(&w, "env touch made; echo \"env=$?\"", &a);
    assert_int_equal(a.asked, 1);
    mcp_world_assert_contains(a.last_message, "touch made` in `");
    mcp_world_assert_contains(mcp_world_output(r), "env=0");
    assert_true(mcp_world_exists(w.wd, "made"));
    json_decref(r);
    free(a.last_message);
    a = (struct mcp_answers){.action = "decline"};
    r = run(&w, "env touch refused; echo \"env=$?\"", &a);
    /* asked once, though a PATH search retries in every directory */
    assert_int_equal(a.asked, 1);
    assert_false(mcp_world_exists(w.wd, "refused"));
    mcp_world_assert_contains(mcp_world_output(r),
                              "execgate: refused `touch refused`: User declined execution");
    mcp_world_assert_contains(mcp_world_output(r), "env=126");
    json_decref(r);
    if (w.audit) { /* EXECGATE_TEST_NO_AUDIT: none */
        char *log = tmpdir_read_file(w.audit, NULL);
        mcp_world_assert_contains(log, "\"decision\":\"continue\",\"answered_by\":\"user\"");
        mcp_world_assert_contains(log,
                                  "\"decision\":\"refuse\",\"reason\":\"User declined execution\","
                                  "\"answered_by\":\"user\"");
        free(log);
    }
    free(a.last_message);
    mcp_world_end(&w);
}

/* approved_for_session names where the program runs: one through the tree
 * (in place) does not hold for the shell's own exec of the same command,
 * which runs outside, nor the other way round; each holds for its own. */
static void
test_session_approval_both_ways(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"touch\"], decision=\"prompt\")\n", true);
    struct mcp_answers a = {.action = "accept", .decision = "approved_for_session"};
    json_t *r = run(&w, "env touch one && touch one && echo both", &a);
    assert_int_equal(a.asked, 2);
    mcp_world_assert_contains(mcp_world_output(r), "both");
    json_decref(r);
    r = run(&w, "touch one && env touch one && echo again", &a);
    assert_int_equal(a.asked, 2);
    mcp_world_assert_contains(mcp_world_output(r), "again");
    json_decref(r);
    r = run(&w, "touch two && env touch two && echo both", &a);
    assert_int_equal(a.asked, 4);
    mcp_world_assert_contains(mcp_world_output(r), "both");
    json_decref(r);
    free(a.last_message);
    mcp_world_end(&w);
}

/* A prompt-rule program the sandbox can write runs in place after the
 * person's approval; the wrapper's execv of it is not asked again. */
static void
test_wrapper_run_not_asked_twice(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"tool\"], decision=\"prompt\")\n", true);
    char *tool = tmpdir_path(w.wd, "tool");
    tmpdir_write_file(tool, "#!/bin/sh\necho tool-ran\n", 0755);
    struct mcp_answers a = {.action = "accept"};
    json_t *r = run(&w, "./tool", &a);
    assert_int_equal(a.asked, 1);
    mcp_world_assert_contains(mcp_world_output(r), "tool-ran");
    json_decref(r);
    /* the same program started by another process is asked about */
    r = run(&w, "env ./tool", &a);
    assert_int_equal(a.asked, 2);
    mcp_world_assert_contains(mcp_world_output(r), "tool-ran");
    json_decref(r);
    free(tool);
    free(a.last_message);
    mcp_world_end(&w);
}

/* The call's clock stops while a person is asked about a descendant's
 * exec: an answer later than the timeout still lets the call finish. */
static void
test_question_stops_the_clock(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"touch\"], decision=\"prompt\")\n", true);
    struct mcp_answers a = {.action = "accept", .delay_ms = 2500};
    json_t *r = mcp_world_run(&w, "env touch late && echo finished", &a, 1500);
    assert_int_equal(a.asked, 1);
    mcp_world_assert_contains(mcp_world_output(r), "finished");
    assert_true(mcp_world_exists(w.wd, "late"));
    json_decref(r);
    free(a.last_message);
    mcp_world_end(&w);
}

/* abort from a question about a descendant stops the whole call. */
static void
test_abort_from_the_tree(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"touch\"], decision=\"prompt\")\n", true);
    struct mcp_answers a = {.action = "accept", .decision = "abort"};
    json_t *r = run(&w, "env touch x; touch after-abort", &a);
    assert_int_equal(a.asked, 1);
    assert_false(mcp_world_exists(w.wd, "x"));
    assert_false(mcp_world_exists(w.wd, "after-abort"));
    json_decref(r);
    free(a.last_message);
    mcp_world_end(&w);
}

/* Cancelling the call while a descendant's exec waits for a person: the
 * question is withdrawn, the exec never runs, the next call is served. */
static void
test_cancel_while_asking(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"touch\"], decision=\"prompt\")\n", true);
    long long id = mcp_client_send_request(w.c, "tools/call",
                                           json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell",
                                                     "arguments", "command", "env touch never",
                                                     "workdir", w.wd, "login", 0));
    json_t *m = mcp_client_next(w.c, MCP_CLIENT_WAIT_MS);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "method")), "elicitation/create");
    json_t *qid = json_deep_copy(json_object_get(m, "id"));
    json_decref(m);
    mcp_client_send(w.c, json_pack("{s:s, s:s, s:{s:I}}", "jsonrpc", "2.0", "method",
                                   "notifications/cancelled", "params", "requestId", id));
    /* a late answer to the withdrawn question is dropped */
    mcp_client_send(w.c, json_pack("{s:s, s:o, s:{s:s}}", "jsonrpc", "2.0", "id", qid, "result",
                                   "action", "accept"));
    json_t *r = run(&w, "echo served", NULL);
    mcp_world_assert_contains(mcp_world_output(r), "served");
    json_decref(r);
    assert_false(mcp_world_exists(w.wd, "never"));
    mcp_world_end(&w);
}

/* The client goes away while a descendant's exec waits for it: the server
 * ends cleanly (no leak: ASan) and leaves nothing running. */
static void
test_client_eof_while_asking(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"touch\"], decision=\"prompt\")\n", true);
    mcp_client_send_request(w.c, "tools/call",
                            json_pack("{s:s, s:{s:s, s:s, s:b}}", "name", "shell", "arguments",
                                      "command", "sleep 0.1; env touch never-eof 34.5678",
                                      "workdir", w.wd, "login", 0));
    json_t *m = mcp_client_next(w.c, MCP_CLIENT_WAIT_MS);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "method")), "elicitation/create");
    json_decref(m);
    mcp_world_end(&w);
    assert_true(proc_gone("never-eof 34.5678", 10000));
}

/* Normal work is unaffected: git, a C compile, a parallel make. */
static void
test_normal_work(void **state)
{
    struct mcp_world w;
    world_start(&w, RM_FORBIDDEN, false);
    json_t *r = run(&w,
                    "mkdir g && cd g && git init -q . && git status --short && echo git-ok; cd .. "
                    "&& printf 'int main(void){return 0;}\\n' > a.c && cc -c a.c -o a.o && "
                    "test -s a.o && echo cc-ok",
                    NULL);
    mcp_world_assert_contains(mcp_world_output(r), "git-ok");
    mcp_world_assert_contains(mcp_world_output(r), "cc-ok");
    json_decref(r);
    if (have("/usr/bin/make")) {
        r = run(&w,
                "mkdir m && cd m && for i in $(seq 20); do echo \"int f$i(void){return $i;}\" > "
                "f$i.c; done && printf 'SRC=$(wildcard *.c)\\nall: $(SRC:.c=.o)\\n%%.o: "
                "%%.c\\n\\tcc -c $< -o $@\\n' > Makefile && make -s -j2 && ls *.o | wc -l",
                NULL);
        mcp_world_assert_contains(mcp_world_output(r), "20\n");
        json_decref(r);
    }
    if (have("/usr/bin/npm")) {
        /* node: a multi-threaded program that spawns */
        r = run(&w, "npm --version >/dev/null && echo npm-ok", NULL);
        mcp_world_assert_contains(mcp_world_output(r), "npm-ok");
        json_decref(r);
    }
    mcp_world_end(&w);
}

static void
test_prompt_without_elicitation_refused(void **state)
{
    struct mcp_world w;
    world_start(&w, "prefix_rule(pattern=[\"touch\"], decision=\"prompt\")\n", false);
    json_t *r = run(&w, "env touch x; echo \"env=$?\"", NULL);
    mcp_world_assert_contains(mcp_world_output(r), "did not declare the elicitation capability");
    assert_false(mcp_world_exists(w.wd, "x"));
    json_decref(r);
    mcp_world_end(&w);
}

/* ---- the switch ---- */

static void
test_shell_mode_is_the_old_behaviour(void **state)
{
    struct mcp_world w;
    world_start_full(&w, RM_FORBIDDEN, false, "workspace-write", "--exec-enforcement=shell", NULL);
    mcp_world_assert_contains(w.instructions, "the shell itself starts");
    victim(&w);
    json_t *r =
        run(&w, "python3 -c 'import os; os.execv(\"/bin/rm\", [\"rm\",\"-f\",\"f\"])'", NULL);
    assert_false(mcp_world_exists(w.wd, "f")); /* the hole tree mode closes */
    json_decref(r);
    /* the shell's own exec of rm is still refused */
    victim(&w);
    r = run(&w, "rm -f f", NULL);
    mcp_world_assert_contains(mcp_world_output(r), "Execution denied");
    assert_true(mcp_world_exists(w.wd, "f"));
    json_decref(r);
    mcp_world_end(&w);
}

static void
test_no_user_notification_falls_back(void **state)
{
    struct mcp_world w;
    world_start_full(&w, RM_FORBIDDEN, false, "workspace-write", NULL,
                     "EXECGATE_TEST_NO_USER_NOTIF=1");
    mcp_world_assert_contains(w.instructions, "not available on this system");
    victim(&w);
    json_t *r = run(&w, "env rm -f f; echo done", NULL);
    mcp_world_assert_contains(mcp_world_output(r), "done");
    assert_false(mcp_world_exists(w.wd, "f")); /* shell mode: env's exec is not seen */
    json_decref(r);
    mcp_world_end(&w);
}

/* --exec-strict: an exec from a process with another thread running (the
 * check-then-use window's precondition) is refused; without it, it runs. */
#define THREADED_EXEC                                                                              \
    "python3 -c 'import threading, os, time\n"                                                     \
    "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"                        \
    "try: os.execv(\"/bin/echo\", [\"echo\", \"exec-threaded\"])\n"                                \
    "except OSError: print(\"exec-threaded refused\")\n'"

static void
test_strict_mode(void **state)
{
    struct mcp_world w;
    world_start_full(&w, "", false, "workspace-write", "--exec-strict", NULL);
    json_t *r = run(&w, THREADED_EXEC "; echo single; env true && echo env-ok", NULL);
    mcp_world_assert_contains(mcp_world_output(r), "exec-threaded refused");
    mcp_world_assert_contains(mcp_world_output(r), "strict mode");
    mcp_world_assert_contains(mcp_world_output(r), "env-ok"); /* single-threaded execs run */
    json_decref(r);
    mcp_world_end(&w);
    world_start(&w, "", false);
    r = run(&w, THREADED_EXEC, NULL);
    mcp_world_assert_contains(mcp_world_output(r), "exec-threaded\n");
    assert_null(strstr(mcp_world_output(r), "refused"));
    json_decref(r);
    mcp_world_end(&w);
}

/* ---- resources ---- */

static void
test_no_fd_leak_across_calls(void **state)
{
    struct mcp_world w;
    /* counted between calls: no sandbox prepared for the next (its fds
     * come and go with it; test_prepared checks what it leaves) */
    world_start_full(&w, RM_FORBIDDEN SH_ALLOWED, false, "workspace-write", "--no-prepare", NULL);
    json_t *r = run(&w, "env true; sh -c 'env true'", NULL);
    json_decref(r);
    int before = mcp_client_fd_count(w.c);
    assert_true(before > 0);
    for (int i = 0; i < 50; i++) {
        r = run(&w, i % 2 ? "env true; rm -f nothing" : "sh -c 'env true'; echo ok", NULL);
        json_decref(r);
    }
    /* timeouts with an intercepted program and an escalated one running */
    for (int i = 0; i < 6; i++) {
        r = mcp_world_run(&w, i % 2 ? "env sleep 5" : "sh -c 'env sleep 5'", NULL, 300);
        assert_true(json_is_true(json_object_get(
            json_object_get(json_object_get(r, "result"), "structuredContent"), "timed_out")));
        json_decref(r);
    }
    /* a timed-out call is answered once its process group is killed; the
     * rest of its release (pidfd, pipes) may follow a moment later: a
     * leak stays, a release in progress does not */
    int after = mcp_client_fd_count(w.c);
    for (int i = 0; i < 100 && after != before; i++) {
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
        after = mcp_client_fd_count(w.c);
    }
    assert_int_equal(after, before);
    mcp_world_end(&w);
    /* a helper that fails before the hand-over (it closes its end) */
    world_start_full(&w, "", false, "workspace-write", "--sandbox-helper=/bin/false", NULL);
    r = run(&w, "echo never", NULL);
    json_decref(r);
    before = mcp_client_fd_count(w.c);
    for (int i = 0; i < 10; i++) {
        r = run(&w, "echo never", NULL);
        assert_null(strstr(mcp_world_output(r), "never"));
        json_decref(r);
    }
    assert_int_equal(mcp_client_fd_count(w.c), before);
    mcp_world_end(&w);
}

/* The server's children (all its threads), or -1. */
/* The server's cgroup guard (where calls get cgroups) or its sandbox
 * launcher, each a child of the server for its whole life, or a session's
 * network keeper, a child for the session's: not one a call left (a call's
 * helper from the launcher shows "--call" in its place). */
static bool
is_servers_own(pid_t pid)
{
    char *p = mcp_world_fmt("/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(p, "re");
    free(p);
    char buf[256] = "";
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    /* the keeper of the session's network namespace lives as long as the
     * session (sandbox/netns.h) */
    return strstr(buf, "--cgroup-guard") != NULL || strstr(buf, " --launcher") != NULL ||
           strstr(buf, "--net-ns-keeper") != NULL;
}

static int
children_of(pid_t pid)
{
    char *dir = mcp_world_fmt("/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    free(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char *p = mcp_world_fmt("/proc/%d/task/%s/children", (int)pid, e->d_name);
        FILE *f = fopen(p, "re");
        free(p);
        long k;
        while (f && fscanf(f, "%ld", &k) == 1)
            n += !is_servers_own((pid_t)k);
        if (f)
            fclose(f);
    }
    closedir(d);
    return n;
}

/* After a call that left an orphan: no process with the marker, and the
 * server holds no child (zombies included).  Waits on the state, not a
 * clock: up to 10 s for the kill and the reaping to land. */
static void
assert_nothing_left(struct mcp_world *w, const char *marker)
{
    bool gone = false;
    for (int i = 0; i < 200 && !gone; i++) {
        gone = !proc_with_marker(marker) && children_of(mcp_client_pid(w->c)) == 0;
        if (!gone) {
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    if (!gone)
        fprintf(stderr, "left: marker %s present=%d, server children=%d\n", marker,
                proc_with_marker(marker), children_of(mcp_client_pid(w->c)));
    assert_true(gone);
}

static void
test_orphans_killed_and_reaped(void **state)
{
    struct mcp_world w;
    /* the server's children between calls, counted: none prepared */
    world_start_full(&w, SH_ALLOWED, false, "workspace-write", "--no-prepare", NULL);
    /* in the sandbox */
    json_t *r = run(&w, "(sleep 31.4159 &) ; exit", NULL);
    json_decref(r);
    assert_nothing_left(&w, "sleep 31.4159");
    /* left behind by an escalated program (re-parented to the server) */
    r = run(&w, "sh -c '(sleep 32.7182 &)'; echo after", NULL);
    mcp_world_assert_contains(mcp_world_output(r), "after");
    json_decref(r);
    assert_nothing_left(&w, "sleep 32.7182");
    mcp_world_end(&w);
    /* without a PID namespace (danger-full-access): the group and the reaper */
    world_start_full(&w, "", false, "danger-full-access", NULL, NULL);
    r = run(&w, "(sleep 33.1415 &) ; exit", NULL);
    json_decref(r);
    assert_nothing_left(&w, "sleep 33.1415");
    mcp_world_end(&w);
}

int
main(void)
{
    server_path = getenv("EXECGATE_TEST_SERVER");
    wrapper_path = getenv("EXECGATE_TEST_WRAPPER");
    if (!server_path || !wrapper_path) {
        fprintf(stderr, "EXECGATE_TEST_SERVER and EXECGATE_TEST_WRAPPER are required\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interpreters_and_exec_helpers),
        cmocka_unit_test(test_preserve_program_paths),
        cmocka_unit_test(test_make_recipe),
        cmocka_unit_test(test_git_hook),
        cmocka_unit_test(test_raw_execve_from_c),
        cmocka_unit_test(test_forged_wrapper_exec),
        cmocka_unit_test(test_wrap_hint),
        cmocka_unit_test(test_escalated_shell_allowed),
        cmocka_unit_test(test_escalated_shell_approved),
        cmocka_unit_test(test_escalated_program_keeps_argv0_fds_cwd),
        cmocka_unit_test(test_prompt_for_program_started_by_env),
        cmocka_unit_test(test_session_approval_both_ways),
        cmocka_unit_test(test_wrapper_run_not_asked_twice),
        cmocka_unit_test(test_question_stops_the_clock),
        cmocka_unit_test(test_abort_from_the_tree),
        cmocka_unit_test(test_cancel_while_asking),
        cmocka_unit_test(test_client_eof_while_asking),
        cmocka_unit_test(test_normal_work),
        cmocka_unit_test(test_prompt_without_elicitation_refused),
        cmocka_unit_test(test_shell_mode_is_the_old_behaviour),
        cmocka_unit_test(test_no_user_notification_falls_back),
        cmocka_unit_test(test_strict_mode),
        cmocka_unit_test(test_no_fd_leak_across_calls),
        cmocka_unit_test(test_orphans_killed_and_reaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
