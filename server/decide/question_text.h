/*
 * question_text: the text of a question to a person, built so that
 * nothing a command, a path or a rule carries can forge its layout:
 * control characters, backslashes, backticks and invisible code points
 * escaped, bytes that are not UTF-8 as U+FFFD (docs/escalation.md says
 * how each is shown).  Every function returns malloc'd text, or NULL when
 * out of memory.
 */
#ifndef EXECGATE_SERVER_QUESTION_TEXT_H
#define EXECGATE_SERVER_QUESTION_TEXT_H

#include <jansson.h>
#include <stddef.h>

/* text as a question shows it. */
char *question_text_shown(const char *text);

/* program and args as a question shows them: the program as it is, the
 * arguments quoted as a shell reads them, all escaped. */
char *question_text_command(const char *program, const char *const *args, size_t nargs);

/* "Allow agent to run `PROGRAM ARGS` in `WORKDIR`?" */
char *question_text_exec(const char *program, const char *const *args, size_t nargs,
                         const char *workdir);

/* The question about a child of a program run outside the sandbox:
 * "`git status` (allowed by default.rules:3) wants to start `PROGRAM ARGS`
 * outside the sandbox, in `WORKDIR`. Allow it?" */
char *question_text_child(const char *parent, const char *why, const char *program,
                          const char *const *args, size_t nargs, const char *workdir);

/* What the person typed in an answer's reason field (content's "reason"),
 * leading blanks dropped, as shown; NULL when there is nothing (or
 * blanks only) or out of memory. */
char *question_text_said(const json_t *content);

#endif
