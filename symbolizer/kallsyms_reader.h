/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading the kernel's symbols as one job that touches nothing but its own fields: from the per-boot
 * cache (kallsyms_cache.h) or /proc/kallsyms whole, saved to the cache and joined with it. Reading
 * kallsyms whole is 120,000 lines the kernel formats, ~50 ms of CPU; a reader runs such a job on a
 * thread of its own, so that the symbolizer's caller (the daemon's loop) goes on with the table it
 * has and takes the new one when it is ready.
 */
#ifndef OTELPROFD_KALLSYMS_READER_H
#define OTELPROFD_KALLSYMS_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "kallsyms.h"

/* What one read did: added to struct symbolizer_stats' fields of the same names. */
struct kallsyms_read_counts {
	uint64_t cache_hits, cache_stale, cache_refused, cache_writes, cache_write_failed, full_reads, joined;
};

struct kallsyms_read {
	/* In. */
	const char *kallsyms_path; /* "/proc/kallsyms" (then /proc/modules bounds modules), or a file */
	const char *cache_path;    /* the per-boot cache file, or NULL */
	bool full;                 /* kallsyms whole, not the cache */
	/* In and out: whether the cache file holds this boot's table for cached_modules_hash. */
	bool cache_known;
	uint64_t cached_modules_hash;
	/* Out. */
	uint64_t modules_hash;     /* /proc/modules' hash at the read */
	struct kallsyms *table;    /* the table read (the job's to give away), or NULL */
	struct kallsyms_read_counts counts;
	uint64_t wall_ns, cpu_ns;  /* the read's time, and the CPU time of the thread that ran it */
};

/* Runs the job on the calling thread. */
void kallsyms_read_run(struct kallsyms_read *job);

/* FNV-1a of a small file (0 when it cannot be read): tells when kernel modules changed. */
uint64_t kallsyms_hash_file(const char *path);

/* A job run on a thread of its own (its creator's capabilities and signal mask). */
struct kallsyms_reader;

/* The job started on its thread; NULL when it could not be (errno set; the job is not run). */
struct kallsyms_reader *kallsyms_reader_start(const struct kallsyms_read *job);
/* Whether the job is done, waiting for it until deadline_ns (CLOCK_MONOTONIC; 0: until it is). */
bool kallsyms_reader_wait(struct kallsyms_reader *r, uint64_t deadline_ns);
/* The job done (kallsyms_reader_wait() true), its table now the caller's; r is freed. */
struct kallsyms_read kallsyms_reader_take(struct kallsyms_reader *r);
/* Waits for the job and frees it with its table. NULL is fine. */
void kallsyms_reader_free(struct kallsyms_reader *r);

#endif
