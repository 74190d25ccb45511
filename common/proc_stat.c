#include "common/proc_stat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
proc_stat_parse(const char *text, struct proc_stat *out)
{
    /* after the name: " STATE PPID ..." and starttime 19 fields on */
    const char *p = strrchr(text, ')');
    int ppid;
    if (p == NULL || sscanf(p + 1, " %*c %d", &ppid) != 1 || ppid < 0)
        return -EINVAL;
    for (int field = 0; field < 20 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    unsigned long long start;
    if (p == NULL || sscanf(p + 1, "%llu", &start) != 1)
        return -EINVAL;
    *out = (struct proc_stat){.ppid = ppid, .start = start};
    return 0;
}

int
proc_stat_read(pid_t pid, struct proc_stat *out)
{
    char name[40];
    snprintf(name, sizeof(name), "/proc/%d/stat", (int)pid);
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* the name is at most 64 bytes and the fields up to starttime are
     * numbers: the first kilobyte holds them */
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    int e = errno;
    close(fd);
    if (n < 0)
        return -e;
    buf[n] = '\0';
    return proc_stat_parse(buf, out);
}
