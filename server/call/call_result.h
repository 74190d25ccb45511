/*
 * call_result: the JSON text of a shell call's MCP result, written in one
 * go from the kept output.
 *
 * The result carries the call's object twice, as structuredContent and as
 * the text of its one content item, which is that object's JSON text (as
 * MCP asks of a tool with structured output, for clients that read only
 * the text): the output is escaped once in structuredContent, and the
 * text, itself JSON, is escaped once more as a string.  A control byte
 * thus takes 6 bytes there (\u0001) and 7 in the text (\\u0001): an
 * answer is at most 13 times the output it carries, plus a few hundred
 * bytes.  Writing that text directly, sized first and then
 * filled, costs one buffer of exactly its length; building it as JSON
 * values would copy and check the output five times over.  The text is
 * byte for byte what jansson's json_dumps(JSON_COMPACT) makes of the same
 * values.
 */
#ifndef EXECGATE_SERVER_CALL_RESULT_H
#define EXECGATE_SERVER_CALL_RESULT_H

#include "server/call/output_ring.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The sandbox_error of a call whose sandbox could not be set up. */
#define CALL_RESULT_SETUP_FAILED                                                                   \
    "execgate-sandbox could not set up the sandbox (exit 125); the command did not run: see "      \
    "output"

/* The shell_error of a call whose shell the helper could not start. */
#define CALL_RESULT_NOT_STARTED                                                                    \
    "execgate-sandbox could not start the shell; the command did not run: see output"

struct call_result {
    int exit_code;
    const struct output_ring_text *output; /* raw bytes, repaired as UTF-8 here */
    uint64_t duration_ns;
    bool timed_out;
    bool setup_failed;   /* adds sandbox_error; the tool call is an error */
    bool not_started;    /* adds shell_error; the tool call is an error */
    const char *aborted; /* NULL, or why a person aborted the call: adds aborted; an error */
    /* NULL, or what people typed with approvals in the call, a line each
     * (decide_call_on_said): adds person_said */
    const char *said;
};

/*
 * {"content":[{"type":"text","text":OBJ as a string}],
 *  "structuredContent":OBJ,"isError":setup_failed, not_started or aborted},
 * with OBJ = {"exit_code","output","duration":{"secs","nanos"},"timed_out"}
 * and then "sandbox_error", "shell_error", "aborted" and "person_said"
 * when set.  Returns the text
 * (NUL-terminated, *len bytes without the NUL; caller frees), or NULL when out of memory.
 */
char *call_result_json(const struct call_result *r, size_t *len);

/* The length call_result_json's text would have, without its NUL (one
 * pass over the output, nothing allocated).  Cannot fail. */
size_t call_result_size(const struct call_result *r);

#endif
