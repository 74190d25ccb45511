/*
 * rules policy: the rules loaded from .rules files, and the decision for a
 * command.  The Starlark built-ins (prefix_rule, host_executable,
 * network_rule) add rules through this interface; the server, the wrapper's
 * server side and `execgate-rules check` ask it for decisions.
 * Knows nothing of Starlark, MCP or libuv.
 */
#ifndef EXECGATE_RULES_POLICY_H
#define EXECGATE_RULES_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Ordered by strictness: the effective decision is the largest. */
enum rules_decision {
    RULES_DECISION_NONE = 0, /* no rule matched */
    RULES_DECISION_ALLOW = 1,
    RULES_DECISION_PROMPT = 2,
    RULES_DECISION_FORBIDDEN = 3,
};

/* "allow", "prompt", "forbidden"; NULL for RULES_DECISION_NONE. */
const char *rules_decision_name(enum rules_decision d);

/* Parses "allow" | "prompt" | "forbidden"; returns -1 for anything else. */
int rules_decision_parse(const char *name, enum rules_decision *out);

/* One position of a pattern: one or more alternatives (borrowed strings). */
struct rules_token {
    const char *const *alts;
    size_t n_alts;
};

struct rules_policy;

/* A new, empty policy, or NULL when out of memory. */
struct rules_policy *rules_policy_new(void);

/* Frees p and everything it copied; NULL is a no-op. */
void rules_policy_free(struct rules_policy *p);

/*
 * True when `pattern` matches the command argv[0..argc) as a prefix, token
 * by token, exact comparison (used to check match / not_match examples at
 * load time).  Cannot fail.
 */
bool rules_pattern_matches(const struct rules_token *pattern, size_t n, const char *const *argv,
                           size_t argc);

/* Where a rule was written: the file as it was named to the loader, and
 * the line and column (from 1) where its prefix_rule call starts. */
struct rules_origin {
    const char *file;
    uint32_t line, col;
};

/*
 * Adds a prefix rule; alternatives in the first position make one rule per
 * alternative.  Strings are copied.  justification may be NULL.
 * Returns 0, or -1 when out of memory (p unchanged).
 */
int rules_policy_add_prefix_rule(struct rules_policy *p, const struct rules_token *pattern,
                                 size_t n, enum rules_decision decision, const char *justification);

/*
 * The same, remembering where the rule was written (rules_policy_each_rule
 * shows it).  origin may be NULL, or have a NULL file, for "not known";
 * the file name is copied.  Returns 0, or -1 when out of memory.
 */
int rules_policy_add_prefix_rule_at(struct rules_policy *p, const struct rules_token *pattern,
                                    size_t n, enum rules_decision decision,
                                    const char *justification, const struct rules_origin *origin);

/*
 * The same with a justification of justification_len bytes that may hold
 * NUL bytes (Codex keeps them, and `check` prints them as \u0000).
 */
int rules_policy_add_prefix_rule_text(struct rules_policy *p, const struct rules_token *pattern,
                                      size_t n, enum rules_decision decision,
                                      const char *justification, size_t justification_len,
                                      const struct rules_origin *origin);

/*
 * A justification as the server shows it to a person (MCP results, audit
 * records, approval prompts): a C string in which each NUL byte of the
 * rule's text appears as U+2400 ("\u2400", the symbol for NUL), so that
 * nothing after a NUL is lost.  Returns a new string, or NULL on OOM.
 */
char *rules_text_shown(const char *s, size_t len);

/*
 * A NUL cannot be part of a C string, so the rules builder stores each NUL
 * of a host_executable name or path, a network_rule host and (for checking
 * examples only) a pattern token or an example word as these two bytes,
 * which are never UTF-8 and so never the rules' own text.  A command from
 * outside may carry them too; as in Codex, where no command word can equal
 * a string holding a NUL, such a command never equals one of those
 * strings (see RULES_CHECK_EXAMPLE).
 */
#define RULES_NUL_STANDIN "\xc0\x80"

/* True when s holds RULES_NUL_STANDIN.  Cannot fail. */
bool rules_has_nul_standin(const char *s);

/* Rewrites, in place, each RULES_NUL_STANDIN in a message as the two
 * characters \0, so that an error naming such a string stays UTF-8. */
void rules_show_nul_standins(char *s);

/* One prefix rule as the policy keeps it: a first token with alternatives
 * was stored as one rule per alternative, each with the same origin. */
struct rules_prefix_rule {
    const char *program;            /* the first token */
    const struct rules_token *rest; /* the tokens after it */
    size_t n_rest;
    enum rules_decision decision;
    const char *justification;      /* as shown (rules_text_shown); NULL: none */
    const char *justification_text; /* exactly as written, NUL bytes and all */
    size_t justification_len;       /* of justification_text */
    struct rules_origin origin;     /* .file NULL when not known */
};

/*
 * Calls fn once for each prefix rule, in the order the rules were added,
 * until fn returns non-zero; returns that value, or 0.  The rule and
 * everything it points to are the policy's, valid until it is freed.
 */
int rules_policy_each_rule(const struct rules_policy *p,
                           int (*fn)(void *arg, const struct rules_prefix_rule *rule), void *arg);

/* Records that `name` may stand for exactly these absolute paths (already
 * validated and ~-expanded by the caller).  Returns 0, or -1 on OOM. */
int rules_policy_add_host_executable(struct rules_policy *p, const char *name,
                                     const char *const *paths, size_t n);

/* Records a network rule (exec decisions ignore it; the network proxy asks
 * rules_policy_network_check).  host as network_rule stores it (lower case,
 * no trailing dot); justification as shown (rules_text_shown).  Returns 0,
 * or -1 on OOM. */
int rules_policy_add_network_rule(struct rules_policy *p, const char *host, const char *protocol,
                                  enum rules_decision decision, const char *justification);

/* Number of prefix rules (after first-token expansion). */
size_t rules_policy_rule_count(const struct rules_policy *p);

/* Calls fn once for each program name some prefix rule starts with (every
 * alternative of a first token), in no particular order, until fn returns
 * non-zero; returns that value, or 0. */
int rules_policy_each_program(const struct rules_policy *p, int (*fn)(void *arg, const char *name),
                              void *arg);

/*
 * Adds every host_executable of src to dst (replacing dst's list for the
 * same name).  Codex checks a rule's match / not_match examples against a
 * policy of that rule alone plus the host executables, with resolution on;
 * this builds such a policy.  Returns 0, or -1 on OOM.
 */
int rules_policy_copy_host_executables(struct rules_policy *dst, const struct rules_policy *src);

/* Number of network rules recorded.  Cannot fail. */
size_t rules_policy_network_rule_count(const struct rules_policy *p);

/* The decision of the network rules for one destination. */
struct rules_network_result {
    enum rules_decision decision; /* strictest of the rules naming host and protocol; NONE: none */
    const char *justification;    /* that rule's (the first of them) as shown, or NULL;
                                   * the policy's */
};

/*
 * The network rules whose host equals `host` (already lower case, without
 * brackets or a trailing dot) and whose protocol equals `protocol` ("http",
 * "https", "socks5_tcp", "socks5_udp"): the strictest of their decisions.
 * Hosts compare exactly, as network_rule accepts no wildcards.  Cannot fail.
 */
struct rules_network_result rules_policy_network_check(const struct rules_policy *p,
                                                       const char *host, const char *protocol);

/*
 * Whether a host_executable(name=...) exists (*known) and lists `path`
 * (compared after lexical normalisation: repeated "/" and "." dropped).
 * Returns false when unknown, not listed, or out of memory.
 */
bool rules_policy_host_executable_allows(const struct rules_policy *p, const char *name,
                                         const char *path, bool *known);

struct rules_match {
    char **matched_prefix; /* the command tokens the rule's pattern covered */
    size_t n_prefix;
    enum rules_decision decision;
    char *justification;        /* as shown (rules_text_shown); NULL when the rule has none */
    char *justification_text;   /* exactly as written, NUL bytes and all (check's JSON) */
    size_t justification_len;   /* of justification_text */
    char *resolved_program;     /* set only when matched through basename fallback */
    struct rules_origin origin; /* the policy's (valid while it lives); .file NULL: not known */
};

struct rules_result {
    enum rules_decision decision; /* strictest of matches; NONE when empty */
    struct rules_match *matches;  /* in rule order */
    size_t n_matches;
};

#define RULES_CHECK_RESOLVE_HOST_EXECUTABLES 0x1u
/* argv is a match / not_match example of a rules file, its NUL bytes
 * written as RULES_NUL_STANDIN like the policy's: they may then equal. */
#define RULES_CHECK_EXAMPLE 0x2u

/*
 * Evaluates the command argv[0..argc) (argc >= 1).  With
 * RULES_CHECK_RESOLVE_HOST_EXECUTABLES, an absolute argv[0] with no exact
 * rule may fall back to the rules for its basename, as rules-language.md
 * describes.  As in Codex, a relative argv[0] is first made absolute
 * against $HOME ("~/...") or the current directory, and paths compare
 * after lexical normalisation ("//", ".", ".." and a trailing "/").  Fills *out (free with
 * rules_result_free).  Returns 0, or -1 when out of memory (*out then empty).
 */
int rules_policy_check(const struct rules_policy *p, const char *const *argv, size_t argc,
                       unsigned flags, struct rules_result *out);

/* Frees what rules_policy_check stored; the struct is the caller's. */
void rules_result_free(struct rules_result *r);

/*
 * Moves src's matches after dst's (src is left empty) and makes dst's
 * decision the stricter of the two: the result of one check over both
 * policies.  Returns 0, or -1 when out of memory (both unchanged).
 */
int rules_result_append(struct rules_result *dst, struct rules_result *src);

/*
 * The person's standing answers: when r's decision is prompt, an allow
 * rule written in answers_file (compared as the rules were named to the
 * loader) whose prefix is at least as long as that of every prompt rule
 * that matched settles the question, and r's decision becomes allow.  A
 * forbidden rule is never settled, and an allow rule shorter than a
 * prompt rule (more general) does not settle it.  Returns the settling
 * match, or NULL (r unchanged).  answers_file NULL: none.  Cannot fail.
 */
const struct rules_match *rules_result_settle(struct rules_result *r, const char *answers_file);

/* The hash of a NUL-terminated string the policy's index uses (FNV-1a:
 * short keys, nothing gained by colliding them), for other sets of
 * strings too.  Cannot fail. */
uint64_t rules_str_hash(const char *s);

/* True when s is well-formed UTF-8 (as Codex requires of commands and
 * files).  Cannot fail. */
bool rules_text_is_utf8(const char *s);

/* The JSON that `codex execpolicy check` prints for r (same keys, order and
 * omissions), without a trailing newline; caller frees. NULL on OOM. */
char *rules_result_to_json(const struct rules_result *r, bool pretty);

#endif
