#define _GNU_SOURCE /* O_PATH, AT_EMPTY_PATH */
/*
 * raw-exec (attack, tests only): starts a program with the raw system call,
 * no libc exec wrapper, no PATH.  The test compiles it -static.
 *
 *   raw-exec execve PATH ARGV0 ARGS...
 *   raw-exec execveat DIR NAME ARGV0 ARGS...   (execveat with a dirfd)
 *   raw-exec emptypath PATH ARGV0 ARGS...      (execveat(fd, "", AT_EMPTY_PATH))
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

int
main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "execve") == 0) {
        syscall(SYS_execve, argv[2], &argv[3], environ);
    } else if (argc >= 5 && strcmp(argv[1], "execveat") == 0) {
        int dir = open(argv[2], O_RDONLY | O_DIRECTORY);
        syscall(SYS_execveat, dir, argv[3], &argv[4], environ, 0);
    } else if (argc >= 4 && strcmp(argv[1], "emptypath") == 0) {
        int fd = open(argv[2], O_PATH);
        syscall(SYS_execveat, fd, "", &argv[3], environ, AT_EMPTY_PATH);
    } else {
        fprintf(stderr, "usage: raw-exec execve|execveat|emptypath ...\n");
        return 2;
    }
    perror("raw-exec");
    return 1;
}
