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
#include "kallsyms.h"
#include "proc_maps.h"

#define PROCESS_BUCKETS 4096
/* A process whose address misses every mapping re-reads its maps at most this often. */
#define MAPS_REFRESH_NS 1000000000ULL
/* Most mappings kept per process; the rest of a huge maps file is ignored and counted. */
#define MAX_MAPS_PER_PROCESS 65536

struct cached_module {
	uint64_t dev, inode;
	struct elf_module *elf; /* NULL when the file could not be used */
	uint64_t last_used;     /* maintain() generation */
	unsigned refs;          /* mappings pointing here */
};

struct sym_map {
	uint64_t start, end, offset;
	uint64_t dev, inode;
	char *path;
	struct cached_module *module; /* NULL until first use */
	bool tried;                   /* module lookup done (successful or not) */
};

struct sym_process {
	pid_t pid;
	struct sym_map *maps; /* file-backed mappings, sorted by start */
	size_t nmaps;
	uint64_t refreshed_ns;
	struct sym_process *next; /* hash chain */
};

struct symbolizer {
	struct symbolizer_config config;
	struct symbolizer_stats stats;
	struct kallsyms *kallsyms;
	struct sym_process *buckets[PROCESS_BUCKETS];
	size_t nprocesses;
	struct cached_module **modules;
	size_t nmodules;
	uint64_t generation;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
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
	if (!s->config.max_modules)
		s->config.max_modules = 1024;
	if (!s->config.max_processes)
		s->config.max_processes = 16384;
	s->modules = calloc(s->config.max_modules, sizeof(*s->modules));
	if (!s->modules) {
		free(s);
		return NULL;
	}
	s->kallsyms = kallsyms_load(s->config.kallsyms_path);
	s->stats.kallsyms_hidden = kallsyms_hidden(s->kallsyms);
	return s;
}

static void module_release(struct cached_module *m)
{
	if (m && m->refs)
		m->refs--;
}

static void process_free(struct sym_process *p)
{
	for (size_t i = 0; i < p->nmaps; i++) {
		module_release(p->maps[i].module);
		free(p->maps[i].path);
	}
	free(p->maps);
	free(p);
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t b = 0; b < PROCESS_BUCKETS; b++) {
		struct sym_process *p = s->buckets[b], *next;

		for (; p; p = next) {
			next = p->next;
			process_free(p);
		}
	}
	for (size_t i = 0; i < s->nmodules; i++) {
		elf_module_free(s->modules[i]->elf);
		free(s->modules[i]);
	}
	free(s->modules);
	kallsyms_free(s->kallsyms);
	free(s);
}

static struct sym_process **process_slot(struct symbolizer *s, pid_t pid)
{
	struct sym_process **pp = &s->buckets[(uint32_t)pid % PROCESS_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static int by_start(const void *a, const void *b)
{
	const struct sym_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Replace p's mappings with what /proc/PID/maps says now. */
static int read_maps(struct sym_process *p)
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
		for (size_t i = 0; i < n; i++)
			free(maps[i].path);
		free(maps);
		return err;
	}
	if (n)
		qsort(maps, n, sizeof(*maps), by_start);
	for (size_t i = 0; i < p->nmaps; i++) {
		module_release(p->maps[i].module);
		free(p->maps[i].path);
	}
	free(p->maps);
	p->maps = maps;
	p->nmaps = n;
	p->refreshed_ns = now_ns();
	return 0;
}

static int get_process(struct symbolizer *s, pid_t pid, struct sym_process **out)
{
	struct sym_process **slot = process_slot(s, pid), *p;
	int r;

	if (*slot) {
		*out = *slot;
		return 0;
	}
	if (s->nprocesses >= s->config.max_processes)
		return -ENOSPC;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	r = read_maps(p);
	if (r) {
		free(p);
		if (r == -ESRCH)
			s->stats.process_gone++;
		return r;
	}
	*slot = p;
	s->nprocesses++;
	*out = p;
	return 0;
}

int symbolizer_prepare_process(struct symbolizer *s, pid_t pid)
{
	struct sym_process *p;

	return get_process(s, pid, &p);
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

/*
 * Open the file behind a mapping without trusting its path: map_files gives the mapped file
 * itself; otherwise resolve the path inside the process's root so a container's symlinks
 * cannot point outside it. Only regular files whose device and inode match are used.
 */
static int open_mapped_file(pid_t pid, const struct sym_map *map)
{
	char path[128];
	struct stat st;
	int fd, root;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)map->start, (unsigned long long)map->end);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		struct open_how how = {
			.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
			.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
		};

		snprintf(path, sizeof(path), "/proc/%d/root", pid);
		root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return -errno;
		fd = (int)syscall(SYS_openat2, root, map->path, &how, sizeof(how));
		if (fd < 0)
			fd = -errno;
		close(root);
		if (fd < 0)
			return fd;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino != map->inode || st.st_dev != map->dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static struct cached_module *find_module(struct symbolizer *s, uint64_t dev, uint64_t inode)
{
	for (size_t i = 0; i < s->nmodules; i++)
		if (s->modules[i]->dev == dev && s->modules[i]->inode == inode)
			return s->modules[i];
	return NULL;
}

static struct cached_module *module_for_map(struct symbolizer *s, pid_t pid, struct sym_map *map)
{
	struct cached_module *m;
	int fd;

	if (map->tried)
		return map->module;
	m = find_module(s, map->dev, map->inode);
	if (!m) {
		if (s->nmodules >= s->config.max_modules) {
			s->stats.module_cache_full++;
			return NULL; /* retried on a later lookup, after maintain() made room */
		}
		m = calloc(1, sizeof(*m));
		if (!m)
			return NULL;
		m->dev = map->dev;
		m->inode = map->inode;
		fd = open_mapped_file(pid, map);
		if (fd >= 0)
			m->elf = elf_module_open(fd, map->path);
		if (!m->elf)
			s->stats.module_open_failed++;
		else
			s->stats.modules_loaded++;
		s->modules[s->nmodules++] = m;
	}
	m->refs++;
	map->module = m;
	map->tried = true;
	return m;
}

int symbolizer_user(struct symbolizer *s, pid_t pid, uint64_t address, struct sym_frame *frame)
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
	r = get_process(s, pid, &p);
	if (r)
		return r;
	map = find_map(p, address);
	if (!map && now_ns() - p->refreshed_ns > MAPS_REFRESH_NS && read_maps(p) == 0)
		map = find_map(p, address);
	if (!map) {
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
	module->last_used = s->generation;
	frame->mapping.build_id = elf_module_build_id(module->elf);
	if (!elf_module_offset_to_vaddr(module->elf, file_offset, &frame->file_address))
		return 0;
	if (elf_module_symbolize(module->elf, frame->file_address, frame))
		s->stats.symbolized++;
	return 0;
}

int symbolizer_kernel(struct symbolizer *s, uint64_t address, struct sym_frame *frame)
{
	const struct ksym *sym;

	memset(frame, 0, offsetof(struct sym_frame, lines));
	frame->kind = SYM_FRAME_KERNEL;
	frame->file_address = address;
	s->stats.lookups++;
	sym = kallsyms_lookup(s->kallsyms, address);
	if (!sym)
		return -ENOENT;
	frame->module = sym->module;
	frame->lines[0] = (struct sym_line){ .function = sym->name, .system_name = sym->name };
	frame->nlines = 1;
	s->stats.symbolized++;
	return 0;
}

void symbolizer_forget_process(struct symbolizer *s, pid_t pid)
{
	struct sym_process **slot = process_slot(s, pid), *p = *slot;

	if (!p)
		return;
	*slot = p->next;
	process_free(p);
	s->nprocesses--;
}

void symbolizer_maintain(struct symbolizer *s)
{
	size_t kept = 0;

	/* Modules no mapping points at any more are freed. */
	for (size_t i = 0; i < s->nmodules; i++) {
		struct cached_module *m = s->modules[i];

		if (m->refs == 0) {
			elf_module_free(m->elf);
			free(m);
			s->stats.modules_evicted++;
			continue;
		}
		s->modules[kept++] = m;
	}
	s->nmodules = kept;
	s->generation++;
}

const struct symbolizer_stats *symbolizer_stats(const struct symbolizer *s)
{
	return &s->stats;
}
