// SPDX-License-Identifier: Apache-2.0
/*
 * A short-lived program: burns BURN_MS (default 30) of CPU in brief_burn() under brief_middle() and
 * brief_outer(), then exits. Started in a loop, its processes are gone before a loop that lags
 * behind its ring buffer handles their samples (the kernel's mmap events name them still).
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static uint64_t cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ms of CPU time (not wall time: on a loaded machine the program still spends most of its CPU here,
 * not in its start and exit). */
uint64_t __attribute__((noinline)) brief_burn(uint64_t ms)
{
	uint64_t end = cpu_now_ns() + ms * 1000000ULL, x = 1;

	while (cpu_now_ns() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

uint64_t __attribute__((noinline)) brief_middle(uint64_t ms)
{
	return brief_burn(ms) + 1;
}

uint64_t __attribute__((noinline)) brief_outer(uint64_t ms)
{
	return brief_middle(ms) + 1;
}

int main(int argc, char **argv)
{
	sink = brief_outer(argc > 1 ? strtoull(argv[1], NULL, 10) : 30);
	return 0;
}
