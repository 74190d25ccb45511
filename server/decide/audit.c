#include "server/decide/audit.h"

#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct audit {
    int fd;
    char *path;
    bool failed; /* a write failed: said once */
    bool torn;   /* a part record could not be taken back: start on a fresh line */
};

/* Why the opened log cannot be trusted with the records, or NULL. */
static const char *
unfit(int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return strerror(errno);
    if (!S_ISREG(st.st_mode))
        return "not a regular file";
    if (st.st_uid != geteuid())
        return "owned by another user";
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return "writable by other users (chmod go-w it)";
    return NULL;
}

struct audit *
audit_open(const char *path, char **err)
{
    struct audit *a = calloc(1, sizeof(*a));
    if (!a || !(a->path = strdup(path))) {
        free(a);
        *err = strdup("out of memory");
        return NULL;
    }
    /* a link in the log's place (the sandbox may write where it lies)
     * would send the records elsewhere: only the file itself is opened */
    a->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
    const char *why = a->fd < 0 ? (errno == ELOOP ? "is a symbolic link; give the file's own path"
                                                  : strerror(errno))
                                : unfit(a->fd);
    if (why) {
        if (asprintf(err, "--audit-log: %s: %s", path, why) < 0)
            *err = NULL;
        if (a->fd >= 0)
            close(a->fd);
        free(a->path);
        free(a);
        return NULL;
    }
    return a;
}

static char *
now_text(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char *text = NULL;
    if (asprintf(&text, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000)) < 0)
        return NULL;
    return text;
}

/* O_APPEND and one write per record: records never interleave. */
static ssize_t
write_record(struct audit *a, const char *buf, size_t len)
{
    ssize_t n;
    do {
        n = write(a->fd, buf, len);
    } while (n < 0 && errno == EINTR);
    return n;
}

/* A record written only in part (a full disk, a file size limit) is cut
 * off again, so that the log holds whole lines only; if it cannot be, the
 * next record starts on a line of its own. */
static void
take_back(struct audit *a, size_t written)
{
    struct stat st;
    if (fstat(a->fd, &st) == 0 && (size_t)st.st_size >= written &&
        ftruncate(a->fd, st.st_size - (off_t)written) == 0)
        return;
    a->torn = true;
}

void
audit_write(struct audit *a, json_t *record)
{
    if (!a || !record) {
        json_decref(record);
        return;
    }
    char *t = now_text();
    if (t)
        json_object_set_new(record, "time", json_string(t));
    free(t);
    char *line = json_dumps(record, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(record);
    if (!line) {
        log_warn("audit: out of memory: a record was lost");
        return;
    }
    size_t len = strlen(line);
    line[len] = '\n'; /* the NUL becomes the newline; written by length */
    if (a->torn && write_record(a, "\n", 1) == 1)
        a->torn = false;
    ssize_t n = a->torn ? -1 : write_record(a, line, len + 1);
    if (n > 0 && (size_t)n < len + 1)
        take_back(a, (size_t)n);
    if (n != (ssize_t)(len + 1) && !a->failed) {
        a->failed = true;
        log_error("audit: %s: %s: records are being lost", a->path,
                  n < 0 ? strerror(errno) : "short write (disk full?)");
    }
    free(line);
}

void
audit_close(struct audit *a)
{
    if (!a)
        return;
    close(a->fd);
    free(a->path);
    free(a);
}
