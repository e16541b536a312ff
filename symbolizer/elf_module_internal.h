/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to elf_module.c (open, bounds, accessors), elf_module_debug.c (the separate debug file
 * search), elf_module_lookup.c (address -> lines) and elf_module_pool.c (the module's string pool):
 * the module's struct and the few functions they share, named elf_module__*(). Nothing else
 * includes this header; the API is elf_module.h.
 *
 * Ownership: everything a struct elf_module points to belongs to it and is released by
 * elf_module_free(); strings from elf_module__pool_intern() live until then too.
 */
#ifndef OTELPROF_ELF_MODULE_INTERNAL_H
#define OTELPROF_ELF_MODULE_INTERNAL_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "dwarf_lines.h"
#include "elf_cost.h"
#include "elf_module.h"
#include "gopclntab.h"
#include "htlhash.h"

#define MAX_LOAD_SEGMENTS 16
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
	bool go;                /* answered from the Go pclntab */
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
	uint8_t rank;     /* among symbols of one address and size, the lowest is named: 0 for all
			     unless strong_names (then 1 for a weak symbol) */
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
	bool strong_names;        /* name an address by its global symbol rather than a weak alias */
	uint64_t crc_bytes;       /* debuglink candidates CRC-checked while opening */
	bool debug_in_root;       /* the debug file came from the process's root (its owner's choice) */
	int fd;                   /* the ELF file: libdwfl holds it open until dwfl_end() (-1 before) */

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
	bool in_open;             /* the open builds the largest CUs' indexes (not a lookup's work) */

	struct gopclntab *go;     /* the Go function table, or NULL (not Go, or refused) */
	char *go_build_id;        /* from .note.go.buildid, or NULL */

	struct cache_slot *slots;
	size_t nslots;
	struct pool_chunk *chunks;
	const char **set;         /* pool strings by hash; nset slots, a power of two */
	size_t nset, set_count, pool_bytes;
	struct elf_module_counters counters;

	/* .debug_frame alone, without the DWARF (elf_module_frame.c): built at the first need. */
	bool frame_tried;
	char *frame_image;        /* an ELF image holding the section alone */
	Elf *frame_elf;
	Dwarf *frame_dwarf;
	Dwarf_CFI *frame_cfi;     /* NULL: none, or refused */
};

/* A regular, sane ELF file: its size, and what it costs once libdw has inflated its sections. */
int elf_module__file_cost(int fd, size_t *size, struct elf_cost *cost);
/* A file that would add bytes was refused for the bound: counted, and what it would have cost kept. */
void elf_module__refused(struct elf_module *m, size_t bytes);
/* Whether bytes more keep the module within its bound. */
bool elf_module__affords(const struct elf_module *m, size_t bytes);
/* libdwfl's find_debuginfo callback (*userdata is the module): an fd of the separate debug file,
 * which libdwfl then owns, or -1. Searches only while elf_module_open() runs (m->opening). */
int elf_module__find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
			       const char *file_name, const char *debuglink, GElf_Word crc, char **debug_name);
/* Find and open the file's Go function table and read its Go build id (elf_module_go.c). */
void elf_module__go_open(struct elf_module *m);
/* Fill out[0 .. *n) from the Go function table: false when vaddr is not Go text it describes. */
bool elf_module__go_lookup(struct elf_module *m, uint64_t vaddr, struct sym_line *out, unsigned *n);
/* The CFI of the file's own .debug_frame, read alone (no other DWARF section), or NULL: for a module
 * whose DWARF is not opened. Counted in libdw_bytes; refused (counted) over the module's bound. */
Dwarf_CFI *elf_module__frame_cfi(struct elf_module *m);
void elf_module__frame_free(struct elf_module *m);
/* Build what the first lookups would (elf_module_lookup.c): the sorted symbol table, the result
 * cache, libdwfl's address-to-CU table, ours for what .debug_aranges leaves out, and the .eh_frame
 * table, so that a caller taking the module from the opener's thread finds them built. Per-CU
 * indexes and line programs are still built at the first lookup into each compile unit. */
void elf_module__build_indexes(struct elf_module *m);
/* A module-owned copy of s, or NULL when the pool is full or memory runs out. */
const char *elf_module__pool_intern(struct elf_module *m, const char *s);

#endif
