// SPDX-License-Identifier: Apache-2.0
#include "ops/self_report.h"

#include "ops/cpu_ceiling.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/options.h"
#include "export/export_loop.h"
#include "log.h"
#include "ops/metrics_server.h"
#include "process/k8s.h"
#include "proc_maps_share.h"
#include "process/process_table.h"
#include "profile/aggregate.h"
#include "profile/profile.h"
#include "sampling/alloc_probes.h"
#include "sampling/heap.h"
#include "sampling/record_path.h"
#include "sampling/sampler.h"
#include "symbolizer.h"

void self_report_collect(const struct self_sources *src, struct self_metrics *m)
{
	struct sampler_load_stats load;

	memset(m, 0, sizeof(*m));
	sampler_counters(src->sampler, m->bpf);
	load = sampler_load_stats(src->sampler);
	m->bpf_load_ns = load.load_ns;
	m->bpf_verified_insns = load.verified_insns;
	memcpy(m->bpf_runtimes, load.runtimes, sizeof(m->bpf_runtimes));
	m->python_bpf_walk = (enum python_walk_form)load.python_walk;
	m->malformed_records = record_path_counters(src->records)->malformed_records;
	m->samples_shed = record_path_counters(src->records)->samples_shed;
	m->samples_at_exit = record_path_counters(src->records)->samples_at_exit;
	m->samples_put_off = record_path_counters(src->records)->samples_put_off;
	m->samples_stale = record_path_counters(src->records)->replay_stale;
	m->stacks_put_off = record_path_counters(src->records)->stacks_put_off;
	m->closings_held = record_path_counters(src->records)->closings_held;
	m->ring_reads_out_of_time = sampler_time_stops(src->sampler);
	if (src->turns)
		m->loop_turns = *src->turns;
	if (src->ceiling)
		m->ceiling = *src->ceiling;
	if (src->memory)
		m->memory = *src->memory;
	m->aggregate = *aggregate_counters(src->agg);
	m->symbolizer = *symbolizer_stats(src->sym);
	m->processes = *process_table_counters(src->processes);
	m->unwind = record_path_counters(src->records)->unwind;
	m->stack_need = record_path_counters(src->records)->stack_need;
	m->python = record_path_counters(src->records)->python;
	m->go_labels_loaded = load.go_labels;
	m->go_processes = record_path_counters(src->records)->go_processes;
	m->go_labels = record_path_counters(src->records)->go_labels;
	if (record_path_python_counters(src->records))
		m->python_processes = *record_path_python_counters(src->records);
	if (src->export) {
		m->export_enabled = true;
		export_loop_stats(src->export, &m->export, &m->export_dropped_unsent);
	}
	if (src->k8s) {
		m->k8s_enabled = true;
		k8s_counters(src->k8s, &m->k8s);
	}
	if (src->traces) {
		m->trace_enabled = true;
		m->trace = *trace_table_counters(src->traces);
		m->trace_processes = trace_table_count(src->traces);
	}
	if (src->mmap_events) {
		m->mmap_events_enabled = true;
		mmap_events_counters(src->mmap_events, &m->mmap_events);
		mmap_store_counters(mmap_events_store(src->mmap_events), &m->mmap_store);
	}
	if (src->off_cpu) {
		m->off_cpu_enabled = true;
		sampler_off_cpu_counters(src->sampler, m->off_cpu_bpf);
		m->off_cpu = *off_cpu_counters(src->off_cpu);
	}
	if (src->jvm) {
		m->jvm_enabled = true;
		jvm_attacher_counters(src->jvm, &m->jvm);
	}
	if (src->heap && src->alloc_probes) {
		m->alloc_enabled = true;
		sampler_alloc_counters(src->sampler, m->alloc_bpf);
		m->heap = *heap_counters(src->heap);
		m->allocs_stale = record_path_counters(src->records)->allocs_stale;
		m->alloc_probes = *alloc_probes_counters(src->alloc_probes);
	}
	self_metrics_read_process(m, src->metrics != NULL);
}

void self_report_update(struct self_report *r, const struct self_sources *src, uint64_t now)
{
	struct self_metrics *m = &r->now;
	/* Not ready when nothing was delivered for three intervals (at least 10 s). */
	uint64_t undelivered_ns = 3 * src->opts->export.interval_ns > 10000000000ULL ?
					  3 * src->opts->export.interval_ns : 10000000000ULL;
	uint64_t busy, stall_ticks = 5 * (uint64_t)sysconf(_SC_CLK_TCK);

	/* Sampling is stalled when the CPUs did this much work (clock ticks) without one perf event:
	 * an idle host fires few cpu-clock events, a busy one many. Read once a tick, never per record. */
	busy = self_metrics_busy_cpu_ticks();
	self_report_collect(src, m);
	if (m->bpf[OTELPROF_CNT_SAMPLES] != r->last_perf_events || !r->busy_at_last_event) {
		r->last_perf_events = m->bpf[OTELPROF_CNT_SAMPLES];
		r->busy_at_last_event = busy;
	}
	if (m->export.sent != r->last_sent) {
		r->last_sent = m->export.sent;
		r->delivered_ns = now;
	}
	m->ready = true;
	if (busy - r->busy_at_last_event > stall_ticks) {
		m->ready = false;
		snprintf(m->not_ready_reason, sizeof(m->not_ready_reason),
			 "no perf event while the CPUs ran %.1f s", (double)(busy - r->busy_at_last_event) / sysconf(_SC_CLK_TCK));
	} else if (m->export_enabled && m->export.enqueued && now - r->delivered_ns > undelivered_ns) {
		m->ready = false;
		snprintf(m->not_ready_reason, sizeof(m->not_ready_reason), "no profile delivered for %.0f s",
			 (now - r->delivered_ns) / 1e9);
	}
	if (src->metrics) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (f) {
			self_metrics_write_prometheus(m, f);
			fclose(f);
			metrics_server_publish(src->metrics, text, len, m->ready, m->not_ready_reason);
			free(text);
		}
	}
	if (src->opts->stats_interval_ns && now - r->summary_ns >= src->opts->stats_interval_ns)
		self_report_log_summary(r, m, now, "");
}

void self_report_log_summary(struct self_report *r, const struct self_metrics *m, uint64_t now, const char *prefix)
{
	char line[512];

	self_metrics_format_summary(m, r->summary_ns ? &r->at_summary : NULL, (now - r->summary_ns) / 1e9,
				    line, sizeof(line));
	log_info("%s%s", prefix, line);
	r->at_summary = *m;
	r->summary_ns = now;
}

/* --off-cpu: what the switch program saw and sent, and what user space kept. */
static void log_off_cpu(const struct self_sources *src)
{
	const struct off_cpu_counters *oc = off_cpu_counters(src->off_cpu);
	uint64_t b[OTELPROF_OFFCPU_CNT_MAX] = { 0 };

	sampler_off_cpu_counters(src->sampler, b);
	log_info("Off-CPU: %" PRIu64 " %s kept (%.3f s scaled), %" PRIu64 " switch-outs, %" PRIu64 " sampled, "
		 "%" PRIu64 " not targets; dropped: %" PRIu64 " in-flight map full, %" PRIu64 " ring buffer full, %" PRIu64
		 " stacks waiting table full, %" PRIu64 " ends without a stack, %" PRIu64 " by the aggregate; %" PRIu64
		 " under --off-cpu-threshold; %" PRIu64 " still waiting at the end, counted up to it, %" PRIu64
		 " without their end (ring buffer full), %" PRIu64 " ended at their thread's exit (switch-in unseen); "
		 "%" PRIu64 " shed in the kernel over --max-cpu",
		 oc->waits, plural(oc->waits, "wait", "waits"), oc->wait_ns / 1e9, b[OTELPROF_OFFCPU_CNT_SWITCHES],
		 b[OTELPROF_OFFCPU_CNT_SAMPLED], b[OTELPROF_OFFCPU_CNT_FILTERED], b[OTELPROF_OFFCPU_CNT_INFLIGHT_FULL],
		 b[OTELPROF_OFFCPU_CNT_RINGBUF_FULL], oc->pending_full, oc->unmatched_ends, oc->aggregate_dropped,
		 oc->below_threshold, oc->unfinished, oc->lost_ends, b[OTELPROF_OFFCPU_CNT_ENDS_AT_EXIT],
		 b[OTELPROF_OFFCPU_CNT_SHED]);
}

/* --alloc: what the probes sent, what the heap kept, which files were attached. */
static void log_alloc(const struct self_sources *src)
{
	const struct heap_counters *h = heap_counters(src->heap);
	const struct alloc_probes_counters *a = alloc_probes_counters(src->alloc_probes);
	const struct record_path_counters *rc = record_path_counters(src->records);
	uint64_t b[OTELPROF_ALLOC_CNT_MAX] = { 0 };

	sampler_alloc_counters(src->sampler, b);
	log_info("Allocations: %" PRIu64 " sampled (%.1f MiB estimated), %" PRIu64 " live now (%.1f MiB), %" PRIu64
		 " frees of sampled ones; %" PRIu64 " frees of allocations not known, %" PRIu64
		 " live ones forgotten at their process's exit; dropped: %" PRIu64 " ring buffer full, %" PRIu64
		 " scratch busy, %" PRIu64 " not kept live (table full), %" PRIu64 " by the aggregate, %" PRIu64
		 " replaced (free lost), %" PRIu64 " put off and their process gone; %" PRIu64
		 " frees lost (ring buffer full); %" PRIu64 " sent and not read yet (at the end: the run ended first)",
		 h->allocs, h->alloc_bytes / 1048576.0, h->live, h->live_bytes / 1048576.0, h->frees, h->unknown_frees,
		 h->exited, b[OTELPROF_ALLOC_CNT_RINGBUF_FULL], b[OTELPROF_ALLOC_CNT_SCRATCH_BUSY], h->live_full,
		 h->aggregate_dropped, h->replaced, rc->allocs_stale, b[OTELPROF_ALLOC_CNT_FREES_RINGBUF_FULL],
		 b[OTELPROF_ALLOC_CNT_SENT] > rc->allocs_read ? b[OTELPROF_ALLOC_CNT_SENT] - rc->allocs_read : 0);
	log_debug("alloc: bpf: %" PRIu64 " alloc probes ran (%" PRIu64 " of other processes), %" PRIu64
		  " free probes ran (%" PRIu64 " of other processes), %" PRIu64 " allocs and %" PRIu64
		  " frees sent; files: %" PRIu64 " attached, %" PRIu64 " failed, %" PRIu64 " checked, %" PRIu64
		  " not looked at (table full); %" PRIu64 " scans read %" PRIu64 " processes",
		  b[OTELPROF_ALLOC_CNT_ALLOCS], b[OTELPROF_ALLOC_CNT_FILTERED], b[OTELPROF_ALLOC_CNT_FREES],
		  b[OTELPROF_ALLOC_CNT_FREES_FILTERED], b[OTELPROF_ALLOC_CNT_SENT], b[OTELPROF_ALLOC_CNT_FREES_SENT],
		  a->files_attached, a->attach_failed, a->files_checked, a->files_full, a->scans, a->processes_read);
}

/* Where the Python frames of samples went (-v): found by the BPF walk, put in stacks, or lost. */
static void log_python(const struct self_metrics *m, const uint64_t *bc)
{
	const struct python_table_counters *pt = &m->python_processes;
	const struct python_sample_counters *ps = &m->python;

	log_debug("python: %" PRIu64 " processes found, %" PRIu64 " unsupported, %" PRIu64 " checked; bpf: %" PRIu64
		  " samples with Python frames, %" PRIu64 " without a thread state, %" PRIu64 " walks stopped by "
		  "unreadable memory, %" PRIu64 " truncated, %" PRIu64 " without the walk program; user space: %" PRIu64
		  " samples, %" PRIu64 " frames put in, %" PRIu64 " left out (code object unreadable), %" PRIu64
		  " without an interpreter frame", pt->found, pt->unsupported, pt->checks,
		  bc[OTELPROF_CNT_PYTHON_STACKS], bc[OTELPROF_CNT_PYTHON_NO_THREAD], bc[OTELPROF_CNT_PYTHON_READ_ERROR],
		  bc[OTELPROF_CNT_PYTHON_TRUNCATED], bc[OTELPROF_CNT_PYTHON_NO_WALKER], ps->samples, ps->frames,
		  ps->frames_bad, ps->unmatched);
}

/* Where goroutine labels went (-v): Go processes found, labels read by BPF and put on samples. */
static void log_go_labels(const struct self_metrics *m, const uint64_t *bc)
{
	const struct go_process_counters *gp = &m->go_processes;
	const struct go_labels_counters *gl = &m->go_labels;

	log_debug("go labels: reader %s; %" PRIu64 " Go processes published, %" PRIu64 " of an unknown release, %"
		  PRIu64 " refused by the map; bpf: %" PRIu64 " samples labelled, %" PRIu64 " read errors, %" PRIu64
		  " samples with labels dropped, %" PRIu64 " labels cut, %" PRIu64 " without the reader; user space: %"
		  PRIu64 " samples, %" PRIu64 " labels, %" PRIu64 " dropped, %" PRIu64 " malformed",
		  m->go_labels_loaded ? "loaded" : "off", gp->published, gp->unknown, gp->publish_failed,
		  bc[OTELPROF_CNT_GO_LABELLED], bc[OTELPROF_CNT_GO_READ_ERROR], bc[OTELPROF_CNT_GO_LABELS_DROPPED],
		  bc[OTELPROF_CNT_GO_LABELS_CUT], bc[OTELPROF_CNT_GO_NO_READER], gl->samples, gl->labels, gl->dropped,
		  gl->malformed);
}

/* The loop's turns (-v; said without -v when one went over the bound): the longest and where its
 * time went, then how many turns in each range of time. */
static void log_loop_turns(const struct loop_turns *t)
{
	char ranges[256];
	size_t len = 0;

	for (size_t i = 0; i < LOOP_TURN_RANGES && len < sizeof(ranges); i++) {
		if (i < LOOP_TURN_RANGES - 1)
			len += (size_t)snprintf(ranges + len, sizeof(ranges) - len, "%s%" PRIu64 " under %u ms",
						i ? ", " : "", t->in_range[i], loop_turn_range_ms[i]);
		else
			len += (size_t)snprintf(ranges + len, sizeof(ranges) - len, ", %" PRIu64 " longer",
						t->in_range[i]);
	}
	log_msg(t->over_bound ? LOG_LEVEL_INFO : LOG_LEVEL_DEBUG,
		"loop: the longest turn took %.1f ms, %.1f ms of it on a CPU (signals and the deadline unseen "
		"meanwhile: %s %.1f ms, %s %.1f ms, %s %.1f ms, %s %.1f ms), %" PRIu64 " %s over %d ms; the most "
		"CPU in one turn %.1f ms; turns: %s",
		(double)t->max_ns / 1e6, (double)t->max_cpu_ns / 1e6, loop_phase_name(LOOP_PHASE_READ), (double)t->max_phase_ns[LOOP_PHASE_READ] / 1e6,
		loop_phase_name(LOOP_PHASE_REPLAY), (double)t->max_phase_ns[LOOP_PHASE_REPLAY] / 1e6,
		loop_phase_name(LOOP_PHASE_BUILD), (double)t->max_phase_ns[LOOP_PHASE_BUILD] / 1e6,
		loop_phase_name(LOOP_PHASE_OTHER), (double)t->max_phase_ns[LOOP_PHASE_OTHER] / 1e6, t->over_bound,
		plural(t->over_bound, "turn", "turns"), LOOP_TURN_BOUND_MS, (double)t->max_cpu_turn_ns / 1e6, ranges);
	log_debug("loop: ring buffer full for %" PRIu64 " samples at the start, %" PRIu64 " between turns, in turns "
		  "%" PRIu64 " reading, %" PRIu64 " replaying, %" PRIu64 " building, %" PRIu64 " else (%" PRIu64
		  " of them in turns over %d ms); the ring went unread %.1f ms at most",
		  t->dropped_at_start, t->dropped_between, t->dropped_in[LOOP_PHASE_READ], t->dropped_in[LOOP_PHASE_REPLAY],
		  t->dropped_in[LOOP_PHASE_BUILD], t->dropped_in[LOOP_PHASE_OTHER], t->dropped_long, LOOP_TURN_BOUND_MS,
		  (double)t->read_gap_max_ns / 1e6);
}

void self_report_log_counters(const struct self_sources *src)
{
	const struct symbolizer_stats *ss = symbolizer_stats(src->sym);
	const struct record_path_counters *rc = record_path_counters(src->records);
	uint64_t bc[OTELPROF_CNT_MAX] = { 0 };
	struct self_metrics m;
	char line[512];

	/* The same snapshot and definitions as the periodic stats line and /metrics. */
	self_report_collect(src, &m);
	self_metrics_format_totals(&m, line, sizeof(line));
	log_info("%s", line);
	sampler_counters(src->sampler, bc);
	log_debug("bpf: %" PRIu64 " perf events, %" PRIu64 " other processes, %" PRIu64 " idle, "
		  "%" PRIu64 " kernel / %" PRIu64 " user stack errors, %" PRIu64 " children followed; "
		  "%" PRIu64 " ring buffer reads stopped at %d records or %d ms (%" PRIu64 " by the time)",
		  (uint64_t)bc[OTELPROF_CNT_SAMPLES], (uint64_t)bc[OTELPROF_CNT_FILTERED], (uint64_t)bc[OTELPROF_CNT_IDLE],
		  (uint64_t)bc[OTELPROF_CNT_KSTACK_ERROR], (uint64_t)bc[OTELPROF_CNT_USTACK_ERROR],
		  (uint64_t)bc[OTELPROF_CNT_CHILDREN_FOLLOWED], sampler_budget_stops(src->sampler),
		  SAMPLER_CONSUME_BUDGET, SAMPLER_CONSUME_BUDGET_MS, m.ring_reads_out_of_time);
	log_loop_turns(&m.loop_turns);
	{
		uint32_t kind;
		uint64_t slowest = sampler_slowest_record(src->sampler, &kind);

		log_debug("loop: the slowest record (kind %u) took %.1f ms; put off to a later turn: %" PRIu64
			  " samples, %" PRIu64 " off-CPU and allocation stacks (%" PRIu64 " ends and frees held with them)",
			  kind, (double)slowest / 1e6, m.samples_put_off, m.stacks_put_off, m.closings_held);
	}
	{
		uint64_t packed, bytes;

		sampler_unpack_stats(src->sampler, &packed, &bytes);
		if (packed)
			log_debug("ring buffer: %" PRIu64 " samples packed, %.0f bytes per sample; stack windows by "
				  "need: %" PRIu64 " thread tops set, %" PRIu64 " set again, %" PRIu64 " withdrawn, %" PRIu64
				  " refused, %" PRIu64 " over budget, %" PRIu64 " backed off", packed,
				  (double)bytes / (double)packed, rc->stack_need.set, rc->stack_need.refreshed,
				  rc->stack_need.withdrawn, rc->stack_need.refused, rc->stack_need.over_budget,
				  rc->stack_need.backed_off);
		if (bc[OTELPROF_CNT_STACK_PRESSURE])
			log_debug("ring buffer: %" PRIu64 " windows asked for 2 KiB only: the buffer was more than half full",
				  (uint64_t)bc[OTELPROF_CNT_STACK_PRESSURE]);
		log_debug("ring buffer: %" PRIu64 " main threads' windows ended at their process's start of stack, "
			  "%" PRIu64 " at a remembered top", (uint64_t)bc[OTELPROF_CNT_STACK_MAIN_TOP],
			  (uint64_t)bc[OTELPROF_CNT_STACK_TOP_USED]);
	}
	{
		const struct proc_maps_share_counters *pm = proc_maps_share_counters();

		log_debug("/proc/PID/maps: %" PRIu64 " reads by the process checks served by a text already read, %" PRIu64
			  " read the file; %" PRIu64 " texts kept, %" PRIu64 " too big to keep",
			  pm->reused, pm->file_reads, pm->offered, pm->too_big);
	}
	log_debug("module cache: %" PRIu64 " opened with debug info, %" PRIu64 " with ELF symbols only (%" PRIu64
		  " too big, %" PRIu64 " out under pressure lately, %" PRIu64 " slow to open), %" PRIu64
		  " not admitted, %" PRIu64 " evicted to make room, %" PRIu64 " opens deferred, %" PRIu64 " opened again "
		  "through their kept file (%" PRIu64 " files kept now, %" PRIu64 " not kept); opens took %.1f ms "
		  "in all (%.1f ms of it building their indexes; %" PRIu64 " built by a lookup instead), %.1f ms "
		  "and %.1f MiB at most", ss->modules_full, ss->modules_symbols_tier,
		  ss->modules_tier_too_big, ss->modules_tier_thrash, ss->modules_tier_slow, ss->modules_not_admitted,
		  ss->module_pressure_evictions, ss->module_opens_deferred, ss->modules_reopened_kept, ss->files_kept,
		  ss->files_kept_dropped, (double)ss->module_open_ns_total / 1e6,
		  (double)ss->module_index_ns_total / 1e6, ss->module_index_builds_at_lookup,
		  (double)ss->module_open_ns_max / 1e6, (double)ss->module_open_bytes_max / (1 << 20));
	if (m.memory.limit)
		log_debug("memory limit %.1f MiB: %" PRIu64 " of %" PRIu64 " checks over it (%.1f MiB resident at the last); "
			  "symbol cache kept under %.1f MiB, %" PRIu64 " times lowered, %" PRIu64 " modules and perf maps "
			  "evicted for it; intervals end at %.1f MiB (%" PRIu64 " times halved)", (double)m.memory.limit / (1 << 20),
			  m.memory.checks_over, m.memory.checks, (double)m.memory.rss / (1 << 20),
			  (double)ss->module_byte_bound / (1 << 20), m.memory.lowered, ss->byte_bound_evictions,
			  (double)m.memory.interval_budget / (1 << 20), m.memory.intervals_shrunk);
	if (ss->cu_builds || ss->cus_prebuilt)
		log_debug("compile units: %" PRIu64 " built by their module's open (%.1f ms of CPU); %" PRIu64 " first "
			  "lookups (function index, line program) took %.1f ms (%.1f ms of CPU) in all, %.2f ms (%.2f ms of "
			  "CPU) at most", ss->cus_prebuilt, (double)ss->cus_prebuilt_cpu_ns / 1e6, ss->cu_builds,
			  (double)ss->cu_build_ns / 1e6, (double)ss->cu_build_cpu_ns / 1e6, (double)ss->cu_build_ns_max / 1e6,
			  (double)ss->cu_build_cpu_ns_max / 1e6);
	if (m.ceiling.max_percent > 0) {
		uint64_t kernel_lost = m.bpf[OTELPROF_CNT_CPU_SHED_SPENT], sampled = m.bpf[OTELPROF_CNT_CPU_SHED_SAMPLED];

		log_msg(m.samples_shed + kernel_lost + sampled ? LOG_LEVEL_INFO : LOG_LEVEL_DEBUG,
			"CPU ceiling %.2f%% of a CPU: %" PRIu64 " %s over it, %" PRIu64 " spent before their end; "
			"%" PRIu64 " samples dropped for it (%" PRIu64 " in the kernel, %" PRIu64 " as read), %" PRIu64
			" more shed in the kernel 1 in N kept (each kept one counts N); level now %s, the last second "
			"%.2f%%", m.ceiling.max_percent, m.ceiling.windows_over,
			plural(m.ceiling.windows_over, "second", "seconds"), m.ceiling.windows_spent,
			m.samples_shed + kernel_lost, kernel_lost, m.samples_shed, sampled,
			cpu_shed_level_name(m.ceiling.level), m.ceiling.last_percent);
	}
	log_debug("symbolizer: %" PRIu64 " lookups, %" PRIu64 " symbolized, %" PRIu64 " outside mappings, %" PRIu64
		  " processes gone (%" PRIu64 " of them given their mappings from the kernel's mmap events, %" PRIu64
		  " more completed from them), %" PRIu64
		  " pids running another process or program when read again, %" PRIu64
		  " modules loaded, %" PRIu64 " failed to open", ss->lookups, ss->symbolized, ss->no_mapping,
		  ss->process_gone, ss->processes_from_history, ss->maps_completed_from_history, ss->process_changed,
		  ss->modules_loaded, ss->module_open_failed);
	log_debug("process maps: %" PRIu64 " new processes from the kernel's mmap events (no /proc/PID/maps read), "
		  "asked again %" PRIu64 " times; /proc/PID/maps read %" PRIu64 " times, new processes read: %" PRIu64
		   " with no history, %" PRIu64 " forked not exec'd, %" PRIu64 " with a gap in their history, %" PRIu64
		  " with nothing mapped yet (in their execve); %" PRIu64
		  " process checks answered from the events' mappings; %" PRIu64 " served from the events read from /proc "
		  "after a gap", ss->processes_from_events, ss->maps_events_rereads,
		  ss->maps_file_reads, ss->maps_read_no_history, ss->maps_read_inherited, ss->maps_read_gap,
		  ss->maps_read_unmapped, ss->maps_checks_from_events, ss->maps_events_gap);
	if (m.mmap_events_enabled)
		log_debug("mmap events: %" PRIu64 " records read on %u CPUs, %" PRIu64 " lost, %" PRIu64 " malformed; "
			  "histories: %" PRIu64 " pids now, %" PRIu64 " events kept, %" PRIu64 " pids dropped (full), %"
			  PRIu64 " events dropped, %" PRIu64 " mappings dropped (paths' bytes), %" PRIu64
			  " expired; lookups: %" PRIu64 " found, %" PRIu64 " not found, %" PRIu64 " refused (events lost)",
			  m.mmap_events.records, m.mmap_events.cpus, m.mmap_events.lost, m.mmap_events.malformed,
			  m.mmap_store.pids, m.mmap_store.events, m.mmap_store.pids_dropped, m.mmap_store.events_dropped,
			  m.mmap_store.paths_dropped, m.mmap_store.expired, m.mmap_store.found, m.mmap_store.not_found,
			  m.mmap_store.untrusted);
	if (ss->kallsyms_full_reads || ss->kallsyms_cache_hits)
		log_debug("kernel symbols: %" PRIu64 " read from the cache, %" PRIu64 " full reads of kallsyms (%" PRIu64
			  " reloads, %" PRIu64 " kept as the cache's table and what it leaves out); cache: %" PRIu64 " stale or missing, %" PRIu64 " refused, %" PRIu64 " saved, %" PRIu64
			  " saves failed; reads on the reader's thread %.1f ms (%.1f ms of CPU), %" PRIu64 " lookups answered "
			  "before its read was ready",
			  ss->kallsyms_cache_hits, ss->kallsyms_full_reads, ss->kallsyms_reloads,
			  ss->kallsyms_joined, ss->kallsyms_cache_stale, ss->kallsyms_cache_refused, ss->kallsyms_cache_writes,
			  ss->kallsyms_cache_write_failed, (double)ss->kallsyms_thread_ns / 1e6,
			  (double)ss->kallsyms_thread_cpu_ns / 1e6, ss->kallsyms_lookups_before_read);
	if (ss->debug_plain_read || ss->debug_plain_written || ss->debug_plain_failed)
		log_debug("debug files kept decompressed: %" PRIu64 " opened from their copy, %" PRIu64 " copies made, %" PRIu64
			  " neither (inflated at open), %" PRIu64 " removed for room", ss->debug_plain_read,
			  ss->debug_plain_written, ss->debug_plain_failed, ss->debug_plain_evicted);
	if (ss->modules_too_big)
		log_info("%" PRIu64 " %s not inflated: compressed sections claim more than half of --symbol-cache allows "
			 "(their frames keep build ids and ELF symbols)", ss->modules_too_big,
			 plural(ss->modules_too_big, "binary or debug file", "binaries or debug files"));
	if (ss->process_table_full || ss->processes_evicted)
		log_info("Mappings not kept (symbolizer process table full): %" PRIu64 " %s; ended processes' "
			 "mappings evicted to make room: %" PRIu64 "; lookups that found no mappings: %" PRIu64,
			 ss->process_table_full, plural(ss->process_table_full, "process", "processes"),
			 ss->processes_evicted, ss->instance_unknown);
	{
		const struct process_table_counters *pc = process_table_counters(src->processes);

		log_debug("processes: %zu tracked, %" PRIu64 " added, %" PRIu64 " evicted (table full), %" PRIu64
			  " samples found no process, %" PRIu64 " /proc reads failed; records: %" PRIu64 " exec, %" PRIu64
			  " fork, %" PRIu64 " exit, %" PRIu64 " lost (ring buffer full)",
			  process_table_count(src->processes), pc->added, pc->evicted, pc->no_process, pc->proc_read_failed,
			  pc->execs, pc->forks, pc->exits, (uint64_t)bc[OTELPROF_CNT_PROC_EVENTS_LOST]);
		log_debug("exec records missed: %" PRIu64 " programs found exec'd by their samples (%" PRIu64 " of them "
			  "taken during the execve: the record came after; %" PRIu64 " gone before /proc said what they "
			  "run: described by name and cgroup only), %" PRIu64 " forks not given their parent's description",
			  pc->exec_unrecorded, pc->exec_record_late, pc->exec_unrecorded_unknown, pc->fork_uninherited);
		log_debug("cgroups: %" PRIu64 " found by the records' cgroup id, %" PRIu64 " ids named no cgroup any more; "
			  "%" PRIu64 " exec'd programs' mappings not read again (list full)",
			  pc->cgroup_resolved, pc->cgroup_unresolved, rc->settle_dropped);
		if (pc->evicted)
			log_info("%" PRIu64 " %s evicted from the full process table", pc->evicted,
				 plural(pc->evicted, "process", "processes"));
		if (pc->no_process)
			log_info("%" PRIu64 " %s of processes that ended before they could be described", pc->no_process,
				 plural(pc->no_process, "sample", "samples"));
	}
	unwind_sample_log(&rc->unwind, ss);
	if (m.python_processes.checks)
		log_python(&m, bc);
	if (m.go_processes.published || m.go_processes.unknown)
		log_go_labels(&m, bc);
	if (src->off_cpu)
		log_off_cpu(src);
	if (src->heap && src->alloc_probes)
		log_alloc(src);
}

void self_report_log_start(const struct options *opts, unsigned ncpus)
{
	if (opts->npids)
		log_info("Profiling %zu %s on %u %s at %u Hz", opts->npids, plural(opts->npids, "process", "processes"),
			 ncpus, plural(ncpus, "CPU", "CPUs"), opts->frequency);
	else
		log_info("Profiling every process on %u %s at %u Hz", ncpus, plural(ncpus, "CPU", "CPUs"), opts->frequency);
}
