// SPDX-License-Identifier: Apache-2.0
/*
 * A workload with a known profile: main -> caller_a -> hot_a burns 60% of its CPU time,
 * main -> caller_b -> hot_b 30%, main -> caller_c -> hot_c 10%. The split is in units of
 * identical work, so it holds whatever else the machine is doing.
 * Usage: split [SECONDS]  (default: run until killed)
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Iterations of one unit of work (about 0.5 ms): long calls make samples that land in a
 * function's entry or exit, where a frame-pointer walk misses the caller, rare. */
#define UNIT 2000000

static volatile uint64_t sink;


/* Each hot function does its own work, so the leaf frame of its samples is itself. */
#define HOT_BODY(units)                                                                 \
	uint64_t x = seed;                                                              \
	for (uint64_t i = 0; i < (units) * (uint64_t)UNIT; i++)                         \
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;                \
	return x

uint64_t __attribute__((noinline)) hot_a(uint64_t seed) { HOT_BODY(6); }
uint64_t __attribute__((noinline)) hot_b(uint64_t seed) { HOT_BODY(3); }
uint64_t __attribute__((noinline)) hot_c(uint64_t seed) { HOT_BODY(1); }

uint64_t __attribute__((noinline)) caller_a(uint64_t seed) { return hot_a(seed) + 1; }
uint64_t __attribute__((noinline)) caller_b(uint64_t seed) { return hot_b(seed) + 1; }
uint64_t __attribute__((noinline)) caller_c(uint64_t seed) { return hot_c(seed) + 1; }

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0;
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		sink += caller_a(sink);
		sink += caller_b(sink);
		sink += caller_c(sink);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (seconds > 0 && (now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return (int)(sink & 1);
}
