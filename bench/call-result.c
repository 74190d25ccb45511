/*
 * call-result: the CPU time to turn a call's kept output into the text of
 * its answer, for the 20 MB of `seq 1 3000000` kept in a ring of 1 MiB (the
 * default --max-output-bytes).  Two ways in the same run: call_result_json
 * (written directly, as the server does), and the same answer built as
 * jansson values and dumped (the baseline: how the server did it before).
 * Also the ring itself: keeping the 20 MB, in reads of 64 KiB.
 *
 *   bench/call-result.sh [RUNS]
 */
#include "server/call/call_result.h"
#include "server/call/output_ring.h"
#include "common/utf8.h"

#include "bench/timing.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
seq_output(size_t *len)
{
    char *all = NULL;
    FILE *mem = open_memstream(&all, len);
    if (!mem)
        exit(1);
    for (int i = 1; i <= 3000000; i++)
        fprintf(mem, "%d\n", i);
    fclose(mem);
    return all;
}

/* The baseline: the result as jansson values, in its envelope, dumped. */
static char *
with_jansson(const struct output_ring_text *t, const struct call_result *r)
{
    char marker[OUTPUT_RING_MARKER_MAX];
    size_t m = output_ring_marker(t->omitted, marker);
    size_t n = t->head_len + m + t->tail_len, len;
    char *raw = malloc(n);
    if (!raw)
        exit(1);
    memcpy(raw, t->head, t->head_len);
    memcpy(raw + t->head_len, marker, m);
    memcpy(raw + t->head_len + m, t->tail, t->tail_len);
    char *text = utf8_lossy(raw, n, &len);
    json_t *obj = json_pack("{s:i, s:s%, s:{s:I, s:I}, s:b}", "exit_code", r->exit_code, "output",
                            text, len, "duration", "secs", (json_int_t)0, "nanos",
                            (json_int_t)r->duration_ns, "timed_out", r->timed_out);
    char *dumped = json_dumps(obj, JSON_COMPACT);
    json_t *result = json_pack("{s:[{s:s, s:s}], s:O, s:b}", "content", "type", "text", "text",
                               dumped, "structuredContent", obj, "isError", 0);
    json_t *msg = json_pack("{s:s, s:i, s:o}", "jsonrpc", "2.0", "id", 1, "result", result);
    char *out = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    json_decref(obj);
    free(dumped);
    free(text);
    free(raw);
    return out;
}

int
main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 30;
    size_t n;
    char *all = seq_output(&n);
    double *ring_ms = calloc((size_t)runs, sizeof(double));
    double *direct_ms = calloc((size_t)runs, sizeof(double));
    double *jansson_ms = calloc((size_t)runs, sizeof(double));
    if (!ring_ms || !direct_ms || !jansson_ms)
        return 1;
    size_t direct_len = 0, jansson_len = 0;
    for (int k = 0; k < runs; k++) {
        struct output_ring ring;
        output_ring_init(&ring, 1024 * 1024);
        double t0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
        for (size_t at = 0; at < n; at += 65536)
            output_ring_append(&ring, all + at, n - at < 65536 ? n - at : 65536);
        struct output_ring_text t;
        output_ring_text(&ring, &t);
        double t1 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
        struct call_result r = {.exit_code = 0, .output = &t, .duration_ns = 26000000};
        char *direct = call_result_json(&r, &direct_len);
        double t2 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
        char *dumped = with_jansson(&t, &r);
        double t3 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
        if (!direct || !dumped)
            return 1;
        jansson_len = strlen(dumped);
        ring_ms[k] = t1 - t0;
        direct_ms[k] = t2 - t1;
        jansson_ms[k] = t3 - t2;
        free(direct);
        free(dumped);
        output_ring_release(&ring);
    }
    double ring = median(ring_ms, runs), direct = median(direct_ms, runs);
    double jansson = median(jansson_ms, runs);
    printf("seq 1 3000000: %zu bytes kept in 1 MiB; medians of %d runs, CPU time\n", n, runs);
    printf("  keeping it (64 KiB reads):      %7.2f ms\n", ring);
    printf("  call_result_json:               %7.2f ms (%zu bytes)\n", direct, direct_len);
    printf("  jansson values + dumps (before): %6.2f ms (%zu bytes, with the envelope)\n", jansson,
           jansson_len);
    printf("  call_result_json / jansson:     %7.2f\n", direct / jansson);
    free(ring_ms);
    free(direct_ms);
    free(jansson_ms);
    free(all);
    return 0;
}
