/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an ELF file costs in memory once libelf/libdw have inflated what they inflate, read from its
 * section headers alone (nothing is decompressed), so that a file whose compressed sections claim
 * more than a module may hold is refused before libdw sees it. The declared sizes are what libelf
 * allocates and inflates into (Chdr ch_size, or the .zdebug header's size), so they bound the cost.
 */
#ifndef OTELPROF_ELF_COST_H
#define OTELPROF_ELF_COST_H

#include <gelf.h>
#include <stddef.h>

/* Largest section (after decompression) accepted; a bigger claim marks the file bad. */
#define ELF_COST_MAX_SECTION_BYTES (1ULL << 30)
#define ELF_COST_MAX_SECTIONS 65536

struct elf_cost {
	size_t dwarf;   /* bytes dwarf_begin_elf() inflates with the DWARF: .debug_* and .zdebug_* */
	size_t symbols; /* bytes libdwfl inflates for the symbol table: any other compressed section,
			   and .gnu_debugdata of a file without .symtab; SIZE_MAX: a forged claim */
	size_t cfi;     /* raw bytes of .eh_frame and .debug_frame */
};

/* Sum the file's claims into cost (saturating: SIZE_MAX fits no bound). 0, -ENOEXEC (not ELF,
 * unreadable headers, a .zdebug section without its header), or -EFBIG (a section or a claim over
 * ELF_COST_MAX_SECTION_BYTES, or too many sections). */
int elf_cost_of(Elf *elf, struct elf_cost *cost);

/* a + b + c, or SIZE_MAX when that does not fit. */
size_t elf_cost_add(size_t a, size_t b, size_t c);

#endif
