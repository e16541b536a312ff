// SPDX-License-Identifier: Apache-2.0
/* The symbolizer's life cycle, kernel lookups through kallsyms, and the periodic maintenance. */
#include "symbolizer_internal.h"
#include "proc_maps_share.h"
#include "kallsyms_cache.h"

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

/* FNV-1a of a small file (0 when it cannot be read): tells when kernel modules changed. */
static uint64_t hash_file(const char *path)
{
	uint64_t h = 1469598103934665603ULL;
	char buf[4096];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		for (size_t i = 0; i < n; i++)
			h = (h ^ (unsigned char)buf[i]) * 1099511628211ULL;
	fclose(f);
	return h;
}

/* The table saved by an earlier run of this boot (kallsyms_cache.h), or NULL; key is filled for a
 * save after a full read (key->head_len 0: no cache). */
static struct kallsyms *cached_kallsyms(struct symbolizer *s, struct kallsyms_cache_key *key)
{
	struct kallsyms *k;

	key->head_len = 0;
	if (!s->config.kallsyms_cache_path ||
	    kallsyms_cache_key_read(key, s->config.kallsyms_path, s->modules_hash, NULL, NULL)) {
		key->head_len = 0;
		return NULL;
	}
	if (s->kallsyms_cache_known && s->kallsyms_cached_modules_hash != s->modules_hash)
		return NULL; /* modules changed since this run read or wrote it */
	k = kallsyms_cache_read(s->config.kallsyms_cache_path, key);
	if (k) {
		s->stats.kallsyms_cache_hits++;
		s->kallsyms_cache_known = true;
		s->kallsyms_cached_modules_hash = s->modules_hash;
	} else if (errno == EPERM || errno == EBADMSG) {
		s->stats.kallsyms_cache_refused++;
	} else if (errno != ENOMEM) {
		s->stats.kallsyms_cache_stale++;
	}
	return k;
}

/* Save a full read for the next run of this boot, unless the file holds it already. */
static void save_kallsyms(struct symbolizer *s, const struct kallsyms *k, const struct kallsyms_cache_key *key)
{
	if (!key->head_len || !k || kallsyms_hidden(k) || !kallsyms_count(k) ||
	    (s->kallsyms_cache_known && s->kallsyms_cached_modules_hash == s->modules_hash) ||
	    hash_file("/proc/modules") != s->modules_hash) /* changed during the read: not this key's */
		return;
	if (kallsyms_cache_write(s->config.kallsyms_cache_path, k, key)) {
		s->stats.kallsyms_cache_write_failed++;
		return;
	}
	s->stats.kallsyms_cache_writes++;
	s->kallsyms_cache_known = true;
	s->kallsyms_cached_modules_hash = s->modules_hash;
}

/* A full read kept as the cache's table, mapped, and the few symbols the cache leaves out, when the
 * cache holds this key's table: the same lookups with 5 MiB less on the heap. Else full itself. */
static struct kallsyms *joined_with_cache(struct symbolizer *s, struct kallsyms *full,
					  const struct kallsyms_cache_key *key)
{
	struct kallsyms *cached;

	if (!full || !key->head_len || !s->kallsyms_cache_known || s->kallsyms_cached_modules_hash != s->modules_hash)
		return full;
	cached = kallsyms_cache_read(s->config.kallsyms_cache_path, key);
	if (!cached || kallsyms_cache_join(cached, full)) {
		kallsyms_free(cached);
		return full;
	}
	s->stats.kallsyms_joined++;
	kallsyms_free(full);
	return cached;
}

/* Kernel symbols from the cache when it holds this boot's (unless full), else read whole. */
static void load_kallsyms(struct symbolizer *s, bool full)
{
	struct kallsyms_cache_key key = { 0 };
	struct kallsyms *k = NULL;

	s->modules_hash = hash_file("/proc/modules");
	if (!full)
		k = cached_kallsyms(s, &key);
	else if (s->config.kallsyms_cache_path &&
		 kallsyms_cache_key_read(&key, s->config.kallsyms_path, s->modules_hash, NULL, NULL))
		key.head_len = 0;
	if (!k) {
		s->stats.kallsyms_full_reads++;
		k = kallsyms_load(s->config.kallsyms_path);
		if (k && !strcmp(s->config.kallsyms_path, "/proc/kallsyms")) {
			FILE *modules = fopen("/proc/modules", "re"); /* bounds each module's last symbol */

			if (modules) {
				kallsyms_set_module_ranges(k, modules);
				fclose(modules);
			}
		}
		save_kallsyms(s, k, &key);
		k = joined_with_cache(s, k, &key);
	}
	s->kallsyms_loaded_ns = symbolizer__now_ns();
	s->changeable_lookups_at_load = s->changeable_lookups;
	s->kallsyms_full_failed = !k;
	if (!k && s->kallsyms)
		return; /* keep the old table rather than none */
	kallsyms_free(s->kallsyms);
	s->kallsyms = k;
	s->stats.kallsyms_hidden = kallsyms_hidden(k);
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
	sym = kallsyms_lookup(s->kallsyms, address);
	/* Code that comes and goes without /proc/modules changing: BPF programs, ftrace and kprobe
	 * trampolines (module names in brackets, with no known end), and addresses no symbol covers. A
	 * table from the cache has none of that code: such a lookup reads the whole file now, once,
	 * so that no frame goes unnamed for the cache. */
	if ((!sym || (sym->module != kallsyms_vmlinux && !sym->end)) && kallsyms_partial(s->kallsyms) &&
	    !s->kallsyms_full_failed) {
		read_kallsyms_for_lookup(s, true); /* failed: the table stays; maintain() tries again */
		sym = kallsyms_lookup(s->kallsyms, address);
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
	if (s->kallsyms_loaded_ns &&
	    (hash_file("/proc/modules") != s->modules_hash ||
	     (s->changeable_lookups != s->changeable_lookups_at_load &&
	      symbolizer__now_ns() - s->kallsyms_loaded_ns >= s->config.kallsyms_refresh_ns))) {
		load_kallsyms(s, true);
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
