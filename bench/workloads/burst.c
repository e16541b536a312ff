// SPDX-License-Identifier: Apache-2.0
/*
 * For the scale benchmarks: burn CPU for BURST_MS milliseconds, then sleep SLEEP_MS, ROUNDS times
 * (0 = forever). Many of these make many live processes that each run now and then.
 * Usage: burst BURST_MS SLEEP_MS ROUNDS
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void __attribute__((noinline)) burn(double ms)
{
	double end = now() + ms / 1000;
	uint64_t x = sink;

	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ULL + 1;
	sink = x;
}

int main(int argc, char **argv)
{
	double burst = argc > 1 ? atof(argv[1]) : 5, pause = argc > 2 ? atof(argv[2]) : 0;
	long rounds = argc > 3 ? atol(argv[3]) : 1;

	for (long r = 0; rounds == 0 || r < rounds; r++) {
		burn(burst);
		if (pause > 0)
			usleep((useconds_t)(pause * 1000));
	}
	return 0;
}
