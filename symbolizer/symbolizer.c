// SPDX-License-Identifier: Apache-2.0
/* The symbolizer's life cycle, kernel lookups through kallsyms, and the periodic maintenance. */
#include "symbolizer_internal.h"
#include "proc_maps_share.h"
#include "kallsyms_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Unreferenced modules unused for this many maintain() calls are dropped. */
#define MODULE_IDLE_GENERATIONS 8

uint64_t symbolizer__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A read of the kernel's symbols (whole when full) as s knows the cache now. */
static struct kallsyms_read kallsyms_job(const struct symbolizer *s, bool full)
{
	return (struct kallsyms_read){
		.kallsyms_path = s->config.kallsyms_path, .cache_path = s->config.kallsyms_cache_path, .full = full,
		.cache_known = s->kallsyms_cache_known, .cached_modules_hash = s->kallsyms_cached_modules_hash,
	};
}

/* A read done: its table replaces the one held (kept when the read failed), its counts added. */
static void take_kallsyms(struct symbolizer *s, struct kallsyms_read *job)
{
	const struct kallsyms_read_counts *c = &job->counts;

	s->modules_hash = job->modules_hash;
	s->kallsyms_cache_known = job->cache_known;
	s->kallsyms_cached_modules_hash = job->cached_modules_hash;
	s->stats.kallsyms_cache_hits += c->cache_hits;
	s->stats.kallsyms_cache_stale += c->cache_stale;
	s->stats.kallsyms_cache_refused += c->cache_refused;
	s->stats.kallsyms_cache_writes += c->cache_writes;
	s->stats.kallsyms_cache_write_failed += c->cache_write_failed;
	s->stats.kallsyms_full_reads += c->full_reads;
	s->stats.kallsyms_joined += c->joined;
	s->kallsyms_loaded_ns = symbolizer__now_ns();
	s->changeable_lookups_at_load = s->changeable_lookups;
	s->kallsyms_full_failed = !job->table;
	if (!job->table && s->kallsyms)
		return; /* keep the old table rather than none */
	kallsyms_free(s->kallsyms);
	s->kallsyms = job->table;
	s->stats.kallsyms_hidden = kallsyms_hidden(job->table);
}

/* Kernel symbols from the cache when it holds this boot's (unless full), else read whole; here. */
static void load_kallsyms(struct symbolizer *s, bool full)
{
	struct kallsyms_read job = kallsyms_job(s, full);

	kallsyms_read_run(&job);
	take_kallsyms(s, &job);
}

/* The read running on the reader's thread, taken in when it is done by deadline_ns (a past one such
 * as 1: no wait; 0: until it is). Whether one was taken. */
static bool settle_kallsyms(struct symbolizer *s, uint64_t deadline_ns)
{
	struct kallsyms_read job;

	if (!s->kallsyms_reader || !kallsyms_reader_wait(s->kallsyms_reader, deadline_ns))
		return false;
	job = kallsyms_reader_take(s->kallsyms_reader);
	s->kallsyms_reader = NULL;
	s->stats.kallsyms_thread_ns += job.wall_ns;
	s->stats.kallsyms_thread_cpu_ns += job.cpu_ns;
	take_kallsyms(s, &job);
	return true;
}

/* kallsyms read whole on the reader's thread (started unless running): whether it was taken in by
 * deadline_ns (as settle_kallsyms()). Without a thread, read here. */
static bool read_kallsyms_in_thread(struct symbolizer *s, uint64_t deadline_ns)
{
	if (!s->kallsyms_reader) {
		struct kallsyms_read job = kallsyms_job(s, true);

		s->kallsyms_reader = kallsyms_reader_start(&job);
		if (!s->kallsyms_reader) {
			load_kallsyms(s, true);
			return true;
		}
	}
	return settle_kallsyms(s, deadline_ns);
}

void symbolizer_load_kallsyms(struct symbolizer *s)
{
	if (!s->kallsyms_loaded_ns)
		load_kallsyms(s, false);
}

struct symbolizer *symbolizer_new(const struct symbolizer_config *config)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (config)
		s->config = *config;
	if (!s->config.kallsyms_path)
		s->config.kallsyms_path = "/proc/kallsyms";
	if (!s->config.kallsyms_refresh_ns)
		s->config.kallsyms_refresh_ns = 60ULL * 1000000000ULL;
	if (!s->config.max_modules)
		s->config.max_modules = SYMBOLIZER_DEFAULT_MAX_MODULES;
	if (!s->config.max_processes)
		s->config.max_processes = SYMBOLIZER_DEFAULT_MAX_PROCESSES;
	if (!s->config.max_module_bytes)
		s->config.max_module_bytes = (size_t)2 << 30;
	s->byte_bound = s->config.max_module_bytes;
	s->stats.module_byte_bound = s->byte_bound;
	if (!s->config.bad_file_retry_ns)
		s->config.bad_file_retry_ns = 60ULL * 1000000000ULL;
	s->modules = calloc(s->config.max_modules, sizeof(*s->modules));
	s->history = calloc(1, sizeof(*s->history));
	if (!s->modules || !s->history) {
		free(s->modules);
		free(s->history);
		free(s);
		return NULL;
	}
	if (!s->config.no_debuginfod)
		s->debuginfod = debuginfo_fetch_new(&(struct debuginfo_fetch_config){
			.max_cache_bytes = s->config.debuginfod_cache_bytes,
			.timeout_ms = s->config.debuginfod_timeout_ms,
			.negative_ttl_ms = s->config.debuginfod_negative_ttl_ms,
		});
	return s;
}

/* The debuginfod client an open left running at symbolizer_free() may still use: kept for it. */
static struct debuginfo_fetch *kept_for_opener;
/* A symbolizer_free() left an open running on its thread. */
static bool open_left_running;

bool symbolizer_open_left_running(void)
{
	return open_left_running;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	proc_maps_share_free(); /* the maps texts this thread's symbolizers offered */
	if (symbolizer__pending_free(s)) {
		open_left_running = true;
		if (s->debuginfod)
			kept_for_opener = s->debuginfod; /* a process's last symbolizer, in practice: not freed */
	} else {
		debuginfo_fetch_free(s->debuginfod);
	}
	for (size_t b = 0; b < PROCESS_BUCKETS; b++) {
		struct sym_process *p = s->buckets[b], *next;

		for (; p; p = next) {
			next = p->next;
			symbolizer__process_free(p);
		}
	}
	symbolizer__roots_free(s);
	for (size_t i = 0; i < s->nmodules; i++)
		symbolizer__module_free(s->modules[i]);
	symbolizer__module_free(s->vdso);
	free(s->modules);
	free(s->history);
	free(s->rules);
	free(s->long_rules);
	kallsyms_reader_free(s->kallsyms_reader); /* a read running: waited for (one read, 50 ms of CPU) */
	kallsyms_free(s->kallsyms);
	python_cache_free(s->python);
	free(s);
}

/* Read kallsyms for a lookup. Not out of the caller's time for module opens: its deadline moves by
 * the read's time (else the build that meets the first kernel frame, the one at shutdown too, leaves
 * its exited processes' modules unopened and their frames unnamed). */
static void read_kallsyms_for_lookup(struct symbolizer *s, bool full)
{
	uint64_t began = symbolizer__now_ns();

	load_kallsyms(s, full);
	if (s->open_deadline_ns > 1)
		s->open_deadline_ns += symbolizer__now_ns() - began;
}

int symbolizer_kernel(struct symbolizer *s, uint64_t address, struct sym_frame *frame)
{
	const struct ksym *sym;

	memset(frame, 0, offsetof(struct sym_frame, lines));
	frame->kind = SYM_FRAME_KERNEL;
	frame->file_address = address;
	s->stats.lookups++;
	/* Read at the first kernel frame unless loaded before: megabytes of text the kernel formats,
	 * 25-35 ms of CPU (seconds of wall time on a saturated host), that a user with no kernel frames
	 * never needs; from the cache, a few large reads, when a run of this boot saved it. */
	if (!s->kallsyms_loaded_ns)
		read_kallsyms_for_lookup(s, false);
	else /* a read on the thread done is taken in; a caller without a deadline waits for it */
		settle_kallsyms(s, s->open_deadline_ns ? 1 : 0);
	sym = kallsyms_lookup(s->kallsyms, address);
	/* Code that comes and goes without /proc/modules changing: BPF programs, ftrace and kprobe
	 * trampolines (module names in brackets, with no known end), and addresses no symbol covers. A
	 * table from the cache has none of that code: such a lookup has the whole file read, once, so
	 * that no frame goes unnamed for the cache. That read (~50 ms of CPU) runs on the reader's
	 * thread, waited for until the caller's deadline as a module's open is (none set: to its end);
	 * a lookup not answered by then is answered from the table held, and counted. */
	if ((!sym || (sym->module != kallsyms_vmlinux && !sym->end)) && kallsyms_partial(s->kallsyms) &&
	    !s->kallsyms_full_failed) {
		if (read_kallsyms_in_thread(s, s->open_deadline_ns)) /* failed: the table stays */
			sym = kallsyms_lookup(s->kallsyms, address);
		else
			s->stats.kallsyms_lookups_before_read++;
	}
	if (!sym || (sym->module != kallsyms_vmlinux && !sym->end))
		s->changeable_lookups++;
	if (!sym)
		return -ENOENT;
	frame->module = sym->module;
	frame->lines[0] = (struct sym_line){ .function = sym->name, .system_name = sym->name };
	frame->nlines = 1;
	s->stats.symbolized++;
	return 0;
}

void symbolizer_maintain(struct symbolizer *s)
{
	symbolizer__reload_fetched(s);
	/* Unreferenced modules idle for several generations are dropped; then the bounds hold. */
	for (size_t i = 0; i < s->nmodules;) {
		struct cached_module *m = s->modules[i];

		if (m->refs == 0 && s->generation - m->generation >= MODULE_IDLE_GENERATIONS)
			symbolizer__evict_at(s, i);
		else
			i++;
	}
	symbolizer__enforce_bounds(s, 0, NULL, NULL);
	s->generation++;

	/* Kernel modules loaded or removed: read kallsyms again. BPF programs come and go without
	 * touching /proc/modules, so while frames are looked up in such code (or miss) it is also re-read
	 * now and then; the kernel's own text never moves, and frames in it alone cost no re-read. */
	settle_kallsyms(s, 1);
	if (s->kallsyms_loaded_ns && !s->kallsyms_reader &&
	    (kallsyms_hash_file("/proc/modules") != s->modules_hash ||
	     (s->changeable_lookups != s->changeable_lookups_at_load &&
	      symbolizer__now_ns() - s->kallsyms_loaded_ns >= s->config.kallsyms_refresh_ns))) {
		/* On the reader's thread: the table held serves until the new one is taken in. */
		read_kallsyms_in_thread(s, 1);
		s->stats.kallsyms_reloads++;
	}
}

const struct symbolizer_stats *symbolizer_stats(const struct symbolizer *s)
{
	struct symbolizer *w = (struct symbolizer *)s;

	if (s->python)
		w->stats.python = *python_cache_stats(s->python);
	w->stats.module_history_dropped = s->history->dropped;
	w->stats.files_kept = s->nkept;
	return &s->stats;
}

void symbolizer_set_open_deadline(struct symbolizer *s, uint64_t deadline_ns)
{
	s->open_deadline_ns = deadline_ns;
}

bool symbolizer_next_notice(struct symbolizer *s, struct sym_notice *out)
{
	if (!s->nnotices)
		return false;
	*out = s->notices[s->notice_head];
	s->notice_head = (s->notice_head + 1) % SYM_NOTICE_SLOTS;
	s->nnotices--;
	return true;
}
