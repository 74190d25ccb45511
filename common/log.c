#include "common/log.h"

#include "common/macros.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static enum log_level current_level = LOG_LEVEL_INFO;
static enum log_format current_format = LOG_FORMAT_TEXT;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void
log_set_level(enum log_level level)
{
    current_level = level;
}

int
log_level_parse(const char *text, enum log_level *level)
{
    for (size_t i = 0; i < ARRAY_SIZE(level_names); i++) {
        if (strcmp(text, level_names[i]) == 0) {
            *level = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

void
log_set_format(enum log_format format)
{
    current_format = format;
}

int
log_format_parse(const char *text, enum log_format *format)
{
    if (strcmp(text, "text") == 0 || strcmp(text, "json") == 0) {
        *format = text[0] == 't' ? LOG_FORMAT_TEXT : LOG_FORMAT_JSON;
        return 0;
    }
    return -1;
}

/* Now, as 2026-11-23T13:53:12.123Z, into buf (at least 32 bytes). */
static void
now_text(char *buf, size_t size)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, size - n, ".%03ldZ", (long)(tv.tv_usec / 1000));
}

/* One JSON line: the common fields and key: value (borrowed). */
static void
write_json(enum log_level level, const char *key, json_t *value)
{
    char time[40];
    now_text(time, sizeof(time));
    json_t *line = json_pack("{s:s, s:s, s:s, s:O}", "time", time, "level", level_names[level],
                             "logger", "execgate", key, value);
    char *text = line ? json_dumps(line, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    if (text)
        fprintf(stderr, "%s\n", text);
    free(text);
    json_decref(line);
}

bool
log_record_wanted(enum log_level level)
{
    return current_format == LOG_FORMAT_JSON && level <= current_level;
}

void
log_record(enum log_level level, const json_t *data)
{
    if (log_record_wanted(level) && data)
        write_json(level, "data", (json_t *)data);
}

void
log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > current_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    /* One event is one line, whatever the message carries (commands,
     * client-chosen strings). */
    for (char *p = text; *p; p++) {
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    }
    if (current_format == LOG_FORMAT_JSON) {
        /* not UTF-8 (a client's or a command's bytes) is not JSON: then
         * the message goes as text would, lossily */
        json_t *m = json_string(text);
        if (!m)
            m = json_string("(a message that is not UTF-8)");
        write_json(level, "message", m);
        json_decref(m);
    } else {
        char time[40];
        now_text(time, sizeof(time));
        fprintf(stderr, "%s execgate: %s: %s\n", time, level_names[level], text);
    }
    free(text);
}
