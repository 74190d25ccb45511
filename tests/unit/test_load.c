/* rules load: which files a list of rules paths stands for, in which order
 * (rules_each_file), and that rules_load_paths loads exactly those. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rules/load.h"
#include "tests/support/tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The files rules_each_file named, one a line. */
struct seen {
    char text[4096];
    int stop_at; /* return 7 on this call (from 1), or 0 */
    int calls;
};

static int
note(void *arg, const char *file)
{
    struct seen *s = arg;
    size_t len = strlen(s->text);
    snprintf(s->text + len, sizeof(s->text) - len, "%s\n", file);
    return ++s->calls == s->stop_at ? 7 : 0;
}

/* Writes one rule for program to dir/name. */
static void
rule_file(const char *dir, const char *name, const char *program)
{
    char *path = tmpdir_path(dir, name);
    char text[128];
    snprintf(text, sizeof(text), "prefix_rule(pattern=[\"%s\"], decision=\"allow\")\n", program);
    tmpdir_write_file(path, text, 0644);
    free(path);
}

static int
first_file(void *arg, const struct rules_prefix_rule *rule)
{
    struct seen *s = arg;
    size_t len = strlen(s->text);
    snprintf(s->text + len, sizeof(s->text) - len, "%s %s\n", rule->program, rule->origin.file);
    return 0;
}

static void
test_each_file(void **state)
{
    char *dir = tmpdir_new("load");
    char *rules = tmpdir_path(dir, "rules");
    tmpdir_make_dir(dir, "rules");
    rule_file(rules, "b.rules", "b");
    rule_file(rules, "a.rules", "a");
    rule_file(rules, ".hidden.rules", "hidden");
    rule_file(rules, "notes.txt", "notes");
    tmpdir_make_dir(rules, "sub.rules");
    rule_file(dir, "extra.rules", "extra");
    char *extra = tmpdir_path(dir, "extra.rules");
    char *missing = tmpdir_path(dir, "missing");
    char *want = NULL;
    char *err = NULL;

    /* a directory's *.rules by name, then a file; the default directory
     * skipped when missing; a missing path named all the same */
    const char *paths[] = {missing, rules, extra, "/nonexistent/x.rules"};
    struct seen s = {0};
    assert_int_equal(rules_each_file(paths, 4, missing, note, &s, &err), 0);
    assert_null(err);
    assert_true(asprintf(&want, "%s/a.rules\n%s/b.rules\n%s\n/nonexistent/x.rules\n", rules, rules,
                         extra) > 0);
    assert_string_equal(s.text, want);
    free(want);

    /* fn's non-zero ends it */
    s = (struct seen){.stop_at = 2};
    assert_int_equal(rules_each_file(paths, 4, missing, note, &s, &err), 7);
    assert_int_equal(s.calls, 2);

    /* rules_load_paths loads those files, in that order */
    struct rules_policy *p = rules_load_paths(paths, 3, missing, &err);
    assert_non_null(p);
    s = (struct seen){0};
    rules_policy_each_rule(p, first_file, &s);
    assert_true(asprintf(&want, "a %s/a.rules\nb %s/b.rules\nextra %s\n", rules, rules, extra) > 0);
    assert_string_equal(s.text, want);
    free(want);
    rules_policy_free(p);

    free(missing);
    free(extra);
    free(rules);
    tmpdir_remove(dir);
    free(dir);
}

/* The decision the policy gives argv (NONE when no rule matches). */
static enum rules_decision
decide(const struct rules_policy *p, const char *const *argv, size_t argc)
{
    struct rules_result r;
    assert_int_equal(rules_policy_check(p, argv, argc, 0, &r), 0);
    enum rules_decision d = r.decision;
    rules_result_free(&r);
    return d;
}

/*
 * A file of thousands of statements is run a statement at a time, and
 * the memory of windows of literal calls is given back as it goes: what
 * earlier statements left behind (a global, a function whose body names a
 * later global, a rule's match examples checked at the end, names first
 * seen late) must survive that.  Under AddressSanitizer a use of released
 * memory fails the test.
 */
static void
test_stream_large_file(void **state)
{
    char *dir = tmpdir_new("load-stream");
    char *path = tmpdir_path(dir, "big.rules");
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
#define ADD(...) (len += (size_t)snprintf(text + len, cap - len, __VA_ARGS__))
    /* Each thing to keep sits in a window of its own between windows of
     * literal calls (a window is about 1 024 tokens). */
    ADD("kept = [\"kept\", \"list\"]\n"
        "def late():\n    return words\n"
        "prefix_rule(pattern = [\"first\"], match = [\"first\"], not_match = [\"second\"])\n");
    int tool = 0;
    const char *between[] = {
        "prefix_rule(pattern = [\"early\"], match = [\"early x\"], not_match = [\"later\"])\n",
        "prefix_rule(pattern = [\"odd\"], decision = \"prompt\", justification = \"late name\")\n",
        "words = [\"late\", \"words\"]\n",
        "prefix_rule(pattern = kept + late(), decision = \"forbidden\", "
        "justification = str(len(kept)))\n",
    };
    for (size_t k = 0; k < sizeof between / sizeof between[0]; k++) {
        for (int i = 0; i < 1500; i++, tool++)
            ADD("prefix_rule(pattern = [\"tool%d\", [\"a\", \"b\"]], decision = \"allow\")\n",
                tool);
        ADD("%s", between[k]);
    }
#undef ADD
    assert_true(len < cap);
    tmpdir_write_file(path, text, 0644);
    free(text);

    char *err = NULL;
    const char *files[] = {path};
    struct rules_policy *p = rules_load(NULL, files, 1, &err);
    if (p == NULL)
        fail_msg("load failed: %s", err);
    assert_int_equal(rules_policy_rule_count(p), 6000 + 4);
    const char *early[] = {"early", "x"}, *t0[] = {"tool0", "a"}, *t5999[] = {"tool5999", "b"};
    const char *odd[] = {"odd"}, *t6000[] = {"tool6000", "a"};
    const char *last[] = {"kept", "list", "late", "words"};
    assert_int_equal(decide(p, early, 2), RULES_DECISION_ALLOW);
    assert_int_equal(decide(p, t0, 2), RULES_DECISION_ALLOW);
    assert_int_equal(decide(p, t5999, 2), RULES_DECISION_ALLOW);
    assert_int_equal(decide(p, odd, 1), RULES_DECISION_PROMPT);
    assert_int_equal(decide(p, t6000, 2), RULES_DECISION_NONE);
    assert_int_equal(decide(p, last, 4), RULES_DECISION_FORBIDDEN);
    rules_policy_free(p);

    /* An example that fails, kept from the first window, is still checked
     * at the end, with its position. */
    text = NULL;
    len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    for (int i = 0; i < 3000; i++) {
        if (i == 1500)
            fprintf(f, "prefix_rule(pattern = [\"early\"], match = [\"other\"])\n");
        fprintf(f, "prefix_rule(pattern = [\"tool%d\"])\n", i);
    }
    fclose(f);
    tmpdir_write_file(path, text, 0644);
    free(text);
    p = rules_load(NULL, files, 1, &err);
    assert_null(p);
    assert_non_null(err);
    assert_non_null(strstr(err, "big.rules:1501:1:"));
    free(err);

    tmpdir_remove(dir);
    free(path);
    free(dir);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_file),
        cmocka_unit_test(test_stream_large_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
