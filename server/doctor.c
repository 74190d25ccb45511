#include "server/doctor.h"

#include "server/call/call_cgroup.h"
#include "server/call/call_fds.h"
#include "server/decide/exec_watch.h"
#include "server/options.h"
#include "server/call/spawn_child.h"
#include "server/call/spawn_filtered.h"
#include "common/strfmt.h"
#include "common/strv.h"
#include "execgate-config.h"
#include "rules/load.h"
#include "rules/policy.h"
#include "sandbox/policy/cmdline.h"
#include "sandbox/policy/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* How long the trial run of the helper may take before it is killed. */
#define DOCTOR_TRIAL_MS 10000
/* What is kept of the helper's report and of its messages. */
#define DOCTOR_TRIAL_MAX 16384

struct doctor {
    FILE *out;
    unsigned missing; /* findings that make the exit status 1 */
};

/* One finding: "  MARK  text".  missing counts it against the exit status. */
static void say(struct doctor *d, const char *mark, bool missing, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
say(struct doctor *d, const char *mark, bool missing, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(d->out, "  %-8s ", mark);
    vfprintf(d->out, fmt, ap);
    fputc('\n', d->out);
    va_end(ap);
    if (missing)
        d->missing++;
}

/* ---- the programs ---- */

static bool
check_program(struct doctor *d, const char *what, const char *path, const char *flag)
{
    if (!path) {
        say(d, "MISSING", true, "%s: not found next to the server; name it with %s", what, flag);
        return false;
    }
    const char *problem = options_program_problem(path);
    if (problem) {
        say(d, "MISSING", true, "%s: %s: %s", what, path, problem);
        return false;
    }
    say(d, "ok", false, "%s: %s", what, path);
    return true;
}

/* ---- the rules ---- */

struct rules_files {
    char **names;
    size_t n;
};

static int
add_file(void *arg, const char *file)
{
    struct rules_files *f = arg;
    char **grown = realloc(f->names, (f->n + 1) * sizeof(char *));
    if (!grown)
        return -1;
    f->names = grown;
    f->names[f->n] = strdup(file);
    return f->names[f->n++] ? 0 : -1;
}

struct rule_count {
    const char *file;
    size_t n;
};

static int
count_from(void *arg, const struct rules_prefix_rule *rule)
{
    struct rule_count *c = arg;
    if (rule->origin.file && strcmp(rule->origin.file, c->file) == 0)
        c->n++;
    return 0;
}

static void
check_rules(struct doctor *d, const struct server_options *o)
{
    const char *const *paths = (const char *const *)o->rules;
    const char *missing_ok = o->rules_default ? o->rules[0] : NULL;
    char *err = NULL;
    struct rules_policy *p = rules_load_paths(paths, o->rules_count, missing_ok, &err);
    if (!p) {
        say(d, "MISSING", true, "%s: the server would not start (exit 2)",
            err ? err : "out of memory");
        free(err);
        return;
    }
    struct rules_files f = {0};
    if (rules_each_file(paths, o->rules_count, missing_ok, add_file, &f, &err) != 0) {
        say(d, "MISSING", true, "listing the rules files: %s", err ? err : "out of memory");
        free(err);
    } else if (f.n == 0) {
        struct stat st;
        bool absent = missing_ok && stat(missing_ok, &st) < 0 && errno == ENOENT;
        say(d, "ok", false, "no rules%s%s%s: no program is allowed outside the sandbox",
            o->rules_count ? " (" : "", o->rules_count ? o->rules[0] : "",
            o->rules_count ? (absent ? " does not exist)" : " has no *.rules file)") : "");
    } else {
        say(d, "ok", false, "%zu prefix rule(s) from %zu file(s):", rules_policy_rule_count(p),
            f.n);
        for (size_t i = 0; i < f.n; i++) {
            struct rule_count c = {f.names[i], 0};
            rules_policy_each_rule(p, count_from, &c);
            fprintf(d->out, "             %s (%zu)\n", f.names[i], c.n);
        }
    }
    strv_free_n(f.names, f.n);
    rules_policy_free(p);
}

/* ---- the sandbox, tried ---- */

struct trial {
    char *report; /* what the helper wrote on its report fd */
    size_t report_len;
    char *messages; /* its stdout and stderr */
    size_t messages_len;
    int status; /* exit status, 128+signal; -1: not run, -2: killed (too slow) */
};

/* Appends what fd has now to *buf (kept to DOCTOR_TRIAL_MAX); 0 at EOF. */
static ssize_t
drain(int fd, char **buf, size_t *len)
{
    char chunk[4096];
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n <= 0)
        return n < 0 && errno == EINTR ? 1 : n;
    size_t keep = *len + (size_t)n > DOCTOR_TRIAL_MAX ? DOCTOR_TRIAL_MAX - *len : (size_t)n;
    if (keep) {
        char *grown = realloc(*buf, *len + keep + 1);
        if (!grown)
            return -1;
        memcpy(grown + *len, chunk, keep);
        *len += keep;
        grown[*len] = '\0';
        *buf = grown;
    }
    return n;
}

static uint64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A pipe whose write end is at least 10 (so that it is never the number it
 * is to become in the child), both ends close-on-exec.  0 or -1. */
static int
high_pipe(int fds[2])
{
    int raw[2];
    if (pipe2(raw, O_CLOEXEC) < 0)
        return -1;
    fds[0] = raw[0];
    fds[1] = fcntl(raw[1], F_DUPFD_CLOEXEC, 10);
    close(raw[1]);
    if (fds[1] < 0) {
        close(raw[0]);
        return -1;
    }
    return 0;
}

/* Runs argv with its report fd at CALL_FD_REPORT, collecting both. */
static int
run_trial(char **argv, struct trial *t)
{
    int rep[2], msg[2];
    if (high_pipe(rep) < 0)
        return -1;
    if (high_pipe(msg) < 0) {
        close(rep[0]);
        close(rep[1]);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, msg[1], 1);
    posix_spawn_file_actions_adddup2(&fa, msg[1], 2);
    posix_spawn_file_actions_adddup2(&fa, rep[1], CALL_FD_REPORT);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(rep[1]);
    close(msg[1]);
    if (rc != 0) {
        close(rep[0]);
        close(msg[0]);
        errno = rc;
        return -1;
    }
    struct pollfd p[2] = {{rep[0], POLLIN, 0}, {msg[0], POLLIN, 0}};
    uint64_t deadline = now_ms() + DOCTOR_TRIAL_MS;
    bool killed = false;
    while (p[0].fd >= 0 || p[1].fd >= 0) {
        uint64_t now = now_ms();
        if (now >= deadline) {
            kill(pid, SIGKILL);
            killed = true;
            break;
        }
        if (poll(p, 2, (int)(deadline - now)) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            ssize_t n = i == 0 ? drain(p[i].fd, &t->report, &t->report_len)
                               : drain(p[i].fd, &t->messages, &t->messages_len);
            if (n <= 0) {
                close(p[i].fd);
                p[i].fd = -1;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        if (p[i].fd >= 0)
            close(p[i].fd);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    t->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (killed)
        t->status = -2;
    return 0;
}

/* The last line of the helper's messages (its reason when it gave up), in
 * buf; "" when it said nothing. */
static const char *
last_line(const char *messages, char *buf, size_t size)
{
    size_t len = messages ? strlen(messages) : 0;
    while (len > 0 && messages[len - 1] == '\n')
        len--;
    size_t start = len;
    while (start > 0 && messages[start - 1] != '\n')
        start--;
    snprintf(buf, size, "%.*s", (int)(len - start), messages ? messages + start : "");
    return buf;
}

/* The sandbox cwd for the trial: a fresh directory.  Caller frees. */
static char *
trial_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    char *dir = strfmt("%s/execgate-doctor-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    if (dir && !mkdtemp(dir)) {
        free(dir);
        return NULL;
    }
    return dir;
}

/* Removes the trial's directory and the empty .codex the helper made. */
static void
remove_trial_dir(const char *dir)
{
    char *codex = strfmt("%s/.codex", dir);
    if (codex)
        rmdir(codex);
    free(codex);
    rmdir(dir);
}

/* One run of the helper as the server runs it for a call, on the shell
 * (or `true` when the shell cannot run), with policy and sandbox cwd
 * (borrowed), in dir.  Returns 0 with *t filled, or -1 with *why
 * (malloc'd; NULL: see errno). */
static int
try_sandbox(const struct server_options *o, bool shell_ok, const json_t *policy,
            const char *sandbox_cwd, const char *dir, bool allow_degraded, struct trial *t,
            char **why)
{
    struct sandbox_policy *p = sandbox_policy_from_json(policy, sandbox_cwd, why);
    if (!p)
        return -1;
    const char *const bash[] = {o->bash_path, "--noprofile", "--norc", "-c", ":", NULL};
    const char *const fallback[] = {"true", NULL};
    struct sandbox_cmdline cmd = {
        .helper = o->sandbox_helper,
        .policy = p,
        .cwd = dir,
        .report_fd = CALL_FD_REPORT,
        .exec_notify_fd = -1,
        .allow_degraded = allow_degraded,
        .program = shell_ok ? bash : fallback,
    };
    char **argv = sandbox_cmdline_argv(&cmd);
    sandbox_policy_free(p);
    if (!argv)
        return -1;
    int rc = run_trial(argv, t);
    strv_free(argv);
    if (rc < 0)
        *why = strfmt("starting %s: %s", o->sandbox_helper, strerror(errno));
    return rc;
}

static void
trial_free(struct trial *t)
{
    free(t->report);
    free(t->messages);
}

static bool
degraded(const json_t *report, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(report, "degraded"), i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}

/* "Landlock ABI N: ...", or what its absence costs. */
static void
say_landlock(struct doctor *d, const json_t *report)
{
    static const char refused[] = "read-only and workspace-write commands are refused (a sandbox "
                                  "error: the server never runs them less confined)";
    if (degraded(report, "landlock")) {
        say(d, "MISSING", true, "Landlock: the kernel has none, or it is disabled: %s", refused);
        return;
    }
    int abi = (int)json_integer_value(json_object_get(json_object_get(report, "landlock"), "abi"));
    say(d, "ok", false, "Landlock ABI %d: the filesystem%s%s%s", abi, abi >= 3 ? ", truncate" : "",
        abi >= 4 ? ", TCP bind and connect" : "",
        abi >= 6 ? ", signals and abstract Unix sockets scoped" : "");
    if (degraded(report, "landlock-truncate"))
        say(d, "MISSING", true,
            "Landlock ABI 3 (truncate): truncate(2) outside the writable roots cannot be stopped, "
            "so %s",
            refused);
    if (degraded(report, "landlock-scope"))
        say(d, "MISSING", true,
            "Landlock ABI 6 (scoping): signals and abstract Unix sockets outside the sandbox "
            "cannot be stopped, so %s",
            refused);
    if (abi < 4)
        say(d, "note", false,
            "Landlock ABI 4 (TCP): network off rests on the seccomp filter alone");
}

static void
say_namespaces(struct doctor *d, const json_t *report)
{
    const json_t *ns = json_object_get(report, "namespaces");
    bool user = json_is_true(json_object_get(ns, "user"));
    bool mount = json_is_true(json_object_get(ns, "mount"));
    if (user)
        say(d, "ok", false, "user namespace");
    else if (mount)
        say(d, "MISSING", true,
            "user namespace: as root the command gets plain mount and PID namespaces, and its "
            "capabilities are not confined to the sandbox's namespaces");
    else
        say(d, "MISSING", true,
            "user namespace: not allowed here, so no mount or PID namespace either (below)");
    if (degraded(report, "mount-namespace"))
        say(d, "MISSING", true,
            "mount namespace: read-only and workspace-write commands are refused (the world "
            "outside the writable roots could not be made read-only, nor .git, .codex and the "
            "server's own files in writable roots kept read-only, nor its state hidden)");
    else
        say(d, "ok", false, "mount namespace");
    if (degraded(report, "read-only-world"))
        say(d, "MISSING", true,
            "read-only world (open_tree, move_mount, mount_setattr: Linux 5.12): read-only and "
            "workspace-write commands are refused (chmod, chown, utimensat and setxattr outside "
            "the writable roots could not be stopped)");
    else if (!degraded(report, "mount-namespace"))
        say(d, "ok", false, "read-only world outside the writable roots");
    if (degraded(report, "pid-namespace"))
        say(d, "MISSING", true,
            "PID namespace: read-only and workspace-write commands are refused (the command "
            "would see every process)");
    else if (degraded(report, "pid-namespace-proc"))
        say(d, "MISSING", true,
            "PID namespace's own /proc could not be mounted: read-only and workspace-write "
            "commands are refused (the old /proc shows every process)");
    else
        say(d, "ok", false, "PID namespace, with its own /proc");
    say(d, "-", false,
        "network namespace: one per session, for its calls with the network off (only "
        "loopback; the proxy's listeners); without one the network is turned off by the seccomp "
        "filter, and by Landlock from ABI 4");
}

/* How a trial of the shell under a policy (described as desc) ended. */
static void
say_shell_started(struct doctor *d, const struct trial *t, const char *desc)
{
    char line[512];
    last_line(t->messages, line, sizeof(line));
    if (t->status == -2)
        say(d, "MISSING", true, "%s: the helper did not finish within %d ms; killed", desc,
            DOCTOR_TRIAL_MS);
    else if (t->report && strstr(t->report, SANDBOX_REPORT_EXEC_ERROR))
        say(d, "MISSING", true,
            "%s: the shell cannot be started: every call under it is an error: %s", desc, line);
    else if (!t->report)
        say(d, "MISSING", true,
            "%s: the sandbox cannot be set up: every call under it is an error: %s", desc, line);
    else if (t->status != 0)
        say(d, "MISSING", true, "%s: the shell exited %d: %s", desc, t->status, line);
    else
        say(d, "ok", false, "%s: the shell starts", desc);
}

/* The shell under policy, run as the server runs a call (nothing less
 * allowed than the policy asks). */
static void
try_shell(struct doctor *d, const struct server_options *o, const json_t *policy,
          const char *sandbox_cwd, const char *dir, const char *desc)
{
    struct trial t = {.status = -1};
    char *why = NULL;
    if (try_sandbox(o, true, policy, sandbox_cwd, dir, false, &t, &why) == 0)
        say_shell_started(d, &t, desc);
    else
        say(d, "MISSING", true, "%s: not tried: %s", desc, why ? why : strerror(errno));
    free(why);
    trial_free(&t);
}

/* What the kernel offers, from the report of a run of the helper that was
 * allowed less than the policy asks (so that it names every missing part). */
static void
say_features(struct doctor *d, const struct trial *t)
{
    json_t *report = t->report ? json_loadb(t->report, strcspn(t->report, "\n"), 0, NULL) : NULL;
    if (!json_is_object(report) || json_object_get(report, "exec_error")) {
        char line[512];
        say(d, "MISSING", true,
            "the sandbox cannot be set up here, even allowing less (exit %d): %s", t->status,
            last_line(t->messages, line, sizeof(line)));
    } else {
        say_landlock(d, report);
        say_namespaces(d, report);
        if (degraded(report, "seccomp"))
            say(d, "MISSING", true,
                "seccomp filter: the kernel refused it, so commands under read-only, "
                "workspace-write and external-sandbox with the network off are refused");
        else
            say(d, "ok", false, "seccomp filter");
    }
    json_decref(report);
}

/*
 * Two runs of the helper in a scratch directory: workspace-write with the
 * network off and --allow-degraded, for the kernel's features; then, as
 * the server would run a call before any client sends a policy, the
 * starting policy (--sandbox, else read-only), and the same
 * workspace-write without --allow-degraded, each on the shell.
 */
static void
check_sandbox(struct doctor *d, const struct server_options *o, bool helper_ok, bool shell_ok)
{
    fprintf(d->out, "sandbox (tried: execgate-sandbox ran %s in a scratch directory)\n",
            shell_ok ? "the shell" : "`true`");
    if (!helper_ok) {
        say(d, "MISSING", true, "not tried: the sandbox helper cannot be run (above)");
        return;
    }
    char *dir = trial_dir();
    if (!dir) {
        say(d, "MISSING", true, "not tried: no scratch directory: %s", strerror(errno));
        return;
    }
    json_t *ww = json_pack("{s:s, s:b}", "type", "workspace-write", "network_access", 0);
    json_t *ro = json_pack("{s:s}", "type", "read-only");
    const json_t *start = o->sandbox ? o->sandbox : ro;
    const char *start_cwd = o->sandbox_cwd ? o->sandbox_cwd : dir;
    char *why = NULL;
    struct trial t = {.status = -1};
    if (!ww || !ro || try_sandbox(o, shell_ok, ww, dir, dir, true, &t, &why) < 0) {
        say(d, "MISSING", true, "not tried: %s", why ? why : strerror(errno));
    } else {
        say_features(d, &t);
        char *bad = NULL; /* the options were checked: nothing to say */
        struct sandbox_policy *p = sandbox_policy_from_json(start, start_cwd, &bad);
        char *desc = p ? sandbox_policy_describe(p) : NULL;
        sandbox_policy_free(p);
        free(bad);
        char *label = strfmt("starting policy (%s)", desc ? desc : "?");
        if (shell_ok && label) {
            try_shell(d, o, start, start_cwd, dir, label);
            try_shell(d, o, ww, dir, dir, "workspace-write, network off (as Codex sends it)");
        }
        free(label);
        free(desc);
    }
    trial_free(&t);
    free(why);
    json_decref(ww);
    json_decref(ro);
    remove_trial_dir(dir);
    free(dir);
}

/* ---- exec interception and cgroups, as the server probes them ---- */

static void
check_exec_interception(struct doctor *d, const struct server_options *o)
{
    char *why = NULL;
    bool tree = o->exec_enforcement == OPTIONS_EXEC_ENFORCEMENT_TREE;
    if (exec_watch_probe(&why) == 0) {
        say(d, tree ? "ok" : "-", false,
            "seccomp user notification%s: rules decide every program a command's process tree "
            "starts",
            tree ? "" : " (not used: --exec-enforcement=shell)");
    } else if (tree) {
        say(d, "MISSING", true,
            "seccomp user notification (%s): the server falls back to --exec-enforcement=shell, "
            "where rules decide only the programs the shell itself starts, not those they start "
            "(env rm, xargs, make, git hooks, os.execv)",
            why ? why : "out of memory");
    } else {
        say(d, "-", false, "seccomp user notification (%s): not used: --exec-enforcement=shell",
            why ? why : "out of memory");
    }
    free(why);
}

/* How long nothing happens before the timed start: the kernel's cgroup
 * lock waits for an RCU grace period when no other writer came shortly
 * before, a few to tens of milliseconds (struct call_cgroup_join). */
#define DOCTOR_QUIET_MS 200

/* Starts /proc/self/exe --version in cg after the quiet pause, through
 * the same filtered start as every call's helper, and reaps it; *ms is
 * how long the start took (to its exec).  0 or -errno. */
static int
timed_start(const struct call_cgroup *cg, double *ms)
{
    static char name[] = "execgate", version[] = "--version";
    char *argv[] = {name, version, NULL};
    struct spawn_options o = {.file = "/proc/self/exe",
                              .argv = argv,
                              .die_with_server = true,
                              .join = call_cgroup_join(cg)};
    struct timespec quiet = {0, DOCTOR_QUIET_MS * 1000000L};
    while (nanosleep(&quiet, &quiet) < 0 && errno == EINTR)
        ;
    pid_t pid = -1;
    int listener = -1;
    double start = now_ms();
    int rc = spawn_filtered_start(&o, &pid, &listener);
    *ms = now_ms() - start;
    while (rc == 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return rc;
}

/* How a call's first process gets into its cgroup, and a timed start. */
static void
say_join(struct doctor *d, const struct call_cgroup_probe *p)
{
    char *err = NULL;
    struct call_cgroup *cg = call_cgroup_new(p, "doctor", 0, 0, &err);
    if (!cg) {
        say(d, "MISSING", true, "cgroups: no call cgroup could be made: %s",
            err ? err : "out of memory");
        free(err);
        return;
    }
    const struct call_cgroup_join *j = call_cgroup_join(cg);
    bool v2 = j->procs >= 0, v1 = j->n_tasks > 0;
    bool in_place = j->into >= 0 && spawn_filtered_creates_in_cgroup();
    double ms = 0;
    int rc = timed_start(cg, &ms);
    call_cgroup_free(cg);
    if (rc < 0) {
        say(d, "MISSING", true, "cgroups: a call's first process could not start in its cgroup: %s",
            strerror(-rc));
        return;
    }
    if (!v2 || in_place) {
        say(d, "ok", false, "a call's first process %s: it started in %.1f ms after %d ms of quiet",
            !v2  ? "moves its one thread into each cgroup of its call (tasks)"
            : v1 ? "is created in its v2 cgroup (clone3 with CLONE_INTO_CGROUP) and moves its one "
                   "thread into the v1 ones (tasks)"
                 : "is created in its cgroup (clone3 with CLONE_INTO_CGROUP)",
            ms, DOCTOR_QUIET_MS);
        return;
    }
    const char *refused = call_cgroup_probe_into_refused(p);
    say(d, "ok", false,
        "a call's first process joins its v2 cgroup by writing cgroup.procs (%s): it started in "
        "%.1f ms after %d ms of quiet, %s",
        refused ? refused : "clone3 is used on x86_64 only", ms, DOCTOR_QUIET_MS,
        call_cgroup_probe_favordynmods(p)
            ? "and a cgroup hierarchy is mounted with favordynmods, so that write does not wait "
              "for the kernel"
            : "which can include a wait for the kernel's cgroup lock; the kernel's favordynmods "
              "cgroup mount option (not set here) is meant to remove that wait, at a cost to "
              "every fork and exit on the machine (docs/server.md)");
}

static void
check_cgroups(struct doctor *d)
{
    struct call_cgroup_probe *p = call_cgroup_probe();
    if (!p) {
        say(d, "MISSING", true, "cgroups: out of memory");
        return;
    }
    if (call_cgroup_mode(p) == CALL_CGROUP_NONE)
        say(d, "MISSING", true,
            "%s; --max-processes and --max-memory are not enforced, and a process that leaves "
            "its call's process group outside the sandbox's PID namespace outlives the call",
            call_cgroup_describe(p));
    else
        say(d, "ok", false, "%s", call_cgroup_describe(p));
    if (call_cgroup_mode(p) != CALL_CGROUP_NONE)
        say_join(d, p);
    call_cgroup_probe_free(p);
}

int
doctor_run(const struct server_options *o, FILE *out)
{
    struct doctor d = {.out = out};
    struct utsname u;
    if (uname(&u) == 0)
        fprintf(out, "%s %s --doctor: %s %s %s, uid %d\n", EXECGATE_NAME, EXECGATE_VERSION,
                u.sysname, u.release, u.machine, (int)getuid());
    fprintf(out, "programs\n");
    bool shell_ok = check_program(&d, "shell (the patched Bash)", o->bash_path, "--bash");
    if (o->shell == OPTIONS_SHELL_ZSH)
        check_program(&d, "shell (the patched zsh, --shell)", o->shell_path,
                      "--shell PATH or CODEX_ZSH_PATH");
    bool helper_ok = check_program(&d, "sandbox helper", o->sandbox_helper, "--sandbox-helper");
    check_program(&d, "exec wrapper", o->execve_wrapper, "--execve");
    fprintf(out, "rules\n");
    check_rules(&d, o);
    check_sandbox(&d, o, helper_ok, shell_ok);
    fprintf(out, "exec interception and limits\n");
    check_exec_interception(&d, o);
    check_cgroups(&d);
    if (d.missing)
        fprintf(out,
                "%u thing(s) missing (MISSING above): the server cannot keep every promise "
                "here\n",
                d.missing);
    else
        fprintf(out, "everything is in place: the sandbox and the rules are enforced in full\n");
    fflush(out);
    return d.missing ? 1 : 0;
}
