/*
 * shlex under libFuzzer: splitting arbitrary bytes must not crash or leak,
 * and quoting must round-trip: split(join(words)) == words.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/strv.h"
#include "rules/shlex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char **words = NULL;
    size_t n = 0;
    const char *err = NULL;
    if (shlex_split((const char *)data, size, &words, &n, &err) != 0)
        return 0;
    char *joined = shlex_join((const char *const *)words, n);
    if (!joined)
        abort();
    char **again = NULL;
    size_t n2 = 0;
    if (shlex_split(joined, strlen(joined), &again, &n2, &err) != 0 || n2 != n)
        abort();
    for (size_t i = 0; i < n; i++)
        if (strcmp(words[i], again[i]) != 0)
            abort();
    strv_free(again);
    free(joined);
    strv_free(words);
    return 0;
}
