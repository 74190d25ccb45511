#include "server/decide.h"

#include "server/approvals.h"
#include "server/audit.h"
#include "server/client_log.h"
#include "wrapper/esc_proto.h"
#include "rules/heuristic.h"
#include "rules/exec_path.h"
#include "server/jsonrpc.h"
#include "server/log.h"
#include "server/question_form.h"
#include "server/shell_call.h"
#include "server/strfmt.h"
#include "server/utf8.h"
#include "server/writable_history.h"
#include "server/writable_view.h"
/* rules/ and sandbox/ both have a policy.h: named by their directories */
#include "rules/amend.h"
#include "rules/lint.h"
#include "rules/load.h"
#include "rules/policy.h"
#include "rules/shlex.h"
#include "rules/verdict.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REASON_FORBIDDEN "Execution forbidden by policy"
#define REASON_DECLINED  "User declined execution"
#define REASON_CANCELLED "User cancelled execution"
#define REASON_DENIED    "User denied execution"
#define REASON_ABORTED   "User aborted the tool call"
#define REASON_NO_ELICITATION                                                                      \
    "Approval was required by a prompt rule, but the MCP client did not declare the "              \
    "elicitation capability, so it cannot be asked"

/* A repository at the top of a root whose .git the helper keeps
 * read-only, as first seen by this server (decide_call_start). */
struct seen_repo {
    char *root;
    bool present;
    dev_t dev;
    ino_t ino;
};

struct decide_server {
    /* the rules' sources, kept for decide_server_reload */
    char **rules_paths;
    size_t n_rules_paths;
    char *default_rules_dir;
    struct rules_policy *rules;
    char *answers_file; /* where "always allow" writes, or NULL */
    bool preserve_program_paths;
    struct decide_client *client; /* calls' client unless one is set (decide_call_set_client) */
    struct audit *audit;
    unsigned calls;   /* decide_calls alive */
    char *wrap_names; /* EXECGATE_WRAP_NAMES's value, or NULL */
    unsigned reloads; /* successful decide_server_reload calls */
    struct seen_repo *repos;
    size_t n_repos;
    /* what every sandbox of this server could write (writable_history.h) */
    struct writable_history *written;
};

/* A command remembered for the call (see DECIDE_MAX_REMEMBERED). */
struct memo {
    pid_t pid; /* 0: any process */
    char *key;
    size_t keylen;
    char *reason; /* declined: the reason to repeat */
};

struct memo_list {
    struct memo items[DECIDE_MAX_REMEMBERED];
    size_t n;
};

/* A repository the call's sandbox keeps read-only: its .git entry and
 * the directory git uses. */
struct kept_repo {
    char *dotgit;
    char *gitdir;
    dev_t dev;
    ino_t ino;
};

/* One MCP client: where questions go, what it approved for its session,
 * its log.  Reference counted: the session that owns it and each of its
 * calls' decide_calls hold one, since a call's front ends may release
 * theirs after the session is gone. */
struct decide_client {
    unsigned refs;
    struct jsonrpc *rpc; /* borrowed; NULL: nobody to ask */
    bool elicitation;
    struct approvals *approvals;
    struct client_log *log; /* borrowed; NULL: none */
};

struct decide_call {
    struct decide_server *ds;
    struct decide_client *cl; /* a reference */
    unsigned refs;
    char *label;
    json_t *id; /* the request's id, for the client's records; or NULL */
    struct writable_view view;
    struct kept_repo *kept;
    size_t n_kept;
    struct shell_call *sc; /* while the call runs */
    void (*on_abort)(void *data, const char *why);
    void *abort_data;
    decide_said_fn on_said; /* or NULL */
    void *said_data;
    bool aborted;
    unsigned paused;
    struct memo_list expected, declined;
    /* one question out at a time; the others wait in order */
    struct decide_question *asking;
    struct decide_question *waiting, **waiting_tail;
};

static char *escape_shown(const char *text);

/* ---- rules loading ---- */

static struct rules_policy *
load_rules(const struct decide_config *cfg, char **err)
{
    return rules_load_paths(cfg->rules_paths, cfg->n_rules_paths, cfg->default_rules_dir, err);
}

/* ---- the wrapper hint ---- */

/* Beyond this the hint is not given (an environment string must stay well
 * under the kernel's 128 KiB per string): every exec then asks. */
#define WRAP_NAMES_MAX (32 * 1024)

struct wrap_names {
    char *buf;
    size_t len;
};

static int
wrap_names_add(struct wrap_names *w, const char *name, size_t n)
{
    if (n == 0 || memchr(name, ':', n) || w->len + n + 1 > WRAP_NAMES_MAX)
        return -1;
    char *grown = realloc(w->buf, w->len + n + 2);
    if (!grown)
        return -1;
    w->buf = grown;
    if (w->len)
        w->buf[w->len++] = ':';
    memcpy(w->buf + w->len, name, n);
    w->len += n;
    w->buf[w->len] = '\0';
    return 0;
}

/* A name and, for a path, its last component too: what the escalation
 * path matches exactly, and what it falls back to. */
static int
wrap_names_add_rule(void *arg, const char *name)
{
    const char *slash = strrchr(name, '/');
    int rc = wrap_names_add(arg, name, strlen(name));
    if (rc == 0 && slash)
        rc = wrap_names_add(arg, slash + 1, strlen(slash + 1));
    return rc;
}

/*
 * The programs the wrapper path may decide other than Run: every program
 * a rule names, and those the forced-rm heuristic reads.  A program goes
 * to the wrapper when its path or its last component is listed; a link
 * named otherwise to a listed program is judged by the tree watch, which
 * sees every name (docs/escalation.md, "The wrapper hint").  NULL when a
 * name cannot be listed (a ':' in it) or the list is too long.
 */
static char *
build_wrap_names(const struct rules_policy *rules)
{
    struct wrap_names w = {0};
    int rc = rules_policy_each_program(rules, wrap_names_add_rule, &w);
    const char *const *heuristic = heuristic_programs_list();
    for (size_t i = 0; rc == 0 && heuristic[i]; i++)
        rc = wrap_names_add(&w, heuristic[i], strlen(heuristic[i]));
    if (rc != 0) {
        free(w.buf);
        return NULL;
    }
    return w.buf;
}

/* ---- the server ---- */

static void
log_lint(void *arg, const char *line)
{
    log_warn("rules: %s", line);
}

/* The rules' sources, copied into ds.  Returns -1 when out of memory. */
static int
keep_sources(struct decide_server *ds, const struct decide_config *cfg)
{
    ds->rules_paths = calloc(cfg->n_rules_paths + 1, sizeof(char *));
    if (!ds->rules_paths)
        return -1;
    for (size_t i = 0; i < cfg->n_rules_paths; i++) {
        if (!(ds->rules_paths[i] = strdup(cfg->rules_paths[i])))
            return -1;
        ds->n_rules_paths++;
    }
    if (cfg->default_rules_dir && !(ds->default_rules_dir = strdup(cfg->default_rules_dir)))
        return -1;
    return 0;
}

/* The configuration the rules were loaded from (borrowing ds's copies). */
static struct decide_config
sources(const struct decide_server *ds)
{
    return (struct decide_config){
        .rules_paths = (const char *const *)ds->rules_paths,
        .n_rules_paths = ds->n_rules_paths,
        .default_rules_dir = ds->default_rules_dir,
        .preserve_program_paths = ds->preserve_program_paths,
    };
}

struct decide_server *
decide_server_new(const struct decide_config *cfg, char **err)
{
    *err = NULL;
    struct decide_server *ds = calloc(1, sizeof(*ds));
    if (!ds || keep_sources(ds, cfg) < 0) {
        decide_server_free(ds);
        *err = strdup("out of memory");
        return NULL;
    }
    ds->preserve_program_paths = cfg->preserve_program_paths;
    ds->answers_file = rules_amend_answers_file((const char *const *)ds->rules_paths,
                                                ds->n_rules_paths, ds->default_rules_dir);
    ds->rules = load_rules(cfg, err);
    /* what runs outside the sandbox under an allow rule is the rules
     * author's to weigh: say at start what deserves a second look */
    if (ds->rules && rules_lint_policy(ds->rules, log_lint, NULL) < 0)
        log_warn("rules: out of memory while linting the rules");
    if (ds->rules && (ds->written = writable_history_new()) != NULL)
        ds->client = decide_client_new();
    if (ds->rules && !ds->client)
        *err = strdup("out of memory");
    if (ds->client && cfg->audit_path)
        ds->audit = audit_open(cfg->audit_path, err);
    /* with an audit log every exec of the shell is to get its record */
    if (ds->client && !cfg->audit_path)
        ds->wrap_names = build_wrap_names(ds->rules);
    if (!ds->client || (cfg->audit_path && !ds->audit)) {
        if (!*err)
            *err = strdup("out of memory");
        decide_server_free(ds);
        return NULL;
    }
    return ds;
}

int
decide_server_reload(struct decide_server *ds, char **err)
{
    *err = NULL;
    struct decide_config cfg = sources(ds);
    struct rules_policy *rules = load_rules(&cfg, err);
    if (!rules)
        return -1;
    /* the hint lists what the new rules name: computed before the swap so
     * that a failure leaves the old pair in force */
    char *wrap_names = NULL;
    if (!ds->audit && !(wrap_names = build_wrap_names(rules)))
        log_warn("rules: the reloaded rules cannot be given as a wrapper hint: every exec of "
                 "the shell goes to the wrapper");
    if (rules_lint_policy(rules, log_lint, NULL) < 0)
        log_warn("rules: out of memory while linting the rules");
    /* decisions are made synchronously: none holds the old policy now */
    rules_policy_free(ds->rules);
    free(ds->wrap_names);
    ds->rules = rules;
    ds->wrap_names = wrap_names;
    ds->reloads++;
    return 0;
}

const char *const *
decide_server_rules_paths(const struct decide_server *ds, size_t *n)
{
    *n = ds->n_rules_paths;
    return (const char *const *)ds->rules_paths;
}

unsigned
decide_server_reloads(const struct decide_server *ds)
{
    return ds->reloads;
}

void
decide_server_free(struct decide_server *ds)
{
    if (!ds)
        return;
    for (size_t i = 0; ds->rules_paths && i < ds->n_rules_paths; i++)
        free(ds->rules_paths[i]);
    free(ds->rules_paths);
    free(ds->default_rules_dir);
    free(ds->answers_file);
    rules_policy_free(ds->rules);
    decide_client_unref(ds->client);
    audit_close(ds->audit);
    free(ds->wrap_names);
    for (size_t i = 0; i < ds->n_repos; i++)
        free(ds->repos[i].root);
    free(ds->repos);
    writable_history_free(ds->written);
    free(ds);
}

void
decide_server_set_client(struct decide_server *ds, struct jsonrpc *rpc, bool elicitation)
{
    decide_client_set(ds->client, rpc, elicitation, ds->client->log);
}

void
decide_server_set_log(struct decide_server *ds, struct client_log *log)
{
    ds->client->log = log;
}

struct decide_client *
decide_client_new(void)
{
    struct decide_client *cl = calloc(1, sizeof(*cl));
    if (cl && !(cl->approvals = approvals_new())) {
        free(cl);
        cl = NULL;
    }
    if (cl)
        cl->refs = 1;
    return cl;
}

void
decide_client_set(struct decide_client *cl, struct jsonrpc *rpc, bool elicitation,
                  struct client_log *log)
{
    cl->rpc = rpc;
    cl->elicitation = elicitation;
    cl->log = log;
}

void
decide_client_unref(struct decide_client *cl)
{
    if (!cl || --cl->refs > 0)
        return;
    approvals_free(cl->approvals);
    free(cl);
}

void
decide_call_set_client(struct decide_call *dc, struct decide_client *cl)
{
    cl->refs++;
    decide_client_unref(dc->cl);
    dc->cl = cl;
}

const char *
decide_server_answers_file(const struct decide_server *ds)
{
    return ds->answers_file;
}

bool
decide_server_sandbox_wrote(const struct decide_server *ds, const char *path)
{
    return !ds || !ds->written || writable_history_contains(ds->written, path);
}

size_t
decide_server_rule_count(const struct decide_server *ds)
{
    return rules_policy_rule_count(ds->rules);
}

const char *
decide_server_wrap_names(const struct decide_server *ds)
{
    return ds->wrap_names;
}

const struct rules_policy *
decide_server_rules(const struct decide_server *ds)
{
    return ds ? ds->rules : NULL;
}

struct audit *
decide_server_audit(const struct decide_server *ds)
{
    return ds ? ds->audit : NULL;
}

bool
decide_server_auditing(const struct decide_server *ds)
{
    return ds->audit != NULL;
}

/* ---- repositories ---- */

/* The directory git uses for the .git entry at dotgit: the entry itself
 * (a directory, or a link to one) or what a "gitdir: " file names;
 * canonical, or NULL (*unreadable set when the entry is a file that could
 * not be read as one git writes). */
static char *
gitdir_of(const char *dotgit, bool *unreadable)
{
    *unreadable = false;
    struct stat st;
    if (stat(dotgit, &st) < 0 || !S_ISREG(st.st_mode))
        return realpath(dotgit, NULL);
    /* a FIFO swapped in since the stat must not block the loop */
    int fd = open(dotgit, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    char buf[4096];
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n < 8 || strncmp(buf, "gitdir: ", 8) != 0) {
        *unreadable = true;
        return NULL;
    }
    buf[n] = '\0';
    buf[8 + strcspn(buf + 8, "\r\n")] = '\0';
    char *dir = strdup(dotgit);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    char *target = NULL;
    if (slash) {
        *slash = '\0';
        if (asprintf(&target, "%s/%s", buf[8] == '/' ? "" : dir, buf + 8) < 0)
            target = NULL;
    }
    free(dir);
    char *real = target ? realpath(target, NULL) : NULL;
    free(target);
    return real;
}

/* The server's first sight of the repository at root, or NULL when it
 * has not looked there yet. */
static const struct seen_repo *
seen_repo_find(const struct decide_server *ds, const char *root)
{
    for (size_t i = 0; i < ds->n_repos; i++) {
        if (strcmp(ds->repos[i].root, root) == 0)
            return &ds->repos[i];
    }
    return NULL;
}

/* The server's first sight of the repository at root (added now if this
 * is it).  NULL when out of memory. */
static const struct seen_repo *
first_sight(struct decide_server *ds, const char *root, const struct stat *now, bool present)
{
    const struct seen_repo *seen = seen_repo_find(ds, root);
    if (seen)
        return seen;
    struct seen_repo *grown = realloc(ds->repos, (ds->n_repos + 1) * sizeof(*grown));
    char *copy = grown ? strdup(root) : NULL;
    if (grown)
        ds->repos = grown;
    if (!copy)
        return NULL;
    ds->repos[ds->n_repos] =
        (struct seen_repo){copy, present, present ? now->st_dev : 0, present ? now->st_ino : 0};
    return &ds->repos[ds->n_repos++];
}

/*
 * Notes the repositories the helper is about to keep read-only: the .git
 * at the top of each root (and the gitdir a .git file names), when it is
 * the one this server saw there first.  One the sandbox made where none
 * was is not trusted for the rest of the server's life, bound read-only
 * or not: it was made by the command (docs/escalation.md).
 */
static void
note_kept_repos(struct decide_call *dc)
{
    for (size_t i = 0; i < dc->view.n_repo_roots; i++) {
        char *dotgit = NULL;
        if (asprintf(&dotgit, "%s/.git", dc->view.repo_roots[i]) < 0)
            return;
        bool unreadable = false;
        char *gitdir = gitdir_of(dotgit, &unreadable);
        struct stat st;
        bool present = gitdir && stat(gitdir, &st) == 0;
        const struct seen_repo *seen = first_sight(dc->ds, dc->view.repo_roots[i], &st, present);
        bool kept =
            present && seen && seen->present && seen->dev == st.st_dev && seen->ino == st.st_ino;
        struct kept_repo *grown =
            kept ? realloc(dc->kept, (dc->n_kept + 1) * sizeof(*grown)) : NULL;
        if (grown) {
            dc->kept = grown;
            dc->kept[dc->n_kept++] = (struct kept_repo){dotgit, gitdir, st.st_dev, st.st_ino};
            continue;
        }
        if (present && !kept)
            log_info("decide %s: %s was not there when this server first ran a command in %s: "
                     "escalations in it run in the sandbox",
                     dc->label, dotgit, dc->view.repo_roots[i]);
        free(dotgit);
        free(gitdir);
    }
}

static bool
is_kept(const struct decide_call *dc, const char *dotgit, const char *gitdir)
{
    struct stat st;
    for (size_t i = 0; i < dc->n_kept; i++) {
        const struct kept_repo *k = &dc->kept[i];
        if (strcmp(k->dotgit, dotgit) == 0 && gitdir && strcmp(k->gitdir, gitdir) == 0)
            return stat(gitdir, &st) == 0 && st.st_dev == k->dev && st.st_ino == k->ino;
    }
    return false;
}

/*
 * Whether the sandboxes of view v kept the repository at dotgit (whose
 * gitdir is gitdir) read-only: dotgit is the .git at the top of one of
 * v's repo roots, which the helper binds read-only with its gitdir, and
 * the gitdir is the one this server saw there before it ran any command
 * in that root (one made since was made by a command).
 */
static bool
view_keeps(const struct decide_server *ds, const struct writable_view *v, const char *dotgit,
           const char *gitdir)
{
    struct stat st;
    if (!gitdir || stat(gitdir, &st) < 0)
        return false;
    for (size_t i = 0; i < v->n_repo_roots; i++) {
        const char *root = v->repo_roots[i];
        size_t n = strlen(root);
        if (n == 1 && root[0] == '/')
            n = 0; /* "/.git" */
        if (strncmp(dotgit, root, n) != 0 || strcmp(dotgit + n, "/.git") != 0)
            continue;
        const struct seen_repo *seen = seen_repo_find(ds, root);
        return seen && seen->present && seen->dev == st.st_dev && seen->ino == st.st_ino;
    }
    return false;
}

/* Whether a sandbox of any call could have written the repository at
 * dotgit (gitdir: its gitdir, or NULL): some remembered view contains
 * either and did not keep it read-only. */
static bool
history_repo_writable(const struct decide_server *ds, const char *dotgit, const char *gitdir)
{
    if (writable_history_everything(ds->written))
        return true;
    size_t n = 0;
    const struct writable_view *views = writable_history_views(ds->written, &n);
    for (size_t i = 0; i < n; i++) {
        bool reaches = writable_view_contains(&views[i], dotgit) ||
                       (gitdir && writable_view_contains(&views[i], gitdir));
        if (reaches && !view_keeps(ds, &views[i], dotgit, gitdir))
            return true;
    }
    return false;
}

static bool sandbox_could_write(const struct decide_call *dc, const char *path);

/* Whether dir is laid out as a git directory, which git takes as a
 * (bare) repository when it looks there: HEAD, objects/ and refs/. */
static bool
bare_layout(const char *dir)
{
    static const char *const parts[] = {"HEAD", "objects", "refs"};
    for (size_t i = 0; i < 3; i++) {
        char *p = NULL;
        struct stat st;
        if (asprintf(&p, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", parts[i]) < 0)
            return true; /* cannot tell: the cautious answer */
        bool there = lstat(p, &st) == 0 && (i == 0 || S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode));
        free(p);
        if (!there)
            return false;
    }
    return true;
}

/* Whether dir is the gitdir of a repository its call keeps read-only. */
static bool
is_kept_gitdir(const struct decide_call *dc, const char *dir)
{
    struct stat st;
    for (size_t i = 0; i < dc->n_kept; i++) {
        const struct kept_repo *k = &dc->kept[i];
        if (strcmp(k->gitdir, dir) == 0)
            return stat(dir, &st) == 0 && st.st_dev == k->dev && st.st_ino == k->ino;
    }
    return false;
}

/* The .git entry at dotgit stops an escalation: it, or the gitdir it
 * names, is where a sandbox could have written, and it is not one kept
 * read-only. */
static bool
dotgit_writable(const struct decide_call *dc, const char *dotgit)
{
    bool unreadable = false;
    char *gitdir = gitdir_of(dotgit, &unreadable);
    bool writable = writable_view_contains(&dc->view, dotgit) ||
                    (gitdir && writable_view_contains(&dc->view, gitdir));
    bool found =
        (writable && !is_kept(dc, dotgit, gitdir)) || history_repo_writable(dc->ds, dotgit, gitdir);
    free(gitdir);
    return found;
}

/* dir itself, laid out as a git directory (bare_layout), is one a
 * sandbox could have made: git takes a bare layout as a repository when
 * it finds one where it looks. */
static bool
bare_writable(const struct decide_call *dc, const char *dir)
{
    if (is_kept_gitdir(dc, dir))
        return false;
    return sandbox_could_write(dc, dir) || writable_history_contains(dc->ds->written, dir) ||
           writable_history_everything(dc->ds->written);
}

/* The directory above dir (malloc'd), "/" for "/"; NULL when out of memory. */
static char *
parent_of(const char *dir)
{
    char *up = strdup(dir);
    char *slash = up ? strrchr(up, '/') : NULL;
    if (slash == up)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    return up;
}

/*
 * Whether cwd lies in a git repository a sandbox could have written
 * (hooks, fsmonitor, filters, aliases: code that an escalated program
 * would run outside): from cwd up to "/", any .git entry that is in the
 * call's writable view, or names a gitdir there, and is not one its
 * sandbox keeps read-only, or that any call's sandbox could have written
 * so (history_repo_writable); or any directory laid out as a git
 * directory (a bare repository) that a sandbox could have written.
 * *which gets the entry (malloc'd) when so, NULL when cwd cannot be
 * resolved (which also answers yes).  Otherwise *ceiling gets the
 * directory above the first repository met (else above cwd): git run
 * there is to look no higher (GIT_CEILING_DIRECTORIES).
 */
static bool
in_writable_repo(const struct decide_call *dc, const char *cwd, char **which, char **ceiling)
{
    *which = NULL;
    *ceiling = NULL;
    char *dir = realpath(cwd, NULL);
    if (!dir)
        return true; /* cannot tell: the cautious answer, *which NULL */
    /* the ceiling when no repository is met */
    char *above_cwd = parent_of(dir);
    bool found = false;
    for (;;) {
        char *dotgit = NULL;
        struct stat st;
        const char *sep = strcmp(dir, "/") == 0 ? "" : "/";
        if (asprintf(&dotgit, "%s%s.git", dir, sep) < 0) {
            found = true;
            break;
        }
        bool has_dotgit = lstat(dotgit, &st) == 0;
        if (has_dotgit && dotgit_writable(dc, dotgit)) {
            *which = dotgit;
            found = true;
            break;
        }
        free(dotgit);
        bool bare = bare_layout(dir);
        if (bare && bare_writable(dc, dir)) {
            found = true;
            *which = dir;
            dir = NULL;
            break;
        }
        if ((has_dotgit || bare) && !*ceiling)
            *ceiling = parent_of(dir);
        char *slash = strrchr(dir, '/');
        if (slash == dir && dir[1] == '\0')
            break;
        if (slash == dir)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
    if (!found && !*ceiling) {
        *ceiling = above_cwd;
        above_cwd = NULL;
        found = *ceiling == NULL;
    }
    free(above_cwd);
    if (found) {
        free(*ceiling);
        *ceiling = NULL;
    }
    free(dir);
    return found;
}

/* ---- the call ---- */

/* writable_view_written_fn: whether a sandbox of an earlier call (or one
 * running) could have written dir. */
static bool
written_before(void *arg, const char *dir)
{
    const struct decide_server *ds = arg;
    return ds->written && writable_history_contains(ds->written, dir);
}

struct decide_call *
decide_call_new(struct decide_server *ds, const struct sandbox_policy *policy, const json_t *id,
                const char *label, void (*on_abort)(void *data, const char *why), void *data,
                char **err)
{
    *err = NULL;
    struct decide_call *dc = calloc(1, sizeof(*dc));
    if (!dc || !(dc->label = strdup(label))) {
        free(dc);
        *err = strdup("out of memory");
        return NULL;
    }
    if (writable_view_init_after(&dc->view, policy, written_before, ds, err) < 0) {
        free(dc->label);
        free(dc);
        return NULL;
    }
    /* from now on its sandbox may run: what it can write counts for every
     * call's decisions, for the rest of the server's life */
    if (writable_history_add(ds->written, &dc->view))
        log_warn("decide %s: the sandboxes of this server's calls could write more than %d "
                 "places in all (or memory ran out): from now on nothing runs outside the "
                 "sandbox",
                 label, WRITABLE_HISTORY_MAX_ROOTS);
    dc->id = id ? json_incref((json_t *)id) : NULL;
    dc->ds = ds;
    dc->cl = ds->client;
    ds->client->refs++;
    dc->refs = 1;
    dc->waiting_tail = &dc->waiting;
    dc->on_abort = on_abort;
    dc->abort_data = data;
    ds->calls++;
    return dc;
}

struct decide_call *
decide_call_ref(struct decide_call *dc)
{
    dc->refs++;
    return dc;
}

static void
memo_clear(struct memo_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].reason);
    }
    l->n = 0;
}

void
decide_call_unref(struct decide_call *dc)
{
    if (!dc || --dc->refs > 0)
        return;
    writable_view_release(&dc->view);
    for (size_t i = 0; i < dc->n_kept; i++) {
        free(dc->kept[i].dotgit);
        free(dc->kept[i].gitdir);
    }
    free(dc->kept);
    memo_clear(&dc->expected);
    memo_clear(&dc->declined);
    dc->ds->calls--;
    decide_client_unref(dc->cl);
    json_decref(dc->id);
    free(dc->label);
    free(dc);
}

void
decide_call_start(struct decide_call *dc, struct shell_call *sc)
{
    note_kept_repos(dc);
    dc->sc = sc;
}

void
decide_call_end(struct decide_call *dc)
{
    if (dc)
        dc->sc = NULL;
}

const char *
decide_call_label(const struct decide_call *dc)
{
    return dc->label;
}

const struct writable_view *
decide_call_view(const struct decide_call *dc)
{
    return &dc->view;
}

/* ---- memos ---- */

static void
memo_remove(struct memo_list *l, size_t i)
{
    free(l->items[i].key);
    free(l->items[i].reason);
    memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof(l->items[0]));
    l->n--;
}

static void
memo_add(struct memo_list *l, pid_t pid, const char *key, size_t keylen, const char *reason)
{
    char *k = malloc(keylen);
    char *r = reason ? strdup(reason) : NULL;
    if (!k || (reason && !r)) {
        free(k);
        free(r);
        return;
    }
    memcpy(k, key, keylen);
    if (l->n == DECIDE_MAX_REMEMBERED)
        memo_remove(l, 0);
    l->items[l->n++] = (struct memo){pid, k, keylen, r};
}

/* The index of the memo for key (and pid, unless the memo's is 0), or -1. */
static long
memo_find(const struct memo_list *l, pid_t pid, const char *key, size_t keylen)
{
    for (size_t i = 0; i < l->n; i++) {
        const struct memo *m = &l->items[i];
        if ((m->pid == 0 || m->pid == pid) && m->keylen == keylen &&
            memcmp(m->key, key, keylen) == 0)
            return (long)i;
    }
    return -1;
}

void
decide_call_expect(struct decide_call *dc, pid_t pid, const struct decide_result *r)
{
    if (pid > 0 && r->key)
        memo_add(&dc->expected, pid, r->key, r->keylen, NULL);
}

/* ---- the rules over every name ---- */

static json_t *
text_json(const char *t)
{
    size_t len = 0;
    char *u = utf8_lossy(t, strlen(t), &len);
    json_t *j = u ? json_stringn(u, len) : NULL;
    free(u);
    return j ? j : json_null();
}

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

/* The command as the checks read it: argv[1..] after a first word each
 * check sets to the name it tries (cmd->words[0]).  One per decision. */
struct command {
    const char **words;
    size_t n; /* at least 1 */
};

static int
command_init(struct command *cmd, const struct decide_exec *e)
{
    cmd->n = e->argc > 0 ? e->argc : 1;
    cmd->words = calloc(cmd->n + 1, sizeof(*cmd->words));
    for (size_t i = 1; cmd->words && i < e->argc; i++)
        cmd->words[i] = e->argv[i];
    return cmd->words ? 0 : -1;
}

/* The rules' verdict over every name e goes by (rules/verdict.h).
 * Returns 0, or -1 when out of memory (v released by the caller). */
static void
verdict_inputs(const struct decide_server *ds, const struct decide_exec *e,
               struct verdict_rules *vr, struct verdict_exec *ve)
{
    *vr = (struct verdict_rules){ds->rules, NULL, ds->answers_file, ds->preserve_program_paths};
    *ve = (struct verdict_exec){e->argv, e->argc, e->canonical, e->interpreters, e->n_interpreters};
}

static int
rules_verdict(const struct decide_server *ds, const struct decide_exec *e,
              const struct exec_path *walk, struct verdict *v)
{
    struct verdict_rules vr;
    struct verdict_exec ve;
    verdict_inputs(ds, e, &vr, &ve);
    return verdict_decide(&vr, &ve, walk, v);
}

/*
 * The dynamic loader run as a program starts the program it is given
 * without an exec of it, as a #! interpreter does: that program's names,
 * with its own arguments, count too (exec_path_is_loader).  Like a
 * restricting name they may make v stricter (forbidden, prompt) and never
 * allow; when they do, v takes their names marked restricting, so the
 * exec still runs as the loader (run_as_name) and its rule is shown as
 * the one that restricted it.  Those names are borrowed from the walk of
 * the program the loader runs, which moves into *kept (the caller
 * releases it after v).  A loader running a loader is followed as deep as
 * #! lines are.  Returns 0, or -1 when out of memory.
 */
static int
loader_verdict(const struct decide_server *ds, const struct decide_exec *e,
               const struct exec_path *walk, struct verdict *v, struct exec_path *kept)
{
    const char *const *argv = e->argv;
    size_t argc = e->argc;
    char *file = strdup(e->canonical ? e->canonical : walk->canonical ? walk->canonical : "");
    int rc = file ? 0 : -1;
    for (int depth = 0; rc == 0 && depth < EXEC_PATH_MAX_INTERPRETERS && exec_path_is_loader(file);
         depth++) {
        size_t k = exec_path_loader_program(argv, argc);
        if (k == 0)
            break;
        argv += k;
        argc -= k;
        struct exec_path inner;
        struct verdict iv = {.decision = RULES_DECISION_NONE};
        const struct decide_exec ie = {.argv = argv, .argc = argc, .cwd = e->cwd};
        rc = exec_path_walk(argv[0], e->cwd, &inner);
        if (rc == 0)
            rc = rules_verdict(ds, &ie, &inner, &iv);
        enum rules_decision d =
            iv.decision == RULES_DECISION_ALLOW ? RULES_DECISION_NONE : iv.decision;
        free(file);
        file = rc == 0 && inner.canonical ? strdup(inner.canonical) : NULL;
        if (rc == 0 && d > v->decision) {
            for (size_t i = 0; i < iv.n_names; i++)
                iv.names[i].restricting = true;
            struct verdict stricter = iv;
            iv = *v;
            *v = stricter;
            /* v's names now point into inner: keep it as long as v */
            exec_path_release(kept);
            *kept = inner;
            memset(&inner, 0, sizeof(inner));
        }
        verdict_release(&iv);
        exec_path_release(&inner);
        if (!file)
            break;
    }
    free(file);
    return rc < 0 ? -1 : 0;
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

/* The forced-rm heuristic, under the program's own names. */
static bool
forces_rm(const struct exec_path *walk, struct command *cmd)
{
    bool forced = false;
    const char *names[] = {walk->absolute, walk->canonical};
    for (size_t i = 0; i < 2 && !forced; i++) {
        cmd->words[0] = names[i];
        forced = names[i] && heuristic_forces_rm(cmd->words, cmd->n);
    }
    return forced;
}

/* ---- may it run outside? ---- */

/* Whether the call's sandbox, or any other this server started, could
 * have written, replaced or repointed path. */
static bool
sandbox_could_write(const struct decide_call *dc, const char *path)
{
    return writable_view_contains(&dc->view, path) ||
           writable_history_contains(dc->ds->written, path);
}

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

/* "FILE:LINE" of the first rule at v's decision, own names first; NULL
 * when none has an origin (or out of memory). */
static char *
rule_origin(const struct verdict *v)
{
    for (int pass = 0; pass < 2 && v->decision != RULES_DECISION_NONE; pass++) {
        for (size_t i = 0; i < v->n_names; i++) {
            const struct verdict_name *n = &v->names[i];
            if (n->restricting != (pass == 1))
                continue;
            for (size_t k = 0; k < n->result.n_matches; k++) {
                const struct rules_match *m = &n->result.matches[k];
                char *origin = NULL;
                if (m->decision == v->decision && m->origin.file && m->origin.line > 0)
                    return asprintf(&origin, "%s:%" PRIu32, m->origin.file, m->origin.line) < 0
                               ? NULL
                               : origin;
            }
        }
    }
    return NULL;
}

char *
decide_inside_note(const struct decide_result *r)
{
    if (!r->kept_inside || !r->reason)
        return NULL;
    char *name = escape_shown(r->run_as ? r->run_as : r->program ? r->program : "the program");
    char *why = escape_shown(r->reason);
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
static bool
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

/* An option of the command that writes any file or runs any command
 * (rules_lint's table), which an allow rule's prefix cannot have meant to
 * let out of the sandbox unseen: a static description, or NULL. */
static const char *
dangerous_use(const struct decide_result *out, struct command *cmd)
{
    cmd->words[0] = out->program;
    return rules_lint_dangerous_use(cmd->words, cmd->n);
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
               const struct exec_interpreters *in, struct command *cmd, bool ask,
               const struct verdict *v, struct decide_result *out)
{
    const char *why = NULL;
    char *why_owned = NULL;
    bool outside = escalatable(dc, e, walk, in, out, &why, &why_owned);
    if (!outside)
        log_info("decide %s: %s runs in the sandbox: %s", dc->label, out->program, why);
    const char *caution = outside && !ask ? dangerous_use(out, cmd) : NULL;
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

/* "allowed by default.rules:3": the first rule that gave v its decision
 * under a name that may grant, with its file's last component; NULL when
 * no rule matched or none says where it was written. */
static char *
rule_text(const struct verdict *v)
{
    const char *verb = v->decision == RULES_DECISION_ALLOW    ? "allowed by"
                       : v->decision == RULES_DECISION_PROMPT ? "approved under the prompt rule at"
                                                              : NULL;
    for (size_t i = 0; verb && i < v->n_names; i++) {
        const struct verdict_name *n = &v->names[i];
        for (size_t k = 0; n->decision == v->decision && k < n->result.n_matches; k++) {
            const struct rules_match *m = &n->result.matches[k];
            if (m->decision != v->decision || !m->origin.file || m->origin.line == 0)
                continue;
            const char *slash = strrchr(m->origin.file, '/');
            char *text = NULL;
            if (asprintf(&text, "%s %s:%" PRIu32, verb, slash ? slash + 1 : m->origin.file,
                         m->origin.line) < 0)
                text = NULL;
            return text;
        }
    }
    return NULL;
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

static char *escape_shown(const char *text);

/* What the child's stderr says when nobody can be asked: who started it
 * outside, why it is not let through, and the rule that would allow it;
 * one line (escaped), or NULL when out of memory. */
static char *
child_refusal(const struct decide_exec *e, const struct decide_result *out, const char *why)
{
    char *rule = exact_rule(out, e);
    char *parent = escape_shown(e->outside->command);
    char *by = escape_shown(e->outside->why);
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

/* An exec whose environment names code to run in it (code_env):
 * the caution shown, and a note for a question no allow rule raised. */
static const char CODE_ENV[] =
    "its environment names code for the dynamic loader, a shell or an interpreter to run "
    "(LD_*, GCONV_PATH, BASH_ENV, BASH_FUNC_*, PYTHONPATH and the like)";

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
             const struct verdict *v, struct command *cmd, struct decide_result *out)
{
    bool allowed = v->decision == RULES_DECISION_ALLOW;
    /* a file a sandbox wrote is no program a rule or the shell test knows:
     * one named dash may be any code */
    bool written = walk_writable(dc, walk) || interpreters_writable(dc, e) ||
                   (e->canonical && sandbox_could_write(dc, e->canonical));
    bool planted = allowed && written;
    const char *caution = allowed && !planted ? dangerous_use(out, cmd) : NULL;
    /* set by the escalated program for its children (its own environment
     * was reset): code a rule could not have meant to let in */
    bool loads = allowed && !planted && !caution && e->code_env;
    if (loads)
        caution = CODE_ENV;
    if ((allowed && !planted && !caution) ||
        (v->decision == RULES_DECISION_NONE && !written && !e->code_env &&
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
                  struct command *cmd, struct decide_result *out)
{
    if (e->source == DECIDE_FROM_WRAPPER && dangerous_use(out, cmd))
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
    struct exec_path loaded = {0}; /* what v's names may borrow from (loader_verdict) */
    struct exec_interpreters in = {.n = 0};
    struct verdict v = {.decision = RULES_DECISION_NONE};
    struct command cmd = {NULL, 0};
    bool ok = exec_path_walk(e->path, e->cwd, &walk) == 0 && command_init(&cmd, e) == 0;
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
    ok = ok && make_key(out, e, &walk) == 0 && rules_verdict(dc->ds, e, &walk, &v) == 0 &&
         loader_verdict(dc->ds, e, &walk, &v, &loaded) == 0;
    if (ok)
        out->matched = matched_rules(dc, &v);
    /* what only an exec that may go outside needs (the tree's run in place) */
    if (ok && e->source == DECIDE_FROM_WRAPPER) {
        ok = (out->run_as = run_as_name(&v, &walk)) != NULL;
        out->rule = rule_origin(&v);
    }
    if (!ok) {
        set_deny(out, "out of memory", NULL);
    } else if (v.decision == RULES_DECISION_FORBIDDEN && e->source == DECIDE_FROM_TREE) {
        /* the tree's refusal is a line on the program's stderr */
        set_deny(out, v.justification ? v.justification : "forbidden by a rule", NULL);
    } else if (v.decision == RULES_DECISION_FORBIDDEN) {
        set_deny(out, REASON_FORBIDDEN, v.justification);
    } else if (answered_before(dc, e, out)) {
        /* the call has its answer */
    } else if (v.decision == RULES_DECISION_PROMPT && e->source == DECIDE_FROM_WRAPPER) {
        decide_outside(dc, e, &walk, &in, &cmd, true, &v, out);
    } else if (v.decision == RULES_DECISION_PROMPT) {
        out->verdict = DECIDE_ASK;
    } else if (v.decision == RULES_DECISION_ALLOW && e->source == DECIDE_FROM_WRAPPER) {
        decide_outside(dc, e, &walk, &in, &cmd, false, &v, out);
    } else if (e->outside && e->source == DECIDE_FROM_TREE) {
        decide_child(dc, e, &walk, &v, &cmd, out);
    } else if (v.decision == RULES_DECISION_NONE && e->source == DECIDE_FROM_WRAPPER &&
               forces_rm(&walk, &cmd)) {
        /* the reference's heuristic: asked, and an approval runs inside */
        out->verdict = DECIDE_ASK;
        out->reason = strdup("a forced rm");
    } else {
        out->verdict = DECIDE_RUN;
        out->reason = strdup(v.decision == RULES_DECISION_ALLOW ? "allowed" : "no rule");
    }
    if (out->verdict == DECIDE_ASK && v.decision == RULES_DECISION_PROMPT) {
        propose_amendment(dc, e, &walk, &cmd, out);
        /* shown in the question; without it the question is still asked */
        if (v.justification && !(out->justification = strdup(v.justification)))
            log_warn("decide: out of memory keeping a rule's justification for its question");
    }
    /* what let an escalated program out, for its children's questions */
    if (ok && e->source == DECIDE_FROM_WRAPPER &&
        (out->verdict == DECIDE_ESCALATE || out->escalate_if_approved))
        out->parent_rule = rule_text(&v);
    if (out->verdict == DECIDE_ASK && make_approval(out, e, &walk) < 0) {
        decide_result_release(out);
        out->answered_by = "rules";
        out->file = strdup(e->path);
        set_deny(out, "out of memory", NULL);
    }
    verdict_release(&v);
    exec_path_release(&loaded);
    free(cmd.words);
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

/* ---- asking a person ---- */

static void
call_pause(struct decide_call *dc, bool pause)
{
    if (!dc->sc)
        return;
    if (pause) {
        dc->paused++;
        shell_call_pause_timeout(dc->sc);
    } else if (dc->paused > 0) {
        dc->paused--;
        shell_call_resume_timeout(dc->sc);
    }
}

/* Stops the call: a person answered abort (why: what the call's result
 * says). */
static void
call_abort(struct decide_call *dc, const char *why)
{
    if (dc->aborted)
        return;
    dc->aborted = true;
    if (dc->on_abort)
        dc->on_abort(dc->abort_data, why);
    if (dc->sc)
        shell_call_signal(dc->sc, SIGKILL);
}

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
static char *
escape_shown(const char *text)
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

void
decide_call_on_said(struct decide_call *dc, decide_said_fn said, void *data)
{
    dc->on_said = said;
    dc->said_data = data;
}

char *
decide_text_shown(const char *text)
{
    return escape_shown(text);
}

/* program and args as a question shows them: the program as it is, the
 * arguments quoted as a shell reads them, all escaped (escape_shown).
 * NULL when out of memory. */
static char *
shown_command(const char *program, const char *const *args, size_t nargs)
{
    char *joined = shlex_join(args, nargs);
    char *prog = escape_shown(program);
    char *shown_args = joined ? escape_shown(joined) : NULL;
    char *cmd =
        prog && shown_args ? strfmt("%s%s%s", prog, nargs > 0 ? " " : "", shown_args) : NULL;
    free(joined);
    free(prog);
    free(shown_args);
    return cmd;
}

char *
decide_question_text(const char *program, const char *const *args, size_t nargs,
                     const char *workdir)
{
    char *cmd = shown_command(program, args, nargs);
    char *wd = escape_shown(workdir);
    char *text = cmd && wd ? strfmt("Allow agent to run `%s` in `%s`?", cmd, wd) : NULL;
    free(cmd);
    free(wd);
    return text;
}

char *
decide_child_question_text(const char *parent, const char *why, const char *program,
                           const char *const *args, size_t nargs, const char *workdir)
{
    char *shown_parent = escape_shown(parent);
    char *shown_why = escape_shown(why);
    char *cmd = shown_command(program, args, nargs);
    char *wd = escape_shown(workdir);
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

/* The most times a question is asked again after an answer whose
 * "always allow" cannot be taken (then it counts as declined). */
#define MAX_ASKS_AGAIN 2

#define ALWAYS_DECISION "approved_execpolicy_amendment"

/* A question that is out: what its answer is remembered by. */
struct decide_question {
    struct decide_call *dc;
    long long id;
    char *key;
    size_t keylen;
    char *approval; /* what approved_for_session remembers (decide_result) */
    size_t approvallen;
    bool remember_decline; /* from the tree: a PATH search's retries are not asked again */
    decide_answer_fn done;
    void *data;
    char *text;       /* the question as first asked */
    char **amendment; /* "always allow" offers this prefix; NULL: not offered */
    size_t n_amendment;
    char **args; /* the command's arguments, which a named prefix must follow */
    size_t nargs;
    char *justification;          /* the prompting rule's, shown; or NULL */
    char *command;                /* program and arguments as the question shows them */
    unsigned asks_left;           /* MAX_ASKS_AGAIN, counting down */
    struct decide_question *next; /* in the call's waiting line */
};

static void
question_free(struct decide_question *q)
{
    decide_call_unref(q->dc);
    free(q->key);
    free(q->approval);
    free(q->text);
    free(q->justification);
    free(q->command);
    verdict_words_free(q->amendment);
    verdict_words_free(q->args);
    free(q);
}

/* NULL-terminated copies of words[0..n); NULL when out of memory. */
static char **
words_copy(const char *const *words, size_t n)
{
    char **copy = calloc(n + 1, sizeof(*copy));
    for (size_t i = 0; copy && i < n; i++) {
        if (!(copy[i] = strdup(words[i]))) {
            verdict_words_free(copy);
            return NULL;
        }
    }
    return copy;
}

/* The "always" choice in plain words: "Yes, and always allow commands
 * starting with `git push`" (escaped as the question's text is); NULL
 * when out of memory. */
static char *
always_title(const struct decide_question *q)
{
    char *joined = shlex_join((const char *const *)q->amendment, q->n_amendment);
    char *prefix = joined ? escape_shown(joined) : NULL;
    char *title =
        prefix ? strfmt("Yes, and always allow commands starting with `%s`", prefix) : NULL;
    free(joined);
    free(prefix);
    return title;
}

/* The sentence that says what "always" adds, or NULL when out of memory. */
static char *
always_sentence(const struct decide_question *q)
{
    char *title = always_title(q);
    char *file = escape_shown(q->dc->ds->answers_file);
    char *sentence = title && file ? strfmt(" \"%s\" adds an allow rule to %s: such commands run "
                                            "from now on without asking.",
                                            title, file)
                                   : NULL;
    free(title);
    free(file);
    return sentence;
}

/* The message: why it is asked again (note, or NULL), the question, the
 * prompting rule's justification, and what "always" adds when it is
 * offered. */
static char *
question_message(const struct decide_question *q, const char *note)
{
    char *always = q->amendment ? always_sentence(q) : NULL;
    char *just = q->justification ? escape_shown(q->justification) : NULL;
    char *msg = NULL;
    if ((!q->amendment || always) && (!q->justification || just))
        msg = strfmt("%s%s%s%s%s%s%s%s", note ? "Asked again: " : "", note ? note : "",
                     note ? ". " : "", q->text, just ? " The rule that asks says: \"" : "",
                     just ? just : "", just ? "\"." : "", always ? always : "");
    free(always);
    free(just);
    return msg;
}

/*
 * elicitation/create's params: the message, a form of the decision (each
 * choice titled, question_form.h) and a reason (a text field; it reaches
 * the agent with a refusal), and Codex's proposed_execpolicy_amendment
 * when "always" is offered.  NULL when out of memory.
 */
static json_t *
question_params(const struct decide_question *q, const char *note)
{
    char *msg = question_message(q, note);
    char *always = q->amendment ? always_title(q) : NULL;
    const struct question_choice choices[] = {
        {"approved", "Yes, run it this once"},
        {"approved_for_session", "Yes, and do not ask again for this command in this session"},
        {ALWAYS_DECISION, always},
        {"denied", "No, do not run it (the agent is told and goes on)"},
        {"abort", "No, and stop the whole tool call"},
    };
    json_t *schema =
        msg && (!q->amendment || always)
            ? question_form_schema(
                  choices, sizeof(choices) / sizeof(choices[0]),
                  q->amendment
                      ? "approved: this once; approved_for_session: this command for the rest of "
                        "the session; " ALWAYS_DECISION ": every command starting with "
                        "proposed_execpolicy_amendment, from now on; denied; abort: stop the "
                        "whole tool call"
                      : "approved: this once; approved_for_session: this command for the rest of "
                        "the session; denied; abort: stop the whole tool call",
                  "Told to the agent when you refuse")
            : NULL;
    json_t *params =
        schema ? json_pack("{s:s, s:o}", "message", msg, "requestedSchema", schema) : NULL;
    json_t *prefix = params && q->amendment ? json_array() : NULL;
    for (size_t i = 0; prefix && i < q->n_amendment; i++)
        json_array_append_new(prefix, text_json(q->amendment[i]));
    if (prefix)
        json_object_set_new(params, "proposed_execpolicy_amendment", prefix);
    free(always);
    free(msg);
    return params;
}

/* Whether the decision an answer carries is "always allow": the plain
 * string, or Codex's {"approved_execpolicy_amendment": {...}}. */
static bool
is_always(const json_t *decision)
{
    const char *name = json_string_value(decision);
    return (name && strcmp(name, ALWAYS_DECISION) == 0) ||
           json_object_get(decision, ALWAYS_DECISION) != NULL;
}

/*
 * The prefix an "always" answer approves: the one proposed, or the one the
 * answer names (Codex's form), which must start as the proposal does,
 * follow the command's arguments, and be no shorter than the proposal (no
 * broader than what the person was shown).  NULL with *problem set when
 * it cannot be taken; else a NULL-terminated array (caller frees the
 * array, not the words it borrows from q and decision) and *n.
 */
static const char **
always_prefix(const struct decide_question *q, const json_t *decision, size_t *n,
              const char **problem)
{
    *problem = NULL;
    if (!q->amendment) {
        *problem = "always allowing is not offered for this command (a rule asks about it, and "
                   "an allow rule cannot settle that)";
        return NULL;
    }
    const json_t *named = json_object_get(json_object_get(decision, ALWAYS_DECISION),
                                          "proposed_execpolicy_amendment");
    if (json_is_object(decision) && !json_is_array(named)) {
        *problem = "the answer's approved_execpolicy_amendment names no prefix";
        return NULL;
    }
    size_t len = named ? json_array_size(named) : q->n_amendment;
    if (len < q->n_amendment || len > q->nargs + 1) {
        *problem = len < q->n_amendment ? "the prefix the answer names is broader than the one "
                                          "proposed"
                                        : "the prefix the answer names is longer than the command";
        return NULL;
    }
    const char **words = calloc(len + 1, sizeof(*words));
    for (size_t i = 0; words && i < len; i++) {
        const char *want = i == 0 ? q->amendment[0] : q->args[i - 1];
        words[i] = named ? json_string_value(json_array_get(named, i)) : q->amendment[i];
        if (!words[i] || strcmp(words[i], want) != 0) {
            *problem = "the prefix the answer names is not a prefix of the command being approved";
            free(words);
            return NULL;
        }
    }
    if (!words)
        *problem = "out of memory";
    *n = len;
    return words;
}

/* Appends `allow words` to the standing answers and reloads the rules;
 * a failure is logged (the answer then stands for this exec alone). */
static void
write_always(struct decide_question *q, const char *const *words, size_t n)
{
    struct decide_server *ds = q->dc->ds;
    char *err = NULL;
    char *line = rules_amend_rule_line(words, n);
    int rc = rules_amend_allow_prefix(ds->answers_file, words, n, &err);
    if (rc == 0 && decide_server_reload(ds, &err) < 0)
        rc = -1;
    const char *why = err ? err : "out of memory";
    if (rc == 0)
        log_info("decide %s: always allowed: %s added to %s", q->dc->label, line ? line : "a rule",
                 ds->answers_file);
    else
        log_error("decide %s: always allowing failed, the approval is for this exec only: %s",
                  q->dc->label, why);
    json_t *rec = rc == 0 ? json_pack("{s:s, s:s, s:s?}", "event", "rules-amended", "file",
                                      ds->answers_file, "rule", line)
                          : json_pack("{s:s, s:s, s:s}", "event", "rules-amend-failed", "file",
                                      ds->answers_file, "error", why);
    json_t *id = q->dc->id ? json_incref(q->dc->id) : NULL;
    if (rec && id)
        json_object_set_new(rec, "requestId", id);
    else
        json_decref(id);
    client_log_send(q->dc->cl->log, rc == 0 ? CLIENT_LOG_INFO : CLIENT_LOG_ERROR, rec);
    free(line);
    free(err);
}

/* reason, and what the person typed in the answer's reason field (escaped
 * as the question's text is) when there is something: in *buf (malloc'd),
 * else reason itself. */
static const char *
with_said(const char *reason, const json_t *content, char **buf)
{
    const char *said = json_string_value(json_object_get(content, "reason"));
    size_t n = said ? strspn(said, " \t\r\n") : 0;
    char *shown = said && said[n] ? escape_shown(said + n) : NULL;
    *buf = shown ? strfmt("%s, saying: %s", reason, shown) : NULL;
    free(shown);
    return *buf ? *buf : reason;
}

/* An approval's reason, when the person typed one, goes to the call's
 * result (decide_call_on_said). */
static void
tell_said(const struct decide_question *q, const json_t *content)
{
    const char *said = json_string_value(json_object_get(content, "reason"));
    size_t n = said ? strspn(said, " \t\r\n") : 0;
    if (!q->dc->on_said || !said || !said[n])
        return;
    char *shown = escape_shown(said + n);
    char *line = shown ? strfmt("approved `%s`: %s", q->command, shown) : NULL;
    if (line)
        q->dc->on_said(q->dc->said_data, line);
    else
        log_warn("decide %s: out of memory passing on an approval's reason", q->dc->label);
    free(line);
    free(shown);
}

/* The reason for a refusing answer, or NULL for an approval (an
 * approval for the session is remembered, "always" is written, an abort
 * stops the call).  *again is set instead when an "always" answer cannot
 * be taken: the question is to be asked again, saying why. */
static const char *
answer_reason(struct decide_question *q, const json_t *result, const json_t *error, char **buf,
              const char **again)
{
    *again = NULL;
    const char *action = json_string_value(json_object_get(result, "action"));
    const json_t *content = json_object_get(result, "content");
    const json_t *decision_json = json_object_get(content, "decision");
    const char *decision = json_string_value(decision_json);
    if (error) {
        const char *msg = json_string_value(json_object_get(error, "message"));
        if (asprintf(buf, "The MCP client could not be asked for approval: %s",
                     msg ? msg : "error") < 0)
            *buf = NULL;
        return *buf ? *buf : REASON_CANCELLED;
    }
    if (!action || strcmp(action, "cancel") == 0)
        return REASON_CANCELLED;
    if (strcmp(action, "decline") == 0)
        return REASON_DECLINED;
    if (strcmp(action, "accept") != 0)
        return REASON_CANCELLED;
    if (decision && strcmp(decision, "denied") == 0)
        return with_said(REASON_DENIED, content, buf);
    if (decision && strcmp(decision, "abort") == 0) {
        /* the call's group dies first, so nothing after this exec runs */
        const char *why = with_said(REASON_ABORTED, content, buf);
        call_abort(q->dc, why);
        return why;
    }
    if (decision && strcmp(decision, "approved_for_session") == 0 &&
        approvals_add(q->dc->cl->approvals, q->approval, q->approvallen) < 0)
        log_warn("decide: out of memory remembering an approval");
    if (is_always(decision_json)) {
        size_t n = 0;
        const char **words = always_prefix(q, decision_json, &n, again);
        if (!words)
            return REASON_DECLINED;
        write_always(q, words, n);
        free(words);
    }
    tell_said(q, content);
    return NULL;
}

static void on_question_answer(const json_t *result, const json_t *error, void *data);

/* Sends q's question (again, saying why: note, or NULL).  Returns 0, or -1
 * when it could not be sent. */
static int
send_question(struct decide_question *q, const char *note)
{
    struct decide_client *cl = q->dc->cl;
    json_t *params = cl->rpc ? question_params(q, note) : NULL;
    /* jsonrpc_request takes params, also on failure */
    long long id =
        params ? jsonrpc_request(cl->rpc, "elicitation/create", params, on_question_answer, q) : -1;
    if (id < 0)
        return -1;
    q->id = id;
    call_pause(q->dc, true);
    return 0;
}

/*
 * The next waiting question goes out once none is: a person sees one
 * question of a call at a time, in the order they came, and the client
 * holds one per call at most.  One whose command was approved for the
 * session meanwhile is answered without asking.
 */
static void
ask_next(struct decide_call *dc)
{
    while (!dc->asking && dc->waiting) {
        struct decide_question *q = dc->waiting;
        dc->waiting = q->next;
        if (!dc->waiting)
            dc->waiting_tail = &dc->waiting;
        q->next = NULL;
        bool approved = approvals_contains(dc->cl->approvals, q->approval, q->approvallen);
        if (!approved && send_question(q, NULL) == 0) {
            dc->asking = q;
            continue;
        }
        decide_answer_fn done = q->done;
        void *d = q->data;
        question_free(q);
        done(d, approved, approved ? NULL : "The MCP client could not be asked for approval");
    }
}

static void
on_question_answer(const json_t *result, const json_t *error, void *data)
{
    struct decide_question *q = data;
    call_pause(q->dc, false);
    char *buf = NULL;
    const char *again = NULL;
    const char *reason = answer_reason(q, result, error, &buf, &again);
    if (again) {
        log_info("decide %s: an answer could not be taken: %s", q->dc->label, again);
        if (q->asks_left > 0 && !q->dc->aborted) {
            q->asks_left--;
            if (send_question(q, again) == 0) {
                free(buf);
                return;
            }
        }
        free(buf);
        if (asprintf(&buf, "The answer could not be taken: %s", again) < 0)
            buf = NULL;
        reason = buf ? buf : REASON_DECLINED;
    }
    if (reason && q->remember_decline)
        memo_add(&q->dc->declined, 0, q->key, q->keylen, reason);
    struct decide_call *dc = decide_call_ref(q->dc);
    dc->asking = NULL;
    decide_answer_fn done = q->done;
    void *d = q->data;
    question_free(q);
    done(d, reason == NULL, reason);
    free(buf);
    ask_next(dc);
    decide_call_unref(dc);
}

/* When the request's argv[0] names another program than the one that
 * would run, the question says so: the person sees what was asked for,
 * and that the program runs under its own name.  -1 when out of memory. */
static int
add_argv0_note(struct decide_question *q, const struct decide_exec *e,
               const struct decide_result *r)
{
    if (!r->escalate_if_approved || !argv0_differs(e, r->run_as))
        return 0;
    char *asked = escape_shown(e->argv[0]);
    char *runs = escape_shown(r->run_as);
    char *noted = NULL;
    if (asked && runs &&
        asprintf(&noted, "%s (The command asked for argv[0] `%s`; it would run as `%s`.)", q->text,
                 asked, runs) < 0)
        noted = NULL;
    free(asked);
    free(runs);
    if (!noted)
        return -1;
    free(q->text);
    q->text = noted;
    return 0;
}

/* The question for r (an ASK for e), not yet sent; NULL when out of memory. */
static struct decide_question *
question_new(struct decide_call *dc, const struct decide_exec *e, const struct decide_result *r)
{
    struct decide_question *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->dc = decide_call_ref(dc);
    q->remember_decline = e->source == DECIDE_FROM_TREE;
    q->asks_left = MAX_ASKS_AGAIN;
    q->keylen = r->keylen;
    q->nargs = e->argc > 1 ? e->argc - 1 : 0;
    q->approvallen = r->approvallen;
    bool ok = (q->key = malloc(r->keylen)) != NULL && (q->approval = malloc(r->approvallen));
    if (ok) {
        memcpy(q->key, r->key, r->keylen);
        memcpy(q->approval, r->approval, r->approvallen);
    }
    const char *const *args = q->nargs ? e->argv + 1 : NULL;
    if (ok && e->outside)
        q->text = decide_child_question_text(e->outside->command, e->outside->why, r->program, args,
                                             q->nargs, e->cwd);
    else if (ok)
        q->text = decide_question_text(r->program, args, q->nargs, e->cwd);
    if (ok && q->text && !e->outside && e->outside_tree) {
        /* under a person's approval, a prompt rule's question: it runs
         * outside all the same */
        char *outside = strfmt("%s (It runs outside the sandbox: a program you let out started "
                               "it.)",
                               q->text);
        free(q->text);
        q->text = outside;
    }
    ok = ok && q->text != NULL;
    ok = ok && add_argv0_note(q, e, r) == 0;
    ok = ok && (q->command = shown_command(r->program, args, q->nargs));
    char *cautioned = NULL;
    if (ok && !r->caution && e->outside && e->code_env) {
        /* the person approves what the program will load, too */
        ok = asprintf(&cautioned, "%s (Note: %s.)", q->text, CODE_ENV) >= 0;
        if (ok) {
            free(q->text);
            q->text = cautioned;
            cautioned = NULL;
        }
    }
    if (ok && r->caution &&
        asprintf(&cautioned, "%s (An allow rule matched, but %s.)", q->text, r->caution) >= 0) {
        free(q->text);
        q->text = cautioned;
    }
    ok = ok && (!r->justification || (q->justification = strdup(r->justification)));
    if (ok && r->amendment) {
        ok = (q->amendment = words_copy((const char *const *)r->amendment, r->n_amendment)) &&
             (q->args = words_copy(q->nargs ? e->argv + 1 : NULL, q->nargs));
        q->n_amendment = r->n_amendment;
    }
    if (!ok) {
        question_free(q);
        return NULL;
    }
    return q;
}

enum decide_ask
decide_ask(struct decide_call *dc, const struct decide_exec *e, const struct decide_result *r,
           decide_answer_fn done, void *data, struct decide_question **q, const char **reason,
           const char **answered_by)
{
    *q = NULL;
    *reason = NULL;
    if (r->approval && approvals_contains(dc->cl->approvals, r->approval, r->approvallen)) {
        *answered_by = "session-approval";
        return DECIDE_ASK_APPROVED;
    }
    if (!dc->cl->elicitation || !dc->cl->rpc) {
        *answered_by = "no-elicitation";
        *reason = r->refusal ? r->refusal : REASON_NO_ELICITATION;
        return DECIDE_ASK_DENIED;
    }
    *answered_by = "user";
    struct decide_question *nq = r->key && r->approval ? question_new(dc, e, r) : NULL;
    if (nq) {
        nq->done = done;
        nq->data = data;
    }
    if (nq && (dc->asking || dc->waiting)) {
        /* after the ones before it */
        if (!dc->waiting)
            dc->waiting_tail = &dc->waiting;
        *dc->waiting_tail = nq;
        dc->waiting_tail = &nq->next;
        *q = nq;
        return DECIDE_ASK_PENDING;
    }
    if (!nq || send_question(nq, NULL) < 0) {
        if (nq)
            question_free(nq);
        *reason = "The MCP client could not be asked for approval";
        return DECIDE_ASK_DENIED;
    }
    dc->asking = nq;
    *q = nq;
    return DECIDE_ASK_PENDING;
}

void
decide_question_cancel(struct decide_question *q)
{
    if (!q)
        return;
    struct decide_call *dc = decide_call_ref(q->dc);
    if (q != dc->asking) {
        /* not sent yet: out of the line, and nobody is told */
        struct decide_question **p = &dc->waiting;
        while (*p && *p != q)
            p = &(*p)->next;
        if (*p)
            *p = q->next;
        if (dc->waiting_tail == &q->next)
            dc->waiting_tail = p;
        question_free(q);
        decide_call_unref(dc);
        return;
    }
    struct jsonrpc *rpc = dc->cl->rpc;
    if (rpc) {
        jsonrpc_forget_request(rpc, q->id);
        /* the client may still show the question: tell it to close it */
        jsonrpc_notify(rpc, "notifications/cancelled",
                       json_pack("{s:I, s:s}", "requestId", (json_int_t)q->id, "reason",
                                 "the exec it asked about is no longer waiting for an answer"));
    }
    dc->asking = NULL;
    call_pause(dc, false);
    question_free(q);
    ask_next(dc);
    decide_call_unref(dc);
}

/* ---- the audit record ---- */

/* The client's level for a record: refusals are warnings, what ran
 * outside and what a person answered is information, the rest detail. */
static enum client_log_level
record_level(const char *decision, const char *answered_by, bool kept_inside)
{
    if (strcmp(decision, "deny") == 0 || strcmp(decision, "refuse") == 0)
        return CLIENT_LOG_WARNING;
    /* a rule let it out and it runs inside: the agent sees only what
     * fails there, so the log says why at the level refusals have */
    if (kept_inside && strcmp(decision, "run") == 0)
        return CLIENT_LOG_WARNING;
    if (strcmp(decision, "escalate") == 0 ||
        (answered_by &&
         (strcmp(answered_by, "user") == 0 || strcmp(answered_by, "session-approval") == 0)))
        return CLIENT_LOG_INFO;
    return CLIENT_LOG_DEBUG;
}

static json_t *
exec_record(struct decide_call *dc, const struct decide_exec *e, const struct decide_result *r,
            const char *decision, const char *reason, const char *answered_by, int exit_kind,
            int exit_value)
{
    json_t *argv = json_array();
    for (size_t i = 0; argv && i < e->argc; i++)
        json_array_append_new(argv, text_json(e->argv[i]));
    json_t *rec = json_pack("{s:s, s:o, s:o, s:o, s:o, s:s, s:s*, s:s*}", "call", dc->label, "file",
                            text_json(r->file ? r->file : e->path), "program",
                            text_json(r->program ? r->program : e->path), "argv",
                            argv ? argv : json_array(), "workdir", text_json(e->cwd), "decision",
                            decision, "reason", reason, "answered_by", answered_by);
    if (rec && e->source == DECIDE_FROM_TREE) {
        json_object_set_new(rec, "source", json_string("tree"));
        json_object_set_new(rec, "pid", json_integer(e->pid));
    }
    if (rec && r->matched)
        json_object_set(rec, "matched_rules", r->matched);
    if (rec && exit_kind >= 0)
        json_object_set_new(rec, exit_kind == ESC_EXIT_CODE ? "exit_code" : "exit_signal",
                            json_integer(exit_value));
    return rec;
}

/* The record for the client: the call's request id as the client sent it. */
static void
send_to_client(struct decide_call *dc, enum client_log_level level, json_t *rec)
{
    json_t *id = dc->id ? json_incref(dc->id) : NULL;
    if (rec && id)
        json_object_set_new(rec, "requestId", id);
    else
        json_decref(id);
    if (rec)
        json_object_set_new(rec, "event", json_string("exec"));
    client_log_send(dc->cl->log, level, rec);
}

void
decide_audit(struct decide_call *dc, const struct decide_exec *e, const struct decide_result *r,
             const char *decision, const char *reason, const char *answered_by, int exit_kind,
             int exit_value)
{
    enum client_log_level level = record_level(decision, answered_by, r->kept_inside);
    enum log_level log_level = level >= CLIENT_LOG_WARNING ? LOG_LEVEL_WARN
                               : level == CLIENT_LOG_INFO  ? LOG_LEVEL_INFO
                                                           : LOG_LEVEL_DEBUG;
    bool to_client = client_log_wants(dc->cl->log, level);
    bool to_log = log_record_wanted(log_level);
    if (!dc->ds->audit && !to_client && !to_log)
        return;
    json_t *rec = exec_record(dc, e, r, decision, reason, answered_by, exit_kind, exit_value);
    if (to_log && rec) {
        json_object_set_new(rec, "event", json_string("exec"));
        log_record(log_level, rec);
        json_object_del(rec, "event");
    }
    if (to_client)
        send_to_client(dc, level, rec ? json_deep_copy(rec) : NULL);
    if (rec && e->source == DECIDE_FROM_TREE)
        json_object_del(rec, "matched_rules"); /* as the audit log has always had it */
    audit_write(dc->ds->audit, rec);
}

void
decide_trace(struct decide_call *dc, const struct decide_exec *e, const struct decide_result *r,
             const char *decision)
{
    if (client_log_wants(dc->cl->log, CLIENT_LOG_DEBUG))
        send_to_client(dc, CLIENT_LOG_DEBUG,
                       exec_record(dc, e, r, decision, r->reason, r->answered_by, -1, 0));
}
