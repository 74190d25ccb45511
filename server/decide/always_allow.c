/*
 * always_allow: an "always allow" answer checked, written and put in
 * force (always_allow.h).
 */
#include "server/decide/always_allow.h"

#include "server/rpc/client_log.h"
#include "server/decide/decide.h"
#include "common/log.h"
#include "rules/amend.h"

#include <stdlib.h>
#include <string.h>

#define ALWAYS_DECISION "approved_execpolicy_amendment"

const char **
always_allow_prefix(const struct always_offer *offer, const json_t *decision, size_t *n,
                    const char **problem)
{
    *problem = NULL;
    const json_t *named = json_object_get(json_object_get(decision, ALWAYS_DECISION),
                                          "proposed_execpolicy_amendment");
    if (json_is_object(decision) && !json_is_array(named)) {
        *problem = "the answer's approved_execpolicy_amendment names no prefix";
        return NULL;
    }
    size_t len = named ? json_array_size(named) : offer->n_proposed;
    if (len < offer->n_proposed || len > offer->nargs + 1) {
        *problem = len < offer->n_proposed
                       ? "the prefix the answer names is broader than the one "
                         "proposed"
                       : "the prefix the answer names is longer than the command";
        return NULL;
    }
    const char **words = calloc(len + 1, sizeof(*words));
    for (size_t i = 0; words && i < len; i++) {
        const char *want = i == 0 ? offer->proposed[0] : offer->args[i - 1];
        words[i] = named ? json_string_value(json_array_get(named, i)) : offer->proposed[i];
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

void
always_allow_write(struct decide_server *ds, const char *file, const char *const *words, size_t n,
                   const char *label, const json_t *request_id, struct client_log *log)
{
    char *err = NULL;
    char *line = rules_amend_rule_line(words, n);
    int rc = rules_amend_allow_prefix(file, words, n, &err);
    if (rc == 0 && decide_server_reload(ds, &err) < 0)
        rc = -1;
    const char *why = err ? err : "out of memory";
    if (rc == 0)
        log_info("decide %s: always allowed: %s added to %s", label, line ? line : "a rule", file);
    else
        log_error("decide %s: always allowing failed, the approval is for this exec only: %s",
                  label, why);
    json_t *rec = rc == 0 ? json_pack("{s:s, s:s, s:s?}", "event", "rules-amended", "file", file,
                                      "rule", line)
                          : json_pack("{s:s, s:s, s:s}", "event", "rules-amend-failed", "file",
                                      file, "error", why);
    json_t *id = request_id ? json_incref((json_t *)request_id) : NULL;
    if (rec && id)
        json_object_set_new(rec, "requestId", id);
    else
        json_decref(id);
    client_log_send(log, rc == 0 ? CLIENT_LOG_INFO : CLIENT_LOG_ERROR, rec);
    free(line);
    free(err);
}
