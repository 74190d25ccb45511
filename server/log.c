#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum log_level current_level = LOG_LEVEL_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void
log_set_level(enum log_level level)
{
    current_level = level;
}

int
log_level_parse(const char *text, enum log_level *level)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcmp(text, level_names[i]) == 0) {
            *level = (enum log_level)i;
            return 0;
        }
    }
    return -1;
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
    fprintf(stderr, "execgate: %s: %s\n", level_names[level], text);
    free(text);
}
