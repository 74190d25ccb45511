/*
 * heuristic: the reference's forced-rm heuristic, the one decision made
 * for a command no rule covers: `rm -f` (and its spellings, behind sudo or
 * inside a shell's -c script) is asked about before it runs.  No I/O.
 */
#include "rules/heuristic.h"

#include "common/strv.h"

#include "rules/shlex.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *
base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static bool script_forces_rm(const char *const *words, size_t n, int depth);

static bool
rm_forced(const char *const *words, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        const char *w = words[i];
        if (strcmp(w, "--") == 0)
            return false;
        if (strcmp(w, "--force") == 0)
            return true;
        if (w[0] == '-' && w[1] != '-' && strchr(w + 1, 'f'))
            return true;
    }
    return false;
}

/* What the heuristic looks at: rm, sudo, then the shells whose -c script it
 * reads. */
static const char *const heuristic_programs[] = {"rm", "sudo", "sh", "bash", "dash", "zsh", NULL};
#define FIRST_SHELL 2

static bool
is_shell(const char *name)
{
    for (size_t i = FIRST_SHELL; heuristic_programs[i]; i++) {
        if (strcmp(name, heuristic_programs[i]) == 0)
            return true;
    }
    return false;
}

const char *const *
heuristic_programs_list(void)
{
    return heuristic_programs;
}

/*
 * words (from shlex) with ; & | inside a word also taken as separators
 * ("x;rm" is two commands to a shell).  Quotes are gone by now, so a quoted
 * ';' splits too: the heuristic then errs towards asking.  -1 on OOM.
 */
static int
split_script_forces_rm(char **words, size_t n, int depth)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += strlen(words[i]) + 1;
    /* every piece and separator points into one copy of the words */
    char *buf = malloc(total ? total : 1);
    const char **pieces = calloc(total * 2 + 1, sizeof(char *));
    if (!buf || !pieces) {
        free(buf);
        free(pieces);
        return -1;
    }
    size_t np = 0, at = 0;
    for (size_t i = 0; i < n; i++) {
        char *w = buf + at;
        size_t len = strlen(words[i]);
        memcpy(w, words[i], len + 1);
        at += len + 1;
        if (len == 0) {
            pieces[np++] = w; /* an empty word is still a word */
            continue;
        }
        char *start = w;
        for (char *c = w;; c++) {
            bool sep = *c == ';' || *c == '&' || *c == '|';
            if (!sep && *c != '\0')
                continue;
            bool end = *c == '\0';
            *c = '\0';
            if (c > start)
                pieces[np++] = start;
            if (end)
                break;
            pieces[np++] = ";";
            start = c + 1;
        }
    }
    bool forced = script_forces_rm(pieces, np, depth);
    free(buf);
    free(pieces);
    return forced;
}

/* The script of `SHELL ... -c SCRIPT`, split; -1 out of memory. */
static int
shell_script_forces_rm(const char *const *words, size_t n, int depth)
{
    for (size_t j = 1; j + 1 < n; j++) {
        const char *w = words[j];
        if (w[0] != '-' || w[1] == '-' || !strchr(w + 1, 'c'))
            continue;
        char **inner = NULL;
        size_t m = 0;
        const char *why = NULL;
        int rc = shlex_split(words[j + 1], strlen(words[j + 1]), &inner, &m, &why);
        if (rc == -ENOMEM)
            return -1;
        if (rc < 0)
            return 0;
        int forced = split_script_forces_rm(inner, m, depth + 1);
        strv_free(inner);
        return forced;
    }
    return 0;
}

/* One simple command: rm itself, behind sudo, or a shell's -c script. */
static bool
command_forces_rm(const char *const *words, size_t n, int depth)
{
    size_t i = 0;
    while (i < n && strcmp(base_name(words[i]), "sudo") == 0) {
        i++;
        while (i < n && words[i][0] == '-')
            i++; /* sudo's own flags */
    }
    if (i >= n)
        return false;
    const char *name = base_name(words[i]);
    if (strcmp(name, "rm") == 0)
        return rm_forced(words + i, n - i);
    if (!is_shell(name) || depth >= HEURISTIC_MAX_DEPTH)
        return false;
    return shell_script_forces_rm(words + i, n - i, depth) != 0;
}

static bool
is_separator(const char *w)
{
    return strcmp(w, ";") == 0 || strcmp(w, "&&") == 0 || strcmp(w, "||") == 0 ||
           strcmp(w, "|") == 0 || strcmp(w, "&") == 0;
}

static bool
script_forces_rm(const char *const *words, size_t n, int depth)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && !is_separator(words[i]))
            continue;
        if (i > start && command_forces_rm(words + start, i - start, depth))
            return true;
        start = i + 1;
    }
    return false;
}

bool
heuristic_forces_rm(const char *const *argv, size_t argc)
{
    return argc > 0 && command_forces_rm(argv, argc, 0);
}
