// SPDX-License-Identifier: Apache-2.0
#include "log.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static enum log_level current_level = LOG_LEVEL_INFO;
static bool to_journal;
static pthread_once_t journal_once = PTHREAD_ONCE_INIT;
/* The status line on the terminal now (ops/status_line), "" when none: a log line erases it first
 * and draws it again after, so the two never share a row. Guarded by stderr's lock. */
static char status_text[LOG_STATUS_MAX];

void log_set_level(enum log_level level)
{
	current_level = level;
}

enum log_level log_get_level(void)
{
	return current_level;
}

bool log_stderr_is_journal(void)
{
	const char *stream = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	int end = 0;

	if (!stream || sscanf(stream, "%llu:%llu%n", &dev, &ino, &end) != 2 || stream[end])
		return false;
	if (fstat(STDERR_FILENO, &st))
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_detect_journal(void)
{
	to_journal = log_stderr_is_journal();
}

/* Carriage return and erase to the end of the row: the terminal's row is blank again. */
static void erase_status(void)
{
	if (status_text[0])
		fputs("\r\033[K", stderr);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	/* journald reads the priority from the prefix and names the program itself. */
	static const char *const journal_prefix[] = {
		[LOG_LEVEL_ERROR] = "<3>error: ",
		[LOG_LEVEL_WARN] = "<4>warning: ",
		[LOG_LEVEL_INFO] = "<6>",
		[LOG_LEVEL_DEBUG] = "<7>debug: ",
	};
	static const char *const prefix[] = {
		[LOG_LEVEL_ERROR] = "otelprofd: error: ",
		[LOG_LEVEL_WARN] = "otelprofd: warning: ",
		[LOG_LEVEL_INFO] = "otelprofd: ",
		[LOG_LEVEL_DEBUG] = "otelprofd: debug: ",
	};
	va_list ap;

	if (level > current_level)
		return;
	pthread_once(&journal_once, log_detect_journal);
	flockfile(stderr); /* one whole line, also when another thread (the Kubernetes watcher) logs */
	erase_status();
	fputs(to_journal ? journal_prefix[level] : prefix[level], stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fputs(status_text, stderr);
	funlockfile(stderr);
}

void log_status(const char *text)
{
	flockfile(stderr);
	erase_status();
	snprintf(status_text, sizeof(status_text), "%s", text ? text : "");
	fputs(status_text, stderr);
	fflush(stderr);
	funlockfile(stderr);
}

void log_lines(enum log_level level, const char *tag, const char *text)
{
	while (*text) {
		size_t len = strcspn(text, "\n");

		if (len)
			log_msg(level, "%s: %.*s", tag, (int)len, text);
		text += len;
		if (*text)
			text++;
	}
}

/* The error stream: whole lines become log_error() lines, without the "otelprofd: " that writers
 * of plain stderr put first. One static line buffer: the stream is for the main thread's errors. */
static char error_line[1024];
static size_t error_len;

static void error_line_flush(void)
{
	const char *text = error_line;

	error_line[error_len] = 0;
	if (!strncmp(text, "otelprofd: ", 11))
		text += 11;
	if (*text)
		log_error("%s", text);
	error_len = 0;
}

static ssize_t error_stream_write(void *cookie, const char *buf, size_t size)
{
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n' || error_len == sizeof(error_line) - 1)
			error_line_flush();
		if (buf[i] != '\n')
			error_line[error_len++] = buf[i];
	}
	return (ssize_t)size;
}

static int error_stream_close(void *cookie)
{
	if (error_len)
		error_line_flush();
	return 0;
}

FILE *log_error_stream(void)
{
	static FILE *stream;

	pthread_once(&journal_once, log_detect_journal);
	if (!to_journal)
		return stderr;
	if (!stream) {
		stream = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = error_stream_write,
									  .close = error_stream_close });
		if (!stream)
			return stderr;
		setvbuf(stream, NULL, _IOLBF, 0);
	}
	return stream;
}
