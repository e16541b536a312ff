// SPDX-License-Identifier: Apache-2.0
/*
 * otelprofd: samples on-CPU stacks with eBPF, symbolizes them on the host and writes a profile,
 * or, with a collector configured, sends one every export interval until SIGTERM.
 * This file is the program's frame: flags, setup, signals, the event loop and shutdown; a record's
 * way to the aggregate is sampling/record_path.c, what a profile says about a process
 * process/describe.c, the file a run writes ops/write_output.c, the reports on itself ops/self_report.c,
 * the loop's descriptors ops/loop_fds.c and what each signal does ops/signals.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config/destination.h"
#include "config/options.h"
#include "debuginfod_lib.h"
#include "diff/diff.h"
#include "export/export_loop.h"
#include "jvm_attacher.h"
#include "jvm_broker.h"
#include "log.h"
#include "ops/cpu_ceiling.h"
#include "ops/loop_fds.h"
#include "ops/loop_turns.h"
#include "ops/memory_limit.h"
#include "ops/memory_tune.h"
#include "ops/metrics_server.h"
#include "ops/run_env.h"
#include "ops/self_report.h"
#include "ops/service_notify.h"
#include "ops/signals.h"
#include "ops/status_line.h"
#include "ops/write_output.h"
#include "process/cgroup.h"
#include "process/cgroup_filter.h"
#include "process/describe.h"
#include "process/host_view.h"
#include "process/k8s.h"
#include "process/metadata.h"
#include "process/process_table.h"
#include "process/trace_table.h"
#include "profile/aggregate.h"
#include "profile/profile.h"
#include "sampling/alloc_probes.h"
#include "sampling/command.h"
#include "sampling/heap.h"
#include "sampling/mmap_events.h"
#include "sampling/privileges.h"
#include "sampling/off_cpu.h"
#include "sampling/record_path.h"
#include "sampling/sampler.h"
#include "symbolizer.h"

/* Bytes of interned stacks per interval. */
#define MAX_STACK_BYTES (32u << 20)
/* A JVM is asked for its perf map again at most this often while it is sampled. */
#define JVM_PERF_MAP_REFRESH_MS 30000
/* A turn of the loop (ops/self_metrics.h: LOOP_TURN_BOUND_MS between two looks at signals) handles
 * records (those put off before, then the ring buffer's) until TURN_READ_BUDGET_MS after it began;
 * they wait for module opens until TURN_OPEN_BUDGET_MS after it began, never longer, whatever a file
 * costs: an open runs in the symbolizer's opener thread and goes on past that, its module taken at a
 * later lookup. Records that needed it are put off to the next turn (record_path_replay()); other
 * records go on without it. What is left of the bound is the margin for the record being handled
 * then and the turn's other work (timers, the once-a-second tick). */
#define TURN_OPEN_BUDGET_MS 40
#define TURN_READ_BUDGET_MS 50
/* An interval's profile is built in slices, each in a turn of its own while the records go on into
 * the next interval (profile_builder_step()): a slice stops TURN_READ_BUDGET_MS after its turn
 * began; the build waits for opens until TURN_OPEN_BUDGET_MS into its first turn, not after (its
 * frames keep mapping and build id meanwhile, and a later profile opens them). */
/* The last profile, after SIGTERM or the end of -d, waits for module opens this long (the run ends
 * within 1 s: an open still running then is left to its thread, symbolizer_free()) ... */
#define FINAL_OPEN_BUDGET_MS 400
/* ... and never past this long after the loop ended (the last reads took the rest). */
#define EXIT_OPEN_BUDGET_MS 450
/* The records waiting at the end of a run are read for this long; the rest are dropped, counted. */
#define FINAL_DRAIN_MS 200

struct daemon {
	const struct options *opts;
	struct aggregate *agg;
	struct symbolizer *sym;
	struct sampler *sampler;
	struct process_table *processes;
	struct metadata *metadata;
	struct k8s *k8s; /* pod names from the Kubernetes API, or NULL */
	struct record_path *records;  /* ring buffer -> process table -> symbolizer -> aggregate */
	uint64_t monotonic_to_unix_ns; /* add to bpf_ktime_get_ns() to get unix time */
	uint64_t start_unix_ns, start_monotonic_ns;
	struct export_loop *export;        /* NULL without a collector */
	uint64_t interval_start_monotonic_ns; /* start of the interval being aggregated */
	struct metrics_server *metrics;    /* --metrics-address, or NULL */
	struct self_report report;         /* self-metrics, readiness and the periodic summary */
	bool kallsyms_hidden_logged;       /* the kptr_restrict warning is said once */
	struct trace_table *traces;        /* process and thread contexts, or NULL (--no-trace-context) */
	struct jvm_attacher *jvm;          /* asks sampled JVMs for perf maps, or NULL (--no-jvm-attach) */
	struct jvm_broker *jvm_broker;     /* attaches as each JVM's user, or NULL (then as the daemon's) */
	struct aggregate *off_agg;         /* --off-cpu: the interval's waits, or NULL */
	struct off_cpu *off_cpu;           /* --off-cpu: stacks waiting for their end, or NULL */
	struct status_line *status;        /* on a terminal, during the run: its progress, or NULL */
	struct cpu_ceiling ceiling;        /* --max-cpu: what to shed now */
	struct memory_limit memory;        /* --memory-limit: the symbol cache's share of it */
	bool memory_over_logged;           /* the limit that cannot be kept is said once */
	enum cpu_shed_level shed;          /* the level the last turn ran at */
	struct aggregate *alloc_agg;       /* --alloc: the interval's sampled allocations, or NULL */
	struct aggregate *inuse_agg;       /* --alloc: the live ones at the interval's end, or NULL */
	struct heap *heap;                 /* --alloc: live sampled allocations, or NULL */
	struct alloc_probes *alloc_probes; /* --alloc: the files whose probes are attached, or NULL */
	struct command command;            /* -- PROGRAM: the program started, or pid 0 */
	uint64_t turn_start_ns;            /* CLOCK_MONOTONIC start of the loop's turn; 0 outside the loop */
	bool consumed;                     /* the turn read the ring buffer already */
	bool export_due;                   /* the interval ended: its profile is built from the next turn */
	bool build_turn;                   /* this turn builds (and does not read): while a profile is
					      due or in the making, turns build and read by turns */
	struct profile_builder *builder;   /* exporting: the ended interval's profile in the making, or NULL */
	struct aggregate *built_agg, *built_off_agg, *built_alloc_agg; /* exporting: the ended interval's
					      samples, set aside for the builder (or NULL: not those) */
	struct process_describer describer; /* what a profile says of its processes */
	uint64_t loop_end_ns;              /* when the loop ended (the run's exit began), or 0 */
	uint64_t build_open_deadline_ns;   /* the profile in the making waits for opens until then: its
					      first turn's TURN_OPEN_BUDGET_MS, not each slice's */
	struct loop_turns turns;           /* the loop's turns, timed (the longest, those too long) */
	struct mmap_events *mmap_events;   /* the kernel's fork, exec, exit and mmap events, or NULL */
	uint64_t test_turn_delay_ms;       /* tests: OTELPROFD_TEST_TURN_DELAY_MS */
};

/* What the self-report reads (ops/self_report.h): the daemon's parts, borrowed. */
static struct self_sources self_sources_of(const struct daemon *d)
{
	return (struct self_sources){
		.opts = d->opts, .sampler = d->sampler, .agg = d->agg, .sym = d->sym, .processes = d->processes,
		.records = d->records, .export = d->export, .k8s = d->k8s, .metrics = d->metrics,
		.traces = d->traces, .jvm = d->jvm,
		.off_cpu = d->off_cpu, .ceiling = &d->ceiling, .memory = &d->memory, .heap = d->heap, .alloc_probes = d->alloc_probes,
		.turns = &d->turns, .mmap_events = d->mmap_events,
	};
}

/* Modules served by the symbolizer's cheaper tier: said once each, here (the library never prints). */
static void log_symbol_notices(struct daemon *d)
{
	struct sym_notice n;

	while (symbolizer_next_notice(d->sym, &n))
		log_info("Symbolizing %s%s%s%s with its ELF symbols only (no source lines nor inline frames): %s "
			 "(%.1f MiB; a module may use %.1f MiB of --symbol-cache at most)", n.path,
			 n.build_id[0] ? " (build id " : "", n.build_id, n.build_id[0] ? ")" : "", n.why,
			 (double)n.bytes / (1 << 20), (double)n.share / (1 << 20));
}

/* One read of the ring buffer: at most SAMPLER_CONSUME_BUDGET_MS, and no wait for a module's open
 * past TURN_OPEN_BUDGET_MS into the turn (nor any open while the CPU ceiling defers them), so that
 * no record holds the loop for long. */
static int consume_samples(struct daemon *d)
{
	uint64_t now, turn;
	int r;

	if (d->test_turn_delay_ms) /* a loop held back (a loaded host), on purpose */
		nanosleep(&(struct timespec){ .tv_sec = d->test_turn_delay_ms / 1000,
					      .tv_nsec = (long)(d->test_turn_delay_ms % 1000) * 1000000L }, NULL);
	now = clock_ns(CLOCK_MONOTONIC);
	turn = d->turn_start_ns && !d->test_turn_delay_ms ? d->turn_start_ns : now;
	/* The mappings processes made since the last turn, before the samples that need them. */
	if (d->mmap_events)
		mmap_events_read(d->mmap_events, now);
	d->shed = cpu_ceiling_update(&d->ceiling, now, clock_ns(CLOCK_PROCESS_CPUTIME_ID));
	/* On-CPU samples and off-CPU waits are shed in the kernel (1 in N kept, weighing N; none while
	 * the second's share is spent); what is already in the ring buffer then is dropped as read. */
	sampler_set_keep_every(d->sampler, cpu_ceiling_keep_every(&d->ceiling));
	record_path_set_shedding(d->records, d->ceiling.window_spent, d->shed >= CPU_SHED_DEFER_OPENS);
	symbolizer_set_open_deadline(d->sym, d->shed >= CPU_SHED_DEFER_OPENS ? 1 :
					     turn + TURN_OPEN_BUDGET_MS * 1000000ULL);
	d->consumed = true;
	loop_turns_phase(&d->turns, LOOP_PHASE_REPLAY, now);
	/* The samples the last turn's deadline put off, first. */
	record_path_replay(d->records, false, turn + TURN_READ_BUDGET_MS * 1000000ULL);
	loop_turns_phase(&d->turns, LOOP_PHASE_READ, clock_ns(CLOCK_MONOTONIC));
	loop_turns_read(&d->turns, clock_ns(CLOCK_MONOTONIC));
	r = sampler_consume_until(d->sampler, turn + TURN_READ_BUDGET_MS * 1000000ULL);
	symbolizer_set_open_deadline(d->sym, 0);
	loop_turns_phase(&d->turns, LOOP_PHASE_OTHER, clock_ns(CLOCK_MONOTONIC));
	return r;
}

/* What the JVM room did (-v). */
static void log_jvm_counters(struct jvm_attacher *jvm)
{
	struct jvm_attacher_counters c;

	if (!jvm)
		return;
	jvm_attacher_counters(jvm, &c);
	if (c.jvms)
		log_debug("jvm: %" PRIu64 " HotSpot processes, %" PRIu64 " perf maps written when asked, %" PRIu64
			  " attaches failed, %" PRIu64 " timed out, %" PRIu64 " skipped (no SIGQUIT handler yet), %" PRIu64
			  " put off (rate), %" PRIu64 " not made (broker gone), %" PRIu64
			  " requests dropped (queue full), %" PRIu64 " processes forgotten (table full)",
			  c.jvms, c.perf_maps, c.failed, c.timed_out, c.not_attachable, c.rate_limited, c.broker_lost,
			  c.queue_full, c.table_full);
}

/* Said once, when the symbolizer first finds kallsyms hidden (after the export that read it, or a reload). */
static void warn_kallsyms_hidden(struct daemon *d)
{
	if (d->kallsyms_hidden_logged || !symbolizer_stats(d->sym)->kallsyms_hidden)
		return;
	d->kallsyms_hidden_logged = true;
	log_warn("Kernel addresses are hidden by kernel.kptr_restrict: kernel frames stay unsymbolized");
}

/* Watch this node's pods when asked to (auto: when in a cluster); when that fails, say so once and go on. */
static void start_kubernetes(struct daemon *d)
{
	char why[512];
	int r;

	if (d->opts->kubernetes == KUBERNETES_OFF || (d->opts->kubernetes == KUBERNETES_AUTO && !k8s_configured(NULL)))
		return;
	d->k8s = k8s_start(&(struct k8s_config){ .node_name = metadata_node_name(d->metadata) }, &r, why, sizeof(why));
	if (d->k8s)
		log_debug("Watching the pods of node %s at %s", metadata_node_name(d->metadata), k8s_api_url(d->k8s));
	else
		log_warn("Kubernetes pod metadata is off: %s; profiles go on without k8s.pod.name, k8s.namespace.name "
			 "and k8s.container.name", why);
}

static void forget_process(void *ctx, uint32_t pid, uint64_t instance)
{
	struct daemon *d = ctx;

	symbolizer_forget_instance(d->sym, (pid_t)pid, instance);
	record_path_forget(d->records, pid, instance);
	if (d->traces)
		trace_table_forget(d->traces, pid, instance);
}

/* The trace table's way to the BPF map (the sampler is opened after the table). */
static int publish_trace_proc(void *ctx, uint32_t pid, const struct otelprof_trace_proc *entry)
{
	struct daemon *d = ctx;

	return d->sampler ? sampler_set_trace_proc(d->sampler, pid, entry) : -ENODEV;
}

/* Until when the last profile waits for module opens: FINAL_OPEN_BUDGET_MS, within
 * EXIT_OPEN_BUDGET_MS of the loop's end. */
static uint64_t final_open_deadline(const struct daemon *d)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), until = now + FINAL_OPEN_BUDGET_MS * 1000000ULL;
	uint64_t exit_by = d->loop_end_ns + EXIT_OPEN_BUDGET_MS * 1000000ULL;

	return d->loop_end_ns && exit_by < until ? (exit_by > now ? exit_by : now) : until;
}

/* The interval's build options, from agg and those (the interval ends now), its in-use
 * allocations taken now; the next interval starts now. */
static struct profile_build_options interval_options(struct daemon *d, struct aggregate *off_agg,
						     struct aggregate *alloc_agg, uint64_t now)
{
	struct profile_build_options o = {
		.frequency = d->opts->frequency, .time_unix_ns = d->interval_start_monotonic_ns + d->monotonic_to_unix_ns,
		.duration_ns = now - d->interval_start_monotonic_ns,
		.describe_process = process_describe, .describe_ctx = &d->describer,
		.off_cpu = off_agg, .allocs = alloc_agg, .inuse = d->inuse_agg,
	};

	if (d->heap) {
		/* What the processes hold now: every live sampled allocation. */
		aggregate_reset(d->inuse_agg);
		if (heap_add_inuse(d->heap, d->inuse_agg))
			log_warn("The in-use profile is incomplete: out of memory");
	}
	d->interval_start_monotonic_ns = now;
	return o;
}

/* A profile built: what it could not hold counted, the notices its opens raised said. */
static struct profile *built(struct daemon *d, struct profile *p)
{
	if (p)
		aggregate_count_dropped_at_build(d->agg, p->counters.dropped_table_full);
	log_symbol_notices(d);
	return p;
}

/* The interval's profile at once; opens for its frames stop at open_deadline_ns (a past one: none). */
static struct profile *build_interval(struct daemon *d, uint64_t open_deadline_ns)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	struct profile_build_options o = interval_options(d, d->off_agg, d->alloc_agg, now);
	struct profile *p;

	symbolizer_set_open_deadline(d->sym, open_deadline_ns > now ? open_deadline_ns : now); /* past: queued only */
	p = profile_build(d->agg, d->sym, &o);
	symbolizer_set_open_deadline(d->sym, 0);
	return built(d, p);
}

/* A profile built for export: sent, and what only it needed let go. */
static void submit_interval(struct daemon *d, struct profile *p, bool last)
{
	struct self_sources src = self_sources_of(d);

	if (!p) {
		log_error("Failed to build the profile: %s", strerror(errno));
		return;
	}
	if (last)
		self_report_log_counters(&src);
	if (d->memory.limit)
		memory_limit_note_rss(); /* the interval's tables and the profile built from them */
	export_loop_submit(d->export, p); /* p is the export loop's now */
	/* The exited processes' last samples are built: their table entries and mappings can go. */
	process_table_sweep(d->processes, forget_process, d);
	symbolizer_maintain(d->sym);
	warn_kallsyms_hidden(d);
}

/* The samples set aside are let go (built, or their build failed). */
static void reset_set_aside(struct daemon *d)
{
	aggregate_reset(d->built_agg);
	if (d->built_off_agg)
		aggregate_reset(d->built_off_agg);
	if (d->built_alloc_agg)
		aggregate_reset(d->built_alloc_agg);
}

/* The interval ends: its samples set aside (the records go on into the next one) and its profile
 * started, built by later turns (step_export()). */
static int start_export(struct daemon *d)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	struct profile_build_options o;

	aggregate_swap_interval(d->agg, d->built_agg);
	if (d->off_agg)
		aggregate_swap_interval(d->off_agg, d->built_off_agg);
	if (d->alloc_agg)
		aggregate_swap_interval(d->alloc_agg, d->built_alloc_agg);
	process_table_seal(d->processes);
	d->build_open_deadline_ns = now + TURN_OPEN_BUDGET_MS * 1000000ULL;
	o = interval_options(d, d->off_agg ? d->built_off_agg : NULL, d->alloc_agg ? d->built_alloc_agg : NULL, now);
	d->builder = profile_builder_new(d->built_agg, d->sym, &o);
	if (d->builder)
		return 0;
	reset_set_aside(d); /* not built: dropped (the error is said) */
	return -ENOMEM;
}

/* A slice of the interval's profile until deadline_ns (0: the rest), opens until open_deadline_ns;
 * once built, it is sent and the samples set aside are let go. */
static void step_export(struct daemon *d, uint64_t deadline_ns, uint64_t open_deadline_ns, bool last)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	int r;

	symbolizer_set_open_deadline(d->sym, open_deadline_ns > now ? open_deadline_ns : now);
	r = profile_builder_step(d->builder, deadline_ns);
	symbolizer_set_open_deadline(d->sym, 0);
	if (!r)
		return;
	submit_interval(d, built(d, profile_builder_finish(d->builder)), last);
	d->builder = NULL;
	reset_set_aside(d);
}

/* The run ends: the profile in the making finished, then the last interval's built and sent. */
static void export_last(struct daemon *d)
{
	uint64_t open_deadline = final_open_deadline(d);

	if (d->builder)
		step_export(d, 0, open_deadline, false);
	if (start_export(d)) {
		log_error("Failed to build the profile: %s", strerror(errno));
		return;
	}
	step_export(d, 0, open_deadline, true);
}

/* Exporting, the interval is over --interval-memory (all its aggregates together; less while
 * --memory-limit is not kept: ops/memory_limit.h): the profile built from it, its requests and the
 * symbolizer's work at export grow with it. Ended now (counted), the next one from now. */
static bool interval_full(struct daemon *d)
{
	size_t budget = d->memory.limit ? d->memory.interval_budget : d->opts->interval_memory;
	size_t bytes = (d->off_agg ? aggregate_bytes(d->off_agg) : 0) + (d->alloc_agg ? aggregate_bytes(d->alloc_agg) : 0);

	return d->export && aggregate_over_budget(d->agg, budget > bytes ? budget - bytes : 0);
}

/* --memory-limit: the symbol cache gets what the rest of the daemon leaves of it (ops/memory_limit.h);
 * what it gives up goes back to the kernel at once, so the next check sees it gone. */
static void keep_memory_limit(struct daemon *d, uint64_t now)
{
	const struct symbolizer_stats *st = symbolizer_stats(d->sym);
	uint64_t rss, noted, bound, evicted = st->byte_bound_evictions;

	if (!d->memory.limit || memory_limit_read_rss(&rss))
		return;
	noted = memory_limit_take_noted(); /* an export's high point since the last check */
	if (noted) {
		memory_limit_export_seen(&d->memory, now);
		rss = noted > rss ? noted : rss;
	}
	bound = memory_limit_update(&d->memory, now, rss, st->module_bytes + st->perf_map_bytes);
	symbolizer_set_byte_bound(d->sym, bound > SIZE_MAX ? SIZE_MAX : (size_t)bound);
	if (symbolizer_stats(d->sym)->byte_bound_evictions != evicted)
		memory_tune_release();
	if (rss > d->memory.limit && bound < SYMBOLIZER_MIN_BYTE_BOUND && !d->memory_over_logged) {
		d->memory_over_logged = true;
		log_warn("The memory limit (%.1f MiB) is not kept: %.1f MiB resident, of which %.1f MiB besides the "
			 "symbol cache, at its least (%.0f MiB); otelprofd_memory_limit_over_total counts the checks over it",
			 d->memory.limit / 1048576.0, rss / 1048576.0,
			 (double)(rss > st->module_bytes + st->perf_map_bytes ? rss - st->module_bytes - st->perf_map_bytes : 0) / 1048576.0,
			 SYMBOLIZER_MIN_BYTE_BOUND / 1048576.0);
	}
}

/* Once a second: processes gone unsampled, then readiness, the metrics the server publishes, and
 * the periodic log summary. */
static void tick(struct daemon *d, uint64_t now)
{
	struct self_sources src = self_sources_of(d);

	if (now - d->report.last_tick_ns < 1000000000ULL)
		return;
	d->report.last_tick_ns = now;
	/* Processes that ended without a sample wait for nothing: without this, a run writing one file
	 * at its end would keep every process it saw. */
	process_table_sweep_unsampled(d->processes, forget_process, d);
	keep_memory_limit(d, now);
	if (d->traces)
		trace_table_tick(d->traces, now);
	log_symbol_notices(d);
	if (d->alloc_probes)
		alloc_probes_scan(d->alloc_probes, now);
	self_report_update(&d->report, &src, now);
	status_line_update(d->status, &d->report.now, now);
}

/* The run's last records: read for FINAL_DRAIN_MS, the samples still waiting then dropped (counted)
 * so the ring buffer empties at once; exec, fork and exit records are still read. */
static int drain_at_exit(struct daemon *d)
{
	uint64_t until = clock_ns(CLOCK_MONOTONIC) + FINAL_DRAIN_MS * 1000000ULL;
	int r;

	do
		r = consume_samples(d);
	while (r >= 0 && sampler_pending(d->sampler) && clock_ns(CLOCK_MONOTONIC) < until);
	/* Without a deadline a lookup would wait for a module still opening, however long it takes. */
	symbolizer_set_open_deadline(d->sym, until);
	record_path_replay(d->records, true, 0); /* put off again at the last read: added as they are */
	if (r >= 0 && sampler_pending(d->sampler)) {
		record_path_drop_remaining(d->records);
		until += FINAL_DRAIN_MS * 1000000ULL;
		do
			r = sampler_consume(d->sampler);
		while (r >= 0 && sampler_pending(d->sampler) && clock_ns(CLOCK_MONOTONIC) < until);
	}
	symbolizer_set_open_deadline(d->sym, 0);
	return r < 0 ? r : 0;
}

/* The kernel's record of processes' mappings (sampling/mmap_events.h), for processes gone before
 * their maps were read; without it (no perf events here), such processes' frames stay unknown. */
static void open_mmap_events(struct daemon *d)
{
	const char *off = getenv("OTELPROFD_TEST_NO_MMAP_EVENTS"); /* tests: the daemon without them */
	const char *lost = getenv("OTELPROFD_TEST_MMAP_EVENTS_LOST"); /* tests: a gap in every history */
	int r = 0;

	if (off && *off == '1')
		return;
	d->mmap_events = mmap_events_open(&(struct mmap_events_config){
		.pids = d->opts->pids, .npids = d->opts->npids, .follow_children = d->opts->follow_children,
		.test_lost = lost && *lost == '1',
	}, &r);
	if (d->mmap_events)
		symbolizer_set_history(d->sym, mmap_events_history, d->mmap_events);
	else
		log_warn("Failed to open the mmap events: %s; processes that exit before their first sample is "
			 "handled keep unknown frames", strerror(-r));
}

static int attach_alloc_file(void *ctx, const char *path)
{
	struct daemon *d = ctx;
	int r = sampler_attach_alloc(d->sampler, path);

	if (r)
		log_debug("Failed to attach the otel_memory probes of %s: %s", path, strerror(-r));
	else
		log_debug("Attached the otel_memory probes of %s", path);
	return r;
}

/* --alloc: the installed library's probes now (every process preloading it, from its first
 * allocation), then the files the running processes map that fire them. */
static int start_alloc_probes(struct daemon *d)
{
	const char *lib = run_env_alloc_library(), *root = cgroup_v2_root();
	char cgroup_dir[4096];
	int r;

	/* --cgroup alone: its processes are the only ones to look at (--container: every process). */
	if (!d->opts->cgroup || d->opts->container || !root ||
	    cgroup_path_of(root, d->opts->cgroup, cgroup_dir, sizeof(cgroup_dir)))
		cgroup_dir[0] = 0;
	d->alloc_probes = alloc_probes_new(&(struct alloc_probes_config){
		.attach = attach_alloc_file, .attach_ctx = d, .pids = d->opts->pids, .npids = d->opts->npids,
		.cgroup_dir = cgroup_dir[0] ? cgroup_dir : NULL,
	});
	if (!d->alloc_probes) {
		log_error("Out of memory");
		return -ENOMEM;
	}
	r = alloc_probes_add_file(d->alloc_probes, lib);
	if (r && (d->opts->command || getenv("OTELPROFD_ALLOC_LIB"))) {
		log_error("Failed to attach the allocation sampler %s: %s", lib,
			  r == -ENOENT ? "no such file, or no otel_memory probes in it" : strerror(-r));
		return r;
	}
	alloc_probes_scan(d->alloc_probes, 0);
	return 0;
}

/* -- PROGRAM: started now, waiting, so that it is the target from its first instruction. */
static int start_command(struct daemon *d, struct options *opts)
{
	pid_t *pids = malloc(sizeof(*pids));
	int r;

	if (!pids)
		return -ENOMEM;
	r = command_start(&d->command, &(struct command_config){
		.argv = opts->command, .alloc_lib = opts->alloc ? run_env_alloc_library() : NULL,
		.alloc_sample = opts->alloc_sample,
	});
	if (r) {
		free(pids);
		return r;
	}
	pids[0] = d->command.pid;
	opts->pids = pids;
	opts->npids = 1;
	opts->follow_children = true;
	return 0;
}

/* Sample until the duration ends or a signal arrives. */
static int run_loop(struct daemon *d)
{
	int ringfd = sampler_fd(d->sampler), r;
	uint64_t last_drain_ns = 0;
	struct loop_fds fds;

	r = loop_fds_open(&fds, ringfd, d->opts->duration_ns, d->export ? export_loop_next_interval_ns(d->export) : 0);
	if (r)
		goto out;
	if (d->mmap_events)
		loop_fds_add(&fds, mmap_events_fd(d->mmap_events)); /* without it, read at each turn only */

	service_notify_ready("Sampling");
	for (;;) {
		struct epoll_event events[5];
		/* Records left by a consume that hit its budget: look at the other fds, then go on. */
		int wait_ms = sampler_pending(d->sampler) ? 0 :
			      record_path_settling(d->records) ? EXEC_SETTLE_MS : SAMPLER_DRAIN_MS;
		int n;
		uint64_t now;

		loop_turns_dropped(&d->turns, sampler_ring_full(d->sampler));
		loop_turns_end(&d->turns, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_THREAD_CPUTIME_ID));
		n = epoll_wait(fds.epfd, events, 5, d->export_due || d->builder ? 0 : wait_ms);
		now = d->turn_start_ns = clock_ns(CLOCK_MONOTONIC);
		d->build_turn = (d->export_due || d->builder) && !d->build_turn;
		loop_turns_begin(&d->turns, now, clock_ns(CLOCK_THREAD_CPUTIME_ID));
		loop_turns_dropped(&d->turns, sampler_ring_full(d->sampler));
		d->consumed = false;

		record_path_settle(d->records, now);
		service_notify_watchdog(now);
		/* -- PROGRAM: the run ends with the program. */
		if (d->command.pid && command_exited(&d->command)) {
			r = 0;
			goto out;
		}
		tick(d, now);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		/* Samples do not wake us (see sampler_fd()): drain them on this period. */
		if (!d->build_turn && (sampler_pending(d->sampler) || now - last_drain_ns >= SAMPLER_DRAIN_MS * 1000000ULL)) {
			last_drain_ns = now;
			r = consume_samples(d);
			if (r < 0 && r != -EINTR) {
				log_error("Failed to read samples: %s", strerror(-r));
				goto out;
			}
		}
		for (int i = 0; i < n; i++) {
			int fd = events[i].data.fd;

			if (fd == ringfd) {
				if (d->consumed || d->build_turn)
					continue; /* read at this turn already, or building: the next one reads on */
				r = consume_samples(d);
				if (r < 0 && r != -EINTR) {
					log_error("Failed to read samples: %s", strerror(-r));
					goto out;
				}
			} else if (d->mmap_events && fd == mmap_events_fd(d->mmap_events)) {
				mmap_events_read(d->mmap_events, now); /* a ring half full */
			} else if (fd == fds.sigfd) {
				struct self_sources src = self_sources_of(d);
				struct signalfd_siginfo si;

				if (read(fds.sigfd, &si, sizeof(si)) != sizeof(si))
					continue;
				if (signals_act(si.ssi_signo, &d->report, &src)) {
					r = 0;
					goto out;
				}
			} else if (fd == fds.timerfd) {
				r = 0;
				goto out;
			} else if (fd == fds.intervalfd) {
				uint64_t expirations;

				if (read(fds.intervalfd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
					log_warn("Failed to read the interval timer: %s", strerror(errno));
				if (!d->consumed)
					consume_samples(d); /* the interval's last samples, in it */
				d->export_due = true;
				loop_fds_arm(fds.intervalfd, export_loop_next_interval_ns(d->export));
			}
		}
		/* Over --interval-memory: the interval ends now, its profile built at the next turn. */
		if (!d->export_due && interval_full(d)) {
			d->export_due = true;
			loop_fds_arm(fds.intervalfd, export_loop_next_interval_ns(d->export));
		}
		/* The interval's profile is built in slices, each in a turn of its own (one that did not read). */
		if (d->build_turn && !d->consumed) {
			loop_turns_phase(&d->turns, LOOP_PHASE_BUILD, clock_ns(CLOCK_MONOTONIC));
			if (!d->builder && d->export_due) {
				d->export_due = false;
				if (start_export(d))
					log_error("Failed to build the profile: %s", strerror(errno));
			}
			if (d->builder)
				step_export(d, now + TURN_READ_BUDGET_MS * 1000000ULL, d->build_open_deadline_ns, false);
		}
	}
out:
	loop_turns_end(&d->turns, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_THREAD_CPUTIME_ID));
	d->loop_end_ns = clock_ns(CLOCK_MONOTONIC);
	d->turn_start_ns = 0;
	service_notify_stopping();
	if (drain_at_exit(d) < 0)
		log_warn("Failed to read the last samples");
	off_cpu_finish(d->off_cpu, clock_ns(CLOCK_MONOTONIC), d->monotonic_to_unix_ns, sampler_off_cpu_waiting,
		       d->sampler);
	loop_fds_close(&fds);
	return r;
}

/* The log writer thread's first act: it only writes to stderr. */
static void drop_all_capabilities(void)
{
	privileges_keep_only(0);
}

int main(int argc, char **argv)
{
	struct options opts;
	struct daemon d = { .opts = &opts };
	struct agg_limits limits;
	struct profile *p = NULL;
	uint64_t cgroup_ids[OTELPROF_MAX_TARGET_CGROUPS];
	size_t ncgroup_ids;
	/* Static: an open still running at exit is left to its thread (symbolizer_free()), which reads it. */
	static const char *debug_dirs[3] = { "/usr/lib/debug", NULL, NULL };
	static char kallsyms_cache[PATH_MAX], debug_plain[PATH_MAX];
	int r, loop_r, status = 1;
	struct self_sources src;
	bool keep_bpf;

	if (argc > 1 && !strcmp(argv[1], "diff"))
		return diff_main(argc - 1, argv + 1);
	memory_tune_start();
	switch (options_parse(&opts, argc, argv, stdout, log_error_stream())) {
	case OPTIONS_OK:
		break;
	case OPTIONS_EXIT:
		return 0;
	default:
		return 2;
	}
	log_set_level(opts.verbose ? LOG_LEVEL_DEBUG : opts.quiet ? LOG_LEVEL_ERROR : LOG_LEVEL_INFO);
	options_warn_no_destination(&opts);
	if (write_output_check(&opts)) { /* before the run, not after an hour of it */
		status = 2;
		goto out;
	}
	r = signals_block();
	if (r) {
		log_error("Failed to block signals: %s", strerror(-r));
		goto out;
	}
	/* From here on a line logged never waits for stderr (a full pipe, a stalled journal): the run
	 * goes on, lines that do not fit the writer's queue are dropped and counted. After the signals are
	 * blocked (the thread inherits that); the thread drops every capability itself. */
	r = log_start_writer(drop_all_capabilities, run_env_test_ms("OTELPROFD_TEST_LOG_QUEUE_BYTES"));
	if (r)
		log_warn("Failed to start the log writer thread: %s; a stderr not read in time stops the run", strerror(-r));
	/* Forked now, small and with every capability still there: it keeps only what taking on a
	 * JVM's user needs, and the daemon drops those below. */
	if (!opts.no_jvm_attach && !(d.jvm_broker = jvm_broker_start(JVM_BROKER_CAPS)))
		log_warn("Failed to start the JVM attach broker: %s; only JVMs of otelprofd's own user are asked "
			 "for perf maps", strerror(errno));

	limits = (struct agg_limits){
		.max_entries = opts.max_stacks, .max_stack_bytes = MAX_STACK_BYTES, .max_samples = opts.max_samples,
	};
	d.agg = aggregate_new(&limits);
	/* Debug files of the host's binaries: in a hostPID pod the host's /usr/lib/debug is read through
	 * pid 1's root (no host mount needed); on the host itself the two are the same directory. */
	if (host_view_same_root(NULL) == 0)
		debug_dirs[1] = "/proc/1/root/usr/lib/debug";
	d.sym = symbolizer_new(&(struct symbolizer_config){
		.debug_dirs = debug_dirs, .max_module_bytes = opts.symbol_cache,
		.open_delay_ms = run_env_test_ms("OTELPROFD_TEST_OPEN_DELAY_MS"),
		.kallsyms_cache_path = run_env_kallsyms_cache(kallsyms_cache),
		.debug_plain_dir = run_env_debug_plain(debug_plain),
	});
	if (debuginfod_lib_error())
		log_warn("Debug files from debuginfod (DEBUGINFOD_URLS) need %s; symbolizing goes on without them",
			 debuginfod_lib_error());
	/* Kernel symbols are read when the first profile with a kernel frame is built (profile_build(),
	 * on the export path: the ring buffer is not read for those 25-35 ms, once), not at start: the
	 * kernel formatting 120,000 lines was 40% of a start's CPU and 5 MiB of RSS that a run without
	 * kernel frames never needs (bench/RESULTS.md). A run of this boot that read them saved them in
	 * the cache, and the next ones map that instead (under 1 ms). Hidden addresses are said after that
	 * export. */
	d.processes = process_table_new(&(struct process_table_config){
		.command_line = opts.command_line, .evicted = forget_process, .evicted_ctx = &d,
	});
	d.metadata = metadata_new(&(struct metadata_config){ 0 });

	if (!opts.no_trace_context)
		d.traces = trace_table_new(&(struct trace_table_config){ .publish = publish_trace_proc, .publish_ctx = &d });
	if (opts.off_cpu && (d.off_agg = aggregate_new(&limits)))
		d.off_cpu = off_cpu_new(&(struct off_cpu_config){
			.agg = d.off_agg, .threshold_ns = opts.off_cpu_threshold_ns,
			.probability = opts.off_cpu_probability, .max_pending = opts.off_cpu_max_inflight,
		});
	if (opts.alloc && (d.alloc_agg = aggregate_new(&limits)) && (d.inuse_agg = aggregate_new(&limits)))
		d.heap = heap_new(&(struct heap_config){ .allocs = d.alloc_agg, .max_live = opts.alloc_max_live });
	d.records = record_path_new(&(struct record_path_config){
		.sym = d.sym, .processes = d.processes, .agg = d.agg, .traces = d.traces, .off_cpu = d.off_cpu,
		.heap = d.heap,
		.python_publish = sampler_publish_python, .python_publish_ctx = &d.sampler,
		.go_publish = sampler_publish_go, .go_publish_ctx = &d.sampler,
		.stack_need_set = sampler_set_stack_need, .stack_need_ctx = &d.sampler,
	});
	if (!d.agg || !d.sym || !d.processes || !d.metadata || !d.records || (!opts.no_trace_context && !d.traces) ||
	    (opts.off_cpu && !d.off_cpu) || (opts.alloc && !d.heap)) {
		log_error("Out of memory");
		goto out;
	}

	if (metadata_skipped_resource_attributes(d.metadata))
		log_warn("Skipped %u malformed %s of OTEL_RESOURCE_ATTRIBUTES", metadata_skipped_resource_attributes(d.metadata),
			 plural(metadata_skipped_resource_attributes(d.metadata), "entry", "entries"));
	if (cgroup_filter_resolve(opts.cgroup, opts.container, cgroup_ids, OTELPROF_MAX_TARGET_CGROUPS,
				  &ncgroup_ids)) {
		status = 2;
		goto out;
	}

	if (opts.command && start_command(&d, &opts)) {
		status = 2;
		goto out;
	}
	d.sampler = sampler_open(&(struct sampler_config){
		.frequency = opts.frequency, .pids = opts.pids, .npids = opts.npids,
		.follow_children = opts.follow_children, .include_idle = opts.include_idle,
		.ringbuf_kib = opts.ringbuf_kib,
		.cgroup_ids = ncgroup_ids ? cgroup_ids : NULL, .ncgroup_ids = ncgroup_ids, .track_processes = true,
		.stack_copy = opts.stack_copy, .trace_context = !opts.no_trace_context, .off_cpu = opts.off_cpu,
		.off_cpu_sample = off_cpu_sample_of(opts.off_cpu_probability),
		.off_cpu_max_inflight = opts.off_cpu_max_inflight, .python = true, .alloc = opts.alloc,
		.go_labels = true,
	}, record_path_handle, d.records, &r);
	if (!d.sampler) {
		status = (r == -EPERM || r == -ENOEXEC) ? 2 : 1;
		goto out;
	}
	open_mmap_events(&d); /* as the sampler's perf events, before capabilities are dropped */
	d.test_turn_delay_ms = run_env_test_ms("OTELPROFD_TEST_TURN_DELAY_MS");
	if (opts.alloc && start_alloc_probes(&d)) {
		status = 2;
		goto out;
	}
	/* Capabilities are per thread and a thread inherits its creator's: drop them before the first
	 * thread starts (the exporter's sender, gRPC's own threads, the Kubernetes watcher, the metrics
	 * server, the debuginfod worker, the JVM attach thread), so none of them keeps CAP_BPF or
	 * CAP_PERFMON. What those threads read (CA and key files, debug files, /proc/PID/maps) needs at
	 * most CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE, which are kept. */
	keep_bpf = privileges_bpf_needs_cap_here();
	if (keep_bpf)
		log_info("Keeping CAP_BPF: this kernel (before 5.19, kernel.unprivileged_bpf_disabled set) refuses "
			 "the BPF counters' reads to a process without it");
	/* The runtimes' BPF parts load at their first process: a thread keeps what loading needs until
	 * then (sampling/runtime_bpf.h). */
	if (sampler_start_loader(d.sampler, privileges_after_setup_mask(keep_bpf, opts.alloc)))
		log_warn("Failed to start the BPF loader thread: the Python walk and the Go label reader are "
			 "loaded only if otelprofd keeps CAP_BPF and CAP_PERFMON");
	r = privileges_drop_after_setup(keep_bpf, opts.alloc);
	if (r)
		log_warn("Failed to drop capabilities no longer needed: %s", strerror(-r));
	if (opts.export.enabled && !(d.export = export_loop_new(&opts.export))) {
		status = 2;
		goto out;
	}
	if (d.export) /* each interval's profile and requests freed: the heap's free pages back */
		export_loop_on_encoded(d.export, memory_tune_release, opts.memory_limit ? memory_limit_note_rss : NULL);
	/* Exporting, an interval's samples are set aside at its end to be built in slices. */
	if (d.export && (!(d.built_agg = aggregate_new(&limits)) || (d.off_agg && !(d.built_off_agg = aggregate_new(&limits))) ||
			 (d.alloc_agg && !(d.built_alloc_agg = aggregate_new(&limits))))) {
		log_error("Out of memory");
		goto out;
	}
	/* After the drop, as the other threads: the broker, forked before it, attaches as each JVM's user. */
	if (!opts.no_jvm_attach && !(d.jvm = jvm_attacher_new(JVM_PERF_MAP_REFRESH_MS, d.jvm_broker)))
		log_warn("Failed to start the JVM attach thread: JVMs are not asked for perf maps");
	record_path_set_jvm(d.records, d.jvm);
	start_kubernetes(&d);
	d.describer = (struct process_describer){
		.processes = d.processes, .metadata = d.metadata, .k8s = d.k8s, .traces = d.traces,
	};
	d.start_unix_ns = clock_ns(CLOCK_REALTIME);
	d.start_monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	d.report.delivered_ns = d.report.summary_ns = d.start_monotonic_ns;
	if (opts.metrics_address && !(d.metrics = metrics_server_start(opts.metrics_address))) {
		status = 2;
		goto out;
	}
	if (d.metrics) {
		/* The first snapshot before the port is announced (/metrics answers 503 until then). */
		src = self_sources_of(&d);
		self_report_update(&d.report, &src, d.start_monotonic_ns);
		log_info("Metrics on port %d (%s): /metrics, and readiness on /ready", metrics_server_port(d.metrics),
			 opts.metrics_address);
	}
	d.monotonic_to_unix_ns = d.start_unix_ns - d.start_monotonic_ns;
	record_path_set_time_offset(d.records, d.monotonic_to_unix_ns);
	d.interval_start_monotonic_ns = d.start_monotonic_ns;
	cpu_ceiling_init(&d.ceiling, opts.max_cpu, d.start_monotonic_ns, clock_ns(CLOCK_PROCESS_CPUTIME_ID));
	memory_limit_init(&d.memory, opts.memory_limit, SYMBOLIZER_MIN_BYTE_BOUND, opts.interval_memory,
			  d.start_monotonic_ns);
	if (d.export)
		d.memory.reserve = MEMORY_LIMIT_FIRST_EXPORT;
	self_report_log_start(&opts, sampler_cpu_count(d.sampler));

	d.status = status_line_new(&opts, d.start_monotonic_ns);
	command_release(&d.command);
	loop_r = run_loop(&d);
	status_line_free(d.status); /* erased before the run's last words */
	if (loop_r)
		log_error("Sampling stopped: %s", strerror(-loop_r));
	/* What was sampled is still sent or written; the exit status says the run failed. */
	if (d.export) {
		/* The last interval, then a flush bounded by the request timeout. */
		export_last(&d);
		r = export_loop_finish(d.export, opts.export.timeout_ns);
		d.export = NULL;
		if (r == -ETIMEDOUT)
			log_warn("Some profiles were not delivered before the shutdown deadline");
		status = loop_r || (r == -ENOTCONN && opts.duration_ns) ? 1 : 0; /* a bounded run that delivered nothing fails */
		goto out;
	}

	p = build_interval(&d, final_open_deadline(&d));
	if (!p) {
		log_error("Failed to build the profile: %s", strerror(errno));
		goto out;
	}
	src = self_sources_of(&d);
	self_report_log_counters(&src);
	log_jvm_counters(d.jvm);
	if (d.k8s)
		k8s_log_counters(d.k8s);
	if (write_output(&opts, p))
		goto out;
	/* The exited processes' last samples are built: their table entries and mappings can go. */
	process_table_sweep(d.processes, forget_process, &d);
	status = loop_r ? 1 : d.command.pid ? command_exit_code(&d.command) : 0;
out:
	command_abort(&d.command);
	alloc_probes_free(d.alloc_probes);
	heap_free(d.heap);
	aggregate_free(d.alloc_agg);
	aggregate_free(d.inuse_agg);
	export_loop_finish(d.export, 0);
	k8s_stop(d.k8s);
	metrics_server_stop(d.metrics);
	profile_free(p);
	sampler_close(d.sampler);
	record_path_free(d.records);
	jvm_attacher_free(d.jvm);
	jvm_broker_stop(d.jvm_broker);
	trace_table_free(d.traces);
	off_cpu_free(d.off_cpu);
	aggregate_free(d.off_agg);
	symbolizer_free(d.sym);
	mmap_events_free(d.mmap_events); /* the symbolizer's history: after it */
	process_table_free(d.processes);
	metadata_free(d.metadata);
	aggregate_free(d.agg);
	profile_builder_free(d.builder);
	aggregate_free(d.built_agg);
	aggregate_free(d.built_off_agg);
	aggregate_free(d.built_alloc_agg);
	options_free(&opts);
	log_drain(); /* bounded: a stderr nobody reads leaves its lines */
	if (symbolizer_open_left_running()) {
		/* An open still runs on its thread: exit handlers (libraries', the leak checker's) must
		 * not run under it. */
		fflush(NULL);
		_exit(status);
	}
	return status;
}
