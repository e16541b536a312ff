// SPDX-License-Identifier: Apache-2.0
#include "sampling/bpf_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct bpf_log {
	char **lines;         /* ring of max_lines heap strings, NULL where unused */
	unsigned max_lines;
	uint64_t next;        /* lines ever stored since the last clear; next slot is next % max_lines */
	char pending[BPF_LOG_LINE_MAX]; /* a line without its newline yet, NUL-terminated */
	size_t pending_len;
};

struct bpf_log *bpf_log_new(unsigned max_lines)
{
	struct bpf_log *log;

	if (!max_lines)
		return NULL;
	log = calloc(1, sizeof(*log));
	if (!log)
		return NULL;
	log->lines = calloc(max_lines, sizeof(*log->lines));
	if (!log->lines) {
		free(log);
		return NULL;
	}
	log->max_lines = max_lines;
	return log;
}

void bpf_log__clear(struct bpf_log *log)
{
	if (!log)
		return;
	for (unsigned i = 0; i < log->max_lines; i++) {
		free(log->lines[i]);
		log->lines[i] = NULL;
	}
	log->next = 0;
	log->pending_len = 0;
}

void bpf_log_free(struct bpf_log *log)
{
	if (!log)
		return;
	bpf_log__clear(log);
	free(log->lines);
	free(log);
}

/* Appends len bytes to the pending line, cutting what does not fit. */
static void pending_add(struct bpf_log *log, const char *s, size_t len)
{
	size_t room = sizeof(log->pending) - 1 - log->pending_len;

	if (len > room)
		len = room;
	memcpy(log->pending + log->pending_len, s, len);
	log->pending_len += len;
	log->pending[log->pending_len] = 0;
}

static int pending_store(struct bpf_log *log)
{
	size_t len = log->pending_len;
	char *line;

	/* Trailing carriage returns and blanks carry nothing. */
	while (len && (log->pending[len - 1] == '\r' || log->pending[len - 1] == ' ' || log->pending[len - 1] == '\t'))
		len--;
	log->pending_len = 0;
	if (!len)
		return 0;
	line = strndup(log->pending, len);
	if (!line)
		return -ENOMEM;
	free(log->lines[log->next % log->max_lines]);
	log->lines[log->next++ % log->max_lines] = line;
	return 0;
}

int bpf_log__append(struct bpf_log *log, const char *text)
{
	int r = 0;

	while (*text) {
		const char *nl = strchr(text, '\n');

		if (!nl) {
			pending_add(log, text, strlen(text));
			break;
		}
		pending_add(log, text, (size_t)(nl - text));
		if (pending_store(log))
			r = -ENOMEM;
		text = nl + 1;
	}
	return r;
}

unsigned bpf_log__tail(const struct bpf_log *log, const char **lines, unsigned max)
{
	uint64_t kept = log->next < log->max_lines ? log->next : log->max_lines;
	unsigned n = 0, room = max;

	if (log->pending_len && room)
		room--;
	if (kept > room)
		kept = room;
	for (uint64_t i = log->next - kept; i < log->next; i++)
		lines[n++] = log->lines[i % log->max_lines];
	if (log->pending_len && n < max) {
		lines[n++] = log->pending;
	}
	return n;
}

uint64_t bpf_log__dropped(const struct bpf_log *log)
{
	return log->next > log->max_lines ? log->next - log->max_lines : 0;
}
