/*
 * record-argv: a stand-in exec wrapper for tests.
 *
 * Appends its whole argv, as one JSON array per line, to the file named by
 * RECORD_ARGV_FILE, then runs the program the way a wrapper that decided
 * "run" would: execv(argv[1], argv + 2), so argv[0] of the program is the
 * one Bash chose.  One write() per record with O_APPEND keeps lines whole
 * when a pipeline's members record at the same time.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
record(int argc, char **argv)
{
    const char *path = getenv("RECORD_ARGV_FILE");
    json_t *list = json_array();
    char *line;
    int fd, ok;

    if (path == NULL || list == NULL)
        return -1;
    for (int i = 0; i < argc; i++)
        json_array_append_new(list, json_string(argv[i]));
    line = json_dumps(list, JSON_COMPACT);
    json_decref(list);
    if (line == NULL)
        return -1;
    size_t len = strlen(line);
    line[len] = '\n'; /* overwrite the NUL; write exactly len+1 bytes */
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    ok = fd >= 0 && write(fd, line, len + 1) == (ssize_t)(len + 1);
    if (fd >= 0)
        close(fd);
    free(line);
    return ok ? 0 : -1;
}

int
main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "record-argv: usage: record-argv FILE ARGV0 [ARG]...\n");
        return 2;
    }
    if (record(argc, argv) < 0) {
        fprintf(stderr, "record-argv: cannot record to $RECORD_ARGV_FILE: %s\n", strerror(errno));
        return 125;
    }
    execv(argv[1], argv + 2);
    fprintf(stderr, "record-argv: %s: %s\n", argv[1], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
