/*
 * Fuzz target: the sandbox policy text the helper receives on --policy
 * (a permission profile's fields too), its writable set, and the round
 * trip through its canonical form.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_parse(text, &err);
    free(text);
    if (p == NULL) {
        if (err == NULL)
            abort(); /* every refusal must say why */
        free(err);
        return 0;
    }
    /* the writable set of every policy that parses (its roots, and a
     * profile's read-only paths), as the helper and the server make it */
    sandbox_writable_free(sandbox_writable_new(p, "/tmp"));
    char *canon = sandbox_policy_to_json(p);
    char *desc = sandbox_policy_describe(p);
    struct sandbox_policy *q = canon ? sandbox_policy_parse(canon, &err) : NULL;
    if (canon != NULL && q == NULL)
        abort(); /* the canonical text must parse back */
    char *again = q ? sandbox_policy_to_json(q) : NULL;
    if (again != NULL && strcmp(again, canon) != 0)
        abort();
    free(again);
    free(desc);
    free(canon);
    sandbox_policy_free(q);
    sandbox_policy_free(p);
    return 0;
}
