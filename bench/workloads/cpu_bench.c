// SPDX-License-Identifier: Apache-2.0
/*
 * A CPU-bound benchmark for overhead measurements: THREADS threads each do the same fixed amount of
 * work through a small call tree (worker -> stage_* -> mix), and the program prints the wall time
 * it took in seconds. Usage: cpu_bench THREADS UNITS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT 1000000

static uint64_t __attribute__((noinline)) mix(uint64_t x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;
	return x;
}

static uint64_t __attribute__((noinline)) stage_parse(uint64_t x) { return mix(x, UNIT / 2); }
static uint64_t __attribute__((noinline)) stage_compute(uint64_t x) { return mix(x, UNIT); }
static uint64_t __attribute__((noinline)) stage_encode(uint64_t x) { return mix(x, UNIT / 4); }

static uint64_t units;

static void *worker(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg;

	for (uint64_t i = 0; i < units; i++)
		x = stage_encode(stage_compute(stage_parse(x)));
	return (void *)(uintptr_t)x;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	struct timespec a, b;
	pthread_t tid[256];
	uint64_t sum = 0;

	units = argc > 2 ? strtoull(argv[2], NULL, 10) : 200;
	if (threads < 1 || threads > 256)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < threads; i++) {
		void *r;

		pthread_join(tid[i], &r);
		sum += (uint64_t)(uintptr_t)r;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.4f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	return (int)(sum & 1) * 0;
}
