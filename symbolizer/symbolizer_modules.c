// SPDX-License-Identifier: Apache-2.0
/*
 * The module cache: the file behind a mapping opened without trusting its path, shared between
 * files only when they are identical copies of a root-owned one, bounded in entries and bytes
 * (with the perf maps), least recently used evicted.
 *
 * An evicted module that mappings still point at keeps its file open (a descriptor: no mapping, no
 * RSS, a few hundred bytes of kernel memory) until the last of them is released. Its samples are
 * symbolized when their profile is built, often after the process exited, and then neither
 * /proc/PID/map_files nor /proc/PID/root reaches the file any more: without the descriptor, a small
 * --symbol-cache under pressure left such a process's frames unnamed. Symbolizing a process's
 * pending samples at its exit instead would hold names for stacks that may never be exported
 * (memory that grows with the stacks, not the files), and would need the aggregate to call in;
 * a descriptor per file is bounded by the files themselves (SYMBOLIZER_MAX_KEPT_FILES), keeps the
 * very bytes that were mapped (a binary replaced or deleted since included), and costs nothing
 * until an eviction.
 */
#include "symbolizer_internal.h"
#include "vdso.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Largest file compared byte for byte with a cached module of its build id; a bigger copy gets a
 * module of its own rather than stall the caller. */
#define SHARE_MAX_COMPARE_BYTES (256ULL << 20)

void symbolizer__module_free(struct cached_module *m)
{
	if (!m)
		return;
	if (m->kept) {
		close(m->kept_fd);
		(*m->nkept)--;
	}
	elf_module_free(m->elf);
	free(m);
}

void symbolizer__module_release(struct cached_module *m)
{
	if (!m || !m->refs)
		return;
	if (!--m->refs && m->kept)
		symbolizer__module_free(m); /* out of modules[] already: its last mapping is gone */
}

/* path resolved inside root (symlinks cannot leave it), opened read-only and non-blocking. */
static int open_under(int root, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

/*
 * Open the file behind a mapping without trusting its path: the file of its evicted module, kept
 * open (kept_fd >= 0, see the top of this file); else map_files gives the mapped file itself;
 * otherwise resolve the path inside the process's root so a container's symlinks cannot point
 * outside it. Only regular files whose device and inode match are used.
 */
static int open_mapped_file(const struct symbolizer *s, pid_t pid, const struct sym_map *map, int kept_fd,
			    int root, struct stat *st)
{
	char path[128];
	int fd = -1;

	if (kept_fd >= 0) {
		fd = fcntl(kept_fd, F_DUPFD_CLOEXEC, 0);
		/* A module shared by identical copies keeps one copy's file: another copy's mapping
		 * goes through /proc. */
		if (fd >= 0 && (fstat(fd, st) || st->st_ino != map->inode || st->st_dev != map->dev)) {
			close(fd);
			fd = -1;
		}
		if (fd >= 0)
			return fd;
	}
	if (!s->config.no_map_files) {
		snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid,
			 (unsigned long long)map->start, (unsigned long long)map->end);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	}
	if (fd < 0) {
		if (root < 0)
			return root;
		fd = open_under(root, map->path);
		if (fd < 0)
			return fd;
	}
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_ino != map->inode || st->st_dev != map->dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static struct cached_module *find_module(struct symbolizer *s, uint64_t dev, uint64_t inode)
{
	for (size_t i = 0; i < s->nmodules; i++) {
		struct cached_module *m = s->modules[i];

		for (unsigned j = 0; j < m->nids; j++)
			if (m->ids[j].dev == dev && m->ids[j].inode == inode)
				return m;
	}
	return NULL;
}

static bool has_build_id(const struct elf_module *elf, const unsigned char *bits, size_t n)
{
	const unsigned char *other;

	return elf && n && elf_module_build_id_raw(elf, &other) == n && !memcmp(bits, other, n);
}

/* m (out of the cache, or never in it) holds its file open as fd, one of the bounded kept files. */
static void kept_as(struct symbolizer *s, struct cached_module *m, int fd)
{
	m->kept = true;
	m->kept_fd = fd;
	m->nkept = &s->nkept;
	s->nkept++;
	s->stats.files_kept = s->nkept;
}

/* Keep the file of m, leaving the cache, open for the mappings still pointing at it: true when it is
 * (m->kept); the drop is counted. */
static bool keep_file(struct symbolizer *s, struct cached_module *m)
{
	int fd;

	if (!m->elf || !m->nids)
		return false; /* a bad file: its mappings look again when its time is up */
	if (s->nkept + 1 > SYMBOLIZER_MAX_KEPT_FILES ||
	    (fd = elf_module_dup_fd(m->elf, m->ids[0].dev, m->ids[0].inode)) < 0) {
		s->stats.files_kept_dropped++;
		return false;
	}
	kept_as(s, m, fd);
	return true;
}

void symbolizer__evict_at(struct symbolizer *s, size_t i)
{
	struct cached_module *m = s->modules[i];
	bool kept = m->refs && keep_file(s, m);

	if (m->refs && !kept) {
		for (size_t b = 0; b < PROCESS_BUCKETS; b++)
			for (struct sym_process *p = s->buckets[b]; p; p = p->next)
				for (size_t j = 0; j < p->nmaps; j++)
					if (p->maps[j].module == m) {
						p->maps[j].module = NULL;
						p->maps[j].tried = false;
					}
	}
	s->module_bytes -= m->bytes;
	s->modules[i] = s->modules[--s->nmodules];
	if (kept) {
		elf_module_free(m->elf); /* what the bound counted; the mappings keep m until released */
		m->elf = NULL;
	} else {
		symbolizer__module_free(m);
	}
	s->stats.modules_evicted++;
	s->stats.modules_cached = s->nmodules;
	s->stats.module_bytes = s->module_bytes;
}

/* A module under 1/8 of its share (1/16 of the cache) that opened fast may be opened in full
 * again after an eviction: such a reopen costs less than a loop turn's budget. */
#define MODULE_CHEAP_SHARE_DIVISOR 8

/* A mapping whose module was not admitted looks again (whether it fits now) after this long. */
#define ADMISSION_RETRY_NS (1000ULL * 1000000ULL)

/* The most bytes one module may account for at the full tier: its share of the cache. */
static size_t module_cap(const struct symbolizer *s)
{
	return s->byte_bound / MODULE_SHARE_DIVISOR;
}

/* m leaves to make room: remembered, so that it is not opened at full cost again soon after. */
static void evicted_for_room(struct symbolizer *s, const struct cached_module *m)
{
	struct module_history_entry *e;

	if (!m->elf)
		return;
	s->stats.module_pressure_evictions++;
	e = module_history_get(s->history, &m->key, symbolizer__now_ns(), false);
	if (e)
		module_history_evicted(e, e->touched_ns, module_cap(s) / MODULE_CHEAP_SHARE_DIVISOR);
}

/* Least recently used module other than keep, unreferenced ones first; SIZE_MAX when none. */
static size_t lru_victim(const struct symbolizer *s, const struct cached_module *keep)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < s->nmodules; i++) {
		const struct cached_module *m = s->modules[i], *b;

		if (m == keep)
			continue;
		if (best == SIZE_MAX) {
			best = i;
			continue;
		}
		b = s->modules[best];
		if ((m->refs == 0) != (b->refs == 0) ? m->refs == 0 : m->last_used < b->last_used)
			best = i;
	}
	return best;
}

/* The process whose perf map was used least recently, other than keep; NULL when none. */
static struct sym_process *lru_perf_map(const struct symbolizer *s, const struct sym_process *keep)
{
	struct sym_process *best = NULL;

	for (size_t b = 0; s->nperf_maps && b < PROCESS_BUCKETS; b++)
		for (struct sym_process *p = s->buckets[b]; p; p = p->next)
			if (p->jit && p != keep && (!best || p->jit_used < best->jit_used))
				best = p;
	return best;
}

size_t symbolizer__bytes_held(const struct symbolizer *s)
{
	return s->module_bytes + s->perf_map_bytes;
}

/*
 * Evict until the cache holds at most max_modules - room entries and modules and perf maps fit the
 * byte bound, least recently used first. keep, the module a lookup is using, and keep_jit's perf
 * map stay: a module left alone over the bound is counted.
 */
void symbolizer__enforce_bounds(struct symbolizer *s, size_t room, const struct cached_module *keep,
				const struct sym_process *keep_jit)
{
	while (s->nmodules + room > s->config.max_modules || symbolizer__bytes_held(s) > s->byte_bound) {
		size_t victim = lru_victim(s, keep);
		struct sym_process *jit = NULL;

		if (s->nmodules + room <= s->config.max_modules) /* only bytes: a perf map may go instead */
			jit = lru_perf_map(s, keep_jit);
		if (jit && (victim == SIZE_MAX || jit->jit_used < s->modules[victim]->last_used)) {
			symbolizer__jit_drop(s, jit);
			s->stats.perf_maps_evicted++;
			continue;
		}
		if (victim == SIZE_MAX) {
			if (keep && symbolizer__bytes_held(s) > s->byte_bound)
				s->stats.module_bytes_over++;
			break;
		}
		evicted_for_room(s, s->modules[victim]);
		symbolizer__evict_at(s, victim);
	}
}

void symbolizer_set_byte_bound(struct symbolizer *s, size_t bytes)
{
	size_t floor = s->config.max_module_bytes < SYMBOLIZER_MIN_BYTE_BOUND ? s->config.max_module_bytes
									    : SYMBOLIZER_MIN_BYTE_BOUND;
	uint64_t evicted = s->stats.modules_evicted + s->stats.perf_maps_evicted;

	if (bytes > s->config.max_module_bytes)
		bytes = s->config.max_module_bytes;
	if (bytes < floor)
		bytes = floor;
	s->byte_bound = bytes;
	s->stats.module_byte_bound = bytes;
	if (symbolizer__bytes_held(s) <= bytes)
		return;
	symbolizer__enforce_bounds(s, 0, NULL, NULL);
	s->stats.byte_bound_evictions += s->stats.modules_evicted + s->stats.perf_maps_evicted - evicted;
}

/* A module grows as it is used (result cache, indexes, libdw's line tables and CFI): measure it
 * again after each use and keep the byte bound then, not only when modules are inserted. */
void symbolizer__module_measure(struct symbolizer *s, struct cached_module *m)
{
	size_t bytes = sizeof(*m) + elf_module_bytes(m->elf);

	if (bytes == m->bytes)
		return;
	s->module_bytes = s->module_bytes - m->bytes + bytes;
	m->bytes = bytes;
	s->stats.module_bytes = s->module_bytes;
	if (m->tier == MODULE_TIER_FULL && bytes > module_cap(s)) {
		/* Grown past its share (line tables, indexes): its next open is at the symbols tier. */
		struct module_history_entry *e = module_history_get(s->history, &m->key, symbolizer__now_ns(), false);

		if (e)
			module_history_measured(e, bytes, module_cap(s));
	}
	if (symbolizer__bytes_held(s) > s->byte_bound)
		symbolizer__enforce_bounds(s, 0, m, NULL);
}

static struct cached_module *insert_module(struct symbolizer *s, struct cached_module *m)
{
	symbolizer__enforce_bounds(s, 1, NULL, NULL);
	if (s->nmodules >= s->config.max_modules) {
		s->stats.module_cache_full++;
		symbolizer__module_free(m);
		return NULL;
	}
	m->generation = s->generation;
	s->modules[s->nmodules++] = m;
	s->module_bytes += m->bytes;
	s->stats.modules_cached = s->nmodules;
	s->stats.module_bytes = s->module_bytes;
	symbolizer__enforce_bounds(s, 0, m, NULL);
	return m;
}

/* Another file holding module m (a copy in another container, a hard link): remembered with its
 * own htlhash, which hashes the file's bytes and so differs between a stripped and a full copy. */
static void add_file_id(struct cached_module *m, const struct sym_map *map, const char *htlhash)
{
	unsigned slot = m->nids < MODULE_FILE_IDS ? m->nids++ : MODULE_FILE_IDS - 1;

	m->ids[slot] = (struct file_id){ .dev = map->dev, .inode = map->inode };
	if (htlhash)
		snprintf(m->ids[slot].htlhash, sizeof(m->ids[slot].htlhash), "%s", htlhash);
}

/* The htlhash of the file the mapping maps, or NULL. */
const char *symbolizer__module_htlhash(const struct cached_module *m, const struct sym_map *map)
{
	for (unsigned i = 0; i < m->nids; i++)
		if (m->ids[i].dev == map->dev && m->ids[i].inode == map->inode)
			return m->ids[i].htlhash[0] ? m->ids[i].htlhash : NULL;
	return NULL;
}

/* fd holds exactly the bytes of elf's file (read once, compared with libelf's mapping of it). */
static bool same_contents(const struct elf_module *elf, int fd, uint64_t size)
{
	unsigned char buf[65536];
	const unsigned char *image;
	uint64_t off = 0;
	size_t len = 0;
	ssize_t n;

	if (size > SHARE_MAX_COMPARE_BYTES || !(image = elf_module_image(elf, &len)) || len != size)
		return false;
	while (off < size) {
		n = pread(fd, buf, size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf), (off_t)off);
		if (n <= 0 || memcmp(buf, image + off, (size_t)n))
			return false;
		off += (uint64_t)n;
	}
	return true;
}

/*
 * A cached module that the file fd is an identical copy of. A build id is only a claim the file
 * makes: anyone can write another program's into theirs, so a module of another file serves this
 * one only when its bytes are the same and the cached module is one nobody but root could have
 * shaped (see shareable). Files claiming a cached build id without being such a copy are counted
 * and get a module of their own.
 */
static struct cached_module *share_by_build_id(struct symbolizer *s, int fd, const struct sym_map *map,
					       const struct stat *st, const struct module_key *key)
{
	char htlhash[SYM_HTLHASH_HEX_LEN + 1];
	bool claimed = false;

	if (!key->build_id_len)
		return NULL;
	for (size_t i = 0; i < s->nmodules; i++) {
		struct cached_module *m = s->modules[i];

		if (!has_build_id(m->elf, key->build_id, key->build_id_len))
			continue;
		claimed = true;
		if (!m->shareable || !same_contents(m->elf, fd, (uint64_t)st->st_size))
			continue;
		add_file_id(m, map, sym_htlhash_fd(fd, htlhash) == 0 ? htlhash : NULL);
		s->stats.modules_shared_by_build_id++;
		return m;
	}
	if (claimed)
		s->stats.modules_share_refused++;
	return NULL;
}

/* Who the file fd is for the module history: its build id, or (none, or not ELF) its identity. */
static void module_key_of(int fd, const struct sym_map *map, struct module_key *key)
{
	struct elf_module_peek peek;

	*key = (struct module_key){ .dev = map->dev, .inode = map->inode };
	if (elf_module_peek(fd, &peek) == 0 && peek.build_id_len) {
		memcpy(key->build_id, peek.build_id, peek.build_id_len);
		key->build_id_len = peek.build_id_len;
	}
}

/* Queue the notice of a module served by the cheaper tier (dropped, counted, when the ring is full). */
static void notice(struct symbolizer *s, const struct cached_module *m, const struct module_history_entry *e,
		   enum module_tier_reason reason, const char *path)
{
	struct sym_notice *n;
	const char *id = m->elf ? elf_module_build_id(m->elf) : NULL;

	if (s->nnotices == SYM_NOTICE_SLOTS) {
		s->stats.notices_dropped++;
		return;
	}
	n = &s->notices[(s->notice_head + s->nnotices++) % SYM_NOTICE_SLOTS];
	snprintf(n->path, sizeof(n->path), "%s", path ? path : "");
	snprintf(n->build_id, sizeof(n->build_id), "%s", id ? id : "");
	n->why = module_history_reason_name(reason);
	n->bytes = e->peak_bytes;
	n->share = module_cap(s);
	n->open_ns = e->open_ns;
}

/* An open ended: its cost measured and remembered, its tier counted, a cheaper tier told once. */
static void opened(struct symbolizer *s, struct cached_module *m, struct module_history_entry *e,
		   enum module_tier_reason reason, const char *path, uint64_t open_ns)
{
	uint64_t bytes = m->elf ? elf_module_bytes(m->elf) : 0;

	s->stats.module_open_ns_total += open_ns;
	if (open_ns > s->stats.module_open_ns_max)
		s->stats.module_open_ns_max = open_ns;
	if (bytes > s->stats.module_open_bytes_max)
		s->stats.module_open_bytes_max = bytes;
	if (!m->elf)
		return;
	module_history_opened(e, m->tier, reason, bytes, open_ns, symbolizer__now_ns());
	if (reason == MODULE_REASON_TOO_BIG && e->peak_bytes < elf_module_counters(m->elf)->refused_bytes)
		e->peak_bytes = elf_module_counters(m->elf)->refused_bytes; /* what the full tier would take */
	if (m->tier == MODULE_TIER_FULL) {
		s->stats.modules_full++;
		return;
	}
	s->stats.modules_symbols_tier++;
	s->stats.modules_tier_too_big += reason == MODULE_REASON_TOO_BIG;
	s->stats.modules_tier_thrash += reason == MODULE_REASON_THRASH;
	s->stats.modules_tier_slow += reason == MODULE_REASON_SLOW;
	if (!e->noticed) {
		e->noticed = true;
		notice(s, m, e, reason, path);
	}
}

/* The end of an open (in place, or by the opener's thread): its cost remembered, its counters, and
 * the module cached (or marked bad). */
static struct cached_module *finish_open(struct symbolizer *s, struct cached_module *m, enum module_tier_reason reason,
					 uint64_t started, const struct sym_map *map, uid_t uid, mode_t mode)
{
	struct module_history_entry *e = module_history_get(s->history, &m->key, symbolizer__now_ns(), true);

	if (m->elf && m->tier == MODULE_TIER_FULL && elf_module_counters(m->elf)->inflate_refused) {
		m->tier = MODULE_TIER_SYMBOLS; /* the DWARF or the debug file did not fit its share */
		reason = MODULE_REASON_TOO_BIG;
	}
	opened(s, m, e, reason, map->path, symbolizer__now_ns() - started);
	if (s->debuginfod)
		debuginfo_fetch_stats(s->debuginfod, &s->stats.debuginfod);
	if (m->elf) {
		const struct elf_module_counters *c = elf_module_counters(m->elf);

		s->stats.debuglink_too_big += c->debuglink_too_big;
		s->stats.debug_plain_read += c->debug_plain_read;
		s->stats.debug_plain_written += c->debug_plain_written;
		s->stats.debug_plain_failed += c->debug_plain_failed;
		s->stats.debug_plain_evicted += c->debug_plain_evicted;
		s->stats.module_index_ns_total += elf_module_counters(m->elf)->index_ns;
		s->stats.cus_prebuilt += elf_module_counters(m->elf)->cus_prebuilt;
		s->stats.cus_prebuilt_cpu_ns += elf_module_counters(m->elf)->cus_prebuilt_cpu_ns;
		s->stats.modules_too_big += elf_module_counters(m->elf)->inflate_refused;
		s->stats.go_tables_refused += elf_module_counters(m->elf)->go_refused;
		s->stats.go_tables += elf_module_is_go(m->elf);
	}
	add_file_id(m, map, m->elf ? elf_module_htlhash(m->elf) : NULL);
	if (!m->elf) {
		s->stats.module_open_failed++;
		s->stats.modules_bad++;
		m->bad_until_ns = symbolizer__now_ns() + s->config.bad_file_retry_ns;
		m->bytes = sizeof(*m);
		return insert_module(s, m);
	}
	m->shareable = uid == 0 && !(mode & (S_IWGRP | S_IWOTH)) && !elf_module_debug_in_root(m->elf);
	s->stats.modules_loaded++;
	m->bytes = sizeof(*m) + elf_module_bytes(m->elf);
	return insert_module(s, m);
}

static void pending_release(struct pending_open *p)
{
	free(p->file.path);
	*p = (struct pending_open){ .fd = -1, .root = -1 };
}

/* The opener's queue, run until deadline_ns (CLOCK_MONOTONIC; 0: however long it takes; 1: only
 * what is done already) or until the open of map (NULL: all of them) is done: each module opened is
 * cached. false while the opens waited for run on (their modules are taken at a later lookup). */
static bool settle_pending(struct symbolizer *s, uint64_t deadline_ns, const struct sym_map *map)
{
	while (s->npending) {
		struct pending_open *p = &s->pending[0];
		bool mine = map && p->file.dev == map->dev && p->file.inode == map->inode;
		int err;

		if (!module_opener_busy(s->opener)) {
			if (module_opener_start(s->opener, p->fd, &p->options)) {
				/* No thread: opened in place. */
				p->m->elf = elf_module_open(p->fd, &p->options);
				if (p->root >= 0)
					close(p->root);
			}
			p->fd = p->root = -1; /* the job's, or consumed */
		}
		if (module_opener_busy(s->opener)) {
			if (!module_opener_wait(s->opener, deadline_ns))
				return false;
			p->m->elf = module_opener_take(s->opener, &err);
		}
		finish_open(s, p->m, p->reason, p->started, &p->file, p->uid, p->mode);
		pending_release(p);
		memmove(&s->pending[0], &s->pending[1], --s->npending * sizeof(s->pending[0]));
		if (mine)
			return true;
	}
	return true;
}

bool symbolizer_settle_opens(struct symbolizer *s, uint64_t deadline_ns)
{
	return settle_pending(s, deadline_ns, NULL);
}

/* The file of map waits in the opener's queue. */
static bool pending_has(const struct symbolizer *s, const struct sym_map *map)
{
	for (size_t i = 0; i < s->npending; i++)
		if (s->pending[i].file.dev == map->dev && s->pending[i].file.inode == map->inode)
			return true;
	return false;
}

bool symbolizer__pending_free(struct symbolizer *s)
{
	/* An open still running is not waited for: its thread frees what it opens. */
	bool abandoned = module_opener_abandon(s->opener);

	s->opener = NULL;
	for (size_t i = 0; i < s->npending; i++) {
		struct pending_open *p = &s->pending[i];

		if (p->fd >= 0)
			close(p->fd);
		if (p->root >= 0)
			close(p->root);
		symbolizer__module_free(p->m);
		pending_release(p);
	}
	s->npending = 0;
	return abandoned;
}

/* While a deadline is set, queue m's open (fd and root consumed) for the opener's thread and wait for
 * the queue until the deadline: false when m is not open by then (it is taken at a later lookup), or
 * could not be queued (then nothing is consumed: *queued false). */
static bool open_in_thread(struct symbolizer *s, struct cached_module *m, int fd, int root,
			   const struct elf_module_options *options, enum module_tier_reason reason, uint64_t started,
			   const struct sym_map *map, const struct stat *st, bool *queued)
{
	struct pending_open *p = &s->pending[s->npending];

	*queued = false;
	if (s->npending == SYM_PENDING_OPENS || (!s->opener && !(s->opener = module_opener_new(s->config.open_delay_ms))))
		return false;
	*p = (struct pending_open){
		.m = m, .reason = reason, .started = started, .uid = st->st_uid, .mode = st->st_mode,
		.file = { .dev = map->dev, .inode = map->inode, .path = map->path ? strdup(map->path) : NULL },
		.fd = fd, .root = root, .options = *options,
	};
	if (map->path && !p->file.path) {
		pending_release(p);
		return false;
	}
	p->options.path = p->file.path;
	s->npending++;
	*queued = true;
	return settle_pending(s, s->open_deadline_ns, map) && !pending_has(s, map);
}

/*
 * map's module cannot be had now (its open deferred, not admitted, or no room): hold its file open
 * (a kept module of no ELF, map's alone), so that a later lookup opens it even once the process is
 * gone. Nothing when map holds one already, or its file cannot be opened (counted at the bound).
 */
static void hold_file(struct symbolizer *s, pid_t pid, struct sym_map *map)
{
	struct cached_module *m;
	struct stat st;
	int root, fd;

	if (map->module || map->vdso)
		return;
	if (s->nkept + 1 > SYMBOLIZER_MAX_KEPT_FILES) {
		s->stats.files_kept_dropped++;
		return;
	}
	root = symbolizer__open_root(pid);
	fd = open_mapped_file(s, pid, map, -1, root, &st);
	if (root >= 0)
		close(root);
	if (fd < 0)
		return;
	if (!(m = calloc(1, sizeof(*m)))) {
		close(fd);
		return;
	}
	m->ids[0] = (struct file_id){ .dev = map->dev, .inode = map->inode };
	m->nids = 1;
	m->refs = 1;
	kept_as(s, m, fd);
	map->module = m;
}

/*
 * Open and cache the file behind map. When the file cannot be opened for this process (it exited,
 * or its path now names another file: a FIFO, a symlink, a replaced binary) that is a fact about
 * the process, not the file: *per_process_failure is set and nothing is cached, so other
 * processes mapping the same file are not affected. A file that opens but is not usable ELF is
 * cached as bad for a while. While a deadline is set the open runs in the opener's thread: past the
 * deadline *deferred is set and the module comes at a later lookup. kept_fd: the file of the
 * mapping's evicted module, kept open (-1: none).
 */
static struct cached_module *open_module(struct symbolizer *s, pid_t pid, struct sym_map *map, int kept_fd,
					 bool *per_process_failure, bool *not_admitted, bool *deferred)
{
	struct cached_module *m = calloc(1, sizeof(*m)), *same;
	struct stat st;
	int root = -1, fd;

	*per_process_failure = *not_admitted = *deferred = false;
	if (!m)
		return NULL;
	m->serial = ++s->next_serial;
	s->stats.module_cache_misses++;
	root = symbolizer__open_root_of(s, pid);
	fd = open_mapped_file(s, pid, map, kept_fd, root, &st);
	if (fd >= 0)
		module_key_of(fd, map, &m->key);
	if (fd >= 0 && (same = share_by_build_id(s, fd, map, &st, &m->key))) {
		close(fd);
		if (root >= 0)
			close(root);
		symbolizer__module_free(m);
		return same;
	}
	if (fd >= 0) {
		enum module_tier_reason reason;
		struct module_history_entry *e = module_history_get(s->history, &m->key, symbolizer__now_ns(), true);
		uint64_t started = symbolizer__now_ns();
		struct elf_module_options options;
		bool queued;

		m->tier = module_history_decide(e, started, &reason);
		if (module_history_must_fit(e, started) &&
		    elf_cost_add(symbolizer__bytes_held(s), e->bytes, 0) > s->byte_bound) {
			/* Twice out under pressure already: not again at another module's expense. */
			s->stats.modules_not_admitted++;
			*not_admitted = true;
			close(fd);
			if (root >= 0)
				close(root);
			symbolizer__module_free(m);
			return NULL;
		}
		options = (struct elf_module_options){
			.root_fd = root, .path = map->path, .debug_dirs = s->config.debug_dirs,
			.debug_plain_dir = s->config.debug_plain_dir,
			.debuginfod = s->debuginfod, .max_bytes = module_cap(s),
			.symbols_only = m->tier == MODULE_TIER_SYMBOLS,
		};
		if (s->open_deadline_ns > 1) {
			/* A caller's loop waits no longer than its deadline, whatever the file costs. */
			if (open_in_thread(s, m, fd, root, &options, reason, started, map, &st, &queued))
				return find_module(s, map->dev, map->inode);
			if (queued || s->npending == SYM_PENDING_OPENS) {
				if (!queued) {
					close(fd);
					if (root >= 0)
						close(root);
					symbolizer__module_free(m);
				}
				*deferred = true;
				return NULL;
			}
		}
		m->elf = elf_module_open(fd, &options);
		if (root >= 0)
			close(root);
		return finish_open(s, m, reason, started, map, st.st_uid, st.st_mode);
	}
	if (root >= 0)
		close(root);
	/* Not the file's fault (the process exited, or its path names another file now): nothing is
	 * marked bad, so other processes mapping the same file are not affected. */
	s->stats.module_open_failed++;
	if (root == -ENOENT || root == -ESRCH)
		s->stats.process_gone++;
	*per_process_failure = true;
	symbolizer__module_free(m);
	return NULL;
}

struct cached_module *symbolizer__module_for_map(struct symbolizer *s, pid_t pid, struct sym_map *map)
{
	/* Its module was evicted with the file kept: looked up (or opened through it) again. */
	struct cached_module *m, *kept = map->module && map->module->kept ? map->module : NULL;
	bool per_process_failure = false, not_admitted = false, deferred, reopened = false;

	if (map->vdso) {
		if (!map->tried && (map->module = symbolizer__vdso_module(s, map)))
			map->module->refs++;
		map->tried = true;
		return map->module;
	}
	if (map->tried && (!map->module || kept) && map->retry_ns) {
		if (symbolizer__now_ns() < map->retry_ns)
			return NULL;
		map->tried = false; /* this process's time is up: try its file again */
		map->retry_ns = 0;
	}
	if (map->tried && !kept) {
		m = map->module;
		if (!m || m->elf || symbolizer__now_ns() < m->bad_until_ns)
			return m;
		/* A bad file's time is up: forget it and try the file again. */
		for (size_t i = 0; i < s->nmodules; i++)
			if (s->modules[i] == m) {
				symbolizer__evict_at(s, i);
				break;
			}
	}
	m = find_module(s, map->dev, map->inode);
	if (!m && s->npending) {
		/* What the opener's thread finished, and this very file's open (by the deadline) when it is
		 * queued; no wait for other files. */
		settle_pending(s, pending_has(s, map) ? s->open_deadline_ns : 1, map);
		m = find_module(s, map->dev, map->inode);
	}
	if (m) {
		s->stats.module_cache_hits++;
	} else if (pending_has(s, map) || s->open_deadline_ns == 1) {
		/* Its open runs on, or opens are deferred on purpose (deadline 1): opened by a later lookup. */
		s->stats.module_opens_deferred++;
		hold_file(s, pid, map);
		return NULL;
	} else {
		m = open_module(s, pid, map, kept ? kept->kept_fd : -1, &per_process_failure, &not_admitted,
				&deferred);
		if (deferred) {
			s->stats.module_opens_deferred++; /* its open runs on: taken at a later lookup */
			hold_file(s, pid, map);
			return NULL;
		}
		reopened = kept && m;
	}
	if (!m && (per_process_failure || not_admitted)) {
		if (not_admitted)
			hold_file(s, pid, map);
		map->tried = true;
		map->retry_ns = symbolizer__now_ns() +
				(not_admitted ? ADMISSION_RETRY_NS : s->config.bad_file_retry_ns);
		return NULL;
	}
	if (!m) {
		hold_file(s, pid, map);
		return NULL; /* retried on a later lookup */
	}
	s->stats.modules_reopened_kept += reopened;
	symbolizer__module_release(kept);
	m->refs++;
	map->module = m;
	map->tried = true;
	return m;
}

struct cached_module *symbolizer__vdso_module(struct symbolizer *s, const struct sym_map *map)
{
	if (!s->vdso_tried) {
		struct cached_module *m = calloc(1, sizeof(*m));
		int fd = m ? vdso_image_fd(&s->vdso_bytes) : -ENOMEM;

		s->vdso_tried = true;
		if (fd >= 0)
			m->elf = elf_module_open(fd, &(struct elf_module_options){
				.root_fd = -1, .debug_dirs = s->config.debug_dirs, .max_bytes = module_cap(s),
				.symbols_only = true, .strong_names = true,
			});
		if (m && m->elf) {
			m->serial = ++s->next_serial;
			m->bytes = sizeof(*m) + elf_module_bytes(m->elf);
			s->module_bytes += m->bytes; /* in the byte bound, as the other modules */
			s->stats.module_bytes = s->module_bytes;
			s->vdso = m;
		} else {
			symbolizer__module_free(m);
			s->stats.vdso_refused++;
		}
	}
	if (s->vdso && map->end - map->start != s->vdso_bytes) {
		s->stats.vdso_refused++; /* another ABI's vDSO (a 32-bit process) */
		return NULL;
	}
	return s->vdso;
}

/* Modules opened without DWARF whose debug file has since been downloaded are dropped, so the
 * next lookup opens them again with it. */
void symbolizer__reload_fetched(struct symbolizer *s)
{
	unsigned char id[64];
	size_t len;

	if (!s->debuginfod)
		return;
	while ((len = debuginfo_fetch_completed(s->debuginfod, id))) {
		/* Every module of the build id: files claiming one are not all copies of one file. */
		for (size_t i = 0; i < s->nmodules;) {
			struct elf_module *elf = s->modules[i]->elf;

			if (elf && !elf_module_has_dwarf(elf) && has_build_id(elf, id, len)) {
				symbolizer__evict_at(s, i);
				s->stats.debuginfod_reloaded++;
			} else {
				i++;
			}
		}
	}
	debuginfo_fetch_stats(s->debuginfod, &s->stats.debuginfod);
}
