/*
 * audit: the optional decision log (--audit-log PATH), one JSON object a
 * line, appended and flushed per record so that a crash loses nothing
 * written before it.  Fields: see docs/escalation.md.
 */
#ifndef EXECGATE_SERVER_AUDIT_H
#define EXECGATE_SERVER_AUDIT_H

#include <jansson.h>

struct audit;

/* Opens (creates 0600, appends to; close-on-exec) path, once for the
 * server's life: a symbolic link in its place, a file that is not regular,
 * owned by another user or writable by others is refused.  Returns NULL
 * with *err a malloc'd message naming the path (caller frees). */
struct audit *audit_open(const char *path, char **err);

/* Adds "time" (UTC, RFC 3339 with milliseconds) to record (taken) and
 * writes it as one line.  A NULL log is a no-op.  Failures are logged to
 * stderr once and never stop the server. */
void audit_write(struct audit *a, json_t *record);

/* Closes the log; NULL is a no-op. */
void audit_close(struct audit *a);

#endif
