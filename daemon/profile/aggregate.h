/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-interval aggregation of samples by (process, thread, CPU, stack). Stacks are interned once
 * and shared by every thread that hit them. Everything is bounded: distinct stacks, bytes of stack
 * storage and samples; what does not fit is dropped and counted, never silently lost.
 *
 * The aggregate owns all its memory. Pointers returned by the accessors stay valid until the next
 * aggregate_add(), aggregate_reset() or aggregate_free().
 */
#ifndef OTELPROFD_AGGREGATE_H
#define OTELPROFD_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "records.h" /* the BPF record: struct otelprof_sample */

struct agg_stack {
	uint32_t hash;
	uint16_t kernel_depth;  /* ips[0 .. kernel_depth) are kernel frames, leaf first */
	uint16_t user_depth;    /* then ips[kernel_depth .. +user_depth) user frames, leaf first */
	bool kernel_mode;       /* the sample interrupted kernel code: user ips[0] is a return address */
	bool user_truncated;    /* the user frames were unwound and end before the stack's entry (the
				   copied window or the depth bound ended): writers add a [truncated] root */
	uint64_t ips[];
};

/* 120 bytes, in an array of the interval's entries (host-wide at 20,000 samples a second, 32,768 of
 * them): the 32-bit fields first, then the 64-bit ones, no padding. */
struct agg_entry {
	uint32_t pid, tid, cpu;
	uint32_t stack_id;          /* index for aggregate_stack() */
	uint32_t link;              /* the thread context the samples ran under: aggregate_link(link - 1),
				       0 for none */
	uint32_t ntimestamps;       /* samples: the length of timestamps (and of values) */
	uint32_t capacity;          /* of timestamps */
	uint32_t values_capacity;   /* of values: grown to capacity when timestamps grew */
	uint64_t process_start_ns;  /* with pid, the process's identity (pid reuse) */
	uint64_t process_instance;  /* the process table's instance (which program, after an exec); 0 unknown */
	uint64_t count;             /* samples; equals ntimestamps */
	uint64_t *timestamps;       /* unix time of each sample in ns */
	uint64_t *values;           /* aggregate_add_value(): a value per timestamp (off-CPU ns, already
				       scaled by the sampling); NULL for counted samples */
	uint64_t value_sum;         /* sum of values */
	uint64_t objects_sum;       /* aggregate_add_heap(): the objects the allocations stand for */
	char comm[16];              /* thread name at the last sample */
	char process_comm[16];      /* process name at the last sample */
};

/*
 * A sample's link to a trace (OTEP 4947), as the aggregate keeps it: AGG_LINK_IDS bytes of trace id
 * (16) and span id (8), then its attributes as "key\0value\0" pairs, sorted by key id. At most
 * AGG_LINK_MAX bytes.
 */
#define AGG_LINK_IDS 24
#define AGG_LINK_MAX 4096

struct agg_limits {
	size_t max_entries;      /* distinct (pid, tid, cpu, stack) */
	size_t max_stack_bytes;  /* bytes of interned stacks */
	size_t max_samples;      /* samples per interval */
};

struct agg_counters {
	uint64_t samples;             /* samples kept */
	uint64_t dropped_entries;     /* dropped: max_entries reached */
	uint64_t dropped_stack_bytes; /* dropped: max_stack_bytes reached */
	uint64_t dropped_samples;     /* dropped: max_samples reached */
	uint64_t dropped_nomem;       /* dropped: allocation failed */
	uint64_t malformed;           /* records whose depths were out of range */
	uint64_t dropped_links;       /* samples kept without their link: the link table was full */
	uint64_t dropped_at_build;    /* samples left out of a built profile: its tables were full */
	uint64_t ended_early;         /* intervals ended before their time: over their memory budget */
	uint64_t bytes;               /* aggregate_bytes() at the last aggregate_count_bytes() */
};

struct aggregate;

struct aggregate *aggregate_new(const struct agg_limits *limits);
void aggregate_free(struct aggregate *agg);

/* Add one sample taken at unix time time_unix_ns. 0, or -ENOSPC/-ENOMEM/-EINVAL (counted). */
int aggregate_add(struct aggregate *agg, const struct otelprof_sample *sample, uint64_t time_unix_ns);
/* The same for a sample of one process instance (see process_table.h), kept apart from the others. */
int aggregate_add_instance(struct aggregate *agg, const struct otelprof_sample *sample, uint64_t process_instance,
			   uint64_t time_unix_ns);
/* The same for a sample linked to a trace: link[0 .. len) in the AGG_LINK format (len 0: none). */
int aggregate_add_linked(struct aggregate *agg, const struct otelprof_sample *sample, uint64_t process_instance,
			 uint64_t time_unix_ns, const uint8_t *link, size_t len);
/* The same with a value for this sample (the off-CPU aggregate: nanoseconds away). An aggregate
 * takes either counted samples or valued ones, not both. */
int aggregate_add_value(struct aggregate *agg, const struct otelprof_sample *sample, uint64_t process_instance,
			uint64_t time_unix_ns, uint64_t value);
/* The same for a sampled allocation (--alloc): value its bytes, objects the allocations it stands for
 * (both already scaled by the sampling). */
int aggregate_add_heap(struct aggregate *agg, const struct otelprof_sample *sample, uint64_t process_instance,
		       uint64_t time_unix_ns, uint64_t bytes, uint64_t objects);
/* The last sample added counts times more, at its time (a sample that stands for others: kept 1 in
 * times + 1 over the CPU ceiling). What max_samples has no room for is dropped, counted. */
void aggregate_repeat_last(struct aggregate *agg, uint64_t times);
/* Forget every sample: a new interval starts. Counters are kept; the tables are freed too (the next
 * interval grows its own), so an interval built and let go leaves none of its memory behind. */
void aggregate_reset(struct aggregate *agg);
/* Exchange the intervals of a and b (their samples, stacks and links), each keeping its own
 * counters and limits: the interval ended is set aside in b to be built in slices while a takes
 * the next one (b's, reset, in it). */
void aggregate_swap_interval(struct aggregate *a, struct aggregate *b);

size_t aggregate_entry_count(const struct aggregate *agg);
const struct agg_entry *aggregate_entry(const struct aggregate *agg, size_t i);
const struct agg_stack *aggregate_stack(const struct aggregate *agg, uint32_t stack_id);
const struct agg_counters *aggregate_counters(const struct aggregate *agg);
/* Count samples a profile built from agg left out (profile counters' dropped_table_full), so the
 * totals of the run include them. */
void aggregate_count_dropped_at_build(struct aggregate *agg, uint64_t samples);
/* Links of the interval: ids 0 .. aggregate_link_count() - 1; the bytes and their length. */
size_t aggregate_link_count(const struct aggregate *agg);
const uint8_t *aggregate_link(const struct aggregate *agg, uint32_t id, size_t *len);
/* Bytes the interval holds now (its stacks, entries, timestamps and values by capacity, links), about:
 * what an interval costs in memory, so that an exporting daemon can end it early. */
size_t aggregate_bytes(const struct aggregate *agg);
/* Whether the interval is over budget bytes (aggregate_bytes()); then counted as ended early, the
 * caller ending it. Also records the bytes for the counters' snapshot. */
bool aggregate_over_budget(struct aggregate *agg, size_t budget);
/* Earliest and latest sample time of the interval; false when it is empty. */
bool aggregate_time_range(const struct aggregate *agg, uint64_t *first, uint64_t *last);

#endif
