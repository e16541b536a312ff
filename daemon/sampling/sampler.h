/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The on-CPU sampler: loads the BPF programs, opens one cpu-clock perf event per online CPU and
 * hands every ring buffer record to a callback. sampler_open() returns an object that owns the BPF
 * objects, perf event fds and ring buffer; sampler_close() releases them.
 */
#ifndef OTELPROFD_SAMPLER_H
#define OTELPROFD_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "records.h"
#include "sampling/runtime_bpf.h"

struct sampler_config {
	unsigned frequency;     /* Hz per CPU */
	const pid_t *pids;      /* NULL: every process */
	size_t npids;
	bool follow_children;
	bool include_idle;
	unsigned ringbuf_kib;
	const uint64_t *cgroup_ids; /* NULL: every cgroup; else only tasks in or below these cgroups */
	size_t ncgroup_ids;         /* at most OTELPROF_MAX_TARGET_CGROUPS */
	bool track_processes;       /* send exec, fork and exit records */
	unsigned stack_copy;        /* bytes of user stack copied per sample with the user registers
				       (0: none; at most OTELPROF_MAX_STACK_COPY) */
	bool trace_context;         /* read OTEP 4947 thread contexts (processes in the map trace_procs) */
	bool python;                /* walk CPython frame chains (processes in the map trace_procs) */
	bool go_labels;             /* read goroutine labels (processes in the map go_procs) */
	bool off_cpu;               /* load and attach the sched_switch program (off-CPU records) */
	uint32_t off_cpu_sample;    /* switch-outs sampled: probability * 2^32 (UINT32_MAX: all) */
	uint32_t off_cpu_max_inflight; /* bound of the in-flight map (0: OTELPROF_OFF_CPU_INFLIGHT) */
	bool alloc;                 /* load the otel_memory USDT programs (sampler_attach_alloc()) */
};

/* Called for every record; data is valid only during the call. */
typedef void (*sampler_record_fn)(void *ctx, const void *data, size_t size);

struct sampler;

/*
 * Check privileges, load and attach. On failure logs what went wrong and how to fix it, and
 * returns NULL with *err set: -EPERM (privileges), -ENOEXEC (BPF load), or another -errno.
 */
struct sampler *sampler_open(const struct sampler_config *config, sampler_record_fn fn, void *ctx, int *err);
void sampler_close(struct sampler *s);

/*
 * Samples do not wake the reader one by one (a context switch per sample): the fd becomes readable
 * when an exec record arrives or the ring buffer is a quarter full. Call sampler_consume() at least
 * every SAMPLER_DRAIN_MS as well.
 */
#define SAMPLER_DRAIN_MS 200

/* fd to wait on (epoll) for records. */
int sampler_fd(const struct sampler *s);
/*
 * Hand the pending records to the callback for at most SAMPLER_CONSUME_BUDGET_MS (the clock is read
 * after each record, whatever one costs), and at most SAMPLER_CONSUME_BUDGET records: producers
 * that outpace the callback (a storm, a slow symbolization) would otherwise keep one call going for
 * ever, and with it signals, exports and the end of the run. The time budget is what bounds a turn
 * of the loop; the loop that calls this bounds what one record may cost (symbolizer_set_open_deadline()).
 * Records consumed, or -errno.
 */
#define SAMPLER_CONSUME_BUDGET 4096
#define SAMPLER_CONSUME_BUDGET_MS 50
int sampler_consume(struct sampler *s);
/* The same, stopping at deadline_ns (CLOCK_MONOTONIC) if that comes first (0: none); at least one
 * record is handed over, whatever the time. */
int sampler_consume_until(struct sampler *s, uint64_t deadline_ns);
/* The last sampler_consume() stopped at its budget with records left: call it again soon. */
bool sampler_pending(const struct sampler *s);
/* Calls of sampler_consume() that stopped at the budget (records or time), and at the time budget. */
uint64_t sampler_budget_stops(const struct sampler *s);
uint64_t sampler_time_stops(const struct sampler *s);
/* The longest one record's handling took (ns; the callback's time), and that record's kind. */
uint64_t sampler_slowest_record(const struct sampler *s, uint32_t *kind);
/* Sum of the BPF-side per-CPU counters, indexed by enum otelprof_counter. 0 or -errno. */
int sampler_counters(const struct sampler *s, uint64_t counters[OTELPROF_CNT_MAX]);
/* Of them, samples the ring buffer had no room for (OTELPROF_CNT_RINGBUF_FULL): one system call,
 * for a look at every turn of the loop. 0 when it cannot be read. */
uint64_t sampler_ring_full(const struct sampler *s);
/* Tell the BPF program where pid's threads keep their thread context (entry NULL: they do not).
 * 0 or -errno (-E2BIG: the map is full). */
int sampler_set_trace_proc(struct sampler *s, uint32_t pid, const struct otelprof_trace_proc *entry);
/* Tell the BPF program where the CPython frames of (pid, start_ns) are (entry NULL: none). The
 * process's one entry in trace_procs holds both parts; each call keeps the other's. 0 or -errno. */
int sampler_set_python_proc(struct sampler *s, uint32_t pid, uint64_t start_ns, const struct otelprof_python_proc *entry);
/* The same as a python_publish_fn whose ctx is a struct sampler ** (the sampler is opened after the
 * record path that publishes): -ENODEV while it is NULL. */
int sampler_publish_python(void *ctx, uint32_t pid, uint64_t start_ns, const struct otelprof_python_proc *entry);

/* Tell the BPF program that (pid, entry->start_ns) is a Go process whose goroutine labels it reads,
 * with its runtime's offsets (entry NULL: forget pid). 0 or -errno. */
int sampler_set_go_proc(struct sampler *s, uint32_t pid, const struct otelprof_go_proc *entry);
/* The same as a go_publish_fn whose ctx is a struct sampler ** (-ENODEV while it is NULL). */
int sampler_publish_go(void *ctx, uint32_t pid, const struct otelprof_go_proc *entry);

/* Sum of the off-CPU program's per-CPU counters (enum otelprof_off_cpu_counter); zeros without
 * --off-cpu. 0 or -errno. */
int sampler_off_cpu_counters(const struct sampler *s, uint64_t counters[OTELPROF_OFFCPU_CNT_MAX]);
/* --off-cpu: thread tid is still off CPU since start_ns (its in-flight entry is there: the end of a
 * wait whose end record was lost is not). sampler is a struct sampler: off_cpu_finish()'s callback. */
bool sampler_off_cpu_waiting(void *sampler, uint32_t tid, uint64_t start_ns);
/* Files whose otel_memory probes can be attached (--alloc): each costs two uprobe links. */
#define SAMPLER_MAX_ALLOC_FILES 256
/* --alloc: attach the programs to the otel_memory:alloc and :free probes of the ELF file at path, for
 * every process that maps it (now or later). 0, -ENOSPC (SAMPLER_MAX_ALLOC_FILES reached), -ENOENT
 * (no such probes), or another -errno. */
int sampler_attach_alloc(struct sampler *s, const char *path);
/* Sum of the allocation programs' per-CPU counters (enum otelprof_alloc_counter). 0 or -errno. */
int sampler_alloc_counters(const struct sampler *s, uint64_t counters[OTELPROF_ALLOC_CNT_MAX]);
/* Over the CPU ceiling: the on-CPU program keeps 1 sample in every (0 or 1: all of them;
 * OTELPROF_SHED_KEEP_NONE: none), counting the others, and writes the rate into the kept ones' weight
 * (bpf/cpu_shed.bpf.h). A store into the program's mmapped data: no system call. */
void sampler_set_keep_every(struct sampler *s, uint32_t every);
/*
 * ctx: a struct sampler ** (a stack_need_set_fn). Lower the stack top of thread tid to top, what unwinding it needs (sampling/stack_need.h), when
 * the top the BPF program learned is window_end (the end of the whole window just read, whose
 * thread it names); top 0: forget the thread's top. now_ns: CLOCK_MONOTONIC. 0, -ESTALE (the
 * learned top is not window_end), or -errno.
 */
int sampler_set_stack_need(void *ctx, uint32_t tid, uint64_t window_end, uint64_t top, uint64_t now_ns);
/* On-CPU samples the ring buffer carried packed (bpf/packed_sample.bpf.h), and their bytes. */
void sampler_unpack_stats(const struct sampler *s, uint64_t *unpacked, uint64_t *bytes);
/* Number of CPUs sampled. */
unsigned sampler_cpu_count(const struct sampler *s);

/* Processes a runtime publishes while its BPF part loads, kept until it is in place (per runtime). */
#define SAMPLER_PENDING 256

/* What loading the BPF programs cost: most of it is the kernel's verifier. */
struct sampler_load_stats {
	uint64_t load_ns;        /* wall time of the load at start (the verifier runs in this process) */
	uint64_t verified_insns; /* instructions the verifier processed at start, every core program;
				    0 before 5.16 (the runtimes' parts are in runtimes[]) */
	int python_walk;         /* enum python_walk_form loaded or to load ("python_walk.h"); off when
				    the kernel refused it */
	bool go_labels;          /* the goroutine label reader is loaded, or waits for a Go process */
	struct runtime_bpf_stats runtimes[RUNTIME_BPF_PARTS]; /* each runtime's BPF part (runtime_bpf.h) */
	uint64_t pending_dropped; /* processes published while their part loaded, beyond SAMPLER_PENDING:
				     refused to the room (-ENOSPC), which counts them as the map's refusals */
};
struct sampler_load_stats sampler_load_stats(const struct sampler *s);
/* Before the caller drops its capabilities: start the thread that keeps the loading ones for the
 * runtimes' BPF parts still waiting for their first process (runtime_bpf.h); keep_after: the mask
 * it drops to once none waits. 0 or -errno (the parts then load on the caller's thread, which can
 * only do so while it holds the capabilities). */
int sampler_start_loader(struct sampler *s, uint64_t keep_after);

/* Capabilities missing for sampling, as a readable list ("CAP_BPF, CAP_PERFMON"), or "" when none. */
const char *sampler_missing_privileges(void);

#endif
