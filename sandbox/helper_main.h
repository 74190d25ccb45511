/*
 * helper_main: what execgate-sandbox does with a helper command line, from
 * main (the helper exec'd) and from a launcher's child (launcher.h): the
 * options parsed, the policy parsed, then sandbox_helper_run.
 */
#ifndef EXECGATE_SANDBOX_HELPER_MAIN_H
#define EXECGATE_SANDBOX_HELPER_MAIN_H

#include <stdnoreturn.h>

/* argv as main gets it (argv[0] the program's name, argv[argc] NULL; kept
 * for the process's life).  Never returns: see sandbox_helper_run. */
noreturn void sandbox_helper_main(int argc, char **argv);

#endif
