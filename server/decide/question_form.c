#include "server/decide/question_form.h"

#include "common/strfmt.h"

#include <stdbool.h>
#include <stdlib.h>

json_t *
question_form_schema(const struct question_choice *choices, size_t n, const char *description,
                     const char *reason_description)
{
    json_t *decision = json_pack("{s:s, s:s, s:s}", "type", "string", "title", "Decision",
                                 "description", description);
    json_t *values = json_array(), *names = json_array();
    if (!decision) {
        json_decref(values);
        json_decref(names);
        return NULL;
    }
    /* set_new takes each array, also on failure; they stay borrowed here */
    bool ok = json_object_set_new(decision, "enum", values) == 0;
    ok = json_object_set_new(decision, "enumNames", names) == 0 && ok;
    for (size_t i = 0; ok && i < n; i++) {
        if (!choices[i].title)
            continue;
        ok = json_array_append_new(values, json_string(choices[i].value)) == 0 &&
             json_array_append_new(names, json_string(choices[i].title)) == 0;
    }
    if (!ok) {
        json_decref(decision);
        return NULL;
    }
    /* "o" takes decision, also on failure */
    return json_pack("{s:s, s:{s:o, s:{s:s, s:s, s:s}}}", "type", "object", "properties",
                     "decision", decision, "reason", "type", "string", "title", "Reason (optional)",
                     "description", reason_description);
}

json_t *
question_form_params(const char *message, const char *note, const struct question_choice *choices,
                     size_t n, const char *description, const char *reason_description)
{
    char *again = note ? strfmt("Asked again: %s. %s", note, message) : NULL;
    json_t *schema =
        !note || again ? question_form_schema(choices, n, description, reason_description) : NULL;
    /* "o" takes schema, also on failure */
    json_t *params = schema ? json_pack("{s:s, s:o}", "message", again ? again : message,
                                        "requestedSchema", schema)
                            : NULL;
    free(again);
    return params;
}
