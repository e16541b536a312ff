/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon/sampling/: the first stage. Perf events and the BPF programs (sampler, runtime_bpf, bpf_log, privileges),
 * the ring buffer's records and their way to the aggregate (record_path), unwinding a sample's copied
 * stack (unwind_sample). May include process/ and profile/ (the stages a record feeds), the top-level
 * helpers, the symbolizer and bpf/records.h.
 *
 * A ring buffer record's path to the aggregate, in one place: a sample names its process in the
 * process table (which reads its mappings and metadata while it lives), has the symbolizer ready
 * that instance, gets its user stack unwound (unwind_sample.h), has the files behind its frames
 * opened at the process's first sample, and is added to the aggregate; exec, fork and exit records
 * keep the process table and the symbolizer's instances in step, and so does a sample whose exec
 * count is not its process entry's (its exec record was lost, or is still to come). record_path_handle() is the
 * sampler's callback; the loop calls record_path_settle() to read again the mappings of programs
 * just exec'd.
 *
 * The record path borrows the symbolizer, process table and aggregate (the caller owns them and
 * frees them after it), and owns only its counters and the list of programs settling.
 */
#ifndef OTELPROFD_RECORD_PATH_H
#define OTELPROFD_RECORD_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "go_labels.h"
#include "go_process.h"
#include "python_table.h"
#include "python_sample.h"
#include "sampling/stack_need.h"
#include "sampling/unwind_sample.h"

/*
 * A program's mappings are read at its exec record, which wakes the daemon at once: before the
 * dynamic loader mapped the libraries. They are read again this long after, while the process
 * most likely still runs: its samples (drained up to SAMPLER_DRAIN_MS later) may come after it
 * exited, and a 100 ms process would then be unwound without libc. The wakeup at a process's first
 * sample does not replace this: that sample is mostly taken in the loader, before libc is mapped.
 * Measured without the re-read (gzip -9 in a loop, 499 Hz, two CPU hogs): samples reaching main fell
 * from 99.6% to 95.3% (8 MB input), and from 96.9% to 79.3% (1 MB input, 20 ms processes).
 */
#define EXEC_SETTLE_MS 10

struct aggregate;
struct jvm_attacher;
struct heap;
struct off_cpu;
struct process_table;
struct symbolizer;
struct trace_table;

struct record_path_config {
	struct symbolizer *sym;          /* borrowed: frames, instances and their mappings */
	struct process_table *processes; /* borrowed: the processes the records name */
	struct aggregate *agg;           /* borrowed: where samples go */
	struct trace_table *traces;      /* borrowed: process and thread contexts (OTEP 4719, 4947); NULL:
					    samples are not linked to traces */
	struct off_cpu *off_cpu;         /* borrowed: where off-CPU stacks and ends go; NULL: none
					    expected (such records count as malformed) */
	struct heap *heap;               /* borrowed: where sampled allocations and frees go (--alloc);
					    NULL: none expected (such records count as malformed) */
	/* CPython frames (runtimes/python/python_table.h): how the record path's table of Python processes
	 * reaches the BPF map; NULL: samples keep native frames only. */
	python_publish_fn python_publish;
	void *python_publish_ctx;
	/* Goroutine labels (runtimes/go): how a Go process's entry reaches the BPF map; NULL: none. */
	go_publish_fn go_publish;
	void *go_publish_ctx;
	/* Stack windows sized by need (sampling/stack_need.h): how a thread's top reaches the BPF map;
	 * NULL: windows run to the stack's end. */
	stack_need_set_fn stack_need_set;
	void *stack_need_ctx;
};

struct record_path_counters {
	uint64_t malformed_records;      /* records too short for their kind, or of no known kind */
	uint64_t settle_dropped;         /* execs not read again: the settling list was full */
	uint64_t samples_shed;           /* samples and off-CPU stacks dropped as read: the daemon was
					    over its CPU ceiling (record_path_set_shedding()) */
	uint64_t samples_at_exit;        /* samples and off-CPU stacks dropped as read at the end of the
					    run, past the last read's time (record_path_drop_remaining()) */
	uint64_t samples_put_off;        /* samples put off to the next turn (the open deadline) */
	uint64_t samples_replayed;       /* ... and handled then */
	uint64_t replay_stale;           /* ... dropped then: their process had exec'd or gone */
	uint64_t allocs_read;            /* allocation records read from the ring buffer (--alloc) */
	uint64_t allocs_stale;           /* allocation records among them (--alloc: lost from the profiles);
					    one whose process exited but is still known is added, not dropped */
	uint64_t replay_full;            /* samples not put off: the queue was full (added as they were) */
	uint64_t stacks_put_off;         /* off-CPU and allocation stacks put off to the next turn (the
					    open deadline, or behind an older one of their thread or address) */
	uint64_t closings_held;          /* their end or free records held meanwhile, handled after them */
	struct unwind_sample_counters unwind; /* DWARF unwinding of the samples' stack windows */
	struct stack_need_counters stack_need; /* stack windows sized by need */
	struct python_sample_counters python; /* Python frames put in the samples' stacks */
	struct go_process_counters go_processes; /* Go processes found, and published */
	struct go_labels_counters go_labels;     /* goroutine labels put on the samples */
};

struct record_path;

/* NULL when out of memory. */
struct record_path *record_path_new(const struct record_path_config *cfg);
void record_path_free(struct record_path *rp);

/* Add to a record's bpf_ktime_get_ns() to get unix time; set before the first record is read. */
void record_path_set_time_offset(struct record_path *rp, uint64_t monotonic_to_unix_ns);

/* Over the CPU ceiling (ops/cpu_ceiling.h): drop samples and off-CPU stacks as they are read
 * (drop_samples: the second's share is spent; counted in samples_shed), process records still
 * followed; the kernel sheds the rest of both itself. opens_deferred: module opens are put off on
 * purpose, so samples that meet the open deadline are not put off for the next turn. A sample the
 * kernel kept 1 in N (its weight N) is added N times, at its time; an off-CPU wait so kept counts
 * its time N times (off_cpu.h). */
void record_path_set_shedding(struct record_path *rp, bool drop_samples, bool opens_deferred);
/*
 * A sample whose handling met the turn's open deadline (symbolizer_set_open_deadline(): a module it
 * needed was not opened) is put off: copied (record_replay.h), and handled again by this call at the
 * next turn, before the ring buffer is read. last: the run ends, so each is handled as it comes.
 * Those left at deadline_ns (CLOCK_MONOTONIC; 0: none) wait for the next call, in their order.
 */
void record_path_replay(struct record_path *rp, bool last, uint64_t deadline_ns);
/* The run ends and its last read is out of time: drop the samples still to be read (counted in
 * samples_at_exit) so that the ring buffer empties at once. */
void record_path_drop_remaining(struct record_path *rp);

/* The sampler's callback (sampler_record_fn): ctx is the record path. */
void record_path_handle(void *ctx, const void *data, size_t size);

/* HotSpot JVMs (runtimes/jvm/jvm_attacher.h, borrowed): told of the processes sampled, to make the
 * JVMs among them write their perf maps; NULL (the default): not asked (--no-jvm-attach). */
void record_path_set_jvm(struct record_path *rp, struct jvm_attacher *jvm);

/* Read again the mappings of the programs exec'd at least EXEC_SETTLE_MS before now (CLOCK_MONOTONIC). */
void record_path_settle(struct record_path *rp, uint64_t now);
/* Whether programs wait to be read again: the loop then wakes every EXEC_SETTLE_MS. */
bool record_path_settling(const struct record_path *rp);

const struct record_path_counters *record_path_counters(const struct record_path *rp);
/* The table of Python processes' counters, or NULL (no Python frames). */
const struct python_table_counters *record_path_python_counters(const struct record_path *rp);
/* The samples of (pid, instance) are built: drop what the record path keeps for it. */
void record_path_forget(struct record_path *rp, uint32_t pid, uint64_t instance);

#endif
