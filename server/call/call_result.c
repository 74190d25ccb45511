#include "server/call/call_result.h"

#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The text being written; only measured while out is NULL. */
struct text {
    char *out;
    size_t len;
};

/* n bytes escaped depth times (0: as they are). */
static void
add(struct text *t, const char *p, size_t n, unsigned depth)
{
    if (depth == 0) {
        if (t->out)
            memcpy(t->out + t->len, p, n);
        t->len += n;
        return;
    }
    t->len += utf8_json_escape(t->out ? t->out + t->len : NULL, p, n, depth);
}

static void
add_str(struct text *t, const char *s, unsigned depth)
{
    add(t, s, strlen(s), depth);
}

static void
add_int(struct text *t, long long v, unsigned depth)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%lld", v);
    add(t, num, n > 0 ? (size_t)n : 0, depth);
}

/* A string member's value: the quotes at depth, what is inside one deeper. */
static void
add_value(struct text *t, const char *p, size_t n, unsigned depth)
{
    add(t, "\"", 1, depth);
    add(t, p, n, depth + 1);
    add(t, "\"", 1, depth);
}

static void
add_output(struct text *t, const struct output_ring_text *o, unsigned depth)
{
    add(t, "\"", 1, depth);
    add(t, o->head, o->head_len, depth + 1);
    if (o->cut) {
        char marker[OUTPUT_RING_MARKER_MAX];
        add(t, marker, output_ring_marker(o->omitted, marker), depth + 1);
        add(t, o->tail, o->tail_len, depth + 1);
    }
    add(t, "\"", 1, depth);
}

/* The call's object, escaped depth times (1: as a string's inside). */
static void
add_object(struct text *t, const struct call_result *r, unsigned depth)
{
    add_str(t, "{\"exit_code\":", depth);
    add_int(t, r->exit_code, depth);
    add_str(t, ",\"output\":", depth);
    add_output(t, r->output, depth);
    add_str(t, ",\"duration\":{\"secs\":", depth);
    add_int(t, (long long)(r->duration_ns / 1000000000u), depth);
    add_str(t, ",\"nanos\":", depth);
    add_int(t, (long long)(r->duration_ns % 1000000000u), depth);
    add_str(t, "},\"timed_out\":", depth);
    add_str(t, r->timed_out ? "true" : "false", depth);
    if (r->setup_failed) {
        add_str(t, ",\"sandbox_error\":", depth);
        add_value(t, CALL_RESULT_SETUP_FAILED, strlen(CALL_RESULT_SETUP_FAILED), depth);
    }
    if (r->not_started) {
        add_str(t, ",\"shell_error\":", depth);
        add_value(t, CALL_RESULT_NOT_STARTED, strlen(CALL_RESULT_NOT_STARTED), depth);
    }
    if (r->aborted) {
        add_str(t, ",\"aborted\":", depth);
        add_value(t, r->aborted, strlen(r->aborted), depth);
    }
    if (r->said) {
        add_str(t, ",\"person_said\":", depth);
        add_value(t, r->said, strlen(r->said), depth);
    }
    add_str(t, "}", depth);
}

static void
add_result(struct text *t, const struct call_result *r)
{
    /* isError: the tool itself failed when the sandbox could not be set up
     * or the shell could not be started (nothing ran), or a person aborted
     * the call; a command that ran is never an error, whatever it did */
    add_str(t, "{\"content\":[{\"type\":\"text\",\"text\":\"", 0);
    add_object(t, r, 1);
    add_str(t, "\"}],\"structuredContent\":", 0);
    add_object(t, r, 0);
    add_str(t, ",\"isError\":", 0);
    add_str(t, r->setup_failed || r->not_started || r->aborted ? "true" : "false", 0);
    add_str(t, "}", 0);
}

size_t
call_result_size(const struct call_result *r)
{
    struct text t = {0};
    add_result(&t, r);
    return t.len;
}

char *
call_result_json(const struct call_result *r, size_t *len)
{
    struct text t = {0};
    add_result(&t, r);
    t.out = malloc(t.len + 1);
    if (!t.out)
        return NULL;
    t.len = 0;
    add_result(&t, r); /* the same inputs: the same length */
    t.out[t.len] = '\0';
    *len = t.len;
    return t.out;
}
