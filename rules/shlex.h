/*
 * shlex: POSIX-shell word splitting as Codex splits `match` examples (the
 * Rust shlex crate: comments, continuations), and quoting as Python's
 * shlex.join does.  Used for `match` examples
 * written as strings and for showing commands to a person.
 */
#ifndef EXECGATE_RULES_SHLEX_H
#define EXECGATE_RULES_SHLEX_H

#include <stddef.h>

/*
 * Splits s[0..len) into words: blanks (space, tab, LF; not CR) separate
 * them, a `#` where a word would start comments out the rest of the line,
 * single quotes keep everything literally, double quotes keep everything
 * but `\$ \` \" \\` (one character) and backslash-newline (nothing), a
 * backslash outside quotes drops before a newline and else takes the next
 * byte literally, and adjacent pieces join into one word ("" is an empty
 * word).
 * A NUL byte inside s is an error.
 * Returns 0 with *words (NULL-terminated, *n_words entries; free with
 * strv_free, common/strv.h), -EINVAL with *err set to a static message
 * ("No closing quotation", "No escaped character", ...), or -ENOMEM.
 */
int shlex_split(const char *s, size_t len, char ***words, size_t *n_words, const char **err);

/*
 * s quoted for a POSIX shell: unchanged when it is non-empty and made only
 * of letters, digits and `@%+=:,./-_`; else in single quotes, with each
 * `'` written as `'"'"'`.  Caller frees; NULL on OOM.
 */
char *shlex_quote(const char *s);

/* The words quoted with shlex_quote and joined by single spaces.  Caller
 * frees; NULL on OOM. */
char *shlex_join(const char *const *words, size_t n);

#endif
