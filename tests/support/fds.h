/*
 * fds: what the tests ask about their own fds, to show that code under
 * test leaves none behind and passes the right ones.
 */
#ifndef EXECGATE_TESTS_FDS_H
#define EXECGATE_TESTS_FDS_H

#include <stdbool.h>

/* How many fds this process has open (from /proc/self/fd), or -1 when it
 * cannot be read. */
int fds_open_count(void);

/* Whether fds a and b are open on the same file (device and inode). */
bool fds_same_file(int a, int b);

#endif
