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
#include "export_loop.h"
#include "log.h"
#include "options.h"
#include "otlp_encode.h"
#include "profile.h"
#include "sampler.h"
#include "symbolizer.h"
#include "writers.h"

/* Bytes of interned stacks per interval. */
#define MAX_STACK_BYTES (32u << 20)

struct daemon {
	const struct options *opts;
	struct aggregate *agg;
	struct symbolizer *sym;
	struct sampler *sampler;
	uint64_t monotonic_to_unix_ns; /* add to bpf_ktime_get_ns() to get unix time */
	uint64_t malformed_records;
	uint64_t start_unix_ns, start_monotonic_ns;
	struct export_loop *export;        /* NULL without a collector */
	uint64_t interval_start_monotonic_ns; /* start of the interval being aggregated */
};

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void on_record(void *ctx, const void *data, size_t size)
{
	struct daemon *d = ctx;
	const struct otelprof_record_header *hdr = data;
	const struct otelprof_sample *s = data;

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
		/* Read the mappings while the process is alive: it may exit before the output is written. */
		symbolizer_prepare_process(d->sym, (pid_t)s->pid);
		aggregate_add(d->agg, s, s->time_ns + d->monotonic_to_unix_ns);
		break;
	default:
		d->malformed_records++;
		break;
	}
}

static void describe_process(void *ctx, struct profile *p, uint32_t process)
{
	char path[64], exe[PATH_MAX];
	ssize_t n;

	(void)ctx;
	snprintf(path, sizeof(path), "/proc/%u/exe", p->processes[process].pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		const char *base;

		exe[n] = 0;
		base = strrchr(exe, '/');
		profile_add_process_attribute_string(p, process, "process.executable.path", exe);
		profile_add_process_attribute_string(p, process, "process.executable.name", base ? base + 1 : exe);
	} else {
		profile_add_process_attribute_string(p, process, "process.executable.name",
						     profile_string(p, p->processes[process].name));
	}
}

static struct profile *build_interval(struct daemon *d)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	struct profile *p = profile_build(d->agg, d->sym, &(struct profile_build_options){
		.frequency = d->opts->frequency, .time_unix_ns = d->interval_start_monotonic_ns + d->monotonic_to_unix_ns,
		.duration_ns = now - d->interval_start_monotonic_ns, .describe_process = describe_process,
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
	symbolizer_maintain(d->sym);
}

static int arm_timer(int fd, uint64_t ns)
{
	struct itimerspec its = {
		.it_value = { .tv_sec = (time_t)(ns / 1000000000ULL), .tv_nsec = (long)(ns % 1000000000ULL) },
	};

	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
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

/* Sample until the duration ends or a signal arrives. */
static int run_loop(struct daemon *d)
{
	int epfd = -1, sigfd = -1, timerfd = -1, intervalfd = -1, ringfd = sampler_fd(d->sampler), r;
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

	for (;;) {
		struct epoll_event events[4];
		int n = epoll_wait(epfd, events, 4, 1000);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
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
		  " processes gone, %" PRIu64 " modules loaded, %" PRIu64 " failed to open",
		  ss->lookups, ss->symbolized, ss->no_mapping, ss->process_gone, ss->modules_loaded,
		  ss->module_open_failed);
	if (ss->kallsyms_hidden)
		log_warn("Kernel addresses are hidden by kernel.kptr_restrict: kernel frames stay unsymbolized");
}

int main(int argc, char **argv)
{
	struct options opts;
	struct daemon d = { .opts = &opts };
	struct agg_limits limits;
	struct profile *p = NULL;
	int r, status = 1;

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
	d.sym = symbolizer_new(NULL);
	if (!d.agg || !d.sym) {
		log_error("Out of memory");
		goto out;
	}

	d.sampler = sampler_open(&(struct sampler_config){
		.frequency = opts.frequency, .pids = opts.pids, .npids = opts.npids,
		.follow_children = opts.follow_children, .include_idle = opts.include_idle,
		.ringbuf_kib = opts.ringbuf_kib,
	}, on_record, &d, &r);
	if (!d.sampler) {
		status = (r == -EPERM || r == -ENOEXEC) ? 2 : 1;
		goto out;
	}
	if (opts.export.enabled && !(d.export = export_loop_new(&opts.export))) {
		status = 2;
		goto out;
	}
	d.start_unix_ns = clock_ns(CLOCK_REALTIME);
	d.start_monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	d.monotonic_to_unix_ns = d.start_unix_ns - d.start_monotonic_ns;
	d.interval_start_monotonic_ns = d.start_monotonic_ns;
	if (opts.npids)
		log_info("Profiling %zu process%s on %u CPUs at %u Hz", opts.npids, opts.npids == 1 ? "" : "es",
			 sampler_cpu_count(d.sampler), opts.frequency);
	else
		log_info("Profiling every process on %u CPUs at %u Hz", sampler_cpu_count(d.sampler), opts.frequency);

	r = run_loop(&d);
	if (r)
		log_error("Sampling stopped: %s", strerror(-r));
	if (d.export) {
		/* The last interval, then a flush bounded by the request timeout. */
		export_interval(&d, true);
		r = export_loop_finish(d.export, opts.export.timeout_ns);
		d.export = NULL;
		if (r)
			log_warn("Some profiles were not delivered before the shutdown deadline");
		status = 0;
		goto out;
	}

	p = profile_build(d.agg, d.sym, &(struct profile_build_options){
		.frequency = opts.frequency, .time_unix_ns = d.start_unix_ns,
		.duration_ns = clock_ns(CLOCK_MONOTONIC) - d.start_monotonic_ns,
		.describe_process = describe_process,
	});
	if (!p) {
		log_error("Failed to build the profile: %s", strerror(errno));
		goto out;
	}
	log_counters(&d, p);
	r = write_output(&opts, p);
	if (r) {
		log_error("Failed to write %s: %s", opts.output ? opts.output : "the table", strerror(-r));
		goto out;
	}
	if (opts.output && strcmp(opts.output, "-"))
		log_info("Wrote %" PRIu64 " samples to %s", p->total_count, opts.output);
	status = 0;
out:
	export_loop_finish(d.export, 0);
	profile_free(p);
	sampler_close(d.sampler);
	symbolizer_free(d.sym);
	aggregate_free(d.agg);
	options_free(&opts);
	return status;
}
