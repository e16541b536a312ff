/* SPDX-License-Identifier: Apache-2.0 */
/* The layout of a kallsyms table, shared by its parser (kallsyms.c) and its on-disk cache
 * (kallsyms_cache.c); nothing else includes it. */
#ifndef OTELPROF_KALLSYMS_TABLE_H
#define OTELPROF_KALLSYMS_TABLE_H

#include "kallsyms.h"

/*
 * A symbol in 16 bytes (a struct ksym takes 32): a kernel has over 100,000 text symbols, which the
 * daemon keeps for its whole run. Module names and bounds are kept once per module.
 */
struct ksym_entry {
	uint64_t address;
	uint32_t name;   /* offset in strings */
	uint32_t module; /* index in modules[] (0: the kernel's own text), | KSYM_END_MARKER */
};

/* _etext, _einittext: no address at or past the symbol is its. */
#define KSYM_END_MARKER 0x80000000u

struct ksym_module {
	uint32_t name; /* offset in strings (unused for modules[0], the kernel's own text) */
	uint32_t pad;  /* zero: the struct is written to the cache as it is */
	uint64_t end;  /* no address at or past this is the module's; 0: not known */
};

/* Entries per block of a cache file's table: a lookup reads one block (1 KiB) and one name. */
#define KSYM_FILE_BLOCK 64
/* The longest name read back (the kernel's KSYM_NAME_LEN is 512); a longer one is not named. */
#define KSYM_FILE_NAME_MAX 512

/*
 * A table read back from the cache file, whose entries and names are read with pread() at each
 * lookup rather than mapped: a busy host's lookups touched most of a mapped file over a run (large
 * folios, fault-around: 4-4.4 MiB of its 5 MiB in the daemon's RSS), where this keeps 2 KiB per
 * 100,000 symbols and two small reads per lookup (one per distinct kernel address in a profile).
 */
struct kallsyms_file {
	int fd;
	uint64_t syms_off, strings_off; /* where the entries and the names start in it */
	uint64_t *index;                /* the address of every KSYM_FILE_BLOCK'th entry */
	size_t nindex;
	uint64_t first_address, last_address; /* of its first and last entries */
	struct ksym_entry block[KSYM_FILE_BLOCK]; /* the block the last lookup read */
	char name[KSYM_FILE_NAME_MAX], module[KSYM_FILE_NAME_MAX]; /* the last lookup's names */
};

struct kallsyms {
	struct ksym_entry *syms;
	size_t count;
	char *strings;   /* every name and module name, NUL-terminated, back to back */
	size_t strings_len; /* bytes of strings */
	struct ksym_module *modules;
	size_t nmodules, modules_cap;
	struct ksym *found; /* what kallsyms_lookup() returns: the last lookup's symbol */
	bool hidden;
	bool partial; /* read from the cache: code that comes and goes (BPF, ftrace) left out */
	struct kallsyms_file *file; /* read back from the cache: its entries and names stay in the file
			   (syms and strings NULL), read at each lookup; NULL: all in this table's
			   allocations */
	/* With map: the symbols a full read found that the cache leaves out (BPF programs, trampolines,
	 * modules without a range), a table of its own on the heap (kallsyms_cache_join()); NULL: none. */
	struct kallsyms *changing;
};

/* k's entry (a file's) at or below address, in k->file->block; NULL when none or unreadable. */
const struct ksym_entry *kallsyms_file_entry(const struct kallsyms *k, uint64_t address);
/* The NUL-terminated string at offset off of k's names (a file's), read into buf
 * (KSYM_FILE_NAME_MAX); NULL when unreadable or longer. */
const char *kallsyms_file_string(const struct kallsyms *k, uint32_t off, char *buf);
void kallsyms_file_free(struct kallsyms_file *f);

#endif
