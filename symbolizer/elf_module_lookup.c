// SPDX-License-Identifier: Apache-2.0
/*
 * A module's address lookups: ELF virtual address -> function, file, line and inline chain, from
 * the ELF symbol table and the DWARF (per-CU function index, line programs), each bounded, with a
 * result cache per module.
 */
#include "elf_module_internal.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demangle.h"

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
/* Compile units of at least this many bytes of .debug_info have their function index and line
 * program reader built by the module's open (on the opener's thread), at most CU_PREBUILD_MAX of
 * them, the largest first: theirs are the first lookups that cost (libpython 3.11's ceval.c, 920 KiB:
 * 1.5-14 ms of wall time on the loop under load); a smaller CU's first lookup stays cheap. */
#define CU_PREBUILD_MIN_BYTES (192 * 1024)
#define CU_PREBUILD_MAX 4

/* function = demangled form when there is one (kept in the pool), else the name itself. */
static void set_names(struct elf_module *m, struct sym_line *line, const char *system_name, const char *plain)
{
	char *demangled = sym_demangle(system_name);
	const char *readable = NULL;

	if (demangled) {
		readable = elf_module__pool_intern(m, demangled);
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

/* A compile unit's first-lookup work (its function index, its line program reader) timed. */
struct cu_timer {
	struct timespec wall, cpu;
};

static void cu_timer_start(struct cu_timer *t)
{
	clock_gettime(CLOCK_MONOTONIC, &t->wall);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t->cpu);
}

static uint64_t ns_since(const struct timespec *from, clockid_t clock)
{
	struct timespec now;

	clock_gettime(clock, &now);
	return (uint64_t)((now.tv_sec - from->tv_sec) * 1000000000LL + now.tv_nsec - from->tv_nsec);
}

/* Adds the work's time to the CU's first lookup (new: a CU's first piece of work). */
static void cu_timer_stop(struct elf_module *m, const struct cu_timer *t, bool new_cu)
{
	struct elf_module_counters *c = &m->counters;
	uint64_t wall = ns_since(&t->wall, CLOCK_MONOTONIC), cpu = ns_since(&t->cpu, CLOCK_THREAD_CPUTIME_ID);

	if (m->in_open) { /* the open's work, timed with its indexes */
		c->cus_prebuilt += new_cu;
		c->cus_prebuilt_cpu_ns += cpu;
		return;
	}
	c->cu_builds += new_cu;
	c->cu_build_ns += wall;
	c->cu_build_cpu_ns += cpu;
	if (wall > c->cu_build_ns_max)
		c->cu_build_ns_max = wall;
	if (cpu > c->cu_build_cpu_ns_max)
		c->cu_build_cpu_ns_max = cpu;
}

/* The CU's own line program reader, opened on first use; NULL when libdw has to answer. */
static struct dwarf_lines *cu_lines(struct elf_module *m, struct cu_index *ix, Dwarf_Die *cu)
{
	if (!ix)
		return NULL;
	if (!ix->lines_tried) {
		struct cu_timer t;

		cu_timer_start(&t);
		ix->lines_tried = true;
		ix->lines = dwarf_lines_open(m->dwarf, cu);
		if (ix->lines)
			m->own_bytes += dwarf_lines_bytes(ix->lines);
		else if (errno != ENOENT)
			m->counters.lines_by_libdw++;
		cu_timer_stop(m, &t, false);
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
		return dwarf_lines_file(l, i, path, sizeof(path)) ? elf_module__pool_intern(m, path) : NULL;
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
	/* Not readable here, malformed on the way to pc, or a busy CU: libdw's whole table (built at
	 * its first question: timed with the CU's first lookup). */
	if (ix && !ix->libdw_lines_counted) {
		Dwarf_Lines *all;
		size_t nlines;
		struct cu_timer t;

		cu_timer_start(&t);
		ix->libdw_lines_counted = true;
		if (dwarf_getsrclines(cu, &all, &nlines) == 0)
			m->libdw_bytes += nlines * LIBDW_LINE_BYTES;
		cu_timer_stop(m, &t, false);
	}
	line = dwarf_getsrc_die(cu, pc);
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
	if (x->size != y->size)
		return (x->size < y->size) - (x->size > y->size); /* sized symbols first */
	return (x->rank > y->rank) - (x->rank < y->rank);
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
		m->syms[m->nsyms++] = (struct func_sym){
			.addr = addr, .size = sym.st_size, .name = name,
			.rank = m->strong_names && GELF_ST_BIND(sym.st_info) == STB_WEAK,
		};
	}
	qsort(m->syms, m->nsyms, sizeof(*m->syms), by_addr);
	m->own_bytes += cap * sizeof(*m->syms);
}

/* ELF function symbol covering vaddr (a sized one, or the closest unsized one below), or NULL. */
static const char *elf_symbol(struct elf_module *m, uint64_t vaddr)
{
	size_t lo = 0, hi;

	if (!m->syms_built) {
		m->counters.index_builds_at_lookup++;
		build_symbols(m);
	}
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
	struct cu_timer t;

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
	cu_timer_start(&t);
	index_walk(cu, &b, 0);
	if (b.n)
		qsort(b.r, b.n, sizeof(*b.r), by_low);
	cu_timer_stop(m, &t, true);
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

/* libdwfl's address-to-CU table, read (from .debug_aranges) at its first question: counted in
 * libdw_bytes. Its number of entries. */
static size_t count_aranges(struct elf_module *m)
{
	Dwarf_Aranges *aranges;
	size_t n = 0;

	m->aranges_counted = true;
	if (dwarf_getaranges(m->dwarf, &aranges, &n) == 0)
		m->libdw_bytes += n * LIBDW_ARANGE_BYTES;
	return n;
}

static Dwarf_Die *cu_of(struct elf_module *m, uint64_t vaddr, Dwarf_Addr *bias)
{
	Dwarf_Die *cu;
	struct func_range *r;

	if (!m->aranges_counted)
		m->counters.index_builds_at_lookup++;
	cu = dwfl_module_addrdie(m->mod, vaddr, bias);
	if (!m->aranges_counted)
		count_aranges(m); /* libdwfl has read .debug_aranges (or walked every CU) to answer */

	if (cu)
		return cu;
	if (!m->cu_ranges_built) {
		m->counters.index_builds_at_lookup++;
		build_cu_ranges(m);
	}
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

/* The result cache, sized by the function count unless the options gave a size. */
static void make_slots(struct elf_module *m)
{
	if (!m->nslots) {
		if (!m->syms_built)
			build_symbols(m);
		/* A stripped Go binary has no symbols: its functions are the pclntab's. */
		size_t nfuncs = m->nsyms + (m->go ? gopclntab_nfuncs(m->go) : 0);

		for (m->nslots = MIN_CACHE_SLOTS; m->nslots < 4 * nfuncs && m->nslots < MAX_CACHE_SLOTS;)
			m->nslots *= 2;
	}
	m->slots = calloc(m->nslots, sizeof(*m->slots));
	if (m->slots)
		m->own_bytes += m->nslots * sizeof(*m->slots);
}

/* The largest compile units' first-lookup work, done now (see CU_PREBUILD_MIN_BYTES). */
static void prebuild_large_cus(struct elf_module *m)
{
	struct {
		Dwarf_Off die;
		Dwarf_Off size;
	} big[CU_PREBUILD_MAX];
	size_t nbig = 0, i;
	Dwarf_Off off = 0, next;
	size_t header;

	while (dwarf_nextcu(m->dwarf, off, &next, &header, NULL, NULL, NULL) == 0) {
		Dwarf_Off size = next - off;

		if (size >= CU_PREBUILD_MIN_BYTES && (nbig < CU_PREBUILD_MAX || size > big[nbig - 1].size)) {
			/* Kept sorted, largest first: in at its place, the smallest out when full. */
			for (i = nbig < CU_PREBUILD_MAX ? nbig++ : nbig - 1; i > 0 && big[i - 1].size < size; i--)
				big[i] = big[i - 1];
			big[i].die = off + header;
			big[i].size = size;
		}
		off = next;
	}
	m->in_open = true;
	for (i = 0; i < nbig; i++) {
		Dwarf_Die cu;
		struct cu_index *ix;

		if (!dwarf_offdie(m->dwarf, big[i].die, &cu) || !(ix = cu_index_of(m, &cu)))
			continue;
		cu_lines(m, ix, &cu);
	}
	m->in_open = false;
}

void elf_module__build_indexes(struct elf_module *m)
{
	Dwarf_Addr bias;

	if (!m->syms_built)
		build_symbols(m);
	if (!m->slots)
		make_slots(m);
	if (m->dwarf && !m->aranges_counted) {
		/* libdwfl builds its address-to-CU table at its first question, whatever the address. */
		dwfl_module_addrdie(m->mod, m->nsyms ? m->syms[0].addr : 0, &bias);
		count_aranges(m);
	}
	/* Ours, for what .debug_aranges does not cover (a file without it, code of CUs left out of it):
	 * nearly every module's lookups come to an address of that kind soon. */
	if (m->dwarf && !m->cu_ranges_built)
		build_cu_ranges(m);
	if (m->dwarf && !m->ncus)
		prebuild_large_cus(m);
	dwfl_module_eh_cfi(m->mod, &bias); /* .eh_frame_hdr's table, read at the first rule */
}

unsigned elf_module_symbolize(struct elf_module *m, uint64_t vaddr, struct sym_frame *frame)
{
	struct sym_line lines[SYM_MAX_INLINE];
	struct cache_slot *slot;
	unsigned n;
	bool go;

	if (!m->slots) {
		m->counters.index_builds_at_lookup++;
		make_slots(m);
	}
	slot = m->slots ? &m->slots[slot_of(m, vaddr)] : NULL;
	if (slot && slot->used && slot->vaddr == vaddr) {
		m->counters.cache_hits++;
		if (slot->nlines)
			memcpy(frame->lines, slot->lines, slot->nlines * sizeof(*slot->lines));
		frame->nlines = slot->nlines;
		if (slot->go)
			frame->kind = SYM_FRAME_GO;
		return slot->nlines;
	}
	go = elf_module__go_lookup(m, vaddr, lines, &n);
	if (!go)
		n = lookup(m, vaddr, lines);
	else
		frame->kind = SYM_FRAME_GO;
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
		*slot = (struct cache_slot){ .vaddr = vaddr, .lines = copy, .nlines = (uint8_t)n, .used = true, .go = go };
	}
	return n;
}
