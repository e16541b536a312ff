// SPDX-License-Identifier: Apache-2.0
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static enum log_level current_level = LOG_LEVEL_INFO;
static bool to_journal;
static pthread_once_t journal_once = PTHREAD_ONCE_INIT;
/* The status line on the terminal now (ops/status_line), "" when none: a log line erases it first
 * and draws it again after, so the two never share a row. Guarded by lock (below). */
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

/* Lines logged once the writer thread runs wait in a queue of at most this many bytes (the lines'
 * text and LOG_QUEUE_LINE_COST each): a line that does not fit is dropped and counted, never
 * waited for. */
#define LOG_QUEUE_BYTES (256 * 1024)
#define LOG_QUEUE_LINE_COST 32
/* At exit the queue is written out while the writer makes progress: it is given up once a write has
 * not returned for this long (stderr a pipe nobody reads). */
#define LOG_DRAIN_STALL_MS 200

struct log_line {
	struct log_line *next;
	size_t len;
	char text[];
};

/* The queue, the status line and the writer's state; lock guards them all. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued = PTHREAD_COND_INITIALIZER;   /* a line or a status for the writer */
static pthread_cond_t written = PTHREAD_COND_INITIALIZER;  /* the writer wrote (drain waits on it) */
static struct log_line *head, *tail;
static size_t queue_bytes, queue_max = LOG_QUEUE_BYTES;
static bool writer_on;       /* the writer thread runs: lines of this process are queued */
static bool writer_busy;     /* it writes lines it took (queue_bytes no longer counts them) */
static pid_t writer_pid;     /* the process whose writer it is (a forked child writes itself) */
static bool status_changed;  /* status_text differs from what the writer drew last */
static uint64_t lines_dropped, dropped_unsaid;
static void (*writer_at_start)(void); /* what the writer runs first */

/* When the writer last made progress: a write to stderr returned, or it took lines to write (atomic:
 * log_drain() reads it while the writer is in a write). */
static uint64_t progress_ns;

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Writes all of buf to stderr, as long as it takes: 0, or -errno when stderr refuses it. */
static int write_all(const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(STDERR_FILENO, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		__atomic_store_n(&progress_ns, monotonic_ns(), __ATOMIC_RELAXED);
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Carriage return and erase to the end of the row: the terminal's row is blank again. */
static void erase_status(const char *drawn)
{
	if (drawn[0])
		write_all("\r\033[K", 4);
}

/* One line (with its newline) written above the status line drawn, which is drawn again after it. */
static void write_line(const char *text, size_t len, const char *drawn)
{
	erase_status(drawn);
	write_all(text, len);
	write_all(drawn, strlen(drawn));
}

static void *writer_main(void *arg)
{
	char drawn[LOG_STATUS_MAX] = "", status[LOG_STATUS_MAX];

	(void)arg;
	if (writer_at_start)
		writer_at_start();
	pthread_mutex_lock(&lock);
	for (;;) {
		struct log_line *lines;
		uint64_t dropped;
		bool redraw;

		while (!head && !status_changed && !dropped_unsaid)
			pthread_cond_wait(&queued, &lock);
		lines = head;
		head = tail = NULL;
		queue_bytes = 0;
		dropped = dropped_unsaid;
		dropped_unsaid = 0;
		redraw = status_changed;
		status_changed = false;
		memcpy(status, status_text, sizeof(status));
		writer_busy = true;
		__atomic_store_n(&progress_ns, monotonic_ns(), __ATOMIC_RELAXED);
		pthread_mutex_unlock(&lock);

		while (lines) {
			struct log_line *next = lines->next;

			write_line(lines->text, lines->len, drawn);
			free(lines);
			lines = next;
		}
		/* Caught up: the lines that did not fit are said where they are missing. */
		if (dropped) {
			char note[128];
			int n = snprintf(note, sizeof(note), "%s%" PRIu64 " log %s dropped (stderr was not read in time)\n",
					 to_journal ? "<4>warning: " : "otelprofd: warning: ", dropped,
					 plural(dropped, "line", "lines"));

			write_line(note, (size_t)n, drawn);
		}
		if (redraw) {
			erase_status(drawn);
			memcpy(drawn, status, sizeof(drawn));
			write_all(drawn, strlen(drawn));
		}

		pthread_mutex_lock(&lock);
		writer_busy = false;
		pthread_cond_broadcast(&written);
	}
	return NULL;
}

/* A forked child (its one thread) writes its lines itself, with a lock that no other thread held. */
static void after_fork_in_child(void)
{
	pthread_mutex_init(&lock, NULL);
	pthread_cond_init(&queued, NULL);
	pthread_cond_init(&written, NULL);
}

int log_start_writer(void (*at_start)(void), size_t max_bytes)
{
	pthread_attr_t attr;
	pthread_t thread;
	int r;

	pthread_once(&journal_once, log_detect_journal);
	pthread_mutex_lock(&lock);
	if (writer_on && writer_pid == getpid()) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	writer_at_start = at_start;
	if (max_bytes)
		queue_max = max_bytes;
	r = -pthread_create(&thread, &attr, writer_main, NULL);
	pthread_attr_destroy(&attr);
	if (!r) {
		static bool at_fork;

		if (!at_fork && !pthread_atfork(NULL, NULL, after_fork_in_child))
			at_fork = true;
		pthread_setname_np(thread, "log-writer");
		writer_on = true;
		writer_pid = getpid();
	}
	pthread_mutex_unlock(&lock);
	return r;
}

void log_drain(void)
{
	struct timespec until;

	pthread_mutex_lock(&lock);
	if (!writer_on || writer_pid != getpid()) {
		pthread_mutex_unlock(&lock);
		return;
	}
	while (head || writer_busy || dropped_unsaid || status_changed) {
		/* A writer in a write that has not returned for that long: stderr is not read (the -d run
		 * whose pipe was never read gives up at once), and the rest is left. */
		if (writer_busy && monotonic_ns() - __atomic_load_n(&progress_ns, __ATOMIC_RELAXED) >=
					   LOG_DRAIN_STALL_MS * 1000000ULL)
			break;
		clock_gettime(CLOCK_REALTIME, &until); /* the condition variable's clock */
		until.tv_nsec += 20 * 1000000L;     /* progress looked at again */
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&written, &lock, &until);
	}
	pthread_mutex_unlock(&lock);
}

uint64_t log_lines_dropped(void)
{
	uint64_t n;

	pthread_mutex_lock(&lock);
	n = lines_dropped;
	pthread_mutex_unlock(&lock);
	return n;
}

/* The line queued for the writer, or written here before it runs (and in a forked child). */
static void emit(const char *text, size_t len)
{
	struct log_line *line;

	pthread_mutex_lock(&lock);
	if (!writer_on || writer_pid != getpid()) {
		write_line(text, len, status_text);
		pthread_mutex_unlock(&lock);
		return;
	}
	if (queue_bytes + len + LOG_QUEUE_LINE_COST > queue_max ||
	    !(line = malloc(sizeof(*line) + len))) {
		lines_dropped++;
		dropped_unsaid++;
		pthread_mutex_unlock(&lock);
		return;
	}
	line->next = NULL;
	line->len = len;
	memcpy(line->text, text, len);
	if (tail)
		tail->next = line;
	else
		head = line;
	tail = line;
	queue_bytes += len + LOG_QUEUE_LINE_COST;
	pthread_cond_signal(&queued);
	pthread_mutex_unlock(&lock);
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
	char small[512], *text = small;
	const char *pre;
	size_t plen;
	va_list ap;
	int n;

	if (level > current_level)
		return;
	pthread_once(&journal_once, log_detect_journal);
	pre = to_journal ? journal_prefix[level] : prefix[level];
	plen = strlen(pre);
	memcpy(small, pre, plen);
	va_start(ap, fmt);
	n = vsnprintf(small + plen, sizeof(small) - plen, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n + 1 >= sizeof(small) - plen) { /* a long line: formatted again in a buffer its size */
		text = malloc(plen + (size_t)n + 2);
		if (!text) {
			text = small;
			n = (int)(sizeof(small) - plen - 2);
		} else {
			memcpy(text, pre, plen);
			va_start(ap, fmt);
			vsnprintf(text + plen, (size_t)n + 1, fmt, ap);
			va_end(ap);
		}
	}
	text[plen + (size_t)n] = '\n';
	emit(text, plen + (size_t)n + 1);
	if (text != small)
		free(text);
}

void log_status(const char *text)
{
	pthread_mutex_lock(&lock);
	if (!writer_on || writer_pid != getpid()) {
		erase_status(status_text);
		snprintf(status_text, sizeof(status_text), "%s", text ? text : "");
		write_all(status_text, strlen(status_text));
	} else {
		snprintf(status_text, sizeof(status_text), "%s", text ? text : "");
		status_changed = true;
		pthread_cond_signal(&queued);
	}
	pthread_mutex_unlock(&lock);
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
