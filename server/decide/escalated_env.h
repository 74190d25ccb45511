/*
 * escalated_env: the environment of a program the server runs outside the
 * sandbox ("escalated"), reset as sudo's env_reset does rather than taken
 * from the request, since everything in the request was chosen by the
 * sandboxed command (HOME pointing at a crafted .gitconfig, PATH, GIT_DIR,
 * PAGER...).  Pure: no I/O, no libuv.
 *
 * The result, at most one entry per name, in this order:
 *  1. the server's own environment (the user's real HOME, PATH, XDG_*,
 *     USER, SHELL, locale...), the first entry of each name, without
 *     execgate's own variables (escalated_env_own_list), the names of
 *     exec_checks' drop list (exec_checks_env_dropped: loader, shell
 *     start-up and interpreter hooks), the forced names, PWD, the
 *     allow-list names (unless also pass names) and the pass names the
 *     request has;
 *  2. from the request, the allow-list names (escalated_env_allow_list),
 *     each with a value that passes its check; for these names the request
 *     decides: a name it lacks, or whose first entry's value fails the
 *     check, is unset;
 *  3. from the request, the pass names (--pass-env), as they are; a pass
 *     name the request lacks keeps the server's value, if any;
 *  4. the forced values (escalated_env_forced_list), whatever either side
 *     says: no pager, no editor, no terminal or graphical prompt;
 *  5. PWD=workdir.
 * In the request, the first entry of a name counts (getenv's reading) and
 * entries without '=' are ignored; a pass name that
 * escalated_env_pass_name_problem refuses is ignored.
 */
#ifndef EXECGATE_SERVER_ESCALATED_ENV_H
#define EXECGATE_SERVER_ESCALATED_ENV_H

#include <stdbool.h>
#include <stddef.h>

/* How an allow-listed request value is checked before it is taken. */
enum escalated_env_check {
    /* printable ASCII without space, '/' or '%' (a locale, terminal or
     * colour name: no path, no format); empty is fine */
    ESCALATED_ENV_CHECK_WORD,
    /* 1 to 5 decimal digits */
    ESCALATED_ENV_CHECK_NUMBER,
    /* a zone: printable ASCII without space, after an optional ':' either
     * relative (to the zoneinfo directory) or under /usr/share/zoneinfo/,
     * with no ".." component; empty is fine */
    ESCALATED_ENV_CHECK_TZ,
};

struct escalated_env_allowed {
    const char *name; /* an exact name */
    enum escalated_env_check check;
};

struct escalated_env_forced {
    const char *name;
    const char *value; /* NULL: removed */
};

/*
 * A new environment for an escalated program, built as described above.
 * server_env and request_env are NULL-terminated "NAME=value" arrays (either
 * may be NULL: empty); pass_names[0..n_pass) the --pass-env names; workdir
 * the program's cwd (NULL: no PWD).  Nothing given is kept or changed.
 * Returns a NULL-terminated malloc'd array of malloc'd strings, which the
 * caller frees with strv_free (common/strv.h), or NULL out of memory.
 */
char **escalated_env_build(char *const *server_env, char *const *request_env,
                           const char *const *pass_names, size_t n_pass, const char *workdir);

/* Appends NAME=value to *env (from escalated_env_build, which must not
 * have the name: one of the forced names it removes, such as
 * GIT_CEILING_DIRECTORIES).  Returns 0, or -1 when out of memory (*env
 * unchanged). */
int escalated_env_add(char ***env, const char *name, const char *value);

/*
 * NULL when name may be given to --pass-env, else why not, as a static
 * phrase that follows the name ("is empty", "is one of execgate's own
 * variables"...): not a variable name ([A-Za-z_][A-Za-z0-9_]*, so no '='),
 * execgate's own, on exec_checks' drop list, forced, PWD.  Cannot fail.
 */
const char *escalated_env_pass_name_problem(const char *name);

/* Whether the entry "NAME=value" (or a bare NAME) is one of execgate's own
 * variables, which never reach an escalated program.  Cannot fail. */
bool escalated_env_is_own(const char *entry);

/* The tables, for docs and tests; *n gets the count; static storage.
 * Own: names, a trailing '*' marks a prefix. */
const struct escalated_env_allowed *escalated_env_allow_list(size_t *n);
const struct escalated_env_forced *escalated_env_forced_list(size_t *n);
const char *const *escalated_env_own_list(size_t *n);

#endif
