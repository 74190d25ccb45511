/*
 * libFuzzer target for the server's checks on an exec request's argv and
 * env (exec_checks, rules/heuristic): the input is split at NUL bytes into words, as a
 * REQUEST's argv arrives from an untrusted wrapper; the forced-rm
 * heuristic (which splits `sh -c` scripts) and the env filter must neither
 * crash nor leak, and must answer the same twice.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/decide/exec_checks.h"
#include "rules/heuristic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    size_t n = 1;
    for (size_t i = 0; i < size; i++)
        n += copy[i] == '\0';
    const char **argv = calloc(n, sizeof(char *));
    if (!argv) {
        free(copy);
        return 0;
    }
    size_t k = 0;
    for (size_t i = 0; i <= size && k < n; i++) {
        if (i == 0 || copy[i - 1] == '\0')
            argv[k++] = copy + i;
    }
    bool first = heuristic_forces_rm(argv, k);
    if (heuristic_forces_rm(argv, k) != first)
        abort();
    for (size_t i = 0; i < k; i++)
        (void)exec_checks_env_dropped(argv[i]);
    free(argv);
    free(copy);
    return 0;
}
