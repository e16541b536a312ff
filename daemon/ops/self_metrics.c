// SPDX-License-Identifier: Apache-2.0
#include "ops/self_metrics.h"

#include "profile/profile.h"

#include <dirent.h>
#include <inttypes.h>
#include <malloc.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "build_revision.h"
#include "log.h"

enum metric_type { COUNTER, GAUGE };

/* One exposed time series: name{label="value"} and its number. */
struct series {
	const char *name;
	enum metric_type type;
	const char *help;
	const char *label;       /* "reason=\"ring_buffer_full\"", or NULL */
	double value;
};

uint64_t self_metrics_busy_cpu_ticks(void)
{
	unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait, &irq,
		   &softirq, &steal);
	fclose(f);
	return n == 8 ? user + nice + system + irq + softirq + steal : 0;
}

/* Unix time the daemon started: boot time (/proc/stat btime) plus its start in clock ticks after
 * boot (/proc/self/stat field 22). Read once: it does not change. */
static double process_start_time(void)
{
	static double start;
	unsigned long long btime = 0, ticks = 0;
	char buf[1024], *p;
	FILE *f;

	if (start)
		return start;
	f = fopen("/proc/stat", "re");
	if (f) {
		while (fgets(buf, sizeof(buf), f))
			if (sscanf(buf, "btime %llu", &btime) == 1)
				break;
		fclose(f);
	}
	f = fopen("/proc/self/stat", "re");
	if (f) {
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		/* After the command name in parentheses (which may hold spaces): fields 3 onwards. */
		p = p ? strrchr(buf, ')') : NULL;
		if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
				&ticks) != 1)
			ticks = 0;
	}
	if (btime && ticks)
		start = (double)btime + (double)ticks / (double)sysconf(_SC_CLK_TCK);
	return start;
}

static uint64_t count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	uint64_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n ? n - 1 : 0; /* not the directory's own descriptor */
}

/* The allocator's own account (glibc; a sanitizer's allocator answers zeros): what the heap part of
 * the RSS is made of, blocks in use against free ones kept (docs/memory.md). */
static void read_heap(struct self_metrics *m)
{
	struct mallinfo2 mi = mallinfo2();

	m->heap_in_use_bytes = mi.uordblks + mi.hblkhd;
	m->heap_free_bytes = mi.fordblks;
}

void self_metrics_read_process(struct self_metrics *m, bool served)
{
	struct rusage ru;
	struct rlimit rl;
	long size = 0, pages = 0;
	FILE *f;

	if (!getrusage(RUSAGE_SELF, &ru)) {
		m->cpu_seconds = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
				 ru.ru_stime.tv_usec / 1e6;
		m->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;
	}
	f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &pages) == 2) {
			m->rss_bytes = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
			m->virtual_bytes = (uint64_t)size * (uint64_t)sysconf(_SC_PAGESIZE);
		}
		fclose(f);
	}
	if (served) {
		read_heap(m);
		m->open_fds = count_open_fds();
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl))
		m->max_fds = rl.rlim_cur;
	m->start_time_seconds = process_start_time();
}

/* otelprofd_build_info's labels: the version and the git revision the binary was built from. */
static const char *build_info_labels(void)
{
	static char labels[128];

	if (!*labels)
		snprintf(labels, sizeof(labels), "version=\"%s\",revision=\"%s\"", OTELPROFD_VERSION, OTELPROFD_REVISION);
	return labels;
}

#define C(n, h, l, v) { "otelprofd_" n, COUNTER, h, l, (double)(v) }
#define G(n, h, l, v) { "otelprofd_" n, GAUGE, h, l, (double)(v) }
/* The standard process metrics, named as the Prometheus client libraries name them. */
#define PC(n, h, v) { "process_" n, COUNTER, h, NULL, (double)(v) }
#define PG(n, h, v) { "process_" n, GAUGE, h, NULL, (double)(v) }
#define N(table) (sizeof(table) / sizeof((table)[0]))

static size_t collect(const struct self_metrics *m, struct series *s, size_t max)
{
	const struct agg_counters *a = &m->aggregate;
	const struct symbolizer_stats *y = &m->symbolizer;
	const struct process_table_counters *p = &m->processes;
	const struct exporter_stats *e = &m->export;
	const struct runtime_bpf_stats *rt = m->bpf_runtimes;
	const char *dropped = "samples dropped, by reason";
	const char *symfail = "address lookups that found no function, by cause";
	size_t n = 0;
	struct series all[] = {
		G("build_info", "1, with the version and git revision of this build as labels", build_info_labels(), 1),
		PC("cpu_seconds_total", "Total user and system CPU time spent in seconds.", m->cpu_seconds),
		PG("resident_memory_bytes", "Resident memory size in bytes.", m->rss_bytes),
		PG("virtual_memory_bytes", "Virtual memory size in bytes.", m->virtual_bytes),
		PG("open_fds", "Number of open file descriptors.", m->open_fds),
		PG("max_fds", "Maximum number of open file descriptors.", m->max_fds),
		PG("start_time_seconds", "Start time of the process since unix epoch in seconds.", m->start_time_seconds),
		C("perf_events_total", "perf events that ran the BPF program", NULL, m->bpf[OTELPROF_CNT_SAMPLES]),
		C("samples_total", "samples aggregated", NULL, a->samples),
		C("samples_skipped_total", "samples not kept by design, by reason", "reason=\"other_process\"",
		  m->bpf[OTELPROF_CNT_FILTERED]),
		C("samples_skipped_total", NULL, "reason=\"other_cgroup\"", m->bpf[OTELPROF_CNT_CGROUP_FILTERED]),
		C("samples_skipped_total", NULL, "reason=\"other_pid_namespace\"", m->bpf[OTELPROF_CNT_OTHER_PIDNS]),
		C("samples_skipped_total", NULL, "reason=\"idle\"", m->bpf[OTELPROF_CNT_IDLE]),
		C("samples_dropped_total", dropped, "reason=\"ring_buffer_full\"", m->bpf[OTELPROF_CNT_RINGBUF_FULL]),
		C("samples_dropped_total", NULL, "reason=\"stack_table_full\"", a->dropped_entries),
		C("samples_dropped_total", NULL, "reason=\"stack_bytes\"", a->dropped_stack_bytes),
		C("samples_dropped_total", NULL, "reason=\"sample_bound\"", a->dropped_samples),
		C("samples_dropped_total", NULL, "reason=\"out_of_memory\"", a->dropped_nomem),
		C("samples_dropped_total", NULL, "reason=\"malformed\"", a->malformed + m->malformed_records),
		C("samples_dropped_total", NULL, "reason=\"profile_table_full\"", a->dropped_at_build),
		C("samples_dropped_total", NULL, "reason=\"cpu_ceiling\"", m->samples_shed),
		C("samples_dropped_total", NULL, "reason=\"cpu_ceiling_kernel\"", m->bpf[OTELPROF_CNT_CPU_SHED_SPENT]),
		C("samples_sampled_down_total", "samples the kernel left out over the CPU ceiling while keeping 1 in N: "
		  "each kept sample counts N, so the profile's totals include them", NULL,
		  m->bpf[OTELPROF_CNT_CPU_SHED_SAMPLED]),
		C("samples_dropped_total", NULL, "reason=\"at_exit\"", m->samples_at_exit),
		C("samples_dropped_total", NULL, "reason=\"stale\"", m->samples_stale),
		C("intervals_ended_early_total", "export intervals ended before their time: their samples held more "
		  "than --interval-memory", NULL, a->ended_early),
		G("aggregate_bytes", "bytes the export interval's samples hold, about (at the last check)", NULL, a->bytes),
		C("samples_put_off_total", "samples handled again at the next turn: a module they needed was not "
		  "opened within the turn's budget", NULL, m->samples_put_off),
		G("cpu_ceiling_percent", "--max-cpu: the CPU ceiling in percent of one CPU (0: none)", NULL,
		  m->ceiling.max_percent),
		G("cpu_window_percent", "the daemon's CPU over the last whole second, in percent of one CPU (with --max-cpu)",
		  NULL, m->ceiling.last_percent),
		G("cpu_shed_level", "work shed over the CPU ceiling: 0 none, 1 module opens deferred to export, "
		  "2 samples shed in the kernel", NULL, m->ceiling.level),
		G("cpu_shed_keep_every", "over the CPU ceiling, the kernel keeps 1 on-CPU sample and 1 off-CPU wait in this many (1: all)",
		  NULL, m->ceiling.level == CPU_SHED_DROP_SAMPLES ? m->ceiling.keep_every : 1),
		C("cpu_ceiling_windows_over_total", "seconds that ended over the CPU ceiling", NULL, m->ceiling.windows_over),
		C("cpu_ceiling_windows_spent_total", "seconds whose CPU share was spent before they ended (samples "
		  "dropped until then)", NULL, m->ceiling.windows_spent),
		C("ring_buffer_reads_out_of_time_total", "ring buffer reads stopped at their time budget (50 ms)", NULL,
		  m->ring_reads_out_of_time),
		G("loop_turn_max_seconds", "the event loop's longest turn so far: the most time between two looks at "
		  "signals and the deadline", NULL, (double)m->loop_turns.max_ns / 1e9),
		G("loop_turn_max_cpu_seconds", "the most CPU time the event loop's thread ran in one turn (a turn "
		  "longer than that waited for a CPU)", NULL, (double)m->loop_turns.max_cpu_turn_ns / 1e9),
		C("loop_turns_long_total", "turns of the event loop over 100 ms", NULL, m->loop_turns.over_bound),
		C("records_put_off_total", "off-CPU and allocation stacks handled at a later turn (a module they "
		  "needed was still opening, or an older one of their thread or address was put off)",
		  "kind=\"stack\"", m->stacks_put_off),
		C("records_put_off_total", NULL, "kind=\"closing\"", m->closings_held),
		C("loop_turns_total", "turns of the event loop, by the time they took",
		  "took=\"under_10ms\"", m->loop_turns.in_range[0]),
		C("loop_turns_total", NULL, "took=\"10_to_25ms\"", m->loop_turns.in_range[1]),
		C("loop_turns_total", NULL, "took=\"25_to_50ms\"", m->loop_turns.in_range[2]),
		C("loop_turns_total", NULL, "took=\"50_to_75ms\"", m->loop_turns.in_range[3]),
		C("loop_turns_total", NULL, "took=\"75_to_100ms\"", m->loop_turns.in_range[4]),
		C("loop_turns_total", NULL, "took=\"over_100ms\"", m->loop_turns.in_range[5]),
		C("ring_buffer_full_during_total", "samples the ring buffer had no room for, by what the event loop "
		  "was doing: starting, between turns (waiting for a wakeup or a CPU), or in a turn, by its longest "
		  "phase", "during=\"start\"", m->loop_turns.dropped_at_start),
		C("ring_buffer_full_during_total", NULL, "during=\"between_turns\"", m->loop_turns.dropped_between),
		C("ring_buffer_full_during_total", NULL, "during=\"read\"", m->loop_turns.dropped_in[LOOP_PHASE_READ]),
		C("ring_buffer_full_during_total", NULL, "during=\"replay\"", m->loop_turns.dropped_in[LOOP_PHASE_REPLAY]),
		C("ring_buffer_full_during_total", NULL, "during=\"build\"", m->loop_turns.dropped_in[LOOP_PHASE_BUILD]),
		C("ring_buffer_full_during_total", NULL, "during=\"other\"", m->loop_turns.dropped_in[LOOP_PHASE_OTHER]),
		C("ring_buffer_full_in_long_turns_total", "of those in turns, the samples dropped in turns over 100 ms", NULL,
		  m->loop_turns.dropped_long),
		G("ring_buffer_unread_max_seconds", "the longest time from one read of the ring buffer to the next", NULL,
		  (double)m->loop_turns.read_gap_max_ns / 1e9),
		C("stack_errors_total", "stack walks the kernel could not do, by side", "side=\"kernel\"",
		  m->bpf[OTELPROF_CNT_KSTACK_ERROR]),
		C("stack_errors_total", NULL, "side=\"user\"", m->bpf[OTELPROF_CNT_USTACK_ERROR]),
		C("symbolizer_lookups_total", "user and kernel address lookups", NULL, y->lookups),
		C("symbolizer_symbolized_total", "lookups that found a function", NULL, y->symbolized),
		C("symbolizer_failures_total", symfail, "cause=\"no_mapping\"", y->no_mapping),
		C("symbolizer_failures_total", NULL, "cause=\"process_gone\"", y->process_gone),
		C("symbolizer_failures_total", NULL, "cause=\"process_changed\"", y->process_changed),
		C("symbolizer_failures_total", NULL, "cause=\"module_open_failed\"", y->module_open_failed),
		C("symbolizer_failures_total", NULL, "cause=\"module_cache_full\"", y->module_cache_full),
		C("symbolizer_failures_total", NULL, "cause=\"process_maps_full\"", y->process_table_full),
		C("symbolizer_failures_total", NULL, "cause=\"process_maps_unknown\"", y->instance_unknown),
		C("log_lines_dropped_total", "log lines not written: stderr (a pipe, the journal) was not read in time "
		  "and the writer's queue was full", NULL, log_lines_dropped()),
		C("strings_repaired_total", "names given to profiles that were not UTF-8 (a process's name, a path, a "
		  "binary's symbol), each byte that starts no well-formed sequence replaced by '?'", NULL,
		  profile_strings_repaired()),
		C("symbolizer_roots_used_after_exit_total", "files of processes that had exited opened through the "
		  "root directory held for them", NULL, y->roots_used_after_exit),
		C("symbolizer_roots_replaced_total", "root directories held for exited processes' files dropped for "
		  "another (64 distinct roots: the host's, containers')", NULL, y->roots_replaced),
		C("symbolizer_processes_evicted_total",
		  "ended processes' mappings dropped to make room for live ones (their samples lose symbols)", NULL,
		  y->processes_evicted),
		C("symbolizer_modules_bad_total", "binaries marked bad (not ELF, corrupt, over bounds, replaced)", NULL,
		  y->modules_bad),
		C("symbolizer_module_cache_hits_total", "mappings whose file was cached", NULL, y->module_cache_hits),
		C("symbolizer_module_cache_misses_total", "mappings whose file had to be opened", NULL,
		  y->module_cache_misses),
		C("symbolizer_modules_evicted_total", "modules evicted from the cache", NULL, y->modules_evicted),
		C("symbolizer_vdso_frames_total", "frames named from the vDSO's image ([vdso] mappings)", NULL,
		  y->vdso_frames),
		C("symbolizer_vdso_refused_total", "[vdso] mappings not served by the vDSO's image (unreadable, or "
		  "another ABI's)", NULL, y->vdso_refused),
		G("symbolizer_modules", "modules in the cache", NULL, y->modules_cached),
		G("symbolizer_module_bytes", "bytes the cached modules account for", NULL, y->module_bytes),
		C("symbolizer_module_bytes_over_total", "times only the module in use was left over the byte bound",
		  NULL, y->module_bytes_over),
		G("symbolizer_module_byte_bound", "bytes the symbol cache is kept under now: --symbol-cache, or less "
		  "under --memory-limit", NULL, y->module_byte_bound),
		C("symbolizer_byte_bound_evictions_total", "modules and perf maps evicted at once because "
		  "--memory-limit lowered the symbol cache's bound", NULL, y->byte_bound_evictions),
		G("symbolizer_files_kept", "files kept open for mappings whose module was evicted or not opened yet",
		  NULL, y->files_kept),
		C("symbolizer_files_kept_dropped_total", "such files not kept (bound reached): opened through /proc "
		  "later, which fails once their process is gone", NULL, y->files_kept_dropped),
		C("symbolizer_modules_reopened_kept_total", "modules opened through a kept file", NULL,
		  y->modules_reopened_kept),
		C("symbolizer_modules_share_refused_total",
		  "files claiming a cached build id that were not identical copies of a root-owned file (own module)",
		  NULL, y->modules_share_refused),
		C("symbolizer_perf_maps_refused_total", "JIT perf maps refused, by reason", "reason=\"untrusted\"",
		  y->perf_maps_refused),
		C("symbolizer_perf_maps_refused_total", NULL, "reason=\"too_big\"", y->perf_maps_too_big),
		C("symbolizer_perf_maps_evicted_total", "JIT perf maps dropped to keep the byte bound", NULL,
		  y->perf_maps_evicted),
		G("symbolizer_perf_map_bytes", "bytes the loaded JIT perf maps hold (in --symbol-cache)", NULL,
		  y->perf_map_bytes),
		C("symbolizer_debuglink_too_big_total", "debuglink candidates too big to CRC-check", NULL,
		  y->debuglink_too_big),
		C("symbolizer_debug_plain_total", "debug files with compressed DWARF: opened from their decompressed "
		  "copy, copies made, neither (inflated at open), copies removed for the directory's bound",
		  "result=\"read\"", y->debug_plain_read),
		C("symbolizer_debug_plain_total", NULL, "result=\"written\"", y->debug_plain_written),
		C("symbolizer_debug_plain_total", NULL, "result=\"failed\"", y->debug_plain_failed),
		C("symbolizer_debug_plain_total", NULL, "result=\"evicted\"", y->debug_plain_evicted),
		C("symbolizer_modules_too_big_total", "binaries and debug files whose compressed sections claim more "
		  "than half of --symbol-cache allows (kept without what they would inflate)", NULL, y->modules_too_big),
		C("symbolizer_module_opens_total", "modules opened, by tier: full (debug info) or symbols (ELF symbols "
		  "and .eh_frame only)", "tier=\"full\"", y->modules_full),
		C("symbolizer_module_opens_total", NULL, "tier=\"symbols\"", y->modules_symbols_tier),
		C("symbolizer_symbols_tier_total", "modules served by the symbols tier, by reason", "reason=\"too_big\"",
		  y->modules_tier_too_big),
		C("symbolizer_symbols_tier_total", NULL, "reason=\"thrash\"", y->modules_tier_thrash),
		C("symbolizer_symbols_tier_total", NULL, "reason=\"slow\"", y->modules_tier_slow),
		C("symbolizer_module_pressure_evictions_total", "modules evicted to make room (not for being idle)", NULL,
		  y->module_pressure_evictions),
		C("symbolizer_modules_not_admitted_total", "opens refused: a module out twice under pressure lately "
		  "did not fit without evicting another", NULL, y->modules_not_admitted),
		C("symbolizer_module_opens_deferred_total", "lookups whose module was not opened: past a turn's or an "
		  "export's open budget, or deferred over the CPU ceiling", NULL, y->module_opens_deferred),
		C("symbolizer_module_history_dropped_total", "remembered modules forgotten for newer ones", NULL,
		  y->module_history_dropped),
		C("symbolizer_module_open_seconds_total", "time spent opening modules", NULL,
		  (double)y->module_open_ns_total / 1e9),
		G("symbolizer_module_open_seconds_max", "the longest module open", NULL, (double)y->module_open_ns_max / 1e9),
		C("symbolizer_module_index_seconds_total", "of the opens' time, building the modules' indexes "
		  "(symbol table, address-to-CU table) so that their first lookups do not", NULL,
		  (double)y->module_index_ns_total / 1e9),
		C("symbolizer_index_builds_at_lookup_total", "module indexes built by a lookup rather than by the "
		  "module's open", NULL, y->module_index_builds_at_lookup),
		C("symbolizer_cus_built_at_open_total", "the largest compile units (192 KiB of DWARF or more, 4 a module "
		  "at most) whose function index and line program were built by their module's open, so that their "
		  "first lookups do not", NULL, y->cus_prebuilt),
		C("symbolizer_cu_first_lookups_total", "compile units' first lookups: their function index and line "
		  "program built by the lookup, on the loop", NULL, y->cu_builds),
		C("symbolizer_cu_first_lookup_seconds_total", "the time those took, by clock: wall, or the loop's CPU",
		  "clock=\"wall\"", (double)y->cu_build_ns / 1e9),
		C("symbolizer_cu_first_lookup_seconds_total", NULL, "clock=\"cpu\"", (double)y->cu_build_cpu_ns / 1e9),
		G("symbolizer_cu_first_lookup_seconds_max", "the longest of those, by clock", "clock=\"wall\"",
		  (double)y->cu_build_ns_max / 1e9),
		G("symbolizer_cu_first_lookup_seconds_max", NULL, "clock=\"cpu\"", (double)y->cu_build_cpu_ns_max / 1e9),
		G("symbolizer_module_open_bytes_max", "the most bytes one module open accounted for", NULL,
		  y->module_open_bytes_max),
		C("symbolizer_notices_dropped_total", "symbols-tier notices not logged (too many at once)", NULL,
		  y->notices_dropped),
		G("kallsyms_hidden", "1 when kernel addresses are hidden (kptr_restrict)", NULL, y->kallsyms_hidden),
		C("kallsyms_reads_total", "kernel symbol tables read, by source: the per-boot cache file, or "
		  "/proc/kallsyms whole", "source=\"cache\"", y->kallsyms_cache_hits),
		C("kallsyms_reads_total", NULL, "source=\"kallsyms\"", y->kallsyms_full_reads),
		C("kallsyms_thread_read_seconds_total", "time reads of kallsyms whole took on their own thread (a frame "
		  "the cache's table could not name, a reload), by clock: wall, or the thread's CPU", "clock=\"wall\"",
		  (double)y->kallsyms_thread_ns / 1e9),
		C("kallsyms_thread_read_seconds_total", NULL, "clock=\"cpu\"", (double)y->kallsyms_thread_cpu_ns / 1e9),
		C("kallsyms_lookups_before_read_total", "kernel lookups the cache's table could not answer, answered "
		  "from it before kallsyms read whole on its thread was ready (by the turn's deadline)", NULL,
		  y->kallsyms_lookups_before_read),
		C("kallsyms_cache_failures_total", "the kernel symbols' cache file not read or not saved, by reason: "
		  "refused (owner, mode, link, malformed) or a save that failed", "reason=\"refused\"",
		  y->kallsyms_cache_refused),
		C("kallsyms_cache_failures_total", NULL, "reason=\"save_failed\"", y->kallsyms_cache_write_failed),
		C("process_events_total", "process records from BPF, by kind", "kind=\"exec\"", p->execs),
		C("process_events_total", NULL, "kind=\"fork\"", p->forks),
		C("process_events_total", NULL, "kind=\"exit\"", p->exits),
		C("process_lost_records_total", "process records lost in the kernel (ring buffer full)", NULL,
		  m->bpf[OTELPROF_CNT_PROC_EVENTS_LOST]),
		C("processes_sampled_total", "processes (or programs they exec'd) given their first sample", NULL,
		  p->sampled),
		C("processes_evicted_total", "process table entries dropped because it was full", NULL, p->evicted),
		C("samples_without_process_total", "samples whose process could not be described", NULL, p->no_process),
		C("process_exec_unrecorded_total", "programs a sample showed exec'd before their exec record was read "
		  "(never as the program before), by outcome: the record came after (the sample was taken during the "
		  "execve), or it was lost and /proc described the program, or the process was gone (name and cgroup "
		  "only)", "outcome=\"record_late\"", p->exec_record_late),
		C("process_exec_unrecorded_total", NULL, "outcome=\"described\"",
		  p->exec_unrecorded - p->exec_record_late - p->exec_unrecorded_unknown),
		C("process_exec_unrecorded_total", NULL, "outcome=\"unknown\"", p->exec_unrecorded_unknown),
		C("process_forks_uninherited_total", "forks not given their parent's description (the parent's entry "
		  "is of another program, or unknown): read from /proc at the child's first sample", NULL,
		  p->fork_uninherited),
		C("proc_read_failures_total", "reads of /proc/PID that failed", NULL, p->proc_read_failed),
		C("cgroup_by_id_total", "cgroups found by a record's cgroup id (/proc gone or the process moved), "
		  "by outcome", "outcome=\"resolved\"", p->cgroup_resolved),
		C("cgroup_by_id_total", NULL, "outcome=\"gone\"", p->cgroup_unresolved),
		G("bpf_load_seconds", "time loading the BPF programs took at start, mostly the kernel's verifier", NULL,
		  m->bpf_load_ns / 1e9),
		G("bpf_verified_instructions", "instructions the kernel's verifier processed to load the BPF programs "
		  "at start (the runtimes' parts apart)", NULL, m->bpf_verified_insns),
		G("bpf_runtime_loaded", "a runtime's BPF part is loaded (1); 0: not wanted, waiting for the runtime's "
		  "first process, or refused", "runtime=\"python\"", rt[RUNTIME_BPF_PYTHON].state == RUNTIME_BPF_LOADED),
		G("bpf_runtime_loaded", NULL, "runtime=\"go\"", rt[RUNTIME_BPF_GO].state == RUNTIME_BPF_LOADED),
		C("bpf_runtime_load_failures_total", "loads of a runtime's BPF part the kernel refused (its processes "
		  "keep native frames, no labels)", "runtime=\"python\"", rt[RUNTIME_BPF_PYTHON].failures),
		C("bpf_runtime_load_failures_total", NULL, "runtime=\"go\"", rt[RUNTIME_BPF_GO].failures),
		G("bpf_runtime_verified_instructions", "instructions the kernel's verifier processed to load a runtime's "
		  "BPF part, at its first process (0 until then)", "runtime=\"python\"", rt[RUNTIME_BPF_PYTHON].verified_insns),
		G("bpf_runtime_verified_instructions", NULL, "runtime=\"go\"", rt[RUNTIME_BPF_GO].verified_insns),
		G("bpf_runtime_load_seconds", "time loading a runtime's BPF part took, at its first process",
		  "runtime=\"python\"", rt[RUNTIME_BPF_PYTHON].load_ns / 1e9),
		G("bpf_runtime_load_seconds", NULL, "runtime=\"go\"", rt[RUNTIME_BPF_GO].load_ns / 1e9),
		C("cpu_seconds_total", "otelprofd's own user and system CPU time", NULL, m->cpu_seconds),
		G("resident_memory_bytes", "otelprofd's resident memory", NULL, m->rss_bytes),
		G("resident_memory_peak_bytes", "otelprofd's peak resident memory", NULL, m->peak_rss_bytes),
		G("memory_limit_bytes", "--memory-limit: resident memory the symbol cache is shrunk to keep "
		  "otelprofd under (0: none)", NULL, m->memory.limit),
		C("memory_limit_over_total", "checks (one a second) that found otelprofd's resident memory over "
		  "--memory-limit", NULL, m->memory.checks_over),
		G("memory_limit_interval_bytes", "--memory-limit: the bytes an export interval may hold now "
		  "(--interval-memory, or less while the limit is not kept)", NULL, m->memory.interval_budget),
		C("memory_limit_intervals_shrunk_total", "times --memory-limit halved the bytes an export interval "
		  "may hold (the symbol cache at its floor and the limit still not kept)", NULL, m->memory.intervals_shrunk),
		G("heap_bytes", "the C library allocator's bytes: given out (in_use) and held free in its arenas (free)",
		  "state=\"in_use\"", m->heap_in_use_bytes),
		G("heap_bytes", NULL, "state=\"free\"", m->heap_free_bytes),
		G("ready", "1 when sampling works and profiles are delivered", NULL, m->ready),
	};
	struct series exported[] = {
		C("export_requests_total", "export requests, by outcome", "status=\"sent\"", e->sent),
		C("export_requests_total", NULL, "status=\"dropped_queue_full\"", e->dropped_queue_full),
		C("export_requests_total", NULL, "status=\"dropped_retries_exhausted\"", e->dropped_retries),
		C("export_requests_total", NULL, "status=\"dropped_permanent_error\"", e->dropped_permanent),
		C("export_requests_total", NULL, "status=\"dropped_shutdown\"", e->dropped_shutdown),
		C("export_attempts_total", "sends to the collector, retries included", NULL, e->attempts),
		C("export_retries_total", "sends retried after a retryable error", NULL, e->retries),
		C("export_bytes_total", "uncompressed bytes the collector accepted", NULL, e->bytes_sent),
		C("export_samples_total", "samples the collector accepted", NULL, e->samples_sent),
		C("export_samples_dropped_total",
		  "samples in dropped requests, too large to send, or in a profile the encoder had no room for", NULL,
		  e->dropped_samples + m->export_dropped_unsent),
		C("export_rejected_profiles_total", "profiles the collector rejected in a partial success", NULL,
		  e->rejected_profiles),
		G("export_queue_requests", "requests waiting to be sent", NULL, e->queued),
		G("export_queue_bytes", "bytes waiting to be sent", NULL, e->queued_bytes),
	};
	struct series kube[] = {
		C("k8s_requests_total", "Kubernetes API requests, by kind and outcome", "kind=\"list\",status=\"ok\"",
		  m->k8s.lists),
		C("k8s_requests_total", NULL, "kind=\"list\",status=\"error\"", m->k8s.list_errors),
		C("k8s_requests_total", NULL, "kind=\"watch\",status=\"ok\"", m->k8s.watches),
		C("k8s_requests_total", NULL, "kind=\"watch\",status=\"error\"", m->k8s.watch_errors),
		C("k8s_events_total", "pod watch events applied", NULL, m->k8s.events),
	};

	struct series unwinding[] = {
		C("unwind_samples_total", "samples by how their user stack was found", "result=\"unwound\"",
		  m->unwind.unwound),
		C("unwind_samples_total", NULL, "result=\"kept_frame_pointers\"", m->unwind.kept_fp),
		C("unwind_samples_total", NULL, "result=\"frame_pointers_longer\"", m->unwind.fp_longer),
		C("unwind_samples_total", NULL, "result=\"malformed_window\"", m->unwind.malformed),
		C("unwind_truncated_total", "unwound stacks cut by the copied window or the depth bound", NULL,
		  m->unwind.truncated),
		C("unwind_frames_total", "frames unwound, by method", "method=\"cfi\"",
		  y->unwind_frames_cfi),
		C("unwind_frames_total", NULL, "method=\"frame_pointer\"", y->unwind_frames_fp),
		C("unwind_frames_total", NULL, "method=\"go_sp_delta\"", y->go_sp_frames),
		C("unwind_go_ends_total", "walks ended where Go's traceback stops, by where", "at=\"top_frame\"",
		  y->go_top_frames),
		C("unwind_go_ends_total", NULL, "at=\"stack_switch\"", y->go_stack_switches),
		C("unwind_window_bytes_total", "user stack bytes copied by the BPF program", NULL, m->unwind.window_bytes),
		C("unwind_window_stack_tops_total", "windows ended at the top of the thread's stack, by how it was "
		  "known", "how=\"unreadable_page\"", m->bpf[OTELPROF_CNT_STACK_TOP_LEARNED]),
		C("unwind_window_stack_tops_total", NULL, "how=\"remembered\"", m->bpf[OTELPROF_CNT_STACK_TOP_USED]),
		C("unwind_window_stack_tops_total", NULL, "how=\"main_thread_start\"", m->bpf[OTELPROF_CNT_STACK_MAIN_TOP]),
		C("unwind_windows_short_total", "windows asked for 2 KiB only, not --stack-copy: the ring buffer was "
		  "more than half full", NULL, m->bpf[OTELPROF_CNT_STACK_PRESSURE]),
		C("unwind_stack_needs_total", "thread stack tops lowered to what unwinding needs, by outcome",
		  "outcome=\"set\"", m->stack_need.set),
		C("unwind_stack_needs_total", NULL, "outcome=\"set_again\"", m->stack_need.refreshed),
		C("unwind_stack_needs_total", NULL, "outcome=\"withdrawn\"", m->stack_need.withdrawn),
		C("unwind_stack_needs_total", NULL, "outcome=\"refused\"", m->stack_need.refused),
		C("unwind_stack_needs_total", NULL, "outcome=\"over_budget\"", m->stack_need.over_budget),
		C("unwind_stack_needs_total", NULL, "outcome=\"backed_off\"", m->stack_need.backed_off),
		C("unwind_seconds_total", "Time spent unwinding (estimated: one unwind in 16 is timed)", NULL, m->unwind.ns / 1e9),
	};
	struct series traces[] = {
		G("trace_processes", "processes with an OTEP 4719 process context", NULL, m->trace_processes),
		C("trace_contexts_read_total", "process contexts read (at a first sample, or when published again)",
		  NULL, m->trace.contexts_read),
		C("trace_threads_resolved_total", "processes whose otel_thread_ctx_v1 variable was found", NULL,
		  m->trace.threads_resolved),
		C("trace_samples_linked_total", "samples linked to a span (OTEP 4947 thread context)", NULL,
		  m->trace.samples_linked),
		C("trace_samples_detached_total", "samples of a process with context whose thread had no valid record",
		  NULL, m->bpf[OTELPROF_CNT_TRACE_DETACHED]),
		C("trace_read_errors_total", "thread contexts the BPF program could not read (TLS, pointer or record "
		  "in unmapped memory)", NULL, m->bpf[OTELPROF_CNT_TRACE_READ_ERROR]),
		C("trace_checks_deferred_total", "process context checks put off: over the budget of a second", NULL,
		  m->trace.checks_deferred),
		C("trace_table_full_total", "processes with a context left out: the table was full", NULL,
		  m->trace.table_full + m->trace.map_failed),
	};
	struct series off_cpu[] = {
		C("off_cpu_switches_total", "task switch-outs the off-CPU program saw", NULL,
		  m->off_cpu_bpf[OTELPROF_OFFCPU_CNT_SWITCHES]),
		C("off_cpu_sampled_total", "switch-outs chosen by --off-cpu-probability", NULL,
		  m->off_cpu_bpf[OTELPROF_OFFCPU_CNT_SAMPLED]),
		C("off_cpu_waits_total", "off-CPU waits added to the profile", NULL, m->off_cpu.waits),
		C("off_cpu_seconds_total", "their time off CPU, scaled by the sampling", NULL, m->off_cpu.wait_ns / 1e9),
		C("off_cpu_dropped_total", "off-CPU waits dropped, by reason", "reason=\"inflight_full\"",
		  m->off_cpu_bpf[OTELPROF_OFFCPU_CNT_INFLIGHT_FULL]),
		C("off_cpu_dropped_total", NULL, "reason=\"ring_buffer_full\"",
		  m->off_cpu_bpf[OTELPROF_OFFCPU_CNT_RINGBUF_FULL]),
		C("off_cpu_dropped_total", NULL, "reason=\"pending_full\"", m->off_cpu.pending_full),
		C("off_cpu_dropped_total", NULL, "reason=\"no_stack\"", m->off_cpu.unmatched_ends),
		C("off_cpu_dropped_total", NULL, "reason=\"aggregate\"", m->off_cpu.aggregate_dropped),
		C("off_cpu_ends_at_exit_total", "off-CPU waits ended at their thread's exit: the switch-in was not seen",
		  NULL, m->off_cpu_bpf[OTELPROF_OFFCPU_CNT_ENDS_AT_EXIT]),
		C("off_cpu_shed_total", "off-CPU waits the kernel left out over the CPU ceiling (also counted in "
		  "otelprofd_samples_sampled_down_total, or as reason=\"cpu_ceiling_kernel\" drops)", NULL,
		  m->off_cpu_bpf[OTELPROF_OFFCPU_CNT_SHED]),
		C("off_cpu_below_threshold_total", "off-CPU waits shorter than --off-cpu-threshold", NULL,
		  m->off_cpu.below_threshold),
		G("off_cpu_pending", "sampled threads off CPU whose stack waits for their end", NULL, m->off_cpu.pending),
	};
	struct series alloc[] = {
		C("alloc_probes_total", "otel_memory probes that ran, by probe", "probe=\"alloc\"",
		  m->alloc_bpf[OTELPROF_ALLOC_CNT_ALLOCS]),
		C("alloc_probes_total", NULL, "probe=\"free\"", m->alloc_bpf[OTELPROF_ALLOC_CNT_FREES]),
		C("alloc_sampled_total", "sampled allocations added to the profile", NULL, m->heap.allocs),
		C("alloc_sampled_bytes_total", "the bytes they stand for (the library's weights)", NULL,
		  m->heap.alloc_bytes),
		C("alloc_frees_total", "frees of sampled allocations, by whether the allocation was known",
		  "known=\"yes\"", m->heap.frees),
		C("alloc_frees_total", NULL, "known=\"no\"", m->heap.unknown_frees),
		C("alloc_dropped_total", "sampled allocations lost or not kept live, by reason",
		  "reason=\"ring_buffer_full\"", m->alloc_bpf[OTELPROF_ALLOC_CNT_RINGBUF_FULL]),
		C("alloc_dropped_total", NULL, "reason=\"scratch_busy\"", m->alloc_bpf[OTELPROF_ALLOC_CNT_SCRATCH_BUSY]),
		C("alloc_dropped_total", NULL, "reason=\"live_table_full\"", m->heap.live_full),
		C("alloc_dropped_total", NULL, "reason=\"aggregate\"", m->heap.aggregate_dropped),
		C("alloc_dropped_total", NULL, "reason=\"free_lost\"", m->heap.replaced),
		C("alloc_dropped_total", NULL, "reason=\"process_gone\"", m->allocs_stale),
		C("alloc_frees_dropped_total", "frees of sampled allocations lost, by reason",
		  "reason=\"ring_buffer_full\"", m->alloc_bpf[OTELPROF_ALLOC_CNT_FREES_RINGBUF_FULL]),
		G("alloc_live", "sampled allocations live now (the in-use profile)", NULL, m->heap.live),
		G("alloc_live_bytes", "the bytes they stand for", NULL, m->heap.live_bytes),
		C("alloc_files_attached_total", "files whose otel_memory probes were attached", NULL,
		  m->alloc_probes.files_attached),
		C("alloc_files_skipped_total", "files with the probes not attached, by reason", "reason=\"attach_failed\"",
		  m->alloc_probes.attach_failed),
		C("alloc_files_skipped_total", NULL, "reason=\"table_full\"", m->alloc_probes.files_full),
	};
	const struct python_cache_stats *pc = &y->python;
	struct series python[] = {
		G("python_processes", "CPython processes whose frames are read now", NULL, pc->processes),
		C("python_processes_found_total", "CPython processes found, by how their layout was known",
		  "layout=\"table\"", m->python_processes.found - m->python_processes.debug_offsets),
		C("python_processes_found_total", NULL, "layout=\"debug_offsets\"", m->python_processes.debug_offsets),
		C("python_processes_unsupported_total", "CPython processes of a version otelprofd cannot read "
		  "(native frames only)", NULL, m->python_processes.unsupported),
		C("python_processes_dropped_total", "CPython processes left with native frames, by reason",
		  "reason=\"table_full\"", m->python_processes.table_full + m->python_processes.map_failed),
		C("python_processes_dropped_total", NULL, "reason=\"cache_full\"", pc->processes_evicted),
		C("python_samples_total", "samples whose stack got Python frames", NULL, m->python.samples),
		C("python_frames_total", "Python frames put in stacks", NULL, m->python.frames),
		C("python_frames_skipped_total", "Python frames left out, by reason", "reason=\"bad_code_object\"",
		  m->python.frames_bad),
		C("python_frames_skipped_total", NULL, "reason=\"unknown_at_build\"", pc->frames_unknown),
		C("python_walks_total", "Python frame walks in the BPF program, by result", "result=\"ok\"",
		  m->bpf[OTELPROF_CNT_PYTHON_STACKS]),
		C("python_walks_total", NULL, "result=\"no_thread_state\"", m->bpf[OTELPROF_CNT_PYTHON_NO_THREAD]),
		C("python_walks_total", NULL, "result=\"read_error\"", m->bpf[OTELPROF_CNT_PYTHON_READ_ERROR]),
		C("python_walks_total", NULL, "result=\"no_walk_program\"", m->bpf[OTELPROF_CNT_PYTHON_NO_WALKER]),
		G("python_bpf_walk", "the form of the BPF Python frame walk loaded (1): loop = bpf_loop(), bounded = "
		  "bounded loops (kernels before 5.17), off = none (the kernel refused it: native frames only)",
		  "form=\"loop\"", m->python_bpf_walk == PYTHON_WALK_LOOP),
		G("python_bpf_walk", NULL, "form=\"bounded\"", m->python_bpf_walk == PYTHON_WALK_BOUNDED),
		G("python_bpf_walk", NULL, "form=\"off\"", m->python_bpf_walk == PYTHON_WALK_OFF),
		C("python_walks_truncated_total", "Python frame walks cut by the depth bound", NULL,
		  m->bpf[OTELPROF_CNT_PYTHON_TRUNCATED]),
		C("python_stacks_unmatched_total", "samples whose native stack had no interpreter frame (Python "
		  "frames put at the root)", NULL, m->python.unmatched),
		G("python_code_cache_objects", "code objects cached", NULL, pc->codes),
		G("python_code_cache_bytes", "bytes of the code-object cache", NULL, pc->bytes),
		C("python_code_objects_read_total", "code objects read from processes, by result", "result=\"ok\"",
		  pc->codes_read),
		C("python_code_objects_read_total", NULL, "result=\"refused\"", pc->codes_bad),
		C("python_code_cache_evicted_total", "code objects dropped to keep the cache's bounds", NULL,
		  pc->codes_evicted),
	};
	struct series go[] = {
		G("go_labels_reader", "the BPF program that reads goroutine labels is loaded, or is loaded at the "
		  "first Go process (1); off, or the kernel refused it (0)", NULL, m->go_labels_loaded),
		C("go_processes_total", "Go processes found among the sampled ones, by result", "result=\"labels_read\"",
		  m->go_processes.published),
		C("go_processes_total", NULL, "result=\"unknown_release\"", m->go_processes.unknown),
		C("go_processes_total", NULL, "result=\"map_refused\"", m->go_processes.publish_failed),
		C("go_label_reads_total", "goroutine label reads in the BPF program, by result", "result=\"labelled\"",
		  m->bpf[OTELPROF_CNT_GO_LABELLED]),
		C("go_label_reads_total", NULL, "result=\"read_error\"", m->bpf[OTELPROF_CNT_GO_READ_ERROR]),
		C("go_label_reads_total", NULL, "result=\"no_reader\"", m->bpf[OTELPROF_CNT_GO_NO_READER]),
		C("go_labels_total", "goroutine labels put on samples", NULL, m->go_labels.labels),
		C("go_labels_dropped_total", "goroutine labels left out, by reason", "reason=\"over_bound\"",
		  m->go_labels.dropped),
		C("go_labels_dropped_total", NULL, "reason=\"malformed\"", m->go_labels.malformed),
		C("go_labels_cut_total", "goroutine labels whose key or value was cut at 64 bytes", NULL, m->go_labels.cut),
	};
	struct series jvm[] = {
		C("jvm_processes_total", "HotSpot JVMs found among the sampled processes", NULL, m->jvm.jvms),
		C("jvm_perf_maps_total", "perf maps asked of JVMs through the attach protocol, by result",
		  "result=\"written\"", m->jvm.perf_maps),
		C("jvm_perf_maps_total", NULL, "result=\"failed\"", m->jvm.failed),
		C("jvm_perf_maps_total", NULL, "result=\"no_sigquit_handler\"", m->jvm.not_attachable),
		C("jvm_dropped_total", "processes not checked for a JVM, by reason", "reason=\"queue_full\"",
		  m->jvm.queue_full),
		C("jvm_dropped_total", NULL, "reason=\"table_full\"", m->jvm.table_full),
	};
	struct series mmap[] = {
		C("mmap_events_records_total", "records read from the kernel's fork, exec, exit and mmap events", NULL,
		  m->mmap_events.records),
		C("mmap_events_lost_total", "such records the kernel lost (a CPU's ring full): processes alive then "
		  "get no mappings from them", NULL, m->mmap_events.lost),
		G("mmap_histories", "processes whose forks, execs and executable mappings are kept", NULL,
		  m->mmap_store.pids),
		G("mmap_history_path_bytes", "bytes of the mappings' paths kept", NULL, m->mmap_store.path_bytes),
		C("mmap_history_dropped_total", "what the processes' histories did not keep, by reason",
		  "reason=\"pids_full\"", m->mmap_store.pids_dropped),
		C("mmap_history_dropped_total", NULL, "reason=\"events_full\"", m->mmap_store.events_dropped),
		C("mmap_history_dropped_total", NULL, "reason=\"path_bytes\"", m->mmap_store.paths_dropped),
		C("mmap_history_lookups_total", "processes looked up in the histories (new ones, and those gone before "
		  "their maps were read), by result", "result=\"found\"", m->mmap_store.found),
		C("mmap_history_lookups_total", NULL, "result=\"whole\"", m->mmap_store.whole),
		C("mmap_history_lookups_total", NULL, "result=\"not_found\"", m->mmap_store.not_found),
		C("mmap_history_lookups_total", NULL, "result=\"events_lost\"", m->mmap_store.untrusted),
		C("symbolizer_processes_from_history_total", "processes gone before their maps were read whose mappings "
		  "came from the kernel's mmap events", NULL, y->processes_from_history),
		C("symbolizer_maps_completed_from_history_total", "processes gone after a read of their maps that "
		  "missed an address (an exec's half-built maps) whose missing mappings came from the mmap events", NULL,
		  y->maps_completed_from_history),
		C("symbolizer_maps_file_reads_total", "reads of /proc/PID/maps by the symbolizer", NULL, y->maps_file_reads),
		C("symbolizer_processes_from_events_total", "live processes whose mappings came whole from the kernel's "
		  "mmap events: /proc/PID/maps never read for them", NULL, y->processes_from_events),
		C("symbolizer_maps_events_rereads_total", "their mappings asked of the events again (settled, an address "
		  "missed)", NULL, y->maps_events_rereads),
		C("symbolizer_maps_read_new_total", "new processes whose mappings were read from /proc, by why the events "
		  "did not serve", "reason=\"no_history\"", y->maps_read_no_history),
		C("symbolizer_maps_read_new_total", NULL, "reason=\"inherited\"", y->maps_read_inherited),
		C("symbolizer_maps_read_new_total", NULL, "reason=\"gap\"", y->maps_read_gap),
		C("symbolizer_maps_read_new_total", NULL, "reason=\"unmapped\"", y->maps_read_unmapped),
		C("symbolizer_maps_events_gap_total", "processes served from the mmap events whose history got a gap "
		  "while they lived (records lost): read from /proc/PID/maps from then on", NULL, y->maps_events_gap),
	};
	static char end_labels[UNWIND_END_MAX][48];
	static char reject_labels[TRACE_REJECT_MAX][48];

	/* Every series below, each optional part on, fits with a slot to spare (test-self-metrics takes a
	 * full s[] for a cut one): a series added past the bound fails the build, not /metrics. */
	_Static_assert(N(all) + N(unwinding) + UNWIND_END_MAX + N(traces) + TRACE_REJECT_MAX + N(exported) + N(kube) +
		       N(off_cpu) + N(alloc) + N(python) + N(go) + N(jvm) + N(mmap) < SELF_METRICS_MAX_SERIES, "raise SELF_METRICS_MAX_SERIES");
	for (size_t i = 0; i < N(all) && n < max; i++)
		s[n++] = all[i];
	for (size_t i = 0; i < N(unwinding) && n < max; i++)
		s[n++] = unwinding[i];
	/* How every walk ended: entry (complete), truncated, or the cause of failure. */
	for (int end = 0; end < UNWIND_END_MAX && n < max; end++) {
		snprintf(end_labels[end], sizeof(end_labels[end]), "end=\"%s\"", unwind_end_name(end));
		s[n++] = (struct series){ "otelprofd_unwind_walks_total", COUNTER,
					  end ? NULL : "stack walks by how they ended (entry = complete)",
					  end_labels[end], (double)y->unwind_ends[end] };
	}
	for (size_t i = 0; m->trace_enabled && i < N(traces) && n < max; i++)
		s[n++] = traces[i];
	for (int why = 0; m->trace_enabled && why < TRACE_REJECT_MAX && n < max; why++) {
		snprintf(reject_labels[why], sizeof(reject_labels[why]), "reason=\"%s\"", trace_reject_names[why]);
		s[n++] = (struct series){ "otelprofd_trace_rejected_total", COUNTER,
					  why ? NULL : "process contexts and thread context records (or parts) not "
					  "used, by reason", reject_labels[why], (double)m->trace.rejected[why] };
	}
	for (size_t i = 0; m->export_enabled && i < N(exported) && n < max; i++)
		s[n++] = exported[i];
	for (size_t i = 0; m->k8s_enabled && i < N(kube) && n < max; i++)
		s[n++] = kube[i];
	for (size_t i = 0; m->off_cpu_enabled && i < N(off_cpu) && n < max; i++)
		s[n++] = off_cpu[i];
	for (size_t i = 0; m->alloc_enabled && i < N(alloc) && n < max; i++)
		s[n++] = alloc[i];
	for (size_t i = 0; i < N(python) && n < max; i++)
		s[n++] = python[i];
	for (size_t i = 0; i < N(go) && n < max; i++)
		s[n++] = go[i];
	for (size_t i = 0; m->jvm_enabled && i < N(jvm) && n < max; i++)
		s[n++] = jvm[i];
	for (size_t i = 0; m->mmap_events_enabled && i < N(mmap) && n < max; i++)
		s[n++] = mmap[i];
	return n;
}

void self_metrics_write_prometheus(const struct self_metrics *m, FILE *out)
{
	struct series s[SELF_METRICS_MAX_SERIES];
	size_t n = collect(m, s, sizeof(s) / sizeof(s[0]));

	for (size_t i = 0; i < n; i++) {
		/* HELP and TYPE once per metric name, before its first series. */
		if (s[i].help)
			fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", s[i].name, s[i].help, s[i].name,
				s[i].type == COUNTER ? "counter" : "gauge");
		if (s[i].label)
			fprintf(out, "%s{%s} %.17g\n", s[i].name, s[i].label, s[i].value);
		else
			fprintf(out, "%s %.17g\n", s[i].name, s[i].value);
	}
}

uint64_t self_metrics_dropped_samples(const struct self_metrics *m)
{
	const struct agg_counters *a = &m->aggregate;

	return m->bpf[OTELPROF_CNT_RINGBUF_FULL] + a->dropped_entries + a->dropped_stack_bytes + a->dropped_samples +
	       a->dropped_nomem + a->malformed + m->malformed_records + a->dropped_at_build + m->samples_shed +
	       m->bpf[OTELPROF_CNT_CPU_SHED_SPENT] + m->samples_at_exit + m->samples_stale;
}

uint64_t self_metrics_unsymbolized(const struct self_metrics *m)
{
	return m->symbolizer.lookups - m->symbolizer.symbolized;
}

void self_metrics_format_totals(const struct self_metrics *m, char *buf, size_t size)
{
	const struct agg_counters *a = &m->aggregate;
	uint64_t unsymbolized = self_metrics_unsymbolized(m);

	snprintf(buf, size, "%" PRIu64 " %s kept, %" PRIu64 " dropped (ring buffer full %" PRIu64
		 ", stack table full %" PRIu64 ", sample bound %" PRIu64 ", out of memory %" PRIu64 ", malformed %" PRIu64
		 ", profile tables full %" PRIu64 ", cpu ceiling %" PRIu64 ", at exit %" PRIu64 ", stale %" PRIu64
		 "), %" PRIu64 " %s not symbolized",
		 a->samples, plural(a->samples, "sample", "samples"), self_metrics_dropped_samples(m),
		 m->bpf[OTELPROF_CNT_RINGBUF_FULL], a->dropped_entries + a->dropped_stack_bytes, a->dropped_samples,
		 a->dropped_nomem, a->malformed + m->malformed_records, a->dropped_at_build, m->samples_shed + m->bpf[OTELPROF_CNT_CPU_SHED_SPENT], m->samples_at_exit,
		 m->samples_stale, unsymbolized,
		 plural(unsymbolized, "frame", "frames"));
}

void self_metrics_format_summary(const struct self_metrics *m, const struct self_metrics *prev, double seconds,
				 char *buf, size_t size)
{
	double cpu = prev && seconds > 0 ? 100.0 * (m->cpu_seconds - prev->cpu_seconds) / seconds : 0;
	uint64_t samples = m->aggregate.samples - (prev ? prev->aggregate.samples : 0);
	uint64_t dropped = self_metrics_dropped_samples(m) - (prev ? self_metrics_dropped_samples(prev) : 0);
	size_t n;

	n = (size_t)snprintf(buf, size, "stats: %" PRIu64 " %s (%" PRIu64 " dropped), %" PRIu64
			     " not symbolized, cpu %.2f%%, rss %.1f MiB", samples, plural(samples, "sample", "samples"), dropped,
			     self_metrics_unsymbolized(m) - (prev ? self_metrics_unsymbolized(prev) : 0),
			     cpu, m->rss_bytes / 1048576.0);
	if (m->export_enabled && n < size)
		n += (size_t)snprintf(buf + n, size - n, ", export %" PRIu64 " sent, %" PRIu64 " retried, %" PRIu64
				      " dropped, queue %zu", m->export.sent - (prev ? prev->export.sent : 0),
				      m->export.retries - (prev ? prev->export.retries : 0),
				      (m->export.dropped_queue_full + m->export.dropped_retries + m->export.dropped_permanent) -
					      (prev ? prev->export.dropped_queue_full + prev->export.dropped_retries +
							      prev->export.dropped_permanent : 0),
				      m->export.queued);
	if (!m->ready && n < size)
		snprintf(buf + n, size - n, "; not ready: %s", m->not_ready_reason);
}
