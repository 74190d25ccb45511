/*
 * text: how the rules' strings are kept and shown.  A NUL byte is part of
 * a rule's text in Codex: the policy keeps it as a two-byte stand-in
 * inside C strings, and people see it as U+2400.  Commands and files must
 * be UTF-8.
 */
#ifndef EXECGATE_RULES_TEXT_H
#define EXECGATE_RULES_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * A justification as the server shows it to a person (MCP results, audit
 * records, approval prompts): a C string in which each NUL byte of the
 * rule's text appears as U+2400 ("\u2400", the symbol for NUL), so that
 * nothing after a NUL is lost.  Returns a new string, or NULL on OOM.
 */
char *rules_text_shown(const char *s, size_t len);

/*
 * A NUL cannot be part of a C string, so the rules builder stores each NUL
 * of a host_executable name or path, a network_rule host and (for checking
 * examples only) a pattern token or an example word as these two bytes,
 * which are never UTF-8 and so never the rules' own text.  A command from
 * outside may carry them too; as in Codex, where no command word can equal
 * a string holding a NUL, such a command never equals one of those
 * strings (see RULES_CHECK_EXAMPLE).
 */
#define RULES_NUL_STANDIN "\xc0\x80"

/* True when s holds RULES_NUL_STANDIN.  Cannot fail. */
bool rules_has_nul_standin(const char *s);

/* Rewrites, in place, each RULES_NUL_STANDIN in a message as the two
 * characters \0, so that an error naming such a string stays UTF-8. */
void rules_show_nul_standins(char *s);

#endif
