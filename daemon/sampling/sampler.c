// SPDX-License-Identifier: Apache-2.0
#include "sampling/sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sampling/bpf_log.h"
#include "sampling/pid_namespace.h"
#include "sampling/record_unpack.h"
#include "sampling/ring_reader.h"
#include "sampling/runtime_bpf.h"
#include "python_walk.h"
#include "clock.h"
#include "log.h"
#include "profile.skel.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

#define MAX_CPUS 4096
/* libbpf's messages of the last load, every line of them (the verifier's log is one multi-line
 * message), kept to show the verifier's last lines on failure; LIBBPF_LOG_TAIL of them are shown. */
#define LIBBPF_LOG_LINES 64
#define LIBBPF_LOG_TAIL 20

struct sampler {
	struct profile_bpf *skel;
	struct ring_reader *rb; /* the ring buffer, its data pages mapped once */
	struct bpf_link **links;
	int *perf_fds;
	unsigned ncpus;
	int ncpu_ids;
	sampler_record_fn fn;
	void *ctx;
	struct sampler_load_stats load;
	unsigned consumed;     /* records handed over by the sampler_consume() in progress */
	uint64_t consume_deadline_ns; /* CLOCK_MONOTONIC end of its time budget */
	bool out_of_time;      /* it stopped at the time budget */
	bool pending;          /* the last one stopped at its budget */
	uint64_t budget_stops; /* how many did */
	uint64_t time_stops;   /* how many of them at the time budget */
	uint64_t record_start_ns; /* when the record being handled was handed over */
	uint64_t slowest_ns;   /* the longest a record's handling took */
	uint32_t slowest_kind; /* ... its kind */
	struct bpf_link *alloc_links[2 * SAMPLER_MAX_ALLOC_FILES]; /* --alloc: alloc and free per file */
	unsigned nalloc_links;
	struct pid_namespace pidns; /* the daemon's: pids translated into it when its own */
	struct record_unpack unpack; /* the packed sample being handled, unpacked */
	struct runtime_bpf runtimes; /* the runtimes' BPF parts, loaded at their first process */
	/* Entries published while their part loads on the loader thread: written to their maps once it
	 * is in place (sampler_consume()), dropped if it is refused. Bounded; beyond, counted. */
	struct pending_python {
		uint32_t pid;
		uint64_t start_ns;
		struct otelprof_python_proc entry;
	} pending_python[SAMPLER_PENDING];
	unsigned npending_python;
	struct pending_go {
		uint32_t pid;
		struct otelprof_go_proc entry;
	} pending_go[SAMPLER_PENDING];
	unsigned npending_go;
	uint64_t pending_dropped;   /* entries not kept while their part loaded: the list was full */
};

/* libbpf's print callback has no context pointer: the log of the load in progress is global. */
static struct bpf_log *libbpf_log;

__attribute__((format(printf, 2, 0)))
static int capture_libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char small[1024], *text = small;
	va_list copy;
	int len;

	if (level == LIBBPF_DEBUG && log_get_level() < LOG_LEVEL_DEBUG)
		return 0;
	va_copy(copy, ap);
	len = vsnprintf(small, sizeof(small), fmt, ap);
	/* The verifier's log arrives whole in one message, often longer than a line buffer. */
	if (len >= (int)sizeof(small)) {
		text = malloc((size_t)len + 1);
		if (text)
			vsnprintf(text, (size_t)len + 1, fmt, copy);
		else
			text = small; /* keep the message's head at least */
	}
	va_end(copy);
	if (len < 0)
		return 0;
	if (libbpf_log)
		bpf_log__append(libbpf_log, text);
	/* libbpf starts its messages with its name already; the verifier's log is many lines. */
	if (log_get_level() >= LOG_LEVEL_DEBUG)
		log_lines(LOG_LEVEL_DEBUG, "libbpf", strncmp(text, "libbpf: ", 8) ? text : text + 8);
	if (text != small)
		free(text);
	return 0;
}

static void print_libbpf_log_tail(unsigned max)
{
	const char *lines[LIBBPF_LOG_TAIL];
	unsigned n;

	if (!libbpf_log)
		return;
	if (max > LIBBPF_LOG_TAIL)
		max = LIBBPF_LOG_TAIL;
	n = bpf_log__tail(libbpf_log, lines, max);
	for (unsigned i = 0; i < n; i++)
		log_error("  %s", lines[i]);
}

/* The log is only needed during sampler_open(). */
static void clear_libbpf_log(void)
{
	bpf_log_free(libbpf_log);
	libbpf_log = NULL;
}

static bool has_capability(int cap)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };

	if (syscall(SYS_capget, &header, data))
		return false;
	return data[cap / 32].effective & (1u << (cap % 32));
}

const char *sampler_missing_privileges(void)
{
	static char missing[64];
	bool bpf = has_capability(CAP_BPF), perfmon = has_capability(CAP_PERFMON);

	/* CAP_SYS_ADMIN stands in for both on any kernel. */
	if (has_capability(CAP_SYS_ADMIN) || (bpf && perfmon))
		return "";
	snprintf(missing, sizeof(missing), "%s%s%s", bpf ? "" : "CAP_BPF", !bpf && !perfmon ? ", " : "",
		 perfmon ? "" : "CAP_PERFMON");
	return missing;
}

/* Online CPUs from /sys/devices/system/cpu/online ("0-3,5"). */
static int online_cpus(bool *online, int max, int *count)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	char buf[4096], *p, *tok, *save = NULL;
	int highest = -1;

	if (!f)
		return -errno;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p)
		return -EIO;
	for (tok = strtok_r(buf, ",\n", &save); tok; tok = strtok_r(NULL, ",\n", &save)) {
		int lo, hi;

		if (sscanf(tok, "%d-%d", &lo, &hi) != 2) {
			if (sscanf(tok, "%d", &lo) != 1)
				return -EIO;
			hi = lo;
		}
		if (lo < 0 || hi < lo || hi >= max)
			return -ERANGE;
		for (int c = lo; c <= hi; c++)
			online[c] = true;
		if (hi > highest)
			highest = hi;
	}
	*count = highest + 1;
	return 0;
}

static int handle_record(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	const void *record = data;

	uint64_t now;

	record_unpack(&s->unpack, &record, &size);
	s->fn(s->ctx, record, size);
	now = clock_ns(CLOCK_MONOTONIC);
	if (now - s->record_start_ns > s->slowest_ns && size >= sizeof(struct otelprof_record_header)) {
		s->slowest_ns = now - s->record_start_ns;
		s->slowest_kind = ((const struct otelprof_record_header *)record)->kind;
	}
	s->record_start_ns = now;
	/* Negative: the reader keeps this record consumed and returns. */
	if (++s->consumed >= SAMPLER_CONSUME_BUDGET)
		return -ECANCELED;
	s->out_of_time = now >= s->consume_deadline_ns;
	return s->out_of_time ? -ECANCELED : 0;
}

static void explain_load_failure(int err)
{
	log_error("Failed to load the BPF programs: %s", strerror(-err));
	log_error("Last messages of the loader and the kernel verifier:");
	print_libbpf_log_tail(LIBBPF_LOG_TAIL);
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		log_error("The kernel has no BTF (/sys/kernel/btf/vmlinux): otelprofd's CO-RE programs need "
			  "a kernel built with CONFIG_DEBUG_INFO_BTF=y (Linux 5.8 or later).");
	else if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) != 1)
		log_error("The kernel has no BPF ring buffer (BPF_MAP_TYPE_RINGBUF): Linux 5.8 or later is needed.");
	else if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL) != 1)
		log_error("The kernel cannot run BPF programs on perf events (BPF_PROG_TYPE_PERF_EVENT).");
}

static int open_perf_events(struct sampler *s, const struct sampler_config *config)
{
	bool online[MAX_CPUS] = { 0 };
	int r = online_cpus(online, MAX_CPUS, &s->ncpu_ids);

	if (r) {
		log_error("Failed to read the online CPUs: %s", strerror(-r));
		return r;
	}
	s->perf_fds = calloc(s->ncpu_ids, sizeof(*s->perf_fds));
	s->links = calloc(s->ncpu_ids, sizeof(*s->links));
	if (!s->perf_fds || !s->links)
		return -ENOMEM;
	for (int cpu = 0; cpu < s->ncpu_ids; cpu++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.size = sizeof(attr),
			.freq = 1,
			.sample_freq = config->frequency,
		};
		int fd;

		s->perf_fds[cpu] = -1;
		if (!online[cpu])
			continue;
		fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			r = -errno;
			if (r == -ENODEV) /* went offline meanwhile */
				continue;
			if (r == -EINVAL)
				log_error("Failed to open a perf event at %u Hz on CPU %d: %s (is the frequency above "
					  "kernel.perf_event_max_sample_rate?)", config->frequency, cpu, strerror(-r));
			else
				log_error("Failed to open a perf event on CPU %d: %s", cpu, strerror(-r));
			return r;
		}
		s->perf_fds[cpu] = fd;
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.on_cpu_sample, fd);
		if (!s->links[cpu]) {
			r = -errno;
			log_error("Failed to attach the BPF program to CPU %d: %s", cpu, strerror(-r));
			return r;
		}
		s->ncpus++;
	}
	return s->ncpus ? 0 : -ENODEV;
}

/* Without --off-cpu the sched_switch program is neither loaded nor attached: its maps stay tiny. */
static void off_cpu_configure(struct profile_bpf *skel, const struct sampler_config *config, __u32 ncpus)
{
	bpf_program__set_autoload(skel->progs.on_sched_switch, config->off_cpu);
	if (!config->off_cpu) {
		bpf_map__set_max_entries(skel->maps.off_cpu_inflight, 1);
		return;
	}
	skel->rodata->off_cpu_sample = config->off_cpu_sample;
	bpf_map__set_max_entries(skel->maps.off_cpu_scratch, ncpus);
	if (config->off_cpu_max_inflight)
		bpf_map__set_max_entries(skel->maps.off_cpu_inflight, config->off_cpu_max_inflight);
}

/* Without --alloc the USDT programs are not loaded and their scratch stays one entry. */
static void alloc_configure(struct profile_bpf *skel, const struct sampler_config *config, __u32 ncpus)
{
	bpf_program__set_autoload(skel->progs.on_alloc, config->alloc);
	bpf_program__set_autoload(skel->progs.on_free, config->alloc);
	if (config->alloc)
		bpf_map__set_max_entries(skel->maps.alloc_scratch, ncpus);
}

int sampler_attach_alloc(struct sampler *s, const char *path)
{
	struct bpf_link *alloc, *release;
	int r;

	if (s->nalloc_links + 2 > sizeof(s->alloc_links) / sizeof(s->alloc_links[0]))
		return -ENOSPC;
	alloc = bpf_program__attach_usdt(s->skel->progs.on_alloc, -1, path, "otel_memory", "alloc", NULL);
	if (!alloc)
		return -errno;
	release = bpf_program__attach_usdt(s->skel->progs.on_free, -1, path, "otel_memory", "free", NULL);
	if (!release) {
		r = -errno;
		bpf_link__destroy(alloc);
		return r;
	}
	s->alloc_links[s->nalloc_links++] = alloc;
	s->alloc_links[s->nalloc_links++] = release;
	return 0;
}

static int off_cpu_attach(struct profile_bpf *skel)
{
	int r;

	skel->links.on_sched_switch = bpf_program__attach(skel->progs.on_sched_switch);
	if (skel->links.on_sched_switch)
		return 0;
	r = -errno;
	log_error("Failed to attach to sched_switch: %s", strerror(-r));
	return r;
}

/* Learn the daemon's PID namespace into s->pidns; 0, or -errno once the refusal is logged. */
static int read_pid_namespace(struct sampler *s)
{
	int r = pid_namespace_read("/proc", &s->pidns);

	if (!r && s->pidns.own &&
	    libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_get_ns_current_pid_tgid, NULL) != 1)
		r = -ENOSYS;
	if (r) {
		log_error("%s", pid_namespace_refusal(r));
		return r;
	}
	if (s->pidns.own)
		log_info("Running in a PID namespace of its own (pid:[%llu]): profiling the processes it shows, "
			 "by their pids in it", (unsigned long long)s->pidns.ino);
	return 0;
}

/*
 * Open, configure and load the BPF programs into s->skel: the core ones, on_cpu_sample told whether
 * to tail-call the Python walk of form python and the Go label reader (loaded later: runtime_bpf.h).
 * 0, or -errno with s->skel NULL (libbpf's messages kept for explain_load_failure()).
 */
static int load_programs(struct sampler *s, const struct sampler_config *config, __u32 ncpus,
			 enum python_walk_form python, bool go, bool parts_now)
{
	int r;

	s->skel = profile_bpf__open();
	if (!s->skel)
		return -errno;
	s->skel->rodata->filter_pids = config->npids > 0;
	s->skel->rodata->follow_children = config->follow_children;
	s->skel->rodata->include_idle = config->include_idle;
	s->skel->rodata->filter_cgroups = config->ncgroup_ids > 0;
	s->skel->rodata->track_processes = config->track_processes;
	s->skel->rodata->stack_copy = config->stack_copy;
	s->skel->rodata->wakeup_bytes = config->ringbuf_kib * 1024ull / 4;
	/* Samples packed to the bytes they use where the kernel reserves records of a run-time size. */
	s->skel->rodata->packed_samples =
		libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_ringbuf_reserve_dynptr, NULL) == 1;
	s->skel->rodata->trace_context = config->trace_context;
	s->skel->rodata->pidns_translate = s->pidns.own;
	s->skel->rodata->pidns_dev = s->pidns.dev;
	s->skel->rodata->pidns_ino = s->pidns.ino;
	python_walk_configure(s->skel, python);
	s->skel->rodata->go_labels = go;
	/* At the first Python or Go process (runtime_bpf.h), or now with the rest. */
	bpf_program__set_autoload(s->skel->progs.go_read_labels, go && parts_now);
	if (python != PYTHON_WALK_OFF && parts_now)
		bpf_program__set_autoload(bpf_object__find_program_by_name(s->skel->obj, python_walk_program(python)), true);
	bpf_map__set_max_entries(s->skel->maps.events, config->ringbuf_kib * 1024u);
	bpf_map__set_max_entries(s->skel->maps.scratch, ncpus);
	off_cpu_configure(s->skel, config, ncpus);
	alloc_configure(s->skel, config, ncpus);
	bpf_program__set_autoload(s->skel->progs.on_fork, config->follow_children || config->track_processes);
	bpf_program__set_autoload(s->skel->progs.on_exit, config->npids > 0 || config->track_processes || config->off_cpu);
	bpf_program__set_autoload(s->skel->progs.on_exec, config->track_processes);
	r = profile_bpf__load(s->skel);
	if (r) {
		profile_bpf__destroy(s->skel);
		s->skel = NULL;
	}
	return r;
}

/* The runtimes' BPF parts are loaded at their runtime's first process (runtime_bpf.h), unless
 * OTELPROFD_RUNTIMES_AT_START=1 loads them with the main object: then no thread keeps CAP_BPF and
 * CAP_PERFMON after the drop, for about 4,800 more instructions verified at every start
 * (bench/RESULTS.md). */
static bool runtimes_at_start(void)
{
	const char *at_start = getenv("OTELPROFD_RUNTIMES_AT_START");

	return at_start && !strcmp(at_start, "1");
}

/* The runtimes' BPF parts wanted: loaded at their first process, or adopted from the main object
 * (parts_now). */
static void runtimes_configure(struct sampler *s, enum python_walk_form python, bool go, bool parts_now)
{
	runtime_bpf_init(&s->runtimes, s->skel);
	if (python != PYTHON_WALK_OFF)
		runtime_bpf_want(&s->runtimes, RUNTIME_BPF_PYTHON, python_walk_program(python));
	if (go)
		runtime_bpf_want(&s->runtimes, RUNTIME_BPF_GO, "go_read_labels");
	if (!parts_now)
		return;
	if (python != PYTHON_WALK_OFF)
		runtime_bpf_adopt(&s->runtimes, RUNTIME_BPF_PYTHON, python_walk_program(python));
	if (go)
		runtime_bpf_adopt(&s->runtimes, RUNTIME_BPF_GO, "go_read_labels");
	/* The start's figure is the core's: the parts have their own. */
	for (int i = 0; i < RUNTIME_BPF_PARTS; i++)
		s->load.verified_insns -= s->runtimes.parts[i].stats.verified_insns;
}

struct sampler *sampler_open(const struct sampler_config *config, sampler_record_fn fn, void *ctx, int *err)
{
	struct sampler *s;
	const char *missing = sampler_missing_privileges();
	enum python_walk_form python;
	bool go, parts_now;
	uint64_t load_cpu_ns;
	__u32 ncpus;
	int r;

	if (*missing) {
		log_error("Missing privileges: %s. Run otelprofd as root, or grant it the capabilities "
			  "(setcap cap_bpf,cap_perfmon,cap_sys_resource,cap_sys_ptrace,cap_dac_read_search,"
			  "cap_checkpoint_restore,cap_syslog,cap_setuid,cap_setgid+ep otelprofd).",
			  missing);
		*err = -EPERM;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	s->fn = fn;
	s->ctx = ctx;
	clear_libbpf_log();
	libbpf_log = bpf_log_new(LIBBPF_LOG_LINES); /* without it, no tail is shown: not fatal */
	libbpf_set_print(capture_libbpf_log);

	r = libbpf_num_possible_cpus();
	if (r <= 0) {
		log_error("Failed to count the possible CPUs: %s", strerror(r ? -r : ENODEV));
		*err = r ? r : -ENODEV;
		goto fail;
	}
	ncpus = (__u32)r;
	r = read_pid_namespace(s);
	if (r) {
		*err = r;
		goto fail;
	}
	s->load.load_ns = clock_ns(CLOCK_MONOTONIC);
	load_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	python = python_walk_choose(config->python);
	/* The label reader walks with bpf_loop() (5.17+): 1 the kernel has it; 0 or -errno not, or cannot say. */
	go = config->go_labels && libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) == 1;
	if (config->go_labels && !go)
		log_info("Go labels off: the kernel has no bpf_loop() (Linux 5.17+)");
	parts_now = runtimes_at_start();
	r = load_programs(s, config, ncpus, python, go, parts_now);
	if (r && parts_now) {
		log_warn("The kernel refused the BPF programs with the runtimes' parts (%s): loading those at "
			 "their first process", strerror(-r));
		parts_now = false;
		r = load_programs(s, config, ncpus, python, go, parts_now);
	}
	s->load.load_ns = clock_ns(CLOCK_MONOTONIC) - s->load.load_ns;
	load_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - load_cpu_ns;
	if (r) {
		explain_load_failure(r);
		*err = -ENOEXEC;
		goto fail;
	}
	s->load.verified_insns = bpf_verified_insns(s->skel->obj);
	/* CPU far below the wall time: the loader waited for a CPU (a loaded machine), not for the verifier. */
	runtimes_configure(s, python, go, parts_now);
	log_debug("BPF programs loaded in %.1f ms (%.1f ms of this thread's CPU, the kernel's verifier included), "
		  "%llu instructions verified; Python frame walk: %s, Go labels: %s, %s",
		  s->load.load_ns / 1e6, load_cpu_ns / 1e6, (unsigned long long)s->load.verified_insns,
		  python_walk_form_name(python), go ? "on" : "off",
		  parts_now ? "loaded with them" : "at the first such process");
	for (size_t i = 0; i < config->npids; i++) {
		__u32 pid = (__u32)config->pids[i];
		__u8 one = 1;

		if (bpf_map__update_elem(s->skel->maps.target_pids, &pid, sizeof(pid), &one, sizeof(one), BPF_ANY)) {
			r = -errno;
			log_error("Failed to add pid %u to the filter: %s", pid, strerror(-r));
			*err = r;
			goto fail;
		}
	}
	for (size_t i = 0; i < config->ncgroup_ids; i++) {
		__u64 id = config->cgroup_ids[i];
		__u8 one = 1;

		if (bpf_map__update_elem(s->skel->maps.target_cgroups, &id, sizeof(id), &one, sizeof(one), BPF_ANY)) {
			r = -errno;
			log_error("Failed to add cgroup %llu to the filter: %s", (unsigned long long)id, strerror(-r));
			*err = r;
			goto fail;
		}
	}
	if (config->track_processes) {
		s->skel->links.on_exec = bpf_program__attach(s->skel->progs.on_exec);
		if (!s->skel->links.on_exec) {
			r = -errno;
			log_error("Failed to attach to sched_process_exec: %s", strerror(-r));
			*err = r;
			goto fail;
		}
	}
	if (config->follow_children || config->track_processes) {
		s->skel->links.on_fork = bpf_program__attach(s->skel->progs.on_fork);
		if (!s->skel->links.on_fork) {
			r = -errno;
			log_error("Failed to attach to sched_process_fork: %s", strerror(-r));
			*err = r;
			goto fail;
		}
	}
	if (config->npids || config->track_processes || config->off_cpu) { /* --off-cpu: an exit ends a wait */
		s->skel->links.on_exit = bpf_program__attach(s->skel->progs.on_exit);
		if (!s->skel->links.on_exit) {
			r = -errno;
			log_error("Failed to attach to sched_process_exit: %s", strerror(-r));
			*err = r;
			goto fail;
		}
	}
	if (config->off_cpu && (r = off_cpu_attach(s->skel))) {
		*err = r;
		goto fail;
	}
	s->rb = ring_reader_open(bpf_map__fd(s->skel->maps.events), bpf_map__max_entries(s->skel->maps.events));
	if (!s->rb) {
		r = -errno;
		log_error("Failed to set up the ring buffer: %s", strerror(-r));
		*err = r;
		goto fail;
	}
	r = open_perf_events(s, config);
	if (r) {
		*err = r;
		goto fail;
	}
	clear_libbpf_log();
	return s;

fail:
	sampler_close(s);
	clear_libbpf_log();
	return NULL;
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->nalloc_links; i++)
		bpf_link__destroy(s->alloc_links[i]);
	for (int cpu = 0; s->links && cpu < s->ncpu_ids; cpu++)
		bpf_link__destroy(s->links[cpu]);
	for (int cpu = 0; s->perf_fds && cpu < s->ncpu_ids; cpu++)
		if (s->perf_fds[cpu] >= 0)
			close(s->perf_fds[cpu]);
	free(s->links);
	free(s->perf_fds);
	ring_reader_free(s->rb);
	if (s->skel)
		runtime_bpf_close(&s->runtimes);
	profile_bpf__destroy(s->skel);
	free(s);
}

int sampler_fd(const struct sampler *s)
{
	return ring_reader_fd(s->rb);
}

/* The parts loaded since the last call get the entries published while they loaded. */
static void flush_pending(struct sampler *s)
{
	unsigned finished;

	if (!s->npending_python && !s->npending_go)
		return;
	finished = runtime_bpf_take_finished(&s->runtimes);
	if (finished & (1u << RUNTIME_BPF_PYTHON)) {
		struct pending_python copy[SAMPLER_PENDING];
		unsigned n = s->npending_python;

		memcpy(copy, s->pending_python, n * sizeof(copy[0]));
		s->npending_python = 0;
		for (unsigned i = 0; i < n; i++) /* refused: each is dropped (the walk is off) */
			sampler_set_python_proc(s, copy[i].pid, copy[i].start_ns, &copy[i].entry);
	}
	if (finished & (1u << RUNTIME_BPF_GO)) {
		struct pending_go copy[SAMPLER_PENDING];
		unsigned n = s->npending_go;

		memcpy(copy, s->pending_go, n * sizeof(copy[0]));
		s->npending_go = 0;
		for (unsigned i = 0; i < n; i++)
			sampler_set_go_proc(s, copy[i].pid, &copy[i].entry);
	}
}

int sampler_consume(struct sampler *s)
{
	return sampler_consume_until(s, 0);
}

int sampler_consume_until(struct sampler *s, uint64_t deadline_ns)
{
	uint64_t budget_end = clock_ns(CLOCK_MONOTONIC) + SAMPLER_CONSUME_BUDGET_MS * 1000000ULL;
	int r;

	flush_pending(s);
	s->consumed = 0;
	s->out_of_time = false;
	s->consume_deadline_ns = deadline_ns && deadline_ns < budget_end ? deadline_ns : budget_end;
	s->record_start_ns = budget_end - SAMPLER_CONSUME_BUDGET_MS * 1000000ULL;
	r = ring_reader_consume(s->rb, handle_record, s);
	s->pending = r == -ECANCELED;
	if (s->pending) {
		s->budget_stops++;
		s->time_stops += s->out_of_time;
		return (int)s->consumed;
	}
	return r;
}

int sampler_set_stack_need(void *ctx, uint32_t tid, uint64_t window_end, uint64_t top, uint64_t now_ns)
{
	struct sampler *s = *(struct sampler **)ctx;
	struct otelprof_stack_top t;
	int r;

	if (!s)
		return -ENODEV;
	if (!top) {
		r = bpf_map__delete_elem(s->skel->maps.stack_tops, &tid, sizeof(tid), 0);
		return r == -ENOENT ? 0 : r;
	}
	/* The thread's start time comes from the top the program learned for this very window. */
	if (bpf_map__lookup_elem(s->skel->maps.stack_tops, &tid, sizeof(tid), &t, sizeof(t), 0) ||
	    t.top != window_end)
		return -ESTALE;
	t.top = top;
	t.learned_ns = now_ns;
	return bpf_map__update_elem(s->skel->maps.stack_tops, &tid, sizeof(tid), &t, sizeof(t), BPF_EXIST);
}

void sampler_unpack_stats(const struct sampler *s, uint64_t *unpacked, uint64_t *bytes)
{
	*unpacked = s->unpack.unpacked;
	*bytes = s->unpack.packed_bytes;
}

bool sampler_pending(const struct sampler *s)
{
	return s->pending;
}

uint64_t sampler_slowest_record(const struct sampler *s, uint32_t *kind)
{
	*kind = s->slowest_kind;
	return s->slowest_ns;
}

uint64_t sampler_budget_stops(const struct sampler *s)
{
	return s->budget_stops;
}

uint64_t sampler_time_stops(const struct sampler *s)
{
	return s->time_stops;
}

/* Write pid's entry of trace_procs, or delete it when neither part is set. */
static int put_process_entry(struct sampler *s, uint32_t pid, const struct otelprof_trace_proc *e)
{
	int r;

	if (!e->mode && !e->python.interp_head) {
		r = bpf_map__delete_elem(s->skel->maps.trace_procs, &pid, sizeof(pid), 0);
		return r == -ENOENT ? 0 : r;
	}
	return bpf_map__update_elem(s->skel->maps.trace_procs, &pid, sizeof(pid), e, sizeof(*e), BPF_ANY);
}

/* pid's entry as the map holds it, or zeros (none, or of another process than start_ns). */
static struct otelprof_trace_proc current_entry(struct sampler *s, uint32_t pid, uint64_t start_ns)
{
	struct otelprof_trace_proc e;

	if (bpf_map__lookup_elem(s->skel->maps.trace_procs, &pid, sizeof(pid), &e, sizeof(e), 0) || e.start_ns != start_ns)
		memset(&e, 0, sizeof(e));
	return e;
}

int sampler_set_trace_proc(struct sampler *s, uint32_t pid, const struct otelprof_trace_proc *entry)
{
	struct otelprof_trace_proc e = current_entry(s, pid, entry ? entry->start_ns : 0);

	if (!entry) {
		/* Clearing: the Python part of the same process stays. */
		struct otelprof_trace_proc any;

		if (bpf_map__lookup_elem(s->skel->maps.trace_procs, &pid, sizeof(pid), &any, sizeof(any), 0))
			return 0;
		e = (struct otelprof_trace_proc){ .start_ns = any.start_ns, .python = any.python };
		return put_process_entry(s, pid, &e);
	}
	e = (struct otelprof_trace_proc){
		.start_ns = entry->start_ns, .tp_offset = entry->tp_offset, .module = entry->module,
		.offset = entry->offset, .mode = entry->mode, .python = e.python,
	};
	return put_process_entry(s, pid, &e);
}

/* Forget pid's pending Python entry, if any. */
static void drop_pending_python(struct sampler *s, uint32_t pid)
{
	for (unsigned i = 0; i < s->npending_python; i++)
		if (s->pending_python[i].pid == pid)
			s->pending_python[i--] = s->pending_python[--s->npending_python];
}

static void drop_pending_go(struct sampler *s, uint32_t pid)
{
	for (unsigned i = 0; i < s->npending_go; i++)
		if (s->pending_go[i].pid == pid)
			s->pending_go[i--] = s->pending_go[--s->npending_go];
}

int sampler_set_python_proc(struct sampler *s, uint32_t pid, uint64_t start_ns, const struct otelprof_python_proc *entry)
{
	struct otelprof_trace_proc e;
	int r;

	drop_pending_python(s, pid);
	/* The walk first: a process published before it would have its samples counted as walkless. */
	if (entry && (r = runtime_bpf_request(&s->runtimes, RUNTIME_BPF_PYTHON))) {
		if (r != -EINPROGRESS)
			return r;
		if (s->npending_python == SAMPLER_PENDING) {
			s->pending_dropped++;
			return -ENOSPC;
		}
		s->pending_python[s->npending_python++] = (struct pending_python){ pid, start_ns, *entry };
		return 0; /* written once the walk is in place */
	}
	e = current_entry(s, pid, start_ns);
	e.start_ns = start_ns;
	if (entry)
		e.python = *entry;
	else
		memset(&e.python, 0, sizeof(e.python));
	return put_process_entry(s, pid, &e);
}

int sampler_publish_python(void *ctx, uint32_t pid, uint64_t start_ns, const struct otelprof_python_proc *entry)
{
	struct sampler *s = *(struct sampler **)ctx;

	return s ? sampler_set_python_proc(s, pid, start_ns, entry) : -ENODEV;
}

int sampler_set_go_proc(struct sampler *s, uint32_t pid, const struct otelprof_go_proc *entry)
{
	int r;

	drop_pending_go(s, pid);
	if (!entry) {
		r = bpf_map__delete_elem(s->skel->maps.go_procs, &pid, sizeof(pid), 0);
		return r == -ENOENT ? 0 : r;
	}
	r = runtime_bpf_request(&s->runtimes, RUNTIME_BPF_GO);
	if (r == -EINPROGRESS) {
		if (s->npending_go == SAMPLER_PENDING) {
			s->pending_dropped++;
			return -ENOSPC;
		}
		s->pending_go[s->npending_go++] = (struct pending_go){ pid, *entry };
		return 0; /* written once the reader is in place */
	}
	if (r)
		return -EOPNOTSUPP;
	return bpf_map__update_elem(s->skel->maps.go_procs, &pid, sizeof(pid), entry, sizeof(*entry), BPF_ANY);
}

int sampler_publish_go(void *ctx, uint32_t pid, const struct otelprof_go_proc *entry)
{
	struct sampler *s = *(struct sampler **)ctx;

	return s ? sampler_set_go_proc(s, pid, entry) : -ENODEV;
}

bool sampler_off_cpu_waiting(void *sampler, uint32_t tid, uint64_t start_ns)
{
	const struct sampler *s = sampler;
	struct otelprof_off_cpu_start start;

	return !bpf_map__lookup_elem(s->skel->maps.off_cpu_inflight, &tid, sizeof(tid), &start, sizeof(start), 0) &&
	       start.start_ns == start_ns;
}

/* Sum a per-CPU array's counters first..n-1 into counters[first..n-1]. 0 or -errno. */
static int sum_counters_from(const struct bpf_map *map, uint64_t *counters, __u32 first, __u32 n)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *values;

	if (ncpus <= 0)
		return -EINVAL;
	values = calloc(ncpus, sizeof(*values));
	if (!values)
		return -ENOMEM;
	for (__u32 key = first; key < n; key++) {
		counters[key] = 0;
		if (bpf_map__lookup_elem(map, &key, sizeof(key), values, ncpus * sizeof(*values), 0))
			continue;
		for (int cpu = 0; cpu < ncpus; cpu++)
			counters[key] += values[cpu];
	}
	free(values);
	return 0;
}

/* Sum a per-CPU array of n counters. 0 or -errno. */
static int sum_counters(const struct bpf_map *map, uint64_t *counters, __u32 n)
{
	return sum_counters_from(map, counters, 0, n);
}

uint64_t sampler_ring_full(const struct sampler *s)
{
	uint64_t c[OTELPROF_CNT_MAX] = { 0 };

	sum_counters_from(s->skel->maps.counters, c, OTELPROF_CNT_RINGBUF_FULL, OTELPROF_CNT_RINGBUF_FULL + 1);
	return c[OTELPROF_CNT_RINGBUF_FULL];
}

int sampler_counters(const struct sampler *s, uint64_t counters[OTELPROF_CNT_MAX])
{
	return sum_counters(s->skel->maps.counters, counters, OTELPROF_CNT_MAX);
}

int sampler_off_cpu_counters(const struct sampler *s, uint64_t counters[OTELPROF_OFFCPU_CNT_MAX])
{
	return sum_counters(s->skel->maps.off_cpu_counters, counters, OTELPROF_OFFCPU_CNT_MAX);
}

int sampler_alloc_counters(const struct sampler *s, uint64_t counters[OTELPROF_ALLOC_CNT_MAX])
{
	return sum_counters(s->skel->maps.alloc_counters, counters, OTELPROF_ALLOC_CNT_MAX);
}

void sampler_set_keep_every(struct sampler *s, uint32_t every)
{
	if (s->skel->bss)
		__atomic_store_n(&s->skel->bss->cpu_shed_keep_every, every, __ATOMIC_RELAXED);
}

unsigned sampler_cpu_count(const struct sampler *s)
{
	return s->ncpus;
}

struct sampler_load_stats sampler_load_stats(const struct sampler *s)
{
	struct sampler_load_stats load = s->load;
	struct runtime_bpf *rb = (struct runtime_bpf *)&s->runtimes; /* its lock, not its contents */
	const char *py = rb->parts[RUNTIME_BPF_PYTHON].program; /* set once, before the thread */

	for (int i = 0; i < RUNTIME_BPF_PARTS; i++)
		load.runtimes[i] = runtime_bpf_stats(rb, i);
	load.python_walk = load.runtimes[RUNTIME_BPF_PYTHON].state == RUNTIME_BPF_OFF ||
			   load.runtimes[RUNTIME_BPF_PYTHON].state == RUNTIME_BPF_FAILED ? PYTHON_WALK_OFF
		: !strcmp(py, "py_walk_loop") ? PYTHON_WALK_LOOP : PYTHON_WALK_BOUNDED;
	load.go_labels = load.runtimes[RUNTIME_BPF_GO].state == RUNTIME_BPF_WAITING ||
			 load.runtimes[RUNTIME_BPF_GO].state == RUNTIME_BPF_LOADED;
	load.pending_dropped = s->pending_dropped;
	return load;
}

int sampler_start_loader(struct sampler *s, uint64_t keep_after)
{
	return runtime_bpf_start_loader(&s->runtimes, keep_after);
}
