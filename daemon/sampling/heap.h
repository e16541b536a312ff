/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sampled allocations (--alloc), between the record path and the profiles. An OTELPROF_RECORD_ALLOC
 * (its stack unwound by the record path like an on-CPU sample) goes to the interval's allocations
 * aggregate (alloc_objects, alloc_space) and into the table of live sampled allocations, keyed by
 * process and address; an OTELPROF_RECORD_FREE takes it out again, and a process's exit takes out
 * all of its own. At each interval's end heap_add_inuse() puts every live one into the in-use
 * aggregate (inuse_objects, inuse_space): what the process holds now (or held at its exit, for one
 * that exited in the interval), allocated whenever.
 *
 * Bytes are the library's weights (unbiased estimates); objects are weight / size, the number of
 * allocations of that size the sample stands for. Bounded: at most max_live allocations are kept
 * live; one that finds the table full is counted in the allocations but not in the in-use profile
 * (counted). The object owns its table and borrows the aggregate.
 */
#ifndef OTELPROFD_HEAP_H
#define OTELPROFD_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

struct aggregate;

/* Default bound of the live table: at 512 KiB a sample, 32 GiB of sampled live heap. */
#define HEAP_MAX_LIVE 65536

struct heap_config {
	struct aggregate *allocs; /* borrowed: where the interval's sampled allocations go */
	size_t max_live;          /* live sampled allocations kept (0: HEAP_MAX_LIVE) */
};

struct heap_counters {
	uint64_t allocs;            /* sampled allocations added to the allocations aggregate */
	uint64_t alloc_bytes;       /* their bytes (weights) */
	uint64_t frees;             /* frees of a live sampled allocation */
	uint64_t unknown_frees;     /* frees of an address not in the table: allocated before the probes
				       were attached, or by the parent before a fork, or not kept */
	uint64_t live_full;         /* sampled allocations not kept live: max_live were */
	uint64_t replaced;          /* allocations at an address still live (its free record lost): the
				       older one forgotten */
	uint64_t aggregate_dropped; /* allocations the aggregate refused (its bounds; counted there too) */
	uint64_t exited;            /* live allocations forgotten at their process's exit */
	uint64_t live;              /* live sampled allocations now */
	uint64_t live_bytes;        /* their bytes (weights) */
};

struct heap;

/* NULL when out of memory. */
struct heap *heap_new(const struct heap_config *cfg);
void heap_free(struct heap *h);

/* A sampled allocation: s its sample (unwound), a its fields, at unix time s->time_ns + offset. */
void heap_alloc(struct heap *h, const struct otelprof_sample *s, uint64_t instance, const struct otelprof_alloc *a,
		uint64_t monotonic_to_unix_ns);
/* A sampled pointer was freed. */
void heap_release(struct heap *h, const struct otelprof_free *f);
/* A process exited: its live allocations go after the next heap_add_inuse() (whose in-use profile
 * shows what the process held at its exit). */
void heap_exit(struct heap *h, uint32_t pid, uint64_t start_ns);
/* The same for one program of the process, which exec'd another (instance: the old program's). */
void heap_exit_instance(struct heap *h, uint32_t pid, uint64_t start_ns, uint64_t instance);
/* Every live sampled allocation into inuse (an empty aggregate). 0, or -ENOMEM. */
int heap_add_inuse(struct heap *h, struct aggregate *inuse);

const struct heap_counters *heap_counters(const struct heap *h);

#endif
