/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exported symbols of a foreign ELF file by name, read through its .gnu.hash table when it has one:
 * a handful of pages (the hash's buckets, one chain, the symbols and their names) instead of the
 * whole .dynsym and .dynstr. The first read of a file is the slow one (a cold disk: 6 ms a page was
 * measured on our VMs, 0.66 s for libpython's two tables), and the Python check and the thread
 * context check run on the sampling thread. Files without .gnu.hash, or with one that does not hold
 * together, are scanned entry by entry, bounded by max_entries. The caller owns the Elf.
 */
#ifndef OTELPROFD_ELF_DYNSYM_H
#define OTELPROFD_ELF_DYNSYM_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>

/* A defined symbol wanted by name; only symbols with accept(sym) true (NULL: any) count. */
struct elf_dynsym_want {
	const char *name;
	bool (*accept)(const GElf_Sym *sym);
	bool found;     /* out */
	GElf_Sym sym;   /* out, when found */
	size_t index;   /* out: its index in .dynsym */
};

/* Fills want[0..n) (found set false first); returns how many were found. */
size_t elf_dynsym_lookup(Elf *elf, struct elf_dynsym_want *want, size_t n, size_t max_entries);

/* The same by the entry-by-entry scan only (tests compare the two). */
size_t elf_dynsym_lookup_scan(Elf *elf, struct elf_dynsym_want *want, size_t n, size_t max_entries);

#endif
