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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
