// SPDX-License-Identifier: Apache-2.0
/*
 * A short allocating program for tests/integration/test_alloc_count.py, run under
 * libotelprofd-alloc.so: THREADS threads each make N allocations (malloc, calloc, realloc growth),
 * keeping up to 16 live and freeing the rest, then it prints the library's own statistics
 * (otelprofd_alloc_stats, found with dlsym): "sampled S dropped D freed F". They are read after every
 * allocation of the program's and written with write(2) from a buffer on the stack, so no sampled
 * allocation comes after the figures.
 * Usage: alloc-count N THREADS
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIVE 16

struct stats {
	uint64_t sampled, weight, freed, dropped, bootstrap;
};

static long n;

static void *work(void *arg)
{
	void *live[LIVE] = { 0 };
	uintptr_t seed = (uintptr_t)arg * 2654435761u + 1;

	for (long i = 0; i < n; i++) {
		unsigned slot = (unsigned)(i % LIVE);
		size_t size = 16 + (seed = seed * 6364136223846793005ULL + 1442695040888963407ULL) % 2000;
		void *p;

		free(live[slot]);
		switch (i % 3) {
		case 0: p = malloc(size); break;
		case 1: p = calloc(1, size); break;
		default: p = realloc(malloc(size / 2 + 1), size); break; /* two allocations */
		}
		if (!p)
			abort();
		memset(p, 1, 16);
		live[slot] = p;
	}
	for (unsigned i = 0; i < LIVE; i++)
		free(live[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	const struct stats *st = dlsym(RTLD_DEFAULT, "otelprofd_alloc_stats");
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t t[16];
	char line[160];
	int len;

	n = argc > 1 ? atol(argv[1]) : 1000;
	if (!st || threads < 1 || threads > 16) {
		fprintf(stderr, "usage: alloc-count N THREADS (1-16), with libotelprofd-alloc.so preloaded\n");
		return 1;
	}
	for (long i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, work, (void *)(i + 1)))
			return 1;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	len = snprintf(line, sizeof(line), "sampled %llu dropped %llu freed %llu\n",
		       (unsigned long long)__atomic_load_n(&st->sampled, __ATOMIC_SEQ_CST),
		       (unsigned long long)__atomic_load_n(&st->dropped, __ATOMIC_SEQ_CST),
		       (unsigned long long)__atomic_load_n(&st->freed, __ATOMIC_SEQ_CST));
	return write(1, line, (size_t)len) == len ? 0 : 1;
}
