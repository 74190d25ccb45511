#include "cmd.h"

#include <stdio.h>

int
rules_cmd_check(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "execgate-rules check: not implemented in this build yet\n");
    return 2;
}
