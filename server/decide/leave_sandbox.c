#include "server/decide/leave_sandbox.h"
#include "common/strv.h"

#include "common/macros.h"
#include "common/strfmt.h"
#include "server/call/login_snapshot.h"
#include "server/decide/ask.h"
#include "server/decide/decide.h"
#include "server/decide/question_form.h"
#include "server/decide/question_text.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define APPROVE "approved"
#define DENY    "denied"

/* What every refusal ends with: how the agent goes on. */
#define GO_ON "; run it inside the sandbox, or do without it"

struct leave_sandbox {
    struct ask_question *aq;
    char *message;
    leave_sandbox_done_fn done;
    void *data;
};

bool
leave_sandbox_planted(const struct decide_server *ds, const char *shell, char **said)
{
    const struct login_snapshot_kind *k = login_snapshot_kind_find(shell);
    char **files = k ? login_snapshot_startup_files(k, getenv("HOME")) : NULL;
    const char *found = files ? NULL : "(unknown: out of memory)";
    for (size_t i = 0; files && files[i] && !found; i++) {
        if (decide_server_sandbox_wrote(ds, files[i]))
            found = files[i];
    }
    *said = found ? strfmt("Not run: a login shell outside the sandbox would first run the "
                           "startup file `%s`, which a sandbox could have written; ask again "
                           "with login false to leave the sandbox without it",
                           found)
                  : NULL;
    strv_free(files);
    return found != NULL;
}

/* The question's message, every text escaped; NULL when out of memory. */
static char *
question_message(const struct leave_sandbox_what *what)
{
    char *cmd = question_text_shown(what->command);
    char *wd = question_text_shown(what->workdir);
    char *just = what->justification ? question_text_shown(what->justification) : NULL;
    char *msg = NULL;
    if (cmd && wd && (!what->justification || just))
        /* a login shell runs the startup files first, outside too: code
         * the command line does not show */
        msg = strfmt("The agent asks to run `%s` in `%s` outside the sandbox%s: with your access "
                     "to every file and to the network (the exec rules still apply).%s%s%s",
                     cmd, wd,
                     what->login ? ", in a login shell (your shell's startup files, such as "
                                   "~/.profile, run first)"
                                 : "",
                     just ? " Its reason: \"" : " It gave no reason.", just ? just : "",
                     just ? "\"" : "");
    free(cmd);
    free(wd);
    free(just);
    return msg;
}

/* elicitation/create's params (ask.h), asked again saying why: note. */
static json_t *
how_params(void *data, const char *note)
{
    const struct leave_sandbox *q = data;
    static const struct question_choice choices[] = {
        {APPROVE, "Yes, run it outside the sandbox"},
        {DENY, "No, do not run it"},
    };
    return question_form_params(q->message, note, choices, ARRAY_SIZE(choices),
                                APPROVE ": run it outside the sandbox; " DENY ": do not run it",
                                "Told to the agent when you refuse");
}

/* The call's line for a refusal (ask.h's meaning, in this question's
 * words), in *buf (malloc'd) or static. */
static const char *
refusal(const struct ask_answer *a, char **buf)
{
    char *shown = NULL;
    switch (a->kind == ASK_DENIED ? a->refusal : ASK_REFUSED_FAILED) {
    case ASK_REFUSED_IN_FORM:
        shown = question_text_said(a->content);
        *buf = strfmt("Not run: the person refused to run it outside the sandbox%s%s" GO_ON,
                      shown ? ", saying: " : "", shown ? shown : "");
        break;
    case ASK_REFUSED_DECLINED:
        *buf = strdup("Not run: the person declined to run it outside the sandbox" GO_ON);
        break;
    case ASK_REFUSED_CANCELLED:
        *buf = strdup("Not run: the question to run it outside the sandbox was cancelled" GO_ON);
        break;
    default:
        /* an abort (the call is stopped: ask.h), an error answer, an
         * answer that could not be taken, nobody asked */
        *buf = a->kind == ASK_ABORTED ? strfmt("Not run: %s", a->reason)
                                      : strfmt("Not run outside the sandbox: %s" GO_ON,
                                               a->reason ? a->reason : "no answer");
        break;
    }
    free(shown);
    return *buf ? *buf : "Not run: the person did not approve running it outside the sandbox";
}

static void
how_done(void *data, const struct ask_answer *a)
{
    struct leave_sandbox *q = data;
    leave_sandbox_done_fn done = q->done;
    void *done_data = q->data;
    free(q->message);
    free(q);
    if (a->kind == ASK_APPROVED) {
        char *shown = question_text_said(a->content);
        char *said = shown ? strfmt("approved running it outside the sandbox: %s", shown) : NULL;
        free(shown);
        done(done_data, NULL, said);
        return;
    }
    char *buf = NULL;
    done(done_data, refusal(a, &buf), NULL);
    free(buf);
}

static const struct ask_how leave_question = {
    .params = how_params, .done = how_done, .explicit_approval = true};

struct leave_sandbox *
leave_sandbox_ask(struct ask_line *line, const struct leave_sandbox_what *what,
                  leave_sandbox_done_fn done, void *data, const char **why)
{
    if (!ask_line_can_ask(line)) {
        *why = LEAVE_SANDBOX_NO_ELICITATION;
        return NULL;
    }
    *why = "Not run: the person could not be asked to approve running it outside the "
           "sandbox (out of memory)";
    struct leave_sandbox *q = calloc(1, sizeof(*q));
    if (!q || !(q->message = question_message(what))) {
        free(q);
        return NULL;
    }
    q->done = done;
    q->data = data;
    q->aq = ask_put(line, &leave_question, q);
    if (!q->aq) {
        *why = "Not run: the person could not be asked to approve running it outside the "
               "sandbox (the question could not be sent)";
        free(q->message);
        free(q);
        return NULL;
    }
    return q;
}

void
leave_sandbox_withdraw(struct leave_sandbox *q)
{
    if (!q)
        return;
    ask_withdraw(q->aq);
    free(q->message);
    free(q);
}
