/* SPDX-License-Identifier: Apache-2.0 */
/* Logging for the daemon: one line per event on stderr, prefixed with the program name; when stderr
 * is the journal, with the line's sd-daemon priority prefix ("<4>") instead.
 *
 * Once log_start_writer() has run, a line logged never waits for stderr: it goes to a bounded queue
 * that a thread of its own writes out (stderr a full pipe or a stalled journal stops that thread,
 * not the caller). A line that does not fit is dropped and counted (log_lines_dropped()), and a
 * "N log lines dropped" line is written where they are missing once the writer catches up. Before
 * that, and in a forked child, lines are written at once. */
#ifndef OTELPROFD_LOG_H
#define OTELPROFD_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Starts the writer thread (once), which runs at_start (NULL: nothing) first: the thread has its
 * creator's capabilities and signal mask. Its queue holds max_bytes (0: 256 KiB, LOG_QUEUE_BYTES).
 * 0 or -errno (lines are then still written at once). */
int log_start_writer(void (*at_start)(void), size_t max_bytes);
/* Waits until the queued lines are written, or until a write has not returned for 200 ms (stderr not
 * read: those lines are left; at once when it has been so long already). For the end of the run;
 * does nothing without the writer. */
void log_drain(void);
/* Lines dropped so far because the queue was full (self-metric otelprofd_log_lines_dropped_total). */
uint64_t log_lines_dropped(void);
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
