#include "symbolizer.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "elf_module.h"
#include "htlhash.h"
#include "kallsyms.h"
#include "perf_map.h"
#include "proc_maps.h"
#include "proc_stat.h"

#define PROCESS_BUCKETS 4096
/* A process whose address misses every mapping re-reads its maps at most this often, after its first
 * MAPS_QUICK_REFRESHES re-reads (a process just started maps its libraries while being sampled). */
#define MAPS_REFRESH_NS 1000000000ULL
#define MAPS_QUICK_REFRESHES 4
/* Most mappings kept per process; the rest of a huge maps file is ignored and counted. */
#define MAX_MAPS_PER_PROCESS 65536
/* A perf map file is checked for growth at most this often per process (bounds: perf_map.h). */
#define PERF_MAP_CHECK_NS 1000000000ULL
/* Unreferenced modules unused for this many maintain() calls are dropped. */
#define MODULE_IDLE_GENERATIONS 8
/* Compiled CFI rules remembered (direct-mapped by module and address). */
#define RULE_CACHE_SLOTS 8192
/* File identities (device, inode) remembered per module: identical copies of one file. */
#define MODULE_FILE_IDS 4
/* Largest file compared byte for byte with a cached module of its build id; a bigger copy gets a
 * module of its own rather than stall the caller. */
#define SHARE_MAX_COMPARE_BYTES (256ULL << 20)

struct file_id {
	uint64_t dev, inode;
	char htlhash[SYM_HTLHASH_HEX_LEN + 1]; /* of this file's bytes; "" when unreadable */
};

struct cached_module {
	struct file_id ids[MODULE_FILE_IDS]; /* files known to hold this module */
	unsigned nids;
	struct elf_module *elf;  /* NULL: the file is bad until bad_until_ns */
	uint64_t bad_until_ns;
	uint64_t last_used;      /* lookup tick, for LRU */
	uint64_t generation;     /* maintain() generation of the last use */
	unsigned refs;           /* mappings pointing here */
	size_t bytes;            /* elf_module_bytes() when last measured (after each use) */
	uint64_t serial;         /* unique per module ever opened: the rule cache's key */
	bool shareable;          /* may serve identical copies in other files: its file is root's and
				    writable by root alone (nobody else can change what was compared),
				    and its debug file came from no process's root */
};

/* A compiled CFI rule of (module serial, ELF address); serial 0 marks an empty slot. */
struct rule_slot {
	uint64_t serial, vaddr;
	struct cfi_rule rule;
};

struct sym_map {
	uint64_t start, end, offset;
	uint64_t dev, inode;
	char *path;
	struct cached_module *module; /* NULL until first use */
	bool tried;                   /* module lookup done (successful or not) */
	uint64_t retry_ns;            /* the file could not be opened for this process: not before then */
};

/*
 * Which process and program a pid runs: its start time and its executable. Maps read again later (a
 * lookup missed every mapping) are only taken when the identity is unchanged: a reader that falls
 * behind must not give an exited process the mappings of the one that reused its pid, nor a program
 * the mappings of the one it exec'd.
 */
struct process_identity {
	uint64_t start_ticks; /* /proc/PID/stat field 22 */
	dev_t exe_dev;        /* /proc/PID/exe; 0 when it has none (kernel thread, or unreadable) */
	ino_t exe_ino;
};

/*
 * The mappings of one process instance. An instance is (pid, a caller's key: the daemon's process
 * table gives one per process and per exec): a pid reused, or a process that exec'd, never reads
 * or shows another instance's mappings. Key 0 is the pid's current process (callers without
 * instances). Only symbolizer_prepare_instance() creates an entry for a non-zero key, and only
 * while the pid is that instance; once retired (its program or process ended) an entry is never
 * read from /proc again, and stays until forgotten or, when the table is full, evicted.
 */
struct sym_process {
	pid_t pid;
	uint64_t instance;          /* caller's key; 0: the pid's current process */
	bool retired;               /* the pid no longer runs this instance: /proc is not read for it */
	struct process_identity identity; /* what the pid ran when its maps were first read */
	bool identity_known;        /* identity was read (maps were read once) */
	uint64_t last_used;         /* lookup tick, to evict the least recently used retired entry */
	struct sym_map *maps; /* file-backed mappings, sorted by start */
	size_t nmaps;
	uint64_t refreshed_ns;
	unsigned refreshes;         /* maps read again after a miss */
	struct perf_map *jit;       /* /tmp/perf-NSPID.map, or NULL */
	size_t jit_bytes;           /* perf_map_bytes(jit), in the symbolizer's byte bound */
	uint64_t jit_size, jit_ino; /* the file last read or refused after reading: not read again
				       until it changes; 0 when evicted (read again) */
	uint64_t jit_checked_ns;    /* last time its size was checked; 0 never */
	uint64_t jit_used;          /* lookup tick of its last use, for LRU among modules and maps */
	int jit_refused;            /* -errno of the last refusal, counted once until it changes */
	struct sym_process *next; /* hash chain */
};

struct symbolizer {
	struct symbolizer_config config;
	struct symbolizer_stats stats;
	struct debuginfo_fetch *debuginfod; /* NULL without DEBUGINFOD_URLS */
	struct kallsyms *kallsyms;
	uint64_t modules_hash;      /* of /proc/modules when kallsyms was read */
	uint64_t kallsyms_loaded_ns; /* 0: not read yet (it is read at the first kernel lookup) */
	uint64_t changeable_lookups_at_load;
	struct sym_process *buckets[PROCESS_BUCKETS];
	size_t nprocesses;
	struct cached_module **modules;
	size_t nmodules;
	size_t module_bytes;
	size_t perf_map_bytes;      /* of every loaded perf map: shares max_module_bytes */
	size_t nperf_maps;          /* processes holding a perf map */
	uint64_t tick;
	uint64_t changeable_lookups; /* kernel lookups in BPF or ftrace code, or that missed */
	uint64_t generation;
	uint64_t next_serial;
	struct rule_slot *rules;    /* RULE_CACHE_SLOTS, allocated at the first unwind */
};

static uint64_t now_ns(void)
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

static void load_kallsyms(struct symbolizer *s)
{
	struct kallsyms *k;

	s->modules_hash = hash_file("/proc/modules");
	k = kallsyms_load(s->config.kallsyms_path);
	if (k && !strcmp(s->config.kallsyms_path, "/proc/kallsyms")) {
		FILE *modules = fopen("/proc/modules", "re"); /* bounds each module's last symbol */

		if (modules) {
			kallsyms_set_module_ranges(k, modules);
			fclose(modules);
		}
	}
	s->kallsyms_loaded_ns = now_ns();
	s->changeable_lookups_at_load = s->changeable_lookups;
	if (!k && s->kallsyms)
		return; /* keep the old table rather than none */
	kallsyms_free(s->kallsyms);
	s->kallsyms = k;
	s->stats.kallsyms_hidden = kallsyms_hidden(k);
}

void symbolizer_load_kallsyms(struct symbolizer *s)
{
	if (!s->kallsyms_loaded_ns)
		load_kallsyms(s);
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
		s->config.max_modules = 1024;
	if (!s->config.max_processes)
		s->config.max_processes = 16384;
	if (!s->config.max_module_bytes)
		s->config.max_module_bytes = (size_t)2 << 30;
	if (!s->config.bad_file_retry_ns)
		s->config.bad_file_retry_ns = 60ULL * 1000000000ULL;
	s->modules = calloc(s->config.max_modules, sizeof(*s->modules));
	if (!s->modules) {
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

static void module_release(struct cached_module *m)
{
	if (m && m->refs)
		m->refs--;
}

static void maps_free(struct sym_map *maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		module_release(maps[i].module);
		free(maps[i].path);
	}
	free(maps);
}

static void process_free(struct sym_process *p)
{
	maps_free(p->maps, p->nmaps);
	perf_map_free(p->jit);
	free(p);
}

static void module_free(struct cached_module *m)
{
	if (!m)
		return;
	elf_module_free(m->elf);
	free(m);
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	debuginfo_fetch_free(s->debuginfod);
	for (size_t b = 0; b < PROCESS_BUCKETS; b++) {
		struct sym_process *p = s->buckets[b], *next;

		for (; p; p = next) {
			next = p->next;
			process_free(p);
		}
	}
	for (size_t i = 0; i < s->nmodules; i++)
		module_free(s->modules[i]);
	free(s->modules);
	free(s->rules);
	kallsyms_free(s->kallsyms);
	free(s);
}

static struct sym_process **process_slot(struct symbolizer *s, pid_t pid, uint64_t instance)
{
	struct sym_process **pp = &s->buckets[(uint32_t)pid % PROCESS_BUCKETS];

	while (*pp && ((*pp)->pid != pid || (*pp)->instance != instance))
		pp = &(*pp)->next;
	return pp;
}

/* Free p's perf map; it is read again at the next check. */
static void jit_drop(struct symbolizer *s, struct sym_process *p)
{
	if (!p->jit)
		return;
	perf_map_free(p->jit);
	p->jit = NULL;
	s->perf_map_bytes -= p->jit_bytes;
	s->nperf_maps--;
	p->jit_bytes = 0;
	p->jit_size = p->jit_ino = 0;
	s->stats.perf_map_bytes = s->perf_map_bytes;
}

static void process_unlink(struct symbolizer *s, struct sym_process **slot)
{
	struct sym_process *p = *slot;

	jit_drop(s, p);
	*slot = p->next;
	process_free(p);
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

static int read_maps_now(const struct sym_process *p, struct sym_map **out, size_t *nout);

/*
 * Replace p's mappings with what /proc/PID/maps says now, when the pid still runs what it ran at the
 * first read (and did not change during this one). -ESRCH when it is gone; -ESTALE when it runs
 * another process or program now (p is retired, its mappings kept).
 */
static int read_maps(struct sym_process *p, struct symbolizer_stats *stats)
{
	struct process_identity before, after;
	struct sym_map *maps = NULL;
	size_t n = 0;
	int r = read_identity(p->pid, &before);

	if (r)
		return r;
	if (p->identity_known && !same_identity(&before, &p->identity)) {
		p->retired = true;
		stats->process_changed++;
		return -ESTALE;
	}
	r = read_maps_now(p, &maps, &n);
	if (r)
		return r;
	if (read_identity(p->pid, &after) || !same_identity(&before, &after)) {
		/* It exec'd or exited during the read: what was read may be the next program's. */
		maps_free(maps, n);
		return -ESRCH;
	}
	maps_free(p->maps, p->nmaps);
	p->maps = maps;
	p->nmaps = n;
	p->refreshed_ns = now_ns();
	p->identity = after;
	p->identity_known = true;
	return 0;
}

/* The file-backed executable mappings /proc/PID/maps lists now, sorted by start (caller frees). */
static int read_maps_now(const struct sym_process *p, struct sym_map **out, size_t *nout)
{
	char path[64], *line = NULL;
	size_t linecap = 0, cap = 0, n = 0;
	struct sym_map *maps = NULL;
	int err = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", p->pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (getline(&line, &linecap, f) > 0) {
		struct proc_map pm;

		if (!proc_map_parse_line(line, &pm) || !pm.executable || !pm.inode || pm.path[0] != '/')
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
			.path = strdup(pm.path),
		};
		if (!maps[n].path) {
			err = -ENOMEM;
			break;
		}
		n++;
	}
	free(line);
	fclose(f);
	if (err) {
		maps_free(maps, n);
		return err;
	}
	if (n)
		qsort(maps, n, sizeof(*maps), by_start);
	*out = maps;
	*nout = n;
	return 0;
}

/* The entry of (pid, instance); a missing one is read from /proc when create is set. */
static int get_process(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t start_ns, bool create,
		       struct sym_process **out)
{
	struct sym_process **slot = process_slot(s, pid, instance), *p;
	int r;

	if (*slot) {
		(*slot)->last_used = ++s->tick;
		*out = *slot;
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
	r = read_maps(p, &s->stats);
	if (!r && start_ns && !proc_stat_same_start(start_ns, p->identity.start_ticks)) {
		/* The caller's process exited and another took its pid before we got here. */
		maps_free(p->maps, p->nmaps);
		s->stats.process_changed++;
		r = -ESRCH;
	} else if (r == -ESRCH) {
		s->stats.process_gone++;
	}
	if (r) {
		free(p);
		return r;
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
	struct sym_process *p;

	return get_process(s, pid, instance, start_ns, true, &p);
}

int symbolizer_refresh_instance(struct symbolizer *s, pid_t pid, uint64_t instance)
{
	struct sym_process *p = *process_slot(s, pid, instance);

	if (!p)
		return symbolizer_prepare_instance(s, pid, instance, 0);
	if (p->retired)
		return -ESRCH;
	return read_maps(p, &s->stats); /* the mappings read before stay when the process is gone */
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

/* The mapping of address, reading the maps again (rate-limited) when it misses every one. */
static struct sym_map *find_map_refresh(struct sym_process *p, uint64_t address, struct symbolizer_stats *stats)
{
	struct sym_map *map = find_map(p, address);

	if (!map && !p->retired && (p->refreshes < MAPS_QUICK_REFRESHES || now_ns() - p->refreshed_ns > MAPS_REFRESH_NS)) {
		p->refreshes++;
		if (read_maps(p, stats) == 0)
			map = find_map(p, address);
	}
	return map;
}

static int open_root(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
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
 * Open the file behind a mapping without trusting its path: map_files gives the mapped file
 * itself; otherwise resolve the path inside the process's root so a container's symlinks
 * cannot point outside it. Only regular files whose device and inode match are used.
 */
static int open_mapped_file(const struct symbolizer *s, pid_t pid, const struct sym_map *map, int root,
			    struct stat *st)
{
	char path[128];
	int fd = -1;

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

/* Remove modules[i]; mappings still pointing at it look the file up again when next used. */
static void evict_at(struct symbolizer *s, size_t i)
{
	struct cached_module *m = s->modules[i];

	if (m->refs) {
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
	module_free(m);
	s->stats.modules_evicted++;
	s->stats.modules_cached = s->nmodules;
	s->stats.module_bytes = s->module_bytes;
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

static size_t bytes_held(const struct symbolizer *s)
{
	return s->module_bytes + s->perf_map_bytes;
}

/*
 * Evict until the cache holds at most max_modules - room entries and modules and perf maps fit the
 * byte bound, least recently used first. keep, the module a lookup is using, and keep_jit's perf
 * map stay: a module left alone over the bound is counted.
 */
static void enforce_bounds(struct symbolizer *s, size_t room, const struct cached_module *keep,
			   const struct sym_process *keep_jit)
{
	while (s->nmodules + room > s->config.max_modules || bytes_held(s) > s->config.max_module_bytes) {
		size_t victim = lru_victim(s, keep);
		struct sym_process *jit = NULL;

		if (s->nmodules + room <= s->config.max_modules) /* only bytes: a perf map may go instead */
			jit = lru_perf_map(s, keep_jit);
		if (jit && (victim == SIZE_MAX || jit->jit_used < s->modules[victim]->last_used)) {
			jit_drop(s, jit);
			s->stats.perf_maps_evicted++;
			continue;
		}
		if (victim == SIZE_MAX) {
			if (keep && bytes_held(s) > s->config.max_module_bytes)
				s->stats.module_bytes_over++;
			break;
		}
		evict_at(s, victim);
	}
}

/* A module grows as it is used (result cache, indexes, libdw's line tables and CFI): measure it
 * again after each use and keep the byte bound then, not only when modules are inserted. */
static void module_measure(struct symbolizer *s, struct cached_module *m)
{
	size_t bytes = sizeof(*m) + elf_module_bytes(m->elf);

	if (bytes == m->bytes)
		return;
	s->module_bytes = s->module_bytes - m->bytes + bytes;
	m->bytes = bytes;
	s->stats.module_bytes = s->module_bytes;
	if (bytes_held(s) > s->config.max_module_bytes)
		enforce_bounds(s, 0, m, NULL);
}

static struct cached_module *insert_module(struct symbolizer *s, struct cached_module *m)
{
	enforce_bounds(s, 1, NULL, NULL);
	if (s->nmodules >= s->config.max_modules) {
		s->stats.module_cache_full++;
		module_free(m);
		return NULL;
	}
	m->generation = s->generation;
	s->modules[s->nmodules++] = m;
	s->module_bytes += m->bytes;
	s->stats.modules_cached = s->nmodules;
	s->stats.module_bytes = s->module_bytes;
	enforce_bounds(s, 0, m, NULL);
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
static const char *module_htlhash(const struct cached_module *m, const struct sym_map *map)
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
					       const struct stat *st)
{
	struct elf_module_peek peek;
	char htlhash[SYM_HTLHASH_HEX_LEN + 1];
	bool claimed = false;

	if (elf_module_peek(fd, &peek) || !peek.build_id_len)
		return NULL;
	for (size_t i = 0; i < s->nmodules; i++) {
		struct cached_module *m = s->modules[i];

		if (!has_build_id(m->elf, peek.build_id, peek.build_id_len))
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

/*
 * Open and cache the file behind map. When the file cannot be opened for this process (it exited,
 * or its path now names another file: a FIFO, a symlink, a replaced binary) that is a fact about
 * the process, not the file: *per_process_failure is set and nothing is cached, so other
 * processes mapping the same file are not affected. A file that opens but is not usable ELF is
 * cached as bad for a while.
 */
static struct cached_module *open_module(struct symbolizer *s, pid_t pid, struct sym_map *map,
					 bool *per_process_failure)
{
	struct cached_module *m = calloc(1, sizeof(*m)), *same;
	struct stat st;
	int root = -1, fd;

	*per_process_failure = false;
	if (!m)
		return NULL;
	m->serial = ++s->next_serial;
	s->stats.module_cache_misses++;
	root = open_root(pid);
	fd = open_mapped_file(s, pid, map, root, &st);
	if (fd >= 0 && (same = share_by_build_id(s, fd, map, &st))) {
		close(fd);
		if (root >= 0)
			close(root);
		module_free(m);
		return same;
	}
	if (fd >= 0) {
		m->elf = elf_module_open(fd, &(struct elf_module_options){
			.root_fd = root, .path = map->path, .debug_dirs = s->config.debug_dirs,
			.debuginfod = s->debuginfod, .max_bytes = s->config.max_module_bytes,
		});
	}
	if (root >= 0)
		close(root);
	if (fd < 0) {
		/* Not the file's fault (the process exited, or its path names another file now): nothing
		 * is marked bad, so other processes mapping the same file are not affected. */
		s->stats.module_open_failed++;
		if (root == -ENOENT || root == -ESRCH)
			s->stats.process_gone++;
		*per_process_failure = true;
		module_free(m);
		return NULL;
	}
	if (s->debuginfod)
		debuginfo_fetch_stats(s->debuginfod, &s->stats.debuginfod);
	if (m->elf) {
		s->stats.debuglink_too_big += elf_module_counters(m->elf)->debuglink_too_big;
		s->stats.modules_too_big += elf_module_counters(m->elf)->inflate_refused;
	}
	add_file_id(m, map, m->elf ? elf_module_htlhash(m->elf) : NULL);
	if (!m->elf) {
		s->stats.module_open_failed++;
		s->stats.modules_bad++;
		m->bad_until_ns = now_ns() + s->config.bad_file_retry_ns;
		m->bytes = sizeof(*m);
		return insert_module(s, m);
	}
	m->shareable = st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) && !elf_module_debug_in_root(m->elf);
	s->stats.modules_loaded++;
	m->bytes = sizeof(*m) + elf_module_bytes(m->elf);
	return insert_module(s, m);
}

static struct cached_module *module_for_map(struct symbolizer *s, pid_t pid, struct sym_map *map)
{
	struct cached_module *m;
	bool per_process_failure;

	if (map->tried && !map->module && map->retry_ns) {
		if (now_ns() < map->retry_ns)
			return NULL;
		map->tried = false; /* this process's time is up: try its file again */
		map->retry_ns = 0;
	}
	if (map->tried) {
		m = map->module;
		if (!m || m->elf || now_ns() < m->bad_until_ns)
			return m;
		/* A bad file's time is up: forget it and try the file again. */
		for (size_t i = 0; i < s->nmodules; i++)
			if (s->modules[i] == m) {
				evict_at(s, i);
				break;
			}
	}
	m = find_module(s, map->dev, map->inode);
	if (m)
		s->stats.module_cache_hits++;
	else
		m = open_module(s, pid, map, &per_process_failure);
	if (!m && per_process_failure) {
		map->tried = true;
		map->retry_ns = now_ns() + s->config.bad_file_retry_ns;
		return NULL;
	}
	if (!m)
		return NULL; /* retried on a later lookup */
	m->refs++;
	map->module = m;
	map->tried = true;
	return m;
}

/* From /proc/PID/status: the innermost pid (the name its perf map carries) and the effective uid. */
static int read_status(pid_t pid, pid_t *nspid, uid_t *euid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	bool uid_found = false;
	FILE *f;

	*nspid = pid;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned long real, effective;

		if (!strncmp(line, "Uid:", 4) && sscanf(line + 4, "%lu %lu", &real, &effective) == 2) {
			*euid = (uid_t)effective;
			uid_found = true;
		} else if (!strncmp(line, "NSpid:", 6)) { /* after Uid: */
			char *last = strrchr(line, '\t');
			pid_t ns = last ? (pid_t)strtol(last + 1, NULL, 10) : 0;

			if (ns > 0)
				*nspid = ns;
			break;
		}
	}
	free(line);
	fclose(f);
	return uid_found ? 0 : -ENOENT;
}

/* A perf map not used (perf_map_open's or perf_map_parse's -errno): counted once until it changes. */
static void jit_refuse(struct symbolizer *s, struct sym_process *p, int err)
{
	if (err == p->jit_refused)
		return;
	p->jit_refused = err;
	if (err == -EFBIG)
		s->stats.perf_maps_too_big++;
	else if (err == -ELOOP || err == -EINVAL || err == -EPERM)
		s->stats.perf_maps_refused++;
}

/* Keep jit as p's perf map within the byte bound (other maps and modules evicted least recently
 * used first); 0, or -EFBIG when it does not fit alone. */
static int jit_keep(struct symbolizer *s, struct sym_process *p, struct perf_map *jit)
{
	jit_drop(s, p);
	p->jit = jit;
	p->jit_bytes = perf_map_bytes(jit);
	p->jit_used = ++s->tick;
	s->perf_map_bytes += p->jit_bytes;
	s->nperf_maps++;
	s->stats.perf_map_bytes = s->perf_map_bytes;
	enforce_bounds(s, 0, NULL, p);
	if (bytes_held(s) <= s->config.max_module_bytes)
		return 0;
	jit_drop(s, p);
	return -EFBIG;
}

/* (Re)read the process's perf map when it appeared or changed; checked at most once a second. */
static void refresh_perf_map(struct symbolizer *s, struct sym_process *p)
{
	uint64_t now = now_ns();
	struct perf_map *jit;
	char path[64];
	struct stat st;
	pid_t nspid;
	uid_t euid = 0;
	int root, fd, err;
	FILE *f;

	if (p->jit_checked_ns && now - p->jit_checked_ns < PERF_MAP_CHECK_NS)
		return;
	p->jit_checked_ns = now;
	if (read_status(p->pid, &nspid, &euid) || (root = open_root(p->pid)) < 0)
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", nspid);
	fd = perf_map_open(root, path, euid, &st);
	close(root);
	if (fd < 0) {
		jit_refuse(s, p, fd);
		return;
	}
	if ((uint64_t)st.st_size == p->jit_size && (uint64_t)st.st_ino == p->jit_ino) {
		close(fd);
		return;
	}
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return;
	}
	jit = perf_map_parse(f, PERF_MAP_MAX_FILE_BYTES);
	err = jit ? 0 : -errno;
	fclose(f);
	if (!err) {
		s->stats.perf_map_loads++;
		err = jit_keep(s, p, jit);
	}
	if (err)
		jit_refuse(s, p, err);
	else
		p->jit_refused = 0;
	/* Read or refused after reading: not again until the file changes. */
	p->jit_size = (uint64_t)st.st_size;
	p->jit_ino = (uint64_t)st.st_ino;
}

static bool symbolize_jit(struct symbolizer *s, struct sym_process *p, uint64_t address, struct sym_frame *frame)
{
	const struct perf_map_sym *sym;

	if (s->config.no_perf_maps)
		return false;
	sym = perf_map_lookup(p->jit, address);
	if (!sym && !p->retired) {
		refresh_perf_map(s, p);
		sym = perf_map_lookup(p->jit, address);
	}
	if (!sym)
		return false;
	p->jit_used = ++s->tick;
	frame->module = "[jit]";
	frame->lines[0] = (struct sym_line){ .function = sym->name, .system_name = sym->name };
	frame->nlines = 1;
	s->stats.jit_symbolized++;
	s->stats.symbolized++;
	return true;
}

int symbolizer_user_instance(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t address,
			     struct sym_frame *frame)
{
	struct cached_module *module;
	struct sym_process *p;
	struct sym_map *map;
	uint64_t file_offset;
	int r;

	memset(frame, 0, offsetof(struct sym_frame, lines));
	frame->kind = SYM_FRAME_NATIVE;
	frame->file_address = address;
	s->stats.lookups++;
	r = get_process(s, pid, instance, 0, instance == 0, &p);
	if (r)
		return r;
	map = find_map_refresh(p, address, &s->stats);
	if (!map) {
		if (symbolize_jit(s, p, address, frame))
			return 0;
		s->stats.no_mapping++;
		return -ENOENT;
	}

	file_offset = address - map->start + map->offset;
	frame->has_mapping = true;
	frame->mapping = (struct sym_mapping){
		.start = map->start, .limit = map->end, .file_offset = map->offset,
		.path = map->path, .dev = map->dev, .inode = map->inode,
	};
	frame->file_address = file_offset;
	module = module_for_map(s, pid, map);
	if (!module || !module->elf)
		return 0;
	module->last_used = ++s->tick;
	module->generation = s->generation;
	frame->mapping.build_id = elf_module_build_id(module->elf);
	frame->mapping.htlhash = module_htlhash(module, map);
	if (!elf_module_offset_to_vaddr(module->elf, file_offset, &frame->file_address))
		return 0;
	{
		const struct elf_module_counters *c = elf_module_counters(module->elf);
		uint64_t truncated = c->inline_truncated, bound = c->die_bound_hit, libdw = c->lines_by_libdw;

		if (elf_module_symbolize(module->elf, frame->file_address, frame))
			s->stats.symbolized++;
		s->stats.inline_truncated += c->inline_truncated - truncated;
		s->stats.die_bound_hit += c->die_bound_hit - bound;
		s->stats.lines_by_libdw += c->lines_by_libdw - libdw;
	}
	module_measure(s, module);
	return 0;
}

int symbolizer_user(struct symbolizer *s, pid_t pid, uint64_t address, struct sym_frame *frame)
{
	return symbolizer_user_instance(s, pid, 0, address, frame);
}

int symbolizer_kernel(struct symbolizer *s, uint64_t address, struct sym_frame *frame)
{
	const struct ksym *sym;

	memset(frame, 0, offsetof(struct sym_frame, lines));
	frame->kind = SYM_FRAME_KERNEL;
	frame->file_address = address;
	s->stats.lookups++;
	/* Read at the first kernel frame unless loaded before: megabytes of text the kernel formats,
	 * 40 ms of CPU, that a user with no kernel frames never needs. */
	symbolizer_load_kallsyms(s);
	sym = kallsyms_lookup(s->kallsyms, address);
	/* Code that comes and goes without /proc/modules changing: BPF programs, ftrace and kprobe
	 * trampolines (module names in brackets, with no known end), and addresses no symbol covers. */
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

/* ---- unwinding ---- */

struct unwind_ctx {
	struct symbolizer *s;
	struct sym_process *p;
};

static size_t rule_slot_of(uint64_t serial, uint64_t vaddr)
{
	uint64_t h = (vaddr ^ (serial * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

	return (size_t)(h >> 32) & (RULE_CACHE_SLOTS - 1);
}

/* unwind_rule_fn: the rule of a runtime pc through the process's mapping and the module's CFI. */
static const struct cfi_rule *find_rule(void *ctx, uint64_t pc)
{
	struct unwind_ctx *u = ctx;
	struct symbolizer *s = u->s;
	struct cached_module *module;
	struct rule_slot *slot;
	struct sym_map *map = find_map_refresh(u->p, pc, &s->stats);
	uint64_t vaddr;

	if (!map)
		return NULL; /* anonymous code (a JIT) or an unmapped library: frame pointers */
	module = module_for_map(s, u->p->pid, map);
	if (!module || !module->elf ||
	    !elf_module_offset_to_vaddr(module->elf, pc - map->start + map->offset, &vaddr))
		return NULL;
	module->last_used = ++s->tick;
	module->generation = s->generation;
	slot = &s->rules[rule_slot_of(module->serial, vaddr)];
	if (slot->serial == module->serial && slot->vaddr == vaddr) {
		s->stats.cfi_rule_cache_hits++;
		return &slot->rule;
	}
	s->stats.cfi_rule_cache_misses++;
	if (elf_module_cfi_rule(module->elf, vaddr, &slot->rule)) {
		s->stats.cfi_rule_errors++;
		slot->rule.found = false; /* remembered as "no rule": the walker tries frame pointers */
	}
	slot->serial = module->serial;
	slot->vaddr = vaddr;
	module_measure(s, module);
	return &slot->rule;
}

size_t symbolizer_unwind_instance(struct symbolizer *s, pid_t pid, uint64_t instance,
				  const struct sym_unwind_input *in, uint64_t *ips, size_t max,
				  struct unwind_result *result)
{
	struct unwind_ctx u = { .s = s };
	struct unwind_window w = {
		.sp = in->sp, .data = in->stack, .size = in->stack_size, .complete = in->stack_complete,
	};
	struct unwind_regs regs = { .ip = in->ip, .sp = in->sp, .bp = in->bp };
	size_t n;

	memset(result, 0, sizeof(*result));
	s->stats.unwinds++;
	if (!s->rules && !(s->rules = calloc(RULE_CACHE_SLOTS, sizeof(*s->rules)))) {
		result->end = UNWIND_END_NO_RULE;
		s->stats.unwind_ends[result->end]++;
		return 0;
	}
	if (get_process(s, pid, instance, 0, instance == 0, &u.p)) {
		result->end = UNWIND_END_NO_RULE;
		s->stats.unwind_ends[result->end]++;
		return 0;
	}
	n = unwind_stack(&regs, &w, find_rule, &u, ips, max, result);
	s->stats.unwind_frames_cfi += result->cfi_frames;
	s->stats.unwind_frames_fp += result->fp_frames;
	s->stats.unwind_ends[result->end]++;
	return n;
}

size_t symbolizer_unwind(struct symbolizer *s, pid_t pid, const struct sym_unwind_input *in, uint64_t *ips,
			 size_t max, struct unwind_result *result)
{
	return symbolizer_unwind_instance(s, pid, 0, in, ips, max, result);
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

	if (*slot)
		process_unlink(s, slot);
}

void symbolizer_forget_process(struct symbolizer *s, pid_t pid)
{
	for (struct sym_process **pp = &s->buckets[(uint32_t)pid % PROCESS_BUCKETS]; *pp;) {
		if ((*pp)->pid == pid)
			process_unlink(s, pp);
		else
			pp = &(*pp)->next;
	}
}

/* Modules opened without DWARF whose debug file has since been downloaded are dropped, so the
 * next lookup opens them again with it. */
static void reload_fetched(struct symbolizer *s)
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
				evict_at(s, i);
				s->stats.debuginfod_reloaded++;
			} else {
				i++;
			}
		}
	}
	debuginfo_fetch_stats(s->debuginfod, &s->stats.debuginfod);
}

void symbolizer_maintain(struct symbolizer *s)
{
	reload_fetched(s);
	/* Unreferenced modules idle for several generations are dropped; then the bounds hold. */
	for (size_t i = 0; i < s->nmodules;) {
		struct cached_module *m = s->modules[i];

		if (m->refs == 0 && s->generation - m->generation >= MODULE_IDLE_GENERATIONS)
			evict_at(s, i);
		else
			i++;
	}
	enforce_bounds(s, 0, NULL, NULL);
	s->generation++;

	/* Kernel modules loaded or removed: read kallsyms again. BPF programs come and go without
	 * touching /proc/modules, so while frames are looked up in such code (or miss) it is also re-read
	 * now and then; the kernel's own text never moves, and frames in it alone cost no re-read. */
	if (s->kallsyms_loaded_ns &&
	    (hash_file("/proc/modules") != s->modules_hash ||
	     (s->changeable_lookups != s->changeable_lookups_at_load &&
	      now_ns() - s->kallsyms_loaded_ns >= s->config.kallsyms_refresh_ns))) {
		load_kallsyms(s);
		s->stats.kallsyms_reloads++;
	}
}

const struct symbolizer_stats *symbolizer_stats(const struct symbolizer *s)
{
	return &s->stats;
}
