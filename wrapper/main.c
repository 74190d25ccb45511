/*
 * execgate-wrapper FILE ARGV0 ARGV1...
 *
 * A shell that names this in EXEC_WRAPPER runs it in place of every program
 * it starts. It asks the server (over the datagram socket named by
 * CODEX_ESCALATE_SOCKET) what to do with FILE and then execs it in place
 * (Run), hands its fds to the server and waits for the program the server
 * runs (Escalate), or refuses (Deny); the asking is esc_client's, which the
 * patched Bash also runs without this exec. Every path that is not an
 * explicit decision exits non-zero: the default is to refuse. See
 * docs/escalation-protocol.md.
 */
#include "execgate-config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/esc_client.h"
#include "proto/esc_env.h"

#define PROG ESC_CLIENT_PROG

/* Shell used for a Run of a script without "#!" (see run_in_place). */
#define FALLBACK_SCRIPT_SHELL "/bin/sh"

extern char **environ;

static void
usage(FILE *out)
{
    fprintf(out, "usage: " PROG " FILE ARGV0 [ARGV1...]\n"
                 "       " PROG " --help | --version\n"
                 "Asks the execgate server (socket fd in CODEX_ESCALATE_SOCKET) whether FILE\n"
                 "may run, then runs it in place, has the server run it, or refuses.\n");
}

/* Bash's test for "binary": an ELF header, or a NUL before the first
 * newline of the first 80 bytes. */
static int
looks_binary(const char *file)
{
    char sample[80];
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, sample, sizeof sample);
    close(fd);
    static const char elf_magic[4] = {0x7f, 'E', 'L', 'F'};
    if (n >= 4 && memcmp(sample, elf_magic, sizeof elf_magic) == 0)
        return 1;
    for (ssize_t i = 0; i < n; i++) {
        if (sample[i] == '\n')
            return 0;
        if (sample[i] == '\0')
            return 1;
    }
    return 0;
}

/* A script without "#!" runs the way Bash runs one: with a shell. The
 * patched Bash (EXECGATE_BASH, set by the server) keeps its execs wrapped;
 * without it, /bin/sh as execvp(3) would. $0 becomes FILE. */
static noreturn void
run_script(const char *file, char **args, int nargs)
{
    const char *sh = getenv(ESC_ENV_BASH);
    if (sh == NULL || sh[0] != '/')
        sh = FALLBACK_SCRIPT_SHELL;
    char **v = calloc((size_t)nargs + 2, sizeof *v);
    if (v == NULL)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, ENOMEM, "%s", file);
    v[0] = (char *)sh;
    v[1] = (char *)file;
    for (int i = 1; i < nargs; i++)
        v[i + 1] = args[i];
    execv(sh, v);
    int err = errno;
    free(v);
    esc_client_die(err == ENOENT ? ESC_CLIENT_EXIT_NOT_FOUND : ESC_CLIENT_EXIT_FAILED, err,
                   "%s: cannot run the script with %s", file, sh);
}

/* Run: become the program, as Bash's own execve would have. */
static noreturn void
run_in_place(const char *file, char **args, int nargs)
{
    execv(file, args);
    int err = errno;
    struct stat st;
    int exists = stat(file, &st) == 0;
    if (err == ENOEXEC && !looks_binary(file))
        run_script(file, args, nargs);
    if (err == ENOEXEC)
        esc_client_die(ESC_CLIENT_EXIT_FAILED, err, "%s: cannot execute binary file", file);
    if (err == ENOENT && exists)
        esc_client_die(ESC_CLIENT_EXIT_NOT_FOUND, 0, "%s: cannot execute: required file not found",
                       file);
    if (err == ENOENT)
        esc_client_die(ESC_CLIENT_EXIT_NOT_FOUND, err, "%s", file);
    if (exists && S_ISDIR(st.st_mode))
        esc_client_die(ESC_CLIENT_EXIT_FAILED, EISDIR, "%s", file);
    esc_client_die(ESC_CLIENT_EXIT_FAILED, err, "%s", file);
}

int
main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf(PROG " %s\n", EXECGATE_VERSION);
        return 0;
    }
    if (argc < 3) {
        usage(stderr);
        return 2;
    }
    const char *file = argv[1];
    char **args = argv + 2;
    int nargs = argc - 2;

    esc_client_decide(file, args, environ);
    run_in_place(file, args, nargs);
}
