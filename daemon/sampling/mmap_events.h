/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel's own record of processes' executable mappings, as perf keeps it: per CPU a software
 * perf event (PERF_COUNT_SW_DUMMY) that counts nothing and reports every fork, exec (COMM with
 * PERF_RECORD_MISC_COMM_EXEC), exit and executable mmap (MMAP2: device, inode, path) the moment
 * it happens, each stamped with CLOCK_MONOTONIC as the BPF samples are. Read at the start of each
 * turn of the loop, before the BPF ring buffer, into a store (sampling/mmap_store.h): a process
 * that exited before its first sample was handled still has the mappings it had.
 *
 * Each CPU's ring is MMAP_EVENTS_RING_PAGES pages (bounded; what does not fit is lost, counted, and
 * makes the processes alive then answer nothing). The rings' fd (mmap_events_fd()) becomes readable
 * when one is half full: the loop wakes to read them. Opened before capabilities are dropped
 * (CAP_PERFMON or CAP_SYS_ADMIN, as the sampler's events).
 */
#ifndef OTELPROFD_MMAP_EVENTS_H
#define OTELPROFD_MMAP_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampling/mmap_store.h"
#include "symbolizer.h"

/* Data pages of each CPU's ring (a power of two), 128 KiB with 4 KiB pages: about 1,200 records, the
 * life of 150 short processes (a fork, an exec, an exit, four or five mappings each). A host with many
 * CPUs gets smaller rings (each CPU sees fewer of the host's events): all of them together stay within
 * MMAP_EVENTS_RINGS_BYTES, and no ring is smaller than MMAP_EVENTS_RING_MIN_PAGES. */
#define MMAP_EVENTS_RING_PAGES 32
#define MMAP_EVENTS_RING_MIN_PAGES 4
#define MMAP_EVENTS_RINGS_BYTES (8u << 20)

struct mmap_events_config {
	const pid_t *pids;    /* --pid: only these and (follow_children) their descendants; NULL: all */
	size_t npids;
	bool follow_children;
	bool test_lost;       /* tests: every read counts as a loss (a gap in every history) */
};

struct mmap_events_counters {
	uint64_t records;  /* records read from the rings */
	uint64_t lost;     /* records the kernel lost (a ring full) */
	uint64_t malformed; /* records too short for their type, skipped */
	uint64_t filtered; /* processes not followed (--pid), their events not kept */
	unsigned cpus;     /* rings open */
};

struct mmap_events;

/* NULL with *err (-errno) when no CPU's event can be opened. mmap_events_free() frees (NULL allowed). */
struct mmap_events *mmap_events_open(const struct mmap_events_config *cfg, int *err);
void mmap_events_free(struct mmap_events *ev);
/* An epoll fd readable when a ring is half full; owned by ev. */
int mmap_events_fd(const struct mmap_events *ev);
/* Every ring's records into the store, in time order across CPUs; histories past their keep go. */
void mmap_events_read(struct mmap_events *ev, uint64_t now);
/* When the last read began (CLOCK_MONOTONIC): records before then are in the store. */
uint64_t mmap_events_read_at(const struct mmap_events *ev);
/* The store the records are read into (owned by ev). */
struct mmap_store *mmap_events_store(struct mmap_events *ev);
/* The symbolizer's history (symbolizer_history_fn, ctx the mmap_events): an instance not found is
 * looked up again after the rings are read anew when its record is newer than the last read; a
 * live process's (whole asked) after the rings are read anew, so its answer is up to now. */
int mmap_events_history(void *ctx, pid_t pid, uint64_t start_ns, uint64_t time_ns, struct symbolizer_mapping *out,
			size_t max, size_t *n, pid_t *root_pid, enum symbolizer_history_whole *whole);
void mmap_events_counters(const struct mmap_events *ev, struct mmap_events_counters *out);

#endif
