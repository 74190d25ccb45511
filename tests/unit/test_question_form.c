/*
 * question_form: the schema of execgate's questions, exactly: each choice
 * titled with enumNames and no other field (Codex refuses unknown ones),
 * the choices not offered left out, and no leak on any allocation
 * failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/decide/question_form.h"
#include "tests/support/alloc_fail.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const struct question_choice choices[] = {
    {"approved", "Yes, run it this once"},
    {"approved_execpolicy_amendment", NULL},
    {"denied", "No, do not run it"},
};

static void
test_titled_choices_in_both_forms(void **state)
{
    json_t *schema = question_form_schema(choices, 3, "what the values mean", "why");
    assert_non_null(schema);
    json_t *want =
        json_loads("{\"type\":\"object\",\"properties\":{"
                   "\"decision\":{\"type\":\"string\",\"title\":\"Decision\","
                   "\"description\":\"what the values mean\",\"enum\":[\"approved\",\"denied\"],"
                   "\"enumNames\":[\"Yes, run it this once\",\"No, do not run it\"]"
                   "},"
                   "\"reason\":{\"type\":\"string\",\"title\":\"Reason "
                   "(optional)\",\"description\":\"why\"}}}",
                   0, NULL);
    assert_non_null(want);
    if (!json_equal(schema, want)) {
        char *got = json_dumps(schema, JSON_COMPACT);
        fail_msg("schema %s", got);
    }
    /* the decision comes first: the order a form shows its fields in */
    const char *first =
        json_object_iter_key(json_object_iter(json_object_get(schema, "properties")));
    assert_string_equal(first, "decision");
    json_decref(want);
    json_decref(schema);
}

static void
schema_round(void *arg)
{
    (void)arg;
    json_t *schema = question_form_schema(choices, 3, "d", "r");
    if (alloc_fail_injected())
        assert_null(schema);
    else
        assert_non_null(schema);
    json_decref(schema);
}

static void
test_allocation_failures(void **state)
{
    json_set_alloc_funcs(malloc, free);
    assert_true(alloc_fail_sweep(schema_round, NULL) > 5);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_titled_choices_in_both_forms),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
