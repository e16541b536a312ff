/* Logging for the daemon: one line per event on stderr, prefixed with the program name. */
#ifndef OTELPROFD_LOG_H
#define OTELPROFD_LOG_H

#include <stdarg.h>

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Show text as the status line on the last row of a terminal (the caller knows stderr is one), in
 * place of the previous one; NULL or "" erases it. Log lines print above it. Thread-safe. */
#define LOG_STATUS_MAX 256
void log_status(const char *text);

/* The word that goes with a count in a line a user reads: "1 process", "2 processes". */
#define plural(n, one, many) ((n) == 1 ? (one) : (many))

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
