#include "elf_module.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include "demangle.h"
#include "dwarf_lines.h"
#include "elf_cost.h"
#include "htlhash.h"

#define MAX_LOAD_SEGMENTS 16
/* Demangled names kept per module; past this, frames keep the mangled name. */
#define MAX_POOL_BYTES (8u << 20)
#define POOL_CHUNK 16384
/* Result cache slots per module: four per function symbol, rounded up, within these bounds. */
#define MIN_CACHE_SLOTS 1024
#define MAX_CACHE_SLOTS 16384
/* Most DIEs visited while indexing one compile unit, and address ranges kept per function. */
#define MAX_INDEX_VISITS 4000000
#define MAX_RANGES_PER_FUNCTION 64
/* Rows of one CU looked up by running its line program from the start (cheap for a few cold
 * lookups); after that libdw's sorted table of the whole CU answers (built once, then a binary
 * search), so a CU that keeps missing the result cache does not pay a scan every time. */
#define LINE_FINDS_OWN 32
/* Most compile units and address ranges of them indexed per file. */
#define MAX_CU_RANGES (1u << 20)
/* What libdw/libdwfl allocate behind our back, estimated so the module cache's byte bound holds:
 * a row of a CU's whole line table (Dwarf_Line, its slot in the sorted array, and the list entry
 * it was read through, freed but kept by the heap: 104 matches RSS growth), a compile unit
 * first read (Dwarf_CU with its abbreviation table), an entry of libdwfl's address-to-CU table,
 * and a CIE/FDE parsed for CFI (at most one per LIBDW_FDE_MIN_SIZE bytes of the CFI sections). */
#define LIBDW_LINE_BYTES 104
#define LIBDW_CU_BYTES 4096
#define LIBDW_ARANGE_BYTES 64
#define LIBDW_FDE_BYTES 160
#define LIBDW_FDE_MIN_SIZE 16

struct load_segment {
	uint64_t offset, vaddr, filesz;
};

/* One remembered lookup: the lines of vaddr (strings owned by the module). */
struct cache_slot {
	uint64_t vaddr;
	struct sym_line *lines; /* nlines entries, NULL when nlines == 0 */
	uint8_t nlines;
	bool used;
};

/* Demangled names: bump-allocated chunks plus an open-addressing set for deduplication. */
struct pool_chunk {
	struct pool_chunk *next;
	size_t used, size;
	char data[];
};

/* A function symbol of the ELF symbol table, for binary search by address. */
struct func_sym {
	uint64_t addr, size;
	const char *name; /* in libelf's string table */
};

/* The address range of a top-level function DIE of one compile unit. */
struct func_range {
	uint64_t low, high;
	Dwarf_Die die;
};

/* Per compile unit: its function DIEs sorted by address, built on the CU's first lookup, and
 * its line program reader, opened when a line or file is first asked for. */
struct cu_index {
	Dwarf_Off cu;
	struct func_range *ranges;
	size_t n;
	struct dwarf_lines *lines; /* NULL: not opened yet, or libdw reads this CU's lines */
	bool lines_tried;
	bool libdw_lines_counted;  /* libdw's whole line table of this CU is in libdw_bytes */
	unsigned line_finds;       /* rows looked up by running the program (see LINE_FINDS_OWN) */
};

struct elf_module {
	Dwfl_Callbacks callbacks; /* per module: libdwfl keeps a pointer to it */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf *dwarf;             /* NULL without DWARF */
	GElf_Addr dwarf_bias;
	struct load_segment segments[MAX_LOAD_SEGMENTS];
	size_t nsegments;
	unsigned char build_id_raw[64];
	size_t build_id_len;
	char *build_id;           /* hex, or NULL */
	char htlhash[SYM_HTLHASH_HEX_LEN + 1];
	bool has_htlhash;
	size_t file_bytes;        /* size of the ELF file plus a separate debug file */
	size_t own_bytes;         /* our allocations: cache, lines, pool */
	size_t libdw_bytes;       /* estimate of libdw's: decompressed sections, line tables, CUs */
	size_t cfi_bytes_max;     /* most CFI entries libdw can parse here (by the sections' sizes) */
	size_t cfi_bytes;         /* estimate of the CFI entries parsed so far */
	bool aranges_counted;     /* libdwfl's address-to-CU table is in libdw_bytes */
	size_t max_bytes;         /* the bound what libdw inflates is held to (options->max_bytes) */
	bool no_dwarf;            /* DWARF over the bound: libdw never opens it (nor a debug file) */
	bool no_symbols;          /* symbol table over the bound too: libdwfl never reads it */
	uint64_t crc_bytes;       /* debuglink candidates CRC-checked while opening */
	bool debug_in_root;       /* the debug file came from the process's root (its owner's choice) */

	/* Used only while elf_module_open() runs (debug file search). */
	const struct elf_module_options *opening;

	struct func_sym *syms;    /* sorted by addr; built on first lookup */
	size_t nsyms;
	bool syms_built;
	struct cu_index *cus;     /* sorted by cu offset */
	size_t ncus;
	struct func_range *cu_ranges; /* compile units by address (files without .debug_aranges) */
	size_t ncu_ranges;
	bool cu_ranges_built;

	struct cache_slot *slots;
	size_t nslots;
	struct pool_chunk *chunks;
	const char **set;         /* pool strings by hash; nset slots, a power of two */
	size_t nset, set_count, pool_bytes;
	struct elf_module_counters counters;
};

static const char *const default_debug_dirs[] = { "/usr/lib/debug", NULL };

/* ---- bounds on what libelf/libdw will read ---- */

/* A regular, sane ELF file: its size, and what it costs once libdw has inflated its sections. */
static int file_cost(int fd, size_t *size, struct elf_cost *cost)
{
	struct stat st;
	Elf *elf;
	int r;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	*cost = (struct elf_cost){ 0 };
	r = elf_cost_of(elf, cost);
	elf_end(elf);
	*size = (size_t)st.st_size;
	return r;
}

/* Whether bytes more keep the module within its bound. */
static bool module_affords(const struct elf_module *m, size_t bytes)
{
	return elf_cost_add(elf_module_bytes(m), bytes, 0) <= m->max_bytes;
}

/*
 * Decide, before libdw inflates anything, what of the binary the bound allows: all of it, its
 * symbol table without the DWARF, or neither (offsets still map to addresses, and the build id
 * still names the file for a backend to symbolize).
 */
static void admit_binary(struct elf_module *m, size_t size, const struct elf_cost *cost)
{
	m->file_bytes += size;
	m->cfi_bytes_max += cost->cfi / LIBDW_FDE_MIN_SIZE * LIBDW_FDE_BYTES;
	if (!module_affords(m, cost->symbols)) {
		m->no_symbols = m->no_dwarf = true;
	} else if (!module_affords(m, elf_cost_add(cost->symbols, cost->dwarf, 0))) {
		m->no_dwarf = true;
		m->libdw_bytes += cost->symbols;
	} else {
		m->libdw_bytes += cost->symbols + cost->dwarf;
		return;
	}
	m->counters.inflate_refused++;
}

int elf_module_peek(int fd, struct elf_module_peek *peek)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	const void *bits;
	size_t shstrndx;
	ssize_t n;

	memset(peek, 0, sizeof(*peek));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return -ENOEXEC;
	}
	n = dwelf_elf_gnu_build_id(elf, &bits);
	if (n > 0 && (size_t)n <= sizeof(peek->build_id)) {
		memcpy(peek->build_id, bits, (size_t)n);
		peek->build_id_len = (size_t)n;
	}
	if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
		for (size_t i = 0; i < ELF_COST_MAX_SECTIONS && (scn = elf_nextscn(elf, scn)) && !peek->has_dwarf; i++) {
			GElf_Shdr shdr;
			const char *name;

			if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS || !shdr.sh_size)
				continue;
			name = elf_strptr(elf, shstrndx, shdr.sh_name);
			peek->has_dwarf = name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"));
		}
	}
	elf_end(elf);
	return 0;
}

/* ---- separate debug files ---- */

static bool same_build_id(const struct elf_module *m, int fd)
{
	const void *bits;
	ssize_t n;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	bool same;

	if (!elf)
		return false;
	n = dwelf_elf_gnu_build_id(elf, &bits);
	same = n > 0 && (size_t)n == m->build_id_len && !memcmp(bits, m->build_id_raw, m->build_id_len);
	elf_end(elf);
	return same;
}

static bool same_crc(struct elf_module *m, int fd, GElf_Word crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, NULL, 0);
	struct stat st;
	off_t off = 0;
	ssize_t n;

	if (fstat(fd, &st) || (uint64_t)st.st_size > ELF_MODULE_MAX_CRC_BYTES ||
	    m->crc_bytes + (uint64_t)st.st_size > ELF_MODULE_MAX_CRC_TOTAL) {
		m->counters.debuglink_too_big++;
		return false;
	}
	m->crc_bytes += (uint64_t)st.st_size;
	while (off < st.st_size && (n = pread(fd, buf, sizeof(buf), off)) > 0) {
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	return off == st.st_size && (GElf_Word)c == crc;
}

/* A candidate is used only when it is a regular, sane ELF that belongs to this binary, and when
 * what libdw would inflate of it fits the module's bound (else refused, counted). */
static int accept_debug_fd(struct elf_module *m, int fd, GElf_Word crc, bool check_crc)
{
	struct elf_cost cost;
	size_t size;

	if (fd < 0)
		return -1;
	if (file_cost(fd, &size, &cost) == 0 &&
	    (m->build_id_len ? same_build_id(m, fd) : check_crc && same_crc(m, fd, crc))) {
		if (module_affords(m, elf_cost_add(size, cost.symbols, cost.dwarf))) {
			m->file_bytes += size;
			m->libdw_bytes += cost.symbols + cost.dwarf;
			m->cfi_bytes_max += cost.cfi / LIBDW_FDE_MIN_SIZE * LIBDW_FDE_BYTES;
			return fd;
		}
		m->counters.inflate_refused++;
	}
	close(fd);
	return -1;
}

static int open_in_root(int root_fd, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (root_fd < 0)
		return open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	return fd < 0 ? -1 : fd;
}

/* out = a b c d, false when it does not fit. */
static bool path_join(char *out, size_t size, const char *a, const char *b, const char *c, const char *d)
{
	const char *parts[4] = { a, b, c, d };
	size_t n = 0;

	for (int i = 0; i < 4; i++) {
		size_t len = strlen(parts[i]);

		if (n + len >= size)
			return false;
		memcpy(out + n, parts[i], len);
		n += len;
	}
	out[n] = 0;
	return true;
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
			  const char *file_name, const char *debuglink, GElf_Word crc, char **debug_name)
{
	struct elf_module *m = *userdata;
	const struct elf_module_options *o = m->opening;
	const char *const *dirs = o && o->debug_dirs ? o->debug_dirs : default_debug_dirs;
	char path[4096], dir[4096];
	int fd;

	if (!o)
		return -1;
	/* 1. Host build-id directories: DIR/.build-id/xx/yyyy.debug */
	if (m->build_id && m->build_id_len > 1) {
		char head[3] = { m->build_id[0], m->build_id[1], 0 }, tail[160];

		if (!path_join(tail, sizeof(tail), "/", m->build_id + 2, ".debug", ""))
			return -1;
		for (const char *const *d = dirs; *d; d++) {
			if (!path_join(path, sizeof(path), *d, "/.build-id/", head, tail))
				continue;
			fd = accept_debug_fd(m, open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), crc, false);
			if (fd >= 0)
				return fd;
		}
	}
	/* 2. .gnu_debuglink: next to the binary and in its .debug/ (inside the process's root),
	 *    then under the host's debug directories. */
	if (debuglink && !strchr(debuglink, '/') && o->path && o->path[0] == '/') {
		const char *slash = strrchr(o->path, '/');
		size_t dlen = (size_t)(slash - o->path);

		if (dlen >= sizeof(dir))
			return -1;
		memcpy(dir, o->path, dlen);
		dir[dlen] = 0;
		if (path_join(path, sizeof(path), "", dir, "/", debuglink)) {
			fd = accept_debug_fd(m, open_in_root(o->root_fd, path), crc, true);
			if ((m->debug_in_root = fd >= 0))
				return fd;
		}
		if (path_join(path, sizeof(path), "", dir, "/.debug/", debuglink)) {
			fd = accept_debug_fd(m, open_in_root(o->root_fd, path), crc, true);
			if ((m->debug_in_root = fd >= 0))
				return fd;
		}
		for (const char *const *d = dirs; *d; d++) {
			if (!path_join(path, sizeof(path), *d, dir, "/", debuglink))
				continue;
			fd = accept_debug_fd(m, open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), crc, true);
			if (fd >= 0)
				return fd;
		}
	}
	/* 3. debuginfod: the cached download, or queue it (never waits for the network). */
	if (o->debuginfod && m->build_id_len) {
		fd = debuginfo_fetch_lookup(o->debuginfod, m->build_id_raw, m->build_id_len);
		if (fd >= 0) {
			fd = accept_debug_fd(m, fd, crc, false);
			if (fd < 0) /* garbage from a server: drop it, do not ask again for a while */
				debuginfo_fetch_reject(o->debuginfod, m->build_id_raw, m->build_id_len);
			return fd;
		}
	}
	return -1;
}

/* ---- open / free ---- */

static int read_segments(struct elf_module *m)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->mod, &bias);
	size_t phnum;

	if (!elf || elf_getphdrnum(elf, &phnum))
		return -ENOEXEC;
	for (size_t i = 0; i < phnum && m->nsegments < MAX_LOAD_SEGMENTS; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, (int)i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		m->segments[m->nsegments++] = (struct load_segment){
			.offset = phdr.p_offset, .vaddr = phdr.p_vaddr, .filesz = phdr.p_filesz,
		};
	}
	return m->nsegments ? 0 : -ENOEXEC;
}

static void read_build_id(struct elf_module *m)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(m->mod, &bits, &vaddr);

	if (n <= 0 || (size_t)n > sizeof(m->build_id_raw))
		return;
	memcpy(m->build_id_raw, bits, (size_t)n);
	m->build_id_len = (size_t)n;
	m->build_id = malloc((size_t)n * 2 + 1);
	if (!m->build_id)
		return;
	for (int i = 0; i < n; i++)
		snprintf(m->build_id + 2 * i, 3, "%02x", bits[i]);
}

struct elf_module *elf_module_open(int fd, const struct elf_module_options *options)
{
	static const struct elf_module_options none = { .root_fd = -1 };
	struct elf_module *m = calloc(1, sizeof(*m));
	struct elf_cost cost;
	const char *name;
	void **userdata;
	size_t size;
	int err = ENOEXEC, r;

	if (!options)
		options = &none;
	if (!m) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	m->max_bytes = options->max_bytes ? options->max_bytes : ELF_MODULE_DEFAULT_MAX_BYTES;
	r = file_cost(fd, &size, &cost);
	if (r) {
		close(fd);
		err = -r;
		goto fail;
	}
	admit_binary(m, size, &cost);
	m->has_htlhash = sym_htlhash_fd(fd, m->htlhash) == 0;
	m->callbacks = (Dwfl_Callbacks){
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = find_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	m->dwfl = dwfl_begin(&m->callbacks);
	if (!m->dwfl) {
		close(fd);
		err = ENOMEM;
		goto fail;
	}
	name = options->path ? options->path : "[elf]";
	dwfl_report_begin(m->dwfl);
	/* base 0 with add_p_vaddr: the module's addresses are the file's own virtual addresses. */
	m->mod = dwfl_report_elf(m->dwfl, name, name, fd, 0, true);
	if (!m->mod) {
		close(fd); /* libdwfl consumes fd only on success */
		goto fail;
	}
	dwfl_report_end(m->dwfl, NULL, NULL);
	dwfl_module_info(m->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = m;
	if (read_segments(m))
		goto fail;
	read_build_id(m);
	/* Load DWARF now, while the process's root is at hand for the debug file search. */
	if (!m->no_dwarf) {
		m->opening = options;
		m->dwarf = dwfl_module_getdwarf(m->mod, &m->dwarf_bias);
		m->opening = NULL;
	}
	m->nslots = options->cache_slots; /* 0: sized by the symbol count on first lookup */
	return m;

fail:
	elf_module_free(m);
	errno = err;
	return NULL;
}

static void clear_slots(struct elf_module *m)
{
	for (size_t i = 0; m->slots && i < m->nslots; i++)
		free(m->slots[i].lines);
	free(m->slots);
	m->slots = NULL;
}

void elf_module_free(struct elf_module *m)
{
	struct pool_chunk *c, *next;

	if (!m)
		return;
	clear_slots(m);
	free(m->syms);
	for (size_t i = 0; i < m->ncus; i++) {
		free(m->cus[i].ranges);
		dwarf_lines_free(m->cus[i].lines);
	}
	free(m->cus);
	free(m->cu_ranges);
	for (c = m->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(m->set);
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->build_id);
	free(m);
}

/* ---- string pool ---- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* A module-owned copy of s, or NULL when the pool is full or memory runs out. */
static const char *pool_intern(struct elf_module *m, const char *s)
{
	size_t len = strlen(s) + 1, i;
	char *copy;

	if (m->set_count * 2 >= m->nset) {
		size_t nset = m->nset ? m->nset * 2 : 256;
		const char **set = calloc(nset, sizeof(*set));

		if (!set)
			return NULL;
		for (size_t j = 0; j < m->nset; j++) {
			if (!m->set[j])
				continue;
			for (i = hash_str(m->set[j]) & (nset - 1); set[i]; i = (i + 1) & (nset - 1))
				;
			set[i] = m->set[j];
		}
		m->own_bytes += (nset - m->nset) * sizeof(*set);
		free(m->set);
		m->set = set;
		m->nset = nset;
	}
	for (i = hash_str(s) & (m->nset - 1); m->set[i]; i = (i + 1) & (m->nset - 1))
		if (!strcmp(m->set[i], s))
			return m->set[i];
	if (m->pool_bytes + len > MAX_POOL_BYTES)
		return NULL;
	if (!m->chunks || m->chunks->size - m->chunks->used < len) {
		size_t size = len > POOL_CHUNK ? len : POOL_CHUNK;
		struct pool_chunk *c = malloc(sizeof(*c) + size);

		if (!c)
			return NULL;
		c->next = m->chunks;
		c->used = 0;
		c->size = size;
		m->chunks = c;
		m->own_bytes += sizeof(*c) + size;
	}
	copy = m->chunks->data + m->chunks->used;
	memcpy(copy, s, len);
	m->chunks->used += len;
	m->pool_bytes += len;
	m->set[i] = copy;
	m->set_count++;
	return copy;
}

/* function = demangled form when there is one (kept in the pool), else the name itself. */
static void set_names(struct elf_module *m, struct sym_line *line, const char *system_name, const char *plain)
{
	char *demangled = sym_demangle(system_name);
	const char *readable = NULL;

	if (demangled) {
		readable = pool_intern(m, demangled);
		free(demangled);
	}
	line->system_name = system_name ? system_name : plain;
	line->function = readable ? readable : plain ? plain : system_name;
}

/* ---- DWARF scopes ---- */

struct scope_walk {
	Dwarf_Addr pc;
	Dwarf_Die scopes[ELF_MODULE_MAX_DIE_DEPTH]; /* functions and inlined calls, outermost first */
	unsigned nscopes;
	unsigned visits;
	bool bound_hit;
};

static bool is_function(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* Can hold code: a scope whose ranges are checked before descending. */
static bool is_code_scope(int tag)
{
	return is_function(tag) || tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
	       tag == DW_TAG_catch_block || tag == DW_TAG_entry_point;
}

/* Holds definitions without ranges of its own (C++ namespaces, classes with inline bodies). */
static bool is_container(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
}

/* Depth-first search for the chain of scopes holding w->pc below parent; bounded. */
static bool find_scopes(Dwarf_Die *parent, struct scope_walk *w, unsigned depth)
{
	Dwarf_Die child;

	if (depth >= ELF_MODULE_MAX_DIE_DEPTH) {
		w->bound_hit = true;
		return false;
	}
	if (dwarf_child(parent, &child) != 0)
		return false;
	do {
		int tag;

		if (++w->visits > ELF_MODULE_MAX_DIE_VISITS) {
			w->bound_hit = true;
			return false;
		}
		tag = dwarf_tag(&child);
		if (is_code_scope(tag)) {
			if (dwarf_haspc(&child, w->pc) != 1)
				continue;
			if (is_function(tag) && w->nscopes < ELF_MODULE_MAX_DIE_DEPTH)
				w->scopes[w->nscopes++] = child;
			find_scopes(&child, w, depth + 1);
			return true;
		}
		if (is_container(tag) && dwarf_haschildren(&child) == 1 && find_scopes(&child, w, depth + 1))
			return true;
		if (w->bound_hit)
			return false;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

static const char *die_linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));

	if (!s)
		s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	return s;
}

static void die_names(struct elf_module *m, Dwarf_Die *die, struct sym_line *line)
{
	set_names(m, line, die_linkage_name(die), dwarf_diename(die));
}

/* The CU's own line program reader, opened on first use; NULL when libdw has to answer. */
static struct dwarf_lines *cu_lines(struct elf_module *m, struct cu_index *ix, Dwarf_Die *cu)
{
	if (!ix)
		return NULL;
	if (!ix->lines_tried) {
		ix->lines_tried = true;
		ix->lines = dwarf_lines_open(m->dwarf, cu);
		if (ix->lines)
			m->own_bytes += dwarf_lines_bytes(ix->lines);
		else if (errno != ENOENT)
			m->counters.lines_by_libdw++;
	}
	return ix->lines;
}

/* Path of file number i of the CU's line table (kept in the pool or by libdw), or NULL. */
static const char *cu_file(struct elf_module *m, struct cu_index *ix, Dwarf_Die *cu, uint64_t i)
{
	struct dwarf_lines *l = cu_lines(m, ix, cu);
	Dwarf_Files *files;
	size_t nfiles;
	char path[4096];

	if (l)
		return dwarf_lines_file(l, i, path, sizeof(path)) ? pool_intern(m, path) : NULL;
	if (dwarf_getsrcfiles(cu, &files, &nfiles) || i >= nfiles)
		return NULL;
	return dwarf_filesrc(files, i, NULL, NULL);
}

/* Innermost file:line:column of pc from the CU's line program. */
static void pc_line(struct elf_module *m, struct cu_index *ix, Dwarf_Die *cu, Dwarf_Addr pc, struct sym_line *out)
{
	struct dwarf_lines *l = cu_lines(m, ix, cu);
	struct dwarf_line_row row;
	Dwarf_Line *line;
	int r = l && ix->line_finds++ < LINE_FINDS_OWN ? dwarf_lines_find(l, pc, &row) : -ENOTSUP;

	if (r == 0) {
		out->file = cu_file(m, ix, cu, row.file);
		out->line = row.line;
		out->column = row.column;
		return;
	}
	if (r == -ENOENT)
		return;
	/* Not readable here, malformed on the way to pc, or a busy CU: libdw's whole table. */
	line = dwarf_getsrc_die(cu, pc);
	if (ix && !ix->libdw_lines_counted) {
		Dwarf_Lines *all;
		size_t nlines;

		ix->libdw_lines_counted = true;
		if (dwarf_getsrclines(cu, &all, &nlines) == 0)
			m->libdw_bytes += nlines * LIBDW_LINE_BYTES;
	}
	if (line) {
		int lineno = 0, col = 0;

		dwarf_lineno(line, &lineno);
		dwarf_linecol(line, &col);
		out->file = dwarf_linesrc(line, NULL, NULL);
		out->line = lineno > 0 ? (uint32_t)lineno : 0;
		out->column = col > 0 ? (uint32_t)col : 0;
	}
}

/* The call site of an inlined subroutine, in its caller. */
static void call_site(struct elf_module *m, struct cu_index *ix, Dwarf_Die *cu, Dwarf_Die *inlined,
		      struct sym_line *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;

	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &v) == 0)
		line->file = cu_file(m, ix, cu, v);
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &v) == 0 && v <= UINT32_MAX)
		line->line = (uint32_t)v;
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_column, &attr), &v) == 0 && v <= UINT32_MAX)
		line->column = (uint32_t)v;
}

static int by_addr(const void *a, const void *b)
{
	const struct func_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->size < y->size) - (x->size > y->size); /* sized symbols first */
}

/* The function symbols of the symbol table, sorted once (libdwfl's own search is linear). */
static void build_symbols(struct elf_module *m)
{
	int n = m->no_symbols ? 0 : dwfl_module_getsymtab(m->mod);
	size_t cap;

	m->syms_built = true;
	if (n <= 0)
		return;
	cap = (size_t)n;
	m->syms = malloc(cap * sizeof(*m->syms));
	if (!m->syms)
		return;
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(m->mod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (!name || !*name || sym.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		m->syms[m->nsyms++] = (struct func_sym){ .addr = addr, .size = sym.st_size, .name = name };
	}
	qsort(m->syms, m->nsyms, sizeof(*m->syms), by_addr);
	m->own_bytes += cap * sizeof(*m->syms);
}

/* ELF function symbol covering vaddr (a sized one, or the closest unsized one below), or NULL. */
static const char *elf_symbol(struct elf_module *m, uint64_t vaddr)
{
	size_t lo = 0, hi;

	if (!m->syms_built)
		build_symbols(m);
	if (!m->nsyms || vaddr < m->syms[0].addr)
		return NULL;
	hi = m->nsyms;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].addr <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	/* Several symbols may start at the same address: take the first of them (sized first). */
	while (lo > 0 && m->syms[lo - 1].addr == m->syms[lo].addr)
		lo--;
	if (m->syms[lo].size && vaddr - m->syms[lo].addr >= m->syms[lo].size)
		return NULL;
	return m->syms[lo].name;
}

static int by_low(const void *a, const void *b)
{
	const struct func_range *x = a, *y = b;

	return x->low < y->low ? -1 : x->low > y->low;
}

struct index_build {
	struct func_range *r;
	size_t n, cap;
	unsigned visits;
};

static void index_add(struct index_build *b, Dwarf_Die *die)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	int kept = 0;

	while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0 && kept++ < MAX_RANGES_PER_FUNCTION) {
		if (start >= end)
			continue;
		if (b->n == b->cap) {
			size_t ncap = b->cap ? b->cap * 2 : 64;
			struct func_range *nr = realloc(b->r, ncap * sizeof(*nr));

			if (!nr)
				return;
			b->r = nr;
			b->cap = ncap;
		}
		b->r[b->n++] = (struct func_range){ .low = start, .high = end, .die = *die };
	}
}

/* Function DIEs below parent (through namespaces and classes, not into functions). */
static void index_walk(Dwarf_Die *parent, struct index_build *b, unsigned depth)
{
	Dwarf_Die child;

	if (depth >= ELF_MODULE_MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
		return;
	do {
		int tag;

		if (++b->visits > MAX_INDEX_VISITS)
			return;
		tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram)
			index_add(b, &child);
		else if (is_container(tag) && dwarf_haschildren(&child) == 1)
			index_walk(&child, b, depth + 1);
	} while (dwarf_siblingof(&child, &child) == 0);
}

static struct cu_index *cu_index_of(struct elf_module *m, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	size_t lo = 0, hi = m->ncus;
	struct index_build b = { 0 };
	struct cu_index *ncus;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->cus[mid].cu == off)
			return &m->cus[mid];
		if (m->cus[mid].cu < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	ncus = realloc(m->cus, (m->ncus + 1) * sizeof(*ncus));
	if (!ncus)
		return NULL;
	m->cus = ncus;
	index_walk(cu, &b, 0);
	if (b.n)
		qsort(b.r, b.n, sizeof(*b.r), by_low);
	memmove(&m->cus[lo + 1], &m->cus[lo], (m->ncus - lo) * sizeof(*m->cus));
	m->cus[lo] = (struct cu_index){ .cu = off, .ranges = b.r, .n = b.n };
	m->ncus++;
	m->own_bytes += sizeof(*m->cus) + b.cap * sizeof(*b.r);
	m->libdw_bytes += LIBDW_CU_BYTES;
	return &m->cus[lo];
}

/*
 * Compile units by address from their own DW_AT_ranges/low_pc, for files without
 * .debug_aranges (clang and rustc do not emit it, and libdw 0.188 then finds no CU).
 */
static void build_cu_ranges(struct elf_module *m)
{
	struct index_build b = { 0 };
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;

	m->cu_ranges_built = true;
	while (dwarf_get_units(m->dwarf, cu, &next, &version, &unit_type, &cudie, NULL) == 0 &&
	       b.n < MAX_CU_RANGES) {
		cu = next;
		if (unit_type == DW_UT_compile || unit_type == DW_UT_partial || unit_type == DW_UT_skeleton)
			index_add(&b, &cudie);
	}
	if (b.n)
		qsort(b.r, b.n, sizeof(*b.r), by_low);
	m->cu_ranges = b.r;
	m->ncu_ranges = b.n;
	m->own_bytes += b.cap * sizeof(*b.r);
}

static struct func_range *range_of(struct func_range *r, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n;

	if (!n || pc < r[0].low)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].low <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return pc < r[lo].high ? &r[lo] : NULL;
}

static Dwarf_Die *cu_of(struct elf_module *m, uint64_t vaddr, Dwarf_Addr *bias)
{
	Dwarf_Die *cu = dwfl_module_addrdie(m->mod, vaddr, bias);
	struct func_range *r;

	if (!m->aranges_counted) {
		Dwarf_Aranges *aranges;
		size_t n;

		/* libdwfl has read .debug_aranges (or walked every CU) to answer. */
		m->aranges_counted = true;
		if (dwarf_getaranges(m->dwarf, &aranges, &n) == 0)
			m->libdw_bytes += n * LIBDW_ARANGE_BYTES;
	}

	if (cu)
		return cu;
	if (!m->cu_ranges_built)
		build_cu_ranges(m);
	*bias = m->dwarf_bias;
	r = range_of(m->cu_ranges, m->ncu_ranges, vaddr - m->dwarf_bias);
	return r ? &r->die : NULL;
}

/* The function DIE whose ranges hold pc, through the CU's index. */
static Dwarf_Die *indexed_function(struct cu_index *ix, Dwarf_Addr pc)
{
	struct func_range *r = ix ? range_of(ix->ranges, ix->n, pc) : NULL;

	return r ? &r->die : NULL;
}

static unsigned lookup(struct elf_module *m, uint64_t vaddr, struct sym_line *out)
{
	struct scope_walk *w = NULL;
	const char *symbol = elf_symbol(m, vaddr);
	struct cu_index *ix = NULL;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = NULL;
	unsigned n = 0;

	m->counters.dwarf_lookups++;
	if (m->dwarf)
		cu = cu_of(m, vaddr, &bias);
	if (cu) {
		w = calloc(1, sizeof(*w));
		if (w) {
			Dwarf_Die *fn;

			w->pc = vaddr - bias;
			ix = cu_index_of(m, cu);
			fn = indexed_function(ix, w->pc);
			if (fn) {
				w->scopes[w->nscopes++] = *fn;
				find_scopes(fn, w, 1);
			} else {
				find_scopes(cu, w, 0);
			}
			if (w->bound_hit)
				m->counters.die_bound_hit++;
		}
	}

	if (w && w->nscopes) {
		unsigned k = w->nscopes, first = 0;

		/* Too deep: keep the innermost frames and the outermost function. */
		if (k > SYM_MAX_INLINE) {
			m->counters.inline_truncated++;
			first = k - (SYM_MAX_INLINE - 1);
		}
		for (unsigned i = k; i-- > first;) {
			Dwarf_Die *die = &w->scopes[i];

			out[n] = (struct sym_line){ 0 };
			die_names(m, die, &out[n]);
			n++;
		}
		if (first) {
			out[n] = (struct sym_line){ 0 };
			die_names(m, &w->scopes[0], &out[n]);
			n++;
		}
		/* Lines: the innermost comes from the line table; each caller's from the call site
		 * of the inlined scope just inside it. */
		for (unsigned j = 1; j < n; j++) {
			unsigned inner = (j == n - 1 && first) ? 1 : k - j;

			call_site(m, ix, cu, &w->scopes[inner], &out[j]);
		}
		/* The outermost function is the ELF symbol when it has one (clones keep their
		 * suffix, e.g. foo.constprop.0, as the system name). */
		if (symbol && dwarf_tag(&w->scopes[0]) == DW_TAG_subprogram)
			set_names(m, &out[n - 1], symbol, out[n - 1].function);
	} else if (symbol) {
		out[0] = (struct sym_line){ 0 };
		set_names(m, &out[0], symbol, NULL);
		n = 1;
	}
	free(w);

	if (n && cu)
		pc_line(m, ix, cu, vaddr - bias, &out[0]);
	return n;
}

static size_t slot_of(const struct elf_module *m, uint64_t vaddr)
{
	return (size_t)((vaddr * 0x9e3779b97f4a7c15ULL) >> 32) % m->nslots;
}

unsigned elf_module_symbolize(struct elf_module *m, uint64_t vaddr, struct sym_frame *frame)
{
	struct sym_line lines[SYM_MAX_INLINE];
	struct cache_slot *slot;
	unsigned n;

	if (!m->slots) {
		if (!m->nslots) {
			if (!m->syms_built)
				build_symbols(m);
			for (m->nslots = MIN_CACHE_SLOTS; m->nslots < 4 * m->nsyms && m->nslots < MAX_CACHE_SLOTS;)
				m->nslots *= 2;
		}
		m->slots = calloc(m->nslots, sizeof(*m->slots));
		if (m->slots)
			m->own_bytes += m->nslots * sizeof(*m->slots);
	}
	slot = m->slots ? &m->slots[slot_of(m, vaddr)] : NULL;
	if (slot && slot->used && slot->vaddr == vaddr) {
		m->counters.cache_hits++;
		if (slot->nlines)
			memcpy(frame->lines, slot->lines, slot->nlines * sizeof(*slot->lines));
		frame->nlines = slot->nlines;
		return slot->nlines;
	}
	n = lookup(m, vaddr, lines);
	if (n)
		memcpy(frame->lines, lines, n * sizeof(*lines));
	frame->nlines = n;
	if (slot) {
		struct sym_line *copy = NULL;

		if (n && !(copy = malloc(n * sizeof(*copy))))
			return n;
		if (n)
			memcpy(copy, lines, n * sizeof(*copy));
		m->own_bytes -= slot->nlines * sizeof(*slot->lines);
		m->own_bytes += n * sizeof(*copy);
		free(slot->lines);
		*slot = (struct cache_slot){ .vaddr = vaddr, .lines = copy, .nlines = (uint8_t)n, .used = true };
	}
	return n;
}

bool elf_module_offset_to_vaddr(const struct elf_module *m, uint64_t file_offset, uint64_t *vaddr)
{
	for (size_t i = 0; i < m->nsegments; i++) {
		const struct load_segment *seg = &m->segments[i];

		if (file_offset >= seg->offset && file_offset - seg->offset < seg->filesz) {
			*vaddr = file_offset - seg->offset + seg->vaddr;
			return true;
		}
	}
	return false;
}

int elf_module_cfi_rule(struct elf_module *m, uint64_t vaddr, struct cfi_rule *rule)
{
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(m->mod, &bias);
	int r = cfi ? cfi_compile(cfi, vaddr - bias, rule) : 0;

	/* libdw keeps each CIE/FDE it parses; a lookup parses at most a few, never more than the
	 * sections hold. */
	if (m->cfi_bytes < m->cfi_bytes_max)
		m->cfi_bytes += LIBDW_FDE_BYTES;
	if (r || (cfi && rule->found))
		return r;
	/* .debug_frame comes with the DWARF (libdw inflates both): not when that was refused. */
	cfi = m->no_dwarf ? NULL : dwfl_module_dwarf_cfi(m->mod, &bias);
	if (!cfi) {
		rule->found = false;
		return 0;
	}
	return cfi_compile(cfi, vaddr - bias, rule);
}

const char *elf_module_build_id(const struct elf_module *m)
{
	return m->build_id;
}

size_t elf_module_build_id_raw(const struct elf_module *m, const unsigned char **bits)
{
	*bits = m->build_id_raw;
	return m->build_id_len;
}

const char *elf_module_htlhash(const struct elf_module *m)
{
	return m->has_htlhash ? m->htlhash : NULL;
}

bool elf_module_has_dwarf(const struct elf_module *m)
{
	return m->dwarf != NULL;
}

bool elf_module_debug_in_root(const struct elf_module *m)
{
	return m->debug_in_root;
}

const void *elf_module_image(const struct elf_module *m, size_t *size)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->mod, &bias);

	return elf ? elf_rawfile(elf, size) : NULL;
}

size_t elf_module_bytes(const struct elf_module *m)
{
	return sizeof(*m) + m->file_bytes + m->own_bytes + m->libdw_bytes + m->cfi_bytes;
}

const struct elf_module_counters *elf_module_counters(const struct elf_module *m)
{
	return &m->counters;
}
