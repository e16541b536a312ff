// SPDX-License-Identifier: Apache-2.0
/*
 * The table of process instances and their mappings: entries created, found, read again from
 * /proc/PID/maps only while the pid still runs the same instance, retired, evicted and forgotten.
 */
#include "symbolizer_internal.h"
#include "vdso.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proc_maps.h"
#include "proc_maps_share.h"
#include "proc_stat.h"

/* A process whose address misses every mapping re-reads its maps at most this often, after its first
 * MAPS_QUICK_REFRESHES re-reads (a process just started maps its libraries while being sampled). */
#define MAPS_REFRESH_NS 1000000000ULL
#define MAPS_QUICK_REFRESHES 4
/* Mappings from the history asked this recently are not asked again for a check. */
#define MAPS_ASKED_FRESH_NS 10000000ULL
/* Most mappings kept per process; the rest of a huge maps file is ignored and counted. */
#define MAX_MAPS_PER_PROCESS 65536
/* Most of a maps file read (a process with 65536 mappings lists about 7 MB). */
#define MAPS_TEXT_MAX_BYTES (64u << 20)

static void maps_free(struct sym_map *maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		symbolizer__module_release(maps[i].module);
		free(maps[i].path);
	}
	free(maps);
}

void symbolizer__process_free(struct sym_process *p)
{
	maps_free(p->maps, p->nmaps);
	perf_map_free(p->jit);
	free(p);
}

static struct sym_process **process_slot(struct symbolizer *s, pid_t pid, uint64_t instance)
{
	struct sym_process **pp = &s->buckets[(uint32_t)pid % PROCESS_BUCKETS];

	while (*pp && ((*pp)->pid != pid || (*pp)->instance != instance))
		pp = &(*pp)->next;
	return pp;
}

static void process_unlink(struct symbolizer *s, struct sym_process **slot)
{
	struct sym_process *p = *slot;

	symbolizer__jit_drop(s, p);
	*slot = p->next;
	symbolizer__process_free(p);
	s->nprocesses--;
}

/* Drop the least recently used retired instance to make room; false when none is retired. */
static bool evict_retired(struct symbolizer *s)
{
	struct sym_process **victim = NULL;

	for (size_t b = 0; b < PROCESS_BUCKETS; b++)
		for (struct sym_process **pp = &s->buckets[b]; *pp; pp = &(*pp)->next)
			if ((*pp)->retired && (!victim || (*pp)->last_used < (*victim)->last_used))
				victim = pp;
	if (!victim)
		return false;
	process_unlink(s, victim);
	s->stats.processes_evicted++;
	return true;
}

static int by_start(const void *a, const void *b)
{
	const struct sym_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The identity of pid now. 0, or -ESRCH when it is gone. */
static int read_identity(pid_t pid, struct process_identity *id)
{
	char path[64];
	struct stat st;
	int r;

	memset(id, 0, sizeof(*id));
	r = proc_stat_start_ticks("/proc", pid, &id->start_ticks);
	if (r)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (stat(path, &st) == 0) {
		id->exe_dev = st.st_dev;
		id->exe_ino = st.st_ino;
	}
	return 0;
}

static bool same_identity(const struct process_identity *a, const struct process_identity *b)
{
	/* No executable on one side (its main thread exited, a zombie leader): the start time decides. */
	return a->start_ticks == b->start_ticks &&
	       (!a->exe_ino || !b->exe_ino || (a->exe_dev == b->exe_dev && a->exe_ino == b->exe_ino));
}

static int read_maps_now(const struct sym_process *p, struct symbolizer_stats *stats, struct sym_map **out,
			 size_t *nout, char **text, size_t *text_len);

static void text_drop(char **text, size_t *len)
{
	free(*text);
	*text = NULL;
	*len = 0;
}

/* What was read, offered to the process's other readers (proc_maps_share.h), then freed. */
static void text_offer(const struct sym_process *p, char **text, size_t *len)
{
	proc_maps_share_offer(p->pid, p->instance, *text, *len);
	text_drop(text, len);
}

/*
 * Replace p's mappings with what /proc/PID/maps says now, when the pid still runs what it ran at the
 * first read (and did not change during this one). -ESRCH when it is gone, or a zombie (whose maps
 * are empty: the old ones stay); -ESTALE when it runs another process or program now (p is retired,
 * its mappings kept).
 */
static int read_maps(struct sym_process *p, struct symbolizer_stats *stats, char **text, size_t *text_len)
{
	struct process_identity before, after;
	struct sym_map *maps = NULL;
	size_t n = 0;
	int r = read_identity(p->pid, &before);

	*text = NULL;
	*text_len = 0;

	if (r)
		return r;
	if (p->identity_known && !same_identity(&before, &p->identity)) {
		p->retired = true;
		stats->process_changed++;
		return -ESTALE;
	}
	r = read_maps_now(p, stats, &maps, &n, text, text_len);
	if (r)
		return r;
	if (read_identity(p->pid, &after) || !same_identity(&before, &after)) {
		/* It exec'd or exited during the read: what was read may be the next program's. */
		maps_free(maps, n);
		text_drop(text, text_len);
		return -ESRCH;
	}
	if (!n && p->nmaps) {
		/* A zombie (exited, not yet reaped) lists no mappings: its samples waiting for their
		 * profile keep the ones read while it ran. */
		maps_free(maps, n);
		text_drop(text, text_len);
		p->refreshed_ns = symbolizer__now_ns(); /* read again after the usual pause, not at once */
		stats->process_gone++;
		return -ESRCH;
	}
	maps_free(p->maps, p->nmaps);
	p->maps = maps;
	p->nmaps = n;
	p->refreshed_ns = symbolizer__now_ns();
	p->identity = after;
	p->identity_known = true;
	return 0;
}

/* All of fd's text, NUL-terminated, in *out (caller frees): a few large reads where stdio made one a
 * page. At most MAPS_TEXT_MAX_BYTES; what lies beyond is ignored (the mappings kept are bounded too). */
static int read_text(int fd, char **out, size_t *len)
{
	size_t cap = 16384, n = 0;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (cap - n < 4096 && cap < MAPS_TEXT_MAX_BYTES) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		if (cap - n <= 1)
			break;
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = -errno;

			free(buf);
			return err;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}

/* The file-backed executable mappings /proc/PID/maps lists now, sorted by start (caller frees), and
 * the text read (*text, caller frees; a copy of each line is parsed). */
static int read_maps_now(const struct sym_process *p, struct symbolizer_stats *stats, struct sym_map **out,
			 size_t *nout, char **text, size_t *text_len)
{
	char path[64], *line = NULL, *raw = NULL, *at, *end;
	size_t linecap = 0, cap = 0, n = 0, raw_len = 0;
	struct sym_map *maps = NULL;
	int err = 0, fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", p->pid);
	stats->maps_file_reads++;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	err = read_text(fd, &raw, &raw_len);
	close(fd);
	if (err)
		return err;
	for (at = raw, end = raw + raw_len; at < end; at += strcspn(at, "\n") + 1) {
		size_t len = strcspn(at, "\n");
		struct proc_map pm;
		bool vdso;

		/* Only executable lines are parsed: their permissions are the 4 characters after the
		 * range's space. */
		{
			const char *sp = memchr(at, ' ', len);

			if (!sp || (size_t)(sp - at) + 4 > len || sp[3] != 'x')
				continue;
		}
		if (len + 1 > linecap) {
			char *nl = realloc(line, len + 1);

			if (!nl) {
				err = -ENOMEM;
				break;
			}
			line = nl;
			linecap = len + 1;
		}
		memcpy(line, at, len);
		line[len] = 0;
		if (!proc_map_parse_line(line, &pm) || !pm.executable)
			continue;
		vdso = !strcmp(pm.path, VDSO_MAP_NAME);
		if (!vdso && (!pm.inode || pm.path[0] != '/'))
			continue;
		if (n == MAX_MAPS_PER_PROCESS)
			break;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 32;
			struct sym_map *nm = realloc(maps, ncap * sizeof(*nm));

			if (!nm) {
				err = -ENOMEM;
				break;
			}
			maps = nm;
			cap = ncap;
		}
		maps[n] = (struct sym_map){
			.start = pm.start, .end = pm.end, .offset = pm.offset,
			.dev = makedev(pm.dev_major, pm.dev_minor), .inode = pm.inode,
			.path = strdup(pm.path), .vdso = vdso,
		};
		if (!maps[n].path) {
			err = -ENOMEM;
			break;
		}
		n++;
	}
	free(line);
	if (err) {
		free(raw);
		maps_free(maps, n);
		return err;
	}
	if (n)
		qsort(maps, n, sizeof(*maps), by_start);
	*out = maps;
	*nout = n;
	*text = raw;
	*text_len = raw_len;
	return 0;
}

static bool overlaps_any(const struct sym_map *maps, size_t n, uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < n; i++)
		if (maps[i].start < end && start < maps[i].end)
			return true;
	return false;
}

/* hist[i] as a mapping of maps (its path copied), unless it is not a file's (nor the vDSO's) or
 * overlaps one of maps[0..had). 1: added, 0: skipped, -ENOMEM. */
static int map_of_history(struct sym_map *to, const struct symbolizer_mapping *h, const struct sym_map *maps,
			  size_t had)
{
	bool vdso = h->path && !strcmp(h->path, VDSO_MAP_NAME);

	if (h->end <= h->start || !h->path || (h->path[0] != '/' && !vdso) || overlaps_any(maps, had, h->start, h->end))
		return 0;
	*to = (struct sym_map){
		.start = h->start, .end = h->end, .offset = h->offset,
		.dev = h->dev, .inode = h->inode, .path = strdup(h->path), .vdso = vdso,
	};
	return to->path ? 1 : -ENOMEM;
}

/* The same mapping asked again keeps its module, its lookup state and its retry time: a history
 * asked again (settled, a miss, a check) must not let its files' modules go, to be evicted under
 * pressure and opened again. Both sorted by start. */
static void keep_modules(struct sym_map *to, size_t n, struct sym_map *from, size_t nfrom)
{
	for (size_t i = 0, j = 0; i < n && j < nfrom;) {
		struct sym_map *a = &to[i], *b = &from[j];

		if (b->start < a->start) {
			j++;
		} else if (a->start < b->start) {
			i++;
		} else {
			if (a->end == b->end && a->offset == b->offset && a->dev == b->dev && a->inode == b->inode &&
			    a->vdso == b->vdso) {
				a->module = b->module;
				a->tried = b->tried;
				a->retry_ns = b->retry_ns;
				b->module = NULL; /* moved */
			}
			i++;
			j++;
		}
	}
}

/* hist[0..n) added to a copy of p's mappings (those overlapping them skipped; keep_old false: none
 * kept), sorted, in place of p's. 0, -ESRCH when nothing was added (p unchanged), or -ENOMEM. */
static int take_history(struct sym_process *p, const struct symbolizer_mapping *hist, size_t n, bool keep_old)
{
	size_t had = keep_old ? p->nmaps : 0, kept = had;
	struct sym_map *maps = calloc(had + n + 1, sizeof(*maps));

	if (!maps)
		return -ENOMEM;
	if (had)
		memcpy(maps, p->maps, had * sizeof(*maps));
	for (size_t i = 0; i < n && i < SYMBOLIZER_HISTORY_MAX_MAPS; i++) {
		int r = map_of_history(&maps[kept], &hist[i], maps, had);

		if (r < 0) {
			maps_free(maps + had, kept - had);
			free(maps);
			return r;
		}
		kept += (size_t)r;
	}
	if (kept == had) {
		free(maps);
		return -ESRCH;
	}
	qsort(maps, kept, sizeof(*maps), by_start);
	if (keep_old) {
		free(p->maps); /* its entries moved to maps */
	} else {
		keep_modules(maps, kept, p->maps, p->nmaps);
		maps_free(p->maps, p->nmaps);
	}
	p->maps = maps;
	p->nmaps = kept;
	p->refreshed_ns = symbolizer__now_ns();
	return 0;
}

/* The root p's files are opened under, once it may be gone: its own, else that of root_pid (the
 * process it forked from, as its history says), else the host's. */
static void hold_root_after(struct symbolizer *s, struct sym_process *p, pid_t root_pid)
{
	if (!p->root_held)
		symbolizer__hold_root_of(s, p, root_pid > 0 ? root_pid : 1);
	if (!p->root_held && root_pid > 1)
		symbolizer__hold_root_of(s, p, 1); /* its parent gone too: the host's root */
}

/* p, gone (or a zombie) before its maps were read, or read while still half-built (an exec's), given
 * the mappings its history had at time_ns that it lacks: retired (never read from /proc again), its
 * files opened under the root of the process the history names. Asked once per entry. 0 or -errno. */
static int maps_from_history(struct symbolizer *s, struct sym_process *p, uint64_t start_ns, uint64_t time_ns)
{
	struct symbolizer_mapping hist[SYMBOLIZER_HISTORY_MAX_MAPS];
	size_t n = 0, had = p->nmaps;
	pid_t root_pid = 0;
	int r;

	if (!s->history_fn || !start_ns || !time_ns || p->history_tried)
		return -ESRCH;
	p->history_tried = true;
	r = s->history_fn(s->history_ctx, p->pid, start_ns, time_ns, hist, SYMBOLIZER_HISTORY_MAX_MAPS, &n, &root_pid,
			  NULL);
	if (r || !n)
		return -ESRCH;
	r = take_history(p, hist, n, true);
	if (r)
		return r;
	p->retired = true;
	hold_root_after(s, p, root_pid);
	if (had)
		s->stats.maps_completed_from_history++;
	else
		s->stats.processes_from_history++;
	return 0;
}

/*
 * p, served from its history until that history got a gap while it lived (records lost, events let
 * go): read from /proc/PID/maps from now on, as a process without a history is. The pid must still
 * be the instance's (its start time, as a new process's first read checks it): else p keeps the
 * mappings it had and is retired. 0 or -errno.
 */
static int maps_after_gap(struct symbolizer *s, struct sym_process *p)
{
	struct process_identity now;
	size_t text_len;
	char *text;
	int r;

	p->from_events = false;
	s->stats.maps_events_gap++;
	r = read_identity(p->pid, &now);
	if (r)
		return r;
	if (!proc_stat_same_start(p->start_ns, now.start_ticks)) {
		p->retired = true;
		s->stats.process_changed++;
		return -ESRCH;
	}
	p->identity = now;
	p->identity_known = true;
	r = read_maps(p, &s->stats, &text, &text_len);
	if (!r)
		text_offer(p, &text, &text_len);
	return r;
}

/*
 * p, alive, given all its mappings from its history (the kernel's records of its exec and every
 * mapping since) in place of a /proc/PID/maps read: p->from_events, and its later refreshes ask the
 * history again (the program at p->record_ns, with what it mapped since). 0, or -ENODATA when the
 * history is not whole (counted by why in the first ask, when p has no mapping yet: then /proc is
 * read; asked again, p is read from /proc from then on: maps_after_gap()), or -ENOMEM.
 */
static int maps_from_events(struct symbolizer *s, struct sym_process *p)
{
	struct symbolizer_mapping hist[SYMBOLIZER_HISTORY_MAX_MAPS];
	enum symbolizer_history_whole whole = SYMBOLIZER_HISTORY_GAP;
	bool first = !p->from_events;
	size_t n = 0;
	pid_t root_pid = 0;
	int r;

	if (!s->history_fn || !p->start_ns || !p->record_ns)
		return -ENODATA;
	r = s->history_fn(s->history_ctx, p->pid, p->start_ns, p->record_ns, hist, SYMBOLIZER_HISTORY_MAX_MAPS, &n,
			  &root_pid, &whole);
	if (r || whole != SYMBOLIZER_HISTORY_WHOLE || !n) {
		if (!first)
			return maps_after_gap(s, p) ? -ENODATA : 0;
		if (first && (r == -ENOENT || r == -EINVAL))
			s->stats.maps_read_no_history++;
		else if (first && !r && whole == SYMBOLIZER_HISTORY_INHERITED)
			s->stats.maps_read_inherited++;
		else if (first && !r && whole == SYMBOLIZER_HISTORY_WHOLE)
			s->stats.maps_read_unmapped++; /* no mapping yet: sampled in its execve */
		else if (first)
			s->stats.maps_read_gap++;
		return -ENODATA;
	}
	r = take_history(p, hist, n, false);
	if (r && r != -ESRCH)
		return r;
	if (first) {
		s->stats.processes_from_events++;
		symbolizer__hold_root(s, p);
		hold_root_after(s, p, root_pid); /* gone already */
	} else {
		s->stats.maps_events_rereads++;
	}
	p->from_events = true;
	return 0;
}

/* A new entry p's mappings read from /proc (gone: from its history), its root held. 0 or -errno
 * (p's mappings then none). */
static int read_new(struct symbolizer *s, struct sym_process *p, uint64_t start_ns, uint64_t time_ns)
{
	size_t text_len;
	char *text;
	int r;

	r = read_maps(p, &s->stats, &text, &text_len);
	if (!r && start_ns && !proc_stat_same_start(start_ns, p->identity.start_ticks)) {
		/* The caller's process exited and another took its pid before we got here. */
		maps_free(p->maps, p->nmaps);
		p->maps = NULL;
		p->nmaps = 0;
		p->identity_known = false;
		s->stats.process_changed++;
		r = -ESRCH;
	} else if (r == -ESRCH) {
		s->stats.process_gone++;
	}
	if (r) {
		text_drop(&text, &text_len);
		if (r != -ESRCH || maps_from_history(s, p, start_ns, time_ns))
			return r;
	} else if (!p->nmaps && maps_from_history(s, p, start_ns, time_ns) == 0) {
		/* An exited process not yet reaped (a zombie) lists no mappings: those it had. */
		text_drop(&text, &text_len);
	} else {
		text_offer(p, &text, &text_len);
		symbolizer__hold_root(s, p);
	}
	return 0;
}

int symbolizer__get_process(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t start_ns, bool create,
			    struct sym_process **out)
{
	return symbolizer__get_process_at(s, pid, instance, start_ns, 0, create, out);
}

/* The entry of (pid, instance); a missing one, when create is set, from its history when whole
 * (maps_from_events()), else read from /proc (from the history at time_ns when the process is gone). */
int symbolizer__get_process_at(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t start_ns,
			       uint64_t time_ns, bool create, struct sym_process **out)
{
	struct sym_process **slot = process_slot(s, pid, instance), *p;
	int r;

	if (*slot) {
		p = *slot;
		p->last_used = ++s->tick;
		/* Read with no mapping (an exited process not yet reaped, read at its exec record): the
		 * history at this record's time, once. */
		if (!p->nmaps && time_ns)
			maps_from_history(s, p, start_ns, time_ns);
		*out = p;
		return 0;
	}
	if (!create) {
		s->stats.instance_unknown++;
		return -ESRCH;
	}
	if (s->nprocesses >= s->config.max_processes && !evict_retired(s)) {
		s->stats.process_table_full++;
		return -ENOSPC;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->instance = instance;
	p->last_used = ++s->tick;
	p->start_ns = start_ns;
	p->record_ns = time_ns;
	/* Whole from the kernel's records: no /proc/PID/maps read, no identity to check (the history
	 * found the instance by its fork at start_ns). */
	if (maps_from_events(s, p)) {
		r = read_new(s, p, start_ns, time_ns);
		if (r) {
			free(p);
			return r;
		}
	}
	/* slot may have moved: evict_retired() can unlink the entry before it in the chain. */
	slot = process_slot(s, pid, instance);
	*slot = p;
	s->nprocesses++;
	*out = p;
	return 0;
}

int symbolizer_prepare_instance(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t start_ns)
{
	return symbolizer_prepare_instance_at(s, pid, instance, start_ns, 0);
}

int symbolizer_prepare_instance_at(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t start_ns,
				   uint64_t time_ns)
{
	struct sym_process *p;

	return symbolizer__get_process_at(s, pid, instance, start_ns, time_ns, true, &p);
}

void symbolizer_set_history(struct symbolizer *s, symbolizer_history_fn fn, void *ctx)
{
	s->history_fn = fn;
	s->history_ctx = ctx;
}

int symbolizer_refresh_instance(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t start_ns)
{
	struct sym_process *p = *process_slot(s, pid, instance);
	size_t text_len;
	char *text;
	int r;

	/* Unchecked, a daemon behind its ring buffer gave an exited program the mappings of the one that
	 * took its pid (pid-reuse under load: reuse-x's samples in reuse-y's file). */
	if (!p)
		return symbolizer_prepare_instance(s, pid, instance, start_ns);
	if (p->from_events)
		return maps_from_events(s, p) == 0 ? 0 : -ESRCH;
	if (p->retired)
		return -ESRCH;
	r = read_maps(p, &s->stats, &text, &text_len); /* the mappings read before stay when the process is gone */
	if (!r)
		text_offer(p, &text, &text_len);
	return r;
}

int symbolizer_instance_maps_any(struct symbolizer *s, pid_t pid, uint64_t instance, bool (*match)(const char *path))
{
	struct sym_process *p = *process_slot(s, pid, instance);

	/* Asked anew unless just asked (the same record's prepare): what it mapped since is in the
	 * history. */
	if (!p || !p->from_events || p->retired ||
	    (symbolizer__now_ns() - p->refreshed_ns > MAPS_ASKED_FRESH_NS && maps_from_events(s, p)) ||
	    !p->from_events) /* read from /proc after a gap: the check reads the file itself */
		return -ENODATA;
	s->stats.maps_checks_from_events++;
	for (size_t i = 0; i < p->nmaps; i++)
		if (!p->maps[i].vdso && match(p->maps[i].path))
			return 1;
	return 0;
}

int symbolizer_prepare_process(struct symbolizer *s, pid_t pid)
{
	return symbolizer_prepare_instance(s, pid, 0, 0);
}

static struct sym_map *find_map(struct sym_process *p, uint64_t address)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (address < p->maps[mid].start)
			hi = mid;
		else if (address >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

/* The mapping of address, reading the maps again (rate-limited) when it misses every one; the
 * process gone, from its history (once). */
struct sym_map *symbolizer__find_map_refresh(struct symbolizer *s, struct sym_process *p, uint64_t address)
{
	struct sym_map *map = find_map(p, address);
	size_t text_len;
	char *text;
	int r = 0;

	if (!map && p->from_events) {
		/* Mapped since it was asked (a library loaded late): the history again, rate-limited as a
		 * read would be. */
		if (p->refreshes < MAPS_QUICK_REFRESHES || symbolizer__now_ns() - p->refreshed_ns > MAPS_REFRESH_NS) {
			p->refreshes++;
			if (maps_from_events(s, p) == 0)
				map = find_map(p, address);
		}
		return map;
	}
	if (!map && !p->retired &&
	    (p->refreshes < MAPS_QUICK_REFRESHES || symbolizer__now_ns() - p->refreshed_ns > MAPS_REFRESH_NS)) {
		p->refreshes++;
		r = read_maps(p, &s->stats, &text, &text_len);
		if (r == 0) {
			text_offer(p, &text, &text_len);
			map = find_map(p, address);
		}
	}
	if (!map && (p->retired || r == -ESRCH) && maps_from_history(s, p, p->start_ns, p->record_ns) == 0)
		map = find_map(p, address);
	return map;
}

int symbolizer__open_root(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

void symbolizer_retire_process(struct symbolizer *s, pid_t pid)
{
	for (struct sym_process **pp = &s->buckets[(uint32_t)pid % PROCESS_BUCKETS]; *pp;) {
		if ((*pp)->pid != pid) {
			pp = &(*pp)->next;
		} else if ((*pp)->instance == 0) {
			process_unlink(s, pp); /* nobody can name the old process by key 0 any more */
		} else {
			(*pp)->retired = true;
			pp = &(*pp)->next;
		}
	}
}

void symbolizer_forget_instance(struct symbolizer *s, pid_t pid, uint64_t instance)
{
	struct sym_process **slot = process_slot(s, pid, instance);

	if (s->python && instance)
		python_cache_forget(s->python, pid, instance);
	if (*slot)
		process_unlink(s, slot);
}

void symbolizer_forget_mappings(struct symbolizer *s, pid_t pid, uint64_t instance)
{
	struct sym_process **slot = process_slot(s, pid, instance);

	if (*slot)
		process_unlink(s, slot);
}

void symbolizer_forget_process(struct symbolizer *s, pid_t pid)
{
	if (s->python)
		python_cache_forget(s->python, pid, 0);
	for (struct sym_process **pp = &s->buckets[(uint32_t)pid % PROCESS_BUCKETS]; *pp;) {
		if ((*pp)->pid == pid)
			process_unlink(s, pp);
		else
			pp = &(*pp)->next;
	}
}
