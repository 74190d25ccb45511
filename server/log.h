/*
 * log: one line per event on stderr, with a level.  stdout belongs to the
 * protocol, so nothing here ever writes there.
 */
#ifndef EXECGATE_SERVER_LOG_H
#define EXECGATE_SERVER_LOG_H

enum log_level {
    LOG_LEVEL_ERROR,
    LOG_LEVEL_WARN,
    LOG_LEVEL_INFO,
    LOG_LEVEL_DEBUG,
};

/* Sets the most verbose level that is printed (default LOG_LEVEL_INFO).
 * Cannot fail. */
void log_set_level(enum log_level level);

/* Parses "error", "warn", "info" or "debug" into *level. Returns 0, or -1
 * for any other text (then *level is unchanged). */
int log_level_parse(const char *text, enum log_level *level);

/* Prints "execgate: LEVEL: message" and a newline to stderr when level is
 * enabled.  Newlines inside the message are escaped so one event stays one
 * line.  Never fails visibly: a failed write to stderr is ignored. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
