#include "audit.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct audit {
    int fd;
    char *path;
    bool failed; /* a write failed: said once */
};

struct audit *
audit_open(const char *path, char **err)
{
    struct audit *a = calloc(1, sizeof(*a));
    if (!a || !(a->path = strdup(path))) {
        free(a);
        *err = strdup("out of memory");
        return NULL;
    }
    a->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (a->fd < 0) {
        if (asprintf(err, "--audit-log: %s: %s", path, strerror(errno)) < 0)
            *err = NULL;
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
    /* O_APPEND and one write per record: records never interleave */
    ssize_t n;
    do {
        n = write(a->fd, line, len + 1);
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)(len + 1) && !a->failed) {
        a->failed = true;
        log_error("audit: %s: %s: records are being lost", a->path,
                  n < 0 ? strerror(errno) : "short write");
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
