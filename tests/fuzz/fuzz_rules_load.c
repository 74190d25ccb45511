/*
 * libFuzzer target for the rules loader: any bytes as a .rules file, run
 * with the rule built-ins, whole and a statement at a time.  The loader
 * must return a policy or one error line, never crash, leak or hang (the
 * step and memory limits bound every input), and both ways must agree.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "starlark/eval.h"
#include "rules/policy.h"
#include "rules/rule_builtins.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One run of the input, whole (star_vm_exec_file) or a statement at a
 * time (star_vm_exec_file_stream).  Returns 0 when it loaded, -1 when it
 * failed (*oom set when for lack of memory), STAR_EXEC_WHOLE when the
 * streaming run asks for a whole run; *rules is the number of rules. */
static int
run(const uint8_t *data, size_t size, int stream, int *oom, size_t *rules)
{
    struct rules_policy *p = rules_policy_new();
    struct star_vm *vm = star_vm_new();
    struct rules_builder *b = rules_builder_new(p, false);
    if (p == NULL || vm == NULL || b == NULL || rules_builtins_install(vm, b) != 0)
        abort();
    /* Keep each input cheap so the fuzzer explores instead of looping. */
    vm->max_steps = 100000;
    vm->mem_limit = 64u << 20;
    FILE *devnull = fopen("/dev/null", "we");
    if (devnull != NULL)
        vm->print_to = devnull;
    int rc = stream ? star_vm_exec_file_stream(vm, "fuzz.rules", (const char *)data, size)
                    : star_vm_exec_file(vm, "fuzz.rules", (const char *)data, size);
    *oom = 0;
    if (rc == 0) {
        char *err = NULL;
        if (rules_builder_check_examples(b, vm, &err) != 0) {
            if (err == NULL)
                abort();
            rc = -1;
        }
        free(err);
    } else if (rc < 0) {
        const char *e = star_vm_error(vm);
        if (e == NULL || strncmp(e, "fuzz.rules:", 11) != 0)
            abort(); /* every failure must be one positioned line */
        *oom = strstr(e, "out of memory") != NULL;
    } else if (rc != STAR_EXEC_WHOLE || !stream) {
        abort();
    }
    *rules = rules_policy_rule_count(p);
    if (devnull != NULL)
        fclose(devnull);
    rules_builder_free(b);
    star_vm_free(vm);
    rules_policy_free(p);
    return rc;
}

/* The loader's two ways of running a file must agree: both load (the
 * same number of rules) or both fail, unless the whole run ran out of
 * memory (the streaming one gives memory back as it goes). */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int oom_whole, oom_stream;
    size_t rules_whole, rules_stream;
    int whole = run(data, size, 0, &oom_whole, &rules_whole);
    int stream = run(data, size, 1, &oom_stream, &rules_stream);
    if (stream == STAR_EXEC_WHOLE || oom_whole || oom_stream)
        return 0;
    if ((whole == 0) != (stream == 0) || (whole == 0 && rules_whole != rules_stream))
        abort();
    return 0;
}
