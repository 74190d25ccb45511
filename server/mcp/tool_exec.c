#include "server/mcp/tool_exec.h"

#include "common/buf.h"
#include "common/log.h"
#include "common/strfmt.h"
#include "common/utf8.h"
#include "server/mcp/tool_shell.h"
#include "server/rpc/jsonrpc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * The tools as tools/list shows them.  The descriptions say when to use
 * which: a model reads them to choose between shell (a command that ends
 * by itself) and a process (one that does not, or that wants input).
 */
static const char exec_command_json[] =
    "{\"name\":\"exec_command\",\"title\":\"Start a process\","
    "\"description\":\"Starts a command that keeps running or needs input (a dev server, a "
    "watcher, a REPL such as python3 -i, a prompt that asks y/n), in the same sandbox and "
    "under the same rules as shell, and returns what it printed within yield_time_ms. If it "
    "still runs, the result gives its session_id: write_stdin sends it input and reads more "
    "output, kill_process ends it, list_processes lists them. For a command that ends by "
    "itself, use shell. You MUST provide the workdir as an absolute path.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"cmd\":{\"description\":\"The shell command to run.\",\"type\":\"string\"},"
    "\"workdir\":{\"description\":\"The working directory, an absolute path.\","
    "\"type\":\"string\"},"
    "\"login\":{\"description\":\"Run the shell as a login shell (-lc): defaults to true.\","
    "\"type\":\"boolean\",\"nullable\":true},"
    "\"tty\":{\"description\":\"Give the command a terminal: for interactive programs "
    "(python3 -i, psql) and to send Ctrl-C (\\\\u0003) with write_stdin. Defaults to "
    "false.\",\"type\":\"boolean\",\"nullable\":true},"
    "\"yield_time_ms\":{\"description\":\"How long to wait for output before returning "
    "(default 10000, at most 30000); the result comes sooner if the command ends.\","
    "\"type\":\"integer\",\"minimum\":0,\"nullable\":true},"
    "\"max_output_tokens\":{\"description\":\"Return at most this many tokens (about 4 bytes "
    "each) of output; the middle of longer output is left out and said so.\","
    "\"type\":\"integer\",\"minimum\":1,\"nullable\":true}},"
    "\"required\":[\"cmd\",\"workdir\"]},"
    "\"annotations\":{\"title\":\"Start a process\",\"readOnlyHint\":false,"
    "\"destructiveHint\":true,\"idempotentHint\":false,\"openWorldHint\":true}}";

static const char write_stdin_json[] =
    "{\"name\":\"write_stdin\",\"title\":\"Write to a process\","
    "\"description\":\"Writes chars to the input of a process started by exec_command and "
    "returns what it printed since the last read, waiting up to yield_time_ms. Empty chars "
    "only reads. With a terminal (tty), control characters act as typed: \\\\u0003 is Ctrl-C, "
    "\\\\u0004 Ctrl-D. Once the process has ended, the result gives its exit_code and the "
    "process is gone.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"session_id\":{\"description\":\"The process, as exec_command gave it.\","
    "\"type\":\"integer\"},"
    "\"chars\":{\"description\":\"What to write (may be empty).\",\"type\":\"string\","
    "\"nullable\":true},"
    "\"yield_time_ms\":{\"description\":\"How long to wait for output before returning "
    "(default 250, at most 30000).\",\"type\":\"integer\",\"minimum\":0,\"nullable\":true},"
    "\"max_output_tokens\":{\"description\":\"Return at most this many tokens (about 4 bytes "
    "each) of output.\",\"type\":\"integer\",\"minimum\":1,\"nullable\":true}},"
    "\"required\":[\"session_id\"]},"
    "\"annotations\":{\"title\":\"Write to a process\",\"readOnlyHint\":false,"
    "\"destructiveHint\":true,\"idempotentHint\":false,\"openWorldHint\":true}}";

static const char list_processes_json[] =
    "{\"name\":\"list_processes\",\"title\":\"List processes\","
    "\"description\":\"Lists the processes exec_command started in this session: session_id, "
    "command, whether it still runs, and how many bytes of its output are unread.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}},"
    "\"annotations\":{\"title\":\"List processes\",\"readOnlyHint\":true,"
    "\"destructiveHint\":false,\"idempotentHint\":true,\"openWorldHint\":false}}";

static const char kill_process_json[] =
    "{\"name\":\"kill_process\",\"title\":\"End a process\","
    "\"description\":\"Ends a process started by exec_command, with everything it started, and "
    "returns its last output and exit status. The process is then gone.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"session_id\":{\"description\":\"The process, as exec_command gave it.\","
    "\"type\":\"integer\"}},\"required\":[\"session_id\"]},"
    "\"annotations\":{\"title\":\"End a process\",\"readOnlyHint\":false,"
    "\"destructiveHint\":true,\"idempotentHint\":true,\"openWorldHint\":false}}";

static const char *const tool_texts[] = {exec_command_json, write_stdin_json, list_processes_json,
                                         kill_process_json};
static const char *const tool_names[] = {"exec_command", "write_stdin", "list_processes",
                                         "kill_process"};

bool
tool_exec_is(const char *name)
{
    for (size_t i = 0; i < sizeof(tool_names) / sizeof(tool_names[0]); i++) {
        if (strcmp(name, tool_names[i]) == 0)
            return true;
    }
    return false;
}

int
tool_exec_definitions(const struct server_options *o, json_t *tools)
{
    if (o->max_background == 0)
        return 0;
    for (size_t i = 0; i < sizeof(tool_texts) / sizeof(tool_texts[0]); i++) {
        json_t *tool = json_loads(tool_texts[i], 0, NULL);
        if (!tool || json_array_append_new(tools, tool) < 0)
            return -1;
    }
    return 0;
}

/* ---- results ---- */

/* A tool result whose one text item is why (an error of the tool). */
static json_t *
failure(const char *why)
{
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                     why ? why : "out of memory", "isError", 1);
}

/* The kept output as one string: head, the marker, tail, at most max
 * bytes of output when max > 0 (the middle is left out: it joins what
 * the ring dropped).  *dropped gets the bytes left out in all.  NULL when
 * out of memory. */
static char *
output_string(const struct output_ring_text *t, size_t max, uint64_t *dropped, size_t *len)
{
    struct output_ring cut;
    struct output_ring_text kept = *t;
    bool narrowed = max > 0 && t->head_len + t->tail_len > max;
    if (narrowed) {
        output_ring_init(&cut, max);
        if (output_ring_append(&cut, t->head, t->head_len) < 0 ||
            output_ring_append(&cut, t->tail, t->tail_len) < 0) {
            output_ring_release(&cut);
            return NULL;
        }
        output_ring_text(&cut, &kept);
        kept.omitted += t->omitted;
        kept.cut = kept.cut || t->cut;
    }
    *dropped = kept.omitted;
    struct buf b = {0};
    char marker[OUTPUT_RING_MARKER_MAX];
    size_t mlen = kept.cut ? output_ring_marker(kept.omitted, marker) : 0;
    int rc = buf_append(&b, kept.head, kept.head_len);
    if (rc == 0 && mlen)
        rc = buf_append(&b, marker, mlen);
    if (rc == 0)
        rc = buf_append(&b, kept.tail, kept.tail_len);
    if (narrowed)
        output_ring_release(&cut);
    size_t raw_len = 0;
    char *raw = rc == 0 ? buf_steal(&b, &raw_len) : NULL;
    free(b.data);
    char *text = raw ? utf8_lossy(raw, raw_len, len) : NULL;
    free(raw);
    return text;
}

/*
 * The result for p now: the output since the last read (taken), then its
 * exit status (it has ended: it is forgotten) or its session_id.  The
 * facts in structuredContent (what Codex shows its model), and the same as
 * text in the shape of Codex's own unified exec, for clients that read
 * only content.
 */
static json_t *
process_result(struct process *p, size_t max, uint64_t waited_ns)
{
    struct process_state st;
    process_state(p, &st);
    struct output_ring_text t;
    process_output(p, &t);
    uint64_t dropped = 0;
    size_t len = 0;
    char *out = output_string(&t, max, &dropped, &len);
    if (!out)
        return NULL;
    process_output_taken(p);
    double secs = (double)waited_ns / 1e9;
    json_t *sc = json_pack("{s:s%, s:I}", "output", out, len, "wall_time_ms",
                           (json_int_t)(waited_ns / 1000000));
    char *head = NULL;
    if (st.running) {
        head = strfmt("Process running with session ID %lld", (long long)st.id);
        json_object_set_new(sc, "session_id", json_integer(st.id));
    } else if (st.error) {
        head = strfmt("Process did not start: %s", st.error);
        json_object_set_new(sc, "error", json_string(st.error));
    } else {
        head = strfmt("Process exited with code %d%s%s", st.exit_code,
                      st.killed ? " (killed by kill_process or the session's end)" : "",
                      st.setup_failed ? " (the sandbox could not be set up: see the output)" : "");
        json_object_set_new(sc, "exit_code", json_integer(st.exit_code));
    }
    if (dropped > 0)
        json_object_set_new(sc, "output_dropped", json_integer((json_int_t)dropped));
    char *text = head ? strfmt("%s\nWall time: %.1f seconds\nOutput:\n%s", head, secs, out) : NULL;
    bool error = !st.running && (st.error || st.setup_failed);
    json_t *result = sc && text ? json_pack("{s:[{s:s, s:s}], s:O, s:b}", "content", "type", "text",
                                            "text", text, "structuredContent", sc, "isError", error)
                                : NULL;
    free(head);
    free(text);
    free(out);
    json_decref(sc);
    if (result && !st.running)
        process_forget(p); /* its end is told */
    return result;
}

/* A result waited for (process_wait). */
struct waiting {
    const struct tool_exec_host *h;
    json_t *id;
    size_t max;
    uint64_t began_ns;
};

static void
on_waited(struct process *p, void *data)
{
    struct waiting *w = data;
    if (p) {
        json_t *result = process_result(p, w->max, uv_hrtime() - w->began_ns);
        w->h->reply(w->h->owner, w->id, result);
    }
    /* else its session ended: nothing is answered */
    json_decref(w->id);
    free(w);
}

/* Answers id with p's output once yield_ms are over or p has ended. */
static void
answer_after(const struct tool_exec_host *h, const json_t *id, struct process *p, uint64_t yield_ms,
             size_t max)
{
    struct waiting *w = calloc(1, sizeof(*w));
    if (!w) {
        h->error(h->owner, id, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    w->h = h;
    w->id = json_incref((json_t *)id);
    w->max = max;
    w->began_ns = uv_hrtime();
    if (process_wait(p, yield_ms, on_waited, w) < 0) {
        json_decref(w->id);
        free(w);
        h->reply(h->owner, id,
                 failure("another write_stdin of this process is waiting for its output: wait "
                         "for its result first"));
    }
}

/* ---- arguments ---- */

/* An optional boolean; 0, or -1 with *err. */
static int
opt_bool(const json_t *args, const char *key, bool def, bool *out, char **err)
{
    const json_t *v = json_object_get(args, key);
    *out = def;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v)) {
        *err = strfmt("%s: must be a boolean", key);
        return -1;
    }
    *out = json_is_true(v);
    return 0;
}

/* An optional integer from min to max; 0, or -1 with *err. */
static int
opt_uint(const json_t *args, const char *key, uint64_t def, uint64_t min, uint64_t max,
         uint64_t *out, char **err)
{
    const json_t *v = json_object_get(args, key);
    *out = def;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) < min ||
        (uint64_t)json_integer_value(v) > max) {
        *err = strfmt("%s: must be an integer from %llu to %llu", key, (unsigned long long)min,
                      (unsigned long long)max);
        return -1;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* yield_time_ms and max_output_tokens (as bytes: 0 none). */
static int
yield_and_max(const json_t *args, uint64_t def_yield, uint64_t *yield, size_t *max, char **err)
{
    uint64_t tokens = 0;
    if (opt_uint(args, "yield_time_ms", def_yield, 0, TOOL_EXEC_MAX_YIELD_MS, yield, err) < 0 ||
        opt_uint(args, "max_output_tokens", 0, 1, SIZE_MAX / 4 / TOOL_EXEC_BYTES_PER_TOKEN, &tokens,
                 err) < 0)
        return -1;
    *max = (size_t)tokens * TOOL_EXEC_BYTES_PER_TOKEN;
    return 0;
}

/* The session's process named by session_id; NULL having answered. */
static struct process *
named_process(const struct tool_exec_host *h, const json_t *id, const json_t *args)
{
    const json_t *v = json_object_get(args, "session_id");
    if (!json_is_integer(v)) {
        h->error(h->owner, id, JSONRPC_INVALID_PARAMS,
                 v ? "session_id: must be an integer" : "session_id: required");
        return NULL;
    }
    struct process *p = process_find(h->procs, json_integer_value(v));
    if (!p) {
        char *why = strfmt("No process with session_id %lld in this session: it ended and its "
                           "end was told, or it never was (list_processes lists them)",
                           (long long)json_integer_value(v));
        h->reply(h->owner, id, failure(why));
        free(why);
    }
    return p;
}

/* ---- the tools ---- */

static void
exec_command(const struct tool_exec_host *h, const json_t *id, const json_t *params,
             const json_t *args)
{
    char *err = NULL;
    struct call_request r = {.background = true};
    uint64_t yield = 0;
    size_t max = 0;
    const json_t *cmd = json_object_get(args, "cmd");
    if (!json_is_string(cmd))
        err = strdup(cmd ? "cmd: must be a string" : "cmd: required");
    if (!err)
        tool_shell_workdir(json_object_get(args, "workdir"), &r.workdir, &err);
    if (!err && opt_bool(args, "login", true, &r.login, &err) == 0 &&
        opt_bool(args, "tty", false, &r.tty, &err) == 0)
        yield_and_max(args, TOOL_EXEC_DEFAULT_YIELD_MS, &yield, &max, &err);
    if (err) {
        h->error(h->owner, id, JSONRPC_INVALID_PARAMS, err);
        free(err);
        return;
    }
    if (h->procs->count >= h->o->max_background) {
        char *why = strfmt("Not started: this session has %u processes already "
                           "(--max-background). End one with kill_process, or read an ended "
                           "one's last output with write_stdin; list_processes lists them.",
                           h->procs->count);
        h->reply(h->owner, id, failure(why));
        free(why);
        return;
    }
    r.command = json_string_value(cmd);
    struct call *c = h->build(h->owner, id, params, &r);
    if (!c)
        return;
    struct process *p = process_start(h->procs, c, r.command, r.tty, &err);
    if (!p) {
        char *why = strfmt("cannot start the process: %s", err ? err : "out of memory");
        h->error(h->owner, id, JSONRPC_INTERNAL_ERROR, why ? why : "out of memory");
        free(why);
        free(err);
        return;
    }
    answer_after(h, id, p, yield, max);
}

static void
write_stdin(const struct tool_exec_host *h, const json_t *id, const json_t *args)
{
    char *err = NULL;
    uint64_t yield = 0;
    size_t max = 0;
    const json_t *chars = json_object_get(args, "chars");
    if (chars && !json_is_null(chars) && !json_is_string(chars))
        err = strdup("chars: must be a string");
    if (!err)
        yield_and_max(args, TOOL_EXEC_DEFAULT_WRITE_MS, &yield, &max, &err);
    if (err) {
        h->error(h->owner, id, JSONRPC_INVALID_PARAMS, err);
        free(err);
        return;
    }
    struct process *p = named_process(h, id, args);
    if (!p)
        return;
    size_t n = json_is_string(chars) ? json_string_length(chars) : 0;
    int rc = n > 0 ? process_write(p, json_string_value(chars), n) : 0;
    if (rc == -ENOMEM) {
        h->error(h->owner, id, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    if (rc == -ENOBUFS) {
        h->reply(h->owner, id,
                 failure("Not written: the process is not reading its input, and with these "
                         "chars more would wait for it than execgate keeps (1 MiB; 64 KiB "
                         "before its terminal has come). Read its output with empty chars, or "
                         "end it with kill_process."));
        return;
    }
    if (rc < 0) {
        /* the result says the process has ended, or will say so */
        log_info("process: input not written: %s", strerror(-rc));
    }
    answer_after(h, id, p, yield, max);
}

static void
kill_process(const struct tool_exec_host *h, const json_t *id, const json_t *args)
{
    struct process *p = named_process(h, id, args);
    if (!p)
        return;
    /* a request waiting on it gets what came so far, and this one the end */
    process_wake(p);
    process_kill(p);
    /* answered at its end: it is gone then */
    answer_after(h, id, p, UINT64_MAX / 2, 0);
}

static void
list_processes(const struct tool_exec_host *h, const json_t *id)
{
    json_t *list = json_array();
    char *text = strdup("");
    for (struct process *p = process_first(h->procs); p && list && text;
         p = process_next(h->procs, p)) {
        struct process_state st;
        process_state(p, &st);
        json_t *one =
            json_pack("{s:I, s:s, s:b, s:b, s:I, s:I}", "session_id", (json_int_t)st.id, "command",
                      st.command, "tty", st.tty, "running", st.running, "age_ms",
                      (json_int_t)st.age_ms, "unread_bytes", (json_int_t)st.unread);
        if (one && !st.running)
            json_object_set_new(one, "exit_code", json_integer(st.exit_code));
        if (!one || json_array_append_new(list, one) < 0) {
            json_decref(list);
            list = NULL;
            break;
        }
        char *more = strfmt("%s%lld\t%s\t%s\n", text, (long long)st.id,
                            st.running ? "running" : "ended", st.command);
        free(text);
        text = more;
    }
    json_t *result = list && text ? json_pack("{s:[{s:s, s:s}], s:{s:o}, s:b}", "content", "type",
                                              "text", "text", text[0] ? text : "No processes.\n",
                                              "structuredContent", "processes", list, "isError", 0)
                                  : NULL;
    if (!result)
        json_decref(list);
    free(text);
    h->reply(h->owner, id, result);
}

bool
tool_exec_cancel(const struct tool_exec_host *h, const json_t *id)
{
    for (struct process *p = process_first(h->procs); p; p = process_next(h->procs, p)) {
        struct waiting *w = process_waiter(p);
        if (w && json_equal(w->id, id)) {
            process_unwait(p);
            return true;
        }
    }
    return false;
}

void
tool_exec_call(const struct tool_exec_host *h, const json_t *id, const char *name,
               const json_t *params, const json_t *args)
{
    if (h->o->max_background == 0) {
        h->error(h->owner, id, JSONRPC_INVALID_PARAMS,
                 "background processes are off (--max-background 0): use shell");
        return;
    }
    if (args && !json_is_object(args)) {
        /* none at all is no argument (list_processes takes none) */
        h->error(h->owner, id, JSONRPC_INVALID_PARAMS, "arguments: must be an object");
        return;
    }
    if (strcmp(name, "exec_command") == 0)
        exec_command(h, id, params, args);
    else if (strcmp(name, "write_stdin") == 0)
        write_stdin(h, id, args);
    else if (strcmp(name, "kill_process") == 0)
        kill_process(h, id, args);
    else
        list_processes(h, id);
}
