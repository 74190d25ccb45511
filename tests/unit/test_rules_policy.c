/* rules policy: prefix matching, alternatives, strictness, order, host
 * executable fallback, and the JSON that `codex execpolicy check` prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/utf8.h"
#include "rules/policy.h"

#define ALTS(...)    ((const char *const[]){__VA_ARGS__})
#define NALTS(...)   (sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))
#define TOK(...)     ((struct rules_token){ALTS(__VA_ARGS__), NALTS(__VA_ARGS__)})
#define PATTERN(...) ((const struct rules_token[]){__VA_ARGS__})
#define NPAT(...)    (sizeof((const struct rules_token[]){__VA_ARGS__}) / sizeof(struct rules_token))
#define ADD(p, d, j, ...)                                                                          \
    assert_int_equal(                                                                              \
        rules_policy_add_prefix_rule((p), PATTERN(__VA_ARGS__), NPAT(__VA_ARGS__), (d), (j)), 0)
#define ARGV(...)  ((const char *const[]){__VA_ARGS__})
#define NARGV(...) (sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

/* Checks argv and returns the compact JSON (caller frees). */
static char *
check_json(const struct rules_policy *p, unsigned flags, const char *const *argv, size_t argc)
{
    struct rules_result r;
    assert_int_equal(rules_policy_check(p, argv, argc, flags, &r), 0);
    char *json = rules_result_to_json(&r, false);
    assert_non_null(json);
    rules_result_free(&r);
    return json;
}

#define EXPECT_JSON(p, flags, want, ...)                                                           \
    do {                                                                                           \
        char *got_ = check_json((p), (flags), ARGV(__VA_ARGS__), NARGV(__VA_ARGS__));              \
        assert_string_equal(got_, (want));                                                         \
        free(got_);                                                                                \
    } while (0)

static void
test_decision_names(void **state)
{
    (void)state;
    enum rules_decision d;
    assert_int_equal(rules_decision_parse("allow", &d), 0);
    assert_int_equal(d, RULES_DECISION_ALLOW);
    assert_int_equal(rules_decision_parse("forbidden", &d), 0);
    assert_int_equal(d, RULES_DECISION_FORBIDDEN);
    assert_int_equal(rules_decision_parse("deny", &d), -1);
    assert_int_equal(rules_decision_parse("Allow", &d), -1);
    assert_int_equal(rules_decision_parse("", &d), -1);
    assert_string_equal(rules_decision_name(RULES_DECISION_PROMPT), "prompt");
    assert_null(rules_decision_name(RULES_DECISION_NONE));
    assert_null(rules_decision_name((enum rules_decision)42));
}

static void
test_prefix_semantics(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    ADD(p, RULES_DECISION_PROMPT, NULL, TOK("git"), TOK("push"));
    EXPECT_JSON(p, 0,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\",\"push\"],"
                "\"decision\":\"prompt\"}}],\"decision\":\"prompt\"}",
                "git", "push", "origin", "main");
    EXPECT_JSON(p, 0,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\",\"push\"],"
                "\"decision\":\"prompt\"}}],\"decision\":\"prompt\"}",
                "git", "push");
    /* Too short, different token, case differs, token only a prefix. */
    EXPECT_JSON(p, 0, "{\"matchedRules\":[]}", "git");
    EXPECT_JSON(p, 0, "{\"matchedRules\":[]}", "git", "pull");
    EXPECT_JSON(p, 0, "{\"matchedRules\":[]}", "Git", "push");
    EXPECT_JSON(p, 0, "{\"matchedRules\":[]}", "git", "pushx");
    EXPECT_JSON(p, 0, "{\"matchedRules\":[]}", "gitx", "push");
    EXPECT_JSON(p, 0, "{\"matchedRules\":[]}", "/usr/bin/git", "push");
    assert_int_equal(rules_policy_rule_count(p), 1);
    rules_policy_free(p);
    rules_policy_free(NULL);
}

struct seen_programs {
    const char *names[8];
    size_t n;
};

static size_t
seen_index(const struct seen_programs *seen, const char *name)
{
    for (size_t i = 0; i < seen->n; i++)
        if (strcmp(seen->names[i], name) == 0)
            return i;
    return seen->n;
}

static int
collect_program(void *arg, const char *name)
{
    struct seen_programs *seen = arg;
    if (seen_index(seen, name) < seen->n || seen->n == 8)
        return -1; /* each name once */
    seen->names[seen->n++] = name;
    return strcmp(name, "stop-here") == 0 ? 7 : 0;
}

static void
test_each_program(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    struct seen_programs seen = {0};
    assert_int_equal(rules_policy_each_program(p, collect_program, &seen), 0);
    assert_int_equal(seen.n, 0);
    ADD(p, RULES_DECISION_ALLOW, NULL, TOK("npm", "yarn"), TOK("test"));
    ADD(p, RULES_DECISION_FORBIDDEN, NULL, TOK("npm"), TOK("publish"));
    ADD(p, RULES_DECISION_PROMPT, NULL, TOK("/usr/bin/git"));
    assert_int_equal(rules_policy_each_program(p, collect_program, &seen), 0);
    assert_int_equal(seen.n, 3);
    assert_true(seen_index(&seen, "npm") < 3);
    assert_true(seen_index(&seen, "yarn") < 3);
    assert_true(seen_index(&seen, "/usr/bin/git") < 3);
    /* a non-zero return stops the walk and comes back */
    ADD(p, RULES_DECISION_ALLOW, NULL, TOK("stop-here"));
    seen.n = 0;
    assert_int_equal(rules_policy_each_program(p, collect_program, &seen), 7);
    assert_true(seen_index(&seen, "stop-here") < seen.n);
    rules_policy_free(p);
}

static void
test_alternatives(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    /* Alternatives in the first position make one rule per program. */
    ADD(p, RULES_DECISION_ALLOW, NULL, TOK("npm", "yarn"), TOK("test", "run"), TOK("--ci"));
    assert_int_equal(rules_policy_rule_count(p), 2);
    EXPECT_JSON(p, 0,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"yarn\",\"run\","
                "\"--ci\"],\"decision\":\"allow\"}}],\"decision\":\"allow\"}",
                "yarn", "run", "--ci", "x");
    EXPECT_JSON(p, 0,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"npm\",\"test\","
                "\"--ci\"],\"decision\":\"allow\"}}],\"decision\":\"allow\"}",
                "npm", "test", "--ci");
    EXPECT_JSON(p, 0, "{\"matchedRules\":[]}", "npm", "install", "--ci");
    EXPECT_JSON(p, 0, "{\"matchedRules\":[]}", "pnpm", "test", "--ci");

    struct rules_token pat[] = {TOK("git"), TOK("push", "fetch")};
    assert_true(rules_pattern_matches(pat, 2, ARGV("git", "fetch", "x"), 3));
    assert_true(rules_pattern_matches(pat, 2, ARGV("git", "push"), 2));
    assert_false(rules_pattern_matches(pat, 2, ARGV("git"), 1));
    assert_false(rules_pattern_matches(pat, 2, ARGV("git", "pull"), 2));
    assert_false(rules_pattern_matches(pat, 0, ARGV("git"), 1));
    rules_policy_free(p);
}

static void
test_strictest_and_order(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    /* As if from two files: order of addition is order of report. */
    ADD(p, RULES_DECISION_ALLOW, NULL, TOK("git"));
    ADD(p, RULES_DECISION_FORBIDDEN, "rewrites history", TOK("git"), TOK("push"), TOK("--force"));
    ADD(p, RULES_DECISION_PROMPT, NULL, TOK("git"), TOK("push"));
    ADD(p, RULES_DECISION_ALLOW, NULL, TOK("ls"));
    EXPECT_JSON(p, 0,
                "{\"matchedRules\":["
                "{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\"],\"decision\":\"allow\"}},"
                "{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\",\"push\",\"--force\"],"
                "\"decision\":\"forbidden\",\"justification\":\"rewrites history\"}},"
                "{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\",\"push\"],"
                "\"decision\":\"prompt\"}}],\"decision\":\"forbidden\"}",
                "git", "push", "--force");
    EXPECT_JSON(p, 0,
                "{\"matchedRules\":["
                "{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\"],\"decision\":\"allow\"}},"
                "{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\",\"push\"],"
                "\"decision\":\"prompt\"}}],\"decision\":\"prompt\"}",
                "git", "push");

    struct rules_result r;
    assert_int_equal(rules_policy_check(p, ARGV("git", "status"), 2, 0, &r), 0);
    assert_int_equal(r.decision, RULES_DECISION_ALLOW);
    assert_int_equal(r.n_matches, 1);
    assert_null(r.matches[0].justification);
    assert_null(r.matches[0].resolved_program);
    rules_result_free(&r);
    assert_int_equal(rules_policy_check(p, ARGV("cat"), 1, 0, &r), 0);
    assert_int_equal(r.decision, RULES_DECISION_NONE);
    assert_int_equal(r.n_matches, 0);
    rules_result_free(&r);
    rules_policy_free(p);
}

static void
test_duplicates_are_kept(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    ADD(p, RULES_DECISION_ALLOW, NULL, TOK("ls"));
    ADD(p, RULES_DECISION_ALLOW, NULL, TOK("ls"));
    struct rules_result r;
    assert_int_equal(rules_policy_check(p, ARGV("ls", "-l"), 2, 0, &r), 0);
    assert_int_equal(r.n_matches, 2);
    rules_result_free(&r);
    rules_policy_free(p);
}

static void
test_strings_are_copied(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    char prog[] = "make", arg[] = "test", just[] = "fine";
    const char *a1[] = {prog};
    const char *a2[] = {arg};
    struct rules_token pat[] = {{a1, 1}, {a2, 1}};
    assert_int_equal(rules_policy_add_prefix_rule(p, pat, 2, RULES_DECISION_ALLOW, just), 0);
    memset(prog, 'x', 4);
    memset(arg, 'x', 4);
    memset(just, 'x', 4);
    EXPECT_JSON(p, 0,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"make\",\"test\"],"
                "\"decision\":\"allow\",\"justification\":\"fine\"}}],\"decision\":\"allow\"}",
                "make", "test");
    /* Bad arguments are refused, not crashed on. */
    assert_int_equal(rules_policy_add_prefix_rule(p, pat, 0, RULES_DECISION_ALLOW, NULL), -1);
    struct rules_token none[] = {{a1, 0}};
    assert_int_equal(rules_policy_add_prefix_rule(p, none, 1, RULES_DECISION_ALLOW, NULL), -1);
    assert_int_equal(rules_policy_rule_count(p), 1);
    rules_policy_free(p);
}

static void
test_host_executable_fallback(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    ADD(p, RULES_DECISION_PROMPT, NULL, TOK("git"), TOK("push"));
    ADD(p, RULES_DECISION_ALLOW, NULL, TOK("rg"));
    ADD(p, RULES_DECISION_FORBIDDEN, NULL, TOK("/opt/rg"));
    const char *git_paths[] = {"/usr/bin/git", "/home/u/.local/bin/git"};
    assert_int_equal(rules_policy_add_host_executable(p, "git", git_paths, 2), 0);
    unsigned R = RULES_CHECK_RESOLVE_HOST_EXECUTABLES;

    /* Listed path: falls back to the rules for the basename. */
    EXPECT_JSON(p, R,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\",\"push\"],"
                "\"decision\":\"prompt\",\"resolvedProgram\":\"/usr/bin/git\"}}],"
                "\"decision\":\"prompt\"}",
                "/usr/bin/git", "push", "origin");
    /* Without the flag, no fallback. */
    EXPECT_JSON(p, 0, "{\"matchedRules\":[]}", "/usr/bin/git", "push");
    /* Not listed: the host_executable restricts which paths stand for git. */
    EXPECT_JSON(p, R, "{\"matchedRules\":[]}", "/tmp/evil/git", "push");
    /* Lexically equal spellings of a listed path are the same path. */
    EXPECT_JSON(p, R,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\",\"push\"],"
                "\"decision\":\"prompt\",\"resolvedProgram\":\"/usr/bin/git\"}}],"
                "\"decision\":\"prompt\"}",
                "/usr//bin/./git", "push");
    /* ".." is resolved lexically, as Codex does. */
    EXPECT_JSON(p, R,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\",\"push\"],"
                "\"decision\":\"prompt\",\"resolvedProgram\":\"/usr/bin/git\"}}],"
                "\"decision\":\"prompt\"}",
                "/../usr/lib/../bin/git/", "push");
    /* No host_executable for rg: any absolute path may stand for it. */
    EXPECT_JSON(p, R,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"rg\"],"
                "\"decision\":\"allow\",\"resolvedProgram\":\"/usr/local/bin/rg\"}}],"
                "\"decision\":\"allow\"}",
                "/usr/local/bin/rg", "foo");
    /* An exact rule for the path wins; no fallback is tried then. */
    EXPECT_JSON(p, R,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"/opt/rg\"],"
                "\"decision\":\"forbidden\"}}],\"decision\":\"forbidden\"}",
                "/opt/rg", "foo");
    /* No file name, or the name of a directory with no rules. */
    EXPECT_JSON(p, R, "{\"matchedRules\":[]}", "/", "push");
    EXPECT_JSON(p, R, "{\"matchedRules\":[]}", "/usr/bin/git/..", "push");
    EXPECT_JSON(p, R, "{\"matchedRules\":[]}", "/usr/bin/git/", "pull");

    bool known = false;
    assert_true(rules_policy_host_executable_allows(p, "git", "/home/u/.local/bin/git", &known));
    assert_true(known);
    assert_false(rules_policy_host_executable_allows(p, "rg", "/usr/bin/rg", &known));
    assert_false(known);
    rules_policy_free(p);
}

/* Relative names are made absolute first: "~/" from $HOME, the rest from
 * the current directory. */
static void
test_host_executable_relative(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    ADD(p, RULES_DECISION_ALLOW, NULL, TOK("rg"));
    ADD(p, RULES_DECISION_PROMPT, NULL, TOK("git"));
    const char *git_paths[] = {"/home/someone/bin/git"};
    assert_int_equal(rules_policy_add_host_executable(p, "git", git_paths, 1), 0);
    unsigned R = RULES_CHECK_RESOLVE_HOST_EXECUTABLES;
    char *cwd = getcwd(NULL, 0);
    assert_non_null(cwd);
    char *want = NULL;
    assert_true(asprintf(&want,
                         "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"rg\"],"
                         "\"decision\":\"allow\",\"resolvedProgram\":\"%s/bin/rg\"}}],"
                         "\"decision\":\"allow\"}",
                         strcmp(cwd, "/") == 0 ? "" : cwd) > 0);
    EXPECT_JSON(p, R, want, "./bin/rg", "x");
    /* "." is the current directory itself: its name is looked up. */
    const char *base = strrchr(cwd, '/') + 1;
    if (*base) {
        const char *a0[] = {base};
        struct rules_token pat[] = {{a0, 1}};
        assert_int_equal(rules_policy_add_prefix_rule(p, pat, 1, RULES_DECISION_FORBIDDEN, NULL),
                         0);
        struct rules_result r;
        assert_int_equal(rules_policy_check(p, ARGV("."), 1, R, &r), 0);
        assert_int_equal(r.decision, RULES_DECISION_FORBIDDEN);
        assert_string_equal(r.matches[0].resolved_program, cwd);
        rules_result_free(&r);
    }
    free(want);
    free(cwd);

    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", "/home/someone", 1);
    EXPECT_JSON(p, R,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\"],"
                "\"decision\":\"prompt\",\"resolvedProgram\":\"/home/someone/bin/git\"}}],"
                "\"decision\":\"prompt\"}",
                "~/bin/git", "log");
    setenv("HOME", "/home/other", 1);
    EXPECT_JSON(p, R, "{\"matchedRules\":[]}", "~/bin/git", "log");
    unsetenv("HOME");
    EXPECT_JSON(p, R, "{\"matchedRules\":[]}", "~/bin/git", "log");
    if (old_home)
        setenv("HOME", old_home, 1);
    free(old_home);
    rules_policy_free(p);
}

/* A policy of one rule plus the host executables, as Codex uses to check
 * a rule's examples. */
static void
test_copy_host_executables(void **state)
{
    (void)state;
    struct rules_policy *full = rules_policy_new();
    const char *git_paths[] = {"/usr/bin/git"};
    const char *rg_paths[] = {"/opt/rg", "/usr/bin/rg"};
    assert_int_equal(rules_policy_add_host_executable(full, "git", git_paths, 1), 0);
    assert_int_equal(rules_policy_add_host_executable(full, "rg", rg_paths, 2), 0);
    struct rules_policy *one = rules_policy_new();
    ADD(one, RULES_DECISION_ALLOW, NULL, TOK("rg"));
    assert_int_equal(rules_policy_copy_host_executables(one, full), 0);
    unsigned R = RULES_CHECK_RESOLVE_HOST_EXECUTABLES;
    struct rules_result r;
    assert_int_equal(rules_policy_check(one, ARGV("/usr/bin/rg", "x"), 2, R, &r), 0);
    assert_int_equal(r.n_matches, 1);
    assert_string_equal(r.matches[0].resolved_program, "/usr/bin/rg");
    rules_result_free(&r);
    assert_int_equal(rules_policy_check(one, ARGV("/bin/rg", "x"), 2, R, &r), 0);
    assert_int_equal(r.n_matches, 0);
    rules_result_free(&r);
    bool known = false;
    assert_true(rules_policy_host_executable_allows(one, "git", "/usr/bin/git", &known));
    rules_policy_free(one);
    rules_policy_free(full);
}

static void
test_host_executable_empty_list(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    ADD(p, RULES_DECISION_ALLOW, NULL, TOK("git"));
    assert_int_equal(rules_policy_add_host_executable(p, "git", NULL, 0), 0);
    /* Declared with no path: no absolute path stands for git. */
    EXPECT_JSON(p, RULES_CHECK_RESOLVE_HOST_EXECUTABLES, "{\"matchedRules\":[]}", "/usr/bin/git");
    rules_policy_free(p);
}

static void
test_json_escaping_and_pretty(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    ADD(p, RULES_DECISION_FORBIDDEN, "say \"no\"\\\n\x01 caf\xc3\xa9 a/b", TOK("echo"),
        TOK("a\tb"));
    EXPECT_JSON(p, 0,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"echo\",\"a\\tb\"],"
                "\"decision\":\"forbidden\",\"justification\":\"say \\\"no\\\"\\\\\\n\\u0001 "
                "caf\xc3\xa9 a/b\"}}],\"decision\":\"forbidden\"}",
                "echo", "a\tb");

    struct rules_result r;
    assert_int_equal(rules_policy_check(p, ARGV("echo", "a\tb"), 2, 0, &r), 0);
    char *pretty = rules_result_to_json(&r, true);
    assert_string_equal(pretty, "{\n"
                                "  \"matchedRules\": [\n"
                                "    {\n"
                                "      \"prefixRuleMatch\": {\n"
                                "        \"matchedPrefix\": [\n"
                                "          \"echo\",\n"
                                "          \"a\\tb\"\n"
                                "        ],\n"
                                "        \"decision\": \"forbidden\",\n"
                                "        \"justification\": \"say \\\"no\\\"\\\\\\n\\u0001 "
                                "caf\xc3\xa9 a/b\"\n"
                                "      }\n"
                                "    }\n"
                                "  ],\n"
                                "  \"decision\": \"forbidden\"\n"
                                "}");
    free(pretty);
    rules_result_free(&r);
    struct rules_result empty = {0};
    pretty = rules_result_to_json(&empty, true);
    assert_string_equal(pretty, "{\n  \"matchedRules\": []\n}");
    free(pretty);
    rules_policy_free(p);
}

/* The text check the CLI makes of each command word (utf8_valid). */
static bool
is_utf8(const char *s)
{
    return utf8_valid(s, strlen(s));
}

static void
test_utf8(void **state)
{
    (void)state;
    assert_true(is_utf8(""));
    assert_true(is_utf8("plain caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"));
    assert_false(is_utf8("\xff"));
    assert_false(is_utf8("\xc3"));             /* truncated */
    assert_false(is_utf8("\xc0\xaf"));         /* overlong "/" */
    assert_false(is_utf8("\xed\xa0\x80"));     /* surrogate */
    assert_false(is_utf8("\xf4\x90\x80\x80")); /* past U+10FFFF */

    /* Such bytes never make invalid JSON: each becomes U+FFFD. */
    struct rules_policy *p = rules_policy_new();
    ADD(p, RULES_DECISION_ALLOW, "bad \xff\xc3 end \x7f", TOK("x"));
    EXPECT_JSON(p, 0,
                "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"x\"],"
                "\"decision\":\"allow\",\"justification\":\"bad \\ufffd\\ufffd end \x7f\"}}],"
                "\"decision\":\"allow\"}",
                "x");
    rules_policy_free(p);
}

static void
test_network_rules(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    assert_int_equal(rules_policy_add_network_rule(p, "github.com", "https", RULES_DECISION_ALLOW,
                                                   "code hosting"),
                     0);
    assert_int_equal(
        rules_policy_add_network_rule(p, "x.test", "http", RULES_DECISION_FORBIDDEN, NULL), 0);
    assert_int_equal(rules_policy_network_rule_count(p), 2);
    assert_int_equal(rules_policy_rule_count(p), 0);
    /* Network rules never decide an exec. */
    EXPECT_JSON(p, 0, "{\"matchedRules\":[]}", "github.com");
    rules_policy_free(p);
}

/* The network check: exact host and protocol, strictest decision wins,
 * its justification comes along. */
static void
test_network_check(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    assert_int_equal(rules_policy_add_network_rule(p, "github.com", "https", RULES_DECISION_ALLOW,
                                                   "code hosting"),
                     0);
    assert_int_equal(
        rules_policy_add_network_rule(p, "github.com", "https", RULES_DECISION_PROMPT, "ask first"),
        0);
    assert_int_equal(
        rules_policy_add_network_rule(p, "x.test", "http", RULES_DECISION_FORBIDDEN, NULL), 0);
    struct rules_network_result r = rules_policy_network_check(p, "github.com", "https");
    assert_int_equal(r.decision, RULES_DECISION_PROMPT);
    assert_string_equal(r.justification, "ask first");
    r = rules_policy_network_check(p, "github.com", "http");
    assert_int_equal(r.decision, RULES_DECISION_NONE);
    assert_null(r.justification);
    r = rules_policy_network_check(p, "api.github.com", "https");
    assert_int_equal(r.decision, RULES_DECISION_NONE);
    r = rules_policy_network_check(p, "x.test", "http");
    assert_int_equal(r.decision, RULES_DECISION_FORBIDDEN);
    assert_null(r.justification);
    r = rules_policy_network_check(NULL, "x.test", "http");
    assert_int_equal(r.decision, RULES_DECISION_NONE);
    rules_policy_free(p);
}

/* Many programs, each with several rules: every lookup lands in the right
 * bucket however big the table grew. */
static void
test_many_rules(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    char name[32], arg[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "prog%d", i % 2500);
        snprintf(arg, sizeof arg, "sub%d", i);
        const char *a1[] = {name};
        const char *a2[] = {arg};
        struct rules_token pat[] = {{a1, 1}, {a2, 1}};
        assert_int_equal(
            rules_policy_add_prefix_rule(
                p, pat, 2, i % 3 == 0 ? RULES_DECISION_PROMPT : RULES_DECISION_ALLOW, NULL),
            0);
    }
    assert_int_equal(rules_policy_rule_count(p), 5000);
    for (int i = 0; i < 5000; i += 7) {
        snprintf(name, sizeof name, "prog%d", i % 2500);
        snprintf(arg, sizeof arg, "sub%d", i);
        struct rules_result r;
        assert_int_equal(rules_policy_check(p, ARGV(name, arg), 2, 0, &r), 0);
        assert_int_equal(r.n_matches, 1);
        assert_string_equal(r.matches[0].matched_prefix[1], arg);
        assert_int_equal(r.decision, i % 3 == 0 ? RULES_DECISION_PROMPT : RULES_DECISION_ALLOW);
        rules_result_free(&r);
    }
    rules_policy_free(p);
}

/* Differential test: the indexed engine against a plain scan of every
 * rule (first-token alternatives expanded in order), on random policies
 * over a tiny vocabulary so that matches, near misses and duplicates are
 * common. */
static const char *const vocab[] = {"a", "b", "c", "ab", ""};
#define NV (sizeof vocab / sizeof vocab[0])

struct naive_rule {
    const char *alts[4][3];
    size_t n_alts[4];
    size_t n;
    enum rules_decision d;
};

static uint32_t
rnd(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void
test_index_equals_scan(void **state)
{
    (void)state;
    uint32_t seed = 12345;
    for (int round = 0; round < 200; round++) {
        struct rules_policy *p = rules_policy_new();
        struct naive_rule rules[24];
        /* expanded[i] = (rule, first alternative) in the order they were added */
        size_t exp_rule[96], exp_alt[96], n_exp = 0;
        size_t n_rules = 1 + rnd(&seed) % 24;
        for (size_t i = 0; i < n_rules; i++) {
            struct naive_rule *r = &rules[i];
            r->n = 1 + rnd(&seed) % 4;
            r->d = (enum rules_decision)(1 + rnd(&seed) % 3);
            struct rules_token pat[4];
            for (size_t t = 0; t < r->n; t++) {
                r->n_alts[t] = 1 + rnd(&seed) % 3;
                for (size_t k = 0; k < r->n_alts[t]; k++)
                    r->alts[t][k] = vocab[rnd(&seed) % NV];
                pat[t].alts = r->alts[t];
                pat[t].n_alts = r->n_alts[t];
            }
            assert_int_equal(rules_policy_add_prefix_rule(p, pat, r->n, r->d, NULL), 0);
            for (size_t k = 0; k < r->n_alts[0]; k++) {
                exp_rule[n_exp] = i;
                exp_alt[n_exp++] = k;
            }
        }
        assert_int_equal(rules_policy_rule_count(p), n_exp);
        for (int c = 0; c < 50; c++) {
            const char *argv[5];
            size_t argc = 1 + rnd(&seed) % 5;
            for (size_t k = 0; k < argc; k++)
                argv[k] = vocab[rnd(&seed) % NV];
            struct rules_result res;
            assert_int_equal(rules_policy_check(p, argv, argc, 0, &res), 0);
            size_t m = 0;
            enum rules_decision strictest = RULES_DECISION_NONE;
            for (size_t e = 0; e < n_exp; e++) {
                const struct naive_rule *r = &rules[exp_rule[e]];
                struct rules_token pat[4];
                const char *first[] = {r->alts[0][exp_alt[e]]};
                pat[0].alts = first;
                pat[0].n_alts = 1;
                for (size_t t = 1; t < r->n; t++) {
                    pat[t].alts = r->alts[t];
                    pat[t].n_alts = r->n_alts[t];
                }
                if (!rules_pattern_matches(pat, r->n, argv, argc))
                    continue;
                /* Matches come in rule order; all share argv[0]. */
                assert_true(m < res.n_matches);
                assert_int_equal(res.matches[m].decision, r->d);
                assert_int_equal(res.matches[m].n_prefix, r->n);
                for (size_t t = 0; t < r->n; t++)
                    assert_string_equal(res.matches[m].matched_prefix[t], argv[t]);
                if (r->d > strictest)
                    strictest = r->d;
                m++;
            }
            assert_int_equal(res.n_matches, m);
            assert_int_equal(res.decision, strictest);
            rules_result_free(&res);
        }
        rules_policy_free(p);
    }
}

/* The standing answers: an allow rule in the answers file settles a
 * question no longer prompt rule asks; forbidden is never settled. */
static void
test_settle_by_standing_answer(void **state)
{
    (void)state;
    struct rules_policy *p = rules_policy_new();
    struct rules_origin team = {"team.rules", 1, 1}, mine = {"rules/default.rules", 2, 1};
    assert_int_equal(rules_policy_add_prefix_rule_at(p, PATTERN(TOK("git")), 1,
                                                     RULES_DECISION_PROMPT, NULL, &team),
                     0);
    assert_int_equal(rules_policy_add_prefix_rule_at(p, PATTERN(TOK("git"), TOK("push")), 2,
                                                     RULES_DECISION_ALLOW, NULL, &mine),
                     0);
    assert_int_equal(rules_policy_add_prefix_rule_at(p, PATTERN(TOK("git"), TOK("status")), 2,
                                                     RULES_DECISION_ALLOW, NULL, &team),
                     0);
    struct rules_result r;
    /* git push: settled by the longer standing answer */
    assert_int_equal(rules_policy_check(p, ARGV("git", "push", "origin"), 3, 0, &r), 0);
    assert_int_equal(r.decision, RULES_DECISION_PROMPT);
    const struct rules_match *m = rules_result_settle(&r, "rules/default.rules");
    assert_non_null(m);
    assert_int_equal(r.decision, RULES_DECISION_ALLOW);
    assert_string_equal(m->origin.file, "rules/default.rules");
    assert_int_equal(m->origin.line, 2);
    rules_result_free(&r);
    /* not settled: no answers file, or an allow rule in another file */
    assert_int_equal(rules_policy_check(p, ARGV("git", "push"), 2, 0, &r), 0);
    assert_null(rules_result_settle(&r, NULL));
    assert_null(rules_result_settle(&r, "team.rules/default.rules"));
    assert_int_equal(r.decision, RULES_DECISION_PROMPT);
    rules_result_free(&r);
    assert_int_equal(rules_policy_check(p, ARGV("git", "status"), 2, 0, &r), 0);
    assert_null(rules_result_settle(&r, "rules/default.rules"));
    assert_int_equal(r.decision, RULES_DECISION_PROMPT);
    rules_result_free(&r);
    /* a longer prompt rule is not settled by a shorter answer */
    struct rules_origin more = {"team.rules", 3, 1};
    assert_int_equal(
        rules_policy_add_prefix_rule_at(p, PATTERN(TOK("git"), TOK("push"), TOK("--force")), 3,
                                        RULES_DECISION_PROMPT, NULL, &more),
        0);
    assert_int_equal(rules_policy_check(p, ARGV("git", "push", "--force"), 3, 0, &r), 0);
    assert_null(rules_result_settle(&r, "rules/default.rules"));
    assert_int_equal(r.decision, RULES_DECISION_PROMPT);
    rules_result_free(&r);
    /* forbidden stays forbidden */
    assert_int_equal(rules_policy_add_prefix_rule_at(p, PATTERN(TOK("git"), TOK("push")), 2,
                                                     RULES_DECISION_FORBIDDEN, NULL, &team),
                     0);
    assert_int_equal(rules_policy_check(p, ARGV("git", "push"), 2, 0, &r), 0);
    assert_null(rules_result_settle(&r, "rules/default.rules"));
    assert_int_equal(r.decision, RULES_DECISION_FORBIDDEN);
    rules_result_free(&r);
    rules_policy_free(p);
}

/* Two checks' results as one: matches in order, the stricter decision. */
static void
test_result_append(void **state)
{
    (void)state;
    struct rules_policy *a = rules_policy_new(), *b = rules_policy_new();
    ADD(a, RULES_DECISION_ALLOW, NULL, TOK("ls"));
    ADD(b, RULES_DECISION_PROMPT, NULL, TOK("ls"), TOK("-l"));
    struct rules_result ra, rb;
    assert_int_equal(rules_policy_check(a, ARGV("ls", "-l"), 2, 0, &ra), 0);
    assert_int_equal(rules_policy_check(b, ARGV("ls", "-l"), 2, 0, &rb), 0);
    assert_int_equal(rules_result_append(&ra, &rb), 0);
    assert_int_equal(ra.n_matches, 2);
    assert_int_equal(ra.decision, RULES_DECISION_PROMPT);
    assert_int_equal(ra.matches[1].n_prefix, 2);
    assert_int_equal(rb.n_matches, 0);
    assert_null(rb.matches);
    /* an empty source changes nothing */
    assert_int_equal(rules_result_append(&ra, &rb), 0);
    assert_int_equal(ra.n_matches, 2);
    rules_result_free(&ra);
    rules_policy_free(a);
    rules_policy_free(b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decision_names),
        cmocka_unit_test(test_prefix_semantics),
        cmocka_unit_test(test_alternatives),
        cmocka_unit_test(test_each_program),
        cmocka_unit_test(test_strictest_and_order),
        cmocka_unit_test(test_duplicates_are_kept),
        cmocka_unit_test(test_strings_are_copied),
        cmocka_unit_test(test_host_executable_fallback),
        cmocka_unit_test(test_host_executable_relative),
        cmocka_unit_test(test_copy_host_executables),
        cmocka_unit_test(test_host_executable_empty_list),
        cmocka_unit_test(test_json_escaping_and_pretty),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_network_rules),
        cmocka_unit_test(test_network_check),
        cmocka_unit_test(test_many_rules),
        cmocka_unit_test(test_index_equals_scan),
        cmocka_unit_test(test_settle_by_standing_answer),
        cmocka_unit_test(test_result_append),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
