/*
 * question_text: what a person reads in a question, built so that nothing
 * a command carries can forge its layout (question_text.h).
 */
#include "server/decide/question_text.h"

#include "common/strfmt.h"
#include "common/utf8.h"
#include "rules/shlex.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the code point at s (UTF-8, valid) is one that could make the
 * text read other than it is: a C1 control, a bidirectional override or
 * isolate, a zero-width or byte-order mark.  *len gets its length. */
static bool
invisible_at(const unsigned char *s, size_t *len, unsigned *cp)
{
    *len = 1;
    if (s[0] < 0xc0)
        return false;
    *len = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
    if (*len == 2)
        *cp = ((s[0] & 0x1fu) << 6) | (s[1] & 0x3fu);
    else if (*len == 3)
        *cp = ((s[0] & 0x0fu) << 12) | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
    else
        return false;
    return (*cp >= 0x80 && *cp <= 0x9f) || (*cp >= 0x200b && *cp <= 0x200f) ||
           (*cp >= 0x2028 && *cp <= 0x202e) || (*cp >= 0x2066 && *cp <= 0x2069) || *cp == 0xfeff;
}

/* text with every byte that could forge the question's layout escaped:
 * control characters as \n, \t, \r or \xNN, a backslash as \\, backticks
 * as \x60, invisible
 * code points as \u{XXXX}; bytes that are not UTF-8 become U+FFFD. */
char *
question_text_shown(const char *text)
{
    size_t len = 0;
    char *u = utf8_lossy(text, strlen(text), &len);
    char *out = u ? malloc(len * 10 + 1) : NULL;
    if (!out) {
        free(u);
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)u[i];
        size_t n = 1;
        unsigned cp = 0;
        if (c == '\n' || c == '\t' || c == '\r' || c == '\\') {
            /* a backslash doubled: what reads as an escape is one */
            out[o++] = '\\';
            out[o++] = c == '\n' ? 'n' : c == '\t' ? 't' : c == '\r' ? 'r' : '\\';
        } else if (c < 0x20 || c == 0x7f || c == '`') {
            /* a backslash does not escape a backtick in a code span: the
             * question's own four stay the only ones */
            o += (size_t)sprintf(out + o, "\\x%02x", c);
        } else if (invisible_at((const unsigned char *)u + i, &n, &cp)) {
            o += (size_t)sprintf(out + o, "\\u{%04X}", cp);
        } else {
            memcpy(out + o, u + i, n);
            o += n;
        }
        i += n;
    }
    out[o] = '\0';
    free(u);
    return out;
}

/* program and args as a question shows them: the program as it is, the
 * arguments quoted as a shell reads them, all escaped (question_text_shown).
 * NULL when out of memory. */
char *
question_text_command(const char *program, const char *const *args, size_t nargs)
{
    char *joined = shlex_join(args, nargs);
    char *prog = question_text_shown(program);
    char *shown_args = joined ? question_text_shown(joined) : NULL;
    char *cmd =
        prog && shown_args ? strfmt("%s%s%s", prog, nargs > 0 ? " " : "", shown_args) : NULL;
    free(joined);
    free(prog);
    free(shown_args);
    return cmd;
}

char *
question_text_exec(const char *program, const char *const *args, size_t nargs, const char *workdir)
{
    char *cmd = question_text_command(program, args, nargs);
    char *wd = question_text_shown(workdir);
    char *text = cmd && wd ? strfmt("Allow agent to run `%s` in `%s`?", cmd, wd) : NULL;
    free(cmd);
    free(wd);
    return text;
}

char *
question_text_child(const char *parent, const char *why, const char *program,
                    const char *const *args, size_t nargs, const char *workdir)
{
    char *shown_parent = question_text_shown(parent);
    char *shown_why = question_text_shown(why);
    char *cmd = question_text_command(program, args, nargs);
    char *wd = question_text_shown(workdir);
    char *text =
        shown_parent && shown_why && cmd && wd
            ? strfmt("`%s` (%s) wants to start `%s` outside the sandbox, in `%s`. Allow it?",
                     shown_parent, shown_why, cmd, wd)
            : NULL;
    free(shown_parent);
    free(shown_why);
    free(cmd);
    free(wd);
    return text;
}

char *
question_text_said(const json_t *content)
{
    const char *said = json_string_value(json_object_get(content, "reason"));
    size_t n = said ? strspn(said, " \t\r\n") : 0;
    return said && said[n] ? question_text_shown(said + n) : NULL;
}
