// SPDX-License-Identifier: Apache-2.0
/* Go binaries through .gopclntab: the cold open plus the first lookup, then warm lookups per second
 * over a few addresses (the module's result cache) and over many (each a table lookup: the function
 * table's binary search, the pc-value tables and the inline tree).
 * Usage: bench-go BINARY TEXT_START TEXT_SIZE [LOOKUPS]   (TEXT_*: hex, from readelf -S) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "elf_module.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The i-th of the addresses: scattered over the text (evenly spaced ones would meet the result
 * cache's hash as a lattice and collide more than real stacks do). */
static uint64_t address(uint64_t start, uint64_t size, uint64_t i)
{
	return start + ((i + 1) * 0x9e3779b97f4a7c15ULL >> 20) % size;
}

/* Lookups per second over distinct addresses of the text. */
static double rate(struct elf_module *m, uint64_t start, uint64_t size, size_t distinct, size_t lookups)
{
	struct sym_frame f;
	double t0;

	for (size_t i = 0; i < distinct; i++)
		elf_module_symbolize(m, address(start, size, i), &f);
	t0 = now();
	for (size_t i = 0; i < lookups; i++)
		elf_module_symbolize(m, address(start, size, i % distinct), &f);
	return (double)lookups / (now() - t0);
}

int main(int argc, char **argv)
{
	static const char *const no_dirs[] = { NULL };
	struct elf_module *m;
	struct sym_frame f;
	uint64_t start, size;
	size_t lookups;
	double t0, t1, t2;
	int fd;

	if (argc < 4) {
		fprintf(stderr, "usage: bench-go BINARY TEXT_START TEXT_SIZE [LOOKUPS]\n");
		return 2;
	}
	start = strtoull(argv[2], NULL, 16);
	size = strtoull(argv[3], NULL, 16);
	lookups = argc > 4 ? strtoul(argv[4], NULL, 0) : 2000000;
	t0 = now();
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	m = fd >= 0 ? elf_module_open(fd, &(struct elf_module_options){ .root_fd = -1, .debug_dirs = no_dirs,
									 .max_bytes = 128u << 20 })
		    : NULL;
	if (!m) {
		perror(argv[1]);
		return 1;
	}
	t1 = now();
	elf_module_symbolize(m, start + size / 2, &f);
	t2 = now();
	printf("%s: go=%d open %.2f ms, first lookup %.1f us (%s), module bytes %zu\n", argv[1], elf_module_is_go(m),
	       (t1 - t0) * 1e3, (t2 - t1) * 1e6, f.nlines ? f.lines[f.nlines - 1].function : "-",
	       elf_module_bytes(m));
	printf("warm, 256 addresses (result cache): %.0f lookups/s\n", rate(m, start, size, 256, lookups));
	printf("warm, 1000003 addresses (table lookups): %.0f lookups/s\n", rate(m, start, size, 1000003, lookups));
	printf("module bytes after: %zu\n", elf_module_bytes(m));
	elf_module_free(m);
	return 0;
}
