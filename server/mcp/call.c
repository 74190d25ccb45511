#include "server/mcp/call.h"

#include "sandbox/policy/cmdline.h"
#include "sandbox/placeholder.h"
#include "sandbox/policy/policy.h"
#include "server/call/login_snapshot.h"
#include "server/call/call_cgroup.h"
#include "server/call/call_cgroup_pool.h"
#include "server/call/call_fds.h"
#include "server/net/call_net.h"
#include "server/rpc/client_log.h"
#include "server/decide/decide.h"
#include "server/decide/escalation.h"
#include "server/decide/exec_watch.h"
#include "supervise/unix_connect.h"
#include "common/file_id.h"
#include "common/strv.h"
#include "common/log.h"
#include "common/strfmt.h"
#include "common/utf8.h"
#include "server/call/writable_view.h"
#include "rules/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- lists ---- */

void
call_list_push(struct call_list *l, struct call *c)
{
    c->prev = l->tail;
    c->next = NULL;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->count++;
}

void
call_list_remove(struct call_list *l, struct call *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        l->tail = c->prev;
    c->prev = c->next = NULL;
    l->count--;
}

struct call *
call_list_find(const struct call_list *l, const json_t *id)
{
    for (struct call *c = l->head; c; c = c->next) {
        if (json_equal(c->id, id))
            return c;
    }
    return NULL;
}

/* ---- the end ---- */

/*
 * The server killed c (a timeout, a cancel, an abort, the shutdown): its
 * helper, killed with SIGKILL, cannot remove the placeholder .codex it
 * held, so the server does what that helper's end would have done: in
 * each of the call's roots, a placeholder no sandbox holds any more goes
 * (sandbox/placeholder.h).
 */
static void
sweep_placeholders(const struct call *c)
{
    for (size_t i = 0; c->codex_roots && c->codex_roots[i]; i++) {
        const char *root = c->codex_roots[i];
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int rc = fd < 0 ? -errno : sandbox_placeholder_sweep(fd, ".codex");
        if (fd >= 0)
            close(fd);
        if (rc == 1)
            log_info("call: removed the placeholder %s/.codex its killed sandbox left", root);
        else if (rc < 0 && rc != -ENOENT)
            log_warn("call: cannot remove a placeholder %s/.codex: %s", root, strerror(-rc));
    }
}

/*
 * Every part of c, released once, in the order the command's end needs:
 * the escalation state (what escalated programs left is killed), the
 * watch (execs still waiting fail), the decisions (nothing more reaches
 * the ended shell_call), the network, then the cgroup, which takes
 * whatever is left of the call with it (call_cgroup_pool.h).
 */
static void
release_parts(struct call *c)
{
    if (c->released)
        return;
    c->released = true;
    escalation_call_release(c->ec);
    exec_watch_release(c->watch);
    decide_call_end(c->dc);
    decide_call_unref(c->dc);
    call_net_free(c->net);
    call_net_client_unref(c->netns);
    call_cgroup_pool_put(c->cx->pool, c->cg);
    c->netns = NULL;
    c->watch = NULL;
    c->ec = NULL;
    c->dc = NULL;
    c->net = NULL;
    c->cg = NULL;
}

/* ---- a prepared call's pins ---- */

/* A path a prepared call's sandbox was set up from, and the file it named
 * then (an O_PATH fd, so the identity cannot be reused), or -1: nothing
 * was there. */
struct call_pin {
    char *path;
    int fd;
};

/* path as it names a file now, without following a last link: an fd, -1
 * when nothing is there, or -2 when it cannot be looked at. */
static int
pin_open(const char *path)
{
    int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    return errno == ENOENT || errno == ENOTDIR ? -1 : -2;
}

static void
unpin(struct call *c)
{
    for (size_t i = 0; i < c->n_pins; i++) {
        free(c->pins[i].path);
        if (c->pins[i].fd >= 0)
            close(c->pins[i].fd);
    }
    free(c->pins);
    c->pins = NULL;
    c->n_pins = 0;
}

/* Pins path (or dir/name when name is set).  Returns 0, or -1 (out of
 * memory, or it cannot be looked at: nothing is prepared then). */
static int
pin_add(struct call *c, size_t cap, const char *dir, const char *name)
{
    if (c->n_pins >= cap)
        return -1;
    char *path = name ? strfmt("%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name) : strdup(dir);
    int fd = path ? pin_open(path) : -2;
    if (fd == -2) {
        free(path);
        return -1;
    }
    c->pins[c->n_pins++] = (struct call_pin){.path = path, .fd = fd};
    return 0;
}

/*
 * What a prepared call's sandbox is set up from by name, pinned before
 * its helper starts: its writable roots, the .git and .codex of its repo
 * roots, its workdir, the server's --protect and --hide paths and the
 * paths its policy p denies (hidden as --hide's are).  A
 * call that comes later fits it only while each of them is still the
 * same file (call_take_prepared): a root renamed away and replaced is a
 * different directory, whatever its name.  Returns 0, or -1.
 */
static int
pin_sandbox(struct call *c, const char *workdir, const struct sandbox_policy *p)
{
    const struct call_context *cx = c->cx;
    const struct writable_view *v = decide_call_view(c->dc);
    size_t n_roots = v->kind == WRITABLE_VIEW_SOME ? v->n : 0;
    size_t n_repo = v->kind == WRITABLE_VIEW_SOME ? v->n_repo_roots : 0;
    size_t n_deny = sandbox_policy_deny_count(p);
    size_t cap = n_roots + 2 * n_repo + 1 + cx->n_protect + cx->n_hide + n_deny;
    c->pins = calloc(cap, sizeof(*c->pins));
    if (!c->pins)
        return -1;
    for (size_t i = 0; i < n_roots; i++) {
        if (pin_add(c, cap, v->roots[i], NULL) < 0)
            return -1;
    }
    for (size_t i = 0; i < n_repo; i++) {
        if (pin_add(c, cap, v->repo_roots[i], ".git") < 0 ||
            pin_add(c, cap, v->repo_roots[i], ".codex") < 0)
            return -1;
    }
    if (pin_add(c, cap, workdir, NULL) < 0)
        return -1;
    for (size_t i = 0; i < cx->n_protect; i++) {
        if (pin_add(c, cap, cx->protect[i], NULL) < 0)
            return -1;
    }
    for (size_t i = 0; i < cx->n_hide; i++) {
        if (pin_add(c, cap, cx->hide[i], NULL) < 0)
            return -1;
    }
    for (size_t i = 0; i < n_deny; i++) {
        if (pin_add(c, cap, sandbox_policy_deny(p, i), NULL) < 0)
            return -1;
    }
    return 0;
}

/* The pinned path that names another file now, or NULL: all the same. */
static const char *
pins_moved(const struct call *c)
{
    for (size_t i = 0; i < c->n_pins; i++) {
        const struct call_pin *pin = &c->pins[i];
        int now = pin_open(pin->path);
        bool same = (pin->fd < 0 && now == -1) ||
                    (pin->fd >= 0 && now >= 0 && file_id_same_fd(pin->fd, now));
        if (now >= 0)
            close(now);
        if (!same)
            return pin->path;
    }
    return NULL;
}

void
call_free(struct call *c)
{
    if (!c)
        return;
    release_parts(c);
    if (!c->started)
        shell_call_discard(c->sc);
    json_decref(c->id);
    free(c->label);
    json_decref(c->progress_token);
    free(c->aborted);
    free(c->said);
    free(c->snap_key);
    free(c->snap_workdir);
    json_decref(c->snap_policy);
    free(c->snap_sandbox_cwd);
    if (c->snap_fd >= 0)
        close(c->snap_fd);
    free(c->prep_workdir);
    free(c->prep_sandbox_cwd);
    json_decref(c->prep_policy);
    unpin(c);
    strv_free(c->codex_roots);
    free(c->held_output);
    free(c);
}

/* ---- events ---- */

static void
on_abort(void *data, const char *why)
{
    struct call *c = data;
    if (!c->aborted)
        c->aborted = strdup(why);
    log_info("call: %s", why);
}

/* A reason typed with an approval, for the call's result (person_said). */
static void
on_said(void *data, const char *line)
{
    struct call *c = data;
    char *more = c->said ? strfmt("%s\n%s", c->said, line) : strdup(line);
    if (!more) {
        log_warn("call: out of memory keeping what a person said with an approval");
        return;
    }
    free(c->said);
    c->said = more;
}

static void
on_progress(struct shell_call *sc, const char *line, size_t len, uint64_t total, void *data)
{
    (void)sc;
    struct call *c = data;
    size_t text_len = 0;
    char *text = utf8_lossy(line, len, &text_len);
    if (!text)
        return;
    json_t *params = json_pack("{s:O, s:I, s:s%}", "progressToken", c->progress_token, "progress",
                               (json_int_t)total, "message", text, text_len);
    free(text);
    if (params && c->progress)
        c->progress(c, params);
    else
        json_decref(params);
}

static void
on_signal(struct shell_call *sc, int sig, void *data)
{
    (void)sc;
    struct call *c = data;
    escalation_call_signal(c->ec, sig);
}

/* The command has ended: nothing the call started outlives its answer. */
static void
on_done(struct shell_call *sc, const struct shell_call_result *r, void *data)
{
    (void)sc;
    struct call *c = data;
    release_parts(c);
    c->sc = NULL; /* shell_call frees itself after this */
    if (r->timed_out || r->cancelled || c->aborted || c->signalled)
        sweep_placeholders(c);
    c->on_end(c, r);
}

static void
on_output(struct shell_call *sc, const char *buf, size_t n, void *data)
{
    (void)sc;
    struct call *c = data;
    if (c->on_output)
        c->on_output(c, buf, n);
}

static const struct shell_call_events events = {
    .on_progress = on_progress,
    .on_done = on_done,
    .on_signal = on_signal,
};

/* a background process's: its output is handed out as it comes */
static const struct shell_call_events background_events = {
    .on_done = on_done,
    .on_signal = on_signal,
    .on_output = on_output,
};

/* ---- making one ---- */

/* c's placeholder roots, from its decisions' view (the helper's repo
 * roots).  Returns 0, or -1 when out of memory. */
static int
keep_codex_roots(struct call *c, const struct writable_view *v)
{
    if (v->kind != WRITABLE_VIEW_SOME || v->n_repo_roots == 0)
        return 0;
    c->codex_roots = calloc(v->n_repo_roots + 1, sizeof(*c->codex_roots));
    for (size_t i = 0; c->codex_roots && i < v->n_repo_roots; i++) {
        if (!(c->codex_roots[i] = strdup(v->repo_roots[i])))
            return -1;
    }
    return c->codex_roots ? 0 : -1;
}

/* tree enforcement: an escalated program's exec filter listener goes to
 * the call's watch. */
static int
adopt_listener(void *watch, int listener, const struct decide_exec *e,
               const struct decide_result *r, bool by_person)
{
    return exec_watch_adopt(watch, listener, e, r, by_person);
}

/* Whether a call under p reaches the network through the proxy: the
 * policy keeps the network off and confines the command (read-only or
 * workspace-write: the helper makes namespaces there), and the proxy is
 * on, or on by default and the rules hold a network_rule. */
static bool
uses_proxy(const struct call_context *cx, const struct sandbox_policy *p)
{
    enum sandbox_kind kind = sandbox_policy_kind(p);
    if (!cx->net || sandbox_policy_network_allowed(p) ||
        (kind != SANDBOX_READ_ONLY && kind != SANDBOX_WORKSPACE_WRITE))
        return false;
    return cx->o->network_proxy == OPTIONS_NETWORK_PROXY_ON ||
           rules_policy_network_rule_count(decide_server_rules(cx->decide)) > 0;
}

/* Whether a call under p joins its session's network namespace (ncl's):
 * the policy keeps the network off and confines the command, and the
 * namespace is there (else the command has no network at all). */
static bool
uses_session_net(const struct sandbox_policy *p, struct call_net_client *ncl)
{
    enum sandbox_kind kind = sandbox_policy_kind(p);
    return !sandbox_policy_network_allowed(p) &&
           (kind == SANDBOX_READ_ONLY || kind == SANDBOX_WORKSPACE_WRITE) &&
           call_net_client_netns(ncl) >= 0;
}

/* Whether a call under p has its sockets supervised without tree
 * enforcement: the policy confines (read-only, workspace-write) and the
 * kernel has user notification. */
static bool
supervise_sockets(const struct call_context *cx, const struct sandbox_policy *p)
{
    enum sandbox_kind kind = sandbox_policy_kind(p);
    return cx->user_notif && (kind == SANDBOX_READ_ONLY || kind == SANDBOX_WORKSPACE_WRITE);
}

/* The helper's command line: the patched Bash runs the command in the
 * workdir, the helper reports on CALL_FD_REPORT and, with tree
 * enforcement, hands over its listener on CALL_FD_EXEC_NOTIFY (and, *net
 * set, the network proxy's on CALL_FD_NET_PROXY); *netns set, it joins
 * the session's network namespace (ncl's), given at CALL_FD_NET_NS.  Its writable roots
 * are those of view (the call's, resolved as it arrived), however long
 * the call then waits for a slot: p is pinned to them.  NULL with *err
 * (malloc'd) on failure. */
static char **
call_argv(const struct call_context *cx, struct sandbox_policy *p, const struct writable_view *view,
          const struct call_request *r, struct call_net_client *ncl, bool *net, bool *netns,
          bool *notify, char **err)
{
    if (writable_view_pin(view, p, err) < 0)
        return NULL;
    /* a prepared call's command comes later, as this last argument */
    const char *const program[] = {cx->o->shell_path, r->login ? "-lc" : "-c",
                                   r->prepare ? "" : r->command, NULL};
    const struct sandbox_cmdline cmd = {
        .helper = cx->o->sandbox_helper,
        .policy = p,
        .cwd = r->workdir,
        .report_fd = CALL_FD_REPORT,
        /* with shell enforcement a confining sandbox still hands over a
         * listener: for its sockets (exec_watch.h) */
        .exec_notify_fd =
            (*notify = cx->tree || supervise_sockets(cx, p)) ? CALL_FD_EXEC_NOTIFY : -1,
        .notify_sockets_only = !cx->tree,
        .net_proxy_fd = (*net = uses_proxy(cx, p)) ? CALL_FD_NET_PROXY : 0,
        .net_ns_fd = (*netns = uses_session_net(p, ncl)) ? CALL_FD_NET_NS : 0,
        .tty_fd = r->tty ? CALL_FD_TTY : 0,
        .command_fd = r->prepare ? CALL_FD_COMMAND : 0,
        .protect = (const char *const *)cx->protect,
        .n_protect = cx->n_protect,
        .hide = (const char *const *)cx->hide,
        .n_hide = cx->n_hide,
        .program = program,
    };
    char **argv = sandbox_cmdline_argv(&cmd);
    if (!argv)
        *err = strdup("out of memory");
    return argv;
}

/* A connection to another running call's proxy listener (its port, in
 * the namespace the session's calls share) would be decided, asked about
 * and recorded as that call's: refused (call_net.h). */
static const char *
other_calls_proxy(void *arg, const struct sockaddr *sa, socklen_t len)
{
    const struct call *c = arg;
    unsigned port = 0;
    if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
        port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
    else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
        port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    return port != 0 ? call_net_client_other_port(c->netns, c->net, port) : NULL;
}

/* The watch's Unix socket lookups in the session's network namespace,
 * where c's sandbox runs: abstract names and sock_diag are that
 * namespace's. */
static void
watch_session_net(struct call *c)
{
    struct stat st;
    int fd = call_net_client_netns(c->netns);
    if (fd < 0 || fstat(fd, &st) != 0)
        return; /* not joined: the sandbox has no network */
    const struct unix_connect_netns ns = {.dev = st.st_dev,
                                          .ino = st.st_ino,
                                          .socket = call_net_client_socket,
                                          .arg = c->netns,
                                          .ip_refused = other_calls_proxy,
                                          .ip_arg = c};
    exec_watch_set_netns(c->watch, &ns);
}

/* The call's other front ends, on c: with notify its watch (in tree mode
 * every exec of the shell's tree and the listeners of escalated programs;
 * in either mode the sandbox's sockets) and its escalation state (its
 * socket is made when it starts).  Returns 0, or -1 when out of memory. */
static int
front_ends(const struct call_context *cx, struct call *c, bool notify)
{
    const struct server_options *o = cx->o;
    c->helper_notifies = notify;
    if (notify || cx->watch_escalated) {
        c->watch = exec_watch_new(cx->loop, c->dc, o->execve_wrapper, o->bash_path, o->shell_path);
        if (!c->watch)
            return -1;
        exec_watch_set_strict(c->watch, o->exec_strict);
        exec_watch_set_take_listener(c->watch, cx->tree);
        exec_watch_allow_unix(c->watch, o->allow_unix, o->allow_unix_count);
        exec_watch_set_inherit(c->watch, o->escalated_children_inherit);
        if (c->netns)
            watch_session_net(c);
    }
    c->ec = escalation_call_new(cx->loop, c->dc, c->watch ? adopt_listener : NULL, c->watch,
                                (const char *const *)o->pass_env, o->pass_env_count);
    return c->ec ? 0 : -1;
}

/* The shell's environment, naming the wrapper and the escalation socket.
 * With tree enforcement the shell hands the wrapper only what the rules
 * may escalate: the tree watch judges its other execs. */
static char **
call_env(const struct call_context *cx)
{
    const char *wrap_names = cx->tree ? decide_server_wrap_names(cx->decide) : NULL;
    return escalation_shell_env(cx->o->execve_wrapper, cx->o->bash_path, wrap_names);
}

/* The sandbox part of a call: the policy parsed once (by the request's
 * filler, else here), the decisions made from it (their writable view)
 * and the helper's command line pinned to that view.  Returns the command
 * line, or NULL with *err. */
static char **
sandbox_part(struct call *c, const struct call_request *r, struct decide_client *cl,
             struct call_net_client *ncl, bool *net, bool *netns, bool *notify, char **err)
{
    const struct call_context *cx = c->cx;
    struct sandbox_policy *own =
        r->parsed ? NULL : sandbox_policy_from_json(r->policy, r->sandbox_cwd, err);
    struct sandbox_policy *p = r->parsed ? r->parsed : own;
    enum sandbox_kind kind = p ? sandbox_policy_kind(p) : SANDBOX_DANGER_FULL_ACCESS;
    /* only a confining sandbox has a setup worth doing ahead */
    c->confines = kind == SANDBOX_READ_ONLY || kind == SANDBOX_WORKSPACE_WRITE;
    c->dc = p ? decide_call_new(cx->decide, p, c->id, c->label, on_abort, c, err) : NULL;
    char **argv = NULL;
    if (c->dc) {
        decide_call_set_client(c->dc, cl);
        decide_call_on_said(c->dc, on_said, c);
        if (keep_codex_roots(c, decide_call_view(c->dc)) == 0)
            argv = call_argv(cx, p, decide_call_view(c->dc), r, ncl, net, netns, notify, err);
    }
    if (argv && r->prepare && pin_sandbox(c, r->workdir, p) < 0) {
        strv_free(argv);
        argv = NULL;
        if (!*err)
            *err = strdup("cannot pin what the prepared call's sandbox is set up from");
    }
    sandbox_policy_free(own);
    return argv;
}

/* login snapshot: what the capture of a login call needs (call_login_key).
 * Out of memory, the call runs a real login shell. */
static void
keep_login(struct call *c, const struct call_request *r)
{
    c->snap_key = call_login_key(c->cx, r);
    c->snap_workdir = strdup(r->workdir);
    c->snap_policy = json_deep_copy(r->policy);
    c->snap_sandbox_cwd = strdup(r->sandbox_cwd);
    if (!c->snap_key || !c->snap_workdir || !c->snap_policy || !c->snap_sandbox_cwd) {
        free(c->snap_key);
        free(c->snap_workdir);
        json_decref(c->snap_policy);
        free(c->snap_sandbox_cwd);
        c->snap_key = c->snap_workdir = c->snap_sandbox_cwd = NULL;
        c->snap_policy = NULL;
    }
}

static int keep_preparable(struct call *c, const struct call_request *r, bool net);

struct call *
call_new(const struct call_context *cx, json_t *id, const struct call_request *r,
         struct decide_client *cl, struct call_net_client *ncl, bool snapshots, char **errp)
{
    char *err = NULL;
    *errp = NULL;
    struct call *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->cx = cx;
    c->snap_fd = -1;
    c->login = r->login;
    c->id = json_incref(id);
    /* the id as text, once, for logs, the audit log and the cgroup's
     * messages; records for the client carry the id itself */
    c->label = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!c->label) {
        call_free(c);
        return NULL;
    }
    bool net = false, netns = false, notify = false;
    char **argv = sandbox_part(c, r, cl, ncl, &net, &netns, &notify, &err);
    if (!argv) {
        call_free(c);
        *errp = strfmt("sandbox policy: %s", err ? err : "out of memory");
        free(err);
        return NULL;
    }
    if (net && !(c->net = call_net_new(cx->net, ncl, c->dc, r->command))) {
        strv_free(argv);
        call_free(c);
        *errp = strdup("network proxy: out of memory");
        return NULL;
    }
    if (netns)
        c->netns = call_net_client_ref(ncl);
    char **env = NULL;
    if (front_ends(cx, c, notify) < 0 || !(env = call_env(cx))) {
        strv_free(argv);
        call_free(c);
        *errp = strdup("escalation: out of memory");
        return NULL;
    }
    struct shell_call_spec spec = {
        .argv = argv,
        .env = env,
        .timeout_ms = r->timeout_ms,
        .max_pause_ms = cx->o->max_ask_ms,
        .max_output = r->max_output ? r->max_output : cx->o->max_output_bytes,
        .progress = r->progress_token != NULL,
        .report = true,
        .helper = true,
        .prepared = r->prepare,
    };
    /* takes argv and env */
    c->sc = shell_call_new(cx->loop, &spec, r->background ? &background_events : &events, c);
    if (r->progress_token)
        c->progress_token = json_deep_copy(r->progress_token);
    if (!c->sc || (r->progress_token && !c->progress_token)) {
        call_free(c);
        return NULL;
    }
    if (r->login && snapshots)
        keep_login(c, r);
    if (keep_preparable(c, r, net) < 0) {
        call_free(c);
        *errp = strdup("out of memory");
        return NULL;
    }
    return c;
}

/* With prepared calls on, whether the call after c may be prepared like
 * it (a login call's as a login call: call_prepare_next), and what that
 * one is made from.  Returns 0, or -1 when out of memory. */
static int
keep_preparable(struct call *c, const struct call_request *r, bool net)
{
    c->rules_gen = decide_server_generation(c->cx->decide);
    if (!c->cx->o->prepare || !c->confines || r->background || r->tty || r->leave_sandbox || net)
        return 0;
    c->prep_workdir = strdup(r->workdir);
    c->prep_sandbox_cwd = strdup(r->sandbox_cwd);
    c->prep_policy = json_deep_copy(r->policy);
    if (!c->prep_workdir || !c->prep_sandbox_cwd || !c->prep_policy)
        return -1;
    c->preparable = true;
    return 0;
}

struct call *
call_prepare_next(const struct call *done, struct decide_client *cl, struct call_net_client *ncl,
                  char **err)
{
    *err = NULL;
    if (!done->preparable)
        return NULL;
    const struct call_request r = {
        .command = "",
        .workdir = done->prep_workdir,
        .policy = done->prep_policy,
        .sandbox_cwd = done->prep_sandbox_cwd,
        .login = done->login,
        .prepare = true,
    };
    json_t *id = json_pack("{s:I}", "prepared", (json_int_t)done->seq);
    struct call *p = id ? call_new(done->cx, id, &r, cl, ncl, false, err) : NULL;
    json_decref(id);
    return p;
}

/* Whether prep (a prepared call's helper command line) is argv but for
 * --command-fd N and the last argument, the command. */
static bool
argv_fits(char *const *prep, char *const *argv)
{
    size_t np = strv_len(prep), na = strv_len(argv);
    if (na == 0 || np != na + 2)
        return false;
    size_t i = 0, j = 0;
    bool skipped = false;
    while (j + 1 < na) {
        if (!skipped && strcmp(prep[i], SANDBOX_OPT_COMMAND_FD) == 0) {
            skipped = true;
            i += 2;
            continue;
        }
        if (strcmp(prep[i], argv[j]) != 0)
            return false;
        i++;
        j++;
    }
    return skipped && i + 1 == np;
}

static bool
env_same(char *const *a, char *const *b)
{
    if (!a || !b)
        return a == b;
    size_t i = 0;
    for (; a[i] && b[i]; i++) {
        if (strcmp(a[i], b[i]) != 0)
            return false;
    }
    return !a[i] && !b[i];
}

/* Why p's login shell cannot run c's command, or NULL: it can.  A login
 * call sources its snapshot when its shell starts (after the command
 * came), so p fits when it was given the very snapshot c was: the same
 * sealed memfd (both held open: the identity cannot be another's), or
 * neither was given one (a real login shell). */
static const char *
login_misfit(const struct call *p, const struct call *c)
{
    if (p->login != c->login)
        return c->login ? "a login call, and the sandbox was prepared for a call without login"
                        : "a call without login, and the sandbox was prepared for a login call";
    if (p->snap_fd >= 0 && c->snap_fd >= 0)
        return file_id_same_fd(p->snap_fd, c->snap_fd) ? NULL : "another login snapshot";
    if (p->snap_fd >= 0)
        return "no login snapshot for this call, and the sandbox was prepared with one";
    if (c->snap_fd >= 0)
        return "a login snapshot for this call, and the sandbox was prepared without one";
    return NULL;
}

/* Why p cannot run c's command, or NULL: it can. */
static const char *
misfit(const struct call *p, const struct call *c)
{
    const struct shell_call_spec *ps = shell_call_spec(p->sc), *cs = shell_call_spec(c->sc);
    if (!c->preparable)
        return "this kind of call is not prepared";
    if (c->snap_capture)
        return "a login snapshot's capture";
    if (c->held_by_owner)
        return "a task follows this call's questions";
    if (p->rules_gen != c->rules_gen)
        return "the rules were reloaded";
    const char *login = login_misfit(p, c);
    if (login)
        return login;
    if (!argv_fits(ps->argv, cs->argv))
        return "another sandbox, workdir or helper command line";
    if (!env_same(ps->env, cs->env))
        return "another environment";
    if (ps->max_output != cs->max_output || ps->max_pause_ms != cs->max_pause_ms)
        return "another output limit";
    if (p->net || c->net || p->netns != c->netns || p->helper_notifies != c->helper_notifies ||
        !p->watch != !c->watch)
        return "another network or exec watch";
    if (!writable_view_equal(decide_call_view(p->dc), decide_call_view(c->dc)))
        return "another writable view";
    if (strlen(cs->argv[strv_len(cs->argv) - 1]) > SANDBOX_COMMAND_MAX)
        return "a command too long to send";
    const char *moved = pins_moved(p);
    if (moved)
        return "a path its sandbox was set up from names another file now";
    return NULL;
}

/* p takes c's place: swaps what names the call and who owns it. */
static void
take_identity(struct call *p, struct call *c)
{
    json_t *id = p->id;
    p->id = c->id;
    c->id = id;
    char *label = p->label;
    p->label = c->label;
    c->label = label;
    json_t *token = p->progress_token;
    p->progress_token = c->progress_token;
    c->progress_token = token;
    p->session = c->session;
    p->q = c->q;
    p->seq = c->seq;
    p->progress = c->progress;
    p->on_end = c->on_end;
    p->on_output = c->on_output;
}

/* For the client, at debug level: whether c (its dc) runs in the
 * sandbox prepared for it, or why not. */
static void
say_prepared(struct decide_call *dc, const json_t *id, const char *why)
{
    struct client_log *log = decide_call_log(dc);
    if (!client_log_wants(log, CLIENT_LOG_DEBUG))
        return;
    json_t *rec = why ? json_pack("{s:s, s:O, s:s}", "event", "prepared-discarded", "requestId", id,
                                  "reason", why)
                      : json_pack("{s:s, s:O}", "event", "prepared", "requestId", id);
    client_log_send(log, CLIENT_LOG_DEBUG, rec);
}

int
call_take_prepared(struct call *p, struct call *c, const char **why)
{
    *why = p->sc && p->started && !p->released ? misfit(p, c) : "its helper has ended";
    if (!*why && decide_call_rename(p->dc, c->id, c->label) < 0)
        *why = "out of memory";
    if (*why) {
        say_prepared(c->dc, c->id, *why);
        return -1;
    }
    struct shell_call_spec *ps = shell_call_spec(p->sc);
    const struct shell_call_spec *cs = shell_call_spec(c->sc);
    ps->timeout_ms = cs->timeout_ms;
    ps->progress = cs->progress;
    int rc = shell_call_send_command(p->sc, cs->argv[strv_len(cs->argv) - 1]);
    if (rc < 0) {
        *why = "the command could not be sent to its helper";
        say_prepared(c->dc, c->id, *why);
        return -1;
    }
    say_prepared(p->dc, c->id, NULL);
    take_identity(p, c);
    return 0;
}

char *
call_login_key(const struct call_context *cx, const struct call_request *r)
{
    char *policy = json_dumps(r->policy, JSON_COMPACT | JSON_SORT_KEYS);
    char *key =
        policy ? strfmt("%s\n%s\n%s\n%s", cx->o->shell_path, policy, r->sandbox_cwd, r->workdir)
               : NULL;
    free(policy);
    return key;
}

char *
call_prepared_login_key(const struct call *c)
{
    const struct call_request r = {
        .workdir = c->prep_workdir,
        .policy = c->prep_policy,
        .sandbox_cwd = c->prep_sandbox_cwd,
    };
    return c->prep_workdir ? call_login_key(c->cx, &r) : NULL;
}

int
call_use_snapshot(struct call *c, const struct login_snapshot *ls,
                  const struct login_snapshot_kind *k, int fd)
{
    struct shell_call_spec *spec = shell_call_spec(c->sc);
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (own < 0)
        return -1;
    if (login_snapshot_use(ls, k, &spec->argv, &spec->env) < 0) {
        close(own);
        return -1;
    }
    /* the memfd stays the store's: the call starts (and inherits it)
     * before anything else runs on the loop */
    shell_call_set_fd(c->sc, CALL_FD_LOGIN_SNAPSHOT, fd);
    c->snap_fd = own;
    return 0;
}

/* ---- running ---- */

/* The call's own cgroup, which the helper and every escalated program
 * join before they run anything: a call that cannot have one runs
 * without, and says so. */
static void
start_cgroup(struct call *c)
{
    if (!c->cx->pool)
        return;
    char *err = NULL;
    c->cg = call_cgroup_pool_get(c->cx->pool, c->label, &err);
    if (!c->cg) {
        log_warn("call %s: runs without a cgroup of its own: %s", c->label,
                 err ? err : "out of memory");
    } else {
        const struct call_cgroup_join *j = call_cgroup_join(c->cg);
        shell_call_set_join(c->sc, j);
        escalation_call_set_join(c->ec, j);
    }
    free(err);
}

void
call_start(struct call *c)
{
    c->started = true;
    /* escalation: the socket is served from here on, and the server's
     * copy of the shell's end goes once the shell has it */
    decide_call_start(c->dc, c->sc);
    escalation_call_start(c->ec, c->sc);
    /* tree enforcement: without the socket the helper refuses to run
     * the command (it fails closed on --exec-notify-fd) */
    int notify_fd = c->watch && c->helper_notifies ? exec_watch_open(c->watch) : -1;
    if (c->watch && c->helper_notifies && notify_fd < 0)
        log_error("cannot make the exec watch's socket: %s: the call will fail",
                  strerror(-notify_fd));
    shell_call_set_fd(c->sc, CALL_FD_EXEC_NOTIFY, notify_fd);
    /* the network proxy: without the socket the helper refuses to run
     * the command (--net-proxy-fd names no socket) */
    int net_fd = c->net ? call_net_open(c->net) : -1;
    if (c->net && net_fd < 0)
        log_error("cannot make the network proxy's socket: %s: the call will fail",
                  strerror(-net_fd));
    if (c->net)
        shell_call_set_fd(c->sc, CALL_FD_NET_PROXY, net_fd);
    /* the session's network: made when the call was, held by its client */
    if (c->netns)
        shell_call_set_fd(c->sc, CALL_FD_NET_NS, call_net_client_netns(c->netns));
    start_cgroup(c);
    shell_call_start(c->sc);
    if (c->net)
        call_net_spawned(c->net);
    escalation_call_spawned(c->ec);
    if (c->watch)
        exec_watch_spawned(c->watch, notify_fd);
}

void
call_cancel(struct call *c)
{
    if (c->sc)
        shell_call_cancel(c->sc);
}

void
call_signal(struct call *c, int sig)
{
    c->signalled = true;
    if (c->sc)
        shell_call_signal(c->sc, sig);
}
