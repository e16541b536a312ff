/* SPDX-License-Identifier: Apache-2.0 */
/* Logging for the daemon: one line per event on stderr, prefixed with the program name; when stderr
 * is the journal, with the line's sd-daemon priority prefix ("<4>") instead. */
#ifndef OTELPROFD_LOG_H
#define OTELPROFD_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Logs each line of text (split at newlines, empty lines skipped) as "<tag>: line". */
void log_lines(enum log_level level, const char *tag, const char *text);

/* Whether stderr is the journal: $JOURNAL_STREAM ("DEVICE:INODE", set by systemd for a service
 * whose output goes to journald) names the file stderr is. Read once at the first line logged;
 * log_detect_journal() reads it again (after stderr or the environment changed). */
bool log_stderr_is_journal(void);
void log_detect_journal(void);
/* A stream for code that writes its error messages to a FILE (option parsing): stderr itself, or
 * when stderr is the journal a stream whose lines are logged as errors. Never to be closed. */
FILE *log_error_stream(void);

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
