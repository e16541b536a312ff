/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/kallsyms: the kernel's text symbols, sorted for address lookup. Owns all its memory. */
#ifndef OTELPROF_KALLSYMS_H
#define OTELPROF_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The module of the kernel's own symbols: a ksym's module is this pointer for them. */
extern const char kallsyms_vmlinux[];

struct ksym {
	uint64_t address;
	const char *name;   /* points into the table's string pool */
	const char *module; /* kallsyms_vmlinux, a module name, "bpf", "__builtin__ftrace"... */
	uint64_t end;       /* no address at or past this is the symbol's (the end of its module's
			       range, or the symbol itself for _etext/_einittext); 0: not known */
};

struct kallsyms;

/* Parse a kallsyms-format stream. NULL on allocation failure (errno set). */
struct kallsyms *kallsyms_parse(FILE *f);
/* kallsyms_parse() of a file; NULL with errno set when it cannot be read. */
struct kallsyms *kallsyms_load(const char *path);
void kallsyms_free(struct kallsyms *k);

/*
 * Bound each kernel module's symbols by the module's range from a /proc/modules-format stream
 * (name size refcount deps state address): an address past a module's end is nobody's. 0, or
 * -ENOMEM.
 */
int kallsyms_set_module_ranges(struct kallsyms *k, FILE *modules);
/* The symbol covering address (the last one at or below it, within its bound), or NULL. The struct and
 * its strings are the table's, valid until its next lookup (a table read back from the cache reads
 * its names at each lookup). */
const struct ksym *kallsyms_lookup(const struct kallsyms *k, uint64_t address);
size_t kallsyms_count(const struct kallsyms *k);
/* Every address was zero: kptr_restrict hides them from us. */
bool kallsyms_hidden(const struct kallsyms *k);
/* Read back from the cache (kallsyms_cache.h): BPF programs and ftrace trampolines are not in it,
 * so a lookup that finds nothing, or code without a known range, needs a full read to be sure. */
bool kallsyms_partial(const struct kallsyms *k);

#endif
