/*
 * question_form: the requestedSchema of execgate's elicitation questions,
 * so that every client renders them well: a decision whose values are the
 * ones the answer carries back (Codex's review decisions), each with a
 * title a person reads, and a free-text reason.
 *
 * The titles go in enumNames beside enum (MCP 2025-06-18's titled enum,
 * which 2025-11-25 keeps as its legacy form), and in nothing else.  Codex
 * reads a schema into one of a few typed forms before its TUI shows it
 * (app-server-protocol's McpElicitation*Schema, whose source declares
 * deny_unknown_fields): a property with both enumNames and 2025-11-25's
 * oneOf was kept by 0.169 as oneOf alone, so which titles survive would
 * depend on the form Codex picks; with one form there is no choice to
 * make, and every property carries only fields those types know.  A
 * client that knows no enumNames shows the values, which the description
 * explains.
 */
#ifndef EXECGATE_SERVER_QUESTION_FORM_H
#define EXECGATE_SERVER_QUESTION_FORM_H

#include <jansson.h>
#include <stddef.h>

/* One choice: the value an answer carries, and what a person reads. */
struct question_choice {
    const char *value;
    const char *title; /* NULL: the choice is not offered */
};

/*
 * The schema {"type":"object","properties":{"decision":...,"reason":...}}
 * offering choices[0..n) (those with a title, in order), decision
 * described by description, and reason described by reason_description.
 * NULL when out of memory.
 */
json_t *question_form_schema(const struct question_choice *choices, size_t n,
                             const char *description, const char *reason_description);

/*
 * elicitation/create's params: {"message": message, "requestedSchema":
 * the schema above}; asked again, saying why (note not NULL), the message
 * is "Asked again: NOTE. MESSAGE".  NULL when out of memory.
 */
json_t *question_form_params(const char *message, const char *note,
                             const struct question_choice *choices, size_t n,
                             const char *description, const char *reason_description);

#endif
