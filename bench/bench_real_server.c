/*
 * bench_real_server: execgate's own session code (server/decide/escalation.c) for
 * bench/wrapper_bench --real. A libuv loop in a thread serves one detached
 * escalation call: the rules allow `touch` (so `true` has no rule and is
 * Run, as in bench/escalation.py), the sandbox view is workspace-write on
 * a scratch directory. Logging is at the server's default level.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <uv.h>

#include "sandbox/policy/policy.h"
#include "server/decide/decide.h"
#include "server/decide/escalation.h"

int bench_real_server_start(void);

static uv_loop_t loop;

static void *
run_loop(void *arg)
{
    (void)arg;
    uv_run(&loop, UV_RUN_DEFAULT);
    return NULL;
}

int
bench_real_server_start(void)
{
    char dir[] = "/tmp/execgate-wbench-XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    char rules[sizeof dir + 16];
    snprintf(rules, sizeof rules, "%s/b.rules", dir);
    FILE *f = fopen(rules, "w");
    if (!f)
        return -1;
    fputs("prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n", f);
    fclose(f);
    uv_loop_init(&loop);
    const char *paths[] = {rules};
    struct decide_config cfg = {.rules_paths = paths, .n_rules_paths = 1};
    char *err = NULL;
    struct decide_server *ds = decide_server_new(&cfg, &err);
    json_t *policy = json_pack("{s:s}", "type", "workspace-write");
    struct sandbox_policy *p = ds ? sandbox_policy_from_json(policy, dir, &err) : NULL;
    struct decide_call *dc = p ? decide_call_new(ds, p, NULL, "bench", NULL, NULL, &err) : NULL;
    sandbox_policy_free(p);
    struct escalation_call *ec = dc ? escalation_call_new(&loop, dc, NULL, NULL, NULL, 0) : NULL;
    int child = -1;
    if (!ec || escalation_call_serve_detached(ec, &child) < 0) {
        fprintf(stderr, "bench_real_server: %s\n", err ? err : "cannot serve");
        return -1;
    }
    json_decref(policy);
    int inherited = dup(child); /* without close-on-exec, as the shell gets it */
    pthread_t t;
    if (inherited < 0 || pthread_create(&t, NULL, run_loop, NULL) != 0)
        return -1;
    return inherited;
}
