/*
 * lint table: what execgate knows about programs that are dangerous
 * outside the sandbox, one entry per program (and subcommand): whether
 * it runs code from the working tree or any program it is given, and the
 * options that write any file or run any command.  The lint's warnings
 * and its check of one command (lint.c) read the same entries.  For the
 * lint modules only; others use lint.h.
 */
#ifndef EXECGATE_RULES_LINT_TABLE_H
#define EXECGATE_RULES_LINT_TABLE_H

#include <stdbool.h>
#include <stddef.h>

/* How an option of the table shows in a command. */
enum lint_form {
    /* "--name", "--name=VALUE", or an abbreviation: in "--out[put]" the part
     * before '[' is the shortest one the program accepts. */
    LINT_LONG = 1,
    /* "-x", "-xVALUE", or x anywhere in a cluster "-abx" (a letter that is
     * part of another option's value counts too: in doubt, ask). */
    LINT_SHORT,
    /* this exact word: find's "-exec", git bisect's "run" */
    LINT_WORD,
    /* any use of the program (or of the subcommand) */
    LINT_ANY,
    /* a sed script's e command or s///e (name "e"), or its w, W command or
     * s///w (name "w"); scripts sed cannot show (-f FILE) are the table's
     * -f entries.  --sandbox disables both. */
    LINT_SED_SCRIPT,
    /* an awk program (the first operand, or -e/--source text) that may
     * run a command or write a file: system(), a pipe, a redirection, a
     * gawk @load or @include; a program awk reads from a file (-f) or an
     * option other than -F and -v counts too */
    LINT_AWK_PROGRAM,
};

/* The option takes a file to write; "-" (standard output) and /dev/null
 * are harmless values. */
#define LINT_OUT 0x1u
/* sed --sandbox, which refuses the e, w and r commands, makes it harmless. */
#define LINT_SANDBOXABLE 0x2u

struct lint_option {
    enum lint_form form; /* 0 ends a list */
    unsigned flags;      /* LINT_OUT, LINT_SANDBOXABLE */
    const char *name;    /* as matched, see enum lint_form */
    const char *shown;   /* as warnings write it: "--output=FILE" */
    const char *effect;  /* "writes any file" */
    const char *use;     /* what rules_lint_dangerous_use returns */
};

/* Entry flags. */
enum {
    /* the names also stand for name + version: python3.12, pip3, perl5.36 */
    LINT_VERSIONED = 0x1u,
    /* the options come before the subcommand (git -c, git -C) */
    LINT_LEADING = 0x2u,
    /* "--" does not end the options (find's expression goes on) */
    LINT_NO_DASHDASH = 0x4u,
    /* the first word is a cluster of options even without "-" (tar xf) */
    LINT_OLD_CLUSTER = 0x8u,
    /* runs any code or program it is given, whatever else the command
     * says: no prefix of it is narrow enough to allow for good */
    LINT_RUNS_GIVEN = 0x10u,
    /* every use counts as a dangerous use (its LINT_ANY option), even of
     * the whole program: what it runs comes from its input or from files
     * the command controls (vim -es, ed, strace, gdb) */
    LINT_EVERY_USE = 0x20u,
};

struct lint_entry {
    const char *const *programs; /* NULL-terminated */
    unsigned flags;
    /* Why any allow rule for the program is dangerous, or NULL: the end of
     * the sentence `allow rule for "make" ...`. */
    const char *runs;
    /* The subcommands the options belong to; NULL: the whole program. */
    const char *const *subs;
    /* LINT_LEADING: the options before the subcommand that take the next
     * word as their value (so that word is not the subcommand). */
    const char *const *takes_value;
    const struct lint_option *options; /* NULL, or ended by form 0 */
};

/* The advice that ends a warning about a program that is dangerous
 * whatever the command. */
#define LINT_USE_PROMPT "; use decision=\"prompt\""

extern const struct lint_entry lint_table[];
extern const size_t lint_table_len;

/* A long option spec "--out[put]" against key (an argument up to its '='):
 * key must be a prefix of "--output" at least as long as "--out". */
bool lint_long_matches(const char *spec, const char *key, size_t key_len);

#endif
