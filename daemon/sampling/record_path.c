// SPDX-License-Identifier: Apache-2.0
#include "sampling/record_path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "process/process_table.h"
#include "process/trace_table.h"
#include "proc_maps_share.h"
#include "sampling/heap.h"
#include "sampling/off_cpu.h"
#include "profile/aggregate.h"
#include "sampling/record_replay.h"
#include "sampling/stack_park.h"
#include "records.h"
#include "runtime.h"
#include "symbolizer.h"

#define MAX_SETTLING 1024
#define MAX_ROOMS 8

struct settling {
	uint32_t pid;
	uint64_t start_ns, instance, exec_ns;
};

struct record_path {
	struct symbolizer *sym;          /* borrowed (struct record_path_config) */
	struct process_table *processes; /* borrowed */
	struct aggregate *agg;           /* borrowed */
	struct trace_table *traces;      /* borrowed, or NULL */
	struct jvm_attacher *jvm;        /* borrowed, or NULL (the JVM room reads it through its address) */
	uint8_t link[AGG_LINK_MAX];      /* the link of the sample being added */
	struct off_cpu *off_cpu;         /* borrowed, may be NULL */
	struct heap *heap;               /* borrowed, may be NULL */
	uint64_t monotonic_to_unix_ns; /* add to bpf_ktime_get_ns() to get unix time */
	struct record_path_counters counters;
	/* The runtimes' rooms (runtimes/runtime.h), in runtime_rooms' order: room NULL when off. */
	const struct runtime_ops *ops[MAX_ROOMS];
	void *rooms[MAX_ROOMS];          /* owned */
	size_t nrooms;
	struct otelprof_sample unwound;    /* the sample being added, with its user stack unwound */
	bool drop_samples;               /* over the CPU ceiling: samples shed as read */
	bool drop_at_exit;               /* the run's last read is out of time: samples dropped as read */
	bool replay_off;                 /* opens are deferred on purpose (CPU ceiling): no replays */
	struct record_replay *replay;    /* owned: samples put off by the turn's open deadline */
	unsigned tries;                  /* times the record being handled was handled before */
	struct stack_park park;          /* off-CPU and allocation stacks put off, their closings held */
	struct stack_need need;          /* thread tops lowered to what unwinding needs */
	struct settling settling[MAX_SETTLING]; /* programs exec'd whose mappings are read again soon */
	size_t nsettling;
};

/* Every room of runtime_rooms, off where the daemon gave it no hook. 0 or -ENOMEM. */
static int open_rooms(struct record_path *rp, const struct record_path_config *cfg)
{
	const struct runtime_env env = {
		.sym = cfg->sym,
		.python_publish = cfg->python_publish, .python_publish_ctx = cfg->python_publish_ctx,
		.python = &rp->counters.python,
		.go_publish = cfg->go_publish, .go_publish_ctx = cfg->go_publish_ctx,
		.go_processes = &rp->counters.go_processes, .go_labels = &rp->counters.go_labels,
		.jvm = &rp->jvm,
	};

	for (size_t i = 0; i < runtime_room_count && i < MAX_ROOMS; i++) {
		int r = runtime_rooms[i]->open(&env, &rp->rooms[i]);

		rp->ops[i] = runtime_rooms[i];
		rp->nrooms = i + 1;
		if (r)
			return r;
	}
	return 0;
}

struct record_path *record_path_new(const struct record_path_config *cfg)
{
	struct record_path *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	rp->sym = cfg->sym;
	rp->processes = cfg->processes;
	rp->agg = cfg->agg;
	rp->traces = cfg->traces;
	rp->off_cpu = cfg->off_cpu;
	rp->need = (struct stack_need){
		.set = cfg->stack_need_set, .ctx = cfg->stack_need_ctx, .counters = &rp->counters.stack_need,
	};
	rp->heap = cfg->heap;
	rp->replay = record_replay_new();
	if (!rp->replay || open_rooms(rp, cfg)) {
		record_path_free(rp);
		return NULL;
	}
	return rp;
}

void record_path_free(struct record_path *rp)
{
	if (rp) {
		for (size_t i = 0; i < rp->nrooms; i++)
			if (rp->rooms[i] && rp->ops[i]->close)
				rp->ops[i]->close(rp->rooms[i]);
		record_replay_free(rp->replay);
	}
	free(rp);
}

/* Call hook of every room that is on and has it. */
#define EACH_ROOM(rp, hook, ...)                                                   \
	do {                                                                       \
		for (size_t i_ = 0; i_ < (rp)->nrooms; i_++)                       \
			if ((rp)->rooms[i_] && (rp)->ops[i_]->hook)                \
				(rp)->ops[i_]->hook((rp)->rooms[i_], __VA_ARGS__); \
	} while (0)

void record_path_forget(struct record_path *rp, uint32_t pid, uint64_t instance)
{
	EACH_ROOM(rp, forget, pid, instance);
}

const struct python_table_counters *record_path_python_counters(const struct record_path *rp)
{
	for (size_t i = 0; i < rp->nrooms; i++)
		if (rp->ops[i] == &python_runtime)
			return python_room_counters(rp->rooms[i]);
	return NULL;
}

void record_path_set_time_offset(struct record_path *rp, uint64_t monotonic_to_unix_ns)
{
	rp->monotonic_to_unix_ns = monotonic_to_unix_ns;
}

/*
 * A new program, a new instance: the old program's mappings stay (retired) for its samples already
 * taken. Read the new one's now (the executable and the loader are mapped), which comes before its
 * samples in the ring buffer, so a process that lives for a moment keeps at least those; a sample
 * outside them reads the mappings again. filename NULL: no exec record, a sample showed the exec;
 * its record may still follow (the sample was taken during the execve), and then completes that
 * instance: its mappings are read anew. time_ns: the record's (a process gone, or not yet reaped,
 * gets the mappings its program had then from the kernel's mmap events).
 */
static void on_exec(struct record_path *rp, uint32_t pid, uint64_t start_ns, uint64_t time_ns, const char *comm,
		    const char *filename, uint64_t cgroup_id, uint32_t exec_id, bool maybe_in_execve)
{
	const struct process_info *pi = process_table_find(rp->processes, pid, start_ns);
	uint64_t before = pi ? pi->instance : 0;

	if (filename)
		process_table_exec(rp->processes, pid, start_ns, comm, filename, cgroup_id, exec_id);
	else
		process_table_exec_unrecorded(rp->processes, pid, start_ns, comm, cgroup_id, exec_id, maybe_in_execve);
	pi = process_table_find(rp->processes, pid, start_ns);
	/* The old program's heap went with it (--alloc). */
	if (rp->heap && before && before != PROCESS_INSTANCE_UNKNOWN && (!pi || pi->instance != before))
		heap_exit_instance(rp->heap, pid, start_ns, before);
	if (pi && pi->instance == before) {
		/* The record of a program its sample (taken during the execve) made an instance of: the
		 * mappings read then were the execve's half-built ones (and what identifies the program
		 * for a later read may have changed since): read them anew. Its runtime (the Python
		 * layout the room checked) stays attached: the room keeps its entry and would not attach
		 * it again, and every Python frame of it would go unread. */
		symbolizer_forget_mappings(rp->sym, (pid_t)pid, pi->instance);
	} else {
		symbolizer_retire_process(rp->sym, (pid_t)pid);
		if (rp->traces)
			trace_table_retire(rp->traces, pid);
		EACH_ROOM(rp, retire, pid);
	}
	if (!pi)
		return;
	symbolizer_prepare_instance_at(rp->sym, (pid_t)pid, pi->instance, start_ns, time_ns);
	if (rp->nsettling < MAX_SETTLING)
		rp->settling[rp->nsettling++] = (struct settling){
			.pid = pid, .start_ns = start_ns, .instance = pi->instance, .exec_ns = clock_ns(CLOCK_MONOTONIC),
		};
	else
		rp->counters.settle_dropped++;
}

static void on_process_event(struct record_path *rp, const struct otelprof_proc_event *e)
{
	char comm[OTELPROF_COMM_LEN + 1], filename[OTELPROF_PATH_LEN + 1];

	snprintf(comm, sizeof(comm), "%.*s", OTELPROF_COMM_LEN, e->comm);
	snprintf(filename, sizeof(filename), "%.*s", OTELPROF_PATH_LEN, e->filename);
	switch (e->hdr.kind) {
	case OTELPROF_RECORD_EXEC:
		on_exec(rp, e->pid, e->start_ns, e->time_ns, comm, filename, e->cgroup_id, e->exec_id, false);
		break;
	case OTELPROF_RECORD_FORK:
		/* What the symbolizer holds for this pid belongs to an older process (its exit record
		 * may have been lost). */
		symbolizer_retire_process(rp->sym, (pid_t)e->pid);
		process_table_fork(rp->processes, e->pid, e->start_ns, e->parent_pid, e->parent_start_ns, comm,
				   e->cgroup_id, e->exec_id);
		break;
	case OTELPROF_RECORD_EXIT:
		symbolizer_retire_process(rp->sym, (pid_t)e->pid);
		if (rp->traces)
			trace_table_retire(rp->traces, e->pid);
		EACH_ROOM(rp, retire, e->pid);
		process_table_exit(rp->processes, e->pid, e->start_ns);
		if (rp->heap)
			heap_exit(rp->heap, e->pid, e->start_ns);
		break;
	}
}

/*
 * The process table's entry of a sample's process. A sample whose exec count is not its entry's ran
 * a program whose exec record was lost (ring buffer full): it becomes a new instance, read from
 * /proc now, so that it is never described as the program its entry was (its parent's, inherited at
 * fork). One comparison per sample; /proc is read once per such program.
 */
static const struct process_info *sample_process(struct record_path *rp, const struct otelprof_sample *s)
{
	const struct process_info *pi = process_table_find(rp->processes, s->pid, s->process_start_ns);
	char comm[OTELPROF_COMM_LEN + 1];

	snprintf(comm, sizeof(comm), "%.*s", OTELPROF_COMM_LEN, s->process_comm);
	if (pi && pi->exec_id != s->exec_id)
		on_exec(rp, s->pid, s->process_start_ns, s->time_ns, comm, NULL, s->cgroup_id, s->exec_id,
			s->flags & OTELPROF_SAMPLE_KERNEL_MODE);
	return process_table_sample(rp->processes, s->pid, s->process_start_ns, comm, s->cgroup_id, s->exec_id);
}

/*
 * Open the files behind a new process's frames now, while /proc/PID/map_files still reaches them:
 * the symbolizer caches them by device and inode, so a process that exits long before the profile
 * is built is still symbolized (and its siblings running the same files cost nothing more).
 */
static void open_modules(struct record_path *rp, const struct otelprof_sample *s, uint64_t instance)
{
	struct sym_frame frame;

	for (unsigned i = 0; i < s->user_depth && i < OTELPROF_MAX_STACK_DEPTH; i++)
		symbolizer_user_instance(rp->sym, (pid_t)s->pid, instance, s->user_ips[i], &frame);
}

/*
 * The instance of a record's process pi (NULL: none known), its mappings read while it lives (gone
 * already: those it had at the record's time, from the kernel's mmap events), and that read's text
 * shared with the checks that follow (proc_maps_share.h).
 */
static uint64_t prepare_process(struct record_path *rp, const struct otelprof_sample *s, const struct process_info *pi)
{
	uint64_t instance = pi ? pi->instance : PROCESS_INSTANCE_UNKNOWN;

	if (pi)
		symbolizer_prepare_instance_at(rp->sym, (pid_t)s->pid, instance, s->process_start_ns, s->time_ns);
	proc_maps_share_begin((pid_t)s->pid, pi ? instance : 0, s->map_count);
	return instance;
}

/* The sample's link to a trace (OTEP 4947), in rp->link: its length, 0 for none. */
static size_t sample_link(struct record_path *rp, const struct otelprof_sample *s, const struct process_info *pi)
{
	const struct otelprof_trace_ctx *tc;
	uint64_t now;

	if (!rp->traces || !pi)
		return 0;
	now = clock_ns(CLOCK_MONOTONIC); /* one clock read per sample, for both calls */
	/* From a process's first sample: that sample wakes the daemon at once, so a context published
	 * at start links the spans that follow within milliseconds. Waiting for the second sample left
	 * up to a drain period (200 ms) of them unlinked. A storm of new processes costs at most the
	 * checks' budget (64 a second, trace_table.h), not a maps read per process. */
	trace_table_check(rp->traces, s->pid, s->process_start_ns, pi->instance, s->map_count, false, now);
	if (!(s->flags & OTELPROF_SAMPLE_TRACE_CTX) || s->hdr.size < sizeof(*s) + sizeof(*tc))
		return 0;
	tc = (const void *)((const uint8_t *)s + s->hdr.size - sizeof(*tc));
	return trace_table_link(rp->traces, s->pid, s->process_start_ns, tc, rp->link, now);
}

void record_path_set_jvm(struct record_path *rp, struct jvm_attacher *jvm)
{
	rp->jvm = jvm;
}

/* Every room's process check of a record (runtime.h), first thing: a room whose BPF part reads
 * the process must have published its entry before the samples that follow are taken. */
static void check_rooms(struct record_path *rp, const struct runtime_sample *rs)
{
	EACH_ROOM(rp, check, rs);
}

/* The sample's user stack unwound (unwind_sample(), counted in counters), and its thread's windows
 * sized by what it took. */
static const struct otelprof_sample *unwind_record(struct record_path *rp, uint64_t instance, const void *data,
						   size_t size, struct unwind_sample_counters *counters)
{
	const struct otelprof_sample *s = data;
	struct unwind_sample_extent extent;

	s = unwind_sample(rp->sym, (pid_t)s->pid, instance, data, size, &rp->unwound, counters, &extent);
	/* A window ended at its process's start of stack looks cut by need (not at a page), but the
	 * thread has no top to set, refresh or withdraw. */
	if (!(s->flags & OTELPROF_SAMPLE_WINDOW_AT_START))
		stack_need_update(&rp->need, s->tid, s->time_ns, &extent);
	return s;
}

/*
 * The stack of a record that is not an on-CPU sample (a switch-out, an allocation): its process
 * found (or read) in the process table, its interpreter looked for, its user stack unwound, the files
 * behind its frames opened at the process's first sample. *instance: the process's instance. The
 * interpreter is looked for at a process's first few records of any kind: a Python process that
 * switched out before its first on-CPU sample (most do) was never looked at, and had no Python frames.
 */
static const struct otelprof_sample *stack_of(struct record_path *rp, const void *data, size_t size,
					      uint64_t *instance)
{
	const struct otelprof_sample *s = data;
	const struct process_info *pi = sample_process(rp, s);

	*instance = prepare_process(rp, s, pi);
	check_rooms(rp, &(struct runtime_sample){ .s = s, .data = data, .size = size, .pi = pi, .instance = *instance });
	s = unwind_record(rp, *instance, data, size, &rp->counters.unwind);
	if (pi && pi->samples == 1)
		open_modules(rp, s, *instance);
	return s;
}

/* A module this record needed was not opened (the turn's open deadline; always, with behind: an
 * older record it must follow is put off): keep a copy for the next turn rather than handle it
 * unwound without that module's rules, counted in *counter. False: handle it as it is. */
static bool put_off(struct record_path *rp, const void *data, size_t size, uint64_t deferred_before, bool behind,
		    uint64_t *counter)
{
	/* Past the run's last replay nothing is put off: it would never be handled. */
	if (rp->drop_at_exit || rp->tries + 1 >= RECORD_REPLAY_TRIES ||
	    (!behind && (rp->replay_off || symbolizer_stats(rp->sym)->module_opens_deferred == deferred_before)))
		return false;
	if (record_replay_push(rp->replay, data, size, rp->tries + 1)) {
		rp->counters.replay_full++;
		return false;
	}
	(*counter)++;
	return true;
}

/* A closing record (an off-CPU end, a free) whose stack is put off: held to follow it (true). */
static bool hold_closing(struct record_path *rp, const void *data)
{
	struct stack_park_key key = stack_park_key_of(data);
	union stack_closing c;

	memcpy(&c, data, sizeof(c));
	if (!stack_park_close(&rp->park, &key, &c))
		return false;
	rp->counters.closings_held++;
	return true;
}

/* A stack put off is handled again (or dropped): its entry out; true with *held when its closing
 * record came meanwhile. */
static bool unpark(struct record_path *rp, const void *data, union stack_closing *held)
{
	struct stack_park_key key = stack_park_key_of(data);

	return rp->tries && stack_park_take(&rp->park, &key, held);
}

/*
 * The stack of an off-CPU or allocation record, unwound, or NULL when it is put off to a later turn
 * (an on-CPU sample's way, rather than the loop waiting for a module still opening): when a module
 * its unwinding needed was not opened, or behind an older stack of its thread (off-CPU) or address
 * put off. *closed: its closing record came while it was put off, and is in *held.
 */
static const struct otelprof_sample *stack_or_park(struct record_path *rp, const void *data, size_t size,
						   uint64_t *instance, union stack_closing *held, bool *closed)
{
	struct stack_park_key key = stack_park_key_of(data);
	uint64_t deferred = symbolizer_stats(rp->sym)->module_opens_deferred;
	bool full = rp->park.count == RECORD_REPLAY_MAX, behind;
	const struct otelprof_sample *s;

	*closed = unpark(rp, data, held);
	behind = !rp->tries && stack_park_has(&rp->park, &key, key.kind == OTELPROF_RECORD_OFF_CPU);
	if (!full && behind && put_off(rp, data, size, deferred, true, &rp->counters.stacks_put_off)) {
		stack_park_add(&rp->park, &key, NULL);
		return NULL;
	}
	s = stack_of(rp, data, size, instance);
	if (!full && put_off(rp, data, size, deferred, false, &rp->counters.stacks_put_off)) {
		stack_park_add(&rp->park, &key, *closed ? held : NULL);
		return NULL;
	}
	return s;
}

/*
 * A task left a CPU (--off-cpu): its stack takes an on-CPU sample's path (process table, the look
 * for an interpreter, unwinding, modules opened) but waits in off_cpu for the time it was away.
 */
static void on_off_cpu(struct record_path *rp, const void *data, size_t size)
{
	const struct otelprof_record_header *hdr = data;
	const struct otelprof_sample *s = data;
	union stack_closing held;
	uint64_t instance;
	bool closed;

	if (!rp->off_cpu || (hdr->kind == OTELPROF_RECORD_OFF_CPU && hdr->size < sizeof(*s)) ||
	    (hdr->kind == OTELPROF_RECORD_OFF_CPU_END && hdr->size < sizeof(struct otelprof_off_cpu_end))) {
		rp->counters.malformed_records++;
		return;
	}
	if (hdr->kind == OTELPROF_RECORD_OFF_CPU_END) {
		if (!hold_closing(rp, data))
			off_cpu_end(rp->off_cpu, data, rp->monotonic_to_unix_ns);
		return;
	}
	s = stack_or_park(rp, data, size, &instance, &held, &closed);
	if (!s)
		return;
	off_cpu_start(rp->off_cpu, s, instance);
	if (closed)
		off_cpu_end(rp->off_cpu, &held.end, rp->monotonic_to_unix_ns);
}

/*
 * A sampled allocation (--alloc): its stack takes an on-CPU sample's path (process table, unwinding,
 * modules opened) and goes to the heap with the allocation's fields that end the record; a free
 * goes to the heap alone.
 */
static void on_heap(struct record_path *rp, const void *data, size_t size)
{
	const struct otelprof_record_header *hdr = data;
	const struct otelprof_sample *s = data;
	struct otelprof_alloc a;
	union stack_closing held;
	uint64_t instance;
	bool closed;

	if (!rp->heap || (hdr->kind == OTELPROF_RECORD_ALLOC && hdr->size < sizeof(*s) + sizeof(a)) ||
	    (hdr->kind == OTELPROF_RECORD_FREE && hdr->size < sizeof(struct otelprof_free))) {
		rp->counters.malformed_records++;
		return;
	}
	if (hdr->kind == OTELPROF_RECORD_FREE) {
		if (!hold_closing(rp, data))
			heap_release(rp->heap, data);
		return;
	}
	if (!rp->tries)
		rp->counters.allocs_read++;
	memcpy(&a, (const uint8_t *)data + hdr->size - sizeof(a), sizeof(a));
	s = stack_or_park(rp, data, size, &instance, &held, &closed);
	if (!s)
		return;
	heap_alloc(rp->heap, s, instance, &a, rp->monotonic_to_unix_ns);
	if (closed)
		heap_release(rp->heap, &held.free);
}

static void handle(struct record_path *rp, const void *data, size_t size)
{
	const struct otelprof_record_header *hdr = data;
	const struct otelprof_sample *s = data;
	const struct process_info *pi;
	struct runtime_sample rs;
	uint64_t instance, deferred = symbolizer_stats(rp->sym)->module_opens_deferred;
	size_t link_len;

	if (size < sizeof(*hdr) || hdr->size > size) {
		rp->counters.malformed_records++;
		return;
	}
	if ((rp->drop_samples || rp->drop_at_exit) &&
	    (hdr->kind == OTELPROF_RECORD_SAMPLE || hdr->kind == OTELPROF_RECORD_OFF_CPU)) {
		union stack_closing held;

		if (rp->drop_at_exit)
			rp->counters.samples_at_exit++;
		else
			rp->counters.samples_shed++;
		if (hdr->kind == OTELPROF_RECORD_OFF_CPU)
			unpark(rp, data, &held); /* put off before: its end, if held, goes with it */
		return;
	}
	switch (hdr->kind) {
	case OTELPROF_RECORD_SAMPLE:
		if (hdr->size < sizeof(*s)) {
			rp->counters.malformed_records++;
			return;
		}
		/* Read the mappings and metadata while the process is alive: it may exit before the output
		 * is written. */
		pi = s->pid ? sample_process(rp, s) : NULL;
		instance = prepare_process(rp, s, pi);
		rs = (struct runtime_sample){
			.s = s, .data = data, .size = size, .pi = pi, .instance = instance, .on_cpu = true,
		};
		check_rooms(rp, &rs);
		link_len = sample_link(rp, s, pi);
		for (size_t i = 0; i < rp->nrooms; i++)
			if (rp->rooms[i] && rp->ops[i]->attributes)
				link_len = rp->ops[i]->attributes(rp->rooms[i], &rs, rp->link, link_len, sizeof(rp->link));
		s = unwind_record(rp, instance, data, size, &rp->counters.unwind);
		if (pi && pi->samples == 1)
			open_modules(rp, s, instance);
		if (put_off(rp, data, size, deferred, false, &rp->counters.samples_put_off))
			return;
		for (size_t i = 0; i < rp->nrooms; i++)
			if (rp->rooms[i] && rp->ops[i]->frames)
				s = rp->ops[i]->frames(rp->rooms[i], &rs, s);
		if (!aggregate_add_linked(rp->agg, s, instance, s->time_ns + rp->monotonic_to_unix_ns, rp->link, link_len) &&
		    s->weight > 1)
			aggregate_repeat_last(rp->agg, s->weight - 1); /* kept 1 in weight over the CPU ceiling */
		break;
	case OTELPROF_RECORD_EXEC:
	case OTELPROF_RECORD_FORK:
	case OTELPROF_RECORD_EXIT:
		if (hdr->size < sizeof(struct otelprof_proc_event)) {
			rp->counters.malformed_records++;
			return;
		}
		on_process_event(rp, data);
		break;
	case OTELPROF_RECORD_OFF_CPU:
	case OTELPROF_RECORD_OFF_CPU_END:
		on_off_cpu(rp, data, size);
		break;
	case OTELPROF_RECORD_ALLOC:
	case OTELPROF_RECORD_FREE:
		on_heap(rp, data, size);
		break;
	default:
		rp->counters.malformed_records++;
		break;
	}
}

/* One record; the rooms' and the trace context's checks of a sample read its process's maps as the
 * symbolizer last read them, when the process still has as many mappings (proc_maps_share.h). */
void record_path_handle(void *ctx, const void *data, size_t size)
{
	handle(ctx, data, size);
	proc_maps_share_end();
}

void record_path_settle(struct record_path *rp, uint64_t now)
{
	size_t kept = 0;

	for (size_t i = 0; i < rp->nsettling; i++) {
		const struct settling *e = &rp->settling[i];
		const struct process_info *pi;

		if (now - e->exec_ns < EXEC_SETTLE_MS * 1000000ULL) {
			rp->settling[kept++] = *e;
			continue;
		}
		pi = process_table_find(rp->processes, e->pid, e->start_ns);
		if (pi && pi->instance == e->instance && !pi->exited)
			symbolizer_refresh_instance(rp->sym, (pid_t)e->pid, e->instance, e->start_ns);
	}
	rp->nsettling = kept;
}

void record_path_set_shedding(struct record_path *rp, bool drop_samples, bool opens_deferred)
{
	rp->drop_samples = drop_samples;
	rp->replay_off = opens_deferred;
}

void record_path_drop_remaining(struct record_path *rp)
{
	rp->drop_at_exit = true;
}

void record_path_replay(struct record_path *rp, bool last, uint64_t deadline_ns)
{
	size_t n = record_replay_count(rp->replay);
	void *data;
	size_t size;
	unsigned tries;

	/* The copies queued before this call, each once: those put off again wait for the next; past
	 * the deadline, the rest wait too. */
	while (n-- && (!deadline_ns || clock_ns(CLOCK_MONOTONIC) < deadline_ns) &&
	       record_replay_pop(rp->replay, &data, &size, &tries)) {
		const struct otelprof_sample *s = data;
		const struct process_info *pi = process_table_find(rp->processes, s->pid, s->process_start_ns);

		/* Its process exec'd or was swept since: handled now, it could be taken for what runs now. */
		if (!pi || pi->exec_id != s->exec_id) {
			union stack_closing held;

			rp->counters.replay_stale++;
			if (s->hdr.kind == OTELPROF_RECORD_ALLOC)
				rp->counters.allocs_stale++;
			rp->tries = 1;
			if (s->hdr.kind == OTELPROF_RECORD_OFF_CPU || s->hdr.kind == OTELPROF_RECORD_ALLOC)
				unpark(rp, data, &held);
			rp->tries = 0;
		} else {
			bool gone = pi->exited;

			rp->counters.samples_replayed++;
			rp->tries = last ? RECORD_REPLAY_TRIES : tries;
			record_path_handle(rp, data, size);
			rp->tries = 0;
			/* An allocation of a process that exited since: in the allocations, and in its in-use
			 * profile until the interval's end like the others it held at its exit (its exit was
			 * handled before it: without this it would be live for ever). */
			if (gone && rp->heap && s->hdr.kind == OTELPROF_RECORD_ALLOC)
				heap_exit(rp->heap, s->pid, s->process_start_ns);
		}
		free(data);
	}
}

bool record_path_settling(const struct record_path *rp)
{
	return rp->nsettling;
}

const struct record_path_counters *record_path_counters(const struct record_path *rp)
{
	return &rp->counters;
}
