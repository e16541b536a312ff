/*
 * otelprofd: samples on-CPU stacks with eBPF, symbolizes them on the host and writes a profile,
 * or, with a collector configured, sends one every export interval until SIGTERM.
 * This file is the program's frame: flags, signals, the event loop, and the output.
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
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "aggregate.h"
#include "cgroup.h"
#include "clock.h"
#include "export_loop.h"
#include "host_view.h"
#include "k8s.h"
#include "log.h"
#include "metadata.h"
#include "options.h"
#include "privileges.h"
#include "process_table.h"
#include "otlp_encode.h"
#include "profile.h"
#include "sampler.h"
#include "self_metrics.h"
#include "metrics_server.h"
#include "service_notify.h"
#include "symbolizer.h"
#include "unwind_sample.h"
#include "writers.h"

/* Bytes of interned stacks per interval. */
#define MAX_STACK_BYTES (32u << 20)
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
#define MAX_SETTLING 1024

struct settling {
	uint32_t pid;
	uint64_t start_ns, instance, exec_ns;
};

struct daemon {
	const struct options *opts;
	struct aggregate *agg;
	struct symbolizer *sym;
	struct sampler *sampler;
	struct process_table *processes;
	struct metadata *metadata;
	struct k8s *k8s; /* pod names from the Kubernetes API, or NULL */
	uint64_t monotonic_to_unix_ns; /* add to bpf_ktime_get_ns() to get unix time */
	uint64_t malformed_records;
	uint64_t start_unix_ns, start_monotonic_ns;
	struct export_loop *export;        /* NULL without a collector */
	uint64_t interval_start_monotonic_ns; /* start of the interval being aggregated */
	struct metrics_server *metrics;    /* --metrics-address, or NULL */
	struct self_report report;         /* self-metrics, readiness and the periodic summary */
	struct unwind_sample_counters unwind;
	struct otelprof_sample unwound;    /* the sample being added, with its user stack unwound */
	struct settling settling[MAX_SETTLING]; /* programs exec'd whose mappings are read again soon */
	size_t nsettling;
	uint64_t settle_dropped;           /* execs not read again: the list was full */
	bool kallsyms_hidden_logged;       /* the kptr_restrict warning is said once */
};

/* Said once, when the symbolizer first finds kallsyms hidden (at start, or after a reload). */
static void warn_kallsyms_hidden(struct daemon *d)
{
	if (d->kallsyms_hidden_logged || !symbolizer_stats(d->sym)->kallsyms_hidden)
		return;
	d->kallsyms_hidden_logged = true;
	log_warn("Kernel addresses are hidden by kernel.kptr_restrict: kernel frames stay unsymbolized");
}

static void on_process_event(struct daemon *d, const struct otelprof_proc_event *e)
{
	char comm[OTELPROF_COMM_LEN + 1], filename[OTELPROF_PATH_LEN + 1];
	const struct process_info *pi;

	snprintf(comm, sizeof(comm), "%.*s", OTELPROF_COMM_LEN, e->comm);
	snprintf(filename, sizeof(filename), "%.*s", OTELPROF_PATH_LEN, e->filename);
	switch (e->hdr.kind) {
	case OTELPROF_RECORD_EXEC:
		/* A new program, a new instance: the old program's mappings stay (retired) for its samples
		 * already taken. Read the new one's now (the executable and the loader are mapped), which
		 * comes before its samples in the ring buffer, so a process that lives for a moment keeps
		 * at least those; a sample outside them reads the mappings again. */
		symbolizer_retire_process(d->sym, (pid_t)e->pid);
		process_table_exec(d->processes, e->pid, e->start_ns, comm, filename, e->cgroup_id);
		pi = process_table_find(d->processes, e->pid, e->start_ns);
		if (!pi)
			break;
		symbolizer_prepare_instance(d->sym, (pid_t)e->pid, pi->instance, e->start_ns);
		if (d->nsettling < MAX_SETTLING)
			d->settling[d->nsettling++] = (struct settling){
				.pid = e->pid, .start_ns = e->start_ns, .instance = pi->instance,
				.exec_ns = clock_ns(CLOCK_MONOTONIC),
			};
		else
			d->settle_dropped++;
		break;
	case OTELPROF_RECORD_FORK:
		/* What the symbolizer holds for this pid belongs to an older process (its exit record
		 * may have been lost). */
		symbolizer_retire_process(d->sym, (pid_t)e->pid);
		process_table_fork(d->processes, e->pid, e->start_ns, e->parent_pid, e->parent_start_ns, comm,
				   e->cgroup_id);
		break;
	case OTELPROF_RECORD_EXIT:
		symbolizer_retire_process(d->sym, (pid_t)e->pid);
		process_table_exit(d->processes, e->pid, e->start_ns);
		break;
	}
}

/*
 * Open the files behind a new process's frames now, while /proc/PID/map_files still reaches them:
 * the symbolizer caches them by device and inode, so a process that exits long before the profile
 * is built is still symbolized (and its siblings running the same files cost nothing more).
 */
static void open_modules(struct daemon *d, const struct otelprof_sample *s, uint64_t instance)
{
	struct sym_frame frame;

	for (unsigned i = 0; i < s->user_depth && i < OTELPROF_MAX_STACK_DEPTH; i++)
		symbolizer_user_instance(d->sym, (pid_t)s->pid, instance, s->user_ips[i], &frame);
}

static void on_record(void *ctx, const void *data, size_t size)
{
	struct daemon *d = ctx;
	const struct otelprof_record_header *hdr = data;
	const struct otelprof_sample *s = data;
	const struct process_info *pi;
	uint64_t instance;

	if (size < sizeof(*hdr) || hdr->size > size) {
		d->malformed_records++;
		return;
	}
	switch (hdr->kind) {
	case OTELPROF_RECORD_SAMPLE:
		if (hdr->size < sizeof(*s)) {
			d->malformed_records++;
			return;
		}
		/* Read the mappings and metadata while the process is alive: it may exit before the output
		 * is written. */
		pi = s->pid ? process_table_sample(d->processes, s->pid, s->process_start_ns, s->process_comm,
							    s->cgroup_id) : NULL;
		instance = pi ? pi->instance : PROCESS_INSTANCE_UNKNOWN;
		if (pi)
			symbolizer_prepare_instance(d->sym, (pid_t)s->pid, instance, s->process_start_ns);
		s = unwind_sample(d->sym, (pid_t)s->pid, instance, data, size, &d->unwound, &d->unwind);
		if (pi && pi->samples == 1)
			open_modules(d, s, instance);
		aggregate_add_instance(d->agg, s, instance, s->time_ns + d->monotonic_to_unix_ns);
		break;
	case OTELPROF_RECORD_EXEC:
	case OTELPROF_RECORD_FORK:
	case OTELPROF_RECORD_EXIT:
		if (hdr->size < sizeof(struct otelprof_proc_event)) {
			d->malformed_records++;
			return;
		}
		on_process_event(d, data);
		break;
	default:
		d->malformed_records++;
		break;
	}
}

static void describe_process(void *ctx, struct profile *p, uint32_t process)
{
	struct daemon *d = ctx;
	const struct pf_process *proc = &p->processes[process];
	const struct process_info *pi = process_table_find_instance(d->processes, proc->pid, proc->start_ns,
								      proc->instance);
	struct k8s_pod_names names;
	bool named = d->k8s && pi && k8s_lookup(d->k8s, pi->cgroup.pod_uid, pi->cgroup.container_id, &names);

	metadata_describe(d->metadata, pi, named ? &(struct k8s_names){
		.pod_name = names.pod_name, .namespace_name = names.namespace_name,
		.container_name = names.container_name,
	} : NULL, p, process);
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
	symbolizer_forget_instance(ctx, (pid_t)pid, instance);
}

/* --cgroup and --container to cgroup ids for the in-kernel filter. 0, or -errno after logging. */
static int resolve_cgroup_filter(const struct options *opts, uint64_t *ids, size_t max, size_t *n)
{
	const char *root = cgroup_v2_root();
	size_t found = 0;
	int r;

	*n = 0;
	if (!opts->cgroup && !opts->container)
		return 0;
	if (!root) {
		log_error("--cgroup and --container need the cgroup v2 hierarchy, which is not mounted");
		return -ENOENT;
	}
	if (opts->cgroup) {
		r = cgroup_id_of_path(root, opts->cgroup, &ids[(*n)++]);
		if (r) {
			log_error("--cgroup: %s is not a cgroup under %s: %s", opts->cgroup, root, strerror(-r));
			return r;
		}
	}
	if (opts->container) {
		r = cgroup_find_container(root, opts->container, ids + *n, max - *n, &found);
		if (r) {
			log_error("--container: failed to search %s: %s", root, strerror(-r));
			return r;
		}
		if (!found) {
			log_error("--container: no cgroup under %s belongs to container %s", root, opts->container);
			return -ENOENT;
		}
		if (found > max - *n) {
			log_error("--container: %s matches %zu cgroups, more than %zu: give more of the id",
				  opts->container, found, max - *n);
			return -E2BIG;
		}
		*n += found;
	}
	return 0;
}

static struct profile *build_interval(struct daemon *d)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	struct profile *p = profile_build(d->agg, d->sym, &(struct profile_build_options){
		.frequency = d->opts->frequency, .time_unix_ns = d->interval_start_monotonic_ns + d->monotonic_to_unix_ns,
		.duration_ns = now - d->interval_start_monotonic_ns,
		.describe_process = describe_process, .describe_ctx = d,
	});

	d->interval_start_monotonic_ns = now;
	return p;
}

static void log_counters(const struct daemon *d, const struct profile *p);

/* End of an export interval: send what was sampled and start afresh. */
static void export_interval(struct daemon *d, bool last)
{
	struct profile *p = build_interval(d);

	aggregate_reset(d->agg);
	if (!p) {
		log_error("Failed to build the profile: %s", strerror(errno));
		return;
	}
	if (last)
		log_counters(d, p);
	export_loop_submit(d->export, p);
	profile_free(p);
	/* The exited processes' last samples are built: their table entries and mappings can go. */
	process_table_sweep(d->processes, forget_process, d->sym);
	symbolizer_maintain(d->sym);
	warn_kallsyms_hidden(d);
}

static int arm_timer(int fd, uint64_t ns)
{
	struct itimerspec its = {
		.it_value = { .tv_sec = (time_t)(ns / 1000000000ULL), .tv_nsec = (long)(ns % 1000000000ULL) },
	};

	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
}

/* Every counter the daemon keeps, now. */
static void collect_metrics(struct daemon *d, struct self_metrics *m)
{
	struct sampler_load_stats load;

	memset(m, 0, sizeof(*m));
	sampler_counters(d->sampler, m->bpf);
	load = sampler_load_stats(d->sampler);
	m->bpf_load_ns = load.load_ns;
	m->bpf_verified_insns = load.verified_insns;
	m->malformed_records = d->malformed_records;
	m->aggregate = *aggregate_counters(d->agg);
	m->symbolizer = *symbolizer_stats(d->sym);
	m->processes = *process_table_counters(d->processes);
	m->unwind = d->unwind;
	if (d->export) {
		m->export_enabled = true;
		export_loop_stats(d->export, &m->export, &m->export_dropped_too_large);
	}
	if (d->k8s) {
		m->k8s_enabled = true;
		k8s_counters(d->k8s, &m->k8s);
	}
	self_metrics_read_process(m);
}

/* Once a second: readiness, the metrics the server publishes, and the periodic log summary. */
static void tick(struct daemon *d, uint64_t now)
{
	struct self_report *r = &d->report;
	struct self_metrics *m = &r->now;
	/* Not ready when nothing was delivered for three intervals (at least 10 s). */
	uint64_t undelivered_ns = 3 * d->opts->export.interval_ns > 10000000000ULL ? 3 * d->opts->export.interval_ns
										   : 10000000000ULL;
	uint64_t busy, stall_ticks = 5 * (uint64_t)sysconf(_SC_CLK_TCK);

	if (now - r->last_tick_ns < 1000000000ULL)
		return;
	r->last_tick_ns = now;
	/* Processes that ended without a sample wait for nothing: without this, a run writing one file
	 * at its end would keep every process it saw. */
	process_table_sweep_unsampled(d->processes, forget_process, d->sym);
	/* Sampling is stalled when the CPUs did this much work (clock ticks) without one perf event:
	 * an idle host fires few cpu-clock events, a busy one many. Read once a tick, never per record. */
	busy = self_metrics_busy_cpu_ticks();
	collect_metrics(d, m);
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
	if (d->metrics) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (f) {
			self_metrics_write_prometheus(m, f);
			fclose(f);
			metrics_server_publish(d->metrics, text, len, m->ready, m->not_ready_reason);
			free(text);
		}
	}
	if (d->opts->stats_interval_ns && now - r->summary_ns >= d->opts->stats_interval_ns) {
		char line[512];

		self_metrics_format_summary(m, r->summary_ns ? &r->at_summary : NULL, (now - r->summary_ns) / 1e9,
					    line, sizeof(line));
		log_info("%s", line);
		r->at_summary = *m;
		r->summary_ns = now;
	}
}

static int setup_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	if (sigprocmask(SIG_BLOCK, mask, NULL))
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int add_epoll(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* Read again the mappings of the programs exec'd at least EXEC_SETTLE_MS ago (see there). */
static void settle_execs(struct daemon *d, uint64_t now)
{
	size_t kept = 0;

	for (size_t i = 0; i < d->nsettling; i++) {
		const struct settling *e = &d->settling[i];
		const struct process_info *pi;

		if (now - e->exec_ns < EXEC_SETTLE_MS * 1000000ULL) {
			d->settling[kept++] = *e;
			continue;
		}
		pi = process_table_find(d->processes, e->pid, e->start_ns);
		if (pi && pi->instance == e->instance && !pi->exited)
			symbolizer_refresh_instance(d->sym, (pid_t)e->pid, e->instance);
	}
	d->nsettling = kept;
}

/* Sample until the duration ends or a signal arrives. */
static int run_loop(struct daemon *d)
{
	int epfd = -1, sigfd = -1, timerfd = -1, intervalfd = -1, ringfd = sampler_fd(d->sampler), r;
	uint64_t last_drain_ns = 0;
	sigset_t mask;

	r = setup_signals(&mask);
	if (r)
		return r;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (epfd < 0 || sigfd < 0) {
		r = -errno;
		goto out;
	}
	if ((r = add_epoll(epfd, sigfd)) || (r = add_epoll(epfd, ringfd)))
		goto out;
	if (d->opts->duration_ns) {
		struct itimerspec its = {
			.it_value = {
				.tv_sec = (time_t)(d->opts->duration_ns / 1000000000ULL),
				.tv_nsec = (long)(d->opts->duration_ns % 1000000000ULL),
			},
		};

		timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (timerfd < 0 || timerfd_settime(timerfd, 0, &its, NULL) || (r = add_epoll(epfd, timerfd))) {
			r = r ? r : -errno;
			goto out;
		}
	}
	if (d->export) {
		intervalfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (intervalfd < 0 || (r = arm_timer(intervalfd, export_loop_next_interval_ns(d->export))) ||
		    (r = add_epoll(epfd, intervalfd))) {
			r = r ? r : -errno;
			goto out;
		}
	}

	service_notify_ready("Sampling");
	for (;;) {
		struct epoll_event events[4];
		int n = epoll_wait(epfd, events, 4, d->nsettling ? EXEC_SETTLE_MS : SAMPLER_DRAIN_MS);
		uint64_t now = clock_ns(CLOCK_MONOTONIC);

		settle_execs(d, now);
		service_notify_watchdog(now);
		tick(d, now);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		/* Samples do not wake us (see sampler_fd()): drain them on this period. */
		if (now - last_drain_ns >= SAMPLER_DRAIN_MS * 1000000ULL) {
			last_drain_ns = now;
			r = sampler_consume(d->sampler);
			if (r < 0 && r != -EINTR) {
				log_error("Failed to read samples: %s", strerror(-r));
				goto out;
			}
		}
		for (int i = 0; i < n; i++) {
			int fd = events[i].data.fd;

			if (fd == ringfd) {
				r = sampler_consume(d->sampler);
				if (r < 0 && r != -EINTR) {
					log_error("Failed to read samples: %s", strerror(-r));
					goto out;
				}
			} else if (fd == sigfd) {
				struct signalfd_siginfo si;

				if (read(sigfd, &si, sizeof(si)) == sizeof(si))
					log_info("Received %s, writing what was collected",
						 si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
				r = 0;
				goto out;
			} else if (fd == timerfd) {
				r = 0;
				goto out;
			} else if (fd == intervalfd) {
				uint64_t expirations;

				if (read(intervalfd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
					log_warn("Failed to read the interval timer: %s", strerror(errno));
				sampler_consume(d->sampler);
				export_interval(d, false);
				arm_timer(intervalfd, export_loop_next_interval_ns(d->export));
			}
		}
	}
out:
	service_notify_stopping();
	if (sampler_consume(d->sampler) < 0)
		log_warn("Failed to read the last samples");
	if (timerfd >= 0)
		close(timerfd);
	if (intervalfd >= 0)
		close(intervalfd);
	if (sigfd >= 0)
		close(sigfd);
	if (epfd >= 0)
		close(epfd);
	return r;
}

static int write_output(const struct options *opts, const struct profile *p)
{
	FILE *f;
	int r;

	switch (opts->format) {
	case OUTPUT_OTLP:
		return otlp_write_file(p, &(struct otlp_encode_options){
			.resource_attrs = opts->export.resource_attrs, .nresource_attrs = opts->export.nresource_attrs,
		}, opts->output);
	case OUTPUT_TOP:
		return write_top(p, opts->top, stdout);
	case OUTPUT_PPROF:
		return write_pprof_file(p, opts->output);
	case OUTPUT_FOLDED:
		f = fopen(opts->output, "we");
		if (!f)
			return -errno;
		r = write_folded(p, f);
		if (fclose(f) && !r)
			r = -errno;
		return r;
	}
	return -EINVAL;
}

static void log_counters(const struct daemon *d, const struct profile *p)
{
	const struct agg_counters *ac = aggregate_counters(d->agg);
	const struct symbolizer_stats *ss = symbolizer_stats(d->sym);
	uint64_t bc[OTELPROF_CNT_MAX] = { 0 };
	uint64_t dropped;

	sampler_counters(d->sampler, bc);
	dropped = bc[OTELPROF_CNT_RINGBUF_FULL] + ac->dropped_entries + ac->dropped_stack_bytes +
		  ac->dropped_samples + ac->dropped_nomem + d->malformed_records + p->counters.dropped_table_full;
	log_info("%" PRIu64 " samples kept, %" PRIu64 " dropped (ring buffer full %" PRIu64 ", stack table full %" PRIu64
		 ", sample bound %" PRIu64 ", malformed %" PRIu64 "), %" PRIu64 " frames not symbolized",
		 ac->samples, dropped, (uint64_t)bc[OTELPROF_CNT_RINGBUF_FULL],
		 ac->dropped_entries + ac->dropped_stack_bytes, ac->dropped_samples,
		 d->malformed_records + ac->malformed, p->counters.locations_unsymbolized);
	log_debug("bpf: %" PRIu64 " perf events, %" PRIu64 " other processes, %" PRIu64 " idle, "
		  "%" PRIu64 " kernel / %" PRIu64 " user stack errors, %" PRIu64 " children followed",
		  (uint64_t)bc[OTELPROF_CNT_SAMPLES], (uint64_t)bc[OTELPROF_CNT_FILTERED], (uint64_t)bc[OTELPROF_CNT_IDLE],
		  (uint64_t)bc[OTELPROF_CNT_KSTACK_ERROR], (uint64_t)bc[OTELPROF_CNT_USTACK_ERROR],
		  (uint64_t)bc[OTELPROF_CNT_CHILDREN_FOLLOWED]);
	log_debug("symbolizer: %" PRIu64 " lookups, %" PRIu64 " symbolized, %" PRIu64 " outside mappings, %" PRIu64
		  " processes gone, %" PRIu64 " pids running another process or program when read again, %" PRIu64
		  " modules loaded, %" PRIu64 " failed to open", ss->lookups, ss->symbolized, ss->no_mapping,
		  ss->process_gone, ss->process_changed, ss->modules_loaded, ss->module_open_failed);
	if (ss->modules_too_big)
		log_info("%" PRIu64 " binaries or debug files not inflated: their compressed sections claim more than "
			 "--symbol-cache allows (their frames keep build ids and ELF symbols)", ss->modules_too_big);
	if (ss->process_table_full || ss->processes_evicted)
		log_info("%" PRIu64 " processes' mappings not kept (symbolizer process table full), %" PRIu64
			 " ended processes' mappings evicted to make room, %" PRIu64 " lookups found no mappings",
			 ss->process_table_full, ss->processes_evicted, ss->instance_unknown);
	{
		const struct process_table_counters *pc = process_table_counters(d->processes);

		log_debug("processes: %zu tracked, %" PRIu64 " added, %" PRIu64 " evicted (table full), %" PRIu64
			  " samples found no process, %" PRIu64 " /proc reads failed; records: %" PRIu64 " exec, %" PRIu64
			  " fork, %" PRIu64 " exit, %" PRIu64 " lost (ring buffer full)",
			  process_table_count(d->processes), pc->added, pc->evicted, pc->no_process, pc->proc_read_failed,
			  pc->execs, pc->forks, pc->exits, (uint64_t)bc[OTELPROF_CNT_PROC_EVENTS_LOST]);
		log_debug("cgroups: %" PRIu64 " found by the records' cgroup id, %" PRIu64 " ids named no cgroup any more; "
			  "%" PRIu64 " exec'd programs' mappings not read again (list full)",
			  pc->cgroup_resolved, pc->cgroup_unresolved, d->settle_dropped);
		if (pc->evicted || pc->no_process)
			log_info("%" PRIu64 " processes evicted from the full process table, %" PRIu64
				 " samples of processes that could not be described", pc->evicted, pc->no_process);
	}
	unwind_sample_log(&d->unwind, ss);
}

int main(int argc, char **argv)
{
	struct options opts;
	struct daemon d = { .opts = &opts };
	struct agg_limits limits;
	struct profile *p = NULL;
	uint64_t cgroup_ids[OTELPROF_MAX_TARGET_CGROUPS];
	size_t ncgroup_ids;
	const char *debug_dirs[3] = { "/usr/lib/debug", NULL, NULL };
	int r, loop_r, status = 1;
	bool keep_bpf;

	switch (options_parse(&opts, argc, argv, stdout, stderr)) {
	case OPTIONS_OK:
		break;
	case OPTIONS_EXIT:
		return 0;
	default:
		return 2;
	}
	log_set_level(opts.verbose ? LOG_LEVEL_DEBUG : opts.quiet ? LOG_LEVEL_ERROR : LOG_LEVEL_INFO);

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
	});
	/* Kernel symbols now, not at the first kernel frame: reading them costs ~40 ms, a stall the
	 * sampling path (and the ring buffer filling meanwhile) is better without. */
	if (d.sym) {
		symbolizer_load_kallsyms(d.sym);
		warn_kallsyms_hidden(&d);
	}
	d.processes = process_table_new(&(struct process_table_config){
		.command_line = opts.command_line, .evicted = forget_process, .evicted_ctx = d.sym,
	});
	d.metadata = metadata_new(&(struct metadata_config){ 0 });
	if (!d.agg || !d.sym || !d.processes || !d.metadata) {
		log_error("Out of memory");
		goto out;
	}

	if (metadata_skipped_resource_attributes(d.metadata))
		log_warn("Skipped %u malformed entries of OTEL_RESOURCE_ATTRIBUTES",
			 metadata_skipped_resource_attributes(d.metadata));
	if (resolve_cgroup_filter(&opts, cgroup_ids, OTELPROF_MAX_TARGET_CGROUPS, &ncgroup_ids)) {
		status = 2;
		goto out;
	}

	d.sampler = sampler_open(&(struct sampler_config){
		.frequency = opts.frequency, .pids = opts.pids, .npids = opts.npids,
		.follow_children = opts.follow_children, .include_idle = opts.include_idle,
		.ringbuf_kib = opts.ringbuf_kib,
		.cgroup_ids = ncgroup_ids ? cgroup_ids : NULL, .ncgroup_ids = ncgroup_ids, .track_processes = true,
		.stack_copy = opts.stack_copy,
	}, on_record, &d, &r);
	if (!d.sampler) {
		status = (r == -EPERM || r == -ENOEXEC) ? 2 : 1;
		goto out;
	}
	/* Capabilities are per thread and a thread inherits its creator's: drop them before the first
	 * thread starts (the exporter's sender, gRPC's own threads, the Kubernetes watcher, the metrics
	 * server, the debuginfod worker), so none of them keeps CAP_BPF or CAP_PERFMON. What those threads
	 * read (CA and key files, debug files) needs at most CAP_DAC_READ_SEARCH, which is kept. */
	keep_bpf = privileges_bpf_needs_cap_here();
	if (keep_bpf)
		log_info("Keeping CAP_BPF: this kernel (before 5.19, kernel.unprivileged_bpf_disabled set) refuses "
			 "the BPF counters' reads to a process without it");
	r = privileges_drop_after_setup(keep_bpf);
	if (r)
		log_warn("Failed to drop capabilities no longer needed: %s", strerror(-r));
	if (opts.export.enabled && !(d.export = export_loop_new(&opts.export))) {
		status = 2;
		goto out;
	}
	start_kubernetes(&d);
	d.start_unix_ns = clock_ns(CLOCK_REALTIME);
	d.start_monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	d.report.delivered_ns = d.report.summary_ns = d.start_monotonic_ns;
	if (opts.metrics_address && !(d.metrics = metrics_server_start(opts.metrics_address))) {
		status = 2;
		goto out;
	}
	if (d.metrics)
		log_info("Metrics on port %d (%s): /metrics, and readiness on /ready", metrics_server_port(d.metrics),
			 opts.metrics_address);
	d.monotonic_to_unix_ns = d.start_unix_ns - d.start_monotonic_ns;
	d.interval_start_monotonic_ns = d.start_monotonic_ns;
	if (opts.npids)
		log_info("Profiling %zu process%s on %u CPUs at %u Hz", opts.npids, opts.npids == 1 ? "" : "es",
			 sampler_cpu_count(d.sampler), opts.frequency);
	else
		log_info("Profiling every process on %u CPUs at %u Hz", sampler_cpu_count(d.sampler), opts.frequency);

	loop_r = run_loop(&d);
	if (loop_r)
		log_error("Sampling stopped: %s", strerror(-loop_r));
	/* What was sampled is still sent or written; the exit status says the run failed. */
	if (d.export) {
		/* The last interval, then a flush bounded by the request timeout. */
		export_interval(&d, true);
		r = export_loop_finish(d.export, opts.export.timeout_ns);
		d.export = NULL;
		if (r)
			log_warn("Some profiles were not delivered before the shutdown deadline");
		status = loop_r ? 1 : 0;
		goto out;
	}

	p = build_interval(&d);
	if (!p) {
		log_error("Failed to build the profile: %s", strerror(errno));
		goto out;
	}
	log_counters(&d, p);
	if (d.k8s)
		k8s_log_counters(d.k8s);
	r = write_output(&opts, p);
	if (r) {
		log_error("Failed to write %s: %s", opts.output ? opts.output : "the table", strerror(-r));
		goto out;
	}
	if (opts.output && strcmp(opts.output, "-"))
		log_info("Wrote %" PRIu64 " samples to %s", p->total_count, opts.output);
	/* The exited processes' last samples are built: their table entries and mappings can go. */
	process_table_sweep(d.processes, forget_process, d.sym);
	status = loop_r ? 1 : 0;
out:
	export_loop_finish(d.export, 0);
	k8s_stop(d.k8s);
	metrics_server_stop(d.metrics);
	profile_free(p);
	sampler_close(d.sampler);
	symbolizer_free(d.sym);
	process_table_free(d.processes);
	metadata_free(d.metadata);
	aggregate_free(d.agg);
	options_free(&opts);
	return status;
}
