/* decision: the rules' whole answer for one exec, as the server and
 * `execgate-rules explain` both take it: the loader run as a program
 * followed, the dangerous-option caution, the forced-rm heuristic, and
 * the trace of the rules that did not match. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rules/decision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void
add_rule(struct rules_policy *p, const char *const *words, enum rules_decision d, uint32_t line)
{
    size_t n = 0;
    while (words[n])
        n++;
    struct rules_token pattern[8];
    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++)
        pattern[i] = (struct rules_token){&words[i], 1};
    const struct rules_origin origin = {"team.rules", line, 1};
    assert_int_equal(rules_policy_add_prefix_rule_at(p, pattern, n, d, NULL, &origin), 0);
}

/* Decides argv (its program walked from argv[0]) under p into *d. */
static void
decide(const struct rules_policy *p, const char *const *argv, unsigned flags, struct decision *d,
       struct exec_path *walk)
{
    size_t argc = 0;
    while (argv[argc])
        argc++;
    assert_int_equal(exec_path_walk(argv[0], "/", walk), 0);
    const struct verdict_rules vr = {p, NULL, NULL, false};
    const struct verdict_exec e = {argv, argc, NULL, NULL, 0};
    assert_int_equal(decision_make(&vr, &e, "/", walk, flags, d), 0);
}

/* The loader run as a program: the program it runs decides too, and may
 * only make the answer stricter. */
static void
test_loader(void **state)
{
    (void)state;
    const char *loader = "/lib64/ld-linux-x86-64.so.2";
    if (access(loader, X_OK) != 0 || access("/usr/bin/rm", X_OK) != 0)
        skip();
    struct rules_policy *p = rules_policy_new();
    assert_non_null(p);
    add_rule(p, WORDS("rm"), RULES_DECISION_FORBIDDEN, 1);
    add_rule(p, WORDS("cat"), RULES_DECISION_ALLOW, 2);
    struct decision d;
    struct exec_path walk;
    decide(p, WORDS(loader, "--argv0", "ls", "/usr/bin/rm", "-f", "x"), 0, &d, &walk);
    assert_int_equal(d.verdict.decision, RULES_DECISION_FORBIDDEN);
    decision_release(&d);
    exec_path_release(&walk);
    /* an allow behind the loader allows nothing */
    decide(p, WORDS(loader, "/usr/bin/cat", "x"), 0, &d, &walk);
    assert_int_equal(d.verdict.decision, RULES_DECISION_NONE);
    decision_release(&d);
    exec_path_release(&walk);
    rules_policy_free(p);
}

/* What the answer means beyond the rules. */
static void
test_caution_and_forced_rm(void **state)
{
    (void)state;
    if (access("/usr/bin/find", X_OK) != 0 || access("/usr/bin/rm", X_OK) != 0)
        skip();
    struct rules_policy *p = rules_policy_new();
    assert_non_null(p);
    add_rule(p, WORDS("find"), RULES_DECISION_ALLOW, 1);
    struct decision d;
    struct exec_path walk;
    decide(p, WORDS("/usr/bin/find", ".", "-exec", "rm", "{}", ";"), 0, &d, &walk);
    assert_int_equal(d.verdict.decision, RULES_DECISION_ALLOW);
    assert_non_null(d.caution);
    assert_false(d.forced_rm);
    decision_release(&d);
    exec_path_release(&walk);
    decide(p, WORDS("/usr/bin/find", ".", "-name", "x"), 0, &d, &walk);
    assert_null(d.caution);
    decision_release(&d);
    exec_path_release(&walk);
    decide(p, WORDS("/usr/bin/rm", "-rf", "x"), 0, &d, &walk);
    assert_int_equal(d.verdict.decision, RULES_DECISION_NONE);
    assert_true(d.forced_rm);
    decision_release(&d);
    exec_path_release(&walk);
    decide(p, WORDS("/usr/bin/rm", "x"), 0, &d, &walk);
    assert_false(d.forced_rm);
    decision_release(&d);
    exec_path_release(&walk);
    rules_policy_free(p);
}

/* The trace: asked for, each rule written for a name the exec goes by
 * that did not match, with where it stopped; never made unasked; the
 * list is capped and the count is not. */
static void
test_trace(void **state)
{
    (void)state;
    if (access("/usr/bin/env", X_OK) != 0)
        skip();
    struct rules_policy *p = rules_policy_new();
    assert_non_null(p);
    add_rule(p, WORDS("env", "-i", "x"), RULES_DECISION_ALLOW, 1);
    add_rule(p, WORDS("env", "-u"), RULES_DECISION_PROMPT, 2);
    add_rule(p, WORDS("other", "-i"), RULES_DECISION_PROMPT, 3);
    struct decision d;
    struct exec_path walk;
    decide(p, WORDS("/usr/bin/env", "-i"), 0, &d, &walk);
    assert_int_equal(d.n_missed, 0);
    decision_release(&d);
    exec_path_release(&walk);
    decide(p, WORDS("/usr/bin/env", "-i"), DECISION_TRACE, &d, &walk);
    assert_int_equal(d.verdict.decision, RULES_DECISION_NONE);
    assert_int_equal(d.n_missed, 2); /* under "env", the last component */
    assert_int_equal(d.n_misses, 2);
    assert_string_equal(d.misses[0].name, "env");
    assert_int_equal(d.misses[0].rule.origin.line, 1);
    assert_int_equal(d.misses[0].at, 2);
    assert_null(d.misses[0].word); /* the command ends first */
    assert_int_equal(d.misses[1].rule.origin.line, 2);
    assert_int_equal(d.misses[1].at, 1);
    assert_string_equal(d.misses[1].word, "-i");
    decision_release(&d);
    exec_path_release(&walk);
    for (uint32_t i = 0; i < DECISION_MAX_MISSES + 8; i++)
        add_rule(p, WORDS("env", "-0"), RULES_DECISION_PROMPT, 10 + i);
    decide(p, WORDS("/usr/bin/env", "-i"), DECISION_TRACE, &d, &walk);
    assert_int_equal(d.n_misses, DECISION_MAX_MISSES);
    assert_int_equal(d.n_missed, DECISION_MAX_MISSES + 10);
    decision_release(&d);
    exec_path_release(&walk);
    rules_policy_free(p);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loader),
        cmocka_unit_test(test_caution_and_forced_rm),
        cmocka_unit_test(test_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
