#include "server/decide/leave_sandbox.h"

#include "server/decide/question_form.h"
#include "server/decide/question_text.h"
#include "common/strfmt.h"
#include "common/macros.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define APPROVE "approved"
#define DENY    "denied"

/* What every refusal ends with: how the agent goes on. */
#define GO_ON "; run it inside the sandbox, or do without it"

json_t *
leave_sandbox_question(const char *command, const char *workdir, bool login,
                       const char *justification)
{
    char *cmd = question_text_shown(command);
    char *wd = question_text_shown(workdir);
    char *just = justification ? question_text_shown(justification) : NULL;
    char *msg = NULL;
    if (cmd && wd && (!justification || just))
        /* a login shell runs the startup files first, outside too: code
         * the command line does not show */
        msg = strfmt("The agent asks to run `%s` in `%s` outside the sandbox%s: with your access "
                     "to every file and to the network (the exec rules still apply).%s%s%s",
                     cmd, wd,
                     login ? ", in a login shell (your shell's startup files, such as "
                             "~/.profile, run first)"
                           : "",
                     just ? " Its reason: \"" : " It gave no reason.", just ? just : "",
                     just ? "\"" : "");
    static const struct question_choice choices[] = {
        {APPROVE, "Yes, run it outside the sandbox"},
        {DENY, "No, do not run it"},
    };
    json_t *schema =
        msg ? question_form_schema(choices, ARRAY_SIZE(choices),
                                   APPROVE ": run it outside the sandbox; " DENY ": do not run it",
                                   "Told to the agent when you refuse")
            : NULL;
    json_t *params =
        schema ? json_pack("{s:s, s:o}", "message", msg, "requestedSchema", schema) : NULL;
    free(cmd);
    free(wd);
    free(just);
    free(msg);
    return params;
}

/* why, and what the person typed as a reason when there is something. */
static const char *
refusal(const char *why, const json_t *content, char **buf)
{
    char *shown = question_text_said(content);
    *buf = strfmt("%s%s%s" GO_ON, why, shown ? ", saying: " : "", shown ? shown : "");
    free(shown);
    return *buf ? *buf : "Not run: the person did not approve running it outside the sandbox";
}

char *
leave_sandbox_said(const json_t *result)
{
    char *shown = question_text_said(json_object_get(result, "content"));
    char *line = shown ? strfmt("approved running it outside the sandbox: %s", shown) : NULL;
    free(shown);
    return line;
}

const char *
leave_sandbox_answer(const json_t *result, const json_t *error, char **buf)
{
    *buf = NULL;
    const char *action = json_string_value(json_object_get(result, "action"));
    const json_t *content = json_object_get(result, "content");
    const char *decision = json_string_value(json_object_get(content, "decision"));
    if (error) {
        const char *msg = json_string_value(json_object_get(error, "message"));
        *buf = strfmt("Not run: the person could not be asked to approve running it outside the "
                      "sandbox (%s)" GO_ON,
                      msg ? msg : "the client answered with an error");
        return *buf ? *buf : "Not run: the person could not be asked";
    }
    /* only an explicit approval runs it: a form accepted without a
     * decision is no approval */
    if (action && strcmp(action, "accept") == 0 && decision && strcmp(decision, APPROVE) == 0)
        return NULL;
    if (action && strcmp(action, "accept") == 0)
        return refusal("Not run: the person refused to run it outside the sandbox", content, buf);
    if (action && strcmp(action, "decline") == 0)
        return refusal("Not run: the person declined to run it outside the sandbox", NULL, buf);
    return refusal("Not run: the question to run it outside the sandbox was cancelled", NULL, buf);
}
