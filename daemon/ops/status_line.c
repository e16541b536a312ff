// SPDX-License-Identifier: Apache-2.0
#include "ops/status_line.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "config/options.h"
#include "log.h"

struct status_line {
	uint64_t start_ns, duration_ns;
	bool exporting;
	struct exporter_stats last;  /* the exporter's counters at the previous update */
	const char *export_result;   /* what they said last: "sent", "retrying", "dropped"; "" before */
	uint64_t export_result_ns;   /* when that was seen */
};

struct status_line *status_line_new(const struct options *opts, uint64_t start_ns)
{
	const char *term = getenv("TERM");
	struct status_line *s;

	if (opts->quiet || !opts->duration_ns || !isatty(STDERR_FILENO) || (term && !strcmp(term, "dumb")))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL; /* a run without its status line: nothing lost */
	s->start_ns = start_ns;
	s->duration_ns = opts->duration_ns;
	s->exporting = opts->export.enabled;
	s->export_result = "";
	return s;
}

/* "0:07", "1:02:03". */
static void format_clock(char *buf, size_t size, uint64_t ns)
{
	uint64_t s = ns / 1000000000ULL;

	if (s >= 3600)
		snprintf(buf, size, "%" PRIu64 ":%02u:%02u", s / 3600, (unsigned)(s / 60 % 60), (unsigned)(s % 60));
	else
		snprintf(buf, size, "%u:%02u", (unsigned)(s / 60), (unsigned)(s % 60));
}

void status_line_format(char *buf, size_t size, uint64_t elapsed_ns, uint64_t total_ns, const struct self_metrics *m,
			const char *export_result, uint64_t export_age_ns)
{
	uint64_t samples = m->aggregate.samples, processes = m->processes.sampled;
	uint64_t dropped = self_metrics_dropped_samples(m);
	char elapsed[32], total[32];
	int n;

	format_clock(elapsed, sizeof(elapsed), elapsed_ns < total_ns ? elapsed_ns : total_ns);
	format_clock(total, sizeof(total), total_ns);
	n = snprintf(buf, size, "otelprofd: %s / %s: %" PRIu64 " %s, %" PRIu64 " %s", elapsed, total, samples,
		     plural(samples, "sample", "samples"), processes, plural(processes, "process", "processes"));
	if (dropped && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, ", %" PRIu64 " dropped", dropped);
	if (export_result && n >= 0 && (size_t)n < size) {
		if (!export_result[0])
			snprintf(buf + n, size - n, "; no export yet");
		else
			snprintf(buf + n, size - n, "; last export: %s %" PRIu64 " s ago", export_result,
				 export_age_ns / (uint64_t)1000000000);
	}
}

/* What the exporter did since the last update, if anything: the worst of it wins. */
static void follow_export(struct status_line *s, const struct exporter_stats *e, uint64_t now_ns)
{
	const struct exporter_stats *o = &s->last;
	const char *result = NULL;

	if (e->dropped_queue_full + e->dropped_retries + e->dropped_permanent >
	    o->dropped_queue_full + o->dropped_retries + o->dropped_permanent)
		result = "dropped";
	else if (e->retries > o->retries)
		result = "retrying";
	else if (e->sent > o->sent)
		result = "sent";
	if (result) {
		s->export_result = result;
		s->export_result_ns = now_ns;
	}
	s->last = *e;
}

void status_line_update(struct status_line *s, const struct self_metrics *m, uint64_t now_ns)
{
	char text[LOG_STATUS_MAX];
	struct winsize ws;

	if (!s)
		return;
	if (s->exporting)
		follow_export(s, &m->export, now_ns);
	status_line_format(text, sizeof(text), now_ns - s->start_ns, s->duration_ns, m,
			   s->exporting ? s->export_result : NULL, now_ns - s->export_result_ns);
	/* One row: a line the terminal wraps would leave its first row behind at the next redraw. */
	if (!ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) && ws.ws_col > 1 && ws.ws_col <= sizeof(text))
		text[ws.ws_col - 1] = 0;
	log_status(text);
}

void status_line_free(struct status_line *s)
{
	if (!s)
		return;
	log_status(NULL);
	free(s);
}
