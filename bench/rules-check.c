/*
 * Benchmark of rules_policy_check: checks per second on one core against
 * policies of 10, 1 000 and 10 000 rules, and against a baseline that scans
 * every rule of the 1 000-rule policy the way an unindexed engine would.
 * Then one exec's whole decision (decision_make, as the server makes it,
 * and with the trace `execgate-rules explain` asks for) against the steps
 * the server took itself before (the verdict, the loader test, the
 * option check), on the walk of /bin/sh made once.
 * Times are CPU time of this thread, so a busy machine slows the wall
 * clock but not the figures.  Prints one line per measurement; no
 * assertion.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rules/decision.h"
#include "rules/exec_path.h"
#include "rules/lint.h"
#include "rules/policy.h"
#include "rules/verdict.h"

enum { N_COMMANDS = 64 };

struct gen_rule {
    char *tok[4];
    size_t n;
};

/* A policy shaped like real files: programs with several subcommand
 * rules each, some with alternatives, a mix of decisions. */
static struct rules_policy *
make_policy(size_t n_rules, struct gen_rule **out_rules)
{
    struct rules_policy *p = rules_policy_new();
    struct gen_rule *rules = calloc(n_rules, sizeof *rules);
    for (size_t i = 0; i < n_rules; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "prog%zu", i / 5);
        rules[i].tok[0] = strdup(buf);
        snprintf(buf, sizeof buf, "sub%zu", i % 5);
        rules[i].tok[1] = strdup(buf);
        rules[i].n = 2;
        if (i % 3 == 0) {
            snprintf(buf, sizeof buf, "--flag%zu", i % 7);
            rules[i].tok[2] = strdup(buf);
            rules[i].n = 3;
        }
        const char *alts2[] = {rules[i].tok[1], "alt"};
        const char *a0[] = {rules[i].tok[0]};
        const char *a2[] = {rules[i].n == 3 ? rules[i].tok[2] : ""};
        struct rules_token pat[3] = {{a0, 1}, {alts2, i % 4 == 0 ? 2 : 1}, {a2, 1}};
        enum rules_decision d = (enum rules_decision)(1 + i % 3);
        if (rules_policy_add_prefix_rule(p, pat, rules[i].n, d, i % 2 ? "why" : NULL) < 0) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
    *out_rules = rules;
    return p;
}

static void
free_rules(struct gen_rule *rules, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < rules[i].n; j++)
            free(rules[i].tok[j]);
    free(rules);
}

/* Commands: a quarter match nothing, the rest hit a program with rules. */
static void
make_commands(size_t n_rules, char *cmds[N_COMMANDS][4])
{
    for (size_t i = 0; i < N_COMMANDS; i++) {
        char buf[64];
        size_t prog = (i * 7919) % (n_rules / 5 ? n_rules / 5 : 1);
        snprintf(buf, sizeof buf, i % 4 == 3 ? "other%zu" : "prog%zu", prog);
        cmds[i][0] = strdup(buf);
        snprintf(buf, sizeof buf, "sub%zu", i % 5);
        cmds[i][1] = strdup(buf);
        snprintf(buf, sizeof buf, "--flag%zu", i % 7);
        cmds[i][2] = strdup(buf);
        cmds[i][3] = strdup("file.txt");
    }
}

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile size_t sink;

static double
bench_indexed(const struct rules_policy *p, char *cmds[N_COMMANDS][4], double seconds,
              double *matches_per_check)
{
    size_t done = 0, matched = 0;
    double start = now(), t = start;
    while (t - start < seconds) {
        for (size_t i = 0; i < 4096; i++) {
            struct rules_result r;
            rules_policy_check(p, (const char *const *)cmds[i % N_COMMANDS], 4, 0, &r);
            matched += r.n_matches;
            rules_result_free(&r);
        }
        done += 4096;
        t = now();
    }
    sink += matched;
    *matches_per_check = (double)matched / (double)done;
    return (double)done / (t - start);
}

/* Baseline: every rule tested against every command, no index. */
static double
bench_scan(struct gen_rule *rules, size_t n_rules, char *cmds[N_COMMANDS][4], double seconds)
{
    size_t done = 0;
    double start = now(), t = start;
    while (t - start < seconds) {
        for (size_t i = 0; i < 256; i++) {
            const char *const *argv = (const char *const *)cmds[i % N_COMMANDS];
            for (size_t k = 0; k < n_rules; k++) {
                const char *a[3][1] = {{rules[k].tok[0]}, {rules[k].tok[1]}, {rules[k].tok[2]}};
                struct rules_token pat[3] = {{a[0], 1}, {a[1], 1}, {a[2], 1}};
                sink += rules_pattern_matches(pat, rules[k].n, argv, 4);
            }
        }
        done += 256;
        t = now();
    }
    return (double)done / (t - start);
}

/* Decisions per second of `sh -c 'echo hi'` (a prompt rule) under p: the
 * server's steps of before by hand (flags < 0), or decision_make with
 * flags. */
static double
bench_decision(const struct rules_policy *p, const struct exec_path *walk, int flags,
               double seconds)
{
    const char *argv[] = {"sh", "-c", "echo hi", NULL};
    const struct verdict_rules vr = {p, NULL, NULL, false};
    const struct verdict_exec e = {argv, 3, NULL, NULL, 0};
    size_t done = 0;
    double start = now(), t = start;
    while (t - start < seconds) {
        for (size_t i = 0; i < 256; i++) {
            if (flags < 0) {
                /* the steps the server took itself before decision_make:
                 * the verdict, the loader test, the option check */
                struct verdict v;
                if (verdict_decide(&vr, &e, walk, &v) < 0)
                    exit(1);
                /* its words and the loader's file were copies, as here */
                const char **words = calloc(4, sizeof(*words));
                char *file = strdup(walk->canonical);
                if (!words || !file)
                    exit(1);
                memcpy(words, (const char *[]){walk->canonical, argv[1], argv[2]},
                       3 * sizeof(*words));
                sink += v.decision + exec_path_is_loader(file) +
                        (rules_lint_dangerous_use(words, 3) != NULL);
                free(file);
                free(words);
                verdict_release(&v);
            } else {
                struct decision d;
                if (decision_make(&vr, &e, "/", walk, (unsigned)flags, &d) < 0)
                    exit(1);
                sink += d.verdict.decision + d.n_missed;
                decision_release(&d);
            }
        }
        done += 256;
        t = now();
    }
    return (double)done / (t - start);
}

static void
bench_decisions(double seconds)
{
    struct gen_rule *rules;
    struct rules_policy *p = make_policy(1000, &rules);
    const char *sh[] = {"sh"}, *c[] = {"-c"}, *x[] = {"-x"};
    const struct rules_token pc[] = {{sh, 1}, {c, 1}}, px[] = {{sh, 1}, {x, 1}};
    struct exec_path walk;
    if (rules_policy_add_prefix_rule(p, pc, 2, RULES_DECISION_PROMPT, NULL) < 0 ||
        rules_policy_add_prefix_rule(p, px, 2, RULES_DECISION_ALLOW, NULL) < 0 ||
        exec_path_walk("/bin/sh", "/", &walk) < 0) {
        fprintf(stderr, "cannot set up the decision benchmark\n");
        exit(1);
    }
    double verdict = bench_decision(p, &walk, -1, seconds);
    double decision = bench_decision(p, &walk, 0, seconds);
    double traced = bench_decision(p, &walk, DECISION_TRACE, seconds);
    printf("verdict, loader, options, 1000 rules:  %10.0f decisions/s (baseline)\n", verdict);
    printf("decision_make, 1000 rules:             %10.0f decisions/s (%.2f of the baseline)\n",
           decision, decision / verdict);
    printf("decision_make with its trace:          %10.0f decisions/s (%.2f of the baseline)\n",
           traced, traced / verdict);
    exec_path_release(&walk);
    free_rules(rules, 1000);
    rules_policy_free(p);
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    const size_t sizes[] = {10, 1000, 10000};
    double rate[3] = {0};
    for (size_t s = 0; s < 3; s++) {
        struct gen_rule *rules;
        struct rules_policy *p = make_policy(sizes[s], &rules);
        char *cmds[N_COMMANDS][4];
        make_commands(sizes[s], cmds);
        double mpc = 0;
        rate[s] = bench_indexed(p, cmds, seconds, &mpc);
        printf("indexed   %6zu rules: %12.0f checks/s (%.2f matches/check)\n", sizes[s], rate[s],
               mpc);
        if (sizes[s] == 1000) {
            double scan = bench_scan(rules, sizes[s], cmds, seconds);
            printf("full scan %6zu rules: %12.0f checks/s (baseline)\n", sizes[s], scan);
            printf("indexed / full scan at 1000 rules: %.1fx\n", rate[s] / scan);
        }
        for (size_t i = 0; i < N_COMMANDS; i++)
            for (size_t j = 0; j < 4; j++)
                free(cmds[i][j]);
        free_rules(rules, sizes[s]);
        rules_policy_free(p);
    }
    printf("10000 rules / 10 rules: %.2f (1.00 = policy size costs nothing)\n", rate[2] / rate[0]);
    bench_decisions(seconds);
    return 0;
}
