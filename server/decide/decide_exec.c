/*
 * decide_exec: the decision on one exec (decide.h's decide_exec): the
 * rules' verdict over every name the program goes by, and whether it may
 * run outside the sandbox.  No question is asked here and nothing runs.
 */
#include "server/decide/decide_int.h"

#include "server/decide/approvals.h"
#include "server/rpc/client_log.h"
#include "proto/esc_proto.h"
#include "common/log.h"
#include "server/decide/question_text.h"
#include "common/strfmt.h"
#include "common/utf8.h"
#include "server/call/writable_history.h"
#include "rules/heuristic.h"
#include "rules/exec_path.h"
/* rules/ and sandbox/ both have a policy.h: named by their directories */
#include "rules/amend.h"
#include "rules/decision.h"
#include "rules/lint.h"
#include "rules/policy.h"
#include "rules/shlex.h"
#include "rules/verdict.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the rules over every name ---- */

static json_t *
match_json(const struct rules_match *m)
{
    json_t *prefix = json_array();
    for (size_t j = 0; prefix && j < m->n_prefix; j++)
        json_array_append_new(prefix, text_json(m->matched_prefix[j]));
    json_t *j = json_pack("{s:o, s:s, s:s*}", "prefix", prefix ? prefix : json_array(), "decision",
                          rules_decision_name(m->decision), "justification", m->justification);
    char *origin = NULL;
    if (j && m->origin.file && m->origin.line > 0 &&
        asprintf(&origin, "%s:%" PRIu32 ":%" PRIu32, m->origin.file, m->origin.line,
                 m->origin.col) >= 0) {
        json_object_set_new(j, "origin", text_json(origin));
        free(origin);
    }
    return j;
}

/* Adds m to matched unless it is there. */
static void
add_match(json_t *matched, const struct rules_match *m)
{
    json_t *j = match_json(m);
    bool seen = false;
    for (size_t k = 0; j && !seen && k < json_array_size(matched); k++)
        seen = json_equal(json_array_get(matched, k), j);
    if (j && !seen)
        json_array_append(matched, j);
    json_decref(j);
}

/* The rules that gave v its decision, each once, for the records; NULL
 * when no record is kept (no audit log, no client log). */
static json_t *
matched_rules(const struct decide_call *dc, const struct verdict *v)
{
    if (!dc->ds->audit && !client_log_wants(dc->cl->log, CLIENT_LOG_EMERGENCY))
        return NULL;
    json_t *matched = json_array();
    for (size_t i = 0; matched && v->decision != RULES_DECISION_NONE && i < v->n_names; i++) {
        const struct verdict_name *n = &v->names[i];
        for (size_t k = 0; n->decision == v->decision && k < n->result.n_matches; k++) {
            if (n->result.matches[k].decision == n->result.decision)
                add_match(matched, &n->result.matches[k]);
        }
    }
    return matched;
}

/* What the engine decides from (rules/decision.h, rules/verdict.h). */
static void
verdict_inputs(const struct decide_server *ds, const struct decide_exec *e,
               struct verdict_rules *vr, struct verdict_exec *ve)
{
    *vr = (struct verdict_rules){ds->rules, NULL, ds->answers_file, ds->preserve_program_paths};
    *ve = (struct verdict_exec){e->argv, e->argc, e->canonical, e->interpreters, e->n_interpreters};
}

/* Whether walk went through a procfs (a path under /proc, or a link
 * such as /dev/fd to one): there /proc/self is whoever reads it. */
static bool
through_proc(const struct exec_path *walk)
{
    if (strncmp(walk->absolute, "/proc/", 6) == 0 ||
        (walk->canonical && strncmp(walk->canonical, "/proc/", 6) == 0))
        return true;
    for (size_t i = 0; i < walk->n_links; i++) {
        if (strncmp(walk->links[i].path, "/proc/", 6) == 0)
            return true;
    }
    return false;
}

/* The file e's path names for the process that asks (e->pid, the patched
 * shell's child), opened in its view as the tree watch opens it
 * (exec_path_open_as): its canonical path, malloc'd, or NULL. */
static char *
peer_canonical(const struct decide_exec *e)
{
    char name[64];
    snprintf(name, sizeof(name), "/proc/%d/root", (int)e->pid);
    int root = open(name, O_PATH | O_CLOEXEC);
    snprintf(name, sizeof(name), "/proc/%d/cwd", (int)e->pid);
    int cwd = open(name, O_PATH | O_CLOEXEC);
    int f = root >= 0 && cwd >= 0 ? exec_path_open_as(e->pid, root, cwd, e->path) : -1;
    char *canonical = NULL;
    if (f >= 0) {
        snprintf(name, sizeof(name), "/proc/self/fd/%d", f);
        canonical = realpath(name, NULL);
        close(f);
    }
    if (root >= 0)
        close(root);
    if (cwd >= 0)
        close(cwd);
    return canonical;
}

/* ---- may it run outside? ---- */

/* Whether a sandbox could have made or repointed anything walk went
 * through: the path as given, each link, the file. */
static bool
walk_writable(const struct decide_call *dc, const struct exec_path *walk)
{
    if (!walk->canonical || sandbox_could_write(dc, walk->absolute) ||
        sandbox_could_write(dc, walk->canonical))
        return true;
    for (size_t i = 0; i < walk->n_links; i++) {
        if (sandbox_could_write(dc, walk->links[i].path))
            return true;
    }
    return false;
}

/*
 * Whether the program reads repository or working-tree configuration
 * (rules_lint_reads_repository) under any name it goes by: the path as
 * given, each link, the file, its #! interpreters, the name it runs as.
 */
static bool
reads_repository(const struct exec_path *walk, const struct exec_interpreters *in,
                 const char *run_as)
{
    if (rules_lint_reads_repository(walk->absolute) ||
        (walk->canonical && rules_lint_reads_repository(walk->canonical)) ||
        (run_as && rules_lint_reads_repository(run_as)))
        return true;
    for (size_t i = 0; i < walk->n_links; i++) {
        if (rules_lint_reads_repository(walk->links[i].path))
            return true;
    }
    for (size_t i = 0; i < in->n; i++) {
        if (rules_lint_reads_repository(in->names[i]))
            return true;
    }
    return false;
}

/*
 * Whether the exec walk describes may run outside the sandbox, and if so
 * the file opened (out->fd, out->script).  Not when the path as given, any
 * link on the way or the file itself lies where this call's sandbox or any
 * other of the server's can write (it could have made or repointed it),
 * when the file is not a regular one, or when the working directory is in
 * a repository a sandbox could have written.  *why (static or malloc'd
 * into *why_owned) says why not.
 */
static bool
escalatable(const struct decide_call *dc, const struct decide_exec *e, const struct exec_path *walk,
            const struct exec_interpreters *in, struct decide_result *out, const char **why,
            char **why_owned)
{
    *why = NULL;
    *why_owned = NULL;
    if (!walk->canonical) {
        *why = "the program does not resolve";
        return false;
    }
    if (walk_writable(dc, walk)) {
        *why = "the program, or a link on its path, lies where the sandbox can write";
        return false;
    }
    for (size_t i = 0; i < in->n; i++) {
        if (walk_writable(dc, &in->walks[i])) {
            *why = "its #! interpreter, or a link on that path, lies where the sandbox can write";
            return false;
        }
    }
    if (!S_ISREG(walk->st.st_mode)) {
        *why = "the program is not a regular file";
        return false;
    }
    char *repo = NULL;
    bool in_repo = in_writable_repo(dc, e->cwd, &repo, &out->git_ceiling);
    if (in_repo && (!repo || reads_repository(walk, in, out->run_as))) {
        if (!repo)
            *why_owned = strdup("the working directory cannot be looked at");
        else if (asprintf(why_owned,
                          "the working directory is in a git repository at %s that the "
                          "sandbox could have written, and the program reads repository "
                          "configuration",
                          repo) < 0)
            *why_owned = NULL;
        *why = *why_owned ? *why_owned : "the working directory is in a writable repository";
        free(repo);
        return false;
    }
    /* a program that reads no repository escalates there, but a git it
     * starts finds none (GIT_DIR names no repository) */
    out->git_fenced = in_repo;
    free(repo);
    int fd = open(walk->canonical, O_PATH | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != walk->st.st_dev ||
        st.st_ino != walk->st.st_ino || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        *why = "the program changed while it was checked";
        return false;
    }
    out->fd = fd;
    out->script = in->script;
    return true;
}

/* ---- the decision ---- */

/* The "dev:ino:ctime" of the program out->program names, as walk saw it:
 * an inode number freed by a removed file goes to the next one made, and
 * the change time (which nobody sets) tells a rewritten file too. */
static void
program_id(const struct decide_result *out, const struct exec_path *walk, char *id, size_t size)
{
    struct stat st;
    bool have = walk->canonical && strcmp(walk->canonical, out->program) == 0;
    if (have)
        st = walk->st;
    else
        have = stat(out->program, &st) == 0;
    if (!have)
        memset(&st, 0, sizeof(st));
    snprintf(id, size, "%ju:%ju:%jd.%09ld", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
             (intmax_t)st.st_ctim.tv_sec, (long)st.st_ctim.tv_nsec);
}

/* A key of out->program, then extra[0..n_extra), then argv[1..] (NULL
 * when out of memory). */
static char *
key_of(const struct decide_result *out, const struct decide_exec *e, const char *const *extra,
       size_t n_extra, size_t *len)
{
    size_t nargs = e->argc > 1 ? e->argc - 1 : 0;
    const char **parts = calloc(n_extra + nargs + 1, sizeof(*parts));
    if (!parts)
        return NULL;
    for (size_t i = 0; i < n_extra; i++)
        parts[i] = extra[i];
    for (size_t i = 0; i < nargs; i++)
        parts[n_extra + i] = e->argv[i + 1];
    char *key = approvals_key(out->program, parts, n_extra + nargs, len);
    free(parts);
    return key;
}

/* program, its (dev, ino) and argv[1..]: a memo names this file, not
 * whatever a path may name later. */
static int
make_key(struct decide_result *out, const struct decide_exec *e, const struct exec_path *walk)
{
    char id[96];
    program_id(out, walk, id, sizeof(id));
    const char *extra[] = {id};
    out->key = key_of(out, e, extra, 1, &out->keylen);
    return out->key ? 0 : -1;
}

/*
 * What an approval for the session of an ASK is remembered by: the memo
 * key's parts, the name the program runs as, where it runs (outside or
 * inside the sandbox from the wrapper, in place from the tree, inside or
 * outside as the tree is) and the
 * workdir (the real path the wrapper path pinned, or the tree's).  The
 * same command elsewhere, or run on the other side of the sandbox, is
 * another question.  Returns -1 when out of memory.
 */
static int
make_approval(struct decide_result *out, const struct decide_exec *e, const struct exec_path *walk)
{
    char id[96];
    program_id(out, walk, id, sizeof(id));
    /* the tree of an escalated program runs in place outside: an
     * approval of the same exec inside the sandbox is not one for it */
    const char *where = e->source == DECIDE_FROM_TREE && e->outside_tree ? "in place outside"
                        : e->source == DECIDE_FROM_TREE                  ? "in place"
                        : out->escalate_if_approved                      ? "outside"
                                                                         : "inside";
    const char *extra[] = {id, out->run_as ? out->run_as : "", where, e->cwd};
    out->approval = key_of(out, e, extra, 4, &out->approvallen);
    return out->approval ? 0 : -1;
}

/* The last component of a path (the whole name when it has no '/'). */
static const char *
last_component(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/*
 * The name the program runs as outside the sandbox: the last component of
 * the first of its own names (never argv[0]) whose rules gave v's
 * decision, else of the path as given.  A multi-call program (git, which
 * reads git-clone in argv[0]; busybox) then does what its rule named, not
 * what the request's argv[0] says.  NULL when out of memory.
 */
static char *
run_as_name(const struct verdict *v, const struct exec_path *walk)
{
    const char *name = NULL;
    for (size_t i = 0; !name && v->decision != RULES_DECISION_NONE && i < v->n_names; i++) {
        if (!v->names[i].restricting && v->names[i].decision == v->decision)
            name = v->names[i].name;
    }
    return strdup(last_component(name ? name : walk->absolute));
}

/*
 * The rule that gave v its decision: the first match at v's decision, with
 * the place it was written, under a name that counts for that decision
 * (the program's own names before the restricting ones: a name that only
 * restricts cannot be what allowed it).  NULL when no rule matched or none
 * says where it was written.
 */
static const struct rules_match *
deciding_rule(const struct verdict *v)
{
    for (int pass = 0; pass < 2 && v->decision != RULES_DECISION_NONE; pass++) {
        for (size_t i = 0; i < v->n_names; i++) {
            const struct verdict_name *n = &v->names[i];
            if (n->restricting != (pass == 1) || n->decision != v->decision)
                continue;
            for (size_t k = 0; k < n->result.n_matches; k++) {
                const struct rules_match *m = &n->result.matches[k];
                if (m->decision == v->decision && m->origin.file && m->origin.line > 0)
                    return m;
            }
        }
    }
    return NULL;
}

/* "FILE:LINE" of the deciding rule; NULL when none (or out of memory). */
static char *
rule_origin(const struct verdict *v)
{
    const struct rules_match *m = deciding_rule(v);
    char *origin = NULL;
    if (m && asprintf(&origin, "%s:%" PRIu32, m->origin.file, m->origin.line) < 0)
        origin = NULL;
    return origin;
}

char *
decide_inside_note(const struct decide_result *r)
{
    if (!r->kept_inside || !r->reason)
        return NULL;
    char *name = question_text_shown(r->run_as    ? r->run_as
                                     : r->program ? r->program
                                                  : "the program");
    char *why = question_text_shown(r->reason);
    char *note = NULL;
    if (name && why &&
        asprintf(&note, "%s is %s by %s, but runs inside the sandbox: %s", name,
                 r->verdict == DECIDE_ASK ? "asked about" : "allowed", r->rule ? r->rule : "a rule",
                 why) < 0)
        note = NULL;
    free(name);
    free(why);
    /* one line the protocol carries (ESC_MAX_REASON), cut at a character */
    size_t len = note ? strlen(note) : 0;
    if (len > ESC_MAX_REASON) {
        len = ESC_MAX_REASON;
        while (len > 0 && ((unsigned char)note[len] & 0xc0) == 0x80)
            len--;
        note[len] = '\0';
    }
    return note;
}

/* Whether the request's argv[0] names another program than run_as. */
bool
argv0_differs(const struct decide_exec *e, const char *run_as)
{
    return run_as && e->argc > 0 && e->argv[0] && strcmp(last_component(e->argv[0]), run_as) != 0;
}

static void
set_deny(struct decide_result *out, const char *reason, const char *justification)
{
    out->verdict = DECIDE_DENY;
    free(out->reason);
    out->reason = NULL;
    if (justification && asprintf(&out->reason, "%s: %s", reason, justification) < 0)
        out->reason = NULL;
    if (!out->reason)
        out->reason = strdup(reason);
}

/* The memos of the call, for an exec the tree watch would ask about. */
static bool
answered_before(struct decide_call *dc, const struct decide_exec *e, struct decide_result *out)
{
    if (e->source != DECIDE_FROM_TREE)
        return false;
    long i = memo_find(&dc->expected, e->pid, out->key, out->keylen);
    if (i >= 0) {
        /* the wrapper's exec of what a person just approved */
        memo_remove(&dc->expected, (size_t)i);
        out->verdict = DECIDE_RUN;
        out->answered_by = "escalation";
        out->reason = strdup("the wrapper's exec of what the escalation path approved");
        return true;
    }
    i = memo_find(&dc->declined, 0, out->key, out->keylen);
    if (i >= 0) {
        set_deny(out, dc->declined.items[i].reason ? dc->declined.items[i].reason : "declined",
                 NULL);
        out->answered_by = "earlier-answer";
        return true;
    }
    return false;
}

/*
 * Whether v allows a program whose arguments name the files it changes
 * (rules_amend_exact_program) only through "always allow" answers (rules
 * in the standing answers' file with at least one argument) that do not
 * cover all of e's arguments:
 * the answer was for the command line the person saw, and a prefix rule
 * would also allow more files after it (`rm -r ./b /home`).
 */
static bool
answer_extended(const struct decide_server *ds, const struct verdict *v,
                const struct decide_exec *e)
{
    if (v->decision != RULES_DECISION_ALLOW || !ds->answers_file)
        return false;
    bool extended = false;
    for (size_t i = 0; i < v->n_names; i++) {
        const struct verdict_name *n = &v->names[i];
        if (n->restricting || n->decision != RULES_DECISION_ALLOW)
            continue;
        for (size_t k = 0; k < n->result.n_matches; k++) {
            const struct rules_match *m = &n->result.matches[k];
            if (m->decision != RULES_DECISION_ALLOW)
                continue;
            /* an answer names at least one argument (the program alone is
             * a rule of the user's, as is any rule in another file) */
            bool answer =
                m->origin.file && strcmp(m->origin.file, ds->answers_file) == 0 && m->n_prefix >= 2;
            if (!answer || !rules_amend_exact_program(n->name) || m->n_prefix >= e->argc)
                return false; /* a rule of the user's own, or one that covers it all */
            extended = true;
        }
    }
    return extended;
}

#define CAUTION_ANSWER_EXTENDED                                                                    \
    "the \"always allow\" answer that allows it was given for a shorter command line, and this "   \
    "one names more files"

/* allow, or prompt, from the wrapper: outside if the file may go there;
 * an allowed command that uses a dangerous option, names another program
 * in argv[0], or goes beyond the command line an "always allow" answer
 * was given for, is asked about. */
static void
decide_outside(struct decide_call *dc, const struct decide_exec *e, const struct exec_path *walk,
               const struct exec_interpreters *in, const struct decision *d, bool ask,
               struct decide_result *out)
{
    const char *why = NULL;
    char *why_owned = NULL;
    bool outside = escalatable(dc, e, walk, in, out, &why, &why_owned);
    if (!outside)
        log_info("decide %s: %s runs in the sandbox: %s", dc->label, out->program, why);
    const struct verdict *v = &d->verdict;
    const char *caution = outside && !ask ? d->caution : NULL;
    if (outside && !ask && !caution && argv0_differs(e, out->run_as))
        caution = "its argv[0] names another program than the one its rule allows (it would "
                  "run under the rule's name)";
    if (outside && !ask && !caution && answer_extended(dc->ds, v, e))
        caution = CAUTION_ANSWER_EXTENDED;
    if (caution)
        log_info("decide %s: %s: %s: a person is asked", dc->label, out->program, caution);
    if (ask || caution) {
        out->verdict = DECIDE_ASK;
        out->escalate_if_approved = outside;
        out->caution = caution;
    } else {
        out->verdict = outside ? DECIDE_ESCALATE : DECIDE_RUN;
    }
    if (!outside) {
        out->reason = why_owned ? why_owned : strdup(why);
        out->kept_inside = true;
    } else {
        free(why_owned);
    }
}

/* ---- the children of an escalated program ---- */

/* "allowed by default.rules:3": the deciding rule of an allow or a prompt,
 * with its file's last component; NULL when none (or out of memory). */
static char *
rule_text(const struct verdict *v)
{
    const char *verb = v->decision == RULES_DECISION_ALLOW    ? "allowed by"
                       : v->decision == RULES_DECISION_PROMPT ? "approved under the prompt rule at"
                                                              : NULL;
    const struct rules_match *m = verb ? deciding_rule(v) : NULL;
    const char *slash = m ? strrchr(m->origin.file, '/') : NULL;
    char *text = NULL;
    if (m && asprintf(&text, "%s %s:%" PRIu32, verb, slash ? slash + 1 : m->origin.file,
                      m->origin.line) < 0)
        text = NULL;
    return text;
}

/* The rule line that would allow exactly this command: the program's last
 * component and every argument (never a prefix that runs any code). */
static char *
exact_rule(const struct decide_result *out, const struct decide_exec *e)
{
    const char **words = calloc(e->argc + 1, sizeof(*words));
    if (!words)
        return NULL;
    const char *slash = strrchr(out->file, '/');
    words[0] = slash ? slash + 1 : out->file;
    for (size_t i = 1; i < e->argc; i++)
        words[i] = e->argv[i];
    char *line = rules_amend_rule_line(words, e->argc > 0 ? e->argc : 1);
    free(words);
    return line;
}

/* What the child's stderr says when nobody can be asked: who started it
 * outside, why it is not let through, and the rule that would allow it;
 * one line (escaped), or NULL when out of memory. */
static char *
child_refusal(const struct decide_exec *e, const struct decide_result *out, const char *why)
{
    char *rule = exact_rule(out, e);
    char *parent = question_text_shown(e->outside->command);
    char *by = question_text_shown(e->outside->why);
    char *text = NULL;
    /* the rule line is JSON-escaped: one line already */
    if (rule && parent && by &&
        asprintf(&text,
                 "started outside the sandbox by `%s` (%s), and %s; no person could be asked. "
                 "This rule would allow it: %s",
                 parent, by, why, rule) < 0)
        text = NULL;
    free(rule);
    free(parent);
    free(by);
    return text;
}

/* Whether a sandbox could have written any #! interpreter of e. */
static bool
interpreters_writable(const struct decide_call *dc, const struct decide_exec *e)
{
    for (size_t i = 0; i < e->n_interpreters; i++) {
        if (sandbox_could_write(dc, e->interpreters[i]))
            return true;
    }
    return false;
}

/* Words of a shell script that are one plain command: letters, digits,
 * these, and single-quoted text (literal to the shell). */
#define PLAIN_WORD_CHARS "_./:@%+=,-"

/* Shell builtins and keywords: a first word the shell would not exec. */
static const char *const shell_builtins[] = {
    ".",       ":",        "[",        "alias",  "bg",    "break",    "cd",     "chdir",
    "command", "continue", "echo",     "eval",   "exec",  "exit",     "export", "false",
    "fc",      "fg",       "getopts",  "hash",   "jobs",  "kill",     "local",  "printf",
    "pwd",     "read",     "readonly", "return", "set",   "shift",    "test",   "times",
    "trap",    "true",     "type",     "ulimit", "umask", "unalias",  "unset",  "wait",
    "if",      "then",     "else",     "elif",   "fi",    "for",      "while",  "until",
    "do",      "done",     "case",     "esac",   "in",    "function", "source", NULL,
};

/* Whether script is one simple command a shell can only exec: plain words
 * and single-quoted text, a first word that is no builtin, keyword or
 * assignment.  Nothing in it is code of its own: no expansion, no
 * redirection, no second command. */
static bool
plain_script(const char *script)
{
    char first[64];
    size_t nfirst = 0;
    bool in_first = true, started = false;
    for (const char *p = script; *p; p++) {
        if (*p == ' ' || *p == '\t') {
            in_first = in_first && !started;
            continue;
        }
        started = true;
        if (*p == '\'') {
            const char *end = strchr(p + 1, '\'');
            if (!end || in_first)
                return false;
            p = end;
            continue;
        }
        bool word = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || strchr(PLAIN_WORD_CHARS, *p);
        if (!word || (in_first && (*p == '=' || nfirst + 1 >= sizeof(first))))
            return false;
        if (in_first)
            first[nfirst++] = *p;
    }
    first[nfirst] = '\0';
    for (size_t i = 0; nfirst > 0 && shell_builtins[i]; i++) {
        if (strcmp(first, shell_builtins[i]) == 0)
            return false;
    }
    return nfirst > 0;
}

/*
 * git starts its transports and helpers through the shell:
 * `/bin/sh -c "git-receive-pack '/srv/r.git'"`.  Such a shell only execs
 * the one program, whose exec is decided in turn, so it runs.  dash alone:
 * it reads no startup file for -c unless started as a login shell (argv[0]
 * starting with '-'), while bash reads $BASH_ENV and zsh its .zshenv, code
 * that a planted environment could name.
 */
static bool
shell_starting_one_program(const struct decide_exec *e, const struct exec_path *walk)
{
    const char *file = e->canonical ? e->canonical : walk->canonical;
    const char *slash = file ? strrchr(file, '/') : NULL;
    if (!slash || strcmp(slash + 1, "dash") != 0 || e->argc < 3 || strcmp(e->argv[1], "-c") != 0)
        return false;
    const char *arg0 = strrchr(e->argv[0], '/');
    arg0 = arg0 ? arg0 + 1 : e->argv[0];
    /* dash reads options up to the first word that starts with neither
     * '-' nor '+', and runs that word: in `sh -c -- SCRIPT` (or -i, +e)
     * the plain word is an option and SCRIPT the code */
    const char *script = e->argv[2];
    return arg0[0] != '-' && script[0] != '-' && script[0] != '+' && plain_script(script);
}

/*
 * An exec in the tree of a program a rule let out of the sandbox, which
 * no forbidden or prompt rule names: it runs only when an allow rule names
 * it (and a sandbox could not have made or repointed it, and it uses no
 * option that writes any file or runs any command), or when it is a shell
 * that only starts one program; anything else is for a person to see, or
 * refused when nobody can be asked.
 */
static void
decide_child(struct decide_call *dc, const struct decide_exec *e, const struct exec_path *walk,
             const struct decision *d, struct decide_result *out)
{
    bool allowed = d->verdict.decision == RULES_DECISION_ALLOW;
    /* a file a sandbox wrote is no program a rule or the shell test knows:
     * one named dash may be any code */
    bool written = walk_writable(dc, walk) || interpreters_writable(dc, e) ||
                   (e->canonical && sandbox_could_write(dc, e->canonical));
    bool planted = allowed && written;
    const char *caution = allowed && !planted ? d->caution : NULL;
    /* set by the escalated program for its children (its own environment
     * was reset): code a rule could not have meant to let in */
    bool loads = allowed && !planted && !caution && e->code_env;
    if (loads)
        caution = CODE_ENV;
    if ((allowed && !planted && !caution) ||
        (d->verdict.decision == RULES_DECISION_NONE && !written && !e->code_env &&
         shell_starting_one_program(e, walk))) {
        out->verdict = DECIDE_RUN;
        out->reason = strdup(allowed ? "allowed" : "a shell that starts one program");
        return;
    }
    const char *why = planted   ? "a rule allows it, but it lies where the sandbox can write"
                      : loads   ? "a rule allows it, but its environment names code for it to "
                                  "run"
                      : caution ? "a rule allows it, but it uses an option that writes any file "
                                  "or runs any command"
                                : "no rule names it";
    out->verdict = DECIDE_ASK;
    out->caution = caution;
    out->reason = strdup(why);
    out->refusal = child_refusal(e, out, why);
    if (!out->reason || !out->refusal)
        set_deny(out, "out of memory", NULL);
}

/* ---- "always allow" ---- */

/*
 * A question a prompt rule asks gets "always allow" when an allow rule in
 * the standing answers' file would settle it for good
 * (verdict_always_prefix), and when an escalation would not be asked about
 * again for a dangerous option.  Sets out->amendment then; anything else
 * (out of memory included) offers none.
 */
static void
propose_amendment(struct decide_call *dc, const struct decide_exec *e, const struct exec_path *walk,
                  const struct decision *d, struct decide_result *out)
{
    if (e->source == DECIDE_FROM_WRAPPER && d->caution)
        return;
    struct verdict_rules vr;
    struct verdict_exec ve;
    verdict_inputs(dc->ds, e, &vr, &ve);
    out->amendment = verdict_always_prefix(&vr, &ve, walk, &out->n_amendment);
}

void
decide_exec(struct decide_call *dc, const struct decide_exec *e, struct decide_result *out)
{
    memset(out, 0, sizeof(*out));
    out->fd = -1;
    out->answered_by = "rules";
    struct exec_path walk;
    struct exec_interpreters in = {.n = 0};
    struct decision d; /* made below, once the key is (not zeroed: it is large) */
    d.verdict.decision = RULES_DECISION_NONE;
    const struct verdict *v = &d.verdict;
    bool ok = exec_path_walk(e->path, e->cwd, &walk) == 0;
    if (ok && e->source == DECIDE_FROM_TREE && e->canonical &&
        (!walk.canonical || strcmp(walk.canonical, e->canonical) != 0)) {
        /* the path names another file in the server's view than in the
         * process's (/proc/self is the server's here, or the process has
         * mounts of its own): the names are those of the file it runs */
        exec_path_release(&walk);
        ok = exec_path_walk(e->canonical, "/", &walk) == 0;
    }
    /* the wrapper's: the server walked the path in its own view */
    char *peer = ok && e->source == DECIDE_FROM_WRAPPER && e->pid > 0 && through_proc(&walk)
                     ? peer_canonical(e)
                     : NULL;
    if (peer && (!walk.canonical || strcmp(walk.canonical, peer) != 0)) {
        exec_path_release(&walk);
        ok = exec_path_walk(peer, "/", &walk) == 0;
    }
    free(peer);
    /* the wrapper's scripts: their interpreters are names the exec goes by */
    struct decide_exec with_interps = *e;
    if (ok && e->source == DECIDE_FROM_WRAPPER) {
        ok = exec_path_interpreters(&walk, e->cwd, &in) == 0;
        with_interps.interpreters = in.names;
        with_interps.n_interpreters = in.n;
    }
    e = &with_interps;
    const char *program = e->canonical ? e->canonical : walk.canonical;
    ok = ok && (out->file = strdup(walk.absolute)) != NULL &&
         (out->program = strdup(program ? program : walk.absolute)) != NULL;
    /* the rules' answer, as `execgate-rules explain` shows it */
    struct verdict_rules vr;
    struct verdict_exec ve;
    verdict_inputs(dc->ds, e, &vr, &ve);
    ok = ok && make_key(out, e, &walk) == 0;
    bool decided = ok;
    ok = ok && decision_make(&vr, &ve, e->cwd, &walk, 0, &d) == 0;
    if (ok)
        out->matched = matched_rules(dc, v);
    /* what only an exec that may go outside needs (the tree's run in place) */
    if (ok && e->source == DECIDE_FROM_WRAPPER) {
        ok = (out->run_as = run_as_name(v, &walk)) != NULL;
        out->rule = rule_origin(v);
    }
    if (!ok) {
        set_deny(out, "out of memory", NULL);
    } else if (v->decision == RULES_DECISION_FORBIDDEN && e->source == DECIDE_FROM_TREE) {
        /* the tree's refusal is a line on the program's stderr */
        set_deny(out, v->justification ? v->justification : "forbidden by a rule", NULL);
    } else if (v->decision == RULES_DECISION_FORBIDDEN) {
        set_deny(out, REASON_FORBIDDEN, v->justification);
    } else if (answered_before(dc, e, out)) {
        /* the call has its answer */
    } else if (v->decision == RULES_DECISION_PROMPT && e->source == DECIDE_FROM_WRAPPER) {
        decide_outside(dc, e, &walk, &in, &d, true, out);
    } else if (v->decision == RULES_DECISION_PROMPT) {
        out->verdict = DECIDE_ASK;
    } else if (v->decision == RULES_DECISION_ALLOW && e->source == DECIDE_FROM_WRAPPER) {
        decide_outside(dc, e, &walk, &in, &d, false, out);
    } else if (e->outside && e->source == DECIDE_FROM_TREE) {
        decide_child(dc, e, &walk, &d, out);
    } else if (v->decision == RULES_DECISION_NONE && e->source == DECIDE_FROM_WRAPPER &&
               d.forced_rm) {
        /* the reference's heuristic: asked, and an approval runs inside */
        out->verdict = DECIDE_ASK;
        out->reason = strdup("a forced rm");
    } else {
        out->verdict = DECIDE_RUN;
        out->reason = strdup(v->decision == RULES_DECISION_ALLOW ? "allowed" : "no rule");
    }
    if (out->verdict == DECIDE_ASK && v->decision == RULES_DECISION_PROMPT) {
        propose_amendment(dc, e, &walk, &d, out);
        /* shown in the question; without it the question is still asked */
        if (v->justification && !(out->justification = strdup(v->justification)))
            log_warn("decide: out of memory keeping a rule's justification for its question");
    }
    /* what let an escalated program out, for its children's questions */
    if (ok && e->source == DECIDE_FROM_WRAPPER &&
        (out->verdict == DECIDE_ESCALATE || out->escalate_if_approved))
        out->parent_rule = rule_text(v);
    if (out->verdict == DECIDE_ASK && make_approval(out, e, &walk) < 0) {
        decide_result_release(out);
        out->answered_by = "rules";
        out->file = strdup(e->path);
        set_deny(out, "out of memory", NULL);
    }
    if (decided)
        decision_release(&d);
    exec_interpreters_release(&in);
    exec_path_release(&walk);
}

void
decide_result_release(struct decide_result *r)
{
    free(r->reason);
    free(r->file);
    free(r->program);
    free(r->key);
    free(r->approval);
    free(r->run_as);
    free(r->git_ceiling);
    free(r->rule);
    free(r->parent_rule);
    free(r->refusal);
    verdict_words_free(r->amendment);
    free(r->justification);
    json_decref(r->matched);
    if (r->fd >= 0)
        close(r->fd);
    memset(r, 0, sizeof(*r));
    r->fd = -1;
}
