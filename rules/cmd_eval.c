#include "cmd.h"

#include <stdio.h>

int
rules_cmd_eval(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "execgate-rules eval: not implemented in this build yet\n");
    return 2;
}
