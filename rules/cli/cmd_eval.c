/*
 * execgate-rules eval FILE: runs a Starlark file with the language's
 * built-ins only.  Exit 0 when it completes, 1 with one error line on
 * stderr when it fails, 2 on a usage error.
 */
#include "starlark/builtins.h"
#include "rules/cli/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "starlark/eval.h"
#include "starlark/source.h"

int
rules_cmd_eval(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '\0') {
        fprintf(stderr, "usage: execgate-rules eval FILE\n");
        return 2;
    }
    const char *path = argv[1];
    char *err = NULL;
    size_t len = 0;
    char *src = star_source_read(path, &len, &err);
    if (src == NULL) {
        fprintf(stderr, "execgate-rules: %s\n", err ? err : "out of memory");
        free(err);
        return 1;
    }
    struct star_vm *vm = star_vm_new();
    if (vm != NULL && star_builtins_install_print(vm) != 0) {
        star_vm_free(vm);
        vm = NULL;
    }
    if (vm == NULL) {
        free(src);
        fprintf(stderr, "execgate-rules: out of memory\n");
        return 1;
    }
    int rc = star_vm_exec_file(vm, path, src, len);
    if (rc != 0)
        fprintf(stderr, "%s\n", star_vm_error(vm));
    star_vm_free(vm);
    free(src);
    return rc == 0 ? 0 : 1;
}
