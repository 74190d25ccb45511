/*
 * libFuzzer target for the server's message dispatcher: bytes go through
 * the JSON-RPC framing into the MCP handlers (initialize, tools/list,
 * tools/call validation and queueing, sandbox-state updates, cancellation,
 * MCP tasks and their methods, answers to unknown requests).  No call is
 * started (max_calls is 0, so valid calls wait in the queue until shutdown
 * answers them), answers are serialised and dropped, and every input ends
 * with a full shutdown, so a leak or a use-after-free on any path is found.
 */
#include "server/mcp/mcp.h"
#include "common/log.h"
#include "server/options.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <uv.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char bash[] = "/bin/bash";
    static char helper[] = "/bin/true";
    struct server_options o = {
        .bash_path = bash,
        .sandbox_helper = helper,
        .default_timeout_ms = 1000,
        .max_output_bytes = 4096,
        .max_calls = 0,
        .max_message_bytes = 4096,
        .kill_grace_ms = 0,
        .log_level = LOG_LEVEL_ERROR,
        .task_ttl_ms = 1000,
        .max_tasks = 4,
    };
    log_set_level(LOG_LEVEL_ERROR);
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0)
        return 0;
    char *err = NULL;
    struct mcp_server *s = mcp_server_new(&loop, &o, &err);
    if (s) {
        /* the first line makes most inputs reach the initialized handlers */
        static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
                                   "\"params\":{\"protocolVersion\":\"2025-06-18\"}}\n";
        if (size > 0 && data[0] == 'I')
            mcp_server_feed(s, init, sizeof(init) - 1);
        mcp_server_feed(s, (const char *)data, size);
        mcp_server_shutdown(s, "fuzz input done");
        uv_run(&loop, UV_RUN_DEFAULT);
        mcp_server_free(s);
    }
    free(err);
    uv_loop_close(&loop);
    return 0;
}
