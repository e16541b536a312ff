/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The status line of a run watched on a terminal: one row under the log, redrawn once a second with
 * the time elapsed of the duration, the samples kept, the processes sampled, the samples dropped (if
 * any) and, when exporting, the last export's result; erased before the run's last words. Only when
 * stderr is a terminal, not with -q and not for an endless run: nothing of it reaches a pipe, a file
 * or the journal. Drawn through log_status() (log.h), so log lines from any thread print above it.
 */
#ifndef OTELPROFD_STATUS_LINE_H
#define OTELPROFD_STATUS_LINE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/self_metrics.h"

struct options;
struct status_line;

/* A status line for a run started at start_ns (CLOCK_MONOTONIC), or NULL when none is shown. Free
 * with status_line_free(). */
struct status_line *status_line_new(const struct options *opts, uint64_t start_ns);
/* Redraw it from the latest snapshot m. Accepts NULL. */
void status_line_update(struct status_line *s, const struct self_metrics *m, uint64_t now_ns);
/* Erase it from the terminal and free s. Accepts NULL. */
void status_line_free(struct status_line *s);

/* The line's text into buf: "0:07 / 0:30: 1386 samples, 12 processes, 3 dropped; last export: sent
 * 2 s ago". export_result is NULL without a collector, "" before the first result. */
void status_line_format(char *buf, size_t size, uint64_t elapsed_ns, uint64_t total_ns, const struct self_metrics *m,
			const char *export_result, uint64_t export_age_ns);

#endif
