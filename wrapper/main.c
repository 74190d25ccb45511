/*
 * execgate-wrapper: the exec wrapper that asks the server about every program Bash starts.
 *
 * Only --help and --version are real until this program's issue lands;
 * anything else is refused rather than pretended.
 */
#include "execgate-config.h"

#include <stdio.h>
#include <string.h>

static void
usage(FILE *out)
{
    fprintf(out, "usage: execgate-wrapper [--help] [--version]\n"
                 "the exec wrapper that asks the server about every program Bash starts (not "
                 "implemented yet in this build)\n");
}

int
main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf("execgate-wrapper %s\n", EXECGATE_VERSION);
        return 0;
    }
    usage(stderr);
    return 2;
}
