/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otelprofd's own metrics: a snapshot of every counter the daemon keeps, rendered in the
 * Prometheus text format (for --metrics-address) or as the one-line log summary. A snapshot is
 * plain data, filled by the main loop; it owns nothing.
 */
#ifndef OTELPROFD_SELF_METRICS_H
#define OTELPROFD_SELF_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/aggregate.h"
#include "export/export_sender.h"
#include "process/k8s.h"
#include "process/process_table.h"
#include "process/trace_table.h"
#include "records.h"
#include "ops/cpu_ceiling.h"
#include "ops/memory_limit.h"
#include "symbolizer.h"
#include "sampling/alloc_probes.h"
#include "sampling/heap.h"
#include "sampling/mmap_events.h"
#include "sampling/off_cpu.h"
#include "jvm_attacher.h"
#include "go_labels.h"
#include "go_process.h"
#include "python_sample.h"
#include "python_walk.h"
#include "sampling/runtime_bpf.h"
#include "sampling/stack_need.h"
#include "sampling/unwind_sample.h"
#include "ops/loop_turns.h"

/* The event loop looks at signals and the deadline at least this often (issue 27). */
#define LOOP_TURN_BOUND_MS 100

struct self_metrics {
	uint64_t bpf[OTELPROF_CNT_MAX];   /* BPF-side counters (enum otelprof_counter) */
	uint64_t malformed_records;       /* ring buffer records user space could not read */
	uint64_t samples_shed;            /* samples dropped over the CPU ceiling (--max-cpu) */
	uint64_t samples_at_exit;         /* samples still unread when the run's last read ran out of time */
	uint64_t samples_put_off;         /* samples put off to the next turn by its open deadline */
	uint64_t samples_stale;           /* ... dropped then: their process had exec'd or gone */
	uint64_t stacks_put_off;          /* off-CPU and allocation stacks put off to a later turn */
	uint64_t closings_held;           /* their end or free records held meanwhile */
	uint64_t ring_reads_out_of_time;  /* ring buffer reads stopped at their time budget */
	struct loop_turns loop_turns;     /* the event loop's turns: the longest (the most time between
					     two looks at signals and the deadline), those over
					     LOOP_TURN_BOUND_MS, how many in each range of time */
	struct cpu_ceiling ceiling;       /* --max-cpu: ceiling, level, last window's CPU */
	struct memory_limit memory;       /* --memory-limit: the limit, checks over it */
	struct agg_counters aggregate;
	struct symbolizer_stats symbolizer;
	struct process_table_counters processes;
	bool export_enabled;
	struct exporter_stats export;
	uint64_t export_dropped_unsent; /* samples in no request: a process over the message size alone, a profile the encoder had no room for */
	struct unwind_sample_counters unwind; /* DWARF unwinding of the samples' stack windows */
	struct stack_need_counters stack_need; /* stack windows sized by need */
	bool k8s_enabled;
	struct k8s_counters k8s;
	uint64_t bpf_load_ns;             /* loading the BPF programs at start (the verifier, mostly) */
	uint64_t bpf_verified_insns;      /* instructions the verifier processed then (0 before 5.16) */
	struct runtime_bpf_stats bpf_runtimes[RUNTIME_BPF_PARTS]; /* the runtimes' BPF parts, loaded later */
	double cpu_seconds;               /* the daemon's own user + system CPU */
	uint64_t rss_bytes;               /* the daemon's resident memory now */
	uint64_t peak_rss_bytes;
	uint64_t heap_in_use_bytes;       /* the C library's allocator: in blocks given out (mapped ones too) */
	uint64_t heap_free_bytes;         /* free blocks it holds in its arenas (resident or not) */
	uint64_t virtual_bytes;           /* the daemon's virtual memory size */
	uint64_t open_fds, max_fds;       /* file descriptors open now, and RLIMIT_NOFILE (soft) */
	double start_time_seconds;        /* when the daemon started, unix seconds */
	bool ready;                       /* sampling works and export (if any) delivers */
	char not_ready_reason[128];
	bool trace_enabled;               /* trace correlation is on (no --no-trace-context) */
	struct trace_table_counters trace;
	uint64_t trace_processes;         /* processes with a process context now */
	bool off_cpu_enabled;             /* --off-cpu: the two below are filled */
	uint64_t off_cpu_bpf[OTELPROF_OFFCPU_CNT_MAX]; /* the sched_switch program's counters */
	struct off_cpu_counters off_cpu;  /* waits joined, scaled and dropped in user space */
	bool alloc_enabled;               /* --alloc: the three below are filled */
	uint64_t alloc_bpf[OTELPROF_ALLOC_CNT_MAX]; /* the USDT programs' counters */
	struct heap_counters heap;        /* sampled allocations kept, freed, dropped in user space */
	uint64_t allocs_stale;            /* sampled allocations put off, their process gone or exec'd then */
	struct alloc_probes_counters alloc_probes; /* the files whose probes were attached */
	struct python_table_counters python_processes; /* CPython processes found (docs/python.md) */
	struct python_sample_counters python; /* Python frames put in stacks */
	enum python_walk_form python_bpf_walk; /* the BPF Python frame walk loaded */
	bool go_labels_loaded;            /* the BPF goroutine label reader is loaded */
	struct go_process_counters go_processes; /* Go processes found (docs/go.md) */
	struct go_labels_counters go_labels;     /* goroutine labels put on samples */
	bool jvm_enabled;                 /* JVMs are asked for perf maps (no --no-jvm-attach) */
	bool mmap_events_enabled;         /* the kernel's mmap events are read: the two below are filled */
	struct mmap_events_counters mmap_events; /* records read, lost (sampling/mmap_events.h) */
	struct mmap_store_counters mmap_store;   /* the processes' histories kept, dropped, looked up */
	struct jvm_attacher_counters jvm; /* what the JVM room did (docs/java.md) */
};

/* What the main loop keeps between ticks to judge readiness and write the periodic summary. */
struct self_report {
	struct self_metrics now;        /* the latest snapshot */
	struct self_metrics at_summary; /* the snapshot of the last summary line */
	uint64_t last_tick_ns, summary_ns;
	uint64_t last_perf_events;      /* the perf event counter at the last tick */
	uint64_t busy_at_last_event;    /* busy CPU time (clock ticks) when it last moved */
	uint64_t last_sent, delivered_ns;            /* when a request was last accepted */
};

/* Series self_metrics_write_prometheus() can write: every one, with every optional part on, fits
 * (checked when self_metrics.c is compiled, and by test-self-metrics). */
#define SELF_METRICS_MAX_SERIES 320

/* CPU time all CPUs spent not idle since boot, in clock ticks (/proc/stat); 0 when unreadable. */
uint64_t self_metrics_busy_cpu_ticks(void);
/* The daemon's own CPU, memory and start time, from /proc/self; with served (a metrics server
 * publishes them), its open file descriptors and the allocator's account too: these two walk the
 * descriptor table and every free list of the heap (0.5 ms a read in a busy run), which only
 * /metrics shows. */
void self_metrics_read_process(struct self_metrics *m, bool served);
/* Every metric in the Prometheus text exposition format (version 0.0.4). */
void self_metrics_write_prometheus(const struct self_metrics *m, FILE *out);
/* The counts both log lines show, from the same counters: every dropped sample, and lookups that
 * found no function (frames not symbolized). */
uint64_t self_metrics_dropped_samples(const struct self_metrics *m);
uint64_t self_metrics_unsymbolized(const struct self_metrics *m);
/* The end-of-run line: kept, dropped (the sum of its parts, shown), frames not symbolized. */
void self_metrics_format_totals(const struct self_metrics *m, char *buf, size_t size);
/* One log line: totals, and rates since prev (NULL for none) over seconds. */
void self_metrics_format_summary(const struct self_metrics *m, const struct self_metrics *prev, double seconds,
				 char *buf, size_t size);

#endif
