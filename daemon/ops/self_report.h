/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon/ops/: the daemon as a service. Its own metrics and the reports built from them (self_metrics,
 * self_report), the /metrics and /ready server, systemd notification, and the file a run without a
 * collector writes (write_output). May include every stage folder (it reads their counters) and
 * config/; only main.c includes ops/.
 *
 * The daemon's reports on itself: a snapshot of every counter it keeps (struct self_metrics), the
 * readiness judged from it once a second and published with it (--metrics-address), the periodic
 * summary line (--stats-interval), and the counters logged when a run ends. It reads the daemon's
 * parts through struct self_sources and owns none of them.
 */
#ifndef OTELPROFD_SELF_REPORT_H
#define OTELPROFD_SELF_REPORT_H

#include <stdint.h>

#include "ops/self_metrics.h"

struct export_loop;
struct k8s;
struct metrics_server;
struct off_cpu;
struct heap;
struct alloc_probes;
struct options;
struct profile;
struct record_path;
struct sampler;

/* What the reports read: the daemon's parts, borrowed. */
struct cpu_ceiling;

struct self_sources {
	const struct options *opts;      /* the export interval (readiness) and --stats-interval */
	struct sampler *sampler;         /* the BPF-side counters */
	struct aggregate *agg;
	struct symbolizer *sym;
	struct process_table *processes;
	struct record_path *records;     /* malformed records, unwinding, execs not read again */
	struct export_loop *export;      /* NULL without a collector */
	struct k8s *k8s;                 /* NULL without Kubernetes pod metadata */
	struct metrics_server *metrics;  /* NULL without --metrics-address */
	struct trace_table *traces;      /* NULL with --no-trace-context */
	struct off_cpu *off_cpu;         /* NULL without --off-cpu */
	struct jvm_attacher *jvm;        /* NULL with --no-jvm-attach */
	const struct cpu_ceiling *ceiling; /* --max-cpu's state, or NULL */
	const struct memory_limit *memory; /* --memory-limit's state, or NULL */
	struct heap *heap;               /* NULL without --alloc */
	struct alloc_probes *alloc_probes; /* NULL without --alloc */
	const struct loop_turns *turns;  /* the event loop's turns timed, or NULL (none yet) */
	struct mmap_events *mmap_events; /* NULL when the kernel's mmap events could not be opened */
};

/* Every counter the daemon keeps, now, into *m. */
void self_report_collect(const struct self_sources *src, struct self_metrics *m);
/* Once a second: a snapshot into r->now, readiness, the metrics the server publishes, and the
 * periodic log summary. */
void self_report_update(struct self_report *r, const struct self_sources *src, uint64_t now);
/* The counters' one-line summary with rates since the last one, prefixed (every --stats-interval,
 * and at SIGUSR1); m becomes the base of the next. */
void self_report_log_summary(struct self_report *r, const struct self_metrics *m, uint64_t now, const char *prefix);
/* The run's first line: what is profiled, on how many CPUs, at which frequency. */
void self_report_log_start(const struct options *opts, unsigned ncpus);
/* The counters of a run that built p: kept and dropped samples at info level, details at debug. */
void self_report_log_counters(const struct self_sources *src);

#endif
