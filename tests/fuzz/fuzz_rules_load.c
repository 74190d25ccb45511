/*
 * libFuzzer target for the rules loader: any bytes as a .rules file, run
 * with the rule built-ins.  The loader must return a policy or one error
 * line, never crash, leak or hang (the step and memory limits bound every
 * input).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/eval.h"
#include "rules/policy.h"
#include "rules/rule_builtins.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rules_policy *p = rules_policy_new();
    struct star_vm *vm = star_vm_new();
    struct rules_builder *b = rules_builder_new(p);
    if (p == NULL || vm == NULL || b == NULL || rules_builtins_install(vm, b) != 0)
        abort();
    /* Keep each input cheap so the fuzzer explores instead of looping. */
    vm->max_steps = 100000;
    vm->mem_limit = 64u << 20;
    FILE *devnull = fopen("/dev/null", "we");
    if (devnull != NULL)
        vm->print_to = devnull;
    if (star_vm_exec_file(vm, "fuzz.rules", (const char *)data, size) == 0) {
        char *err = NULL;
        if (rules_builder_check_examples(b, vm, &err) != 0 && err == NULL)
            abort();
        free(err);
    } else if (star_vm_error(vm) == NULL || strncmp(star_vm_error(vm), "fuzz.rules:", 11) != 0) {
        abort(); /* every failure must be one positioned line */
    }
    if (devnull != NULL)
        fclose(devnull);
    rules_builder_free(b);
    star_vm_free(vm);
    rules_policy_free(p);
    return 0;
}
