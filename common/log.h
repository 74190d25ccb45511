/*
 * log: one line per event on stderr, with its time (UTC, RFC 3339 with
 * milliseconds) and level, as text or as JSON objects a machine can read
 * (--log-format).  stdout belongs to the protocol, so nothing here ever
 * writes there.
 */
#ifndef EXECGATE_COMMON_LOG_H
#define EXECGATE_COMMON_LOG_H

#include <jansson.h>
#include <stdbool.h>

enum log_level {
    LOG_LEVEL_ERROR,
    LOG_LEVEL_WARN,
    LOG_LEVEL_INFO,
    LOG_LEVEL_DEBUG,
};

enum log_format {
    LOG_FORMAT_TEXT, /* TIME execgate: LEVEL: message */
    LOG_FORMAT_JSON, /* {"time","level","logger":"execgate","message"} or {...,"data"} */
};

/* Sets the format (default text).  Cannot fail. */
void log_set_format(enum log_format format);

/* Parses "text" or "json".  Returns 0, or -1 (then *format is unchanged). */
int log_format_parse(const char *text, enum log_format *format);

/*
 * A structured record (data, an object, borrowed): with the JSON format
 * one line {"time","level","logger","data"} when level is enabled; with
 * text nothing (the text lines say the same in words).  The exec records
 * of the client's log (client_log.h) go here too.  Cannot fail.
 */
void log_record(enum log_level level, const json_t *data);

/* Whether a log_record at level would be written now. */
bool log_record_wanted(enum log_level level);

/* Sets the most verbose level that is printed (default LOG_LEVEL_INFO).
 * Cannot fail. */
void log_set_level(enum log_level level);

/* Parses "error", "warn", "info" or "debug" into *level. Returns 0, or -1
 * for any other text (then *level is unchanged). */
int log_level_parse(const char *text, enum log_level *level);

/* Prints "TIME execgate: LEVEL: message" (or its JSON object) and a
 * newline to stderr when level is enabled.  Newlines inside the message
 * are escaped so one event stays one line.  Never fails visibly: a failed
 * write to stderr is ignored. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
