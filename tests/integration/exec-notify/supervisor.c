/*
 * exec-notify-supervisor (tests and bench only): runs execgate-sandbox with
 * --exec-notify-fd and answers every exec of the command's process tree
 * with exec_notify and the server's own decision (decide_exec, as the
 * exec watch asks it) under the rules of one file.
 *
 *   exec-notify-supervisor RULES_FILE|- HELPER POLICY_JSON CWD -- PROGRAM ARGS...
 *
 * "-" loads no rules (everything continues: the benchmark's case).  A
 * prompt is answered from $EXEC_NOTIFY_ANSWER (approve | anything else
 * declines) after the notification has been kept pending, the way the
 * server will answer after asking a person.  Prints "exec-notify: asked:
 * PATH" for each prompt and a stats line on exit to stderr; exits with the
 * helper's status once no process is left under the filter.
 * EXEC_NOTIFY_STRICT=1 turns on exec_notify_set_refuse_shared_memory.
 */
#include "sandbox/policy/policy.h"
#include "server/decide/decide.h"
#include "supervise/exec_notify.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct sup {
    struct decide_call *dc; /* NULL: everything continues */
    uint64_t *asked;
    size_t n_asked, cap_asked;
};

static void
on_ask(void *arg, const struct exec_notify_request *req)
{
    struct sup *s = arg;
    fprintf(stderr, "exec-notify: asked: %s\n", req->resolved);
    if (s->n_asked == s->cap_asked) {
        size_t cap = s->cap_asked ? 2 * s->cap_asked : 8;
        uint64_t *a = realloc(s->asked, cap * sizeof *a);
        if (a == NULL)
            abort();
        s->asked = a;
        s->cap_asked = cap;
    }
    s->asked[s->n_asked++] = req->id;
}

/* The exec as the server's exec watch hands it to the decision. */
static void
decide(void *arg, const struct exec_notify_request *req, struct exec_notify_decision *out)
{
    struct sup *s = arg;
    out->verdict = EXEC_NOTIFY_CONTINUE;
    if (s->dc == NULL)
        return;
    const struct decide_exec e = {
        .source = DECIDE_FROM_TREE,
        .path = req->resolved,
        .cwd = req->cwd[0] ? req->cwd : "/",
        .argv = req->argv,
        .argc = req->argc,
        .canonical = req->canonical,
        .interpreters = req->interpreters,
        .n_interpreters = req->n_interpreters,
        .pid = req->pid,
    };
    struct decide_result r;
    decide_exec(s->dc, &e, &r);
    switch (r.verdict) {
    case DECIDE_RUN:
        break;
    case DECIDE_ASK:
        out->verdict = EXEC_NOTIFY_ASK;
        break;
    case DECIDE_DENY:
    case DECIDE_ESCALATE: /* never for the tree: refused all the same */
        out->verdict = EXEC_NOTIFY_REFUSE;
        out->err = EACCES;
        out->reason = r.reason;
        r.reason = NULL;
        break;
    }
    decide_result_release(&r);
}

/* The server's decision state for one call under the rules of file, with
 * the sandbox policy (JSON) and cwd the helper runs with. */
static int
decide_open(const char *file, const char *policy_json, const char *cwd, struct decide_server **ds,
            struct decide_call **dc)
{
    char *err = NULL;
    const char *paths[] = {file};
    const struct decide_config cfg = {.rules_paths = paths, .n_rules_paths = 1};
    json_t *policy = json_loads(policy_json, 0, NULL);
    struct sandbox_policy *parsed = policy ? sandbox_policy_from_json(policy, cwd, &err) : NULL;
    *ds = parsed ? decide_server_new(&cfg, &err) : NULL;
    *dc = *ds ? decide_call_new(*ds, parsed, NULL, "supervisor", NULL, NULL, &err) : NULL;
    sandbox_policy_free(parsed);
    json_decref(policy);
    if (*dc != NULL)
        return 0;
    fprintf(stderr, "exec-notify-supervisor: %s\n",
            policy == NULL ? "the policy is not JSON"
            : err          ? err
                           : "out of memory");
    free(err);
    decide_server_free(*ds);
    *ds = NULL;
    return -1;
}

static pid_t
start_helper(char **argv, int argc, int sock)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* The one place the socket becomes inheritable: right before exec. */
    int fl = fcntl(sock, F_GETFD);
    fcntl(sock, F_SETFD, fl & ~FD_CLOEXEC);
    char fdnum[16];
    snprintf(fdnum, sizeof fdnum, "%d", sock);
    const char **a = calloc((size_t)argc + 10, sizeof *a);
    if (a == NULL)
        _exit(125);
    int k = 0;
    a[k++] = argv[2];
    a[k++] = "--policy";
    a[k++] = argv[3];
    a[k++] = "--cwd";
    a[k++] = argv[4];
    a[k++] = "--exec-notify-fd";
    a[k++] = fdnum;
    for (int i = 5; i < argc; i++)
        a[k++] = argv[i];
    execv(argv[2], (char *const *)a);
    perror(argv[2]);
    _exit(127);
}

static int
status_code(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Reaps every exited child (orphans come to us: we are a subreaper), so
 * that their filters are released and the listener can hang up. */
static void
reap(pid_t helper, int *helper_status, bool *helper_done)
{
    int st;
    pid_t w;
    while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
        if (w == helper) {
            *helper_status = status_code(st);
            *helper_done = true;
        }
    }
}

int
main(int argc, char **argv)
{
    if (argc < 7 || strcmp(argv[5], "--") != 0) {
        fprintf(stderr, "usage: exec-notify-supervisor RULES|- HELPER POLICY CWD -- PROGRAM...\n");
        return 2;
    }
    struct decide_server *ds = NULL;
    struct decide_call *dc = NULL;
    if (strcmp(argv[1], "-") != 0 && decide_open(argv[1], argv[3], argv[4], &ds, &dc) != 0)
        return 2;
    const char *answer = getenv("EXEC_NOTIFY_ANSWER");
    bool approve = answer != NULL && strcmp(answer, "approve") == 0;
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    int sv[2];
    if (sfd < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        perror("exec-notify-supervisor: setup");
        return 2;
    }
    pid_t helper = start_helper(argv, argc, sv[1]);
    close(sv[1]);
    int helper_status = 125;
    bool helper_done = false;

    int listener = -1;
    char *exec_path = NULL;
    int rc = exec_notify_receive_listener(sv[0], &listener, &exec_path);
    close(sv[0]);
    struct exec_notify *n = NULL;
    struct sup s = {.dc = dc};
    if (rc == 0)
        n = exec_notify_new(listener, exec_path, decide, on_ask, &s);
    else if (rc != -EPIPE)
        fprintf(stderr, "exec-notify-supervisor: receiving the listener: %s\n", strerror(-rc));
    const char *strict = getenv("EXEC_NOTIFY_STRICT");
    if (n != NULL && strict != NULL && strcmp(strict, "1") == 0)
        exec_notify_set_refuse_shared_memory(n, true);
    free(exec_path);
    while (n != NULL || !helper_done) {
        struct pollfd p[2] = {{.fd = sfd, .events = POLLIN},
                              {.fd = n ? exec_notify_fd(n) : -1, .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) > 0)
                ;
            reap(helper, &helper_status, &helper_done);
        }
        if (n != NULL && (p[1].revents & POLLIN)) {
            if (exec_notify_process(n) < 0)
                break;
            for (size_t i = 0; i < s.n_asked; i++)
                exec_notify_answer(n, s.asked[i], approve, "declined by the supervisor");
            s.n_asked = 0;
        } else if (n != NULL && (p[1].revents & (POLLHUP | POLLERR))) {
            struct exec_notify_stats st;
            exec_notify_get_stats(n, &st);
            fprintf(stderr,
                    "exec-notify: continued %llu refused %llu missing %llu asked %llu "
                    "dropped %llu\n",
                    (unsigned long long)st.continued, (unsigned long long)st.refused,
                    (unsigned long long)st.missing, (unsigned long long)st.asked,
                    (unsigned long long)st.dropped);
            exec_notify_free(n);
            n = NULL;
        }
    }
    exec_notify_free(n);
    free(s.asked);
    decide_call_unref(dc);
    decide_server_free(ds);
    return helper_status;
}
