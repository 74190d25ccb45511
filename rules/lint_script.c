/*
 * lint scripts: what a sed script or an awk program given on the command
 * line may do (run a command, write a file), read as sed and awk would.
 */
#include "rules/lint_script.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rules/lint_table.h"

/* ---- sed scripts ---- */

/* Skips to the end of the line (the '\n' or the NUL). */
static const char *
sed_line_end(const char *s)
{
    return s + strcspn(s, "\n");
}

/* Past the text of a/i/c: to the end of the line, and on over lines that
 * end in a backslash. */
static const char *
sed_text_end(const char *s)
{
    for (;;) {
        const char *e = sed_line_end(s);
        size_t backslashes = 0;
        for (const char *b = e; b > s && b[-1] == '\\'; b--)
            backslashes++;
        if (*e == '\0' || backslashes % 2 == 0)
            return e;
        s = e + 1;
    }
}

/* Past a delimited part of s or y (the delimiter included), honouring
 * backslash escapes; NULL when it does not end. */
static const char *
sed_delimited(const char *s, char delim)
{
    for (; *s; s++) {
        if (*s == '\\') {
            if (*++s == '\0')
                return NULL;
        } else if (*s == delim) {
            return s + 1;
        }
    }
    return NULL;
}

/* Past an address: a number (first~step), $, /regex/ or \cregexc with
 * I and M flags, and +N or ~N in a second address.  NULL on a bad one. */
static const char *
sed_address(const char *s)
{
    if (*s == '/' || *s == '\\') {
        char delim = *s == '/' ? '/' : s[1];
        if (*s == '\\' && (delim == '\0' || delim == '\n' || delim == '\\'))
            return NULL;
        s = sed_delimited(s + (*s == '/' ? 1 : 2), delim);
        while (s && (*s == 'I' || *s == 'M'))
            s++;
        return s;
    }
    if (*s == '$')
        return s + 1;
    if (*s == '+' || *s == '~')
        s++;
    while (*s >= '0' && *s <= '9')
        s++;
    if (*s == '~') {
        s++;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return s;
}

/*
 * What a GNU sed script may do: LINT_SED_RUNS for an e command or an s///e,
 * LINT_SED_WRITES for a w or W command or an s///w.  Anything it does not
 * understand counts as both: in doubt, a person is asked.
 */
static unsigned
sed_script_effects(const char *s)
{
    const unsigned unknown = LINT_SED_RUNS | LINT_SED_WRITES;
    unsigned fx = 0;
    while (*s) {
        if (strchr(" \t\n;}{", *s)) {
            s++;
            continue;
        }
        if (*s == '#') {
            s = sed_line_end(s);
            continue;
        }
        if (strchr("0123456789$/\\+~", *s)) {
            s = sed_address(s);
            if (s && *s == ',')
                s = sed_address(s + 1);
            if (!s)
                return unknown;
        }
        while (*s == ' ' || *s == '\t' || *s == '!')
            s++;
        char cmd = *s ? *s++ : '\0';
        switch (cmd) {
        case '\0':
            return fx;
        case '{':
        case '}':
            continue;
        case 'e':
            fx |= LINT_SED_RUNS;
            s = sed_line_end(s);
            continue;
        case 'w':
        case 'W':
            fx |= LINT_SED_WRITES;
            s = sed_line_end(s);
            continue;
        case 'a':
        case 'i':
        case 'c':
            s = sed_text_end(s);
            continue;
        case 'r':
        case 'R':
            s = sed_line_end(s);
            continue;
        case ':':
        case 'b':
        case 't':
        case 'T':
        case 'v':
            s += strcspn(s, ";\n");
            continue;
        case 'y':
        case 's': {
            char delim = *s;
            if (delim == '\0' || delim == '\n' || delim == '\\')
                return unknown;
            s = sed_delimited(s + 1, delim); /* the regex, or y's source */
            s = s ? sed_delimited(s, delim) : NULL;
            if (!s)
                return unknown;
            while (cmd == 's' && *s && strchr("gpiImM0123456789ew", *s)) {
                if (*s == 'e')
                    fx |= LINT_SED_RUNS;
                if (*s == 'w') {
                    fx |= LINT_SED_WRITES; /* the file name runs to the end of the line */
                    s = sed_line_end(s);
                    break;
                }
                s++;
            }
            continue;
        }
        default:
            if (strchr("=dDgGhHlnNpPqQxzF", cmd)) {
                while (*s == ' ' || *s == '\t' || (*s >= '0' && *s <= '9'))
                    s++; /* l and q, Q take a number */
                if (*s && !strchr(";\n}#", *s))
                    return unknown;
                continue;
            }
            return unknown;
        }
    }
    return fx;
}

/* Whether arg is sed's long option spec (see long_matches), and where its
 * value is: after '=' (*value), or the next word (*value NULL). */
static bool
sed_long(const char *arg, const char *spec, const char **value)
{
    const char *eq = strchr(arg, '=');
    size_t key_len = eq ? (size_t)(eq - arg) : strlen(arg);
    *value = eq ? eq + 1 : NULL;
    return lint_long_matches(spec, arg, key_len);
}

/* Appends s and a newline to *buf; false on OOM. */
static bool
sed_append(char **buf, size_t *len, const char *s)
{
    size_t n = strlen(s);
    char *grown = realloc(*buf, *len + n + 2);
    if (!grown)
        return false;
    memcpy(grown + *len, s, n);
    grown[*len + n] = '\n';
    grown[*len + n + 1] = '\0';
    *buf = grown;
    *len += n + 1;
    return true;
}

/*
 * The effects of the scripts a sed command line gives (-e SCRIPT,
 * --expression=SCRIPT, or else its first operand), joined as sed joins
 * them; none with --sandbox, which refuses e and w.  Out of memory counts
 * as anything.
 */
unsigned
lint_sed_effects(const char *const *argv, size_t start, size_t argc)
{
    char *script = NULL;
    size_t len = 0;
    bool ok = true, given = false, options = true;
    const char *first_operand = NULL;
    for (size_t i = start; i < argc && ok; i++) {
        const char *a = argv[i];
        const char *text = NULL, *value = NULL;
        if (options && strcmp(a, "--") == 0) {
            options = false;
        } else if (!options || a[0] != '-' || a[1] == '\0') {
            if (!first_operand)
                first_operand = a;
        } else if (strcmp(a, "--sandbox") == 0) {
            /* counted only as sed reads it (lint_sed_sandboxed) */
        } else if (sed_long(a, "--e[xpression]", &value)) {
            text = value ? value : (i + 1 < argc ? argv[++i] : "");
        } else if (sed_long(a, "--fi[le]", &value) || sed_long(a, "--l[ine-length]", &value)) {
            i += value ? 0 : 1;
        } else if (a[1] != '-' && strchr(a, 'e')) {
            /* -e SCRIPT, -ne SCRIPT, -neSCRIPT: e takes the rest, or the next word */
            const char *e = strchr(a, 'e');
            text = e[1] ? e + 1 : (i + 1 < argc ? argv[++i] : "");
        } else if (strcmp(a, "-f") == 0 || strcmp(a, "-l") == 0) {
            i++;
        }
        if (text) {
            given = true;
            ok = sed_append(&script, &len, text);
        }
    }
    if (ok && !given && first_operand)
        ok = sed_append(&script, &len, first_operand);
    unsigned fx = ok ? (script ? sed_script_effects(script) : 0) : LINT_SED_RUNS | LINT_SED_WRITES;
    free(script);
    return lint_sed_sandboxed(argv, start, argc) ? 0 : fx;
}

/*
 * Whether a sed command line really gives --sandbox: an option word of its
 * own, not the value of -e, -f, -l (alone or at the end of a cluster:
 * "-nf --sandbox" reads a script file named "--sandbox") or of their long
 * forms, and before a "--".  GNU sed takes options after operands too.
 * Only the full name counts (an abbreviation errs towards asking).
 */
bool
lint_sed_sandboxed(const char *const *argv, size_t start, size_t argc)
{
    for (size_t i = start; i < argc; i++) {
        const char *a = argv[i], *value = NULL;
        if (strcmp(a, "--") == 0)
            return false;
        if (a[0] != '-' || a[1] == '\0')
            continue;
        if (strcmp(a, "--sandbox") == 0)
            return true;
        if (a[1] == '-') {
            if ((sed_long(a, "--e[xpression]", &value) || sed_long(a, "--fi[le]", &value) ||
                 sed_long(a, "--l[ine-length]", &value)) &&
                !value)
                i++;
            continue;
        }
        /* a cluster: e, f and l take the rest, or the next word; i and
         * its suffix end it */
        for (const char *c = a + 1; *c; c++) {
            if (*c == 'i')
                break;
            if (strchr("efl", *c)) {
                if (c[1] == '\0')
                    i++;
                break;
            }
        }
    }
    return false;
}

/* ---- awk programs ---- */

/* Whether awk program text may run a command or write a file: system(),
 * a pipe (print | "cmd", "cmd" | getline), a redirection (print > FILE;
 * a comparison reads the same and counts too), gawk's @load and @include.
 * Text it cannot read counts: in doubt, a person is asked. */
static bool
awk_text_dangerous(const char *text)
{
    return strpbrk(text, "|>@") != NULL || strstr(text, "system") != NULL ||
           strstr(text, "ENVIRON") != NULL;
}

/*
 * Whether an awk command line may run commands or write files: its
 * options are only -F and -v (alone, attached or with the next word, and
 * their long forms), "--" ends them, and the program (the first operand,
 * or every -e/--source text) is harmless.  Anything else (-f FILE, gawk's
 * -i, -l, -E, -o, -p, -d, -D, mawk's -W, an unknown option) counts.
 */
bool
lint_awk_dangerous(const char *const *argv, size_t start, size_t argc)
{
    bool given = false;
    for (size_t i = start; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            if (!given)
                return i + 1 >= argc || awk_text_dangerous(argv[i + 1]);
            return false;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (!given)
                return awk_text_dangerous(a);
            return false; /* operands: files and assignments */
        }
        const char *value = NULL;
        if (a[1] == 'F' || a[1] == 'v') {
            i += a[2] ? 0 : 1;
        } else if (lint_long_matches("--field-separator", a, strcspn(a, "=")) ||
                   lint_long_matches("--assign", a, strcspn(a, "="))) {
            i += strchr(a, '=') ? 0 : 1;
        } else if (strcmp(a, "-e") == 0 || sed_long(a, "--so[urce]", &value)) {
            const char *text = value ? value : (i + 1 < argc ? argv[++i] : "");
            if (awk_text_dangerous(text))
                return true;
            given = true;
        } else {
            return true;
        }
    }
    return false;
}
