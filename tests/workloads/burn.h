/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPU burner of the test workloads: DEFINE_BURN(name) defines `uint64_t name(uint64_t ms)`, which
 * spins for ms milliseconds of wall time in its own frame. Each workload names it for itself, since
 * the tests tell samples apart by the hot function's name.
 */
#ifndef OTELPROF_TEST_BURN_H
#define OTELPROF_TEST_BURN_H

#include <stdint.h>
#include <time.h>

static inline uint64_t burn_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#define DEFINE_BURN(name)                                                                  \
	uint64_t name(uint64_t ms);                                                        \
	uint64_t __attribute__((noinline)) name(uint64_t ms)                               \
	{                                                                                  \
		uint64_t end = burn_now_ns() + ms * 1000000ULL, x = 1;                    \
                                                                                           \
		while (burn_now_ns() < end)                                                \
			for (int i = 0; i < 20000; i++)                                    \
				x = x * 6364136223846793005ULL + 1442695040888963407ULL;   \
		return x;                                                                  \
	}

#endif
