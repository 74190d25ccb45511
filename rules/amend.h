/*
 * rules amend: adds an "always allow" rule to a .rules file without ever
 * exposing a partly written file to a reader.
 */
#ifndef EXECGATE_RULES_AMEND_H
#define EXECGATE_RULES_AMEND_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The line rules_amend_allow_prefix appends for prefix[0..n) (n >= 1):
 * `prefix_rule(pattern=["tok", ...], decision="allow")`, each token a
 * double-quoted string escaped as JSON (which Starlark reads back as the
 * same string), without a newline.  Caller frees; NULL on OOM or n == 0.
 */
char *rules_amend_rule_line(const char *const *prefix, size_t n);

/*
 * Appends the rule line for prefix[0..n) to the file at `path`, keeping
 * every existing byte (a newline is added first when the file does not end
 * with one).  Creates the file and its missing parent directories.  Does
 * nothing when the file already has exactly that line.  A symbolic link at
 * `path` is followed: its target is the file updated.
 *
 * Atomic: the new contents go to a temporary file in the same directory,
 * which is fsync'd and renamed over the old one, then the directory is
 * fsync'd; a reader sees the old file or the new one, never a mix.
 * Concurrent amendments of files in one directory are serialised by an
 * flock on the directory, so none is lost.
 *
 * Returns 0, or -errno with *err set to a malloc'd one-line message naming
 * the file (caller frees); the file is then unchanged.
 */
int rules_amend_allow_prefix(const char *path, const char *const *prefix, size_t n, char **err);

/*
 * The file "always allow" writes for rules read from paths[0..n):
 * default.rules in the first that is a directory (default_dir counts
 * while it does not exist yet: amending creates it), named "DIR/NAME" as
 * the loader names the files it reads there (rules_load_paths), so that
 * its rules' origins compare equal.  NULL when every path is a file, or
 * when out of memory.  Caller frees.
 */
char *rules_amend_answers_file(const char *const *paths, size_t n, const char *default_dir);

/*
 * How many of a command's arguments (args[0..nargs), the words after the
 * program) the prefix "always allow" proposes keeps: those before the
 * first that looks like a path, a URL or data rather than a subcommand or
 * an option.  A word is kept when it is "-" or "--" at most, then a
 * letter, then letters, digits, '_' and '-' only, 40 bytes at most
 * ("push", "-rf", "--force", "run-tests"); "--" alone, "a/b", "x.py",
 * "--out=f", "https://..." and "hello world" end the prefix.  The
 * proposal is the program's last component followed by those words.
 * Cannot fail.
 */
size_t rules_amend_plain_words(const char *const *args, size_t nargs);

/*
 * Whether program (a name or a path: its last component counts) is one
 * whose arguments name the files it changes or deletes (rm, mv, cp, ln,
 * chmod, chown, dd, truncate, shred, tee, install, rsync, ...), so that
 * "always allow" proposes exactly the command line the person saw.
 * Cannot fail.
 */
bool rules_amend_exact_program(const char *program);

/*
 * How many of args[0..nargs) the prefix "always allow" proposes for
 * program keeps: all of them for rules_amend_exact_program's programs,
 * else rules_amend_plain_words's count.  Cannot fail.
 */
size_t rules_amend_proposed_words(const char *program, const char *const *args, size_t nargs);

#endif
