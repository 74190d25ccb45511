/*
 * rules policy: the rules loaded from .rules files, and the decision for a
 * command.  The Starlark built-ins (prefix_rule, host_executable,
 * network_rule) add rules through this interface; the server, the wrapper's
 * server side and `execgate-rules check` ask it for decisions.
 * What a check finds is a rules_result (result.h); the text conventions of
 * the rules' strings are in text.h.  Knows nothing of Starlark, MCP or
 * libuv.
 */
#ifndef EXECGATE_RULES_POLICY_H
#define EXECGATE_RULES_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rules/result.h"
#include "rules/text.h"

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

/* The hash of a NUL-terminated string the policy's index uses (FNV-1a:
 * short keys, nothing gained by colliding them), for other sets of
 * strings too.  Cannot fail. */
uint64_t rules_str_hash(const char *s);

#endif
