#include "server/rpc/client_log.h"

#include "common/macros.h"
#include "server/rpc/jsonrpc.h"

#include <stdlib.h>
#include <string.h>

static const char *const level_names[] = {"debug", "info",     "notice", "warning",
                                          "error", "critical", "alert",  "emergency"};

struct client_log {
    struct jsonrpc *rpc;
    enum client_log_level threshold;
};

struct client_log *
client_log_new(void)
{
    struct client_log *l = calloc(1, sizeof(*l));
    if (l)
        l->threshold = CLIENT_LOG_WARNING;
    return l;
}

void
client_log_free(struct client_log *l)
{
    free(l);
}

void
client_log_set_rpc(struct client_log *l, struct jsonrpc *rpc)
{
    l->rpc = rpc;
}

int
client_log_set_level(struct client_log *l, const char *name)
{
    for (size_t i = 0; name && i < ARRAY_SIZE(level_names); i++) {
        if (strcmp(name, level_names[i]) == 0) {
            l->threshold = (enum client_log_level)i;
            return 0;
        }
    }
    return -1;
}

bool
client_log_wants(const struct client_log *l, enum client_log_level level)
{
    return l && l->rpc && level >= l->threshold;
}

void
client_log_send(struct client_log *l, enum client_log_level level, json_t *data)
{
    if (!client_log_wants(l, level) || !data) {
        json_decref(data);
        return;
    }
    json_t *params = json_pack("{s:s, s:s, s:o}", "level", level_names[level], "logger", "execgate",
                               "data", data);
    if (params)
        jsonrpc_notify(l->rpc, "notifications/message", params);
}
