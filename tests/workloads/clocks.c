// SPDX-License-Identifier: Apache-2.0
/* A process that spends its time in the vDSO: two known callers read the clock in tight loops,
 * clock_gettime (main -> clock_loop -> read_monotonic -> clock_gettime) and gettimeofday
 * (main -> tod_loop -> read_tod -> gettimeofday), alternating every few milliseconds. Built
 * without frame pointers: the callers are found by unwinding the vDSO's own CFI. Runs for
 * argv[1] seconds (default 30). */
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t read_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static uint64_t read_tod(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_usec;
}

__attribute__((noinline)) static void clock_loop(int n)
{
	for (int i = 0; i < n; i++)
		sink += read_monotonic();
}

__attribute__((noinline)) static void tod_loop(int n)
{
	for (int i = 0; i < n; i++)
		sink += read_tod();
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 30;
	time_t end = time(NULL) + seconds;

	while (time(NULL) < end) {
		clock_loop(100000);
		tod_loop(100000);
	}
	return 0;
}
