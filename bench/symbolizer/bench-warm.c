// SPDX-License-Identifier: Apache-2.0
/* Warm-cache lookups per second: symbolize a fixed set of addresses of this very process (its
 * own text and libc's) over and over on one core. Usage: bench-warm [DISTINCT] [LOOKUPS] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symbolizer.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t distinct = argc > 1 ? strtoul(argv[1], NULL, 0) : 256;
	size_t lookups = argc > 2 ? strtoul(argv[2], NULL, 0) : 5000000;
	uint64_t *addr = calloc(distinct, sizeof(*addr));
	uint64_t self = (uint64_t)(uintptr_t)&main, libc = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "qsort");
	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_frame f;
	size_t named = 0;
	double t0, t1;

	/* Half in this binary (DWARF), half in libc (ELF symbols only, no debug package). */
	for (size_t i = 0; i < distinct; i++)
		addr[i] = (i % 2 ? libc : self) + (i / 2) * 8;
	for (size_t i = 0; i < distinct; i++)
		if (symbolizer_user(s, getpid(), addr[i], &f) == 0 && f.nlines)
			named++;
	t0 = now();
	for (size_t i = 0; i < lookups; i++)
		symbolizer_user(s, getpid(), addr[i % distinct], &f);
	t1 = now();
	printf("warm: %zu lookups over %zu distinct addresses (%zu symbolized) in %.3f s: %.2f M lookups/s\n",
	       lookups, distinct, named, t1 - t0, (double)lookups / (t1 - t0) / 1e6);
	symbolizer_free(s);
	free(addr);
	return 0;
}
