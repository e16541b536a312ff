/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One ELF file opened for symbolization through libdwfl/libdw: ELF symbols, DWARF lines and
 * inline chains, a separate debug file when the binary has none (build-id directories,
 * .gnu_debuglink inside the process's root, debuginfod). Every parse is bounded: section sizes,
 * DIE depth, DIEs visited per lookup, inline frames.
 *
 * elf_module_open() takes ownership of fd whatever it returns; elf_module_free() releases all.
 * Strings in frames filled by elf_module_symbolize() belong to the module and live until
 * elf_module_free().
 */
#ifndef OTELPROF_ELF_MODULE_H
#define OTELPROF_ELF_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi.h"
#include "go_unwind.h"
#include "elf_cost.h"
#include "debuginfo_fetch.h"
#include "symbolizer.h"

/* Largest section (after decompression) accepted; a bigger claim marks the file bad. */
#define ELF_MODULE_MAX_SECTION_BYTES ELF_COST_MAX_SECTION_BYTES
/* Bound of a module when the options give none (what the symbolizer's default cache holds). */
#define ELF_MODULE_DEFAULT_MAX_BYTES ((size_t)2 << 30)
/* Most nested DIEs followed when looking for the scopes of an address. */
#define ELF_MODULE_MAX_DIE_DEPTH 64
/* A .gnu_debuglink candidate of a binary without build id is checked by the CRC of its whole
 * contents: bigger candidates are refused (a huge sparse file would stall the caller), and one open
 * CRCs at most ELF_MODULE_MAX_CRC_TOTAL bytes over all candidates. */
#define ELF_MODULE_MAX_CRC_BYTES (256ULL << 20)
#define ELF_MODULE_MAX_CRC_TOTAL (512ULL << 20)
/* Most DIEs looked at in one lookup (a malformed sibling chain cannot loop for ever). */
#define ELF_MODULE_MAX_DIE_VISITS 200000

struct elf_module_options {
	int root_fd;                   /* O_PATH directory of the process's root, for .gnu_debuglink
					  next to the binary; -1 for none (used only during open) */
	const char *path;              /* the binary's path inside that root, or NULL */
	const char *const *debug_dirs; /* host directories holding .build-id/xx/yyyy.debug and
					  DIR/<binary dir>/<debuglink>; NULL-terminated; NULL means
					  { "/usr/lib/debug", NULL } */
	struct debuginfo_fetch *debuginfod; /* last resort: a debuginfod file already in the cache
					  (else the build id is queued for download); NULL: none */
	size_t cache_slots;            /* remembered address results; 0: by the symbol count */
	size_t max_bytes;              /* most bytes the module may account for (elf_module_bytes());
					  what libdw would inflate past it is never opened: the DWARF,
					  the debug file, or even the symbol table. 0: the default */
	bool symbols_only;             /* the cheaper tier: the file's own ELF symbols and .eh_frame,
					  never the DWARF nor a debug file (nothing inflated for them) */
	bool strong_names;             /* of symbols at one address, name the global one, not a weak
					  alias (the vDSO: __vdso_clock_gettime, not clock_gettime);
					  otherwise the first in the symbol table */
};

struct elf_module_counters {
	uint64_t dwarf_lookups;     /* lookups that walked DWARF (result cache misses) */
	uint64_t cache_hits;        /* lookups answered from the result cache */
	uint64_t inline_truncated;  /* inline chains longer than SYM_MAX_INLINE */
	uint64_t die_bound_hit;     /* lookups stopped by the DIE depth or visit bound */
	uint64_t lines_by_libdw;    /* compile units whose line program our reader could not read
				       (libdw then builds the CU's whole line table) */
	uint64_t debuglink_too_big; /* debuglink candidates not CRC-checked (over the size bounds) */
	uint64_t go_refused;        /* a .gopclntab that could not be read (malformed, or a format
				       other than Go 1.16+): frames fall back to symbols and DWARF */
	uint64_t go_lookups;        /* lookups answered from the Go function table */
	uint64_t inflate_refused;   /* files (the binary or a debug file) whose compressed sections
				       claim more than max_bytes allows: not handed to libdw */
	uint64_t refused_bytes;     /* the most a refused file would have made the module account for */
	uint64_t index_ns;          /* time the open spent building the module's indexes (symbol
				       table, result cache, address-to-CU table, .eh_frame table) */
	uint64_t index_builds_at_lookup; /* module indexes a lookup built instead: what the open could
				       not (out of memory), and .debug_frame read alone, which the
				       open leaves to the rare lookup that needs it */
	uint64_t cus_prebuilt;      /* the largest compile units' (CU_PREBUILD_MIN_BYTES) function
				       index and line program reader built by the open instead */
	uint64_t cus_prebuilt_cpu_ns; /* the CPU time that took */
	uint64_t cu_builds;         /* compile units' first lookups: their function index and line
				       program reader built by the lookup, on the caller's thread */
	uint64_t cu_build_ns;       /* their wall time in all */
	uint64_t cu_build_cpu_ns;   /* their CPU time in all (the wall time less waits for a CPU) */
	uint64_t cu_build_ns_max;   /* the longest, wall */
	uint64_t cu_build_cpu_ns_max; /* the most CPU time of one */
};

struct elf_module;

/* What the section headers alone say about a file, before the full (costly) open. */
struct elf_module_peek {
	unsigned char build_id[64]; /* raw GNU build id */
	size_t build_id_len;        /* 0: none */
	bool has_dwarf;             /* a .debug_info (or .zdebug_info) section with contents */
};

/* Peek at the ELF file fd (not consumed). 0, or -ENOEXEC for a file that is not ELF. */
int elf_module_peek(int fd, struct elf_module_peek *peek);

/* NULL with errno set: ENOEXEC for a file that is not a usable ELF, EFBIG for section bounds. */
struct elf_module *elf_module_open(int fd, const struct elf_module_options *options);
void elf_module_free(struct elf_module *m);

/* ELF virtual address of a file offset (through the PT_LOAD segments); false when none covers it. */
bool elf_module_offset_to_vaddr(const struct elf_module *m, uint64_t file_offset, uint64_t *vaddr);
/* Fill frame->lines for an ELF virtual address; returns how many lines were filled. Go text is
 * read from the Go function table (frame->kind set to SYM_FRAME_GO), even when the file has DWARF:
 * the names and lines Go's own tracebacks show, the same for a stripped and a full build, without
 * inflating Go's compressed DWARF per lookup. */
unsigned elf_module_symbolize(struct elf_module *m, uint64_t vaddr, struct sym_frame *frame);
/*
 * The unwinding rules of an ELF virtual address from the file's CFI: .eh_frame first (what the
 * loaded code carries), then .debug_frame (in the file or its separate debug file). 0 with
 * rule->found false when neither covers it; -errno (see cfi_compile) for rules that cannot be used.
 */
int elf_module_cfi_rule(struct elf_module *m, uint64_t vaddr, struct cfi_rule *rule);
/* Hex GNU build id, or NULL. */
const char *elf_module_build_id(const struct elf_module *m);
/* Raw GNU build id bytes; 0 when there is none. */
size_t elf_module_build_id_raw(const struct elf_module *m, const unsigned char **bits);
/* Hex htlhash of the file, or NULL when it could not be read. */
const char *elf_module_htlhash(const struct elf_module *m);
/* The file carries a Go function table that is read (Go 1.16+ pclntab). */
bool elf_module_is_go(const struct elf_module *m);
/* The Go build id (.note.go.buildid), or NULL. */
const char *elf_module_go_build_id(const struct elf_module *m);
/* vaddr is in a function where Go's traceback ends (runtime.goexit, mstart, rt0_go...). */
bool elf_module_go_top_frame(const struct elf_module *m, uint64_t vaddr);
/* The Go traceback's rule of vaddr (runtimes/go/go_unwind.h): how to step to its caller from the SP
 * delta of its function, or that the walk ends there; GO_UNWIND_NONE outside Go text. */
enum go_unwind_kind elf_module_go_rule(const struct elf_module *m, uint64_t vaddr, struct cfi_rule *rule);
/* DWARF was found (in the file or a separate debug file). */
bool elf_module_has_dwarf(const struct elf_module *m);
/* The separate debug file was found through .gnu_debuglink inside the process's root, a place its
 * owner chose (not a host debug directory nor debuginfod). */
bool elf_module_debug_in_root(const struct elf_module *m);
/* The ELF file's bytes as libelf maps them (no copy when mapped), or NULL. */
const void *elf_module_image(const struct elf_module *m, size_t *size);
/* A new descriptor (O_CLOEXEC, the caller closes it) of the module's ELF file, checked to be the
 * file of dev and inode: the module's file kept open once the module is freed. -errno. */
int elf_module_dup_fd(const struct elf_module *m, uint64_t dev, uint64_t inode);
/* Bytes this module accounts for: the files it maps plus its own allocations. */
size_t elf_module_bytes(const struct elf_module *m);
const struct elf_module_counters *elf_module_counters(const struct elf_module *m);

#endif
