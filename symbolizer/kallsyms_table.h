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
	void *map;      /* the cache file mapped (read only; syms, strings and modules point into it),
			   or NULL: they are this table's allocations */
	size_t map_len;
	/* With map: the symbols a full read found that the cache leaves out (BPF programs, trampolines,
	 * modules without a range), a table of its own on the heap (kallsyms_cache_join()); NULL: none. */
	struct kallsyms *changing;
};

#endif
