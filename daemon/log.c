#include "log.h"

#include <stdio.h>

static enum log_level current_level = LOG_LEVEL_INFO;
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

/* Carriage return and erase to the end of the row: the terminal's row is blank again. */
static void erase_status(void)
{
	if (status_text[0])
		fputs("\r\033[K", stderr);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const prefix[] = {
		[LOG_LEVEL_ERROR] = "error: ",
		[LOG_LEVEL_WARN] = "warning: ",
		[LOG_LEVEL_INFO] = "",
		[LOG_LEVEL_DEBUG] = "debug: ",
	};
	va_list ap;

	if (level > current_level)
		return;
	flockfile(stderr); /* one whole line, also when another thread (the Kubernetes watcher) logs */
	erase_status();
	fprintf(stderr, "otelprofd: %s", prefix[level]);
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
