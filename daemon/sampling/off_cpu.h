/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Off-CPU waits (--off-cpu), between the record path and the off-CPU aggregate. A sampled task that
 * leaves a CPU sends its stacks (OTELPROF_RECORD_OFF_CPU, unwound by the record path like an on-CPU
 * sample) and, when it runs again, the time it was away (OTELPROF_RECORD_OFF_CPU_END). The stack
 * waits here, keyed by thread, until its end arrives; then the wait goes to the aggregate with its
 * duration scaled by the inverse of the sampling probability, so totals stay unbiased.
 *
 * Bounded: at most max_pending stacks wait (one per thread: the kernel's in-flight map holds one per
 * thread too); a stack that finds the table full is dropped and counted. The object owns its
 * pending stacks and borrows the aggregate.
 */
#ifndef OTELPROFD_OFF_CPU_H
#define OTELPROFD_OFF_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "records.h"

struct aggregate;

struct off_cpu_config {
	struct aggregate *agg;  /* borrowed: where waits go (values in ns) */
	uint64_t threshold_ns;  /* waits shorter than this are not reported */
	double probability;     /* of a switch-out being sampled, (0, 1]: a wait counts duration / it */
	size_t max_pending;     /* stacks waiting for their end record */
};

struct off_cpu_counters {
	uint64_t waits;             /* waits added to the aggregate */
	uint64_t wait_ns;           /* their time off CPU, scaled (as reported) */
	uint64_t below_threshold;   /* waits shorter than --off-cpu-threshold, not reported */
	uint64_t pending_full;      /* stacks dropped: max_pending stacks were waiting */
	uint64_t unmatched_ends;    /* end records with no stack (it was dropped or lost) */
	uint64_t aggregate_dropped; /* waits the aggregate refused (its bounds; counted there too) */
	uint64_t pending;           /* stacks waiting now */
	uint64_t unfinished;        /* waits still going at the end of the run, reported up to it */
	uint64_t lost_ends;         /* stacks whose end record was lost (ring buffer full), at the end */
};

struct off_cpu;

/* NULL when out of memory. */
struct off_cpu *off_cpu_new(const struct off_cpu_config *cfg);
void off_cpu_free(struct off_cpu *oc);

/* A switch-out's sample s (already unwound) of the process instance: kept until its end. */
void off_cpu_start(struct off_cpu *oc, const struct otelprof_sample *s, uint64_t instance);
/* Its end: the wait goes to the aggregate at the end's unix time (end_ns + monotonic_to_unix_ns). */
void off_cpu_end(struct off_cpu *oc, const struct otelprof_off_cpu_end *e, uint64_t monotonic_to_unix_ns);
/* The run ends (every record read): the waits still going (waiting(ctx, tid, start_ns) says so) count
 * up to now_ns (CLOCK_MONOTONIC), so a thread blocked across the end is not missing from the profile;
 * the other stacks lost their end record, and are counted. */
void off_cpu_finish(struct off_cpu *oc, uint64_t now_ns, uint64_t monotonic_to_unix_ns,
		    bool (*waiting)(void *ctx, uint32_t tid, uint64_t start_ns), void *ctx);

const struct off_cpu_counters *off_cpu_counters(const struct off_cpu *oc);

/* The BPF side's sampling threshold (sampler_config.off_cpu_sample) for a probability in (0, 1]. */
uint32_t off_cpu_sample_of(double probability);

#endif
